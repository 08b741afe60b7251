package io.checkpointsurgeon.keyed;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.fixtures.KeyedStateJob;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.LiveFileMetaData;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.SstFileReader;

import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

/**
 * The keyed-state report judged by Flink and by RocksDB:
 * <ul>
 * <li>canonical savepoints and heap checkpoints (the keyed fixtures of this Flink version): every
 * state's entries equal what the State Processor API reads from the same files;</li>
 * <li>RocksDB incremental checkpoints that {@link KeyedStateJob} writes here (v1, several retained
 * checkpoints sharing SST files): every state's figures equal what RocksDB reports for the instance
 * made of the checkpoint's files (its live files' table properties, {@code rocksdb.estimate-num-keys}),
 * and after RocksDB compacts a copy of it completely, its entries equal the State Processor API's:
 * the difference is the versions and tombstones compaction removes;</li>
 * <li>the stale keyed state end to end: v2 of the job, which no longer registers
 * {@value KeyedStateJob#DROPPED}, restores from v1 and checkpoints; {@code doctor --expect-states}
 * names the state and {@code history --keyed} shows it carried through every checkpoint.</li>
 * </ul>
 */
public class KeyedStateJudgeTest {
    private static final int MAX_PARALLELISM = 32;
    private static Path work;
    private static MiniClusterJob.Result v1;
    private static MiniClusterJob.Result v2;
    private static final List<String> LOG = new ArrayList<>();

    @BeforeClass
    public static void runV1AndV2() throws Exception {
        work = Files.createTempDirectory("keyed-judge");
        v1 = run("keyed-v1", null, false, 3);
        v2 = run("keyed-v2", v1.checkpoint(), true, 2);
    }

    @AfterClass
    public static void cleanUp() throws Exception {
        System.out.println("keyed judge on Flink " + System.getProperty("flink.version") + ": " + LOG);
        if (work != null) TestFiles.deleteRecursively(work);
    }

    /** KeyedStateJob (v1 or v2) with RocksDB incremental checkpoints every 300 ms, the newest 3 retained. */
    private static MiniClusterJob.Result run(String tag, String restoreFrom, boolean isV2, int checkpoints)
            throws Exception {
        Configuration c = FlinkConf.checkpointing("rocksdb",
                Files.createDirectories(work.resolve(tag).resolve("checkpoints")).toUri().toString(),
                Files.createDirectories(work.resolve(tag).resolve("savepoints")).toUri().toString(), "300 ms", 3);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.inlineThreshold(c, "0");
        FlinkConf.noRestarts(c);
        if (restoreFrom != null) FlinkConf.restoreFrom(c, restoreFrom);
        MiniClusterJob.Result r = MiniClusterJob.of(tag, c, 1,
                env -> KeyedStateJob.topology(env, 1, MAX_PARALLELISM, isV2))
                .checkpointsAfterReady(checkpoints).timeout(java.time.Duration.ofSeconds(120)).run();
        r.orThrow();
        return r;
    }

    private static Path fixtures() {
        return Paths.get(System.getProperty("fixtures.dir"));
    }

    /** The KeyedStateJob operator of a keyed report. */
    private static KeyedReport.Operator job(KeyedReport r) {
        for (KeyedReport.Operator o : r.operators()) {
            if (o.state(KeyedStateJob.VALUE) != null) return o;
        }
        throw new AssertionError("no KeyedStateJob operator in " + r.source());
    }

    private static StateBackend rocksDb() throws ReflectiveOperationException {
        for (String c : new String[] {"org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend",
                "org.apache.flink.contrib.streaming.state.EmbeddedRocksDBStateBackend"}) {
            try {
                return (StateBackend) Class.forName(c).getConstructor().newInstance();
            } catch (ClassNotFoundException e) {
                // the other line's package
            }
        }
        throw new ClassNotFoundException("EmbeddedRocksDBStateBackend");
    }

    @Test
    public void canonicalAndHeapCountsAreWhatTheStateProcessorApiReads() throws Exception {
        Map<String, String> paths = new LinkedHashMap<>();
        Map<String, StateBackend> backends = new HashMap<>();
        for (String name : new String[] {"keyed-all-hashmap", "keyed-all-hashmap-compressed", "keyed-all-savepoint-heap",
                "keyed-all-savepoint-heap-compressed", "keyed-all-savepoint-rocksdb",
                "keyed-all-savepoint-rocksdb-compressed", "keyed-all-rocksdb-full"}) {
            Path dir = fixtures().resolve(name);
            if (!Files.exists(dir.resolve("_metadata"))) continue; // keyed-all-rocksdb-full: up to 1.15 only
            paths.put(name, dir.toUri().toString());
            // a canonical savepoint is read with the default (heap) backend whatever wrote it; 1.15's full
            // RocksDB checkpoint is RocksDB's own to restore
            if (name.equals("keyed-all-rocksdb-full")) backends.put(name, rocksDb());
        }
        // one State Processor API job reads them all
        Map<String, Map<String, long[]>> all = StateCounts.sum(SpaShims.stateCounts(paths, backends, KeyedStateJob.UID));
        for (String name : paths.keySet()) {
            boolean heap = name.startsWith("keyed-all-hashmap");
            KeyedReport.Operator op = job(CheckpointSurgeon.inspectKeyed(fixtures().resolve(name)));
            Map<String, long[]> spa = all.get(name);
            assertEquals(name, new TreeSet<>(spa.keySet()),
                    op.states().stream().map(KeyedReport.State::name).collect(Collectors.toCollection(TreeSet::new)));
            KeyedReport.SnapshotFormat format = heap ? KeyedReport.SnapshotFormat.HEAP_CHECKPOINT
                    : KeyedReport.SnapshotFormat.CANONICAL;
            for (KeyedReport.State s : op.states()) {
                assertEquals(name + " " + s.name(), List.of(format), s.formats());
                assertEquals(name + " " + s.name() + " entries", spa.get(s.name())[heap ? 1 : 0], s.total().entries());
                assertTrue(name + " " + s.name(), s.total().complete());
            }
            // the map state tells the formats apart: a record per user key, or one per key
            long[] map = spa.get(KeyedStateJob.MAP);
            assertTrue(name + ": map entries " + map[0] + " per user key, " + map[1] + " per key", map[0] > map[1]);
        }
        assertTrue(paths.size() >= 6);
        LOG.add(paths.size() + " canonical and heap fixtures agree with the State Processor API");
    }

    /** The retained checkpoints of a job directory, oldest first. */
    private static List<Path> checkpoints(MiniClusterJob.Result r) throws Exception {
        try (Stream<Path> s = Files.list(TestFiles.localPath(r.jobDir()))) {
            return s.filter(p -> p.getFileName().toString().startsWith("chk-") && Files.exists(p.resolve("_metadata")))
                    .sorted((a, b) -> Long.compare(id(a), id(b))).collect(Collectors.toList());
        }
    }

    private static long id(Path chk) {
        return Long.parseLong(chk.getFileName().toString().substring(4));
    }

    /** The RocksDB instance of a checkpoint's keyed handle as files (local names), through Flink's own loader. */
    private static Map<String, StreamStateHandle> instanceFiles(Path chk) throws Exception {
        CheckpointMetadata md;
        try (DataInputStream in = new DataInputStream(Files.newInputStream(chk.resolve("_metadata")))) {
            md = Checkpoints.loadCheckpointMetadata(in, KeyedStateJudgeTest.class.getClassLoader(), chk.toString());
        }
        Map<String, StreamStateHandle> files = new TreeMap<>();
        for (OperatorState os : md.getOperatorStates()) {
            for (OperatorSubtaskState st : os.getStates()) {
                for (KeyedStateHandle h : st.getManagedKeyedState()) {
                    for (String part : new String[] {"getSharedState", "getPrivateState"}) {
                        Object entries = h.getClass().getMethod(part).invoke(h);
                        if (entries instanceof Map) { // up to 1.17: StateHandleID -> handle
                            for (Map.Entry<?, ?> e : ((Map<?, ?>) entries).entrySet()) {
                                String key = (String) e.getKey().getClass().getMethod("getKeyString").invoke(e.getKey());
                                files.put(key, (StreamStateHandle) e.getValue());
                            }
                        } else { // 1.18+: HandleAndLocalPath
                            for (Object e : (List<?>) entries) {
                                files.put((String) e.getClass().getMethod("getLocalPath").invoke(e),
                                        (StreamStateHandle) e.getClass().getMethod("getHandle").invoke(e));
                            }
                        }
                    }
                }
            }
        }
        return files;
    }

    /** What RocksDB says of one column family of an instance. */
    private static final class Family {
        long entries, deletions, mergeOperands, files, estimate;
        final Set<String> fileNames = new TreeSet<>();
    }

    /**
     * Opens the instance in {@code dir} read-only (or, with {@code compact}, writable after a full
     * compaction of every column family) and returns RocksDB's figures per column family.
     */
    private static Map<String, Family> rocksDbFigures(Path dir, boolean compact) throws Exception {
        RocksDB.loadLibrary();
        List<byte[]> names;
        try (Options o = new Options()) {
            names = RocksDB.listColumnFamilies(o, dir.toString());
        }
        List<ColumnFamilyDescriptor> descriptors = new ArrayList<>();
        List<ColumnFamilyOptions> cfOptions = new ArrayList<>();
        for (byte[] n : names) {
            // Flink's merge operator for list states, so that compaction can merge their operands
            ColumnFamilyOptions co = new ColumnFamilyOptions().setMergeOperatorName("stringappendtest");
            cfOptions.add(co);
            descriptors.add(new ColumnFamilyDescriptor(n, co));
        }
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        Map<String, Family> out = new LinkedHashMap<>();
        try (DBOptions options = new DBOptions();
                RocksDB db = compact ? RocksDB.open(options, dir.toString(), descriptors, handles)
                        : RocksDB.openReadOnly(options, dir.toString(), descriptors, handles)) {
            Map<String, ColumnFamilyHandle> byName = new HashMap<>();
            for (int i = 0; i < names.size(); i++) {
                String n = new String(names.get(i), StandardCharsets.UTF_8);
                byName.put(n, handles.get(i));
                if (compact) {
                    // kForce: also rewrite files already in the bottommost level, merging their operands
                    try (org.rocksdb.CompactRangeOptions o = new org.rocksdb.CompactRangeOptions()
                            .setBottommostLevelCompaction(org.rocksdb.CompactRangeOptions.BottommostLevelCompaction.kForce)) {
                        db.compactRange(handles.get(i), null, null, o);
                    }
                }
            }
            for (LiveFileMetaData f : db.getLiveFilesMetaData()) {
                String cf = new String(f.columnFamilyName(), StandardCharsets.UTF_8);
                Family fam = out.computeIfAbsent(cf, k -> new Family());
                fam.files++;
                fam.fileNames.add(f.fileName().replaceFirst("^/", ""));
                // the file's own table properties, as RocksDB's table reader reads them
                try (Options o = new Options(); SstFileReader reader = new SstFileReader(o)) {
                    reader.open(f.path() + f.fileName());
                    fam.entries += reader.getTableProperties().getNumEntries();
                    fam.deletions += reader.getTableProperties().getNumDeletions();
                    fam.mergeOperands += reader.getTableProperties().getNumMergeOperands();
                }
            }
            for (Map.Entry<String, Family> e : out.entrySet()) {
                e.getValue().estimate = Long.parseLong(db.getProperty(byName.get(e.getKey()), "rocksdb.estimate-num-keys"));
            }
            for (ColumnFamilyHandle h : handles) h.close();
        } finally {
            for (ColumnFamilyOptions co : cfOptions) co.close();
        }
        return out;
    }

    @Test
    public void rocksDbFiguresAreWhatRocksDbReportsForTheRestoredInstance() throws Exception {
        List<Path> chks = checkpoints(v1);
        assertTrue(chks + ": several retained checkpoints", chks.size() >= 2);
        Map<String, Integer> sharedBy = new HashMap<>();
        Map<String, Family> last = null;
        KeyedReport.Operator lastOp = null;
        for (Path chk : chks) {
            KeyedReport.Operator op = job(CheckpointSurgeon.inspectKeyed(chk));
            Path instance = Files.createDirectories(work.resolve("instance-" + chk.getFileName()));
            for (Map.Entry<String, StreamStateHandle> f : instanceFiles(chk).entrySet()) {
                try (InputStream in = f.getValue().openInputStream()) {
                    Files.copy(in, instance.resolve(f.getKey()));
                }
                if (f.getValue() instanceof org.apache.flink.runtime.state.filesystem.FileStateHandle
                        && f.getKey().endsWith(".sst")) {
                    sharedBy.merge(((org.apache.flink.runtime.state.filesystem.FileStateHandle) f.getValue())
                            .getFilePath().toString(), 1, Integer::sum);
                }
            }
            Map<String, Family> rocks = rocksDbFigures(instance, false);
            for (KeyedReport.State s : op.states()) {
                Family f = rocks.get(s.name());
                String what = chk.getFileName() + " " + s.name();
                assertNotNull(what + ": a column family with SST files " + rocks.keySet(), f);
                assertEquals(what + ": entries", f.entries, s.total().entries());
                assertEquals(what + ": files", f.files, s.rocksDb().files());
                assertEquals(what + ": deleted keys", f.deletions, s.rocksDb().deletedKeys());
                assertEquals(what + ": merge operands", f.mergeOperands, s.rocksDb().mergeOperands());
                assertTrue(what, s.rocksDbNumbers());
                // RocksDB's estimate: entries less twice the deletions, over the files it sampled
                long exact = Math.max(0, f.entries - 2 * f.deletions);
                if (f.files <= 20) {
                    assertEquals(what + ": rocksdb.estimate-num-keys", exact, f.estimate);
                } else {
                    assertTrue(what + ": rocksdb.estimate-num-keys " + f.estimate, f.estimate <= f.entries);
                }
            }
            assertEquals(chk + ": every column family with files is a state of the report", rocks.keySet().stream()
                    .filter(n -> !n.equals("default")).collect(Collectors.toSet()),
                    op.states().stream().map(KeyedReport.State::name).collect(Collectors.toSet()));
            last = rocks;
            lastOp = op;
        }
        assertTrue("retained checkpoints share SST files: " + sharedBy, sharedBy.values().stream().anyMatch(n -> n > 1));

        // compaction explains the rest: compacted in full, RocksDB holds what the State Processor API reads
        Path chk = chks.get(chks.size() - 1);
        Path copy = work.resolve("compacted");
        TestFiles.copyRecursively(work.resolve("instance-" + chk.getFileName()), copy);
        Map<String, Family> compacted = rocksDbFigures(copy, true);
        Map<String, long[]> spa = StateCounts.sum(SpaShims.stateCounts(Map.of("chk", chk.toUri().toString()),
                Map.of("chk", rocksDb()), KeyedStateJob.UID)).get("chk");
        List<String> removed = new ArrayList<>();
        for (KeyedReport.State s : lastOp.states()) {
            long live = compacted.get(s.name()).entries;
            assertEquals(s.name() + ": after a full compaction", spa.get(s.name())[0], live);
            assertTrue(s.name(), s.total().entries() >= live);
            removed.add(s.name() + " " + s.total().entries() + "->" + live);
            assertEquals(0, compacted.get(s.name()).mergeOperands);
        }
        assertEquals(last.keySet(), compacted.keySet());
        LOG.add(chks.size() + " RocksDB incremental checkpoints agree with RocksDB; compaction: " + removed);
    }

    @Test
    public void theStaleKeyedStateIsNamedByDoctorAndCarriedInTheHistory() throws Exception {
        Path expect = work.resolve("expected-states.txt");
        Files.write(expect, KeyedStateJob.registered(true), StandardCharsets.UTF_8);
        List<Path> v2chks = checkpoints(v2);
        Path newest = v2chks.get(v2chks.size() - 1);
        CliProcess.Result doctor = CliProcess.jar("doctor", newest.toString(), "--expect-states", expect.toString()).run();
        assertEquals(doctor.output, 0, doctor.exitCode);
        assertTrue(doctor.output, doctor.output.contains("WARNING STALE_KEYED_STATE: keyed value state '"
                + KeyedStateJob.DROPPED + "'"));
        assertEquals(doctor.output, 1, doctor.output.split("STALE_KEYED_STATE", -1).length - 1);
        // v1's own list: nothing stale
        Files.write(expect, KeyedStateJob.registered(false), StandardCharsets.UTF_8);
        CliProcess.Result none = CliProcess.jar("doctor", newest.toString(), "--expect-states", expect.toString()).run();
        assertFalse(none.output, none.output.contains("STALE_KEYED_STATE"));

        CliProcess.Result history = CliProcess.jar("history", TestFiles.localPath(v1.jobDir()).toString(),
                TestFiles.localPath(v2.jobDir()).toString(), "--keyed").run();
        assertEquals(history.output, 0, history.exitCode);
        List<String> lines = List.of(history.output.split("\n"));
        int at = -1;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).endsWith(" " + KeyedStateJob.DROPPED + " (keyed value)")) at = i;
        }
        assertTrue(history.output, at >= 0);
        String[] entries = lines.get(at + 1).trim().split("\\s+");
        assertEquals(lines.get(at + 1), "elements", entries[0]);
        int total = checkpoints(v1).size() + v2chks.size();
        assertEquals(history.output, total + 1, entries.length);
        for (int i = 1; i < entries.length; i++) {
            assertTrue(lines.get(at + 1) + ": carried into every checkpoint, v2's too", Long.parseLong(entries[i].replace(",", "")) > 0);
        }
        LOG.add("stale keyed state named by doctor and carried through " + total + " checkpoints");
    }
}
