package io.checkpointsurgeon.testing;

import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumStateSerializer;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplitSerializer;
import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.OperatorBackendSerializationProxy;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.SnappyStreamCompressionDecorator;
import org.apache.flink.runtime.state.StreamCompressionDecorator;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;

import java.io.BufferedInputStream;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A checkpoint's KafkaSource state read with Flink's loader and the Kafka connector's own
 * serializers ({@link KafkaPartitionSplitSerializer}, {@link KafkaSourceEnumStateSerializer}):
 * the judge of what checkpoint-surgeon writes. Every split is serialized again with the
 * connector's serializer and must give the same bytes.
 */
public final class KafkaState {
    private KafkaState() {}

    public static final String READER_STATE = "SourceReaderState";

    /** {@code Checkpoints.loadCheckpointMetadata}, Flink's loader of {@code _metadata}. */
    public static CheckpointMetadata load(Path dir) throws Exception {
        try (InputStream in = new BufferedInputStream(Files.newInputStream(dir.resolve("_metadata")), 1 << 16)) {
            return Checkpoints.loadCheckpointMetadata(new DataInputStream(in), KafkaState.class.getClassLoader(),
                    dir.toString());
        }
    }

    /** Every reader's splits, by operator id and subtask index. */
    public static Map<String, Map<Integer, List<KafkaPartitionSplit>>> readerSplits(Path dir) throws Exception {
        Map<String, Map<Integer, List<KafkaPartitionSplit>>> out = new TreeMap<>();
        KafkaPartitionSplitSerializer serializer = new KafkaPartitionSplitSerializer();
        for (OperatorState op : load(dir).getOperatorStates()) {
            for (Map.Entry<Integer, OperatorSubtaskState> st : op.getSubtaskStates().entrySet()) {
                for (OperatorStateHandle h : st.getValue().getManagedOperatorState()) {
                    OperatorStateHandle.StateMetaInfo info = h.getStateNameToPartitionOffsets().get(READER_STATE);
                    if (info == null) continue;
                    List<KafkaPartitionSplit> splits = out.computeIfAbsent(op.getOperatorID().toString(), x -> new TreeMap<>())
                            .computeIfAbsent(st.getKey(), x -> new ArrayList<>());
                    try (FSDataInputStream raw = h.openInputStream()) {
                        FSDataInputStream in = readerOf(raw);
                        DataInputViewStreamWrapper view = new DataInputViewStreamWrapper(in);
                        for (long off : info.getOffsets()) {
                            in.seek(off);
                            byte[] bytes = BytePrimitiveArraySerializer.INSTANCE.deserialize(view);
                            KafkaPartitionSplit split = SimpleVersionedSerialization.readVersionAndDeSerialize(serializer, bytes);
                            byte[] again = SimpleVersionedSerialization.writeVersionAndSerialize(serializer, split);
                            if (!Arrays.equals(bytes, again)) {
                                throw new IllegalStateException("split " + split + " in " + dir + " is not what the connector writes");
                            }
                            splits.add(split);
                        }
                    }
                }
            }
        }
        return out;
    }

    /**
     * The stream's elements as Flink's restore reads them ({@code OperatorStateRestoreOperation}):
     * after the header, through the snappy decorator when the header says the data is compressed
     * ({@code isUsingStateCompression}, Flink 1.18+, package-private). It and
     * {@code CompressibleFSDataInputStream} are found by reflection: Flink 1.15 has neither.
     */
    private static FSDataInputStream readerOf(FSDataInputStream raw) throws Exception {
        OperatorBackendSerializationProxy proxy = new OperatorBackendSerializationProxy(KafkaState.class.getClassLoader());
        proxy.read(new DataInputViewStreamWrapper(raw));
        boolean compressed;
        try {
            java.lang.reflect.Method flag = OperatorBackendSerializationProxy.class.getDeclaredMethod("isUsingStateCompression");
            flag.setAccessible(true); // package-private
            compressed = (Boolean) flag.invoke(proxy);
        } catch (NoSuchMethodException beforeFlink118) {
            compressed = false;
        }
        if (!compressed) {
            return raw;
        }
        return (FSDataInputStream) Class.forName("org.apache.flink.runtime.state.CompressibleFSDataInputStream")
                .getConstructor(FSDataInputStream.class, StreamCompressionDecorator.class)
                .newInstance(raw, SnappyStreamCompressionDecorator.INSTANCE);
    }

    /** "topic-partition" to the split's starting offset, over every reader; a split held twice is an error. */
    public static Map<String, Long> startingOffsets(Path dir) throws Exception {
        Map<String, Long> offsets = new TreeMap<>();
        for (Map<Integer, List<KafkaPartitionSplit>> op : readerSplits(dir).values()) {
            for (List<KafkaPartitionSplit> splits : op.values()) {
                for (KafkaPartitionSplit split : splits) {
                    Long old = offsets.put(split.getTopic() + "-" + split.getPartition(), split.getStartingOffset());
                    if (old != null) throw new IllegalStateException("split " + split + " appears twice in " + dir);
                }
            }
        }
        return offsets;
    }

    /** An enumerator state as the connector reads it. */
    public static final class Enumerator {
        public final int coordinatorVersion;
        public final int version;
        /** "topic-partition" of every assigned partition. */
        public final Set<String> assigned;
        /** The state's length, and the length of the connector's own serialization of what it read. */
        public final int length, connectorLength;

        Enumerator(int coordinatorVersion, int version, Set<String> assigned, int length, int connectorLength) {
            this.coordinatorVersion = coordinatorVersion;
            this.version = version;
            this.assigned = assigned;
            this.length = length;
            this.connectorLength = connectorLength;
        }
    }

    /**
     * The enumerator state in the coordinator state of the operator with this id, read as
     * {@code SourceCoordinator} does (serde version, enumerator state version, length) and
     * deserialized with the connector's {@link KafkaSourceEnumStateSerializer}.
     */
    public static Enumerator enumerator(Path dir, String operatorId) throws Exception {
        for (OperatorState op : load(dir).getOperatorStates()) {
            if (!op.getOperatorID().toString().equals(operatorId)) continue;
            ByteStreamStateHandle h = op.getCoordinatorState();
            if (h == null) throw new IllegalStateException("operator " + operatorId + " has no coordinator state in " + dir);
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(h.getData()));
            int coordinatorVersion = in.readInt(), version = in.readInt();
            byte[] body = new byte[in.readInt()];
            in.readFully(body);
            if (in.available() > 0) throw new IOException("trailing bytes in the coordinator state of " + operatorId);
            KafkaSourceEnumStateSerializer serializer = new KafkaSourceEnumStateSerializer();
            Object state = serializer.deserialize(version, body);
            int connectorLength = serializer.serialize((org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumState) state).length;
            return new Enumerator(coordinatorVersion, version, assigned(state), body.length, connectorLength);
        }
        throw new IllegalStateException("no operator " + operatorId + " in " + dir);
    }

    /** The assigned partitions of a {@code KafkaSourceEnumState} of any connector version. */
    private static Set<String> assigned(Object state) throws ReflectiveOperationException {
        Set<String> out = new TreeSet<>();
        try {
            for (Object tp : (Collection<?>) state.getClass().getMethod("assignedPartitions").invoke(state)) {
                out.add(tp.toString());
            }
        } catch (NoSuchMethodException e) {
            // connector 5.x: the enumerator keeps splits
            for (Object s : (Collection<?>) state.getClass().getMethod("assignedSplits").invoke(state)) {
                KafkaPartitionSplit split = (KafkaPartitionSplit) s;
                out.add(split.getTopic() + "-" + split.getPartition());
            }
        }
        return out;
    }
}
