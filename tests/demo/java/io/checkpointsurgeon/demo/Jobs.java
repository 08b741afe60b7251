package io.checkpointsurgeon.demo;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.connectors.kafka.FlinkKafkaConsumer;

import java.util.Properties;

/**
 * The two versions of the user's job. Both read numbered records from the input topic with the
 * source under uid {@value #SOURCE_UID}, count them per key (keyed state) and write
 * {@code "<number>,<key>,<count>"} to the output topic (at-least-once).
 * <ul>
 *   <li>v1: the legacy {@link FlinkKafkaConsumer}, offsets committed on checkpoints; it keeps its
 *       offsets in the union list state {@value #STALE_STATE}.</li>
 *   <li>v2: {@link KafkaSource} under the same uid, starting from the committed offsets (the
 *       migration path recommended by the Flink 1.14 release notes); its offsets are in
 *       {@code SourceReaderState}, and nothing reads {@value #STALE_STATE} any more.</li>
 * </ul>
 */
final class Jobs {
    static final String SOURCE_UID = "source_consumer";
    static final String STALE_STATE = "topic-partition-offset-states";
    static final String READER_STATE = "SourceReaderState";
    static final String GROUP_ID = "incident-demo";
    static final int KEYS = 16;

    private Jobs() {}

    static void build(StreamExecutionEnvironment env, boolean v1, String bootstrap, String input, String output,
                      int parallelism) {
        DataStream<String> raw;
        if (v1) {
            Properties props = new Properties();
            props.setProperty("bootstrap.servers", bootstrap);
            props.setProperty("group.id", GROUP_ID);
            FlinkKafkaConsumer<String> consumer = new FlinkKafkaConsumer<>(input, new SimpleStringSchema(), props);
            consumer.setStartFromEarliest();
            consumer.setCommitOffsetsOnCheckpoints(true);
            raw = env.addSource(consumer, SOURCE_UID).uid(SOURCE_UID).name(SOURCE_UID).setParallelism(parallelism);
        } else {
            KafkaSource<String> source = KafkaSource.<String>builder()
                    .setBootstrapServers(bootstrap)
                    .setTopics(input)
                    .setGroupId(GROUP_ID)
                    .setStartingOffsets(OffsetsInitializer.committedOffsets())
                    .setValueOnlyDeserializer(new SimpleStringSchema())
                    .build();
            raw = env.fromSource(source, WatermarkStrategy.noWatermarks(), SOURCE_UID)
                    .uid(SOURCE_UID).name(SOURCE_UID).setParallelism(parallelism);
        }
        DataStream<Long> numbers = raw.map(new Parse()).returns(Types.LONG).uid("parse").name("parse");
        DataStream<String> counted = numbers.keyBy(new ByKey(), Types.INT)
                .map(new CountPerKey()).uid("count-per-key").name("count-per-key");
        KafkaSink<String> sink = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic(output)
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliverGuarantee(DeliveryGuarantee.AT_LEAST_ONCE) // sic, Flink 1.15 spelling
                .build();
        counted.sinkTo(sink).uid("sink").name("sink");
    }

    static final class Parse implements MapFunction<String, Long> {
        @Override
        public Long map(String value) {
            return Long.parseLong(value.trim());
        }
    }

    static final class ByKey implements KeySelector<Long, Integer> {
        @Override
        public Integer getKey(Long value) {
            return (int) (value % KEYS);
        }
    }

    /** The small keyed transformation: a running count per key. */
    static final class CountPerKey extends RichMapFunction<Long, String> {
        private transient ValueState<Long> count;

        @Override
        public void open(Configuration parameters) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
        }

        @Override
        public String map(Long value) throws Exception {
            Long c = count.value();
            long next = c == null ? 1 : c + 1;
            count.update(next);
            return value + "," + (value % KEYS) + "," + next;
        }
    }
}
