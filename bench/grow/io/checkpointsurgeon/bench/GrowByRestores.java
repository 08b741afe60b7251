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
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The bench input as the incident grows it (bench/inspect.sh): a real Flink job restored again and
 * again in a local MiniCluster, as the demo does. v1 of the operator {@code source_consumer} keeps
 * the legacy Kafka consumer's union state {@code topic-partition-offset-states} with the consumer's
 * own serializer (Tuple2 of the connector's KafkaTopicPartition, Kryo, and Long), two partitions per
 * subtask (the fixture generator's {@code ConsumerV1}); v2 never touches it and keeps a split list
 * state of its own ({@code ConsumerV2}), and every restore of v2 multiplies the union state by the
 * parallelism. The last retained checkpoint (its {@code _metadata}
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
            MapFunction<Long, Long> consumer = r == 0 ? new Functions.ConsumerV1(true) : new Functions.ConsumerV2();
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
}
