package io.checkpointsurgeon.testing;

import io.checkpointsurgeon.internal.Json;

import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URL;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A real Prometheus server (Debian's {@code prometheus} package, {@value #BINARY}) on loopback that
 * scrapes one target every second; {@link #query} asks its HTTP API ({@code /api/v1/query}).
 */
public final class PrometheusServer implements AutoCloseable {
    public static final String BINARY = "/usr/bin/prometheus";

    private final Process process;
    private final int port;
    private final Path log;

    private PrometheusServer(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    /** Starts Prometheus in {@code dir}, scraping {@code http://target/metrics}; waits until it is ready. */
    public static PrometheusServer start(Path dir, String target) throws Exception {
        if (!Files.isExecutable(Path.of(BINARY))) {
            throw new IllegalStateException(BINARY + " is missing: apt-get install prometheus (test.sh installs it)");
        }
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                + "scrape_configs:\n  - job_name: checkpoint-surgeon\n    static_configs:\n      - targets: ['" + target + "']\n");
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path log = dir.resolve("prometheus.log");
        Process p = new ProcessBuilder(BINARY, "--config.file=" + config, "--storage.tsdb.path=" + dir.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        PrometheusServer server = new PrometheusServer(p, port, log);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            if (!p.isAlive()) throw new IllegalStateException("prometheus exited: " + Files.readString(log));
            try {
                if (server.get("/-/ready") != null) return server;
            } catch (IOException notYet) {
                // starting
            }
            if (System.nanoTime() > deadline) {
                server.close();
                throw new IllegalStateException("prometheus not ready within 60 s: " + Files.readString(log));
            }
            Thread.sleep(200);
        }
    }

    /** The instant vector of a PromQL query: each series' labels (with {@code __name__}) and its value. */
    @SuppressWarnings("unchecked")
    public Map<Map<String, String>, Double> query(String promql) throws IOException {
        String body = get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8));
        Map<String, Object> answer = (Map<String, Object>) Json.parse(body);
        if (!"success".equals(answer.get("status"))) throw new IOException("query " + promql + ": " + body);
        Map<Map<String, String>, Double> out = new java.util.LinkedHashMap<>();
        for (Object r : (List<Object>) ((Map<String, Object>) answer.get("data")).get("result")) {
            Map<String, Object> series = (Map<String, Object>) r;
            Map<String, String> labels = new TreeMap<>();
            ((Map<String, Object>) series.get("metric")).forEach((k, v) -> labels.put(k, String.valueOf(v)));
            out.put(labels, Double.valueOf(String.valueOf(((List<Object>) series.get("value")).get(1))));
        }
        return out;
    }

    private String get(String path) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + path).openConnection();
        c.setConnectTimeout(2000);
        c.setReadTimeout(10000);
        try {
            if (c.getResponseCode() != 200) throw new IOException("GET " + path + ": HTTP " + c.getResponseCode());
            try (InputStream in = c.getInputStream()) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8);
            }
        } finally {
            c.disconnect();
        }
    }

    /** What Prometheus logged (for failure messages). */
    public String log() throws IOException {
        return Files.readString(log);
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }
}
