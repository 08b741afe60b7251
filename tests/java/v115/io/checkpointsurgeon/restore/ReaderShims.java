package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.SavepointReader;

import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** State Processor API calls of the restore tests (Flink 115 API). */
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
        DataStream<String> split = reader.readListState((listUid), listState, Types.STRING).map(new Prefix("split:"));
        DataStream<String> keyed = reader.readKeyedState((keyedUid), new KeyedReader(keyedState));
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = split.union(keyed).executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        Collections.sort(out);
        return out;
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
        public void open(Configuration parameters) {
            state = getRuntimeContext().getState(new ValueStateDescriptor<>(stateName, Types.STRING));
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<String> out) throws Exception {
            out.collect("keyed:" + key + "=" + state.value());
        }
    }

    /** Snapshot compression came with Flink 1.18: nothing to read on 1.15. */
    static List<String> readListAndBroadcast(String path, String uid, String listState, String broadcastState) {
        throw new UnsupportedOperationException("no compressed operator state before Flink 1.18");
    }
}
