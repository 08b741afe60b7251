package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.flink.HaStore;
import io.checkpointsurgeon.flink.PointerRemoval;
import java.io.PrintWriter;
import java.nio.file.Path;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code ha remove-checkpoint}: takes a checkpoint out of a cluster's completed checkpoint store (a
 * ZooKeeper node or a ConfigMap key), as Flink's CompletedCheckpointStore removes one, so that a
 * JobManager recovers from the next retained checkpoint instead of failing on a broken one.
 */
@Command(name = "remove-checkpoint", mixinStandardHelpOptions = true,
        description = "Remove a checkpoint's pointer from the cluster's HA store (ZooKeeper node or ConfigMap key):"
                + " a JobManager then recovers the job from the next retained checkpoint. Plans by default; --apply"
                + " keeps the pointer's exact value in a new file, removes the pointer compare-and-set, and moves its"
                + " completedCheckpoint file aside (renamed, never deleted). Refuses a checkpoint that restores"
                + " (--even-if-restorable) and a running JobManager (--force). Stop the JobManager first.")
final class HaRemoveCheckpointCommand extends BaseCommand {
    @Option(names = "--checkpoint-id", paramLabel = "N", required = true, description = "the checkpoint to remove")
    long checkpointId;

    @Option(names = "--job-id", paramLabel = "ID", description = "the job (needed when several jobs have checkpoint N)")
    String jobId;

    @Option(names = "--zookeeper-quorum", paramLabel = "HOSTS", description = "ZooKeeper HA: the cluster's ZooKeeper")
    String zookeeperQuorum;

    @Option(names = "--zookeeper-root", paramLabel = "PATH", description = "high-availability.zookeeper.path.root"
            + " (default: /flink)")
    String zookeeperRoot = "/flink";

    @CommandLine.Mixin
    KubernetesMixin k8s = new KubernetesMixin();

    @Option(names = "--backup-dir", paramLabel = "DIR", description = "where the pointer's value and the log are kept"
            + " (default: the directory of its completedCheckpoint file)")
    Path backupDir;

    @Option(names = "--apply", description = "remove the pointer (its value and file are kept)")
    boolean apply;

    @Option(names = "--even-if-restorable", description = "remove the pointer even though its checkpoint restores"
            + " (the job then loses the progress since the checkpoint it recovers from)")
    boolean evenIfRestorable;

    @Option(names = "--force", description = "remove even though a JobManager holds the leadership")
    boolean force;

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (k8s.kubernetes == (zookeeperQuorum != null)) {
            throw usage("give --zookeeper-quorum HOSTS or --kubernetes (where the cluster keeps its checkpoint pointers)");
        }
        PrintWriter out = out();
        try (HaStore store = k8s.store(spec, zookeeperQuorum, zookeeperRoot)) {
            PointerRemoval.Plan plan;
            try {
                plan = PointerRemoval.plan(store, checkpointId, jobId);
            } catch (PointerRemoval.AmbiguousJob e) {
                throw usage(e.getMessage() + ": give --job-id");
            }
            out.println(TextRenderer.pointerToRemove(plan));
            plan.requireExamined();
            if (plan.problem == null) {
                String msg = TextRenderer.removalLosesProgress(plan);
                if (!evenIfRestorable) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, msg
                            + "; give --even-if-restorable to remove it anyway");
                }
                err().println("WARNING (--even-if-restorable): " + TextRenderer.printable(msg));
            } else {
                out.println(TextRenderer.unrecoverable(plan));
            }
            out.println(TextRenderer.afterRemoval(plan));
            if (!apply) {
                out.println(TextRenderer.wouldRemove(plan));
                out.flush();
                return Cli.OK;
            }
            HaRepairCommand.refuseWhileLeading(store.liveLeader(), force, err(), "removing its checkpoint pointers");
            Path file = plan.pointer.file;
            Path dir = backupDir != null ? backupDir : file != null ? file.getParent() : null;
            if (dir == null) throw usage(plan.name + " names no local completedCheckpoint file: give --backup-dir DIR");
            PointerRemoval.apply(store, plan, dir, TextRenderer.removal(out, plan));
        }
        out.flush();
        return Cli.OK;
    }
}
