package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;

import java.util.Locale;
import java.util.SplittableRandom;
import org.junit.Test;

/** The sizes and counts inspect prints by hand are exactly what String.format printed before. */
public class FormatBytesTest {
    private static String formatted(long n) {
        if (n < 1024) return n + " B";
        if (n < 1024 * 1024) return String.format(Locale.ROOT, "%,d B (%.1f KiB)", n, n / 1024.0);
        return String.format(Locale.ROOT, "%,d B (%.1f MiB)", n, n / (1024.0 * 1024));
    }

    private static void check(long n) {
        assertEquals("bytes " + n, formatted(n), InspectReport.formatBytes(n));
        assertEquals("grouped " + n, String.format(Locale.ROOT, "%,d", n), InspectReport.grouped(n));
    }

    @Test
    public void edgesAndRoundingMatchStringFormat() {
        long[] edges = {0, 1, 999, 1000, 1023, 1024, 1025, 1075, 1076, 1126, 10239, 10240, 102399, 1048063, 1048064,
                1048575, 1048576, 1048577, 1101004, 1101005, 67_111_254L, 201_332_038L, 1L << 40, (1L << 50) - 1, 1L << 50, (1L << 50) + 7,
                Long.MAX_VALUE / 10, Long.MAX_VALUE / 10 + 1, Long.MAX_VALUE, -1, -1024, -1234567, Long.MIN_VALUE};
        for (long n : edges) check(n);
        // around each tenth of a KiB and of a MiB, where half-up rounding turns
        for (long unit : new long[] {1024, 1024 * 1024}) {
            for (long t = 10; t < 20_000; t += 7) {
                long boundary = (t * 2 + 1) * unit / 20;
                for (long d = -2; d <= 2; d++) check(boundary + d);
            }
        }
        // below 2^50, where the sizes are computed by hand: every bit length
        SplittableRandom random = new SplittableRandom(31);
        for (int i = 0; i < 40_000; i++) check(random.nextLong(1L << (1 + random.nextInt(50))));
        for (int i = 0; i < 40_000; i++) check(random.nextLong(1L << (1 + random.nextInt(62))));
    }
}
