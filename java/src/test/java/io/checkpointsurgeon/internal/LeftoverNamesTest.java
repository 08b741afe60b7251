package io.checkpointsurgeon.internal;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.SplittableRandom;
import java.util.UUID;
import java.util.regex.Pattern;
import org.junit.Test;

/** The leftover names checked by hand are exactly the names the regexes they replace matched. */
public class LeftoverNamesTest {
    private static final Pattern STAGED_METADATA = Pattern.compile("_metadata\\.tmp-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}");
    private static final Pattern STAGED_STATE_FILE =
            Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-8c5[0-9a-f]-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
    private static final String ALPHABET = "0123456789abcdefABCDEF-._xg8c5\u00e9";

    private static void check(String name) {
        assertEquals(name, STAGED_METADATA.matcher(name).matches(), Leftovers.stagedMetadata(name));
        assertEquals(name, STAGED_STATE_FILE.matcher(name).matches(), Leftovers.stagedStateFile(name));
    }

    @Test
    public void handWrittenChecksMatchTheRegexes() {
        SplittableRandom random = new SplittableRandom(26);
        int matched = 0;
        for (int i = 0; i < 20_000; i++) {
            String uuid = UUID.randomUUID().toString();
            // the native stage's state file names: version nibble 8, then c5 (see native/src/commit/mod.rs)
            String ours = uuid.substring(0, 14) + "8c5" + uuid.substring(17, 19) + "89ab".charAt(random.nextInt(4))
                    + uuid.substring(20);
            for (String base : new String[] {uuid, ours, "_metadata.tmp-" + uuid, "_metadata.tmp-" + ours}) {
                check(base);
                matched += Leftovers.stagedMetadata(base) || Leftovers.stagedStateFile(base) ? 1 : 0;
                // one character changed, dropped or added, anywhere
                StringBuilder b = new StringBuilder(base);
                int at = random.nextInt(b.length());
                switch (random.nextInt(3)) {
                    case 0: b.setCharAt(at, ALPHABET.charAt(random.nextInt(ALPHABET.length()))); break;
                    case 1: b.deleteCharAt(at); break;
                    default: b.insert(at, ALPHABET.charAt(random.nextInt(ALPHABET.length())));
                }
                check(b.toString());
            }
        }
        for (String s : new String[] {"", "_metadata", "_metadata.tmp-", "_metadata.backup-x"}) check(s);
        assertTrue("valid names were generated: " + matched, matched >= 40_000);
    }
}
