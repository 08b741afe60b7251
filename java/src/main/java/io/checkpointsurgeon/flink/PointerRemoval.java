package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.RecoverReport;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Taking a checkpoint out of a cluster's completed checkpoint store, as Flink's
 * CompletedCheckpointStore removes one: the {@link Plan} (which pointer, whether its checkpoint
 * restores, what Flink recovers the job from afterwards) and its {@link #apply} (keep the value,
 * remove the pointer compare-and-set through {@link HaStore}, move the completedCheckpoint file
 * aside, log). What it keeps is the pointer's exact value in a new file and the
 * completedCheckpoint file under a new name in the same directory (never deleted). Every name is
 * new ({@code O_CREAT|O_EXCL}, link(2)): an existing path is never written, a taken name gets
 * {@code -<n>}.
 */
public final class PointerRemoval {
    /** The suffix of what a removal keeps; {@link HaCheckpoint#isHaFileName} passes over it (".backup-"). */
    public static final String KEPT = ".backup-removed";

    private PointerRemoval() {}

    /**
     * Which pointer to take away and where it is kept, for a caller that names the removal in its
     * own terms (the CLI renders its command from it): {@link HaStore#target}.
     */
    public static final class Target {
        /** The kinds of store a cluster keeps its checkpoint pointers in. */
        public enum Store { ZOOKEEPER, KUBERNETES }

        /** The store that holds the pointer, or null when it is not known (an HA directory's file alone). */
        public final Store store;
        /** The cluster's id in {@link #store}, or null with it. */
        public final String clusterId;
        /** The job the pointer is of, or null when not known. */
        public final String jobId;
        public final long checkpointId;
        /** The pointer as its store names it ({@link HaStore#name}), or null when only its file is known. */
        public final String name;
        /** Its completedCheckpoint file, or null when not local. */
        public final Path file;

        Target(Store store, String clusterId, String jobId, long checkpointId, String name, Path file) {
            this.store = store;
            this.clusterId = clusterId;
            this.jobId = jobId;
            this.checkpointId = checkpointId;
            this.name = name;
            this.file = file;
        }

        /** The pointer to the completedCheckpoint file {@code info} in a store not known. */
        public static Target of(CheckpointSurgeon.HaFileInfo info) {
            return new Target(null, null, info.jobId(), info.checkpointId(), null, info.file());
        }
    }

    /** What removing one pointer would do, examined before anything changes. */
    public static final class Plan {
        /** The pointer to remove, as read (its version and exact value). */
        public final KubernetesHa.Pointer pointer;
        /** The pointer as its store names it. */
        public final String name;
        /** False when its completedCheckpoint file is on another file system: then nothing below was examined. */
        public final boolean examined;
        /** The checkpoint directory its completedCheckpoint file names, or null when that is not known. */
        public final String checkpoint;
        /** Why Flink cannot recover from the pointer, or null when its checkpoint restores. */
        public final String problem;
        /** The pointer Flink recovers the job from once this one is gone, or null when none is left. */
        public final KubernetesHa.Pointer next;
        /** The checkpoint directory {@link #next} names, or null when that is not known. */
        public final String nextCheckpoint;
        /** Why Flink cannot recover from {@link #next} either, or null when it restores. */
        public final String nextProblem;

        private Plan(KubernetesHa.Pointer pointer, String name, boolean examined, String checkpoint, String problem,
                     KubernetesHa.Pointer next, String nextCheckpoint, String nextProblem) {
            this.pointer = pointer;
            this.name = name;
            this.examined = examined;
            this.checkpoint = checkpoint;
            this.problem = problem;
            this.next = next;
            this.nextCheckpoint = nextCheckpoint;
            this.nextProblem = nextProblem;
        }

        /** Refuses (UNSUPPORTED) a pointer whose completedCheckpoint file was not examined. */
        public void requireExamined() throws CheckpointSurgeonException {
            if (!examined) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.UNSUPPORTED, pointer.target
                        + ": a completedCheckpoint file on another file system is not examined here; nothing was changed");
            }
        }
    }

    /** Several jobs have the checkpoint id asked for, and no job was named. */
    public static final class AmbiguousJob extends CheckpointSurgeonException {
        private static final long serialVersionUID = 1L;
        /** The jobs that each have the checkpoint. */
        public final List<String> jobs;

        AmbiguousJob(long checkpointId, List<String> jobs) {
            super(Code.INVALID_ARGUMENT, "jobs " + jobs + " each have a checkpoint " + checkpointId);
            this.jobs = List.copyOf(jobs);
        }
    }

    /** The steps of {@link #apply} as they happen, so that a caller can tell how far a failed removal got. */
    public interface Progress {
        /** The pointer's value is kept in {@code file}. */
        void kept(Path file);

        /** The pointer is gone from the store. */
        void removed();

        /** The completedCheckpoint {@code file} is now {@code to}. */
        void moved(Path file, Path to);

        /** The removal is logged in {@code file}. */
        void logged(Path file);
    }

    /**
     * Plans the removal of the pointer to {@code checkpointId} (of {@code jobId}, or of the one job
     * that has it when null): NOTHING_SELECTED when no pointer names it, {@link AmbiguousJob} when
     * several jobs have it. Examines whether its checkpoint restores and what Flink recovers the job
     * from afterwards; changes nothing.
     */
    public static Plan plan(HaStore store, long checkpointId, String jobId) throws CheckpointSurgeonException {
        List<KubernetesHa.Pointer> all = store.checkpointPointers();
        List<KubernetesHa.Pointer> found = new ArrayList<>();
        for (KubernetesHa.Pointer p : all) {
            if (p.checkpointId == checkpointId && (jobId == null || jobId.equals(p.jobId))) found.add(p);
        }
        if (found.isEmpty()) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "no pointer to checkpoint "
                    + checkpointId + (jobId == null ? "" : " of job " + jobId) + " in the cluster's "
                    + store.pointersName() + ": nothing to remove");
        }
        if (found.size() > 1) {
            List<String> jobs = new ArrayList<>();
            for (KubernetesHa.Pointer p : found) jobs.add(p.jobId);
            throw new AmbiguousJob(checkpointId, jobs);
        }
        KubernetesHa.Pointer p = found.get(0);
        String name = store.name(p);
        // a readable pointer to a file on another file system: its checkpoint is not examined here
        if (p.problem == null && !p.markedForDeletion && p.file == null) {
            return new Plan(p, name, false, null, null, null, null, null);
        }
        String[] checkpoint = new String[1];
        String problem = problem(p, checkpoint);
        KubernetesHa.Pointer next = null;
        for (KubernetesHa.Pointer q : all) {
            if (q == p || q.markedForDeletion || !String.valueOf(q.jobId).equals(String.valueOf(p.jobId))) continue;
            if (next == null || q.checkpointId > next.checkpointId) next = q;
        }
        String[] nextCheckpoint = new String[1];
        String nextProblem = next == null ? null
                : next.file == null ? "not examined (on another file system)" : problem(next, nextCheckpoint);
        return new Plan(p, name, true, checkpoint[0], problem, next, nextCheckpoint[0], nextProblem);
    }

    /**
     * Why Flink cannot recover from the pointer, or null when it can: a pointer Flink cannot read or
     * whose completedCheckpoint file is gone fails the JobManager's recovery of the job, a checkpoint
     * that does not restore fails the job's restore. {@code checkpoint[0]} gets the checkpoint's path.
     * Only for a pointer that is unreadable, marked, or names a local file.
     */
    private static String problem(KubernetesHa.Pointer p, String[] checkpoint) {
        if (p.problem != null) return "the pointer cannot be read: " + p.problem;
        if (p.markedForDeletion) return "Flink marked it for deletion (it skips it on recovery)";
        if (!Files.isRegularFile(p.file)) return "its completedCheckpoint file " + p.file + " does not exist";
        CheckpointSurgeon.HaFileInfo info;
        try {
            info = CheckpointSurgeon.haFileInfo(p.file);
        } catch (CheckpointSurgeonException e) {
            return "its completedCheckpoint file cannot be read: " + e.getMessage();
        }
        checkpoint[0] = info.checkpointPath();
        if (checkpoint[0] == null) return "its completedCheckpoint file names no checkpoint directory";
        RecoverReport r;
        try {
            r = CheckpointSurgeon.recoverAt(List.of(checkpoint[0]), Map.of(), 8);
        } catch (CheckpointSurgeonException e) {
            return "the checkpoint " + checkpoint[0] + " cannot be examined: " + e.getMessage();
        }
        if (r.candidates().isEmpty()) return "the checkpoint " + checkpoint[0] + " has no _metadata";
        RecoverReport.Candidate c = r.candidates().get(0);
        if (c.verdict() == RecoverReport.Verdict.RESTORABLE) return null;
        return "the checkpoint " + checkpoint[0] + " does not restore: "
                + (c.reasons().isEmpty() ? c.verdict().toString() : c.reasons().get(0).toString());
    }

    /**
     * Removes the planned pointer from {@code store}: keeps its exact value in a new file in
     * {@code dir}, removes it compare-and-set on the version it was read at, moves its
     * completedCheckpoint file aside and logs both in {@code dir}, telling {@code progress} each step.
     * A failed removal leaves the kept value and says where it is.
     */
    public static void apply(HaStore store, Plan plan, Path dir, Progress progress) throws CheckpointSurgeonException {
        KubernetesHa.Pointer p = plan.pointer;
        String base = String.format(Locale.ROOT, "%s-checkpointID-%019d", p.jobId, p.checkpointId);
        Path kept = keep(dir, base + store.valueSuffix() + KEPT, p.value());
        progress.kept(kept);
        try {
            store.remove(p);
        } catch (CheckpointSurgeonException e) {
            throw new CheckpointSurgeonException(e.code(), Message.of(e.typedMessage(), " (this run's copy of the value, "
                    + kept + ", is left)"), e);
        }
        progress.removed();
        StringBuilder log = new StringBuilder().append(Instant.now()).append(" removed ").append(plan.name)
                .append(" (version ").append(p.version).append("), checkpoint ").append(p.checkpointId).append(" of job ")
                .append(p.jobId).append(", value kept in ").append(kept).append('\n');
        if (p.file != null && Files.isRegularFile(p.file)) {
            Path moved = moveAside(p.file);
            progress.moved(p.file, moved);
            log.append(Instant.now()).append(" moved ").append(p.file).append(" to ").append(moved).append('\n');
        }
        progress.logged(keep(dir, base + ".removed.log", log.toString().getBytes(StandardCharsets.UTF_8)));
    }

    /** Writes {@code bytes} to a new file {@code dir/<name>[-n]}, synced with its directory; returns it. */
    public static Path keep(Path dir, String name, byte[] bytes) throws CheckpointSurgeonException {
        for (int n = 0; n < 1000; n++) {
            Path f = dir.resolve(n == 0 ? name : name + "-" + n);
            OutputStream o;
            try {
                o = Files.newOutputStream(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, f + ": cannot create: " + e, e);
            }
            try (o) {
                o.write(bytes);
            } catch (IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, f + ": " + e
                        + " (the partial file is left; nothing else was changed)", e);
            }
            sync(f, false);
            sync(dir, true);
            return f;
        }
        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, dir.resolve(name) + ": 1000 names in a row exist");
    }

    /**
     * Moves {@code file} aside to {@code <name>.backup-removed[-n]} in its directory: a hard link to
     * the new name (which fails on an existing one), then the old name is unlinked; where links are
     * impossible, a rename after a check that the name is free.
     */
    public static Path moveAside(Path file) throws CheckpointSurgeonException {
        String base = file.getFileName() + KEPT;
        for (int n = 0; n < 1000; n++) {
            Path to = file.resolveSibling(n == 0 ? base : base + "-" + n);
            boolean linked;
            try {
                Files.createLink(to, file);
                linked = true;
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (UnsupportedOperationException | IOException e) {
                linked = false; // no hard links here
            }
            try {
                if (linked) {
                    Files.delete(file);
                } else {
                    Files.move(file, to); // without REPLACE_EXISTING: fails on an existing name
                }
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "moving " + file + " to " + to
                        + ": " + e + (linked ? " (both names are left)" : ""), e);
            }
            sync(file.getParent(), true);
            return to;
        }
        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": 1000 names in a row exist");
    }

    private static void sync(Path p, boolean dir) throws CheckpointSurgeonException {
        try (FileChannel ch = FileChannel.open(p, dir ? StandardOpenOption.READ : StandardOpenOption.WRITE)) {
            ch.force(true);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "syncing " + p + ": " + e, e);
        }
    }
}
