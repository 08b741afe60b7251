package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.KubernetesHa;
import io.checkpointsurgeon.flink.PointerRemoval;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Every text the CLI prints for people: the inspection table, plans, findings with their remedies
 * as command lines, diff and history tables, HA listings. Every string taken from a checkpoint, a
 * path or an argument goes through {@link #printable} ({@link Terminal#safe}).
 */
final class TextRenderer {
    private static final String NL = System.lineSeparator();

    private TextRenderer() {}

    /**
     * {@code inspect}: every operator, its states and sizes; with {@code subtasks}, every subtask's handles.
     * The lines every inspect prints are built without String.format: a JVM that just started takes
     * 0.1 to 0.7 ms for each format (its specifiers are matched by a regex), ~10 ms of an inspect.
     */
    static String inspect(InspectReport r, boolean subtasks) {
        StringBuilder sb = new StringBuilder();
        sb.append("checkpoint ").append(r.checkpointId()).append(": ").append(printable(r.source())).append(NL)
                .append("  _metadata version ").append(r.metadataVersion()).append(", ").append(bytes(r.metadataBytes())).append(NL);
        for (InspectReport.MasterStateInfo m : r.masterStates()) {
            sb.append("  master state ").append(printable(m.name())).append(" (version ").append(m.version()).append("): ")
                    .append(bytes(m.bytes())).append(NL);
        }
        for (InspectReport.OperatorInfo op : r.operators()) {
            operator(sb, op, subtasks);
        }
        sb.append(NL).append("total: ").append(operators(r.operators().size())).append(", operator state ")
                .append(bytes(r.totalOperatorStateBytes())).append(", keyed state ").append(bytes(r.totalKeyedStateBytes()))
                .append(", channel state ").append(bytes(r.totalChannelStateBytes())).append(NL);
        return sb.toString();
    }

    private static void operator(StringBuilder sb, InspectReport.OperatorInfo op, boolean subtasks) {
        sb.append(NL).append("operator ").append(op.id());
        if (!op.uid().isEmpty()) sb.append("  uid=").append(printable(op.uid()));
        if (!op.name().isEmpty()) sb.append("  name=").append(printable(op.name()));
        sb.append(NL).append("  parallelism ").append(op.parallelism()).append(", max parallelism ").append(op.maxParallelism());
        if (op.coordinatorStateBytes() >= 0) sb.append(", coordinator state ").append(bytes(op.coordinatorStateBytes()));
        if (op.fullyFinished()) sb.append(", fully finished");
        else if (op.finishedSubtasks() > 0) sb.append(", ").append(op.finishedSubtasks()).append(" subtasks finished");
        sb.append(NL);
        List<InspectReport.StateTotal> totals = op.stateTotals();
        if (!totals.isEmpty()) {
            // "  %-40s %-16s %,12d %14s %8d%n"
            sb.append("  operator state                           mode                 elements          bytes subtasks").append(NL);
            for (InspectReport.StateTotal t : totals) {
                padLeft(padRight(padRight(sb.append("  "), printable(t.name()), 40).append(' '), t.mode().name(), 16).append(' '),
                        InspectReport.grouped(t.elements()), 12).append(' ');
                padLeft(padLeft(sb, t.bytes() < 0 ? "?" : InspectReport.grouped(t.bytes()), 14).append(' '),
                        Integer.toString(t.handles()), 8).append(NL);
            }
        }
        kafka(sb, op);
        String lookAlike = op.kafkaLegacyLookAlike();
        if (lookAlike != null) {
            sb.append(String.format(Locale.ROOT, "  %s is not Kafka's (elements %s, not FlinkKafkaConsumer's %s):"
                    + " no Kafka offsets shown%n", InspectReport.KAFKA_LEGACY_STATE,
                    lookAlike.isEmpty() ? "not read" : printable(lookAlike), InspectReport.KAFKA_LEGACY_ELEMENT_TYPE));
        }
        // loops, not streams: this runs in every inspect (see InspectReport's totals)
        long keyed = op.keyedStateBytes(), channel = 0;
        int keyedHandles = 0, channels = 0;
        String kind = null;
        for (InspectReport.SubtaskInfo s : op.subtasks()) {
            if (s.managedKeyedState() != null || s.rawKeyedState() != null) keyedHandles++;
            if (kind == null && s.managedKeyedState() != null) kind = s.managedKeyedState().kind();
            channel += s.channelStateBytes();
            channels += s.inputChannelHandles() + s.outputChannelHandles();
        }
        if (keyedHandles > 0) {
            sb.append(String.format(Locale.ROOT, "  keyed state: %s in %d subtasks, %s%n", kind == null ? "raw keyed state" : kind,
                    keyedHandles, bytes(keyed)));
        }
        if (channels > 0) {
            sb.append(String.format(Locale.ROOT, "  channel state: %d handles, %s%n", channels, bytes(channel)));
        }
        for (InspectReport.SubtaskInfo s : op.subtasks()) {
            for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                if (!h.streamError().isEmpty()) {
                    sb.append(String.format(Locale.ROOT, "  subtask %d: stream not read: %s%n", s.index(), printable(h.streamError())));
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
        for (Map.Entry<String, List<InspectReport.KafkaOffset>> e : op.kafkaOffsets().entrySet()) {
            if (e.getKey().equals("SourceReaderState")) continue;
            List<InspectReport.KafkaOffset> offsets = e.getValue();
            sb.append("  Kafka offsets in ").append(printable(e.getKey())).append(':').append(NL);
            int shown = 0;
            for (InspectReport.KafkaOffset k : offsets) {
                if (shown++ == 20) {
                    sb.append("    ... ").append(offsets.size() - 20).append(" more (see --json)").append(NL);
                    break;
                }
                sb.append("    ").append(printable(k.topic())).append('-').append(k.partition()).append(" @ ").append(k.offset());
                if (k.count() > 1) sb.append("  (x").append(InspectReport.grouped(k.count())).append(')');
                sb.append(NL);
            }
        }
    }

    private static void subtask(StringBuilder sb, InspectReport.SubtaskInfo s) {
        sb.append(String.format(Locale.ROOT, "  subtask %d%n", s.index()));
        for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
            sb.append(String.format(Locale.ROOT, "    %s -> %s %s (%s)%s%n", h.kind(), h.delegateKind(),
                    h.inline() ? "inline" : printable(h.location()), bytes(h.delegateSize()),
                    h.proxyVersion() > 0 ? ", header proxy v" + h.proxyVersion() + (h.compressed() ? ", snappy" : "") : ""));
            for (InspectReport.StateInfo st : h.states()) {
                sb.append(String.format(Locale.ROOT, "      %-38s %-16s %,10d elements %12s  %s%n", printable(st.name()), st.mode(),
                        st.elements(), st.bytes() < 0 ? "?" : bytes(st.bytes()), printable(st.serializer())));
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

    /** What RocksDB's numbers are, wherever they are shown. */
    static final String ROCKSDB_NUMBERS = "RocksDB's numbers (its SST files' table properties): entries include"
            + " tombstones and overwritten versions that compaction has not removed yet; bytes are the SST files' sizes";

    /** What a state change log's numbers are, wherever they are shown. */
    static final String CHANGELOG_NUMBERS = "changelog: entries are the state change log's change records since the last"
            + " materialization (SET, ADD, CLEAR, ...), not live entries; bytes are the changes' bytes, uncompressed";

    /**
     * {@code inspect --keyed}: per operator and keyed state its type, TTL, entries and bytes in
     * total and per subtask (min and max; with {@code subtasks} each one), its serializers and their
     * snapshot classes, and what could not be read, with file and byte offset.
     */
    private static String operators(int n) {
        return n == 1 ? "1 operator" : n + " operators";
    }

    static String keyed(KeyedReport k, boolean subtasks) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "%nkeyed state of %s: %s, %s%n", printable(k.source()),
                operators(k.operators().size()), bytes(k.storedBytes())));
        for (KeyedReport.Operator op : k.operators()) keyedOperator(sb, op, subtasks);
        return sb.toString();
    }

    private static void keyedOperator(StringBuilder sb, KeyedReport.Operator op, boolean subtasks) {
        sb.append(String.format(Locale.ROOT, "%noperator %s", op.id()));
        if (!op.uid().isEmpty()) sb.append("  uid=").append(printable(op.uid()));
        if (!op.name().isEmpty()) sb.append("  name=").append(printable(op.name()));
        sb.append(String.format(Locale.ROOT, "%n  parallelism %d, max parallelism %d, %d keyed handles%n",
                op.parallelism(), op.maxParallelism(), op.handles().size()));
        if (!op.states().isEmpty()) {
            int w = 11;
            long all = 0;
            for (KeyedReport.State s : op.states()) {
                w = Math.max(w, Math.min(48, printable(s.name()).length()));
                all += s.total().storedBytes();
            }
            String row = "  %-" + w + "s %-11s %-3s %14s %16s %6s %-20s %s%n";
            sb.append(String.format(Locale.ROOT, row, "keyed state", "type", "TTL", "entries", "bytes", "share",
                    "entries per subtask", "format"));
            for (KeyedReport.State s : op.states()) {
                KeyedReport.Count c = s.total();
                long min = Long.MAX_VALUE, max = 0;
                for (KeyedReport.SubtaskCount t : s.subtasks()) {
                    min = Math.min(min, t.count().entries());
                    max = Math.max(max, t.count().entries());
                }
                sb.append(String.format(Locale.ROOT, row, printable(s.name()), s.kind(), s.ttl() ? "yes" : "no",
                        String.format(Locale.ROOT, "%,d", c.entries()), String.format(Locale.ROOT, "%,d", c.storedBytes()),
                        String.format(Locale.ROOT, "%.1f%%", all == 0 ? 0.0 : 100.0 * c.storedBytes() / all),
                        s.subtasks().isEmpty() ? "-" : String.format(Locale.ROOT, "%,d..%,d in %d", min, max,
                                s.subtasks().size()),
                        formats(s) + (c.complete() ? "" : " (incomplete: see below)")));
            }
            if (op.states().stream().anyMatch(KeyedReport.State::rocksDbNumbers)) {
                sb.append("  ").append(ROCKSDB_NUMBERS).append(':').append(NL);
                for (KeyedReport.State s : op.states()) {
                    KeyedReport.RocksDbFigures f = s.rocksDb();
                    if (f == null) continue;
                    sb.append(String.format(Locale.ROOT, "    %-" + w + "s %,d SST files, %,d deleted keys, %,d merge"
                            + " operands, %,d range deletions, data blocks %s%n", printable(s.name()), f.files(),
                            f.deletedKeys(), f.mergeOperands(), f.rangeDeletions(), bytes(f.dataSize())));
                }
            }
            if (op.states().stream().anyMatch(KeyedReport.State::changelogNumbers)) {
                sb.append("  ").append(CHANGELOG_NUMBERS).append(NL);
            }
            if (op.states().stream().anyMatch(KeyedReport.State::ttl)) {
                sb.append("  TTL: the value serializer is Flink's TTL wrapper; the time to live, update type, visibility"
                        + " and cleanup are set in the job's code, not in the meta info").append(NL);
            }
            // serializers by their short names, then each snapshot class once
            KeyedReport.Serializer key = op.states().get(0).serializer(KeyedReport.SerializerKey.KEY_SERIALIZER);
            sb.append("  serializers").append(key == null ? "" : " (key " + printable(key.snapshot().shortName()) + ")")
                    .append(':').append(NL);
            Map<String, KeyedReport.SerializerSnapshot> classes = new java.util.TreeMap<>();
            for (KeyedReport.State s : op.states()) {
                List<String> parts = new java.util.ArrayList<>();
                for (KeyedReport.Serializer z : s.serializers()) {
                    snapshotClasses(z.snapshot(), classes);
                    if (z.role() != KeyedReport.SerializerKey.KEY_SERIALIZER) parts.add(role(z.role()) + " " + printable(z.snapshot().shortName()));
                }
                sb.append(String.format(Locale.ROOT, "    %-" + w + "s %s%n", printable(s.name()), String.join(", ", parts)));
            }
            sb.append("  snapshot classes:").append(NL);
            classes.forEach((c, z) -> sb.append(String.format(Locale.ROOT, "    %s v%d%s%n", printable(c), z.version(),
                    z.classes().isEmpty() ? "" : " (" + printable(String.join(", ", z.classes())) + ")")));
            if (subtasks) {
                sb.append("  per subtask ([subtask] entries, bytes):").append(NL);
                for (KeyedReport.State s : op.states()) {
                    sb.append(String.format(Locale.ROOT, "    %-" + w + "s", printable(s.name())));
                    for (KeyedReport.SubtaskCount t : s.subtasks()) {
                        sb.append(String.format(Locale.ROOT, " [%d] %,d, %,d;", t.subtask(), t.count().entries(),
                                t.count().storedBytes()));
                    }
                    sb.append(NL);
                }
            }
        }
        int shown = 0, hidden = 0;
        for (KeyedReport.Handle h : op.handles()) {
            if (h.error() != null) {
                sb.append(String.format(Locale.ROOT, "  subtask %d: %s not read (%s): %s%n", h.subtask(), printable(h.kind()),
                        bytes(h.totalBytes()), printable(h.error())));
            }
            for (KeyedReport.Note n : h.notes()) {
                if (!subtasks && shown == KEYED_NOTES) {
                    hidden++;
                    continue;
                }
                shown++;
                // a reader's error names its file already; a note about a whole handle has none
                String file = n.file().substring(n.file().lastIndexOf('/') + 1);
                sb.append(String.format(Locale.ROOT, "  subtask %d: %s%s%n", h.subtask(),
                        file.isEmpty() || n.message().contains(file) ? ""
                                : printable(n.file()) + " at byte " + n.offset() + ": ", printable(n.message())));
            }
            if (subtasks) {
                sb.append(String.format(Locale.ROOT, "  subtask %d: %s%s, key groups %d..%d, %s (meta info %s,"
                        + " overhead %s, unattributed %s)%n", h.subtask(), printable(h.kind()), h.format() == null ? ""
                        : " (" + h.format() + ")", h.firstKeyGroup(), h.firstKeyGroup() + h.keyGroups() - 1,
                        bytes(h.totalBytes()), bytes(h.headerBytes()), bytes(h.overheadBytes()),
                        bytes(h.unattributedBytes())));
            }
        }
        if (hidden > 0) {
            sb.append(String.format(Locale.ROOT, "  ... and %,d more notes (--subtasks or --json shows them all)%n", hidden));
        }
    }

    /** Notes of an operator's keyed handles shown without --subtasks. */
    private static final int KEYED_NOTES = 5;

    /** Every snapshot class of a snapshot and its nested ones, by class name. */
    private static void snapshotClasses(KeyedReport.SerializerSnapshot s, Map<String, KeyedReport.SerializerSnapshot> out) {
        out.putIfAbsent(s.snapshotClass(), s);
        for (KeyedReport.SerializerSnapshot n : s.nested()) snapshotClasses(n, out);
    }

    private static String formats(KeyedReport.State s) {
        return s.formats().stream().map(KeyedReport.SnapshotFormat::toString).collect(Collectors.joining(", "));
    }

    /** {@code VALUE_SERIALIZER} as {@code value}, {@code USER_KEY_SERIALIZER} as {@code user key}. */
    private static String role(KeyedReport.SerializerKey r) {
        String n = r.name();
        return n.substring(0, n.length() - "_SERIALIZER".length()).toLowerCase(Locale.ROOT).replace('_', ' ');
    }

    /** A figure of a plan's change; -1 (counted only when the keyed stream is rewritten) as "?". */
    private static String figure(long n) {
        return n < 0 ? "?" : String.format(Locale.ROOT, "%,d", n);
    }

    /** A surgery's plan and, after {@code --apply}, what it wrote. */
    static String plan(SurgeryPlan p) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "plan for %s (%s)%n", printable(p.source()), p.depth()));
        sb.append(String.format(Locale.ROOT, "  %-32s %7s %-32s %-16s %12s %12s %12s%n", "operator", "subtask", "state", "action",
                "elements", "after", "bytes cut"));
        for (SurgeryPlan.Change c : p.changes()) {
            sb.append(String.format(Locale.ROOT, "  %-32s %7s %-32s %-16s %12s %12s %12s%n",
                    c.operatorId().isEmpty() ? "(checkpoint)" : c.operatorId(),
                    c.subtask() < 0 ? "all" : String.valueOf(c.subtask()), printable(c.state()), c.action(),
                    figure(c.elementsBefore()), figure(c.elementsAfter()), figure(c.bytesRemoved())));
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
            sb.append(String.format(Locale.ROOT, "  %s %s -> %s (%s)%n", s.replaces().startsWith("(") ? "write" : "rewrite", printable(s.replaces()),
                    s.fileName().isEmpty() ? "inline in _metadata" : "new file " + printable(s.fileName()), bytes(s.bytes())));
        }
        sb.append(String.format(Locale.ROOT, "  %,d elements and %s of state removed; _metadata %s -> %s%n",
                p.elementsRemoved(), bytes(p.bytesRemoved()), bytes(p.metadataBytesBefore()), bytes(p.metadataBytesAfter())));
        SurgeryPlan.KeyedFigures k = p.keyed();
        if (k != null) {
            sb.append(String.format(Locale.ROOT, "  keyed state: %s read, %s written%s, %d file(s) at once%n",
                    bytes(k.bytesRead()), bytes(k.bytesWritten()), p.changes().stream().anyMatch(c -> c.elementsBefore() < 0)
                    ? " (estimated: key-groups files are counted as they are rewritten)" : "", k.threads()));
        }
        SurgeryPlan.Result r = p.result();
        if (r == null) {
            sb.append("  nothing written: add --apply with --output DIR (or --in-place) to write it\n");
        } else {
            sb.append(String.format(Locale.ROOT, "wrote %s (%s)%n", printable(r.metadataPath()), bytes(r.metadataBytes())));
            for (String w : r.written()) sb.append("  new state file ").append(printable(w)).append(NL);
            if (!r.linked().isEmpty()) sb.append(String.format(Locale.ROOT, "  %d unchanged state files hard-linked%n", r.linked().size()));
            if (!r.copied().isEmpty()) sb.append(String.format(Locale.ROOT, "  %d unchanged state files copied%n", r.copied().size()));
            if (r.backup() != null) sb.append("  backup of the old _metadata: ").append(printable(r.backup())).append(NL);
            sb.append("  validation: ").append(printable(r.flinkValidation())).append(NL);
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
        return doctor(path, findings, r -> command(r, path), new java.util.HashSet<>());
    }

    /**
     * {@code doctor}'s findings of one checkpoint or HA file with their remedies as {@code command}
     * prints them; a fix already printed (in {@code shown}: an HA dir's files share one ha repair)
     * is named, not printed again.
     */
    static String doctor(String path, List<CheckpointSurgeon.Finding> findings,
            java.util.function.Function<CheckpointSurgeon.Remedy, String> command, java.util.Set<String> shown) {
        StringBuilder sb = new StringBuilder();
        sb.append(printable(path)).append(": ").append(findings.isEmpty() ? "no problems found" : findings.size() + " problem(s)")
                .append(NL);
        for (CheckpointSurgeon.Finding f : findings) {
            sb.append("  ").append(f.severity()).append(' ').append(f.code()).append(": ").append(printable(CliSpelling.text(f.typedMessage())))
                    .append(NL);
            String fix = command.apply(f.fix());
            if (!shown.add(fix)) {
                sb.append("    same fix as above (one ha repair covers every file it selects)").append(NL);
                continue;
            }
            sb.append("    fix: ").append(printable(fix)).append(NL);
            for (CheckpointSurgeon.Remedy r : f.alternatives()) {
                sb.append("    or:  ").append(printable(command.apply(r))).append(NL);
            }
        }
        return sb.toString();
    }

    /** {@code clean-leftovers}: the files a killed repair left in {@code path}, deleted or to delete. */
    static String leftovers(String path, List<Path> files, boolean deleted) {
        StringBuilder sb = new StringBuilder();
        if (files.isEmpty()) {
            return sb.append(printable(path)).append(": no leftovers of checkpoint-surgeon").append(NL).toString();
        }
        sb.append(String.format(Locale.ROOT, "%s: %d file(s) left by a checkpoint-surgeon repair that was killed%n",
                printable(path), files.size()));
        for (Path f : files) sb.append(deleted ? "  deleted " : "  ").append(printable(f.getFileName())).append(NL);
        if (!deleted) sb.append("  nothing deleted: add --apply to delete them").append(NL);
        return sb.toString();
    }

    /** The note of a repair that finds leftovers of a killed one in {@code dir} (it leaves them). */
    static String leftoversFound(Path dir, List<Path> found) {
        return "note: " + dir + " holds " + found.size() + " file(s) that a checkpoint-surgeon repair killed before"
                + " its switch left (" + found.get(0).getFileName() + (found.size() > 1 ? ", ..." : "") + "); this run"
                + " leaves them, `checkpoint-surgeon clean-leftovers " + dir + " --apply` deletes them";
    }

    /** Findings of {@code diff} or {@code history}, their remedies for the checkpoint at {@code path}. */
    static String findings(List<CheckpointSurgeon.Finding> findings, String path) {
        StringBuilder sb = new StringBuilder();
        for (CheckpointSurgeon.Finding f : findings) {
            sb.append(String.format(Locale.ROOT, "%s %s: %s%n  fix: %s%n", f.severity(), f.code(),
                    printable(CliSpelling.text(f.typedMessage())), printable(command(f.fix(), path))));
            for (CheckpointSurgeon.Remedy r : f.alternatives()) {
                sb.append("  or:  ").append(printable(command(r, path))).append(NL);
            }
        }
        return sb.toString();
    }

    /**
     * {@code diff}: both checkpoints, then every state and every operator whose sizes changed, then
     * the findings with their remedies for B ({@code bDir}).
     */
    static String diff(Growth.Diff d, String bDir) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "A: checkpoint %d, _metadata %s  %s%nB: checkpoint %d, _metadata %s  %s%n",
                d.checkpointA(), bytes(d.metadataBytesA()), printable(d.a()), d.checkpointB(), bytes(d.metadataBytesB()),
                printable(d.b())));
        sb.append(String.format(Locale.ROOT, "  %-32s %-32s %-8s %12s %12s %8s %12s %12s %9s %9s%n", "operator", "state", "change",
                "elements A", "elements B", "factor", "bytes A", "bytes B", "distinct A", "distinct B"));
        for (Growth.StateChange c : d.states()) {
            String state = c.mode() != null && c.mode().keyed() ? printable(c.state()) + " (" + c.mode() + ")"
                    : printable(c.state());
            sb.append(String.format(Locale.ROOT, "  %-32s %-32s %-8s %12s %12s %8s %12s %12s %9s %9s%n", c.operatorId(),
                    state, c.change(), count(c.elementsA()), count(c.elementsB()),
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
        return sb.append(findings(d.findings(), bDir)).toString();
    }

    /** {@code history}: every state's series (elements, their growth from the checkpoint before, bytes, parallelism), then the findings with their remedies for the newest checkpoint {@code lastDir}. */
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
            sb.append(NL).append("  growth   ");
            long before = -1;
            for (long e : s.elements()) {
                sb.append(String.format(Locale.ROOT, "%12s", before > 0 && e >= 0 ? String.format(Locale.ROOT, "x%.2f",
                        (double) e / before) : "-"));
                before = e;
            }
            sb.append(NL).append("  bytes    ");
            for (long b : s.bytes()) sb.append(String.format(Locale.ROOT, "%12s", count(b)));
            sb.append(NL).append("  parallel ");
            for (int p : s.parallelism()) sb.append(String.format(Locale.ROOT, "%12s", count(p)));
            sb.append(NL);
        }
        return sb.append(findings(h.findings(), lastDir)).toString();
    }

    /** The union states of an HA file's checkpoint, one line each, as {@code ha list} shows them. */
    static List<String> unionStates(CheckpointSurgeon.HaListing listing) {
        List<String> out = new java.util.ArrayList<>();
        for (CheckpointSurgeon.HaListing.UnionState u : listing.unionStates()) {
            InspectReport.StateTotal t = u.state();
            out.add(String.format(Locale.ROOT, "%s %s: %,d elements, %s", u.operatorId(), printable(t.name()),
                    t.elements(), t.bytes() < 0 ? "? bytes" : bytes(t.bytes())));
        }
        return out;
    }

    /** {@code ha list --kubernetes}: the ConfigMaps' pointers, those without a file and the files without a pointer. */
    static String kubernetesListing(KubernetesHa ha, KubernetesHa.Reconciliation r) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "HA ConfigMaps of cluster '%s' in namespace '%s' (Kubernetes API server %s):%n",
                printable(ha.clusterId), printable(ha.namespace), printable(ha.masterUrl)));
        for (KubernetesHa.Pointer p : r.pointers) {
            sb.append("  ").append(printable(p.configMap)).append(' ').append(printable(p.key)).append(" -> ")
                    .append(p.target == null ? "?" : printable(p.target)).append(pointerStatus(p)).append(NL);
        }
        if (r.pointers.isEmpty()) sb.append("  no checkpointID-<n> pointers").append(NL);
        sb.append("pointers without a file: ").append(r.pointersWithoutFile.size()).append(NL);
        for (KubernetesHa.Pointer p : r.pointersWithoutFile) {
            sb.append("  ").append(printable(p.configMap)).append(' ').append(printable(p.key)).append(" (checkpoint ")
                    .append(p.checkpointId)
                    .append(')').append(NL);
        }
        sb.append("files without a pointer: ").append(r.filesWithoutPointer.size()).append(NL);
        for (Path f : r.filesWithoutPointer) sb.append("  ").append(printable(f)).append(NL);
        return sb.toString();
    }

    /** One HA file of {@code ha list}: its job, checkpoint, size and union states. */
    static String haFile(CheckpointSurgeon.HaFileInfo file, List<String> unionStates) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "%s%n  job %s, checkpoint %d, %s, %s%n",
                printable(file.file()), printable(file.jobId()), file.checkpointId(), bytes(file.fileBytes()),
                printable(file.checkpointPath())));
        for (String u : unionStates) sb.append("  union state ").append(u).append(NL);
        return sb.toString();
    }

    /** The pointers and files {@code ha repair --kubernetes} leaves alone, one warning or note each. */
    static String passedOver(KubernetesHa.RepairSelection selection, Path dir) {
        StringBuilder sb = new StringBuilder();
        for (KubernetesHa.Pointer p : selection.passedOver) {
            String status = pointerStatus(p);
            sb.append("warning: ").append(printable(p.configMap)).append(' ').append(printable(p.key)).append(" -> ")
                    .append(printable(p.target)).append(status.isEmpty() ? " is not under " + printable(dir) : status)
                    .append("; not repaired").append(NL);
        }
        for (Path f : selection.unpointed) {
            sb.append("note: ").append(printable(f)).append(" has no pointer in the ConfigMaps (Flink does not recover from it);"
                    + " not repaired").append(NL);
        }
        return sb.toString();
    }

    /** The plans of {@code ha repair}, or what it repaired with a summary. */
    static String haRepair(List<CheckpointSurgeon.HaRepair> results, boolean applied) {
        StringBuilder sb = new StringBuilder();
        for (CheckpointSurgeon.HaRepair r : results) {
            if (r.plan() == null) {
                sb.append(printable(r.file())).append(": skipped, the surgery selects nothing in it (already repaired?)").append(NL);
            } else {
                sb.append(plan(r.plan()));
            }
        }
        if (applied) {
            sb.append("summary:").append(NL);
            for (CheckpointSurgeon.HaRepair r : results) {
                sb.append("  ").append(printable(r.file())).append(": ").append(r.plan() == null ? "skipped (nothing to change)"
                        : "repaired, backup " + printable(r.plan().result().backup())).append(NL);
            }
        }
        return sb.toString();
    }

    /** The status of a pointer: empty when its local file exists and Flink recovers from it. */
    static String pointerStatus(KubernetesHa.Pointer p) {
        String deleted = p.markedForDeletion ? " (marked for deletion)" : "";
        if (p.problem != null) return ": unreadable, " + printable(p.problem) + deleted;
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
            case INSPECT_KEYED:
                return "checkpoint-surgeon inspect " + p + " --keyed";
            case MIGRATE_KAFKA_LEGACY:
                // the connector version comes from the class path, else --connector-version is asked for
                return "checkpoint-surgeon kafka migrate-legacy " + p + " --operator-id " + r.operatorId()
                        + " --apply --output " + quote(path + "-migrated");
            case CLEAN_LEFTOVERS:
                return "checkpoint-surgeon clean-leftovers " + p + " --apply";
            case LIST_ORPHANS: {
                // the job directory of the checkpoint (of its _metadata)
                String chk = checkpointDir(path.replaceAll("/+$", ""));
                int slash = chk.lastIndexOf('/');
                return "checkpoint-surgeon orphans " + quote(slash > 0 ? chk.substring(0, slash) : ".");
            }
            case REMOVE_STATE:
                return surgery("remove-state", r, path, "-repaired");
            case DEDUPE_UNION:
                return surgery("dedupe-union", r, path, "-deduped");
            default:
                throw new IllegalArgumentException(r.action().name());
        }
    }

    /**
     * The command line of a doctor's remedy for HA files under {@code path} (the HA dir or file given):
     * {@code ha repair} of the same surgery with --apply, or {@code ha list}, with {@code haOptions}.
     */
    static String haCommand(CheckpointSurgeon.Remedy r, String path, String haOptions) {
        if (!r.haRepair()) return command(r, path);
        if (r.action() == CheckpointSurgeon.Remedy.Action.LIST_HA) return "checkpoint-surgeon ha list " + quote(path) + haOptions;
        return "checkpoint-surgeon ha repair " + quote(path) + " --operator-id " + r.operatorId() + " --state "
                + quote(r.state()) + (r.action() == CheckpointSurgeon.Remedy.Action.DEDUPE_UNION ? " --dedupe" : "")
                + " --apply" + haOptions;
    }

    private static String surgery(String command, CheckpointSurgeon.Remedy r, String path, String outputSuffix) {
        return "checkpoint-surgeon " + command + " " + quote(path) + " --operator-id " + r.operatorId() + " --state "
                + quote(r.state()) + " --apply --output " + quote(path + outputSuffix);
    }

    /** The checkpoint directory {@code path} names: {@code path} without a trailing {@code /_metadata}. */
    static String checkpointDir(String path) {
        return path.endsWith("/_metadata") ? path.substring(0, path.length() - "/_metadata".length()) : path;
    }

    /** A Kafka offset, or the name of the connector's marker. */
    static String kafkaOffset(long o) {
        return o == Surgery.KafkaStart.EARLIEST ? "EARLIEST" : o == Surgery.KafkaStart.LATEST ? "LATEST"
                : o == Surgery.KafkaStart.COMMITTED ? "COMMITTED" : Long.toString(o);
    }

    /** A count, or "-" for a value that is absent (-1). */
    static String count(long n) {
        // by hand, not String.format("%,d"): orphans prints one per file (a new DecimalFormat each)
        return n < 0 ? "-" : InspectReport.grouped(n);
    }

    /** {@code s} right-aligned in {@code width} columns ({@code %12s} without a Formatter). */
    private static StringBuilder padLeft(StringBuilder b, String s, int width) {
        for (int i = s.length(); i < width; i++) b.append(' ');
        return b.append(s);
    }

    /** {@code s} left-aligned in {@code width} columns ({@code %-40s} without a Formatter). */
    private static StringBuilder padRight(StringBuilder b, String s, int width) {
        b.append(s);
        for (int i = s.length(); i < width; i++) b.append(' ');
        return b;
    }

    /** {@code ha remove-checkpoint}: the pointer it would remove and the checkpoint that pointer names. */
    static String pointerToRemove(PointerRemoval.Plan plan) {
        KubernetesHa.Pointer p = plan.pointer;
        // names, ids and paths as the HA store and the checkpoint hold them: escaped, one line each
        return String.format("%s names checkpoint %d of job %s: %s", printable(plan.name), p.checkpointId,
                printable(p.jobId), printable(p.target == null ? p.problem : p.target));
    }

    /** Why removing the pointer of a checkpoint that restores loses progress (a refusal, or a warning when forced). */
    static String removalLosesProgress(PointerRemoval.Plan plan) {
        return String.format(Locale.ROOT, "checkpoint %d (%s) restores: removing its pointer makes Flink"
                + " recover an older checkpoint and lose the progress since", plan.pointer.checkpointId, plan.checkpoint);
    }

    /** Why Flink cannot recover from the pointer, when it cannot. */
    static String unrecoverable(PointerRemoval.Plan plan) {
        return "  which Flink cannot recover from: " + printable(plan.problem);
    }

    /** What Flink recovers the job from once the pointer is gone, loudly when that is nothing. */
    static String afterRemoval(PointerRemoval.Plan plan) {
        String jobId = plan.pointer.jobId;
        if (plan.next == null) {
            return printable("WARNING: no other checkpoint pointer of job " + jobId + " is left: Flink then starts the job"
                    + " from execution.savepoint.path (-s), or without state");
        }
        return printable("afterwards Flink recovers job " + jobId + " from checkpoint " + plan.next.checkpointId + " ("
                + (plan.nextCheckpoint != null ? plan.nextCheckpoint : plan.next.target) + "), "
                + (plan.nextProblem == null ? "which restores" : "WHICH DOES NOT RESTORE EITHER: " + plan.nextProblem));
    }

    /** {@code ha remove-checkpoint} without --apply: what it would do. */
    static String wouldRemove(PointerRemoval.Plan plan) {
        return "would remove " + printable(plan.name) + " and move its completedCheckpoint file aside; nothing was changed"
                + " (--apply removes it; stop the JobManager first)";
    }

    /** Each step of {@code ha remove-checkpoint --apply}, printed to {@code out} as it is done. */
    static PointerRemoval.Progress removal(PrintWriter out, PointerRemoval.Plan plan) {
        return new PointerRemoval.Progress() {
            @Override
            public void kept(Path file) {
                out.println("kept the pointer's value in " + printable(file));
            }

            @Override
            public void removed() {
                out.println("removed " + printable(plan.name) + " (version " + printable(plan.pointer.version) + ")");
            }

            @Override
            public void moved(Path file, Path to) {
                out.println("moved " + printable(file) + " to " + printable(to));
            }

            @Override
            public void logged(Path file) {
                out.println("logged in " + printable(file));
            }
        };
    }

    /** {@code ha list}: each HA file with its union states, or that there is none under {@code dir}. */
    static String haList(List<CheckpointSurgeon.HaListing> entries, Path dir) {
        StringBuilder sb = new StringBuilder();
        for (CheckpointSurgeon.HaListing e : entries) sb.append(haFile(e.file(), unionStates(e)));
        if (entries.isEmpty()) sb.append("no completedCheckpoint files under ").append(printable(dir)).append(NL);
        return sb.toString();
    }

    /** {@code ha repair} without --apply: why the JobManagers must be stopped first. */
    static String stopJobManagersFirst() {
        return "The JobManager(s) must be stopped before --apply: a running leader rewrites these files.";
    }

    /** {@code ha repair --apply} with no HA store to ask whether a JobManager leads. */
    static String leadershipNotChecked() {
        return "warning: not checked whether a JobManager holds the cluster's"
                + " leadership (give --zookeeper-quorum and --cluster-id, or --kubernetes and --cluster-id)";
    }

    /** A change made with --force while {@code leader} holds the cluster's leadership. */
    static String forcedPastLeader(String leader) {
        return "warning (--force): " + printable(leader);
    }

    /** {@code diff --max-growth}: a state grew by more than the gate allows. */
    static String grewTooMuch(double factor, Double maxGrowth) {
        return String.format(Locale.ROOT, "a state grew by x%.2f, more than --max-growth %s", factor, maxGrowth);
    }

    /** {@code watch --metrics-port}: where the metrics are served. */
    static String metricsAt(String host, int port) {
        return "metrics at http://" + printable(host) + ":" + port + "/metrics";
    }

    /** {@code recover}: each checkpoint newest first with its verdict and reasons, how to restore, the broken HA pointers. */
    static String recover(io.checkpointsurgeon.RecoverReport r,
                          java.util.function.Function<io.checkpointsurgeon.RecoverReport.HaPointer, String> removeCommand) {
        StringBuilder b = new StringBuilder();
        if (r.candidates().isEmpty()) {
            b.append("no checkpoint or savepoint (a directory with _metadata) under ").append(printable(r.roots())).append('\n');
            return b.toString();
        }
        b.append(String.format(Locale.ROOT, "%d checkpoint(s)/savepoint(s) under %s, newest first:%n", r.candidates().size(),
                printable(String.join(", ", r.roots()))));
        int notExamined = 0;
        for (io.checkpointsurgeon.RecoverReport.Candidate c : r.candidates()) {
            if (c.verdict() == io.checkpointsurgeon.RecoverReport.Verdict.NOT_EXAMINED) {
                notExamined++;
                continue;
            }
            b.append(String.format(Locale.ROOT, "  %-10s %s%s%n", c.verdict() == io.checkpointsurgeon.RecoverReport.Verdict
                    .RESTORABLE ? "RESTORES" : "BROKEN", printable(c.path()), c.verdict() == io.checkpointsurgeon.RecoverReport
                    .Verdict.RESTORABLE ? String.format(Locale.ROOT, " (%d referenced files, %s, all present)",
                    c.referencedFiles(), bytes(c.referencedBytes())) : ""));
            for (io.checkpointsurgeon.RecoverReport.Reason why : c.reasons()) {
                b.append("             ").append(printable(why.file())).append(": ").append(printable(why.problem())).append('\n');
            }
            if (c.uncheckedFiles() > 0) {
                b.append(String.format(Locale.ROOT, "             %d file(s) on another file system not checked (no Flink"
                        + " file system on the class path)%n", c.uncheckedFiles()));
            }
        }
        if (notExamined > 0) b.append(String.format(Locale.ROOT, "  (%d older one(s) not examined)%n", notExamined));
        if (r.newestRestorable() == null) {
            b.append("none of them restores\n");
        } else {
            b.append("\nrestore from ").append(printable(r.newestRestorable())).append(":\n")
                    .append("  flink-conf / config.yaml:  execution.savepoint.path: ").append(printable(r.newestRestorable()))
                    .append("   (Flink 1.20+: execution.state-recovery.path)\n")
                    .append("  command line:             flink run -s ").append(quote(r.newestRestorable()))
                    .append(" <job jar> <args>\n");
        }
        for (io.checkpointsurgeon.RecoverReport.HaPointer p : r.brokenHaPointers()) {
            b.append(String.format(Locale.ROOT, "%nHA pointer %s names checkpoint %d (%s), which does not restore: %s%n  %s%n",
                    printable(p.pointer()), p.checkpointId(), printable(p.checkpoint()), printable(p.problem()),
                    printable(p.repair(removeCommand.apply(p) + " --apply"))));
        }
        return b.toString();
    }

    /** {@code orphans}: the orphans with sizes and total, the young ones, what --delete would refuse for, what was deleted. */
    static String orphans(io.checkpointsurgeon.OrphanReport r, boolean delete) {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "scanned %s file(s) in %s director(ies) under %s; references of %d _metadata%s%n",
                count(r.filesScanned()), count(r.directoriesScanned()), printable(String.join(", ", r.roots())),
                r.checkpoints(), r.alsoReferencedBy().isEmpty() ? "" : " (also from " + printable(String.join(", ",
                        r.alsoReferencedBy())) + ")"));
        if (delete) {
            for (io.checkpointsurgeon.OrphanReport.Entry e : r.deleted()) {
                padLeft(b.append("  deleted "), count(e.size()), 12).append("  ").append(printable(e.path())).append(NL);
            }
            long sum = r.deleted().stream().mapToLong(io.checkpointsurgeon.OrphanReport.Entry::size).sum();
            b.append(String.format(Locale.ROOT, "deleted %d file(s), %s%s%n", r.deleted().size(), bytes(sum),
                    r.deletionLog() == null ? "" : "; logged in " + printable(r.deletionLog())));
        } else {
            for (io.checkpointsurgeon.OrphanReport.Entry e : r.orphans()) {
                String kind = e.kind().toString();
                padLeft(b.append("  "), count(e.size()), 12).append("  ").append(kind);
                for (int i = kind.length(); i < 21; i++) b.append(' ');
                b.append("  ").append(printable(e.path())).append(NL);
            }
            b.append(String.format(Locale.ROOT, "%d orphan(s), %s (sizes in bytes)%n", r.orphans().size(), bytes(r.orphanBytes())));
        }
        if (!r.young().isEmpty()) {
            b.append(String.format(Locale.ROOT, "%d unreferenced file(s) younger than --older-than kept%n", r.young().size()));
        }
        b.append(String.format(Locale.ROOT, "%d file(s) kept as referenced", r.kept().size()));
        if (!r.kept().isEmpty()) {
            io.checkpointsurgeon.OrphanReport.Entry k = r.kept().get(0);
            b.append(", e.g. ").append(printable(k.path())).append(" by ").append(printable(k.referencedBy()));
        }
        b.append('\n');
        for (String s : r.skipped()) b.append("  not a file, left alone: ").append(printable(s)).append('\n');
        for (Message s : r.typedDeleteBlockers()) {
            b.append("  --delete would refuse: ").append(printable(CliSpelling.text(s))).append('\n');
        }
        return b.toString();
    }

    static String bytes(long n) {
        return InspectReport.formatBytes(n);
    }

    /**
     * A string from a checkpoint, a path or an argument, on one line: control and bidirectional
     * formatting characters as escapes, a very long one shortened ({@link Terminal#safe}).
     */
    static String printable(Object s) {
        return Terminal.safe(s);
    }

    /**
     * A word for a shell, quoted when it needs to be: {@code '...'}, or {@code $'...'} (bash, zsh,
     * ksh) with escapes when it holds a character {@link Terminal} escapes, so that the command
     * stays runnable as printed and still carries no control character to the terminal.
     */
    static String quote(String s) {
        // loops, not String.matches and a stream: every doctor quotes each word of its fixes
        boolean plain = !s.isEmpty(), escaped = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            plain &= (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || "_./:@%+=,-".indexOf(c) >= 0;
            escaped |= Terminal.escaped(c);
        }
        if (plain) return s;
        if (!escaped) return "'" + s.replace("'", "'\\''") + "'";
        StringBuilder b = new StringBuilder("$'");
        for (char c : s.toCharArray()) {
            if (c == '\\' || c == '\'') b.append('\\').append(c);
            else if (c == '\t') b.append("\\t");
            else if (c == '\n') b.append("\\n");
            else if (c == '\r') b.append("\\r");
            else if (!Terminal.escaped(c)) b.append(c);
            else b.append(String.format(Locale.ROOT, c < 0x80 ? "\\x%02x" : "\\u%04x", (int) c));
        }
        return b.append('\'').toString();
    }
}
