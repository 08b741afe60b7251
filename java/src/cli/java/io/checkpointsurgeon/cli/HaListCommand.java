package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.flink.KubernetesHa;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

@Command(name = "list", mixinStandardHelpOptions = true,
        description = "List every completedCheckpoint file with its job, checkpoint id, size and union states;"
                + " with --kubernetes, first the HA ConfigMaps' pointers to them, the pointers without a file and"
                + " the files without a pointer.")
final class HaListCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "HA_DIR", description = "high-availability.storageDir (or its <cluster-id> dir)")
    Path dir;

    @CommandLine.Mixin
    JsonMixin json = new JsonMixin();

    @CommandLine.Mixin
    KubernetesMixin k8s = new KubernetesMixin();

    /** One HA file as listed: what it belongs to, and its union states (JSON: its fields). */
    static final class Entry {
        final CheckpointSurgeon.HaFileInfo file;
        final List<String> unionStates;

        Entry(CheckpointSurgeon.HaFileInfo file, List<String> unionStates) {
            this.file = file;
            this.unionStates = unionStates;
        }
    }

    @Override
    public Integer call() throws CheckpointSurgeonException {
        PrintWriter out = out();
        List<Path> files = CheckpointSurgeon.haFiles(dir);
        Map<String, Object> listing = null;
        List<Entry> entries = new ArrayList<>();
        try (KubernetesHa ha = k8s.connect(spec)) {
            if (ha != null) {
                KubernetesHa.Reconciliation r = KubernetesHa.reconcile(ha.checkpointPointers(), files);
                if (!json.json) out.print(TextRenderer.kubernetesListing(ha, r));
                listing = new LinkedHashMap<>();
                listing.put("apiServer", ha.masterUrl);
                listing.put("namespace", ha.namespace);
                listing.put("clusterId", ha.clusterId);
                listing.put("pointers", r.pointers);
                listing.put("pointersWithoutFile", r.pointersWithoutFile);
                listing.put("filesWithoutPointer", r.filesWithoutPointer);
                listing.put("files", entries);
            }
        }
        for (int i = 0; i < files.size(); i++) {
            Path f = files.get(i);
            err().println(TextRenderer.fileProgress(i + 1, files.size(), f));
            CheckpointSurgeon.HaFileInfo info = CheckpointSurgeon.haFileInfo(f);
            InspectReport r = CheckpointSurgeon.inspectHa(f);
            List<String> unions = new ArrayList<>();
            for (InspectReport.OperatorInfo op : r.operators()) {
                for (InspectReport.StateTotal t : op.stateTotals()) {
                    if (t.mode() == InspectReport.Mode.UNION) unions.add(TextRenderer.unionState(op, t));
                }
            }
            entries.add(new Entry(info, unions));
        }
        out.print(json.json ? CliSpelling.json(listing != null ? listing : entries) : TextRenderer.haList(entries, dir));
        out.flush();
        return Cli.OK;
    }
}
