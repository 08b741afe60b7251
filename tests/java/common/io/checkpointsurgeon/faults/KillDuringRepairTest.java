package io.checkpointsurgeon.faults;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.junit.Assume;
import org.junit.Test;

/**
 * SIGKILL at random points of an in-place repair run by the CLI in its own JVM: every time, the
 * checkpoint on disk is either the complete old one (byte for byte) or the complete new one, Flink's
 * own loader loads it, every state file it references is there, and every backup holds the old
 * bytes. Runs on one Flink version (1.20.3) to keep the suite short; the code under test is the same.
 */
public class KillDuringRepairTest {
    static final int TRIALS = Integer.getInteger("kill.trials", 100);

    @Test
    public void killedInPlaceRepairsLeaveTheOldOrTheNewCheckpoint() throws Exception {
        Assume.assumeTrue("runs on 1.20.3 only", "1.20.3".equals(System.getProperty("flink.version")));
        Path fixture = TestFiles.fixture("operator-state-files");
        byte[] original = Files.readAllBytes(fixture.resolve("_metadata"));
        Random rnd = new Random(7);
        int oldSeen = 0, newSeen = 0;
        long maxMillis = 1500;
        for (int trial = 0; trial < TRIALS; trial++) {
            Path dir = TestFiles.copyToTempDir(fixture, "cs-kill");
            Process p = CliProcess.jar("remove-state", dir.toString(), "--state", "union-list", "--apply", "--in-place")
                    .processBuilder().redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            long start = System.nanoTime();
            long delay = (long) (rnd.nextDouble() * maxMillis);
            boolean finished = p.waitFor(delay, TimeUnit.MILLISECONDS);
            if (!finished) {
                p.destroyForcibly().waitFor();
            } else if (trial < 5) {
                // learn how long a full run takes, so that kills land inside it
                maxMillis = Math.max(200, (System.nanoTime() - start) / 1_000_000 + 100);
            }
            byte[] now = Files.readAllBytes(dir.resolve("_metadata"));
            if (java.util.Arrays.equals(now, original)) {
                oldSeen++;
            } else {
                newSeen++;
                InspectReport r = CheckpointSurgeon.inspect(dir);
                assertTrue(r.operators().stream().flatMap(o -> o.stateTotals().stream())
                        .noneMatch(t -> t.name().equals("union-list")));
                for (InspectReport.OperatorInfo op : r.operators()) {
                    for (InspectReport.SubtaskInfo st : op.subtasks()) {
                        for (InspectReport.OperatorStateHandleInfo h : st.operatorStateHandles()) {
                            assertEquals("trial " + trial + ": " + h.streamError(), "", h.streamError());
                        }
                    }
                }
            }
            try (InputStream in = Files.newInputStream(dir.resolve("_metadata"))) {
                Checkpoints.loadCheckpointMetadata(new DataInputStream(in), getClass().getClassLoader(), dir.toString());
            }
            List<Path> backups = new ArrayList<>();
            try (Stream<Path> s = Files.list(dir)) {
                s.filter(x -> x.getFileName().toString().startsWith("_metadata.backup-")).forEach(backups::add);
            }
            for (Path b : backups) assertArrayEquals("trial " + trial, original, Files.readAllBytes(b));
            if (!java.util.Arrays.equals(now, original)) {
                assertEquals("a replaced _metadata always has its backup", 1, backups.size());
            }
        }
        System.out.printf("kill trials: %d, old checkpoint seen %d times, new %d times%n", TRIALS, oldSeen, newSeen);
        assertTrue("kills never landed before the swap: " + oldSeen, oldSeen > 0);
        assertTrue("kills never landed after the swap: " + newSeen, newSeen > 0);
    }

    /**
     * SIGKILL while Flink's loader judges the staged result (the run stalls there through a test
     * hook): in place the old {@code _metadata} is still the live one and has no backup yet; an
     * output directory has no {@code _metadata}.
     */
    @Test
    public void killsDuringValidationLeaveNothingVisible() throws Exception {
        Assume.assumeTrue("runs on 1.20.3 only", "1.20.3".equals(System.getProperty("flink.version")));
        Path fixture = TestFiles.fixture("operator-state-files");
        byte[] original = Files.readAllBytes(fixture.resolve("_metadata"));
        int trials = Integer.getInteger("kill.validate.trials", 10);
        for (int trial = 0; trial < trials; trial++) {
            Path dir = TestFiles.copyToTempDir(fixture, "cs-kill-validate");
            boolean inPlace = trial % 2 == 0;
            Path out = dir.resolveSibling(dir.getFileName() + "-out");
            List<String> args = new ArrayList<>(List.of("remove-state", dir.toString(), "--state", "union-list", "--apply"));
            args.addAll(inPlace ? List.of("--in-place") : List.of("--output", out.toString()));
            Process p = CliProcess.withFlink(args.toArray(new String[0]))
                    .systemProperty("checkpointsurgeon.test.stallAt", "validate").start();
            java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()));
            String line;
            boolean stalled = false;
            while ((line = r.readLine()) != null) {
                if (line.contains("stalling at validate")) {
                    stalled = true;
                    break;
                }
            }
            assertTrue("trial " + trial + ": the run reached validation", stalled);
            p.destroyForcibly().waitFor();
            assertArrayEquals("trial " + trial, original, Files.readAllBytes(dir.resolve("_metadata")));
            try (Stream<Path> s = Files.list(dir)) {
                assertTrue("trial " + trial + ": no backup before the switch",
                        s.noneMatch(x -> x.getFileName().toString().startsWith("_metadata.backup-")));
            }
            if (!inPlace) {
                assertTrue("trial " + trial + ": an output without _metadata", !Files.exists(out.resolve("_metadata")));
            }
            try (InputStream in = Files.newInputStream(dir.resolve("_metadata"))) {
                Checkpoints.loadCheckpointMetadata(new DataInputStream(in), getClass().getClassLoader(), dir.toString());
            }
        }
        System.out.printf("kills during validation: %d trials, old checkpoint live in all%n", trials);
    }

    @Test
    public void killedHaRepairsLeaveTheOldOrTheNewFile() throws Exception {
        Assume.assumeTrue("builds the HA file with the Flink 1.15 CompletedCheckpoint constructor",
                "1.15.4".equals(System.getProperty("flink.version")));
        // a copy: a repair killed after staging leaves its _metadata.tmp-* in the checkpoint directory
        // the HA file points to, which must not be the repository's fixture
        Path fixture = completedCheckpointOf(TestFiles.copyToTempDir(TestFiles.fixture("stale-union"), "cs-kill-ha-checkpoint"));
        byte[] original = Files.readAllBytes(fixture);
        Random rnd = new Random(11);
        int trials = Integer.getInteger("kill.ha.trials", 30), oldSeen = 0, newSeen = 0;
        long maxMillis = 4000;
        for (int trial = 0; trial < trials; trial++) {
            Path dir = Files.createTempDirectory("cs-kill-ha");
            Path file = dir.resolve(fixture.getFileName());
            Files.copy(fixture, file);
            // the CLI with this test's class path: the jar plus the Flink jars the HA file needs
            Process p = CliProcess.withFlink("ha", "repair", file.toString(), "--uid", "source_consumer", "--state",
                    "topic-partition-offset-states", "--apply")
                    .processBuilder().redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            long start = System.nanoTime();
            boolean finished = p.waitFor((long) (rnd.nextDouble() * maxMillis), TimeUnit.MILLISECONDS);
            if (!finished) {
                p.destroyForcibly().waitFor();
            } else if (trial < 3) {
                assertEquals("the HA repair itself must succeed", 0, p.exitValue());
                maxMillis = Math.max(500, (System.nanoTime() - start) / 1_000_000 + 200);
            }
            byte[] now = Files.readAllBytes(file);
            if (java.util.Arrays.equals(now, original)) {
                oldSeen++;
            } else {
                newSeen++;
                InspectReport r = CheckpointSurgeon.inspectHa(file);
                assertTrue(r.operators().stream().flatMap(o -> o.stateTotals().stream())
                        .noneMatch(t -> t.name().equals("topic-partition-offset-states")));
            }
            try (Stream<Path> s = Files.list(dir)) {
                for (Path b : s.filter(x -> x.getFileName().toString().contains(".backup-")).collect(java.util.stream.Collectors.toList())) {
                    assertArrayEquals("trial " + trial, original, Files.readAllBytes(b));
                }
            }
        }
        System.out.printf("HA kill trials: %d, old file seen %d times, new %d times%n", trials, oldSeen, newSeen);
        assertTrue(oldSeen > 0 && newSeen > 0);
    }

    /**
     * An HA file as a 1.15 JobManager writes it (a Java-serialized CompletedCheckpoint), holding the
     * operator states that Flink's own loader reads from a retained checkpoint whose state is inline.
     */
    public static Path completedCheckpointOf(Path checkpointDir) throws Exception {
        org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata md;
        Path metadataFile = checkpointDir.resolve("_metadata");
        try (InputStream in = Files.newInputStream(metadataFile)) {
            md = Checkpoints.loadCheckpointMetadata(new DataInputStream(in), KillDuringRepairTest.class.getClassLoader(),
                    checkpointDir.toString());
        }
        java.util.Map<org.apache.flink.runtime.jobgraph.OperatorID, org.apache.flink.runtime.checkpoint.OperatorState> ops =
                new java.util.HashMap<>();
        for (org.apache.flink.runtime.checkpoint.OperatorState op : md.getOperatorStates()) {
            ops.put(op.getOperatorID(), op);
        }
        org.apache.flink.core.fs.Path dir = new org.apache.flink.core.fs.Path(checkpointDir.toUri());
        Object location = new org.apache.flink.runtime.state.filesystem.FsCompletedCheckpointStorageLocation(
                org.apache.flink.core.fs.local.LocalFileSystem.getSharedInstance(), dir,
                new org.apache.flink.runtime.state.filesystem.FileStateHandle(
                        new org.apache.flink.core.fs.Path(metadataFile.toUri()), Files.size(metadataFile)),
                checkpointDir.toString());
        Object props = org.apache.flink.runtime.checkpoint.CheckpointProperties.forCheckpoint(
                org.apache.flink.runtime.checkpoint.CheckpointRetentionPolicy.RETAIN_ON_CANCELLATION);
        // The widest public constructor of this Flink version, its arguments filled by type (the
        // parameter lists differ between versions; the optional ones stay null).
        java.lang.reflect.Constructor<?> ctor = java.util.Arrays.stream(
                org.apache.flink.runtime.checkpoint.CompletedCheckpoint.class.getConstructors())
                .max(java.util.Comparator.comparingInt(java.lang.reflect.Constructor::getParameterCount)).orElseThrow();
        Object[] args = new Object[ctor.getParameterCount()];
        long[] longs = {md.getCheckpointId(), 1L, 2L};
        int nextLong = 0;
        Class<?>[] types = ctor.getParameterTypes();
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i];
            if (t == long.class) args[i] = longs[Math.min(nextLong++, 2)];
            else if (t == org.apache.flink.api.common.JobID.class) args[i] = new org.apache.flink.api.common.JobID();
            else if (t == java.util.Map.class) args[i] = ops;
            else if (t == java.util.Collection.class) args[i] = new ArrayList<>(md.getMasterStates());
            else if (t.isInstance(props)) args[i] = props;
            else if (t.isInstance(location)) args[i] = location;
            else if (t == boolean.class) args[i] = false;
            else if (t == int.class) args[i] = 0;
        }
        Object cc = ctor.newInstance(args);
        Path file = Files.createTempDirectory("cs-ha-fixture").resolve("completedCheckpoint0123456789ab");
        try (java.io.OutputStream out = Files.newOutputStream(file)) {
            org.apache.flink.util.InstantiationUtil.serializeObject(out, cc);
        }
        return file;
    }
}
