package io.checkpointsurgeon;

import io.checkpointsurgeon.internal.Leftovers;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * {@code orphans}: the files of local checkpoint storage that no {@code _metadata} under any given
 * root references, and their deletion. Safety: a deletion needs a fresh second scan that agrees,
 * refuses while a checkpoint may be in progress or a {@code _metadata} cannot be read, re-checks
 * each file (still a regular file, same size and mtime, old enough) right before deleting it, and
 * logs each deletion to a file it creates.
 */
final class Orphans {
    /** The smallest age {@code --older-than} may name without the unsafe override. */
    static final Duration FLOOR = Duration.ofHours(1);
    /** The directories of checkpoint storage: what a file must lie in to be taken for an orphan. */
    static final Pattern STORAGE = Pattern.compile("shared|taskowned|chk-\\d+|savepoint-.*");

    private Orphans() {}

    /** A scan's report and the attributes its orphans had. */
    private static final class Scan {
        OrphanReport report;
        final Map<Path, CheckpointScan.FileInfo> orphans = new LinkedHashMap<>();
        final List<Path> incompleteDirs = new ArrayList<>();
        /** The directories a repair locks (flock) when it changes them: snapshot directories and roots. */
        final java.util.Set<Path> lockable = new java.util.TreeSet<>();
    }

    static OrphanReport report(List<Path> roots, List<Path> also, Duration olderThan) throws CheckpointSurgeonException {
        return scan(roots, also, olderThan, System.currentTimeMillis()).report;
    }

    private static Scan scan(List<Path> roots, List<Path> also, Duration olderThan, long scanStart)
            throws CheckpointSurgeonException {
        long now = System.currentTimeMillis();
        long ageLimit = now - olderThan.toMillis();
        CheckpointScan s = CheckpointScan.walk(roots);
        List<CheckpointScan.Metadata> metadata = new ArrayList<>(s.metadata);
        // a backup of an in-place repair is read like a _metadata: what it references may be restored
        List<CheckpointScan.Metadata> readers = new ArrayList<>(s.backups);
        List<String> alsoNames = new ArrayList<>();
        if (!also.isEmpty()) {
            CheckpointScan a = CheckpointScan.walk(also);
            metadata.addAll(a.metadata);
            readers.addAll(a.backups);
            for (Path r : a.roots) alsoNames.add(r.toString());
        }
        readers.addAll(0, metadata);
        List<Message> blockers = new ArrayList<>();
        Map<Path, String> referencedBy = new HashMap<>();
        Map<Path, Path> realDirs = new HashMap<>();
        MisnamedRoots misnamed = new MisnamedRoots();
        for (CheckpointScan.Metadata m : readers) {
            if (m.file == null) {
                blockers.add(Message.of(m.metadata() + " is " + m.notRegular + ": the files it references are not known"));
                continue;
            }
            if (m.file.mtime > scanStart) {
                blockers.add(Message.of(m.metadata() + " was written after the scan started: a checkpoint completed meanwhile"));
            }
            try {
                for (CheckpointScan.Ref r : CheckpointScan.references(m, realDirs)) {
                    if (r.local != null) referencedBy.putIfAbsent(r.local, m.dir.toString());
                    misnamed.reference(m.metadata().toString(), r.local != null ? r.local.toString() : r.name);
                }
            } catch (CheckpointSurgeonException e) {
                blockers.add(Message.of(m.metadata() + " cannot be read, so the files it references are not known: ",
                        Message.of(e)));
            }
        }
        Scan out = new Scan();
        out.lockable.addAll(s.roots);
        for (CheckpointScan.Metadata m : readers) out.lockable.add(m.dir);
        out.lockable.addAll(s.incomplete.keySet());
        List<OrphanReport.Entry> orphans = new ArrayList<>();
        List<OrphanReport.Entry> young = new ArrayList<>();
        List<OrphanReport.Entry> kept = new ArrayList<>();
        long bytes = 0;
        Map<Path, java.util.Optional<Path>> chkOfDir = new HashMap<>();
        Map<Path, Boolean> storageDir = new HashMap<>();
        for (Map.Entry<Path, CheckpointScan.FileInfo> e : s.files.entrySet()) {
            Path f = e.getKey();
            CheckpointScan.FileInfo info = e.getValue();
            String name = f.getFileName().toString();
            if (name.equals("_metadata") || CheckpointScan.isBackup(name)) continue;
            if (name.equals(io.checkpointsurgeon.flink.RemoteCheckpoint.LOCK_NAME)) {
                blockers.add(Message.of(lockObjectHeld(f)));
                continue;
            }
            misnamed.listed(f.toString(), f.toString());
            String by = referencedBy.get(f);
            if (by != null) {
                kept.add(new OrphanReport.Entry(f.toString(), info.size, info.mtime, null, by));
                continue;
            }
            OrphanReport.Kind kind;
            Path chk = CheckpointScan.chkDirOf(f, s.roots, chkOfDir);
            if (Leftovers.stagedMetadata(name)) {
                kind = OrphanReport.Kind.LEFTOVER;
            } else if (chk != null && s.incomplete.containsKey(chk)) {
                kind = OrphanReport.Kind.INCOMPLETE_CHECKPOINT;
            } else if (storageDir.computeIfAbsent(f.getParent(), d -> inStorage(f, s.roots))) {
                kind = OrphanReport.Kind.UNREFERENCED;
            } else {
                continue; // not checkpoint storage: never taken for an orphan
            }
            bytes += byAge(f, new OrphanReport.Entry(f.toString(), info.size, info.mtime, kind, null), info, ageLimit,
                    young, orphans, out.orphans);
        }
        misnamed.addBlockers(blockers);
        byAge(s.incomplete, now, olderThan, blockers, out.incompleteDirs);
        List<String> skipped = new ArrayList<>();
        for (Map.Entry<Path, String> e : s.skipped.entrySet()) skipped.add(e.getKey() + " (" + e.getValue() + ")");
        List<String> rootNames = new ArrayList<>();
        for (Path r : s.roots) rootNames.add(r.toString());
        out.report = new OrphanReport(rootNames, alsoNames, metadata.size(), s.files.size(), s.directories, orphans,
                bytes, young, kept, skipped, blockers, List.of(), null);
        return out;
    }

    /** Whether a file lies in a directory of checkpoint storage (its root counted) below its root. */
    private static boolean inStorage(Path f, List<Path> roots) {
        for (Path p = f.getParent(); p != null; p = p.getParent()) {
            Path name = p.getFileName();
            if (name != null && STORAGE.matcher(name.toString()).matches()) return true;
            if (roots.contains(p)) return false;
        }
        return false;
    }

    static OrphanReport delete(List<Path> roots, List<Path> also, Duration olderThan, Path log, boolean belowFloor)
            throws CheckpointSurgeonException {
        requireAge(olderThan, belowFloor);
        long scanStart = System.currentTimeMillis();
        Scan first = scan(roots, also, olderThan, scanStart);
        refuseIfBlocked(first.report);
        if (first.orphans.isEmpty() && first.incompleteDirs.isEmpty()) return first.report;
        // Fresh references right before deleting: a checkpoint that completed since the first scan
        // blocks, and only what both scans found unreferenced is deleted.
        Scan second = scan(roots, also, olderThan, scanStart);
        refuseIfBlocked(second.report);
        refuseIfLocked(second.lockable);
        long ageLimit = System.currentTimeMillis() - olderThan.toMillis();
        List<OrphanReport.Entry> deleted = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(log, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
             BufferedWriter w = new BufferedWriter(new OutputStreamWriter(java.nio.channels.Channels.newOutputStream(ch),
                     StandardCharsets.UTF_8))) {
            w.write(header(olderThan, second.report));
            w.flush();
            for (OrphanReport.Entry e : second.report.orphans()) {
                Path p = Path.of(e.path());
                CheckpointScan.FileInfo before = first.orphans.get(p);
                if (before == null || before.size != e.size() || before.mtime != e.mtime()) continue;
                BasicFileAttributes a;
                try {
                    a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                } catch (NoSuchFileException gone) {
                    continue;
                }
                long mtime = a.lastModifiedTime().toMillis();
                if (!a.isRegularFile() || a.size() != e.size() || mtime != e.mtime() || mtime > ageLimit) {
                    line(w, "kept-changed", a.size(), mtime, p);
                    continue;
                }
                line(w, "deleting", e.size(), mtime, p); // a kill before "deleted" leaves this trace
                try {
                    Files.delete(p);
                } catch (NoSuchFileException gone) {
                    line(w, "gone", e.size(), mtime, p);
                    continue;
                }
                line(w, "deleted", e.size(), mtime, p);
                deleted.add(e);
                CheckpointSurgeon.progressListener().message("deleted " + p);
            }
            for (Path dir : second.incompleteDirs) {
                if (first.incompleteDirs.contains(dir)) removeEmptyTree(dir, w);
            }
            w.flush();
            ch.force(true);
        } catch (java.nio.file.FileAlreadyExistsException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "the deletion log " + log
                    + " exists: give a new file (it is never overwritten)", e);
        } catch (IOException e) {
            throw CheckpointScan.io("deleting orphans (log " + log + ")", e);
        }
        OrphanReport r = second.report;
        return new OrphanReport(r.roots(), r.alsoReferencedBy(), r.checkpoints(), r.filesScanned(), r.directoriesScanned(),
                r.orphans(), r.orphanBytes(), r.young(), r.kept(), r.skipped(), r.typedDeleteBlockers(), deleted, log.toString());
    }

    /** Refuses an {@code --older-than} below {@link #FLOOR} unless the caller took the unsafe override. */
    static void requireAge(Duration olderThan, boolean belowFloor) throws CheckpointSurgeonException {
        if (olderThan.compareTo(FLOOR) < 0 && !belowFloor) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, Message.of("deleting"
                    + " needs an age of at least " + age(FLOOR.toMillis()) + " (", Choice.OLDER_THAN, " "
                    + age(olderThan.toMillis()) + "): a younger file may belong to a checkpoint in progress"));
        }
    }

    /** The first lines of a deletion log. */
    static String header(Duration olderThan, OrphanReport r) {
        return "# checkpoint-surgeon orphan deletion, " + Instant.now() + ", older than " + age(olderThan.toMillis())
                + ", roots " + r.roots() + ", also referenced by " + r.alsoReferencedBy() + "\n# action\tsize\tmtime\tpath\n";
    }

    /** An unreferenced file: young (kept this time) or an orphan recorded with its attributes; its bytes if an orphan. */
    static <K> long byAge(K file, OrphanReport.Entry entry, CheckpointScan.FileInfo info, long ageLimit,
                          List<OrphanReport.Entry> young, List<OrphanReport.Entry> orphans, Map<K, CheckpointScan.FileInfo> attrs) {
        if (info.mtime > ageLimit) {
            young.add(entry);
            return 0;
        }
        orphans.add(entry);
        attrs.put(file, info);
        return info.size;
    }

    /** The {@code chk-*} without {@code _metadata}: one changed less than {@code --older-than} ago blocks, older ones go. */
    static <K> void byAge(Map<K, Long> incomplete, long now, Duration olderThan, List<Message> blockers, List<K> old) {
        for (Map.Entry<K, Long> e : incomplete.entrySet()) {
            if (e.getValue() > now - olderThan.toMillis()) {
                blockers.add(Message.of(String.format(Locale.ROOT, "%s has no _metadata and changed %s ago, less than ",
                        e.getKey(), age(now - e.getValue())), Choice.OLDER_THAN, " " + age(olderThan.toMillis())
                        + ": a checkpoint or savepoint in progress"));
            } else {
                old.add(e.getKey());
            }
        }
    }

    /** Deletes the empty directories of an aborted {@code chk-*} (itself last); a directory with anything in it stays. */
    private static void removeEmptyTree(Path dir, BufferedWriter w) throws IOException {
        List<Path> dirs = new ArrayList<>();
        try (java.util.stream.Stream<Path> s = Files.walk(dir)) {
            s.filter(p -> Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)).forEach(dirs::add);
        }
        dirs.sort(Comparator.comparingInt(Path::getNameCount).reversed());
        for (Path d : dirs) {
            long mtime = Files.getLastModifiedTime(d, LinkOption.NOFOLLOW_LINKS).toMillis();
            try {
                Files.delete(d);
                line(w, "deleted-dir", 0, mtime, d);
            } catch (java.nio.file.DirectoryNotEmptyException stays) {
                // something appeared or was kept in it
            }
        }
    }

    /** A repair's lock object under the roots: one is running (a surgery can outlast --older-than), or was killed. */
    static String lockObjectHeld(Object lock) {
        return lock + " exists: a repair is changing that directory now (one killed leaves it behind: delete it"
                + " once no repair runs)";
    }

    /** Refuses while a repair holds the commit lock of one of {@code dirs}: its new files are not referenced yet. */
    private static void refuseIfLocked(java.util.Collection<Path> dirs) throws CheckpointSurgeonException {
        for (Path d : dirs) {
            String held = io.checkpointsurgeon.internal.Native.lockHeld(d);
            if (held != null) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.LOCKED, "nothing deleted: " + held);
            }
        }
    }

    static void refuseIfBlocked(OrphanReport r) throws CheckpointSurgeonException {
        if (r.deleteBlockers().isEmpty()) return;
        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, Message.of("nothing deleted: ",
                Message.join("; ", r.typedDeleteBlockers())));
    }

    static void line(BufferedWriter w, String action, long size, long mtime, Object p) throws IOException {
        w.write(action + "\t" + size + "\t" + Instant.ofEpochMilli(mtime) + "\t" + escape(p.toString()) + "\n");
        w.flush();
    }

    /** A path on one log line: control characters and backslashes escaped. */
    private static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            if (c == '\\') sb.append("\\\\");
            else if (c < 0x20 || c == 0x7f) sb.append(String.format(Locale.ROOT, "\\x%02x", (int) c));
            else sb.append(c);
        }
        return sb.toString();
    }

    /** A duration as people write it: 90s, 15m, 2h, 3d. */
    static String age(long ms) {
        long s = ms / 1000;
        if (s % 86400 == 0 && s > 0) return s / 86400 + "d";
        if (s % 3600 == 0 && s > 0) return s / 3600 + "h";
        if (s % 60 == 0 && s > 0) return s / 60 + "m";
        return s + "s";
    }
}
