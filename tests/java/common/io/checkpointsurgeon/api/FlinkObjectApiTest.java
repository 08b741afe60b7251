package io.checkpointsurgeon.api;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.faults.KillDuringRepairTest;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.CompletedCheckpoint;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.util.InstantiationUtil;
import org.junit.Assume;
import org.junit.Test;

/** The Java API on Flink's own objects: CheckpointMetadata in, CheckpointMetadata out. */
public class FlinkObjectApiTest {
    static final String STALE = "topic-partition-offset-states";

    /** state name -> number of offsets, summed over every managed operator state handle */
    static Map<String, Integer> stateElements(Collection<OperatorState> ops) {
        Map<String, Integer> m = new TreeMap<>();
        for (OperatorState op : ops) {
            for (OperatorSubtaskState st : op.getStates()) {
                for (OperatorStateHandle h : st.getManagedOperatorState()) {
                    h.getStateNameToPartitionOffsets().forEach((name, info) -> m.merge(name, info.getOffsets().length, Integer::sum));
                }
            }
        }
        return m;
    }

    @Test
    public void checkpointMetadataInCheckpointMetadataOut() throws Exception {
        Path dir = TestFiles.copyToTempDir(TestFiles.fixture("stale-union"), "cs-flink-object");
        CheckpointMetadata md;
        try (InputStream in = Files.newInputStream(dir.resolve("_metadata"))) {
            md = Checkpoints.loadCheckpointMetadata(new DataInputStream(in), getClass().getClassLoader(), dir.toString());
        }
        Map<String, Integer> before = stateElements(md.getOperatorStates());
        assertTrue(before.get(STALE) > 0);
        Object out = CheckpointSurgeon.apply(md, Surgery.removeState(Surgery.OperatorSelector.uid("source_consumer"), STALE), dir);
        assertTrue(out instanceof CheckpointMetadata);
        Map<String, Integer> after = stateElements(((CheckpointMetadata) out).getOperatorStates());
        before.remove(STALE);
        assertEquals(before, after);
        assertEquals(md.getCheckpointId(), ((CheckpointMetadata) out).getCheckpointId());
    }

    @Test
    public void completedCheckpointIsRepairedInPlace() throws Exception {
        Assume.assumeTrue("builds the CompletedCheckpoint with the Flink 1.15 constructor",
                "1.15.4".equals(System.getProperty("flink.version")));
        Path file = KillDuringRepairTest.completedCheckpointOf(TestFiles.copyToTempDir(TestFiles.fixture("stale-union"),
                "cs-flink-object"));
        CompletedCheckpoint cc;
        try (InputStream in = Files.newInputStream(file)) {
            cc = InstantiationUtil.deserializeObject(in, getClass().getClassLoader());
        }
        assertTrue(stateElements(cc.getOperatorStates().values()).containsKey(STALE));
        SurgeryPlan plan = CheckpointSurgeon.applyToCompletedCheckpoint(cc,
                Surgery.removeState(Surgery.OperatorSelector.all(), STALE));
        assertTrue(plan.elementsRemoved() > 0);
        assertFalse(stateElements(cc.getOperatorStates().values()).containsKey(STALE));
        assertTrue(stateElements(cc.getOperatorStates().values()).containsKey("position"));
    }
}
