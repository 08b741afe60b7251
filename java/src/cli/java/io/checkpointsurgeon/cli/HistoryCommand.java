package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.internal.Json;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "history", mixinStandardHelpOptions = true,
        description = "The series of every state over a job's checkpoints: give checkpoint or savepoint directories,"
                + " or a job's checkpoint directory (its chk-* are taken). Finds a union state that is multiplied by"
                + " the parallelism from checkpoint to checkpoint, the signature of a state nothing reads, while it is"
                + " still small; exits 4 when it finds one.")
final class HistoryCommand extends BaseCommand {
    @Parameters(arity = "1..*", paramLabel = "PATH", description = "checkpoints, savepoints, or directories holding them")
    List<String> paths;

    @CommandLine.Mixin
    JsonMixin json = new JsonMixin();

    @Option(names = "--svg", paramLabel = "FILE", description = "also write the chart of element counts to FILE (a new file)")
    Path svg;

    @Option(names = "--html", paramLabel = "FILE", description = "also write an HTML report to FILE (a new file):"
            + " the findings, the chart and series, and where the bytes of the newest checkpoint are")
    Path html;

    @Option(names = "--keyed", description = "also follow every keyed state's entries and bytes (reads the keyed"
            + " state's files of every checkpoint, see inspect --keyed)")
    boolean keyed;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        List<InspectReport> reports = new ArrayList<>();
        List<KeyedReport> keyedReports = keyed ? new ArrayList<>() : null;
        for (String p : paths) {
            for (String cp : CheckpointSurgeon.checkpointsUnder(p)) {
                fs.apply(cp);
                reports.add(CheckpointSurgeon.inspect(cp));
                if (keyed) keyedReports.add(CheckpointSurgeon.inspectKeyed(cp));
            }
        }
        if (reports.isEmpty()) {
            throw usage("no checkpoint under " + paths);
        }
        Growth.History h = Growth.history(reports, keyedReports);
        Growth.Checkpoint last = h.checkpoints().get(h.checkpoints().size() - 1);
        String lastDir = TextRenderer.checkpointDir(last.path());
        PrintWriter out = out();
        out.print(json.json ? CliSpelling.json(h) : TextRenderer.history(h, lastDir));
        out.flush();
        if (svg != null) NewFile.write(svg, "--svg", SvgChart.of(h));
        if (html != null) {
            InspectReport newest = Collections.max(reports, Comparator.comparingLong(InspectReport::checkpointId));
            NewFile.write(html, "--html", HtmlReport.history(h, newest, remedy -> TextRenderer.command(remedy, lastDir)));
        }
        return h.findings().isEmpty() ? Cli.OK : Cli.FINDINGS;
    }
}
