package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "relocate", mixinStandardHelpOptions = true,
        description = "Rewrite every absolute path under --from to lie under --to, for a checkpoint that was copied"
                + " or moved to another directory, bucket or cluster: file handles, incremental RocksDB shared and"
                + " private files, changelog files, file-merging segments and directories. Relative handles (files"
                + " next to _metadata) need nothing. A local --from without a scheme also matches file: URIs.")
final class RelocateCommand extends SurgeryCommand {
    @Option(names = "--from", required = true, paramLabel = "PREFIX", description = "the old location, e.g. s3://old-bucket/checkpoints")
    String from;

    @Option(names = "--to", required = true, paramLabel = "PREFIX", description = "the new location, e.g. s3://new-bucket/checkpoints")
    String to;

    @Option(names = "--check", description = "check that every rewritten path exists at its new place (through"
            + " Flink's FileSystem for Flink paths), list the missing ones and exit 2 if there are any; with"
            + " --apply, nothing is written then")
    boolean check;

    @Override
    Surgery surgery() {
        if (selection.given()) {
            throw new IllegalArgumentException("relocate rewrites the paths of every operator; it takes no operator selection");
        }
        return Surgery.relocate(from, to);
    }

    @Override
    Integer check(Surgery surgery, SurgeryPlan planned) throws CheckpointSurgeonException {
        if (!check) return null;
        // with --apply the check needs a plan of its own: nothing may be written before it
        SurgeryPlan plan = planned != null ? planned : CheckpointSurgeon.plan(path, surgery);
        List<String> paths = new ArrayList<>();
        for (SurgeryPlan.Relocation r : plan.relocated()) paths.add(r.newPath());
        List<String> missing = CheckpointSurgeon.missingFiles(paths);
        PrintWriter out = out();
        out.print(TextRenderer.relocationCheck(paths.size(), missing));
        out.flush();
        if (missing.isEmpty()) return null;
        err().println("error [VALIDATION]: " + missing.size() + " rewritten paths do not exist"
                + " under " + TextRenderer.printable(to) + (apply ? "; nothing was written" : "") + ". Copy the files there first.");
        return Cli.INVALID;
    }
}
