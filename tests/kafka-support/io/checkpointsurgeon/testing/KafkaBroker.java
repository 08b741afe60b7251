package io.checkpointsurgeon.testing;

import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A single-node Kafka broker in KRaft mode (broker and controller in one process), started as a
 * local Java process on 127.0.0.1 with a log dir under a temporary directory. It runs in its own
 * JVM so that the broker's kafka-clients (3.x) never meets the connector's (2.8.1 in Flink 1.15).
 * The class path of the broker comes from the system property {@value #CLASSPATH} (set by the
 * gradle tasks to the {@code kafkaBroker} configuration). The demo and the Kafka surgery tests
 * share it.
 */
public final class KafkaBroker implements AutoCloseable {
    public static final String CLASSPATH = "kafka.broker.classpath";

    private final Process process;
    private final Path logFile;
    private final String bootstrap;
    private final Thread shutdownHook;

    private KafkaBroker(Process process, Path logFile, String bootstrap) {
        this.process = process;
        this.logFile = logFile;
        this.bootstrap = bootstrap;
        this.shutdownHook = new Thread(process::destroyForcibly, "kafka-broker-killer");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    public String bootstrapServers() {
        return bootstrap;
    }

    public static KafkaBroker start(Path dir) throws Exception {
        String cp = System.getProperty(CLASSPATH);
        if (cp == null || cp.isEmpty()) {
            throw new IllegalStateException("system property " + CLASSPATH + " is not set (run through gradle)");
        }
        Files.createDirectories(dir);
        int brokerPort = freePort();
        int controllerPort = freePort();
        Path logs = dir.resolve("kafka-logs");
        Path props = dir.resolve("server.properties");
        List<String> lines = List.of(
                "process.roles=broker,controller",
                "node.id=1",
                "controller.quorum.voters=1@127.0.0.1:" + controllerPort,
                "listeners=PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort,
                "advertised.listeners=PLAINTEXT://127.0.0.1:" + brokerPort,
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "log.dirs=" + logs,
                "num.partitions=1",
                "offsets.topic.replication.factor=1",
                "offsets.topic.num.partitions=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "transaction.state.log.num.partitions=1",
                "group.initial.rebalance.delay.ms=0",
                "auto.create.topics.enable=false",
                "log.flush.interval.messages=100000");
        Files.write(props, lines, StandardCharsets.UTF_8);

        byte[] id = new byte[16];
        new SecureRandom().nextBytes(id);
        id[0] &= 0x7F; // the first Base64 character is then a letter: an id starting with '-' reads as an option
        String clusterId = Base64.getUrlEncoder().withoutPadding().encodeToString(id);
        Path logFile = dir.resolve("broker.log");
        Process format = java(cp, logFile, "kafka.tools.StorageTool", "format", "-t", clusterId, "-c", props.toString());
        if (!format.waitFor(120, TimeUnit.SECONDS) || format.exitValue() != 0) {
            format.destroyForcibly();
            throw new IllegalStateException("kafka storage format failed:\n" + tail(logFile));
        }
        Process p = java(cp, logFile, "kafka.Kafka", props.toString());
        KafkaBroker broker = new KafkaBroker(p, logFile, "127.0.0.1:" + brokerPort);
        try {
            broker.awaitReady();
        } catch (Exception e) {
            broker.close();
            throw e;
        }
        return broker;
    }

    private static Process java(String cp, Path log, String main, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx384m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        cmd.add("-cp");
        cmd.add(cp);
        cmd.add(main);
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
    }

    private void awaitReady() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        Exception last = null;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("kafka broker exited with " + process.exitValue() + ":\n" + tail(logFile));
            }
            try (AdminClient admin = admin()) {
                admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                return;
            } catch (Exception e) {
                last = e;
                Thread.sleep(250);
            }
        }
        throw new IllegalStateException("kafka broker not ready after 120 s: " + last + "\n" + tail(logFile));
    }

    public AdminClient admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        return AdminClient.create(p);
    }

    public void createTopic(String name, int partitions) throws Exception {
        try (AdminClient admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException ignored) {
            // already shutting down
        }
    }

    public static String tail(Path log) {
        try {
            List<String> l = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", l.subList(Math.max(0, l.size() - 40), l.size()));
        } catch (IOException e) {
            return "(no broker log: " + e + ")";
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
