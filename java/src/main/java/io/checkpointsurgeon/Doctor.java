package io.checkpointsurgeon;

import io.checkpointsurgeon.CheckpointSurgeon.Finding.Code;
import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.internal.Leftovers;
import io.checkpointsurgeon.internal.Native;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/** Finds what is wrong with a checkpoint and the remedy that fixes it. */
final class Doctor {
    private static final CheckpointSurgeon.Finding.Severity ERROR = CheckpointSurgeon.Finding.Severity.ERROR;
    private static final CheckpointSurgeon.Finding.Severity WARNING = CheckpointSurgeon.Finding.Severity.WARNING;

    /** Flink's default {@code akka.framesize} / {@code pekko.framesize}: 10 MiB. */
    static final long RPC_FRAME = 10L * 1024 * 1024;
    /** The largest inline state (`state.storage.fs.memory-threshold` maximum): 1 MiB. */
    static final long INLINE_MAX = 1024L * 1024;

    private Doctor() {}

    /**
     * A local checkpoint: also checks that every state file it references exists inside the job
     * directory, and, when Flink is on the class path, that Flink's own loader accepts {@code _metadata}.
     */
    static List<CheckpointSurgeon.Finding> examine(InspectReport r, Path path) throws CheckpointSurgeonException {
        return examine(path, null, r);
    }

    /**
     * {@link #examine(InspectReport, Path)} of a report still being read: the checks of the
     * checkpoint's files, which need no report, run meanwhile on this thread.
     */
    static List<CheckpointSurgeon.Finding> examine(Future<InspectReport> report, Path path) throws CheckpointSurgeonException {
        return examine(path, report, null);
    }

    private static List<CheckpointSurgeon.Finding> examine(Path path, Future<InspectReport> report, InspectReport read)
            throws CheckpointSurgeonException {
        Path metadata = Files.isDirectory(path) ? path.resolve("_metadata") : path;
        List<CheckpointSurgeon.Finding> onDisk = new ArrayList<>();
        RuntimeException failedUnchecked = null;
        CheckpointSurgeonException failed = null;
        try {
            files(onDisk, metadata);
            leftovers(onDisk, metadata.toAbsolutePath().getParent());
            orphans(onDisk, metadata.toAbsolutePath().getParent());
        } catch (CheckpointSurgeonException e) {
            failed = e;
        } catch (RuntimeException e) {
            failedUnchecked = e;
        }
        // a _metadata that cannot be read fails as inspect's read says, before the file checks' own error
        InspectReport r = read != null ? read : await(report);
        List<CheckpointSurgeon.Finding> out = examine(r, path.toString());
        if (failed != null) throw failed;
        if (failedUnchecked != null) throw failedUnchecked;
        out.addAll(onDisk);
        if (FlinkJudge.flinkAvailable()) {
            try {
                FlinkJudge.validate(metadata, r.operators().size());
            } catch (CheckpointSurgeonException e) {
                out.add(new CheckpointSurgeon.Finding(ERROR, Code.FLINK_REJECTS_METADATA, Message.of("Flink "
                        + FlinkJudge.flinkVersion() + " cannot load this _metadata, so a restore from it fails: ",
                        e.typedMessage()),
                        CheckpointSurgeon.Remedy.inspect(false), List.of()));
            }
        }
        return out;
    }

    /** The report {@code report} computes; its failure as the reading thread had it. */
    static InspectReport await(Future<InspectReport> report) throws CheckpointSurgeonException {
        try {
            return report.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof CheckpointSurgeonException) throw (CheckpointSurgeonException) cause;
            if (cause instanceof RuntimeException) throw (RuntimeException) cause;
            if (cause instanceof Error) throw (Error) cause;
            throw new IllegalStateException(cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INTERRUPTED,
                    "interrupted while waiting for the report of the checkpoint");
        }
    }

    /** Findings for state files that are missing, or that lie outside the job directory. */
    private static void files(List<CheckpointSurgeon.Finding> out, Path metadata)
            throws CheckpointSurgeonException {
        Path dir = metadata.toAbsolutePath().getParent();
        Path jobDir = dir.getParent() == null ? dir : dir.getParent();
        List<String> missing = new ArrayList<>();
        List<String> outside = new ArrayList<>();
        for (StateFile f : Native.stateFiles(metadata)) {
            Path file;
            if (f.kind() == StateFile.Kind.RELATIVE) {
                file = dir.resolve(f.path());
            } else if (f.path().startsWith("file:") || f.path().startsWith("/")) {
                file = FlinkFileSystems.localPath(f.path());
            } else {
                continue; // a path on another file system: not checked from here
            }
            if (!Files.exists(file)) {
                missing.add(file.toString());
            } else if (!file.normalize().startsWith(jobDir) && !realInside(file, jobDir)) {
                outside.add(file.toString());
            }
        }
        if (!missing.isEmpty()) {
            out.add(new CheckpointSurgeon.Finding(ERROR, Code.STATE_FILE_MISSING, String.format(Locale.ROOT,
                    "%d state file(s) that _metadata references do not exist, so a restore fails: %s",
                    missing.size(), sample(missing)), CheckpointSurgeon.Remedy.inspect(true), List.of()));
        }
        if (!outside.isEmpty()) {
            out.add(new CheckpointSurgeon.Finding(WARNING, Code.STATE_FILE_OUTSIDE_JOB_DIR, String.format(Locale.ROOT,
                    "%d state file(s) lie outside the job directory %s (copied or moved checkpoint?): %s",
                    outside.size(), jobDir, sample(outside)), CheckpointSurgeon.Remedy.inspect(true), List.of()));
        }
    }

    /** A finding for what a killed repair of this tool left in the checkpoint's directory. */
    private static void leftovers(List<CheckpointSurgeon.Finding> out, Path dir) {
        leftovers(out, dir, WARNING, "");
    }

    /**
     * {@link CheckpointSurgeon#doctorLeftovers}: an ERROR, the directory holds no checkpoint but
     * what a killed repair left (an {@code --output} that never got its {@code _metadata}).
     */
    static List<CheckpointSurgeon.Finding> leftoversWithoutMetadata(Path dir) {
        List<CheckpointSurgeon.Finding> out = new ArrayList<>();
        leftovers(out, dir, CheckpointSurgeon.Finding.Severity.ERROR, "no _metadata, only what a repair left: ");
        return out;
    }

    private static void leftovers(List<CheckpointSurgeon.Finding> out, Path dir, CheckpointSurgeon.Finding.Severity severity,
            String prefix) {
        List<Path> found;
        try {
            found = Leftovers.find(dir);
        } catch (CheckpointSurgeonException e) {
            return; // a backup that cannot be read: nothing is claimed (clean-leftovers says why)
        }
        if (found.isEmpty()) return;
        List<String> names = new ArrayList<>();
        for (Path p : found) names.add(p.getFileName().toString());
        out.add(new CheckpointSurgeon.Finding(severity, Code.LEFTOVER_FILES, prefix + String.format(Locale.ROOT,
                "%d file(s) in %s were left by a checkpoint-surgeon repair that was killed before its switch (or"
                        + " belong to one running there now): %s; no _metadata of the directory references them (a"
                        + " _metadata.backup-* among them is the live _metadata under a second name), so they are safe to"
                        + " delete", found.size(), dir, sample(names)),
                new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.CLEAN_LEFTOVERS, null, null), List.of()));
    }

    /** Above this many entries in the job's {@code shared/}, the doctor leaves counting orphans to {@code orphans}. */
    private static final int CHEAP_SHARED_ENTRIES = 20_000;

    /**
     * A finding for the bytes under a {@code chk-<id>}'s job directory that no retained checkpoint
     * of it references, when that is cheap to know (a {@code shared/} of bounded size).
     */
    private static void orphans(List<CheckpointSurgeon.Finding> out, Path chk) {
        Path jobDir = chk.getParent();
        if (jobDir == null || !Files.isDirectory(jobDir.resolve("shared")) || CheckpointScan.id(chk) < 0) return;
        try (java.util.stream.Stream<Path> s = Files.list(jobDir.resolve("shared"))) {
            if (s.limit(CHEAP_SHARED_ENTRIES + 1).count() > CHEAP_SHARED_ENTRIES) return;
            // older than deletion's floor only: a running job's checkpoint in progress is no orphan
            OrphanReport r = Orphans.report(List.of(jobDir), List.of(), Orphans.FLOOR);
            if (r.orphans().isEmpty()) return;
            out.add(new CheckpointSurgeon.Finding(WARNING, Code.ORPHAN_FILES, Message.of(String.format(Locale.ROOT,
                    "%d file(s) older than an hour, %s, under %s are referenced by no retained checkpoint of this job (a job restored"
                            + " from it in NO_CLAIM or LEGACY mode may still use them: name its directory with"
                            + " ", r.orphans().size(), InspectReport.formatBytes(r.orphanBytes()), jobDir),
                    Choice.ALSO_REFERENCED_BY, ")"), new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.LIST_ORPHANS, null, null),
                    List.of()));
        } catch (IOException | CheckpointSurgeonException | java.io.UncheckedIOException e) {
            // the doctor's other findings stand; `orphans` says what is in the way
        }
    }

    private static CheckpointSurgeon.Remedy remedy(CheckpointSurgeon.Remedy.Action action, String operatorId, String state) {
        return new CheckpointSurgeon.Remedy(action, operatorId, state);
    }

    private static boolean realInside(Path file, Path jobDir) {
        try {
            return file.toRealPath().startsWith(jobDir.toRealPath());
        } catch (IOException e) {
            return false;
        }
    }

    private static String sample(List<String> l) {
        return String.join(", ", l.subList(0, Math.min(3, l.size()))) + (l.size() > 3 ? ", ..." : "");
    }

    /** {@code path} as the user gave it: a local path or a Flink path such as {@code s3://...}. */
    static List<CheckpointSurgeon.Finding> examine(InspectReport r, String path) {
        List<CheckpointSurgeon.Finding> out = new ArrayList<>();
        if (r.metadataBytes() > RPC_FRAME / 2) {
            out.add(new CheckpointSurgeon.Finding(r.metadataBytes() > RPC_FRAME ? ERROR : WARNING, Code.METADATA_SIZE,
                    "_metadata is " + InspectReport.formatBytes(r.metadataBytes()) + ", "
                            + (r.metadataBytes() > RPC_FRAME ? "over" : "over half of") + " the default RPC frame size of 10 MiB",
                    CheckpointSurgeon.Remedy.inspect(false), List.of()));
        }
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    if (h.streamError().isEmpty()) continue;
                    out.add(new CheckpointSurgeon.Finding(ERROR, Code.STATE_STREAM_UNREADABLE, String.format(Locale.ROOT,
                            "the operator state of operator %s subtask %d cannot be read, so a restore fails: %s",
                            op.id(), s.index(), h.streamError()), CheckpointSurgeon.Remedy.inspect(true),
                            List.of()));
                }
            }
        }
        Set<String> staleUnion = new HashSet<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            long deployment = 0;
            for (InspectReport.StateTotal t : op.stateTotals()) {
                if (t.mode() != InspectReport.Mode.UNION) continue;
                StaleStates.Entry known = StaleStates.match(op, t);
                StaleStates.Entry named = StaleStates.byName(op, t);
                String lookAlike = named == null ? null : StaleStates.lookAlike(named, op, t);
                deployment += 8 * t.elements();
                List<InspectReport.StateInfo> copies = new ArrayList<>();
                for (InspectReport.SubtaskInfo s : op.subtasks()) {
                    for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                        for (InspectReport.StateInfo st : h.states()) {
                            if (st.name().equals(t.name())) copies.add(st);
                        }
                    }
                }
                // loops, not streams, in the checks every doctor runs (see InspectReport's totals)
                boolean identical = copies.size() > 1;
                for (InspectReport.StateInfo c : copies) {
                    identical &= c.distinctElements() >= 0 && c.elements() == copies.get(0).elements()
                            && c.digest() == copies.get(0).digest();
                }
                boolean repeats = !copies.isEmpty() && copies.get(0).distinctElements() >= 0
                        && copies.get(0).elements() > copies.get(0).distinctElements();
                if (identical && repeats) {
                    staleUnion.add(op.id() + "\u0000" + t.name());
                    // the incident's findings are built without String.format: its first use costs a
                    // just-started JVM ~20 ms (the locale's number symbols), most of a doctor's Java time
                    out.add(new CheckpointSurgeon.Finding(ERROR, Code.STALE_UNION_STATE, Message.of("union state '" + t.name()
                            + "' of operator " + op.id() + " is identical in all " + copies.size()
                            + " subtasks and repeats its values (" + InspectReport.grouped(copies.get(0).elements())
                            + " elements per subtask, " + InspectReport.grouped(copies.get(0).distinctElements())
                            + " distinct): the signature of a union state the job no longer reads, which multiplies by"
                            + " the parallelism on every restore",
                            known != null ? Message.of(" (", StaleStates.explain(known), ")")
                                    : lookAlike != null ? Message.of(" (", StaleStates.explainLookAlike(named, lookAlike), ")")
                                    : ""),
                            remedy(CheckpointSurgeon.Remedy.Action.REMOVE_STATE, op.id(), t.name()),
                            // if the job still reads the state: keep one copy of each element
                            List.of(remedy(CheckpointSurgeon.Remedy.Action.DEDUPE_UNION, op.id(), t.name()))));
                }
            }
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    boolean hasUnion = false;
                    for (InspectReport.StateInfo x : h.states()) hasUnion |= x.mode() == InspectReport.Mode.UNION;
                    if (h.inline() && hasUnion) deployment += h.delegateSize();
                    if (h.inline() && h.delegateSize() > INLINE_MAX * 8 / 10) {
                        out.add(new CheckpointSurgeon.Finding(WARNING, Code.INLINE_STATE_NEAR_LIMIT, String.format(Locale.ROOT,
                                "operator %s subtask %d keeps %s of state inline in _metadata (the inline maximum is 1 MiB)",
                                op.id(), s.index(), InspectReport.formatBytes(h.delegateSize())), CheckpointSurgeon.Remedy.inspect(true),
                                List.of()));
                    }
                }
            }
            if (deployment > RPC_FRAME / 2) {
                out.add(new CheckpointSurgeon.Finding(deployment > RPC_FRAME ? ERROR : WARNING, Code.DEPLOYMENT_SIZE,
                        "every subtask of operator " + op.id() + " receives about " + InspectReport.formatBytes(deployment)
                                + " of union state handles on restore, " + (deployment > RPC_FRAME ? "over" : "over half of")
                                + " the default RPC frame size of 10 MiB",
                        CheckpointSurgeon.Remedy.inspect(false), List.of()));
            }
        }
        connectorStates(out, r, staleUnion);
        Set<String> missing = new HashSet<>();
        ClassLoader cl = Thread.currentThread().getContextClassLoader();
        if (FlinkJudge.flinkAvailable()) {
            for (InspectReport.OperatorInfo op : r.operators()) {
                for (InspectReport.SubtaskInfo s : op.subtasks()) {
                    for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                        for (InspectReport.StateInfo st : h.states()) {
                            String c = st.serializer();
                            if (c.isEmpty() || missing.contains(op.id() + c)) continue;
                            try {
                                Class.forName(c, false, cl);
                            } catch (ClassNotFoundException | LinkageError e) {
                                missing.add(op.id() + c);
                                out.add(new CheckpointSurgeon.Finding(ERROR, Code.SERIALIZER_CLASS_MISSING, String.format(
                                        Locale.ROOT, "state '%s' of operator %s needs serializer class %s, which is not on"
                                                + " the classpath: a restore with this classpath fails", st.name(), op.id(), c),
                                        remedy(CheckpointSurgeon.Remedy.Action.REMOVE_STATE, op.id(), st.name()),
                                        List.of()));
                            }
                        }
                    }
                }
            }
        }
        return out;
    }

    /** Below this, a keyed state without TTL is no growth worth a finding yet. */
    static final long UNBOUNDED_MIN_BYTES = 1L << 20;

    /** What {@link CheckpointSurgeon#doctorKeyed} finds. */
    static List<CheckpointSurgeon.Finding> examineKeyed(InspectReport r, KeyedReport keyed,
            java.util.Collection<String> registered, ClassLoader classPath) {
        List<CheckpointSurgeon.Finding> out = new ArrayList<>();
        largestWithoutTtl(out, r, keyed);
        if (registered != null) staleKeyed(out, keyed, registered);
        if (classPath != null) keyedClasses(out, keyed, classPath);
        return out;
    }

    private static void largestWithoutTtl(List<CheckpointSurgeon.Finding> out, InspectReport r, KeyedReport keyed) {
        KeyedReport.Operator op = null;
        KeyedReport.State largest = null;
        for (KeyedReport.Operator o : keyed.operators()) {
            for (KeyedReport.State s : o.states()) {
                if (largest == null || s.total().storedBytes() > largest.total().storedBytes()) {
                    op = o;
                    largest = s;
                }
            }
        }
        long all = Math.max(keyed.storedBytes(), r.totalOperatorStateBytes() + r.totalKeyedStateBytes()
                + r.totalChannelStateBytes());
        if (largest == null || largest.ttl() || largest.total().storedBytes() < UNBOUNDED_MIN_BYTES
                || largest.backendStateType() == KeyedReport.BackendStateType.PRIORITY_QUEUE) {
            return;
        }
        out.add(new CheckpointSurgeon.Finding(WARNING, Code.LARGEST_KEYED_STATE_WITHOUT_TTL, Message.of(String.format(Locale.ROOT,
                "keyed %s state '%s' of operator %s holds the largest share of the checkpoint (%.0f %% of %s: %,d"
                        + " entries, %s%s) and has no TTL: unless the job clears it, it grows with every new key,"
                        + " the usual unbounded growth. Give it a TTL (StateTtlConfig) or clear it in the job, and"
                        + " follow it over checkpoints with ",
                largest.kind(), largest.name(), label(op), 100.0 * largest.total().storedBytes() / Math.max(1, all),
                InspectReport.formatBytes(all), largest.total().entries(),
                InspectReport.formatBytes(largest.total().storedBytes()),
                largest.rocksDbNumbers() ? "; RocksDB's numbers, with tombstones and versions not compacted yet"
                        : largest.changelogNumbers() ? "; change log records since the last materialization" : ""),
                Choice.KEYED_HISTORY), CheckpointSurgeon.Remedy.inspectKeyed(), List.of()));
    }

    /** An operator as the findings name it: its id, and its uid where the format stores it. */
    private static String label(KeyedReport.Operator op) {
        return op.id() + (op.uid().isEmpty() ? "" : " (uid " + op.uid() + ")");
    }

    private static void staleKeyed(List<CheckpointSurgeon.Finding> out, KeyedReport keyed,
            java.util.Collection<String> registered) {
        Set<String> ids = new HashSet<>();
        for (KeyedReport.Operator o : keyed.operators()) {
            ids.add(o.id());
            if (!o.uid().isEmpty()) ids.add(o.uid());
        }
        Set<String> global = new HashSet<>();
        java.util.Map<String, Set<String>> scoped = new java.util.HashMap<>();
        for (String line : registered) {
            int slash = line.indexOf('/');
            if (slash > 0 && ids.contains(line.substring(0, slash))) {
                scoped.computeIfAbsent(line.substring(0, slash), k -> new HashSet<>()).add(line.substring(slash + 1));
            } else {
                global.add(line);
            }
        }
        for (KeyedReport.Operator o : keyed.operators()) {
            Set<String> expected = new HashSet<>(global);
            expected.addAll(scoped.getOrDefault(o.id(), Set.of()));
            expected.addAll(scoped.getOrDefault(o.uid(), Set.of()));
            for (KeyedReport.State s : o.states()) {
                if (expected.contains(s.name()) || s.backendStateType() == KeyedReport.BackendStateType.PRIORITY_QUEUE) {
                    continue;
                }
                out.add(new CheckpointSurgeon.Finding(WARNING, Code.STALE_KEYED_STATE, Message.of(String.format(Locale.ROOT,
                        "keyed %s state '%s' of operator %s is in the checkpoint (%,d entries, %s) but the job no"
                                + " longer registers it: Flink restores every state of the meta info and writes it"
                                + " back on every checkpoint, heap and RocksDB alike, so it is carried forever."
                                + " Remove it with a State Processor API job or wait for ",
                        s.kind(), s.name(), label(o), s.total().entries(),
                        InspectReport.formatBytes(s.total().storedBytes())), Choice.REMOVE_KEYED_STATE),
                        CheckpointSurgeon.Remedy.inspectKeyed(), List.of()));
            }
        }
    }

    private static void keyedClasses(List<CheckpointSurgeon.Finding> out, KeyedReport keyed, ClassLoader cl) {
        boolean flink = loads("org.apache.flink.api.common.typeutils.TypeSerializerSnapshot", cl);
        for (KeyedReport.Operator o : keyed.operators()) {
            Set<String> reported = new HashSet<>(); // a class once per operator (the key's is every state's)
            for (KeyedReport.State s : o.states()) {
                for (KeyedReport.Serializer z : s.serializers()) {
                    for (String c : z.snapshot().allClasses()) {
                        if (c.startsWith("org.apache.flink.") && !flink || loads(c, cl) || !reported.add(c)) continue;
                        out.add(new CheckpointSurgeon.Finding(ERROR, Code.KEYED_SERIALIZER_CLASS_MISSING,
                                Message.of(String.format(Locale.ROOT, "keyed state '%s' of operator %s needs class %s"
                                        + " (its %s is %s), which the given class path cannot load: a restore with it"
                                        + " fails (ClassNotFoundException while the state's serializer is restored)."
                                        + " Put the class on the job's class path, or remove the state with a State"
                                        + " Processor API job or ", s.name(), label(o), c, z.role(),
                                        z.snapshot().shortName()), Choice.REMOVE_KEYED_STATE, " once it exists"),
                                CheckpointSurgeon.Remedy.inspectKeyed(), List.of()));
                    }
                }
            }
        }
    }

    private static boolean loads(String className, ClassLoader cl) {
        try {
            Class.forName(className, false, cl);
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /**
     * A WARNING for each state of the catalogue ({@link StaleStates}) the checkpoint holds, unless
     * the STALE_UNION_STATE finding already names it (that ERROR then carries the same text). A
     * state with a catalogued name but another element type than the connector's (a look-alike:
     * pulsar-flink's, or a job's own) is a LOOK_ALIKE_STATE warning that says what it holds.
     */
    private static void connectorStates(List<CheckpointSurgeon.Finding> out, InspectReport r, Set<String> staleUnion) {
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                StaleStates.Entry e = StaleStates.byName(op, t);
                if (e == null || staleUnion.contains(op.id() + "\u0000" + t.name())) continue;
                String lookAlike = StaleStates.lookAlike(e, op, t);
                if (lookAlike != null) {
                    out.add(new CheckpointSurgeon.Finding(WARNING, Code.LOOK_ALIKE_STATE, Message.of(String.format(Locale.ROOT,
                            "operator %s holds %s state '%s' (%,d elements, %s): ", op.id(), e.mode, t.name(),
                            t.elements(), t.bytes() < 0 ? "size unknown" : InspectReport.formatBytes(t.bytes())),
                            StaleStates.explainLookAlike(e, lookAlike)),
                            CheckpointSurgeon.Remedy.inspect(false), List.of()));
                    continue;
                }
                out.add(new CheckpointSurgeon.Finding(WARNING, Code.CONNECTOR_STATE, Message.of("operator " + op.id() + " holds "
                        + e.mode + " state '" + t.name() + "' (" + InspectReport.grouped(t.elements()) + " elements, "
                        + (t.bytes() < 0 ? "size unknown" : InspectReport.formatBytes(t.bytes())) + ") of ",
                        StaleStates.explain(e)),
                        e == StaleStates.KAFKA ? remedy(CheckpointSurgeon.Remedy.Action.MIGRATE_KAFKA_LEGACY, op.id(), null)
                                : CheckpointSurgeon.Remedy.inspect(false),
                        e.mode == InspectReport.Mode.UNION && e != StaleStates.KAFKA
                                ? List.of(remedy(CheckpointSurgeon.Remedy.Action.REMOVE_STATE, op.id(), t.name())) : List.of()));
            }
            if (op.coordinatorStateBytes() >= StaleStates.CDC_MIN_BYTES
                    && StaleStates.cdcEnumerator(op.coordinatorHead(), op.coordinatorStateBytes())) {
                StaleStates.Entry e = StaleStates.CDC;
                out.add(new CheckpointSurgeon.Finding(WARNING, Code.CONNECTOR_STATE, String.format(Locale.ROOT,
                        "operator %s has %s of coordinator state laid out as %s of %s. Known: the layout of its"
                                + " snapshot or hybrid state; a heuristic: that no other source writes it, and that"
                                + " %s or more is bloat",
                        op.id(), InspectReport.formatBytes(op.coordinatorStateBytes()), e.state, StaleStates.explain(e),
                        InspectReport.formatBytes(StaleStates.CDC_MIN_BYTES)),
                        CheckpointSurgeon.Remedy.inspect(false), List.of()));
            }
        }
    }
}
