package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "set-offsets", mixinStandardHelpOptions = true,
        description = "Set the starting offset of a topic's KafkaSource splits (or one partition's): the first record"
                + " the restored job reads from it. The enumerator state is updated where it holds offsets.")
final class KafkaSetOffsetsCommand extends SurgeryCommand {
    @CommandLine.Mixin
    TopicPartitionMixin tp = new TopicPartitionMixin();

    @CommandLine.ArgGroup(exclusive = true, multiplicity = "1")
    Start start;

    /** The new starting offset: exactly one of these. */
    static final class Start {
        @Option(names = "--offset", paramLabel = "N", description = "start at offset N")
        Long offset;

        @Option(names = "--earliest", description = "start at the earliest offset")
        boolean earliest;

        @Option(names = "--latest", description = "start at the latest offset")
        boolean latest;

        @Option(names = "--committed", description = "start at the group's committed offset")
        boolean committed;

        @Option(names = "--shift", paramLabel = "DELTA", description = "move the current offset by DELTA (+ or -)")
        Long shift;
    }

    @Override
    Surgery surgery() {
        Surgery.KafkaStart to = start.offset != null ? Surgery.KafkaStart.at(start.offset)
                : start.shift != null ? Surgery.KafkaStart.shift(start.shift)
                : start.earliest ? Surgery.KafkaStart.earliest()
                : start.latest ? Surgery.KafkaStart.latest() : Surgery.KafkaStart.committed();
        return Surgery.setKafkaOffsets(selection.selector(true), tp.topic, tp.partition, to);
    }
}
