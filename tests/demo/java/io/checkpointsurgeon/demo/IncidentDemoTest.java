package io.checkpointsurgeon.demo;

import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.demo.IncidentDemo.Restore;
import io.checkpointsurgeon.demo.IncidentDemo.Result;

import org.junit.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

/**
 * A smaller run of {@link IncidentDemo} (real Flink 1.15.4 and a real Kafka broker): the stale
 * union state grows by the parallelism at each restore, the surgery removes it, the job restores
 * from the repaired checkpoint, the split offsets survive the surgery and no record is lost.
 */
public class IncidentDemoTest {

    @Test
    public void staleKafkaConsumerStateGrowsPerRestoreAndTheRepairedCheckpointRestores() throws Exception {
        int partitions = 4, parallelism = 2, restores = 4;
        IncidentDemo.Options o = new IncidentDemo.Options(partitions, parallelism, restores, 1, 100, null, false);
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        Result r;
        try (PrintStream out = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            r = IncidentDemo.run(o, out);
        } finally {
            System.out.print(buf.toString(StandardCharsets.UTF_8));
        }
        String log = buf.toString(StandardCharsets.UTF_8);

        // v1 wrote one offset entry per partition.
        assertEquals(partitions, r.preMigration().staleElements());

        // Before the repair: ×parallelism per restore, exactly.
        List<Restore> before = r.restores().stream()
                .filter(x -> x.phase().equals("migration") || x.phase().equals("before repair")
                        || x.phase().equals("surgery input"))
                .toList();
        assertEquals(restores + 1, before.size());
        long expected = partitions;
        for (Restore x : before) {
            assertEquals("stale elements loaded by restore " + x.number(), expected, x.staleElements());
            expected *= parallelism;
        }
        assertEquals((long) (partitions * Math.pow(parallelism, restores)), r.grown().staleElements());
        for (int i = 1; i < before.size(); i++) {
            assertTrue("_metadata grows at restore " + before.get(i).number(),
                    before.get(i).metadataBytes() > before.get(i - 1).metadataBytes());
        }
        assertEquals(List.of(), IncidentDemo.problems(r));
        assertTrue("_metadata must have grown: " + r.grown().metadataBytes() + " vs " + r.preMigration().metadataBytes(),
                r.grown().metadataBytes() > r.preMigration().metadataBytes());

        // The surgery removed every stale element and Flink's loader accepted the result.
        assertEquals(r.grown().staleElements(), r.plan().elementsRemoved());
        assertEquals(0, r.repaired().staleElements());
        assertEquals(r.plan().result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, r.plan().result().validation().status());
        assertTrue(log.contains("<-- stale"));

        // The repaired restore ran, and later restores no longer grow.
        List<Restore> after = r.restores().stream()
                .filter(x -> x.phase().equals("repaired") || x.phase().equals("after repair")).toList();
        assertEquals(2, after.size());
        for (Restore x : after) {
            assertEquals(0, x.staleElements());
            assertFalse(x.wrote().isEmpty());
        }
        assertEquals(0, r.last().staleElements());
        // "About the size before the migration": within a factor 1.5 of the v1 savepoint.
        long next = after.get(0).wroteMetadataBytes();
        assertTrue("first checkpoint after the repair: " + next + " bytes vs " + r.preMigration().metadataBytes(),
                next < r.preMigration().metadataBytes() * 3 / 2 && next < r.grown().metadataBytes());

        // The KafkaSource split offsets are untouched by the surgery.
        assertEquals(partitions, r.splitsBefore().size());
        assertEquals(r.splitsBefore(), r.splitsAfter());
        // checkpoint-surgeon decodes the KafkaSource splits natively to what the connector reads
        assertEquals(r.splitsBefore(), r.splitsNative());
        assertEquals(r.grown().readerBytes(), r.repaired().readerBytes());
        assertEquals(r.grown().readerElements(), r.repaired().readerElements());

        // At-least-once: nothing missing (duplicates are allowed and reported).
        assertEquals(0, r.missing());
        assertTrue(r.outputRecords() >= r.produced());
    }
}
