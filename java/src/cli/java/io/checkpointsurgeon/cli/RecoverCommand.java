package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.RecoverReport;
import io.checkpointsurgeon.flink.HaStore;
import io.checkpointsurgeon.flink.PointerRemoval;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
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
        RecoverReport r;
        try (HaStore store = k8s.store(spec, zookeeperQuorum, zookeeperRoot)) {
            r = CheckpointSurgeon.recoverAt(roots, haDir, store, parallelism);
        }
        Function<RecoverReport.HaPointer, String> removeCommand = p -> removeCommand(p.removal());
        PrintWriter out = out();
        out.print(json.json ? CliSpelling.json(json(r, removeCommand)) : TextRenderer.recover(r, removeCommand));
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

    /** The report's JSON: each broken HA pointer with the command that removes it, and its repair naming that command. */
    private static Map<String, Object> json(RecoverReport r, Function<RecoverReport.HaPointer, String> removeCommand) {
        List<Map<String, Object>> broken = new ArrayList<>();
        for (RecoverReport.HaPointer p : r.brokenHaPointers()) {
            String command = removeCommand.apply(p);
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("pointer", p.pointer());
            m.put("checkpointId", p.checkpointId());
            m.put("checkpoint", p.checkpoint());
            m.put("problem", p.problem());
            m.put("repair", p.repair(command + " --apply"));
            m.put("removeCommand", command);
            broken.add(m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("roots", r.roots());
        out.put("candidates", r.candidates());
        out.put("newestRestorable", r.newestRestorable());
        out.put("restoreConfig", r.restoreConfig());
        out.put("restoreCommand", r.restoreCommand());
        out.put("brokenHaPointers", broken);
        return out;
    }
}
