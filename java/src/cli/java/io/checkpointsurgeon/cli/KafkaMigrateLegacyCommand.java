package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "migrate-legacy", mixinStandardHelpOptions = true,
        description = "Turn the FlinkKafkaConsumer state (topic-partition-offset-states) of the source into KafkaSource"
                + " state under the same uid: one split per partition, starting after the last offset the job"
                + " processed, in the reader the KafkaSource enumerator assigns it to, and the enumerator's state in"
                + " the operator's coordinator state; the legacy state is purged. The plan lists every partition"
                + " with its legacy offset and its new starting offset.")
final class KafkaMigrateLegacyCommand extends SurgeryCommand {
    @Option(names = "--connector-version", paramLabel = "VERSION", description = "the Kafka connector of the new job:"
            + " 1.15.4 (bundled with Flink 1.14-1.16), 3.0.x, 3.4.0-1.20, 4.0.1-2.0, 5.0.0-2.2, ...; default: the"
            + " connector on the class path")
    String connectorVersion;

    @Option(names = "--parallelism", paramLabel = "N", description = "the new job's source parallelism (default: the"
            + " operator's parallelism in the checkpoint)")
    Integer parallelism;

    @Option(names = "--offset-not-set", paramLabel = "MARKER", description = "where a partition whose legacy offset"
            + " is OFFSET_NOT_SET starts: earliest, latest or committed (default: refuse)")
    String offsetNotSet;

    @Override
    Surgery surgery() {
        int version;
        if (connectorVersion != null) {
            version = Surgery.kafkaEnumeratorStateVersion(connectorVersion);
        } else {
            version = Surgery.detectKafkaEnumeratorStateVersion(Cli.class.getClassLoader());
            if (version < 0) {
                throw new IllegalArgumentException("no Kafka connector on the class path: give --connector-version"
                        + " (the flink-connector-kafka version of the new job)");
            }
        }
        return Surgery.migrateKafkaLegacy(selection.selector(true), version, parallelism,
                offsetNotSet == null ? null : Surgery.KafkaStart.marker(offsetNotSet));
    }
}
