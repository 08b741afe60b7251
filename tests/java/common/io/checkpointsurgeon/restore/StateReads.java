package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What Flink's State Processor API reads from a checkpoint or savepoint, as sorted text lines, for
 * comparing the state before and after a surgery. {@link ReaderShims} (per Flink line) has the
 * calls whose signatures differ: how a savepoint is loaded (its reader type is {@code var} here:
 * 1.13/1.14's {@code ExistingSavepoint} reads into DataSets, 1.15+'s {@code SavepointReader} into
 * DataStreams, which both map and union alike), how an operator is named and how a reader function
 * is opened.
 */
final class StateReads {
    private StateReads() {}

    /**
     * A split list state of Strings ({@code split:<value>}) and a keyed {@code ValueState<String>}
     * with Long keys ({@code keyed:<key>=<value>}).
     */
    static List<String> splitListAndKeyed(String path, String listUid, String listState, String keyedUid,
                                          String keyedState) throws Exception {
        var reader = ReaderShims.load(path);
        var split = ReaderShims.readListState(reader, listUid, listState, Types.STRING)
                .map(new Prefix<>("split:"));
        var keyed = ReaderShims.readKeyedValues(reader, keyedUid, keyedState);
        return sorted(ReaderShims.collect(split.union(keyed)));
    }

    /**
     * A split list state of Longs ({@code list:<value>}) and a String-to-Long broadcast state
     * ({@code broadcast:<key>=<value>}, each entry once) of one operator.
     */
    static List<String> listAndBroadcast(String path, String uid, String listState, String broadcastState)
            throws Exception {
        var reader = ReaderShims.load(path);
        var list = ReaderShims.readListState(reader, uid, listState, Types.LONG)
                .map(new Prefix<>("list:"));
        var broadcast = ReaderShims.readBroadcastState(reader, uid, broadcastState, Types.STRING,
                Types.LONG).map(new EntryText());
        return sorted(ReaderShims.collect(list.union(broadcast)));
    }

    /**
     * A split list state of Longs ({@code split:<value>}) and a union list state of Strings
     * ({@code union:<value>}) of one operator.
     */
    static List<String> splitAndUnion(String path, String uid, String splitState, String unionState) throws Exception {
        return splitAndUnion(path, uid, splitState, unionState, Types.STRING, new Prefix<>("union:"));
    }

    /**
     * A split list state of Longs ({@code split:<value>}) and a union list state of Tuple2s
     * ({@code union:<f0>@<f1>}, the legacy Kafka consumer's offsets) of one operator.
     */
    static List<String> splitAndUnion(String path, String uid, String splitState, String unionState,
                                      TypeInformation<Tuple2<Object, Long>> unionType) throws Exception {
        return splitAndUnion(path, uid, splitState, unionState, unionType, new PairText());
    }

    private static <U> List<String> splitAndUnion(String path, String uid, String splitState, String unionState,
                                                  TypeInformation<U> unionType, MapFunction<U, String> unionText)
            throws Exception {
        var reader = ReaderShims.load(path);
        var split = ReaderShims.readListState(reader, uid, splitState, Types.LONG)
                .map(new Prefix<>("split:"));
        var union = ReaderShims.readUnionState(reader, uid, unionState, unionType).map(unionText);
        return sorted(ReaderShims.collect(split.union(union)));
    }

    /** The configuration of the local job that reads: one slot, a random REST port. */
    static Configuration localConfiguration() {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        return conf;
    }

    static StreamExecutionEnvironment localEnvironment() {
        return StreamExecutionEnvironment.createLocalEnvironment(1, localConfiguration());
    }

    /** Runs the job and returns the lines it emitted (the DataStream readers of 1.15+). */
    static List<String> executeAndCollect(DataStream<String> lines) throws Exception {
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = lines.executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    private static List<String> sorted(List<String> lines) {
        List<String> out = new ArrayList<>(lines);
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

    static final class PairText implements MapFunction<Tuple2<Object, Long>, String> {
        @Override
        public String map(Tuple2<Object, Long> e) {
            return "union:" + e.f0 + "@" + e.f1;
        }
    }
}
