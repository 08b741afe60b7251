package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.List;
import java.util.stream.Collectors;
import org.junit.Test;

/**
 * The connector catalogue on the generated fixtures (real Flink 1.15.4 savepoints and checkpoints):
 * a stale union of a catalogued state is one ERROR that carries the catalogue's text, never also a
 * WARNING; the state before it went stale is one WARNING; other states give nothing. The
 * {@code union-growth} fixtures hold FlinkKafkaConsumer's state with the consumer's own element type
 * ({@code Tuple2<KafkaTopicPartition (Kryo), Long>}); the {@code stale-union} ones have only its name
 * and mode ({@code Tuple2<String, Long>}), a look-alike that the kafka commands refuse, so the doctor
 * does not offer them for it.
 */
public class StaleStatesDoctorTest {
    static List<CheckpointSurgeon.Finding> doctor(String fixture, String code) throws Exception {
        return CheckpointSurgeon.doctor(CheckpointSurgeonTest.fixture(fixture)).stream()
                .filter(f -> f.code().name().equals(code)).collect(Collectors.toList());
    }

    @Test
    public void aStaleUnionOfACataloguedStateIsOneErrorWithTheCatalogueText() throws Exception {
        List<CheckpointSurgeon.Finding> stale = doctor("union-growth-p2-r2", "STALE_UNION_STATE");
        assertEquals(stale.toString(), 1, stale.size());
        String m = stale.get(0).message();
        assertTrue(m, m.contains("FlinkKafkaConsumer (" + StaleStates.KAFKA.connectorClass + ")")
                && m.contains("`Surgery.migrateKafkaLegacy`") && m.contains(StaleStates.KAFKA.why));
        // the choice is typed: the CLI names it `checkpoint-surgeon kafka migrate-legacy`
        assertEquals(List.of(Choice.MIGRATE_KAFKA_LEGACY), stale.get(0).typedMessage().choices());
        assertEquals(CheckpointSurgeon.Finding.Severity.ERROR, stale.get(0).severity());
        assertEquals(List.of(), doctor("union-growth-p2-r2", "CONNECTOR_STATE"));
    }

    /**
     * A union state with FlinkKafkaConsumer's name and mode whose elements are not the consumer's
     * (the stale-union fixtures' Tuple2<String, Long>): the stale union is found, and its text says
     * that it is not Kafka's and names the type found, instead of offering kafka migrate-legacy,
     * which refuses it; before it went stale it is a LOOK_ALIKE_STATE warning, not CONNECTOR_STATE.
     */
    @Test
    public void aLookAlikeIsNotTakenForKafka() throws Exception {
        List<CheckpointSurgeon.Finding> stale = doctor("stale-union", "STALE_UNION_STATE");
        assertEquals(stale.toString(), 1, stale.size());
        String m = stale.get(0).message();
        assertTrue(m, m.contains("it is not Kafka's: its elements are Tuple2<String, Long>, not "
                + InspectReport.KAFKA_LEGACY_ELEMENT_TYPE + ", so Surgery's Kafka surgeries refuse it")
                && !m.contains("Surgery.migrateKafkaLegacy"));
        assertEquals(List.of(Choice.KAFKA_SURGERIES), stale.get(0).typedMessage().choices());
        assertEquals(List.of(), doctor("stale-union", "CONNECTOR_STATE"));
        assertEquals(List.of(), doctor("stale-union", "LOOK_ALIKE_STATE"));
        for (String f : new String[] {"stale-union-restore-0", "stale-union-legacy-class"}) {
            assertEquals(f, List.of(), doctor(f, "CONNECTOR_STATE"));
            List<CheckpointSurgeon.Finding> lookAlike = doctor(f, "LOOK_ALIKE_STATE");
            assertEquals(f + ": " + lookAlike, 1, lookAlike.size());
            assertEquals(CheckpointSurgeon.Finding.Severity.WARNING, lookAlike.get(0).severity());
            assertEquals(CheckpointSurgeon.Remedy.inspect(false), lookAlike.get(0).fix());
            assertTrue(lookAlike.get(0).message(), lookAlike.get(0).message().contains("not Kafka's: its elements are Tuple2<"
                    + (f.endsWith("class") ? "io.checkpointsurgeon.legacy.LegacyTopicPartition (Kryo)" : "String") + ", Long>"));
        }
    }

    /**
     * The same incident in Flink 1.18's snappy-compressed layout (all elements of a state share one
     * offset): the values come from the decoded frames, so the doctor finds the stale union too.
     */
    @Test
    public void aStaleUnionInCompressedOperatorStateIsFoundToo() throws Exception {
        java.nio.file.Path fixture = CheckpointSurgeonTest.FIXTURES.resolve("1.18.1").resolve("stale-union-compressed");
        List<CheckpointSurgeon.Finding> stale = CheckpointSurgeon.doctor(fixture).stream()
                .filter(f -> f.code() == CheckpointSurgeon.Finding.Code.STALE_UNION_STATE).collect(Collectors.toList());
        assertEquals(stale.toString(), 1, stale.size());
        assertTrue(stale.get(0).message(), stale.get(0).message().contains("(12 elements per subtask, 4 distinct)"));
        assertEquals(new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.REMOVE_STATE, stale.get(0).fix().operatorId(),
                "topic-partition-offset-states"), stale.get(0).fix());

        // de-duplicated, the state is no longer stale but still the legacy consumer's; a compressed
        // state's stored size is not known per state
        java.nio.file.Path out = java.nio.file.Files.createTempDirectory("cs-doctor").resolve("deduped");
        CheckpointSurgeon.apply(fixture, Surgery.dedupeUnion(Surgery.OperatorSelector.id(stale.get(0).fix().operatorId()),
                "topic-partition-offset-states"), out);
        List<CheckpointSurgeon.Finding> after = CheckpointSurgeon.doctor(out);
        assertEquals(after.toString(), List.of(CheckpointSurgeon.Finding.Code.CONNECTOR_STATE),
                after.stream().map(CheckpointSurgeon.Finding::code).collect(Collectors.toList()));
        assertTrue(after.get(0).message(), after.get(0).message().contains("(4 elements, size unknown)"));
    }

    @Test
    public void aCataloguedStateThatIsNotStaleIsAWarning() throws Exception {
        List<CheckpointSurgeon.Finding> found = doctor("union-growth-p2-r1", "CONNECTOR_STATE");
        assertEquals(found.toString(), 1, found.size());
        assertEquals(CheckpointSurgeon.Finding.Severity.WARNING, found.get(0).severity());
        assertEquals(new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.MIGRATE_KAFKA_LEGACY, found.get(0).fix().operatorId(), null),
                found.get(0).fix());
        assertTrue(found.get(0).message(), found.get(0).message().contains("'topic-partition-offset-states' (4 elements"));
        assertEquals(List.of(), doctor("union-growth-p2-r1", "STALE_UNION_STATE"));
    }

    @Test
    public void statesOutsideTheCatalogueGiveNothing() throws Exception {
        // operator list, union and broadcast states, keyed state, a FLIP-27 source's coordinator state
        for (String f : new String[] {"operator-state-files", "odd-state-names", "keyed-hashmap", "flip27-source"}) {
            assertEquals(f, List.of(), doctor(f, "CONNECTOR_STATE"));
        }
    }

    @Test
    public void theCoordinatorHeadIsReported() throws Exception {
        InspectReport r = CheckpointSurgeon.inspect(CheckpointSurgeonTest.fixture("flip27-source"));
        InspectReport.OperatorInfo source = r.operators().stream().filter(o -> o.coordinatorStateBytes() > 0)
                .findFirst().orElseThrow();
        byte[] head = source.coordinatorHead();
        assertEquals(Math.min(256, source.coordinatorStateBytes()), head.length);
        // SourceCoordinator's serde version (1), then the enumerator state's length: the rest
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(head);
        assertEquals(1, b.getInt());
        b.getInt();
        assertEquals(source.coordinatorStateBytes() - 12, b.getInt());
        assertTrue(!StaleStates.cdcEnumerator(head, source.coordinatorStateBytes()));
    }
}
