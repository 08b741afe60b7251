package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeonTest.Result;
import io.checkpointsurgeon.internal.Json;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.Test;

/**
 * Keyed state per state through the library and the CLI ({@code inspect --keyed}, {@code doctor
 * --keyed / --expect-states / --job-jar}, {@code diff} and {@code history --keyed}) on the keyed
 * fixtures that real Flink wrote with {@code KeyedStateJob} (1.15.4, 1.20.3, 2.3.0). Flink's own
 * counts are the judge in the Flink suites ({@code KeyedStateJudgeTest}); here the states, their
 * types and formats, and the findings.
 */
public class KeyedReportTest {
    static final String[] VERSIONS = {"1.15.4", "1.20.3", "2.3.0"};
    /** KeyedStateJob.registered(v2): what version 2 of the job registers. */
    static final List<String> V2_STATES = List.of("value-state", "list-state", "map-state", "reducing-state",
            "aggregating-state", "pojo-state", "ttl-state", "_timer_state/event_user-timers",
            "_timer_state/processing_user-timers");
    static final String DROPPED = "dropped-in-v2";

    static Path fixture(String version, String name) {
        return CheckpointSurgeonTest.FIXTURES.resolve(version).resolve(name);
    }

    /** The operator of KeyedStateJob in a keyed report. */
    static KeyedReport.Operator job(KeyedReport r) {
        for (KeyedReport.Operator o : r.operators()) {
            if (o.state("value-state") != null) return o;
        }
        throw new AssertionError("no KeyedStateJob operator in " + r.source());
    }

    @Test
    public void everyKeyedFixtureIsReadPerStateWithItsFormat() throws Exception {
        int read = 0;
        for (String v : VERSIONS) {
            for (String name : List.of("keyed-all-hashmap", "keyed-all-hashmap-compressed", "keyed-all-savepoint-heap",
                    "keyed-all-savepoint-rocksdb-compressed", "keyed-all-native")) {
                KeyedReport r = CheckpointSurgeon.inspectKeyed(fixture(v, name));
                KeyedReport.Operator op = job(r);
                Set<String> names = op.states().stream().map(KeyedReport.State::name).collect(Collectors.toSet());
                Set<String> expected = new TreeSet<>(V2_STATES);
                expected.add(DROPPED);
                assertEquals(v + " " + name, expected, new TreeSet<>(names));
                KeyedReport.SnapshotFormat format = name.contains("savepoint") ? KeyedReport.SnapshotFormat.CANONICAL
                        : name.contains("native") ? KeyedReport.SnapshotFormat.ROCKSDB_FILES
                        : KeyedReport.SnapshotFormat.HEAP_CHECKPOINT;
                for (KeyedReport.State s : op.states()) {
                    String what = v + " " + name + " " + s.name();
                    assertEquals(what, List.of(format), s.formats());
                    assertTrue(what, s.total().complete() && s.total().entries() > 0);
                    assertEquals(what, s.total().entries(), s.subtasks().stream().mapToLong(t -> t.count().entries()).sum());
                    assertEquals(what, s.name().equals("ttl-state"), s.ttl());
                    assertEquals(what, s.name().startsWith("_timer_state/"), "timers".equals(s.kind()));
                    assertEquals(what, format == KeyedReport.SnapshotFormat.ROCKSDB_FILES, s.rocksDb() != null);
                    assertEquals(what, KeyedReport.SerializerKey.KEY_SERIALIZER, s.serializers().get(0).role());
                }
                assertEquals(KeyedReport.StateType.MAP, op.state("map-state").stateType());
                assertEquals("TtlSerializer<LongSerializer, StringSerializer>",
                        op.state("ttl-state").serializer(KeyedReport.SerializerKey.VALUE_SERIALIZER).snapshot().shortName());
                assertTrue(op.state("pojo-state").serializer(KeyedReport.SerializerKey.VALUE_SERIALIZER).snapshot().allClasses()
                        .contains("io.checkpointsurgeon.fixtures.KeyedStateJob$Reading"));
                assertTrue(op.handles().stream().allMatch(h -> h.error() == null));
                // the JSON holds every field
                Map<?, ?> json = (Map<?, ?>) Json.parse(r.toJson());
                assertEquals(r.source(), json.get("source"));
                read++;
            }
        }
        assertEquals(15, read);
    }

    @Test
    public void theStaleKeyedStateIsNamedAndTimersAreNotTheJobs() throws Exception {
        for (String v : VERSIONS) {
            for (String name : List.of("keyed-stale-hashmap", "keyed-stale-native")) {
                Path p = fixture(v, name);
                InspectReport r = CheckpointSurgeon.inspect(p);
                KeyedReport k = CheckpointSurgeon.inspectKeyed(p);
                List<CheckpointSurgeon.Finding> f = CheckpointSurgeon.doctorKeyed(r, k, V2_STATES, null);
                assertEquals(v + " " + name + ": " + f, 1, f.size());
                assertEquals(CheckpointSurgeon.Finding.Code.STALE_KEYED_STATE, f.get(0).code());
                assertEquals(CheckpointSurgeon.Finding.Severity.WARNING, f.get(0).severity());
                assertTrue(f.get(0).message(), f.get(0).message().contains("'" + DROPPED + "'")
                        && f.get(0).message().contains("wait for Surgery.removeKeyedState"));
                // the job's states without the timers, scoped to the operator's uid or id: the same one finding
                String uid = job(k).uid().isEmpty() ? job(k).id() : job(k).uid();
                List<String> scoped = V2_STATES.stream().filter(s -> !s.startsWith("_timer_state"))
                        .map(s -> uid + "/" + s).collect(Collectors.toList());
                assertEquals(f, CheckpointSurgeon.doctorKeyed(r, k, scoped, null));
                // v1's states: nothing stale
                List<String> v1 = new ArrayList<>(V2_STATES);
                v1.add(DROPPED);
                assertEquals(List.of(), CheckpointSurgeon.doctorKeyed(r, k, v1, null));
            }
        }
    }

    /** A keyed report of one state, for the doctor's size rule. */
    private static KeyedReport oneState(long bytes, boolean ttl, KeyedReport.BackendStateType type) {
        KeyedReport.Count c = new KeyedReport.Count(bytes / 100, bytes, bytes, true);
        KeyedReport.State s = new KeyedReport.State("s", type, KeyedReport.StateType.VALUE, List.of(), ttl, c,
                List.of(new KeyedReport.SubtaskCount(0, c)), List.of(KeyedReport.SnapshotFormat.CANONICAL), null);
        return new KeyedReport("x", List.of(new KeyedReport.Operator("0123456789abcdef0123456789abcdef", "", "u", 1,
                128, List.of(s), List.of())));
    }

    @Test
    public void theLargestKeyedStateWithoutTtlIsAWarningFromOneMebibyte() throws Exception {
        InspectReport empty = new InspectReport("x", 3, 1, 100, 0, List.of(), List.of());
        KeyedReport.BackendStateType kv = KeyedReport.BackendStateType.KEY_VALUE;
        List<CheckpointSurgeon.Finding> f = CheckpointSurgeon.doctorKeyed(empty, oneState(2 << 20, false, kv), null, null);
        assertEquals(1, f.size());
        assertEquals(CheckpointSurgeon.Finding.Code.LARGEST_KEYED_STATE_WITHOUT_TTL, f.get(0).code());
        assertTrue(f.get(0).message(), f.get(0).message().contains("20,971 entries") && f.get(0).message().contains("100 %"));
        assertEquals(CheckpointSurgeon.Remedy.Action.INSPECT_KEYED, f.get(0).fix().action());
        assertEquals(List.of(), CheckpointSurgeon.doctorKeyed(empty, oneState(2 << 20, true, kv), null, null));
        assertEquals(List.of(), CheckpointSurgeon.doctorKeyed(empty, oneState((1 << 20) - 1, false, kv), null, null));
        assertEquals(List.of(), CheckpointSurgeon.doctorKeyed(empty,
                oneState(2 << 20, false, KeyedReport.BackendStateType.PRIORITY_QUEUE), null, null));
    }

    @Test
    public void aSerializerClassTheClassPathCannotLoadIsAnError() throws Exception {
        Path p = fixture("1.20.3", "keyed-all-savepoint-heap");
        InspectReport r = CheckpointSurgeon.inspect(p);
        KeyedReport k = CheckpointSurgeon.inspectKeyed(p);
        // no Flink here: Flink's classes are not checked, the job's POJO is
        List<CheckpointSurgeon.Finding> f = CheckpointSurgeon.doctorKeyed(r, k, null, getClass().getClassLoader());
        assertEquals(f.toString(), 1, f.size());
        assertEquals(CheckpointSurgeon.Finding.Code.KEYED_SERIALIZER_CLASS_MISSING, f.get(0).code());
        assertEquals(CheckpointSurgeon.Finding.Severity.ERROR, f.get(0).severity());
        assertTrue(f.get(0).message(), f.get(0).message().contains("'pojo-state'")
                && f.get(0).message().contains("io.checkpointsurgeon.fixtures.KeyedStateJob$Reading"));
    }

    /**
     * {@code doctor --job-jar}: a jar without the POJO class of {@code pojo-state} gives the
     * ERROR (exit 4), a jar with a class of that name (compiled here) none.
     */
    @Test
    public void doctorJobJarChecksTheKeyedSerializerClasses() throws Exception {
        javax.tools.JavaCompiler javac = javax.tools.ToolProvider.getSystemJavaCompiler();
        org.junit.Assume.assumeTrue("a JDK with javac", javac != null);
        Path dir = Files.createTempDirectory("job-jar");
        Path src = Files.createDirectories(dir.resolve("src/io/checkpointsurgeon/fixtures")).resolve("KeyedStateJob.java");
        Files.writeString(src, "package io.checkpointsurgeon.fixtures;\n"
                + "public class KeyedStateJob { public static class Reading { public long key; } }\n");
        Path classes = Files.createDirectories(dir.resolve("classes"));
        assertEquals(0, javac.run(null, null, null, "-d", classes.toString(), src.toString()));
        Path with = dir.resolve("with.jar"), without = dir.resolve("without.jar");
        jar(with, classes);
        jar(without, Files.createDirectories(dir.resolve("empty")));
        String sp = fixture("1.15.4", "keyed-all-savepoint-heap").toString();
        Result missing = CliSubprocessTest.cli("doctor", sp, "--job-jar", without.toString());
        assertEquals(missing.out + missing.err, 4, missing.code);
        assertTrue(missing.out, missing.out.contains("ERROR KEYED_SERIALIZER_CLASS_MISSING: keyed state 'pojo-state'")
                && missing.out.contains("io.checkpointsurgeon.fixtures.KeyedStateJob$Reading"));
        Result found = CliSubprocessTest.cli("doctor", sp, "--job-jar", with.toString());
        assertEquals(found.out + found.err, 0, found.code);
        assertFalse(found.out, found.out.contains("KEYED_SERIALIZER_CLASS_MISSING"));
    }

    private static void jar(Path jar, Path classes) throws IOException {
        try (java.util.jar.JarOutputStream out = new java.util.jar.JarOutputStream(Files.newOutputStream(jar));
                java.util.stream.Stream<Path> files = Files.walk(classes)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                out.putNextEntry(new java.util.jar.JarEntry(classes.relativize(f).toString().replace('\\', '/')));
                out.write(Files.readAllBytes(f));
                out.closeEntry();
            }
        }
    }

    @Test
    public void inspectDoctorDiffAndHistoryWithKeyedOnTheCommandLine() throws Exception {
        String native20 = fixture("1.20.3", "keyed-all-native").toString();
        Result text = CliSubprocessTest.cli("inspect", native20, "--keyed");
        assertEquals(text.err, 0, text.code);
        assertTrue(text.out, text.out.contains("keyed state of ") && text.out.contains("pojo-state")
                && text.out.contains("PojoSerializer(KeyedStateJob$Reading)<IntSerializer, LongSerializer, StringSerializer>")
                && text.out.contains("RocksDB's numbers") && text.out.contains("rocksdb-files")
                && text.out.contains("org.apache.flink.runtime.state.ttl.TtlStateFactory$TtlSerializerSnapshot v"));
        Result json = CliSubprocessTest.cli("inspect", native20, "--keyed", "--json");
        assertEquals(json.err, 0, json.code);
        Map<?, ?> both = (Map<?, ?>) Json.parse(json.out);
        assertEquals(Set.of("inspect", "keyed"), both.keySet());

        Path dir = Files.createTempDirectory("keyed-cli");
        Path html = dir.resolve("report.html");
        Result withHtml = CliSubprocessTest.cli("inspect", native20, "--keyed", "--html", html.toString());
        assertEquals(withHtml.err, 0, withHtml.code);
        String page = Files.readString(html);
        assertTrue(page.contains("dropped-in-v2") && page.contains("keyed state</th>") && page.contains("RocksDB&#39;s numbers"));

        Path expect = dir.resolve("states.txt");
        Files.writeString(expect, "# KeyedStateJob v2\n" + String.join("\n", V2_STATES) + "\n");
        String stale = fixture("2.3.0", "keyed-stale-hashmap").toString();
        Result doctor = CliSubprocessTest.cli("doctor", stale, "--expect-states", expect.toString());
        assertEquals(doctor.err, 0, doctor.code);
        assertTrue(doctor.out, doctor.out.contains("WARNING STALE_KEYED_STATE: keyed value state 'dropped-in-v2'")
                && doctor.out.contains("fix: checkpoint-surgeon inspect " + stale + " --keyed"));
        Result gate = CliSubprocessTest.cli("doctor", stale, "--expect-states", expect.toString(), "--fail-on", "warning");
        assertEquals(gate.err, 4, gate.code);
        Result missing = CliSubprocessTest.cli("doctor", stale, "--expect-states", dir.resolve("none").toString());
        assertEquals(missing.err, 1, missing.code);

        String v1 = fixture("2.3.0", "keyed-all-hashmap").toString();
        Result history = CliSubprocessTest.cli("history", v1, stale, "--keyed");
        assertEquals(history.err, 0, history.code);
        assertTrue(history.out, history.out.contains("dropped-in-v2 (keyed value)"));
        Result plain = CliSubprocessTest.cli("history", v1, stale);
        assertFalse(plain.out, plain.out.contains("(keyed "));
        Result diff = CliSubprocessTest.cli("diff", v1, stale, "--keyed", "--json");
        assertEquals(diff.err, 0, diff.code);
        assertTrue(diff.out, diff.out.contains("\"mode\": \"keyed map\""));
        // history's series of a keyed state: its entries and bytes per checkpoint, as diff counts them
        Map<?, ?> dropped = ((List<?>) ((Map<?, ?>) Json.parse(diff.out)).get("states")).stream().map(m -> (Map<?, ?>) m)
                .filter(m -> DROPPED.equals(m.get("state"))).findFirst().orElseThrow();
        String series = history.out.substring(history.out.indexOf(DROPPED + " (keyed value)"));
        assertTrue(series, series.contains(String.format(java.util.Locale.ROOT,
                "%n  elements %12s%12s%n  growth   %12s%12s%n  bytes    %12s%12s%n",
                grouped(dropped.get("elementsA")), grouped(dropped.get("elementsB")), "-",
                String.format(java.util.Locale.ROOT, "x%.2f", ((Number) dropped.get("factor")).doubleValue()),
                grouped(dropped.get("bytesA")), grouped(dropped.get("bytesB")))));
    }

    @Test
    public void keyedAndOperatorStatesOfOneNameStayApartInDiffs() throws IOException {
        InspectReport.StateInfo st = new InspectReport.StateInfo("s", InspectReport.Mode.SPLIT_DISTRIBUTE, 3, 30, "", -1, 0, List.of());
        InspectReport.OperatorStateHandleInfo h = new InspectReport.OperatorStateHandleInfo("OperatorStreamStateHandle",
                "ByteStreamStateHandle", "", 30, true, 6, false, "", 10, List.of(st));
        InspectReport.OperatorInfo op = new InspectReport.OperatorInfo("0123456789abcdef0123456789abcdef", "", "u", 1,
                128, -1, false, 0, null, List.of(new InspectReport.SubtaskInfo(0, h, null, null, null, 0, 0, 0)));
        InspectReport r = new InspectReport("x", 5, 1, 100, 0, List.of(), List.of(op));
        Growth.Diff d = Growth.diff(r, r, oneState(500, false, KeyedReport.BackendStateType.KEY_VALUE),
                oneState(1000, false, KeyedReport.BackendStateType.KEY_VALUE));
        assertEquals(2, d.states().size());
        Growth.StateChange keyed = d.states().get(1);
        assertEquals("keyed value", keyed.mode().toString());
        assertTrue(keyed.mode().keyed() && keyed.mode().operatorMode() == null);
        assertEquals("grown", keyed.change().toString());
        assertEquals(2.0, keyed.factor(), 0);
        assertEquals("same", d.states().get(0).change().toString());
    }

    /** A JSON number as the CLI's text prints a count. */
    private static String grouped(Object n) {
        return String.format(java.util.Locale.ROOT, "%,d", ((Number) n).longValue());
    }
}
