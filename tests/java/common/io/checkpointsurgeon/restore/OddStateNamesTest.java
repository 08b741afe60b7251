package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.Functions.OddStateNames;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.Test;

/**
 * State names and a uid with a tab, a newline and non-ASCII characters, as Flink allows them
 * (fixture {@code odd-state-names}): the CLI (arguments passed to a new JVM as they are) and the
 * library remove them by name, Flink's loader accepts the result, and Flink's State Processor API
 * reads the two states left exactly as before.
 */
public class OddStateNamesTest {
    @Test
    public void statesNamedWithTabsAndNewlinesAreRemovedAndTheRestReadsTheSame() throws Exception {
        Path fixture = TestFiles.fixture("odd-state-names");
        Path copy = TestFiles.copyToTempDir(fixture, "cs-odd");

        // the CLI, in its own JVM with Flink on the class path: the tab travels in argv
        CliProcess.Result r = CliProcess.withFlink("remove-state", copy.toString(), "--uid", OddStateNames.UID,
                "--state", OddStateNames.TAB_UNION, "--apply", "--in-place").run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertTrue(r.output, r.output.contains("loaded by Flink"));

        // the library: the newline
        Path out = Files.createTempDirectory("cs-odd-out").resolve("out");
        SurgeryPlan plan = CheckpointSurgeon.apply(copy,
                Surgery.removeState(Surgery.OperatorSelector.uid(OddStateNames.UID), OddStateNames.NEWLINE_SPLIT), out);
        assertEquals(plan.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, plan.result().validation().status());
        assertEquals(100 + 1, plan.elementsRemoved());

        List<String> names = CheckpointSurgeon.inspect(out).operators().stream()
                .filter(o -> OddStateNames.UID.equals(o.uid()) || o.stateTotals().stream()
                        .anyMatch(t -> t.name().equals(OddStateNames.PLAIN_SPLIT)))
                .flatMap(o -> o.stateTotals().stream()).map(InspectReport.StateTotal::name).sorted()
                .collect(Collectors.toList());
        assertEquals(List.of(OddStateNames.NON_ASCII_UNION, OddStateNames.PLAIN_SPLIT), names);

        List<String> expected = StateReads.splitAndUnion(fixture.toString(), OddStateNames.UID,
                OddStateNames.PLAIN_SPLIT, OddStateNames.NON_ASCII_UNION);
        List<String> got = StateReads.splitAndUnion(out.toString(), OddStateNames.UID,
                OddStateNames.PLAIN_SPLIT, OddStateNames.NON_ASCII_UNION);
        assertTrue(expected.toString(), expected.contains("union:Wert-ä✓-1-0"));
        assertEquals(expected, got);
    }
}
