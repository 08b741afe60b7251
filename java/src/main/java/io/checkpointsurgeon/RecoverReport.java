package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.PointerRemoval;
import java.util.List;

/**
 * What {@link CheckpointSurgeon#recover} found: the checkpoints and savepoints under the roots,
 * newest first, each restorable or with the reasons it is not (examined down to the newest
 * restorable one; older ones are listed, not examined), the newest restorable one with the way to
 * restore from it, and the HA pointers that name a broken checkpoint.
 */
public final class RecoverReport {
    /** Why a checkpoint does not restore: the file and what was expected of it. */
    public static final class Reason {
        private final String file;
        private final String problem;

        public Reason(String file, String problem) {
            this.file = file;
            this.problem = problem;
        }

        public String file() {
            return file;
        }

        public String problem() {
            return problem;
        }

        @Override
        public String toString() {
            return file + ": " + problem;
        }
    }

    /** Whether one checkpoint was examined, and what it showed. */
    public enum Verdict {
        RESTORABLE, BROKEN, NOT_EXAMINED
    }

    /** One checkpoint ({@code chk-<id>}) or savepoint directory. */
    public static final class Candidate {
        private final String path;
        /** The checkpoint id of a {@code chk-<id>} directory, -1 for a savepoint. */
        private final long checkpointId;
        private final Verdict verdict;
        private final int referencedFiles;
        private final long referencedBytes;
        /** Files on another file system not checked (no Flink file system for them). */
        private final int uncheckedFiles;
        private final List<Reason> reasons;

        public Candidate(String path, long checkpointId, Verdict verdict, int referencedFiles, long referencedBytes,
                         int uncheckedFiles, List<Reason> reasons) {
            this.path = path;
            this.checkpointId = checkpointId;
            this.verdict = verdict;
            this.referencedFiles = referencedFiles;
            this.referencedBytes = referencedBytes;
            this.uncheckedFiles = uncheckedFiles;
            this.reasons = List.copyOf(reasons);
        }

        public String path() {
            return path;
        }

        public long checkpointId() {
            return checkpointId;
        }

        public boolean savepoint() {
            return checkpointId < 0;
        }

        public Verdict verdict() {
            return verdict;
        }

        public int referencedFiles() {
            return referencedFiles;
        }

        public long referencedBytes() {
            return referencedBytes;
        }

        public int uncheckedFiles() {
            return uncheckedFiles;
        }

        public List<Reason> reasons() {
            return reasons;
        }
    }

    /** An HA pointer (completedCheckpoint file, ConfigMap key) that names a checkpoint which does not restore. */
    public static final class HaPointer {
        private final String pointer;
        private final long checkpointId;
        private final String checkpoint;
        private final String problem;
        private final String restoreFrom;
        private final PointerRemoval.Target removal;

        /** {@code restoreFrom}: the report's newest restorable checkpoint, or null. */
        HaPointer(String pointer, long checkpointId, String checkpoint, String problem, String restoreFrom) {
            this(pointer, checkpointId, checkpoint, problem, restoreFrom, null);
        }

        private HaPointer(String pointer, long checkpointId, String checkpoint, String problem, String restoreFrom,
                          PointerRemoval.Target removal) {
            this.pointer = pointer;
            this.checkpointId = checkpointId;
            this.checkpoint = checkpoint;
            this.problem = problem;
            this.restoreFrom = restoreFrom;
            this.removal = removal;
        }

        HaPointer withRemoval(PointerRemoval.Target t) {
            return new HaPointer(pointer, checkpointId, checkpoint, problem, restoreFrom, t);
        }

        public String pointer() {
            return pointer;
        }

        public long checkpointId() {
            return checkpointId;
        }

        public String checkpoint() {
            return checkpoint;
        }

        public String problem() {
            return problem;
        }

        /**
         * Which pointer to take away, and from which store, when recover gathered the pointers
         * itself (from an HA directory or store), else null.
         */
        public PointerRemoval.Target removal() {
            return removal;
        }

        /** How to take the pointer away, in Flink's terms. */
        public String repair() {
            return repair(null);
        }

        /**
         * {@link #repair()} naming {@code with}, the caller's own means of removing the pointer (the
         * CLI's command, rendered from {@link io.checkpointsurgeon.flink.PointerRemoval.Target}), or
         * without it when null.
         */
        public String repair(String with) {
            // Flink retrieves every pointer of the job when a JobManager starts and restores the newest
            return "Flink recovers from this pointer before it reads execution.savepoint.path: stop the"
                    + " JobManager, then take the pointer away (its value and completedCheckpoint file are kept)"
                    + (with == null ? "" : " with " + with)
                    + "; Flink then recovers from the newest checkpoint pointer left"
                    + (restoreFrom == null ? "" : ", or with none left, start the job with -s " + restoreFrom);
        }
    }

    private final List<String> roots;
    private final List<Candidate> candidates;
    private final String newestRestorable;
    private final String restoreConfig;
    private final String restoreCommand;
    private final List<HaPointer> brokenHaPointers;

    public RecoverReport(List<String> roots, List<Candidate> candidates, String newestRestorable, String restoreConfig,
                         String restoreCommand, List<HaPointer> brokenHaPointers) {
        this.roots = List.copyOf(roots);
        this.candidates = List.copyOf(candidates);
        this.newestRestorable = newestRestorable;
        this.restoreConfig = restoreConfig;
        this.restoreCommand = restoreCommand;
        this.brokenHaPointers = List.copyOf(brokenHaPointers);
    }

    public List<String> roots() {
        return roots;
    }

    /** Newest first. */
    public List<Candidate> candidates() {
        return candidates;
    }

    /** The directory to restore from ({@code file:/...}), or null when none restores. */
    public String newestRestorable() {
        return newestRestorable;
    }

    /** {@code execution.savepoint.path: ...} (Flink 1.20+ also reads {@code execution.state-recovery.path}), or null. */
    public String restoreConfig() {
        return restoreConfig;
    }

    /** {@code flink run -s ... <job jar>}, or null. */
    public String restoreCommand() {
        return restoreCommand;
    }

    public List<HaPointer> brokenHaPointers() {
        return brokenHaPointers;
    }

    /** Whether the newest checkpoint found restores and no HA pointer names a broken one. */
    /** This report with each broken pointer's {@link HaPointer#removal()} from {@code removals}, by pointer name. */
    RecoverReport withRemovals(java.util.Map<String, PointerRemoval.Target> removals) {
        List<HaPointer> pointers = new java.util.ArrayList<>();
        for (HaPointer p : brokenHaPointers) pointers.add(p.withRemoval(removals.get(p.pointer())));
        return new RecoverReport(roots, candidates, newestRestorable, restoreConfig, restoreCommand, pointers);
    }

    public boolean newestRestores() {
        return !candidates.isEmpty() && candidates.get(0).verdict() == Verdict.RESTORABLE && brokenHaPointers.isEmpty();
    }
}
