package io.checkpointsurgeon.cli;

import picocli.CommandLine.Command;

/** The Kafka source surgeries, one subcommand each. */
@Command(name = "kafka", mixinStandardHelpOptions = true,
        description = "Kafka source state: move a FlinkKafkaConsumer's offsets into KafkaSource state, drop a topic"
                + " a KafkaSource no longer reads, set starting offsets. Plans by default, like every surgery.",
        subcommands = {KafkaMigrateLegacyCommand.class, KafkaDropTopicCommand.class, KafkaSetOffsetsCommand.class})
final class KafkaCommand {
}
