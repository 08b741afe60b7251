package io.checkpointsurgeon;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What to do to a checkpoint: one or more operations on selected operators. Build it with the
 * static factories and chain more operations with {@code and...}; removal purges the state from
 * the streams unless {@link #metadataOnly()} is set.
 */
public final class Surgery {

    /** Which operators an operation applies to. */
    public static final class OperatorSelector {
        /** How a selector names its operators; {@link #toString()} is the kind's name in messages. */
        public enum Kind {
            /** Every operator that holds the state. */
            ALL,
            /** The operator id (32 hex digits). */
            ID,
            /** The uid set in the job, hashed to the operator id as Flink does. */
            UID,
            /** The operator name (Flink 2.x metadata only). */
            NAME;

            @Override
            public String toString() {
                return Spelling.of(this);
            }
        }

        private final Kind kind;
        private final String value;

        public OperatorSelector(Kind kind, String value) {
            Objects.requireNonNull(kind, "kind");
            value = value == null ? "" : value;
            if (kind == Kind.ID && !value.matches("[0-9A-Fa-f]{32}")) {
                throw new IllegalArgumentException("an operator id is 32 hex digits, as inspect prints it; got '"
                        + value + "'");
            }
            this.kind = kind;
            this.value = value;
        }

        public Kind kind() {
            return kind;
        }

        public String value() {
            return value;
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof OperatorSelector)) return false;
            OperatorSelector that = (OperatorSelector) o;
            return kind == that.kind && value.equals(that.value);
        }

        @Override
        public int hashCode() {
            return Objects.hash(kind, value);
        }

        /** Every operator that holds the state. */
        public static OperatorSelector all() {
            return new OperatorSelector(Kind.ALL, "");
        }

        /** The operator id as Flink prints it (32 hex digits). */
        public static OperatorSelector id(String hex) {
            return new OperatorSelector(Kind.ID, hex);
        }

        /** The uid set with {@code .uid(...)} in the job; hashed to the operator id as Flink does. */
        public static OperatorSelector uid(String uid) {
            return new OperatorSelector(Kind.UID, uid);
        }

        /** The operator name (only Flink 2.x metadata stores it). */
        public static OperatorSelector name(String name) {
            return new OperatorSelector(Kind.NAME, name);
        }

        @Override
        public String toString() {
            return kind == Kind.ALL ? "all operators" : kind + " " + value;
        }

    }

    /**
     * A split's new starting offset for the Kafka surgery: an offset, one of the connector's
     * markers (earliest, latest, the group's committed offset), or a shift of the current offset.
     */
    public static final class KafkaStart {
        /** {@code KafkaPartitionSplit}'s markers. */
        public static final long EARLIEST = -2, LATEST = -1, COMMITTED = -3;

        private final boolean shift;
        private final long value;

        private KafkaStart(boolean shift, long value) {
            this.shift = shift;
            this.value = value;
        }

        /** Start at this offset (the first record read is the one at {@code offset}). */
        public static KafkaStart at(long offset) {
            if (offset < 0) throw new IllegalArgumentException("an offset is >= 0; got " + offset);
            return new KafkaStart(false, offset);
        }

        public static KafkaStart earliest() {
            return new KafkaStart(false, EARLIEST);
        }

        public static KafkaStart latest() {
            return new KafkaStart(false, LATEST);
        }

        public static KafkaStart committed() {
            return new KafkaStart(false, COMMITTED);
        }

        /** The current offset plus {@code delta} (refused for a split that starts at a marker). */
        public static KafkaStart shift(long delta) {
            return new KafkaStart(true, delta);
        }

        /** Whether this moves the current offset by {@link #value()} instead of setting it. */
        public boolean isShift() {
            return shift;
        }

        /** The offset, a marker ({@link #EARLIEST}, {@link #LATEST}, {@link #COMMITTED}) or the shift. */
        public long value() {
            return value;
        }

        /** {@code earliest}, {@code latest} or {@code committed}. */
        public static KafkaStart marker(String name) {
            switch (name) {
                case "earliest":
                    return earliest();
                case "latest":
                    return latest();
                case "committed":
                    return committed();
                default:
                    throw new IllegalArgumentException("a starting offset marker is earliest, latest or committed; got '"
                            + name + "'");
            }
        }

        @Override
        public String toString() {
            if (shift) return (value >= 0 ? "+" : "") + value;
            return value == EARLIEST ? "earliest" : value == LATEST ? "latest" : value == COMMITTED ? "committed"
                    : Long.toString(value);
        }
    }

    /**
     * What a surgery consists of, one call per operation in the order they were added, with the
     * arguments of the factory that added it ({@link #accept}). The wire encodes a surgery this
     * way, and an application can describe one.
     */
    public interface Visitor {
        void removeState(OperatorSelector operators, String state);

        void removeOperator(OperatorSelector operator);

        void dedupeUnion(OperatorSelector operators, String state);

        /** {@code newUid} or, when it is null, {@code newOperatorId}; {@code newName} may be null. */
        void renameOperator(OperatorSelector operator, String newUid, String newOperatorId, String newName);

        void relocate(String fromPrefix, String toPrefix);

        /** {@code parallelism} and {@code offsetNotSet} may be null. */
        void migrateKafkaLegacy(OperatorSelector operators, int enumeratorStateVersion, Integer parallelism,
                KafkaStart offsetNotSet);

        /** {@code partition} may be null (every partition). */
        void dropKafkaTopic(OperatorSelector operators, String topic, Integer partition);

        /** {@code partition} may be null (every partition). */
        void setKafkaOffsets(OperatorSelector operators, String topic, Integer partition, KafkaStart to);

        void removeKeyedState(OperatorSelector operators, String state);

        void renameKeyedState(OperatorSelector operators, String state, String newName);
    }

    /** One operation: a call of {@link Visitor} to replay. */
    private interface Operation {
        void replay(Visitor v);
    }

    private final List<Operation> operations = new ArrayList<>();
    private boolean metadataOnly;
    private boolean copyUnchangedFiles;
    private boolean referenceUnchangedFiles;
    private Integer threads;

    private Surgery() {}

    /** Removes the named operator state (list, union or broadcast) from the selected operators. */
    public static Surgery removeState(OperatorSelector operators, String stateName) {
        return new Surgery().andRemoveState(operators, stateName);
    }

    /** Removes the selected operator with all its state. */
    public static Surgery removeOperator(OperatorSelector operator) {
        return new Surgery().andRemoveOperator(operator);
    }

    /** Keeps exactly one copy of each distinct element of a union state. */
    public static Surgery dedupeUnion(OperatorSelector operators, String stateName) {
        return new Surgery().andDedupeUnion(operators, stateName);
    }

    /**
     * Gives the selected operator the id of {@code newUid} (Flink's hash of it) and, in Flink 2.x
     * metadata, the stored uid. All its state moves with it: every subtask's operator, keyed and
     * channel state, the coordinator state (a FLIP-27 source's enumerator) and the finished markers.
     */
    public static Surgery renameOperator(OperatorSelector operator, String newUid) {
        return rename(operator, newUid, null, null);
    }

    /**
     * Renames the selected operator to {@code newUid} or, when it is null, to {@code newOperatorId};
     * with a {@code newName} (null: keep it), which only Flink 2.x metadata stores. With only a
     * {@code newName}, the operator keeps its id and uid.
     */
    public static Surgery rename(OperatorSelector operator, String newUid, String newOperatorId, String newName) {
        return new Surgery().andRenameOperator(operator, newUid, newOperatorId, newName);
    }

    /**
     * The renames of a map file: lines {@code OLD NEW}, OLD an operator id (32 hex digits, as
     * inspect prints it) or a uid, NEW the new uid; separated by a tab, or by spaces when neither
     * contains one; blank lines and lines starting with {@code #} are skipped. Two lines with one
     * target are refused (two operators cannot share an id), naming both lines.
     */
    public static Surgery renameOperators(Path mapFile) throws CheckpointSurgeonException {
        List<String> lines;
        try {
            lines = Files.readAllLines(mapFile);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, mapFile + ": " + e, e);
        }
        Surgery s = null;
        Map<String, Integer> targets = new HashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.indexOf('\t') >= 0 ? line.split("\t", 2) : line.split("\\s+", 2);
            if (f.length != 2 || f[0].isEmpty() || f[1].strip().isEmpty()) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, mapFile + " line "
                        + (i + 1) + ": expected 'OLD NEW' (an operator id or uid, then the new uid), found '" + line + "'");
            }
            String target = f[1].strip();
            Integer before = targets.put(target, i + 1);
            if (before != null) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, mapFile + " line "
                        + (i + 1) + ": uid '" + target + "' is also the target of line " + before
                        + "; two operators cannot share an id");
            }
            OperatorSelector from = f[0].matches("[0-9A-Fa-f]{32}") ? OperatorSelector.id(f[0]) : OperatorSelector.uid(f[0]);
            s = s == null ? renameOperator(from, target) : s.andRenameOperator(from, target, null, null);
        }
        if (s == null) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, mapFile
                    + ": no 'OLD NEW' line");
        }
        return s;
    }

    // ---- Keyed state

    /**
     * Removes the keyed state {@code stateName} (value, list, map, reducing, aggregating state or a
     * timer queue) from the selected operators: its meta info and every entry of it, in every kind
     * of keyed snapshot (canonical savepoints, heap checkpoints, RocksDB native savepoints and
     * incremental checkpoints: there its column family is dropped in the instance's MANIFEST and
     * its SST files leave the handle). The operator's other keyed states, timers and operator state
     * stay as they are. Changelog handles are refused (take a savepoint first).
     */
    public static Surgery removeKeyedState(OperatorSelector operators, String stateName) {
        return new Surgery().andRemoveKeyedState(operators, stateName);
    }

    /**
     * Renames the keyed state {@code stateName} of the selected operators to {@code newName}, so
     * that a job registering {@code newName} with the old type reads every old value.
     */
    public static Surgery renameKeyedState(OperatorSelector operators, String stateName, String newName) {
        return new Surgery().andRenameKeyedState(operators, stateName, newName);
    }

    public Surgery andRemoveKeyedState(OperatorSelector operators, String stateName) {
        checkName(stateName);
        Objects.requireNonNull(operators, "operators");
        return and(v -> v.removeKeyedState(operators, stateName));
    }

    public Surgery andRenameKeyedState(OperatorSelector operators, String stateName, String newName) {
        checkName(stateName);
        checkName(newName);
        Objects.requireNonNull(operators, "operators");
        if (stateName.equals(newName)) throw new IllegalArgumentException("the new name is the old one: " + newName);
        return and(v -> v.renameKeyedState(operators, stateName, newName));
    }

    /**
     * How many keyed state files a keyed surgery rewrites at once (each in bounded memory); the
     * default is the machine's core count.
     */
    public Surgery threads(int threads) {
        if (threads < 1) throw new IllegalArgumentException("threads is at least 1; got " + threads);
        this.threads = threads;
        return this;
    }

    /** The threads set with {@link #threads(int)}, or null for one per core. */
    public Integer threadCount() {
        return threads;
    }

    // ---- Kafka

    /**
     * The {@code KafkaSourceEnumStateSerializer} version that a Kafka connector line writes: 1 for
     * the connector bundled with Flink 1.14 to 1.16 and for 3.0, 2 for 3.1 to 4.0, 3 for 5.0 and
     * later. {@code connector} is a connector version as Maven names it (1.15.4, 3.4.0-1.20,
     * 5.0.0-2.2).
     */
    public static int kafkaEnumeratorStateVersion(String connector) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)\\.(\\d+)([.-].*)?").matcher(connector.trim());
        if (m.matches()) {
            int major = Integer.parseInt(m.group(1)), minor = Integer.parseInt(m.group(2));
            if (major == 1 && minor >= 14 && minor <= 16 || major == 3 && minor == 0) return 1;
            if (major == 3 || major == 4 && minor == 0) return 2;
            if (major >= 4) return 3;
        }
        throw new IllegalArgumentException("'" + connector + "' is not a Kafka connector version such as 1.15.4"
                + " (bundled with Flink 1.14-1.16), 3.4.0-1.20 or 5.0.0-2.2");
    }

    /**
     * The enumerator state version of the Kafka connector on the class path of {@code loader}
     * ({@code KafkaSourceEnumStateSerializer.getVersion()}), or -1 if the connector is not there.
     */
    public static int detectKafkaEnumeratorStateVersion(ClassLoader loader) {
        try {
            Class<?> c = Class.forName("org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumStateSerializer",
                    false, loader);
            return (Integer) c.getMethod("getVersion").invoke(c.getConstructor().newInstance());
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            return -1;
        }
    }

    /**
     * Turns the FlinkKafkaConsumer state ({@code topic-partition-offset-states}) of the selected
     * operators into KafkaSource state: one split per partition, starting at the offset after the
     * last one processed, in the {@code SourceReaderState} of the reader the KafkaSource enumerator
     * assigns it to for {@code parallelism} readers (null: the operator's parallelism), and the
     * enumerator's state of version {@code enumeratorStateVersion} in the coordinator state. The
     * legacy state is purged. {@code offsetNotSet} maps the legacy OFFSET_NOT_SET (null: refuse it).
     */
    public static Surgery migrateKafkaLegacy(OperatorSelector operators, int enumeratorStateVersion, Integer parallelism,
            KafkaStart offsetNotSet) {
        if (offsetNotSet != null && (offsetNotSet.shift || offsetNotSet.value >= 0)) {
            throw new IllegalArgumentException("OFFSET_NOT_SET maps onto earliest, latest or committed");
        }
        if (parallelism != null && parallelism < 1) throw new IllegalArgumentException("parallelism " + parallelism);
        Objects.requireNonNull(operators, "operators");
        return new Surgery().and(v -> v.migrateKafkaLegacy(operators, enumeratorStateVersion, parallelism, offsetNotSet));
    }

    /**
     * Removes a topic's splits (only partition {@code partition} when it is not null) from every
     * reader's {@code SourceReaderState} and from the enumerator state, so that a job that no
     * longer subscribes to the topic stops reading it (FLINK-34089).
     */
    public static Surgery dropKafkaTopic(OperatorSelector operators, String topic, Integer partition) {
        Objects.requireNonNull(operators, "operators");
        checkTopic(topic);
        return new Surgery().and(v -> v.dropKafkaTopic(operators, topic, partition));
    }

    /**
     * Sets the starting offset of a topic's splits (only partition {@code partition} when it is not
     * null) in the readers' state, and in the enumerator's where it holds offsets (version 3).
     */
    public static Surgery setKafkaOffsets(OperatorSelector operators, String topic, Integer partition, KafkaStart to) {
        Objects.requireNonNull(operators, "operators");
        checkTopic(topic);
        Objects.requireNonNull(to, "to");
        return new Surgery().and(v -> v.setKafkaOffsets(operators, topic, partition, to));
    }

    private Surgery and(Operation op) {
        operations.add(op);
        return this;
    }

    private static String checkTopic(String topic) {
        Objects.requireNonNull(topic, "topic");
        if (topic.isEmpty()) throw new IllegalArgumentException("the topic is empty");
        return topic;
    }

    public Surgery andRemoveState(OperatorSelector operators, String stateName) {
        checkName(stateName);
        Objects.requireNonNull(operators, "operators");
        return and(v -> v.removeState(operators, stateName));
    }

    public Surgery andRemoveOperator(OperatorSelector operator) {
        Objects.requireNonNull(operator, "operators");
        return and(v -> v.removeOperator(operator));
    }

    public Surgery andDedupeUnion(OperatorSelector operators, String stateName) {
        checkName(stateName);
        Objects.requireNonNull(operators, "operators");
        return and(v -> v.dedupeUnion(operators, stateName));
    }

    /**
     * Renames an operator: to {@code newUid}, or (when it is null) to {@code newOperatorId}; with a
     * {@code newName} (or null to keep it), which only Flink 2.x metadata (V5+) stores. With both
     * null, only the name changes (the id and uid stay); metadata below V5 refuses that.
     */
    public Surgery andRenameOperator(OperatorSelector operator, String newUid, String newOperatorId, String newName) {
        if (newUid != null && newOperatorId != null) {
            throw new IllegalArgumentException("give the new uid or the new operator id, not both");
        }
        if (newUid == null && newOperatorId == null && newName == null) {
            throw new IllegalArgumentException("give a new uid, a new operator id or a new name");
        }
        if (newUid != null && newUid.isEmpty()) {
            throw new IllegalArgumentException("the new uid is empty");
        }
        if (newOperatorId != null) OperatorSelector.id(newOperatorId);
        Objects.requireNonNull(operator, "operators");
        return and(v -> v.renameOperator(operator, newUid, newOperatorId, newName));
    }

    /**
     * Relocation: every absolute path of the checkpoint under {@code fromPrefix} (file handles,
     * incremental RocksDB shared and private files, changelog files, file-merging segments and
     * directories) moves under {@code toPrefix}, for a checkpoint that was copied or moved. A local
     * prefix without a scheme also matches Flink's {@code file:} URIs. Relative handles need
     * nothing.
     */
    public static Surgery relocate(String fromPrefix, String toPrefix) {
        return new Surgery().andRelocate(fromPrefix, toPrefix);
    }

    public Surgery andRelocate(String fromPrefix, String toPrefix) {
        Objects.requireNonNull(fromPrefix, "fromPrefix");
        Objects.requireNonNull(toPrefix, "toPrefix");
        return and(v -> v.relocate(fromPrefix, toPrefix));
    }

    /**
     * For a new output directory: the unchanged relative state files are not linked or copied
     * into it; the new {@code _metadata} references them where they are (absolute file handles),
     * so only rewritten bytes move. The new checkpoint then depends on the old directory.
     */
    public Surgery referenceUnchangedFiles() {
        referenceUnchangedFiles = true;
        return this;
    }

    /** Whether the unchanged files are to be referenced where they are ({@link #referenceUnchangedFiles()}). */
    public boolean referencesUnchangedFiles() {
        return referenceUnchangedFiles;
    }

    /**
     * Drop removed states from the handle maps only; the streams keep them in their headers, so
     * Flink re-registers them empty and still needs their serializer classes.
     */
    public Surgery metadataOnly() {
        metadataOnly = true;
        return this;
    }

    /** Copy unchanged relative state files into a new output directory instead of hard-linking. */
    public Surgery copyUnchangedFiles() {
        copyUnchangedFiles = true;
        return this;
    }

    /** Whether unchanged files are copied rather than linked ({@link #copyUnchangedFiles()}). */
    public boolean copiesUnchangedFiles() {
        return copyUnchangedFiles;
    }

    /** Whether removed states are dropped from the handle maps only ({@link #metadataOnly()}). */
    public boolean isMetadataOnly() {
        return metadataOnly;
    }

    /** Replays the operations of this surgery, in the order they were added, on {@code visitor}. */
    public void accept(Visitor visitor) {
        for (Operation op : operations) op.replay(visitor);
    }

    private static String checkName(String s) {
        Objects.requireNonNull(s, "stateName");
        if (s.isEmpty()) throw new IllegalArgumentException("the state name is empty");
        return s;
    }
}
