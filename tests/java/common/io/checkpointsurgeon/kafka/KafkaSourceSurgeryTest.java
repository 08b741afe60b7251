package io.checkpointsurgeon.kafka;

import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.KafkaBroker;
import io.checkpointsurgeon.testing.KafkaState;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;

import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

import static io.checkpointsurgeon.kafka.KafkaJobs.kafkaSource;
import static io.checkpointsurgeon.kafka.KafkaJobs.read;
import static io.checkpointsurgeon.kafka.KafkaJobs.readToEnd;
import static io.checkpointsurgeon.kafka.KafkaJobs.record;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

/**
 * {@code kafka drop-topic} and {@code kafka set-offsets} on a savepoint of a real KafkaSource job
 * that read two topics of a real broker part way, judged by the connector's serializers
 * ({@link KafkaState}) and by restoring the result: the restored job must read exactly the records
 * the changed state says, and none of a dropped topic. Also the refusals (exit 2, nothing written).
 */
public class KafkaSourceSurgeryTest {
    static final String A = "alpha", B = "beta";
    static final int PARTITIONS = 2, FIRST = 400, END = 500;

    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();

    static KafkaBroker broker;
    /** The savepoint of a job that read A and B part way. */
    static Path savepoint;
    /** The source operator's id. */
    static String sourceId;

    @BeforeClass
    public static void savepointOfAJobReadingTwoTopics() throws Exception {
        broker = KafkaBroker.start(TMP.newFolder("kafka").toPath());
        for (String t : List.of(A, B)) {
            broker.createTopic(t, PARTITIONS);
            KafkaJobs.produce(broker, t, PARTITIONS, 0, FIRST);
        }
        MiniClusterJob.Result v1 = KafkaJobs.job("v1", KafkaJobs.conf(TMP.newFolder("v1").toPath(), null), 2,
                env -> record(kafkaSource(env, broker.bootstrapServers(), List.of(A, B), OffsetsInitializer.earliest()), "v1", 2))
                .readyWhen(() -> KafkaJobs.count("v1") >= 200).checkpointsAfterReady(1).stopWithSavepoint().run().orThrow();
        savepoint = v1.savepointPath();
        for (String t : List.of(A, B)) KafkaJobs.produce(broker, t, PARTITIONS, FIRST, END);
        sourceId = KafkaState.readerSplits(savepoint).keySet().iterator().next();
    }

    @AfterClass
    public static void stopBroker() {
        if (broker != null) broker.close();
    }

    static Map<String, Long> ends(String... topics) {
        Map<String, Long> ends = new TreeMap<>();
        for (String t : topics) for (int p = 0; p < PARTITIONS; p++) ends.put(t + "-" + p, (long) END);
        return ends;
    }

    /** A KafkaSource job on {@code topics} restored from {@code from}, run until it read them to the end and one checkpoint more. */
    static Map<String, List<Long>> restore(String run, Path from, String... topics) throws Exception {
        Map<String, Long> ends = ends(topics);
        KafkaJobs.job(run, KafkaJobs.conf(TMP.newFolder(run).toPath(), from.toUri().toString()), 2,
                env -> record(kafkaSource(env, broker.bootstrapServers(), Arrays.asList(topics), OffsetsInitializer.latest()), run, 0))
                .readyWhen(() -> readToEnd(run, ends)).checkpointsAfterReady(1).run().orThrow();
        return read(run);
    }

    /** The first offset a split reads: its starting offset, or 0 for the EARLIEST marker (-2) of a split not read yet. */
    static long first(long startingOffset) {
        return startingOffset == -2 ? 0 : startingOffset;
    }

    static List<Long> range(long from, long to) {
        List<Long> l = new ArrayList<>();
        for (long i = from; i < to; i++) l.add(i);
        return l;
    }

    /** The records of {@code topic} in a run's positions. */
    static long count(Map<String, List<Long>> read, String topic) {
        return read.entrySet().stream().filter(e -> e.getKey().startsWith(topic + "-")).mapToLong(e -> e.getValue().size()).sum();
    }

    static CliProcess.Result cli(String... args) throws Exception {
        CliProcess.Result r = CliProcess.withFlink(args).run();
        System.out.println(String.join(" ", args) + "\n" + r.output);
        return r;
    }

    @Test
    public void dropTopicStopsARestoredKafkaSourceFromReadingIt() throws Exception {
        Map<String, Long> start = KafkaState.startingOffsets(savepoint);
        assertEquals(ends(A, B).keySet(), start.keySet());
        KafkaState.Enumerator en0 = KafkaState.enumerator(savepoint, sourceId);
        assertEquals(ends(A, B).keySet(), en0.assigned);
        // inspect decodes the enumerator state of this connector version, and the readers' splits
        CliProcess.Result inspect = cli("inspect", savepoint.toString());
        assertTrue(inspect.output, inspect.output.contains("KafkaSource enumerator state (version " + en0.version
                + ", initial discovery finished): 4 assigned, 0 pending"));
        for (Map.Entry<String, Long> e : start.entrySet()) {
            assertTrue(inspect.output, inspect.output.contains(e.getKey() + " from "
                    + (e.getValue() == -2 ? "EARLIEST" : String.valueOf(e.getValue()))));
        }

        // FLINK-34089: without the surgery, a job subscribed to A only still reads B's restored splits.
        Map<String, List<Long>> unrepaired = restore("a-only-unrepaired", savepoint, A);
        assertTrue("a restored KafkaSource keeps reading the topic it no longer subscribes to (FLINK-34089): " + unrepaired.keySet(),
                unrepaired.keySet().stream().anyMatch(k -> k.startsWith(B + "-")));

        Path out = TMP.getRoot().toPath().resolve("dropped-savepoint");
        CliProcess.Result r = cli("kafka", "drop-topic", savepoint.toString(), "--topic", B, "--apply", "--output", out.toString());
        assertEquals(r.output, 0, r.exitCode);
        assertTrue(r.output, r.output.contains("kafka-drop-split") && r.output.contains("kafka-enumerator"));

        Map<String, Long> left = KafkaState.startingOffsets(out);
        Map<String, Long> expected = new TreeMap<>(start);
        expected.keySet().removeIf(k -> k.startsWith(B + "-"));
        assertEquals(expected, left);
        KafkaState.Enumerator en = KafkaState.enumerator(out, sourceId);
        assertEquals(ends(A).keySet(), en.assigned);
        assertEquals(KafkaState.enumerator(savepoint, sourceId).version, en.version);
        assertEquals(en.connectorLength, en.length);

        Map<String, List<Long>> repaired = restore("a-only-repaired", out, A);
        assertEquals(ends(A).keySet(), repaired.keySet());
        for (String tp : ends(A).keySet()) {
            assertEquals(tp + " continues exactly where the savepoint left it", range(first(start.get(tp)), END), repaired.get(tp));
        }
        System.out.printf("drop-topic: without it the A-only job read %d records of %s (FLINK-34089); after it, %d records of %s"
                + " and none of %s, 0 missing, 0 duplicates%n", count(unrepaired, B), B, count(repaired, A), A, B);
    }

    @Test
    public void setOffsetsMovesTheFirstRecordARestoredJobReads() throws Exception {
        Map<String, Long> start = KafkaState.startingOffsets(savepoint);
        Path out = TMP.getRoot().toPath().resolve("moved-savepoint");
        CliProcess.Result r = cli("kafka", "set-offsets", savepoint.toString(), "--topic", A, "--partition", "0",
                "--offset", "42", "--apply", "--output", out.toString());
        assertEquals(r.output, 0, r.exitCode);
        Map<String, Long> expected = new TreeMap<>(start);
        expected.put(A + "-0", 42L);
        assertEquals(expected, KafkaState.startingOffsets(out));
        KafkaState.Enumerator en = KafkaState.enumerator(out, sourceId);
        assertEquals(ends(A, B).keySet(), en.assigned);
        assertEquals(en.connectorLength, en.length);

        Map<String, List<Long>> read = restore("moved", out, A, B);
        assertEquals(Long.valueOf(42), read.get(A + "-0").get(0));
        for (String tp : ends(A, B).keySet()) {
            assertEquals(tp, range(first(expected.get(tp)), END), read.get(tp));
        }
        System.out.printf("set-offsets: %s-0 read from offset 42; %d records in all, 0 missing, 0 duplicates%n", A,
                count(read, A) + count(read, B));
    }

    @Test
    public void badInputIsRefusedWithExit2AndNothingWritten() throws Exception {
        // the enumerator state of a version from the future: the savepoint's own bytes, version patched
        Path future = TestFiles.copyToTempDir(savepoint, "future-enumerator");
        byte[] coordinator = KafkaState.load(savepoint).getOperatorStates().stream()
                .filter(o -> o.getOperatorID().toString().equals(sourceId)).findFirst().get().getCoordinatorState().getData();
        byte[] md = Files.readAllBytes(future.resolve("_metadata"));
        int at = indexOf(md, coordinator);
        assertTrue("the coordinator state is inline in _metadata", at >= 0 && indexOf(Arrays.copyOfRange(md, at + 1, md.length), coordinator) < 0);
        md[at + 7] = 99;
        Files.write(future.resolve("_metadata"), md);

        String[][] cases = {
            // a state that is not Kafka: a NumberSequenceSource's splits, and a union state under the legacy name that is not the consumer's
            {TestFiles.fixture("flip27-source").toString(), "kafka", "drop-topic", "--topic", A},
            {TestFiles.fixture("stale-union").toString(), "kafka", "migrate-legacy", "--connector-version", "3.4.0-1.20"},
            {future.toString(), "kafka", "drop-topic", "--topic", A, "@version 99"},
            {savepoint.toString(), "kafka", "drop-topic", "--topic", "gamma", "@'gamma'"},
            {savepoint.toString(), "kafka", "set-offsets", "--topic", A, "--shift", "-1000000", "@shifting it by -1000000"},
        };
        int n = 0;
        for (String[] c : cases) {
            Path in = Path.of(c[0]);
            String digest = digest(in);
            Path out = TMP.getRoot().toPath().resolve("refused-" + n++);
            List<String> args = new ArrayList<>(Arrays.asList(c).subList(1, c.length));
            String expect = args.get(args.size() - 1).startsWith("@") ? args.remove(args.size() - 1).substring(1) : "";
            args.add(2, in.toString());
            args.addAll(List.of("--apply", "--output", out.toString()));
            CliProcess.Result r = cli(args.toArray(new String[0]));
            assertEquals(r.output, 2, r.exitCode);
            assertTrue(r.output, r.output.contains(expect));
            assertFalse(out + " must not be written", Files.exists(out) && Files.list(out).findAny().isPresent());
            assertEquals("the input is unchanged", digest, digest(in));
        }
    }

    static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) if (hay[i + j] != needle[j]) continue outer;
            return i;
        }
        return -1;
    }

    static String digest(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            Set<Path> sorted = new TreeSet<>();
            files.filter(Files::isRegularFile).forEach(sorted::add);
            for (Path f : sorted) {
                md.update(dir.relativize(f).toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
                md.update(Files.readAllBytes(f));
            }
            StringBuilder sb = new StringBuilder();
            for (byte b : md.digest()) sb.append(String.format("%02x", b));
            return sb.toString();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
