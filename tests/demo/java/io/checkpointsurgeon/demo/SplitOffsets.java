package io.checkpointsurgeon.demo;

import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplitSerializer;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.OperatorStateHandle;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/** Reads a checkpoint with Flink's own classes and decodes the KafkaSource split offsets. */
final class SplitOffsets {
    private SplitOffsets() {}

    /** {@code Checkpoints.loadCheckpointMetadata}, Flink's loader of {@code _metadata}. */
    static CheckpointMetadata load(Path dir) throws Exception {
        try (InputStream in = new BufferedInputStream(Files.newInputStream(dir.resolve("_metadata")), 1 << 16)) {
            return Checkpoints.loadCheckpointMetadata(new DataInputStream(in), SplitOffsets.class.getClassLoader(),
                    dir.toString());
        }
    }

    /**
     * The elements of {@code SourceReaderState} of every subtask, decoded with the connector's
     * {@link KafkaPartitionSplitSerializer}: "topic-partition" to the split's starting offset.
     */
    static Map<String, Long> read(Path dir) throws Exception {
        Map<String, Long> offsets = new TreeMap<>();
        KafkaPartitionSplitSerializer serializer = new KafkaPartitionSplitSerializer();
        for (OperatorState op : load(dir).getOperatorStates()) {
            for (OperatorSubtaskState st : op.getStates()) {
                for (OperatorStateHandle h : st.getManagedOperatorState()) {
                    OperatorStateHandle.StateMetaInfo info = h.getStateNameToPartitionOffsets().get(Jobs.READER_STATE);
                    if (info == null) continue;
                    try (FSDataInputStream in = h.openInputStream()) {
                        DataInputViewStreamWrapper view = new DataInputViewStreamWrapper(in);
                        for (long off : info.getOffsets()) {
                            in.seek(off);
                            byte[] bytes = BytePrimitiveArraySerializer.INSTANCE.deserialize(view);
                            KafkaPartitionSplit split = SimpleVersionedSerialization.readVersionAndDeSerialize(serializer, bytes);
                            Long old = offsets.put(split.getTopic() + "-" + split.getPartition(), split.getStartingOffset());
                            if (old != null) {
                                throw new IllegalStateException("split " + split + " appears twice in " + dir);
                            }
                        }
                    }
                }
            }
        }
        return offsets;
    }
}
