package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.util.Collector;

import java.io.IOException;

/**
 * State Processor API calls of {@link StateReads} on Flink 1.15 to 1.19 (tests/java/v116 links this
 * file): operators are named by their uid string (the only form before 1.17, still there up to 1.20),
 * functions open with a {@code Configuration} (KeyedStateReaderFunction's only open up to 1.19).
 */
final class ReaderShims {
    private ReaderShims() {}

    static SavepointReader load(String path) throws IOException {
        return SavepointReader.read(StateReads.localEnvironment(), path);
    }

    static java.util.List<String> collect(DataStream<String> lines) throws Exception {
        return StateReads.executeAndCollect(lines);
    }

    static <T> DataStream<T> readListState(SavepointReader reader, String uid, String name, TypeInformation<T> type)
            throws IOException {
        return reader.readListState(uid, name, type);
    }

    /**
     * Flink 1.17 to 1.19's {@code readUnionState(String uid, ...)} reads with the split list state's
     * input format, which fails on a union state ("Incompatible state assignment modes"); their
     * {@code readUnionState(OperatorIdentifier, ...)} reads it right. 1.15 and 1.16 have only the
     * String form, which is right there.
     */
    @SuppressWarnings("unchecked")
    static <T> DataStream<T> readUnionState(SavepointReader reader, String uid, String name, TypeInformation<T> type)
            throws IOException {
        Class<?> identifier;
        try {
            identifier = Class.forName("org.apache.flink.state.api.OperatorIdentifier");
        } catch (ClassNotFoundException beforeFlink117) {
            return reader.readUnionState(uid, name, type);
        }
        try {
            Object id = identifier.getMethod("forUid", String.class).invoke(null, uid);
            return (DataStream<T>) SavepointReader.class
                    .getMethod("readUnionState", identifier, String.class, TypeInformation.class)
                    .invoke(reader, id, name, type);
        } catch (java.lang.reflect.InvocationTargetException e) {
            if (e.getCause() instanceof IOException) {
                throw (IOException) e.getCause();
            }
            throw new IllegalStateException(e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The State Processor API's {@code SavepointWriter#changeOperatorIdentifier}, which Flink 1.15
     * and 1.16 do not have (it came in 1.17): false, and nothing is written. 1.17 to 1.19 have it,
     * but only their lean suites use these shims, and those do not run RenameOperatorRestoreTest:
     * the comparison with that route runs on 1.20 and 2.x.
     */
    static boolean changeOperatorIdentifiers(String savepoint, java.util.Map<String, String> uids, String out) {
        return false;
    }

    static <K, V> DataStream<Tuple2<K, V>> readBroadcastState(SavepointReader reader, String uid, String name,
                                                             TypeInformation<K> key, TypeInformation<V> value)
            throws IOException {
        return reader.readBroadcastState(uid, name, key, value);
    }

    /** {@code keyed:<key>=<value>} for every Long key of a {@code ValueState<String>}. */
    static DataStream<String> readKeyedValues(SavepointReader reader, String uid, String stateName)
            throws IOException {
        return reader.readKeyedState(uid, new KeyedValues(stateName));
    }

    static final class KeyedValues extends KeyedStateReaderFunction<Long, String> {
        private final String stateName;
        private transient ValueState<String> state;

        KeyedValues(String stateName) {
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
}
