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
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The Java API and CLI on fixtures that real Flink wrote, without Flink on the classpath: the
 * library loads from the jar, errors arrive as CheckpointSurgeonException (a panic: NativeBridgeTest).
 */
public class CheckpointSurgeonTest {
    public static final Path FIXTURES = Path.of(System.getProperty("fixtures.root", "tests/fixtures"));
    static final String STALE = "topic-partition-offset-states";

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

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
        assertEquals("UNION", t.mode().toString());
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
        // this lane has no Flink on the class path: the status says so, and the text why
        assertEquals(SurgeryPlan.Validation.Status.NOT_VALIDATED, done.result().validation().status());
        assertEquals("not validated: Flink is not on the classpath", done.result().flinkValidation());
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

    /**
     * A rename's plan shows every change it makes (id, stored uid, stored name), and --to-name alone
     * renames an operator without moving it, on metadata that stores names (Flink 2.x, V5+); on
     * 1.20.3's (V4) it is refused and nothing is written.
     */
    @Test
    public void renamePlansShowEveryChangeAndANameAloneNeedsNamesInTheMetadata() throws Exception {
        Path in = FIXTURES.resolve("2.3.0").resolve("flip27-source");
        InspectReport before = CheckpointSurgeon.inspect(in);
        assertTrue(before.metadataVersion() >= 5);
        InspectReport.OperatorInfo source = before.operators().stream().filter(o -> o.coordinatorStateBytes() > 0)
                .findFirst().orElseThrow();
        Result full = run("rename-operator", in.toString(), "--operator-id", source.id(), "--to-uid", "numbers v2",
                "--to-name", "Source: numbers v2");
        assertEquals(full.err, Cli.OK, full.code);
        String newId = CheckpointSurgeon.plan(in, Surgery.renameOperator(Surgery.OperatorSelector.id(source.id()),
                "numbers v2")).changes().get(0).detail().substring(("id " + source.id() + " -> ").length(),
                ("id " + source.id() + " -> ").length() + 32);
        assertTrue(full.out, lines(full.out).contains("    id " + source.id() + " -> " + newId + ", uid '" + source.uid()
                + "' -> 'numbers v2', name '" + source.name() + "' -> 'Source: numbers v2'"));

        Path out = Files.createTempDirectory("cs-rename-name").resolve("out");
        Result named = run("rename-operator", in.toString(), "--operator-id", source.id(), "--to-name", "numbers, renamed",
                "--apply", "--output", out.toString());
        assertEquals(named.err, Cli.OK, named.code);
        assertTrue(named.out, lines(named.out).contains("    name '" + source.name() + "' -> 'numbers, renamed'"));
        InspectReport.OperatorInfo after = CheckpointSurgeon.inspect(out).operators().stream()
                .filter(o -> o.id().equals(source.id())).findFirst().orElseThrow();
        assertEquals(source.uid(), after.uid());
        assertEquals("numbers, renamed", after.name());
        assertEquals(source.coordinatorStateBytes(), after.coordinatorStateBytes());

        Path v4 = FIXTURES.resolve("1.20.3").resolve("flip27-source");
        Path none = Files.createTempDirectory("cs-rename-v4").resolve("out");
        Result refused = run("rename-operator", v4.toString(), "--operator-id", source.id(), "--to-name", "n",
                "--apply", "--output", none.toString());
        assertEquals(refused.err, Cli.INVALID, refused.code);
        assertTrue(refused.err, refused.err.contains("stores no operator names") && refused.err.contains("a new name alone"));
        assertTrue("nothing written", !Files.exists(none));
        Result v4uid = run("rename-operator", v4.toString(), "--operator-id", source.id(), "--to-uid", "numbers v2");
        assertEquals(v4uid.err, Cli.OK, v4uid.code);
        assertTrue(v4uid.out, v4uid.out.contains("id " + source.id() + " -> " + newId + " (the hash of uid 'numbers v2';"
                + " metadata V" + CheckpointSurgeon.inspect(v4).metadataVersion() + " stores no uids)"));
        assertEquals(Cli.USAGE, run("rename-operator", in.toString(), "--operator-id", source.id()).code);
    }

    /**
     * An output anywhere inside the checkpoint's directory (Flink deletes it with the checkpoint),
     * after links and {@code ..} are resolved, or one that holds the checkpoint, is refused by the
     * library's commit sequence before anything is written; a sibling directory is fine.
     */
    @Test
    public void anOutputInsideOrAroundTheCheckpointIsRefused() throws Exception {
        Path root = Files.createTempDirectory("cs-nested").toRealPath();
        Path in = Files.createDirectories(root.resolve("job").resolve("chk-5"));
        try (var files = Files.list(fixture("operator-state-files"))) {
            for (Path f : (Iterable<Path>) files::iterator) Files.copy(f, in.resolve(f.getFileName()));
        }
        Files.createDirectory(in.resolve("deep"));
        Files.createSymbolicLink(root.resolve("alias"), in);
        Files.createSymbolicLink(root.resolve("into-deep"), in.resolve("deep"));
        List<String> listing = listing(in);
        Surgery s = Surgery.removeState(Surgery.OperatorSelector.all(), "union-list");
        String inside = "lies inside the checkpoint's directory " + in;
        String holds = "holds the checkpoint's directory " + in;
        Object[][] cases = {
            {in.resolve("sub"), inside},                                     // a direct subdirectory
            {in.resolve("a").resolve("b").resolve("c"), inside},             // a deeper one
            {in.resolve("deep").resolve("x"), inside},                       // under an existing subdirectory
            {root.resolve("alias").resolve("sub"), inside},                  // through a link to the checkpoint
            {root.resolve("into-deep").resolve("out"), inside},              // through a link into it
            {Path.of(in + "/x/../y"), inside},                               // .. resolved
            {in.resolve("sub").resolve(".."), "is the checkpoint itself"},
            {root.resolve("job"), holds},                                    // holds the input
            {root, holds},
        };
        for (Object[] c : cases) {
            Path out = (Path) c[0];
            try {
                CheckpointSurgeon.apply(in, s, out);
                fail("an output at " + out + " was accepted");
            } catch (CheckpointSurgeonException e) {
                assertEquals(out.toString(), CheckpointSurgeonException.Code.INVALID_ARGUMENT, e.code());
                assertTrue(e.getMessage(), e.getMessage().contains((String) c[1]));
                // the choice it names is typed, through the commit's "nothing was changed" too
                if (c[1].equals("is the checkpoint itself")) {
                    assertTrue(e.getMessage(), e.getMessage().contains("use CheckpointSurgeon.applyInPlace to repair it"));
                    assertEquals(List.of(Choice.IN_PLACE), e.typedMessage().choices());
                }
            }
            assertEquals(out + ": nothing was written", listing, listing(in));
            Result cli = run("remove-state", in.toString(), "--state", "union-list", "--apply", "--output", out.toString());
            assertEquals(cli.err, Cli.INVALID, cli.code);
            assertTrue(cli.err, cli.err.contains((String) c[1]));
            if (c[1].equals("is the checkpoint itself")) assertTrue(cli.err, cli.err.contains("use --in-place to repair it"));
            assertEquals(out + ": nothing was written", listing, listing(in));
        }
        assertTrue(!Files.exists(in.resolve("sub")) && !Files.exists(in.resolve("a")) && !Files.exists(in.resolve("deep/x")));
        Path sibling = root.resolve("job").resolve("chk-5-repaired");
        assertEquals(Cli.OK, run("remove-state", in.toString(), "--state", "union-list", "--apply", "--output",
                sibling.toString()).code);
        assertTrue(Files.exists(sibling.resolve("_metadata")));
    }

    /** Every path under {@code dir}, relative, sorted. */
    static List<String> listing(Path dir) throws java.io.IOException {
        try (var s = Files.walk(dir)) {
            return s.map(p -> dir.relativize(p).toString()).sorted().collect(java.util.stream.Collectors.toList());
        }
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

    /**
     * An HA path is a directory without _metadata holding completedCheckpoint files (its backups
     * and staged files do not count), or a file so named, a backup too: doctor reads it as named.
     */
    @Test
    public void haPathsAreDirectoriesOfCompletedCheckpointFilesOrSuchAFile() throws Exception {
        Path dir = tmp.getRoot().toPath();
        Path backup = Files.write(dir.resolve("completedCheckpointabc.backup-1"), new byte[] {1});
        Files.write(dir.resolve("completedCheckpointabc.tmp-2"), new byte[] {1});
        assertEquals(false, CheckpointSurgeon.isHaPath(dir));
        assertEquals(true, CheckpointSurgeon.isHaPath(backup));
        assertEquals(false, CheckpointSurgeon.isHaPath(Files.write(dir.resolve("other"), new byte[] {1})));
        Path ha = Files.write(dir.resolve("completedCheckpointabc"), new byte[] {1});
        assertEquals(true, CheckpointSurgeon.isHaPath(dir));
        assertEquals(List.of(ha), CheckpointSurgeon.haFiles(dir));
        Files.write(dir.resolve("_metadata"), new byte[] {1});
        assertEquals(false, CheckpointSurgeon.isHaPath(dir));
    }

    static List<String> lines(String s) {
        return List.of(s.split("\n"));
    }
}
