package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeonTest.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.Test;

/**
 * A union state named {@code topic-partition-offset-states} whose elements are not the legacy
 * FlinkKafkaConsumer's: the {@code stale-union-legacy-class} fixtures (every Flink version) hold
 * {@code Tuple2<LegacyTopicPartition, Long>}, a class of the generator's own with the fields of
 * {@code KafkaTopicPartition}, serialized by Kryo as the consumer's is. Through the CLI as a user runs
 * it: every Kafka command refuses it (exit 2, nothing written, the input unchanged) naming the type
 * found, and inspect shows no Kafka offsets for it; the consumer's own element type
 * ({@code union-growth} fixtures) is shown as Kafka offsets.
 */
public class KafkaLookAlikeTest {
    static final String LOOK_ALIKE = "Tuple2<io.checkpointsurgeon.legacy.LegacyTopicPartition (Kryo), Long>";

    static String digest(Path dir) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path f : (Iterable<Path>) s.filter(Files::isRegularFile).sorted()::iterator) {
                md.update(f.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                md.update(Files.readAllBytes(f));
            }
        }
        return new java.math.BigInteger(1, md.digest()).toString(16);
    }

    @Test
    public void everyKafkaCommandRefusesALookAlike() throws Exception {
        for (String version : new String[] {"1.15.4", "1.20.3", "2.3.0"}) {
            Path in = CheckpointSurgeonTest.FIXTURES.resolve(version).resolve("stale-union-legacy-class");
            String before = digest(in);
            String[][] commands = {
                {"kafka", "migrate-legacy", "--connector-version", "3.4.0-1.20"},
                {"kafka", "drop-topic", "--topic", "topic-a"},
                {"kafka", "set-offsets", "--topic", "topic-a", "--partition", "0", "--offset", "5"},
            };
            for (String[] c : commands) {
                Path out = Files.createTempDirectory("cs-lookalike").resolve("out");
                List<String> args = new ArrayList<>(Arrays.asList(c));
                args.add(2, in.toString());
                args.addAll(List.of("--apply", "--output", out.toString()));
                Result r = CliSubprocessTest.cli(args.toArray(new String[0]));
                assertEquals(version + " " + String.join(" ", c) + ": " + r.err, 2, r.code);
                assertTrue(r.err, r.err.contains("not Kafka's") && r.err.contains(LOOK_ALIKE));
                assertFalse(out + " must not exist", Files.exists(out));
                assertEquals("the input is unchanged", before, digest(in));
            }
            Result inspect = CliSubprocessTest.cli("inspect", in.toString());
            assertEquals(inspect.err, 0, inspect.code);
            assertFalse(inspect.out, inspect.out.contains("Kafka offsets in"));
            assertTrue(inspect.out, inspect.out.contains("topic-partition-offset-states is not Kafka's (elements "
                    + LOOK_ALIKE + ", not FlinkKafkaConsumer's " + InspectReport.KAFKA_LEGACY_ELEMENT_TYPE + ")"));
            Result json = CliSubprocessTest.cli("inspect", in.toString(), "--json");
            assertTrue(json.out, json.out.contains("\"elementType\": \"" + LOOK_ALIKE + "\"")
                    && !json.out.contains("\"topic\": \"topic-a\""));
        }
        // the consumer's own element type is Kafka's
        Result real = CliSubprocessTest.cli("inspect",
                CheckpointSurgeonTest.FIXTURES.resolve("1.20.3").resolve("union-growth-p2-r1").toString());
        assertTrue(real.out, real.out.contains("Kafka offsets in topic-partition-offset-states:")
                && real.out.contains("topic-a-0 @ 1000") && !real.out.contains("is not Kafka's"));
    }
}
