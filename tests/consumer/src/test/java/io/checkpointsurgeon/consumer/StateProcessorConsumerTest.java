package io.checkpointsurgeon.consumer;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.junit.Test;

/**
 * checkpoint-surgeon as a dependency of a State Processor API program (Flink 1.15.4, Java 11):
 * the stale-union fixture whose union state holds a class that is not on this class path cannot be
 * read as it is; after {@code CheckpointSurgeon.apply} purged that state, Flink's
 * {@link SavepointReader} reads the remaining split list and keyed state, with the values the
 * fixture generator wrote (RestoreScenario: {@code split-<subtask>-<i>}, {@code k<key>@v1}).
 */
public class StateProcessorConsumerTest {
    static final String CONSUMER_UID = "source_consumer";
    static final String KEYED_UID = "keyed";

    @Test
    public void purgeThenReadWithTheStateProcessorApi() throws Exception {
        assertTrue("runs on Java 11: " + System.getProperty("java.version"),
                System.getProperty("java.version").startsWith("11."));
        Path fixture = Path.of(System.getProperty("fixtures.dir"), "stale-union-legacy-class");
        Path repaired = Files.createTempDirectory("consumer").resolve("repaired");

        SurgeryPlan plan = CheckpointSurgeon.apply(fixture,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), "topic-partition-offset-states"),
                repaired);
        assertEquals(6, plan.elementsRemoved());
        assertTrue(plan.result().flinkValidation(), plan.result().flinkValidation().startsWith("loaded by Flink 1.15.4"));

        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        SavepointReader reader = SavepointReader.read(env, repaired.toString());
        List<String> split = new ArrayList<>();
        try (CloseableIterator<String> it = reader.readListState(CONSUMER_UID, "split-list", Types.STRING)
                .executeAndCollect()) {
            it.forEachRemaining(split::add);
        }
        Collections.sort(split);
        List<String> expected = new ArrayList<>();
        for (int subtask = 0; subtask < 3; subtask++) {
            for (int i = 0; i < 3; i++) expected.add("split-" + subtask + "-" + i);
        }
        assertEquals(expected, split);

        List<String> keyed = new ArrayList<>();
        try (CloseableIterator<String> it = reader.readKeyedState(KEYED_UID, new KeyedReader()).executeAndCollect()) {
            it.forEachRemaining(keyed::add);
        }
        assertFalse(keyed.isEmpty());
        for (String k : keyed) {
            String[] kv = k.split("=", 2);
            assertEquals(k, "k" + kv[0] + "@v1", kv[1]);
        }
        System.out.printf("Java %s, Flink 1.15.4: %d split values and %d keyed values read after the purge%n",
                System.getProperty("java.version"), split.size(), keyed.size());
    }

    static final class KeyedReader extends KeyedStateReaderFunction<Long, String> {
        private transient ValueState<String> state;

        @Override
        public void open(Configuration parameters) {
            state = getRuntimeContext().getState(new ValueStateDescriptor<>("keyed-value", Types.STRING));
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<String> out) throws Exception {
            out.collect(key + "=" + state.value());
        }
    }
}
