package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "clean-leftovers", mixinStandardHelpOptions = true,
        description = "List (and with --apply delete) what a checkpoint-surgeon repair killed before its switch"
                + " (SIGKILL) left in a local checkpoint directory: its staged _metadata.tmp-* and the state files"
                + " only those reference, named the way this tool names new files. Nothing else is ever deleted;"
                + " a directory a repair is running in is refused.")
final class CleanLeftoversCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "PATH", description = "a local checkpoint/savepoint directory or its _metadata")
    String path;

    @Option(names = "--apply", description = "delete them (each deletion is logged on stderr)")
    boolean apply;

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (CheckpointSurgeon.isFlinkPath(path)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.UNSUPPORTED, "clean-leftovers works on"
                    + " local directories; " + path + " is a Flink path");
        }
        Path local = CheckpointSurgeon.localPath(path);
        List<Path> files = apply ? CheckpointSurgeon.removeLeftovers(local) : CheckpointSurgeon.leftovers(local);
        PrintWriter out = out();
        out.print(TextRenderer.leftovers(path, files, apply));
        out.flush();
        return Cli.OK;
    }
}
