package io.checkpointsurgeon.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.CheckpointRetentionPolicy;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.FinishedOperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.MasterState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.checkpoint.metadata.MetadataSerializers;
import org.apache.flink.runtime.state.IncrementalKeyedStateHandle.HandleAndLocalPath;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
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
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;

/**
 * The {@link FlinkCompat} members that are the same from Flink 1.16 (metadata V4) to 2.x:
 * incremental handles with lists of {@link HandleAndLocalPath}, changelog handles with checkpoint id
 * and storage identifier, metadata written in a chosen version and the CheckpointProperties trailer.
 * tests/java/v116 (1.16 to 1.19) links this file.
 */
final class V4Compat {
    private V4Compat() {}

    static List<Map.Entry<String, StreamStateHandle>> entries(List<HandleAndLocalPath> list) {
        List<Map.Entry<String, StreamStateHandle>> out = new ArrayList<>(list.size());
        for (HandleAndLocalPath e : list) {
            out.add(new AbstractMap.SimpleImmutableEntry<>(e.getLocalPath(), e.getHandle()));
        }
        return out;
    }

    static IncrementalRemoteKeyedStateHandle newIncrementalHandle(
            UUID backendId, KeyGroupRange range, long checkpointId,
            List<Map.Entry<String, StreamStateHandle>> shared,
            List<Map.Entry<String, StreamStateHandle>> privateState,
            StreamStateHandle meta, long checkpointedSize, StateHandleID id) {
        return IncrementalRemoteKeyedStateHandle.restore(
                backendId, range, checkpointId, handleList(shared), handleList(privateState), meta,
                checkpointedSize, id);
    }

    private static List<HandleAndLocalPath> handleList(
            List<Map.Entry<String, StreamStateHandle>> entries) {
        List<HandleAndLocalPath> out = new ArrayList<>(entries.size());
        for (Map.Entry<String, StreamStateHandle> e : entries) {
            out.add(HandleAndLocalPath.of(e.getValue(), e.getKey()));
        }
        return out;
    }

    static OperatorSubtaskState finishedSubtask() {
        return FinishedOperatorSubtaskState.INSTANCE;
    }

    @SuppressWarnings("unchecked") // nonMaterialized holds the ChangelogStateHandles made here
    static KeyedStateHandle newChangelogBackendHandle(
            List<KeyedStateHandle> materialized, List<KeyedStateHandle> nonMaterialized,
            KeyGroupRange range, long checkpointId, long materializationId,
            long checkpointedSize, StateHandleID id) {
        return ChangelogStateBackendHandleImpl.restore(
                materialized, (List<ChangelogStateHandle>) (List<?>) nonMaterialized, range, checkpointId,
                materializationId, checkpointedSize, id);
    }

    static KeyedStateHandle newInMemoryChangelogHandle(
            List<StateChange> changes, long from, long to, KeyGroupRange range, StateHandleID id) {
        return InMemoryChangelogStateHandle.restore(
                changes, SequenceNumber.of(from), SequenceNumber.of(to), range, id);
    }

    static ChangelogStateHandle newChangelogFileHandle(
            List<Tuple2<StreamStateHandle, Long>> handlesAndOffsets, KeyGroupRange range,
            long size, long checkpointedSize, String storageIdentifier, StateHandleID id) {
        return ChangelogStateHandleStreamImpl.restore(
                handlesAndOffsets, range, size, checkpointedSize, storageIdentifier, id);
    }

    /** Writes magic, {@code version} and body with that version's serializer. */
    static void store(CheckpointMetadata metadata, DataOutputStream out, int version)
            throws IOException {
        Checkpoints.storeCheckpointMetadata(
                metadata, out, MetadataSerializers.getSerializer(version));
    }

    /** Metadata with random (or no) CheckpointProperties for the V4+ Java-serialized trailer. */
    static CheckpointMetadata newMetadata(
            long checkpointId, Collection<OperatorState> operators,
            Collection<MasterState> masters, Random random) {
        CheckpointProperties properties;
        switch (random.nextInt(4)) {
            case 0:
                properties = null;
                break;
            case 1:
                properties = CheckpointProperties.forCheckpoint(
                        CheckpointRetentionPolicy.values()[
                                random.nextInt(CheckpointRetentionPolicy.values().length)]);
                break;
            case 2:
                properties = CheckpointProperties.forSavepoint(
                        random.nextBoolean(),
                        SavepointFormatType.values()[
                                random.nextInt(SavepointFormatType.values().length)]);
                break;
            default:
                properties = CheckpointProperties.forUnclaimedSnapshot();
        }
        return new CheckpointMetadata(checkpointId, operators, masters, properties);
    }
}
