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
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.Charset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.configuration.Configuration;
import org.junit.Assume;
import org.junit.Test;

/**
 * A checkpoint that a real Flink 2.3.0 job wrote, whose operator uid and name, operator state names
 * and directory carry ESC with CSI and OSC sequences, BEL, NUL, CR, LF, TAB, DEL, C1 controls,
 * bidirectional overrides and a 20,000-character name ({@link HostileNames}), renamed again by
 * rename-operator to a uid and name of the same kind, goes through the text output of every command
 * (inspect, --subtasks, doctor, each surgery's plan and apply, diff, history, watch's log and
 * metrics, kafka, ha list and repair, clean-leftovers, errors of the library, of the arguments and
 * a 100 KB --state echoed in one) and its JSON, HTML and SVG: no raw control character reaches the
 * output, no line is longer than a shortened value makes it, and the values are there, escaped.
 */
public class HostileNamesTest {
    static final String NEW_UID = "u<script>\u001b[2J\u0000";
    static final String NEW_NAME = "n\u001b]0;pwned\u0007\u001b[2J\u202e\u2066";
    static final String DIR_NAME = "dir\u001b]0;t\u0007\n\u202e\u0085x";

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
        Path ha = haFile(dir);
        if (ha != null) {
            commands.add(new String[] {"ha", "list", ha.getParent().toString()});
            commands.add(new String[] {"doctor", ha.toString()});
            commands.add(new String[] {"ha", "repair", ha.toString(), "--uid", HostileNames.UID, "--state",
                HostileNames.BIDI});
            commands.add(new String[] {"ha", "repair", ha.toString(), "--uid", HostileNames.UID, "--state",
                HostileNames.BIDI, "--apply", "--force"});
        }
        commands.add(new String[] {"remove-state", d, "--state", HostileNames.OSC, "--apply", "--in-place"});

        StringBuilder all = new StringBuilder();
        for (String[] c : commands) {
            Run r = run(c);
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
        // the values are shown, escaped
        String text = all.toString();
        for (String shown : new String[] {"uid=uid\\u001b[31m\\u202eeulav", "clear\\u001b[2J\\u001b[H",
            "title\\u001b]0;pwned\\u0007", "nul\\u0000cr\\rlf\\ntab\\tdel\\u007f", "c1\\u009b31m\\u0085",
            "bidi\\u202eevil\\u2066x\\u2069", "uid=u<script>\\u001b[2J\\u0000",
            "name=n\\u001b]0;pwned\\u0007\\u001b[2J\\u202e\\u2066", "dir\\u001b]0;t\\u0007\\n\\u202e\\u0085x",
            String.format(Locale.ROOT, "...(%,d characters)...", HostileNames.LONG.length()),
            "operator_uid=\"uid\\\\u001b[31m\\\\u202eeulav\"",
            "--state $'clear\\x1b[2J\\x1b[H'"}) {
            assertTrue("shown: " + shown, text.contains(shown));
        }
        // watch's log: one line per checkpoint, whatever the job directory's name holds
        Run watch = run("watch", "--dir", base.toString(), "--once");
        assertEquals(watch.err, 1, watch.err.split("\n").length);
        assertTrue(watch.err, watch.err.startsWith("job dir\\u001b]0;t\\u0007\\n\\u202e\\u0085x ("));
        if (ha == null) System.out.println("hostile names: ha list/repair skipped (no HA file of this Flink version)");
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

    static final class Run {
        final int code;
        final String out;
        final String err;

        Run(int code, String out, String err) {
            this.code = code;
            this.out = out;
            this.err = err;
        }
    }

    /** The CLI in this JVM, its output decoded as it was written (the platform's charset). */
    static Run run(String... args) {
        PrintStream oldOut = System.out, oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        Charset cs = Charset.defaultCharset();
        try {
            System.setOut(new PrintStream(out, true));
            System.setErr(new PrintStream(err, true));
            int code = Cli.run(args);
            return new Run(code, new String(out.toByteArray(), cs), new String(err.toByteArray(), cs));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
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
                        .rebalance().map(new HostileNames()).uid(HostileNames.UID).name(HostileNames.NAME), "sink"))
                .checkpointsAfterReady(1).run();
        if (r.failure() != null) throw new AssertionError(r.failureText());
        Path chk = TestFiles.localPath(r.checkpoint());
        InspectReport report = CheckpointSurgeon.inspect(chk);
        assertTrue(report.operators().stream().anyMatch(o -> o.uid().equals(HostileNames.UID) && o.name().equals(HostileNames.NAME)
                && o.stateTotals().stream().anyMatch(t -> t.name().equals(HostileNames.C0))));
        return chk;
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
