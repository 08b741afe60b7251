package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.internal.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Follows the checkpoints of running jobs: the latest completed checkpoint of each job, from Flink's
 * REST API ({@code /jobs/overview}, {@code /jobs/<id>/checkpoints}) or from a checkpoint base
 * directory ({@code <dir>/<job id>/chk-<n>}). Each new checkpoint is inspected and examined by the
 * doctor, and compared with the job's previous one ({@link Growth#diff}: a union state multiplied by
 * the restores in between); the figures are served as Prometheus metrics ({@link PrometheusMetrics})
 * and new findings run a hook. It only reads checkpoints: a checkpoint that is half-written or
 * deleted while it is read is counted as an error and read again at the next poll.
 */
public final class Watch implements AutoCloseable {
    private static final Pattern CHK = Pattern.compile("chk-(\\d+)");

    private final String rest;
    private final Path dir;
    private final String onFinding;
    private final long hookTimeoutMillis;
    private final PrintWriter log;
    private final Map<String, Job> jobs = new TreeMap<>();
    private ServerSocket server;
    private long polls;
    private long errors;
    private volatile boolean closed;

    /** What the watch knows of one job: its latest inspected checkpoint. */
    static final class Job {
        final String id;
        String name;
        long checkpointId = -1;
        String checkpoint;
        long timestampMillis;
        InspectReport report;
        List<CheckpointSurgeon.Finding> findings = List.of();
        double inspectSeconds;
        /** The checkpoint that failed to be read last (it is retried while it is the latest). */
        String failed;

        Job(String id, String name) {
            this.id = id;
            this.name = name;
        }
    }

    /** A job's latest completed checkpoint, as the source names it. */
    private static final class Latest {
        final String jobId;
        final String jobName;
        final long checkpointId;
        final String path;
        final long timestampMillis;

        Latest(String jobId, String jobName, long checkpointId, String path, long timestampMillis) {
            this.jobId = jobId;
            this.jobName = jobName;
            this.checkpointId = checkpointId;
            this.path = path;
            this.timestampMillis = timestampMillis;
        }
    }

    /**
     * @param rest Flink's REST address ({@code http://jobmanager:8081}), or null
     * @param dir a checkpoint base directory, or null (exactly one of rest and dir)
     * @param onFinding a shell command run when a checkpoint has a finding the job's previous one
     *     did not have, or null
     * @param log where each new checkpoint and each error is reported
     */
    public Watch(String rest, Path dir, String onFinding, long hookTimeoutMillis, PrintWriter log) {
        if ((rest == null) == (dir == null)) throw new IllegalArgumentException("give either a REST address or a directory");
        this.rest = rest == null ? null : rest.replaceAll("/+$", "");
        this.dir = dir;
        this.onFinding = onFinding;
        this.hookTimeoutMillis = hookTimeoutMillis;
        this.log = log;
    }

    /**
     * Serves the metrics at {@code http://host:port/metrics} (port 0: any free port); returns the
     * port. {@code host} is the address to bind: the CLI's default is the loopback address.
     */
    public synchronized int serveMetrics(String host, int port) throws IOException {
        server = new ServerSocket();
        server.bind(new InetSocketAddress(InetAddress.getByName(host), port));
        Thread t = new Thread(this::serve, "checkpoint-surgeon-metrics");
        t.setDaemon(true);
        t.start();
        return server.getLocalPort();
    }

    /** Polls every {@code intervalMillis} until closed. */
    public void run(long intervalMillis) throws InterruptedException {
        while (!closed) {
            poll();
            Thread.sleep(intervalMillis);
        }
    }

    /** One pass: finds each job's latest checkpoint and examines the new ones. */
    public void poll() {
        List<Latest> latest;
        try {
            latest = rest != null ? fromRest() : fromDir();
        } catch (IOException | RuntimeException e) {
            error("cannot list the checkpoints of " + (rest != null ? rest : dir) + ": " + e);
            synchronized (this) {
                polls++;
            }
            return;
        }
        for (Latest l : latest) {
            Job job;
            synchronized (this) {
                job = jobs.computeIfAbsent(l.jobId, id -> new Job(id, l.jobName));
                job.name = l.jobName;
            }
            if (l.checkpointId <= job.checkpointId && l.path.equals(job.checkpoint)) continue;
            examine(job, l);
        }
        synchronized (this) {
            polls++;
        }
    }

    private void examine(Job job, Latest l) {
        long t0 = System.nanoTime();
        InspectReport report;
        List<CheckpointSurgeon.Finding> findings;
        try {
            report = CheckpointSurgeon.inspect(l.path);
            findings = new java.util.ArrayList<>(CheckpointSurgeon.doctor(report, l.path));
            // restores between the job's previous checkpoint and this one: a union state multiplied
            if (job.report != null) findings.addAll(Growth.diff(job.report, report).findings());
        } catch (CheckpointSurgeonException | RuntimeException e) {
            if (!l.path.equals(job.failed)) {
                error("job " + job.id + " checkpoint " + l.checkpointId + " " + l.path + ": " + e.getMessage()
                        + " (read again at the next poll)");
            } else {
                synchronized (this) {
                    errors++;
                }
            }
            job.failed = l.path;
            return;
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        TreeSet<String> before = codes(job.findings);
        synchronized (this) {
            job.checkpointId = l.checkpointId;
            job.checkpoint = l.path;
            job.timestampMillis = l.timestampMillis;
            job.report = report;
            job.findings = findings;
            job.inspectSeconds = seconds;
            job.failed = null;
        }
        TreeSet<String> now = codes(findings);
        // one line per checkpoint, whatever its job's name or directory holds
        log.printf(Locale.ROOT, "job %s (%s) checkpoint %d %s: _metadata %s, %s%n", Terminal.safe(job.id),
                Terminal.safe(job.name), l.checkpointId, Terminal.safe(l.path), InspectReport.formatBytes(report.metadataBytes()),
                findings.isEmpty() ? "no findings" : findings.size() + " finding(s) " + now);
        log.flush();
        now.removeAll(before);
        if (onFinding != null && !now.isEmpty()) hook(job, findings);
    }

    private static TreeSet<String> codes(List<CheckpointSurgeon.Finding> findings) {
        TreeSet<String> s = new TreeSet<>();
        for (CheckpointSurgeon.Finding f : findings) s.add(f.code());
        return s;
    }

    /**
     * A value of the hook's environment: exact but for NUL, which no environment can hold (a job
     * named with one, from Flink's REST API, made ProcessBuilder throw and ended the watch).
     */
    static String envValue(String s) {
        return s.replace("\u0000", "\\u0000");
    }

    /** Runs the hook with the job, the checkpoint and its findings in the environment and on stdin. */
    private void hook(Job job, List<CheckpointSurgeon.Finding> findings) {
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", onFinding).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.INHERIT);
        Map<String, String> env = pb.environment();
        env.put("CHECKPOINT_SURGEON_JOB_ID", envValue(job.id));
        env.put("CHECKPOINT_SURGEON_JOB_NAME", envValue(job.name));
        env.put("CHECKPOINT_SURGEON_CHECKPOINT", envValue(job.checkpoint));
        env.put("CHECKPOINT_SURGEON_CHECKPOINT_ID", Long.toString(job.checkpointId));
        env.put("CHECKPOINT_SURGEON_FINDINGS", String.join(" ", codes(findings)));
        env.put("CHECKPOINT_SURGEON_SEVERITY", findings.stream()
                .anyMatch(f -> f.severity() == CheckpointSurgeon.Finding.Severity.ERROR) ? "ERROR" : "WARNING");
        try {
            Process p = pb.start();
            try (OutputStream in = p.getOutputStream()) {
                in.write(Json.write(findings, TextRenderer::jsonSpelling).getBytes(StandardCharsets.UTF_8));
            } catch (IOException e) {
                // the hook need not read its input
            }
            if (!p.waitFor(hookTimeoutMillis, TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                error("--on-finding hook did not finish within " + hookTimeoutMillis / 1000 + " s; killed");
            } else if (p.exitValue() != 0) {
                error("--on-finding hook exited with " + p.exitValue());
            }
        } catch (IOException e) {
            error("--on-finding hook could not run: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void error(String message) {
        synchronized (this) {
            errors++;
        }
        log.println("watch: " + Terminal.safe(message));
        log.flush();
    }

    // ---- sources --------------------------------------------------------------------------------

    private List<Latest> fromRest() throws IOException {
        List<Latest> out = new ArrayList<>();
        for (Object j : list(map(get("/jobs/overview")).get("jobs"))) {
            Map<String, Object> job = map(j);
            String id = String.valueOf(job.get("jid"));
            Object latest = map(get("/jobs/" + id + "/checkpoints")).get("latest");
            Object completed = latest == null ? null : map(latest).get("completed");
            if (completed == null) continue;
            Map<String, Object> c = map(completed);
            Object path = c.get("external_path");
            if (path == null || String.valueOf(path).isEmpty() || String.valueOf(path).equals("<checkpoint-not-externally-addressable>")) {
                continue;
            }
            out.add(new Latest(id, String.valueOf(job.get("name")), number(c.get("id")), String.valueOf(path),
                    number(c.get("latest_ack_timestamp"))));
        }
        return out;
    }

    private Object get(String path) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(rest + path).openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(10000);
        try {
            if (c.getResponseCode() != 200) throw new IOException("GET " + rest + path + ": HTTP " + c.getResponseCode());
            try (InputStream in = c.getInputStream()) {
                return Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            } catch (IllegalArgumentException e) {
                throw new IOException("GET " + rest + path + ": " + e.getMessage(), e);
            }
        } finally {
            c.disconnect();
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) throws IOException {
        if (!(o instanceof Map)) throw new IOException("Flink's REST API answered " + o + ", expected an object");
        return (Map<String, Object>) o;
    }

    private static List<?> list(Object o) throws IOException {
        if (!(o instanceof List)) throw new IOException("Flink's REST API answered " + o + ", expected a list");
        return (List<?>) o;
    }

    private static long number(Object o) {
        return o instanceof Number ? ((Number) o).longValue() : -1;
    }

    /** The newest {@code chk-<n>} holding a {@code _metadata} in each job directory under {@link #dir}. */
    private List<Latest> fromDir() throws IOException {
        Map<Path, Path> newest = new TreeMap<>();
        Map<Path, Long> ids = new LinkedHashMap<>();
        try (java.util.stream.Stream<Path> s = Files.find(dir, 3, (f, a) -> a.isDirectory() && CHK.matcher(f.getFileName().toString()).matches())) {
            for (Path chk : (Iterable<Path>) s::iterator) {
                Matcher m = CHK.matcher(chk.getFileName().toString());
                if (!m.matches() || !Files.isRegularFile(chk.resolve("_metadata"))) continue;
                long id = Long.parseLong(m.group(1));
                Path job = chk.getParent();
                if (id > ids.getOrDefault(job, -1L)) {
                    ids.put(job, id);
                    newest.put(job, chk);
                }
            }
        } catch (java.io.UncheckedIOException e) {
            // a directory deleted while listed: the next poll lists again
            throw e.getCause();
        }
        List<Latest> out = new ArrayList<>();
        for (Map.Entry<Path, Path> e : newest.entrySet()) {
            String job = e.getKey().equals(dir) ? dir.getFileName().toString() : e.getKey().getFileName().toString();
            long mtime;
            try {
                mtime = Files.getLastModifiedTime(e.getValue().resolve("_metadata")).toMillis();
            } catch (IOException gone) {
                continue;
            }
            out.add(new Latest(job, job, ids.get(e.getKey()), e.getValue().toString(), mtime));
        }
        return out;
    }

    // ---- metrics --------------------------------------------------------------------------------

    /** Whether the latest checkpoint of some job has a finding of this severity or a higher one. */
    public synchronized boolean hasFinding(CheckpointSurgeon.Finding.Severity severity) {
        for (Job job : jobs.values()) {
            for (CheckpointSurgeon.Finding f : job.findings) {
                if (f.severity() == CheckpointSurgeon.Finding.Severity.ERROR || f.severity() == severity) return true;
            }
        }
        return false;
    }

    /** The metrics in Prometheus' text exposition format (version 0.0.4). */
    public synchronized String metrics() {
        return PrometheusMetrics.render(jobs.values(), polls, errors, System.currentTimeMillis());
    }

    /** The most requests answered at once; a connection beyond is closed unanswered. */
    static final int MAX_REQUESTS = 16;
    /** The most bytes of a request's line and headers, and the time to send them. */
    static final int MAX_REQUEST_BYTES = 16 * 1024;
    static final long REQUEST_MILLIS = 10_000;
    private final java.util.concurrent.Semaphore requests = new java.util.concurrent.Semaphore(MAX_REQUESTS);

    /**
     * Accepts connections, each answered on a thread of its own (a silent client blocks no scrape),
     * at most {@link #MAX_REQUESTS} at once: a client that opens many cannot start a thread each.
     */
    private void serve() {
        while (!closed) {
            try {
                Socket s = server.accept();
                if (!requests.tryAcquire()) {
                    s.close();
                    continue;
                }
                Thread t = new Thread(() -> {
                    try {
                        answer(s);
                    } finally {
                        requests.release();
                    }
                }, "checkpoint-surgeon-metrics-request");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (closed) return;
            }
        }
    }

    /**
     * One request per connection: {@code GET} (or {@code HEAD}: the same headers, no body) of
     * {@code /metrics}; another path is 404, another method 405 with {@code Allow: GET, HEAD}. A
     * request whose line and headers exceed {@link #MAX_REQUEST_BYTES} or {@link #REQUEST_MILLIS}
     * is closed unanswered (a 400 MB request line once held 1.1 GB of the watch's heap).
     */
    private void answer(Socket socket) {
        try (Socket s = socket) {
            String request = requestLine(s);
            if (request == null) return;
            String[] parts = request == null ? new String[0] : request.split(" ");
            String method = parts.length >= 1 ? parts[0] : "";
            boolean known = method.equals("GET") || method.equals("HEAD");
            boolean metrics = known && parts.length >= 2 && (parts[1].equals("/metrics") || parts[1].startsWith("/metrics?"));
            String status = metrics ? "200 OK" : known ? "404 Not Found" : "405 Method Not Allowed";
            byte[] body = (metrics ? metrics() : known ? "checkpoint-surgeon watch: the metrics are at /metrics\n"
                    : "checkpoint-surgeon watch: GET or HEAD /metrics\n").getBytes(StandardCharsets.UTF_8);
            OutputStream out = s.getOutputStream();
            out.write(("HTTP/1.1 " + status + (known ? "" : "\r\nAllow: GET, HEAD")
                    + "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " + body.length
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            if (!method.equals("HEAD")) out.write(body);
            out.flush();
        } catch (IOException e) {
            // a client that went away or timed out
        }
    }

    /** The request line of {@code s} once its headers are read too; null when over the limits. */
    private static String requestLine(Socket s) throws IOException {
        long end = System.currentTimeMillis() + REQUEST_MILLIS;
        InputStream in = s.getInputStream();
        StringBuilder line = new StringBuilder();
        String first = null;
        for (int total = 0; total < MAX_REQUEST_BYTES; total++) {
            long left = end - System.currentTimeMillis();
            if (left <= 0) return null;
            s.setSoTimeout((int) left);
            int b = in.read();
            if (b < 0) return first; // the client closed: answer what it asked
            if (b == '\n') {
                int n = line.length() > 0 && line.charAt(line.length() - 1) == '\r' ? line.length() - 1 : line.length();
                if (n == 0) return first == null ? "" : first; // the blank line after the headers
                if (first == null) first = line.substring(0, n);
                line.setLength(0);
            } else {
                line.append((char) b);
            }
        }
        return null;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (server != null) {
            try {
                server.close();
            } catch (IOException e) {
                // closing
            }
        }
    }
}
