package io.checkpointsurgeon.kafka;

import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.KafkaBroker;
import io.checkpointsurgeon.testing.MiniClusterJob;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * The jobs of the Kafka surgery tests: a source under uid {@value #SOURCE_UID} reads numbered
 * records from a real broker; a map after it records the position ({@code topic-partition@offset})
 * of every record it sees, per run, and slows the job down so that a savepoint lands mid-topic.
 */
public final class KafkaJobs {
    public static final String SOURCE_UID = "kafka-source";

    /**
     * The numbered topic of MigrateLegacyTest: {@value #NUMBERS_FIRST} records per partition before
     * the legacy savepoint, {@value #NUMBERS_END} in all. MigratedOn120Test produces the same records.
     */
    static final String NUMBERS = "numbers";
    static final int NUMBERS_PARTITIONS = 4, NUMBERS_FIRST = 600, NUMBERS_END = 700;
    /** Where the Flink 1.20 suite leaves its migrated savepoint for the Flink 2.x suite (set by the build). */
    static final String HAND_OVER = "kafka.migrated.handOver";

    /** The positions each run read, in order, by run name. */
    static final Map<String, Queue<String>> SEEN = new ConcurrentHashMap<>();

    private KafkaJobs() {}

    /** Records [from, to) to every partition of the topic: the value is "topic-partition@index". */
    static void produce(KafkaBroker broker, String topic, int partitions, int from, int to) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int partition = 0; partition < partitions; partition++) {
                for (int i = from; i < to; i++) {
                    producer.send(new ProducerRecord<>(topic, partition, null, topic + "-" + partition + "@" + i));
                }
            }
            producer.flush();
        }
    }

    /** A local job with checkpoints every 200 ms, no restarts, restored from {@code restoreFrom} if not null. */
    static Configuration conf(Path work, String restoreFrom) {
        Configuration c = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                work.resolve("savepoints").toUri().toString(), "200ms", 1);
        FlinkConf.noRestarts(c);
        if (restoreFrom != null) FlinkConf.restoreFrom(c, restoreFrom);
        return c;
    }

    /** A KafkaSource on {@code topics}; new splits start at {@code start}; no offsets are committed. */
    static DataStream<String> kafkaSource(StreamExecutionEnvironment env, String bootstrap, List<String> topics,
                                          OffsetsInitializer start) {
        KafkaSource<String> source = KafkaSource.<String>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topics)
                .setGroupId("kafka-surgery-test")
                .setStartingOffsets(start)
                .setDeserializer(new Positions())
                .setProperty("commit.offsets.on.checkpoint", "false")
                .setProperty("enable.auto.commit", "false")
                .build();
        return env.fromSource(source, WatermarkStrategy.noWatermarks(), SOURCE_UID).uid(SOURCE_UID).name(SOURCE_UID);
    }

    /** Records what the source read under {@code run}, sleeping {@code sleepMillis} per record. */
    static void record(DataStream<String> positions, String run, long sleepMillis) {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        DataStream<String> seen = positions.map(new Record(run, sleepMillis)).returns(Types.STRING).uid("record").name("record");
        Shims.discard(seen, "sink");
    }

    /** A run of a job on this configuration, of parallelism {@code parallelism}. */
    static MiniClusterJob job(String run, Configuration conf, int parallelism, Consumer<StreamExecutionEnvironment> topology) {
        return MiniClusterJob.of(run, conf, parallelism, topology).timeout(Duration.ofSeconds(120));
    }

    /** "topic-partition" to the offsets the run read, in the order read. */
    static Map<String, List<Long>> read(String run) {
        Map<String, List<Long>> out = new TreeMap<>();
        for (String s : SEEN.getOrDefault(run, new ConcurrentLinkedQueue<>())) {
            int at = s.lastIndexOf('@');
            out.computeIfAbsent(s.substring(0, at), x -> new ArrayList<>()).add(Long.parseLong(s.substring(at + 1)));
        }
        return out;
    }

    /** Whether the run has read every partition of {@code ends} ("topic-partition" to its end offset) to the end. */
    static boolean readToEnd(String run, Map<String, Long> ends) {
        Map<String, List<Long>> read = read(run);
        for (Map.Entry<String, Long> e : ends.entrySet()) {
            List<Long> offsets = read.get(e.getKey());
            if (offsets == null || !offsets.contains(e.getValue() - 1)) return false;
        }
        return true;
    }

    static int count(String run) {
        return SEEN.getOrDefault(run, new ConcurrentLinkedQueue<>()).size();
    }

    /** The position of each record: "topic-partition@offset". */
    public static final class Positions implements KafkaRecordDeserializationSchema<String> {
        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<String> out) {
            out.collect(record.topic() + "-" + record.partition() + "@" + record.offset());
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }
    }

    static final class Record implements MapFunction<String, String> {
        private final String run;
        private final long sleepMillis;

        Record(String run, long sleepMillis) {
            this.run = run;
            this.sleepMillis = sleepMillis;
        }

        @Override
        public String map(String position) throws Exception {
            SEEN.get(run).add(position);
            if (sleepMillis > 0) Thread.sleep(sleepMillis);
            return position;
        }
    }
}
