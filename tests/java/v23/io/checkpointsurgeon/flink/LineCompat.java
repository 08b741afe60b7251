package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.checkpoint.FullyFinishedOperatorState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.MergedInputChannelStateHandle;
import org.apache.flink.runtime.state.MergedResultSubpartitionStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;

/**
 * What Flink 2.x adds to 1.20, for {@link FlinkCompat}: operator name and uid (metadata V5+) and
 * the merged channel-state handles (V6).
 */
final class LineCompat {
    static final String FLINK_LINE = "2.3";
    static final boolean SUPPORTS_NAME_AND_UID = true;
    static final boolean SUPPORTS_MERGED_CHANNELS = true;
    static final int[] OLDER_WRITABLE_VERSIONS = {3, 4, 5};

    private LineCompat() {}

    static String operatorName(OperatorState state) {
        return state.getOperatorName().orElse(null);
    }

    static String operatorUid(OperatorState state) {
        return state.getOperatorUid().orElse(null);
    }

    static String describeMergedChannelHandle(Object h) {
        if (h instanceof MergedInputChannelStateHandle) {
            MergedInputChannelStateHandle m = (MergedInputChannelStateHandle) h;
            return "MergedInputChannel(subtask=" + m.getSubtaskIndex() + ",size="
                    + m.getStateSize() + ",delegate=" + FlinkDescriber.streamHandle(m.getDelegate())
                    + ",offsetsBytes=" + m.getSerializedChannelOffsets().length + ")";
        }
        if (h instanceof MergedResultSubpartitionStateHandle) {
            MergedResultSubpartitionStateHandle m = (MergedResultSubpartitionStateHandle) h;
            return "MergedResultSubpartition(subtask=" + m.getSubtaskIndex() + ",size="
                    + m.getStateSize() + ",delegate=" + FlinkDescriber.streamHandle(m.getDelegate())
                    + ",offsetsBytes=" + m.getSerializedChannelOffsets().length + ")";
        }
        return null;
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
        return new MergedInputChannelStateHandle(subtask, delegate, size, serializedOffsets);
    }

    static Object newMergedResultSubpartitionHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return new MergedResultSubpartitionStateHandle(subtask, delegate, size, serializedOffsets);
    }
}
