package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine;
import picocli.CommandLine.Command;

@Command(name = "drop-topic", mixinStandardHelpOptions = true,
        description = "Remove a topic's splits (or one partition's) from every KafkaSource reader and from the"
                + " enumerator state, so that a job that no longer subscribes to the topic stops reading it"
                + " (a restored KafkaSource keeps reading removed topics: FLINK-34089).")
final class KafkaDropTopicCommand extends SurgeryCommand {
    @CommandLine.Mixin
    TopicPartitionMixin tp = new TopicPartitionMixin();

    @Override
    Surgery surgery() {
        return Surgery.dropKafkaTopic(selection.selector(true), tp.topic, tp.partition);
    }
}
