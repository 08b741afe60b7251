package io.checkpointsurgeon.bench;

import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.RunnableFuture;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeHint;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointProperties;
import org.apache.flink.runtime.checkpoint.CheckpointRetentionPolicy;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.DefaultOperatorStateBackend;
import org.apache.flink.runtime.state.DefaultOperatorStateBackendBuilder;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.shaded.guava31.com.google.common.hash.Hashing;

/**
 * Writes a bloated checkpoint like the one of the incident, with Flink 1.20's own classes: one
 * source operator (uid {@value #UID}) at parallelism P whose every subtask holds a stale UNION list
 * state {@value #OFFSETS_STATE} of N elements (the whole union, so the offsets arrays dominate
 * {@code _metadata}), next to the SPLIT list state {@code SourceReaderState} of the new source, a
 * keyed state handle per subtask and the coordinator state.
 *
 * <p>The operator-state stream is a real snapshot of Flink's {@link DefaultOperatorStateBackend}
 * ({@code getUnionListState}/{@code getListState} + {@code snapshot}) into Flink's
 * {@link FsCheckpointStreamFactory.FsCheckpointStateOutputStream} (file layouts) or
 * {@link MemCheckpointStreamFactory} (inline layout). It is taken once and shared by all subtasks
 * (one hard link per subtask for files) to save disk and time. The keyed handles are Flink
 * {@link KeyGroupsStateHandle}s over small files of opaque bytes: neither route reads them.
 * {@code _metadata} is written with {@link Checkpoints#storeCheckpointMetadata}.
 *
 * <pre>
 * GenerateCheckpoint --dir DIR --layout relative|absolute|inline --parallelism P --target-bytes T
 * </pre>
 * N is chosen so that {@code _metadata} comes out close to T bytes. Prints one line
 * {@code generated <path> <bytes> parallelism=P elements=N}.
 */
public final class GenerateCheckpoint {
    static final String UID = "kafka-source";
    static final String OFFSETS_STATE = "topic-partition-offset-states";
    static final String SPLIT_STATE = "SourceReaderState";
    static final long CHECKPOINT_ID = 42L;
    static final int MAX_PARALLELISM = 128;

    static final TypeInformation<Tuple2<String, Long>> OFFSET_TYPE =
            TypeInformation.of(new TypeHint<Tuple2<String, Long>>() {});

    private GenerateCheckpoint() {}

    public static void main(String[] args) throws Exception {
        Path dir = null;
        String layout = "relative";
        int parallelism = 32;
        long target = 10L << 20;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--dir" -> dir = Path.of(args[++i]);
                case "--layout" -> layout = args[++i];
                case "--parallelism" -> parallelism = Integer.parseInt(args[++i]);
                case "--target-bytes" -> target = Long.parseLong(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (dir == null || !List.of("relative", "absolute", "inline").contains(layout)) {
            throw new IllegalArgumentException(
                    "usage: --dir DIR --layout relative|absolute|inline --parallelism P --target-bytes T");
        }
        if (parallelism < 1 || parallelism > MAX_PARALLELISM) {
            throw new IllegalArgumentException("parallelism must be in 1.." + MAX_PARALLELISM);
        }
        Files.createDirectories(dir);
        if (Files.list(dir).findAny().isPresent()) {
            throw new IllegalArgumentException(dir + " is not empty");
        }
        boolean inline = layout.equals("inline");

        // Bytes per union element in _metadata: its offset (8), plus its serialized form when the
        // stream is inline. The fixed part (headers, keyed and coordinator state) is small.
        double elementBytes = averageElementBytes();
        double perElement = 8 + (inline ? elementBytes : 0);
        long fixed = 64L * 1024 + parallelism * 1024L;
        long n = Math.max(1, (long) ((target - fixed) / (parallelism * perElement)));
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("too many elements per subtask: " + n);
        }

        CheckpointStreamFactory factory = inline ? new MemCheckpointStreamFactory(Integer.MAX_VALUE)
                : fileFactory(dir, layout.equals("relative"));
        OperatorStateHandle snapshot = snapshotOperatorState(factory, (int) n, parallelism);
        OperatorStreamStateHandle shared = (OperatorStreamStateHandle) snapshot;

        OperatorID operatorId = new OperatorID(
                Hashing.murmur3_128(0).newHasher().putString(UID, StandardCharsets.UTF_8).hash().asBytes());
        OperatorState op = new OperatorState(operatorId, parallelism, MAX_PARALLELISM);
        for (int i = 0; i < parallelism; i++) {
            StreamStateHandle delegate = perSubtaskCopy(shared.getDelegateStateHandle(), dir, layout, i);
            OperatorStreamStateHandle opHandle =
                    new OperatorStreamStateHandle(shared.getStateNameToPartitionOffsets(), delegate);
            OperatorSubtaskState st = OperatorSubtaskState.builder()
                    .setManagedOperatorState(opHandle)
                    .setManagedKeyedState(keyedHandle(factory, parallelism, i))
                    .build();
            op.putState(i, st);
        }
        if (!inline) {
            // The snapshot's own file: every subtask has its hard link now.
            Files.delete(localPath(shared.getDelegateStateHandle()));
        }
        byte[] coordinator = new byte[4096];
        for (int i = 0; i < coordinator.length; i++) {
            coordinator[i] = (byte) (i * 31 + 7);
        }
        op.setCoordinatorState(new ByteStreamStateHandle("coordinator-" + operatorId, coordinator));

        CheckpointMetadata md = new CheckpointMetadata(CHECKPOINT_ID, List.of(op), Collections.emptyList(),
                CheckpointProperties.forCheckpoint(CheckpointRetentionPolicy.RETAIN_ON_CANCELLATION));
        Path metadata = dir.resolve("_metadata");
        try (FileOutputStream fos = new FileOutputStream(metadata.toFile());
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(fos, 1 << 20))) {
            Checkpoints.storeCheckpointMetadata(md, out);
            out.flush();
            fos.getFD().sync();
        }
        System.out.println("generated " + metadata + " " + Files.size(metadata) + " parallelism=" + parallelism
                + " elements=" + n + " layout=" + layout);
    }

    /** The serialized size of the union elements, on average. */
    static double averageElementBytes() throws IOException {
        TypeSerializer<Tuple2<String, Long>> s = OFFSET_TYPE.createSerializer(new ExecutionConfig());
        DataOutputSerializer out = new DataOutputSerializer(1 << 16);
        int k = 4096;
        for (int i = 0; i < k; i++) {
            s.serialize(element(i), out);
        }
        return out.length() / (double) k;
    }

    /** One (topic-partition, offset) pair of the legacy Kafka consumer's union state. */
    static Tuple2<String, Long> element(int i) {
        return Tuple2.of(TOPICS[i % TOPICS.length], 1_000_000_000L + i * 17L);
    }

    private static final String[] TOPICS = new String[1024];

    static {
        for (int i = 0; i < TOPICS.length; i++) {
            TOPICS[i] = "clickstream.events.v3-" + i;
        }
    }

    /** A real snapshot of Flink's operator state backend: the stale union, and the new source's split state. */
    static OperatorStateHandle snapshotOperatorState(CheckpointStreamFactory factory, int n, int parallelism)
            throws Exception {
        ExecutionConfig config = new ExecutionConfig();
        DefaultOperatorStateBackend backend = new DefaultOperatorStateBackendBuilder(
                GenerateCheckpoint.class.getClassLoader(), config, false, Collections.emptyList(),
                new CloseableRegistry()).build();
        try {
            ListState<Tuple2<String, Long>> union =
                    backend.getUnionListState(new ListStateDescriptor<>(OFFSETS_STATE, OFFSET_TYPE));
            List<Tuple2<String, Long>> elements = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                elements.add(element(i));
            }
            union.update(elements);
            elements = null;
            ListState<byte[]> splits = backend.getListState(
                    new ListStateDescriptor<>(SPLIT_STATE, BytePrimitiveArraySerializer.INSTANCE));
            for (int p = 0; p < 2; p++) {
                // A KafkaPartitionSplit as the new source would serialize it (opaque bytes here).
                byte[] split = ("clickstream.events.v3-" + p + "|offset=" + (1_000_000 + p)).getBytes(StandardCharsets.UTF_8);
                splits.add(split);
            }
            RunnableFuture<SnapshotResult<OperatorStateHandle>> f = backend.snapshot(CHECKPOINT_ID,
                    System.currentTimeMillis(), factory, CheckpointOptions.forCheckpointWithDefaultLocation());
            if (!f.isDone()) {
                f.run();
            }
            return f.get().getJobManagerOwnedSnapshot();
        } finally {
            backend.dispose();
        }
    }

    /** Flink's file stream, with relative (exclusive scope) or absolute handles. */
    static CheckpointStreamFactory fileFactory(Path dir, boolean relative) {
        org.apache.flink.core.fs.Path base = new org.apache.flink.core.fs.Path(dir.toAbsolutePath().toUri());
        return new CheckpointStreamFactory() {
            @Override
            public CheckpointStateOutputStream createCheckpointStateOutputStream(CheckpointedStateScope scope)
                    throws IOException {
                return new FsCheckpointStreamFactory.FsCheckpointStateOutputStream(
                        base, FileSystem.getLocalFileSystem(), 1 << 20, 0, relative);
            }

            @Override
            public boolean canFastDuplicate(StreamStateHandle h, CheckpointedStateScope scope) {
                return false;
            }

            @Override
            public List<StreamStateHandle> duplicate(List<StreamStateHandle> handles, CheckpointedStateScope scope) {
                throw new UnsupportedOperationException();
            }
        };
    }

    /** Subtask i's copy of the shared stream: a hard link with a fresh name, or the same bytes inline. */
    static StreamStateHandle perSubtaskCopy(StreamStateHandle h, Path dir, String layout, int i) throws IOException {
        if (h instanceof ByteStreamStateHandle b) {
            return new ByteStreamStateHandle(UUID.randomUUID().toString(), b.getData());
        }
        String name = UUID.randomUUID().toString();
        Path link = dir.resolve(name);
        Files.createLink(link, localPath(h));
        long size = h.getStateSize();
        org.apache.flink.core.fs.Path p = new org.apache.flink.core.fs.Path(link.toAbsolutePath().toUri());
        return layout.equals("relative") ? new RelativeFileStateHandle(p, name, size) : new FileStateHandle(p, size);
    }

    static Path localPath(StreamStateHandle h) {
        return Path.of(((FileStateHandle) h).getFilePath().toUri());
    }

    /** A keyed handle over the subtask's key groups: small, opaque, passed through by every route. */
    static KeyGroupsStateHandle keyedHandle(CheckpointStreamFactory factory, int parallelism, int subtask)
            throws IOException {
        KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                MAX_PARALLELISM, parallelism, subtask);
        long[] offsets = new long[range.getNumberOfKeyGroups()];
        try (CheckpointStateOutputStream out = factory.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE)) {
            DataOutputStream data = new DataOutputStream(out);
            data.writeUTF("keyed state of subtask " + subtask);
            for (int k = 0; k < offsets.length; k++) {
                data.flush();
                offsets[k] = out.getPos();
                for (int j = 0; j < 16; j++) {
                    data.writeLong((long) (range.getStartKeyGroup() + k) * 1_000_003L + j);
                }
            }
            data.flush();
            return new KeyGroupsStateHandle(new KeyGroupRangeOffsets(range, offsets), out.closeAndGetHandle());
        }
    }
}
