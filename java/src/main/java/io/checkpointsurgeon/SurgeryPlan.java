package io.checkpointsurgeon;

import io.checkpointsurgeon.internal.Json;
import java.util.List;

/**
 * What a surgery removes and writes; after {@code apply}, also what it wrote ({@link #result()}).
 */
public final class SurgeryPlan {
    /** How deep a removal goes; {@link #toString()} is its spelling in JSON and text. */
    public enum Depth {
        /** Removed states are cut out of the streams too (the default). */
        PURGE,
        /** Removed states are dropped from {@code _metadata}'s handle maps only ({@link Surgery#metadataOnly()}). */
        METADATA_ONLY;

        @Override
        public String toString() {
            return Spelling.of(this);
        }
    }

    private final String source;
    private final Depth depth;
    private final long metadataBytesBefore;
    private final long metadataBytesAfter;
    private final List<Change> changes;
    private final List<NewStream> newStreams;
    private final Result result;
    private final List<Relocation> relocated;
    private final KeyedFigures keyed;

    public SurgeryPlan(String source, Depth depth, long metadataBytesBefore, long metadataBytesAfter, List<Change> changes, List<NewStream> newStreams, Result result) {
        this(source, depth, metadataBytesBefore, metadataBytesAfter, changes, newStreams, result, List.of());
    }

    public SurgeryPlan(String source, Depth depth, long metadataBytesBefore, long metadataBytesAfter, List<Change> changes, List<NewStream> newStreams, Result result, List<Relocation> relocated) {
        this(source, depth, metadataBytesBefore, metadataBytesAfter, changes, newStreams, result, relocated, null);
    }

    public SurgeryPlan(String source, Depth depth, long metadataBytesBefore, long metadataBytesAfter, List<Change> changes, List<NewStream> newStreams, Result result, List<Relocation> relocated, KeyedFigures keyed) {
        this.keyed = keyed != null && keyed.bytesRead() == 0 && keyed.bytesWritten() == 0 ? null : keyed;
        this.relocated = relocated;
        this.source = source;
        this.depth = depth;
        this.metadataBytesBefore = metadataBytesBefore;
        this.metadataBytesAfter = metadataBytesAfter;
        this.changes = changes;
        this.newStreams = newStreams;
        this.result = result;
    }

    public String source() {
        return source;
    }

    public Depth depth() {
        return depth;
    }

    public long metadataBytesBefore() {
        return metadataBytesBefore;
    }

    public long metadataBytesAfter() {
        return metadataBytesAfter;
    }

    public List<Change> changes() {
        return changes;
    }

    public List<NewStream> newStreams() {
        return newStreams;
    }

    public Result result() {
        return result;
    }

    /** Every absolute path a relocation rewrote, old and new (empty for other surgeries). */
    public List<Relocation> relocated() {
        return relocated;
    }

    /** What a keyed surgery reads and writes of keyed state (null for other surgeries). */
    public KeyedFigures keyed() {
        return keyed;
    }

    /**
     * The bytes of keyed state a keyed surgery reads and writes: before {@code apply} the plan's
     * figures (a removal from a key-groups file is estimated), after it what the rewrite did; and
     * how many files it rewrites at once.
     */
    public static final class KeyedFigures extends Value {
        private final long bytesRead;
        private final long bytesWritten;
        private final int threads;

        public KeyedFigures(long bytesRead, long bytesWritten, int threads) {
            this.bytesRead = bytesRead;
            this.bytesWritten = bytesWritten;
            this.threads = threads;
        }

        public long bytesRead() {
            return bytesRead;
        }

        public long bytesWritten() {
            return bytesWritten;
        }

        public int threads() {
            return threads;
        }

        @Override
        Object[] components() {
            return new Object[] {"bytesRead", bytesRead, "bytesWritten", bytesWritten, "threads", threads};
        }
    }

    /** One absolute path a relocation rewrote. */
    public static final class Relocation {
        private final String oldPath;
        private final String newPath;

        public Relocation(String oldPath, String newPath) {
            this.oldPath = oldPath;
            this.newPath = newPath;
        }

        public String oldPath() {
            return oldPath;
        }

        public String newPath() {
            return newPath;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Relocation && oldPath.equals(((Relocation) o).oldPath)
                    && newPath.equals(((Relocation) o).newPath);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(oldPath, newPath);
        }

        @Override
        public String toString() {
            return oldPath + " -> " + newPath;
        }
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof SurgeryPlan)) return false;
        SurgeryPlan that = (SurgeryPlan) o;
        return java.util.Objects.equals(source, that.source) && java.util.Objects.equals(depth, that.depth) && java.util.Objects.equals(metadataBytesBefore, that.metadataBytesBefore) && java.util.Objects.equals(metadataBytesAfter, that.metadataBytesAfter) && java.util.Objects.equals(changes, that.changes) && java.util.Objects.equals(newStreams, that.newStreams) && java.util.Objects.equals(result, that.result) && java.util.Objects.equals(keyed, that.keyed);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(source, depth, metadataBytesBefore, metadataBytesAfter, changes, newStreams, result, keyed);
    }

    @Override
    public String toString() {
        return "SurgeryPlan[source=" + source + ", depth=" + depth + ", metadataBytesBefore=" + metadataBytesBefore + ", metadataBytesAfter=" + metadataBytesAfter + ", changes=" + changes + ", newStreams=" + newStreams + ", result=" + result + "]";
    }

    /**
     * One state handle (or operator) the surgery changes. {@code subtask} is -1 for a whole
     * operator (and for a relocation, which changes no operator).
     */
    public static final class Change extends Value {
        /**
         * What a change does (the Rust twin is {@code surgery::ChangeAction}, on the wire by its
         * spelling); {@link #toString()} is its spelling in JSON and text.
         */
        public enum Action {
            /** An operator state's header entry and elements cut out of its stream, and its name dropped. */
            PURGE_STATE,
            /** An operator state's name dropped from the handle map only ({@link Surgery#metadataOnly()}). */
            DROP_MAP_ENTRY,
            /** A union state's repeated elements cut out of its stream. */
            DEDUPE_UNION,
            REMOVE_OPERATOR,
            /** A new operator id (from a uid or given) or a new name. */
            RENAME_OPERATOR,
            REMOVE_KEYED_STATE,
            RENAME_KEYED_STATE,
            /** A Kafka source reader's splits written from FlinkKafkaConsumer's offsets. */
            KAFKA_SPLIT,
            /** A Kafka source's enumerator (coordinator) state written anew. */
            KAFKA_ENUMERATOR,
            KAFKA_DROP_SPLIT,
            KAFKA_SET_OFFSET,
            /** Absolute paths under one prefix moved under another. */
            RELOCATE,
            /** Unchanged state files referenced in the source directory instead of placed in the output. */
            REFERENCE_UNCHANGED;

            /** The action {@link #toString()} spells {@code spelling}; an unknown one throws {@link IllegalArgumentException}. */
            public static Action of(String spelling) {
                for (Action a : values()) {
                    if (a.toString().equals(spelling)) return a;
                }
                throw new IllegalArgumentException("a change action, found " + spelling);
            }

            @Override
            public String toString() {
                return Spelling.of(this);
            }
        }

        private final String operatorId;
        private final int subtask;
        private final String state;
        private final Action action;
        private final long elementsBefore;
        private final long elementsAfter;
        private final long bytesRemoved;
        private final String detail;

        public Change(String operatorId, int subtask, String state, Action action, long elementsBefore, long elementsAfter, long bytesRemoved, String detail) {
            this.detail = detail;
            this.operatorId = operatorId;
            this.subtask = subtask;
            this.state = state;
            this.action = action;
            this.elementsBefore = elementsBefore;
            this.elementsAfter = elementsAfter;
            this.bytesRemoved = bytesRemoved;
        }

        public String operatorId() {
            return operatorId;
        }

        public int subtask() {
            return subtask;
        }

        public String state() {
            return state;
        }

        public Action action() {
            return action;
        }

        public long elementsBefore() {
            return elementsBefore;
        }

        public long elementsAfter() {
            return elementsAfter;
        }

        public long bytesRemoved() {
            return bytesRemoved;
        }

        /** More about the change: a rename's old and new operator id; empty for most changes. */
        public String detail() {
            return detail;
        }

        @Override
        Object[] components() {
            return new Object[] {"operatorId", operatorId, "subtask", subtask, "state", state, "action", action,
                    "elementsBefore", elementsBefore, "elementsAfter", elementsAfter, "bytesRemoved", bytesRemoved,
                    "detail", detail};
        }
    }

    /** A rewritten state stream: a new file name, or empty for an inline stream in _metadata. */
    public static final class NewStream extends Value {
        private final String fileName;
        private final String replaces;
        private final long bytes;

        public NewStream(String fileName, String replaces, long bytes) {
            this.fileName = fileName;
            this.replaces = replaces;
            this.bytes = bytes;
        }

        public String fileName() {
            return fileName;
        }

        public String replaces() {
            return replaces;
        }

        public long bytes() {
            return bytes;
        }

        @Override
        Object[] components() {
            return new Object[] {"fileName", fileName, "replaces", replaces, "bytes", bytes};
        }
    }

    /**
     * How Flink's own loader judged a new file before it became visible: loaded, or not validated
     * (Flink is not on the class path). A file Flink rejects is never placed: the surgery fails.
     */
    public static final class Validation extends Value {
        public enum Status {
            LOADED_BY_FLINK, NOT_VALIDATED
        }

        private final Status status;
        private final String text;

        private Validation(Status status, String text) {
            this.status = status;
            this.text = text;
        }

        /** "loaded by Flink {@code flinkVersion}{@code detail}", e.g. detail ": 3 operators". */
        public static Validation loadedByFlink(String flinkVersion, String detail) {
            return new Validation(Status.LOADED_BY_FLINK, "loaded by Flink " + flinkVersion + detail);
        }

        /** "not validated: {@code reason}". */
        public static Validation notValidated(String reason) {
            return new Validation(Status.NOT_VALIDATED, "not validated: " + reason);
        }

        public Status status() {
            return status;
        }

        /** The status in words, with what Flink found or why it was not run. */
        public String text() {
            return text;
        }

        @Override
        Object[] components() {
            return new Object[] {"status", status, "text", text};
        }
    }

    /**
     * What {@code apply} wrote. {@code flinkValidation} says how Flink's own loader judged the
     * new {@code _metadata} ("loaded by Flink x.y: N operators", or why it was not run).
     */
    public static final class Result extends Value {
        private final String metadataPath;
        private final long metadataBytes;
        private final List<String> written;
        private final List<String> linked;
        private final List<String> copied;
        private final String backup;
        private final Validation validation;

        public Result(String metadataPath, long metadataBytes, List<String> written, List<String> linked, List<String> copied, String backup, Validation validation) {
            this.metadataPath = metadataPath;
            this.metadataBytes = metadataBytes;
            this.written = written;
            this.linked = linked;
            this.copied = copied;
            this.backup = backup;
            this.validation = validation;
        }

        public String metadataPath() {
            return metadataPath;
        }

        public long metadataBytes() {
            return metadataBytes;
        }

        public List<String> written() {
            return written;
        }

        public List<String> linked() {
            return linked;
        }

        public List<String> copied() {
            return copied;
        }

        public String backup() {
            return backup;
        }

        /** {@link #validation()} in words. */
        public String flinkValidation() {
            return validation.text();
        }

        /** How Flink's loader judged the new {@code _metadata}. */
        public Validation validation() {
            return validation;
        }

        @Override
        Object[] components() {
            // the text only, as JSON has always had it: it starts with the status's words
            return new Object[] {"metadataPath", metadataPath, "metadataBytes", metadataBytes, "written", written,
                    "linked", linked, "copied", copied, "backup", backup, "flinkValidation", validation.text()};
        }

    }

    public long elementsRemoved() {
        return changes.stream().mapToLong(c -> Math.max(0, c.elementsBefore() - c.elementsAfter())).sum();
    }

    public long bytesRemoved() {
        return changes.stream().mapToLong(c -> Math.max(0, c.bytesRemoved())).sum();
    }

    public String toJson() {
        return Json.write(this);
    }

    /** This plan with what {@code apply} wrote. */
    public SurgeryPlan withResult(Result r) {
        return new SurgeryPlan(source, depth, metadataBytesBefore, metadataBytesAfter, changes, newStreams, r, relocated, keyed);
    }
}
