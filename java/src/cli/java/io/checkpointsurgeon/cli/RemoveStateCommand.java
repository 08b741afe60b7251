package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "remove-state", mixinStandardHelpOptions = true,
        description = "Remove a named operator state (list, union or broadcast) from the selected operators, "
                + "or from every operator that has it. By default the state is purged: its header entry and "
                + "elements are cut out of every stream, so Flink no longer needs its classes.")
final class RemoveStateCommand extends SurgeryCommand {
    @Option(names = "--state", required = true, paramLabel = "NAME", description = "the state name, e.g. topic-partition-offset-states")
    String state;

    @Option(names = "--metadata-only", description = "only drop the name from _metadata's handle maps (streams untouched)")
    boolean metadataOnly;

    @Override
    Surgery surgery() {
        Surgery s = Surgery.removeState(selection.selector(true), state);
        return metadataOnly ? s.metadataOnly() : s;
    }
}
