package io.checkpointsurgeon.flink;

import org.apache.flink.api.java.tuple.Tuple2;
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
import org.apache.flink.runtime.state.changelog.StateChange;
import org.apache.flink.runtime.util.EnvironmentInformation;

import java.io.DataOutputStream;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

/**
 * Flink 1.13 and 1.14 shims for the describer and the generator (the same members as tests/java/v115's
 * and since120's), compiled against either. Both write metadata V3 without state handle ids
 * (keyed code 3, incremental code 5). The finished markers (FLIP-147) came with 1.14: their classes
 * are named here, not linked, so one source serves both lines. The changelog handles of 1.14
 * (experimental) have a layout of their own that 1.15+ and the native codec do not read: none are
 * generated or described here.
 */
final class FlinkCompat extends Before120Compat {

    /** The Flink line on the class path, "1.13" or "1.14". */
    static final String FLINK_LINE = EnvironmentInformation.getVersion().replaceAll("^(\\d+\\.\\d+).*", "$1");

    static final boolean SUPPORTS_CHECKPOINT_PROPERTIES = false;

    private static final String FULLY_FINISHED = "org.apache.flink.runtime.checkpoint.FullyFinishedOperatorState";
    private static final String FINISHED_SUBTASK = "org.apache.flink.runtime.checkpoint.FinishedOperatorSubtaskState";

    /** Fully finished operators and finished subtasks: 1.14 (FLIP-147), not 1.13. */
    static final boolean SUPPORTS_FINISHED = FlinkCompat.class.getClassLoader().getResource(
            FULLY_FINISHED.replace('.', '/') + ".class") != null;
    /** 1.13 has no changelog handles; 1.14's have their first layout (see the class comment). */
    static final boolean SUPPORTS_CHANGELOG = false;

    /** Metadata versions older than the default that this Flink can still write (V2 is read-only). */
    static final int[] OLDER_WRITABLE_VERSIONS = {};

    private FlinkCompat() {}

    // ------------------------------------------------------------------------
    //  describer side
    // ------------------------------------------------------------------------

    static boolean isFullyFinished(OperatorState state) {
        return state.getClass().getName().equals(FULLY_FINISHED);
    }

    static boolean isFinished(OperatorSubtaskState state) {
        return state.getClass().getName().equals(FINISHED_SUBTASK);
    }

    /** Keyed KeyGroupsStateHandles have no state handle id before 1.15 (code 3). */
    static String keyGroupsHandleId(KeyGroupsStateHandle h) {
        return "-";
    }

    static String describeVersionSpecificKeyedHandle(KeyedStateHandle h) {
        return null;
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
        if (!fullyFinished) {
            return new OperatorState(id, parallelism, maxParallelism);
        }
        try {
            return (OperatorState) Class.forName(FULLY_FINISHED)
                    .getConstructor(OperatorID.class, int.class, int.class)
                    .newInstance(id, parallelism, maxParallelism);
        } catch (ReflectiveOperationException e) {
            throw new UnsupportedOperationException("fully finished operators need Flink 1.14+", e);
        }
    }

    static OperatorSubtaskState finishedSubtask() {
        try {
            return (OperatorSubtaskState) Class.forName(FINISHED_SUBTASK).getField("INSTANCE").get(null);
        } catch (ReflectiveOperationException e) {
            throw new UnsupportedOperationException("finished subtasks need Flink 1.14+", e);
        }
    }

    /** No state handle id before 1.15: {@code id} is dropped. */
    static KeyGroupsStateHandle newKeyGroupsHandle(
            KeyGroupRangeOffsets offsets, StreamStateHandle delegate, StateHandleID id) {
        return new KeyGroupsStateHandle(offsets, delegate);
    }

    /** Code 5: no checkpointed size, no state handle id; keys must be unique (maps). */
    static IncrementalRemoteKeyedStateHandle newIncrementalHandle(
            UUID backendId, KeyGroupRange range, long checkpointId,
            List<Map.Entry<String, StreamStateHandle>> shared,
            List<Map.Entry<String, StreamStateHandle>> privateState,
            StreamStateHandle meta, long checkpointedSize, StateHandleID id) {
        return new IncrementalRemoteKeyedStateHandle(
                backendId, range, checkpointId, HandleMaps.handleMap(shared), HandleMaps.handleMap(privateState),
                meta);
    }


    static KeyedStateHandle newChangelogBackendHandle(
            List<KeyedStateHandle> materialized, List<KeyedStateHandle> nonMaterialized,
            KeyGroupRange range, long checkpointId, long materializationId,
            long checkpointedSize, StateHandleID id) {
        throw new UnsupportedOperationException("changelog handles: see SUPPORTS_CHANGELOG");
    }

    static KeyedStateHandle newChangelogFileHandle(
            List<Tuple2<StreamStateHandle, Long>> handlesAndOffsets, KeyGroupRange range,
            long size, long checkpointedSize, String storageIdentifier, StateHandleID id) {
        throw new UnsupportedOperationException("changelog handles: see SUPPORTS_CHANGELOG");
    }

    static KeyedStateHandle newInMemoryChangelogHandle(
            List<StateChange> changes, long from, long to, KeyGroupRange range, StateHandleID id) {
        throw new UnsupportedOperationException("changelog handles: see SUPPORTS_CHANGELOG");
    }

    static StateChange newStateChange(int keyGroup, byte[] change) {
        return new StateChange(keyGroup, change);
    }

    /** 1.13 and 1.14 write only their default version, V3. */
    static void store(CheckpointMetadata metadata, DataOutputStream out, int version) {
        throw new UnsupportedOperationException("Flink " + FLINK_LINE + " writes only metadata V3");
    }

    /** V3 has no CheckpointProperties trailer. */
    static CheckpointMetadata newMetadata(
            long checkpointId, Collection<OperatorState> operators,
            Collection<MasterState> masters, Random random) {
        return new CheckpointMetadata(checkpointId, operators, masters);
    }
}
