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
                assertEquals("grown", c.change().toString());
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
            assertEquals(CheckpointSurgeon.Finding.Code.UNION_STATE_GROWS_BY_PARALLELISM, f.code());
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

    // ---------------------------------------------------------------------------------------------
    // Checkpoints any number of restores apart (the union-growth fixtures: real restores, the legacy
    // Kafka consumer's element type; Flink 1.15.4 and 1.20.3).

    static final String[] GROWTH_VERSIONS = {"1.15.4", "1.20.3"};

    static InspectReport growth(String version, String name) throws Exception {
        Path p = CheckpointSurgeonTest.FIXTURES.resolve(version).resolve("union-growth-" + name);
        assertTrue(p + " (gradle generateFixtures<V> -Pfixtures=union-growth)", Files.isRegularFile(p.resolve("_metadata")));
        return CheckpointSurgeon.inspect(p);
    }

    /** The one finding of a diff, which must name the stale state and contain {@code factor}. */
    static void assertFinding(List<CheckpointSurgeon.Finding> findings, String factor) {
        assertEquals(findings.toString(), 1, findings.size());
        CheckpointSurgeon.Finding f = findings.get(0);
        assertEquals(CheckpointSurgeon.Finding.Code.UNION_STATE_GROWS_BY_PARALLELISM, f.code());
        assertEquals(CheckpointSurgeon.Finding.Severity.ERROR, f.severity());
        assertEquals(STALE, f.fix().state());
        assertEquals(new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.DEDUPE_UNION, f.fix().operatorId(), STALE), f.alternatives().get(0));
        assertTrue(f.message(), f.message().contains("union state '" + STALE + "'") && f.message().contains(factor));
    }

    @Test
    public void atConstantParallelismTheFactorIsAPowerOfIt() throws Exception {
        for (String v : GROWTH_VERSIONS) {
            InspectReport r1 = growth(v, "p2-r1"), r2 = growth(v, "p2-r2"), r4 = growth(v, "p2-r4"), r7 = growth(v, "p2-r7");
            // 1, 2 and 3 restores apart
            assertFinding(Growth.diff(r1, r2).findings(), "4 -> 8 (x2) at checkpoint");
            assertFinding(Growth.diff(r2, r4).findings(), "8 -> 32 (x4 = 2^2) at checkpoint");
            assertFinding(Growth.diff(r4, r7).findings(), "32 -> 256 (x8 = 2^3) at checkpoint");
            assertFinding(Growth.diff(r1, r7).findings(), "4 -> 256 (x64 = 2^6) at checkpoint");
            // backwards it shrinks: nothing
            assertTrue(Growth.diff(r7, r4).findings().isEmpty());
            // the history of the retained checkpoints names each step
            Growth.History h = Growth.history(List.of(r7, r2, r4, r1));
            assertEquals(h.findings().toString(), 1, h.findings().size());
            String m = h.findings().get(0).message();
            assertTrue(m, m.contains("(x2) at checkpoint " + r2.checkpointId()) && m.contains("(x4 = 2^2) at checkpoint "
                    + r4.checkpointId()) && m.contains("(x8 = 2^3) at checkpoint " + r7.checkpointId())
                    && m.contains("it is 256 elements now"));
            // two checkpoints three restores apart are enough
            assertFinding(Growth.history(List.of(r4, r7)).findings(), "(x8 = 2^3)");
        }
    }

    @Test
    public void whenTheParallelismChangedTheFactorIsAProductOfBoth() throws Exception {
        for (String v : GROWTH_VERSIONS) {
            InspectReport r0 = growth(v, "p4-r0"), r1 = growth(v, "p4-r1"), r2 = growth(v, "p4-r2"), r3 = growth(v, "p4-r3");
            assertEquals(4, parallelism(r2, stale(Growth.diff(r2, r3)).operatorId()));
            assertEquals(8, parallelism(r3, stale(Growth.diff(r2, r3)).operatorId()));
            assertFinding(Growth.diff(r1, r2).findings(), "8 -> 32 (x4) at checkpoint");
            assertFinding(Growth.diff(r2, r3).findings(), "32 -> 256 (x8) at checkpoint");
            assertFinding(Growth.diff(r1, r3).findings(), "8 -> 256 (x32 = 4 x 8) at checkpoint");
            // from v1's checkpoint (each subtask its own elements) over three restores
            assertFinding(Growth.diff(r0, r3).findings(), "2 -> 256 (x128 = 4^2 x 8) at checkpoint");
            Growth.History h = Growth.history(List.of(r0, r1, r2, r3));
            assertEquals(h.findings().toString(), 1, h.findings().size());
            assertEquals(STALE, h.findings().get(0).fix().state());
        }
    }

    /**
     * Beside the stale state, two union states of the same operator grow by the same factors for
     * other reasons: one holds each subtask's own share of more and more partitions (a source that
     * reads its union state and finds new partitions), the other the same list in every subtask,
     * repeating values, that genuinely grows. Counts alone would call both stale; the values do not.
     */
    @Test
    public void aUnionThatGrowsForAnotherReasonIsNoFinding() throws Exception {
        for (String v : GROWTH_VERSIONS) {
            InspectReport r1 = growth(v, "p4-r1"), r2 = growth(v, "p4-r2"), r3 = growth(v, "p4-r3");
            for (InspectReport[] pair : new InspectReport[][] {{r1, r2}, {r2, r3}, {r1, r3}}) {
                Growth.Diff d = Growth.diff(pair[0], pair[1]);
                double factor = stale(d).factor();
                for (String other : new String[] {"partition-offsets", "shared-list"}) {
                    Growth.StateChange c = d.states().stream().filter(x -> x.state().equals(other)).findFirst().get();
                    assertEquals(v + " " + other, Growth.StateMode.of(InspectReport.Mode.UNION), c.mode());
                    assertEquals(v + " " + other + " grows like the stale state", factor, c.factor(), 0);
                }
                assertEquals(d.findings().toString(), 1, d.findings().size());
                assertEquals(STALE, d.findings().get(0).fix().state());
            }
            // the shared list is the same in every subtask and repeats its values, like a stale union
            InspectReport.OperatorInfo op = r3.operators().stream().filter(o -> o.parallelism() == 8).findFirst().get();
            List<InspectReport.StateInfo> shared = op.subtasks().stream().flatMap(s -> s.operatorStateHandles().stream())
                    .flatMap(h -> h.states().stream()).filter(st -> st.name().equals("shared-list")).collect(Collectors.toList());
            assertEquals(8, shared.size());
            assertTrue(shared.stream().allMatch(st -> st.digest() == shared.get(0).digest() && st.elements() == 16
                    && st.distinctElements() == 3));
        }
    }

    @Test
    public void diffAndHistoryExitFourOnTheSignature() throws Exception {
        Path v = CheckpointSurgeonTest.FIXTURES.resolve("1.20.3");
        String a = v.resolve("union-growth-p4-r1").toString(), b = v.resolve("union-growth-p4-r3").toString();
        CheckpointSurgeonTest.Result d = CliSubprocessTest.cli("diff", a, b);
        assertEquals(d.err + d.out, 4, d.code);
        assertTrue(d.out, d.out.contains("UNION_STATE_GROWS_BY_PARALLELISM") && d.out.contains("(x32 = 4 x 8)")
                && d.out.contains("fix: checkpoint-surgeon remove-state " + b + " --operator-id ")
                && d.out.contains("--state " + STALE + " --apply --output " + b + "-repaired"));
        // --max-growth is the gate when given
        assertEquals(0, CliSubprocessTest.cli("diff", a, b, "--max-growth", "40").code);
        CheckpointSurgeonTest.Result h = CliSubprocessTest.cli("history", a, b);
        assertEquals(h.err + h.out, 4, h.code);
        assertTrue(h.out, h.out.contains("8 -> 256 (x32 = 4 x 8)"));
    }
}
