package io.checkpointsurgeon.flink;

import org.apache.flink.runtime.state.StateHandleID;
import org.apache.flink.runtime.state.StreamStateHandle;

import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The shared and private state of an IncrementalRemoteKeyedStateHandle as the Flink lines before
 * 1.18 keep it (maps by StateHandleID), converted from and to the entry lists of {@link FlinkCompat}.
 */
final class HandleMaps {
    private HandleMaps() {}

    static List<Map.Entry<String, StreamStateHandle>> entries(Map<StateHandleID, StreamStateHandle> map) {
        List<Map.Entry<String, StreamStateHandle>> out = new ArrayList<>(map.size());
        for (Map.Entry<StateHandleID, StreamStateHandle> e : map.entrySet()) {
            out.add(new AbstractMap.SimpleImmutableEntry<>(e.getKey().getKeyString(), e.getValue()));
        }
        return out;
    }

    /** Keys must be unique. */
    static Map<StateHandleID, StreamStateHandle> handleMap(List<Map.Entry<String, StreamStateHandle>> entries) {
        Map<StateHandleID, StreamStateHandle> out = new HashMap<>();
        for (Map.Entry<String, StreamStateHandle> e : entries) {
            out.put(new StateHandleID(e.getKey()), e.getValue());
        }
        return out;
    }
}
