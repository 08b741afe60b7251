package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.Assume;
import org.junit.Test;

/**
 * Purging a state out of snappy-compressed operator state streams (Flink 1.19+ layout: one stream
 * identifier, one frame sequence per element): Flink's own State Processor API, which decompresses
 * with Flink's code, must read exactly the same split list and broadcast values as before, and no
 * union state.
 */
public class CompressedStatePurgeTest {
    @Test
    public void purgedCompressedStreamsReadBackWithFlink() throws Exception {
        Path fixture = TestFiles.fixture("operator-state-compressed");
        Assume.assumeTrue("snapshot compression fixture (Flink 1.19+)", Files.isRegularFile(fixture.resolve("_metadata")));
        InspectReport before = CheckpointSurgeon.inspect(fixture);
        assertTrue(before.operators().stream().flatMap(o -> o.subtasks().stream())
                .flatMap(s -> s.operatorStateHandles().stream()).anyMatch(InspectReport.OperatorStateHandleInfo::compressed));

        Path out = Files.createTempDirectory("cs-compressed").resolve("purged");
        SurgeryPlan plan = CheckpointSurgeon.apply(fixture,
                Surgery.removeState(Surgery.OperatorSelector.uid("operator-states"), "union-list"), out);
        assertTrue(plan.result().flinkValidation(), plan.result().flinkValidation().startsWith("loaded by Flink"));
        assertEquals(100, plan.elementsRemoved());

        List<String> expected = StateReads.listAndBroadcast(fixture.toString(), "operator-states", "split-list", "broadcast-map");
        List<String> got = StateReads.listAndBroadcast(out.toString(), "operator-states", "split-list", "broadcast-map");
        assertEquals(400 + 20, expected.size()); // 400 split elements, the 20 broadcast entries once
        assertEquals(expected, got);
        assertFalse(CheckpointSurgeon.inspect(out).operators().stream().flatMap(o -> o.stateTotals().stream())
                .anyMatch(t -> t.name().equals("union-list")));
    }
}
