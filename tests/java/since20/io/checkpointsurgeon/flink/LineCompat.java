package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.checkpoint.FullyFinishedOperatorState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.util.EnvironmentInformation;

/**
 * What Flink 2.x adds to 1.20, for {@link FlinkCompat}: operator name and uid (metadata V5+). The
 * merged channel-state handles of metadata V6 (2.1+) come from {@link V6Compat}: tests/java/v20
 * (2.0, which writes V5) or tests/java/since21 (2.1 and later).
 */
final class LineCompat {
    /** "2.0", "2.1", ...: the major.minor of the Flink on the class path. */
    static final String FLINK_LINE = majorMinor(EnvironmentInformation.getVersion());
    static final boolean SUPPORTS_NAME_AND_UID = true;
    static final boolean SUPPORTS_MERGED_CHANNELS = V6Compat.SUPPORTS_MERGED_CHANNELS;
    static final int[] OLDER_WRITABLE_VERSIONS = V6Compat.OLDER_WRITABLE_VERSIONS;

    private LineCompat() {}

    private static String majorMinor(String version) {
        String[] p = version.split("\\.");
        if (p.length < 2) {
            throw new IllegalStateException("Flink version " + version + " has no major.minor");
        }
        return p[0] + "." + p[1];
    }

    static String operatorName(OperatorState state) {
        return state.getOperatorName().orElse(null);
    }

    static String operatorUid(OperatorState state) {
        return state.getOperatorUid().orElse(null);
    }

    static String describeMergedChannelHandle(Object h) {
        return V6Compat.describeMergedChannelHandle(h);
    }

    static OperatorState newOperatorState(
            String name, String uid, OperatorID id, int parallelism, int maxParallelism,
            boolean fullyFinished) {
        return fullyFinished
                ? new FullyFinishedOperatorState(name, uid, id, parallelism, maxParallelism)
                : new OperatorState(name, uid, id, parallelism, maxParallelism);
    }

    static Object newMergedInputChannelHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return V6Compat.newMergedInputChannelHandle(subtask, delegate, size, serializedOffsets);
    }

    static Object newMergedResultSubpartitionHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return V6Compat.newMergedResultSubpartitionHandle(subtask, delegate, size, serializedOffsets);
    }
}
