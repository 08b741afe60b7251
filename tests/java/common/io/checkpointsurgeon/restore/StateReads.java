package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What Flink's State Processor API reads from a checkpoint or savepoint, as sorted text lines, for
 * comparing the state before and after a surgery. {@link ReaderShims} (per Flink line) has the
 * calls whose signatures differ: how an operator is named and how a reader function is opened.
 */
final class StateReads {
    private StateReads() {}

    /**
     * A split list state of Strings ({@code split:<value>}) and a keyed {@code ValueState<String>}
     * with Long keys ({@code keyed:<key>=<value>}).
     */
    static List<String> splitListAndKeyed(String path, String listUid, String listState, String keyedUid,
                                          String keyedState) throws Exception {
        SavepointReader reader = SavepointReader.read(localEnvironment(), path);
        DataStream<String> split = ReaderShims.readListState(reader, listUid, listState, Types.STRING)
                .map(new Prefix<>("split:"));
        DataStream<String> keyed = ReaderShims.readKeyedValues(reader, keyedUid, keyedState);
        return collectSorted(split.union(keyed));
    }

    /**
     * A split list state of Longs ({@code list:<value>}) and a String-to-Long broadcast state
     * ({@code broadcast:<key>=<value>}, each entry once) of one operator.
     */
    static List<String> listAndBroadcast(String path, String uid, String listState, String broadcastState)
            throws Exception {
        SavepointReader reader = SavepointReader.read(localEnvironment(), path);
        DataStream<String> list = ReaderShims.readListState(reader, uid, listState, Types.LONG)
                .map(new Prefix<>("list:"));
        DataStream<String> broadcast = ReaderShims.readBroadcastState(reader, uid, broadcastState, Types.STRING,
                Types.LONG).map(new EntryText());
        return collectSorted(list.union(broadcast));
    }

    /**
     * A split list state of Longs ({@code split:<value>}) and a union list state of Strings
     * ({@code union:<value>}) of one operator.
     */
    static List<String> splitAndUnion(String path, String uid, String splitState, String unionState) throws Exception {
        SavepointReader reader = SavepointReader.read(localEnvironment(), path);
        DataStream<String> split = ReaderShims.readListState(reader, uid, splitState, Types.LONG)
                .map(new Prefix<>("split:"));
        DataStream<String> union = ReaderShims.readUnionState(reader, uid, unionState, Types.STRING)
                .map(new Prefix<>("union:"));
        return collectSorted(split.union(union));
    }

    private static StreamExecutionEnvironment localEnvironment() {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        return StreamExecutionEnvironment.createLocalEnvironment(1, conf);
    }

    private static List<String> collectSorted(DataStream<String> lines) throws Exception {
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = lines.executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        Collections.sort(out);
        return out;
    }

    static final class Prefix<T> implements MapFunction<T, String> {
        private final String prefix;

        Prefix(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public String map(T value) {
            return prefix + value;
        }
    }

    static final class EntryText implements MapFunction<Tuple2<String, Long>, String> {
        @Override
        public String map(Tuple2<String, Long> e) {
            return "broadcast:" + e.f0 + "=" + e.f1;
        }
    }
}
