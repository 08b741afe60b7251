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
