package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.Test;

/**
 * {@code diff} and {@code history} on the stale-union incident the fixture generator replays with
 * real Flink (restore 0 at parallelism 2, restores 1 and 2 at 3, restore 3 at 4): the union state
 * nothing reads grows by exactly the parallelism of each restore, on every Flink version.
 */
public class GrowthTest {
    static final String STALE = "topic-partition-offset-states";
    public static final String[] STEPS = {"stale-union-restore-0", "stale-union-restore-1", "stale-union-restore-2", "stale-union"};

    public static List<Path> versions() throws Exception {
        try (Stream<Path> s = Files.list(CheckpointSurgeonTest.FIXTURES)) {
            List<Path> l = s.filter(p -> Files.isRegularFile(p.resolve(STEPS[0]).resolve("_metadata"))).sorted()
                    .collect(Collectors.toList());
            assertTrue(l.size() >= 3);
            return l;
        }
    }

    static Growth.StateChange stale(Growth.Diff d) {
        return d.states().stream().filter(s -> s.state().equals(STALE)).findFirst().get();
    }

    static int parallelism(InspectReport r, String operatorId) {
        return r.operators().stream().filter(o -> o.id().equals(operatorId)).findFirst().get().parallelism();
    }

    @Test
    public void theStaleUnionGrowsByExactlyTheParallelismOfEachRestore() throws Exception {
        for (Path v : versions()) {
            List<InspectReport> reports = new ArrayList<>();
            for (String step : STEPS) reports.add(CheckpointSurgeon.inspect(v.resolve(step)));
            for (int i = 1; i < reports.size(); i++) {
                Growth.Diff d = Growth.diff(reports.get(i - 1), reports.get(i));
                Growth.StateChange c = stale(d);
                int p = parallelism(reports.get(i), c.operatorId());
                assertEquals(v + " " + STEPS[i], p, c.factor(), 0);
                assertEquals("grown", c.change());
                assertEquals(c.elementsA() * p, c.elementsB());
                assertTrue(c.bytesB() > c.bytesA());
                // after the first restore (each subtask then holds the whole union) the distinct values
                // stop growing: the copies are the same values
                if (i >= 2) assertEquals(c.distinctA(), c.distinctB());
                assertTrue(d.maxFactor() >= p);
            }
            // in any order: sorted by checkpoint id, and the signature found
            List<InspectReport> shuffled = new ArrayList<>(List.of(reports.get(3), reports.get(0), reports.get(2), reports.get(1)));
            Growth.History h = Growth.history(shuffled);
            Growth.Series s = h.series().stream().filter(x -> x.state().equals(STALE)).findFirst().get();
            assertEquals(List.of(4L, 12L, 36L, 144L), s.elements());
            assertEquals(List.of(2, 3, 3, 4), s.parallelism());
            assertEquals(1, h.findings().size());
            CheckpointSurgeon.Finding f = h.findings().get(0);
            assertEquals("UNION_STATE_GROWS_BY_PARALLELISM", f.code());
            assertEquals(STALE, f.fix().state());
            assertTrue(f.message(), f.message().contains("36 -> 144 (x4)"));
            // two checkpoints with one restore are not yet a pattern; the other states are not flagged
            assertTrue(Growth.history(reports.subList(0, 2)).findings().isEmpty());
        }
    }

    @Test
    public void diffAndHistoryFromTheCommandLine() throws Exception {
        Path v = versions().get(0);
        CheckpointSurgeonTest.Result d = CliSubprocessTest.cli("diff", v.resolve(STEPS[2]).toString(), v.resolve(STEPS[3]).toString(),
                "--max-growth", "3.5");
        assertEquals(d.err, 4, d.code);
        assertTrue(d.out, d.out.contains(STALE) && d.out.contains("x4.00"));
        assertTrue(d.err, d.err.contains("more than --max-growth 3.5"));
        assertEquals(0, CliSubprocessTest.cli("diff", v.resolve(STEPS[2]).toString(), v.resolve(STEPS[3]).toString(),
                "--max-growth", "4").code);
        CheckpointSurgeonTest.Result json = CliSubprocessTest.cli("diff", v.resolve(STEPS[0]).toString(), v.resolve(STEPS[1]).toString(), "--json");
        assertEquals(json.err, 0, json.code);
        assertTrue(json.out, json.out.contains("\"factor\": 3.0"));

        // a directory holding the four checkpoints is read as a job's history
        Path all = Files.createTempDirectory("history");
        for (String step : STEPS) {
            Path to = Files.createDirectories(all.resolve(step));
            Files.copy(v.resolve(step).resolve("_metadata"), to.resolve("_metadata"));
            try (Stream<Path> files = Files.list(v.resolve(step))) {
                for (Path f : (Iterable<Path>) files::iterator) {
                    if (!Files.exists(to.resolve(f.getFileName()))) Files.copy(f, to.resolve(f.getFileName()));
                }
            }
        }
        Path svg = all.resolve("chart.svg");
        CheckpointSurgeonTest.Result h = CliSubprocessTest.cli("history", all.toString(), "--svg", svg.toString());
        assertEquals(h.err + h.out, 4, h.code);
        assertTrue(h.out, h.out.contains("UNION_STATE_GROWS_BY_PARALLELISM"));
        assertTrue(h.out, h.out.contains("fix: checkpoint-surgeon remove-state " + all.resolve("stale-union")));
        // the chart is well-formed XML with the union's line
        org.w3c.dom.Document doc = javax.xml.parsers.DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(svg.toFile());
        assertTrue(doc.getElementsByTagName("polyline").getLength() >= 1);
        assertTrue(Files.readString(svg).contains(STALE));
        // --svg never writes over a file
        long size = Files.size(svg);
        CheckpointSurgeonTest.Result again = CliSubprocessTest.cli("history", all.toString(), "--svg", svg.toString());
        assertFalse(again.code == 0 || again.code == 4);
        assertEquals(size, Files.size(svg));
    }
}
