package io.checkpointsurgeon.faults;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.CheckpointSurgeonException.Code;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.internal.CommitFaults;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.junit.Assume;
import org.junit.Test;

/**
 * The one commit sequence under a hostile user: two repairs at once (threads and processes),
 * names that already exist, a result that Flink's loader rejects, an HA directory with a file that
 * cannot be repaired, and a switch that fails between two HA files. Flink's own loader judges what
 * is on disk afterwards. Runs on one Flink version (1.20.3; the rejection cases on 1.15.4, whose
 * loader rejects the 1.20 format, and the HA cases on 1.15.4, whose CompletedCheckpoint the HA
 * fixture builder knows): the code under test is the same for all.
 */
public class CommitProtocolTest {
    static final String VERSION = System.getProperty("flink.version");

    static Path fixture(String name) {
        return TestFiles.fixture(name);
    }

    static Path copy(Path from) throws Exception {
        return TestFiles.copyToTempDir(from, "cs-commit");
    }

    /** File name -> SHA-256 of every file in a directory. */
    static Map<String, String> hashes(Path dir) throws Exception {
        Map<String, String> m = new TreeMap<>();
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.collect(Collectors.toList())) {
                byte[] d = MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p));
                m.put(p.getFileName().toString(), new java.math.BigInteger(1, d).toString(16));
            }
        }
        return m;
    }

    static void flinkLoads(Path dir) throws Exception {
        try (InputStream in = Files.newInputStream(dir.resolve("_metadata"))) {
            Checkpoints.loadCheckpointMetadata(new DataInputStream(in), CommitProtocolTest.class.getClassLoader(),
                    dir.toString());
        }
    }

    static Set<String> states(Path dir) throws Exception {
        Set<String> s = new HashSet<>();
        for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(dir).operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) s.add(t.name());
            for (InspectReport.SubtaskInfo st : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : st.operatorStateHandles()) {
                    assertEquals(dir + ": " + h.streamError(), "", h.streamError());
                }
            }
        }
        return s;
    }

    static Surgery purge(String state) {
        return Surgery.removeState(Surgery.OperatorSelector.all(), state);
    }

    @Test
    public void twoThreadsWithTheSameOutputNeverHarmTheInput() throws Exception {
        Assume.assumeTrue("1.20.3".equals(VERSION));
        Path in = copy(fixture("operator-state-files"));
        Map<String, String> before = hashes(in);
        int trials = Integer.getInteger("commit.thread.trials", 50), successes = 0, refusals = 0;
        for (int trial = 0; trial < trials; trial++) {
            Path out = Files.createTempDirectory("cs-commit-out").resolve("repaired");
            CountDownLatch go = new CountDownLatch(1);
            List<AtomicReference<Object>> results = List.of(new AtomicReference<>(), new AtomicReference<>());
            List<Thread> threads = new ArrayList<>();
            for (AtomicReference<Object> r : results) {
                Thread t = new Thread(() -> {
                    try {
                        go.await();
                        r.set(CheckpointSurgeon.apply(in, purge("union-list"), out));
                    } catch (Throwable e) {
                        r.set(e);
                    }
                });
                t.start();
                threads.add(t);
            }
            go.countDown();
            for (Thread t : threads) t.join(60_000);
            int ok = 0;
            for (AtomicReference<Object> r : results) {
                if (r.get() instanceof SurgeryPlan) {
                    ok++;
                } else {
                    assertTrue("trial " + trial + ": " + r.get(), r.get() instanceof CheckpointSurgeonException);
                    Code code = ((CheckpointSurgeonException) r.get()).code();
                    assertTrue("trial " + trial + ": " + r.get(), code == Code.LOCKED || code == Code.INVALID_ARGUMENT);
                    refusals++;
                }
            }
            assertTrue("trial " + trial + ": at most one succeeds, " + ok + " did", ok <= 1);
            assertEquals("trial " + trial + ": the input is unchanged", before, hashes(in));
            if (ok == 1) {
                successes++;
                flinkLoads(out);
                assertFalse(states(out).contains("union-list"));
            } else {
                assertFalse("trial " + trial + ": no _metadata without a success", Files.exists(out.resolve("_metadata")));
            }
        }
        System.out.printf("same --output from two threads: %d trials, %d succeeded, %d refused%n", trials, successes,
                refusals);
        assertEquals("exactly one of two succeeds when they race", trials, successes);
    }

    @Test
    public void twoProcessesInPlaceNeverLoseAChange() throws Exception {
        Assume.assumeTrue("1.20.3".equals(VERSION));
        Path fixture = fixture("operator-state-files");
        byte[] original = Files.readAllBytes(fixture.resolve("_metadata"));
        int trials = Integer.getInteger("commit.process.trials", 30), both = 0, one = 0;
        for (int trial = 0; trial < trials; trial++) {
            Path dir = copy(fixture);
            Process a = cli("remove-state", dir.toString(), "--state", "union-list", "--apply", "--in-place");
            Process b = cli("remove-state", dir.toString(), "--state", "split-list", "--apply", "--in-place");
            assertTrue(a.waitFor(60, TimeUnit.SECONDS) && b.waitFor(60, TimeUnit.SECONDS));
            String errA = new String(a.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            String errB = new String(b.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            Set<String> left = states(dir);
            flinkLoads(dir);
            if (a.exitValue() == 0 && b.exitValue() == 0) {
                both++;
                assertFalse("trial " + trial + ": both exit 0, so both removals are there: " + left,
                        left.contains("union-list") || left.contains("split-list"));
            } else {
                one++;
                assertTrue("trial " + trial + ": one exits 0: " + errA + errB, a.exitValue() == 0 || b.exitValue() == 0);
                String refused = a.exitValue() != 0 ? errA : errB;
                assertTrue(refused, refused.contains("[LOCKED]") && refused.contains(dir.toString()));
                assertEquals("trial " + trial, a.exitValue() == 0, !left.contains("union-list"));
                assertEquals("trial " + trial, b.exitValue() == 0, !left.contains("split-list"));
            }
            // Each backup holds what _metadata was before that run: the original, or the other run's result.
            List<Path> backups;
            try (Stream<Path> s = Files.list(dir)) {
                backups = s.filter(p -> p.getFileName().toString().startsWith("_metadata.backup-"))
                        .collect(Collectors.toList());
            }
            assertEquals("trial " + trial, a.exitValue() == 0 && b.exitValue() == 0 ? 2 : 1, backups.size());
            boolean originalKept = false;
            for (Path p : backups) originalKept |= java.util.Arrays.equals(original, Files.readAllBytes(p));
            assertTrue("trial " + trial + ": the original bytes are in a backup", originalKept);
        }
        System.out.printf("two in-place processes: %d trials, both succeeded (one after the other) %d, one refused"
                + " with LOCKED %d%n", trials, both, one);
    }

    @Test
    public void namesThatAlreadyExistAreNeverTouched() throws Exception {
        Assume.assumeTrue("1.20.3".equals(VERSION));
        Path dir = copy(fixture("operator-state-files"));
        byte[] original = Files.readAllBytes(dir.resolve("_metadata"));
        Path elsewhere = Files.createTempFile("cs-victim", ".bin");
        Files.write(elsewhere, "victim".getBytes(StandardCharsets.UTF_8));
        // Every backup name for the next 4 seconds exists: hard links to _metadata, and symlinks.
        long now = System.currentTimeMillis();
        for (long t = now; t < now + 4000; t++) {
            Path p = dir.resolve("_metadata.backup-" + t);
            if (t % 2 == 0) Files.createLink(p, dir.resolve("_metadata"));
            else Files.createSymbolicLink(p, elsewhere);
        }
        Map<String, String> before = hashes(dir);
        SurgeryPlan plan = CheckpointSurgeon.applyInPlace(dir, purge("union-list"));
        Path backup = Path.of(plan.result().backup());
        assertTrue(backup.getFileName().toString(), backup.getFileName().toString().matches("_metadata\\.backup-\\d+-\\d+"));
        assertArrayEquals(original, Files.readAllBytes(backup));
        Map<String, String> after = hashes(dir);
        for (Map.Entry<String, String> e : before.entrySet()) {
            if (e.getKey().equals("_metadata")) continue;
            assertEquals(e.getKey(), e.getValue(), after.get(e.getKey()));
        }
        assertEquals("victim", Files.readString(elsewhere));
        assertNotEquals(before.get("_metadata"), after.get("_metadata"));
        flinkLoads(dir);

        // An output whose would-be state files exist already: hard links to the input are refused by
        // link(2) / O_EXCL, never truncated.
        Path out = Files.createTempDirectory("cs-commit-existing");
        Files.createLink(out.resolve("victim"), dir.resolve("_metadata"));
        Map<String, String> inBefore = hashes(dir);
        try {
            CheckpointSurgeon.apply(dir, purge("split-list"), out);
            fail("a non-empty output must be refused");
        } catch (CheckpointSurgeonException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("not empty"));
        }
        assertEquals(inBefore, hashes(dir));
        assertFalse(Files.exists(out.resolve("_metadata")));
    }

    @Test
    public void aResultFlinkRejectsIsNeverLeftVisible() throws Exception {
        // Flink 1.15's loader does not read the metadata version 4 that Flink 1.20 writes.
        Assume.assumeTrue("1.15.4".equals(VERSION));
        Path in = copy(fixture("../1.20.3/operator-state-files").normalize());
        Map<String, String> before = hashes(in);
        Path out = Files.createTempDirectory("cs-commit-rejected").resolve("repaired");
        try {
            CheckpointSurgeon.apply(in, purge("union-list"), out);
            fail("Flink 1.15 must reject a 1.20 _metadata");
        } catch (CheckpointSurgeonException e) {
            assertEquals(e.toString(), Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("nothing was changed"));
        }
        assertFalse("the output the run created is gone", Files.exists(out));
        assertEquals(before, hashes(in));

        Path existing = Files.createTempDirectory("cs-commit-rejected-existing");
        try {
            CheckpointSurgeon.apply(in, purge("union-list"), existing);
            fail();
        } catch (CheckpointSurgeonException e) {
            assertEquals(Code.VALIDATION, e.code());
        }
        try (Stream<Path> s = Files.list(existing)) {
            assertEquals("an existing output is left empty", 0, s.count());
        }

        try {
            CheckpointSurgeon.applyInPlace(in, purge("union-list"));
            fail();
        } catch (CheckpointSurgeonException e) {
            assertEquals(Code.VALIDATION, e.code());
        }
        assertEquals("in place: the original _metadata is still the live one, and nothing was added", before,
                hashes(in));

        // The CLI says so and exits 2.
        CliProcess.Result cli = CliProcess.withFlink("remove-state", in.toString(), "--state", "union-list", "--apply",
                "--output", out.toString()).run();
        assertEquals(cli.output, 2, cli.exitCode);
        assertTrue(cli.output, cli.output.contains("rejected") && cli.output.contains("nothing was changed"));
        assertFalse(Files.exists(out));

        // doctor with these Flink jars says a restore from it would fail, and gates with exit 4
        CliProcess.Result doctor = CliProcess.withFlink("doctor", in.toString()).run();
        assertEquals(doctor.output, 4, doctor.exitCode);
        assertTrue(doctor.output, doctor.output.contains("FLINK_REJECTS_METADATA")
                && doctor.output.contains("Flink 1.15.4"));
    }

    @Test
    public void haRepairIsAllOrNothingAndCanBeRunAgain() throws Exception {
        Assume.assumeTrue("the HA fixture builder uses the 1.15 CompletedCheckpoint", "1.15.4".equals(VERSION));
        Path dir = Files.createTempDirectory("cs-commit-ha");
        Path ckpt = copy(fixture("stale-union"));
        Path built = KillDuringRepairTest.completedCheckpointOf(ckpt);
        Path a = dir.resolve("completedCheckpoint0000000000a1");
        Path b = dir.resolve("completedCheckpoint0000000000b2");
        Files.copy(built, a);
        Files.copy(built, b);
        Path bad = dir.resolve("completedCheckpoint0000000000c3");
        Files.write(bad, java.util.Arrays.copyOf(Files.readAllBytes(built), 200));
        Surgery s = Surgery.removeState(Surgery.OperatorSelector.uid("source_consumer"), "topic-partition-offset-states");
        Map<String, String> before = hashes(dir);
        Map<String, String> ckptBefore = hashes(ckpt);
        try {
            CheckpointSurgeon.repairHa(List.of(a, b, bad), s);
            fail("a truncated HA file cannot be repaired");
        } catch (CheckpointSurgeonException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("nothing was changed"));
        }
        assertEquals("every HA file unchanged, no backup, no temporary file", before, hashes(dir));
        assertEquals("no new state file left in the checkpoint", ckptBefore, hashes(ckpt));

        // A switch that fails after the first file: the report names each file, a re-run finishes.
        Files.delete(bad);
        CommitFaults.failAt("switch:1");
        try {
            CheckpointSurgeon.repairHa(List.of(a, b), s);
            fail("the injected failure");
        } catch (CheckpointSurgeonException e) {
            assertTrue(e.getMessage(), e.getMessage().contains(a + ": NEW") && e.getMessage().contains(b + ": OLD"));
        } finally {
            CommitFaults.clear();
        }
        assertNotEquals(before.get(a.getFileName().toString()), hashes(dir).get(a.getFileName().toString()));
        assertEquals(before.get(b.getFileName().toString()), hashes(dir).get(b.getFileName().toString()));

        List<CheckpointSurgeon.HaRepair> again = CheckpointSurgeon.repairHa(List.of(a, b), s);
        assertEquals(CheckpointSurgeon.HaRepair.Status.SKIPPED, again.get(0).status());
        assertEquals(CheckpointSurgeon.HaRepair.Status.SWITCHED, again.get(1).status());
        for (Path f : List.of(a, b)) {
            InspectReport r = CheckpointSurgeon.inspectHa(f);
            assertTrue(r.operators().stream().flatMap(o -> o.stateTotals().stream())
                    .noneMatch(t -> t.name().equals("topic-partition-offset-states")));
        }
        try {
            CheckpointSurgeon.repairHa(List.of(a, b), s);
            fail("nothing left to repair is an error, not a silent success");
        } catch (CheckpointSurgeonException e) {
            assertEquals(Code.NOTHING_SELECTED, e.code());
        }
    }

    /** {@code java -jar checkpoint-surgeon.jar args}; its standard error can be read, its output is dropped. */
    static Process cli(String... args) throws Exception {
        return CliProcess.jar(args).processBuilder().redirectErrorStream(false)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }
}
