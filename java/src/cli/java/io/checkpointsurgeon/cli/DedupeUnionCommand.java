package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "dedupe-union", mixinStandardHelpOptions = true,
        description = "Keep exactly one copy of each distinct element of a union list state.")
final class DedupeUnionCommand extends SurgeryCommand {
    @Option(names = "--state", required = true, paramLabel = "NAME", description = "the union state name")
    String state;

    @Override
    Surgery surgery() {
        return Surgery.dedupeUnion(selection.selector(true), state);
    }
}
