package io.checkpointsurgeon.keyed;

import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The State Processor API calls of the keyed tests on Flink 1.15: operators named by their uid
 * string, functions opened with a {@code Configuration}, TTL in {@code Time}.
 */
final class SpaShims {
    private SpaShims() {}

    /**
     * Every line {@link StateCounts} emits for the operator {@code uid} of each checkpoint or
     * savepoint, prefixed by its name and a tab; all read by one job. A null backend is the default one.
     */
    static List<String> stateCounts(Map<String, String> paths, Map<String, StateBackend> backends, String uid)
            throws Exception {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        DataStream<String> all = null;
        for (Map.Entry<String, String> p : paths.entrySet()) {
            StateBackend backend = backends.get(p.getKey());
            SavepointReader reader = backend == null ? SavepointReader.read(env, p.getValue())
                    : SavepointReader.read(env, p.getValue(), backend);
            DataStream<String> lines = reader.readKeyedState(uid, new Counts())
                    .map(new StateCounts.Tag(p.getKey()));
            all = all == null ? lines : all.union(lines);
        }
        List<String> out = new ArrayList<>();
        try (CloseableIterator<String> it = all.executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        return out;
    }

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
