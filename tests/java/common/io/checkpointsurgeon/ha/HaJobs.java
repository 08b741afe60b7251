package io.checkpointsurgeon.ha;

import io.checkpointsurgeon.fixtures.Functions;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The stale-union jobs of the HA tests (compiled against Flink 1.15, 1.20 and 2.x alike).
 *
 * <p>v1's operator {@code source_consumer} keeps the union list state {@value #OFFSETS_STATE}
 * (two entries per subtask), like the legacy Kafka consumer. v2's {@code source_consumer} never
 * registers it, so Flink restores it and snapshots it again from every subtask: it grows by the
 * parallelism with every restore. v2 keeps its own split list state {@code position} (records seen,
 * restored and continued) and a keyed operator keeps, per key, the first value it saw.
 *
 * <p>The MiniCluster runs in the test's JVM, so the functions report what they snapshot and what
 * they restore into static recorders; the test compares the restored values with the snapshotted
 * ones (real values, as Flink hands them to the user function).
 */
final class HaJobs {
    private HaJobs() {}

    static final String OFFSETS_STATE = Functions.OFFSETS_STATE;
    static final String POSITION_STATE = "position";
    static final String CONSUMER_UID = "source_consumer";
    static final int PARALLELISM = 2;
    static final int KEYS = 8;

    /** What one v2 consumer subtask got back on restore. */
    static final class Restore {
        final long checkpointId;
        final List<Long> position;

        Restore(long checkpointId, List<Long> position) {
            this.checkpointId = checkpointId;
            this.position = position;
        }

        @Override
        public String toString() {
            return "restored checkpoint " + checkpointId + " position " + position;
        }
    }

    /** checkpoint id -> the {@code position} values the v2 subtasks snapshotted for it. */
    static final Map<Long, List<Long>> POSITION_SNAPSHOTS = new ConcurrentHashMap<>();
    /** One entry per v2 subtask restore. */
    static final List<Restore> RESTORES = new CopyOnWriteArrayList<>();
    /** key -> the value the keyed operator stored in its ValueState {@code first} (last time it set it). */
    static final Map<Long, Long> KEYED_FIRST = new ConcurrentHashMap<>();
    /** key -> the value of {@code first} the keyed operator found in restored state (this phase). */
    static final Map<Long, Long> KEYED_RESTORED = new ConcurrentHashMap<>();
    /** The keys the keyed operator has a value of {@code first} for (this phase). */
    static final Set<Long> KEYS_HELD = ConcurrentHashMap.newKeySet();

    static void resetPhase() {
        RESTORES.clear();
        KEYED_RESTORED.clear();
        KEYS_HELD.clear();
    }

    static void resetAll() {
        resetPhase();
        POSITION_SNAPSHOTS.clear();
        KEYED_FIRST.clear();
    }

    /** numbers (FLIP-27, 2 splits) -> throttle -> rebalance -> source_consumer v1|v2 -> keyBy -> keyed. */
    static void consumerJob(StreamExecutionEnvironment env, boolean v1) {
        DataStream<Long> s = env.fromSource(new NumberSequenceSource(0, 1_000_000_000L),
                        WatermarkStrategy.noWatermarks(), "numbers").uid("numbers").setParallelism(PARALLELISM)
                .map(new Functions.Sleep(2)).uid("numbers-throttle").name("numbers-throttle").setParallelism(PARALLELISM)
                .rebalance();
        DataStream<Long> c = v1
                ? s.map(new ConsumerV1()).uid(CONSUMER_UID).name(CONSUMER_UID).setParallelism(PARALLELISM)
                : s.map(new ConsumerV2()).uid(CONSUMER_UID).name(CONSUMER_UID).setParallelism(PARALLELISM);
        // No sink: the transformations are registered with the environment as they are created.
        c.keyBy(new Functions.ModKey(KEYS)).map(new KeyedFirst()).uid("keyed").name("keyed").setParallelism(PARALLELISM);
    }

    /** v1: the union list state of the legacy Kafka consumer, two "partitions" per subtask. */
    static final class ConsumerV1 implements MapFunction<Long, Long>, CheckpointedFunction {
        private transient ListState<Tuple2<String, Long>> offsets;
        private transient String instance;
        private long offset;

        @Override
        public Long map(Long value) {
            offset++;
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            instance = UUID.randomUUID().toString().substring(0, 8);
            offsets = context.getOperatorStateStore().getUnionListState(
                    new ListStateDescriptor<>(OFFSETS_STATE, Functions.OFFSET_TYPE));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            offsets.clear();
            for (int p = 0; p < 2; p++) {
                offsets.add(Tuple2.of("topic-a-" + instance + "-" + p, offset));
            }
        }
    }

    /** v2: its own split list state; {@value #OFFSETS_STATE} is never accessed. */
    static final class ConsumerV2 implements MapFunction<Long, Long>, CheckpointedFunction {
        private transient ListState<Long> position;
        private long seen;

        @Override
        public Long map(Long value) {
            seen++;
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            position = context.getOperatorStateStore().getListState(
                    new ListStateDescriptor<>(POSITION_STATE, Types.LONG));
            OptionalLong restored = context.getRestoredCheckpointId();
            List<Long> values = new ArrayList<>();
            for (Long v : position.get()) {
                values.add(v);
                seen += v;
            }
            if (restored.isPresent()) {
                RESTORES.add(new Restore(restored.getAsLong(), values));
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            position.clear();
            position.add(seen);
            POSITION_SNAPSHOTS.computeIfAbsent(context.getCheckpointId(),
                    k -> Collections.synchronizedList(new ArrayList<>())).add(seen);
        }
    }

    /** Keyed ValueState {@code first}: set once per key, never changed afterwards. */
    static final class KeyedFirst implements MapFunction<Long, Long>, CheckpointedFunction {
        private transient ValueState<Long> first;
        private transient Set<Long> reported;

        @Override
        public Long map(Long value) throws Exception {
            long key = value % KEYS;
            Long f = first.value();
            if (f == null) {
                first.update(value);
                KEYED_FIRST.put(key, value);
                reported.add(key);
            } else if (reported.add(key)) {
                KEYED_RESTORED.put(key, f);
            }
            KEYS_HELD.add(key);
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
            reported = new HashSet<>();
            first = context.getKeyedStateStore().getState(new ValueStateDescriptor<>("first", Types.LONG));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {}
    }
}
