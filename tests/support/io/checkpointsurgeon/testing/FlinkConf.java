package io.checkpointsurgeon.testing;

import org.apache.flink.configuration.Configuration;

/**
 * Flink configuration by key strings, so that one source configures Flink 1.15, 1.20 and 2.x: where
 * a key was renamed, both spellings are set (Flink ignores the keys it does not know).
 */
public final class FlinkConf {
    private FlinkConf() {}

    /** Sets {@code value} under every given spelling of a key. */
    public static void set(Configuration c, String value, String... keys) {
        for (String k : keys) {
            c.setString(k, value);
        }
    }

    /**
     * The base of every local job here: state backend, checkpoint and savepoint directories (URIs),
     * periodic checkpoints retained on cancellation, the {@code retained} newest kept, checkpoint
     * failures tolerated, a random REST port and no local recovery.
     */
    public static Configuration checkpointing(String backend, String checkpointsDir, String savepointsDir,
                                              String interval, int retained) {
        Configuration c = new Configuration();
        set(c, backend, "state.backend", "state.backend.type");
        set(c, checkpointsDir, "state.checkpoints.dir", "execution.checkpointing.dir");
        set(c, savepointsDir, "state.savepoints.dir", "execution.checkpointing.savepoint-dir");
        set(c, interval, "execution.checkpointing.interval");
        set(c, "RETAIN_ON_CANCELLATION", "execution.checkpointing.externalized-checkpoint-retention");
        set(c, String.valueOf(retained), "state.checkpoints.num-retained", "execution.checkpointing.num-retained");
        set(c, "100", "execution.checkpointing.tolerable-failed-checkpoints");
        set(c, "0", "rest.bind-port");
        set(c, "false", "state.backend.local-recovery", "execution.state-recovery.from-local");
        return c;
    }

    /** Streams up to {@code size} (e.g. "0", "2kb") stay inline in {@code _metadata}; larger ones become files. */
    public static void inlineThreshold(Configuration c, String size) {
        set(c, size, "state.storage.fs.memory-threshold", "execution.checkpointing.data-inline-threshold");
    }

    /** The job starts from this checkpoint or savepoint. */
    public static void restoreFrom(Configuration c, String path) {
        set(c, path, "execution.savepoint.path", "execution.state-recovery.path");
    }

    /**
     * The job starts from {@code path} in a restore mode that keeps referencing the snapshot's
     * {@code shared/} files by absolute path: LEGACY where the Flink on the class path has it (its
     * restore-mode enum: {@code RestoreMode} in 1.15 and 1.20, {@code RecoveryClaimMode} in 2.x, where
     * LEGACY is deprecated), else CLAIM. Returns the mode set.
     */
    public static String restoreReferencing(Configuration c, String path) {
        restoreFrom(c, path);
        String mode = restoreModes().contains("LEGACY") ? "LEGACY" : "CLAIM";
        set(c, mode, "execution.savepoint-restore-mode", "execution.state-recovery.claim-mode");
        return mode;
    }

    /** The constants of this Flink's restore-mode enum (renamed and moved between versions). */
    private static java.util.List<String> restoreModes() {
        for (String name : new String[] {"org.apache.flink.core.execution.RecoveryClaimMode",
                "org.apache.flink.core.execution.RestoreMode", "org.apache.flink.runtime.jobgraph.RestoreMode"}) {
            try {
                java.util.List<String> out = new java.util.ArrayList<>();
                for (Object o : Class.forName(name).getEnumConstants()) out.add(((Enum<?>) o).name());
                return out;
            } catch (ClassNotFoundException e) {
                // not this version's name
            }
        }
        throw new IllegalStateException("no restore-mode enum of Flink on the class path");
    }

    /** A failure ends the job instead of restarting it. */
    public static void noRestarts(Configuration c) {
        set(c, "none", "restart-strategy", "restart-strategy.type");
    }

    /** Segment handles in merged files (Flink 1.20+). */
    public static void fileMerging(Configuration c) {
        set(c, "true", "execution.checkpointing.file-merging.enabled");
    }

    /** The checkpoint directory set by {@link #checkpointing}. */
    public static String checkpointsDir(Configuration c) {
        return c.toMap().get("state.checkpoints.dir");
    }

    /** The savepoint directory set by {@link #checkpointing}. */
    public static String savepointsDir(Configuration c) {
        return c.toMap().get("state.savepoints.dir");
    }
}
