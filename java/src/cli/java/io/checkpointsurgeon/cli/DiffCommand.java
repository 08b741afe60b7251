package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Growth;
import java.io.PrintWriter;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "diff", mixinStandardHelpOptions = true,
        description = "Compare two checkpoints: per operator and state the elements, bytes and distinct values in A and"
                + " in B, the growth factor, states added or removed, and keyed and coordinator state sizes.")
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

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        fs.apply(a);
        fs.apply(b);
        Growth.Diff d = Growth.diff(CheckpointSurgeon.inspect(a), CheckpointSurgeon.inspect(b));
        PrintWriter out = out();
        out.print(json.json ? d.toJson() : TextRenderer.diff(d));
        out.flush();
        if (maxGrowth != null && d.maxFactor() > maxGrowth) {
            err().printf(Locale.ROOT, "a state grew by x%.2f, more than --max-growth %s%n",
                    d.maxFactor(), maxGrowth);
            return Cli.FINDINGS;
        }
        return Cli.OK;
    }
}
