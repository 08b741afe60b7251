package io.checkpointsurgeon.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.MasterState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.filemerging.LogicalFile;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.StateHandleID;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.changelog.StateChange;
import org.apache.flink.runtime.state.filemerging.DirectoryStreamStateHandle;
import org.apache.flink.runtime.state.filemerging.EmptyFileMergingOperatorStreamStateHandle;
import org.apache.flink.runtime.state.filemerging.EmptySegmentFileStateHandle;
import org.apache.flink.runtime.state.filemerging.FileMergingOperatorStreamStateHandle;
import org.apache.flink.runtime.state.filemerging.SegmentFileStateHandle;

import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

/**
 * Flink 1.20 and 2.x shims for the describer and the generator (the same members as
 * tests/java/v115's): file-merging segment handles, incremental handles as lists, changelog handles
 * with checkpoint id and storage identifier, metadata written in older versions and the
 * CheckpointProperties trailer. The members where 1.20 and 2.x differ (operator name and uid, the
 * V6 merged channel handles) come from {@link LineCompat} in tests/java/v120 and since20, those that
 * 1.16 to 1.19 share too from {@link V4Compat}.
 */
final class FlinkCompat {

    /** The Flink line these shims compile against. */
    static final String FLINK_LINE = LineCompat.FLINK_LINE;

    static final boolean SUPPORTS_NAME_AND_UID = LineCompat.SUPPORTS_NAME_AND_UID;
    static final boolean SUPPORTS_FILE_MERGING = true;
    static final boolean SUPPORTS_MERGED_CHANNELS = LineCompat.SUPPORTS_MERGED_CHANNELS;
    static final boolean SUPPORTS_CHECKPOINT_PROPERTIES = true;
    /** Fully finished operators and finished subtasks (FLIP-147, 1.14+). */
    static final boolean SUPPORTS_FINISHED = true;
    /** The changelog keyed handles (codes 8-10, 13, 14) in the layout 1.15+ writes. */
    static final boolean SUPPORTS_CHANGELOG = true;

    /** Metadata versions older than the default that this Flink can still write. */
    static final int[] OLDER_WRITABLE_VERSIONS = LineCompat.OLDER_WRITABLE_VERSIONS;

    private FlinkCompat() {}

    // ------------------------------------------------------------------------
    //  describer side
    // ------------------------------------------------------------------------

    static String operatorName(OperatorState state) {
        return LineCompat.operatorName(state);
    }

    static String operatorUid(OperatorState state) {
        return LineCompat.operatorUid(state);
    }

    static boolean isFullyFinished(OperatorState state) {
        return state.isFullyFinished();
    }

    static boolean isFinished(OperatorSubtaskState state) {
        return state.isFinished();
    }

    /** The state handle id of a keyed KeyGroupsStateHandle (code 12; random when Flink read code 3). */
    static String keyGroupsHandleId(KeyGroupsStateHandle h) {
        return h.getStateHandleId().getKeyString();
    }

    /** The changelog handles, or null for a kind every version has. */
    static String describeVersionSpecificKeyedHandle(KeyedStateHandle h) {
        return ChangelogDescriber.describe(h);
    }

    /** Segment handles (codes 15, 16), or null for a kind every version has. */
    static String describeVersionSpecificStreamHandle(StreamStateHandle h) {
        if (h instanceof EmptySegmentFileStateHandle) {
            return "EmptySegment";
        }
        if (h instanceof SegmentFileStateHandle) {
            SegmentFileStateHandle s = (SegmentFileStateHandle) h;
            return "Segment(start=" + s.getStartPos() + ",size=" + s.getStateSize()
                    + ",scope=" + s.getScope().name() + ",path=" + s.getFilePath()
                    + ",logical=" + s.getLogicalFileId().getKeyString() + ")";
        }
        return null;
    }

    /** FileMergingOperatorStream (code 17), or null. */
    static String describeVersionSpecificOperatorHandle(OperatorStateHandle h) {
        if (h instanceof FileMergingOperatorStreamStateHandle) {
            FileMergingOperatorStreamStateHandle f = (FileMergingOperatorStreamStateHandle) h;
            return "FileMergingOperatorStream(states=" + FlinkDescriber.operatorStates(f)
                    + ",taskOwnedDir=" + f.getTaskOwnedDirHandle().getDirectory()
                    + ",sharedDir=" + f.getSharedDirHandle().getDirectory()
                    + ",empty=" + (f instanceof EmptyFileMergingOperatorStreamStateHandle)
                    + ",delegate=" + FlinkDescriber.streamHandle(f.getDelegateStateHandle())
                    + ")";
        }
        return null;
    }

    /** The V6 merged channel handles, or null. */
    static String describeVersionSpecificChannelHandle(Object h) {
        return LineCompat.describeMergedChannelHandle(h);
    }

    static StreamStateHandle incrementalMetaHandle(IncrementalRemoteKeyedStateHandle h) {
        return h.getMetaDataStateHandle();
    }

    static List<Map.Entry<String, StreamStateHandle>> incrementalSharedState(
            IncrementalRemoteKeyedStateHandle h) {
        return V4Compat.entries(h.getSharedState());
    }

    static List<Map.Entry<String, StreamStateHandle>> incrementalPrivateState(
            IncrementalRemoteKeyedStateHandle h) {
        return V4Compat.entries(h.getPrivateState());
    }

    // ------------------------------------------------------------------------
    //  generator side
    // ------------------------------------------------------------------------

    static OperatorState newOperatorState(
            String name, String uid, OperatorID id, int parallelism, int maxParallelism,
            boolean fullyFinished) {
        return LineCompat.newOperatorState(name, uid, id, parallelism, maxParallelism, fullyFinished);
    }

    static StreamStateHandle newSegmentHandle(
            Path physicalFile, long startPos, long stateSize, boolean shared, String logicalId) {
        return new SegmentFileStateHandle(
                physicalFile, startPos, stateSize,
                shared ? CheckpointedStateScope.SHARED : CheckpointedStateScope.EXCLUSIVE,
                new LogicalFile.LogicalFileId(logicalId));
    }

    static StreamStateHandle emptySegmentHandle() {
        return EmptySegmentFileStateHandle.INSTANCE;
    }

    static OperatorStateHandle newFileMergingOperatorHandle(
            Path taskOwnedDir, Path sharedDir, Map<String, OperatorStateHandle.StateMetaInfo> states,
            StreamStateHandle segmentDelegate, boolean empty) {
        DirectoryStreamStateHandle taskOwned = DirectoryStreamStateHandle.of(taskOwnedDir);
        DirectoryStreamStateHandle sharedHandle = DirectoryStreamStateHandle.of(sharedDir);
        return empty
                ? new EmptyFileMergingOperatorStreamStateHandle(
                        taskOwned, sharedHandle, states, segmentDelegate)
                : new FileMergingOperatorStreamStateHandle(
                        taskOwned, sharedHandle, states, segmentDelegate);
    }

    static IncrementalRemoteKeyedStateHandle newIncrementalHandle(
            UUID backendId, KeyGroupRange range, long checkpointId,
            List<Map.Entry<String, StreamStateHandle>> shared,
            List<Map.Entry<String, StreamStateHandle>> privateState,
            StreamStateHandle meta, long checkpointedSize, StateHandleID id) {
        return V4Compat.newIncrementalHandle(
                backendId, range, checkpointId, shared, privateState, meta, checkpointedSize, id);
    }

    static OperatorSubtaskState finishedSubtask() {
        return V4Compat.finishedSubtask();
    }

    static KeyGroupsStateHandle newKeyGroupsHandle(
            KeyGroupRangeOffsets offsets, StreamStateHandle delegate, StateHandleID id) {
        return KeyGroupsStateHandle.restore(offsets, delegate, id);
    }

    static KeyedStateHandle newChangelogBackendHandle(
            List<KeyedStateHandle> materialized, List<KeyedStateHandle> nonMaterialized,
            KeyGroupRange range, long checkpointId, long materializationId,
            long checkpointedSize, StateHandleID id) {
        return V4Compat.newChangelogBackendHandle(
                materialized, nonMaterialized, range, checkpointId, materializationId,
                checkpointedSize, id);
    }

    static KeyedStateHandle newChangelogFileHandle(
            List<Tuple2<StreamStateHandle, Long>> handlesAndOffsets, KeyGroupRange range,
            long size, long checkpointedSize, String storageIdentifier, StateHandleID id) {
        return V4Compat.newChangelogFileHandle(
                handlesAndOffsets, range, size, checkpointedSize, storageIdentifier, id);
    }

    static KeyedStateHandle newInMemoryChangelogHandle(
            List<StateChange> changes, long from, long to, KeyGroupRange range, StateHandleID id) {
        return V4Compat.newInMemoryChangelogHandle(changes, from, to, range, id);
    }

    static StateChange newStateChange(int keyGroup, byte[] change) {
        return keyGroup == StateChange.META_KEY_GROUP
                ? StateChange.ofMetadataChange(change)
                : StateChange.ofDataChange(keyGroup, change);
    }

    static Object newMergedInputChannelHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return LineCompat.newMergedInputChannelHandle(subtask, delegate, size, serializedOffsets);
    }

    static Object newMergedResultSubpartitionHandle(
            int subtask, StreamStateHandle delegate, long size, byte[] serializedOffsets) {
        return LineCompat.newMergedResultSubpartitionHandle(subtask, delegate, size, serializedOffsets);
    }

    /** Writes magic, {@code version} and body with that version's serializer. */
    static void store(CheckpointMetadata metadata, DataOutputStream out, int version)
            throws IOException {
        V4Compat.store(metadata, out, version);
    }

    /** Metadata with random (or no) CheckpointProperties for the V4+ Java-serialized trailer. */
    static CheckpointMetadata newMetadata(
            long checkpointId, Collection<OperatorState> operators,
            Collection<MasterState> masters, Random random) {
        return V4Compat.newMetadata(checkpointId, operators, masters, random);
    }
}
