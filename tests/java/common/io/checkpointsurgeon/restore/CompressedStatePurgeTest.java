package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.FixtureGenerator;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.junit.Assume;
import org.junit.Test;

/**
 * Purging a state out of snappy-compressed operator state streams, in the layout of the Flink
 * version under test: 1.18 opens each state's data with its own snappy stream identifier (and
 * records one offset for all elements of a state), 1.19+ has one identifier and one frame sequence
 * per element. Flink's own State Processor API must read exactly the same split list and broadcast
 * values as before and no union state, and a job restored from the result with compression on
 * gets exactly those values and checkpoints them again.
 */
public class CompressedStatePurgeTest {
    private static final String UID = "operator-states";

    @Test
    public void purgedCompressedStreamsReadBackWithFlinkAndRestore() throws Exception {
        Path fixture = TestFiles.fixture("operator-state-compressed");
        Assume.assumeTrue("snapshot compression fixture (Flink 1.18+)", Files.isRegularFile(fixture.resolve("_metadata")));
        InspectReport before = CheckpointSurgeon.inspect(fixture);
        assertTrue(before.operators().stream().flatMap(o -> o.subtasks().stream())
                .flatMap(s -> s.operatorStateHandles().stream()).anyMatch(InspectReport.OperatorStateHandleInfo::compressed));

        Path work = Files.createTempDirectory("cs-compressed");
        Path out = work.resolve("purged");
        SurgeryPlan plan = CheckpointSurgeon.apply(fixture,
                Surgery.removeState(Surgery.OperatorSelector.uid(UID), "union-list"), out);
        assertTrue(plan.result().flinkValidation(), plan.result().flinkValidation().startsWith("loaded by Flink"));
        assertEquals(100, plan.elementsRemoved());

        List<String> expected = StateReads.listAndBroadcast(fixture.toString(), UID, "split-list", "broadcast-map");
        List<String> got = StateReads.listAndBroadcast(out.toString(), UID, "split-list", "broadcast-map");
        assertEquals(400 + 20, expected.size()); // 400 split elements, the 20 broadcast entries once
        assertEquals(expected, got);
        assertFalse(CheckpointSurgeon.inspect(out).operators().stream().flatMap(o -> o.stateTotals().stream())
                .anyMatch(t -> t.name().equals("union-list")));

        // A real restore of the purged checkpoint with compression on: the same job graph (uids),
        // the states registered as the fixture's job registers them.
        Restored.clear();
        Configuration conf = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                work.resolve("savepoints").toUri().toString(), "200", 1);
        FlinkConf.inlineThreshold(conf, "0");
        FlinkConf.set(conf, "true", "execution.checkpointing.snapshot-compression");
        FlinkConf.restoreFrom(conf, out.toUri().toString());
        FlinkConf.noRestarts(conf);
        MiniClusterJob.Result run = MiniClusterJob.of("compressed-restore", conf, 2, env ->
                io.checkpointsurgeon.fixtures.Shims.discard(FixtureGenerator.throttledSource(env, 2, "numbers")
                        .rebalance().map(new Restored()).uid(UID).name(UID), "sink"))
                .readyWhen(() -> Restored.SUBTASKS.size() == 2)
                .checkpointsAfterReady(1)
                .run();
        assertNull("restore of the purged checkpoint: " + run.failureText(), run.failure());
        List<String> restored = new ArrayList<>(Restored.LIST);
        restored.addAll(Restored.BROADCAST);
        Collections.sort(restored);
        assertEquals("what the restored job got", expected, restored);
        assertEquals("union-list after the purge", List.of(), new ArrayList<>(Restored.UNION));
        // the job's own compressed checkpoint holds the same values
        assertEquals(expected, StateReads.listAndBroadcast(run.checkpoint(), UID, "split-list", "broadcast-map"));
    }

    /** Registers the fixture job's three states and records what each subtask restored. */
    static final class Restored implements MapFunction<Long, Long>, CheckpointedFunction {
        static final Set<Integer> SUBTASKS = ConcurrentHashMap.newKeySet();
        static final List<String> LIST = new CopyOnWriteArrayList<>();
        static final Set<String> BROADCAST = ConcurrentHashMap.newKeySet();
        static final List<String> UNION = new CopyOnWriteArrayList<>();

        static void clear() {
            SUBTASKS.clear();
            LIST.clear();
            BROADCAST.clear();
            UNION.clear();
        }

        @Override
        public Long map(Long value) {
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            ListState<Long> split = context.getOperatorStateStore().getListState(
                    new ListStateDescriptor<>("split-list", Types.LONG));
            ListState<String> union = context.getOperatorStateStore().getUnionListState(
                    new ListStateDescriptor<>("union-list", Types.STRING));
            BroadcastState<String, Long> broadcast = context.getOperatorStateStore().getBroadcastState(
                    new MapStateDescriptor<>("broadcast-map", Types.STRING, Types.LONG));
            for (Long v : split.get()) {
                LIST.add("list:" + v);
            }
            for (String v : union.get()) {
                UNION.add(v);
            }
            for (Map.Entry<String, Long> e : broadcast.entries()) {
                BROADCAST.add("broadcast:" + e.getKey() + "=" + e.getValue());
            }
            SUBTASKS.add(System.identityHashCode(this));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {}
    }
}
