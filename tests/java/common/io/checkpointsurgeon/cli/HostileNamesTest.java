package io.checkpointsurgeon.cli;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.faults.KillDuringRepairTest;
import io.checkpointsurgeon.fixtures.Functions;
import io.checkpointsurgeon.fixtures.Functions.HostileNames;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.KeyedReport;
import java.nio.charset.StandardCharsets;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.KeyedStateStore;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.junit.Assume;
import org.junit.Test;

/**
 * A checkpoint that a real Flink 2.3.0 job wrote, whose operator uids and names, operator and keyed
 * state names, a keyed state's POJO class name (in its serializer snapshot) and directory carry ESC
 * with CSI and OSC sequences, BEL, NUL, CR, LF, TAB, DEL, C1 controls, bidirectional overrides and
 * 20,000-character names ({@link HostileNames}, {@link HostileKeyed}), renamed again by
 * rename-operator to a uid and name of the same kind, goes through the text output of every command
 * (inspect, --subtasks, --keyed, doctor, --keyed, --expect-states, --job-jar, each surgery's plan
 * and apply, diff and history with and without --keyed, watch's log and metrics, kafka, ha list and
 * repair, clean-leftovers, errors of the library, of the arguments and a 100 KB --state echoed in
 * one, a copy whose files were cut short) and its JSON, HTML and SVG: no raw control character
 * reaches the output, no line is longer than a shortened value makes it, and the values are there,
 * escaped. The keyed text renderers are also checked without the CLI's terminal guard.
 */
public class HostileNamesTest {
    static final String NEW_UID = "u<script>\u001b[2J\u0000";
    static final String NEW_NAME = "n\u001b]0;pwned\u0007\u001b[2J\u202e\u2066";
    static final String DIR_NAME = "dir\u001b]0;t\u0007\n\u202e\u0085x";
    /** The keyed operator's uid and its keyed states' names ({@link HostileKeyed}). */
    static final String KEYED_UID = "keyed\u001b[31m\u202ediu";
    static final String K_CSI = "k-clear\u001b[2J\u001b[H";
    static final String K_OSC = "k-title\u001b]0;pwned\u0007";
    static final String K_C0 = "k-nul\u0000cr\rlf\ntab\tdel\u007f";
    static final String K_C1_BIDI = "k-c1\u009b31m\u0085bidi\u202eevil\u2066x\u2069";
    static final String K_LONG = "k-long-" + "K".repeat(20_000) + "\u001b[2J";
    /**
     * The simple name {@link PojoOfHostileName}'s class file is loaded under: ESC c (a terminal's
     * reset), BEL, C1's CSI, CR, LF and a bidi override, in as many bytes of (modified) UTF-8 (a
     * class name may not hold {@code . ; [ /}).
     */
    static final String POJO_NAME = "Pojo\u001bc\u0007\u009b2J\r\n\u202eZ";

    @Test
    public void noCommandPrintsARawControlCharacter() throws Exception {
        Assume.assumeTrue("Flink 2.x stores uids and names; runs on 2.3.0", "2.3.0".equals(System.getProperty("flink.version")));
        Path work = Files.createTempDirectory("cs-hostile");
        Path written = hostileCheckpoint(work);
        Path base = Files.createDirectories(work.resolve("base"));
        Path dir = base.resolve(DIR_NAME).resolve(written.getFileName());
        TestFiles.copyRecursively(written, dir);
        String d = dir.toString();
        String out1 = base.resolve(DIR_NAME + "-removed").toString();
        String out2 = base.resolve(DIR_NAME + "-renamed").toString();
        String big = "x".repeat(100_000) + "\u001b[2J";
        Path files = Files.createDirectories(work.resolve("files"));
        String topic = "topic\u001b[2J\u0007";

        List<String[]> commands = new ArrayList<>();
        commands.add(new String[] {"inspect", d});
        commands.add(new String[] {"inspect", d, "--subtasks", "--html", files.resolve("inspect.html").toString()});
        commands.add(new String[] {"inspect", d, "--json"});
        commands.add(new String[] {"doctor", d});
        commands.add(new String[] {"doctor", d, "--json"});
        commands.add(new String[] {"remove-state", d, "--state", HostileNames.CSI});
        commands.add(new String[] {"remove-state", d, "--state", HostileNames.C0, "--apply", "--output", out1});
        commands.add(new String[] {"dedupe-union", d, "--state", HostileNames.LONG});
        commands.add(new String[] {"remove-operator", d, "--uid", HostileNames.UID});
        commands.add(new String[] {"rename-operator", d, "--uid", HostileNames.UID, "--to-name", NEW_NAME});
        commands.add(new String[] {"rename-operator", d, "--uid", HostileNames.UID, "--to-uid", NEW_UID, "--to-name",
            NEW_NAME, "--apply", "--output", out2});
        commands.add(new String[] {"rename-operator", d, "--uid", HostileNames.UID, "--to-name", big});
        commands.add(new String[] {"relocate", d, "--from", "/nowhere\u001b[2J", "--to", "/else\u202e"});
        commands.add(new String[] {"inspect", out2});
        commands.add(new String[] {"diff", d, out2});
        commands.add(new String[] {"diff", out1, out2, "--json"});
        commands.add(new String[] {"history", d, out1, "--svg", files.resolve("history.svg").toString(), "--html",
            files.resolve("history.html").toString()});
        commands.add(new String[] {"watch", "--dir", base.toString(), "--once"});
        commands.add(new String[] {"recover", base.toString()});
        commands.add(new String[] {"orphans", base.toString()});
        commands.add(new String[] {"kafka", "migrate-legacy", d, "--uid", HostileNames.UID});
        commands.add(new String[] {"kafka", "drop-topic", d, "--topic", topic});
        commands.add(new String[] {"kafka", "set-offsets", d, "--topic", topic, "--offset", "5"});
        commands.add(new String[] {"remove-state", d, "--state", big});
        commands.add(new String[] {"remove-state", d, "--state", HostileNames.OSC, "--apply", "--output",
            d + "/sub\u001b[2J"});
        commands.add(new String[] {"inspect", d + "/nope\u001b]0;x\u0007"});
        commands.add(new String[] {"remove-state", d, "--bogus\u001b[2J\u202e"});
        commands.add(new String[] {"doctor", d, "--fail-on", "sometimes\u001b[2J"});
        commands.add(new String[] {"clean-leftovers", d});
        // the keyed state's names, its POJO's class name and the notes of a copy whose files were cut short
        Path expect = Files.writeString(files.resolve("expected-states.txt"), "only-this-one\n");
        // a job jar without the POJO's class (JUnit's)
        String jobJar = Path.of(Test.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString();
        // (outside base, which watch watches as one job per directory)
        String broken = work.resolve("cut").resolve(DIR_NAME + "-cut").resolve(written.getFileName()).toString();
        TestFiles.copyRecursively(written, Path.of(broken));
        halve(Path.of(broken));
        commands.add(new String[] {"inspect", d, "--keyed"});
        commands.add(new String[] {"inspect", d, "--keyed", "--subtasks"});
        commands.add(new String[] {"inspect", d, "--keyed", "--json"});
        commands.add(new String[] {"doctor", d, "--keyed"});
        commands.add(new String[] {"doctor", d, "--expect-states", expect.toString(), "--job-jar", jobJar});
        commands.add(new String[] {"doctor", d, "--expect-states", expect.toString(), "--json"});
        commands.add(new String[] {"diff", d, out2, "--keyed"});
        commands.add(new String[] {"history", d, out1, out2, "--keyed"});
        commands.add(new String[] {"inspect", broken, "--keyed", "--subtasks"});
        commands.add(new String[] {"inspect", broken, "--keyed"});
        commands.add(new String[] {"doctor", broken, "--keyed"});
        Path ha = haFile(dir);
        if (ha != null) {
            commands.add(new String[] {"ha", "list", ha.getParent().toString()});
            commands.add(new String[] {"doctor", ha.toString()});
            commands.add(new String[] {"ha", "repair", ha.toString(), "--uid", HostileNames.UID, "--state",
                HostileNames.BIDI});
            commands.add(new String[] {"ha", "repair", ha.toString(), "--uid", HostileNames.UID, "--state",
                HostileNames.BIDI, "--apply", "--force"});
        }
        // the keyed surgeries' plans and an apply, relocate's check naming a hostile --to, an argument
        // starting with '@' that names an existing file (taken as it is, not as that file's arguments)
        commands.add(new String[] {"remove-keyed-state", d, "--state", K_CSI});
        commands.add(new String[] {"rename-keyed-state", d, "--state", K_OSC, "--to", K_C1_BIDI + "-renamed"});
        commands.add(new String[] {"remove-keyed-state", d, "--uid", KEYED_UID, "--state", K_LONG, "--apply", "--output",
            base.resolve(DIR_NAME + "-keyed").toString()});
        commands.add(new String[] {"relocate", d, "--from", "/", "--to", "/else\n\u001b[2J\u202e" + "z".repeat(20_000),
            "--check"});
        commands.add(new String[] {"remove-state", d, "--state", "@" + expect});
        commands.add(new String[] {"remove-state", d, "--state", HostileNames.OSC, "--apply", "--in-place"});

        StringBuilder all = new StringBuilder();
        for (String[] c : commands) {
            InProcessCli.Run r = run(c);
            String what = String.join(" ", c).replaceAll("[^ -~]", "?");
            if (what.length() > 200) what = what.substring(0, 200) + "...";
            // JSON and the metrics hold every value whole (for programs); the text for people shortens them
            boolean whole = java.util.Arrays.asList(c).contains("--json") || c[0].equals("watch");
            assertSafe(what + " (stdout)", r.out, !whole);
            assertSafe(what + " (stderr)", r.err, true);
            all.append(r.out).append(r.err);
            if (c.length > 3 && c[0].equals("remove-state") && c[3].equals(big)) {
                assertEquals(r.err, 2, r.code);
                // the message with the 100 KB argument in it, shortened with its length
                assertTrue(r.err, r.err.length() < 2_000 && r.err.matches("(?s).*\\.\\.\\.\\(100,0\\d\\d characters\\)\\.\\.\\..*"));
            }
        }
        for (Path f : List.of(files.resolve("inspect.html"), files.resolve("history.svg"), files.resolve("history.html"))) {
            assertSafe(f.toString(), Files.readString(f), false);
        }
        rendersKeyedStateSafely(d, out2, broken);
        // the values are shown, escaped
        String text = all.toString();
        for (String shown : new String[] {"uid=uid\\u001b[31m\\u202eeulav", "clear\\u001b[2J\\u001b[H",
            "title\\u001b]0;pwned\\u0007", "nul\\u0000cr\\rlf\\ntab\\tdel\\u007f", "c1\\u009b31m\\u0085",
            "bidi\\u202eevil\\u2066x\\u2069", "uid=u<script>\\u001b[2J\\u0000",
            "name=n\\u001b]0;pwned\\u0007\\u001b[2J\\u202e\\u2066", "dir\\u001b]0;t\\u0007\\n\\u202e\\u0085x",
            String.format(Locale.ROOT, "...(%,d characters)...", HostileNames.LONG.length()),
            "operator_uid=\"uid\\\\u001b[31m\\\\u202eeulav\"",
            "--state $'clear\\x1b[2J\\x1b[H'",
            "uid=keyed\\u001b[31m\\u202ediu", "k-clear\\u001b[2J\\u001b[H", "k-title\\u001b]0;pwned\\u0007",
            "k-nul\\u0000cr\\rlf\\ntab\\tdel\\u007f", "k-c1\\u009b31m\\u0085bidi\\u202eevil\\u2066x\\u2069",
            String.format(Locale.ROOT, "...(%,d characters)...", K_LONG.length()),
            "Pojo\\u001bc\\u0007\\u009b2J\\r\\n\\u202eZ", "KEYED_SERIALIZER_CLASS_MISSING", "STALE_KEYED_STATE",
            DIR_NAME.replace("\u001b", "\\u001b").replace("\u0007", "\\u0007").replace("\n", "\\n")
                    .replace("\u202e", "\\u202e").replace("\u0085", "\\u0085") + "-cut/"}) {
            assertTrue("shown: " + shown, text.contains(shown));
        }
        // watch's log: one line per checkpoint, whatever the job directory's name holds
        InProcessCli.Run watch = run("watch", "--dir", base.toString(), "--once");
        assertEquals(watch.err, 1, watch.err.split("\n").length);
        assertTrue(watch.err, watch.err.startsWith("job dir\\u001b]0;t\\u0007\\n\\u202e\\u0085x ("));
        if (ha == null) System.out.println("hostile names: ha list/repair skipped (no HA file of this Flink version)");
    }

    /**
     * The keyed text renderers themselves, without the CLI's terminal guard ({@link Terminal#writer}),
     * so that a value they print without {@link TextRenderer#printable} fails here: inspect --keyed
     * (with and without --subtasks, of the checkpoint and of its copy whose files were cut short),
     * doctor's keyed findings (stale, serializer class missing), diff and
     * history with keyed rows.
     */
    static void rendersKeyedStateSafely(String d, String other, String broken) throws Exception {
        InspectReport ra = CheckpointSurgeon.inspect(d), rb = CheckpointSurgeon.inspect(other);
        KeyedReport ka = CheckpointSurgeon.inspectKeyed(d), kb = CheckpointSurgeon.inspectKeyed(other);
        KeyedReport cut = CheckpointSurgeon.inspectKeyed(broken);
        List<CheckpointSurgeon.Finding> findings = new ArrayList<>(CheckpointSurgeon.doctor(ra, d));
        // the test's own class loader cannot load the POJO's class: it was defined by a loader of its own
        findings.addAll(CheckpointSurgeon.doctorKeyed(ra, ka, List.of("only-this-one"), HostileNamesTest.class.getClassLoader()));
        findings.addAll(CheckpointSurgeon.doctorKeyed(rb, cut, null, null));
        for (String code : new String[] {"STALE_KEYED_STATE", "KEYED_SERIALIZER_CLASS_MISSING"}) {
            assertTrue(code + " in " + findings, findings.stream().anyMatch(f -> f.code().name().equals(code)));
        }
        assertTrue("notes of the cut files", cut.operators().stream().flatMap(o -> o.handles().stream())
                .anyMatch(h -> h.error() != null || !h.notes().isEmpty()));
        Growth.Diff diff = Growth.diff(ra, rb, ka, kb);
        Growth.History history = Growth.history(List.of(ra, rb), List.of(ka, kb));
        assertTrue(diff.states().stream().anyMatch(c -> c.state().equals(K_CSI)));
        assertTrue(history.series().stream().anyMatch(c -> c.state().equals(K_LONG)));
        String[][] texts = {{"keyed", TextRenderer.keyed(ka, false)}, {"keyed --subtasks", TextRenderer.keyed(ka, true)},
            {"keyed of the cut copy", TextRenderer.keyed(cut, true)}, {"inspect of the cut copy",
                TextRenderer.inspect(CheckpointSurgeon.inspect(broken), true)},
            {"doctor", TextRenderer.doctor(d, findings)}, {"diff", TextRenderer.diff(diff, other)},
            {"history", TextRenderer.history(history, other)}};
        for (String[] t : texts) assertSafe("TextRenderer " + t[0], t[1], true);
        assertTrue(texts[2][1], texts[2][1].contains("-cut/"));
    }

    /** Every file of a checkpoint but its _metadata cut to half its length. */
    static void halve(Path dir) throws java.io.IOException {
        try (java.util.stream.Stream<Path> s = Files.walk(dir)) {
            for (Path f : (Iterable<Path>) s.filter(Files::isRegularFile)::iterator) {
                if (f.getFileName().toString().equals("_metadata")) continue;
                try (java.nio.channels.FileChannel c = java.nio.channels.FileChannel.open(f, java.nio.file.StandardOpenOption.WRITE)) {
                    c.truncate(c.size() / 2);
                }
            }
        }
    }

    /** No control character but the line feed; in text for people, no line longer than a few shortened values. */
    static void assertSafe(String what, String text, boolean shortened) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if ((c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f
                    || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) {
                int from = Math.max(0, i - 60);
                fail(String.format(Locale.ROOT, "%s: raw U+%04X at %d after: %s", what, (int) c, i,
                        text.substring(from, i).replaceAll("[^ -~]", "?")));
            }
        }
        for (String line : text.split("\n")) {
            assertTrue(what + ": a line of " + line.length() + " characters", !shortened || line.length() <= 5_000);
        }
    }

    /** The CLI in this JVM (see {@link InProcessCli}). */
    static InProcessCli.Run run(String... args) {
        return InProcessCli.run(args);
    }

    /** A retained checkpoint of a job whose operator and states carry the hostile names. */
    static Path hostileCheckpoint(Path work) throws Exception {
        Configuration conf = FlinkConf.checkpointing("hashmap", work.resolve("checkpoints").toUri().toString(),
                work.resolve("savepoints").toUri().toString(), "200ms", 1);
        FlinkConf.inlineThreshold(conf, "0");
        MiniClusterJob.Result r = MiniClusterJob.of("hostile-names", conf, 2, env ->
                Shims.discard(env.fromSource(new NumberSequenceSource(0, Long.MAX_VALUE), WatermarkStrategy.noWatermarks(),
                                "numbers").uid("numbers")
                        .map(new Functions.Sleep(1)).uid("throttle")
                        .rebalance().map(new HostileNames()).uid(HostileNames.UID).name(HostileNames.NAME)
                        .keyBy(new Bucket(), Types.LONG).map(new HostileKeyed()).uid(KEYED_UID).name(KEYED_UID), "sink"))
                .checkpointsAfterReady(1).run();
        if (r.failure() != null) throw new AssertionError(r.failureText());
        Path chk = TestFiles.localPath(r.checkpoint());
        InspectReport report = CheckpointSurgeon.inspect(chk);
        assertTrue(report.operators().stream().anyMatch(o -> o.uid().equals(HostileNames.UID) && o.name().equals(HostileNames.NAME)
                && o.stateTotals().stream().anyMatch(t -> t.name().equals(HostileNames.C0))));
        // the keyed states and the POJO's class name are in the meta info as Flink wrote them
        KeyedReport keyed = CheckpointSurgeon.inspectKeyed(chk);
        KeyedReport.Operator op = keyed.operators().stream().filter(o -> o.uid().equals(KEYED_UID)).findFirst()
                .orElseThrow(() -> new AssertionError("no keyed operator " + keyed.operators()));
        List<String> names = new ArrayList<>();
        for (KeyedReport.State st : op.states()) names.add(st.name());
        assertTrue(names.toString(), names.containsAll(List.of(K_CSI, K_OSC, K_C0, K_C1_BIDI, K_LONG)));
        assertTrue(op.states().stream().flatMap(st -> st.serializers().stream())
                .anyMatch(z -> z.snapshot().classes().contains(hostilePojoClass().getName())));
        return chk;
    }

    /** A key of eight buckets. */
    static final class Bucket implements KeySelector<Long, Long> {
        @Override
        public Long getKey(Long value) {
            return value % 8;
        }
    }

    /**
     * Keyed state under hostile names: a value, a map, a list, a value of a POJO whose class name
     * carries ESC, CSI, BEL, CR and LF ({@link #hostilePojoClass}), and a 20,000-character name.
     */
    static final class HostileKeyed implements MapFunction<Long, Long>, CheckpointedFunction {
        private transient ValueState<String> value;
        private transient MapState<String, String> map;
        private transient ListState<String> list;
        private transient ValueState<Object> pojo;
        private transient ValueState<Long> longName;

        @Override
        @SuppressWarnings("unchecked")
        public void initializeState(FunctionInitializationContext context) throws Exception {
            KeyedStateStore store = context.getKeyedStateStore();
            value = store.getState(new ValueStateDescriptor<>(K_CSI, Types.STRING));
            map = store.getMapState(new MapStateDescriptor<>(K_OSC, Types.STRING, Types.STRING));
            list = store.getListState(new ListStateDescriptor<>(K_C0, Types.STRING));
            pojo = store.getState(new ValueStateDescriptor<>(K_C1_BIDI,
                    (TypeInformation<Object>) TypeInformation.of(hostilePojoClass())));
            longName = store.getState(new ValueStateDescriptor<>(K_LONG, Types.LONG));
        }

        @Override
        public Long map(Long v) throws Exception {
            value.update("value\u001b[2J\u0007" + v);
            map.put("key\u001b]0;x\u0007" + (v % 100), "v");
            if (v % 50 == 0) list.add("item\u001b[2J");
            Object p = hostilePojoClass().getConstructor().newInstance();
            p.getClass().getField("count").setLong(p, v);
            p.getClass().getField("text").set(p, "text\u001b[2J");
            pojo.update(p);
            longName.update(v);
            return v;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {}
    }

    private static Class<?> hostilePojo;

    /**
     * {@link PojoOfHostileName} defined once more from its own class file with {@link #POJO_NAME}
     * in place of its simple name (every occurrence; the same number of bytes in modified UTF-8),
     * by a class loader of this test's.
     */
    static synchronized Class<?> hostilePojoClass() {
        if (hostilePojo != null) return hostilePojo;
        byte[] from = PojoOfHostileName.class.getSimpleName().getBytes(StandardCharsets.US_ASCII);
        byte[] to = POJO_NAME.getBytes(StandardCharsets.UTF_8);
        assertEquals(from.length, to.length);
        byte[] b;
        try (java.io.InputStream in = PojoOfHostileName.class.getResourceAsStream("PojoOfHostileName.class")) {
            b = in.readAllBytes();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        int replaced = 0;
        for (int i = 0; i + from.length <= b.length; i++) {
            if (java.util.Arrays.equals(b, i, i + from.length, from, 0, from.length)) {
                System.arraycopy(to, 0, b, i, to.length);
                replaced++;
            }
        }
        assertTrue("the class file names itself", replaced > 0);
        byte[] bytes = b;
        hostilePojo = new ClassLoader(PojoOfHostileName.class.getClassLoader()) {
            @Override
            protected Class<?> findClass(String name) throws ClassNotFoundException {
                throw new ClassNotFoundException(name);
            }

            Class<?> define() {
                return defineClass(null, bytes, 0, bytes.length);
            }
        }.define();
        return hostilePojo;
    }

    /** An HA file of this checkpoint as a JobManager writes it, or null where this Flink version cannot build one here. */
    static Path haFile(Path checkpointDir) {
        try {
            return KillDuringRepairTest.completedCheckpointOf(checkpointDir);
        } catch (Exception | LinkageError e) {
            return null;
        }
    }
}
