package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.TestFiles;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.highavailability.HighAvailabilityServices;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A MiniCluster with ZooKeeper HA (or other HA settings: KubernetesHaRepairTest's) whose shutdown
 * behaves like a JobManager crash: the HA data (ZooKeeper nodes or ConfigMaps, job graphs and
 * completedCheckpoint files in the HA storage dir) is never cleaned up, whatever the Flink
 * version's {@code closeAsync} would do (1.15's always cleans up).
 */
final class HaCluster implements AutoCloseable {
    static final String CLUSTER_ID = "ha-test";
    static final long TIMEOUT_MS = 60_000;
    /** {@code completedCheckpoint} + FileUtils.getRandomFilename's random part; no backups or temp files. */
    static final Pattern HA_FILE = Pattern.compile("completedCheckpoint[0-9a-f]+");

    /** Subclass whose HA services never clean up their data on close. */
    static final class CrashingMiniCluster extends MiniCluster {
        CrashingMiniCluster(MiniClusterConfiguration config) {
            super(config);
        }

        @Override
        protected HighAvailabilityServices createHighAvailabilityServices(Configuration conf, Executor executor)
                throws Exception {
            HighAvailabilityServices real = super.createHighAvailabilityServices(conf, executor);
            InvocationHandler h = (proxy, method, args) -> {
                String name = method.getName();
                // A crashed JobManager cleans nothing up. 1.15 calls closeAndCleanupAllData(), later
                // versions closeWithOptionalClean(true), whose default implementation would call the
                // real object's cleanupAllData() behind this proxy's back.
                if (name.equals("closeAndCleanupAllData") || name.equals("closeWithOptionalClean")) {
                    real.close();
                    return null;
                }
                if (name.equals("cleanupAllData")) {
                    return null;
                }
                try {
                    return method.invoke(real, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            };
            return (HighAvailabilityServices) Proxy.newProxyInstance(HighAvailabilityServices.class.getClassLoader(),
                    new Class<?>[] {HighAvailabilityServices.class}, h);
        }
    }

    final Path base;
    /** The checkpoint base dir ({@link #moveCheckpoints} moves it, as an operator moves a bucket). */
    Path checkpoints;
    final Path haStorage;
    /** The HA service's settings besides the storage dir and the cluster id. */
    private final Map<String, String> haSettings;
    private MiniCluster cluster;

    /** ZooKeeper HA with the server at {@code zkQuorum}. */
    HaCluster(Path base, String zkQuorum) throws IOException {
        this(base, Map.of("high-availability.type", "zookeeper", "high-availability", "zookeeper",
                "high-availability.zookeeper.quorum", zkQuorum));
    }

    HaCluster(Path base, Map<String, String> haSettings) throws IOException {
        this.base = base;
        this.checkpoints = Files.createDirectories(base.resolve("checkpoints"));
        this.haStorage = Files.createDirectories(base.resolve("ha"));
        this.haSettings = haSettings;
    }

    /**
     * Moves the checkpoint base dir, with every checkpoint in it, to {@code to} (nothing is left at
     * the old place); clusters started afterwards write their checkpoints there.
     */
    void moveCheckpoints(Path to) throws IOException {
        if (cluster != null) {
            throw new IllegalStateException("the cluster is running");
        }
        Files.createDirectories(to.getParent());
        Files.move(checkpoints, to);
        checkpoints = to;
    }

    /** The HA dir that holds the completedCheckpoint files: {@code <storageDir>/<cluster-id>}. */
    Path haClusterDir() {
        return haStorage.resolve(CLUSTER_ID);
    }

    Configuration configuration() {
        Configuration c = FlinkConf.checkpointing("hashmap", checkpoints.toUri().toString(),
                base.resolve("savepoints").toUri().toString(), "300 ms", 2);
        haSettings.forEach((k, v) -> FlinkConf.set(c, v, k));
        FlinkConf.set(c, haStorage.toUri().toString(), "high-availability.storageDir");
        FlinkConf.set(c, CLUSTER_ID, "high-availability.cluster-id");
        // State in files of the checkpoint dir (like the incident's S3 files), not inline.
        FlinkConf.inlineThreshold(c, "0");
        // MiniCluster.close stops the TaskManager before the Dispatcher: with restart strategy "none" the
        // job would FAIL (globally terminal, its HA data removed) instead of being suspended.
        FlinkConf.set(c, "fixed-delay", "restart-strategy", "restart-strategy.type");
        FlinkConf.set(c, "1000000", "restart-strategy.fixed-delay.attempts");
        FlinkConf.set(c, "1 s", "restart-strategy.fixed-delay.delay");
        return c;
    }

    void start() throws Exception {
        if (cluster != null) {
            throw new IllegalStateException("already running");
        }
        MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                .setConfiguration(configuration())
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(HaJobs.PARALLELISM)
                .build();
        MiniCluster m = new CrashingMiniCluster(mc);
        m.start();
        cluster = m;
    }

    /** Shuts the cluster down without cancelling its jobs or cleaning up HA data. */
    void crash() throws Exception {
        MiniCluster m = cluster;
        cluster = null;
        if (m != null) {
            m.closeAsync().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public void close() throws Exception {
        crash();
    }

    /** Builds the job on an environment configured like the cluster and submits it. */
    JobID submit(Consumer<StreamExecutionEnvironment> topology, String restorePath) throws Exception {
        Configuration c = configuration();
        if (restorePath != null) {
            FlinkConf.restoreFrom(c, restorePath);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(HaJobs.PARALLELISM, c);
        topology.accept(env);
        JobGraph jobGraph = env.getStreamGraph().getJobGraph();
        return cluster.submitJob(jobGraph).get(TIMEOUT_MS, TimeUnit.MILLISECONDS).getJobID();
    }

    void cancel(JobID job) throws Exception {
        cluster.cancelJob(job).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            if (status(job) == JobStatus.CANCELED) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("job " + job + " was not cancelled within " + TIMEOUT_MS + " ms");
    }

    /** The job's status, or null while this cluster does not know the job (yet). */
    JobStatus status(JobID job) {
        try {
            return cluster.getJobStatus(job).get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            return null;
        }
    }

    /** Waits until the job runs on this cluster (recovered jobs appear after leader election). */
    void awaitRunning(JobID job) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        JobStatus s = null;
        while (System.currentTimeMillis() < deadline) {
            s = status(job);
            if (s == JobStatus.RUNNING) {
                return;
            }
            if (s != null && s.isGloballyTerminalState()) {
                throw new AssertionError("job " + job + " is " + s + " instead of RUNNING: " + failureOf(job));
            }
            Thread.sleep(50);
        }
        throw new AssertionError("job " + job + " is not RUNNING after " + TIMEOUT_MS + " ms (status " + s
                + ", last failure: " + (s == null ? "-" : lastFailure(job)) + ")");
    }

    /** The job's most recent failure (also of a restart), as a stack trace, or "none". */
    String lastFailure(JobID job) {
        try {
            org.apache.flink.runtime.executiongraph.ErrorInfo e =
                    cluster.getExecutionGraph(job).get(10, TimeUnit.SECONDS).getFailureInfo();
            return e == null ? "none" : e.getExceptionAsString();
        } catch (Exception e) {
            return "(unavailable: " + e + ")";
        }
    }

    private String failureOf(JobID job) {
        try {
            return String.valueOf(cluster.requestJobResult(job).get(10, TimeUnit.SECONDS).getSerializedThrowable()
                    .map(t -> t.getFullStringifiedStackTrace()).orElse("no failure cause"));
        } catch (Exception e) {
            return "(job result unavailable: " + e + ")";
        }
    }

    /**
     * Starts the cluster again on the same HA services and storage (nothing is submitted), waits for
     * the recovered job's first checkpoint, crashes the cluster (unless told not to) and checks that
     * the job restored the newest HA checkpoint with exactly the state values snapshotted for it.
     */
    long recoverAndCheckpoint(JobID job, String phase) throws Exception {
        return recoverAndCheckpoint(job, phase, true);
    }

    long recoverAndCheckpoint(JobID job, String phase, boolean crash) throws Exception {
        long before = haFilesById(job).keySet().stream().mapToLong(Long::longValue).max().orElse(0);
        HaJobs.resetPhase();
        start();
        // Nothing is submitted: the Dispatcher recovers the job from the HA services.
        awaitRunning(job);
        long id = awaitHaCheckpoint(job, before);
        awaitKeyedRestores(phase);
        if (crash) {
            crash();
        }
        assertEquals(phase + ": both v2 subtasks restored: " + HaJobs.RESTORES, HaJobs.PARALLELISM,
                HaJobs.RESTORES.size());
        long restored = HaJobs.RESTORES.get(0).checkpointId;
        List<Long> values = new ArrayList<>();
        for (HaJobs.Restore r : HaJobs.RESTORES) {
            assertEquals(phase + ": all subtasks restored the same checkpoint: " + HaJobs.RESTORES, restored,
                    r.checkpointId);
            values.addAll(r.position);
        }
        assertEquals(phase + ": restored the newest HA checkpoint", before, restored);
        List<Long> snapshotted = HaJobs.POSITION_SNAPSHOTS.get(restored);
        assertNotNull(phase + ": no position snapshot recorded for checkpoint " + restored, snapshotted);
        List<Long> expected = new ArrayList<>(snapshotted);
        Collections.sort(expected);
        Collections.sort(values);
        assertEquals(phase + ": the split list state 'position' holds exactly the snapshotted values", expected,
                values);
        assertEquals(phase + ": keyed state 'first' restored for every key", HaJobs.KEYS,
                HaJobs.KEYED_RESTORED.size());
        assertEquals(phase + ": keyed state 'first' holds the values set before", new TreeMap<>(HaJobs.KEYED_FIRST),
                new TreeMap<>(HaJobs.KEYED_RESTORED));
        return id;
    }

    /**
     * Waits until the keyed operator holds {@code first} for every key, then for an HA checkpoint
     * triggered after that (one in flight may have been triggered before, so the one after it), so
     * that the recovery that follows can find every key in restored state.
     */
    long awaitCheckpointHoldingEveryKey(JobID job) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (HaJobs.KEYS_HELD.size() < HaJobs.KEYS && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertEquals("keys the keyed operator holds a value for", HaJobs.KEYS, HaJobs.KEYS_HELD.size());
        long seen = haFilesById(job).keySet().stream().mapToLong(Long::longValue).max().orElse(0);
        return awaitHaCheckpoint(job, seen + 1);
    }

    private static void awaitKeyedRestores(String phase) throws InterruptedException {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (HaJobs.KEYED_RESTORED.size() < HaJobs.KEYS && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
    }

    static void assertRestoredFrom(long id, String phase) {
        for (HaJobs.Restore r : HaJobs.RESTORES) {
            assertEquals(phase + " restored from the HA checkpoint", id, r.checkpointId);
        }
    }

    /**
     * The incident's start, as both HA tests run it: v1 writes the union state (2 entries per
     * subtask) and is cancelled; v2 starts from v1's newest retained checkpoint, takes an HA
     * checkpoint that holds every key, and the JobManager crashes. v2's union state then holds v1's
     * entries once per v2 subtask (checked in the HA file and the checkpoint). Returns v2's job id.
     */
    JobID startV2FromV1() throws Exception {
        start();
        JobID v1 = submit(env -> HaJobs.consumerJob(env, true), null);
        awaitRunning(v1);
        long v1Checkpoint = awaitHaCheckpoint(v1, 0);
        assertEquals("v1: 2 union entries per subtask", 2L * HaJobs.PARALLELISM,
                ZooKeeperHaRepairTest.unionElements(CheckpointSurgeon.inspectHa(haFilesById(v1).get(v1Checkpoint))));
        cancel(v1);
        Path v1Dir = TestFiles.latestCheckpoint(checkpoints.resolve(v1.toString()));
        assertNotNull("a retained checkpoint of v1", v1Dir);

        HaJobs.resetPhase();
        JobID job = submit(env -> HaJobs.consumerJob(env, false), v1Dir.toUri().toString());
        awaitRunning(job);
        long a = awaitCheckpointHoldingEveryKey(job);
        crash();
        assertUnionInNewestHaFile("after restoring v2 from v1's checkpoint", job, a,
                2L * HaJobs.PARALLELISM * HaJobs.PARALLELISM);
        return job;
    }

    /**
     * Checks the newest HA file (after a crash): its union state has {@code expected} entries and
     * {@code chk-<id>/_metadata} agrees. Returns the job's HA files by checkpoint id.
     */
    Map<Long, Path> assertUnionInNewestHaFile(String phase, JobID job, long atLeast, long expected)
            throws Exception {
        Map<Long, Path> ha = haFilesById(job);
        assertFalse(phase + ": no completedCheckpoint files of job " + job + " in " + haClusterDir() + "; files:"
                + tree(), ha.isEmpty());
        long newest = Collections.max(ha.keySet());
        assertTrue(newest >= atLeast);
        InspectReport r = CheckpointSurgeon.inspectHa(ha.get(newest));
        assertEquals(phase + ": union entries in HA checkpoint " + newest, expected, ZooKeeperHaRepairTest.unionElements(r));
        assertEquals(phase + ": " + HaJobs.PARALLELISM + " position entries", HaJobs.PARALLELISM,
                ZooKeeperHaRepairTest.stateElements(r, HaJobs.POSITION_STATE));
        InspectReport md = CheckpointSurgeon.inspect(checkpointDir(job, newest));
        assertEquals(phase + ": union entries in chk-" + newest + "/_metadata", expected, ZooKeeperHaRepairTest.unionElements(md));
        return ha;
    }

    /** The job's retained checkpoint dir {@code chk-<id>}. */
    Path checkpointDir(JobID job, long id) {
        return checkpoints.resolve(job.toString()).resolve("chk-" + id);
    }

    /** The HA completedCheckpoint files (no backups, no temp files), by checkpoint id; unreadable files are skipped. */
    Map<Long, Path> haFilesById(JobID job) throws IOException {
        Map<Long, Path> out = new java.util.TreeMap<>();
        for (Path f : haFiles()) {
            try {
                CheckpointSurgeon.HaFileInfo info = CheckpointSurgeon.haFileInfo(f);
                if (info.jobId().equals(job.toString())) {
                    out.put(info.checkpointId(), f);
                }
            } catch (Exception e) {
                // being written or deleted right now
            }
        }
        return out;
    }

    /** Every file under the test's base dir, for failure messages. */
    String tree() {
        StringBuilder sb = new StringBuilder();
        try (Stream<Path> s = Files.walk(base)) {
            s.forEach(p -> sb.append("\n  ").append(base.relativize(p)));
        } catch (IOException e) {
            sb.append(" (").append(e).append(')');
        }
        return sb.toString();
    }

    List<Path> haFiles() throws IOException {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(haClusterDir())) {
            return out;
        }
        try (Stream<Path> s = Files.list(haClusterDir())) {
            s.filter(p -> HA_FILE.matcher(p.getFileName().toString()).matches()).sorted().forEach(out::add);
        }
        return out;
    }

    /**
     * Waits until the job's HA store has a checkpoint with an id above {@code afterId} whose
     * {@code chk-<id>/_metadata} exists too, and returns that id.
     */
    long awaitHaCheckpoint(JobID job, long afterId) throws Exception {
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            JobStatus s = status(job);
            if (s != null && s.isGloballyTerminalState()) {
                throw new AssertionError("job " + job + " is " + s + ": " + failureOf(job));
            }
            for (long id : haFilesById(job).keySet()) {
                if (id > afterId && Files.exists(checkpointDir(job, id).resolve("_metadata"))) {
                    return id;
                }
            }
            Thread.sleep(100);
        }
        throw new AssertionError("no HA checkpoint after " + afterId + " of job " + job + " within " + TIMEOUT_MS
                + " ms (status " + status(job) + ", last failure: " + lastFailure(job) + "); HA files " + haFiles());
    }
}
