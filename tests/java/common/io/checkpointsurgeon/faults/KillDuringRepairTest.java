package io.checkpointsurgeon.faults;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import java.io.DataInputStream;
import java.io.File;
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
        Path fixture = Path.of(System.getProperty("fixtures.dir"), "operator-state-files");
        byte[] original = Files.readAllBytes(fixture.resolve("_metadata"));
        String jar = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(p -> p.endsWith("checkpoint-surgeon.jar")).findFirst().orElseThrow();
        Random rnd = new Random(7);
        int oldSeen = 0, newSeen = 0;
        long maxMillis = 1500;
        for (int trial = 0; trial < TRIALS; trial++) {
            Path dir = Files.createTempDirectory("cs-kill");
            try (Stream<Path> s = Files.list(fixture)) {
                for (Path p : s.toList()) Files.copy(p, dir.resolve(p.getFileName()));
            }
            Process p = new ProcessBuilder(javaBin(), "-jar", jar, "remove-state", dir.toString(), "--state",
                    "union-list", "--apply", "--in-place").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
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

    static String javaBin() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }
}
