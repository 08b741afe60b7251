package io.checkpointsurgeon;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
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
 * the restores in between); the figures are served as Prometheus metrics (text exposition format) and new findings
 * run a hook. It only reads checkpoints: a checkpoint that is half-written or deleted while it is
 * read is counted as an error and read again at the next poll.
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
    private static final class Job {
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

    /** Serves the metrics at {@code http://host:port/metrics} (port 0: any free port); returns the port. */
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
        log.printf(Locale.ROOT, "job %s (%s) checkpoint %d %s: _metadata %s, %s%n", job.id, job.name, l.checkpointId,
                l.path, InspectReport.formatBytes(report.metadataBytes()),
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

    /** Runs the hook with the job, the checkpoint and its findings in the environment and on stdin. */
    private void hook(Job job, List<CheckpointSurgeon.Finding> findings) {
        ProcessBuilder pb = new ProcessBuilder("/bin/sh", "-c", onFinding).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.INHERIT);
        Map<String, String> env = pb.environment();
        env.put("CHECKPOINT_SURGEON_JOB_ID", job.id);
        env.put("CHECKPOINT_SURGEON_JOB_NAME", job.name);
        env.put("CHECKPOINT_SURGEON_CHECKPOINT", job.checkpoint);
        env.put("CHECKPOINT_SURGEON_CHECKPOINT_ID", Long.toString(job.checkpointId));
        env.put("CHECKPOINT_SURGEON_FINDINGS", String.join(" ", codes(findings)));
        env.put("CHECKPOINT_SURGEON_SEVERITY", findings.stream().anyMatch(f -> f.severity().equals("ERROR")) ? "ERROR" : "WARNING");
        try {
            Process p = pb.start();
            try (OutputStream in = p.getOutputStream()) {
                in.write(Json.write(findings).getBytes(StandardCharsets.UTF_8));
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
        log.println("watch: " + message);
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
    public synchronized boolean hasFinding(String severity) {
        for (Job job : jobs.values()) {
            for (CheckpointSurgeon.Finding f : job.findings) {
                if (f.severity().equals("ERROR") || f.severity().equals(severity)) return true;
            }
        }
        return false;
    }

    /** The metrics in Prometheus' text exposition format (version 0.0.4). */
    public synchronized String metrics() {
        StringBuilder sb = new StringBuilder();
        Map<String, List<String>> families = new LinkedHashMap<>();
        String[][] help = {
            {"checkpoint_surgeon_state_bytes", "gauge", "Bytes of an operator state's elements in the latest checkpoint, over all subtasks."},
            {"checkpoint_surgeon_state_elements", "gauge", "Elements of an operator state in the latest checkpoint, over all subtasks."},
            {"checkpoint_surgeon_state_distinct_elements", "gauge", "Distinct elements of an operator state in the latest checkpoint (the most in one subtask)."},
            {"checkpoint_surgeon_keyed_state_bytes", "gauge", "Keyed state bytes of an operator in the latest checkpoint."},
            {"checkpoint_surgeon_coordinator_state_bytes", "gauge", "Operator coordinator state bytes in the latest checkpoint."},
            {"checkpoint_surgeon_findings", "gauge", "The doctor's findings on the latest checkpoint, by severity."},
            {"checkpoint_surgeon_finding", "gauge", "1 for each finding code of the latest checkpoint."},
            {"checkpoint_surgeon_last_checkpoint_id", "gauge", "Id of the latest checkpoint inspected."},
            {"checkpoint_surgeon_last_checkpoint_timestamp_seconds", "gauge", "When the latest checkpoint inspected completed (Unix time)."},
            {"checkpoint_surgeon_last_checkpoint_age_seconds", "gauge", "Seconds since the latest checkpoint inspected completed."},
            {"checkpoint_surgeon_metadata_bytes", "gauge", "Size of the latest checkpoint's _metadata."},
            {"checkpoint_surgeon_inspect_seconds", "gauge", "Time taken to inspect and examine the latest checkpoint."},
            {"checkpoint_surgeon_watch_polls_total", "counter", "Polls of the checkpoint source."},
            {"checkpoint_surgeon_watch_errors_total", "counter", "Sources or checkpoints that could not be read, and hooks that failed."},
        };
        for (String[] h : help) families.put(h[0], new ArrayList<>());
        long now = System.currentTimeMillis();
        for (Job job : jobs.values()) {
            if (job.report == null) continue;
            String j = "job_id=\"" + label(job.id) + "\",job_name=\"" + label(job.name) + "\"";
            Map<String, InspectReport.OperatorInfo> ops = new LinkedHashMap<>();
            for (InspectReport.OperatorInfo op : job.report.operators()) ops.put(op.id(), op);
            Map<List<String>, String> modes = new LinkedHashMap<>();
            for (Map.Entry<List<String>, long[]> e : Growth.states(job.report, modes).entrySet()) {
                InspectReport.OperatorInfo op = ops.get(e.getKey().get(0));
                String l = j + "," + operator(op) + ",state=\"" + label(e.getKey().get(1)) + "\",mode=\"" + label(modes.get(e.getKey())) + "\"";
                families.get("checkpoint_surgeon_state_elements").add(l + "} " + e.getValue()[0]);
                families.get("checkpoint_surgeon_state_bytes").add(l + "} " + e.getValue()[1]);
                if (e.getValue()[2] >= 0) families.get("checkpoint_surgeon_state_distinct_elements").add(l + "} " + e.getValue()[2]);
            }
            for (InspectReport.OperatorInfo op : ops.values()) {
                families.get("checkpoint_surgeon_keyed_state_bytes").add(j + "," + operator(op) + "} " + op.keyedStateBytes());
                if (op.coordinatorStateBytes() >= 0) {
                    families.get("checkpoint_surgeon_coordinator_state_bytes").add(j + "," + operator(op) + "} " + op.coordinatorStateBytes());
                }
            }
            for (String severity : new String[] {"ERROR", "WARNING"}) {
                long n = job.findings.stream().filter(f -> f.severity().equals(severity)).count();
                families.get("checkpoint_surgeon_findings").add(j + ",severity=\"" + severity + "\"} " + n);
            }
            Map<String, String> codes = new TreeMap<>();
            for (CheckpointSurgeon.Finding f : job.findings) codes.putIfAbsent(f.code(), f.severity());
            for (Map.Entry<String, String> c : codes.entrySet()) {
                families.get("checkpoint_surgeon_finding").add(j + ",code=\"" + label(c.getKey()) + "\",severity=\"" + c.getValue() + "\"} 1");
            }
            families.get("checkpoint_surgeon_last_checkpoint_id").add(j + "} " + job.checkpointId);
            if (job.timestampMillis > 0) {
                families.get("checkpoint_surgeon_last_checkpoint_timestamp_seconds").add(j + "} " + String.format(Locale.ROOT, "%.3f", job.timestampMillis / 1000.0));
                families.get("checkpoint_surgeon_last_checkpoint_age_seconds").add(j + "} " + String.format(Locale.ROOT, "%.3f", Math.max(0, now - job.timestampMillis) / 1000.0));
            }
            families.get("checkpoint_surgeon_metadata_bytes").add(j + "} " + job.report.metadataBytes());
            families.get("checkpoint_surgeon_inspect_seconds").add(j + "} " + String.format(Locale.ROOT, "%.6f", job.inspectSeconds));
        }
        families.get("checkpoint_surgeon_watch_polls_total").add("} " + polls);
        families.get("checkpoint_surgeon_watch_errors_total").add("} " + errors);
        for (String[] h : help) {
            List<String> samples = families.get(h[0]);
            if (samples.isEmpty()) continue;
            sb.append("# HELP ").append(h[0]).append(' ').append(h[2]).append('\n');
            sb.append("# TYPE ").append(h[0]).append(' ').append(h[1]).append('\n');
            for (String s : samples) {
                sb.append(h[0]).append(s.startsWith("}") ? s.substring(1) : "{" + s).append('\n');
            }
        }
        return sb.toString();
    }

    private static String operator(InspectReport.OperatorInfo op) {
        return "operator_id=\"" + label(op == null ? "" : op.id()) + "\",operator_uid=\"" + label(op == null ? "" : op.uid()) + "\"";
    }

    /** A label value: backslash, double quote and line feed escaped. */
    private static String label(String v) {
        return v == null ? "" : v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    /** Accepts connections, each answered on a thread of its own (a silent client blocks no scrape). */
    private void serve() {
        while (!closed) {
            try {
                Socket s = server.accept();
                Thread t = new Thread(() -> answer(s), "checkpoint-surgeon-metrics-request");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                if (closed) return;
            }
        }
    }

    /** One request per connection: {@code GET /metrics}, anything else 404. */
    private void answer(Socket socket) {
        try (Socket s = socket) {
            s.setSoTimeout(10_000);
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
            String request = in.readLine();
            for (String h = request; h != null && !h.isEmpty(); h = in.readLine()) {
                // the headers are not needed
            }
            String[] parts = request == null ? new String[0] : request.split(" ");
            boolean metrics = parts.length >= 2 && parts[0].equals("GET")
                    && (parts[1].equals("/metrics") || parts[1].startsWith("/metrics?"));
            byte[] body = (metrics ? metrics() : "checkpoint-surgeon watch: the metrics are at /metrics\n")
                    .getBytes(StandardCharsets.UTF_8);
            OutputStream out = s.getOutputStream();
            out.write(((metrics ? "HTTP/1.1 200 OK" : "HTTP/1.1 404 Not Found")
                    + "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: " + body.length
                    + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
        } catch (IOException e) {
            // a client that went away or timed out
        }
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
