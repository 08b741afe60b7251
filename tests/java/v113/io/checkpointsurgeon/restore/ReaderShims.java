package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.DataSet;
import org.apache.flink.api.java.ExecutionEnvironment;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.ExistingSavepoint;
import org.apache.flink.state.api.Savepoint;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.util.Collector;

import java.io.IOException;
import java.util.List;

/**
 * State Processor API calls of {@link StateReads} on Flink 1.13 and 1.14: the DataSet API's
 * {@code Savepoint.load} (no {@code SavepointReader} before 1.15) with a state backend to read
 * through, operators named by their uid string, functions opened with a {@code Configuration}.
 */
final class ReaderShims {
    private ReaderShims() {}

    static ExistingSavepoint load(String path) throws IOException {
        return Savepoint.load(ExecutionEnvironment.createLocalEnvironment(StateReads.localConfiguration()), path,
                new HashMapStateBackend());
    }

    static List<String> collect(DataSet<String> lines) throws Exception {
        return lines.collect();
    }

    static <T> DataSet<T> readListState(ExistingSavepoint reader, String uid, String name, TypeInformation<T> type)
            throws IOException {
        return reader.readListState(uid, name, type);
    }

    static <T> DataSet<T> readUnionState(ExistingSavepoint reader, String uid, String name, TypeInformation<T> type)
            throws IOException {
        return reader.readUnionState(uid, name, type);
    }

    /** {@code SavepointWriter#changeOperatorIdentifier} came in 1.17: false, and nothing is written. */
    static boolean changeOperatorIdentifiers(String savepoint, java.util.Map<String, String> uids, String out) {
        return false;
    }

    static <K, V> DataSet<Tuple2<K, V>> readBroadcastState(ExistingSavepoint reader, String uid, String name,
                                                          TypeInformation<K> key, TypeInformation<V> value)
            throws IOException {
        return reader.readBroadcastState(uid, name, key, value);
    }

    /** {@code keyed:<key>=<value>} for every Long key of a {@code ValueState<String>}. */
    static DataSet<String> readKeyedValues(ExistingSavepoint reader, String uid, String stateName)
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
