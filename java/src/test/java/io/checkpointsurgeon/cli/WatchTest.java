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

    /** Two checkpoints of one job, two restores apart: the watch raises the growth, and only for the stale state. */
    @Test
    public void aUnionMultipliedBetweenTwoCheckpointsIsAFinding() throws Exception {
        Path base = tmp.newFolder("growth").toPath();
        Path job = base.resolve("job");
        Files.createDirectories(job.resolve("chk-1"));
        Files.copy(fixture("1.20.3", "union-growth-p4-r1"), job.resolve("chk-1").resolve("_metadata"));
        StringWriter log = new StringWriter();
        try (Watch w = new Watch(null, base, null, 1000, new PrintWriter(log, true))) {
            w.poll();
            assertEquals(-1, metric(w.metrics(), "checkpoint_surgeon_finding", "code=\"UNION_STATE_GROWS_BY_PARALLELISM\""));
            Files.createDirectories(job.resolve("chk-3"));
            Files.copy(fixture("1.20.3", "union-growth-p4-r3"), job.resolve("chk-3").resolve("_metadata"));
            w.poll();
            String m = w.metrics();
            assertEquals(m, 1, metric(m, "checkpoint_surgeon_finding", "code=\"UNION_STATE_GROWS_BY_PARALLELISM\""));
            assertTrue(log.toString(), log.toString().contains("UNION_STATE_GROWS_BY_PARALLELISM"));
        }
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

    /**
     * The CLI's metrics server listens on the loopback address unless --metrics-host says otherwise
     * (the kernel's table of listening sockets says where), answers HEAD with the headers of GET and
     * no body, and every other method with 405 and the methods it allows.
     */
    @Test
    public void theMetricsListenOnLoopbackByDefaultAndAnswerOnlyGetAndHead() throws Exception {
        Path base = tmp.newFolder("bind").toPath();
        Files.createDirectories(base.resolve("job").resolve("chk-3"));
        Files.copy(fixture("1.20.3", "stale-union"), base.resolve("job").resolve("chk-3").resolve("_metadata"));
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-jar", jar,
                "watch", "--dir", base.toString(), "--metrics-port", "0", "--interval", "60").redirectErrorStream(true).start();
        try {
            java.io.BufferedReader r = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream(),
                    StandardCharsets.UTF_8));
            String line = r.readLine();
            java.util.regex.Matcher m = Pattern.compile("metrics at http://127\\.0\\.0\\.1:(\\d+)/metrics").matcher(String.valueOf(line));
            assertTrue(line, m.matches());
            int port = Integer.parseInt(m.group(1));
            List<String> listening = listeningAddresses(port);
            assertTrue("a listening socket on port " + port, !listening.isEmpty());
            for (String a : listening) {
                // 127.0.0.1 in the kernel's byte order, as IPv4 or IPv4-mapped IPv6
                assertTrue(listening.toString(), a.equals("0100007F") || a.equals("0000000000000000FFFF00000100007F"));
            }
            for (java.net.NetworkInterface ni : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
                for (java.net.InetAddress a : java.util.Collections.list(ni.getInetAddresses())) {
                    if (a.isLoopbackAddress() || !(a instanceof java.net.Inet4Address)) continue;
                    try (Socket s = new Socket()) {
                        s.connect(new java.net.InetSocketAddress(a, port), 2000);
                        throw new AssertionError("the metrics answer on " + a);
                    } catch (java.net.ConnectException expected) {
                        // refused: nothing listens there
                    }
                }
            }
            String get = http(port, "GET /metrics");
            for (long end = System.nanoTime() + 30_000_000_000L; !get.contains("checkpoint_surgeon_last_checkpoint_id")
                    && System.nanoTime() < end; get = http(port, "GET /metrics")) {
                Thread.sleep(50); // the first poll is still running
            }
            assertTrue(get, get.startsWith("HTTP/1.1 200 OK\r\n") && get.contains("checkpoint_surgeon_last_checkpoint_id"));
            String head = http(port, "HEAD /metrics");
            String headers = get.substring(0, get.indexOf("\r\n\r\n") + 4);
            assertEquals("HEAD: the headers of GET, no body", headers.replaceAll("Content-Length: \\d+", "Content-Length: N"),
                    head.replaceAll("Content-Length: \\d+", "Content-Length: N"));
            assertTrue(head, head.matches("(?s).*Content-Length: [1-9][0-9]*\r\n.*"));
            for (String method : new String[] {"POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"}) {
                String answer = http(port, method + " /metrics");
                assertTrue(answer, answer.startsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
                assertTrue(answer, answer.contains("\r\nAllow: GET, HEAD\r\n"));
                assertTrue(answer, !answer.contains("checkpoint_surgeon_"));
            }
            assertTrue(http(port, "GET /other").startsWith("HTTP/1.1 404 Not Found\r\n"));
        } finally {
            p.destroy();
            p.waitFor();
        }
    }

    /**
     * A request line without end (400 MB of it once held 1.1 GB of the watch's heap) is cut off at
     * {@link Watch#MAX_REQUEST_BYTES}, and a client holding {@link Watch#MAX_REQUESTS} connections
     * open starts no more threads: a scrape beyond them is closed unanswered, and answered again as
     * soon as they are gone.
     */
    @Test
    public void anEndlessRequestIsCutOffAndSilentClientsAreBounded() throws Exception {
        Path base = tmp.newFolder("bounded").toPath();
        Files.createDirectories(base.resolve("job").resolve("chk-5"));
        Files.copy(fixture("1.20.3", "stale-union"), base.resolve("job").resolve("chk-5").resolve("_metadata"));
        try (Watch w = new Watch(null, base, null, 1000, new PrintWriter(new StringWriter()))) {
            w.poll();
            int port = w.serveMetrics("127.0.0.1", 0);
            try (Socket endless = new Socket("127.0.0.1", port)) {
                endless.setSoTimeout(10_000);
                byte[] chunk = new byte[64 * 1024];
                Arrays.fill(chunk, (byte) 'G');
                long sent = 0;
                try {
                    for (; sent < 64L * 1024 * 1024; sent += chunk.length) endless.getOutputStream().write(chunk);
                } catch (IOException closed) {
                    // the watch closed the connection: what is expected
                }
                assertTrue("cut off after " + sent + " bytes", sent < 8L * 1024 * 1024);
                assertEquals("no answer", -1, endless.getInputStream().read());
            }
            List<Socket> silent = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < Watch.MAX_REQUESTS; i++) silent.add(new Socket("127.0.0.1", port));
                Thread.sleep(200); // each is accepted and waits for its request line
                try (Socket beyond = new Socket("127.0.0.1", port)) {
                    beyond.setSoTimeout(10_000);
                    assertEquals("closed unanswered", -1, beyond.getInputStream().read());
                }
            } finally {
                for (Socket s : silent) s.close();
            }
            String answer = "";
            for (long end = System.nanoTime() + 10_000_000_000L; !answer.startsWith("HTTP/1.1 200") && System.nanoTime() < end; ) {
                Thread.sleep(50);
                try {
                    answer = http(port, "GET /metrics");
                } catch (IOException closedWhileReleasing) {
                    answer = "";
                }
            }
            assertTrue(answer, answer.startsWith("HTTP/1.1 200 OK\r\n"));
        }
    }

    /**
     * Label values as the exposition format escapes them (backslash, quote, line feed); a control
     * character it has no escape for (ESC, C1, bidirectional overrides) becomes text, never raw.
     */
    @Test
    public void labelValuesCarryNoRawControlCharacter() {
        assertEquals("q\\\"b\\\\n\\nt\tx\\\\u001b[2J\\\\u0007\\\\u009b\\\\u202e",
                PrometheusMetrics.label("q\"b\\n\nt\tx\u001b[2J\u0007\u009b\u202e"));
    }

    /** One request, as bytes on a socket; the whole answer. */
    private static String http(int port, String requestLine) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write((requestLine + " HTTP/1.1\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** The local addresses (hex, as /proc/net/tcp* shows them) of the sockets listening on {@code port}. */
    private static List<String> listeningAddresses(int port) throws IOException {
        List<String> out = new java.util.ArrayList<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            if (!Files.exists(Path.of(table))) continue;
            List<String> lines = Files.readAllLines(Path.of(table));
            for (String line : lines.subList(1, lines.size())) {
                String[] f = line.trim().split("\\s+");
                String[] local = f[1].split(":");
                if (f[3].equals("0A") && Integer.parseInt(local[1], 16) == port) out.add(local[0]);
            }
        }
        return out;
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

    /**
     * A job whose name (from Flink's REST API) holds NUL, ESC and a line feed: the hook still runs,
     * with the name in its environment (NUL shown as \u0000: no environment holds one), and the log
     * line stays one escaped line. Before, ProcessBuilder threw and the watch ended with exit 3.
     */
    @Test
    public void aJobNamedWithNulStillRunsTheHook() throws Exception {
        Path chk = tmp.newFolder("rest-chk").toPath();
        Files.copy(fixture("1.20.3", "stale-union"), chk.resolve("_metadata"));
        String name = "job\u0000nul\u001b[2J\nsecond";
        Map<String, String> answers = Map.of("/jobs/overview",
                "{\"jobs\":[{\"jid\":\"j1\",\"name\":\"job\\u0000nul\\u001b[2J\\nsecond\",\"state\":\"RUNNING\"}]}",
                "/jobs/j1/checkpoints", "{\"latest\":{\"completed\":{\"id\":7,\"external_path\":\"" + chk.toUri()
                        + "\",\"latest_ack_timestamp\":1}}}");
        Path out = tmp.getRoot().toPath().resolve("rest-hook.out");
        StringWriter log = new StringWriter();
        // Flink's REST API as far as the watch asks it (the Java 11 runtime of the tests has no jdk.httpserver)
        try (java.net.ServerSocket rest = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            Thread server = new Thread(() -> {
                while (!rest.isClosed()) {
                    try (Socket s = rest.accept()) {
                        String request = new java.io.BufferedReader(new java.io.InputStreamReader(s.getInputStream(),
                                StandardCharsets.ISO_8859_1)).readLine();
                        byte[] body = answers.getOrDefault(request.split(" ")[1], "{}").getBytes(StandardCharsets.UTF_8);
                        s.getOutputStream().write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                + body.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                        s.getOutputStream().write(body);
                    } catch (IOException | RuntimeException e) {
                        // closed at the end of the test
                    }
                }
            });
            server.setDaemon(true);
            server.start();
            try (Watch w = new Watch("http://127.0.0.1:" + rest.getLocalPort(), null,
                    "printf '%s' \"$CHECKPOINT_SURGEON_JOB_NAME\" > " + out, 30_000, new PrintWriter(log, true))) {
                w.poll();
            }
        }
        assertEquals("job\\u0000nul\u001b[2J\nsecond", Files.readString(out, StandardCharsets.UTF_8));
        assertEquals(log.toString(), 1, log.toString().split("\n").length);
        assertTrue(log.toString(), log.toString().startsWith("job j1 (" + Terminal.safe(name) + ") checkpoint 7 "));
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

    /**
     * The hook's JSON names the remedy of FlinkKafkaConsumer state by the CLI command, as before the
     * library spelled its own action ({@code migrate-kafka-legacy}); the other actions as the library does.
     */
    @Test
    public void theHooksJsonNamesTheKafkaMigrationByItsCommand() {
        CheckpointSurgeon.Remedy migrate = new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.MIGRATE_KAFKA_LEGACY,
                "0123456789abcdef0123456789abcdef", null);
        List<CheckpointSurgeon.Finding> findings = List.of(new CheckpointSurgeon.Finding(
                CheckpointSurgeon.Finding.Severity.WARNING, CheckpointSurgeon.Finding.Code.CONNECTOR_STATE, "m", migrate,
                List.of(new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.INSPECT_SUBTASKS, null, null))));
        String hook = CliSpelling.json(findings);
        assertTrue(hook, hook.contains("\"action\": \"kafka migrate-legacy\"") && hook.contains("\"action\": \"inspect-subtasks\"")
                && hook.contains("\"severity\": \"WARNING\""));
        assertEquals(hook.replace("kafka migrate-legacy", "migrate-kafka-legacy"), Json.write(findings));
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
