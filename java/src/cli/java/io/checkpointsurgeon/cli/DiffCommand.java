package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.internal.Json;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "diff", mixinStandardHelpOptions = true,
        description = "Compare two checkpoints: per operator and state the elements, bytes and distinct values in A and"
                + " in B, the growth factor, states added or removed, and keyed and coordinator state sizes (with"
                + " --keyed every keyed state's entries and bytes); finds a union state multiplied by the parallelism"
                + " on every restore in between (any number of restores). Exits 4 on that finding, or, with"
                + " --max-growth, when a state grew by more.")
final class DiffCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "A", description = "the older checkpoint or savepoint")
    String a;

    @Parameters(index = "1", paramLabel = "B", description = "the newer checkpoint or savepoint")
    String b;

    @CommandLine.Mixin
    JsonMixin json = new JsonMixin();

    @Option(names = "--max-growth", paramLabel = "FACTOR", description = "exit 4 when a state's element count grew by"
            + " more than FACTOR from A to B")
    Double maxGrowth;

    @Option(names = "--keyed", description = "also compare the keyed states (entries and bytes per state; reads the"
            + " keyed state's files, see inspect --keyed)")
    boolean keyed;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        fs.apply(a);
        fs.apply(b);
        Growth.Diff d = Growth.diff(CheckpointSurgeon.inspect(a), CheckpointSurgeon.inspect(b),
                keyed ? CheckpointSurgeon.inspectKeyed(a) : null, keyed ? CheckpointSurgeon.inspectKeyed(b) : null);
        PrintWriter out = out();
        String bDir = TextRenderer.checkpointDir(b);
        out.print(json.json ? CliSpelling.json(d) : TextRenderer.diff(d, bDir));
        out.flush();
        if (maxGrowth != null && d.maxFactor() > maxGrowth) {
            err().println(TextRenderer.grewTooMuch(d.maxFactor(), maxGrowth));
            return Cli.FINDINGS;
        }
        // --max-growth is the gate when given; else the signature of a union state nothing reads
        return maxGrowth == null && !d.findings().isEmpty() ? Cli.FINDINGS : Cli.OK;
    }
}
