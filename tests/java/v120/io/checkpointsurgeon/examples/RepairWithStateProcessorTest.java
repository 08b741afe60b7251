package io.checkpointsurgeon.examples;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.Test;

/** The example program on the bundled 1.20.3 stale-union checkpoint, as a user would run it. */
public class RepairWithStateProcessorTest {
    @Test
    public void theExampleRepairsAndKeepsTheLiveState() throws Exception {
        Path fixture = TestFiles.fixture("stale-union");
        Path out = Files.createTempDirectory("example").resolve("repaired");
        List<Long> live = RepairWithStateProcessor.run(fixture, "source_consumer", "topic-partition-offset-states",
                "position", out);
        assertEquals(4, live.size());
        assertTrue(CheckpointSurgeon.inspect(out).operators().stream().flatMap(o -> o.stateTotals().stream())
                .noneMatch(t -> t.name().equals("topic-partition-offset-states")));
    }
}
