package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import org.junit.Assume;
import org.junit.Test;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * Every {@code <fixtures.dir>/<fixture>/_metadata} that real Flink wrote: Flink's loader read
 * through FlinkDescriber must equal the native description, and the native round trip must return
 * the same bytes. Skipped when the directory has no fixtures; fails when {@code fixtures.dir} is
 * unset or missing, so a misconfigured build cannot pass silently.
 */
public class FixtureAgreementTest {

    @Test
    public void nativeCodecAgreesWithFlinkOnFixtures() throws Exception {
        File dir = TestSupport.fixturesDir();
        assertTrue("system property fixtures.dir is not set", dir != null);
        assertTrue("fixtures.dir " + dir + " does not exist", dir.isDirectory());
        List<File> fixtures = TestSupport.fixtureMetadataFiles(dir);
        Assume.assumeFalse("no fixtures in " + dir, fixtures.isEmpty());

        List<String> failures = new ArrayList<>();
        for (File metadata : fixtures) {
            String fixture = metadata.getParentFile().getName();
            byte[] bytes = Files.readAllBytes(metadata.toPath());
            // The fixture directory is the pointer: relative handles resolve next to _metadata.
            String expected = FlinkDescriber.describe(
                    FlinkDescriber.load(bytes, metadata.getParentFile().getAbsolutePath()));
            try {
                String actual = CheckpointSurgeon.describe(bytes);
                if (!expected.equals(actual)) {
                    failures.add(fixture + ": descriptions differ at "
                            + TestSupport.firstDifference(expected, actual));
                    continue;
                }
                byte[] rewritten = CheckpointSurgeon.roundTrip(bytes);
                if (!Arrays.equals(rewritten, bytes)) {
                    failures.add(fixture + ": round trip is not byte-identical: first difference at byte "
                            + TestSupport.firstDifferingByte(bytes, rewritten));
                }
            } catch (Exception e) {
                failures.add(fixture + ": native call threw " + e);
            }
        }
        System.err.printf("FixtureAgreementTest: %d fixtures in %s, %d failed%n",
                fixtures.size(), dir, failures.size());
        if (!failures.isEmpty()) {
            fail(String.join("\n\n", failures));
        }
    }
}
