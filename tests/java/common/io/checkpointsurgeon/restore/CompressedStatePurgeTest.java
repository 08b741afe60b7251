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
import io.checkpointsurgeon.fixtures.Functions;
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
 * per element. Flink's own State Processor API must read exactly the split list and broadcast values
 * the fixture's job wrote, before and after, and no union state; a job restored from the result
 * with compression on gets exactly those values and checkpoints them again. (Flink 1.18.1 cannot
 * read its own layout back when a stream holds several states: see the test.)
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

        // Flink 1.18.1 reads such a stream state by state in the order of the handle's name map, and
        // each state's snappy stream must start where the previous one ended (FLINK-34063): with
        // more than one state per stream it cannot restore, or read with its State Processor API,
        // even the checkpoint it wrote itself. So on 1.18 the broadcast state goes too, and the
        // stream keeps one state, which 1.18 restores.
        boolean layout118 = System.getProperty("flink.version", "").startsWith("1.18.");
        Path work = Files.createTempDirectory("cs-compressed");
        Path out = work.resolve("purged");
        SurgeryPlan plan = CheckpointSurgeon.apply(fixture,
                Surgery.removeState(Surgery.OperatorSelector.uid(UID), "union-list"), out);
        assertEquals(plan.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, plan.result().validation().status());
        assertEquals(100, plan.elementsRemoved());
        if (layout118) {
            Path once = out;
            out = work.resolve("purged-twice");
            plan = CheckpointSurgeon.apply(once,
                    Surgery.removeState(Surgery.OperatorSelector.uid(UID), "broadcast-map"), out);
            assertEquals(plan.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, plan.result().validation().status());
            assertEquals(2, plan.elementsRemoved()); // the broadcast state counts as one element per subtask
        }

        // what the generator's job wrote (Functions.OperatorStates(200, 50, 20), 2 subtasks): 400 split
        // elements, the 20 broadcast entries (read once)
        List<String> expected = new ArrayList<>();
        for (int subtask = 0; subtask < 2; subtask++) {
            for (int i = 0; i < 200; i++) {
                expected.add("list:" + (subtask * 1_000_000L + i));
            }
        }
        List<String> broadcast = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            broadcast.add("broadcast:key-" + i + "=" + i);
        }
        List<String> all = new ArrayList<>(expected);
        all.addAll(broadcast);
        Collections.sort(all);
        if (!layout118) {
            assertEquals(all, StateReads.listAndBroadcast(fixture.toString(), UID, "split-list", "broadcast-map"));
            assertEquals(all, StateReads.listAndBroadcast(out.toString(), UID, "split-list", "broadcast-map"));
            expected = all;
        }
        Collections.sort(expected);
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
        if (!layout118) {
            assertEquals(expected, StateReads.listAndBroadcast(run.checkpoint(), UID, "split-list", "broadcast-map"));
        } else {
            assertEquals(400, CheckpointSurgeon.inspect(TestFiles.localPath(run.checkpoint())).operators().stream()
                    .flatMap(o -> o.stateTotals().stream()).filter(t -> t.name().equals("split-list"))
                    .mapToLong(InspectReport.StateTotal::elements).sum());
        }
    }

    /**
     * De-duplicating the stale union in Flink 1.18's compressed layout, where every element of a
     * state has the same offset: the fixture's 4 offsets, of the legacy Kafka consumer's type
     * (Tuple2 of KafkaTopicPartition, Kryo, and Long), were restored twice at parallelism 3 (12
     * elements per subtask, 36 in all). A real 1.18 restore with compression on, of the fixture and
     * of the result, and Flink 1.18's State Processor API judge it: each subtask gets the 36
     * elements from the fixture and exactly one copy of each of the 4 values from the result, the
     * State Processor API reads 36 and those 4, and the split list state "position" is the same
     * from both.
     */
    @Test
    public void dedupedUnionInThe118LayoutRestoresOneCopyOfEachValue() throws Exception {
        Path fixture = TestFiles.fixture("stale-union-compressed");
        Assume.assumeTrue("stale union in Flink 1.18's compressed layout", Files.isRegularFile(fixture.resolve("_metadata")));
        StaleConsumer.POSITION_BY_RUN.clear();
        Path work = Files.createTempDirectory("cs-compressed-dedupe");
        Path out = work.resolve("deduped");
        SurgeryPlan plan = CheckpointSurgeon.apply(fixture,
                Surgery.dedupeUnion(Surgery.OperatorSelector.uid("source_consumer"), Functions.OFFSETS_STATE), out);
        assertEquals(plan.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, plan.result().validation().status());
        assertEquals(32, plan.elementsRemoved());

        // Flink's State Processor API reads the union state once for the operator: the fixture's
        // 36 elements, the result's 4 distinct ones; the split list state "position" alike.
        List<String> readFixture = StateReads.splitAndUnion(fixture.toString(), "source_consumer", "position",
                Functions.OFFSETS_STATE, Functions.kafkaOffsetType());
        List<String> readResult = StateReads.splitAndUnion(out.toString(), "source_consumer", "position",
                Functions.OFFSETS_STATE, Functions.kafkaOffsetType());
        List<String> unionFixture = withPrefix(readFixture, "union:");
        List<String> unionResult = withPrefix(readResult, "union:");
        assertEquals(readFixture.toString(), 36, unionFixture.size());
        assertEquals("the union state the State Processor API reads from the de-duplicated checkpoint",
                new ArrayList<>(new java.util.TreeSet<>(unionFixture)), unionResult);
        assertEquals(unionResult.toString(), 4, unionResult.size());
        assertEquals("the split list state 'position' read by the State Processor API",
                withPrefix(readFixture, "split:"), withPrefix(readResult, "split:"));
        assertFalse(withPrefix(readFixture, "split:").isEmpty());

        List<List<String>> fromFixture = restoreConsumer(work.resolve("fixture-run"), fixture);
        List<List<String>> fromResult = restoreConsumer(work.resolve("result-run"), out);
        assertEquals(3, fromFixture.size());
        for (int i = 0; i < 3; i++) {
            List<String> all = fromFixture.get(i);
            assertEquals("subtask of the fixture's restore: " + all, 36, all.size());
            List<String> distinct = new ArrayList<>(new java.util.TreeSet<>(all));
            assertEquals(4, distinct.size());
            List<String> got = new ArrayList<>(fromResult.get(i));
            Collections.sort(got);
            assertEquals("a subtask restored from the de-duplicated checkpoint", distinct, got);
        }
        assertEquals("the split list state 'position'", new java.util.TreeSet<>(StaleConsumer.POSITION_BY_RUN.get(0)),
                new java.util.TreeSet<>(StaleConsumer.POSITION_BY_RUN.get(1)));
    }

    private static List<String> withPrefix(List<String> sortedLines, String prefix) {
        List<String> out = new ArrayList<>();
        for (String line : sortedLines) {
            if (line.startsWith(prefix)) {
                out.add(line);
            }
        }
        return out;
    }

    /** Restores the stale-union job (v2's graph, v1's union state registered) and returns what each subtask's union state held. */
    private static List<List<String>> restoreConsumer(Path work, Path checkpoint) throws Exception {
        StaleConsumer.UNION.clear();
        StaleConsumer.POSITION.clear();
        Configuration conf = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                work.resolve("savepoints").toUri().toString(), "200", 1);
        FlinkConf.set(conf, "true", "execution.checkpointing.snapshot-compression");
        FlinkConf.restoreFrom(conf, checkpoint.toUri().toString());
        FlinkConf.noRestarts(conf);
        MiniClusterJob.Result run = MiniClusterJob.of("compressed-dedupe-restore", conf, 3, env ->
                io.checkpointsurgeon.fixtures.Shims.discard(FixtureGenerator.throttledSource(env, 2, "numbers")
                        .rebalance().map(new StaleConsumer()).uid("source_consumer").name("source_consumer").setParallelism(3), "sink"))
                .readyWhen(() -> StaleConsumer.UNION.size() == 3)
                .checkpointsAfterReady(1)
                .run();
        assertNull("restore of " + checkpoint + ": " + run.failureText(), run.failure());
        StaleConsumer.POSITION_BY_RUN.add(new ArrayList<>(StaleConsumer.POSITION));
        return new ArrayList<>(StaleConsumer.UNION.values());
    }

    /** The consumer with the legacy union state registered: records what each subtask restored. */
    static final class StaleConsumer implements MapFunction<Long, Long>, CheckpointedFunction {
        static final Map<Integer, List<String>> UNION = new ConcurrentHashMap<>();
        static final List<Long> POSITION = new CopyOnWriteArrayList<>();
        static final List<List<Long>> POSITION_BY_RUN = new CopyOnWriteArrayList<>();

        @Override
        public Long map(Long value) {
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            ListState<org.apache.flink.api.java.tuple.Tuple2<Object, Long>> offsets = context.getOperatorStateStore()
                    .getUnionListState(new ListStateDescriptor<>(Functions.OFFSETS_STATE, Functions.kafkaOffsetType()));
            ListState<Long> position = context.getOperatorStateStore().getListState(
                    new ListStateDescriptor<>("position", Types.LONG));
            List<String> got = new ArrayList<>();
            for (org.apache.flink.api.java.tuple.Tuple2<Object, Long> t : offsets.get()) {
                got.add(t.f0 + "@" + t.f1);
            }
            for (Long p : position.get()) {
                POSITION.add(p);
            }
            UNION.put(System.identityHashCode(this), got);
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {}
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
