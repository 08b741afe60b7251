package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
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

    @Override
    public Integer call() throws CheckpointSurgeonException {
        PrintWriter out = out();
        List<Path> files = CheckpointSurgeon.haFiles(dir);
        Map<String, Object> listing = null;
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
            }
        }
        List<CheckpointSurgeon.HaListing> listed = CheckpointSurgeon.listHa(files);
        if (json.json) {
            if (listing != null) listing.put("files", json(listed));
            out.print(CliSpelling.json(listing != null ? listing : json(listed)));
        } else {
            out.print(TextRenderer.haList(listed, dir));
        }
        out.flush();
        return Cli.OK;
    }

    /** The JSON of each HA file: its {@link CheckpointSurgeon.HaFileInfo} and its union states as the text shows them. */
    private static List<Map<String, Object>> json(List<CheckpointSurgeon.HaListing> listed) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (CheckpointSurgeon.HaListing l : listed) {
            Map<String, Object> file = new LinkedHashMap<>();
            file.put("file", l.file());
            file.put("unionStates", TextRenderer.unionStates(l));
            out.add(file);
        }
        return out;
    }
}
