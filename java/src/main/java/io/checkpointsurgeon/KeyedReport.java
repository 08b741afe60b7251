package io.checkpointsurgeon;

import io.checkpointsurgeon.internal.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The keyed state of a checkpoint or savepoint, per operator and per keyed state: its name, type,
 * serializers, TTL, and its entries and bytes in total and per subtask
 * ({@link CheckpointSurgeon#inspectKeyed(String)}). Read natively from the keyed backend's meta info
 * ({@code KeyedBackendSerializationProxy}) and the snapshot's files; no class of the job is loaded
 * and no key or value is decoded.
 *
 * <p>What the numbers mean depends on the snapshot format each state lists ({@link SnapshotFormat}):
 * canonical savepoints and heap checkpoints give exact counts of the snapshot's records; RocksDB's
 * files (incremental checkpoints, native savepoints) give RocksDB's table properties, whose entries
 * include tombstones and overwritten versions not compacted yet ({@link State#rocksDbNumbers()});
 * a changelog's state change log gives, per state, its change records since the last materialization
 * (SET, ADD, CLEAR, ...: changes, not live entries) and their bytes ({@link State#changelogNumbers()}).
 * A handle that could not be read is listed with its error (file and byte offset) and the rest of the
 * report stands.
 */
public final class KeyedReport extends Value {
    private final String source;
    private final List<Operator> operators;

    public KeyedReport(String source, List<Operator> operators) {
        this.source = source;
        this.operators = List.copyOf(operators);
    }

    /** The {@code _metadata} the report was read from. */
    public String source() {
        return source;
    }

    /** The operators with keyed state, in the order of {@code _metadata}. */
    public List<Operator> operators() {
        return operators;
    }

    /** The operator with this id, or null. */
    public Operator operator(String id) {
        for (Operator o : operators) {
            if (o.id.equals(id)) return o;
        }
        return null;
    }

    /** The stored bytes of every keyed state of every operator. */
    public long storedBytes() {
        long n = 0;
        for (Operator o : operators) {
            for (State s : o.states) n += s.total.storedBytes;
        }
        return n;
    }

    /** This report as JSON. */
    public String toJson() {
        return Json.write(this);
    }

    @Override
    Object[] components() {
        return new Object[] {"source", source, "operators", operators};
    }

    /** The format a keyed handle's bytes are in; {@link #toString()} is its JSON spelling. */
    public enum SnapshotFormat {
        /** The canonical key/value format: canonical savepoints of every backend, RocksDB's full checkpoints up to Flink 1.15. */
        CANONICAL,
        /** The heap backend's full checkpoints (and its native savepoints): one record per key and namespace. */
        HEAP_CHECKPOINT,
        /** RocksDB's own files (incremental checkpoints, native savepoints): RocksDB's table properties. */
        ROCKSDB_FILES,
        /**
         * The state change log of a changelog handle: per state, its change records since the last
         * materialization (SET, ADD, CLEAR, ...), not live entries, and their bytes uncompressed.
         */
        CHANGELOG;

        @Override
        public String toString() {
            return Spelling.of(this);
        }
    }

    /** Flink's {@code StateMetaInfoSnapshot.BackendStateType} of a keyed state. */
    public enum BackendStateType {
        KEY_VALUE, OPERATOR, BROADCAST,
        /** A priority queue: the timers of a timer service ({@code _timer_state/...}). */
        PRIORITY_QUEUE,
        KEY_VALUE_V2
    }

    /**
     * A serializer's key in the meta info: Flink's {@code StateMetaInfoSnapshot.CommonSerializerKeys},
     * the only keys Flink's keyed meta infos write (the native reader refuses any other).
     */
    public enum SerializerKey {
        /** The key serializer, which the meta info writes once, before the states. */
        KEY_SERIALIZER,
        NAMESPACE_SERIALIZER,
        VALUE_SERIALIZER,
        /** The user key of 2.x's map state of the async state API (KEY_VALUE_V2). */
        USER_KEY_SERIALIZER
    }

    /** Flink's {@code StateDescriptor.Type}, the meta info's {@code KEYED_STATE_TYPE}. */
    public enum StateType {
        VALUE, LIST, MAP, REDUCING, AGGREGATING, FOLDING, UNKNOWN;

        /** The type the meta info names, {@code UNKNOWN} for a name Flink did not have when this was written. */
        public static StateType of(String name) {
            for (StateType t : values()) {
                if (t.name().equals(name)) return t;
            }
            return UNKNOWN;
        }
    }

    /** A keyed state's kind in words ({@link State#kind()}): {@code value}, {@code map}, ..., or {@code timers}. */
    static String kind(BackendStateType backendStateType, StateType stateType) {
        if (backendStateType == BackendStateType.PRIORITY_QUEUE) return "timers";
        return stateType == null ? backendStateType.name().toLowerCase(Locale.ROOT)
                : stateType.name().toLowerCase(Locale.ROOT);
    }

    /** The keyed state of one operator. */
    public static final class Operator extends Value {
        private final String id;
        private final String name;
        private final String uid;
        private final int parallelism;
        private final int maxParallelism;
        private final List<State> states;
        private final List<Handle> handles;

        public Operator(String id, String name, String uid, int parallelism, int maxParallelism, List<State> states,
                List<Handle> handles) {
            this.id = id;
            this.name = name;
            this.uid = uid;
            this.parallelism = parallelism;
            this.maxParallelism = maxParallelism;
            this.states = List.copyOf(states);
            this.handles = List.copyOf(handles);
        }

        /** The operator id (32 hex digits). */
        public String id() {
            return id;
        }

        /** The name where the format stores it (V5+), else empty. */
        public String name() {
            return name;
        }

        /** The uid where the format stores it (V5+), else empty. */
        public String uid() {
            return uid;
        }

        public int parallelism() {
            return parallelism;
        }

        public int maxParallelism() {
            return maxParallelism;
        }

        /** In the order of the first handle's meta info, then the states only later handles name. */
        public List<State> states() {
            return states;
        }

        /** Every keyed handle (or part of one) of every subtask. */
        public List<Handle> handles() {
            return handles;
        }

        /** The state with this name, or null. */
        public State state(String name) {
            for (State s : states) {
                if (s.name.equals(name)) return s;
            }
            return null;
        }

        @Override
        Object[] components() {
            return new Object[] {"id", id, "name", name, "uid", uid, "parallelism", parallelism,
                    "maxParallelism", maxParallelism, "states", states, "handles", handles};
        }
    }

    /** One keyed state of an operator. */
    public static final class State extends Value {
        private final String name;
        private final BackendStateType backendStateType;
        private final StateType stateType;
        private final List<Serializer> serializers;
        private final boolean ttl;
        private final Count total;
        private final List<SubtaskCount> subtasks;
        private final List<SnapshotFormat> formats;
        private final RocksDbFigures rocksDb;

        public State(String name, BackendStateType backendStateType, StateType stateType, List<Serializer> serializers,
                boolean ttl, Count total, List<SubtaskCount> subtasks, List<SnapshotFormat> formats,
                RocksDbFigures rocksDb) {
            this.name = name;
            this.backendStateType = backendStateType;
            this.stateType = stateType;
            this.serializers = List.copyOf(serializers);
            this.ttl = ttl;
            this.total = total;
            this.subtasks = List.copyOf(subtasks);
            this.formats = List.copyOf(formats);
            this.rocksDb = rocksDb;
        }

        public String name() {
            return name;
        }

        public BackendStateType backendStateType() {
            return backendStateType;
        }

        /** The state's type; null for a priority queue (timers), which has none. */
        public StateType stateType() {
            return stateType;
        }

        /** What kind of state this is, in words: {@code value}, {@code map}, ..., or {@code timers}. */
        public String kind() {
            return KeyedReport.kind(backendStateType, stateType);
        }

        /** The key serializer first, then the state's own, as the meta info lists them. */
        public List<Serializer> serializers() {
            return serializers;
        }

        /** The serializer of this role ({@code VALUE_SERIALIZER}, ...), or null. */
        public Serializer serializer(SerializerKey role) {
            for (Serializer s : serializers) {
                if (s.role == role) return s;
            }
            return null;
        }

        /**
         * Whether the value serializer is Flink's TTL wrapper. The meta info holds no TTL settings:
         * the time to live, update type, visibility and cleanup are set in the job's code.
         */
        public boolean ttl() {
            return ttl;
        }

        public Count total() {
            return total;
        }

        /** Per subtask of the handles that hold the state, in subtask order. */
        public List<SubtaskCount> subtasks() {
            return subtasks;
        }

        public List<SnapshotFormat> formats() {
            return formats;
        }

        /**
         * Whether (some of) the numbers are RocksDB's table properties: entries include tombstones
         * and overwritten versions that compaction has not removed yet, bytes are SST file sizes.
         */
        public boolean rocksDbNumbers() {
            return formats.contains(SnapshotFormat.ROCKSDB_FILES);
        }

        /**
         * Whether (some of) the numbers are a state change log's: change records since the last
         * materialization (SET, ADD, CLEAR, ...), not live entries.
         */
        public boolean changelogNumbers() {
            return formats.contains(SnapshotFormat.CHANGELOG);
        }

        /** RocksDB's own figures of the state's SST files, or null when it was not read from RocksDB's files. */
        public RocksDbFigures rocksDb() {
            return rocksDb;
        }

        @Override
        Object[] components() {
            return new Object[] {"name", name, "backendStateType", backendStateType, "stateType", stateType,
                    "serializers", serializers, "ttl", ttl, "total", total, "subtasks", subtasks, "formats", formats,
                    "rocksDb", rocksDb};
        }
    }

    /** One serializer of a state: its role in the meta info ({@code VALUE_SERIALIZER}, ...) and its snapshot. */
    public static final class Serializer extends Value {
        private final SerializerKey role;
        private final SerializerSnapshot snapshot;

        public Serializer(SerializerKey role, SerializerSnapshot snapshot) {
            this.role = role;
            this.snapshot = snapshot;
        }

        public SerializerKey role() {
            return role;
        }

        public SerializerSnapshot snapshot() {
            return snapshot;
        }

        @Override
        Object[] components() {
            return new Object[] {"role", role, "snapshot", snapshot};
        }
    }

    /** A serializer snapshot as the meta info names it. */
    public static final class SerializerSnapshot extends Value {
        private final String snapshotClass;
        private final int version;
        private final String serializerClass;
        private final List<String> classes;
        private final List<SerializerSnapshot> nested;
        private final boolean layoutKnown;

        public SerializerSnapshot(String snapshotClass, int version, String serializerClass, List<String> classes,
                List<SerializerSnapshot> nested, boolean layoutKnown) {
            this.snapshotClass = snapshotClass;
            this.version = version;
            this.serializerClass = serializerClass;
            this.classes = List.copyOf(classes);
            this.nested = List.copyOf(nested);
            this.layoutKnown = layoutKnown;
        }

        public String snapshotClass() {
            return snapshotClass;
        }

        public int version() {
            return version;
        }

        /** The serializer class, where the snapshot class names it (its enclosing class); else null. */
        public String serializerClass() {
            return serializerClass;
        }

        /** Classes the snapshot's body names: a POJO's, a tuple's, an enum's, Kryo's registered type. */
        public List<String> classes() {
            return classes;
        }

        /** The nested serializers' snapshots (a list's element, a map's key and value, TTL's, a POJO's fields). */
        public List<SerializerSnapshot> nested() {
            return nested;
        }

        /** Whether the tool knows the element format (and can walk the elements). */
        public boolean layoutKnown() {
            return layoutKnown;
        }

        /** Every class this snapshot and its nested ones name: what a restore must be able to load. */
        public List<String> allClasses() {
            List<String> out = new ArrayList<>();
            out.add(snapshotClass);
            out.addAll(classes);
            for (SerializerSnapshot n : nested) out.addAll(n.allClasses());
            return out;
        }

        /**
         * A short form: the simple serializer name with its nested ones, e.g.
         * {@code ListSerializer<TtlSerializer<LongSerializer, StringSerializer>>}.
         */
        public String shortName() {
            String own = serializerClass != null ? serializerClass : snapshotClass;
            String simple = own.substring(Math.max(own.lastIndexOf('.'), own.lastIndexOf('$')) + 1);
            if (simple.equals("Serializer")) {
                simple = own.substring(own.lastIndexOf('.') + 1).replace('$', '.'); // TimeWindow$Serializer
            } else if (simple.endsWith("Snapshot")) {
                simple = simple.substring(0, simple.length() - "Snapshot".length());
            }
            StringBuilder s = new StringBuilder(simple);
            if (!classes.isEmpty()) {
                String c = classes.get(0);
                s.append('(').append(c.substring(c.lastIndexOf('.') + 1)).append(')');
            }
            if (!nested.isEmpty()) {
                s.append('<');
                for (int i = 0; i < nested.size(); i++) s.append(i > 0 ? ", " : "").append(nested.get(i).shortName());
                s.append('>');
            }
            return s.toString();
        }

        @Override
        Object[] components() {
            return new Object[] {"snapshotClass", snapshotClass, "version", version, "serializerClass", serializerClass,
                    "classes", classes, "nested", nested, "layoutKnown", layoutKnown};
        }
    }

    /**
     * What a snapshot holds of a state. Entries: one per key and namespace in a heap checkpoint (a
     * map state's whole map is one), one per key-value pair in the canonical format and in RocksDB
     * (a map state's entry per user key); for RocksDB the SST files' {@code rocksdb.num.entries}.
     */
    public static final class Count extends Value {
        private final long entries;
        private final long rawBytes;
        private final long storedBytes;
        private final boolean complete;

        public Count(long entries, long rawBytes, long storedBytes, boolean complete) {
            this.entries = entries;
            this.rawBytes = rawBytes;
            this.storedBytes = storedBytes;
            this.complete = complete;
        }

        public long entries() {
            return entries;
        }

        /** The bytes as serialized, uncompressed (RocksDB: raw key and value sizes). */
        public long rawBytes() {
            return rawBytes;
        }

        /**
         * The bytes in the files: equal to {@link #rawBytes} without compression; a compressed key
         * group's stored bytes split over its states in proportion to their raw bytes; RocksDB: the
         * SST files' sizes.
         */
        public long storedBytes() {
            return storedBytes;
        }

        /** False when part of the state could not be counted (see the handles' notes): a lower bound then. */
        public boolean complete() {
            return complete;
        }

        @Override
        Object[] components() {
            return new Object[] {"entries", entries, "rawBytes", rawBytes, "storedBytes", storedBytes,
                    "complete", complete};
        }
    }

    /** A state's count in one subtask. */
    public static final class SubtaskCount extends Value {
        private final int subtask;
        private final Count count;

        public SubtaskCount(int subtask, Count count) {
            this.subtask = subtask;
            this.count = count;
        }

        public int subtask() {
            return subtask;
        }

        public Count count() {
            return count;
        }

        @Override
        Object[] components() {
            return new Object[] {"subtask", subtask, "count", count};
        }
    }

    /** RocksDB's own figures of a state's SST files, summed. */
    public static final class RocksDbFigures extends Value {
        private final long files;
        private final long deletedKeys;
        private final long mergeOperands;
        private final long rangeDeletions;
        private final long dataSize;

        public RocksDbFigures(long files, long deletedKeys, long mergeOperands, long rangeDeletions, long dataSize) {
            this.files = files;
            this.deletedKeys = deletedKeys;
            this.mergeOperands = mergeOperands;
            this.rangeDeletions = rangeDeletions;
            this.dataSize = dataSize;
        }

        public long files() {
            return files;
        }

        /** {@code rocksdb.deleted.keys}: tombstones among the entries. */
        public long deletedKeys() {
            return deletedKeys;
        }

        /** {@code rocksdb.merge.operands}: merge records (list state appends) among the entries. */
        public long mergeOperands() {
            return mergeOperands;
        }

        public long rangeDeletions() {
            return rangeDeletions;
        }

        /** {@code rocksdb.data.size}: the data blocks' bytes. */
        public long dataSize() {
            return dataSize;
        }

        @Override
        Object[] components() {
            return new Object[] {"files", files, "deletedKeys", deletedKeys, "mergeOperands", mergeOperands,
                    "rangeDeletions", rangeDeletions, "dataSize", dataSize};
        }
    }

    /** One keyed handle (or part of a changelog handle) of a subtask. */
    public static final class Handle extends Value {
        private final int subtask;
        private final boolean raw;
        private final String kind;
        private final SnapshotFormat format;
        private final int firstKeyGroup;
        private final int keyGroups;
        private final long totalBytes;
        private final long headerBytes;
        private final long overheadBytes;
        private final long unattributedBytes;
        private final boolean storedApportioned;
        private final List<Note> notes;
        private final String error;

        public Handle(int subtask, boolean raw, String kind, SnapshotFormat format, int firstKeyGroup, int keyGroups,
                long totalBytes, long headerBytes, long overheadBytes, long unattributedBytes,
                boolean storedApportioned, List<Note> notes, String error) {
            this.subtask = subtask;
            this.raw = raw;
            this.kind = kind;
            this.format = format;
            this.firstKeyGroup = firstKeyGroup;
            this.keyGroups = keyGroups;
            this.totalBytes = totalBytes;
            this.headerBytes = headerBytes;
            this.overheadBytes = overheadBytes;
            this.unattributedBytes = unattributedBytes;
            this.storedApportioned = storedApportioned;
            this.notes = List.copyOf(notes);
            this.error = error;
        }

        public int subtask() {
            return subtask;
        }

        /** Raw keyed state (written by the operator itself), which is not broken down by state. */
        public boolean raw() {
            return raw;
        }

        /** Flink's class of the handle. */
        public String kind() {
            return kind;
        }

        /** The format its bytes are in; null when the handle was not read. */
        public SnapshotFormat format() {
            return format;
        }

        public int firstKeyGroup() {
            return firstKeyGroup;
        }

        public int keyGroups() {
            return keyGroups;
        }

        /** All bytes of the handle: its stream, or its files. */
        public long totalBytes() {
            return totalBytes;
        }

        /** The meta info's bytes. */
        public long headerBytes() {
            return headerBytes;
        }

        /** Bytes that belong to no state: end marks, key-group ids, RocksDB's MANIFEST and OPTIONS. */
        public long overheadBytes() {
            return overheadBytes;
        }

        /** Bytes the reader could not attribute to a state; the notes say why. */
        public long unattributedBytes() {
            return unattributedBytes;
        }

        /** Stored bytes of compressed key groups were split over their states in proportion to their raw bytes. */
        public boolean storedApportioned() {
            return storedApportioned;
        }

        /** What the reader could not count, each with its file and byte offset. */
        public List<Note> notes() {
            return notes;
        }

        /** Why the handle could not be read at all (with its file and byte offset), or null. */
        public String error() {
            return error;
        }

        @Override
        Object[] components() {
            return new Object[] {"subtask", subtask, "raw", raw, "kind", kind, "format", format,
                    "firstKeyGroup", firstKeyGroup, "keyGroups", keyGroups, "totalBytes", totalBytes,
                    "headerBytes", headerBytes, "overheadBytes", overheadBytes, "unattributedBytes", unattributedBytes,
                    "storedApportioned", storedApportioned, "notes", notes, "error", error};
        }
    }

    /** Something a reader could not count, with where (file and byte offset) and why. */
    public static final class Note extends Value {
        private final String file;
        private final long offset;
        private final String message;

        public Note(String file, long offset, String message) {
            this.file = file;
            this.offset = offset;
            this.message = message;
        }

        /** The file (or inline handle); empty when the note is about the whole handle. */
        public String file() {
            return file;
        }

        public long offset() {
            return offset;
        }

        public String message() {
            return message;
        }

        @Override
        Object[] components() {
            return new Object[] {"file", file, "offset", offset, "message", message};
        }
    }
}
