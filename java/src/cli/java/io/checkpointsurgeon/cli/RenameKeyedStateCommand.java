package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "rename-keyed-state", mixinStandardHelpOptions = true,
        description = "Rename a keyed state of the selected operators (or of every operator that has it), so that a "
                + "job registering the new name with the old type reads every old value: for new code that keeps "
                + "the old state under another name, or an old name that must match new code. In every kind of "
                + "keyed snapshot. RocksDB has no rename: on RocksDB handles the MANIFEST is written anew with the "
                + "record that adds the column family naming the new name, as RocksDB would have written it; no SST "
                + "file changes.")
final class RenameKeyedStateCommand extends SurgeryCommand {
    @Option(names = "--state", required = true, paramLabel = "OLD", description = "the keyed state's name in the checkpoint")
    String state;

    @Option(names = "--to", required = true, paramLabel = "NEW", description = "its new name")
    String to;

    @Mixin
    KeyedOptions keyed = new KeyedOptions();

    @Override
    Surgery surgery() {
        return keyed.apply(Surgery.renameKeyedState(selection.selector(true), state, to));
    }
}
