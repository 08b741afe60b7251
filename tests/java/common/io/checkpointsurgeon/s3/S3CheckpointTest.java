package io.checkpointsurgeon.s3;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.RestoreScenario;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.MiniClusterJob.Result;
import io.checkpointsurgeon.testing.S3ProxyServer;
import io.checkpointsurgeon.testing.TestFiles;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
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
import static org.junit.Assert.fail;

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
 * <p>Runs where the build provides {@code s3.plugin.jar} and {@code s3proxy.classpath} (the
 * per-Flink-version suites in build.gradle); skipped elsewhere.
 */
public class S3CheckpointTest {
    private static final int P = 2;
    private static final String BUCKET = "flink";
    private static final long RUN_TIMEOUT_SECONDS = 90;

    private static Path work;
    private static S3ProxyServer s3proxy;
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
        s3proxy = S3ProxyServer.start(proxyClasspath, work, BUCKET);

        // A Flink configuration directory and a plugins directory, as in a Flink distribution.
        confDir = writeConf(work.resolve("conf"), s3proxy.endpoint());
        pluginsDir = S3ProxyServer.pluginsDir(pluginJar);
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

    /** A Flink configuration directory for the S3 file system at {@code endpoint} (S3Proxy, or a relay to it). */
    private static Path writeConf(Path dir, String endpoint) throws IOException {
        return S3ProxyServer.flinkConf(dir, endpoint, flinkVersion());
    }

    @AfterClass
    public static void stopS3() throws Exception {
        System.out.println("Flink " + flinkVersion() + " on S3: " + LOG);
        if (s3proxy != null) {
            s3proxy.close();
        }
        if (work != null) {
            TestFiles.deleteRecursively(work);
        }
    }

    @Test
    public void purgeStaleUnionStateOnS3AndRestoreFromTheBucket() throws Exception {
        long t0 = System.nanoTime();
        // 1. v1 writes the union state; v2 restores it and writes it back from every subtask.
        Result v1 = runV1("v1", false);
        String v1Checkpoint = v1.checkpoint();
        assertTrue(v1Checkpoint, v1Checkpoint.startsWith("s3://" + BUCKET + "/"));
        long before = elements(v1Checkpoint, UNION_STATE);
        assertEquals((long) P * UNION_PER_SUBTASK, before);
        Result v2 = runV2("v2", v1Checkpoint, false);
        assertV2Restored(v2);
        String grown = v2.checkpoint();
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
        // An output inside the checkpoint (Flink deletes it with chk-N) or around it is refused
        // before anything is written, comparing normalized URIs.
        String job = grown.substring(0, grown.lastIndexOf('/'));
        for (String nested : List.of(grown + "/repaired", grown + "//x/../deep/er/", job)) {
            try {
                CheckpointSurgeon.apply(grown, purge, nested);
                throw new AssertionError("an output at " + nested + " was accepted");
            } catch (io.checkpointsurgeon.CheckpointSurgeonException e) {
                assertEquals(nested, io.checkpointsurgeon.CheckpointSurgeonException.Code.INVALID_ARGUMENT, e.code());
                assertTrue(e.getMessage(), e.getMessage().contains(nested.equals(job) ? "holds the checkpoint's directory"
                        : "lies inside the checkpoint's directory " + grown));
            }
        }
        assertFalse("nothing written inside the checkpoint", exists(grown + "/repaired/.checkpoint-surgeon.lock"));
        SurgeryPlan done = CheckpointSurgeon.apply(grown, purge, repaired);
        assertEquals(grownCount, done.elementsRemoved());
        assertEquals(repaired + "/_metadata", done.result().metadataPath());
        assertEquals("Flink validation: " + done.result().flinkValidation(),
                SurgeryPlan.Validation.Status.LOADED_BY_FLINK, done.result().validation().status());
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
        assertEquals(toLocal.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, toLocal.result().validation().status());
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
        Result after = runV2("after", repaired, false);
        assertV2Restored(after);
        assertNull("union state in the next checkpoint " + after.checkpoint(), elementsOrNull(after.checkpoint(), UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(after.checkpoint(), SPLIT_STATE));
        LOG.add("restored from " + repaired + "; next checkpoint " + after.checkpoint() + " has no " + UNION_STATE);

        // 5. In place on v1's retained checkpoint: backup, new _metadata last.
        SurgeryPlan inPlace = CheckpointSurgeon.applyInPlace(v1Checkpoint, purge);
        assertEquals(before, inPlace.elementsRemoved());
        assertNotNull(inPlace.result().backup());
        assertTrue(inPlace.result().backup(), inPlace.result().backup().startsWith(v1Checkpoint + "/_metadata.backup-"));
        assertTrue(exists(inPlace.result().backup()));
        assertNull(elementsOrNull(v1Checkpoint, UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(v1Checkpoint, SPLIT_STATE));
        Result afterInPlace = runV2("after-in-place", v1Checkpoint, false);
        assertV2Restored(afterInPlace);
        assertNull(elementsOrNull(afterInPlace.checkpoint(), UNION_STATE));
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

    /**
     * File merging (Flink 1.20+): operator state streams are segments of shared physical files
     * under the job directory, referenced by absolute s3:// paths. Staging downloads only the
     * segments' byte ranges; the rewritten streams become plain file handles with absolute paths in
     * the new S3 directory; Flink restores from it.
     */
    @Test
    public void purgeFileMergingSegmentsOnS3AndRestore() throws Exception {
        Assume.assumeFalse("file merging needs Flink 1.20+", flinkVersion().startsWith("1.15"));
        Result v1 = runV1("fm-v1", true);
        Result v2 = runV2("fm-v2", v1.checkpoint(), true);
        assertV2Restored(v2);
        String grown = v2.checkpoint();
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
        assertEquals(done.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, done.result().validation().status());
        assertEquals(P, done.result().written().size());
        InspectReport after = CheckpointSurgeon.inspect(repaired);
        List<String> newKinds = consumerKinds(after);
        assertTrue(newKinds.toString(), newKinds.stream().noneMatch(k -> k.contains("Segment")));
        for (String l : consumerLocations(after)) {
            assertTrue("rewritten stream: an absolute path in the new directory: " + l, l.startsWith(repaired + "/"));
            assertTrue(exists(l));
        }
        assertNull(elementsOrNull(repaired, UNION_STATE));
        Result restored = runV2("fm-after", repaired, true);
        assertV2Restored(restored);
        assertNull(elementsOrNull(restored.checkpoint(), UNION_STATE));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elementsOrNull(restored.checkpoint(), SPLIT_STATE));
        LOG.add("file merging: purged into " + repaired + " " + new java.util.TreeSet<>(newKinds) + ", restored");
    }

    /**
     * A retained incremental RocksDB checkpoint (shared/ files named by absolute s3:// paths) is
     * copied to another bucket and deleted where it was; {@code relocate --check} rewrites its
     * paths and the job restores from the new bucket with its state intact.
     */
    @Test
    public void relocateACheckpointFromBucketToBucketAndRestore() throws Exception {
        s3proxy.createBucket("flink-moved");
        Result v1 = runV1("relocate-v1", false, "rocksdb");
        String from = "s3://" + BUCKET + "/checkpoints/relocate-v1";
        String to = "s3://flink-moved/checkpoints/relocate-v1";
        String chk = v1.checkpoint();
        SurgeryPlan planned = CheckpointSurgeon.plan(chk, Surgery.relocate(from, to));
        assertTrue("shared/ files named by absolute paths: " + planned.relocated(),
                planned.relocated().stream().anyMatch(r -> r.oldPath().contains("/shared/")));

        long copied = copyTree(from, to);
        fs(from).delete(new org.apache.flink.core.fs.Path(from), true);
        assertFalse(exists(chk + "/_metadata"));
        String moved = to + chk.substring(from.length());
        String out = runCli("relocate", moved, "--from", from, "--to", to, "--check", "--apply", "--in-place",
                "--flink-conf", confDir.toString(), "--plugins", pluginsDir.toString());
        int n = planned.relocated().size();
        assertTrue(out, out.contains("check: " + n + " of " + n + " rewritten paths exist"));

        assertV2Restored(runV2("relocate-v2", moved, false, "rocksdb"));
        LOG.add("relocate: " + copied + " bytes copied bucket to bucket, " + n + " paths rewritten, restored");
    }

    /**
     * {@code --reference-unchanged} on a canonical savepoint with a large keyed state: the repair
     * into a new prefix stores only the new {@code _metadata} and the rewritten operator state
     * (the bytes under each prefix, listed through Flink's S3 file system), where copying the unchanged files stores all of it again; the job
     * restores from the referencing savepoint with every keyed value intact. The size is
     * {@code -Ds3.referenceTestMiB} (the build sets 128 for Flink 1.20.3, 16 elsewhere).
     */
    @Test
    public void referenceUnchangedStoresOnlyTheRewrittenBytes() throws Exception {
        int mib = Integer.getInteger("s3.referenceTestMiB", 16);
        long keys = mib * 1024L;
        BigKeyed.WRITTEN.set(0);
        Configuration c = conf("big", null, false, "rocksdb");
        FlinkConf.set(c, "1 h", "execution.checkpointing.interval");
        // The S3 plugin's upload threads outlive a job; a multipart upload (large objects only) on
        // one that an earlier job of this JVM created trips Flink's leaked-class-loader check.
        FlinkConf.set(c, "false", "classloader.check-leaked-classloader");
        long tv1 = System.nanoTime();
        Result v1 = MiniClusterJob.of("big-v1", c, P, env -> bigJob(env, keys, true))
                .readyWhen(() -> BigKeyed.WRITTEN.get() >= keys)
                .checkpointsAfterReady(0)
                .stopWithSavepoint()
                .timeout(Duration.ofSeconds(600))
                .run();
        assertNull(v1.failureText(), v1.failure());
        String sp = io.checkpointsurgeon.flink.RemoteCheckpoint.trimSlashes(v1.savepoint());
        long stateBytes = bytesUnder(sp);
        assertTrue(stateBytes + " bytes", stateBytes > keys * 1000L);
        LOG.add(String.format(java.util.Locale.ROOT, "wrote a %,d-byte savepoint in %.1f s", stateBytes,
                (System.nanoTime() - tv1) / 1e9));
        // its keyed state per state, each canonical stream read front to back through Flink's FileSystem
        long tk = System.nanoTime();
        io.checkpointsurgeon.KeyedReport.State payload = keyedState(CheckpointSurgeon.inspectKeyed(sp), "payload");
        assertEquals("one entry per key", keys, payload.total().entries());
        assertTrue(payload.total().complete());
        assertEquals(List.of(io.checkpointsurgeon.KeyedReport.SnapshotFormat.CANONICAL), payload.formats());
        LOG.add(String.format(java.util.Locale.ROOT, "inspect --keyed of the savepoint on S3: %,d entries, %,d bytes of"
                + " payload, %.1f s", payload.total().entries(), payload.total().storedBytes(), (System.nanoTime() - tk) / 1e9));

        long t0 = System.nanoTime();
        CliProcess.Result ref = CliProcess.withFlink("remove-state", sp, "--uid", CONSUMER_UID, "--state",
                UNION_STATE, "--apply", "--output", "s3://" + BUCKET + "/repaired/referencing",
                "--flink-conf", confDir.toString(), "--plugins", pluginsDir.toString())
                .systemProperty("checkpointsurgeon.referenceThreshold", 1 << 20).run();
        double refSeconds = (System.nanoTime() - t0) / 1e9;
        assertEquals(ref.output, 0, ref.exitCode);
        assertTrue("above the threshold, references are the default: " + ref.output,
                ref.output.contains("references the unchanged ones there instead of copying them"));
        assertTrue(ref.output, ref.output.contains("depends on that directory"));
        t0 = System.nanoTime();
        CliProcess.Result copy = CliProcess.withFlink("remove-state", sp, "--uid", CONSUMER_UID, "--state",
                UNION_STATE, "--apply", "--output", "s3://" + BUCKET + "/repaired/copying", "--copy-unchanged",
                "--flink-conf", confDir.toString(), "--plugins", pluginsDir.toString())
                .systemProperty("checkpointsurgeon.referenceThreshold", 1 << 20).run();
        double copySeconds = (System.nanoTime() - t0) / 1e9;
        assertEquals(copy.output, 0, copy.exitCode);
        long referencing = bytesUnder("s3://" + BUCKET + "/repaired/referencing");
        long copying = bytesUnder("s3://" + BUCKET + "/repaired/copying");
        String figures = String.format(java.util.Locale.ROOT, "--reference-unchanged on a %,d-byte savepoint: %,d bytes"
                + " stored (%.3f%%, %.1f s); copying the unchanged files: %,d bytes (%.1f s)", stateBytes, referencing,
                100.0 * referencing / stateBytes, refSeconds, copying, copySeconds);
        System.out.println(figures);
        LOG.add(figures);
        assertTrue(figures, referencing * 100 < stateBytes);
        assertTrue(figures, copying >= stateBytes * 9 / 10);

        // the job restores from the referencing savepoint, every key's value intact (its source
        // goes on where the savepoint's split left it, so each key comes again after `keys` records)
        BigKeyed.CHECKED.clear();
        BigKeyed.WRONG.set(0);
        Configuration r = conf("big-v2", "s3://" + BUCKET + "/repaired/referencing", false, "rocksdb");
        // no periodic checkpoint: the first one after a canonical restore would upload all the state
        FlinkConf.set(r, "1 h", "execution.checkpointing.interval");
        long t1 = System.nanoTime();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(P, r);
        bigJob(env, keys, false);
        org.apache.flink.core.execution.JobClient client = env.executeAsync("big-v2");
        try {
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(600);
            while (BigKeyed.CHECKED.size() < keys && BigKeyed.WRONG.get() == 0 && System.nanoTime() < deadline
                    && !client.getJobExecutionResult().isDone()) {
                Thread.sleep(100);
            }
        } finally {
            client.cancel().get(60, java.util.concurrent.TimeUnit.SECONDS);
        }
        assertEquals(0, BigKeyed.WRONG.get());
        assertEquals(keys, BigKeyed.CHECKED.size());
        LOG.add(String.format(java.util.Locale.ROOT, "restored %,d keys from the referencing savepoint in %.1f s", keys,
                (System.nanoTime() - t1) / 1e9));
    }

    /**
     * Issue 28 on S3: remove-keyed-state on a canonical savepoint in the bucket into a new S3
     * directory, by the CLI in its own JVM with Flink's loader as judge. Every object of the input
     * hashes as before; the keyed reader finds {@code b} gone and every entry of {@code a} in the
     * result, read through Flink's S3 file system; a job restores from it with every key's
     * {@code a} exact and {@code b} empty. The CLI's local temporary directory is sampled during
     * the run: the keyed streams are read from S3 in ranges and the rewritten ones written to the
     * target as they are rewritten, so it never holds more than the old and the new _metadata.
     */
    @Test
    public void removeKeyedStateOnS3AndRestore() throws Exception {
        long keys = 4096;
        TwoKeyed.WRITTEN.set(0);
        Result v1 = MiniClusterJob.of("keyed-v1", conf("keyed-v1", null, false, "hashmap"), P,
                        env -> twoKeyedJob(env, keys, true))
                .readyWhen(() -> TwoKeyed.WRITTEN.get() >= keys)
                .checkpointsAfterReady(1)
                .stopWithSavepoint()
                .timeout(Duration.ofSeconds(RUN_TIMEOUT_SECONDS))
                .run();
        assertNull(v1.failureText(), v1.failure());
        String sp = io.checkpointsurgeon.flink.RemoteCheckpoint.trimSlashes(v1.savepoint());
        java.util.Map<String, String> before = objects(sp);
        long spBytes = bytesUnder(sp);
        String out = "s3://" + BUCKET + "/repaired/keyed";
        Path tmp = Files.createTempDirectory(work, "cli-tmp");
        long[] peak = {0};
        java.util.concurrent.atomic.AtomicBoolean running = new java.util.concurrent.atomic.AtomicBoolean(true);
        Thread sampler = new Thread(() -> {
            while (running.get()) {
                peak[0] = Math.max(peak[0], localBytes(tmp));
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        sampler.start();
        CliProcess.Result r;
        try {
            r = CliProcess.withFlink("remove-keyed-state", sp, "--state", "b", "--apply", "--output", out,
                    "--flink-conf", confDir.toString(), "--plugins", pluginsDir.toString())
                    .systemProperty("java.io.tmpdir", tmp).run();
        } finally {
            running.set(false);
            sampler.join();
        }
        assertEquals(r.output, 0, r.exitCode);
        assertTrue(r.output, r.output.contains("loaded by Flink"));
        assertEquals("every object of the input as before", before, objects(sp));
        assertEquals("the local mirror is gone", 0, localBytes(tmp));
        io.checkpointsurgeon.KeyedReport k = CheckpointSurgeon.inspectKeyed(out);
        assertEquals(1, k.operators().size());
        assertNull("b is gone", k.operators().get(0).state("b"));
        assertEquals("every entry of a", keys, k.operators().get(0).state("a").total().entries());
        String figures = String.format(java.util.Locale.ROOT, "remove-keyed-state s3:// -> s3:// on a %,d-byte"
                + " savepoint: %,d bytes at most in the CLI's temp directory", spBytes, peak[0]);
        System.out.println(figures);
        LOG.add(figures);
        // the mirror holds _metadata (and the new one) only: the rewritten keyed streams went
        // straight from the source object to the target object (4,288,236 B of 4,395,520 B when
        // they were staged locally and uploaded)
        long metadataBytes = io.checkpointsurgeon.flink.FlinkFileSystems.length(sp + "/_metadata");
        assertTrue("no keyed stream was staged locally: " + figures + "; _metadata has " + metadataBytes + " B",
                peak[0] <= 2 * metadataBytes + 64 * 1024);

        restoreTwoKeyed("keyed-v2", out, "hashmap", keys);
        aFailedKeyedRewriteLeavesNoObject(sp);
    }

    /**
     * A copy of the savepoint whose first keyed state file lost its last key group's end mark: the
     * plan reads (the meta info is whole), its rewrite fails at the end, after the other file may
     * have been written to S3 whole. The run fails with the reader's code, and no object of the
     * new files is left in the output (each one the run created is removed), the input unchanged.
     */
    private static void aFailedKeyedRewriteLeavesNoObject(String sp) throws Exception {
        String cut = "s3://" + BUCKET + "/keyed-cut";
        copyTree(sp, cut);
        Surgery removal = Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "b");
        List<SurgeryPlan.NewStream> streams = CheckpointSurgeon.plan(cut, removal).newStreams();
        assertEquals("a keyed state file per subtask", P, streams.size());
        String victim = cut + "/" + streams.get(0).replaces().substring(streams.get(0).replaces().lastIndexOf('/') + 1);
        byte[] bytes = io.checkpointsurgeon.flink.FlinkFileSystems.readAll(victim);
        java.util.Arrays.fill(bytes, bytes.length - 3, bytes.length, (byte) 0x7f);
        io.checkpointsurgeon.flink.FlinkFileSystems.write(bytes, victim, true);
        java.util.Map<String, String> input = objects(cut);
        String failedOut = "s3://" + BUCKET + "/repaired/keyed-cut";
        try {
            CheckpointSurgeon.apply(cut, removal, failedOut);
            fail("a keyed state file without its end mark cannot be rewritten");
        } catch (CheckpointSurgeonException e) {
            assertEquals(e.getMessage(), CheckpointSurgeonException.Code.FORMAT, e.code());
            assertTrue(e.getMessage(), e.getMessage().endsWith("nothing was changed"));
        }
        java.util.Map<String, String> left = io.checkpointsurgeon.flink.FlinkFileSystems.exists(failedOut)
                ? objects(failedOut) : java.util.Map.of();
        assertEquals("no object of the failed run is left", java.util.Map.of(), left);
        assertEquals("every object of the input as before", input, objects(cut));
    }

    /** A job restored from {@code from} reads every key's a exactly and finds b empty. */
    private static void restoreTwoKeyed(String tag, String from, String backend, long keys) throws Exception {
        TwoKeyed.CHECKED.clear();
        TwoKeyed.WRONG.set(0);
        Configuration c = conf(tag, from, false, backend);
        FlinkConf.set(c, "1 h", "execution.checkpointing.interval");
        FlinkConf.set(c, "false", "classloader.check-leaked-classloader");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(P, c);
        twoKeyedJob(env, keys, false);
        org.apache.flink.core.execution.JobClient client = env.executeAsync(tag);
        try {
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(RUN_TIMEOUT_SECONDS);
            while (TwoKeyed.CHECKED.size() < keys && TwoKeyed.WRONG.get() == 0 && System.nanoTime() < deadline
                    && !client.getJobExecutionResult().isDone()) {
                Thread.sleep(50);
            }
            if (client.getJobExecutionResult().isDone()) client.getJobExecutionResult().get();
        } finally {
            client.cancel().exceptionally(t -> null).get(60, java.util.concurrent.TimeUnit.SECONDS);
        }
        assertEquals("keys whose a differs or whose b is not empty", 0, TwoKeyed.WRONG.get());
        assertEquals("every key read back", keys, TwoKeyed.CHECKED.size());
    }

    /**
     * remove-keyed-state on a RocksDB incremental checkpoint in the bucket, into a new S3 directory,
     * by the CLI against a relay that counts every byte S3Proxy sends: the column family of
     * {@code b} is dropped in each instance's MANIFEST without fetching SST data (the SST files'
     * tails only, for their properties); every input object hashes as before, and a job restores
     * from the result with RocksDB, every key's {@code a} exact and {@code b} empty.
     */
    @Test
    public void removeKeyedStateOfRocksDbOnS3FetchesNoSstData() throws Exception {
        long keys = 8192;
        TwoKeyed.WRITTEN.set(0);
        String chk = rocksDbCheckpointInBucket("rocks-keyed", env -> twoKeyedJob(env, keys, true),
                () -> TwoKeyed.WRITTEN.get() >= keys);
        String remoteJob = io.checkpointsurgeon.flink.RemoteCheckpoint.parent(chk);
        long sstBytes = 0;
        for (io.checkpointsurgeon.KeyedReport.Operator o : CheckpointSurgeon.inspectKeyed(chk).operators()) {
            for (io.checkpointsurgeon.KeyedReport.State st : o.states()) sstBytes += st.total().storedBytes();
        }
        java.util.Map<String, String> before = objects(remoteJob);
        String out = "s3://" + BUCKET + "/repaired/rocks-keyed";
        try (io.checkpointsurgeon.testing.CountingRelay relay = io.checkpointsurgeon.testing.CountingRelay.to(s3proxy.port())) {
            Path relayConf = writeConf(work.resolve("conf-relay-rocks"), relay.endpoint());
            String text = runCli("remove-keyed-state", chk, "--state", "b", "--apply", "--output", out,
                    "--flink-conf", relayConf.toString(), "--plugins", pluginsDir.toString());
            assertTrue(text, text.contains("loaded by Flink"));
            long fetched = relay.bytesFromServer();
            String figures = String.format(java.util.Locale.ROOT, "remove-keyed-state of a RocksDB checkpoint on S3:"
                    + " %,d bytes fetched for %,d bytes of SST files (%.2f %%)", fetched, sstBytes,
                    100.0 * fetched / sstBytes);
            System.out.println(figures);
            LOG.add(figures);
            assertTrue(figures, fetched * 4 < sstBytes);
        }
        assertEquals("every object of the input as before", before, objects(remoteJob));

        restoreTwoKeyed("rocks-keyed-v2", out, "rocksdb", keys);
    }

    /** Bytes of the regular files under {@code dir} now (files vanish while it is walked). */
    private static long localBytes(Path dir) {
        long[] n = {0};
        try {
            Files.walkFileTree(dir, new java.nio.file.SimpleFileVisitor<Path>() {
                @Override
                public java.nio.file.FileVisitResult visitFile(Path f, java.nio.file.attribute.BasicFileAttributes a) {
                    // the native library the jar extracts (and deletes once loaded) is no state
                    boolean library = f.getFileName().toString().startsWith("checkpoint_surgeon-")
                            && f.getFileName().toString().endsWith(".so");
                    if (a.isRegularFile() && !library) n[0] += a.size();
                    return java.nio.file.FileVisitResult.CONTINUE;
                }

                @Override
                public java.nio.file.FileVisitResult visitFileFailed(Path f, IOException e) {
                    return java.nio.file.FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            // a directory vanished
        }
        return n[0];
    }

    /** Relative path -> SHA-256 of every object under {@code dir}, read through Flink's file system. */
    private static java.util.Map<String, String> objects(String dir) throws Exception {
        java.util.Map<String, String> m = new TreeMap<>();
        FileSystem fs = fs(dir);
        List<org.apache.flink.core.fs.Path> todo = new ArrayList<>(List.of(new org.apache.flink.core.fs.Path(dir)));
        while (!todo.isEmpty()) {
            for (org.apache.flink.core.fs.FileStatus st : fs.listStatus(todo.remove(todo.size() - 1))) {
                if (st.isDir()) {
                    todo.add(st.getPath());
                    continue;
                }
                byte[] d = java.security.MessageDigest.getInstance("SHA-256").digest(
                        io.checkpointsurgeon.flink.FlinkFileSystems.readAll(st.getPath().toString()));
                m.put(st.getPath().toString().substring(dir.length()), new java.math.BigInteger(1, d).toString(16));
            }
        }
        return m;
    }

    /** numbers -> keyBy(n % keys) -> two-keyed (a 1 KiB {@code a} and a Long {@code b} per key) -> sink. */
    private static void twoKeyedJob(StreamExecutionEnvironment env, long keys, boolean write) {
        io.checkpointsurgeon.fixtures.Shims.discard(env.fromSource(
                        new org.apache.flink.api.connector.source.lib.NumberSequenceSource(0, Long.MAX_VALUE - 1),
                        org.apache.flink.api.common.eventtime.WatermarkStrategy.noWatermarks(), "numbers")
                .uid("numbers").setParallelism(1)
                .keyBy(new io.checkpointsurgeon.fixtures.Functions.ModKey(keys))
                .map(new TwoKeyed(keys, write)).uid("two-keyed").name("two-keyed").setParallelism(P), "sink");
    }

    /** Writes a and b for each key, then slows down; or checks each key's a and that b is empty. */
    static final class TwoKeyed extends org.apache.flink.api.common.functions.RichMapFunction<Long, Long> {
        static final java.util.concurrent.atomic.AtomicLong WRITTEN = new java.util.concurrent.atomic.AtomicLong();
        static final java.util.Set<Long> CHECKED = java.util.concurrent.ConcurrentHashMap.newKeySet();
        static final java.util.concurrent.atomic.AtomicLong WRONG = new java.util.concurrent.atomic.AtomicLong();
        private final long keys;
        private final boolean write;
        private transient org.apache.flink.api.common.state.ValueState<byte[]> a;
        private transient org.apache.flink.api.common.state.ValueState<Long> b;

        TwoKeyed(long keys, boolean write) {
            this.keys = keys;
            this.write = write;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (a == null) {
                a = getRuntimeContext().getState(new org.apache.flink.api.common.state.ValueStateDescriptor<>("a",
                        org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
                b = getRuntimeContext().getState(new org.apache.flink.api.common.state.ValueStateDescriptor<>("b",
                        org.apache.flink.api.common.typeinfo.Types.LONG));
            }
            long key = n % keys;
            if (!write) {
                if (java.util.Arrays.equals(BigKeyed.payload(key), a.value()) && b.value() == null) CHECKED.add(key);
                else WRONG.incrementAndGet();
            } else if (n < keys) {
                a.update(BigKeyed.payload(key));
                b.update(n);
                WRITTEN.incrementAndGet();
            } else {
                Thread.sleep(1);
            }
            return n;
        }
    }

    /** The keyed state {@code name} of the one operator that has it. */
    private static io.checkpointsurgeon.KeyedReport.State keyedState(io.checkpointsurgeon.KeyedReport r, String name) {
        for (io.checkpointsurgeon.KeyedReport.Operator o : r.operators()) {
            if (o.state(name) != null) return o.state(name);
        }
        throw new AssertionError("no keyed state " + name + " in " + r.source());
    }

    /**
     * {@code inspect --keyed} of a RocksDB incremental checkpoint in the bucket reads each SST
     * file's last few KiB (footer, metaindex and properties block) and no data block: the CLI runs
     * in its own JVM against a relay that counts every byte S3Proxy sends (headers included).
     */
    @Test
    public void keyedStateOfRocksDbOnS3IsReadInRanges() throws Exception {
        long keys = 8192;
        RandomKeyed.WRITTEN.set(0);
        String chk = rocksDbCheckpointInBucket("keyed-ranges", env -> io.checkpointsurgeon.fixtures.Shims.discard(
                        env.fromSource(new org.apache.flink.api.connector.source.lib.NumberSequenceSource(0, Long.MAX_VALUE - 1),
                                org.apache.flink.api.common.eventtime.WatermarkStrategy.noWatermarks(), "numbers")
                                .uid("numbers").setParallelism(1)
                                .keyBy(new io.checkpointsurgeon.fixtures.Functions.ModKey(keys))
                                .map(new RandomKeyed(keys)).uid("random-keyed").name("random-keyed"), "sink"),
                () -> RandomKeyed.WRITTEN.get() >= keys);
        io.checkpointsurgeon.KeyedReport direct = CheckpointSurgeon.inspectKeyed(chk);
        io.checkpointsurgeon.KeyedReport.State payload = keyedState(direct, "payload");
        assertEquals("each key written once, RocksDB's entries are the keys", keys, payload.total().entries());
        assertTrue(payload.rocksDbNumbers());
        long sstBytes = 0, otherBytes = 0, sstFiles = 0;
        for (io.checkpointsurgeon.KeyedReport.Operator o : direct.operators()) {
            for (io.checkpointsurgeon.KeyedReport.State st : o.states()) {
                sstBytes += st.total().storedBytes();
                sstFiles += st.rocksDb().files();
            }
            for (io.checkpointsurgeon.KeyedReport.Handle h : o.handles()) {
                assertNull(h.error());
                otherBytes += h.headerBytes() + h.overheadBytes() + h.unattributedBytes();
            }
        }
        InspectReport plain = CheckpointSurgeon.inspect(chk);
        long metadataAndOperatorState = plain.metadataBytes() + plain.totalOperatorStateBytes();

        try (io.checkpointsurgeon.testing.CountingRelay relay = io.checkpointsurgeon.testing.CountingRelay.to(s3proxy.port())) {
            Path relayConf = writeConf(work.resolve("conf-relay"), relay.endpoint());
            String out = runCli("inspect", chk, "--keyed", "--flink-conf", relayConf.toString(), "--plugins",
                    pluginsDir.toString());
            assertTrue(out, out.contains("payload") && out.contains("RocksDB's numbers"));
            long fetched = relay.bytesFromServer();
            // every SST file's tail, the meta info, MANIFEST, CURRENT and OPTIONS, _metadata and the
            // operator state inspect reads, and HTTP's headers (HEAD and GET per object)
            long bound = sstFiles * (4096 + 4096)
                    + otherBytes + metadataAndOperatorState + relay.connections() * 4096 + 64 * 1024;
            String figures = String.format(java.util.Locale.ROOT, "inspect --keyed of a RocksDB checkpoint on S3:"
                    + " %,d bytes fetched for %,d SST files of %,d bytes (%.2f %%), %,d bytes of other files",
                    fetched, sstFiles, sstBytes, 100.0 * fetched / sstBytes, otherBytes + metadataAndOperatorState);
            System.out.println(figures);
            LOG.add(figures);
            assertTrue(figures + "; at most " + bound, fetched <= bound);
            assertTrue(figures, fetched * 10 < sstBytes);
        }
    }

    /**
     * The last retained incremental RocksDB checkpoint of {@code topology}, run until {@code ready}:
     * written on local disk, then uploaded by this thread and relocated into the bucket (a job that
     * uploads leaves the S3 plugin's upload threads with its class loader for later jobs).
     */
    private static String rocksDbCheckpointInBucket(String name, Consumer<StreamExecutionEnvironment> topology,
            BooleanSupplier ready) throws Exception {
        Path local = work.resolve(name);
        Configuration c = FlinkConf.checkpointing("rocksdb", local.resolve("checkpoints").toUri().toString(),
                local.resolve("savepoints").toUri().toString(), "300 ms", 1);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.inlineThreshold(c, "0");
        FlinkConf.noRestarts(c);
        Result r = MiniClusterJob.of(name, c, P, topology)
                .readyWhen(ready)
                .timeout(Duration.ofSeconds(RUN_TIMEOUT_SECONDS))
                .pollInterval(Duration.ofMillis(100))
                .run();
        assertNull(r.failureText(), r.failure());
        Path jobDir = io.checkpointsurgeon.testing.TestFiles.localPath(r.jobDir());
        String remoteJob = "s3://" + BUCKET + "/" + name + "/" + jobDir.getFileName();
        try (Stream<Path> files = Files.walk(jobDir)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                io.checkpointsurgeon.flink.FlinkFileSystems.upload(f, remoteJob + "/" + jobDir.relativize(f), false,
                        io.checkpointsurgeon.ProgressListener.SILENT);
            }
        }
        String chk = remoteJob + "/" + r.checkpointPath().getFileName();
        CheckpointSurgeon.applyInPlace(chk, Surgery.relocate(jobDir.toString(), remoteJob));
        return chk;
    }

    /** The bytes of every object under {@code dir}. */
    private static long bytesUnder(String dir) throws IOException {
        long n = 0;
        for (org.apache.flink.core.fs.FileStatus st : fs(dir).listStatus(new org.apache.flink.core.fs.Path(dir))) {
            n += st.isDir() ? bytesUnder(dir + "/" + st.getPath().getName()) : st.getLen();
        }
        return n;
    }

    /** Copies every file under {@code from} to the same place under {@code to}; returns the bytes copied. */
    private static long copyTree(String from, String to) throws IOException {
        FileSystem fs = fs(from);
        long n = 0;
        for (org.apache.flink.core.fs.FileStatus st : fs.listStatus(new org.apache.flink.core.fs.Path(from))) {
            String name = st.getPath().getName();
            if (st.isDir()) {
                n += copyTree(from + "/" + name, to + "/" + name);
            } else {
                n += io.checkpointsurgeon.flink.FlinkFileSystems.copy(from + "/" + name, to + "/" + name, false);
            }
        }
        return n;
    }

    /**
     * numbers -> source_consumer (the stale union state) -> keyBy(n % keys) -> big-keyed: a 1 KiB
     * value per key. The writing job runs on (slowly after every key has its value); the checking
     * job compares the value of each key that comes by.
     */
    private static void bigJob(StreamExecutionEnvironment env, long keys, boolean write) {
        // write: the numbers up to `keys` set the values; check: every number reads one
        org.apache.flink.streaming.api.datastream.DataStream<Long> s = env.fromSource(
                        new org.apache.flink.api.connector.source.lib.NumberSequenceSource(0, Long.MAX_VALUE - 1),
                        org.apache.flink.api.common.eventtime.WatermarkStrategy.noWatermarks(), "numbers")
                .uid("numbers").setParallelism(1);
        if (write) {
            // slow once every key has its value, so that the savepoint's barrier finds no backlog
            s = s.map(new SlowAfter(keys)).uid("numbers-throttle").name("numbers-throttle").setParallelism(1);
        }
        org.apache.flink.streaming.api.datastream.DataStream<Long> consumed = s.rebalance()
                .map(new RestoreScenario.ConsumerV1()).uid(CONSUMER_UID).name(CONSUMER_UID).setParallelism(P);
        io.checkpointsurgeon.fixtures.Shims.discard(consumed.keyBy(new io.checkpointsurgeon.fixtures.Functions.ModKey(keys))
                .map(new BigKeyed(keys, write)).uid("big-keyed").name("big-keyed").setParallelism(P), "sink");
    }

    static final class BigKeyed extends org.apache.flink.api.common.functions.RichMapFunction<Long, Long> {
        static final java.util.concurrent.atomic.AtomicLong WRITTEN = new java.util.concurrent.atomic.AtomicLong();
        static final java.util.Set<Long> CHECKED = java.util.concurrent.ConcurrentHashMap.newKeySet();
        static final java.util.concurrent.atomic.AtomicLong WRONG = new java.util.concurrent.atomic.AtomicLong();
        private final long keys;
        private final boolean write;
        private transient org.apache.flink.api.common.state.ValueState<byte[]> value;

        BigKeyed(long keys, boolean write) {
            this.keys = keys;
            this.write = write;
        }

        static byte[] payload(long key) {
            byte[] b = new byte[1024];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (key * 31 + i);
            }
            return b;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (value == null) {
                value = getRuntimeContext().getState(new org.apache.flink.api.common.state.ValueStateDescriptor<>(
                        "payload", org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
            }
            long key = n % keys;
            if (!write) {
                if (java.util.Arrays.equals(payload(key), value.value())) {
                    CHECKED.add(key);
                } else {
                    WRONG.incrementAndGet();
                }
            } else if (n < keys) {
                value.update(payload(key));
                WRITTEN.incrementAndGet();
            }
            return n;
        }
    }

    /** A 1 KiB value of random bytes per key (incompressible, so that the SST files are as large as the state). */
    static final class RandomKeyed extends org.apache.flink.api.common.functions.RichMapFunction<Long, Long> {
        static final java.util.concurrent.atomic.AtomicLong WRITTEN = new java.util.concurrent.atomic.AtomicLong();
        private final long keys;
        private transient org.apache.flink.api.common.state.ValueState<byte[]> value;

        RandomKeyed(long keys) {
            this.keys = keys;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (value == null) {
                value = getRuntimeContext().getState(new org.apache.flink.api.common.state.ValueStateDescriptor<>(
                        "payload", org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
            }
            if (n < keys) {
                byte[] b = new byte[1024];
                new java.util.Random(n).nextBytes(b);
                value.update(b);
                WRITTEN.incrementAndGet();
            } else {
                Thread.sleep(1);
            }
            return n;
        }
    }

    /** Passes numbers on, sleeping 1 ms on each from {@code limit} on. */
    static final class SlowAfter implements org.apache.flink.api.common.functions.MapFunction<Long, Long> {
        private final long limit;

        SlowAfter(long limit) {
            this.limit = limit;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (n >= limit) {
                Thread.sleep(1);
            }
            return n;
        }
    }

    private static Result runV1(String name, boolean fileMerging) throws Exception {
        return runV1(name, fileMerging, "hashmap");
    }

    private static Result runV1(String name, boolean fileMerging, String backend) throws Exception {
        RestoreScenario.resetReports();
        Result run = run(name, null, fileMerging, backend,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV1(), new RestoreScenario.KeyedWriter()),
                () -> RestoreScenario.KEYS_WRITTEN.size() == KEYS);
        assertNull(run.failureText(), run.failure());
        assertNotNull(run.checkpoint());
        return run;
    }

    private static Result runV2(String name, String from, boolean fileMerging) throws Exception {
        return runV2(name, from, fileMerging, "hashmap");
    }

    private static Result runV2(String name, String from, boolean fileMerging, String backend) throws Exception {
        RestoreScenario.resetReports();
        return run(name, from, fileMerging, backend,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV2(), new RestoreScenario.KeyedProbe()),
                () -> RestoreScenario.SPLIT_SEEN.size() == P && RestoreScenario.KEYED_SEEN.size() == KEYS);
    }

    private static void assertV2Restored(Result run) {
        assertNull(run.failureText(), run.failure());
        assertNotNull(run.checkpoint());
        assertEquals("split list state restored from S3", RestoreScenario.expectedSplit(P),
                new TreeMap<>(RestoreScenario.SPLIT_SEEN));
        assertEquals("keyed state restored from S3", RestoreScenario.expectedKeyed(),
                new TreeMap<>(RestoreScenario.KEYED_SEEN));
    }

    private static Configuration conf(String tag, String restoreFrom, boolean fileMerging, String backend) {
        Configuration c = FlinkConf.checkpointing(backend, "s3://" + BUCKET + "/checkpoints/" + tag,
                "s3://" + BUCKET + "/savepoints/" + tag, "300 ms", 1);
        FlinkConf.set(c, "filesystem", "state.checkpoint-storage", "execution.checkpointing.storage");
        FlinkConf.noRestarts(c);
        // every operator state stream becomes its own S3 object
        FlinkConf.inlineThreshold(c, "0");
        if (fileMerging) {
            FlinkConf.fileMerging(c);
        }
        if (restoreFrom != null) {
            FlinkConf.restoreFrom(c, restoreFrom);
        }
        if (backend.equals("rocksdb")) {
            FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        }
        return c;
    }

    /**
     * Runs a job until {@code ready} holds and two more checkpoints completed in the bucket, cancels
     * it and returns its last retained checkpoint ({@code s3://...}).
     */
    private static Result run(String name, String restoreFrom, boolean fileMerging, String backend,
                              Consumer<StreamExecutionEnvironment> topology, BooleanSupplier ready) throws Exception {
        return MiniClusterJob.of(name, conf(name, restoreFrom, fileMerging, backend), P, topology)
                .readyWhen(ready)
                .timeout(Duration.ofSeconds(RUN_TIMEOUT_SECONDS))
                .pollInterval(Duration.ofMillis(100))
                .run();
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

    /** The operator state handles of source_consumer (the operator with the split list). */
    private static List<InspectReport.OperatorStateHandleInfo> consumerHandles(InspectReport r) {
        List<InspectReport.OperatorStateHandleInfo> l = new ArrayList<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            if (op.stateTotals().stream().anyMatch(t -> t.name().equals(SPLIT_STATE))) {
                for (InspectReport.SubtaskInfo s : op.subtasks()) {
                    l.addAll(s.operatorStateHandles());
                }
            }
        }
        return l;
    }

    /** Where the operator state streams of source_consumer live. */
    private static List<String> consumerLocations(InspectReport r) {
        List<String> l = new ArrayList<>();
        for (InspectReport.OperatorStateHandleInfo h : consumerHandles(r)) {
            assertFalse("inline stream: the threshold is 0", h.inline());
            l.add(h.location());
        }
        return l;
    }

    /** Kind/delegate kind of the operator state handles of source_consumer. */
    private static List<String> consumerKinds(InspectReport r) {
        List<String> l = new ArrayList<>();
        for (InspectReport.OperatorStateHandleInfo h : consumerHandles(r)) {
            l.add(h.kind() + "/" + h.delegateKind());
        }
        return l;
    }

    /** Runs the CLI in its own JVM with this test's class path (Flink's jars, not the S3 plugin). */
    private static String runCli(String... args) throws Exception {
        CliProcess.Result r = CliProcess.withFlink(args)
                .systemProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn").run();
        assertEquals(r.output, 0, r.exitCode);
        return r.output;
    }

    private static String flinkVersion() {
        return System.getProperty("flink.version", "?");
    }
}
