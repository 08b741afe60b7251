package io.checkpointsurgeon.testing;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One streaming job in a local MiniCluster ({@code StreamExecutionEnvironment.createLocalEnvironment}),
 * the loop the fixture generator and the restore tests share: submit, wait until the job is ready
 * (a condition on what its functions reported) and a number of checkpoints more completed, then
 * cancel it (or stop it with a canonical savepoint) and return its last retained checkpoint.
 *
 * <p>Checkpoints are found by listing {@code <checkpoint dir>/<job id>/chk-<id>/_metadata} through
 * Flink's {@link FileSystem}, so the loop is the same for local directories and S3. A job that
 * cannot be submitted, fails, finishes early or times out is returned with its
 * {@link Result#failure()}, for the test to assert on; {@link Result#orThrow()} turns it into an
 * exception.
 */
public final class MiniClusterJob {

    /** Done with the running job after the checkpoints, before it is cancelled (e.g. savepoints). */
    public interface WhileRunning {
        void accept(JobClient client) throws Exception;
    }

    private final String name;
    private final Configuration conf;
    private final int parallelism;
    private final Consumer<StreamExecutionEnvironment> topology;
    private BooleanSupplier ready = () -> true;
    private int checkpointsAfterReady = 2;
    private Duration timeout = Duration.ofSeconds(90);
    private Duration pollInterval = Duration.ofMillis(50);
    private WhileRunning whileRunning;
    private boolean stopWithSavepoint;
    private boolean nativeSavepoint;

    private MiniClusterJob(String name, Configuration conf, int parallelism,
                           Consumer<StreamExecutionEnvironment> topology) {
        this.name = name;
        this.conf = conf;
        this.parallelism = parallelism;
        this.topology = topology;
    }

    /** The job {@code topology} builds, configured by {@code conf} (see {@link FlinkConf#checkpointing}). */
    public static MiniClusterJob of(String name, Configuration conf, int parallelism,
                                    Consumer<StreamExecutionEnvironment> topology) {
        return new MiniClusterJob(name, conf, parallelism, topology);
    }

    /** The job is ready once this holds (default: at once). */
    public MiniClusterJob readyWhen(BooleanSupplier condition) {
        this.ready = condition;
        return this;
    }

    /** The latest checkpoint id must grow by this much after the job became ready (default 2). */
    public MiniClusterJob checkpointsAfterReady(int count) {
        this.checkpointsAfterReady = count;
        return this;
    }

    /** For reaching that checkpoint, and for each of cancel, savepoint and job end (default 90 s). */
    public MiniClusterJob timeout(Duration t) {
        this.timeout = t;
        return this;
    }

    /** How often the checkpoint directory is listed (default 50 ms). */
    public MiniClusterJob pollInterval(Duration interval) {
        this.pollInterval = interval;
        return this;
    }

    public MiniClusterJob whileRunning(WhileRunning action) {
        this.whileRunning = action;
        return this;
    }

    /** Ends the job with stop-with-savepoint (canonical, into the configured savepoint dir) instead of cancel. */
    public MiniClusterJob stopWithSavepoint() {
        this.stopWithSavepoint = true;
        return this;
    }

    /** Ends the job with stop-with-savepoint in Flink's native format (the state backend's own files; 1.15+). */
    public MiniClusterJob stopWithNativeSavepoint() {
        this.stopWithSavepoint = true;
        this.nativeSavepoint = true;
        return this;
    }

    public Result run() throws Exception {
        Result run = new Result(name);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        topology.accept(env);
        JobClient client;
        try {
            client = env.executeAsync(name);
        } catch (Exception e) {
            run.failure = e;
            return run;
        }
        run.jobDir = new org.apache.flink.core.fs.Path(FlinkConf.checkpointsDir(conf), client.getJobID().toString())
                .toString();
        CompletableFuture<?> result = client.getJobExecutionResult();
        long seconds = timeout.getSeconds();
        long deadline = System.nanoTime() + timeout.toNanos();
        long readyAt = -1;
        try {
            while (true) {
                if (result.isDone()) {
                    try {
                        result.get();
                        run.failure = new IllegalStateException(name + " finished before it was ready");
                    } catch (Exception e) {
                        run.failure = e;
                    }
                    return run;
                }
                long latest = latestCheckpointId(run.jobDir);
                if (System.nanoTime() > deadline) {
                    run.failure = new IllegalStateException(name + " timed out after " + seconds + " s (ready "
                            + (readyAt >= 0) + ", latest checkpoint " + latest + " in " + run.jobDir + ")");
                    return run;
                }
                if (readyAt < 0 && ready.getAsBoolean()) {
                    readyAt = latest;
                }
                if (readyAt >= 0 && latest >= readyAt + checkpointsAfterReady) {
                    break;
                }
                Thread.sleep(pollInterval.toMillis());
            }
            // A job stopped with a savepoint finishes, and Flink may then delete its retained
            // checkpoints at any moment: remember the last one seen while it ran.
            run.checkpoint = checkpoint(run.jobDir, latestCheckpointId(run.jobDir));
            if (whileRunning != null) {
                whileRunning.accept(client);
            }
            if (stopWithSavepoint) {
                run.savepoint = Savepoints.stop(client, FlinkConf.savepointsDir(conf), nativeSavepoint)
                        .get(seconds, TimeUnit.SECONDS);
                result.handle((r, t) -> null).get(seconds, TimeUnit.SECONDS);
            }
        } finally {
            if (!result.isDone()) {
                try {
                    client.cancel().get(seconds, TimeUnit.SECONDS);
                } catch (Exception ignored) {
                    // finished meanwhile
                }
                result.handle((r, t) -> null).get(seconds, TimeUnit.SECONDS);
            }
        }
        String latest = checkpoint(run.jobDir, latestCheckpointId(run.jobDir));
        if (latest != null) {
            run.checkpoint = latest;
        }
        return run;
    }

    private static String checkpoint(String jobDir, long id) {
        return id > 0 ? new org.apache.flink.core.fs.Path(jobDir, "chk-" + id).toString() : null;
    }

    /** The highest {@code chk-<id>} of a job directory that has a {@code _metadata}, 0 if none. */
    static long latestCheckpointId(String jobDir) {
        try {
            org.apache.flink.core.fs.Path dir = new org.apache.flink.core.fs.Path(jobDir);
            FileSystem fs = dir.getFileSystem();
            if (!fs.exists(dir)) {
                return 0;
            }
            FileStatus[] list = fs.listStatus(dir);
            long best = 0;
            for (FileStatus s : list == null ? new FileStatus[0] : list) {
                String n = s.getPath().getName();
                if (n.startsWith("chk-") && fs.exists(new org.apache.flink.core.fs.Path(s.getPath(), "_metadata"))) {
                    best = Math.max(best, Long.parseLong(n.substring(4)));
                }
            }
            return best;
        } catch (IOException | RuntimeException e) {
            // a directory vanished while it was listed
            return 0;
        }
    }

    /** What a run left: its job directory, last retained checkpoint, savepoint, or failure. */
    public static final class Result {
        private final String name;
        private String jobDir;
        private String checkpoint;
        private String savepoint;
        private Throwable failure;

        private Result(String name) {
            this.name = name;
        }

        /** {@code <checkpoint dir>/<job id>} as a Flink path string, null if the job was not submitted. */
        public String jobDir() {
            return jobDir;
        }

        /** The last retained {@code chk-<id>} as a Flink path string ({@code file:/...}, {@code s3://...}), or null. */
        public String checkpoint() {
            return checkpoint;
        }

        /** {@link #checkpoint()} as a local path, or null. */
        public Path checkpointPath() {
            return checkpoint == null ? null : TestFiles.localPath(checkpoint);
        }

        /** The stop-with-savepoint directory as a Flink path string ({@code file:/...}, {@code s3://...}), or null. */
        public String savepoint() {
            return savepoint;
        }

        /** The stop-with-savepoint directory as a local path, or null. */
        public Path savepointPath() {
            return savepoint == null ? null : TestFiles.localPath(savepoint);
        }

        /** Why the job did not get ready and checkpoint, or null. */
        public Throwable failure() {
            return failure;
        }

        /** The failure's stack trace, or "no failure": for assertion messages. */
        public String failureText() {
            if (failure == null) {
                return "no failure";
            }
            StringWriter sw = new StringWriter();
            failure.printStackTrace(new PrintWriter(sw));
            return sw.toString();
        }

        /** This result, or an exception when the job failed or left no retained checkpoint. */
        public Result orThrow() {
            if (failure != null) {
                throw new IllegalStateException(name + " failed: " + failure, failure);
            }
            if (checkpoint == null) {
                throw new IllegalStateException("no retained checkpoint in " + jobDir);
            }
            return this;
        }
    }
}
