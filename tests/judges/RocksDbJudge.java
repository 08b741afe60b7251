import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

/**
 * RocksDB's own judgement of a keyed surgery on a RocksDB handle, without a Flink job: each case
 * directory (written by {@code native/tests/keyed_surgery.rs}, test
 * {@code rocksdb_instances_for_the_judge}) holds the instance directory Flink would restore from
 * the input's handle ({@code before/}) and from the result's ({@code after/}), their column
 * families and the kept states. Both are opened as Flink opens them
 * ({@code RocksDBOperationUtils.openDB}: the default family first, then one per state of the meta
 * info, {@code create_missing_column_families} off, Flink's merge operator), with FRocksDB's JNI
 * jar of the Flink version that wrote the fixture. The result must open, RocksDB's own list of
 * column families must be exactly the meta info's, every key and value of each kept state must
 * be the input's (a digest over the whole family, in key order), and the instance must take a
 * write, a flush and a family created under a removed state's name (the new job registering the
 * state again) and open again.
 *
 * <p>Run by {@code tests/judges/run.sh}: {@code java -cp frocksdbjni.jar RocksDbJudge.java
 * CASE_DIR...}. Java 11+, no Flink on the class path.
 */
public class RocksDbJudge {

    public static void main(String[] args) throws Exception {
        RocksDB.loadLibrary();
        int failed = 0;
        for (String a : args) {
            Path c = Paths.get(a);
            try {
                System.out.println("ok   " + c.getFileName() + ": " + judge(c));
            } catch (Exception | AssertionError e) {
                failed++;
                System.out.println("FAIL " + c.getFileName() + ": " + e);
            }
        }
        System.out.println((args.length - failed) + " of " + args.length + " cases passed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static String judge(Path c) throws Exception {
        List<String> before = lines(c.resolve("before.cfs"));
        List<String> after = lines(c.resolve("after.cfs"));
        Map<String, String> kept = new LinkedHashMap<>();
        for (String l : lines(c.resolve("kept"))) {
            String[] p = l.split("\t", 2);
            kept.put(p[0], p[1]);
        }
        Map<String, String> old = digests(c.resolve("before"), before);
        // RocksDB's own list of the families in the result: default and the meta info's
        Set<String> listed = new HashSet<>();
        try (Options o = new Options()) {
            for (byte[] n : RocksDB.listColumnFamilies(o, c.resolve("after").toString())) {
                listed.add(new String(n, StandardCharsets.UTF_8));
            }
        }
        Set<String> expected = new HashSet<>(after);
        expected.add("default");
        check(listed.equals(expected), "RocksDB lists " + listed + ", the meta info " + expected);
        Map<String, String> now = digests(c.resolve("after"), after);
        long keys = 0;
        for (Map.Entry<String, String> k : kept.entrySet()) {
            String was = old.get(k.getKey());
            String is = now.get(k.getValue());
            check(was.equals(is), k.getKey() + " -> " + k.getValue() + ": " + was + " != " + is);
            keys += Long.parseLong(is.split(" ")[0]);
        }
        List<String> gone = new ArrayList<>(before);
        gone.removeAll(kept.keySet());
        reopenAndWrite(c.resolve("after"), after, gone);
        return kept.size() + " families with " + keys + " keys as they were, "
                + (before.size() - kept.size()) + " gone " + gone + ", " + listed.size()
                + " listed by RocksDB";
    }

    /** Per family: "count sha256" of every key and value, in key order. */
    static Map<String, String> digests(Path dir, List<String> cfs) throws Exception {
        Map<String, String> out = new LinkedHashMap<>();
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions db = new DBOptions().setCreateIfMissing(false);
                ColumnFamilyOptions cfo = new ColumnFamilyOptions().setMergeOperatorName("stringappendtest");
                RocksDB r = RocksDB.open(db, dir.toString(), descriptors(cfs, cfo), handles)) {
            for (int i = 0; i < cfs.size(); i++) {
                MessageDigest md = MessageDigest.getInstance("SHA-256");
                long n = 0;
                try (RocksIterator it = r.newIterator(handles.get(i + 1))) {
                    for (it.seekToFirst(); it.isValid(); it.next()) {
                        md.update(it.key());
                        md.update(it.value());
                        n++;
                    }
                }
                StringBuilder h = new StringBuilder();
                for (byte b : Arrays.copyOf(md.digest(), 8)) {
                    h.append(String.format("%02x", b));
                }
                out.put(cfs.get(i), n + " " + h);
            }
            handles.forEach(ColumnFamilyHandle::close);
        }
        return out;
    }

    /** A write, a flush and the removed states registered again as new families; then it opens. */
    static void reopenAndWrite(Path dir, List<String> cfs, List<String> gone) throws Exception {
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        try (DBOptions db = new DBOptions();
                ColumnFamilyOptions cfo = new ColumnFamilyOptions().setMergeOperatorName("stringappendtest");
                RocksDB r = RocksDB.open(db, dir.toString(), descriptors(cfs, cfo), handles)) {
            for (String g : gone) {
                handles.add(r.createColumnFamily(
                        new ColumnFamilyDescriptor(g.getBytes(StandardCharsets.UTF_8), cfo)));
            }
            r.put(handles.get(handles.size() - 1), new byte[] {1, 2}, new byte[] {3});
            try (FlushOptions f = new FlushOptions().setWaitForFlush(true)) {
                r.flush(f, handles.subList(1, handles.size()));
            }
            handles.forEach(ColumnFamilyHandle::close);
        }
        List<String> all = new ArrayList<>(cfs);
        all.addAll(gone);
        digests(dir, all);
    }

    static List<ColumnFamilyDescriptor> descriptors(List<String> cfs, ColumnFamilyOptions o) {
        return Stream.concat(Stream.of("default"), cfs.stream())
                .map(n -> new ColumnFamilyDescriptor(n.getBytes(StandardCharsets.UTF_8), o))
                .collect(Collectors.toList());
    }

    static List<String> lines(Path p) throws Exception {
        return Files.readAllLines(p, StandardCharsets.UTF_8).stream()
                .filter(l -> !l.isEmpty())
                .collect(Collectors.toList());
    }

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }
}
