package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateHandleStreamImpl;
import org.apache.flink.runtime.state.changelog.inmemory.InMemoryChangelogStateHandle;

import java.util.StringJoiner;

/**
 * {@link FlinkDescriber}'s text of the changelog keyed handles (codes 8/14, 9, 10/13) as Flink 1.15+
 * reads them; the shims of 1.15+ hand them here ({@code FlinkCompat.describeVersionSpecificKeyedHandle}).
 * Not compiled for 1.13 (no changelog handles) and 1.14 (their first layout, without state handle
 * ids or materialization id).
 */
final class ChangelogDescriber {
    private ChangelogDescriber() {}

    /** The text of a changelog handle, or null for any other kind. */
    static String describe(KeyedStateHandle h) {
        if (h instanceof ChangelogStateBackendHandle) {
            ChangelogStateBackendHandle c = (ChangelogStateBackendHandle) h;
            StringJoiner materialized = new StringJoiner(";", "[", "]");
            for (KeyedStateHandle m : c.getMaterializedStateHandles()) {
                materialized.add(FlinkDescriber.keyedHandle(m));
            }
            StringJoiner nonMaterialized = new StringJoiner(";", "[", "]");
            for (KeyedStateHandle n : c.getNonMaterializedStateHandles()) {
                nonMaterialized.add(FlinkDescriber.keyedHandle(n));
            }
            return "Changelog(range=" + FlinkDescriber.range(c) + ",materialized=" + materialized
                    + ",nonMaterialized=" + nonMaterialized
                    + ",materializationId=" + c.getMaterializationID() + ")";
        }
        if (h instanceof InMemoryChangelogStateHandle) {
            InMemoryChangelogStateHandle m = (InMemoryChangelogStateHandle) h;
            return "ChangelogInMemory(range=" + FlinkDescriber.range(m) + ",from=" + m.getFrom()
                    + ",to=" + m.getTo() + ",changes=" + m.getChanges().size() + ")";
        }
        if (h instanceof ChangelogStateHandleStreamImpl) {
            ChangelogStateHandleStreamImpl s = (ChangelogStateHandleStreamImpl) h;
            StringJoiner handles = new StringJoiner(";", "[", "]");
            s.getHandlesAndOffsets().forEach(t -> handles.add(t.f1 + "@" + FlinkDescriber.streamHandle(t.f0)));
            return "ChangelogFile(range=" + FlinkDescriber.range(s) + ",handles=" + handles + ")";
        }
        return null;
    }
}
