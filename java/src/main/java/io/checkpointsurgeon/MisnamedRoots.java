package io.checkpointsurgeon;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code orphans} guard against roots named differently than the job named its storage
 * ({@code hdfs:///cp} vs {@code hdfs://nn:8020/cp}, a volume mounted at another path, a copied
 * checkpoint with absolute handles): then no reference matches a listed file and every file looks
 * unreferenced. Flink names state files by random UUIDs, so a listed file with the last two path
 * components of an unmatched reference ({@code shared/<uuid>}) is that file under another name.
 * One set and one map over the listed files, built once per scan.
 */
final class MisnamedRoots {
    private final Set<String> listed = new HashSet<>();
    private final Map<String, String> bySuffix = new HashMap<>();
    private final Map<String, List<String>> refs = new LinkedHashMap<>();

    /** A listed file: {@code key} as references are compared, {@code path} as the report shows it. */
    void listed(String key, String path) {
        listed.add(key);
        String s = suffix(key);
        if (s != null) bySuffix.putIfAbsent(s, path);
    }

    /** A file reference of {@code metadata}, as it is compared with listed keys. */
    void reference(String metadata, String key) {
        refs.computeIfAbsent(metadata, m -> new ArrayList<>()).add(key);
    }

    /** Adds a blocker per {@code _metadata} with an unmatched reference that a listed file matches by suffix. */
    void addBlockers(List<Message> blockers) {
        for (Map.Entry<String, List<String>> e : refs.entrySet()) {
            int unmatched = 0;
            String ref = null;
            String as = null;
            for (String r : e.getValue()) {
                if (listed.contains(r)) continue;
                unmatched++;
                String s = ref == null ? suffix(r) : null;
                if (s != null && bySuffix.containsKey(s)) {
                    ref = r;
                    as = bySuffix.get(s);
                }
            }
            if (ref == null) continue;
            blockers.add(Message.of(e.getKey() + " references " + ref + (unmatched > 1 ? " (and " + (unmatched - 1)
                    + " more of its " + e.getValue().size() + " files)" : "") + ", not under the roots as given, yet they hold "
                    + as + ": the roots name the storage differently than the job does; give the roots as the job names"
                    + " them, or run where its paths match"));
        }
    }

    /** The last two components of a path ({@code shared/<uuid>}), or null. */
    static String suffix(String path) {
        int i = path.lastIndexOf('/');
        if (i <= 0 || i == path.length() - 1) return null;
        int j = path.lastIndexOf('/', i - 1);
        return i - j > 1 ? path.substring(j + 1) : null;
    }
}
