package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The surgeries on a checkpoint (remove-state, dedupe-union, rename-operator, relocate, kafka ...):
 * plan by default; --apply writes to --output (a new directory) or --in-place. A subclass builds
 * the {@link Surgery} from its options.
 */
abstract class SurgeryCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file or the checkpoint/savepoint directory;"
            + " local, or a Flink path such as s3://bucket/checkpoints/<job>/chk-42")
    String path;

    @CommandLine.Mixin
    OperatorSelectionMixin selection = new OperatorSelectionMixin();

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Option(names = "--apply", description = "write the result (without it, only the plan is printed)")
    boolean apply;

    @Option(names = "--output", paramLabel = "DIR", description = "new checkpoint directory to write (must not exist or be empty);"
            + " a Flink path such as s3://... for a remote checkpoint")
    String output;

    @Option(names = "--in-place", description = "replace _metadata where it is, keeping _metadata.backup-<millis>")
    boolean inPlace;

    @Option(names = "--copy-unchanged", description = "copy unchanged state files into --output instead of hard-linking"
            + " them (for a Flink path --output: copy them even when they hold more than 1 GiB, above which they"
            + " are referenced by default)")
    boolean copyUnchanged;

    @Option(names = "--reference-unchanged", description = "with --output: the new _metadata references the unchanged"
            + " state files in the old directory (absolute paths) instead of linking or copying them, so only"
            + " rewritten bytes move; the new checkpoint then depends on the old directory")
    boolean referenceUnchanged;

    @Option(names = "--json", description = "print the plan (and result) as JSON")
    boolean json;

    /** The surgery of this command's options; an IllegalArgumentException is a usage error. */
    abstract Surgery surgery() throws CheckpointSurgeonException;

    /**
     * A check of the plan ({@code planned}, or null with --apply) before anything is written;
     * an exit code stops the command (relocate --check).
     */
    Integer check(Surgery surgery, SurgeryPlan planned) throws CheckpointSurgeonException {
        return null;
    }

    @Override
    public Integer call() throws CheckpointSurgeonException {
        Surgery surgery;
        try {
            surgery = surgery();
            if (copyUnchanged) surgery.copyUnchangedFiles();
            if (referenceUnchanged) {
                if (copyUnchanged || inPlace) {
                    throw new IllegalArgumentException("--reference-unchanged goes with --output, without --copy-unchanged");
                }
                surgery.referenceUnchangedFiles();
            }
            if (apply && (output == null) == !inPlace) {
                throw new IllegalArgumentException("--apply needs exactly one of --output DIR and --in-place");
            }
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        fs.apply(path);
        SurgeryPlan planned = apply ? null : CheckpointSurgeon.plan(path, surgery);
        Integer refused = check(surgery, planned);
        if (refused != null) return refused;
        SurgeryPlan plan = planned != null ? planned
                : inPlace ? CheckpointSurgeon.applyInPlace(path, surgery)
                : CheckpointSurgeon.apply(path, surgery, output);
        PrintWriter out = out();
        out.print(json ? plan.toJson() : TextRenderer.plan(plan));
        out.flush();
        return Cli.OK;
    }
}
