package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Command;

@Command(name = "remove-operator", mixinStandardHelpOptions = true,
        description = "Remove one operator and all its state (what allowNonRestoredState skips at restore, but for good).")
final class RemoveOperatorCommand extends SurgeryCommand {
    @Override
    Surgery surgery() {
        return Surgery.removeOperator(selection.selector(false));
    }
}
