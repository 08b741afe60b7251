package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.junit.Assume;
import org.junit.Test;

/**
 * Issue 28's incident, end to end with real Flink: job v1 keeps a keyed state {@code a} (a POJO),
 * a running sum {@code b} and one event-time timer per key; v2 changes {@code a}'s type
 * incompatibly and cannot restore (StateMigrationException). After remove-keyed-state --state a,
 * v2 restores: {@code a} starts empty, every running sum ends exact, every timer v1 registered
 * fires once in v2 (the source's split state, operator state, loses and repeats no number). After
 * rename-keyed-state --state a --to a_v1, a job registering {@code a_v1} with the old type reads
 * every value v1 left. The heavy cases (RocksDB incremental with rescaling, compression on) run on
 * Flink 1.20 only; 1.15 and 2.3 run the incident on a canonical savepoint.
 */
public class KeyedSurgeryRestoreTest {
    @org.junit.Rule
    public final org.junit.rules.TemporaryFolder tmp = new org.junit.rules.TemporaryFolder();

    static final long N = 4_000;
    static final int KEYS = 8;
    static final long TIMER_BASE = 1_000_000;

    /** v1's {@code a}: a POJO. */
    public static class Tally {
        public long count;
        public long last;

        public Tally() {}

        @Override
        public String toString() {
            return count + "/" + last;
        }
    }

    /** Which state {@code a} a version of the job registers. */
    enum Version {
        /** {@code a} as {@link Tally}. */
        V1,
        /** {@code a} as a Long: incompatible with v1's POJO. */
        V2,
        /** {@code a} as a Long, and v1's {@code a} under {@code a_v1}, as Tally. */
        V2_RENAMED
    }

    /** Per run: {number, key, running sum b after it}. */
    static final Map<String, Queue<long[]>> SEEN = new ConcurrentHashMap<>();
    /** Per run: {key, timestamp} of each timer fired. */
    static final Map<String, Queue<long[]>> FIRED = new ConcurrentHashMap<>();
    /** Per run and key: the value of {@code a} (v1: the last written; v2: found at the first element, "" if none). */
    static final Map<String, Map<Long, String>> A = new ConcurrentHashMap<>();

    /**
     * Every case runs on the lines issue 28 names: 1.15, 1.20 and 2.3 (each a full lane, 15-25 s);
     * {@code KeyedCommitFaultsTest}'s trials too.
     */
    public static boolean issueLine() {
        String v = System.getProperty("flink.version", "");
        return v.startsWith("1.15.") || v.startsWith("1.20.") || v.startsWith("2.3.");
    }

    // ---- the incident

    @Test
    public void removingTheIncompatibleStateLetsV2RestoreWithEverythingElse() throws Exception {
        Path work = tmp.newFolder("cs-keyed-incident").toPath();
        Path savepoint = v1(work, "v1", "hashmap", false, true);
        Throwable refused = run(work, "v2-refused", Version.V2, savepoint, 2, "hashmap");
        assertNotNull("v2 restores a's POJO as a Long", refused);
        assertTrue(chain(refused), chain(refused).contains("StateMigrationException"));

        Path removed = work.resolve("removed");
        CliProcess.Result r = CliProcess.withFlink("remove-keyed-state", savepoint.toString(), "--state", "a",
                "--apply", "--output", removed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertTrue(r.output, r.output.contains("loaded by Flink"));
        assertTrue(r.output, r.output.contains("keyed state: "));
        assertEquals(List.of("b"), dataStates(removed));

        assertRestoredExact(work, "v1", "v2", Version.V2, removed, 2);
    }

    @Test
    public void compressedCanonicalSavepoint() throws Exception {
        Assume.assumeTrue("runs on Flink 1.15, 1.20 and 2.3", issueLine());
        Path work = tmp.newFolder("cs-keyed-compressed").toPath();
        Path savepoint = v1(work, "c1", "hashmap", true, true);
        Path removed = work.resolve("removed");
        SurgeryPlan p = CheckpointSurgeon.apply(savepoint, Surgery.removeKeyedState(Surgery.OperatorSelector.uid("k-fn"), "a")
                .threads(1), removed);
        assertEquals(p.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, p.result().validation().status());
        assertEquals(1, p.keyed().threads());
        assertTrue(p.toString(), p.keyed().bytesRead() > p.keyed().bytesWritten());
        assertRestoredExact(work, "c1", "c2", Version.V2, removed, 2);
    }

    @Test
    public void renamedStateIsReadUnderItsNewName() throws Exception {
        Assume.assumeTrue("runs on Flink 1.15, 1.20 and 2.3", issueLine());
        Path work = tmp.newFolder("cs-keyed-rename").toPath();
        Path savepoint = v1(work, "r1", "hashmap", false, true);
        Path renamed = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-keyed-state", savepoint.toString(), "--state", "a", "--to",
                "a_v1", "--apply", "--output", renamed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertEquals(List.of("a_v1", "b"), dataStates(renamed));
        Throwable t = run(work, "r2", Version.V2_RENAMED, renamed, 2, "hashmap");
        assertEquals(chain(t), null, t);
        assertEquals("every key's a_v1 is v1's last a", A.get("r1"), A.get("r2"));
    }

    /**
     * RocksDB incremental: the removal drops a's column family in the MANIFEST and its SST files
     * leave the handles; v2 restores plainly, takes further incremental checkpoints (sharing the
     * old files), and the job restores from one of those with another parallelism and ends exact.
     */
    @Test
    public void rocksDbIncrementalRestoresPlainAndRescaled() throws Exception {
        Assume.assumeTrue("runs on Flink 1.15, 1.20 and 2.3", issueLine());
        Path work = tmp.newFolder("cs-keyed-rocksdb").toPath();
        Path checkpoint = v1(work, "i1", "rocksdb", false, false);
        Path removed = work.resolve("removed");
        SurgeryPlan p = CheckpointSurgeon.apply(checkpoint, Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a"),
                removed);
        assertEquals(p.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, p.result().validation().status());
        assertTrue("no SST data is rewritten: " + p.keyed(), p.keyed().bytesWritten() < 1 << 20);
        assertEquals(List.of("b"), dataStates(removed));
        // RocksDB's own list of the column families of each instance, before and after
        for (List<String> families : columnFamilies(checkpoint, work.resolve("before"))) {
            assertTrue(families.toString(), families.contains("a") && families.contains("b"));
        }
        List<List<String>> after = columnFamilies(removed, work.resolve("after"));
        assertEquals(2, after.size());
        for (List<String> families : after) {
            assertTrue(families.toString(), !families.contains("a") && families.contains("b"));
        }

        // v2 restores plainly and takes two more incremental checkpoints
        SEEN.put("i2", new ConcurrentLinkedQueue<>());
        FIRED.put("i2", new ConcurrentLinkedQueue<>());
        A.put("i2", new ConcurrentHashMap<>());
        Configuration conf = conf(work, "i2", "rocksdb", false);
        FlinkConf.restoreFrom(conf, removed.toUri().toString());
        MiniClusterJob.Result second = MiniClusterJob.of("i2", conf, 2, env -> topology(env, "i2", Version.V2))
                .readyWhen(() -> SEEN.get("i2").size() >= 200).checkpointsAfterReady(2).run();
        assertEquals(second.failureText(), null, second.failure());
        assertTrue("a starts empty: " + A.get("i2"), A.get("i2").values().stream().allMatch(String::isEmpty));
        // v2 registered a again (as a Long): a new, empty state beside b
        Path chk = second.checkpointPath();
        assertEquals(List.of("a", "b"), dataStates(chk));

        // and the job restores from it with parallelism 3, to the end
        Throwable t = run(work, "i3", Version.V2, chk, 3, "rocksdb");
        assertEquals(chain(t), null, t);
        List<long[]> all = new ArrayList<>(SEEN.get("i1"));
        all.addAll(SEEN.get("i2"));
        all.addAll(SEEN.get("i3"));
        Map<Long, Long> sums = new TreeMap<>();
        for (long[] s : all) {
            sums.merge(s[1], s[2], Math::max);
        }
        assertEquals(expectedSums(), sums);
        // the timers v1 registered fire once, in the last run
        assertEquals(expectedTimers(), timers("i1", "i2", "i3"));
    }

    @Test
    public void aStateThatIsNotThereSelectsNothingAndTheLastStateMayGo() throws Exception {
        Assume.assumeTrue("runs on Flink 1.15, 1.20 and 2.3", issueLine());
        Path work = tmp.newFolder("cs-keyed-edges").toPath();
        Path savepoint = v1(work, "e1", "hashmap", false, true);
        try {
            CheckpointSurgeon.plan(savepoint, Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "nope"));
            fail("a missing state selects nothing");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.NOTHING_SELECTED, e.code());
        }
        // every state of the keyed function, timers too: its keyed handles go
        Surgery all = Surgery.removeKeyedState(Surgery.OperatorSelector.uid("k-fn"), "a")
                .andRemoveKeyedState(Surgery.OperatorSelector.uid("k-fn"), "b");
        for (String s : timerStates(savepoint)) all.andRemoveKeyedState(Surgery.OperatorSelector.uid("k-fn"), s);
        Path none = work.resolve("none");
        SurgeryPlan p = CheckpointSurgeon.apply(savepoint, all, none);
        assertEquals(p.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, p.result().validation().status());
        assertTrue(dataStates(none).isEmpty());
        Throwable t = run(work, "e2", Version.V2, none, 2, "hashmap");
        assertEquals(chain(t), null, t);
        assertTrue("every key starts over: " + A.get("e2"), A.get("e2").values().stream().allMatch(String::isEmpty));
        assertTrue("no timer of v1 is left", FIRED.get("e2").isEmpty());
    }

    /** Two keyed rewrites of one checkpoint in place at once: one is LOCKED, the input is never changed. */
    @Test
    public void twoRunsAtOnceOneIsLockedAndTheInputStays() throws Exception {
        Assume.assumeTrue("runs on Flink 1.15, 1.20 and 2.3", issueLine());
        Path work = tmp.newFolder("cs-keyed-locked").toPath();
        Path savepoint = v1(work, "l1", "hashmap", false, true);
        Map<String, byte[]> before = contents(savepoint);
        CliProcess.Result[] results = new CliProcess.Result[2];
        Thread[] threads = new Thread[2];
        for (int i = 0; i < 2; i++) {
            int n = i;
            threads[i] = new Thread(() -> {
                try {
                    results[n] = CliProcess.withFlink("remove-keyed-state", savepoint.toString(), "--state", "a",
                            "--apply", "--output", work.resolve("out").toString()).run();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            threads[i].start();
        }
        for (Thread t : threads) t.join();
        int ok = 0;
        for (CliProcess.Result r : results) {
            if (r.exitCode == 0) {
                ok++;
            } else {
                assertTrue(r.toString(), r.output.contains("LOCKED") || r.output.contains("not empty"));
            }
        }
        assertEquals(results[0] + "\n" + results[1], 1, ok);
        Map<String, byte[]> after = contents(savepoint);
        assertEquals(before.keySet(), after.keySet());
        for (String f : before.keySet()) assertTrue(f, java.util.Arrays.equals(before.get(f), after.get(f)));
    }

    // ---- runs

    /**
     * Runs v1 until it processed a tenth of the numbers and took a checkpoint, then stops it with a
     * canonical savepoint (or cancels it, keeping its retained checkpoint); returns that.
     */
    static Path v1(Path work, String run, String backend, boolean compressed, boolean savepoint) throws Exception {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        FIRED.put(run, new ConcurrentLinkedQueue<>());
        A.put(run, new ConcurrentHashMap<>());
        MiniClusterJob job = MiniClusterJob.of(run, conf(work, run, backend, compressed), 2,
                env -> topology(env, run, Version.V1)).readyWhen(() -> SEEN.get(run).size() >= N / 10)
                .checkpointsAfterReady(1);
        MiniClusterJob.Result r = (savepoint ? job.stopWithSavepoint() : job).run();
        assertEquals(r.failureText(), null, r.failure());
        assertTrue("v1 fired no timer yet", FIRED.get(run).isEmpty());
        return savepoint ? r.savepointPath() : r.checkpointPath();
    }

    /** Runs {@code version} from {@code restore} to its end; the failure, or null. */
    static Throwable run(Path work, String run, Version version, Path restore, int parallelism, String backend) {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        FIRED.put(run, new ConcurrentLinkedQueue<>());
        A.put(run, new ConcurrentHashMap<>());
        Configuration conf = conf(work, run, backend, false);
        FlinkConf.restoreFrom(conf, restore.toUri().toString());
        FlinkConf.noRestarts(conf);
        try {
            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
            topology(env, run, version);
            env.execute(run);
            return null;
        } catch (Exception e) {
            return e;
        }
    }

    /** v2 restored from {@code restored} runs to its end: a empty, b, timers and the source exact. */
    static void assertRestoredExact(Path work, String first, String second, Version v, Path restored, int parallelism) {
        Throwable t = run(work, second, v, restored, parallelism, "hashmap");
        assertEquals(chain(t), null, t);
        assertTrue("a starts empty: " + A.get(second), A.get(second).values().stream().allMatch(String::isEmpty));
        assertEquals("every key was seen again", KEYS, A.get(second).size());
        Map<Long, Integer> count = new TreeMap<>();
        Map<Long, Long> sums = new TreeMap<>();
        List<long[]> all = new ArrayList<>(SEEN.get(first));
        all.addAll(SEEN.get(second));
        for (long[] s : all) {
            count.merge(s[0], 1, Integer::sum);
            sums.merge(s[1], s[2], Math::max);
        }
        assertEquals("every number once over both runs", N, count.size());
        assertTrue("no number twice", count.values().stream().allMatch(c -> c == 1));
        assertEquals("b: every running sum exact", expectedSums(), sums);
        assertEquals("every timer of v1 fires once, in v2", expectedTimers(), timers(first, second));
    }

    static Configuration conf(Path work, String run, String backend, boolean compressed) {
        Configuration c = FlinkConf.checkpointing(backend, work.resolve(run + "-checkpoints").toUri().toString(),
                work.resolve(run + "-savepoints").toUri().toString(), "100ms", 1);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.set(c, String.valueOf(compressed), "execution.checkpointing.snapshot-compression");
        // keyed state in files, as a job of any size writes it (the rewrite streams files)
        FlinkConf.inlineThreshold(c, "0");
        return c;
    }

    /** numbers 1..N (FLIP-27, throttled) -> keyed function (uid k-fn) -> sink. */
    static void topology(StreamExecutionEnvironment env, String run, Version version) {
        DataStream<Long> numbers = env.fromSource(new NumberSequenceSource(1, N), WatermarkStrategy.noWatermarks(),
                "numbers").uid("k-source");
        DataStream<Long> slow = numbers.map(new Functions.Sleep(1)).uid("k-throttle");
        DataStream<Long> out = slow.keyBy(new Functions.ModKey(KEYS)).process(new Fn(run, version)).uid("k-fn");
        Shims.discard(out, "k-sink");
    }

    /** The keyed function of every version. States are registered at the first element (no open() across versions). */
    static final class Fn extends KeyedProcessFunction<Long, Long, Long> {
        private final String run;
        private final Version version;
        private transient ValueState<Tally> tally;
        private transient ValueState<Long> a;
        private transient ValueState<Tally> old;
        private transient ValueState<Long> b;

        Fn(String run, Version version) {
            this.run = run;
            this.version = version;
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            if (b == null) {
                b = getRuntimeContext().getState(new ValueStateDescriptor<>("b", Types.LONG));
                if (version == Version.V1) {
                    tally = getRuntimeContext().getState(new ValueStateDescriptor<>("a",
                            TypeInformation.of(Tally.class)));
                } else {
                    a = getRuntimeContext().getState(new ValueStateDescriptor<>("a", Types.LONG));
                }
                if (version == Version.V2_RENAMED) {
                    old = getRuntimeContext().getState(new ValueStateDescriptor<>("a_v1",
                            TypeInformation.of(Tally.class)));
                }
            }
            long key = ctx.getCurrentKey();
            Map<Long, String> seenA = A.get(run);
            if (version == Version.V1) {
                if (tally.value() == null) ctx.timerService().registerEventTimeTimer(TIMER_BASE + key);
                Tally t = tally.value() == null ? new Tally() : tally.value();
                t.count++;
                t.last = value;
                tally.update(t);
                seenA.put(key, t.toString());
            } else {
                if (!seenA.containsKey(key)) {
                    seenA.put(key, version == Version.V2_RENAMED ? String.valueOf(old.value())
                            : a.value() == null ? "" : String.valueOf(a.value()));
                }
                a.update(value);
            }
            long s = (b.value() == null ? 0 : b.value()) + value;
            b.update(s);
            SEEN.get(run).add(new long[] {value, key, s});
            out.collect(value);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<Long> out) {
            FIRED.get(run).add(new long[] {ctx.getCurrentKey(), timestamp});
        }
    }

    // ---- expectations

    static Map<Long, Long> expectedSums() {
        Map<Long, Long> sums = new TreeMap<>();
        for (long n = 1; n <= N; n++) sums.merge(n % KEYS, n, Long::sum);
        return sums;
    }

    static List<String> expectedTimers() {
        List<String> t = new ArrayList<>();
        for (long k = 0; k < KEYS; k++) t.add(k + "@" + (TIMER_BASE + k));
        return t;
    }

    static List<String> timers(String... runs) {
        List<String> t = new ArrayList<>();
        for (String r : runs) {
            for (long[] f : FIRED.get(r)) t.add(f[0] + "@" + f[1]);
        }
        return t.stream().sorted().collect(Collectors.toList());
    }

    /** The keyed states of the keyed function other than timers, by the native reader. */
    static List<String> dataStates(Path checkpoint) throws CheckpointSurgeonException {
        return keyedStates(checkpoint).stream().filter(s -> !s.startsWith("_timer_state/")).collect(Collectors.toList());
    }

    static List<String> timerStates(Path checkpoint) throws CheckpointSurgeonException {
        return keyedStates(checkpoint).stream().filter(s -> s.startsWith("_timer_state/")).collect(Collectors.toList());
    }

    static List<String> keyedStates(Path checkpoint) throws CheckpointSurgeonException {
        return CheckpointSurgeon.inspectKeyed(checkpoint).operators().stream()
                .flatMap(o -> o.states().stream().map(KeyedReport.State::name)).sorted().collect(Collectors.toList());
    }

    /**
     * The column families RocksDB lists for each RocksDB handle of {@code checkpoint}: the handle's
     * private files (CURRENT, MANIFEST, OPTIONS) as Flink's loader resolves them, copied into an
     * instance directory under {@code scratch}, read by {@code RocksDB.listColumnFamilies}. By
     * reflection: the handle's private files are a map before Flink 1.18.
     */
    static List<List<String>> columnFamilies(Path checkpoint, Path scratch) throws Exception {
        Object md;
        Path dir = Files.isDirectory(checkpoint) ? checkpoint : checkpoint.getParent();
        try (java.io.DataInputStream in = new java.io.DataInputStream(Files.newInputStream(dir.resolve("_metadata")))) {
            md = org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(in,
                    KeyedSurgeryRestoreTest.class.getClassLoader(), dir.toUri().toString());
        }
        org.rocksdb.RocksDB.loadLibrary();
        List<List<String>> out = new ArrayList<>();
        int n = 0;
        for (Object op : (java.util.Collection<?>) md.getClass().getMethod("getOperatorStates").invoke(md)) {
            for (Object st : (java.util.Collection<?>) op.getClass().getMethod("getStates").invoke(op)) {
                for (Object h : (java.util.Collection<?>) st.getClass().getMethod("getManagedKeyedState").invoke(st)) {
                    if (!h.getClass().getSimpleName().equals("IncrementalRemoteKeyedStateHandle")) continue;
                    Path instance = Files.createDirectories(scratch.resolve("instance-" + n++));
                    Object files = h.getClass().getMethod("getPrivateState").invoke(h);
                    Map<String, Object> byName = new java.util.LinkedHashMap<>();
                    if (files instanceof Map) { // before 1.18: StateHandleID (the local name) -> handle
                        for (Map.Entry<?, ?> e : ((Map<?, ?>) files).entrySet()) {
                            byName.put((String) e.getKey().getClass().getMethod("getKeyString").invoke(e.getKey()), e.getValue());
                        }
                    } else { // 1.18 on: a list of HandleAndLocalPath
                        for (Object f : (List<?>) files) {
                            byName.put((String) f.getClass().getMethod("getLocalPath").invoke(f),
                                    f.getClass().getMethod("getHandle").invoke(f));
                        }
                    }
                    for (Map.Entry<String, Object> f : byName.entrySet()) {
                        Object handle = f.getValue();
                        try (java.io.InputStream in = (java.io.InputStream) handle.getClass().getMethod("openInputStream")
                                .invoke(handle)) {
                            Files.copy(in, instance.resolve(f.getKey()));
                        }
                    }
                    try (org.rocksdb.Options o = new org.rocksdb.Options()) {
                        out.add(org.rocksdb.RocksDB.listColumnFamilies(o, instance.toString()).stream()
                                .map(b -> new String(b, java.nio.charset.StandardCharsets.UTF_8)).sorted()
                                .collect(Collectors.toList()));
                    }
                }
            }
        }
        return out;
    }

    static String chain(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) sb.append(c.getClass().getName()).append(": ")
                .append(c.getMessage()).append('\n');
        return t == null ? null : sb.toString();
    }

    static Map<String, byte[]> contents(Path dir) throws java.io.IOException {
        Map<String, byte[]> m = new TreeMap<>();
        try (java.util.stream.Stream<Path> s = Files.list(dir)) {
            for (Path p : s.collect(Collectors.toList())) m.put(p.getFileName().toString(), Files.readAllBytes(p));
        }
        return m;
    }
}
