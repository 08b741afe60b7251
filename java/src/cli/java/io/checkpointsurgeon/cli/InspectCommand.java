package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

    @Option(names = "--keyed", description = "also read the keyed state: per operator and keyed state its type,"
            + " serializers, TTL, entries and bytes, in total and per subtask, without the job's classes. Reads"
            + " every keyed state file (a canonical savepoint's and heap checkpoint's in full, a RocksDB checkpoint's"
            + " SST files at their last few KiB; on Flink paths in ranges, nothing is downloaded). With --json the"
            + " output is {\"inspect\": report, \"keyed\": keyed report}")
    boolean keyed;

    @Option(names = "--html", paramLabel = "FILE", description = "also write an HTML report to FILE (a new file):"
            + " where the bytes are, per operator and state, and the findings of doctor")
    Path html;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        fs.apply(path);
        InspectReport r = Prefetch.inspect(path);
        KeyedReport k = keyed ? CheckpointSurgeon.inspectKeyed(path) : null;
        PrintWriter out = out();
        if (json && k != null) {
            Map<String, Object> both = new LinkedHashMap<>();
            both.put("inspect", r);
            both.put("keyed", k);
            out.print(CliSpelling.json(both));
        } else {
            out.print(json ? r.toJson() : TextRenderer.inspect(r, subtasks));
            if (k != null) out.print(TextRenderer.keyed(k, subtasks));
        }
        out.flush();
        if (html != null) {
            List<CheckpointSurgeon.Finding> findings = CheckpointSurgeon.doctor(r, path);
            if (k != null) {
                findings = new ArrayList<>(findings);
                findings.addAll(CheckpointSurgeon.doctorKeyed(r, k, null, null));
            }
            NewFile.write(html, "--html", HtmlReport.inspect(r, k, findings, remedy -> TextRenderer.command(remedy, path)));
        }
        return Cli.OK;
    }
}
