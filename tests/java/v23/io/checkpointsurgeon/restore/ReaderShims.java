package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** State Processor API calls of the restore tests (Flink 23 API). */
final class ReaderShims {
    private ReaderShims() {}

    /**
     * Reads a split list state (String elements, as "split:&lt;value&gt;") and a keyed ValueState&lt;String&gt;
     * with Long keys (as "keyed:&lt;key&gt;=&lt;value&gt;") from a checkpoint or savepoint, sorted.
     */
    static List<String> read(String path, String listUid, String listState, String keyedUid, String keyedState)
            throws Exception {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        SavepointReader reader = SavepointReader.read(env, path);
        DataStream<String> split = reader.readListState(OperatorIdentifier.forUid(listUid), listState, Types.STRING).map(new Prefix("split:"));
        DataStream<String> keyed = reader.readKeyedState(OperatorIdentifier.forUid(keyedUid), new KeyedReader(keyedState));
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = split.union(keyed).executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        Collections.sort(out);
        return out;
    }

    /**
     * Reads a Long split list state and a String-to-Long broadcast state of one operator, as
     * "list:&lt;value&gt;" and "broadcast:&lt;key&gt;=&lt;value&gt;" (broadcast entries once), sorted.
     */
    static List<String> readListAndBroadcast(String path, String uid, String listState, String broadcastState)
            throws Exception {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        SavepointReader reader = SavepointReader.read(env, path);
        DataStream<String> list = reader.readListState(OperatorIdentifier.forUid(uid), listState, Types.LONG)
                .map(new LongPrefix("list:"));
        DataStream<String> broadcast = reader.readBroadcastState(OperatorIdentifier.forUid(uid), broadcastState,
                Types.STRING, Types.LONG).map(new EntryText());
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = list.union(broadcast).executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        Collections.sort(out);
        return out;
    }

    static final class LongPrefix implements MapFunction<Long, String> {
        private final String prefix;

        LongPrefix(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public String map(Long value) {
            return prefix + value;
        }
    }

    static final class EntryText implements MapFunction<org.apache.flink.api.java.tuple.Tuple2<String, Long>, String> {
        @Override
        public String map(org.apache.flink.api.java.tuple.Tuple2<String, Long> e) {
            return "broadcast:" + e.f0 + "=" + e.f1;
        }
    }

    static final class Prefix implements MapFunction<String, String> {
        private final String prefix;

        Prefix(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public String map(String value) {
            return prefix + value;
        }
    }

    static final class KeyedReader extends KeyedStateReaderFunction<Long, String> {
        private final String stateName;
        private transient ValueState<String> state;

        KeyedReader(String stateName) {
            this.stateName = stateName;
        }

        @Override
        public void open(org.apache.flink.api.common.functions.OpenContext openContext) {
            state = getRuntimeContext().getState(new ValueStateDescriptor<>(stateName, Types.STRING));
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<String> out) throws Exception {
            out.collect("keyed:" + key + "=" + state.value());
        }
    }
}
