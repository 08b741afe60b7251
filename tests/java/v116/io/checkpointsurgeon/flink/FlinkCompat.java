package io.checkpointsurgeon.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.checkpoint.FullyFinishedOperatorState;
import org.apache.flink.runtime.checkpoint.MasterState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
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
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

/**
 * Flink 1.16 to 1.19 shims for the describer and the generator (the same members as
 * tests/java/v115's and since120's). These lines write metadata V4 (the CheckpointProperties
 * trailer; V3 still writable), keep incremental shared/private state as lists of
 * {@link HandleAndLocalPath} (1.16.3 and 1.17.2 have the lists too: a patch-release backport) and
 * write changelog handles with checkpoint id and storage identifier; they have no file merging
 * segment handles (1.20), no operator name/uid (V5) and no merged channel handles (V6). What they
 * share with 1.20 and 2.x is in {@link V4Compat} (tests/java/since120's, linked here).
 *
 * <p>Two members differ inside the range and are bound by reflection once: the incremental
 * handle's metadata getter ({@code getMetaStateHandle} up to 1.18, {@code getMetaDataStateHandle}
 * from 1.19) and how a {@link StateChange} is made (1.16: its public constructor; from 1.17 the
 * factories {@code ofDataChange} and {@code ofMetadataChange}, the constructors package-private).
 */
final class FlinkCompat extends Before120Compat {

    /** The Flink line these shims run against, e.g. "1.17". */
    static final String FLINK_LINE = line(EnvironmentInformation.getVersion());

    static final boolean SUPPORTS_CHECKPOINT_PROPERTIES = true;
    /** Fully finished operators and finished subtasks (FLIP-147, 1.14+). */
    static final boolean SUPPORTS_FINISHED = true;
    /** The changelog keyed handles (codes 8-10, 13, 14) in the layout 1.15+ writes. */
    static final boolean SUPPORTS_CHANGELOG = true;

    /** Metadata versions older than the default (V4) that this Flink can still write. */
    static final int[] OLDER_WRITABLE_VERSIONS = {3};

    private static final Method META_HANDLE = method(IncrementalRemoteKeyedStateHandle.class,
            "getMetaDataStateHandle", "getMetaStateHandle");
    /** 1.17+'s factories, or null on 1.16. */
    private static final Method DATA_CHANGE = factory("ofDataChange", int.class, byte[].class);
    private static final Method METADATA_CHANGE = factory("ofMetadataChange", byte[].class);

    private FlinkCompat() {}

    private static String line(String version) {
        String[] p = version.split("\\.");
        return p[0] + "." + p[1];
    }

    private static Method method(Class<?> c, String... names) {
        for (String n : names) {
            try {
                return c.getMethod(n);
            } catch (NoSuchMethodException e) {
                // the other name
            }
        }
        throw new IllegalStateException(c.getName() + " has none of " + String.join(", ", names));
    }

    private static Method factory(String name, Class<?>... parameters) {
        try {
            return StateChange.class.getMethod(name, parameters);
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

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
        try {
            return (StreamStateHandle) META_HANDLE.invoke(h);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
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
        return fullyFinished
                ? new FullyFinishedOperatorState(id, parallelism, maxParallelism)
                : new OperatorState(id, parallelism, maxParallelism);
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

    /** A data change, or with key group -1 a metadata change (1.16 keeps the int as is). */
    static StateChange newStateChange(int keyGroup, byte[] change) {
        try {
            if (DATA_CHANGE == null) {
                return StateChange.class.getConstructor(int.class, byte[].class).newInstance(keyGroup, change);
            }
            return (StateChange) (keyGroup == -1
                    ? METADATA_CHANGE.invoke(null, (Object) change)
                    : DATA_CHANGE.invoke(null, keyGroup, change));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes magic, {@code version} and body with that version's serializer. */
    static void store(CheckpointMetadata metadata, DataOutputStream out, int version)
            throws IOException {
        V4Compat.store(metadata, out, version);
    }

    /** Metadata with random (or no) CheckpointProperties for the V4 Java-serialized trailer. */
    static CheckpointMetadata newMetadata(
            long checkpointId, Collection<OperatorState> operators,
            Collection<MasterState> masters, Random random) {
        return V4Compat.newMetadata(checkpointId, operators, masters, random);
    }
}
