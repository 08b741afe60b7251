package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "inspect", mixinStandardHelpOptions = true,
        description = "Show every operator of a checkpoint or savepoint, its states, and their sizes.")
final class InspectCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file or the checkpoint/savepoint directory;"
            + " local, or a Flink path such as s3://bucket/checkpoints/<job>/chk-42")
    String path;

    @Option(names = "--json", description = "print the full report as JSON")
    boolean json;

    @Option(names = "--subtasks", description = "also list every subtask's handles")
    boolean subtasks;

    @Option(names = "--html", paramLabel = "FILE", description = "also write an HTML report to FILE (a new file):"
            + " where the bytes are, per operator and state, and the findings of doctor")
    Path html;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        fs.apply(path);
        InspectReport r = Prefetch.inspect(path);
        PrintWriter out = out();
        out.print(json ? r.toJson() : TextRenderer.inspect(r, subtasks));
        out.flush();
        if (html != null) {
            List<CheckpointSurgeon.Finding> findings = CheckpointSurgeon.doctor(r, path);
            NewFile.write(html, "--html", HtmlReport.inspect(r, findings, remedy -> TextRenderer.command(remedy, path)));
        }
        return Cli.OK;
    }
}
