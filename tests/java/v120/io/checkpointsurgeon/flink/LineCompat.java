package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.checkpoint.FullyFinishedOperatorState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.StreamStateHandle;

/**
 * What Flink 1.20 lacks of 2.x, for {@link FlinkCompat}: 1.20 writes metadata V4, without operator
 * name and uid (V5) and without the merged channel-state handles (V6).
 */
final class LineCompat {
    static final String FLINK_LINE = "1.20";
    static final boolean SUPPORTS_NAME_AND_UID = false;
    static final boolean SUPPORTS_MERGED_CHANNELS = false;
    static final int[] OLDER_WRITABLE_VERSIONS = {3};

    private LineCompat() {}

    static String operatorName(OperatorState state) {
        return null;
    }

    static String operatorUid(OperatorState state) {
        return null;
    }

    static String describeMergedChannelHandle(Object h) {
        return null;
    }

    static OperatorState newOperatorState(
            String name, String uid, OperatorID id, int parallelism, int maxParallelism,
            boolean fullyFinished) {
        return fullyFinished
                ? new FullyFinishedOperatorState(id, parallelism, maxParallelism)
                : new OperatorState(id, parallelism, maxParallelism);
    }

    static Object newMergedInputChannelHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        throw new UnsupportedOperationException("merged channel handles need Flink 2.1+");
    }

    static Object newMergedResultSubpartitionHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        throw new UnsupportedOperationException("merged channel handles need Flink 2.1+");
    }
}
