package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.testing.CliProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.Test;

/**
 * rename-operator on a savepoint of a job with a FLIP-27 source (FLINK-40837): job A (uids a-...)
 * is stopped with a savepoint mid-stream; the operators get the uids b-... with {@code
 * rename-operator --map}; job B (uids b-...) restores from the result <b>without</b>
 * allowNonRestoredState and runs to its end. The source resumes from its enumerator and reader
 * state: every number of the sequence is processed exactly once over A and B, and the keyed running
 * sums end exact. On Flink 1.17+ the State Processor API's {@code changeOperatorIdentifier} on the
 * same savepoint drops the coordinator state, and the test shows job B then processes numbers twice.
 * A job that never set uids is mapped by the ids {@code inspect} reports.
 */
public class RenameOperatorRestoreTest {
    @Test
    public void renamedOperatorsKeepTheirSourceAndKeyedState() throws Exception {
        Path work = Files.createTempDirectory("cs-rename-restore");
        Path savepoint = NumbersJob.stopMidStream(work, "A", "a");
        Map<String, String> uids = new LinkedHashMap<>();
        for (String op : new String[] {"source", "throttle", "sum", "sink"}) {
            uids.put("a-" + op, "b-" + op);
        }
        Path map = work.resolve("uids.map");
        StringBuilder lines = new StringBuilder("# old uid -> new uid\n");
        uids.forEach((a, b) -> lines.append(a).append(' ').append(b).append('\n'));
        Files.writeString(map, lines.toString());

        Path renamed = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-operator", savepoint.toString(), "--map", map.toString(),
                "--apply", "--output", renamed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertTrue(r.output, r.output.contains("loaded by Flink"));
        // the coordinator (enumerator) state moved with the source
        InspectReport before = CheckpointSurgeon.inspect(savepoint);
        InspectReport after = CheckpointSurgeon.inspect(renamed);
        assertEquals(NumbersJob.coordinatorBytes(before), NumbersJob.coordinatorBytes(after));
        assertTrue(NumbersJob.coordinatorBytes(after) > 0);

        NumbersJob.runToEnd(work, "B", "b", renamed);
        NumbersJob.Outcome ours = NumbersJob.outcome("A", "B");
        assertEquals(ours.toString(), 0, ours.twice);
        assertEquals(ours.toString(), 0, ours.missing);
        assertEquals(ours.toString(), NumbersJob.expectedSums(), ours.finalSums);

        // The State Processor API's route on the same savepoint (Flink 1.17+): FLINK-40837.
        Path spa = work.resolve("spa");
        if (ReaderShims.changeOperatorIdentifiers(savepoint.toString(), uids, spa.toString())) {
            NumbersJob.runToEnd(work, "B-spa", "b", spa);
            NumbersJob.Outcome theirs = NumbersJob.outcome("A", "B-spa");
            System.out.println("FLINK-40837 on Flink " + System.getProperty("flink.version") + ": after A processed "
                    + NumbersJob.SEEN.get("A").size() + " of " + NumbersJob.N + " numbers, job B processed each remaining number once after "
                    + "rename-operator (" + ours + "), and after changeOperatorIdentifier " + theirs);
            assertTrue("changeOperatorIdentifier drops the enumerator state, so numbers come twice: " + theirs,
                    theirs.twice > 0);
        }
    }

    @Test
    public void aJobWithoutUidsIsMappedByTheIdsInspectReports() throws Exception {
        Path work = Files.createTempDirectory("cs-rename-nouid");
        Path savepoint = NumbersJob.stopMidStream(work, "A0", null);
        // the generated ids: the source is the operator with coordinator state, the keyed
        // function the one with keyed state (the stateless ones need no mapping)
        InspectReport report = CheckpointSurgeon.inspect(savepoint);
        StringBuilder lines = new StringBuilder();
        for (InspectReport.OperatorInfo op : report.operators()) {
            if (op.coordinatorStateBytes() > 0) {
                lines.append(op.id()).append(" b-source\n");
            } else if (op.keyedStateBytes() > 0) {
                lines.append(op.id()).append(" b-sum\n");
            }
        }
        assertEquals(lines.toString(), 2, lines.toString().split("\n").length);
        Path map = work.resolve("ids.map");
        Files.writeString(map, lines.toString());
        Path renamed = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-operator", savepoint.toString(), "--map", map.toString(),
                "--apply", "--output", renamed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);

        NumbersJob.runToEnd(work, "B0", "b", renamed);
        NumbersJob.Outcome o = NumbersJob.outcome("A0", "B0");
        assertEquals(o.toString(), 0, o.twice);
        assertEquals(o.toString(), 0, o.missing);
        assertEquals(o.toString(), NumbersJob.expectedSums(), o.finalSums);
    }

    /**
     * Flink 2.x metadata (V5+) stores each operator's name: {@code --to-name} alone gives the keyed
     * function a new name and keeps its id and uid; the plan shows the change, Flink's loader and
     * a restore of the job accept the result, and every number is summed exactly once.
     */
    @Test
    public void aNewNameAloneKeepsTheIdAndUidAndTheJobRestores() throws Exception {
        Path work = Files.createTempDirectory("cs-rename-name");
        Path savepoint = NumbersJob.stopMidStream(work, "N", "n");
        InspectReport before = CheckpointSurgeon.inspect(savepoint);
        org.junit.Assume.assumeTrue("metadata V5+ (Flink 2.x) stores operator names", before.metadataVersion() >= 5);
        InspectReport.OperatorInfo sum = before.operators().stream().filter(o -> o.uid().equals("n-sum")).findFirst()
                .orElseThrow();
        Path renamed = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-operator", savepoint.toString(), "--uid", "n-sum",
                "--to-name", "running sums (v2)", "--apply", "--output", renamed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        // the plan's one change: the name (no id, no uid)
        assertTrue(r.output, java.util.Arrays.asList(r.output.split("\n"))
                .contains("    name '" + sum.name() + "' -> 'running sums (v2)'"));
        assertTrue(r.output, r.output.contains("loaded by Flink"));
        InspectReport.OperatorInfo after = CheckpointSurgeon.inspect(renamed).operators().stream()
                .filter(o -> o.id().equals(sum.id())).findFirst().orElseThrow();
        assertEquals("n-sum", after.uid());
        assertEquals("running sums (v2)", after.name());

        NumbersJob.runToEnd(work, "N2", "n", renamed);
        NumbersJob.Outcome o = NumbersJob.outcome("N", "N2");
        assertEquals(o.toString(), 0, o.twice);
        assertEquals(o.toString(), 0, o.missing);
        assertEquals(o.toString(), NumbersJob.expectedSums(), o.finalSums);
    }
}
