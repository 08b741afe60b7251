package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.RecoverReport;
import io.checkpointsurgeon.flink.KubernetesHa;
import io.checkpointsurgeon.flink.PointerRemoval;
import io.checkpointsurgeon.flink.ZooKeeperLeader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
        try (KubernetesHa ha = k8s.connect(spec)) {
            String clusterId = k8s.clusterId == null ? "default" : k8s.clusterId;
            List<KubernetesHa.Pointer> all = ha != null ? ha.checkpointPointers()
                    : ZooKeeperLeader.checkpointPointers(zookeeperQuorum, zookeeperRoot, clusterId);
            KubernetesHa.Pointer p = select(all);
            String name = name(p);
            // names, ids and paths as the HA store and the checkpoint hold them: escaped, one line each
            out.printf("%s names checkpoint %d of job %s: %s%n", TextRenderer.printable(name), p.checkpointId,
                    TextRenderer.printable(p.jobId), TextRenderer.printable(p.target == null ? p.problem : p.target));
            String[] checkpoint = new String[1];
            String problem = problem(p, checkpoint);
            if (problem == null) {
                String msg = String.format(Locale.ROOT, "checkpoint %d (%s) restores: removing its pointer makes Flink"
                        + " recover an older checkpoint and lose the progress since", p.checkpointId, checkpoint[0]);
                if (!evenIfRestorable) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, msg
                            + "; give --even-if-restorable to remove it anyway");
                }
                err().println("WARNING (--even-if-restorable): " + TextRenderer.printable(msg));
            } else {
                out.println("  which Flink cannot recover from: " + TextRenderer.printable(problem));
            }
            out.println(TextRenderer.printable(afterwards(p, all)));
            if (!apply) {
                out.printf("would remove %s and move its completedCheckpoint file aside; nothing was changed"
                        + " (--apply removes it; stop the JobManager first)%n", TextRenderer.printable(name));
                out.flush();
                return Cli.OK;
            }
            String leader = ha != null ? ha.liveLeader() : ZooKeeperLeader.liveLeader(zookeeperQuorum, zookeeperRoot, clusterId);
            HaRepairCommand.refuseWhileLeading(leader, force, err(), "removing its checkpoint pointers");
            Path dir = backupDir != null ? backupDir : p.file != null ? p.file.getParent() : null;
            if (dir == null) throw usage(name + " names no local completedCheckpoint file: give --backup-dir DIR");
            String base = String.format(Locale.ROOT, "%s-checkpointID-%019d", p.jobId, p.checkpointId);
            Path kept = PointerRemoval.keep(dir, base + (ha != null ? ".configmap-value" : ".zookeeper-node")
                    + PointerRemoval.KEPT, p.value());
            out.println("kept the pointer's value in " + TextRenderer.printable(kept));
            try {
                if (ha != null) {
                    ha.remove(p);
                } else {
                    ZooKeeperLeader.remove(zookeeperQuorum, p);
                }
            } catch (CheckpointSurgeonException e) {
                throw new CheckpointSurgeonException(e.code(), e.getMessage() + " (this run's copy of the value, "
                        + kept + ", is left)", e);
            }
            out.println("removed " + TextRenderer.printable(name) + " (version " + TextRenderer.printable(p.version) + ")");
            StringBuilder log = new StringBuilder().append(Instant.now()).append(" removed ").append(name)
                    .append(" (version ").append(p.version).append("), checkpoint ").append(p.checkpointId).append(" of job ")
                    .append(p.jobId).append(", value kept in ").append(kept).append('\n');
            if (p.file != null && Files.isRegularFile(p.file)) {
                Path moved = PointerRemoval.moveAside(p.file);
                out.println("moved " + TextRenderer.printable(p.file) + " to " + TextRenderer.printable(moved));
                log.append(Instant.now()).append(" moved ").append(p.file).append(" to ").append(moved).append('\n');
            }
            Path logFile = PointerRemoval.keep(dir, base + ".removed.log", log.toString().getBytes(StandardCharsets.UTF_8));
            out.println("logged in " + TextRenderer.printable(logFile));
        }
        out.flush();
        return Cli.OK;
    }

    /** The one pointer of --checkpoint-id (and --job-id); NOTHING_SELECTED when there is none. */
    private KubernetesHa.Pointer select(List<KubernetesHa.Pointer> all) throws CheckpointSurgeonException {
        List<KubernetesHa.Pointer> found = new ArrayList<>();
        for (KubernetesHa.Pointer p : all) {
            if (p.checkpointId == checkpointId && (jobId == null || jobId.equals(p.jobId))) found.add(p);
        }
        if (found.isEmpty()) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "no pointer to checkpoint "
                    + checkpointId + (jobId == null ? "" : " of job " + jobId) + " in the cluster's "
                    + (k8s.kubernetes ? "HA ConfigMaps" : "ZooKeeper nodes") + ": nothing to remove");
        }
        if (found.size() > 1) {
            List<String> jobs = new ArrayList<>();
            for (KubernetesHa.Pointer p : found) jobs.add(p.jobId);
            throw usage("jobs " + jobs + " each have a checkpoint " + checkpointId + ": give --job-id");
        }
        return found.get(0);
    }

    private String name(KubernetesHa.Pointer p) {
        return k8s.kubernetes ? "ConfigMap " + p.configMap + " " + p.key : "ZooKeeper node " + p.configMap + "/" + p.key;
    }

    /**
     * Why Flink cannot recover from the pointer, or null when it can: a pointer Flink cannot read or
     * whose completedCheckpoint file is gone fails the JobManager's recovery of the job, a checkpoint
     * that does not restore fails the job's restore. {@code checkpoint[0]} gets the checkpoint's path.
     */
    private static String problem(KubernetesHa.Pointer p, String[] checkpoint) throws CheckpointSurgeonException {
        if (p.problem != null) return "the pointer cannot be read: " + p.problem;
        if (p.markedForDeletion) return "Flink marked it for deletion (it skips it on recovery)";
        if (p.file == null) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.UNSUPPORTED, p.target + ": a completedCheckpoint"
                    + " file on another file system is not examined here; nothing was changed");
        }
        if (!Files.isRegularFile(p.file)) return "its completedCheckpoint file " + p.file + " does not exist";
        CheckpointSurgeon.HaFileInfo info;
        try {
            info = CheckpointSurgeon.haFileInfo(p.file);
        } catch (CheckpointSurgeonException e) {
            return "its completedCheckpoint file cannot be read: " + e.getMessage();
        }
        checkpoint[0] = info.checkpointPath();
        if (checkpoint[0] == null) return "its completedCheckpoint file names no checkpoint directory";
        RecoverReport r;
        try {
            r = CheckpointSurgeon.recoverAt(List.of(checkpoint[0]), Map.of(), 8);
        } catch (CheckpointSurgeonException e) {
            return "the checkpoint " + checkpoint[0] + " cannot be examined: " + e.getMessage();
        }
        if (r.candidates().isEmpty()) return "the checkpoint " + checkpoint[0] + " has no _metadata";
        RecoverReport.Candidate c = r.candidates().get(0);
        if (c.verdict() == RecoverReport.Verdict.RESTORABLE) return null;
        return "the checkpoint " + checkpoint[0] + " does not restore: "
                + (c.reasons().isEmpty() ? c.verdict().toString() : c.reasons().get(0).toString());
    }

    /** What Flink recovers the job from once the pointer is gone, loudly when that is nothing. */
    private static String afterwards(KubernetesHa.Pointer removed, List<KubernetesHa.Pointer> all)
            throws CheckpointSurgeonException {
        KubernetesHa.Pointer next = null;
        for (KubernetesHa.Pointer p : all) {
            if (p == removed || p.markedForDeletion || !String.valueOf(p.jobId).equals(String.valueOf(removed.jobId))) continue;
            if (next == null || p.checkpointId > next.checkpointId) next = p;
        }
        if (next == null) {
            return "WARNING: no other checkpoint pointer of job " + removed.jobId + " is left: Flink then starts the job"
                    + " from execution.savepoint.path (-s), or without state";
        }
        String[] checkpoint = new String[1];
        String problem = next.file == null ? "not examined (on another file system)" : problem(next, checkpoint);
        return "afterwards Flink recovers job " + removed.jobId + " from checkpoint " + next.checkpointId + " ("
                + (checkpoint[0] != null ? checkpoint[0] : next.target) + "), "
                + (problem == null ? "which restores" : "WHICH DOES NOT RESTORE EITHER: " + problem);
    }
}
