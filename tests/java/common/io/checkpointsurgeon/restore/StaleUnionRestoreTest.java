package io.checkpointsurgeon.restore;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.RestoreScenario;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.MiniClusterJob.Result;
import io.checkpointsurgeon.testing.TestFiles;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import static io.checkpointsurgeon.fixtures.RestoreScenario.CONSUMER_UID;
import static io.checkpointsurgeon.fixtures.RestoreScenario.KEYED_STATE;
import static io.checkpointsurgeon.fixtures.RestoreScenario.KEYED_UID;
import static io.checkpointsurgeon.fixtures.RestoreScenario.KEYS;
import static io.checkpointsurgeon.fixtures.RestoreScenario.SPLIT_PER_SUBTASK;
import static io.checkpointsurgeon.fixtures.RestoreScenario.SPLIT_STATE;
import static io.checkpointsurgeon.fixtures.RestoreScenario.UNION_PER_SUBTASK;
import static io.checkpointsurgeon.fixtures.RestoreScenario.UNION_STATE;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * Proof with real Flink (issue 3): the stale-union incident reproduced in a MiniCluster, repaired
 * with {@link CheckpointSurgeon#apply}, and restored by Flink again. Every assertion is on what Flink
 * itself restored or wrote: values the jobs report from {@code initializeState}/keyed state, element
 * counts of the checkpoints Flink wrote afterwards, and the State Processor API's reading of them.
 *
 * <p>Job v1 (RestoreScenario.ConsumerV1 + KeyedWriter) writes the union list state
 * {@value RestoreScenario#UNION_STATE} (2 fixed entries per subtask), a split list state (3 fixed
 * entries per subtask) and a keyed ValueState (16 keys). Job v2 (ConsumerV2 + KeyedProbe), same
 * uids, never accesses the union state; it reports the split list and keyed values it restored and
 * writes them back unchanged.
 */
public class StaleUnionRestoreTest {

    private static final int P = 3;
    private static final long RUN_TIMEOUT_SECONDS = 90;

    private static Path work;
    private static Chain inline;
    private static final List<String> GROWTH_LOG = new ArrayList<>();

    /** Where the state streams of a run go. */
    enum Storage {
        /** default inline threshold: small streams are ByteStreamStateHandles inside _metadata */
        INLINE,
        /** inline threshold 0: RelativeFileStateHandles in chk-N / the savepoint dir */
        FILES,
        /** threshold 0 plus execution.checkpointing.file-merging.enabled: segment handles */
        FILE_MERGING
    }

    /** v1 checkpoint and the retained checkpoints of 3 restores of v2 (union grows ×P each). */
    static final class Chain {
        final List<Path> checkpoints = new ArrayList<>();
        final List<Long> unionElements = new ArrayList<>();
    }

    @BeforeClass
    public static void setUp() throws IOException {
        work = Files.createTempDirectory("checkpoint-surgeon-restore");
    }

    @AfterClass
    public static void tearDown() throws IOException {
        System.out.println("Flink " + flinkVersion() + " restore growth: " + GROWTH_LOG);
        if (work != null) {
            TestFiles.deleteRecursively(work);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // 1. The incident: the never-accessed union state grows ×parallelism per restore.

    @Test
    public void unionStateGrowsByParallelismPerRestore() throws Exception {
        Chain c = inlineChain();
        long expected = (long) P * UNION_PER_SUBTASK;
        for (int i = 0; i < c.unionElements.size(); i++) {
            assertEquals("union elements after " + i + " restores: " + c.unionElements, expected,
                    (long) c.unionElements.get(i));
            expected *= P;
        }
        assertEquals(4, c.unionElements.size());
    }

    // ---------------------------------------------------------------------------------------------
    // 2. Purge (the default) on a grown inline checkpoint; the restored job keeps every other value.

    @Test
    public void purgeInlineRetainedCheckpointRestores() throws Exception {
        Chain c = inlineChain();
        Path grown = c.checkpoints.get(c.checkpoints.size() - 1);
        assertPurgeRestores("inline", grown, Storage.INLINE, true);
    }

    /** The same purge through the CLI (its own JVM, without Flink on the classpath). */
    @Test
    public void cliPurgeRestores() throws Exception {
        Chain c = inlineChain();
        Path grown = c.checkpoints.get(2);
        Path out = work.resolve("cli-purged");
        CliProcess.Result cli = CliProcess.jar("remove-state", grown.toString(), "--uid", CONSUMER_UID,
                "--state", UNION_STATE, "--apply", "--output", out.toString()).run();
        assertEquals(cli.output, 0, cli.exitCode);
        assertTrue(cli.output, cli.output.contains(c.unionElements.get(2) + " elements"));
        assertNull(stateNames(out), unionElements(out));
        Result run = runV2("cli-after", Storage.INLINE, out);
        assertV2Restored(run);
        assertNull(stateNames(run.checkpointPath()), unionElements(run.checkpointPath()));
    }

    // ---------------------------------------------------------------------------------------------
    // 3. Metadata-only: the state stays registered but empty, and no longer grows.

    @Test
    public void metadataOnlyStopsGrowth() throws Exception {
        Chain c = inlineChain();
        Path grown = c.checkpoints.get(c.checkpoints.size() - 1);
        Path out = work.resolve("metadata-only");
        SurgeryPlan plan = CheckpointSurgeon.apply(grown,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE).metadataOnly(), out);
        assertValidated(plan);
        assertEquals(c.unionElements.get(c.unionElements.size() - 1).longValue(), plan.elementsRemoved());
        // Two restores in a row: 0 elements after each (it would be ×P otherwise).
        Path from = out;
        for (int r = 1; r <= 2; r++) {
            Result run = runV2("metadata-only-r" + r, Storage.INLINE, from);
            assertV2Restored(run);
            Long elements = unionElements(run.checkpointPath());
            assertNotNull("metadata-only keeps the state registered (header entry): " + stateNames(run.checkpointPath()), elements);
            assertEquals("union elements after metadata-only surgery and restore " + r, 0L, (long) elements);
            from = run.checkpointPath();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // 4. Dedupe a union state the job still reads.

    @Test
    public void dedupeUnionGivesEachSubtaskEachElementOnce() throws Exception {
        Chain c = inlineChain();
        Path grown = c.checkpoints.get(c.checkpoints.size() - 1);
        List<String> distinct = new ArrayList<>();
        for (int s = 0; s < P; s++) {
            for (int i = 0; i < UNION_PER_SUBTASK; i++) {
                distinct.add(RestoreScenario.unionTopic(s, i) + "=" + RestoreScenario.unionOffset(s, i));
            }
        }
        Collections.sort(distinct);

        // Control: without surgery, every subtask of the reader sees every element many times.
        Result control = runUnionReader("dedupe-control", grown);
        assertNull(control.failureText(), control.failure());
        long grownCount = c.unionElements.get(c.unionElements.size() - 1);
        for (int s = 0; s < P; s++) {
            assertEquals("subtask " + s + " restored the grown union", grownCount,
                    RestoreScenario.UNION_SEEN.get(s).size());
        }

        Path out = work.resolve("dedupe");
        SurgeryPlan plan = CheckpointSurgeon.apply(grown,
                Surgery.dedupeUnion(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE), out);
        assertValidated(plan);
        Result run = runUnionReader("dedupe", out);
        assertNull(run.failureText(), run.failure());
        for (int s = 0; s < P; s++) {
            List<String> seen = new ArrayList<>(RestoreScenario.UNION_SEEN.get(s));
            Collections.sort(seen);
            assertEquals("union elements subtask " + s + " restored after dedupe", distinct, seen);
        }
        assertEquals(expectedSplit(), new TreeMap<>(RestoreScenario.SPLIT_SEEN));
        // The reader writes back only its own entries: the next checkpoint holds P*2 again.
        assertEquals(Long.valueOf((long) P * UNION_PER_SUBTASK), unionElements(run.checkpointPath()));
    }

    // ---------------------------------------------------------------------------------------------
    // 5. Remove an operator, restore a job graph without it, without allowNonRestoredState.

    @Test
    public void removeOperatorRestoresWithoutAllowNonRestoredState() throws Exception {
        Chain c = inlineChain();
        Path chk = c.checkpoints.get(1);
        // Control: Flink refuses the checkpoint for the smaller job graph.
        Result control = runWithoutKeyed("remove-operator-control", chk);
        assertNotNull("restoring state of a removed operator must fail without allowNonRestoredState", control.failure());
        String text = control.failureText();
        assertTrue(text, text.contains("allowNonRestoredState"));
        GROWTH_LOG.add("remove-operator control fails: " + rootCause(control.failure()));

        Path out = work.resolve("remove-operator");
        SurgeryPlan plan = CheckpointSurgeon.apply(chk, Surgery.removeOperator(Surgery.OperatorSelector.uid(KEYED_UID)), out);
        assertValidated(plan);
        int before = CheckpointSurgeon.inspect(chk).operators().size();
        assertEquals(before - 1, CheckpointSurgeon.inspect(out).operators().size());
        Result run = runWithoutKeyed("remove-operator", out);
        assertNull(run.failureText(), run.failure());
        assertNotNull(run.checkpointPath());
        assertEquals(expectedSplit(), new TreeMap<>(RestoreScenario.SPLIT_SEEN));
    }

    // ---------------------------------------------------------------------------------------------
    // 7. Other handle kinds: relative files, file merging, savepoints.

    @Test
    public void purgeRelativeFileCheckpointRestores() throws Exception {
        Path grown = grownOnce("files", Storage.FILES, false);
        assertHandles(grown, false, "RelativeFile");
        assertPurgeRestores("files", grown, Storage.FILES, true);
    }

    @Test
    public void purgeFileMergingCheckpointRestores() throws Exception {
        Assume.assumeTrue("file merging needs Flink 1.20+", !flinkVersion().startsWith("1.15"));
        Path grown = grownOnce("file-merging", Storage.FILE_MERGING, false);
        assertHandles(grown, false, "Segment");
        assertPurgeRestores("file-merging", grown, Storage.FILE_MERGING, true);
    }

    @Test
    public void purgeCanonicalSavepointWithFilesRestores() throws Exception {
        Path grown = grownOnce("savepoint-files", Storage.FILES, true);
        assertHandles(grown, false, "RelativeFile");
        assertPurgeRestores("savepoint-files", grown, Storage.FILES, true);
    }

    @Test
    public void purgeCanonicalSavepointInlineRestores() throws Exception {
        Path grown = grownOnce("savepoint-inline", Storage.INLINE, true);
        assertHandles(grown, true, null);
        assertPurgeRestores("savepoint-inline", grown, Storage.INLINE, false);
    }

    // ---------------------------------------------------------------------------------------------
    // 6. The removed state's classes are missing (KafkaTopicPartition on Flink 2.x).

    @Test
    public void purgeLetsJobRestoreWhenStateClassIsMissing() throws Exception {
        Path fixture = TestFiles.fixture("stale-union-legacy-class");
        assertTrue("fixture " + fixture + " (gradle generateFixtures<V> -Pfixtures=stale-union-legacy-class)",
                Files.isRegularFile(fixture.resolve("_metadata")));
        try {
            Class.forName("io.checkpointsurgeon.legacy.LegacyTopicPartition");
            fail("LegacyTopicPartition must not be on the test classpath");
        } catch (ClassNotFoundException expected) {
            // as on Flink 2.x without the legacy Kafka consumer
        }
        Path copy = work.resolve("legacy-fixture");
        TestFiles.copyRecursively(fixture, copy);

        Result asIs = runV2("legacy-as-is", Storage.INLINE, copy);
        assertNotNull("restoring the fixture as it is must fail: its union state names a missing class", asIs.failure());
        String text = asIs.failureText();
        assertTrue(text, text.contains("LegacyTopicPartition"));
        GROWTH_LOG.add("missing class, restore as-is fails: " + rootCause(asIs.failure()));

        // metadata-only keeps the header entry, so the class is still needed.
        Path metadataOnly = work.resolve("legacy-metadata-only");
        assertValidated(CheckpointSurgeon.apply(copy,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE).metadataOnly(), metadataOnly));
        Result mo = runV2("legacy-metadata-only", Storage.INLINE, metadataOnly);
        assertNotNull("metadata-only keeps the serializer snapshot, which names the missing class", mo.failure());
        assertTrue(mo.failureText(), mo.failureText().contains("LegacyTopicPartition"));

        Path purged = work.resolve("legacy-purged");
        SurgeryPlan plan = CheckpointSurgeon.apply(copy,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE), purged);
        assertValidated(plan);
        assertEquals((long) P * UNION_PER_SUBTASK, plan.elementsRemoved());
        Result run = runV2("legacy-purged", Storage.INLINE, purged);
        assertV2Restored(run);
        assertNull("purged: " + stateNames(run.checkpointPath()), unionElements(run.checkpointPath()));
    }

    // ---------------------------------------------------------------------------------------------
    // Scenario steps

    private static synchronized Chain inlineChain() throws Exception {
        if (inline == null) {
            Chain c = new Chain();
            Result v1 = runV1("inline-v1", Storage.INLINE, false);
            c.checkpoints.add(v1.checkpointPath());
            c.unionElements.add(unionElements(v1.checkpointPath()));
            Path from = v1.checkpointPath();
            for (int r = 1; r <= 3; r++) {
                Result run = runV2("inline-r" + r, Storage.INLINE, from);
                assertV2Restored(run);
                c.checkpoints.add(run.checkpointPath());
                c.unionElements.add(unionElements(run.checkpointPath()));
                from = run.checkpointPath();
            }
            GROWTH_LOG.add("inline retained checkpoints (v1, restore 1..3): " + c.unionElements
                    + " (_metadata bytes " + metadataSizes(c.checkpoints) + ")");
            inline = c;
        }
        return inline;
    }

    /** v1, then one restore of v2; returns v2's retained checkpoint or stop-with-savepoint. */
    private static Path grownOnce(String tag, Storage storage, boolean savepoint) throws Exception {
        Result v1 = runV1(tag + "-v1", storage, false);
        long before = unionElements(v1.checkpointPath());
        Result r1 = runV2Full(tag + "-r1", storage, v1.checkpointPath(), savepoint);
        assertV2Restored(r1);
        Path grown = savepoint ? r1.savepointPath() : r1.checkpointPath();
        long after = unionElements(grown);
        GROWTH_LOG.add(tag + ": " + before + " -> " + after + (savepoint ? " (savepoint)" : ""));
        assertEquals((long) P * UNION_PER_SUBTASK, before);
        assertEquals(before * P, after);
        return grown;
    }

    /**
     * Purges the union state from {@code grown}, restores v2 from the result and checks the next
     * checkpoint: the state is gone, every other state holds the values v1 wrote.
     */
    private static void assertPurgeRestores(String tag, Path grown, Storage storage, boolean expectNewStreams)
            throws Exception {
        long grownCount = unionElements(grown);
        Path out = work.resolve(tag + "-purged");
        SurgeryPlan plan = CheckpointSurgeon.apply(grown,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE), out);
        assertValidated(plan);
        assertEquals(SurgeryPlan.Depth.PURGE, plan.depth());
        assertEquals(grownCount, plan.elementsRemoved());
        assertNull("purged copy: " + stateNames(out), unionElements(out));
        if (expectNewStreams) {
            assertFalse("rewritten streams: " + plan.newStreams(), plan.newStreams().isEmpty());
        }
        if (storage == Storage.FILE_MERGING) {
            // Rewritten segment handles become plain file handles; Flink's loader accepted them above.
            assertFalse(plan.result().written().isEmpty());
            List<String> kinds = consumerHandleKinds(out);
            assertTrue(kinds.toString(), kinds.stream().noneMatch(k -> k.contains("Segment")));
            GROWTH_LOG.add(tag + " purged copy handles " + new java.util.TreeSet<>(kinds));
        }
        Result run = runV2(tag + "-after", storage, out);
        assertV2Restored(run);
        Path next = run.checkpointPath();
        assertNull("state in the next checkpoint: " + stateNames(next), unionElements(next));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elements(next, SPLIT_STATE));
        // The State Processor API reads the same values v1 wrote from the next checkpoint.
        List<String> read = StateReads.splitListAndKeyed(next.toString(), CONSUMER_UID, SPLIT_STATE, KEYED_UID, KEYED_STATE);
        assertEquals(expectedRead(), read);
    }

    private static Result runV1(String name, Storage storage, boolean savepoint) throws Exception {
        RestoreScenario.resetReports();
        Result run = run(name, storage, null, savepoint,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV1(), new RestoreScenario.KeyedWriter()),
                () -> RestoreScenario.KEYS_WRITTEN.size() == KEYS);
        assertNull(run.failureText(), run.failure());
        return run;
    }

    private static Result runV2(String name, Storage storage, Path from) throws Exception {
        return runV2Full(name, storage, from, false);
    }

    private static Result runV2Full(String name, Storage storage, Path from, boolean savepoint) throws Exception {
        RestoreScenario.resetReports();
        return run(name, storage, from, savepoint,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV2(), new RestoreScenario.KeyedProbe()),
                () -> RestoreScenario.SPLIT_SEEN.size() == P && RestoreScenario.KEYED_SEEN.size() == KEYS);
    }

    private static Result runUnionReader(String name, Path from) throws Exception {
        RestoreScenario.resetReports();
        return run(name, Storage.INLINE, from, false,
                env -> RestoreScenario.job(env, P, new RestoreScenario.UnionReader(), new RestoreScenario.KeyedProbe()),
                () -> RestoreScenario.UNION_SEEN.size() == P && RestoreScenario.SPLIT_SEEN.size() == P
                        && RestoreScenario.KEYED_SEEN.size() == KEYS);
    }

    private static Result runWithoutKeyed(String name, Path from) throws Exception {
        RestoreScenario.resetReports();
        return run(name, Storage.INLINE, from, false,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV2(), null),
                () -> RestoreScenario.SPLIT_SEEN.size() == P);
    }

    /** v2 restored: the split list and keyed values are exactly those v1 wrote. */
    private static void assertV2Restored(Result run) {
        assertNull(run.failureText(), run.failure());
        assertNotNull(run.checkpointPath());
        assertEquals(expectedSplit(), new TreeMap<>(RestoreScenario.SPLIT_SEEN));
        assertEquals(RestoreScenario.expectedKeyed(), new TreeMap<>(RestoreScenario.KEYED_SEEN));
    }

    private static Map<Integer, List<String>> expectedSplit() {
        return RestoreScenario.expectedSplit(P);
    }

    /** What {@link StateReads#splitListAndKeyed} returns for the values v1 wrote. */
    private static List<String> expectedRead() {
        List<String> l = new ArrayList<>();
        expectedSplit().values().forEach(v -> v.forEach(x -> l.add("split:" + x)));
        RestoreScenario.expectedKeyed().forEach((k, v) -> l.add("keyed:" + k + "=" + v));
        Collections.sort(l);
        return l;
    }

    // ---------------------------------------------------------------------------------------------
    // Inspection

    private static void assertValidated(SurgeryPlan plan) {
        assertNotNull(plan.result());
        assertEquals("Flink validation: " + plan.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK,
                plan.result().validation().status());
    }

    /** Elements of the union state over all operators, or null when no operator has that state. */
    private static Long unionElements(Path checkpoint) throws Exception {
        return elements(checkpoint, UNION_STATE);
    }

    private static Long elements(Path checkpoint, String state) throws Exception {
        Long sum = null;
        for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(checkpoint).operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                if (t.name().equals(state)) {
                    sum = (sum == null ? 0 : sum) + t.elements();
                }
            }
        }
        return sum;
    }

    private static String stateNames(Path checkpoint) {
        try {
            List<String> l = new ArrayList<>();
            for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(checkpoint).operators()) {
                for (InspectReport.StateTotal t : op.stateTotals()) {
                    l.add(t.name() + "(" + t.mode() + ", " + t.elements() + ")");
                }
            }
            return l.toString();
        } catch (Exception e) {
            return e.toString();
        }
    }

    /** Asserts the operator state handles of source_consumer are (not) all inline, or of a kind. */
    private static void assertHandles(Path checkpoint, boolean inlineExpected, String delegateKind) throws Exception {
        List<String> kinds = new ArrayList<>();
        boolean anyInline = false;
        for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(checkpoint).operators()) {
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    if (h.states().stream().anyMatch(st -> st.name().equals(UNION_STATE))) {
                        kinds.add(h.kind() + "/" + h.delegateKind() + (h.inline() ? "/inline" : ""));
                        anyInline |= h.inline();
                    }
                }
            }
        }
        assertFalse(kinds.isEmpty());
        if (inlineExpected) {
            assertTrue(kinds.toString(), anyInline);
        }
        if (delegateKind != null) {
            assertTrue(kinds.toString(), kinds.stream().allMatch(k -> k.contains(delegateKind)));
        }
        GROWTH_LOG.add(checkpoint.getFileName() + " handles " + new java.util.TreeSet<>(kinds));
    }

    /** Kind/delegate kind of source_consumer's operator state handles (the operator holding split-list). */
    private static List<String> consumerHandleKinds(Path checkpoint) throws Exception {
        List<String> kinds = new ArrayList<>();
        for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(checkpoint).operators()) {
            if (op.stateTotals().stream().noneMatch(t -> t.name().equals(SPLIT_STATE))) {
                continue;
            }
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    kinds.add(h.kind() + "/" + h.delegateKind() + (h.inline() ? "/inline" : ""));
                }
            }
        }
        return kinds;
    }

    private static List<Long> metadataSizes(List<Path> dirs) throws IOException {
        List<Long> l = new ArrayList<>();
        for (Path d : dirs) {
            l.add(Files.size(d.resolve("_metadata")));
        }
        return l;
    }

    // ---------------------------------------------------------------------------------------------
    // Running jobs

    private static Configuration conf(String tag, Storage storage, Path restoreFrom) throws IOException {
        Path base = work.resolve("jobs").resolve(tag);
        Path checkpoints = Files.createDirectories(base.resolve("checkpoints"));
        Path savepoints = Files.createDirectories(base.resolve("savepoints"));
        Configuration c = FlinkConf.checkpointing("hashmap", checkpoints.toUri().toString(),
                savepoints.toUri().toString(), "200 ms", 1);
        FlinkConf.noRestarts(c);
        if (storage != Storage.INLINE) {
            FlinkConf.inlineThreshold(c, "0");
        }
        if (storage == Storage.FILE_MERGING) {
            FlinkConf.fileMerging(c);
        }
        if (restoreFrom != null) {
            FlinkConf.restoreFrom(c, restoreFrom.toUri().toString());
        }
        return c;
    }

    /**
     * Runs a job until {@code ready} holds and two more checkpoints completed (or it failed), then
     * cancels it (or stops it with a canonical savepoint) and returns its last retained checkpoint.
     */
    private static Result run(String name, Storage storage, Path restoreFrom, boolean savepoint,
                              Consumer<StreamExecutionEnvironment> topology, BooleanSupplier ready) throws Exception {
        MiniClusterJob job = MiniClusterJob.of(name, conf(name, storage, restoreFrom), P, topology)
                .readyWhen(ready)
                .timeout(Duration.ofSeconds(RUN_TIMEOUT_SECONDS));
        return (savepoint ? job.stopWithSavepoint() : job).run();
    }

    private static String rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = String.valueOf(t);
        return m.length() > 300 ? m.substring(0, 300) + "..." : m;
    }

    private static String flinkVersion() {
        return System.getProperty("flink.version", "?");
    }
}
