package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "rename-operator", mixinStandardHelpOptions = true,
        description = "Give an operator a new uid (its id becomes Flink's hash of it) or a new operator id. All its"
                + " state moves with it: operator, keyed and channel state of every subtask, the coordinator state"
                + " (a FLIP-27 source's enumerator) and finished markers; in Flink 2.x metadata also the stored uid"
                + " and name. --map renames many operators at once.")
final class RenameOperatorCommand extends SurgeryCommand {
    @Option(names = "--to-uid", paramLabel = "UID", description = "the new uid")
    String toUid;

    @Option(names = "--to-operator-id", paramLabel = "HEX", description = "the new operator id (32 hex digits)")
    String toId;

    @Option(names = "--to-name", paramLabel = "NAME", description = "the new operator name (Flink 2.x metadata, V5+,"
            + " only); alone, the operator keeps its id and uid")
    String toName;

    @Option(names = "--map", paramLabel = "FILE", description = "lines 'OLD NEW': OLD an operator id (32 hex digits,"
            + " as inspect prints it) or a uid, NEW the new uid; separated by a tab, or by spaces when neither"
            + " contains one; blank lines and lines starting with # are skipped")
    Path map;

    @Override
    Surgery surgery() throws CheckpointSurgeonException {
        if (map == null) {
            if (toUid != null && toId != null || toUid == null && toId == null && toName == null) {
                throw new IllegalArgumentException("give one of --to-uid and --to-operator-id, or --to-name alone (a new"
                        + " name, same uid: Flink 2.x metadata), or --map FILE");
            }
            return Surgery.rename(selection.selector(false), toUid, toId, toName);
        }
        if (toUid != null || toId != null || toName != null || selection.given()) {
            throw new IllegalArgumentException("--map takes the place of the operator and --to-... options");
        }
        return Surgery.renameOperators(map);
    }
}
