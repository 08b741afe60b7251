package io.checkpointsurgeon.keyed;

import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.List;

/**
 * The State Processor API calls of the keyed tests on Flink 1.15: operators named by their uid
 * string, functions opened with a {@code Configuration}, TTL in {@code Time}.
 */
final class SpaShims {
    private SpaShims() {}

    /** Every line {@link StateCounts} emits for the operator {@code uid} of a checkpoint or savepoint. */
    static List<String> stateCounts(String path, String uid, StateBackend backend) throws Exception {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        SavepointReader reader = backend == null ? SavepointReader.read(env, path) : SavepointReader.read(env, path, backend);
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = reader.readKeyedState(uid, new Counts()).executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

    @SuppressWarnings("deprecation")
    static StateTtlConfig ttlOfOneDay(StateTtlConfig.StateVisibility visibility) {
        return StateTtlConfig.newBuilder(org.apache.flink.api.common.time.Time.days(1)).setStateVisibility(visibility)
                .build();
    }

    static final class Counts extends StateCounts {
        @Override
        public void open(Configuration parameters) {
            register(getRuntimeContext());
        }
    }
}
