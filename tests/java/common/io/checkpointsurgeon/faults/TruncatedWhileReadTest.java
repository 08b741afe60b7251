package io.checkpointsurgeon.faults;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.DataInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.junit.Assume;
import org.junit.Test;

/**
 * A running job deletes or rewrites old checkpoints while the tool reads them: a big
 * {@code _metadata} truncated by this (other) process at a random moment of {@code inspect}
 * never crashes the JVM (no exit code of 134 or more, no hs_err file); the tool answers with its
 * result or a clear error.
 */
public class TruncatedWhileReadTest {
    @Test
    public void truncatingTheInputDuringInspectNeverCrashesTheJvm() throws Exception {
        Assume.assumeTrue("runs on 1.20.3 only", "1.20.3".equals(System.getProperty("flink.version")));
        Path big = bigMetadata(48 << 20);
        Random rnd = new Random(3);
        int trials = Integer.getInteger("truncate.trials", 50), ok = 0, refused = 0, duringRead = 0;
        // one run without a cut: the cuts then land anywhere from before the read to after the end
        long t = System.nanoTime();
        CliProcess.Result whole = CliProcess.jar("inspect", big.toString()).run();
        assertEquals(whole.output.substring(Math.max(0, whole.output.length() - 2000)), 0, whole.exitCode);
        long maxMillis = (System.nanoTime() - t) / 1_000_000 * 3 / 2;
        for (int trial = 0; trial < trials; trial++) {
            Path dir = Files.createTempDirectory("cs-truncate");
            Path md = dir.resolve("_metadata");
            Files.copy(big, md);
            Process p = CliProcess.jar("inspect", dir.toString()).processBuilder().directory(dir.toFile())
                    .redirectOutput(dir.resolve("out.txt").toFile()).start();
            Thread.sleep((long) (rnd.nextDouble() * maxMillis));
            try (FileChannel ch = FileChannel.open(md, StandardOpenOption.WRITE)) {
                ch.truncate((long) (rnd.nextDouble() * Files.size(md)));
            }
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            int code = p.exitValue();
            assertTrue("trial " + trial + ": exit " + code, code < 134);
            assertTrue("trial " + trial + ": exit " + code, code == 0 || code == 2);
            if (code == 0) {
                ok++;
            } else {
                refused++;
                if (Files.readString(dir.resolve("out.txt")).contains("shrank while it was read")) duringRead++;
            }
            try (Stream<Path> s = Files.list(dir)) {
                List<Path> crashes = s.filter(f -> f.getFileName().toString().startsWith("hs_err"))
                        .collect(Collectors.toList());
                assertEquals("trial " + trial + ": no JVM crash file", List.of(), crashes);
            }
        }
        System.out.printf("truncated during inspect: %d trials, read whole before the cut %d, refused with exit 2 %d"
                + " (%d of them cut while the mapped file was being read), JVM crashes 0%n", trials, ok, refused,
                duringRead);
    }

    /** An OperatorState with a fresh id (2.x adds name and uid in front: left null). */
    static OperatorState newOperatorState(int parallelism, int maxParallelism) throws Exception {
        for (java.lang.reflect.Constructor<?> c : OperatorState.class.getConstructors()) {
            Class<?>[] t = c.getParameterTypes();
            if (t.length == 3) return (OperatorState) c.newInstance(new OperatorID(), parallelism, maxParallelism);
            if (t.length == 5 && t[0] == String.class) {
                return (OperatorState) c.newInstance(null, null, new OperatorID(), parallelism, maxParallelism);
            }
        }
        throw new IllegalStateException("no known OperatorState constructor");
    }

    /** A _metadata of at least {@code bytes}, written by Flink: an inline-state fixture's operators, many times. */
    static Path bigMetadata(long bytes) throws Exception {
        Path fixture = TestFiles.fixture("operator-state-inline");
        CheckpointMetadata md;
        try (InputStream in = Files.newInputStream(fixture.resolve("_metadata"))) {
            md = Checkpoints.loadCheckpointMetadata(new DataInputStream(in), TruncatedWhileReadTest.class.getClassLoader(),
                    fixture.toString());
        }
        long perCopy = Files.size(fixture.resolve("_metadata"));
        int copies = (int) (bytes / perCopy) + 1;
        List<OperatorState> ops = new ArrayList<>();
        for (int i = 0; i < copies; i++) {
            for (OperatorState op : md.getOperatorStates()) {
                OperatorState copy = newOperatorState(op.getParallelism(), op.getMaxParallelism());
                for (java.util.Map.Entry<Integer, OperatorSubtaskState> e : op.getSubtaskStates().entrySet()) {
                    copy.putState(e.getKey(), e.getValue());
                }
                ops.add(copy);
            }
        }
        Path out = Files.createTempFile("cs-big", "_metadata");
        try (OutputStream o = Files.newOutputStream(out)) {
            Checkpoints.storeCheckpointMetadata(new CheckpointMetadata(md.getCheckpointId(), ops, md.getMasterStates()), o);
        }
        return out;
    }
}
