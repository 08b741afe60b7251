package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.junit.Test;

/**
 * rename-operator on a savepoint of a job with a FLIP-27 source (FLINK-40837): job A (uids a-...)
 * is stopped with a savepoint mid-stream; the operators get the uids b-... with {@code
 * rename-operator --map}; job B (uids b-...) restores from the result <b>without</b>
 * allowNonRestoredState and runs to its end. The source resumes from its enumerator and reader
 * state: every number of the sequence is processed exactly once over A and B, and the keyed running
 * sums end exact. On Flink 1.17+ the State Processor API's {@code changeOperatorIdentifier} on the
 * same savepoint drops the coordinator state, and the test shows job B then processes numbers twice.
 * A job that never set uids is mapped by the ids {@code inspect} reports.
 */
public class RenameOperatorRestoreTest {
    private static final long N = 6_000;
    private static final int KEYS = 8;
    private static final int PARALLELISM = 2;

    /** What each run's keyed function saw: {number, key, running sum after it}. */
    static final Map<String, Queue<long[]>> SEEN = new ConcurrentHashMap<>();

    @Test
    public void renamedOperatorsKeepTheirSourceAndKeyedState() throws Exception {
        Path work = Files.createTempDirectory("cs-rename-restore");
        Path savepoint = stopMidStream(work, "A", "a");
        Map<String, String> uids = new LinkedHashMap<>();
        for (String op : new String[] {"source", "throttle", "sum", "sink"}) {
            uids.put("a-" + op, "b-" + op);
        }
        Path map = work.resolve("uids.map");
        StringBuilder lines = new StringBuilder("# old uid -> new uid\n");
        uids.forEach((a, b) -> lines.append(a).append(' ').append(b).append('\n'));
        Files.writeString(map, lines.toString());

        Path renamed = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-operator", savepoint.toString(), "--map", map.toString(),
                "--apply", "--output", renamed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertTrue(r.output, r.output.contains("loaded by Flink"));
        // the coordinator (enumerator) state moved with the source
        InspectReport before = CheckpointSurgeon.inspect(savepoint);
        InspectReport after = CheckpointSurgeon.inspect(renamed);
        assertEquals(coordinatorBytes(before), coordinatorBytes(after));
        assertTrue(coordinatorBytes(after) > 0);

        runToEnd(work, "B", "b", renamed);
        Outcome ours = outcome("A", "B");
        assertEquals(ours.toString(), 0, ours.twice);
        assertEquals(ours.toString(), 0, ours.missing);
        assertEquals(ours.toString(), expectedSums(), ours.finalSums);

        // The State Processor API's route on the same savepoint (Flink 1.17+): FLINK-40837.
        Path spa = work.resolve("spa");
        if (ReaderShims.changeOperatorIdentifiers(savepoint.toString(), uids, spa.toString())) {
            runToEnd(work, "B-spa", "b", spa);
            Outcome theirs = outcome("A", "B-spa");
            System.out.println("FLINK-40837 on Flink " + System.getProperty("flink.version") + ": after A processed "
                    + SEEN.get("A").size() + " of " + N + " numbers, job B processed each remaining number once after "
                    + "rename-operator (" + ours + "), and after changeOperatorIdentifier " + theirs);
            assertTrue("changeOperatorIdentifier drops the enumerator state, so numbers come twice: " + theirs,
                    theirs.twice > 0);
        }
    }

    @Test
    public void aJobWithoutUidsIsMappedByTheIdsInspectReports() throws Exception {
        Path work = Files.createTempDirectory("cs-rename-nouid");
        Path savepoint = stopMidStream(work, "A0", null);
        // the generated ids: the source is the operator with coordinator state, the keyed
        // function the one with keyed state (the stateless ones need no mapping)
        InspectReport report = CheckpointSurgeon.inspect(savepoint);
        StringBuilder lines = new StringBuilder();
        for (InspectReport.OperatorInfo op : report.operators()) {
            if (op.coordinatorStateBytes() > 0) {
                lines.append(op.id()).append(" b-source\n");
            } else if (op.keyedStateBytes() > 0) {
                lines.append(op.id()).append(" b-sum\n");
            }
        }
        assertEquals(lines.toString(), 2, lines.toString().split("\n").length);
        Path map = work.resolve("ids.map");
        Files.writeString(map, lines.toString());
        Path renamed = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-operator", savepoint.toString(), "--map", map.toString(),
                "--apply", "--output", renamed.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);

        runToEnd(work, "B0", "b", renamed);
        Outcome o = outcome("A0", "B0");
        assertEquals(o.toString(), 0, o.twice);
        assertEquals(o.toString(), 0, o.missing);
        assertEquals(o.toString(), expectedSums(), o.finalSums);
    }

    /** Runs the job with uids {@code <prefix>-...} (none when null) and stops it with a savepoint mid-stream. */
    private static Path stopMidStream(Path work, String run, String prefix) throws Exception {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        MiniClusterJob.Result r = MiniClusterJob.of(run, conf(work, run), PARALLELISM, env -> topology(env, run, prefix))
                .readyWhen(() -> SEEN.get(run).size() >= N / 10)
                .checkpointsAfterReady(1)
                .stopWithSavepoint()
                .run();
        if (r.failure() != null) {
            throw new AssertionError(r.failureText());
        }
        int seen = SEEN.get(run).size();
        assertTrue(run + " stopped mid-stream: " + seen + " of " + N, seen > 0 && seen < N);
        return r.savepointPath();
    }

    /** Runs the job with uids {@code <prefix>-...} from {@code restore} to its end. */
    private static void runToEnd(Path work, String run, String prefix, Path restore) throws Exception {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        Configuration conf = conf(work, run);
        FlinkConf.restoreFrom(conf, restore.toUri().toString());
        FlinkConf.noRestarts(conf);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(PARALLELISM, conf);
        topology(env, run, prefix);
        env.execute(run);
    }

    private static Configuration conf(Path work, String run) {
        return FlinkConf.checkpointing("hashmap", work.resolve(run + "-checkpoints").toUri().toString(),
                work.resolve(run + "-savepoints").toUri().toString(), "100ms", 1);
    }

    /** numbers 1..N (FLIP-27, throttled) -> keyed running sum -> sink. */
    private static void topology(StreamExecutionEnvironment env, String run, String prefix) {
        DataStream<Long> numbers = uid(env.fromSource(new NumberSequenceSource(1, N), WatermarkStrategy.noWatermarks(),
                "numbers"), prefix, "source");
        DataStream<Long> slow = uid(numbers.map(new Functions.Sleep(1)), prefix, "throttle");
        DataStream<Long> sums = uid(slow.keyBy(new Functions.ModKey(KEYS)).process(new RunningSum(run)), prefix, "sum");
        Shims.discard(sums, prefix == null ? "sink-" + run : prefix + "-sink");
    }

    private static <T> SingleOutputStreamOperator<T> uid(SingleOutputStreamOperator<T> s, String prefix, String op) {
        return prefix == null ? s : s.uid(prefix + "-" + op);
    }

    private static <T> DataStream<T> uid(DataStream<T> s, String prefix, String op) {
        return s instanceof SingleOutputStreamOperator ? uid((SingleOutputStreamOperator<T>) s, prefix, op) : s;
    }

    static final class RunningSum extends KeyedProcessFunction<Long, Long, Long> {
        private final String run;
        private transient ValueState<Long> sum;

        RunningSum(String run) {
            this.run = run;
        }

        @Override
        public void processElement(Long value, Context ctx, Collector<Long> out) throws Exception {
            if (sum == null) {
                sum = getRuntimeContext().getState(new ValueStateDescriptor<>("sum", Types.LONG));
            }
            long s = (sum.value() == null ? 0 : sum.value()) + value;
            sum.update(s);
            SEEN.get(run).add(new long[] {value, ctx.getCurrentKey(), s});
            out.collect(value);
        }
    }

    private static long coordinatorBytes(InspectReport r) {
        return r.operators().stream().mapToLong(InspectReport.OperatorInfo::coordinatorStateBytes).sum();
    }

    private static Map<Long, Long> expectedSums() {
        Map<Long, Long> sums = new TreeMap<>();
        for (long n = 1; n <= N; n++) {
            sums.merge(n % KEYS, n, Long::sum);
        }
        return sums;
    }

    /** Numbers seen twice and never over two runs, and the last running sum of each key. */
    private static Outcome outcome(String first, String second) {
        Map<Long, Integer> count = new HashMap<>();
        Map<Long, Long> finalSums = new TreeMap<>();
        List<long[]> all = new ArrayList<>(SEEN.get(first));
        all.addAll(SEEN.get(second));
        for (long[] s : all) {
            count.merge(s[0], 1, Integer::sum);
            finalSums.merge(s[1], s[2], Math::max);
        }
        long twice = count.values().stream().filter(c -> c > 1).count();
        long missing = 0;
        for (long n = 1; n <= N; n++) {
            if (!count.containsKey(n)) {
                missing++;
            }
        }
        return new Outcome(SEEN.get(second).size(), twice, missing, finalSums);
    }

    static final class Outcome {
        final int processed;
        final long twice;
        final long missing;
        final Map<Long, Long> finalSums;

        Outcome(int processed, long twice, long missing, Map<Long, Long> finalSums) {
            this.processed = processed;
            this.twice = twice;
            this.missing = missing;
            this.finalSums = finalSums;
        }

        @Override
        public String toString() {
            return "job B processed " + processed + ", " + twice + " numbers twice, " + missing + " never";
        }
    }
}
