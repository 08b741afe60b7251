package io.checkpointsurgeon.faults;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.internal.CommitFaults;
import io.checkpointsurgeon.internal.Native;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.junit.Assume;
import org.junit.Test;

/**
 * SIGTERM at random points of {@code --in-place} and {@code --output} repairs run by the CLI in its
 * own JVM, on a checkpoint that a real Flink 1.20.3 job writes at test time, large enough that each
 * commit step takes measurable time (4 subtasks, 6 MB of operator state in files, 4 MB of
 * {@code _metadata}, keyed state files that an output gets linked). Each trial waits until the
 * commit starts, then signals at a random moment of it; one in five stalls at a random step first
 * (the commit-faults seam), so that every step is hit. After each: either the old checkpoint or
 * the new one is live, complete, and loaded by Flink's own loader; no file of the run is left
 * (no staged file, no backup of a run that did not switch, no output directory of a run that did
 * not finish); the run says "interrupted, nothing was changed" or where the repaired file and its
 * backup are; the exit code is the signal's (143) or 0 for a run that ended first.
 */
public class SignalDuringRepairTest {
    static final int TRIALS = Integer.getInteger("signal.trials", 50);
    static final String[] STEPS = {"lock", "stage", "validate", "place", "backup", "switch"};

    @Test
    public void sigtermLeavesTheOldOrTheNewCheckpointAndNothingOfTheRun() throws Exception {
        Assume.assumeTrue("runs on 1.20.3 only", "1.20.3".equals(System.getProperty("flink.version")));
        Path work = Files.createTempDirectory("cs-sigterm");
        long job = System.nanoTime();
        Path fixture = bigCheckpoint(work);
        job = System.nanoTime() - job;
        byte[] original = Files.readAllBytes(fixture.resolve("_metadata"));
        Set<String> originalFiles = names(fixture);
        Random rnd = new Random(30);
        long commitNanos = 0;
        Map<String, Integer> landed = new TreeMap<>();
        int oldSeen = 0, newSeen = 0, finished = 0;
        long t0 = System.nanoTime();
        for (int trial = -1; trial < TRIALS; trial++) {
            boolean inPlace = trial % 2 == 0;
            Path dir = TestFiles.copyToTempDir(fixture, "cs-sigterm-in");
            Path out = dir.resolveSibling(dir.getFileName() + "-out");
            List<String> args = new ArrayList<>(List.of("remove-state", dir.toString(), "--state", "union-list",
                    "--apply"));
            args.addAll(inPlace ? List.of("--in-place") : List.of("--output", out.toString()));
            // every fifth trial stalls at a step first, the steps in turn, so that each is hit
            String stallAt = trial >= 0 && trial % 5 == 4 ? STEPS[(trial / 5) % STEPS.length] : null;
            CliProcess cli = CliProcess.jar(args.toArray(new String[0])).systemProperty("checkpointsurgeon.trace", "1");
            if (stallAt != null) cli.systemProperty(CommitFaults.STALL_AT, stallAt);
            Process p = cli.start();
            List<String> lines = Collections.synchronizedList(new ArrayList<>());
            long[] switchAt = {0};
            CountDownLatch started = new CountDownLatch(1);
            String startLine = stallAt != null ? "commit: stalling at " : "commit: lock ";
            Thread reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        lines.add(line);
                        if (line.startsWith(startLine)) started.countDown();
                        if (line.startsWith("commit: switch ")) switchAt[0] = System.nanoTime();
                    }
                } catch (java.io.IOException e) {
                    // the process ended
                }
                started.countDown();
            });
            reader.start();
            assertTrue("trial " + trial + ": the commit started", started.await(60, TimeUnit.SECONDS));
            long commitStart = System.nanoTime();
            if (trial < 0) {
                // the first run is not signalled: how long a commit takes, so that signals land inside it
                assertEquals(String.join("\n", lines), 0, p.waitFor());
                commitNanos = switchAt[0] - commitStart;
            } else {
                long delayMicros = stallAt != null ? rnd.nextInt(30_000) : (long) (rnd.nextDouble() * 1.2 * commitNanos / 1000);
                TimeUnit.MICROSECONDS.sleep(delayMicros);
                // SIGTERM (Process.destroy would close the pipes and lose what the run says then)
                p.toHandle().destroy(); // false when the run ended first
            }
            assertTrue("trial " + trial, p.waitFor(60, TimeUnit.SECONDS));
            reader.join();
            int exit = p.exitValue();
            String text = String.join("\n", lines);
            if (stallAt == null && switchAt[0] > 0) {
                // the load of the machine changes how long a commit takes: follow it
                commitNanos = (commitNanos * 3 + (switchAt[0] - commitStart)) / 4;
            }
            assertTrue("trial " + trial + ": exit " + exit + "\n" + text, exit == 0 || exit == 143);
            if (exit == 0) finished++;

            // where the signal landed: the last step the run started
            String step = "before the commit";
            for (String l : lines) {
                if (l.startsWith("commit: ") && !l.startsWith("commit: stalling")) step = l.split(" ")[1];
            }
            Path live = inPlace ? dir : out;
            boolean switched = Files.exists(live.resolve("_metadata"))
                    && !java.util.Arrays.equals(original, Files.readAllBytes(live.resolve("_metadata")));
            if (trial >= 0 && exit == 143) landed.merge(step + (switched ? " (after the switch)" : ""), 1, Integer::sum);
            // before the switch the run says so; after it, it says where the result is: the hook does,
            // or the run's own report, printed whole before the signal came
            if (exit == 143 && !switched) {
                assertTrue("trial " + trial + " (" + (inPlace ? "in place" : "output") + ", exit 143, "
                        + (stallAt == null ? "not stalled" : "stalled at " + stallAt) + "; " + names(dir) + "):\n" + text,
                        text.contains("interrupted, nothing was changed"));
            }
            if (exit == 143 && switched) {
                assertTrue("trial " + trial + ":\n" + text, text.contains("interrupted after the switch, which completed: "
                        + live.toRealPath().resolve("_metadata") + " is the repaired one") || text.contains("\n  validation: "));
            }

            // the input: unchanged for an output; in place, the old or the new checkpoint
            if (!inPlace) {
                assertArrayEquals("trial " + trial, original, Files.readAllBytes(dir.resolve("_metadata")));
                assertEquals("trial " + trial + ": nothing of the run in the input", originalFiles, names(dir));
                assertTrue("trial " + trial + ": no output without _metadata", !Files.exists(out) || switched);
            }
            if (switched) {
                newSeen++;
                checkRepaired(trial, live, inPlace ? originalFiles : Set.of(), original);
            } else {
                oldSeen++;
                assertEquals("trial " + trial + ": nothing of the run left\n" + text, originalFiles, names(dir));
            }
            assertEquals("trial " + trial, List.of(), CheckpointSurgeon.leftovers(dir));
            load(dir);
            TestFiles.deleteRecursively(dir);
            if (Files.exists(out)) TestFiles.deleteRecursively(out);
        }
        System.out.printf("SIGTERM trials: %d in %.1f s (the job %.1f s, a commit %.0f ms), old checkpoint live after %d, new after %d,"
                + " %d runs ended before the signal; signals landed in: %s%n", TRIALS, (System.nanoTime() - t0) / 1e9,
                job / 1e9, commitNanos / 1e6, oldSeen, newSeen, finished, landed);
        assertTrue("signals never landed before the switch: " + landed, oldSeen > 0);
        assertTrue("signals never landed after the switch: " + landed, newSeen > 0);
        for (String s : STEPS) {
            assertTrue("no signal landed in step " + s + ": " + landed,
                    landed.keySet().stream().anyMatch(k -> k.startsWith(s)));
        }
    }

    /**
     * The repaired checkpoint in {@code dir}: without the state, every file it references there, and
     * no other file than those, the files that were there before and (in place) one backup of the
     * old {@code _metadata}.
     */
    private static void checkRepaired(int trial, Path dir, Set<String> before, byte[] original) throws Exception {
        InspectReport r = CheckpointSurgeon.inspect(dir);
        assertTrue(r.operators().stream().flatMap(o -> o.stateTotals().stream()).noneMatch(t -> t.name().equals("union-list")));
        Set<String> expected = new TreeSet<>(before);
        expected.add("_metadata");
        for (StateFile f : Native.stateFiles(dir.resolve("_metadata"))) {
            if (f.kind() == StateFile.Kind.RELATIVE) expected.add(f.path());
        }
        Set<String> there = names(dir);
        List<String> backups = there.stream().filter(n -> n.startsWith("_metadata.backup-")).collect(Collectors.toList());
        assertEquals("trial " + trial + ": " + there, before.isEmpty() ? 0 : 1, backups.size());
        for (String b : backups) assertArrayEquals(original, Files.readAllBytes(dir.resolve(b)));
        there.removeAll(backups);
        assertEquals("trial " + trial, expected, there);
    }

    /** Flink's own loader accepts the live {@code _metadata}. */
    private static void load(Path dir) throws Exception {
        try (InputStream in = Files.newInputStream(dir.resolve("_metadata"))) {
            Checkpoints.loadCheckpointMetadata(new DataInputStream(in), SignalDuringRepairTest.class.getClassLoader(),
                    dir.toString());
        }
    }

    private static Set<String> names(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    /**
     * A retained checkpoint of a real job (4 subtasks): 20,000 split list, 50,000 union list and 20
     * broadcast entries of operator state per subtask in files, and keyed state files.
     */
    static Path bigCheckpoint(Path work) throws Exception {
        Configuration conf = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                work.resolve("savepoints").toUri().toString(), "200ms", 1);
        FlinkConf.inlineThreshold(conf, "0");
        MiniClusterJob.Result r = MiniClusterJob.of("sigterm-fixture", conf, 4, env -> {
            Shims.discard(env.fromSource(new NumberSequenceSource(0, Long.MAX_VALUE), WatermarkStrategy.noWatermarks(),
                            "numbers").uid("numbers")
                    .map(new Functions.Sleep(1)).uid("throttle")
                    .map(new Functions.OperatorStates(20_000, 50_000, 20)).uid("operator-states")
                    .keyBy(new Functions.ModKey(64)).map(new Functions.KeyedStates(20)).uid("keyed-states"), "sink");
        }).checkpointsAfterReady(1).run();
        if (r.failure() != null) throw new AssertionError(r.failureText());
        return TestFiles.localPath(r.checkpoint());
    }
}
