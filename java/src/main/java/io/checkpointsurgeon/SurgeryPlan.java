package io.checkpointsurgeon;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What a surgery removes and writes; after {@code apply}, also what it wrote ({@link #result()}).
 *
 * @param depth {@code purge} or {@code metadata-only}
 */
public record SurgeryPlan(
        String source,
        String depth,
        long metadataBytesBefore,
        long metadataBytesAfter,
        List<Change> changes,
        List<NewStream> newStreams,
        Result result) {

    /**
     * One state handle (or operator) the surgery changes. {@code subtask} is -1 for a whole
     * operator. {@code action}: {@code purge-state}, {@code drop-map-entry}, {@code dedupe-union},
     * {@code remove-operator}.
     */
    public record Change(String operatorId, int subtask, String state, String action,
                         long elementsBefore, long elementsAfter, long bytesRemoved) {}

    /** A rewritten state stream: a new file name, or empty for an inline stream in _metadata. */
    public record NewStream(String fileName, String replaces, long bytes) {}

    /**
     * What {@code apply} wrote. {@code flinkValidation} says how Flink's own loader judged the
     * new {@code _metadata} ("loaded by Flink x.y: N operators", or why it was not run).
     */
    public record Result(String metadataPath, long metadataBytes, List<String> written, List<String> linked,
                         List<String> copied, String backup, String flinkValidation) {
        Result withValidation(String v) {
            return new Result(metadataPath, metadataBytes, written, linked, copied, backup, v);
        }
    }

    public long elementsRemoved() {
        return changes.stream().mapToLong(c -> c.elementsBefore() - c.elementsAfter()).sum();
    }

    public long bytesRemoved() {
        return changes.stream().mapToLong(Change::bytesRemoved).sum();
    }

    public String toJson() {
        return Json.write(this);
    }

    SurgeryPlan withResult(Result r) {
        return new SurgeryPlan(source, depth, metadataBytesBefore, metadataBytesAfter, changes, newStreams, r);
    }

    /** Decodes the native plan (layout: {@code native/src/surgery.rs}, {@code encode_plan}). */
    static SurgeryPlan decode(byte[] bytes) throws CheckpointSurgeonException {
        return decodeStaged(bytes).plan;
    }

    /**
     * What the native stage step of {@link Commit} wrote: the new metadata under a temporary name, the
     * new state files, and the relative state files the new metadata still shares with the old one.
     */
    static final class Staged {
        final SurgeryPlan plan;
        final int operators;
        final String metadataTmp;
        final long metadataBytes;
        final List<String> written;
        final List<String> unchanged;

        Staged(SurgeryPlan plan, int operators, String metadataTmp, long metadataBytes, List<String> written,
                List<String> unchanged) {
            this.plan = plan;
            this.operators = operators;
            this.metadataTmp = metadataTmp;
            this.metadataBytes = metadataBytes;
            this.written = written;
            this.unchanged = unchanged;
        }
    }

    /** Decodes a plan and, if the native side staged it, what it wrote ({@code metadataTmp} null if not). */
    static Staged decodeStaged(byte[] bytes) throws CheckpointSurgeonException {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            if (in.readInt() != 0x43535031) {
                throw new CheckpointSurgeonException("JNI", "native plan has a wrong magic number");
            }
            String source = str(in), depth = str(in);
            long before = in.readLong(), after = in.readLong();
            int n = in.readInt();
            List<Change> changes = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                changes.add(new Change(str(in), in.readInt(), str(in), str(in), in.readLong(), in.readLong(), in.readLong()));
            }
            n = in.readInt();
            List<NewStream> streams = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                streams.add(new NewStream(str(in), str(in), in.readLong()));
            }
            int operators = in.readInt();
            SurgeryPlan plan = new SurgeryPlan(source, depth, before, after, List.copyOf(changes), List.copyOf(streams),
                    null);
            if (!in.readBoolean()) {
                return new Staged(plan, operators, null, 0, List.of(), List.of());
            }
            String tmp = str(in);
            long size = in.readLong();
            List<String> written = strs(in), unchanged = strs(in);
            return new Staged(plan, operators, tmp, size, written, unchanged);
        } catch (IOException e) {
            throw new CheckpointSurgeonException("JNI", "native plan is malformed: " + e, e);
        }
    }

    private static List<String> strs(DataInputStream in) throws IOException {
        int n = in.readInt();
        List<String> l = new ArrayList<>(n);
        for (int i = 0; i < n; i++) l.add(str(in));
        return List.copyOf(l);
    }

    private static String str(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
