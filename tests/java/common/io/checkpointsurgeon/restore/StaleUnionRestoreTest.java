package io.checkpointsurgeon.restore;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.fixtures.RestoreScenario;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.stream.Stream;

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

    static final class Run {
        Path jobDir;
        Path checkpoint;
        Path savepoint;
        Throwable failure;
    }

    @BeforeClass
    public static void setUp() throws IOException {
        work = Files.createTempDirectory("checkpoint-surgeon-restore");
    }

    @AfterClass
    public static void tearDown() throws IOException {
        System.out.println("Flink " + flinkVersion() + " restore growth: " + GROWTH_LOG);
        if (work != null) {
            deleteRecursively(work);
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
        List<String> cp = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            String n = Paths.get(e).getFileName().toString();
            if (n.startsWith("checkpoint-surgeon") || n.startsWith("picocli")) {
                cp.add(e);
            }
        }
        String javaBin = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(javaBin, "-cp", String.join(java.io.File.pathSeparator, cp),
                "io.checkpointsurgeon.cli.Cli", "remove-state", grown.toString(), "--uid", CONSUMER_UID,
                "--state", UNION_STATE, "--apply", "--output", out.toString()).redirectErrorStream(true);
        Process proc = pb.start();
        String output = new String(proc.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(proc.waitFor(60, TimeUnit.SECONDS));
        assertEquals(output, 0, proc.exitValue());
        assertTrue(output, output.contains(c.unionElements.get(2) + " elements"));
        assertNull(stateNames(out), unionElements(out));
        Run run = runV2("cli-after", Storage.INLINE, out);
        assertV2Restored(run);
        assertNull(stateNames(run.checkpoint), unionElements(run.checkpoint));
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
            Run run = runV2("metadata-only-r" + r, Storage.INLINE, from);
            assertV2Restored(run);
            Long elements = unionElements(run.checkpoint);
            assertNotNull("metadata-only keeps the state registered (header entry): " + stateNames(run.checkpoint), elements);
            assertEquals("union elements after metadata-only surgery and restore " + r, 0L, (long) elements);
            from = run.checkpoint;
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
        Run control = runUnionReader("dedupe-control", grown);
        assertNull(failureText(control.failure), control.failure);
        long grownCount = c.unionElements.get(c.unionElements.size() - 1);
        for (int s = 0; s < P; s++) {
            assertEquals("subtask " + s + " restored the grown union", grownCount,
                    RestoreScenario.UNION_SEEN.get(s).size());
        }

        Path out = work.resolve("dedupe");
        SurgeryPlan plan = CheckpointSurgeon.apply(grown,
                Surgery.dedupeUnion(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE), out);
        assertValidated(plan);
        Run run = runUnionReader("dedupe", out);
        assertNull(failureText(run.failure), run.failure);
        for (int s = 0; s < P; s++) {
            List<String> seen = new ArrayList<>(RestoreScenario.UNION_SEEN.get(s));
            Collections.sort(seen);
            assertEquals("union elements subtask " + s + " restored after dedupe", distinct, seen);
        }
        assertEquals(expectedSplit(), new TreeMap<>(RestoreScenario.SPLIT_SEEN));
        // The reader writes back only its own entries: the next checkpoint holds P*2 again.
        assertEquals(Long.valueOf((long) P * UNION_PER_SUBTASK), unionElements(run.checkpoint));
    }

    // ---------------------------------------------------------------------------------------------
    // 5. Remove an operator, restore a job graph without it, without allowNonRestoredState.

    @Test
    public void removeOperatorRestoresWithoutAllowNonRestoredState() throws Exception {
        Chain c = inlineChain();
        Path chk = c.checkpoints.get(1);
        // Control: Flink refuses the checkpoint for the smaller job graph.
        Run control = runWithoutKeyed("remove-operator-control", chk);
        assertNotNull("restoring state of a removed operator must fail without allowNonRestoredState", control.failure);
        String text = failureText(control.failure);
        assertTrue(text, text.contains("allowNonRestoredState"));
        GROWTH_LOG.add("remove-operator control fails: " + rootCause(control.failure));

        Path out = work.resolve("remove-operator");
        SurgeryPlan plan = CheckpointSurgeon.apply(chk, Surgery.removeOperator(Surgery.OperatorSelector.uid(KEYED_UID)), out);
        assertValidated(plan);
        int before = CheckpointSurgeon.inspect(chk).operators().size();
        assertEquals(before - 1, CheckpointSurgeon.inspect(out).operators().size());
        Run run = runWithoutKeyed("remove-operator", out);
        assertNull(failureText(run.failure), run.failure);
        assertNotNull(run.checkpoint);
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
        Path fixture = Paths.get(System.getProperty("fixtures.dir"), "stale-union-legacy-class");
        assertTrue("fixture " + fixture + " (gradle generateFixtures<V> -Pfixtures=stale-union-legacy-class)",
                Files.isRegularFile(fixture.resolve("_metadata")));
        try {
            Class.forName("io.checkpointsurgeon.legacy.LegacyTopicPartition");
            fail("LegacyTopicPartition must not be on the test classpath");
        } catch (ClassNotFoundException expected) {
            // as on Flink 2.x without the legacy Kafka consumer
        }
        Path copy = work.resolve("legacy-fixture");
        copyRecursively(fixture, copy);

        Run asIs = runV2("legacy-as-is", Storage.INLINE, copy);
        assertNotNull("restoring the fixture as it is must fail: its union state names a missing class", asIs.failure);
        String text = failureText(asIs.failure);
        assertTrue(text, text.contains("LegacyTopicPartition"));
        GROWTH_LOG.add("missing class, restore as-is fails: " + rootCause(asIs.failure));

        // metadata-only keeps the header entry, so the class is still needed.
        Path metadataOnly = work.resolve("legacy-metadata-only");
        assertValidated(CheckpointSurgeon.apply(copy,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE).metadataOnly(), metadataOnly));
        Run mo = runV2("legacy-metadata-only", Storage.INLINE, metadataOnly);
        assertNotNull("metadata-only keeps the serializer snapshot, which names the missing class", mo.failure);
        assertTrue(failureText(mo.failure), failureText(mo.failure).contains("LegacyTopicPartition"));

        Path purged = work.resolve("legacy-purged");
        SurgeryPlan plan = CheckpointSurgeon.apply(copy,
                Surgery.removeState(Surgery.OperatorSelector.uid(CONSUMER_UID), UNION_STATE), purged);
        assertValidated(plan);
        assertEquals((long) P * UNION_PER_SUBTASK, plan.elementsRemoved());
        Run run = runV2("legacy-purged", Storage.INLINE, purged);
        assertV2Restored(run);
        assertNull("purged: " + stateNames(run.checkpoint), unionElements(run.checkpoint));
    }

    // ---------------------------------------------------------------------------------------------
    // Scenario steps

    private static synchronized Chain inlineChain() throws Exception {
        if (inline == null) {
            Chain c = new Chain();
            Run v1 = runV1("inline-v1", Storage.INLINE, false);
            c.checkpoints.add(v1.checkpoint);
            c.unionElements.add(unionElements(v1.checkpoint));
            Path from = v1.checkpoint;
            for (int r = 1; r <= 3; r++) {
                Run run = runV2("inline-r" + r, Storage.INLINE, from);
                assertV2Restored(run);
                c.checkpoints.add(run.checkpoint);
                c.unionElements.add(unionElements(run.checkpoint));
                from = run.checkpoint;
            }
            GROWTH_LOG.add("inline retained checkpoints (v1, restore 1..3): " + c.unionElements
                    + " (_metadata bytes " + metadataSizes(c.checkpoints) + ")");
            inline = c;
        }
        return inline;
    }

    /** v1, then one restore of v2; returns v2's retained checkpoint or stop-with-savepoint. */
    private static Path grownOnce(String tag, Storage storage, boolean savepoint) throws Exception {
        Run v1 = runV1(tag + "-v1", storage, false);
        long before = unionElements(v1.checkpoint);
        Run r1 = runV2Full(tag + "-r1", storage, v1.checkpoint, savepoint);
        assertV2Restored(r1);
        Path grown = savepoint ? r1.savepoint : r1.checkpoint;
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
        assertEquals("purge", plan.depth());
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
        Run run = runV2(tag + "-after", storage, out);
        assertV2Restored(run);
        Path next = run.checkpoint;
        assertNull("state in the next checkpoint: " + stateNames(next), unionElements(next));
        assertEquals(Long.valueOf((long) P * SPLIT_PER_SUBTASK), elements(next, SPLIT_STATE));
        // The State Processor API reads the same values v1 wrote from the next checkpoint.
        List<String> read = ReaderShims.read(next.toString(), CONSUMER_UID, SPLIT_STATE, KEYED_UID, KEYED_STATE);
        assertEquals(expectedRead(), read);
    }

    private static Run runV1(String name, Storage storage, boolean savepoint) throws Exception {
        RestoreScenario.resetReports();
        Run run = run(name, storage, null, savepoint,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV1(), new RestoreScenario.KeyedWriter()),
                () -> RestoreScenario.KEYS_WRITTEN.size() == KEYS);
        assertNull(failureText(run.failure), run.failure);
        return run;
    }

    private static Run runV2(String name, Storage storage, Path from) throws Exception {
        return runV2Full(name, storage, from, false);
    }

    private static Run runV2Full(String name, Storage storage, Path from, boolean savepoint) throws Exception {
        RestoreScenario.resetReports();
        return run(name, storage, from, savepoint,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV2(), new RestoreScenario.KeyedProbe()),
                () -> RestoreScenario.SPLIT_SEEN.size() == P && RestoreScenario.KEYED_SEEN.size() == KEYS);
    }

    private static Run runUnionReader(String name, Path from) throws Exception {
        RestoreScenario.resetReports();
        return run(name, Storage.INLINE, from, false,
                env -> RestoreScenario.job(env, P, new RestoreScenario.UnionReader(), new RestoreScenario.KeyedProbe()),
                () -> RestoreScenario.UNION_SEEN.size() == P && RestoreScenario.SPLIT_SEEN.size() == P
                        && RestoreScenario.KEYED_SEEN.size() == KEYS);
    }

    private static Run runWithoutKeyed(String name, Path from) throws Exception {
        RestoreScenario.resetReports();
        return run(name, Storage.INLINE, from, false,
                env -> RestoreScenario.job(env, P, new RestoreScenario.ConsumerV2(), null),
                () -> RestoreScenario.SPLIT_SEEN.size() == P);
    }

    /** v2 restored: the split list and keyed values are exactly those v1 wrote. */
    private static void assertV2Restored(Run run) {
        assertNull(failureText(run.failure), run.failure);
        assertNotNull(run.checkpoint);
        assertEquals(expectedSplit(), new TreeMap<>(RestoreScenario.SPLIT_SEEN));
        Map<Long, String> keyed = new TreeMap<>();
        for (long k = 0; k < KEYS; k++) {
            keyed.put(k, RestoreScenario.keyedValue(k));
        }
        assertEquals(keyed, new TreeMap<>(RestoreScenario.KEYED_SEEN));
    }

    private static Map<Integer, List<String>> expectedSplit() {
        Map<Integer, List<String>> m = new TreeMap<>();
        for (int s = 0; s < P; s++) {
            List<String> l = new ArrayList<>();
            for (int i = 0; i < SPLIT_PER_SUBTASK; i++) {
                l.add(RestoreScenario.splitValue(s, i));
            }
            Collections.sort(l);
            m.put(s, l);
        }
        return m;
    }

    private static List<String> expectedRead() {
        List<String> l = new ArrayList<>();
        expectedSplit().values().forEach(v -> v.forEach(x -> l.add("split:" + x)));
        for (long k = 0; k < KEYS; k++) {
            l.add("keyed:" + k + "=" + RestoreScenario.keyedValue(k));
        }
        Collections.sort(l);
        return l;
    }

    // ---------------------------------------------------------------------------------------------
    // Inspection

    private static void assertValidated(SurgeryPlan plan) {
        assertNotNull(plan.result());
        String v = plan.result().flinkValidation();
        assertTrue("Flink validation: " + v, v.startsWith("loaded by Flink"));
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
        Path checkpoints = base.resolve("checkpoints");
        Path savepoints = base.resolve("savepoints");
        Files.createDirectories(checkpoints);
        Files.createDirectories(savepoints);
        Configuration c = new Configuration();
        set(c, "hashmap", "state.backend", "state.backend.type");
        set(c, checkpoints.toUri().toString(), "state.checkpoints.dir", "execution.checkpointing.dir");
        set(c, savepoints.toUri().toString(), "state.savepoints.dir", "execution.checkpointing.savepoint-dir");
        set(c, "200 ms", "execution.checkpointing.interval");
        set(c, "RETAIN_ON_CANCELLATION", "execution.checkpointing.externalized-checkpoint-retention");
        set(c, "1", "state.checkpoints.num-retained", "execution.checkpointing.num-retained");
        set(c, "100", "execution.checkpointing.tolerable-failed-checkpoints");
        set(c, "none", "restart-strategy", "restart-strategy.type");
        set(c, "0", "rest.bind-port");
        set(c, "false", "state.backend.local-recovery", "execution.state-recovery.from-local");
        if (storage != Storage.INLINE) {
            set(c, "0", "state.storage.fs.memory-threshold", "execution.checkpointing.data-inline-threshold");
        }
        if (storage == Storage.FILE_MERGING) {
            set(c, "true", "execution.checkpointing.file-merging.enabled");
        }
        if (restoreFrom != null) {
            set(c, restoreFrom.toUri().toString(), "execution.savepoint.path", "execution.state-recovery.path");
        }
        return c;
    }

    private static void set(Configuration c, String value, String... keys) {
        for (String k : keys) {
            c.setString(k, value);
        }
    }

    /**
     * Runs a job until {@code ready} holds and two more checkpoints completed (or it failed), then
     * cancels it (or stops it with a canonical savepoint) and returns its last retained checkpoint.
     */
    private static Run run(String name, Storage storage, Path restoreFrom, boolean savepoint,
                           Consumer<StreamExecutionEnvironment> topology, BooleanSupplier ready) throws Exception {
        Configuration conf = conf(name, storage, restoreFrom);
        Path checkpoints = toPath(conf.toMap().get("state.checkpoints.dir"));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(P, conf);
        topology.accept(env);
        Run run = new Run();
        JobClient client;
        try {
            client = env.executeAsync(name);
        } catch (Exception e) {
            run.failure = e;
            return run;
        }
        run.jobDir = checkpoints.resolve(client.getJobID().toString());
        CompletableFuture<?> result = client.getJobExecutionResult();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(RUN_TIMEOUT_SECONDS);
        long readyAt = -1;
        try {
            while (true) {
                if (result.isDone()) {
                    try {
                        result.get();
                        run.failure = new IllegalStateException(name + " finished before it was ready");
                    } catch (Exception e) {
                        run.failure = e;
                    }
                    return run;
                }
                if (System.nanoTime() > deadline) {
                    run.failure = new IllegalStateException(name + " timed out (ready " + (readyAt >= 0)
                            + ", latest checkpoint " + latestId(run.jobDir) + ")");
                    return run;
                }
                long latest = latestId(run.jobDir);
                if (readyAt < 0 && ready.getAsBoolean()) {
                    readyAt = latest;
                }
                if (readyAt >= 0 && latest >= readyAt + 2) {
                    break;
                }
                Thread.sleep(50);
            }
            // A job stopped with a savepoint finishes, and Flink may then delete its retained
            // checkpoints at any moment: remember the last one seen while it ran.
            run.checkpoint = latestCheckpoint(run.jobDir);
            if (savepoint) {
                String sp = client.stopWithSavepoint(false, toPath(conf.toMap().get("state.savepoints.dir")).toUri().toString(),
                        SavepointFormatType.CANONICAL).get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                run.savepoint = toPath(sp);
                result.handle((r, t) -> null).get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        } finally {
            if (!result.isDone()) {
                try {
                    client.cancel().get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
                } catch (Exception ignored) {
                    // finished meanwhile
                }
                result.handle((r, t) -> null).get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            }
        }
        Path latest = latestCheckpoint(run.jobDir);
        if (latest != null) {
            run.checkpoint = latest;
        }
        return run;
    }

    private static long latestId(Path jobDir) {
        Path p = latestCheckpoint(jobDir);
        return p == null ? 0 : Long.parseLong(p.getFileName().toString().substring(4));
    }

    private static Path latestCheckpoint(Path jobDir) {
        if (jobDir == null || !Files.isDirectory(jobDir)) {
            return null;
        }
        try (Stream<Path> dirs = Files.list(jobDir)) {
            return dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                    .filter(d -> Files.exists(d.resolve("_metadata")))
                    .max(Comparator.comparingLong(d -> Long.parseLong(d.getFileName().toString().substring(4))))
                    .orElse(null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String failureText(Throwable t) {
        if (t == null) {
            return "no failure";
        }
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        return sw.toString();
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

    private static Path toPath(String uriOrPath) {
        if (uriOrPath.startsWith("file:")) {
            return Paths.get(URI.create(uriOrPath.startsWith("file:///") || !uriOrPath.startsWith("file://")
                    ? uriOrPath : "file:///" + uriOrPath.substring("file://".length())));
        }
        return Paths.get(uriOrPath);
    }

    private static void copyRecursively(Path from, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t);
                }
            }
        }
    }

    private static void deleteRecursively(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            List<Path> all = new ArrayList<>();
            s.forEach(all::add);
            Collections.reverse(all);
            for (Path x : all) {
                Files.deleteIfExists(x);
            }
        }
    }
}
