package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "remove-keyed-state", mixinStandardHelpOptions = true,
        description = "Remove a keyed state (value, list, map, reducing, aggregating state or a timer queue) from the "
                + "selected operators, or from every operator that has it: its meta info and every entry, in "
                + "canonical savepoints, heap checkpoints and RocksDB native savepoints and incremental checkpoints "
                + "(the column family is dropped in the instance's MANIFEST; no SST file is rewritten). The other "
                + "states, timers and operator state are kept. For a job that fails with StateMigrationException "
                + "after a state's type changed, or a state it no longer needs.")
final class RemoveKeyedStateCommand extends SurgeryCommand {
    @Option(names = "--state", required = true, paramLabel = "NAME", description = "the keyed state's name, as the job registers it")
    String state;

    @Mixin
    KeyedOptions keyed = new KeyedOptions();

    @Override
    Surgery surgery() {
        return keyed.apply(Surgery.removeKeyedState(selection.selector(true), state));
    }
}
