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
            value = value == null ? "" : value;
            if (value.indexOf('\t') >= 0 || value.indexOf('\n') >= 0) {
                throw new IllegalArgumentException("selector contains a tab or newline: " + value);
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
            if (hex == null || !hex.matches("[0-9A-Fa-f]{32}")) {
                throw new IllegalArgumentException("an operator id is 32 hex digits, as inspect prints it; got '"
                        + hex + "'");
            }
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

    private final List<String> lines = new ArrayList<>();
    private boolean metadataOnly;
    private boolean copyUnchangedFiles;

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

    public Surgery andRemoveState(OperatorSelector operators, String stateName) {
        lines.add("remove-state\t" + operators.kind() + "\t" + operators.value() + "\t" + checkName(stateName));
        return this;
    }

    public Surgery andRemoveOperator(OperatorSelector operator) {
        lines.add("remove-operator\t" + operator.kind() + "\t" + operator.value());
        return this;
    }

    public Surgery andDedupeUnion(OperatorSelector operators, String stateName) {
        lines.add("dedupe-union\t" + operators.kind() + "\t" + operators.value() + "\t" + checkName(stateName));
        return this;
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

    String encode() {
        return "depth\t" + (metadataOnly ? "metadata-only" : "purge") + "\n" + String.join("\n", lines) + "\n";
    }

    private static String checkName(String s) {
        Objects.requireNonNull(s, "stateName");
        if (s.isEmpty() || s.indexOf('\t') >= 0 || s.indexOf('\n') >= 0) {
            throw new IllegalArgumentException("invalid state name: '" + s + "'");
        }
        return s;
    }
}
