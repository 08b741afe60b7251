package io.checkpointsurgeon.kafka;

import io.checkpointsurgeon.testing.KafkaBroker;

import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.junit.Assume;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import static io.checkpointsurgeon.kafka.KafkaJobs.read;
import static io.checkpointsurgeon.kafka.KafkaJobs.readToEnd;
import static io.checkpointsurgeon.kafka.KafkaJobs.record;
import static io.checkpointsurgeon.kafka.KafkaSourceSurgeryTest.range;
import static org.junit.Assert.assertEquals;

/**
 * The upgrade path of the seed's team: a savepoint migrated with {@code kafka migrate-legacy} for
 * Flink 1.20.3 and connector 3.4 (by MigrateLegacyTest in the Flink 1.20.3 suite, which runs
 * first) restores on Flink 2.x with connector 5.x, whose enumerator reads version 2 of its state
 * (connector 5 removed FlinkKafkaConsumer, so this is the only way the old offsets get there).
 * The topic is produced again with the same records, so the offsets mean the same records.
 */
public class MigratedOn120Test {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();

    @Test
    public void aSavepointMigratedForFlink120RestoresOnFlink2() throws Exception {
        Path handOver = Path.of(System.getProperty(KafkaJobs.HAND_OVER, "none"));
        Assume.assumeTrue("run the Flink 1.20.3 suite first (gradle testFlink120 testFlink23): no " + handOver,
                Files.isDirectory(handOver.resolve("savepoint")));
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(handOver.resolve("starting-offsets.properties"))) {
            p.load(r);
        }
        Map<String, Long> starts = new TreeMap<>();
        p.forEach((k, v) -> starts.put((String) k, Long.parseLong((String) v)));
        Map<String, Long> ends = new TreeMap<>();
        for (String tp : starts.keySet()) ends.put(tp, (long) KafkaJobs.NUMBERS_END);

        try (KafkaBroker broker = KafkaBroker.start(TMP.newFolder("kafka").toPath())) {
            broker.createTopic(KafkaJobs.NUMBERS, starts.size());
            KafkaJobs.produce(broker, KafkaJobs.NUMBERS, starts.size(), 0, KafkaJobs.NUMBERS_END);
            String run = "flink2-from-1.20-migration";
            KafkaJobs.job(run, KafkaJobs.conf(TMP.newFolder("v2").toPath(), handOver.resolve("savepoint").toUri().toString()), 3,
                    env -> record(KafkaJobs.kafkaSource(env, broker.bootstrapServers(), List.of(KafkaJobs.NUMBERS),
                            OffsetsInitializer.latest()), run, 0))
                    .readyWhen(() -> readToEnd(run, ends)).checkpointsAfterReady(1).run().orThrow();
            Map<String, List<Long>> read = read(run);
            assertEquals(starts.keySet(), read.keySet());
            long records = 0;
            for (Map.Entry<String, Long> e : starts.entrySet()) {
                assertEquals(e.getKey(), range(e.getValue(), KafkaJobs.NUMBERS_END), read.get(e.getKey()));
                records += read.get(e.getKey()).size();
            }
            System.out.printf("1.20-migrated savepoint on Flink 2.x: %d records, 0 missing, 0 duplicates%n", records);
        }
    }
}
