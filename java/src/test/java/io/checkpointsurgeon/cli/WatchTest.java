package io.checkpointsurgeon.cli;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.CheckpointSurgeonTest;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.internal.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.HttpURLConnection;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code watch --dir} on the fixtures real Flink wrote (the Flink 1.20.3 suite's WatchPrometheusTest
 * follows live jobs through Flink's REST API and a real Prometheus server): checkpoints that are
 * half-written or deleted while watched, the metrics endpoint and its format, the hook, the CLI.
 */
public class WatchTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** One line of the text exposition format: a comment, or name{labels} value. */
    private static final Pattern SAMPLE = Pattern.compile(
            "# (HELP|TYPE) [a-z_]+ .+|[a-z_]+(\\{([a-z_]+=\"([^\"\\\\\\n]|\\\\[\\\\\"n])*\",?)*})? -?[0-9.]+(E[0-9]+)?");

    private static Path fixture(String version, String name) {
        return CheckpointSurgeonTest.FIXTURES.resolve(version).resolve(name).resolve("_metadata");
    }

    private static long metric(String metrics, String name, String labelPart) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + "{") && line.contains(labelPart)) {
                return (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
            }
        }
        return -1;
    }

    @Test
    public void halfWrittenAndDeletedCheckpointsAreReadAgainNotFatal() throws Exception {
        Path base = tmp.newFolder("checkpoints").toPath();
        Path job = base.resolve("7f3c0e1d2b4a59687f3c0e1d2b4a5968");
        byte[] grown = Files.readAllBytes(fixture("1.20.3", "stale-union"));
        byte[] earlier = Files.readAllBytes(fixture("1.20.3", "stale-union-restore-2"));
        Files.createDirectories(job.resolve("chk-1"));
        Files.write(job.resolve("chk-1").resolve("_metadata"), earlier);
        StringWriter log = new StringWriter();
        try (Watch w = new Watch(null, base, null, 1000, new PrintWriter(log, true))) {
            w.poll();
            String m = w.metrics();
            assertEquals(1, metric(m, "checkpoint_surgeon_last_checkpoint_id", ""));
            long before = metric(m, "checkpoint_surgeon_state_elements", "state=\"topic-partition-offset-states\"");
            assertEquals(unionElements(job.resolve("chk-1")), before);

            // chk-2 half-written: an error, the last good checkpoint's metrics stay.
            Files.createDirectories(job.resolve("chk-2"));
            Files.write(job.resolve("chk-2").resolve("_metadata"), Arrays.copyOf(grown, grown.length / 2));
            w.poll();
            m = w.metrics();
            assertEquals(1, metric(m, "checkpoint_surgeon_last_checkpoint_id", ""));
            assertEquals(before, metric(m, "checkpoint_surgeon_state_elements", "state=\"topic-partition-offset-states\""));
            assertTrue(m, m.contains("checkpoint_surgeon_watch_errors_total 1\n"));
            assertTrue(log.toString(), log.toString().contains("chk-2") && log.toString().contains("read again at the next poll"));

            // Completed meanwhile: read at the next poll.
            Path tmpFile = job.resolve("chk-2").resolve("_metadata.inprogress");
            Files.write(tmpFile, grown);
            Files.move(tmpFile, job.resolve("chk-2").resolve("_metadata"), StandardCopyOption.REPLACE_EXISTING);
            w.poll();
            m = w.metrics();
            assertEquals(2, metric(m, "checkpoint_surgeon_last_checkpoint_id", ""));
            assertEquals(unionElements(job.resolve("chk-2")), metric(m, "checkpoint_surgeon_state_elements",
                    "state=\"topic-partition-offset-states\""));
            assertTrue(unionElements(job.resolve("chk-2")) > before);
            assertEquals(1, metric(m, "checkpoint_surgeon_finding", "code=\"STALE_UNION_STATE\""));

            // A newer checkpoint deleted before it is read, then the whole job directory: no error
            // that stops the watch, and the last figures stay.
            Files.createDirectories(job.resolve("chk-3"));
            TestFilesAccess.deleteRecursively(job);
            w.poll();
            m = w.metrics();
            assertEquals(2, metric(m, "checkpoint_surgeon_last_checkpoint_id", ""));
            for (String line : m.split("\n")) assertTrue(line, SAMPLE.matcher(line).matches());
        }
    }

    private static long unionElements(Path checkpoint) throws CheckpointSurgeonException {
        return CheckpointSurgeon.inspect(checkpoint).operators().stream().flatMap(o -> o.stateTotals().stream())
                .filter(t -> t.name().equals("topic-partition-offset-states")).mapToLong(InspectReport.StateTotal::elements).sum();
    }

    @Test
    public void theEndpointServesTheTextFormatAndSurvivesASilentClient() throws Exception {
        Path base = tmp.newFolder("odd").toPath();
        Files.createDirectories(base.resolve("job").resolve("chk-5"));
        Files.copy(fixture("1.20.3", "odd-state-names"), base.resolve("job").resolve("chk-5").resolve("_metadata"));
        try (Watch w = new Watch(null, base, null, 1000, new PrintWriter(new StringWriter()))) {
            w.poll();
            int port = w.serveMetrics("127.0.0.1", 0);
            try (Socket silent = new Socket("127.0.0.1", port)) {
                HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/metrics").openConnection();
                c.setReadTimeout(5000);
                assertEquals(200, c.getResponseCode());
                assertTrue(c.getContentType(), c.getContentType().startsWith("text/plain; version=0.0.4"));
                String body;
                try (InputStream in = c.getInputStream()) {
                    body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                }
                // State names with quotes, backslashes and line feeds stay one valid line each.
                for (String line : body.split("\n")) assertTrue(line, SAMPLE.matcher(line).matches());
                assertTrue(body, body.contains("checkpoint_surgeon_last_checkpoint_id{job_id=\"job\",job_name=\"job\"} 5"));
                for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(base.resolve("job").resolve("chk-5")).operators()) {
                    for (InspectReport.StateTotal t : op.stateTotals()) {
                        String escaped = t.name().replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
                        assertEquals(t.name(), t.elements(), metric(body, "checkpoint_surgeon_state_elements",
                                "operator_id=\"" + op.id() + "\",operator_uid=\"" + op.uid().replace("\\", "\\\\")
                                        .replace("\"", "\\\"").replace("\n", "\\n") + "\",state=\"" + escaped + "\","));
                    }
                }
                HttpURLConnection other = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/other").openConnection();
                assertEquals(404, other.getResponseCode());
            }
        }
    }

    @Test
    public void theHookGetsTheFindingsAndIsKilledWhenItHangs() throws Exception {
        Path base = tmp.newFolder("hook").toPath();
        Files.createDirectories(base.resolve("job").resolve("chk-9"));
        Files.copy(fixture("1.20.3", "stale-union"), base.resolve("job").resolve("chk-9").resolve("_metadata"));
        Path out = tmp.getRoot().toPath().resolve("hook.out");
        String hook = "printf '%s|%s|%s|%s\\n' \"$CHECKPOINT_SURGEON_JOB_ID\" \"$CHECKPOINT_SURGEON_CHECKPOINT_ID\""
                + " \"$CHECKPOINT_SURGEON_FINDINGS\" \"$CHECKPOINT_SURGEON_SEVERITY\" > " + out + "; cat >> " + out;
        try (Watch w = new Watch(null, base, hook, 30_000, new PrintWriter(new StringWriter()))) {
            w.poll();
            w.poll(); // the same checkpoint: no second run
        }
        List<String> lines = Files.readAllLines(out);
        assertEquals("job|9|STALE_UNION_STATE|ERROR", lines.get(0));
        assertTrue(lines.toString(), String.join("\n", lines).contains("\"code\": \"STALE_UNION_STATE\""));

        StringWriter log = new StringWriter();
        long t0 = System.nanoTime();
        try (Watch w = new Watch(null, base, "sleep 60", 1000, new PrintWriter(log, true))) {
            w.poll();
            assertTrue(w.metrics(), w.metrics().contains("checkpoint_surgeon_watch_errors_total 1\n"));
        }
        assertTrue("killed after its timeout", System.nanoTime() - t0 < 30_000_000_000L);
        assertTrue(log.toString(), log.toString().contains("did not finish within 1 s; killed"));
    }

    @Test
    public void cliOncePrintsTheMetricsAndExitsLikeTheDoctor() throws Exception {
        Path base = tmp.newFolder("cli").toPath();
        Files.createDirectories(base.resolve("job").resolve("chk-3"));
        Files.copy(fixture("1.20.3", "stale-union"), base.resolve("job").resolve("chk-3").resolve("_metadata"));
        PrintStream saved = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        int rc;
        System.setOut(new PrintStream(buf, true, StandardCharsets.UTF_8));
        try {
            rc = Cli.run("watch", "--dir", base.toString(), "--once");
        } finally {
            System.setOut(saved);
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        assertEquals(out, Cli.FINDINGS, rc);
        assertTrue(out, out.contains("checkpoint_surgeon_finding{job_id=\"job\",job_name=\"job\",code=\"STALE_UNION_STATE\",severity=\"ERROR\"} 1"));
        assertEquals(Cli.USAGE, Cli.run("watch", "--once"));
        assertEquals(Cli.USAGE, Cli.run("watch", "--dir", base.toString(), "--rest", "http://127.0.0.1:1", "--once"));
    }

    @Test
    public void jsonReaderReadsFlinksAnswersAndNamesTheOffsetOfAnError() {
        @SuppressWarnings("unchecked")
        Map<String, Object> m = (Map<String, Object>) Json.parse("{\"jobs\":[{\"jid\":\"a1\",\"name\":\"x \\\"y\\\" \\u00e9\","
                + "\"start-time\":1700000000000,\"ok\":true,\"n\":null}],\"e\":-1.5e3}");
        @SuppressWarnings("unchecked")
        Map<String, Object> job = (Map<String, Object>) ((List<Object>) m.get("jobs")).get(0);
        assertEquals("x \"y\" \u00e9", job.get("name"));
        assertEquals(1700000000000L, ((Number) job.get("start-time")).longValue());
        assertEquals(Boolean.TRUE, job.get("ok"));
        assertTrue(job.containsKey("n") && job.get("n") == null);
        assertEquals(-1500.0, m.get("e"));
        try {
            Json.parse("{\"a\": [1, 2}");
            throw new AssertionError("accepted");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("offset 11"));
        }
    }

    /** Recursive delete for the test's own temporary files. */
    private static final class TestFilesAccess {
        static void deleteRecursively(Path p) throws IOException {
            try (java.util.stream.Stream<Path> s = Files.walk(p)) {
                for (Path f : (Iterable<Path>) s.sorted(java.util.Comparator.reverseOrder())::iterator) Files.delete(f);
            }
        }
    }
}
