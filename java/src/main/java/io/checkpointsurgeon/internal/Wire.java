package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.StateFile;
import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Every payload that crosses JNI, defined once; the Rust twin is {@code native/src/wire.rs}, whose
 * header documents the layout. A payload starts with a 4-byte magic and the 2-byte {@link #VERSION};
 * numbers are big-endian, a string is a u32 byte count and Java's modified UTF-8 (so any Java
 * string crosses unchanged: tabs, newlines, NUL, lone surrogates), an optional value is a presence
 * byte and the value, a list is a u32 count and its items. Each decoder reads a payload's fields
 * into named locals in wire order, in one place, and builds the value from them; the tests compare
 * every field of a payload the Rust side built from known values ({@code native/src/wire/samples.rs}).
 */
final class Wire {
    static final short VERSION = 6;
    static final int SOURCE = magic("CSSO"), REQUEST = magic("CSRQ"), PLAN = magic("CSPL"),
            REPORT = magic("CSRE"), STATE_FILES = magic("CSSF"), KEYED_REPORT = magic("CSKR");

    private Wire() {}

    private static int magic(String s) {
        return (s.charAt(0) << 24) | (s.charAt(1) << 16) | (s.charAt(2) << 8) | s.charAt(3);
    }

    // ---- Java -> Rust

    /** A local checkpoint: a {@code _metadata} file or its directory, read natively. */
    static byte[] source(Path path) {
        Writer w = new Writer(SOURCE);
        w.u8(0);
        w.str(path.toAbsolutePath().toString());
        return w.bytes();
    }

    /**
     * {@code _metadata} bytes held by Java: {@code dir} is where relative state files are (null:
     * unknown); {@code mirrors} maps remote directory prefixes to the local directories that hold
     * their copies.
     */
    static byte[] source(byte[] metadata, String name, String dir, Map<String, String> mirrors) {
        Writer w = new Writer(SOURCE);
        w.u8(1);
        w.blob(metadata);
        w.str(name);
        w.optStr(dir);
        w.u32(mirrors.size());
        for (Map.Entry<String, String> m : mirrors.entrySet()) {
            w.str(m.getKey());
            w.str(m.getValue());
        }
        return w.bytes();
    }

    /** The operation tags of a request. */
    private static final int REMOVE_STATE = 1, REMOVE_OPERATOR = 2, DEDUPE_UNION = 3, RENAME_OPERATOR = 4,
            RELOCATE = 5, KAFKA = 6, KEYED = 7;
    /** The keyed operations. */
    private static final int KEYED_REMOVE = 0, KEYED_RENAME = 1;
    /** The Kafka operations. */
    private static final int MIGRATE_LEGACY = 0, DROP_TOPIC = 1, SET_OFFSETS = 2;

    static byte[] request(Request request) {
        Writer w = new Writer(REQUEST);
        w.bool(request.surgery.isMetadataOnly());
        w.optStr(request.referencedSource);
        optI32(w, request.surgery.threadCount());
        List<Writer> ops = new ArrayList<>();
        int[] relocations = {0};
        request.surgery.accept(new Surgery.Visitor() {
            private Writer op(int tag) {
                Writer o = new Writer();
                o.u8(tag);
                ops.add(o);
                return o;
            }

            @Override
            public void removeState(Surgery.OperatorSelector operators, String state) {
                Writer o = op(REMOVE_STATE);
                selector(o, operators);
                o.str(state);
            }

            @Override
            public void removeOperator(Surgery.OperatorSelector operator) {
                selector(op(REMOVE_OPERATOR), operator);
            }

            @Override
            public void dedupeUnion(Surgery.OperatorSelector operators, String state) {
                Writer o = op(DEDUPE_UNION);
                selector(o, operators);
                o.str(state);
            }

            @Override
            public void renameOperator(Surgery.OperatorSelector operator, String newUid, String newOperatorId,
                    String newName) {
                Writer o = op(RENAME_OPERATOR);
                selector(o, operator);
                if (newUid != null) {
                    o.u8(0);
                    o.str(newUid);
                } else if (newOperatorId != null) {
                    o.u8(1);
                    o.blob(hexBytes(newOperatorId));
                } else {
                    o.u8(2); // the same id and uid, a new name
                }
                o.optStr(newName);
            }

            @Override
            public void relocate(String fromPrefix, String toPrefix) {
                Writer o = op(RELOCATE);
                o.str(fromPrefix);
                o.str(toPrefix);
                o.bool(request.outside.contains(relocations[0]++));
            }

            @Override
            public void migrateKafkaLegacy(Surgery.OperatorSelector operators, int enumeratorStateVersion,
                    Integer parallelism, Surgery.KafkaStart offsetNotSet) {
                Writer o = kafka(operators, MIGRATE_LEGACY);
                o.i32(enumeratorStateVersion);
                optI32(o, parallelism);
                o.bool(offsetNotSet != null);
                o.i64(offsetNotSet == null ? 0 : offsetNotSet.value());
            }

            @Override
            public void dropKafkaTopic(Surgery.OperatorSelector operators, String topic, Integer partition) {
                Writer o = kafka(operators, DROP_TOPIC);
                o.str(topic);
                optI32(o, partition);
            }

            @Override
            public void setKafkaOffsets(Surgery.OperatorSelector operators, String topic, Integer partition,
                    Surgery.KafkaStart to) {
                Writer o = kafka(operators, SET_OFFSETS);
                o.str(topic);
                optI32(o, partition);
                o.u8(to.isShift() ? 1 : 0);
                o.i64(to.value());
            }

            @Override
            public void removeKeyedState(Surgery.OperatorSelector operators, String state) {
                keyed(operators, KEYED_REMOVE).str(state);
            }

            @Override
            public void renameKeyedState(Surgery.OperatorSelector operators, String state, String newName) {
                Writer o = keyed(operators, KEYED_RENAME);
                o.str(state);
                o.str(newName);
            }

            private Writer keyed(Surgery.OperatorSelector operators, int keyedOp) {
                Writer o = op(KEYED);
                selector(o, operators);
                o.u8(keyedOp);
                return o;
            }

            private Writer kafka(Surgery.OperatorSelector operators, int kafkaOp) {
                Writer o = op(KAFKA);
                selector(o, operators);
                o.u8(kafkaOp);
                return o;
            }
        });
        w.u32(ops.size());
        for (Writer o : ops) w.raw(o.bytes());
        return w.bytes();
    }

    private static void optI32(Writer w, Integer v) {
        w.bool(v != null);
        w.i32(v == null ? 0 : v);
    }

    private static void selector(Writer w, Surgery.OperatorSelector s) {
        switch (s.kind()) {
            case ALL:
                w.u8(0);
                break;
            case ID:
                w.u8(1);
                w.blob(hexBytes(s.value()));
                break;
            case UID:
                w.u8(2);
                w.str(s.value());
                break;
            case NAME:
                w.u8(3);
                w.str(s.value());
                break;
            default:
                throw new IllegalArgumentException(s.kind().name());
        }
    }

    private static byte[] hexBytes(String hex) {
        byte[] b = new byte[16];
        for (int i = 0; i < 16; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    // ---- Rust -> Java

    /**
     * Reads a whole payload of {@code magic} with {@code body}: a payload that ends early, runs on
     * past its end or holds a value out of range is a {@code WIRE} error naming {@code what}.
     */
    private static <T> T decode(byte[] payload, int magic, String what, java.util.function.Function<Reader, T> body)
            throws CheckpointSurgeonException {
        Reader r = new Reader(payload, magic, what);
        try {
            T out = body.apply(r);
            r.end();
            return out;
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw r.malformed(e);
        }
    }

    /** The plan and, if the stage step ran, what it wrote. */
    static Staged plan(byte[] payload) throws CheckpointSurgeonException {
        return decode(payload, PLAN, "plan", Wire::plan);
    }

    private static Staged plan(Reader r) {
        String source = r.str();
        boolean metadataOnly = r.bool();
        long metadataBytesBefore = r.i64();
        long metadataBytesAfter = r.i64();
        List<SurgeryPlan.Change> changes = r.list(48, Wire::change);
        List<SurgeryPlan.NewStream> newStreams = r.list(16, Wire::newStream);
        int operators = r.i32();
        List<SurgeryPlan.Relocation> relocated = r.list(8, Wire::relocation);
        long keyedBytesRead = r.i64();
        long keyedBytesWritten = r.i64();
        int threads = r.i32();
        SurgeryPlan plan = new SurgeryPlan(source, metadataOnly ? SurgeryPlan.Depth.METADATA_ONLY
                : SurgeryPlan.Depth.PURGE, metadataBytesBefore, metadataBytesAfter, changes, newStreams, null, relocated,
                new SurgeryPlan.KeyedFigures(keyedBytesRead, keyedBytesWritten, threads));
        Staged staged;
        if (r.bool()) {
            String metadataTmp = r.str();
            long metadataBytes = r.i64();
            List<String> written = r.strs();
            List<String> unchanged = r.strs();
            staged = new Staged(plan, operators, metadataTmp, metadataBytes, written, unchanged);
        } else {
            staged = new Staged(plan, operators, null, 0, List.of(), List.of());
        }
        return staged;
    }

    private static SurgeryPlan.Change change(Reader r) {
        String operatorId = r.str();
        int subtask = r.i32();
        String state = r.str();
        SurgeryPlan.Change.Action action = SurgeryPlan.Change.Action.of(r.str());
        long elementsBefore = r.i64();
        long elementsAfter = r.i64();
        long bytesRemoved = r.i64();
        String detail = r.str();
        return new SurgeryPlan.Change(operatorId, subtask, state, action, elementsBefore, elementsAfter, bytesRemoved,
                detail);
    }

    private static SurgeryPlan.NewStream newStream(Reader r) {
        String fileName = r.str();
        String replaces = r.str();
        long bytes = r.i64();
        return new SurgeryPlan.NewStream(fileName, replaces, bytes);
    }

    private static SurgeryPlan.Relocation relocation(Reader r) {
        String oldPath = r.str();
        String newPath = r.str();
        return new SurgeryPlan.Relocation(oldPath, newPath);
    }

    static InspectReport report(byte[] payload) throws CheckpointSurgeonException {
        return decode(payload, REPORT, "report", Wire::report);
    }

    private static InspectReport report(Reader r) {
        String source = r.str();
        int metadataVersion = r.i32();
        long checkpointId = r.i64();
        long metadataBytes = r.i64();
        long propertiesBytes = r.i64();
        List<InspectReport.MasterStateInfo> masterStates = r.list(16, Wire::masterState);
        List<InspectReport.OperatorInfo> operators = r.list(37, Wire::operator);
        return new InspectReport(source, metadataVersion, checkpointId, metadataBytes, propertiesBytes,
                masterStates, operators);
    }

    private static InspectReport.MasterStateInfo masterState(Reader r) {
        String name = r.str();
        int version = r.i32();
        long bytes = r.i64();
        return new InspectReport.MasterStateInfo(name, version, bytes);
    }

    private static InspectReport.OperatorInfo operator(Reader r) {
        String id = r.str();
        String name = r.str();
        String uid = r.str();
        int parallelism = r.i32();
        int maxParallelism = r.i32();
        long coordinatorStateBytes = r.i64();
        byte[] coordinatorHead = r.blob();
        boolean fullyFinished = r.bool();
        int finishedSubtasks = r.i32();
        InspectReport.KafkaEnumerator kafkaEnumerator = r.bool() ? kafkaEnumerator(r) : null;
        List<InspectReport.SubtaskInfo> subtasks = r.list(24, Wire::subtask);
        return new InspectReport.OperatorInfo(id, name, uid, parallelism, maxParallelism, coordinatorStateBytes,
                fullyFinished, finishedSubtasks, kafkaEnumerator, subtasks).withCoordinatorHead(coordinatorHead);
    }

    /** A split of the enumerator state: its topic partition and offsets, and 0 (assigned) or 1 (pending). */
    private static InspectReport.KafkaEnumerator kafkaEnumerator(Reader r) {
        int version = r.i32();
        String error = r.str();
        boolean initialDiscoveryFinished = r.bool();
        List<InspectReport.KafkaOffset> assigned = new ArrayList<>(), pending = new ArrayList<>();
        int n = r.count(28);
        for (int i = 0; i < n; i++) {
            String topic = r.str();
            int partition = r.i32();
            long offset = r.i64();
            long stoppingOffset = r.i64();
            int status = r.i32();
            (status == 0 ? assigned : pending).add(new InspectReport.KafkaOffset(topic, partition, offset,
                    stoppingOffset, 1));
        }
        return new InspectReport.KafkaEnumerator(version, error, initialDiscoveryFinished, List.copyOf(assigned),
                List.copyOf(pending));
    }

    private static InspectReport.SubtaskInfo subtask(Reader r) {
        int index = r.i32();
        InspectReport.OperatorStateHandleInfo managedOperatorState = r.bool() ? handle(r) : null;
        InspectReport.OperatorStateHandleInfo rawOperatorState = r.bool() ? handle(r) : null;
        InspectReport.KeyedStateHandleInfo managedKeyedState = r.bool() ? keyed(r) : null;
        InspectReport.KeyedStateHandleInfo rawKeyedState = r.bool() ? keyed(r) : null;
        int inputChannelHandles = r.i32();
        int outputChannelHandles = r.i32();
        long channelStateBytes = r.i64();
        return new InspectReport.SubtaskInfo(index, managedOperatorState, rawOperatorState, managedKeyedState,
                rawKeyedState, inputChannelHandles, outputChannelHandles, channelStateBytes);
    }

    private static InspectReport.OperatorStateHandleInfo handle(Reader r) {
        String kind = r.str();
        String delegateKind = r.str();
        String location = r.str();
        long delegateSize = r.i64();
        boolean inline = r.bool();
        int proxyVersion = r.i32();
        boolean compressed = r.bool();
        String streamError = r.str();
        long headerBytes = r.i64();
        List<InspectReport.StateInfo> states = r.list(44, Wire::state);
        return new InspectReport.OperatorStateHandleInfo(kind, delegateKind, location, delegateSize, inline,
                proxyVersion, compressed, streamError, headerBytes, states);
    }

    private static InspectReport.StateInfo state(Reader r) {
        String name = r.str();
        InspectReport.Mode mode = InspectReport.Mode.valueOf(r.str());
        long elements = r.i64();
        long bytes = r.i64();
        String serializer = r.str();
        String elementType = r.str();
        long distinctElements = r.i64();
        long digest = r.i64();
        List<InspectReport.KafkaOffset> kafkaOffsets = r.list(32, Wire::kafkaOffset);
        return new InspectReport.StateInfo(name, mode, elements, bytes, serializer, elementType, distinctElements,
                digest, kafkaOffsets);
    }

    /** An offset of a Kafka state and how many elements hold it. */
    private static InspectReport.KafkaOffset kafkaOffset(Reader r) {
        String topic = r.str();
        int partition = r.i32();
        long offset = r.i64();
        long stoppingOffset = r.i64();
        long count = r.i64();
        return new InspectReport.KafkaOffset(topic, partition, offset, stoppingOffset, count);
    }

    private static InspectReport.KeyedStateHandleInfo keyed(Reader r) {
        String kind = r.str();
        long stateSize = r.i64();
        return new InspectReport.KeyedStateHandleInfo(kind, stateSize);
    }

    static List<StateFile> stateFiles(byte[] payload) throws CheckpointSurgeonException {
        return decode(payload, STATE_FILES, "state files", r -> r.list(6, Wire::stateFile));
    }

    private static StateFile stateFile(Reader r) {
        boolean operatorState = r.bool();
        int tag = r.u8();
        StateFile.Kind kind = tag == 0 ? StateFile.Kind.RELATIVE : tag == 1 ? StateFile.Kind.FILE
                : tag == 2 ? StateFile.Kind.SEGMENT : null;
        if (kind == null) throw new IllegalArgumentException("file kind 0 to 2, found " + tag);
        long start = kind == StateFile.Kind.SEGMENT ? r.i64() : 0;
        long size = r.i64();
        String path = r.str();
        return new StateFile(operatorState, kind, path, start, size);
    }

    static KeyedReport keyedReport(byte[] payload) throws CheckpointSurgeonException {
        return decode(payload, KEYED_REPORT, "keyed report", r -> {
            String source = r.str();
            List<KeyedReport.Operator> operators = r.list(22, Wire::keyedOperator);
            return new KeyedReport(source, operators);
        });
    }

    private static KeyedReport.Operator keyedOperator(Reader r) {
        String id = r.str();
        String name = r.optStr();
        String uid = r.optStr();
        int parallelism = r.i32();
        int maxParallelism = r.i32();
        List<KeyedReport.State> states = r.list(40, Wire::keyedState);
        List<KeyedReport.Handle> handles = r.list(52, Wire::keyedHandle);
        return new KeyedReport.Operator(id, name == null ? "" : name, uid == null ? "" : uid, parallelism,
                maxParallelism, states, handles);
    }

    private static KeyedReport.State keyedState(Reader r) {
        String name = r.str();
        KeyedReport.BackendStateType backendStateType = KeyedReport.BackendStateType.valueOf(r.str());
        String type = r.optStr();
        KeyedReport.StateType stateType = type == null ? null : KeyedReport.StateType.of(type);
        List<KeyedReport.Serializer> serializers = r.list(18, Wire::serializer);
        boolean ttl = r.bool();
        KeyedReport.Count total = count(r);
        List<KeyedReport.SubtaskCount> subtasks = r.list(29, Wire::subtaskCount);
        List<KeyedReport.SnapshotFormat> formats = r.list(1, Wire::snapshotFormat);
        KeyedReport.RocksDbFigures rocksDb = null;
        if (r.bool()) {
            long files = r.i64();
            long deletedKeys = r.i64();
            long mergeOperands = r.i64();
            long rangeDeletions = r.i64();
            long dataSize = r.i64();
            rocksDb = new KeyedReport.RocksDbFigures(files, deletedKeys, mergeOperands, rangeDeletions, dataSize);
        }
        return new KeyedReport.State(name, backendStateType, stateType, serializers, ttl, total, subtasks, formats,
                rocksDb);
    }

    private static KeyedReport.Serializer serializer(Reader r) {
        KeyedReport.SerializerKey role = KeyedReport.SerializerKey.valueOf(r.str());
        KeyedReport.SerializerSnapshot snapshot = snapshot(r, 0);
        return new KeyedReport.Serializer(role, snapshot);
    }

    /** Nested snapshots deeper than this are no serializer Flink writes (as in wire.rs). */
    private static final int MAX_SNAPSHOT_DEPTH = 64;

    private static KeyedReport.SerializerSnapshot snapshot(Reader r, int depth) {
        if (depth > MAX_SNAPSHOT_DEPTH) {
            throw new IllegalArgumentException("snapshots nested at most " + MAX_SNAPSHOT_DEPTH + " deep");
        }
        String snapshotClass = r.str();
        int version = r.i32();
        String serializerClass = r.optStr();
        List<String> classes = r.strs();
        List<KeyedReport.SerializerSnapshot> nested = r.list(14, x -> snapshot(x, depth + 1));
        boolean layoutKnown = r.bool();
        return new KeyedReport.SerializerSnapshot(snapshotClass, version, serializerClass, classes, nested,
                layoutKnown);
    }

    private static KeyedReport.Count count(Reader r) {
        long entries = r.i64();
        long rawBytes = r.i64();
        long storedBytes = r.i64();
        boolean complete = r.bool();
        return new KeyedReport.Count(entries, rawBytes, storedBytes, complete);
    }

    private static KeyedReport.SubtaskCount subtaskCount(Reader r) {
        int subtask = r.i32();
        KeyedReport.Count count = count(r);
        return new KeyedReport.SubtaskCount(subtask, count);
    }

    /** The formats in wire.rs's `SnapshotFormat::ALL` order. */
    private static KeyedReport.SnapshotFormat snapshotFormat(Reader r) {
        int tag = r.u8();
        KeyedReport.SnapshotFormat[] all = KeyedReport.SnapshotFormat.values();
        if (tag >= all.length) throw new IllegalArgumentException("snapshot format tag 0 to 3, found " + tag);
        return all[tag];
    }

    private static KeyedReport.Handle keyedHandle(Reader r) {
        int subtask = r.i32();
        boolean raw = r.bool();
        String kind = r.str();
        KeyedReport.SnapshotFormat format = r.bool() ? snapshotFormat(r) : null;
        int firstKeyGroup = r.i32();
        int keyGroups = r.i32();
        long totalBytes = r.i64();
        long headerBytes = r.i64();
        long overheadBytes = r.i64();
        long unattributedBytes = r.i64();
        boolean storedApportioned = r.bool();
        List<KeyedReport.Note> notes = r.list(16, Wire::note);
        String error = r.optStr();
        return new KeyedReport.Handle(subtask, raw, kind, format, firstKeyGroup, keyGroups, totalBytes, headerBytes,
                overheadBytes, unattributedBytes, storedApportioned, notes, error);
    }

    private static KeyedReport.Note note(Reader r) {
        String file = r.str();
        long offset = r.i64();
        String message = r.str();
        return new KeyedReport.Note(file, offset, message);
    }

    // ---- encoding

    static final class Writer {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream(256);

        Writer(int magic) {
            u32(magic);
            out.write(VERSION >>> 8);
            out.write(VERSION);
        }

        /** A part of a payload (an operation of a request), appended with {@link #raw}. */
        Writer() {
        }

        void raw(byte[] b) {
            out.write(b, 0, b.length);
        }

        void u8(int v) {
            out.write(v);
        }

        void bool(boolean v) {
            out.write(v ? 1 : 0);
        }

        void u32(int v) {
            out.write(v >>> 24);
            out.write(v >>> 16);
            out.write(v >>> 8);
            out.write(v);
        }

        void i32(int v) {
            u32(v);
        }

        void i64(long v) {
            u32((int) (v >>> 32));
            u32((int) v);
        }

        void blob(byte[] b) {
            u32(b.length);
            out.write(b, 0, b.length);
        }

        void str(String s) {
            blob(modifiedUtf8(s));
        }

        void optStr(String s) {
            bool(s != null);
            if (s != null) str(s);
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    /** Java's modified UTF-8 ({@code DataOutput.writeUTF} without the length limit). */
    static byte[] modifiedUtf8(String s) {
        ByteArrayOutputStream b = new ByteArrayOutputStream(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 1 && c <= 0x7F) {
                b.write(c);
            } else if (c <= 0x7FF) {
                b.write(0xC0 | (c >> 6));
                b.write(0x80 | (c & 0x3F));
            } else {
                b.write(0xE0 | (c >> 12));
                b.write(0x80 | ((c >> 6) & 0x3F));
                b.write(0x80 | (c & 0x3F));
            }
        }
        return b.toByteArray();
    }

    /** Reads one payload; every failure names the payload and the byte offset. */
    static final class Reader {
        private final ByteBuffer in;
        private final String what;

        Reader(byte[] payload, int magic, String what) throws CheckpointSurgeonException {
            this.in = ByteBuffer.wrap(payload);
            this.what = what;
            if (payload.length < 6 || in.getInt() != magic) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.WIRE, what
                        + " payload at byte 0: expected magic " + Integer.toHexString(magic));
            }
            short v = in.getShort();
            if (v != VERSION) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.WIRE, what
                        + " payload at byte 4: expected wire version " + VERSION + ", found " + v
                        + " (the jar and the native library are of different builds)");
            }
        }

        CheckpointSurgeonException malformed(RuntimeException e) {
            return new CheckpointSurgeonException(CheckpointSurgeonException.Code.WIRE, what + " payload at byte "
                    + in.position() + ": " + (e instanceof BufferUnderflowException ? "unexpected end" : e.getMessage()), e);
        }

        int u8() {
            return in.get() & 0xFF;
        }

        boolean bool() {
            int b = u8();
            if (b > 1) throw new IllegalArgumentException("a boolean byte, found " + b);
            return b == 1;
        }

        int i32() {
            return in.getInt();
        }

        long i64() {
            return in.getLong();
        }

        /** A count of items of at least {@code minBytes} each, checked against what remains. */
        int count(int minBytes) {
            int n = in.getInt();
            if (n < 0 || (long) n * minBytes > in.remaining()) {
                throw new IllegalArgumentException("a count that fits the payload, found " + Integer.toUnsignedString(n));
            }
            return n;
        }

        String str() {
            int n = count(1);
            String s = decodeModifiedUtf8(in.array(), in.position(), n);
            in.position(in.position() + n);
            return s;
        }

        String optStr() {
            return bool() ? str() : null;
        }

        byte[] blob() {
            byte[] b = new byte[count(1)];
            in.get(b);
            return b;
        }

        /** A list of items of at least {@code minBytes} each, each read by {@code item}; unmodifiable. */
        <T> List<T> list(int minBytes, Function<Reader, T> item) {
            int n = count(minBytes);
            List<T> l = new ArrayList<>(n);
            for (int i = 0; i < n; i++) l.add(item.apply(this));
            return List.copyOf(l);
        }

        List<String> strs() {
            int n = count(4);
            List<String> l = new ArrayList<>(n);
            for (int i = 0; i < n; i++) l.add(str());
            return List.copyOf(l);
        }

        void end() {
            if (in.hasRemaining()) throw new IllegalArgumentException("the end, found " + in.remaining() + " more bytes");
        }
    }

    static String decodeModifiedUtf8(byte[] b, int from, int len) {
        StringBuilder s = new StringBuilder(len);
        int i = from, end = from + len;
        while (i < end) {
            int c = b[i] & 0xFF;
            if (c < 0x80) {
                s.append((char) c);
                i++;
            } else if ((c & 0xE0) == 0xC0 && i + 1 < end) {
                s.append((char) (((c & 0x1F) << 6) | (b[i + 1] & 0x3F)));
                i += 2;
            } else if ((c & 0xF0) == 0xE0 && i + 2 < end) {
                s.append((char) (((c & 0x0F) << 12) | ((b[i + 1] & 0x3F) << 6) | (b[i + 2] & 0x3F)));
                i += 3;
            } else {
                s.append('\uFFFD');
                i++;
            }
        }
        return s.toString();
    }
}
