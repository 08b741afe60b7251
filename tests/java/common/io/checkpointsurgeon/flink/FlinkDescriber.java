package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.checkpoint.MasterState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.ResultSubpartitionStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * The Flink side of the canonical description (tests/describe-format.md): prints the {@link
 * CheckpointMetadata} that Flink's own {@code Checkpoints.loadCheckpointMetadata} built, so the
 * differential tests can hold the Rust codec's {@code describe} against Flink's reading of the
 * same bytes. Handle classes are tested most specific first, in the order Flink's
 * MetadataV2V3SerializerBase writes them. Kinds that exist only in some Flink versions are
 * described by {@link FlinkCompat}.
 */
public final class FlinkDescriber {

    /**
     * The order of every sorted string list (state names, incremental keys): Java's {@link
     * String#compareTo}, i.e. UTF-16 code units (the Rust side sorts by {@code encode_utf16}). It
     * differs from code point / UTF-8 byte order for characters above U+FFFF against
     * U+E000..U+FFFF; the generator draws names from both ranges so a disagreement shows.
     */
    static final Comparator<String> CANONICAL_ORDER = Comparator.naturalOrder();

    private FlinkDescriber() {}

    /** The canonical text of {@code metadata}. */
    public static String describe(CheckpointMetadata metadata) {
        StringBuilder out = new StringBuilder();
        out.append("checkpoint id=").append(metadata.getCheckpointId()).append('\n');
        for (MasterState master : metadata.getMasterStates()) {
            out.append("master name=").append(master.name())
                    .append(" version=").append(master.version())
                    .append(" bytes=").append(master.bytes().length).append('\n');
        }
        List<OperatorState> operators = new ArrayList<>(metadata.getOperatorStates());
        // Stable sort: operators with equal ids keep their file order.
        operators.sort(Comparator.comparing(op -> op.getOperatorID().toHexString()));
        for (OperatorState operator : operators) {
            describeOperator(operator, out);
        }
        return out.toString();
    }

    private static void describeOperator(OperatorState operator, StringBuilder out) {
        out.append("operator id=").append(operator.getOperatorID().toHexString())
                .append(" name=").append(orDash(FlinkCompat.operatorName(operator)))
                .append(" uid=").append(orDash(FlinkCompat.operatorUid(operator)))
                .append(" parallelism=").append(operator.getParallelism())
                .append(" maxParallelism=").append(operator.getMaxParallelism())
                .append(" coordinator=").append(streamHandle(operator.getCoordinatorState()))
                .append('\n');
        if (FlinkCompat.isFullyFinished(operator)) {
            out.append("  fully-finished\n");
            return;
        }
        List<Map.Entry<Integer, OperatorSubtaskState>> subtasks =
                new ArrayList<>(operator.getSubtaskStates().entrySet());
        subtasks.sort(Map.Entry.comparingByKey());
        for (Map.Entry<Integer, OperatorSubtaskState> entry : subtasks) {
            OperatorSubtaskState subtask = entry.getValue();
            if (FlinkCompat.isFinished(subtask)) {
                out.append("  subtask ").append(entry.getKey()).append(" finished\n");
                continue;
            }
            out.append("  subtask ").append(entry.getKey()).append('\n');
            for (OperatorStateHandle h : subtask.getManagedOperatorState()) {
                out.append("    managedOperator ").append(operatorHandle(h)).append('\n');
            }
            for (OperatorStateHandle h : subtask.getRawOperatorState()) {
                out.append("    rawOperator ").append(operatorHandle(h)).append('\n');
            }
            for (KeyedStateHandle h : subtask.getManagedKeyedState()) {
                out.append("    managedKeyed ").append(keyedHandle(h)).append('\n');
            }
            for (KeyedStateHandle h : subtask.getRawKeyedState()) {
                out.append("    rawKeyed ").append(keyedHandle(h)).append('\n');
            }
            for (Object h : subtask.getInputChannelState()) {
                out.append("    inputChannel ").append(channelHandle(h)).append('\n');
            }
            for (Object h : subtask.getResultSubpartitionState()) {
                out.append("    outputChannel ").append(channelHandle(h)).append('\n');
            }
        }
    }

    // ------------------------------------------------------------------------
    //  SH: stream handles
    // ------------------------------------------------------------------------

    static String streamHandle(StreamStateHandle h) {
        if (h == null) {
            return "null";
        }
        if (h instanceof RelativeFileStateHandle) {
            RelativeFileStateHandle r = (RelativeFileStateHandle) h;
            return "RelativeFile(path=" + r.getRelativePath() + ",size=" + r.getStateSize() + ")";
        }
        String versionSpecific = FlinkCompat.describeVersionSpecificStreamHandle(h);
        if (versionSpecific != null) {
            return versionSpecific;
        }
        if (h instanceof FileStateHandle) {
            FileStateHandle f = (FileStateHandle) h;
            return "File(path=" + f.getFilePath() + ",size=" + f.getStateSize() + ")";
        }
        if (h instanceof ByteStreamStateHandle) {
            ByteStreamStateHandle b = (ByteStreamStateHandle) h;
            return "ByteStream(name=" + b.getHandleName() + ",size=" + b.getData().length + ")";
        }
        if (h instanceof KeyGroupsStateHandle) {
            // Code 3 used as a stream handle (savepoint subclass included): Flink writes no
            // state-handle id here and invents a random one on read.
            return keyGroups("KeyGroups", (KeyGroupsStateHandle) h, "-");
        }
        throw new IllegalArgumentException("Unknown StreamStateHandle class " + h.getClass());
    }

    // ------------------------------------------------------------------------
    //  OPH: operator state handles
    // ------------------------------------------------------------------------

    static String operatorHandle(OperatorStateHandle h) {
        String versionSpecific = FlinkCompat.describeVersionSpecificOperatorHandle(h);
        if (versionSpecific != null) {
            return versionSpecific;
        }
        if (h instanceof OperatorStreamStateHandle) {
            return "OperatorStream(states=" + operatorStates(h)
                    + ",delegate=" + streamHandle(h.getDelegateStateHandle()) + ")";
        }
        throw new IllegalArgumentException("Unknown OperatorStateHandle class " + h.getClass());
    }

    /** {@code [name:MODE:o1,o2;...]}, sorted by state name. */
    static String operatorStates(OperatorStateHandle h) {
        List<Map.Entry<String, OperatorStateHandle.StateMetaInfo>> states =
                new ArrayList<>(h.getStateNameToPartitionOffsets().entrySet());
        states.sort(Map.Entry.comparingByKey(CANONICAL_ORDER));
        StringJoiner list = new StringJoiner(";", "[", "]");
        for (Map.Entry<String, OperatorStateHandle.StateMetaInfo> state : states) {
            StringJoiner offsets = new StringJoiner(",");
            for (long offset : state.getValue().getOffsets()) {
                offsets.add(Long.toString(offset));
            }
            list.add(state.getKey() + ":" + state.getValue().getDistributionMode().name() + ":"
                    + offsets);
        }
        return list.toString();
    }

    // ------------------------------------------------------------------------
    //  KH: keyed state handles
    // ------------------------------------------------------------------------

    static String keyedHandle(KeyedStateHandle h) {
        if (h == null) {
            return "null";
        }
        if (h instanceof KeyGroupsSavepointStateHandle) {
            KeyGroupsStateHandle k = (KeyGroupsStateHandle) h;
            return "SavepointKeyGroups(range=" + range(k) + ",offsets=" + keyGroupOffsets(k)
                    + ",delegate=" + streamHandle(k.getDelegateStateHandle()) + ")";
        }
        if (h instanceof KeyGroupsStateHandle) {
            return keyGroups("KeyGroups", (KeyGroupsStateHandle) h,
                    FlinkCompat.keyGroupsHandleId((KeyGroupsStateHandle) h));
        }
        if (h instanceof IncrementalRemoteKeyedStateHandle) {
            IncrementalRemoteKeyedStateHandle i = (IncrementalRemoteKeyedStateHandle) h;
            return "Incremental(checkpointId=" + i.getCheckpointId()
                    + ",backendId=" + i.getBackendIdentifier()
                    + ",range=" + range(i)
                    + ",meta=" + streamHandle(FlinkCompat.incrementalMetaHandle(i))
                    + ",shared=" + namedHandles(FlinkCompat.incrementalSharedState(i))
                    + ",private=" + namedHandles(FlinkCompat.incrementalPrivateState(i)) + ")";
        }
        String versionSpecific = FlinkCompat.describeVersionSpecificKeyedHandle(h);
        if (versionSpecific != null) {
            return versionSpecific;
        }
        throw new IllegalArgumentException("Unknown KeyedStateHandle class " + h.getClass());
    }

    private static String keyGroups(String kind, KeyGroupsStateHandle k, String id) {
        return kind + "(range=" + range(k) + ",offsets=" + keyGroupOffsets(k) + ",id=" + id
                + ",delegate=" + streamHandle(k.getDelegateStateHandle()) + ")";
    }

    static String range(KeyedStateHandle h) {
        return h.getKeyGroupRange().getStartKeyGroup() + "+"
                + h.getKeyGroupRange().getNumberOfKeyGroups();
    }

    private static String keyGroupOffsets(KeyGroupsStateHandle k) {
        StringJoiner offsets = new StringJoiner(";", "[", "]");
        for (int keyGroup : k.getKeyGroupRange()) {
            offsets.add(Long.toString(k.getOffsetForKeyGroup(keyGroup)));
        }
        return offsets.toString();
    }

    /** {@code [key=SH;...]}, sorted by key (stable: equal keys keep Flink's order). */
    private static String namedHandles(List<Map.Entry<String, StreamStateHandle>> entries) {
        List<Map.Entry<String, StreamStateHandle>> sorted = new ArrayList<>(entries);
        sorted.sort(Map.Entry.comparingByKey(CANONICAL_ORDER));
        StringJoiner list = new StringJoiner(";", "[", "]");
        for (Map.Entry<String, StreamStateHandle> e : sorted) {
            list.add(e.getKey() + "=" + streamHandle(e.getValue()));
        }
        return list.toString();
    }

    // ------------------------------------------------------------------------
    //  CH: channel state handles
    // ------------------------------------------------------------------------

    static String channelHandle(Object h) {
        if (h instanceof InputChannelStateHandle) {
            InputChannelStateHandle c = (InputChannelStateHandle) h;
            return "InputChannel(subtask=" + c.getSubtaskIndex()
                    + ",gate=" + c.getInfo().getGateIdx()
                    + ",channel=" + c.getInfo().getInputChannelIdx()
                    + ",offsets=" + longList(c.getOffsets())
                    + ",size=" + c.getStateSize()
                    + ",delegate=" + streamHandle(c.getDelegate()) + ")";
        }
        if (h instanceof ResultSubpartitionStateHandle) {
            ResultSubpartitionStateHandle c = (ResultSubpartitionStateHandle) h;
            return "ResultSubpartition(subtask=" + c.getSubtaskIndex()
                    + ",partition=" + c.getInfo().getPartitionIdx()
                    + ",subpartition=" + c.getInfo().getSubPartitionIdx()
                    + ",offsets=" + longList(c.getOffsets())
                    + ",size=" + c.getStateSize()
                    + ",delegate=" + streamHandle(c.getDelegate()) + ")";
        }
        String versionSpecific = FlinkCompat.describeVersionSpecificChannelHandle(h);
        if (versionSpecific != null) {
            return versionSpecific;
        }
        throw new IllegalArgumentException(
                "Unknown channel state handle class " + (h == null ? "null" : h.getClass()));
    }

    private static String longList(List<Long> values) {
        StringJoiner list = new StringJoiner(";", "[", "]");
        for (Long v : values) {
            list.add(Long.toString(v));
        }
        return list.toString();
    }

    // ------------------------------------------------------------------------
    //  utilities
    // ------------------------------------------------------------------------

    private static String orDash(String s) {
        return s == null || s.isEmpty() ? "-" : s;
    }

    /**
     * Loads {@code bytes} with Flink's own loader. {@code externalPointer} is the checkpoint
     * directory (or its {@code _metadata} file) that relative file handles resolve against; it must
     * exist and contain a {@code _metadata} file.
     */
    public static CheckpointMetadata load(byte[] bytes, String externalPointer) throws IOException {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            return org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
                    in, FlinkDescriber.class.getClassLoader(), externalPointer);
        }
    }

    /** Prints Flink's description of a {@code _metadata} file (debugging aid). */
    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: FlinkDescriber <checkpoint dir or _metadata file>");
            System.exit(2);
        }
        File f = new File(args[0]);
        File metadata = f.isDirectory() ? new File(f, "_metadata") : f;
        byte[] bytes = Files.readAllBytes(metadata.toPath());
        System.out.print(describe(load(bytes, metadata.getParentFile().getAbsolutePath())));
    }
}
