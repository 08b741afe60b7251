package io.checkpointsurgeon;

import java.util.List;

/**
 * What {@link CheckpointSurgeon#orphans} found under local roots: the files of checkpoint storage
 * ({@code shared/}, {@code taskowned/}, {@code chk-*} and savepoint directories) that no
 * {@code _metadata} under any root references, the ones kept (each with one checkpoint that
 * references it), and what blocks a deletion. With {@link CheckpointSurgeon#deleteOrphans}, also
 * what was deleted and where it was logged.
 */
public final class OrphanReport {
    /** Why a file is an orphan. */
    public enum Kind {
        /** In {@code shared/}, {@code taskowned/}, a checkpoint or savepoint directory, and referenced by no {@code _metadata}. */
        UNREFERENCED,
        /** In a {@code chk-*} directory without {@code _metadata} (an aborted checkpoint). */
        INCOMPLETE_CHECKPOINT,
        /** A {@code _metadata.tmp-*} a killed repair of this tool left. */
        LEFTOVER
    }

    /** One file: path, size, mtime (ms), and the kind of orphan or the checkpoint that keeps it. */
    public static final class Entry {
        private final String path;
        private final long size;
        private final long mtime;
        private final Kind kind;
        private final String referencedBy;

        public Entry(String path, long size, long mtime, Kind kind, String referencedBy) {
            this.path = path;
            this.size = size;
            this.mtime = mtime;
            this.kind = kind;
            this.referencedBy = referencedBy;
        }

        public String path() {
            return path;
        }

        public long size() {
            return size;
        }

        public long mtime() {
            return mtime;
        }

        /** The kind of orphan, null for a kept file. */
        public Kind kind() {
            return kind;
        }

        /** One checkpoint directory that references the file (kept files), else null. */
        public String referencedBy() {
            return referencedBy;
        }
    }

    private final List<String> roots;
    private final List<String> alsoReferencedBy;
    private final int checkpoints;
    private final long filesScanned;
    private final long directoriesScanned;
    private final List<Entry> orphans;
    private final long orphanBytes;
    /** Orphans younger than the age limit: kept this time. */
    private final List<Entry> young;
    private final List<Entry> kept;
    private final List<String> skipped;
    private final List<Message> deleteBlockers;
    private final List<Entry> deleted;
    private final String deletionLog;

    public OrphanReport(List<String> roots, List<String> alsoReferencedBy, int checkpoints, long filesScanned,
                        long directoriesScanned, List<Entry> orphans, long orphanBytes, List<Entry> young,
                        List<Entry> kept, List<String> skipped, List<Message> deleteBlockers, List<Entry> deleted,
                        String deletionLog) {
        this.roots = List.copyOf(roots);
        this.alsoReferencedBy = List.copyOf(alsoReferencedBy);
        this.checkpoints = checkpoints;
        this.filesScanned = filesScanned;
        this.directoriesScanned = directoriesScanned;
        this.orphans = List.copyOf(orphans);
        this.orphanBytes = orphanBytes;
        this.young = List.copyOf(young);
        this.kept = List.copyOf(kept);
        this.skipped = List.copyOf(skipped);
        this.deleteBlockers = List.copyOf(deleteBlockers);
        this.deleted = List.copyOf(deleted);
        this.deletionLog = deletionLog;
    }

    public List<String> roots() {
        return roots;
    }

    public List<String> alsoReferencedBy() {
        return alsoReferencedBy;
    }

    /** The {@code _metadata} files whose references were collected (all roots). */
    public int checkpoints() {
        return checkpoints;
    }

    public long filesScanned() {
        return filesScanned;
    }

    public long directoriesScanned() {
        return directoriesScanned;
    }

    /** Orphans old enough to delete. */
    public List<Entry> orphans() {
        return orphans;
    }

    public long orphanBytes() {
        return orphanBytes;
    }

    public List<Entry> young() {
        return young;
    }

    public List<Entry> kept() {
        return kept;
    }

    /** Paths not taken as files (symbolic links, FIFOs, devices): never deleted. */
    public List<String> skipped() {
        return skipped;
    }

    /** Why {@code --delete} refuses (empty: it may delete). */
    public List<String> deleteBlockers() {
        return deleteBlockers.stream().map(Message::toString).collect(java.util.stream.Collectors.toList());
    }

    /** {@link #deleteBlockers()} with the choices they name, for a front end to name them its own way. */
    public List<Message> typedDeleteBlockers() {
        return deleteBlockers;
    }

    public List<Entry> deleted() {
        return deleted;
    }

    /** The deletion log, or null when nothing was to be deleted. */
    public String deletionLog() {
        return deletionLog;
    }
}
