package io.checkpointsurgeon.keyed;

import io.checkpointsurgeon.fixtures.KeyedStateJob;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.AggregatingState;
import org.apache.flink.api.common.state.AggregatingStateDescriptor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReducingState;
import org.apache.flink.api.common.state.ReducingStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.util.Collector;

import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The State Processor API's reading of {@link KeyedStateJob}'s keyed state (v1: every state),
 * counted per state in both of the tool's units: one line {@code state<TAB>records<TAB>keys} per
 * key and state, where {@code records} is what the canonical format and RocksDB hold (one per key,
 * one per user key of a map, one per timer) and {@code keys} what the heap checkpoint holds (one
 * per key and namespace, a map's whole map one; one per timer). {@link SpaShims} opens it the way
 * the Flink line under test opens functions.
 */
abstract class StateCounts extends KeyedStateReaderFunction<Long, String> {
    private transient Map<String, State> states;

    /** Registers every state of KeyedStateJob v1 with the job's types; TTL values are read even when expired. */
    void register(RuntimeContext ctx) {
        states = new HashMap<>();
        states.put(KeyedStateJob.VALUE, ctx.getState(new ValueStateDescriptor<>(KeyedStateJob.VALUE, Types.LONG)));
        states.put(KeyedStateJob.LIST, ctx.getListState(new ListStateDescriptor<>(KeyedStateJob.LIST, Types.LONG)));
        states.put(KeyedStateJob.MAP, ctx.getMapState(new MapStateDescriptor<>(KeyedStateJob.MAP, Types.LONG, Types.STRING)));
        states.put(KeyedStateJob.REDUCING, ctx.getReducingState(
                new ReducingStateDescriptor<>(KeyedStateJob.REDUCING, (Long a, Long b) -> a + b, Types.LONG)));
        states.put(KeyedStateJob.AGGREGATING, ctx.getAggregatingState(new AggregatingStateDescriptor<>(
                KeyedStateJob.AGGREGATING, new Average(), Types.TUPLE(Types.LONG, Types.LONG))));
        states.put(KeyedStateJob.POJO, ctx.getState(new ValueStateDescriptor<>(KeyedStateJob.POJO,
                Types.POJO(KeyedStateJob.Reading.class))));
        ValueStateDescriptor<String> ttl = new ValueStateDescriptor<>(KeyedStateJob.TTL, Types.STRING);
        ttl.enableTimeToLive(SpaShims.ttlOfOneDay(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp));
        states.put(KeyedStateJob.TTL, ctx.getState(ttl));
        states.put(KeyedStateJob.DROPPED, ctx.getState(new ValueStateDescriptor<>(KeyedStateJob.DROPPED, Types.LONG)));
    }

    @Override
    public void readKey(Long key, Context ctx, Collector<String> out) throws Exception {
        for (Map.Entry<String, State> e : states.entrySet()) {
            State s = e.getValue();
            long records;
            if (s instanceof MapState) {
                records = 0;
                for (Iterator<?> it = ((MapState<?, ?>) s).keys().iterator(); it.hasNext(); it.next()) records++;
            } else if (s instanceof ListState) {
                Iterable<?> l = ((ListState<?>) s).get();
                records = l != null && l.iterator().hasNext() ? 1 : 0;
            } else if (s instanceof ValueState) {
                records = ((ValueState<?>) s).value() != null ? 1 : 0;
            } else if (s instanceof ReducingState) {
                records = ((ReducingState<?>) s).get() != null ? 1 : 0;
            } else {
                records = ((AggregatingState<?, ?>) s).get() != null ? 1 : 0;
            }
            if (records > 0) out.collect(e.getKey() + "\t" + records + "\t1");
        }
        int event = ctx.registeredEventTimeTimers().size(), processing = ctx.registeredProcessingTimeTimers().size();
        if (event > 0) out.collect(KeyedStateJob.EVENT_TIMERS + "\t" + event + "\t" + event);
        if (processing > 0) out.collect(KeyedStateJob.PROCESSING_TIMERS + "\t" + processing + "\t" + processing);
    }

    /** Per tag (see {@link Tag}) and state: {records, keys}, summed over the lines {@link #readKey} emitted. */
    static Map<String, Map<String, long[]>> sum(List<String> lines) {
        Map<String, Map<String, long[]>> out = new HashMap<>();
        for (String l : lines) {
            String[] f = l.split("\t");
            long[] v = out.computeIfAbsent(f[0], k -> new HashMap<>()).computeIfAbsent(f[1], k -> new long[2]);
            v[0] += Long.parseLong(f[2]);
            v[1] += Long.parseLong(f[3]);
        }
        return out;
    }

    /** Prefixes a line with the name of the checkpoint it was read from. */
    static final class Tag implements org.apache.flink.api.common.functions.MapFunction<String, String> {
        private final String tag;

        Tag(String tag) {
            this.tag = tag;
        }

        @Override
        public String map(String line) {
            return tag + "\t" + line;
        }
    }

    /** The job's aggregate function (KeyedStateJob.Average is package-private there). */
    static final class Average implements AggregateFunction<Long, Tuple2<Long, Long>, Double> {
        @Override
        public Tuple2<Long, Long> createAccumulator() {
            return Tuple2.of(0L, 0L);
        }

        @Override
        public Tuple2<Long, Long> add(Long value, Tuple2<Long, Long> acc) {
            return Tuple2.of(acc.f0 + value, acc.f1 + 1);
        }

        @Override
        public Double getResult(Tuple2<Long, Long> acc) {
            return acc.f1 == 0 ? 0.0 : (double) acc.f0 / acc.f1;
        }

        @Override
        public Tuple2<Long, Long> merge(Tuple2<Long, Long> a, Tuple2<Long, Long> b) {
            return Tuple2.of(a.f0 + b.f0, a.f1 + b.f1);
        }
    }
}
