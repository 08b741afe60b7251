package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.internal.Leftovers;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code orphans} on a Flink file system (S3 and other object stores, HDFS): {@link Orphans}'s
 * rules on a {@link StoreScan}. The {@code _metadata} files are read whole (they are small), every
 * other file is only listed; a deletion re-checks each file with one status request (on S3 a
 * HEAD) right before its delete request. Flink's {@code FileSystem} has no batch delete, so the
 * deletes are single requests, at most the pool's size at once, logged as each completes.
 */
final class StoreOrphans {
    /** Deletes per progress line. */
    private static final int BATCH = 256;

    private StoreOrphans() {}

    /** A scan's report and the attributes its orphans had. */
    private static final class Scan {
        OrphanReport report;
        final Map<String, CheckpointScan.FileInfo> orphans = new LinkedHashMap<>();
        final List<String> incompleteDirs = new ArrayList<>();
    }

    static OrphanReport report(List<String> roots, List<String> also, Duration olderThan, int parallelism)
            throws CheckpointSurgeonException {
        try (StoreScan.Pool pool = new StoreScan.Pool(parallelism)) {
            return scan(roots, also, olderThan, System.currentTimeMillis(), pool).report;
        }
    }

    private static Scan scan(List<String> roots, List<String> also, Duration olderThan, long scanStart,
                             StoreScan.Pool pool) throws CheckpointSurgeonException {
        StoreScan s = StoreScan.list(roots, pool);
        List<StoreScan.Meta> metadata = new ArrayList<>(s.metadata);
        // a backup of an in-place repair is read like a _metadata: what it references may be restored
        List<StoreScan.Meta> readers = new ArrayList<>(s.backups);
        List<String> alsoNames = new ArrayList<>();
        if (!also.isEmpty()) {
            StoreScan a = StoreScan.list(also, pool);
            metadata.addAll(a.metadata);
            readers.addAll(a.backups);
            alsoNames.addAll(a.roots);
        }
        readers.addAll(0, metadata);
        long now = System.currentTimeMillis();
        long ageLimit = now - olderThan.toMillis();
        List<Message> blockers = new ArrayList<>();
        Map<String, String> referencedBy = new HashMap<>();
        MisnamedRoots misnamed = new MisnamedRoots();
        List<Object> refs = pool.map(readers, m -> {
            try {
                return StoreScan.references(m, StoreScan.read(m));
            } catch (CheckpointSurgeonException e) {
                return e;
            }
        }, "reading _metadata");
        for (int i = 0; i < readers.size(); i++) {
            StoreScan.Meta m = readers.get(i);
            // object stores keep whole seconds (S3's Last-Modified): a second's margin
            if (m.file.mtime > scanStart - 1000) {
                blockers.add(Message.of(m.metadata() + " was written after the scan started: a checkpoint completed meanwhile"));
            }
            if (refs.get(i) instanceof CheckpointSurgeonException) {
                blockers.add(Message.of(m.metadata() + " cannot be read, so the files it references are not known: ",
                        Message.of((Exception) refs.get(i))));
                continue;
            }
            @SuppressWarnings("unchecked")
            List<CheckpointScan.Ref> rs = (List<CheckpointScan.Ref>) refs.get(i);
            for (CheckpointScan.Ref r : rs) {
                String key = FlinkFileSystems.normalize(r.name);
                referencedBy.putIfAbsent(key, m.dir);
                misnamed.reference(m.metadata(), key);
            }
        }
        Scan out = new Scan();
        List<OrphanReport.Entry> orphans = new ArrayList<>();
        List<OrphanReport.Entry> young = new ArrayList<>();
        List<OrphanReport.Entry> kept = new ArrayList<>();
        long bytes = 0;
        for (Map.Entry<String, CheckpointScan.FileInfo> e : s.files.entrySet()) {
            String f = e.getKey();
            CheckpointScan.FileInfo info = e.getValue();
            String name = StoreScan.name(f);
            if (name.equals("_metadata") || CheckpointScan.isBackup(name)) continue;
            if (name.equals(io.checkpointsurgeon.flink.RemoteCheckpoint.LOCK_NAME)) {
                blockers.add(Message.of(Orphans.lockObjectHeld(f)));
                continue;
            }
            String key = FlinkFileSystems.normalize(f);
            misnamed.listed(key, f);
            String by = referencedBy.get(key);
            if (by != null) {
                kept.add(new OrphanReport.Entry(f, info.size, info.mtime, null, by));
                continue;
            }
            OrphanReport.Kind kind = kind(s, f, name);
            if (kind == null) continue; // not checkpoint storage: never taken for an orphan
            bytes += Orphans.byAge(f, new OrphanReport.Entry(f, info.size, info.mtime, kind, null), info, ageLimit,
                    young, orphans, out.orphans);
        }
        misnamed.addBlockers(blockers);
        Orphans.byAge(s.incomplete, now, olderThan, blockers, out.incompleteDirs);
        out.report = new OrphanReport(s.roots, alsoNames, metadata.size(), s.files.size(), s.directories, orphans,
                bytes, young, kept, List.of(), blockers, List.of(), null);
        return out;
    }

    /** Why an unreferenced file is an orphan, or null when it lies outside checkpoint storage. */
    private static OrphanReport.Kind kind(StoreScan s, String f, String name) {
        if (Leftovers.stagedMetadata(name)) return OrphanReport.Kind.LEFTOVER;
        String chk = s.chkDirOf(f);
        if (chk != null && s.incomplete.containsKey(chk)) return OrphanReport.Kind.INCOMPLETE_CHECKPOINT;
        for (String dir : s.dirNames(f)) {
            if (Orphans.STORAGE.matcher(dir).matches()) return OrphanReport.Kind.UNREFERENCED;
        }
        return null;
    }

    static OrphanReport delete(List<String> roots, List<String> also, Duration olderThan, Path log, boolean belowFloor,
                               int parallelism) throws CheckpointSurgeonException {
        Orphans.requireAge(olderThan, belowFloor);
        try (StoreScan.Pool pool = new StoreScan.Pool(parallelism)) {
            long scanStart = System.currentTimeMillis();
            Scan first = scan(roots, also, olderThan, scanStart, pool);
            Orphans.refuseIfBlocked(first.report);
            if (first.orphans.isEmpty() && first.incompleteDirs.isEmpty()) return first.report;
            // Fresh references right before deleting: a checkpoint that completed since the first scan
            // blocks, and only what both scans found unreferenced is deleted.
            Scan second = scan(roots, also, olderThan, scanStart, pool);
            Orphans.refuseIfBlocked(second.report);
            List<OrphanReport.Entry> todo = new ArrayList<>();
            for (OrphanReport.Entry e : second.report.orphans()) {
                CheckpointScan.FileInfo before = first.orphans.get(e.path());
                if (before != null && before.size == e.size() && before.mtime == e.mtime()) todo.add(e);
            }
            List<OrphanReport.Entry> deleted = new ArrayList<>();
            try (FileChannel ch = FileChannel.open(log, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
                 BufferedWriter w = new BufferedWriter(new OutputStreamWriter(Channels.newOutputStream(ch),
                         StandardCharsets.UTF_8))) {
                w.write(Orphans.header(olderThan, second.report));
                w.flush();
                long ageLimit = System.currentTimeMillis() - olderThan.toMillis();
                List<String> failed = new ArrayList<>();
                for (int i = 0; i < todo.size() && failed.isEmpty(); i += BATCH) {
                    List<OrphanReport.Entry> batch = todo.subList(i, Math.min(todo.size(), i + BATCH));
                    // deleteOne never throws: every request sent completes and is logged before a failure is reported
                    List<Object> results = pool.map(batch, e -> deleteOne(e, ageLimit, w), "deleting orphans");
                    for (int j = 0; j < batch.size(); j++) {
                        Object r = results.get(j);
                        if (r instanceof Exception) failed.add(batch.get(j).path() + ": " + r);
                        else if (r != null) deleted.add((OrphanReport.Entry) r);
                    }
                    w.flush();
                    ch.force(false);
                    if (!failed.isEmpty()) {
                        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, String.format(Locale.ROOT,
                                "%d delete(s) failed, %,d orphans deleted before and with them (all logged in %s),"
                                        + " the rest not tried: %s", failed.size(), deleted.size(), log,
                                String.join("; ", failed)));
                    }
                    CheckpointSurgeon.progressListener().message(String.format(Locale.ROOT,
                            "deleted %,d of %,d orphans (%d requests at once)", deleted.size(), todo.size(), pool.size));
                }
                List<String> dirs = new ArrayList<>(second.incompleteDirs);
                dirs.retainAll(new java.util.HashSet<>(first.incompleteDirs));
                pool.map(dirs, dir -> {
                    removeEmptyTree(dir, w);
                    return null;
                }, "removing empty chk-* directories");
                w.flush();
                ch.force(true);
            } catch (FileAlreadyExistsException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "the deletion log "
                        + log + " exists: give a new file (it is never overwritten)", e);
            } catch (IOException e) {
                throw CheckpointScan.io("deleting orphans (log " + log + ")", e);
            }
            OrphanReport r = second.report;
            return new OrphanReport(r.roots(), r.alsoReferencedBy(), r.checkpoints(), r.filesScanned(),
                    r.directoriesScanned(), r.orphans(), r.orphanBytes(), r.young(), r.kept(), r.skipped(),
                    r.typedDeleteBlockers(), deleted, log.toString());
        }
    }

    /**
     * One orphan: its status again (still a file of the same size and mtime, old enough), then its
     * delete, logged before it is sent and when it returned. The entry when deleted, null when not,
     * the exception when a request failed (returned, not thrown: the pool would cancel the others).
     */
    private static Object deleteOne(OrphanReport.Entry e, long ageLimit, BufferedWriter w) {
        boolean sent = false;
        try {
            FlinkFileSystems.Status st = FlinkFileSystems.status(e.path());
            if (st == null) return null;
            if (st.dir || st.length != e.size() || st.mtime != e.mtime() || st.mtime > ageLimit) {
                log(w, "kept-changed", st.length, st.mtime, e.path());
                return null;
            }
            log(w, "deleting", e.size(), e.mtime(), e.path());
            sent = true;
            if (!FlinkFileSystems.delete(e.path())) {
                log(w, "gone", e.size(), e.mtime(), e.path());
                return null;
            }
            log(w, "deleted", e.size(), e.mtime(), e.path());
            return e;
        } catch (Exception x) {
            if (sent) {
                try {
                    log(w, "failed", e.size(), e.mtime(), e.path());
                } catch (IOException logFailed) {
                    x.addSuppressed(logFailed);
                }
            }
            return x;
        }
    }

    private static void log(BufferedWriter w, String action, long size, long mtime, String path) throws IOException {
        synchronized (w) {
            Orphans.line(w, action, size, mtime, path);
        }
    }

    /**
     * The directories left of an aborted {@code chk-*}, deepest first, each only while it is empty
     * (on S3 a directory marker; a prefix with no object is gone already).
     */
    private static void removeEmptyTree(String dir, BufferedWriter w) throws IOException {
        FlinkFileSystems.Status st = FlinkFileSystems.status(dir);
        if (st == null || !st.dir) return;
        for (FlinkFileSystems.Status child : FlinkFileSystems.listStatus(dir)) {
            if (child.dir) removeEmptyTree(child.path, w);
        }
        if (!FlinkFileSystems.listStatus(dir).isEmpty()) return; // something appeared or was kept in it
        try {
            if (FlinkFileSystems.delete(dir)) log(w, "deleted-dir", 0, st.mtime, dir);
        } catch (IOException notEmpty) {
            // written to meanwhile: a non-recursive delete refuses a directory with entries
        }
    }
}
