package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.state.MergedInputChannelStateHandle;
import org.apache.flink.runtime.state.MergedResultSubpartitionStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;

/**
 * Metadata V6 (Flink 2.1+, the default there), for {@link LineCompat}: the merged channel-state
 * handles; V3, V4 and V5 can still be written. tests/java/v20 has 2.0's (V5, no merged handles).
 */
final class V6Compat {
    static final boolean SUPPORTS_MERGED_CHANNELS = true;
    static final int[] OLDER_WRITABLE_VERSIONS = {3, 4, 5};

    private V6Compat() {}

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

    static Object newMergedInputChannelHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return new MergedInputChannelStateHandle(subtask, delegate, size, serializedOffsets);
    }

    static Object newMergedResultSubpartitionHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return new MergedResultSubpartitionStateHandle(subtask, delegate, size, serializedOffsets);
    }
}
