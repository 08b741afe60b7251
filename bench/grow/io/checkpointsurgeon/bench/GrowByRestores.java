package io.checkpointsurgeon.bench;

import io.checkpointsurgeon.fixtures.FixtureGenerator;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The bench input as the incident grows it (bench/inspect.sh): a real Flink job restored again and
 * again in a local MiniCluster, as the demo does. v1 of the operator {@code source_consumer} keeps
 * the legacy Kafka consumer's union state {@code topic-partition-offset-states} with the consumer's
 * own serializer (Tuple2 of the connector's KafkaTopicPartition, Kryo, and Long), two partitions per
 * subtask; v2 never touches it and keeps a split list state of its own, and every restore of v2
 * multiplies the union state by the parallelism. The last retained checkpoint (its {@code _metadata}
 * and state files, referenced relatively) is moved to {@code OUT}.
 *
 * <pre>GrowByRestores OUT [--parallelism 4] [--restores 10]   (4 and 10: 8 x 4^10 = 8,388,608 elements)</pre>
 */
public final class GrowByRestores {
    private GrowByRestores() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: GrowByRestores OUT [--parallelism P] [--restores N]");
            System.exit(1);
        }
        Path out = Paths.get(args[0]).toAbsolutePath();
        int parallelism = 4, restores = 10;
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (args[i].equals("--parallelism")) parallelism = Integer.parseInt(args[i + 1]);
            else if (args[i].equals("--restores")) restores = Integer.parseInt(args[i + 1]);
            else throw new IllegalArgumentException("unknown option " + args[i]);
        }
        if (Files.exists(out)) throw new IllegalArgumentException(out + " exists");
        Path work = Files.createTempDirectory(out.getParent(), "grow-");
        Path chk = null;
        long elements = 2L * parallelism;
        for (int r = 0; r <= restores; r++) {
            long t0 = System.nanoTime();
            Configuration c = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                    work.resolve("savepoints").toUri().toString(), "1 s", 1);
            if (chk != null) FlinkConf.restoreFrom(c, chk.toUri().toString());
            MapFunction<Long, Long> consumer = r == 0 ? new ConsumerV1() : new ConsumerV2();
            int p = parallelism;
            chk = MiniClusterJob.of("grow-" + r, c, p, env -> job(env, p, consumer))
                    .checkpointsAfterReady(1)
                    .timeout(Duration.ofMinutes(20))
                    .run().orThrow().checkpointPath();
            if (r > 0) elements *= parallelism;
            System.out.printf("restore %d: %s, %,d union elements, _metadata %,d B (%.1f s)%n", r, chk, elements,
                    Files.size(chk.resolve("_metadata")), (System.nanoTime() - t0) / 1e9);
        }
        Files.move(chk, out);
        TestFiles.deleteRecursively(work);
        System.out.println("wrote " + out);
        // Flink may leave non-daemon threads behind
        System.exit(0);
    }

    private static void job(StreamExecutionEnvironment env, int parallelism, MapFunction<Long, Long> consumer) {
        Shims.discard(FixtureGenerator.throttledSource(env, 2, "numbers").rebalance().map(consumer)
                .uid("source_consumer").name("source_consumer").setParallelism(parallelism), "sink");
    }

    /** v1: the legacy consumer's offsets, two partitions per subtask. */
    static final class ConsumerV1 extends RichMapFunction<Long, Long> implements CheckpointedFunction {
        private transient ListState<Tuple2<Object, Long>> offsets;

        @Override
        public Long map(Long value) {
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            offsets = context.getOperatorStateStore().getUnionListState(
                    new ListStateDescriptor<>(Functions.OFFSETS_STATE, Functions.kafkaOffsetType()));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            int subtask = getRuntimeContext().getIndexOfThisSubtask();
            offsets.clear();
            for (int i = 0; i < 2; i++) {
                int partition = 2 * subtask + i;
                Object tp = Class.forName(Functions.KAFKA_TOPIC_PARTITION).getConstructor(String.class, int.class)
                        .newInstance("orders", partition);
                offsets.add(Tuple2.of(tp, 100_000L + partition));
            }
        }
    }

    /** v2: a split list state of its own; the union state is restored and written back untouched. */
    static final class ConsumerV2 implements MapFunction<Long, Long>, CheckpointedFunction {
        private transient ListState<Long> position;
        private long seen;

        @Override
        public Long map(Long value) {
            seen++;
            return value;
        }

        @Override
        public void initializeState(FunctionInitializationContext context) throws Exception {
            position = context.getOperatorStateStore().getListState(new ListStateDescriptor<>("position", Types.LONG));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            position.clear();
            position.add(seen);
        }
    }
}
