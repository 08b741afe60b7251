package io.checkpointsurgeon.cli;

import picocli.CommandLine.Option;

/** The topic and partition options of kafka drop-topic and set-offsets. */
final class TopicPartitionMixin {
    @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic")
    String topic;

    @Option(names = "--partition", paramLabel = "P", description = "only this partition (default: every partition of the topic)")
    Integer partition;
}
