package io.checkpointsurgeon.legacy;

import java.io.Serializable;

/**
 * Stands in for the legacy Kafka consumer's {@code KafkaTopicPartition}: not a POJO (final fields,
 * no default constructor), so Flink serializes it with Kryo and the serializer snapshot names this
 * class. It lives only in the generator's source sets (tests/generator/legacy), never on the test
 * classpath: restoring a checkpoint whose state header names it fails there, as restoring a
 * FlinkKafkaConsumer checkpoint fails on Flink 2.x where KafkaTopicPartition is gone.
 */
public final class LegacyTopicPartition implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String topic;
    private final int partition;

    public LegacyTopicPartition(String topic, int partition) {
        this.topic = topic;
        this.partition = partition;
    }

    public String getTopic() {
        return topic;
    }

    public int getPartition() {
        return partition;
    }

    @Override
    public String toString() {
        return topic + "-" + partition;
    }
}
