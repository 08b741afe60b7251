package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.KubernetesHa;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Every text the CLI prints for people: the inspection table, plans, findings with their remedies
 * as command lines, diff and history tables, HA listings. Names taken from a checkpoint go through
 * {@link #printable}.
 */
final class TextRenderer {
    private static final String NL = System.lineSeparator();

    private TextRenderer() {}

    /** {@code inspect}: every operator, its states and sizes; with {@code subtasks}, every subtask's handles. */
    static String inspect(InspectReport r, boolean subtasks) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "checkpoint %d: %s%n  _metadata version %d, %s%n",
                r.checkpointId(), r.source(), r.metadataVersion(), bytes(r.metadataBytes())));
        for (InspectReport.MasterStateInfo m : r.masterStates()) {
            sb.append(String.format(Locale.ROOT, "  master state %s (version %d): %s%n", m.name(), m.version(), bytes(m.bytes())));
        }
        for (InspectReport.OperatorInfo op : r.operators()) {
            operator(sb, op, subtasks);
        }
        sb.append(String.format(Locale.ROOT, "%ntotal: %d operators, operator state %s, keyed state %s, channel state %s%n",
                r.operators().size(), bytes(r.totalOperatorStateBytes()), bytes(r.totalKeyedStateBytes()), bytes(r.totalChannelStateBytes())));
        return sb.toString();
    }

    private static void operator(StringBuilder sb, InspectReport.OperatorInfo op, boolean subtasks) {
        sb.append(String.format(Locale.ROOT, "%noperator %s", op.id()));
        if (!op.uid().isEmpty()) sb.append("  uid=").append(op.uid());
        if (!op.name().isEmpty()) sb.append("  name=").append(op.name());
        sb.append(String.format(Locale.ROOT, "%n  parallelism %d, max parallelism %d", op.parallelism(), op.maxParallelism()));
        if (op.coordinatorStateBytes() >= 0) sb.append(", coordinator state ").append(bytes(op.coordinatorStateBytes()));
        if (op.fullyFinished()) sb.append(", fully finished");
        else if (op.finishedSubtasks() > 0) sb.append(", ").append(op.finishedSubtasks()).append(" subtasks finished");
        sb.append(NL);
        List<InspectReport.StateTotal> totals = op.stateTotals();
        if (!totals.isEmpty()) {
            sb.append(String.format(Locale.ROOT, "  %-40s %-16s %12s %14s %8s%n", "operator state", "mode", "elements", "bytes", "subtasks"));
            for (InspectReport.StateTotal t : totals) {
                sb.append(String.format(Locale.ROOT, "  %-40s %-16s %,12d %14s %8d%n",
                        printable(t.name()), t.mode(), t.elements(), t.bytes() < 0 ? "?" : String.format(Locale.ROOT, "%,d", t.bytes()), t.handles()));
            }
        }
        kafka(sb, op);
        long keyed = op.keyedStateBytes();
        long keyedHandles = op.subtasks().stream().filter(s -> s.managedKeyedState() != null || s.rawKeyedState() != null).count();
        if (keyedHandles > 0) {
            String kind = op.subtasks().stream().filter(s -> s.managedKeyedState() != null)
                    .map(s -> s.managedKeyedState().kind()).findFirst().orElse("raw keyed state");
            sb.append(String.format(Locale.ROOT, "  keyed state: %s in %d subtasks, %s%n", kind, keyedHandles, bytes(keyed)));
        }
        long channel = op.subtasks().stream().mapToLong(InspectReport.SubtaskInfo::channelStateBytes).sum();
        int channels = op.subtasks().stream().mapToInt(s -> s.inputChannelHandles() + s.outputChannelHandles()).sum();
        if (channels > 0) {
            sb.append(String.format(Locale.ROOT, "  channel state: %d handles, %s%n", channels, bytes(channel)));
        }
        for (InspectReport.SubtaskInfo s : op.subtasks()) {
            for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                if (!h.streamError().isEmpty()) {
                    sb.append(String.format(Locale.ROOT, "  subtask %d: stream not read: %s%n", s.index(), h.streamError()));
                }
            }
            if (subtasks) subtask(sb, s);
        }
    }

    /** The Kafka connector's state of an operator: reader splits, enumerator state, legacy offsets. */
    private static void kafka(StringBuilder sb, InspectReport.OperatorInfo op) {
        Map<Integer, List<InspectReport.KafkaOffset>> readerSplits = op.kafkaReaderSplits();
        if (!readerSplits.isEmpty()) {
            sb.append("  KafkaSource reader splits (SourceReaderState): topic-partition from starting offset [to stopping offset]")
                    .append(NL);
            readerSplits.forEach((subtask, splits) -> sb.append(String.format(Locale.ROOT, "    subtask %d: %s%n", subtask,
                    splits.stream().map(k -> printable(k.topic()) + "-" + k.partition() + " from " + kafkaOffset(k.offset())
                            + (k.stoppingOffset() == Long.MIN_VALUE ? "" : " to " + kafkaOffset(k.stoppingOffset()))
                            + (k.count() > 1 ? " (x" + k.count() + ")" : ""))
                            .collect(Collectors.joining(", ")))));
        }
        InspectReport.KafkaEnumerator en = op.kafkaEnumerator();
        if (en != null) {
            if (!en.error().isEmpty()) {
                sb.append("  KafkaSource enumerator state: not readable: ").append(printable(en.error())).append(NL);
            } else {
                sb.append(String.format(Locale.ROOT, "  KafkaSource enumerator state (version %d%s): %d assigned, %d pending%n",
                        en.version(), en.initialDiscoveryFinished() ? ", initial discovery finished" : "",
                        en.assigned().size(), en.pending().size()));
                for (Map.Entry<String, List<InspectReport.KafkaOffset>> part
                        : List.of(Map.entry("assigned", en.assigned()), Map.entry("pending", en.pending()))) {
                    if (part.getValue().isEmpty()) continue;
                    sb.append(String.format(Locale.ROOT, "    %s: %s%n", part.getKey(), part.getValue().stream()
                            .map(k -> printable(k.topic()) + "-" + k.partition()
                                    + (k.offset() == Long.MIN_VALUE ? "" : " from " + kafkaOffset(k.offset())))
                            .collect(Collectors.joining(", "))));
                }
            }
        }
        op.kafkaOffsets().forEach((state, offsets) -> {
            if (state.equals("SourceReaderState")) return;
            sb.append(String.format(Locale.ROOT, "  Kafka offsets in %s:%n", state));
            int shown = 0;
            for (InspectReport.KafkaOffset k : offsets) {
                if (shown++ == 20) {
                    sb.append(String.format(Locale.ROOT, "    ... %d more (see --json)%n", offsets.size() - 20));
                    break;
                }
                sb.append(String.format(Locale.ROOT, "    %s-%d @ %d%s%n", k.topic(), k.partition(), k.offset(),
                        k.count() > 1 ? String.format(Locale.ROOT, "  (x%,d)", k.count()) : ""));
            }
        });
    }

    private static void subtask(StringBuilder sb, InspectReport.SubtaskInfo s) {
        sb.append(String.format(Locale.ROOT, "  subtask %d%n", s.index()));
        for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
            sb.append(String.format(Locale.ROOT, "    %s -> %s %s (%s)%s%n", h.kind(), h.delegateKind(),
                    h.inline() ? "inline" : h.location(), bytes(h.delegateSize()),
                    h.proxyVersion() > 0 ? ", header proxy v" + h.proxyVersion() + (h.compressed() ? ", snappy" : "") : ""));
            for (InspectReport.StateInfo st : h.states()) {
                sb.append(String.format(Locale.ROOT, "      %-38s %-16s %,10d elements %12s  %s%n", printable(st.name()), st.mode(),
                        st.elements(), st.bytes() < 0 ? "?" : bytes(st.bytes()), st.serializer()));
            }
        }
        if (s.managedKeyedState() != null) {
            sb.append(String.format(Locale.ROOT, "    keyed %s (%s)%n", s.managedKeyedState().kind(), bytes(s.managedKeyedState().stateSize())));
        }
        if (s.inputChannelHandles() + s.outputChannelHandles() > 0) {
            sb.append(String.format(Locale.ROOT, "    channel state: %d input, %d output handles, %s%n",
                    s.inputChannelHandles(), s.outputChannelHandles(), bytes(s.channelStateBytes())));
        }
    }

    /** A surgery's plan and, after {@code --apply}, what it wrote. */
    static String plan(SurgeryPlan p) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "plan for %s (%s)%n", p.source(), p.depth()));
        sb.append(String.format(Locale.ROOT, "  %-32s %7s %-32s %-16s %12s %12s %12s%n", "operator", "subtask", "state", "action",
                "elements", "after", "bytes cut"));
        for (SurgeryPlan.Change c : p.changes()) {
            sb.append(String.format(Locale.ROOT, "  %-32s %7s %-32s %-16s %,12d %,12d %,12d%n",
                    c.operatorId().isEmpty() ? "(checkpoint)" : c.operatorId(),
                    c.subtask() < 0 ? "all" : String.valueOf(c.subtask()), printable(c.state()), c.action(), c.elementsBefore(),
                    c.elementsAfter(), c.bytesRemoved()));
            if (!c.detail().isEmpty()) sb.append("    ").append(printable(c.detail())).append(NL);
        }
        List<SurgeryPlan.Relocation> moved = p.relocated();
        for (int i = 0; i < Math.min(moved.size(), 20); i++) {
            sb.append("  path ").append(printable(moved.get(i).oldPath())).append(" -> ")
                    .append(printable(moved.get(i).newPath())).append(NL);
        }
        if (moved.size() > 20) {
            sb.append(String.format(Locale.ROOT, "  ... and %,d more paths (--json lists them all)%n", moved.size() - 20));
        }
        for (SurgeryPlan.NewStream s : p.newStreams()) {
            sb.append(String.format(Locale.ROOT, "  %s %s -> %s (%s)%n", s.replaces().startsWith("(") ? "write" : "rewrite", s.replaces(),
                    s.fileName().isEmpty() ? "inline in _metadata" : "new file " + s.fileName(), bytes(s.bytes())));
        }
        sb.append(String.format(Locale.ROOT, "  %,d elements and %s of state removed; _metadata %s -> %s%n",
                p.elementsRemoved(), bytes(p.bytesRemoved()), bytes(p.metadataBytesBefore()), bytes(p.metadataBytesAfter())));
        SurgeryPlan.Result r = p.result();
        if (r == null) {
            sb.append("  nothing written: add --apply with --output DIR (or --in-place) to write it\n");
        } else {
            sb.append(String.format(Locale.ROOT, "wrote %s (%s)%n", r.metadataPath(), bytes(r.metadataBytes())));
            for (String w : r.written()) sb.append("  new state file ").append(w).append(NL);
            if (!r.linked().isEmpty()) sb.append(String.format(Locale.ROOT, "  %d unchanged state files hard-linked%n", r.linked().size()));
            if (!r.copied().isEmpty()) sb.append(String.format(Locale.ROOT, "  %d unchanged state files copied%n", r.copied().size()));
            if (r.backup() != null) sb.append("  backup of the old _metadata: ").append(r.backup()).append(NL);
            sb.append("  validation: ").append(r.flinkValidation()).append(NL);
        }
        return sb.toString();
    }

    /** What {@code relocate --check} found: how many rewritten paths exist, and the missing ones. */
    static String relocationCheck(int paths, List<String> missing) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "check: %d of %d rewritten paths exist at their new place%n", paths - missing.size(), paths));
        for (String m : missing) sb.append("  missing: ").append(printable(m)).append(NL);
        return sb.toString();
    }

    /** The doctor's findings on the checkpoint or HA file at {@code path}, each with its remedies as command lines. */
    static String doctor(String path, List<CheckpointSurgeon.Finding> findings) {
        StringBuilder sb = new StringBuilder();
        sb.append(path).append(": ").append(findings.isEmpty() ? "no problems found" : findings.size() + " problem(s)")
                .append(NL);
        for (CheckpointSurgeon.Finding f : findings) {
            sb.append(String.format(Locale.ROOT, "  %s %s: %s%n    fix: %s%n", f.severity(), f.code(), f.message(),
                    command(f.fix(), path)));
            for (CheckpointSurgeon.Remedy r : f.alternatives()) {
                sb.append(String.format(Locale.ROOT, "    or:  %s%n", command(r, path)));
            }
        }
        return sb.toString();
    }

    /** {@code diff}: both checkpoints, then every state and every operator whose sizes changed. */
    static String diff(Growth.Diff d) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "A: checkpoint %d, _metadata %s  %s%nB: checkpoint %d, _metadata %s  %s%n",
                d.checkpointA(), bytes(d.metadataBytesA()), d.a(), d.checkpointB(), bytes(d.metadataBytesB()), d.b()));
        sb.append(String.format(Locale.ROOT, "  %-32s %-32s %-8s %12s %12s %8s %12s %12s %9s %9s%n", "operator", "state", "change",
                "elements A", "elements B", "factor", "bytes A", "bytes B", "distinct A", "distinct B"));
        for (Growth.StateChange c : d.states()) {
            sb.append(String.format(Locale.ROOT, "  %-32s %-32s %-8s %12s %12s %8s %12s %12s %9s %9s%n", c.operatorId(),
                    printable(c.state()), c.change(), count(c.elementsA()), count(c.elementsB()),
                    c.elementsA() > 0 && c.elementsB() >= 0 ? String.format(Locale.ROOT, "x%.2f", c.factor()) : "-",
                    count(c.bytesA()), count(c.bytesB()), count(c.distinctA()), count(c.distinctB())));
        }
        for (Growth.OperatorChange o : d.operators()) {
            if (o.keyedBytesA() != o.keyedBytesB() || o.coordinatorBytesA() != o.coordinatorBytesB()
                    || o.parallelismA() != o.parallelismB()) {
                sb.append(String.format(Locale.ROOT, "  operator %s%s: parallelism %s -> %s, keyed state %s -> %s, coordinator state %s -> %s%n",
                        o.operatorId(), o.uid().isEmpty() ? "" : " (uid " + printable(o.uid()) + ")",
                        count(o.parallelismA()), count(o.parallelismB()), count(o.keyedBytesA()),
                        count(o.keyedBytesB()), count(o.coordinatorBytesA()), count(o.coordinatorBytesB())));
            }
        }
        return sb.toString();
    }

    /** {@code history}: every state's series, then the findings with their remedies for the newest checkpoint {@code lastDir}. */
    static String history(Growth.History h, String lastDir) {
        StringBuilder sb = new StringBuilder("checkpoint ");
        for (Growth.Checkpoint c : h.checkpoints()) sb.append(String.format(Locale.ROOT, "%12d", c.id()));
        sb.append(NL).append("_metadata  ");
        for (Growth.Checkpoint c : h.checkpoints()) sb.append(String.format(Locale.ROOT, "%12s", count(c.metadataBytes())));
        sb.append(NL);
        for (Growth.Series s : h.series()) {
            sb.append(String.format(Locale.ROOT, "%s %s (%s)%n", s.operatorId(), printable(s.state()), s.mode()));
            sb.append("  elements ");
            for (long e : s.elements()) sb.append(String.format(Locale.ROOT, "%12s", count(e)));
            sb.append(NL).append("  parallel ");
            for (int p : s.parallelism()) sb.append(String.format(Locale.ROOT, "%12s", count(p)));
            sb.append(NL);
        }
        for (CheckpointSurgeon.Finding f : h.findings()) {
            sb.append(String.format(Locale.ROOT, "%s %s: %s%n  fix: %s%n", f.severity(), f.code(), f.message(),
                    command(f.fix(), lastDir)));
            for (CheckpointSurgeon.Remedy r : f.alternatives()) {
                sb.append(String.format(Locale.ROOT, "  or:  %s%n", command(r, lastDir)));
            }
        }
        return sb.toString();
    }

    /** The union states of an HA file's checkpoint, one line each, as {@code ha list} shows them. */
    static String unionState(InspectReport.OperatorInfo op, InspectReport.StateTotal t) {
        return String.format(Locale.ROOT, "%s %s: %,d elements, %s", op.id(), printable(t.name()), t.elements(),
                t.bytes() < 0 ? "? bytes" : bytes(t.bytes()));
    }

    /** {@code ha list --kubernetes}: the ConfigMaps' pointers, those without a file and the files without a pointer. */
    static String kubernetesListing(KubernetesHa ha, KubernetesHa.Reconciliation r) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "HA ConfigMaps of cluster '%s' in namespace '%s' (Kubernetes API server %s):%n",
                ha.clusterId, ha.namespace, ha.masterUrl));
        for (KubernetesHa.Pointer p : r.pointers) {
            sb.append("  ").append(p.configMap).append(' ').append(p.key).append(" -> ")
                    .append(p.target == null ? "?" : p.target).append(pointerStatus(p)).append(NL);
        }
        if (r.pointers.isEmpty()) sb.append("  no checkpointID-<n> pointers").append(NL);
        sb.append("pointers without a file: ").append(r.pointersWithoutFile.size()).append(NL);
        for (KubernetesHa.Pointer p : r.pointersWithoutFile) {
            sb.append("  ").append(p.configMap).append(' ').append(p.key).append(" (checkpoint ").append(p.checkpointId)
                    .append(')').append(NL);
        }
        sb.append("files without a pointer: ").append(r.filesWithoutPointer.size()).append(NL);
        for (Path f : r.filesWithoutPointer) sb.append("  ").append(f).append(NL);
        return sb.toString();
    }

    /** One HA file of {@code ha list}: its job, checkpoint, size and union states. */
    static String haFile(CheckpointSurgeon.HaFileInfo file, List<String> unionStates) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%s%n  job %s, checkpoint %d, %s, %s%n", file.file(),
                file.jobId(), file.checkpointId(), bytes(file.fileBytes()), file.checkpointPath()));
        for (String u : unionStates) sb.append("  union state ").append(u).append(NL);
        return sb.toString();
    }

    /** The pointers and files {@code ha repair --kubernetes} leaves alone, one warning or note each. */
    static String passedOver(KubernetesHa.RepairSelection selection, Path dir) {
        StringBuilder sb = new StringBuilder();
        for (KubernetesHa.Pointer p : selection.passedOver) {
            String status = pointerStatus(p);
            sb.append("warning: ").append(p.configMap).append(' ').append(p.key).append(" -> ").append(p.target)
                    .append(status.isEmpty() ? " is not under " + dir : status).append("; not repaired").append(NL);
        }
        for (Path f : selection.unpointed) {
            sb.append("note: ").append(f).append(" has no pointer in the ConfigMaps (Flink does not recover from it);"
                    + " not repaired").append(NL);
        }
        return sb.toString();
    }

    /** The plans of {@code ha repair}, or what it repaired with a summary. */
    static String haRepair(List<CheckpointSurgeon.HaRepair> results, boolean applied) {
        StringBuilder sb = new StringBuilder();
        for (CheckpointSurgeon.HaRepair r : results) {
            if (r.plan() == null) {
                sb.append(r.file()).append(": skipped, the surgery selects nothing in it (already repaired?)").append(NL);
            } else {
                sb.append(plan(r.plan()));
            }
        }
        if (applied) {
            sb.append("summary:").append(NL);
            for (CheckpointSurgeon.HaRepair r : results) {
                sb.append("  ").append(r.file()).append(": ").append(r.plan() == null ? "skipped (nothing to change)"
                        : "repaired, backup " + r.plan().result().backup()).append(NL);
            }
        }
        return sb.toString();
    }

    /** The status of a pointer: empty when its local file exists and Flink recovers from it. */
    static String pointerStatus(KubernetesHa.Pointer p) {
        String deleted = p.markedForDeletion ? " (marked for deletion)" : "";
        if (p.problem != null) return ": unreadable, " + p.problem + deleted;
        if (p.file == null) return ": not a local file" + deleted;
        return (Files.isRegularFile(p.file) ? "" : ": NO SUCH FILE") + deleted;
    }

    /** The command line of a remedy for the checkpoint at {@code path}, runnable as printed. */
    static String command(CheckpointSurgeon.Remedy r, String path) {
        String p = quote(path);
        switch (r.action()) {
            case INSPECT:
                return "checkpoint-surgeon inspect " + p;
            case INSPECT_SUBTASKS:
                return "checkpoint-surgeon inspect " + p + " --subtasks";
            case MIGRATE_KAFKA_LEGACY:
                // the connector version comes from the class path, else --connector-version is asked for
                return "checkpoint-surgeon kafka migrate-legacy " + p + " --operator-id " + r.operatorId()
                        + " --apply --output " + quote(path + "-migrated");
            case REMOVE_STATE:
                return surgery("remove-state", r, path, "-repaired");
            case DEDUPE_UNION:
                return surgery("dedupe-union", r, path, "-deduped");
            default:
                throw new IllegalArgumentException(r.action().name());
        }
    }

    private static String surgery(String command, CheckpointSurgeon.Remedy r, String path, String outputSuffix) {
        return "checkpoint-surgeon " + command + " " + quote(path) + " --operator-id " + r.operatorId() + " --state "
                + quote(r.state()) + " --apply --output " + quote(path + outputSuffix);
    }

    /** A Kafka offset, or the name of the connector's marker. */
    static String kafkaOffset(long o) {
        return o == -2 ? "EARLIEST" : o == -1 ? "LATEST" : o == -3 ? "COMMITTED" : Long.toString(o);
    }

    /** A count, or "-" for a value that is absent (-1). */
    static String count(long n) {
        return n < 0 ? "-" : String.format(Locale.ROOT, "%,d", n);
    }

    static String bytes(long n) {
        return InspectReport.formatBytes(n);
    }

    /** A name on one line: control characters (a tab or newline in a state name) as Java escapes. */
    static String printable(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            if (c == '\t') b.append("\\t");
            else if (c == '\n') b.append("\\n");
            else if (c == '\r') b.append("\\r");
            else if (Character.isISOControl(c)) b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }

    /** A word for a POSIX shell, quoted when it needs to be. */
    static String quote(String s) {
        return s.matches("[A-Za-z0-9_./:@%+=,-]+") ? s : "'" + s.replace("'", "'\\''") + "'";
    }
}
