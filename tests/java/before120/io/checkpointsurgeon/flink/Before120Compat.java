package io.checkpointsurgeon.flink;

import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;

import java.util.Map;

/**
 * The {@link FlinkCompat} members that are the same on every Flink before 1.20 (tests/java/v113,
 * v115 and v116 extend it, so {@code FlinkCompat.x} finds them): no operator name and uid in the
 * metadata, no file-merging segment handles, no V6 merged channel handles.
 */
class Before120Compat {
    static final boolean SUPPORTS_NAME_AND_UID = false;
    static final boolean SUPPORTS_FILE_MERGING = false;
    static final boolean SUPPORTS_MERGED_CHANNELS = false;

    Before120Compat() {}

    static String operatorName(OperatorState state) {
        return null;
    }

    static String operatorUid(OperatorState state) {
        return null;
    }

    /** Segment handles do not exist before 1.20. */
    static String describeVersionSpecificStreamHandle(StreamStateHandle h) {
        return null;
    }

    /** FileMergingOperatorStream does not exist before 1.20. */
    static String describeVersionSpecificOperatorHandle(OperatorStateHandle h) {
        return null;
    }

    /** The V6 merged channel handles do not exist before 2.1. */
    static String describeVersionSpecificChannelHandle(Object h) {
        return null;
    }

    static StreamStateHandle newSegmentHandle(
            Path physicalFile, long startPos, long stateSize, boolean shared, String logicalId) {
        throw new UnsupportedOperationException("segment handles need Flink 1.20+");
    }

    static StreamStateHandle emptySegmentHandle() {
        throw new UnsupportedOperationException("segment handles need Flink 1.20+");
    }

    static OperatorStateHandle newFileMergingOperatorHandle(
            Path taskOwnedDir, Path sharedDir, Map<String, OperatorStateHandle.StateMetaInfo> states,
            StreamStateHandle segmentDelegate, boolean empty) {
        throw new UnsupportedOperationException("file merging needs Flink 1.20+");
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
