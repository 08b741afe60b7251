package io.checkpointsurgeon.catalogue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.kafka.MigrateLegacyTest;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.KafkaBroker;
import io.checkpointsurgeon.testing.MiniClusterJob;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.source.RichParallelSourceFunction;
import org.apache.flink.streaming.connectors.kafka.FlinkKafkaConsumer;
import org.apache.flink.streaming.connectors.kinesis.model.SequenceNumber;
import org.apache.flink.streaming.connectors.kinesis.model.StreamShardMetadata;
import org.apache.flink.streaming.connectors.kinesis.util.KinesisStateUtil;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * The connector catalogue of {@code doctor}: each known state, written by Flink's real operator state
 * backend in a savepoint of a MiniCluster job, gives one CONNECTOR_STATE finding naming the
 * connector, why the state grows and the fix; states that are not in the catalogue give none.
 *
 * <ul>
 *   <li>{@code topic-partition-offset-states}: the real FlinkKafkaConsumer (connector 3.4.0-1.20)
 *       reading a real Kafka broker.
 *   <li>{@code Kinesis-Stream-Shard-State}: a test source registering the union state under the
 *       connector's name with the connector's own serializer
 *       ({@code KinesisStateUtil.createShardsStateSerializer}, flink-connector-kinesis 4.3.0-1.19, the newest served)
 *       and elements of its classes ({@code StreamShardMetadata}, {@code SequenceNumber}); a real
 *       FlinkKinesisConsumer needs a Kinesis endpoint.
 *   <li>{@code streaming_committer_raw_states}: a test source registering Paimon's committer list
 *       state with the same name, mode and serializer as {@code RestoreCommittableStateManager}
 *       (Flink's {@code BytePrimitiveArraySerializer}); the elements are stand-in bytes, not
 *       {@code ManifestCommittable}s (Paimon is not on the test class path).
 *   <li>{@code topic-offset-states} (StreamNative pulsar-flink): the same name and mode; the
 *       serializer is a stand-in (Tuple2 of String and bytes), since pulsar-flink is built for
 *       Flink 1.13 and its serializers need the Pulsar client; doctor matches name and mode only.
 * </ul>
 */
public class StaleStatesTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();

    static KafkaBroker broker;

    @BeforeClass
    public static void startBroker() throws Exception {
        broker = KafkaBroker.start(TMP.newFolder("kafka").toPath());
        broker.createTopic("legacy", 3);
        Properties p = new Properties();
        p.put("bootstrap.servers", broker.bootstrapServers());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 30; i++) producer.send(new ProducerRecord<>("legacy", i % 3, null, "r" + i));
        }
    }

    @AfterClass
    public static void stopBroker() {
        if (broker != null) broker.close();
    }

    static Configuration conf(Path work) {
        Configuration c = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                work.resolve("savepoints").toUri().toString(), "200ms", 1);
        FlinkConf.noRestarts(c);
        return c;
    }

    static List<CheckpointSurgeon.Finding> connectorFindings(Path savepoint) throws Exception {
        return CheckpointSurgeon.doctor(savepoint).stream().filter(f -> f.code() == CheckpointSurgeon.Finding.Code.CONNECTOR_STATE)
                .collect(Collectors.toList());
    }

    /** The real FlinkKafkaConsumer's savepoint: a WARNING naming the connector and Surgery.migrateKafkaLegacy. */
    @Test
    public void flinkKafkaConsumerOffsetsNameTheMigration() throws Exception {
        Path savepoint = MiniClusterJob.of("legacy-kafka", conf(TMP.newFolder("kafka-job").toPath()), 2, env -> {
            Properties p = new Properties();
            p.setProperty("bootstrap.servers", broker.bootstrapServers());
            p.setProperty("group.id", "catalogue");
            FlinkKafkaConsumer<String> consumer = new FlinkKafkaConsumer<>("legacy", new MigrateLegacyTest.LegacyPositions(), p);
            consumer.setStartFromEarliest();
            consumer.setCommitOffsetsOnCheckpoints(false);
            Shims.discard(env.addSource(consumer, "kafka-source").uid("kafka-source"), "sink");
        }).timeout(Duration.ofSeconds(120)).checkpointsAfterReady(1).stopWithSavepoint().run().orThrow().savepointPath();

        List<CheckpointSurgeon.Finding> found = connectorFindings(savepoint);
        assertEquals(found.toString(), 1, found.size());
        CheckpointSurgeon.Finding f = found.get(0);
        assertEquals(CheckpointSurgeon.Finding.Severity.WARNING, f.severity());
        assertTrue(f.message(), f.message().contains("'topic-partition-offset-states'") && f.message().contains("FlinkKafkaConsumer")
                && f.message().contains("Surgery.migrateKafkaLegacy") && f.message().contains("3 elements"));
        assertEquals(CheckpointSurgeon.Remedy.Action.MIGRATE_KAFKA_LEGACY, f.fix().action());

        // the CLI: a WARNING does not gate (exit 0); the finding and its runnable fix are in --json
        CliProcess.Result json = CliProcess.withFlink("doctor", savepoint.toString(), "--json").run();
        assertEquals(json.output, 0, json.exitCode);
        assertTrue(json.output, json.output.contains("\"CONNECTOR_STATE\"")
                && json.output.contains("checkpoint-surgeon kafka migrate-legacy " + savepoint));
        assertEquals(4, CliProcess.withFlink("doctor", savepoint.toString(), "--fail-on", "warning").run().exitCode);
    }

    /**
     * Kinesis, Pulsar and Paimon states in one job (see the class comment for how each is written),
     * with a union state that is not in the catalogue and a Paimon committer with one pending
     * checkpoint (normal): exactly three findings.
     */
    @Test
    public void catalogueStatesWrittenByARealJob() throws Exception {
        Path savepoint = MiniClusterJob.of("catalogue", conf(TMP.newFolder("job").toPath()), 2, env -> {
            for (String kind : new String[] {"kinesis", "pulsar", "paimon", "paimon-one", "other"}) {
                Shims.discard(env.addSource(new StateSource(kind), kind, Types.LONG).uid(kind), kind + "-sink");
            }
        }).timeout(Duration.ofSeconds(120)).checkpointsAfterReady(1).stopWithSavepoint().run().orThrow().savepointPath();

        List<CheckpointSurgeon.Finding> found = connectorFindings(savepoint);
        String all = found.toString();
        assertEquals(all, 3, found.size());
        assertTrue(all, found.stream().allMatch(f -> f.severity() == CheckpointSurgeon.Finding.Severity.WARNING));
        assertTrue(all, found.stream().anyMatch(f -> f.message().contains("'Kinesis-Stream-Shard-State'")
                && f.message().contains("FlinkKinesisConsumer") && f.message().contains("KinesisStreamsSource")));
        assertTrue(all, found.stream().anyMatch(f -> f.message().contains("'topic-offset-states'")
                && f.message().contains("FlinkPulsarSource") && f.message().contains("PulsarSource")));
        assertTrue(all, found.stream().anyMatch(f -> f.message().contains("'streaming_committer_raw_states'")
                && f.message().contains("12 elements") && f.message().contains("CommitterOperator")));
        assertTrue(all, !all.contains("not-in-catalogue"));

        CliProcess.Result json = CliProcess.withFlink("doctor", savepoint.toString(), "--json").run();
        assertEquals(json.output, 0, json.exitCode);
        assertEquals(json.output, 3, json.output.split("\"CONNECTOR_STATE\"", -1).length - 1);
    }

    /** A source (emitting nothing) that keeps one connector's operator state, filled at the first snapshot. */
    static final class StateSource extends RichParallelSourceFunction<Long> implements CheckpointedFunction {
        private final String kind;
        private transient ListState<Object> state;
        private volatile boolean running = true;

        StateSource(String kind) {
            this.kind = kind;
        }

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public void initializeState(FunctionInitializationContext context) throws Exception {
            switch (kind) {
                case "kinesis": // FlinkKinesisConsumer#initializeState
                    state = (ListState) context.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>(
                            "Kinesis-Stream-Shard-State",
                            KinesisStateUtil.createShardsStateSerializer(getRuntimeContext().getExecutionConfig())));
                    break;
                case "pulsar":
                    state = (ListState) context.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>(
                            "topic-offset-states", Types.TUPLE(Types.STRING, Types.PRIMITIVE_ARRAY(Types.BYTE))));
                    break;
                case "paimon":
                case "paimon-one": // RestoreCommittableStateManager#initializeState
                    state = (ListState) context.getOperatorStateStore().getListState(new ListStateDescriptor<>(
                            "streaming_committer_raw_states", BytePrimitiveArraySerializer.INSTANCE));
                    break;
                default:
                    state = (ListState) context.getOperatorStateStore().getUnionListState(
                            new ListStateDescriptor<>("not-in-catalogue", Types.STRING));
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            state.clear();
            int subtask = getRuntimeContext().getIndexOfThisSubtask();
            switch (kind) {
                case "kinesis":
                    for (int s = 0; s < 2; s++) {
                        StreamShardMetadata m = new StreamShardMetadata();
                        m.setStreamName("orders");
                        m.setShardId("shardId-00000000000" + (2 * subtask + s));
                        m.setStartingSequenceNumber("4959");
                        state.add(Tuple2.of(m, new SequenceNumber("49590338271490256608559692538361571095921575989136588898")));
                    }
                    break;
                case "pulsar":
                    state.add(Tuple2.of("persistent://public/default/orders-partition-" + subtask, new byte[] {8, 1, 16, 2}));
                    break;
                case "paimon": // one committer (subtask 0) with 12 checkpoints not yet committed
                    for (int cp = 0; subtask == 0 && cp < 12; cp++) {
                        state.add(("committable of checkpoint " + cp).getBytes(StandardCharsets.UTF_8));
                    }
                    break;
                case "paimon-one":
                    if (subtask == 0) state.add("committable".getBytes(StandardCharsets.UTF_8));
                    break;
                default:
                    state.add("subtask " + subtask);
            }
        }

        @Override
        public void run(SourceContext<Long> ctx) throws Exception {
            while (running) Thread.sleep(20);
        }

        @Override
        public void cancel() {
            running = false;
        }
    }
}
