package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.flink.HaStore;
import io.checkpointsurgeon.flink.KubernetesHa;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "repair", mixinStandardHelpOptions = true,
        description = "Remove (or de-duplicate) a state in HA completedCheckpoint files, or relocate them (--from,"
                + " --to) after their checkpoints moved. Plans by default; --apply rewrites each file in place after"
                + " a backup. Stop the JobManager first.")
final class HaRepairCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "PATH", description = "a completedCheckpoint file or the HA dir")
    Path path;

    @CommandLine.Mixin
    OperatorSelectionMixin selection = new OperatorSelectionMixin();

    @Option(names = "--state", paramLabel = "NAME", description = "the state name to remove (or de-duplicate)")
    String state;

    @Option(names = "--from", paramLabel = "PREFIX", description = "relocate: the old location of the checkpoints"
            + " (with --to): the state's absolute paths and the files' pointers to their checkpoint move")
    String from;

    @Option(names = "--to", paramLabel = "PREFIX", description = "relocate: the new location")
    String to;

    @Option(names = "--dedupe", description = "de-duplicate the union state instead of removing it")
    boolean dedupe;

    @Option(names = "--metadata-only", description = "only drop the name from the handle maps")
    boolean metadataOnly;

    @Option(names = "--apply", description = "rewrite the files (a backup of each is kept)")
    boolean apply;

    @CommandLine.Mixin
    JsonMixin json = new JsonMixin();

    @Option(names = "--zookeeper-quorum", paramLabel = "HOSTS", description = "with --apply: refuse (exit 2) while a"
            + " JobManager holds or waits for the cluster's leadership in this ZooKeeper (its leader latch)")
    String zookeeperQuorum;

    @CommandLine.Mixin
    KubernetesMixin k8s = new KubernetesMixin();

    @Option(names = "--zookeeper-root", paramLabel = "PATH", description = "high-availability.zookeeper.path.root"
            + " (default: /flink)")
    String zookeeperRoot = "/flink";

    @Option(names = "--force", description = "repair even though a JobManager holds the leadership (it will"
            + " overwrite or use the files it has in memory)")
    boolean force;

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (k8s.kubernetes && zookeeperQuorum != null) {
            throw usage("--kubernetes or --zookeeper-quorum, not both");
        }
        String leader = null;
        List<KubernetesHa.Pointer> pointers = null;
        try (HaStore store = k8s.store(spec, zookeeperQuorum, zookeeperRoot)) {
            if (store != null && apply) leader = store.liveLeader();
            // ZooKeeper serves the leader check only; the ConfigMaps' pointers also choose the files (README: HA repair)
            if (store != null && store.isKubernetes()) pointers = store.checkpointPointers();
        }
        if (apply) refuseWhileLeading(leader, force, err(), "repairing their HA files");
        if (apply && !force && zookeeperQuorum == null && !k8s.kubernetes) {
            err().println(TextRenderer.leadershipNotChecked());
        }
        Surgery s = surgery();
        PrintWriter out = out();
        if (!apply && !json.json) {
            out.println(TextRenderer.stopJobManagersFirst());
        }
        List<Path> files;
        if (pointers == null) {
            files = CheckpointSurgeon.haFiles(path);
        } else {
            // the files Flink recovers from; the other pointers and files are named and left alone
            KubernetesHa.RepairSelection selection = KubernetesHa.toRepair(pointers, path, CheckpointSurgeon.haFiles(path));
            err().print(TextRenderer.passedOver(selection, path));
            err().flush();
            files = selection.files();
        }
        // all-or-nothing with --apply: every file is staged and validated before any is switched
        List<CheckpointSurgeon.HaRepair> results = apply ? CheckpointSurgeon.repairHa(files, s)
                : CheckpointSurgeon.planHa(files, s);
        out.print(json.json ? CliSpelling.json(results) : TextRenderer.haRepair(results, apply));
        out.flush();
        return Cli.OK;
    }

    /**
     * Refuses (LOCKED, exit 2) while {@code leader} (a live leader as ZooKeeperLeader and
     * KubernetesHa find it) holds the cluster's leadership, unless {@code force}; then warns.
     */
    static void refuseWhileLeading(String leader, boolean force, PrintWriter err, String doing)
            throws CheckpointSurgeonException {
        if (leader == null) return;
        if (!force) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.LOCKED, leader
                    + ". Stop the JobManager(s) before " + doing + ", or give --force");
        }
        err.println(TextRenderer.forcedPastLeader(leader));
    }

    /** The surgery of the options: a relocation, and a removal or de-duplication of --state. */
    private Surgery surgery() {
        Surgery s = null;
        try {
            if ((from == null) != (to == null)) throw new IllegalArgumentException("--from and --to go together");
            if (from == null && state == null) throw new IllegalArgumentException("give --state NAME, or --from and --to");
            if (from != null) s = Surgery.relocate(from, to);
            if (state != null) {
                s = dedupe ? (s == null ? Surgery.dedupeUnion(selection.selector(true), state)
                        : s.andDedupeUnion(selection.selector(true), state))
                        : (s == null ? Surgery.removeState(selection.selector(true), state)
                        : s.andRemoveState(selection.selector(true), state));
            }
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        if (metadataOnly) s.metadataOnly();
        return s;
    }
}
