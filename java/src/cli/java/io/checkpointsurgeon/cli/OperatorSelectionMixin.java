package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Option;

/** Which operators: by uid, id or name; all operators when none is given (state commands only). */
final class OperatorSelectionMixin {
    @Option(names = "--uid", paramLabel = "UID", description = "the operator's uid as set in the job")
    String uid;

    @Option(names = "--operator-id", paramLabel = "HEX", description = "the operator id (32 hex digits)")
    String id;

    @Option(names = "--operator-name", paramLabel = "NAME", description = "the operator name (Flink 2.x metadata)")
    String name;

    /** Whether an operator was named. */
    boolean given() {
        return uid != null || id != null || name != null;
    }

    Surgery.OperatorSelector selector(boolean allowAll) {
        int given = (uid != null ? 1 : 0) + (id != null ? 1 : 0) + (name != null ? 1 : 0);
        if (given > 1) throw new IllegalArgumentException("give at most one of --uid, --operator-id, --operator-name");
        if (uid != null) return Surgery.OperatorSelector.uid(uid);
        if (id != null) return Surgery.OperatorSelector.id(id);
        if (name != null) return Surgery.OperatorSelector.name(name);
        if (!allowAll) throw new IllegalArgumentException("give one of --uid, --operator-id, --operator-name");
        return Surgery.OperatorSelector.all();
    }
}
