package io.checkpointsurgeon.testing;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * An S3-compatible server: S3Proxy with jclouds' in-memory ("transient") blob store, in its own JVM
 * on 127.0.0.1 (so its Jetty, jclouds and Jackson stay off Flink's class path), with one bucket.
 * It accepts any signature; clients sign with {@link #ACCESS_KEY} and {@link #SECRET_KEY}.
 */
public final class S3ProxyServer implements AutoCloseable {
    public static final String ACCESS_KEY = "test-access-key";
    public static final String SECRET_KEY = "test-secret-key";

    private final Process process;
    private final int port;

    private S3ProxyServer(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /**
     * Starts S3Proxy from {@code classpath} (the build's {@code s3proxyServer} configuration), with its
     * properties and log in {@code workDir}, and creates {@code bucket}.
     */
    public static S3ProxyServer start(String classpath, Path workDir, String bucket) throws Exception {
        int port = freePort();
        Path props = workDir.resolve("s3proxy.properties");
        Files.writeString(props, String.join("\n",
                "s3proxy.endpoint=http://127.0.0.1:" + port,
                "s3proxy.authorization=none",
                "s3proxy.ignore-unknown-headers=true",
                "jclouds.provider=transient",
                "jclouds.identity=" + ACCESS_KEY,
                "jclouds.credential=" + SECRET_KEY) + "\n");
        Path logback = workDir.resolve("logback.xml");
        Files.writeString(logback, "<configuration><appender name=\"E\" class=\"ch.qos.logback.core.ConsoleAppender\">"
                + "<encoder><pattern>%d %-5level %logger - %msg%n</pattern></encoder></appender>"
                + "<root level=\"WARN\"><appender-ref ref=\"E\"/></root></configuration>\n");
        Path log = workDir.resolve("s3proxy.log");
        Process p = new ProcessBuilder(CliProcess.javaBin(), "-Xmx3g", "-Dlogback.configurationFile=" + logback,
                "-cp", classpath, "org.gaul.s3proxy.Main", "--properties", props.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        S3ProxyServer server = new S3ProxyServer(p, port);
        try {
            server.createBucket(bucket, log);
        } catch (Exception | AssertionError e) {
            server.close();
            throw e;
        }
        return server;
    }

    /** The port S3Proxy listens on (127.0.0.1). */
    public int port() {
        return port;
    }

    /** {@code http://127.0.0.1:<port>}, for {@code s3.endpoint}. */
    public String endpoint() {
        return "http://127.0.0.1:" + port;
    }

    /**
     * A Flink configuration directory for the S3 file system at {@code endpoint} (S3Proxy, or a relay
     * to it): path-style access, the test keys, fail fast instead of retrying for minutes.
     */
    public static Path flinkConf(Path dir, String endpoint, String flinkVersion) throws IOException {
        Files.createDirectories(dir);
        String conf = String.join("\n",
                "s3.endpoint: " + endpoint,
                "s3.path.style.access: true",
                "s3.access-key: " + ACCESS_KEY,
                "s3.secret-key: " + SECRET_KEY,
                "s3.endpoint.region: us-east-1",
                "s3.connection.ssl.enabled: false",
                "s3.attempts.maximum: 2",
                "s3.retry.limit: 2") + "\n";
        Files.writeString(dir.resolve(flinkVersion.startsWith("1.15") ? "flink-conf.yaml" : "config.yaml"), conf);
        return dir;
    }

    /**
     * A plugins directory holding Flink's S3 file system jar as {@code s3-fs-hadoop/}, as in a Flink
     * distribution. One per plugin jar, kept and reused across runs: Hadoop's shutdown hook reads the
     * plugin jar after the tests, so it cannot be deleted by them.
     */
    public static Path pluginsDir(String pluginJar) throws IOException {
        Path jar = Path.of(pluginJar);
        String jarName = jar.getFileName().toString();
        Path plugins = Path.of(System.getProperty("java.io.tmpdir"), "checkpoint-surgeon-s3-plugins",
                jarName.substring(0, jarName.length() - ".jar".length()));
        Path pluginDir = Files.createDirectories(plugins.resolve("s3-fs-hadoop"));
        Path link = pluginDir.resolve(jarName);
        if (!Files.exists(link)) {
            Files.deleteIfExists(link);
            try {
                Files.createSymbolicLink(link, jar);
            } catch (IOException | UnsupportedOperationException e) {
                Files.copy(jar, link);
            }
        }
        return plugins;
    }

    /** Creates another bucket. */
    public void createBucket(String bucket) throws Exception {
        createBucket(bucket, null);
    }

    /** PUT /bucket, retried until S3Proxy listens (at most 60 s). */
    private void createBucket(String bucket, Path log) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                HttpURLConnection c = (HttpURLConnection) new URL(endpoint() + "/" + bucket).openConnection();
                c.setRequestMethod("PUT");
                c.setConnectTimeout(1000);
                int code = c.getResponseCode();
                if (code != 200) {
                    throw new AssertionError("creating the bucket " + bucket + ": HTTP " + code);
                }
                return;
            } catch (IOException e) {
                if (!process.isAlive()) {
                    throw new AssertionError("S3Proxy exited: " + (log == null ? e : Files.readString(log)));
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("S3Proxy did not start within 60 s: " + (log == null ? e : Files.readString(log)));
                }
                Thread.sleep(200);
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
