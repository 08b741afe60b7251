package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.state.StreamStateHandle;

/**
 * Flink 2.0, for {@link LineCompat}: it writes metadata V5 by default (V3 and V4 too) and has no
 * V6, so no merged channel-state handles. tests/java/since21 has 2.1+'s.
 */
final class V6Compat {
    static final boolean SUPPORTS_MERGED_CHANNELS = false;
    static final int[] OLDER_WRITABLE_VERSIONS = {3, 4};

    private V6Compat() {}

    static String describeMergedChannelHandle(Object h) {
        return null;
    }

    static Object newMergedInputChannelHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        throw new UnsupportedOperationException("merged channel handles need Flink 2.1+");
    }

    static Object newMergedResultSubpartitionHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return newMergedInputChannelHandle(subtask, delegate, size, serializedOffsets);
    }
}
