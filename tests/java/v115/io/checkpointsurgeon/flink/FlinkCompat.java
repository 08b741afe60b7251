package io.checkpointsurgeon.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.checkpoint.FinishedOperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.FullyFinishedOperatorState;
import org.apache.flink.runtime.checkpoint.MasterState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StateHandleID;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle.ChangelogStateBackendHandleImpl;
import org.apache.flink.runtime.state.changelog.ChangelogStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateHandleStreamImpl;
import org.apache.flink.runtime.state.changelog.SequenceNumber;
import org.apache.flink.runtime.state.changelog.StateChange;
import org.apache.flink.runtime.state.changelog.inmemory.InMemoryChangelogStateHandle;

import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

/**
 * Flink 1.15 shims for the describer and the generator (the same members as tests/java/since120's).
 * 1.15 writes metadata V3: no file merging (segment handles), no CheckpointProperties trailer, no
 * operator name/uid, no merged channel handles; incremental shared/private state are maps.
 */
final class FlinkCompat extends Before120Compat {

    /** The Flink line these shims compile against. */
    static final String FLINK_LINE = "1.15";

    static final boolean SUPPORTS_CHECKPOINT_PROPERTIES = false;
    /** Fully finished operators and finished subtasks (FLIP-147, 1.14+). */
    static final boolean SUPPORTS_FINISHED = true;
    /** The changelog keyed handles (codes 8-10, 13, 14) in the layout 1.15+ writes. */
    static final boolean SUPPORTS_CHANGELOG = true;

    /** Metadata versions older than the default that this Flink can still write (V2 is read-only). */
    static final int[] OLDER_WRITABLE_VERSIONS = {};

    private FlinkCompat() {}

    // ------------------------------------------------------------------------
    //  describer side
    // ------------------------------------------------------------------------

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

    static StreamStateHandle incrementalMetaHandle(IncrementalRemoteKeyedStateHandle h) {
        return h.getMetaStateHandle();
    }

    static List<Map.Entry<String, StreamStateHandle>> incrementalSharedState(
            IncrementalRemoteKeyedStateHandle h) {
        return HandleMaps.entries(h.getSharedState());
    }

    static List<Map.Entry<String, StreamStateHandle>> incrementalPrivateState(
            IncrementalRemoteKeyedStateHandle h) {
        return HandleMaps.entries(h.getPrivateState());
    }


    // ------------------------------------------------------------------------
    //  generator side
    // ------------------------------------------------------------------------

    static OperatorState newOperatorState(
            String name, String uid, OperatorID id, int parallelism, int maxParallelism,
            boolean fullyFinished) {
        return fullyFinished
                ? new FullyFinishedOperatorState(id, parallelism, maxParallelism)
                : new OperatorState(id, parallelism, maxParallelism);
    }

    static OperatorSubtaskState finishedSubtask() {
        return FinishedOperatorSubtaskState.INSTANCE;
    }

    static KeyGroupsStateHandle newKeyGroupsHandle(
            KeyGroupRangeOffsets offsets, StreamStateHandle delegate, StateHandleID id) {
        return KeyGroupsStateHandle.restore(offsets, delegate, id);
    }

    /** Keys must be unique: 1.15 keeps shared and private state in maps. */
    static IncrementalRemoteKeyedStateHandle newIncrementalHandle(
            UUID backendId, KeyGroupRange range, long checkpointId,
            List<Map.Entry<String, StreamStateHandle>> shared,
            List<Map.Entry<String, StreamStateHandle>> privateState,
            StreamStateHandle meta, long checkpointedSize, StateHandleID id) {
        return IncrementalRemoteKeyedStateHandle.restore(
                backendId, range, checkpointId, HandleMaps.handleMap(shared), HandleMaps.handleMap(privateState),
                meta, checkpointedSize, id);
    }


    /** 1.15 writes code 8 (no checkpoint id). */
    @SuppressWarnings("unchecked") // nonMaterialized holds the ChangelogStateHandles made here
    static KeyedStateHandle newChangelogBackendHandle(
            List<KeyedStateHandle> materialized, List<KeyedStateHandle> nonMaterialized,
            KeyGroupRange range, long checkpointId, long materializationId,
            long checkpointedSize, StateHandleID id) {
        return ChangelogStateBackendHandleImpl.restore(
                materialized, (List<ChangelogStateHandle>) (List<?>) nonMaterialized, range,
                materializationId, checkpointedSize, id);
    }

    /** 1.15 writes code 10 (no storage identifier). */
    static KeyedStateHandle newChangelogFileHandle(
            List<Tuple2<StreamStateHandle, Long>> handlesAndOffsets, KeyGroupRange range,
            long size, long checkpointedSize, String storageIdentifier, StateHandleID id) {
        return ChangelogStateHandleStreamImpl.restore(
                handlesAndOffsets, range, size, checkpointedSize, id);
    }

    static KeyedStateHandle newInMemoryChangelogHandle(
            List<StateChange> changes, long from, long to, KeyGroupRange range, StateHandleID id) {
        return InMemoryChangelogStateHandle.restore(
                changes, SequenceNumber.of(from), SequenceNumber.of(to), range, id);
    }

    static StateChange newStateChange(int keyGroup, byte[] change) {
        return new StateChange(keyGroup, change);
    }

    /** 1.15 writes only its default version, V3. */
    static void store(CheckpointMetadata metadata, DataOutputStream out, int version)
            throws IOException {
        throw new UnsupportedOperationException("Flink 1.15 writes only metadata V3");
    }

    /** V3 has no CheckpointProperties trailer. */
    static CheckpointMetadata newMetadata(
            long checkpointId, Collection<OperatorState> operators,
            Collection<MasterState> masters, Random random) {
        return new CheckpointMetadata(checkpointId, operators, masters);
    }
}
