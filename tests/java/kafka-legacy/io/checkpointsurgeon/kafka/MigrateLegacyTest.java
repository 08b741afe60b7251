package io.checkpointsurgeon.kafka;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.KafkaBroker;
import io.checkpointsurgeon.testing.KafkaState;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumStateSerializer;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumerator;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.connectors.kafka.FlinkKafkaConsumer;
import org.apache.flink.streaming.connectors.kafka.KafkaDeserializationSchema;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static io.checkpointsurgeon.kafka.KafkaJobs.read;
import static io.checkpointsurgeon.kafka.KafkaJobs.readToEnd;
import static io.checkpointsurgeon.kafka.KafkaJobs.record;
import static io.checkpointsurgeon.kafka.KafkaSourceSurgeryTest.range;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

/**
 * {@code kafka migrate-legacy}: a job reads a numbered topic with the legacy FlinkKafkaConsumer,
 * offsets never committed to Kafka (and the group deleted), and stops with a savepoint part way.
 * The migrated savepoint restores into a KafkaSource under the same uid that starts new splits at
 * the latest offset, so a failed migration would skip records visibly. The judge is the legacy
 * consumer itself: restored from the original savepoint, it reads exactly the records the
 * KafkaSource must read from the migrated one.
 */
public class MigrateLegacyTest {
    static final String TOPIC = KafkaJobs.NUMBERS, GROUP = "legacy-consumer";
    static final int PARTITIONS = KafkaJobs.NUMBERS_PARTITIONS, FIRST = KafkaJobs.NUMBERS_FIRST, END = KafkaJobs.NUMBERS_END;

    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();

    static KafkaBroker broker;

    @BeforeClass
    public static void startBroker() throws Exception {
        broker = KafkaBroker.start(TMP.newFolder("kafka").toPath());
        broker.createTopic(TOPIC, PARTITIONS);
        KafkaJobs.produce(broker, TOPIC, PARTITIONS, 0, FIRST);
    }

    @AfterClass
    public static void stopBroker() {
        if (broker != null) broker.close();
    }

    /** The legacy consumer: from the earliest offsets, committing nothing to Kafka. */
    static DataStream<String> legacySource(StreamExecutionEnvironment env) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", broker.bootstrapServers());
        p.setProperty("group.id", GROUP);
        p.setProperty("enable.auto.commit", "false");
        FlinkKafkaConsumer<String> consumer = new FlinkKafkaConsumer<>(TOPIC, new LegacyPositions(), p);
        consumer.setStartFromEarliest();
        consumer.setCommitOffsetsOnCheckpoints(false);
        return env.addSource(consumer, KafkaJobs.SOURCE_UID).uid(KafkaJobs.SOURCE_UID).name(KafkaJobs.SOURCE_UID);
    }

    /** The same positions as {@link KafkaJobs.Positions}, through the legacy interface. */
    public static final class LegacyPositions implements KafkaDeserializationSchema<String> {
        @Override
        public boolean isEndOfStream(String next) {
            return false;
        }

        @Override
        public String deserialize(ConsumerRecord<byte[], byte[]> record) {
            return record.topic() + "-" + record.partition() + "@" + record.offset();
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }
    }

    static Map<String, Long> ends() {
        Map<String, Long> ends = new TreeMap<>();
        for (int p = 0; p < PARTITIONS; p++) ends.put(TOPIC + "-" + p, (long) END);
        return ends;
    }

    @Test
    public void migratedSavepointResumesAKafkaSourceExactlyWhereTheLegacyConsumerWould() throws Exception {
        // 1. v1 (legacy consumer, parallelism 2) reads part of the topic; stop with a savepoint.
        // From Flink 1.19 (the suite runs on 1.15 and 1.20) with snapshot compression on: the
        // legacy state is then in snappy frames, one run per element, and so are the streams the
        // migration writes (Flink 1.15 compresses keyed state only).
        String flink = System.getProperty("flink.version", "");
        boolean compressed = !flink.startsWith("1.") || flink.matches("1\\.(19|[2-9][0-9])\\..*");
        org.apache.flink.configuration.Configuration v1 = KafkaJobs.conf(TMP.newFolder("v1").toPath(), null);
        if (compressed) {
            io.checkpointsurgeon.testing.FlinkConf.set(v1, "true", "execution.checkpointing.snapshot-compression");
        }
        Path savepoint = KafkaJobs.job("legacy-v1", v1, 2,
                env -> record(legacySource(env), "legacy-v1", 2))
                .readyWhen(() -> KafkaJobs.count("legacy-v1") >= 400).checkpointsAfterReady(1).stopWithSavepoint()
                .run().orThrow().savepointPath();
        assertEquals("compressed operator state in the savepoint", compressed, compressedOperatorState(savepoint));
        try (org.apache.kafka.clients.admin.AdminClient admin = broker.admin()) {
            // nothing was committed; make sure no group offsets exist for the KafkaSource to fall back on
            admin.deleteConsumerGroups(List.of(GROUP)).all().get();
        } catch (java.util.concurrent.ExecutionException e) {
            assertTrue(String.valueOf(e.getCause()), e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException);
        }
        KafkaJobs.produce(broker, TOPIC, PARTITIONS, FIRST, END);

        // 2. the judge: the legacy consumer restored from the savepoint, read to the end.
        KafkaJobs.job("legacy-control", KafkaJobs.conf(TMP.newFolder("control").toPath(), savepoint.toUri().toString()), 2,
                env -> record(legacySource(env), "legacy-control", 0))
                .readyWhen(() -> readToEnd("legacy-control", ends())).checkpointsAfterReady(1).run().orThrow();
        Map<String, List<Long>> control = read("legacy-control");
        assertEquals(ends().keySet(), control.keySet());

        // 3. the plan names every partition with its legacy offset and its new starting offset
        int detected = new KafkaSourceEnumStateSerializer().getVersion();
        assertEquals(detected, Surgery.detectKafkaEnumeratorStateVersion(getClass().getClassLoader()));
        SurgeryPlan plan = CheckpointSurgeon.plan(savepoint.toString(),
                Surgery.migrateKafkaLegacy(Surgery.OperatorSelector.uid(KafkaJobs.SOURCE_UID), detected, 3, null));
        for (Map.Entry<String, List<Long>> e : control.entrySet()) {
            long next = e.getValue().get(0);
            String line = e.getKey() + ": legacy offset " + (next - 1) + " -> starting offset " + next;
            assertTrue(line + " in " + plan.changes(), plan.changes().stream().anyMatch(c -> c.detail().equals(line)));
        }

        // 4. migrate (the CLI finds the connector on its class path), to parallelism 3
        Path migrated = TMP.getRoot().toPath().resolve("migrated");
        CliProcess.Result r = CliProcess.withFlink("kafka", "migrate-legacy", savepoint.toString(), "--uid",
                KafkaJobs.SOURCE_UID, "--parallelism", "3", "--apply", "--output", migrated.toString()).run();
        System.out.println(r.output);
        assertEquals(r.output, 0, r.exitCode);

        // 5. the connector's serializers read what was written, each split in its owner's reader
        Map<String, Long> starts = KafkaState.startingOffsets(migrated);
        assertEquals(control.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().get(0))),
                starts);
        String sourceId = KafkaState.readerSplits(migrated).keySet().iterator().next();
        Method owner = KafkaSourceEnumerator.class.getDeclaredMethod("getSplitOwner", TopicPartition.class, int.class);
        owner.setAccessible(true);
        for (Map.Entry<Integer, List<KafkaPartitionSplit>> e : KafkaState.readerSplits(migrated).get(sourceId).entrySet()) {
            for (KafkaPartitionSplit s : e.getValue()) {
                assertEquals(s + " is in its owner's reader", e.getKey(), owner.invoke(null, s.getTopicPartition(), 3));
            }
        }
        assertEquals("compressed operator state after the migration", compressed, compressedOperatorState(migrated));
        KafkaState.Enumerator en = KafkaState.enumerator(migrated, sourceId);
        assertEquals(1, en.coordinatorVersion);
        assertEquals(detected, en.version);
        assertEquals(ends().keySet(), en.assigned);
        assertEquals(en.connectorLength, en.length);

        // the legacy class is not needed any more: no byte names it
        assertTrue(mentions(savepoint, "KafkaTopicPartition"));
        assertFalse(mentions(migrated, "KafkaTopicPartition"));

        // 6. v2: KafkaSource under the same uid, new splits at the latest offset, parallelism 3
        KafkaJobs.job("kafka-source-v2", KafkaJobs.conf(TMP.newFolder("v2").toPath(), migrated.toUri().toString()), 3,
                env -> record(KafkaJobs.kafkaSource(env, broker.bootstrapServers(), List.of(TOPIC), OffsetsInitializer.latest()),
                        "kafka-source-v2", 0))
                .readyWhen(() -> readToEnd("kafka-source-v2", ends())).checkpointsAfterReady(1).run().orThrow();
        Map<String, List<Long>> v2 = read("kafka-source-v2");
        assertEquals("the KafkaSource reads exactly what the legacy consumer would", control, v2);
        long records = 0;
        for (Map.Entry<String, List<Long>> e : v2.entrySet()) {
            // every record after the savepoint's offset, none before it, no duplicate
            assertEquals(e.getKey(), range(starts.get(e.getKey()), END), e.getValue());
            records += e.getValue().size();
        }
        System.out.printf("migrate-legacy: %d partitions, %d records read after the savepoint by the KafkaSource, "
                + "0 missing, 0 duplicates (enumerator state version %d)%n", v2.size(), records, en.version);

        // inspect shows the readers' splits and the enumerator state
        CliProcess.Result inspect = CliProcess.withFlink("inspect", migrated.toString()).run();
        System.out.println(inspect.output);
        assertEquals(inspect.output, 0, inspect.exitCode);
        assertTrue(inspect.output, inspect.output.contains("KafkaSource enumerator state (version " + detected
                + ", initial discovery finished): 4 assigned, 0 pending"));
        for (Map.Entry<String, Long> e : starts.entrySet()) {
            assertTrue(inspect.output, inspect.output.contains(e.getKey() + " from " + e.getValue()));
        }

        // the newest Flink 2.x restores it with its connector (MigratedOn120Test, run by testFlink23 afterwards)
        String handOver = System.getProperty(KafkaJobs.HAND_OVER);
        if (handOver != null) {
            Path to = Path.of(handOver);
            io.checkpointsurgeon.testing.TestFiles.deleteRecursively(to);
            io.checkpointsurgeon.testing.TestFiles.copyRecursively(migrated, to.resolve("savepoint"));
            Properties p = new Properties();
            starts.forEach((k, v) -> p.setProperty(k, String.valueOf(v)));
            try (java.io.Writer w = Files.newBufferedWriter(to.resolve("starting-offsets.properties"))) {
                p.store(w, "starting offsets of the migrated savepoint; topic " + TOPIC + ", records 0 to " + END);
            }
        }
    }


    static boolean compressedOperatorState(Path checkpoint) throws Exception {
        return CheckpointSurgeon.inspect(checkpoint).operators().stream().flatMap(o -> o.subtasks().stream())
                .flatMap(st -> st.operatorStateHandles().stream())
                .anyMatch(io.checkpointsurgeon.InspectReport.OperatorStateHandleInfo::compressed);
    }

    static boolean mentions(Path dir, String text) throws Exception {
        byte[] needle = text.getBytes(StandardCharsets.UTF_8);
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                if (KafkaSourceSurgeryTest.indexOf(Files.readAllBytes(f), needle) >= 0) return true;
            }
        }
        return false;
    }
}
