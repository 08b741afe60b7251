package io.checkpointsurgeon.flink;

import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.core.fs.Path;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.MasterState;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.StateObjectCollection;
import org.apache.flink.runtime.checkpoint.channel.InputChannelInfo;
import org.apache.flink.runtime.checkpoint.channel.ResultSubpartitionInfo;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.state.InputChannelStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeOffsets;
import org.apache.flink.runtime.state.KeyGroupsSavepointStateHandle;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.ResultSubpartitionStateHandle;
import org.apache.flink.runtime.state.StateHandleID;
import org.apache.flink.runtime.state.StateObject;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.changelog.StateChange;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;

/**
 * Seeded generator of random {@link CheckpointMetadata} built from Flink's own classes, for the
 * differential tests. It covers every handle kind the Flink version on the class path can write
 * (version-specific kinds come from {@link FlinkCompat}); {@link #store} serializes with Flink's
 * own {@code Checkpoints.storeCheckpointMetadata} at that version's default metadata version.
 *
 * <p>Flink's reader has to accept everything generated here: non-null delegates, non-empty
 * changelog key-group ranges, non-negative checkpoint and sequence numbers, unique map keys,
 * relative paths that {@code new Path(dir, relativePath)} accepts.
 */
public final class RandomMetadata {

    /** The pieces names are drawn from: ASCII, separators the text format uses, BMP non-ASCII,
     * private-use/BMP-high characters, characters outside the BMP, and NUL (C0 80 in modified UTF-8). */
    private static final String[] NAME_PIECES = {
        "a", "b", "z", "Q", "0", "7", "_", "-", ".", " ", ";", ",", "=", ":", "/", "[", "]",
        "ä", "ß", "é", "Ω", "ж", "状", "态", "检查点", "\uE000", "\uFB01", "\uFF21", "\uFFFD",
        "\uD83D\uDE00", "\uD834\uDD1E", "\uD83C\uDF0D", "\u0000", "\u007F", "\u0080", "\u07FF", "\u0800"
    };

    /** Pieces for path segments: no ':' '/' '\\', so Flink's Path parses them as plain names. */
    private static final String[] PATH_PIECES = {
        "a", "b", "x", "7", "0", "_", "-", ".", "chk", "shared", "taskowned", "ä", "状态", "é",
        "\uD83D\uDE00"
    };

    private static final String[] SCHEMES = {
        "s3://bucket", "hdfs://namenode:8020", "file:", "", "oss://b-1", "gs://g"
    };

    /** StateChange.META_KEY_GROUP (1.20+); 1.15 has no constant but stores the int as is. */
    private static final int META_KEY_GROUP = -1;

    private final Random random;

    private RandomMetadata(long seed) {
        this.random = new Random(seed);
    }

    /** The random metadata for {@code seed}; equal seeds give equal metadata. */
    public static CheckpointMetadata generate(long seed) {
        return new RandomMetadata(seed).metadata();
    }

    /** Serializes with Flink's own writer at the default metadata version. */
    public static byte[] store(CheckpointMetadata metadata) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            Checkpoints.storeCheckpointMetadata(metadata, out);
        }
        return bytes.toByteArray();
    }

    /**
     * Serializes with the serializer of an older metadata version this Flink can still write (see
     * {@code FlinkCompat.OLDER_WRITABLE_VERSIONS}). Older versions drop what they cannot express
     * (name/uid before V5, properties before V4) and throw for merged channel handles before V6.
     */
    public static byte[] store(CheckpointMetadata metadata, int version) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            FlinkCompat.store(metadata, out, version);
        }
        return bytes.toByteArray();
    }

    // ------------------------------------------------------------------------
    //  metadata, masters, operators
    // ------------------------------------------------------------------------

    private CheckpointMetadata metadata() {
        long checkpointId = random.nextInt(4) == 0 ? nonNegativeLong() : random.nextInt(1000);
        List<MasterState> masters = new ArrayList<>();
        int numMasters = random.nextInt(3) == 0 ? random.nextInt(4) : 0;
        for (int i = 0; i < numMasters; i++) {
            masters.add(new MasterState(name(), bytes(random.nextInt(64)), random.nextInt()));
        }
        int numOperators = random.nextInt(10) == 0 ? random.nextInt(20) : random.nextInt(6);
        List<OperatorState> operators = new ArrayList<>();
        Set<OperatorID> ids = new HashSet<>();
        for (int i = 0; i < numOperators; i++) {
            OperatorID id = new OperatorID(random.nextLong(), random.nextLong());
            if (ids.add(id)) {
                operators.add(operator(id));
            }
        }
        return FlinkCompat.newMetadata(checkpointId, operators, masters, random);
    }

    private OperatorState operator(OperatorID id) {
        int parallelism = 1 + random.nextInt(random.nextBoolean() ? 4 : 200);
        int maxParallelism;
        switch (random.nextInt(4)) {
            case 0:
                maxParallelism = parallelism;
                break;
            case 1:
                maxParallelism = parallelism + random.nextInt(Integer.MAX_VALUE - parallelism);
                break;
            default:
                maxParallelism = Math.max(parallelism, 128 << random.nextInt(9));
        }
        String name = null;
        String uid = null;
        if (FlinkCompat.SUPPORTS_NAME_AND_UID) {
            // The V5+ writer rejects empty strings; null is written as "".
            name = random.nextBoolean() ? nonEmptyName() : null;
            uid = random.nextBoolean() ? nonEmptyName() : null;
        }
        boolean fullyFinished = random.nextInt(10) == 0 && FlinkCompat.SUPPORTS_FINISHED;
        OperatorState operator =
                FlinkCompat.newOperatorState(name, uid, id, parallelism, maxParallelism, fullyFinished);
        if (fullyFinished) {
            return operator; // no coordinator state, no subtasks
        }
        if (random.nextInt(3) == 0) {
            String coordinatorName = random.nextBoolean() ? id.toHexString() : name();
            operator.setCoordinatorState(
                    new ByteStreamStateHandle(coordinatorName, bytes(random.nextInt(100))));
        }
        int numSubtasks = Math.min(parallelism, random.nextInt(6));
        for (int i = 0; i < numSubtasks; i++) {
            operator.putState(random.nextInt(parallelism), subtask(parallelism));
        }
        return operator;
    }

    private OperatorSubtaskState subtask(int parallelism) {
        int kind = random.nextInt(20);
        if (kind < 3 && FlinkCompat.SUPPORTS_FINISHED) {
            return FlinkCompat.finishedSubtask();
        }
        OperatorSubtaskState.Builder builder = OperatorSubtaskState.builder();
        if (kind < 5) {
            return builder.build(); // a subtask with no state at all
        }
        if (random.nextInt(2) == 0) {
            builder.setManagedOperatorState(operatorHandle());
        }
        if (random.nextInt(5) == 0) {
            builder.setRawOperatorState(operatorHandle());
        }
        if (random.nextInt(5) < 2) {
            builder.setManagedKeyedState(keyedHandle(0));
        }
        if (random.nextInt(6) == 0) {
            builder.setRawKeyedState(keyedHandle(0));
        }
        if (random.nextInt(4) == 0) {
            List<Object> inputs = new ArrayList<>();
            List<Object> outputs = new ArrayList<>();
            int n = random.nextInt(4);
            for (int i = 0; i < n; i++) {
                inputs.add(inputChannel(parallelism));
            }
            n = random.nextInt(4);
            for (int i = 0; i < n; i++) {
                outputs.add(outputChannel(parallelism));
            }
            builder.setInputChannelState(stateCollection(inputs));
            builder.setResultSubpartitionState(stateCollection(outputs));
        }
        return builder.build();
    }

    /**
     * The channel handles as the collection type the builder's setter takes: its element type differs
     * by Flink line (1.x: the InputChannel/ResultSubpartition handles, 2.x: their supertypes, which
     * the V6 merged handles share), and the setter's parameter type picks it.
     */
    @SuppressWarnings("unchecked")
    private static <T extends StateObject> StateObjectCollection<T> stateCollection(List<Object> handles) {
        List<T> typed = new ArrayList<>(handles.size());
        for (Object h : handles) {
            typed.add((T) h);
        }
        return new StateObjectCollection<>(typed);
    }

    // ------------------------------------------------------------------------
    //  operator state handles
    // ------------------------------------------------------------------------

    private OperatorStateHandle operatorHandle() {
        Map<String, OperatorStateHandle.StateMetaInfo> states = new HashMap<>();
        int n = random.nextInt(5);
        for (int i = 0; i < n; i++) {
            OperatorStateHandle.Mode mode =
                    OperatorStateHandle.Mode.values()[random.nextInt(OperatorStateHandle.Mode.values().length)];
            int numOffsets = mode == OperatorStateHandle.Mode.BROADCAST ? 1 : random.nextInt(5);
            long[] offsets = new long[numOffsets];
            long pos = random.nextInt(200);
            for (int j = 0; j < numOffsets; j++) {
                offsets[j] = random.nextInt(8) == 0 ? random.nextLong() : pos;
                pos += random.nextInt(100);
            }
            states.put(name(), new OperatorStateHandle.StateMetaInfo(offsets, mode));
        }
        if (FlinkCompat.SUPPORTS_FILE_MERGING && random.nextInt(4) == 0) {
            boolean empty = random.nextInt(3) == 0;
            StreamStateHandle delegate = empty || random.nextInt(4) == 0
                    ? FlinkCompat.emptySegmentHandle()
                    : segmentHandle();
            Map<String, OperatorStateHandle.StateMetaInfo> fmStates =
                    empty && random.nextBoolean() ? Collections.emptyMap() : states;
            return FlinkCompat.newFileMergingOperatorHandle(
                    new Path(absolutePath()), new Path(absolutePath()), fmStates, delegate, empty);
        }
        return new OperatorStreamStateHandle(states, streamHandle(0));
    }

    // ------------------------------------------------------------------------
    //  keyed state handles
    // ------------------------------------------------------------------------

    private KeyedStateHandle keyedHandle(int depth) {
        int kind = random.nextInt(depth == 0 && FlinkCompat.SUPPORTS_CHANGELOG ? 100 : 65);
        if (kind < 25) {
            return keyGroupsHandle(false, keyGroupRange(true), depth);
        } else if (kind < 40) {
            return keyGroupsHandle(true, keyGroupRange(true), depth);
        } else if (kind < 65) {
            return incrementalHandle(depth);
        } else if (kind < 80) {
            return changelogBackendHandle();
        } else if (kind < 90) {
            return inMemoryChangelogHandle();
        } else {
            return changelogFileHandle();
        }
    }

    private KeyGroupsStateHandle keyGroupsHandle(boolean savepoint, KeyGroupRange range, int depth) {
        long[] offsets = new long[range.getNumberOfKeyGroups()];
        long pos = random.nextInt(50);
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = random.nextInt(10) == 0 ? random.nextLong() : pos;
            pos += random.nextInt(1000);
        }
        KeyGroupRangeOffsets rangeOffsets = new KeyGroupRangeOffsets(range, offsets);
        StreamStateHandle delegate = streamHandle(depth + 1);
        return savepoint
                ? new KeyGroupsSavepointStateHandle(rangeOffsets, delegate)
                : FlinkCompat.newKeyGroupsHandle(rangeOffsets, delegate, stateHandleId());
    }

    private KeyedStateHandle incrementalHandle(int depth) {
        return FlinkCompat.newIncrementalHandle(
                uuid(),
                keyGroupRange(true),
                random.nextInt(3) == 0 ? nonNegativeLong() : random.nextInt(100),
                namedHandles(depth),
                namedHandles(depth),
                streamHandle(depth + 1),
                random.nextInt(4) == 0 ? -1 : random.nextInt(1 << 20),
                stateHandleId());
    }

    /** 0..3 entries with unique keys (1.15 keeps them in maps). */
    private List<Map.Entry<String, StreamStateHandle>> namedHandles(int depth) {
        List<Map.Entry<String, StreamStateHandle>> out = new ArrayList<>();
        Set<String> keys = new HashSet<>();
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
            String key = random.nextBoolean() ? random.nextInt(100000) + ".sst" : name();
            if (keys.add(key)) {
                out.add(new AbstractMap.SimpleImmutableEntry<>(key, streamHandle(depth + 1)));
            }
        }
        return out;
    }

    private KeyedStateHandle changelogBackendHandle() {
        KeyGroupRange range = keyGroupRange(false);
        List<KeyedStateHandle> materialized = new ArrayList<>();
        int n = random.nextInt(3);
        for (int i = 0; i < n; i++) {
            int kind = random.nextInt(3);
            materialized.add(kind == 2
                    ? incrementalHandle(1)
                    : keyGroupsHandle(kind == 1, keyGroupRange(true), 1));
        }
        List<KeyedStateHandle> nonMaterialized = new ArrayList<>();
        n = random.nextInt(3);
        for (int i = 0; i < n; i++) {
            nonMaterialized.add(random.nextBoolean() ? inMemoryChangelogHandle() : changelogFileHandle());
        }
        return FlinkCompat.newChangelogBackendHandle(
                materialized, nonMaterialized, range, random.nextInt(1000), random.nextInt(1000),
                random.nextInt(1 << 20), stateHandleId());
    }

    private KeyedStateHandle inMemoryChangelogHandle() {
        KeyGroupRange range = keyGroupRange(false);
        List<StateChange> changes = new ArrayList<>();
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
            int keyGroup = random.nextInt(4) == 0
                    ? META_KEY_GROUP
                    : range.getStartKeyGroup() + random.nextInt(range.getNumberOfKeyGroups());
            changes.add(FlinkCompat.newStateChange(keyGroup, bytes(random.nextInt(20))));
        }
        long from = random.nextInt(3) == 0 ? nonNegativeLong() / 2 : random.nextInt(1000);
        long to = from + random.nextInt(1000);
        return FlinkCompat.newInMemoryChangelogHandle(changes, from, to, range, stateHandleId());
    }

    private KeyedStateHandle changelogFileHandle() {
        List<Tuple2<StreamStateHandle, Long>> handles = new ArrayList<>();
        int n = random.nextInt(4);
        for (int i = 0; i < n; i++) {
            handles.add(Tuple2.of(streamHandle(1), random.nextInt(5) == 0 ? random.nextLong() : random.nextInt(10000)));
        }
        return FlinkCompat.newChangelogFileHandle(
                handles, keyGroupRange(false), random.nextInt(1 << 20), random.nextInt(1 << 20),
                random.nextBoolean() ? "filesystem" : name(), stateHandleId());
    }

    private KeyGroupRange keyGroupRange(boolean mayBeEmpty) {
        int count = mayBeEmpty && random.nextInt(10) == 0 ? 0 : 1 + random.nextInt(6);
        int start = random.nextInt(5) == 0 ? random.nextInt(1 << 20) : random.nextInt(128);
        return KeyGroupRange.of(start, start + count - 1); // count 0: Flink's EMPTY range (0+0)
    }

    // ------------------------------------------------------------------------
    //  channel state handles
    // ------------------------------------------------------------------------

    private Object inputChannel(int parallelism) {
        if (FlinkCompat.SUPPORTS_MERGED_CHANNELS && random.nextInt(3) == 0) {
            return FlinkCompat.newMergedInputChannelHandle(
                    random.nextInt(parallelism), streamHandle(1), random.nextInt(1 << 20),
                    bytes(random.nextInt(40)));
        }
        return new InputChannelStateHandle(
                random.nextInt(parallelism),
                new InputChannelInfo(random.nextInt(4), random.nextInt(64)),
                streamHandle(1), longList(), random.nextInt(1 << 20));
    }

    private Object outputChannel(int parallelism) {
        if (FlinkCompat.SUPPORTS_MERGED_CHANNELS && random.nextInt(3) == 0) {
            return FlinkCompat.newMergedResultSubpartitionHandle(
                    random.nextInt(parallelism), streamHandle(1), random.nextInt(1 << 20),
                    bytes(random.nextInt(40)));
        }
        return new ResultSubpartitionStateHandle(
                random.nextInt(parallelism),
                new ResultSubpartitionInfo(random.nextInt(4), random.nextInt(64)),
                streamHandle(1), longList(), random.nextInt(1 << 20));
    }

    private List<Long> longList() {
        List<Long> out = new ArrayList<>();
        int n = random.nextInt(5);
        long pos = 0;
        for (int i = 0; i < n; i++) {
            out.add(random.nextInt(10) == 0 ? random.nextLong() : pos);
            pos += random.nextInt(4096);
        }
        return out;
    }

    // ------------------------------------------------------------------------
    //  stream handles
    // ------------------------------------------------------------------------

    /** A non-null stream handle; deeper levels stop nesting KeyGroups-as-stream-handle (code 3). */
    private StreamStateHandle streamHandle(int depth) {
        int bound = FlinkCompat.SUPPORTS_FILE_MERGING ? 100 : 80;
        int kind = random.nextInt(bound);
        if (kind < 30) {
            return new ByteStreamStateHandle(
                    random.nextInt(3) == 0 ? uuid().toString() : name(),
                    bytes(random.nextInt(10) == 0 ? random.nextInt(3000) : random.nextInt(48)));
        } else if (kind < 50) {
            return new FileStateHandle(new Path(absolutePath()), stateSize());
        } else if (kind < 72) {
            // Flink resolves the real path against the checkpoint dir; only the relative part is written.
            String relative = relativePath();
            return new RelativeFileStateHandle(new Path("/unused-dir", relative), relative, stateSize());
        } else if (kind < 80) {
            if (depth >= 2) {
                return new ByteStreamStateHandle(name(), bytes(random.nextInt(16)));
            }
            // Savepoint or not, Flink writes code 3 here and reads back a plain KeyGroupsStateHandle.
            return keyGroupsHandle(random.nextInt(4) == 0, keyGroupRange(true), depth);
        } else if (kind < 95) {
            return segmentHandle();
        } else {
            return FlinkCompat.emptySegmentHandle();
        }
    }

    private StreamStateHandle segmentHandle() {
        return FlinkCompat.newSegmentHandle(
                new Path(absolutePath()),
                random.nextInt(3) == 0 ? nonNegativeLong() : random.nextInt(1 << 24),
                random.nextInt(1 << 20),
                random.nextBoolean(),
                random.nextBoolean() ? uuid().toString() : name());
    }

    private long stateSize() {
        switch (random.nextInt(6)) {
            case 0:
                return -1; // Flink's "unknown"
            case 1:
                return nonNegativeLong();
            default:
                return random.nextInt(1 << 24);
        }
    }

    // ------------------------------------------------------------------------
    //  strings, paths, bytes
    // ------------------------------------------------------------------------

    /** A random name, possibly empty, drawn from {@link #NAME_PIECES}. */
    private String name() {
        int pieces = random.nextInt(20) == 0 ? 50 + random.nextInt(150) : random.nextInt(10);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < pieces; i++) {
            s.append(NAME_PIECES[random.nextInt(NAME_PIECES.length)]);
        }
        return s.toString();
    }

    private String nonEmptyName() {
        String s = name();
        return s.isEmpty() ? "op" : s;
    }

    private String pathSegment() {
        int pieces = 1 + random.nextInt(6);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < pieces; i++) {
            s.append(PATH_PIECES[random.nextInt(PATH_PIECES.length)]);
        }
        String segment = s.toString();
        // "." and ".." are path navigation, not names.
        return segment.replace(".", "").isEmpty() ? segment + "x" : segment;
    }

    /** Absolute path in the string form Flink's Path prints (so re-parsing keeps it unchanged). */
    private String absolutePath() {
        StringBuilder s = new StringBuilder(SCHEMES[random.nextInt(SCHEMES.length)]);
        int segments = 1 + random.nextInt(4);
        for (int i = 0; i < segments; i++) {
            s.append('/').append(pathSegment());
        }
        if (random.nextBoolean()) {
            s.append('/').append(uuid());
        }
        return new Path(s.toString()).toString();
    }

    private String relativePath() {
        return random.nextBoolean() ? uuid().toString() : pathSegment();
    }

    private String stateHandleIdString() {
        return random.nextInt(4) == 0 ? name() : uuid().toString();
    }

    private StateHandleID stateHandleId() {
        return new StateHandleID(stateHandleIdString());
    }

    private byte[] bytes(int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }

    /** Deterministic (seeded) UUID. */
    private UUID uuid() {
        return new UUID(random.nextLong(), random.nextLong());
    }

    private long nonNegativeLong() {
        return random.nextLong() & Long.MAX_VALUE;
    }
}
