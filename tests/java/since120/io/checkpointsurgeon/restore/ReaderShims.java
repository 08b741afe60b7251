package io.checkpointsurgeon.restore;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.util.Collector;

import java.io.IOException;

/**
 * State Processor API calls of {@link StateReads} on Flink 1.20 and 2.x: operators are named by an
 * {@link OperatorIdentifier} (1.20 still has the uid-string variants, 2.x does not), functions are
 * opened with an {@link OpenContext} (2.x removed the {@code Configuration} variant).
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
        return reader.readListState(OperatorIdentifier.forUid(uid), name, type);
    }

    static <T> DataStream<T> readUnionState(SavepointReader reader, String uid, String name, TypeInformation<T> type)
            throws IOException {
        return reader.readUnionState(OperatorIdentifier.forUid(uid), name, type);
    }

    /**
     * The State Processor API's route for new uids: {@code SavepointWriter#changeOperatorIdentifier}
     * for each {@code old uid -> new uid}, written to {@code out} by a local job. True when done.
     * The job runs in a JVM of its own with the {@code --add-opens} of Flink's distribution
     * ({@code env.java.opts.all}): the writer ships Flink's {@code OperatorState} objects through
     * Kryo, whose ReflectASM needs {@code java.lang} open on Java 17.
     */
    static boolean changeOperatorIdentifiers(String savepoint, java.util.Map<String, String> uids, String out)
            throws Exception {
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.Arrays.asList(
                io.checkpointsurgeon.testing.CliProcess.javaBin(), "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                "--add-opens", "java.base/java.util=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                SpaRename.class.getName(), savepoint, out));
        uids.forEach((a, b) -> cmd.add(a + "=" + b));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (!p.waitFor(120, java.util.concurrent.TimeUnit.SECONDS) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new IllegalStateException("changeOperatorIdentifier failed: " + output);
        }
        return true;
    }

    /** {@code SpaRename SAVEPOINT OUT OLD=NEW...}: the State Processor API job of {@link #changeOperatorIdentifiers}. */
    public static final class SpaRename {
        public static void main(String[] args) throws Exception {
            org.apache.flink.configuration.Configuration conf = new org.apache.flink.configuration.Configuration();
            conf.setString("rest.bind-port", "0");
            org.apache.flink.streaming.api.environment.StreamExecutionEnvironment env =
                    org.apache.flink.streaming.api.environment.StreamExecutionEnvironment.createLocalEnvironment(1, conf);
            org.apache.flink.state.api.SavepointWriter writer =
                    org.apache.flink.state.api.SavepointWriter.fromExistingSavepoint(env, args[0]);
            for (int i = 2; i < args.length; i++) {
                String[] pair = args[i].split("=", 2);
                writer = writer.changeOperatorIdentifier(OperatorIdentifier.forUid(pair[0]),
                        OperatorIdentifier.forUid(pair[1]));
            }
            writer.write(args[1]);
            env.execute("changeOperatorIdentifier");
        }
    }

    static <K, V> DataStream<Tuple2<K, V>> readBroadcastState(SavepointReader reader, String uid, String name,
                                                             TypeInformation<K> key, TypeInformation<V> value)
            throws IOException {
        return reader.readBroadcastState(OperatorIdentifier.forUid(uid), name, key, value);
    }

    /** {@code keyed:<key>=<value>} for every Long key of a {@code ValueState<String>}. */
    static DataStream<String> readKeyedValues(SavepointReader reader, String uid, String stateName)
            throws IOException {
        return reader.readKeyedState(OperatorIdentifier.forUid(uid), new KeyedValues(stateName));
    }

    static final class KeyedValues extends KeyedStateReaderFunction<Long, String> {
        private final String stateName;
        private transient ValueState<String> state;

        KeyedValues(String stateName) {
            this.stateName = stateName;
        }

        /**
         * Implements the method 1.x declares abstract; 2.x has no such method, so no {@code @Override}.
         * 1.20 opens the function through {@link #open(OpenContext)} all the same.
         */
        public void open(Configuration parameters) {}

        @Override
        public void open(OpenContext openContext) {
            state = getRuntimeContext().getState(new ValueStateDescriptor<>(stateName, Types.STRING));
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<String> out) throws Exception {
            out.collect("keyed:" + key + "=" + state.value());
        }
    }
}
