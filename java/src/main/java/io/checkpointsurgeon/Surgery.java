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

    /** One operation; the native library gets it through {@link Wire#request}. */
    static final class Operation {
        /** The operation and its tag on the wire. */
        enum Kind {
            REMOVE_STATE(1), REMOVE_OPERATOR(2), DEDUPE_UNION(3), RENAME_OPERATOR(4), RELOCATE(5);

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
