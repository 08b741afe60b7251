package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
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

/**
 * The job of the restore tests that move state: numbers 1..N from a FLIP-27 source (throttled)
 * into keyed running sums, then a sink. What each run's keyed function saw is kept in {@link #SEEN},
 * so a test can check that a restored job lost and repeated nothing ({@link #outcome}) and that
 * its keyed state ends exact ({@link #expectedSums}).
 */
final class NumbersJob {
    private NumbersJob() {}

    static final long N = 6_000;
    static final int KEYS = 8;
    static final int PARALLELISM = 2;

    /** What each run's keyed function saw: {number, key, running sum after it}. */
    static final Map<String, Queue<long[]>> SEEN = new ConcurrentHashMap<>();

    /** Runs the job with uids {@code <prefix>-...} (none when null) and stops it with a savepoint mid-stream. */
    static Path stopMidStream(Path work, String run, String prefix) throws Exception {
        return midStream(conf(work, run), run, prefix, 1, Ending.SAVEPOINT).savepointPath();
    }

    /** How {@link #midStream} ends the job. */
    enum Ending { CANCEL, SAVEPOINT, NATIVE_SAVEPOINT }

    /**
     * Runs the job with this configuration until {@code checkpoints} more checkpoints completed
     * mid-stream, then ends it: cancelled (keeping its retained checkpoint), or stopped with a
     * canonical or native savepoint.
     */
    static MiniClusterJob.Result midStream(Configuration conf, String run, String prefix, int checkpoints,
                                           Ending ending) throws Exception {
        return midStream(conf, run, prefix, checkpoints, ending, 1);
    }

    /** {@link #midStream} with {@code sleepMs} per number (slow checkpoint storage: S3Proxy). */
    static MiniClusterJob.Result midStream(Configuration conf, String run, String prefix, int checkpoints,
                                           Ending ending, int sleepMs) throws Exception {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        MiniClusterJob job = MiniClusterJob.of(run, conf, PARALLELISM, env -> topology(env, run, prefix, sleepMs))
                .readyWhen(() -> SEEN.get(run).size() >= N / 10)
                .checkpointsAfterReady(checkpoints);
        MiniClusterJob.Result r = (ending == Ending.SAVEPOINT ? job.stopWithSavepoint()
                : ending == Ending.NATIVE_SAVEPOINT ? job.stopWithNativeSavepoint() : job).run();
        if (r.failure() != null) {
            throw new AssertionError(r.failureText());
        }
        int seen = SEEN.get(run).size();
        assertTrue(run + " stopped mid-stream: " + seen + " of " + N, seen > 0 && seen < N);
        return r;
    }

    /** Runs the job with uids {@code <prefix>-...} from {@code restore} to its end. */
    static void runToEnd(Path work, String run, String prefix, Path restore) throws Exception {
        runToEnd(conf(work, run), run, prefix, restore);
    }

    /** {@link #runToEnd(Path, String, String, Path)} with this configuration. */
    static void runToEnd(Configuration conf, String run, String prefix, Path restore) throws Exception {
        runToEnd(conf, run, prefix, restore.toUri().toString());
    }

    /** {@link #runToEnd(Configuration, String, String, Path)} from a Flink path ({@code s3://...}). */
    static void runToEnd(Configuration conf, String run, String prefix, String restore) throws Exception {
        SEEN.put(run, new ConcurrentLinkedQueue<>());
        FlinkConf.restoreFrom(conf, restore);
        FlinkConf.noRestarts(conf);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(PARALLELISM, conf);
        topology(env, run, prefix);
        env.execute(run);
    }

    static Configuration conf(Path work, String run) {
        return conf(work, run, "hashmap");
    }

    static Configuration conf(Path work, String run, String backend) {
        return FlinkConf.checkpointing(backend, work.resolve(run + "-checkpoints").toUri().toString(),
                work.resolve(run + "-savepoints").toUri().toString(), "100ms", 1);
    }

    /** numbers 1..N (FLIP-27, throttled) -> keyed running sum -> sink. */
    static void topology(StreamExecutionEnvironment env, String run, String prefix) {
        topology(env, run, prefix, 1);
    }

    static void topology(StreamExecutionEnvironment env, String run, String prefix, int sleepMs) {
        DataStream<Long> numbers = uid(env.fromSource(new NumberSequenceSource(1, N), WatermarkStrategy.noWatermarks(),
                "numbers"), prefix, "source");
        DataStream<Long> slow = uid(numbers.map(new Functions.Sleep(sleepMs)), prefix, "throttle");
        DataStream<Long> sums = uid(slow.keyBy(new Functions.ModKey(KEYS)).process(new RunningSum(run)), prefix, "sum");
        Shims.discard(sums, prefix == null ? "sink-" + run : prefix + "-sink");
    }

    static <T> SingleOutputStreamOperator<T> uid(SingleOutputStreamOperator<T> s, String prefix, String op) {
        return prefix == null ? s : s.uid(prefix + "-" + op);
    }

    static <T> DataStream<T> uid(DataStream<T> s, String prefix, String op) {
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

    static long coordinatorBytes(InspectReport r) {
        return r.operators().stream().mapToLong(InspectReport.OperatorInfo::coordinatorStateBytes).sum();
    }

    static Map<Long, Long> expectedSums() {
        Map<Long, Long> sums = new TreeMap<>();
        for (long n = 1; n <= N; n++) {
            sums.merge(n % KEYS, n, Long::sum);
        }
        return sums;
    }

    /** Numbers seen twice and never over two runs, and the last running sum of each key. */
    static Outcome outcome(String first, String second) {
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
