package io.checkpointsurgeon;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What to do to a checkpoint: one or more operations on selected operators. Build it with the
 * static factories and chain more operations with {@code and...}; removal purges the state from
 * the streams unless {@link #metadataOnly()} is set.
 */
public final class Surgery {

    /** Which operators an operation applies to. */
    public static final class OperatorSelector {
        private final String kind;
        private final String value;

        public OperatorSelector(String kind, String value) {
            Objects.requireNonNull(kind, "kind");
            if (!List.of("all", "id", "uid", "name").contains(kind)) {
                throw new IllegalArgumentException("an operator selector is all, id, uid or name; got '" + kind + "'");
            }
            value = value == null ? "" : value;
            if (kind.equals("id") && !value.matches("[0-9A-Fa-f]{32}")) {
                throw new IllegalArgumentException("an operator id is 32 hex digits, as inspect prints it; got '"
                        + value + "'");
            }
            this.kind = kind;
            this.value = value;
        }

        public String kind() {
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
            return java.util.Objects.equals(kind, that.kind) && java.util.Objects.equals(value, that.value);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(kind, value);
        }

        /** Every operator that holds the state. */
        public static OperatorSelector all() {
            return new OperatorSelector("all", "");
        }

        /** The operator id as Flink prints it (32 hex digits). */
        public static OperatorSelector id(String hex) {
            return new OperatorSelector("id", hex);
        }

        /** The uid set with {@code .uid(...)} in the job; hashed to the operator id as Flink does. */
        public static OperatorSelector uid(String uid) {
            return new OperatorSelector("uid", uid);
        }

        /** The operator name (only Flink 2.x metadata stores it). */
        public static OperatorSelector name(String name) {
            return new OperatorSelector("name", name);
        }

        @Override
        public String toString() {
            return kind.equals("all") ? "all operators" : kind + " " + value;
        }

    }

    /**
     * A split's new starting offset for the Kafka surgery: an offset, one of the connector's
     * markers (earliest, latest, the group's committed offset), or a shift of the current offset.
     */
    public static final class KafkaStart {
        /** {@code KafkaPartitionSplit}'s markers. */
        public static final long EARLIEST = -2, LATEST = -1, COMMITTED = -3;

        final boolean shift;
        final long value;

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

    /** One operation; the native library gets it through {@link Wire#request}. */
    static final class Operation {
        /** The operation and its tag on the wire. */
        enum Kind {
            REMOVE_STATE(1), REMOVE_OPERATOR(2), DEDUPE_UNION(3), RENAME_OPERATOR(4), RELOCATE(5), KAFKA(6);

            final int tag;

            Kind(int tag) {
                this.tag = tag;
            }
        }

        final Kind kind;
        final OperatorSelector operators;
        /** remove-state, dedupe-union: the state name. */
        final String state;
        /** rename-operator: the new uid, or else the new operator id; and the new name (or null). */
        final String toUid, toOperatorId, toName;
        /** relocate: the old and the new path prefix. */
        final String from, to;
        /** relocate: a path outside {@code _metadata} (an HA file's pointer) was moved, so none inside must match. */
        final boolean outside;
        /** Kafka: the operation (0 migrate-legacy, 1 drop-topic, 2 set-offsets) and its arguments. */
        int kafkaOp;
        int enumeratorStateVersion;
        Integer parallelism, partition;
        String topic;
        KafkaStart start;

        private Operation(Kind kind, OperatorSelector operators, String state, String toUid, String toOperatorId,
                String toName) {
            this.kind = kind;
            this.operators = Objects.requireNonNull(operators, "operators");
            this.state = state;
            this.toUid = toUid;
            this.toOperatorId = toOperatorId;
            this.toName = toName;
            this.from = null;
            this.to = null;
            this.outside = false;
        }

        private Operation(String from, String to, boolean outside) {
            this.kind = Kind.RELOCATE;
            this.operators = OperatorSelector.all();
            this.state = null;
            this.toUid = null;
            this.toOperatorId = null;
            this.toName = null;
            this.from = from;
            this.to = to;
            this.outside = outside;
        }
    }

    private final List<Operation> operations = new ArrayList<>();
    private boolean metadataOnly;
    private boolean copyUnchangedFiles;
    private boolean referenceUnchangedFiles;
    /** The source directory the unchanged files are referenced in; set by the apply route. */
    private String referencedSource;

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
     * with a {@code newName} (null: keep it), which only Flink 2.x metadata stores.
     */
    public static Surgery rename(OperatorSelector operator, String newUid, String newOperatorId, String newName) {
        return new Surgery().andRenameOperator(operator, newUid, newOperatorId, newName);
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
        Operation op = kafka(operators, 0);
        op.enumeratorStateVersion = enumeratorStateVersion;
        op.parallelism = parallelism;
        op.start = offsetNotSet;
        return new Surgery().and(op);
    }

    /**
     * Removes a topic's splits (only partition {@code partition} when it is not null) from every
     * reader's {@code SourceReaderState} and from the enumerator state, so that a job that no
     * longer subscribes to the topic stops reading it (FLINK-34089).
     */
    public static Surgery dropKafkaTopic(OperatorSelector operators, String topic, Integer partition) {
        Operation op = kafka(operators, 1);
        op.topic = checkTopic(topic);
        op.partition = partition;
        return new Surgery().and(op);
    }

    /**
     * Sets the starting offset of a topic's splits (only partition {@code partition} when it is not
     * null) in the readers' state, and in the enumerator's where it holds offsets (version 3).
     */
    public static Surgery setKafkaOffsets(OperatorSelector operators, String topic, Integer partition, KafkaStart to) {
        Operation op = kafka(operators, 2);
        op.topic = checkTopic(topic);
        op.partition = partition;
        op.start = Objects.requireNonNull(to, "to");
        return new Surgery().and(op);
    }

    private static Operation kafka(OperatorSelector operators, int kafkaOp) {
        Operation op = new Operation(Operation.Kind.KAFKA, operators, null, null, null, null);
        op.kafkaOp = kafkaOp;
        return op;
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
        operations.add(new Operation(Operation.Kind.REMOVE_STATE, operators, checkName(stateName), null, null, null));
        return this;
    }

    public Surgery andRemoveOperator(OperatorSelector operator) {
        operations.add(new Operation(Operation.Kind.REMOVE_OPERATOR, operator, null, null, null, null));
        return this;
    }

    public Surgery andDedupeUnion(OperatorSelector operators, String stateName) {
        operations.add(new Operation(Operation.Kind.DEDUPE_UNION, operators, checkName(stateName), null, null, null));
        return this;
    }

    /**
     * Renames an operator: to {@code newUid}, or (when it is null) to {@code newOperatorId}; with a
     * {@code newName} (or null to keep it), which only Flink 2.x metadata stores.
     */
    public Surgery andRenameOperator(OperatorSelector operator, String newUid, String newOperatorId, String newName) {
        if ((newUid == null) == (newOperatorId == null)) {
            throw new IllegalArgumentException("give the new uid or the new operator id, not both");
        }
        if (newUid != null && newUid.isEmpty()) {
            throw new IllegalArgumentException("the new uid is empty");
        }
        if (newOperatorId != null) OperatorSelector.id(newOperatorId);
        operations.add(new Operation(Operation.Kind.RENAME_OPERATOR, operator, null, newUid, newOperatorId, newName));
        return this;
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
        operations.add(new Operation(fromPrefix, toPrefix, false));
        return this;
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

    boolean referencesUnchanged() {
        return referenceUnchangedFiles;
    }

    /**
     * This surgery with its {@code n}-th relocation marked as having moved a path outside
     * {@code _metadata} (an HA file's pointers), so that no path inside needs to match.
     */
    Surgery withOutsideRelocated(int n) {
        Surgery s = copy();
        int seen = 0;
        for (int i = 0; i < s.operations.size(); i++) {
            Operation op = s.operations.get(i);
            if (op.kind == Operation.Kind.RELOCATE && seen++ == n) {
                s.operations.set(i, new Operation(op.from, op.to, true));
            }
        }
        return s;
    }

    /** This surgery with the unchanged files referenced in {@code sourceDir} (a Flink path or {@code file:} URI). */
    Surgery referencing(String sourceDir) {
        Surgery s = copy();
        s.referenceUnchangedFiles = true;
        s.referencedSource = sourceDir;
        return s;
    }

    private Surgery copy() {
        Surgery s = new Surgery();
        s.operations.addAll(operations);
        s.metadataOnly = metadataOnly;
        s.copyUnchangedFiles = copyUnchangedFiles;
        s.referenceUnchangedFiles = referenceUnchangedFiles;
        s.referencedSource = referencedSource;
        return s;
    }

    String referencedSource() {
        return referencedSource;
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

    boolean copyUnchanged() {
        return copyUnchangedFiles;
    }

    boolean isMetadataOnly() {
        return metadataOnly;
    }

    /** The relocations of this surgery, in order: {from, to} each. */
    List<String[]> relocations() {
        List<String[]> r = new ArrayList<>();
        for (Operation op : operations) {
            if (op.kind == Operation.Kind.RELOCATE) r.add(new String[] {op.from, op.to});
        }
        return r;
    }

    List<Operation> operations() {
        return List.copyOf(operations);
    }

    private static String checkName(String s) {
        Objects.requireNonNull(s, "stateName");
        if (s.isEmpty()) throw new IllegalArgumentException("the state name is empty");
        return s;
    }
}
