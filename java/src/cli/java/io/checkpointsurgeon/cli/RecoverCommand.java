package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.RecoverReport;
import io.checkpointsurgeon.flink.HaStore;
import io.checkpointsurgeon.flink.KubernetesHa;
import io.checkpointsurgeon.flink.PointerRemoval;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "recover", mixinStandardHelpOptions = true,
        description = "Find the newest checkpoint or savepoint under local directories or Flink paths (s3://bucket/prefix,"
                + " ...) that will restore: _metadata"
                + " readable and accepted by Flink's loader (Flink on the class path), no error of the doctor, every"
                + " referenced file present with at least the size its handle records (stat only). Prints why each"
                + " newer one does not restore, how to restore, and with --ha-dir, --kubernetes or --zookeeper-quorum"
                + " the HA pointers that name a broken checkpoint. Exit 0: the newest restores; 4: an older one"
                + " restores (or an HA pointer names a broken one); 2: none restores.")
final class RecoverCommand extends BaseCommand {
    @Parameters(arity = "1..*", paramLabel = "BASE_DIR", description = "a checkpoint, job, base or savepoint directory:"
            + " local, or a Flink path (all of one kind)")
    List<String> roots;

    @Option(names = "--list-parallelism", paramLabel = "N", description = "on a Flink path: requests at once (listings,"
            + " status requests), 1 to 256; default 8")
    int parallelism = 8;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Option(names = "--ha-dir", paramLabel = "HA_DIR", description = "high-availability.storageDir (or its"
            + " <cluster-id> dir): its completedCheckpoint files are HA pointers")
    Path haDir;

    @Option(names = "--zookeeper-quorum", paramLabel = "HOSTS", description = "ZooKeeper HA: read the cluster's"
            + " checkpoint pointers (its jobs' checkpoint nodes) from this ZooKeeper (Flink's jars on the class path)")
    String zookeeperQuorum;

    @Option(names = "--zookeeper-root", paramLabel = "PATH", description = "with --zookeeper-quorum:"
            + " high-availability.zookeeper.path.root (default: /flink)")
    String zookeeperRoot = "/flink";

    @CommandLine.Mixin
    KubernetesMixin k8s = new KubernetesMixin();

    @CommandLine.Mixin
    JsonMixin json = new JsonMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (zookeeperQuorum != null && k8s.kubernetes) throw usage("--kubernetes or --zookeeper-quorum, not both");
        if (parallelism < 1 || parallelism > 256) throw usage("--list-parallelism: 1 to 256, found " + parallelism);
        for (String p : roots) fs.apply(p);
        Map<String, CheckpointSurgeon.HaFileInfo> pointers = new LinkedHashMap<>();
        if (haDir != null) {
            for (Path f : CheckpointSurgeon.haFiles(haDir)) pointers.put(f.toString(), CheckpointSurgeon.haFileInfo(f));
        }
        Map<String, String> removeCommands = new LinkedHashMap<>();
        try (HaStore store = k8s.store(spec, zookeeperQuorum, zookeeperRoot)) {
            for (Map.Entry<String, CheckpointSurgeon.HaFileInfo> e : pointers.entrySet()) {
                removeCommands.put(e.getKey(), removeCommand(store == null ? PointerRemoval.Target.of(e.getValue())
                        : store.target(e.getValue())));
            }
            if (store != null) {
                for (Map.Entry<String, KubernetesHa.Pointer> e : store.pointersToLocalFiles().entrySet()) {
                    pointers.put(e.getKey(), CheckpointSurgeon.haFileInfo(e.getValue().file));
                    removeCommands.put(e.getKey(), removeCommand(store.target(e.getValue())));
                }
            }
        }
        RecoverReport r = CheckpointSurgeon.recoverAt(roots, pointers, parallelism);
        Shown shown = Shown.of(r, removeCommands);
        PrintWriter out = out();
        out.print(json.json ? CliSpelling.json(shown) : TextRenderer.recover(r, shown.brokenHaPointers));
        out.flush();
        return r.newestRestorable() == null ? Cli.INVALID : r.newestRestores() ? Cli.OK : Cli.FINDINGS;
    }

    /**
     * The {@code ha remove-checkpoint} command (without --apply) that takes {@code t} away, with the HA
     * options this run was given; with --ha-dir alone, the store's options are left to fill in.
     */
    private String removeCommand(PointerRemoval.Target t) {
        StringBuilder b = new StringBuilder("checkpoint-surgeon ha remove-checkpoint --checkpoint-id ").append(t.checkpointId);
        if (t.jobId != null) b.append(" --job-id ").append(TextRenderer.quote(t.jobId));
        if (t.store == PointerRemoval.Target.Store.ZOOKEEPER) {
            b.append(" --zookeeper-quorum ").append(TextRenderer.quote(zookeeperQuorum));
            if (!zookeeperRoot.equals("/flink")) b.append(" --zookeeper-root ").append(TextRenderer.quote(zookeeperRoot));
            b.append(" --cluster-id ").append(TextRenderer.quote(t.clusterId));
        } else if (t.store == PointerRemoval.Target.Store.KUBERNETES) {
            b.append(" --kubernetes");
            if (k8s.kubeconfig != null) b.append(" --kubeconfig ").append(TextRenderer.quote(k8s.kubeconfig.toString()));
            if (k8s.namespace != null) b.append(" --namespace ").append(TextRenderer.quote(k8s.namespace));
            b.append(" --cluster-id ").append(TextRenderer.quote(t.clusterId));
        } else {
            b.append(" {--zookeeper-quorum HOSTS | --kubernetes} --cluster-id ID");
        }
        return b.toString();
    }

    /** The report as recover shows it (its JSON fields): each broken HA pointer with the command that removes it. */
    static final class Shown {
        private final List<String> roots;
        private final List<RecoverReport.Candidate> candidates;
        private final String newestRestorable;
        private final String restoreConfig;
        private final String restoreCommand;
        final List<Pointer> brokenHaPointers;

        private Shown(List<String> roots, List<RecoverReport.Candidate> candidates, String newestRestorable,
                      String restoreConfig, String restoreCommand, List<Pointer> brokenHaPointers) {
            this.roots = roots;
            this.candidates = candidates;
            this.newestRestorable = newestRestorable;
            this.restoreConfig = restoreConfig;
            this.restoreCommand = restoreCommand;
            this.brokenHaPointers = brokenHaPointers;
        }

        /** {@code removeCommands}: per pointer name, its {@code ha remove-checkpoint} command without --apply. */
        static Shown of(RecoverReport r, Map<String, String> removeCommands) {
            List<Pointer> broken = new java.util.ArrayList<>();
            for (RecoverReport.HaPointer p : r.brokenHaPointers()) {
                String command = removeCommands.get(p.pointer());
                broken.add(new Pointer(p.pointer(), p.checkpointId(), p.checkpoint(), p.problem(),
                        p.repair(command + " --apply"), command));
            }
            return new Shown(r.roots(), r.candidates(), r.newestRestorable(), r.restoreConfig(), r.restoreCommand(),
                    broken);
        }
    }

    /** A broken HA pointer as recover shows it: {@link RecoverReport.HaPointer} with the CLI's repair command. */
    static final class Pointer {
        final String pointer;
        final long checkpointId;
        final String checkpoint;
        final String problem;
        final String repair;
        private final String removeCommand;

        private Pointer(String pointer, long checkpointId, String checkpoint, String problem, String repair,
                        String removeCommand) {
            this.pointer = pointer;
            this.checkpointId = checkpointId;
            this.checkpoint = checkpoint;
            this.problem = problem;
            this.repair = repair;
            this.removeCommand = removeCommand;
        }
    }
}
