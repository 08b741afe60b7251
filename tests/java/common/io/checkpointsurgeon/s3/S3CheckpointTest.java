package io.checkpointsurgeon.s3;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.RestoreScenario;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.stream.Stream;

import static io.checkpointsurgeon.fixtures.RestoreScenario.CONSUMER_UID;
import static io.checkpointsurgeon.fixtures.RestoreScenario.KEYS;
import static io.checkpointsurgeon.fixtures.RestoreScenario.SPLIT_PER_SUBTASK;
import static io.checkpointsurgeon.fixtures.RestoreScenario.SPLIT_STATE;
import static io.checkpointsurgeon.fixtures.RestoreScenario.UNION_PER_SUBTASK;
import static io.checkpointsurgeon.fixtures.RestoreScenario.UNION_STATE;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

/**
 * Issue 6, real storage: the stale-union incident on S3. An S3-compatible server (S3Proxy from
 * Maven Central, in-memory blob store, its own JVM on 127.0.0.1) holds the bucket; Flink's S3 file
 * system ({@code flink-s3-fs-hadoop}) is loaded as a PLUGIN from a temporary {@code plugins/}
 * directory with the configuration in a temporary Flink conf dir ({@code s3.endpoint},
 * {@code s3.path.style.access}, access and secret key), the way a Flink process loads it; the
 * MiniCluster jobs checkpoint to {@code s3://bucket/...} with the inline threshold 0, so every
 * operator state stream is its own S3 object.
 *
 * <p>Job v1 writes the union state {@value RestoreScenario#UNION_STATE} under uid
 * {@value RestoreScenario#CONSUMER_UID}; job v2 restores, never reads it, and writes it back from
 * every subtask (×P). The grown checkpoint in the bucket is inspected, planned, purged into a new
 * S3 directory with {@link CheckpointSurgeon#apply(String, Surgery, String)}, and v2 is restored
 * from that S3 directory: the state is gone and the split list and keyed values v1 wrote are
 * intact. The in-place route and the CLI (its own JVM, {@code --flink-conf} and {@code --plugins})
 * are run against the bucket too.
 *
 * <p>Runs where the build provides {@code s3.plugin.jar} and {@code s3proxy.classpath} (see the
 * {@code s3 (issue 6)} block of build.gradle); skipped elsewhere.
 */
public class S3CheckpointTest {
    private static final int P = 2;
    private static final String BUCKET = "flink";
    private static final String ACCESS_KEY = "test-access-key";
    private static final String SECRET_KEY = "test-secret-key";
    private static final long RUN_TIMEOUT_SECONDS = 90;

    private static Path work;
    private static Process s3proxy;
    private static Path confDir;
    private static Path pluginsDir;
    private static final List<String> LOG = new ArrayList<>();

    @BeforeClass
    public static void startS3() throws Exception {
        String pluginJar = System.getProperty("s3.plugin.jar");
        String proxyClasspath = System.getProperty("s3proxy.classpath");
        Assume.assumeTrue("no S3 plugin for Flink " + flinkVersion() + " in this build",
                pluginJar != null && proxyClasspath != null);
        work = Files.createTempDirectory("checkpoint-surgeon-s3");

        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path props = work.resolve("s3proxy.properties");
        Files.writeString(props, String.join("\n",
                "s3proxy.endpoint=http://127.0.0.1:" + port,
                // Flink signs with the keys below; S3Proxy accepts any signature.
                "s3proxy.authorization=none",
                "s3proxy.ignore-unknown-headers=true",
                "jclouds.provider=transient",
                "jclouds.identity=" + ACCESS_KEY,
                "jclouds.credential=" + SECRET_KEY) + "\n");
        Path logback = work.resolve("logback.xml");
        Files.writeString(logback, "<configuration><appender name=\"E\" class=\"ch.qos.logback.core.ConsoleAppender\">"
                + "<encoder><pattern>%d %-5level %logger - %msg%n</pattern></encoder></appender>"
                + "<root level=\"WARN\"><appender-ref ref=\"E\"/></root></configuration>\n");
        String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        s3proxy = new ProcessBuilder(java, "-Xmx256m", "-Dlogback.configurationFile=" + logback, "-cp", proxyClasspath,
                "org.gaul.s3proxy.Main", "--properties", props.toString())
                .redirectErrorStream(true).redirectOutput(work.resolve("s3proxy.log").toFile()).start();
        // Create the bucket (S3Proxy runs without authorization).
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/" + BUCKET).openConnection();
                c.setRequestMethod("PUT");
                c.setConnectTimeout(1000);
                int code = c.getResponseCode();
                assertEquals("creating the bucket", 200, code);
                break;
            } catch (IOException e) {
                assertTrue("S3Proxy exited: " + Files.readString(work.resolve("s3proxy.log")), s3proxy.isAlive());
                assertTrue("S3Proxy did not start within 60 s", System.nanoTime() < deadline);
                Thread.sleep(200);
            }
        }

        // A Flink configuration directory and a plugins directory, as in a Flink distribution.
        confDir = Files.createDirectories(work.resolve("conf"));
        String conf = String.join("\n",
                "s3.endpoint: http://127.0.0.1:" + port,
                "s3.path.style.access: true",
                "s3.access-key: " + ACCESS_KEY,
                "s3.secret-key: " + SECRET_KEY,
                "s3.endpoint.region: us-east-1",
                "s3.connection.ssl.enabled: false",
                // fail fast instead of retrying for minutes
                "s3.attempts.maximum: 2",
                "s3.retry.limit: 2") + "\n";
        Files.writeString(confDir.resolve(flinkVersion().startsWith("1.15") ? "flink-conf.yaml" : "config.yaml"), conf);
        // One plugins dir per plugin jar, kept and reused across runs: Hadoop's shutdown hook reads
        // the plugin jar after the tests, so it cannot be deleted here.
        Path jar = Paths.get(pluginJar);
        String jarName = jar.getFileName().toString();
        pluginsDir = Paths.get(System.getProperty("java.io.tmpdir"), "checkpoint-surgeon-s3-plugins",
                jarName.substring(0, jarName.length() - ".jar".length()));
        Path pluginDir = Files.createDirectories(pluginsDir.resolve("s3-fs-hadoop"));
        Path link = pluginDir.resolve(jarName);
        if (!Files.exists(link)) {
            Files.deleteIfExists(link);
            try {
                Files.createSymbolicLink(link, jar);
            } catch (IOException | UnsupportedOperationException e) {
                Files.copy(jar, link);
            }
        }
        try {
            Class.forName("org.apache.flink.fs.s3hadoop.S3FileSystemFactory");
            throw new AssertionError("the S3 file system must not be on the test classpath: it is loaded as a plugin");
        } catch (ClassNotFoundException expected) {
            // only the plugin class loader has it
        }
        // Flink's FileSystem.initialize is global to the JVM: the MiniCluster below (which does not
        // initialize file systems itself) and checkpoint-surgeon share this configuration.
        CheckpointSurgeon.configureFileSystems(confDir, pluginsDir);
    }

    @AfterClass
    public static void stopS3() throws Exception {
        System.out.println("Flink " + flinkVersion() + " on S3: " + LOG);
        if (s3proxy != null) {
            s3proxy.destroy();
            if (!s3proxy.waitFor(10, TimeUnit.SECONDS)) {
                s3proxy.destroyForcibly();
            }
        }
        if (work != null) {
            try (Stream<Path> s = Files.walk(work)) {
                for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Test
    public void purgeStaleUnionStateOnS3AndRestoreFromTheBucket() throws Exception {
        long t0 = System.nanoTime();
        // 1. v1 writes the union state; v2 restores it and writes it back from every subtask.
        Run v1 = runV1("v1", false);
        String v1Checkpoint = v1.checkpoint;
        assertTrue(v1Checkpoint, v1Checkpoint.startsWith("s3://" + BUCKET + "/"));
        long before = elements(v1Checkpoint, UNION_STATE);
        assertEquals((long) P * UNION_PER_SUBTASK, before);
        Run v2 = runV2("v2", v1Checkpoint, false);
        assertV2Restored(v2);
        String grown = v2.checkpoint;
        long grownCount = elements(grown, UNION_STATE);
        assertEquals("the union state grows ×P on a restore that never reads it", before * P, grownCount);
        LOG.add("union elements " + before + " -> " + grownCount + " (" + grown + ")");

        // 2. inspect: every operator state stream is an S3 object of the checkpoint.
        InspectReport report = CheckpointSurgeon.inspect(grown);
        assertEquals(grown + "/_metadata", report.source());
        List<String> locations = consumerLocations(report);
        assertEquals(P, locations.size());
        for (String l : locations) {
            // a RelativeFileStateHandle (a name next to _metadata) or an absolute s3:// path in chk-N
            String object = l.contains("/") ? l : grown + "/" + l;
            assertTrue("operator state stream in the checkpoint: " + l, object.startsWith(grown + "/"));
            assertTrue("operator state stream in the bucket: " + object, exists(object));
        }
        LOG.add("operator state handles of " + CONSUMER_UID + ": " + (locations.get(0).contains("/") ? "absolute" : "relative")
                + " (" + locations.get(0) + ")");
        for (InspectReport.OperatorInfo op : report.operators()) {
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    assertEquals("stream of " + h.location() + " read", "", h.streamError());
                }
            }
        }
        assertNotNull(CheckpointSurgeon.doctor(grown));

        // 3. plan, then purge into a new directory of the bucket.
        Surgery purge = Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE);
        SurgeryPlan plan = CheckpointSurgeon.plan(grown, purge);
        assertNull(plan.result());
        assertEquals(grownCount, plan.elementsRemoved());
        String repaired = "s3://" + BUCKET + "/repaired/" + last(grown);
        SurgeryPlan done = CheckpointSurgeon.apply(grown, purge, repaired);
        assertEquals(grownCount, done.elementsRemoved());
        assertEquals(repaired + "/_metadata", done.result().metadataPath());
        assertTrue("Flink validation: " + done.result().flinkValidation(),
                done.result().flinkValidation().startsWith("loaded by Flink"));
        assertEquals("one new stream per subtask of " + CONSUMER_UID, P, done.result().written().size());
        for (String w : done.result().written()) {
            assertTrue(w, w.startsWith(repaired + "/"));
            assertTrue("new state file in the bucket: " + w, fs(w).exists(new org.apache.flink.core.fs.Path(w)));
        }
        assertTrue(exists(repaired + "/_metadata"));
        assertNull("the purged checkpoint in the bucket", elementsOrNull(repaired, UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(repaired, SPLIT_STATE));
        for (String l : consumerLocations(CheckpointSurgeon.inspect(repaired))) {
            String object = l.contains("/") ? l : repaired + "/" + l;
            assertTrue("rewritten stream in the output directory: " + l, object.startsWith(repaired + "/"));
            assertTrue("rewritten stream in the bucket: " + object, exists(object));
        }
        // Unchanged relative state files (the keyed state) were copied into the new directory.
        for (String c : done.result().copied()) {
            assertTrue(c, c.startsWith(repaired + "/") && exists(c));
        }
        // A local output directory: the remote checkpoint repaired into a local copy, read natively.
        Path local = work.resolve("repaired-locally");
        SurgeryPlan toLocal = CheckpointSurgeon.apply(grown, purge, local.toString());
        assertTrue(toLocal.result().flinkValidation(), toLocal.result().flinkValidation().startsWith("loaded by Flink"));
        assertTrue(Files.isRegularFile(local.resolve("_metadata")));
        InspectReport localReport = CheckpointSurgeon.inspect(local);
        for (InspectReport.OperatorInfo op : localReport.operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                assertFalse(UNION_STATE + " in the local copy", t.name().equals(UNION_STATE));
                assertTrue(t.name() + " read natively from the local copy", t.bytes() >= 0);
            }
        }
        // The input is untouched.
        assertEquals(grownCount, elements(grown, UNION_STATE));
        LOG.add("purged into " + repaired + ": " + done.result().written().size() + " new S3 objects, _metadata "
                + done.metadataBytesBefore() + " -> " + done.result().metadataBytes() + " B");

        // 4. RESTORE v2 from the repaired checkpoint in the bucket.
        Run after = runV2("after", repaired, false);
        assertV2Restored(after);
        assertNull("union state in the next checkpoint " + after.checkpoint, elementsOrNull(after.checkpoint, UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(after.checkpoint, SPLIT_STATE));
        LOG.add("restored from " + repaired + "; next checkpoint " + after.checkpoint + " has no " + UNION_STATE);

        // 5. In place on v1's retained checkpoint: backup, new _metadata last.
        SurgeryPlan inPlace = CheckpointSurgeon.applyInPlace(v1Checkpoint, purge);
        assertEquals(before, inPlace.elementsRemoved());
        assertNotNull(inPlace.result().backup());
        assertTrue(inPlace.result().backup(), inPlace.result().backup().startsWith(v1Checkpoint + "/_metadata.backup-"));
        assertTrue(exists(inPlace.result().backup()));
        assertNull(elementsOrNull(v1Checkpoint, UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(v1Checkpoint, SPLIT_STATE));
        Run afterInPlace = runV2("after-in-place", v1Checkpoint, false);
        assertV2Restored(afterInPlace);
        assertNull(elementsOrNull(afterInPlace.checkpoint, UNION_STATE));
        LOG.add("in place on " + v1Checkpoint + " (backup " + last(inPlace.result().backup())
                + "), restored");

        // 6. The CLI in its own JVM, configured with --flink-conf and --plugins.
        String cli = runCli("inspect", grown, "--flink-conf", confDir.toString(),
                "--plugins", pluginsDir.toString());
        assertTrue(cli, cli.contains(UNION_STATE));
        assertTrue(cli, cli.contains(String.format(java.util.Locale.ROOT, "%,d", grownCount)));
        String cliPlan = runCli("remove-state", grown, "--uid", CONSUMER_UID, "--state", UNION_STATE,
                "--flink-conf", confDir.toString(), "--plugins", pluginsDir.toString());
        assertTrue(cliPlan, cliPlan.contains(grownCount + " elements and"));
        LOG.add(String.format(java.util.Locale.ROOT, "total %.1f s", (System.nanoTime() - t0) / 1e9));
    }

    // ---------------------------------------------------------------------------------------------

    private static String last(String p) {
        return p.substring(p.lastIndexOf('/') + 1);
    }

    static final class Run {
        String jobDir;
        String checkpoint;
        Throwable failure;
    }

    /**
     * File merging (Flink 1.20+): operator state streams are segments of shared physical files
     * under the job directory, referenced by absolute s3:// paths. Staging downloads only the
     * segments' byte ranges; the rewritten streams become plain file handles with absolute paths in
     * the new S3 directory; Flink restores from it.
     */
    @Test
    public void purgeFileMergingSegmentsOnS3AndRestore() throws Exception {
        Assume.assumeFalse("file merging needs Flink 1.20+", flinkVersion().startsWith("1.15"));
        Run v1 = runV1("fm-v1", true);
        Run v2 = runV2("fm-v2", v1.checkpoint, true);
        assertV2Restored(v2);
        String grown = v2.checkpoint;
        long grownCount = elements(grown, UNION_STATE);
        assertEquals((long) P * UNION_PER_SUBTASK * P, grownCount);
        String jobDir = grown.substring(0, grown.lastIndexOf('/'));
        InspectReport report = CheckpointSurgeon.inspect(grown);
        List<String> kinds = consumerKinds(report);
        assertTrue(kinds.toString(), kinds.stream().allMatch(k -> k.contains("Segment")));
        for (String l : consumerLocations(report)) {
            assertTrue("absolute segment path below the job directory: " + l, l.startsWith(jobDir + "/"));
        }
        LOG.add("file merging: " + new java.util.TreeSet<>(kinds) + " at " + consumerLocations(report).get(0));

        String repaired = "s3://" + BUCKET + "/repaired-file-merging/" + last(grown);
        SurgeryPlan done = CheckpointSurgeon.apply(grown,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE), repaired);
        assertEquals(grownCount, done.elementsRemoved());
        assertTrue(done.result().flinkValidation(), done.result().flinkValidation().startsWith("loaded by Flink"));
        assertEquals(P, done.result().written().size());
        InspectReport after = CheckpointSurgeon.inspect(repaired);
        List<String> newKinds = consumerKinds(after);
        assertTrue(newKinds.toString(), newKinds.stream().noneMatch(k -> k.contains("Segment")));
        for (String l : consumerLocations(after)) {
            assertTrue("rewritten stream: an absolute path in the new directory: " + l, l.startsWith(repaired + "/"));
            assertTrue(exists(l));
        }
        assertNull(elementsOrNull(repaired, UNION_STATE));
        Run restored = runV2("fm-after", repaired, true);
        assertV2Restored(restored);
        assertNull(elementsOrNull(restored.checkpoint, UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(restored.checkpoint, SPLIT_STATE));
        LOG.add("file merging: purged into " + repaired + " " + new java.util.TreeSet<>(newKinds) + ", restored");
    }

    private static Run runV1(String name, boolean fileMerging) throws Exception {
        RestoreScenario.resetReports();
        Run run = run(name, null, fileMerging,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV1(), new RestoreScenario.KeyedWriter()),
                () -> RestoreScenario.KEYS_WRITTEN.size() == KEYS);
        assertNull(failureText(run.failure), run.failure);
        assertNotNull(run.checkpoint);
        return run;
    }

    private static Run runV2(String name, String from, boolean fileMerging) throws Exception {
        RestoreScenario.resetReports();
        return run(name, from, fileMerging,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV2(), new RestoreScenario.KeyedProbe()),
                () -> RestoreScenario.SPLIT_SEEN.size() == P && RestoreScenario.KEYED_SEEN.size() == KEYS);
    }

    private static void assertV2Restored(Run run) {
        assertNull(failureText(run.failure), run.failure);
        assertNotNull(run.checkpoint);
        Map<Integer, List<String>> split = new TreeMap<>();
        for (int s = 0; s < P; s++) {
            List<String> l = new ArrayList<>();
            for (int i = 0; i < SPLIT_PER_SUBTASK; i++) {
                l.add(RestoreScenario.splitValue(s, i));
            }
            Collections.sort(l);
            split.put(s, l);
        }
        assertEquals("split list state restored from S3", split, new TreeMap<>(RestoreScenario.SPLIT_SEEN));
        Map<Long, String> keyed = new TreeMap<>();
        for (long k = 0; k < KEYS; k++) {
            keyed.put(k, RestoreScenario.keyedValue(k));
        }
        assertEquals("keyed state restored from S3", keyed, new TreeMap<>(RestoreScenario.KEYED_SEEN));
    }

    private static Configuration conf(String tag, String restoreFrom, boolean fileMerging) {
        Configuration c = new Configuration();
        set(c, "hashmap", "state.backend", "state.backend.type");
        set(c, "filesystem", "state.checkpoint-storage", "execution.checkpointing.storage");
        set(c, "s3://" + BUCKET + "/checkpoints/" + tag, "state.checkpoints.dir", "execution.checkpointing.dir");
        set(c, "s3://" + BUCKET + "/savepoints/" + tag, "state.savepoints.dir", "execution.checkpointing.savepoint-dir");
        set(c, "300 ms", "execution.checkpointing.interval");
        set(c, "RETAIN_ON_CANCELLATION", "execution.checkpointing.externalized-checkpoint-retention");
        set(c, "1", "state.checkpoints.num-retained", "execution.checkpointing.num-retained");
        set(c, "100", "execution.checkpointing.tolerable-failed-checkpoints");
        set(c, "none", "restart-strategy", "restart-strategy.type");
        set(c, "0", "rest.bind-port");
        set(c, "false", "state.backend.local-recovery", "execution.state-recovery.from-local");
        // every operator state stream becomes its own S3 object
        set(c, "0", "state.storage.fs.memory-threshold", "execution.checkpointing.data-inline-threshold");
        if (fileMerging) {
            set(c, "true", "execution.checkpointing.file-merging.enabled");
        }
        if (restoreFrom != null) {
            set(c, restoreFrom, "execution.savepoint.path", "execution.state-recovery.path");
        }
        return c;
    }

    private static void set(Configuration c, String value, String... keys) {
        for (String k : keys) {
            c.setString(k, value);
        }
    }

    /**
     * Runs a job until {@code ready} holds and two more checkpoints completed in the bucket, cancels
     * it and returns its last retained checkpoint ({@code s3://...}).
     */
    private static Run run(String name, String restoreFrom, boolean fileMerging,
                           Consumer<StreamExecutionEnvironment> topology, BooleanSupplier ready) throws Exception {
        Configuration conf = conf(name, restoreFrom, fileMerging);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(P, conf);
        topology.accept(env);
        Run run = new Run();
        JobClient client;
        try {
            client = env.executeAsync(name);
        } catch (Exception e) {
            run.failure = e;
            return run;
        }
        run.jobDir = "s3://" + BUCKET + "/checkpoints/" + name + "/" + client.getJobID();
        CompletableFuture<?> result = client.getJobExecutionResult();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(RUN_TIMEOUT_SECONDS);
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
                if (System.nanoTime() > deadline) {
                    run.failure = new IllegalStateException(name + " timed out (ready " + (readyAt >= 0) + ")");
                    return run;
                }
                long latest = latestId(run.jobDir);
                if (readyAt < 0 && ready.getAsBoolean()) {
                    readyAt = latest;
                }
                if (readyAt >= 0 && latest >= readyAt + 2) {
                    break;
                }
                Thread.sleep(100);
            }
        } finally {
            if (!result.isDone()) {
                try {
                    client.cancel().get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                } catch (Exception ignored) {
                    // finished meanwhile
                }
                result.handle((r, t) -> null).get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
        long id = latestId(run.jobDir);
        run.checkpoint = id > 0 ? run.jobDir + "/chk-" + id : null;
        return run;
    }

    /** The highest chk-N of a job directory in the bucket that has a _metadata, 0 if none. */
    private static long latestId(String jobDir) {
        try {
            org.apache.flink.core.fs.Path dir = new org.apache.flink.core.fs.Path(jobDir);
            FileSystem fs = fs(jobDir);
            if (!fs.exists(dir)) {
                return 0;
            }
            long best = 0;
            FileStatus[] list = fs.listStatus(dir);
            for (FileStatus s : list == null ? new FileStatus[0] : list) {
                String n = s.getPath().getName();
                if (n.startsWith("chk-") && fs.exists(new org.apache.flink.core.fs.Path(s.getPath(), "_metadata"))) {
                    best = Math.max(best, Long.parseLong(n.substring(4)));
                }
            }
            return best;
        } catch (IOException | RuntimeException e) {
            return 0;
        }
    }

    private static FileSystem fs(String path) throws IOException {
        return FileSystem.get(URI.create(path));
    }

    private static boolean exists(String path) throws IOException {
        return fs(path).exists(new org.apache.flink.core.fs.Path(path));
    }

    private static long elements(String checkpoint, String state) throws Exception {
        Long n = elementsOrNull(checkpoint, state);
        assertNotNull(state + " in " + checkpoint, n);
        return n;
    }

    /** Elements of a state over all operators (through the S3 route), or null when no operator has it. */
    private static Long elementsOrNull(String checkpoint, String state) throws Exception {
        Long sum = null;
        for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(checkpoint).operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                if (t.name().equals(state)) {
                    assertTrue("elements of " + state + " read", t.bytes() >= 0);
                    sum = (sum == null ? 0 : sum) + t.elements();
                }
            }
        }
        return sum;
    }

    /** Where the operator state streams of source_consumer (the operator with the split list) live. */
    private static List<String> consumerLocations(InspectReport r) {
        List<String> l = new ArrayList<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            if (op.stateTotals().stream().noneMatch(t -> t.name().equals(SPLIT_STATE))) {
                continue;
            }
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    assertFalse("inline stream: the threshold is 0", h.inline());
                    l.add(h.location());
                }
            }
        }
        return l;
    }

    /** Kind/delegate kind of the operator state handles of source_consumer. */
    private static List<String> consumerKinds(InspectReport r) {
        List<String> l = new ArrayList<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            if (op.stateTotals().stream().noneMatch(t -> t.name().equals(SPLIT_STATE))) {
                continue;
            }
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    l.add(h.kind() + "/" + h.delegateKind());
                }
            }
        }
        return l;
    }

    /** Runs the CLI in its own JVM with this test's class path (Flink's jars, not the S3 plugin). */
    private static String runCli(String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("io.checkpointsurgeon.cli.Cli");
        Collections.addAll(cmd, args);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue("CLI timed out", p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(out, 0, p.exitValue());
        return out;
    }

    private static String failureText(Throwable t) {
        if (t == null) {
            return "no failure";
        }
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        return sw.toString();
    }

    private static String flinkVersion() {
        return System.getProperty("flink.version", "?");
    }
}
