package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.FlinkJudge;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * {@code recover}: examines the checkpoints and savepoints under local roots, newest first, until
 * one restores: {@code _metadata} a regular file that parses, no error finding of the doctor (which
 * includes Flink's own loader when Flink is on the class path, and inline state that reads), and
 * every referenced file present with at least the size its handle records (stat only).
 */
final class Recovery {
    /**
     * The doctor's findings that make a restore fail. Not the others: a stale or growing union
     * state restores (and grows), a serializer class missing here may be in the job's jar.
     */
    static final java.util.Set<CheckpointSurgeon.Finding.Code> RESTORE_FAILS = java.util.EnumSet.of(
            CheckpointSurgeon.Finding.Code.FLINK_REJECTS_METADATA, CheckpointSurgeon.Finding.Code.STATE_STREAM_UNREADABLE,
            CheckpointSurgeon.Finding.Code.METADATA_SIZE, CheckpointSurgeon.Finding.Code.DEPLOYMENT_SIZE);

    /** Reasons listed per checkpoint; the rest are counted. */
    static final int MAX_REASONS = 20;

    private Recovery() {}

    /**
     * {@code pointers}: HA pointer (as named in the report) to the checkpoint path it names, with its
     * id.
     */
    static RecoverReport run(List<Path> roots, Map<String, Map.Entry<Long, String>> pointers)
            throws CheckpointSurgeonException {
        CheckpointScan scan = CheckpointScan.walk(roots);
        Map<Path, Path> realDirs = new HashMap<>();
        Walk<CheckpointScan.Metadata, Path> walk = newestFirst(scan.metadata, m -> m.dir, m -> m.dir,
                m -> notExamined(uri(m.dir), m.id), m -> examine(m, realDirs));
        List<String> rootNames = new ArrayList<>();
        for (Path r : scan.roots) rootNames.add(r.toString());
        return report(rootNames, walk.candidates, walk.best, pointers,
                target -> haProblem(target, walk, realDirs));
    }

    /** Why the checkpoint an HA pointer names does not restore, or null when it does. */
    interface PointerCheck {
        String problem(String target) throws CheckpointSurgeonException;
    }

    /** The report of candidates examined newest first, with the HA pointers {@code check} finds a problem with. */
    static RecoverReport report(List<String> roots, List<RecoverReport.Candidate> out, RecoverReport.Candidate best,
                                Map<String, Map.Entry<Long, String>> pointers, PointerCheck check) throws CheckpointSurgeonException {
        List<RecoverReport.HaPointer> broken = new ArrayList<>();
        for (Map.Entry<String, Map.Entry<Long, String>> p : pointers.entrySet()) {
            String target = p.getValue().getValue();
            long id = p.getValue().getKey();
            String problem = target == null ? "the pointer could not be read" : check.problem(target);
            if (problem == null) continue;
            broken.add(new RecoverReport.HaPointer(p.getKey(), id, target, problem, best == null ? null : best.path()));
        }
        return new RecoverReport(roots, out, best == null ? null : best.path(),
                best == null ? null : "execution.savepoint.path: " + best.path(),
                best == null ? null : "flink run -s " + best.path() + " <job jar> <args>", broken);
    }

    /** Why the checkpoint an HA pointer names does not restore, or null when it does. */
    private static String haProblem(String target, Walk<CheckpointScan.Metadata, Path> walk, Map<Path, Path> realDirs)
            throws CheckpointSurgeonException {
        if (target == null) return "the pointer could not be read";
        if (FlinkFileSystems.isRemote(target)) return null; // not under the local roots
        Path dir = CheckpointScan.real(FlinkFileSystems.localPath(target).toAbsolutePath().normalize(), realDirs);
        if (Files.isRegularFile(dir) && dir.getFileName().toString().equals("_metadata")) dir = dir.getParent();
        RecoverReport.Candidate c = walk.examined(dir);
        if (c == null) {
            return Files.exists(dir) ? "the checkpoint " + dir + " has no _metadata" : "the checkpoint " + dir
                    + " does not exist";
        }
        return problem(c);
    }

    private static RecoverReport.Candidate examine(CheckpointScan.Metadata m, Map<Path, Path> realDirs) {
        List<RecoverReport.Reason> reasons = new ArrayList<>();
        String metadata = m.metadata().toString();
        int files = 0;
        int unchecked = 0;
        long bytes = 0;
        if (m.file == null) {
            reasons.add(new RecoverReport.Reason(metadata, "is " + m.notRegular + ", expected a regular file"));
        } else if (m.file.size == 0) {
            reasons.add(new RecoverReport.Reason(metadata, "is empty, expected Flink's checkpoint metadata"));
        } else {
            try {
                InspectReport r = CheckpointSurgeon.inspect(m.metadata());
                for (CheckpointSurgeon.Finding f : Doctor.examine(r, m.metadata())) {
                    if (f.severity() == CheckpointSurgeon.Finding.Severity.ERROR && RESTORE_FAILS.contains(f.code())) {
                        reasons.add(new RecoverReport.Reason(metadata, f.code() + ": " + f.message()));
                    }
                }
                int more = 0;
                for (CheckpointScan.Ref ref : CheckpointScan.references(m, realDirs)) {
                    files++;
                    bytes += ref.file.size();
                    String problem;
                    if (ref.local != null) {
                        problem = localProblem(ref);
                    } else if (FlinkJudge.flinkAvailable()) {
                        problem = remoteProblem(ref);
                    } else {
                        unchecked++;
                        continue;
                    }
                    if (problem == null) continue;
                    if (reasons.size() < MAX_REASONS) {
                        reasons.add(new RecoverReport.Reason(ref.local != null ? ref.local.toString() : ref.name, problem));
                    } else {
                        more++;
                    }
                }
                if (more > 0) reasons.add(new RecoverReport.Reason(m.dir.toString(), more + " more referenced files missing or short"));
            } catch (CheckpointSurgeonException e) {
                String msg = String.valueOf(e.getMessage());
                reasons.add(new RecoverReport.Reason(metadata, msg.startsWith(metadata + ": ")
                        ? msg.substring(metadata.length() + 2) : msg));
            }
        }
        return new RecoverReport.Candidate(uri(m.dir), m.id, reasons.isEmpty() ? RecoverReport.Verdict.RESTORABLE
                : RecoverReport.Verdict.BROKEN, files, bytes, unchecked, reasons);
    }

    private static String localProblem(CheckpointScan.Ref ref) {
        try {
            BasicFileAttributes a = Files.readAttributes(ref.local, BasicFileAttributes.class);
            if (!a.isRegularFile()) return "is " + CheckpointScan.kind(ref.local) + ", expected a regular file of "
                    + ref.minimumSize() + " bytes";
            return a.size() < ref.minimumSize() ? shortBy(a.size(), ref) : null;
        } catch (NoSuchFileException e) {
            return missing(ref);
        } catch (IOException e) {
            return "cannot be read: " + e;
        }
    }

    /** One status request (on S3 a HEAD): present, a file, and at least the referenced size. */
    static String remoteProblem(CheckpointScan.Ref ref) {
        try {
            FlinkFileSystems.Status st = FlinkFileSystems.status(ref.name);
            if (st == null) return missing(ref);
            if (st.dir) return "is a directory, expected a file of " + ref.minimumSize() + " bytes";
            return st.length < ref.minimumSize() ? shortBy(st.length, ref) : null;
        } catch (IOException e) {
            return "cannot be asked for: " + e;
        }
    }

    private static String missing(CheckpointScan.Ref ref) {
        return "missing; _metadata references " + what(ref);
    }

    private static String shortBy(long size, CheckpointScan.Ref ref) {
        return "has " + size + " bytes; _metadata references " + what(ref);
    }

    private static String what(CheckpointScan.Ref ref) {
        switch (ref.file.kind()) {
            case SEGMENT:
                return "the segment of " + ref.file.size() + " bytes at offset " + ref.file.start();
            case RELATIVE:
            case FILE:
            default:
                return ref.file.size() + " bytes";
        }
    }

    /** The directory as Flink takes it in {@code -s} and {@code execution.savepoint.path}. */
    static String uri(Path dir) {
        String u = dir.toAbsolutePath().toUri().toString();
        return u.endsWith("/") ? u.substring(0, u.length() - 1) : u;
    }

    /**
     * The candidates of a recover, in {@code metadata}'s order (newest first): the first that restores is
     * {@link #best}, each candidate is found by its directory, and one the walk did not reach is
     * examined when an HA pointer names it.
     */
    static final class Walk<M, K> {
        final List<RecoverReport.Candidate> candidates = new ArrayList<>();
        RecoverReport.Candidate best;
        private final Map<K, RecoverReport.Candidate> byDir = new HashMap<>();
        private final Map<K, M> metadataByDir = new HashMap<>();
        private final Function<M, RecoverReport.Candidate> examine;

        private Walk(Function<M, RecoverReport.Candidate> examine) {
            this.examine = examine;
        }

        /** The candidate of {@code dir}, examined now if the walk stopped before it; null when it had no {@code _metadata}. */
        RecoverReport.Candidate examined(K dir) {
            RecoverReport.Candidate c = byDir.get(dir);
            return c != null && c.verdict() == RecoverReport.Verdict.NOT_EXAMINED ? examine.apply(metadataByDir.get(dir)) : c;
        }
    }

    /**
     * The newest-first walk of both routes (local paths, Flink paths): examines each {@code _metadata}
     * until one restores; the older ones are {@code notExamined}, so a recover reads no more than it must.
     * {@code dirOf}: the key HA pointers are matched by; {@code shown}: the directory as progress names it.
     */
    static <M, K> Walk<M, K> newestFirst(List<M> metadata, Function<M, K> dirOf, Function<M, Object> shown,
                                         Function<M, RecoverReport.Candidate> notExamined,
                                         Function<M, RecoverReport.Candidate> examine) {
        Walk<M, K> walk = new Walk<>(examine);
        int i = 0;
        for (M m : metadata) {
            i++;
            RecoverReport.Candidate c;
            if (walk.best == null) {
                CheckpointSurgeon.progressListener().message(String.format(Locale.ROOT, "[%d/%d] %s", i,
                        metadata.size(), shown.apply(m)));
                c = examine.apply(m);
                if (c.verdict() == RecoverReport.Verdict.RESTORABLE) walk.best = c;
            } else {
                c = notExamined.apply(m);
            }
            walk.candidates.add(c);
            walk.byDir.put(dirOf.apply(m), c);
            walk.metadataByDir.put(dirOf.apply(m), m);
        }
        return walk;
    }

    static RecoverReport.Candidate notExamined(String path, long id) {
        return new RecoverReport.Candidate(path, id, RecoverReport.Verdict.NOT_EXAMINED, 0, 0, 0, List.of());
    }

    /** Why a candidate does not restore (its first reason), or null when it does. */
    static String problem(RecoverReport.Candidate c) {
        return c.verdict() == RecoverReport.Verdict.RESTORABLE ? null
                : c.reasons().isEmpty() ? "it does not restore" : c.reasons().get(0).toString();
    }
}
