package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import io.checkpointsurgeon.cli.Cli;
import org.junit.Test;

/**
 * The Java API and CLI on fixtures that real Flink wrote, without Flink on the classpath: the
 * library loads from the jar, errors arrive as CheckpointSurgeonException (a panic: NativeBridgeTest).
 */
public class CheckpointSurgeonTest {
    public static final Path FIXTURES = Path.of(System.getProperty("fixtures.root", "tests/fixtures"));
    static final String STALE = "topic-partition-offset-states";

    public static Path fixture(String name) {
        Path p = FIXTURES.resolve("1.15.4").resolve(name);
        assertTrue(p + " is missing", Files.isRegularFile(p.resolve("_metadata")));
        return p;
    }

    @Test
    public void inspectReportsTheStaleUnionState() throws Exception {
        InspectReport r = CheckpointSurgeon.inspect(fixture("stale-union"));
        assertEquals(3, r.metadataVersion());
        InspectReport.OperatorInfo source = r.operators().stream()
                .filter(o -> o.stateTotals().stream().anyMatch(t -> t.name().equals(STALE)))
                .findFirst().orElseThrow();
        InspectReport.StateTotal t = source.stateTotals().stream().filter(x -> x.name().equals(STALE)).findFirst().orElseThrow();
        assertEquals("UNION", t.mode());
        assertEquals(source.parallelism(), t.handles());
        assertTrue(t.elements() > source.parallelism());
        assertTrue(t.bytes() > 0);
        assertTrue(r.toJson().contains("\"" + STALE + "\""));
    }

    @Test
    public void corruptedMetadataGivesAFormatErrorWithFileAndOffset() throws Exception {
        byte[] good = Files.readAllBytes(fixture("operator-state-inline").resolve("_metadata"));
        byte[] bad = Arrays.copyOf(good, good.length / 2);
        try {
            CheckpointSurgeon.inspect(bad, "half.bin", null);
            fail("a truncated file must not parse");
        } catch (CheckpointSurgeonException e) {
            assertEquals("FORMAT", e.code().name());
            assertTrue(e.getMessage(), e.getMessage().startsWith("half.bin: at byte "));
            assertTrue(e.getMessage(), e.getMessage().contains("expected"));
        }
        bad = good.clone();
        bad[0] = 0x12;
        try {
            CheckpointSurgeon.describe(bad);
            fail("a wrong magic number must not parse");
        } catch (CheckpointSurgeonException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("at byte 0: expected the _metadata magic number"));
        }
    }

    @Test
    public void roundTripIsByteIdentical() throws Exception {
        byte[] md = Files.readAllBytes(fixture("keyed-rocksdb-incremental").resolve("_metadata"));
        assertTrue(Arrays.equals(md, CheckpointSurgeon.roundTrip(md)));
    }

    @Test
    public void planWritesNothingAndApplyWritesANewCheckpoint() throws Exception {
        Path in = fixture("stale-union");
        Surgery s = Surgery.removeState(Surgery.OperatorSelector.uid("source_consumer"), STALE);
        SurgeryPlan plan = CheckpointSurgeon.plan(in, s);
        assertEquals(null, plan.result());
        assertTrue(plan.elementsRemoved() > 0);
        assertTrue(plan.metadataBytesAfter() < plan.metadataBytesBefore());
        Path out = Files.createTempDirectory("cs").resolve("repaired");
        SurgeryPlan done = CheckpointSurgeon.apply(in, s, out);
        assertEquals(plan.changes(), done.changes());
        InspectReport after = CheckpointSurgeon.inspect(out);
        assertTrue(after.operators().stream().flatMap(o -> o.stateTotals().stream()).noneMatch(t -> t.name().equals(STALE)));
        assertEquals(plan.metadataBytesAfter(), after.metadataBytes());
    }

    @Test
    public void cliExitCodes() throws Exception {
        Path in = fixture("stale-union");
        assertEquals(Cli.OK, run("inspect", in.toString()).code);
        Result json = run("inspect", "--json", in.toString());
        assertEquals(Cli.OK, json.code);
        assertTrue(json.out.trim().startsWith("{"));
        assertEquals(Cli.USAGE, run("remove-state", in.toString()).code);
        Result none = run("remove-state", in.toString(), "--uid", "nope", "--state", STALE);
        assertEquals(Cli.INVALID, none.code);
        assertTrue(none.err.contains("selects nothing"));
        Path bad = Files.createTempFile("cs", "_metadata");
        Files.write(bad, new byte[] {1, 2, 3});
        assertEquals(Cli.INVALID, run("inspect", bad.toString()).code);
    }

    @Test
    public void renameOperatorKeepsTheCoordinatorStateUnderTheNewId() throws Exception {
        // flip27-source: a FLIP-27 source whose enumerator checkpoint is the operator's coordinator state
        Path in = fixture("flip27-source");
        InspectReport before = CheckpointSurgeon.inspect(in);
        InspectReport.OperatorInfo source = before.operators().stream().filter(o -> o.coordinatorStateBytes() > 0)
                .findFirst().orElseThrow();
        Path out = Files.createTempDirectory("cs-rename").resolve("out");
        Result r = run("rename-operator", in.toString(), "--operator-id", source.id(), "--to-uid", "number-source v2",
                "--apply", "--output", out.toString());
        assertEquals(r.err, Cli.OK, r.code);
        assertTrue(r.out, r.out.contains("rename-operator"));
        InspectReport after = CheckpointSurgeon.inspect(out);
        InspectReport.OperatorInfo moved = after.operators().stream().filter(o -> o.coordinatorStateBytes() > 0)
                .findFirst().orElseThrow();
        assertTrue(moved.id() + " is still " + source.id(), !moved.id().equals(source.id()));
        assertEquals(source.coordinatorStateBytes(), moved.coordinatorStateBytes());
        assertEquals(source.subtasks(), moved.subtasks());
        assertEquals(before.operators().size(), after.operators().size());
        // the new id is Flink's hash of the new uid: selecting by that uid finds it
        SurgeryPlan again = CheckpointSurgeon.plan(out, Surgery.renameOperator(
                Surgery.OperatorSelector.uid("number-source v2"), "number-source v3"));
        assertEquals(moved.id(), again.changes().get(0).operatorId());

        // a target that exists is refused (exit 2), and a --map with one target twice
        String other = before.operators().stream().filter(o -> !o.id().equals(source.id())).findFirst().orElseThrow().id();
        Result taken = run("rename-operator", in.toString(), "--operator-id", source.id(), "--to-operator-id", other);
        assertEquals(taken.err, Cli.INVALID, taken.code);
        assertTrue(taken.err, taken.err.contains("already exists"));
        Path map = Files.createTempFile("cs-map", ".txt");
        Files.writeString(map, "# old new\n" + source.id() + " a\n" + other + " a\n");
        Result twice = run("rename-operator", in.toString(), "--map", map.toString());
        assertEquals(twice.err, Cli.INVALID, twice.code);
        assertTrue(twice.err, twice.err.contains("also the target of line 2"));
    }

    /** A CLI run: exit code, stdout, stderr (also what {@link CliSubprocessTest} runs return). */
    public static final class Result {
        public final int code;
        public final String out;
        public final String err;

        Result(int code, String out, String err) {
            this.code = code;
            this.out = out;
            this.err = err;
        }
    }

    public static Result run(String... args) {
        PrintStream oldOut = System.out, oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = Cli.run(args);
            return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    static List<String> lines(String s) {
        return List.of(s.split("\n"));
    }
}
