package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.junit.Test;

import java.util.Arrays;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * Checks the test instruments themselves, with Flink alone (no native library): every generated
 * {@link CheckpointMetadata} survives Flink's own store/load with an unchanged description, the
 * generator is deterministic per seed, and it produces every handle kind this Flink line can
 * write. A failure here is a bug in RandomMetadata or FlinkDescriber, not in the Rust codec.
 */
public class GeneratorSelfCheckTest {

    private static final int CASES = Integer.getInteger("generator.cases", 2000);

    @Test
    public void flinkStoreAndLoadKeepTheDescription() throws Exception {
        String pointer = TestSupport.pointerDir();
        Set<String> seen = new TreeSet<>();
        for (long seed = 0; seed < CASES; seed++) {
            CheckpointMetadata generated = RandomMetadata.generate(seed);
            String expected = FlinkDescriber.describe(generated);
            byte[] bytes = RandomMetadata.store(generated);
            String reloaded = FlinkDescriber.describe(FlinkDescriber.load(bytes, pointer));
            if (!expected.equals(reloaded)) {
                fail("seed " + seed + ": Flink's store/load changed the description at "
                        + TestSupport.firstDifference(expected, reloaded));
            }
            seen.addAll(TestSupport.kinds(expected));
        }
        Set<String> missing = TestSupport.expectedKinds();
        missing.removeAll(seen);
        assertTrue("Flink " + FlinkCompat.FLINK_LINE + ": the generator never produced " + missing
                + " in " + CASES + " seeds (seen: " + seen + ")", missing.isEmpty());
    }

    @Test
    public void sameSeedSameBytes() throws Exception {
        for (long seed = 0; seed < 200; seed++) {
            byte[] a = RandomMetadata.store(RandomMetadata.generate(seed));
            byte[] b = RandomMetadata.store(RandomMetadata.generate(seed));
            if (!Arrays.equals(a, b)) {
                fail("seed " + seed + ": two generations differ at byte "
                        + TestSupport.firstDifferingByte(a, b));
            }
        }
    }

    @Test
    public void writesTheDefaultMetadataVersion() throws Exception {
        int expected;
        switch (FlinkCompat.FLINK_LINE) {
            case "1.15":
                expected = 3;
                break;
            case "1.16":
            case "1.17":
            case "1.18":
            case "1.19":
            case "1.20":
                expected = 4;
                break;
            case "2.0":
                expected = 5;
                break;
            default:
                expected = 6;
        }
        byte[] bytes = RandomMetadata.store(RandomMetadata.generate(1));
        int version = ((bytes[4] & 0xff) << 24) | ((bytes[5] & 0xff) << 16)
                | ((bytes[6] & 0xff) << 8) | (bytes[7] & 0xff);
        assertEquals(expected, version);
    }
}
