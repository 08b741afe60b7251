package io.checkpointsurgeon.faults;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.internal.CommitFaults;
import io.checkpointsurgeon.restore.KeyedSurgeryRestoreTest;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.Test;

/**
 * The commit-protocol trials on a keyed rewrite ({@code remove-keyed-state --state b}), on a
 * canonical savepoint (4 keyed handles of 4 MiB, rewritten in parallel) and on a RocksDB
 * incremental checkpoint (2 handles: a new meta info stream and MANIFEST each), both with
 * {@code --output} and {@code --in-place}, each written at test time by a real job of the lane's
 * Flink (1.15, 1.20 or 2.3):
 *
 * <ul>
 *   <li>SIGKILL and SIGTERM of the CLI process stalled at each commit step (the commit-faults seam),
 *       and a failure injected at each step (in this JVM);
 *   <li>SIGKILL and SIGTERM in the middle of the canonical savepoint's parallel handle rewrite;
 *   <li>a full disk: the output, or the checkpoint changed in place, on a small tmpfs, its free
 *       space swept from none to enough.
 * </ul>
 *
 * After each: every file under the input (the savepoint, or the RocksDB job directory with its
 * {@code shared/}) hashes as before; nothing of the run is left, or, after a SIGKILL, exactly what
 * {@code clean-leftovers} names (in place, also {@code doctor}'s LEFTOVER_FILES; an output holds
 * no {@code _metadata} and a rerun into it is refused, naming it as a killed run's); then a rerun
 * succeeds, Flink's loader accepts it and the native reader finds {@code b} gone and every entry
 * of {@code a}. One rerun output per kind is restored by a real job that reads every key's
 * {@code a} exactly and finds {@code b} empty.
 */
public class KeyedCommitFaultsTest {
    static final String[] STEPS = {"lock", "stage", "validate", "place", "backup", "switch"};
    static final String REMOVED = "b";

    /** A checkpoint of one kind, written once for all tests of the class. */
    static final class Fixture {
        final String kind;
        /** The checkpoint directory (with {@code _metadata}). */
        final Path checkpoint;
        /** What must never change: the savepoint, or the job directory of the RocksDB checkpoint. */
        final Path root;
        final long keys;
        final Map<String, String> hashes;
        final Map<String, byte[]> metadata = new TreeMap<>();

        Fixture(String kind, Path checkpoint, Path root, long keys) throws Exception {
            this.kind = kind;
            this.checkpoint = checkpoint;
            this.root = root;
            this.keys = keys;
            this.hashes = hashes(root);
            metadata.put("_metadata", Files.readAllBytes(checkpoint.resolve("_metadata")));
        }

        /**
         * Undoes what an in-place run left: every file that was not there goes, {@code _metadata}
         * gets its old bytes back (a new file: the run renamed its own over it). Then checks that
         * every file hashes as before.
         */
        void reset() throws Exception {
            try (Stream<Path> s = Files.walk(root)) {
                for (Path p : s.filter(Files::isRegularFile).collect(Collectors.toList())) {
                    if (!hashes.containsKey(root.relativize(p).toString())) Files.delete(p);
                }
            }
            Path md = checkpoint.resolve("_metadata");
            if (!Files.exists(md) || !hashOf(md).equals(hashes.get(root.relativize(md).toString()))) {
                Files.deleteIfExists(md);
                Files.write(md, metadata.get("_metadata"));
            }
            assertEquals(kind + ": the input after a reset", hashes, hashes(root));
        }
    }

    private static Path work;
    private static Path disk;
    private static Fixture canonical;
    private static Fixture rocksdb;
    private static final List<String> LOG = Collections.synchronizedList(new ArrayList<>());

    static synchronized Path work() throws IOException {
        if (work == null) work = Files.createTempDirectory("cs-keyed-faults");
        return work;
    }

    /** A canonical savepoint of a job with parallelism 4: a 1 KiB {@code a} and a Long {@code b} for 16,384 keys. */
    static synchronized Fixture canonical() throws Exception {
        if (canonical == null) {
            Path sp = job(work(), "canonical", "hashmap", 4, 16_384, true);
            canonical = new Fixture("canonical savepoint", sp, sp, 16_384);
        }
        // what a test that failed half-way left goes first
        canonical.reset();
        return canonical;
    }

    /**
     * A retained incremental RocksDB checkpoint of the same job (parallelism 2, 2,048 keys), on a
     * tmpfs where one can be mounted (the in-place disk-full trials fill it).
     */
    static synchronized Fixture rocksdb() throws Exception {
        if (rocksdb == null) {
            disk = mount("size=256m");
            Path chk = job(disk != null ? disk : work(), "rocksdb", "rocksdb", 2, 2_048, false);
            rocksdb = new Fixture("RocksDB incremental checkpoint", chk, chk.getParent(), 2_048);
        }
        rocksdb.reset();
        return rocksdb;
    }

    @AfterClass
    public static void cleanUp() throws Exception {
        System.out.println("keyed commit faults: " + String.join("; ", LOG));
        if (disk != null) umount(disk);
        if (work != null) TestFiles.deleteRecursively(work);
    }

    // ---- the trials

    @Test
    public void canonicalSavepointKilledOrFailedAtEachStep() throws Exception {
        Assume.assumeTrue("runs on 1.15.4, 1.20.3 and 2.3.0", KeyedSurgeryRestoreTest.issueLine());
        stepTrials(canonical());
    }

    @Test
    public void rocksDbIncrementalKilledOrFailedAtEachStep() throws Exception {
        Assume.assumeTrue("runs on 1.15.4, 1.20.3 and 2.3.0", KeyedSurgeryRestoreTest.issueLine());
        stepTrials(rocksdb());
    }

    /**
     * SIGKILL and SIGTERM while the canonical savepoint's 4 handles are being rewritten (2 at a
     * time): a SIGKILL leaves partial files that only a {@code _metadata.tmp-*} names, all of which
     * clean-leftovers removes (in place) or the rerun names (output); a SIGTERM lets the stage end,
     * then removes every file it wrote.
     */
    @Test
    public void canonicalSavepointKilledInsideTheParallelRewrite() throws Exception {
        Assume.assumeTrue("runs on 1.15.4, 1.20.3 and 2.3.0", KeyedSurgeryRestoreTest.issueLine());
        Fixture f = canonical();
        int trials = Integer.getInteger("keyedFaults.rewriteTrials", 6), inside = 0;
        for (int t = 0; t < trials; t++) {
            boolean inPlace = t % 2 == 1;
            boolean sigkill = (t / 2) % 2 == 0;
            if (killInsideTheRewrite(f, inPlace, sigkill)) inside++;
        }
        LOG.add("kills inside the parallel rewrite: " + inside + " of " + trials);
        assertTrue("no kill landed while the handles were being rewritten: " + inside + " of " + trials, inside > 0);
    }

    @Test
    public void canonicalSavepointOnAFullDisk() throws Exception {
        Assume.assumeTrue("runs on 1.15.4, 1.20.3 and 2.3.0", KeyedSurgeryRestoreTest.issueLine());
        diskFull(canonical());
    }

    @Test
    public void rocksDbIncrementalOnAFullDisk() throws Exception {
        Assume.assumeTrue("runs on 1.15.4, 1.20.3 and 2.3.0", KeyedSurgeryRestoreTest.issueLine());
        diskFull(rocksdb());
    }

    /** Per mode: SIGKILL, SIGTERM and an injected failure at each step; then a real restore of a rerun's output. */
    static void stepTrials(Fixture f) throws Exception {
        Path restorable = null;
        Map<String, Integer> seen = new TreeMap<>();
        for (boolean inPlace : new boolean[] {false, true}) {
            for (String step : STEPS) {
                for (String fault : new String[] {"SIGKILL", "SIGTERM", "failure"}) {
                    String what = f.kind + (inPlace ? " in place" : " --output") + ", " + fault + " at " + step;
                    Path out = inPlace ? null : work().resolve("out-" + System.nanoTime());
                    if (fault.equals("failure")) {
                        injectedFailure(f, out, step, what);
                    } else {
                        signalled(f, out, step, fault.equals("SIGKILL"), what);
                    }
                    Path rerun = rerun(f, out, what);
                    if (rerun != null) restorable = rerun;
                    seen.merge(fault, 1, Integer::sum);
                    if (out != null && Files.exists(out)) TestFiles.deleteRecursively(out);
                }
            }
        }
        LOG.add(f.kind + ": " + seen + " trials at " + STEPS.length + " steps x 2 modes");
        assertNotNull(restorable);
        restore(f, restorable);
    }

    /** The run fails at {@code step} in this JVM: the error says nothing was changed, and nothing was. */
    static void injectedFailure(Fixture f, Path out, String step, String what) throws Exception {
        CommitFaults.failAt(step);
        try {
            if (out == null) CheckpointSurgeon.applyInPlace(f.checkpoint, surgery());
            else CheckpointSurgeon.apply(f.checkpoint, surgery(), out);
            fail(what + ": the injected failure");
        } catch (CheckpointSurgeonException e) {
            assertTrue(what + ": " + e.getMessage(), e.getMessage().contains("injected failure at " + step)
                    && e.getMessage().contains("nothing was changed"));
        } finally {
            CommitFaults.clear();
        }
        assertEquals(what + ": the input", f.hashes, hashes(f.root));
        assertFalse(what + ": the output the run created is gone", out != null && Files.exists(out));
    }

    /**
     * The CLI stalls at {@code step}, then gets SIGKILL or SIGTERM. SIGTERM: exit 143, "interrupted,
     * nothing was changed", nothing left. SIGKILL: in place, exactly the leftovers clean-leftovers
     * and doctor name, which clean-leftovers then removes; an output holds no {@code _metadata}, and
     * a run into it is refused until it is removed.
     */
    static void signalled(Fixture f, Path out, String step, boolean sigkill, String what) throws Exception {
        Process p = cli(f, out).systemProperty(CommitFaults.STALL_AT, step).start();
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch stalled = new CountDownLatch(1);
        Thread reader = reader(p, lines, l -> l.startsWith("commit: stalling at " + step), stalled);
        assertTrue(what + ": the run reached the step\n" + String.join("\n", lines),
                stalled.await(60, TimeUnit.SECONDS) && p.isAlive());
        if (sigkill) p.destroyForcibly();
        else p.toHandle().destroy();
        assertTrue(what, p.waitFor(60, TimeUnit.SECONDS));
        reader.join();
        String text = String.join("\n", lines);
        assertEquals(what + ": the input\n" + text, f.hashes, hashes(f, out == null));
        if (!sigkill) {
            assertEquals(what + "\n" + text, 143, p.exitValue());
            assertTrue(what + "\n" + text, text.contains("interrupted, nothing was changed"));
            assertEquals(what + ": nothing of the run is left\n" + text, f.hashes, hashes(f.root));
            assertFalse(what + ": the output the run created is gone\n" + text, out != null && Files.exists(out));
            return;
        }
        if (out == null) {
            Set<String> added = added(f);
            Set<String> named = names(f.root, CheckpointSurgeon.leftovers(f.checkpoint));
            assertEquals(what + ": what is left is what clean-leftovers names", added, named);
            boolean doctor = CheckpointSurgeon.doctor(f.checkpoint).stream()
                    .anyMatch(x -> x.code() == CheckpointSurgeon.Finding.Code.LEFTOVER_FILES);
            assertEquals(what + ": doctor names the leftovers " + added, !added.isEmpty(), doctor);
            CheckpointSurgeon.removeLeftovers(f.checkpoint);
            assertEquals(what + ": after clean-leftovers", f.hashes, hashes(f.root));
        } else if (Files.exists(out)) {
            assertFalse(what + ": no _metadata in the output", Files.exists(out.resolve("_metadata")));
            if (!CheckpointSurgeon.leftovers(out).isEmpty()) {
                try {
                    CheckpointSurgeon.apply(f.checkpoint, surgery(), out);
                    fail(what + ": a run into the killed run's output must be refused");
                } catch (CheckpointSurgeonException e) {
                    assertTrue(what + ": " + e.getMessage(), e.getMessage().contains("killed before its switch"));
                }
                assertEquals(f.hashes, hashes(f.root));
            }
            TestFiles.deleteRecursively(out);
        }
    }

    /**
     * Kills the CLI once a rewritten handle's file appears (SIGKILL at once, SIGTERM too); returns
     * whether the kill landed inside the parallel rewrite (one staged {@code _metadata.tmp-*}, the one
     * written before the handles, and some of their files).
     */
    static boolean killInsideTheRewrite(Fixture f, boolean inPlace, boolean sigkill) throws Exception {
        String what = f.kind + (inPlace ? " in place" : " --output") + ", " + (sigkill ? "SIGKILL" : "SIGTERM")
                + " inside the rewrite";
        Path out = inPlace ? null : work().resolve("out-" + System.nanoTime());
        Path target = inPlace ? f.checkpoint : out;
        Process p = cli(f, out).systemProperty("checkpointsurgeon.trace", "1").start();
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch staging = new CountDownLatch(1);
        Thread reader = reader(p, lines, l -> l.startsWith("commit: stage "), staging);
        assertTrue(what + ": the stage started\n" + String.join("\n", lines), staging.await(60, TimeUnit.SECONDS));
        Set<String> before = f.hashes.keySet();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        boolean inside = false;
        while (p.isAlive() && System.nanoTime() < deadline) {
            List<String> fresh = new ArrayList<>();
            if (Files.isDirectory(target)) {
                try (Stream<Path> s = Files.list(target)) {
                    s.map(x -> x.getFileName().toString()).filter(n -> !before.contains(f.root.relativize(
                            target.resolve(n)).toString())).forEach(fresh::add);
                }
            }
            long tmps = fresh.stream().filter(n -> n.startsWith("_metadata.tmp-")).count();
            if (fresh.size() > tmps) {
                if (sigkill) p.destroyForcibly();
                else p.toHandle().destroy();
                inside = tmps == 1 && fresh.stream().noneMatch(n -> n.equals("_metadata"));
                break;
            }
        }
        assertTrue(what, p.waitFor(60, TimeUnit.SECONDS));
        reader.join();
        String text = String.join("\n", lines);
        if (p.exitValue() == 0) {
            // the run ended before a file of it was seen
            check(f, target, null, what + ", ended first");
            if (inPlace) f.reset();
            else TestFiles.deleteRecursively(out);
            return false;
        }
        assertEquals(what + ": the input\n" + text, f.hashes, hashes(f, inPlace));
        if (!sigkill) {
            assertEquals(what + "\n" + text, 143, p.exitValue());
            assertTrue(what + "\n" + text, text.contains("interrupted, nothing was changed"));
            assertEquals(what + ": every staged file was removed\n" + text, f.hashes, hashes(f.root));
            assertFalse(what + ": the output the run created is gone", out != null && Files.exists(out));
        } else if (inPlace) {
            Set<String> added = added(f);
            assertEquals(what + ": every file the stage wrote is a leftover clean-leftovers names", added,
                    names(f.root, CheckpointSurgeon.leftovers(f.checkpoint)));
            CheckpointSurgeon.removeLeftovers(f.checkpoint);
            assertEquals(what + ": after clean-leftovers", f.hashes, hashes(f.root));
        } else {
            assertFalse(what + ": no _metadata in the output", Files.exists(out.resolve("_metadata")));
            if (inside) {
                Set<String> there = names(out, listFiles(out));
                assertEquals(what + ": every file the stage wrote is named by its staged _metadata", there,
                        names(out, CheckpointSurgeon.leftovers(out)));
            }
        }
        rerun(f, out, what);
        if (out != null && Files.exists(out)) TestFiles.deleteRecursively(out);
        return inside;
    }

    /**
     * The output (or, in place, the checkpoint's file system) on a small tmpfs whose free space
     * grows from nothing until the run succeeds: every failure on the way is an IO error naming the
     * place and the lack of space, and leaves the input as it was and nothing of the run.
     */
    static void diskFull(Fixture f) throws Exception {
        Path probe = mount("size=4k");
        Assume.assumeTrue("cannot mount a tmpfs here (needs root, as in CI)", probe != null);
        umount(probe);
        // --output onto a tmpfs of 4 KiB, 8 KiB, ...
        int failures = 0;
        boolean done = false;
        for (long size = 4096; !done; size *= 2) {
            Path small = mount("size=" + size);
            try {
                Path out = small.resolve("out");
                done = fullDiskRun(f, out, small, "--output on a " + size + "-byte tmpfs");
                if (!done) failures++;
            } finally {
                umount(small);
            }
            assertTrue(f.kind + ": 256 MiB are enough", size < 256L << 20);
        }
        LOG.add(f.kind + ": --output failed for lack of space " + failures + " times before it fit");
        // in place: the checkpoint's file system filled but for 0, 4 KiB, 8 KiB, ...
        Path fs = f == rocksdb ? disk : mount("size=" + (TestFiles.sizeOf(f.root) + (64L << 20)));
        Assume.assumeTrue("the RocksDB fixture is on a tmpfs", fs != null);
        Fixture at = f;
        if (f != rocksdb) {
            Path copy = fs.resolve("savepoint");
            TestFiles.copyRecursively(f.root, copy);
            at = new Fixture(f.kind + " on a tmpfs", copy, copy, f.keys);
        }
        try {
            failures = 0;
            done = false;
            for (long free = 0; !done; free = free == 0 ? 4096 : free * 2) {
                Path filler = fs.resolve("filler");
                fill(filler, free);
                try {
                    done = fullDiskRun(at, null, fs, "in place with " + free + " bytes free");
                    if (!done) failures++;
                } finally {
                    Files.delete(filler);
                }
                assertTrue(f.kind + ": 64 MiB are enough", free < 64L << 20);
            }
            at.reset();
            LOG.add(f.kind + ": in place failed for lack of space " + failures + " times before it fit");
        } finally {
            if (f != rocksdb) umount(fs);
        }
    }

    /** One run on a full disk: true when it succeeded (then checked), false when it failed cleanly. */
    static boolean fullDiskRun(Fixture f, Path out, Path fs, String what) throws Exception {
        what = f.kind + ", " + what;
        try {
            SurgeryPlan plan = out == null ? CheckpointSurgeon.applyInPlace(f.checkpoint, surgery())
                    : CheckpointSurgeon.apply(f.checkpoint, surgery(), out);
            check(f, out == null ? f.checkpoint : out, plan, what);
            if (out != null) assertEquals(what + ": the input", f.hashes, hashes(f.root));
            return true;
        } catch (CheckpointSurgeonException e) {
            assertEquals(what + ": " + e, CheckpointSurgeonException.Code.IO, e.code());
            String m = e.getMessage();
            assertTrue(what + ": " + m, m.contains(fs.toString()) && m.toLowerCase(java.util.Locale.ROOT)
                    .contains("space") && m.contains("nothing was changed"));
            assertEquals(what + ": the input", f.hashes, hashes(f.root));
            if (out != null) assertFalse(what + ": the output the run created is gone", Files.exists(out));
            else assertEquals(what + ": nothing of the run", f.hashes, hashes(f.root));
            return false;
        }
    }

    /** Fills the file system of {@code filler} but for {@code free} bytes. */
    static void fill(Path filler, long free) throws IOException {
        byte[] block = new byte[1 << 16];
        try (OutputStream o = Files.newOutputStream(filler)) {
            while (true) o.write(block);
        } catch (IOException full) {
            // no space left
        }
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(filler,
                java.nio.file.StandardOpenOption.WRITE)) {
            ch.truncate(Math.max(0, ch.size() - free));
        }
    }

    // ---- reruns and judges

    /**
     * Runs the surgery again without faults (in place: then resets the checkpoint): Flink's loader
     * accepts the result and the native reader finds b gone and a whole. Returns the output, or null
     * in place.
     */
    static Path rerun(Fixture f, Path out, String what) throws Exception {
        Path to = out == null ? null : work().resolve("rerun-" + System.nanoTime());
        SurgeryPlan plan = to == null ? CheckpointSurgeon.applyInPlace(f.checkpoint, surgery())
                : CheckpointSurgeon.apply(f.checkpoint, surgery(), to);
        check(f, to == null ? f.checkpoint : to, plan, what + ", rerun");
        if (to == null) {
            f.reset();
        } else {
            assertEquals(what + ", rerun: the input", f.hashes, hashes(f.root));
        }
        return to;
    }

    /** {@code plan} (null: a run of the CLI without Flink) was loaded by Flink; so is the result, and it reads right. */
    static void check(Fixture f, Path result, SurgeryPlan plan, String what) throws Exception {
        if (plan != null) {
            assertEquals(what + ": " + plan.result().flinkValidation(),
                    SurgeryPlan.Validation.Status.LOADED_BY_FLINK, plan.result().validation().status());
        }
        try (InputStream in = Files.newInputStream(result.resolve("_metadata"))) {
            Checkpoints.loadCheckpointMetadata(new DataInputStream(in), KeyedCommitFaultsTest.class.getClassLoader(),
                    result.toString());
        }
        KeyedReport r = CheckpointSurgeon.inspectKeyed(result);
        assertEquals(what + ": one keyed operator", 1, r.operators().size());
        KeyedReport.Operator op = r.operators().get(0);
        assertNull(what + ": b is gone", op.state(REMOVED));
        assertNotNull(what + ": a is there", op.state("a"));
        if (f.kind.startsWith("canonical")) {
            assertEquals(what + ": every entry of a", f.keys, op.state("a").total().entries());
            assertTrue(what, op.state("a").total().complete());
        }
        // (an output of a RocksDB checkpoint references the SST files in the input's shared/, which the
        // reader does not follow out of the output's job directory: the restore reads them)
    }

    /** A real job restores from {@code dir}: every key's a is what v1 wrote, b is empty. */
    static void restore(Fixture f, Path dir) throws Exception {
        Payload.CHECKED.clear();
        Payload.WRONG.set(0);
        boolean rocks = f == rocksdb;
        Configuration c = conf(work(), "restore-" + System.nanoTime(), rocks ? "rocksdb" : "hashmap");
        FlinkConf.restoreFrom(c, dir.toUri().toString());
        FlinkConf.noRestarts(c);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(rocks ? 2 : 4, c);
        topology(env, f.keys, false);
        org.apache.flink.core.execution.JobClient client = env.executeAsync("keyed-faults-restore");
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (Payload.CHECKED.size() < f.keys && Payload.WRONG.get() == 0 && System.nanoTime() < deadline
                    && !client.getJobExecutionResult().isDone()) {
                Thread.sleep(50);
            }
            if (client.getJobExecutionResult().isDone()) client.getJobExecutionResult().get();
        } finally {
            client.cancel().exceptionally(t -> null).get(60, TimeUnit.SECONDS);
        }
        assertEquals(f.kind + ": values of a that differ, or b not empty", 0, Payload.WRONG.get());
        assertEquals(f.kind + ": every key read back", f.keys, Payload.CHECKED.size());
        LOG.add(f.kind + ": restored from " + dir.getFileName() + ", " + f.keys + " keys exact");
    }

    // ---- the job

    static Configuration conf(Path base, String name, String backend) {
        Configuration c = FlinkConf.checkpointing(backend, base.resolve(name + "-checkpoints").toUri().toString(),
                base.resolve(name + "-savepoints").toUri().toString(), "200ms", 1);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.inlineThreshold(c, "0");
        return c;
    }

    /** Runs the writing job; returns its canonical savepoint or its last retained checkpoint. */
    static Path job(Path base, String name, String backend, int parallelism, long keys, boolean savepoint)
            throws Exception {
        Payload.WRITTEN.set(0);
        MiniClusterJob job = MiniClusterJob.of(name, conf(base, name, backend), parallelism,
                env -> topology(env, keys, true)).readyWhen(() -> Payload.WRITTEN.get() >= keys)
                .checkpointsAfterReady(1).timeout(Duration.ofSeconds(300));
        MiniClusterJob.Result r = (savepoint ? job.stopWithSavepoint() : job).run();
        assertNull(r.failureText(), r.failure());
        return savepoint ? r.savepointPath() : r.checkpointPath();
    }

    /** numbers -> keyBy(n % keys) -> payload (uid payload) -> sink. */
    static void topology(StreamExecutionEnvironment env, long keys, boolean write) {
        Shims.discard(env.fromSource(new NumberSequenceSource(0, Long.MAX_VALUE - 1), WatermarkStrategy.noWatermarks(),
                        "numbers").uid("numbers").setParallelism(1)
                .keyBy(new Functions.ModKey(keys)).map(new Payload(keys, write)).uid("payload").name("payload"), "sink");
    }

    /**
     * Writes a 1 KiB {@code a} and a Long {@code b} for each key (then slows down, so that a barrier
     * finds no backlog); or checks each key's {@code a} and that {@code b} is empty.
     */
    static final class Payload extends RichMapFunction<Long, Long> {
        static final AtomicLong WRITTEN = new AtomicLong();
        static final Set<Long> CHECKED = ConcurrentHashMap.newKeySet();
        static final AtomicLong WRONG = new AtomicLong();
        private final long keys;
        private final boolean write;
        private transient ValueState<byte[]> a;
        private transient ValueState<Long> b;

        Payload(long keys, boolean write) {
            this.keys = keys;
            this.write = write;
        }

        static byte[] payload(long key) {
            byte[] v = new byte[1024];
            for (int i = 0; i < v.length; i++) v[i] = (byte) (key * 31 + i);
            return v;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (a == null) {
                a = getRuntimeContext().getState(new ValueStateDescriptor<>("a",
                        PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
                b = getRuntimeContext().getState(new ValueStateDescriptor<>(REMOVED, Types.LONG));
            }
            long key = n % keys;
            if (!write) {
                if (java.util.Arrays.equals(payload(key), a.value()) && b.value() == null) CHECKED.add(key);
                else WRONG.incrementAndGet();
            } else if (n < keys) {
                a.update(payload(key));
                b.update(n);
                WRITTEN.incrementAndGet();
            } else {
                Thread.sleep(1);
            }
            return n;
        }
    }

    // ---- support

    static Surgery surgery() {
        return Surgery.removeKeyedState(Surgery.OperatorSelector.uid("payload"), REMOVED);
    }

    /** The CLI (without Flink: it starts faster) applying the surgery into {@code out}, or in place. */
    static CliProcess cli(Fixture f, Path out) {
        List<String> args = new ArrayList<>(List.of("remove-keyed-state", f.checkpoint.toString(), "--uid", "payload",
                "--state", REMOVED, "--apply"));
        args.addAll(out == null ? List.of("--in-place") : List.of("--output", out.toString()));
        return CliProcess.jar(args.toArray(new String[0]));
    }

    /** Reads the process's output into {@code lines}; counts {@code latch} down at the first line that matches. */
    static Thread reader(Process p, List<String> lines, java.util.function.Predicate<String> match, CountDownLatch latch) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    lines.add(line);
                    if (match.test(line)) latch.countDown();
                }
            } catch (IOException e) {
                // the process ended
            }
            latch.countDown();
        });
        t.start();
        return t;
    }

    /** Relative path -> SHA-256 of every regular file under {@code root}. */
    static Map<String, String> hashes(Path root) throws Exception {
        Map<String, String> m = new TreeMap<>();
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : s.filter(x -> Files.isRegularFile(x, LinkOption.NOFOLLOW_LINKS)).collect(Collectors.toList())) {
                m.put(root.relativize(p).toString(), hashOf(p));
            }
        }
        return m;
    }

    /**
     * {@link #hashes(Path)} of the fixture's root; {@code knownOnly}: of the files that were there
     * before only (a killed in-place run may leave new ones, checked on their own).
     */
    static Map<String, String> hashes(Fixture f, boolean knownOnly) throws Exception {
        Map<String, String> m = hashes(f.root);
        if (knownOnly) m.keySet().retainAll(f.hashes.keySet());
        return m;
    }

    static String hashOf(Path p) throws Exception {
        MessageDigest d = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(p)) {
            for (int n; (n = in.read(buf)) > 0; ) d.update(buf, 0, n);
        }
        return new java.math.BigInteger(1, d.digest()).toString(16);
    }

    /** The files under the fixture's root that were not there before. */
    static Set<String> added(Fixture f) throws Exception {
        Set<String> s = new TreeSet<>(hashes(f.root).keySet());
        s.removeAll(f.hashes.keySet());
        return s;
    }

    static List<Path> listFiles(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.collect(Collectors.toList());
        }
    }

    static Set<String> names(Path root, List<Path> files) throws IOException {
        Path real = root.toRealPath();
        Set<String> s = new TreeSet<>();
        for (Path p : files) s.add(real.relativize(p.toRealPath()).toString());
        return s;
    }

    /** Mounts a tmpfs with {@code options}; null where mounting is not allowed. */
    static Path mount(String options) throws Exception {
        Path dir = Files.createTempDirectory("cs-keyed-mnt");
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir.toString())
                .redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        if (p.waitFor() != 0) {
            Files.delete(dir);
            return null;
        }
        return dir;
    }

    static void umount(Path dir) throws Exception {
        new ProcessBuilder("umount", dir.toString()).inheritIO().start().waitFor();
        Files.deleteIfExists(dir);
    }
}
