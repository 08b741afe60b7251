package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.junit.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;

import static org.junit.Assert.fail;

/**
 * Random metadata written by Flink itself: the native description must equal FlinkDescriber's
 * description of what Flink reads back, and the native round trip must return the same bytes.
 *
 * <p>Every fourth seed is written with one of the older metadata versions this Flink can still
 * write (1.20: V3; 2.0: V3, V4; 2.1+: V3, V4, V5), so V5, which only 2.0 writes by default, is covered
 * too; seeds whose handles the older version cannot express fall back to the default version.
 *
 * <p>System properties: {@code differential.cases} (default 10000), {@code differential.seed}
 * (first seed, default 0). A failure names each failing seed; rerun one with
 * {@code -Ddifferential.seed=S -Ddifferential.cases=1}.
 */
public class DifferentialTest {

    private static final int CASES = Integer.getInteger("differential.cases", 10000);
    private static final long FIRST_SEED = Long.getLong("differential.seed", 0L);
    /** Failures reported in full; the rest are only counted. */
    private static final int REPORTED = 5;

    @Test
    public void nativeCodecAgreesWithFlink() throws Exception {
        String pointer = TestSupport.pointerDir();
        List<String> failures = new ArrayList<>();
        int failed = 0;
        TreeMap<Integer, Integer> versions = new TreeMap<>();
        long start = System.nanoTime();
        for (long seed = FIRST_SEED; seed < FIRST_SEED + CASES; seed++) {
            CheckpointMetadata generated = RandomMetadata.generate(seed);
            byte[] bytes = null;
            int[] older = FlinkCompat.OLDER_WRITABLE_VERSIONS;
            if (seed % 4 == 3 && older.length > 0) {
                try {
                    bytes = RandomMetadata.store(generated, older[(int) ((seed / 4) % older.length)]);
                } catch (IllegalStateException e) {
                    // e.g. merged channel handles, which only V6+ can write
                }
            }
            if (bytes == null) {
                bytes = RandomMetadata.store(generated);
            }
            versions.merge((int) bytes[7], 1, Integer::sum);
            String problem = check(seed, bytes, pointer);
            if (problem != null) {
                failed++;
                if (failures.size() < REPORTED) {
                    failures.add(problem);
                }
            }
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        System.err.printf("DifferentialTest: Flink %s, %d seeds from %d (metadata version=count %s), "
                        + "%d failed, %d ms%n",
                FlinkCompat.FLINK_LINE, CASES, FIRST_SEED, versions, failed, millis);
        if (failed > 0) {
            fail(failed + " of " + CASES + " seeds failed (Flink " + FlinkCompat.FLINK_LINE
                    + "); first ones:\n\n" + String.join("\n\n", failures));
        }
    }

    /** Null when the seed passes, else a report naming the seed. */
    private static String check(long seedNumber, byte[] bytes, String pointer) throws Exception {
        String seed = seedNumber + " (metadata V" + bytes[7] + ")";
        String expected = FlinkDescriber.describe(FlinkDescriber.load(bytes, pointer));
        String actual;
        try {
            actual = CheckpointSurgeon.describe(bytes);
        } catch (CheckpointSurgeonException e) {
            return "seed " + seed + ": native describe threw " + e;
        }
        if (!expected.equals(actual)) {
            return "seed " + seed + ": descriptions differ at "
                    + TestSupport.firstDifference(expected, actual);
        }
        byte[] rewritten;
        try {
            rewritten = CheckpointSurgeon.roundTrip(bytes);
        } catch (CheckpointSurgeonException e) {
            return "seed " + seed + ": native roundTrip threw " + e;
        }
        if (!Arrays.equals(rewritten, bytes)) {
            return "seed " + seed + ": round trip is not byte-identical: first difference at byte "
                    + TestSupport.firstDifferingByte(bytes, rewritten) + " (input " + bytes.length
                    + " bytes, output " + rewritten.length + ")";
        }
        return null;
    }
}
