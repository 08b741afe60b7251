package io.checkpointsurgeon;

import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import io.checkpointsurgeon.flink.StateFile;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Every payload that crosses JNI, defined once; the Rust twin is {@code native/src/wire.rs}, whose
 * header documents the layout. A payload starts with a 4-byte magic and the 2-byte {@link #VERSION};
 * numbers are big-endian, a string is a u32 byte count and Java's modified UTF-8 (so any Java
 * string crosses unchanged: tabs, newlines, NUL, lone surrogates), an optional value is a presence
 * byte and the value, a list is a u32 count and its items. Not API.
 */
final class Wire {
    static final short VERSION = 4;
    static final int SOURCE = magic("CSSO"), REQUEST = magic("CSRQ"), PLAN = magic("CSPL"),
            REPORT = magic("CSRE"), STATE_FILES = magic("CSSF");

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

    static byte[] request(Surgery surgery) {
        Writer w = new Writer(REQUEST);
        w.bool(surgery.isMetadataOnly());
        w.optStr(surgery.referencedSource());
        List<Surgery.Operation> ops = surgery.operations();
        w.u32(ops.size());
        for (Surgery.Operation op : ops) {
            w.u8(op.kind.tag);
            if (op.kind == Surgery.Operation.Kind.RELOCATE) {
                w.str(op.from);
                w.str(op.to);
                w.bool(op.outside);
                continue;
            }
            selector(w, op.operators);
            switch (op.kind) {
                case REMOVE_STATE:
                case DEDUPE_UNION:
                    w.str(op.state);
                    break;
                case RENAME_OPERATOR:
                    if (op.toUid != null) {
                        w.u8(0);
                        w.str(op.toUid);
                    } else {
                        w.u8(1);
                        w.blob(hexBytes(op.toOperatorId));
                    }
                    w.optStr(op.toName);
                    break;
                case KAFKA:
                    w.u8(op.kafkaOp);
                    if (op.kafkaOp == 0) {
                        w.i32(op.enumeratorStateVersion);
                        optI32(w, op.parallelism);
                        w.bool(op.start != null);
                        w.i64(op.start == null ? 0 : op.start.value);
                    } else {
                        w.str(op.topic);
                        optI32(w, op.partition);
                        if (op.kafkaOp == 2) {
                            w.u8(op.start.shift ? 1 : 0);
                            w.i64(op.start.value);
                        }
                    }
                    break;
                default:
                    break;
            }
        }
        return w.bytes();
    }

    private static void optI32(Writer w, Integer v) {
        w.bool(v != null);
        w.i32(v == null ? 0 : v);
    }

    private static void selector(Writer w, Surgery.OperatorSelector s) {
        switch (s.kind()) {
            case "all":
                w.u8(0);
                break;
            case "id":
                w.u8(1);
                w.blob(hexBytes(s.value()));
                break;
            case "uid":
                w.u8(2);
                w.str(s.value());
                break;
            default:
                w.u8(3);
                w.str(s.value());
        }
    }

    private static byte[] hexBytes(String hex) {
        byte[] b = new byte[16];
        for (int i = 0; i < 16; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    // ---- Rust -> Java

    /** The plan and, if the stage step ran, what it wrote. */
    static SurgeryPlan.Staged plan(byte[] payload) throws CheckpointSurgeonException {
        Reader r = new Reader(payload, PLAN, "plan");
        try {
            String source = r.str();
            String depth = r.bool() ? "metadata-only" : "purge";
            long before = r.i64(), after = r.i64();
            int n = r.count(48);
            List<SurgeryPlan.Change> changes = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                changes.add(new SurgeryPlan.Change(r.str(), r.i32(), r.str(), r.str(), r.i64(), r.i64(), r.i64(),
                        r.str()));
            }
            n = r.count(16);
            List<SurgeryPlan.NewStream> streams = new ArrayList<>(n);
            for (int i = 0; i < n; i++) streams.add(new SurgeryPlan.NewStream(r.str(), r.str(), r.i64()));
            int operators = r.i32();
            n = r.count(8);
            List<SurgeryPlan.Relocation> relocated = new ArrayList<>(n);
            for (int i = 0; i < n; i++) relocated.add(new SurgeryPlan.Relocation(r.str(), r.str()));
            SurgeryPlan plan = new SurgeryPlan(source, depth, before, after, List.copyOf(changes),
                    List.copyOf(streams), null, List.copyOf(relocated));
            SurgeryPlan.Staged staged = !r.bool() ? new SurgeryPlan.Staged(plan, operators, null, 0, List.of(), List.of())
                    : new SurgeryPlan.Staged(plan, operators, r.str(), r.i64(), r.strs(), r.strs());
            r.end();
            return staged;
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw r.malformed(e);
        }
    }

    static InspectReport report(byte[] payload) throws CheckpointSurgeonException {
        Reader r = new Reader(payload, REPORT, "report");
        try {
            String source = r.str();
            int version = r.i32();
            long checkpointId = r.i64(), metadataBytes = r.i64(), propertiesBytes = r.i64();
            int n = r.count(16);
            List<InspectReport.MasterStateInfo> masters = new ArrayList<>(n);
            for (int i = 0; i < n; i++) masters.add(new InspectReport.MasterStateInfo(r.str(), r.i32(), r.i64()));
            n = r.count(37);
            List<InspectReport.OperatorInfo> ops = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String id = r.str(), name = r.str(), uid = r.str();
                int p = r.i32(), maxP = r.i32();
                long coordinator = r.i64();
                byte[] coordinatorHead = r.blob();
                boolean fully = r.bool();
                int finished = r.i32();
                InspectReport.KafkaEnumerator kafkaEnumerator = null;
                if (r.bool()) {
                    int enumVersion = r.i32();
                    String error = r.str();
                    boolean discovered = r.bool();
                    int nk = r.count(28);
                    List<InspectReport.KafkaOffset> assigned = new ArrayList<>(), pending = new ArrayList<>();
                    for (int j = 0; j < nk; j++) {
                        InspectReport.KafkaOffset k = new InspectReport.KafkaOffset(r.str(), r.i32(), r.i64(), r.i64(), 1);
                        (r.i32() == 0 ? assigned : pending).add(k);
                    }
                    kafkaEnumerator = new InspectReport.KafkaEnumerator(enumVersion, error, discovered,
                            List.copyOf(assigned), List.copyOf(pending));
                }
                int ns = r.count(24);
                List<InspectReport.SubtaskInfo> subs = new ArrayList<>(ns);
                for (int j = 0; j < ns; j++) {
                    int index = r.i32();
                    InspectReport.OperatorStateHandleInfo managed = handle(r), raw = handle(r);
                    InspectReport.KeyedStateHandleInfo mk = keyed(r), rk = keyed(r);
                    subs.add(new InspectReport.SubtaskInfo(index, managed, raw, mk, rk, r.i32(), r.i32(), r.i64()));
                }
                ops.add(new InspectReport.OperatorInfo(id, name, uid, p, maxP, coordinator, fully, finished,
                        kafkaEnumerator, List.copyOf(subs)).withCoordinatorHead(coordinatorHead));
            }
            r.end();
            return new InspectReport(source, version, checkpointId, metadataBytes, propertiesBytes,
                    List.copyOf(masters), List.copyOf(ops));
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw r.malformed(e);
        }
    }

    private static InspectReport.OperatorStateHandleInfo handle(Reader r) {
        if (!r.bool()) return null;
        String kind = r.str(), delegateKind = r.str(), location = r.str();
        long size = r.i64();
        boolean inline = r.bool();
        int proxy = r.i32();
        boolean compressed = r.bool();
        String error = r.str();
        long header = r.i64();
        int n = r.count(44);
        List<InspectReport.StateInfo> states = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String name = r.str(), mode = r.str();
            long elements = r.i64(), bytes = r.i64();
            String serializer = r.str(), elementType = r.str();
            long distinct = r.i64(), digest = r.i64();
            int k = r.count(32);
            List<InspectReport.KafkaOffset> kafka = new ArrayList<>(k);
            for (int j = 0; j < k; j++) kafka.add(new InspectReport.KafkaOffset(r.str(), r.i32(), r.i64(), r.i64(), r.i64()));
            states.add(new InspectReport.StateInfo(name, mode, elements, bytes, serializer, elementType, distinct,
                    digest, List.copyOf(kafka)));
        }
        return new InspectReport.OperatorStateHandleInfo(kind, delegateKind, location, size, inline, proxy, compressed,
                error, header, List.copyOf(states));
    }

    private static InspectReport.KeyedStateHandleInfo keyed(Reader r) {
        return r.bool() ? new InspectReport.KeyedStateHandleInfo(r.str(), r.i64()) : null;
    }

    static List<StateFile> stateFiles(byte[] payload) throws CheckpointSurgeonException {
        Reader r = new Reader(payload, STATE_FILES, "state files");
        try {
            int n = r.count(6);
            List<StateFile> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                boolean op = r.bool();
                int kind = r.u8();
                long start = kind == 2 ? r.i64() : 0, size = kind == 2 ? r.i64() : 0;
                String k = kind == 0 ? "relative" : kind == 1 ? "file" : kind == 2 ? "segment" : null;
                if (k == null) throw new IllegalArgumentException("file kind 0 to 2, found " + kind);
                out.add(new StateFile(op, k, r.str(), start, size));
            }
            r.end();
            return out;
        } catch (BufferUnderflowException | IllegalArgumentException e) {
            throw r.malformed(e);
        }
    }

    // ---- encoding

    static final class Writer {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream(256);

        Writer(int magic) {
            u32(magic);
            out.write(VERSION >>> 8);
            out.write(VERSION);
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

        byte[] blob() {
            byte[] b = new byte[count(1)];
            in.get(b);
            return b;
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
