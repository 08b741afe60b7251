package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.testing.CliProcess;
import java.io.File;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code remove-keyed-state --on-flink} on a standalone cluster (Flink 1.20's own JobManager and
 * TaskManager entry points, each a JVM of its own, on loopback ports): the CLI submits the job
 * with its jar, and the incident's v2 restores from the result exactly
 * ({@link OnFlinkKeyedRewriteTest} runs the MiniCluster cases on every lane).
 */
public class OnFlinkStandaloneTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();

    /**
     * A standalone session cluster: {@code StandaloneSessionClusterEntrypoint} and
     * {@code TaskManagerRunner} (what the distribution's start-cluster.sh starts) in JVMs of their
     * own with Flink 1.20's jars and a {@code flink-conf.yaml} on loopback ports, without
     * checkpoint-surgeon on their class path: the CLI submits the job with its jar, the tasks load
     * the native library from it.
     */
    @Test
    public void onAStandaloneClusterTheCliRewritesAndTheJobRestores() throws Exception {
        Path work = tmp.newFolder("cs-onflink-standalone").toPath();
        Path savepoint = KeyedSurgeryRestoreTest.v1(work, "s1", "hashmap", false, true);
        int rest = freePort();
        Path conf = Files.createDirectories(work.resolve("conf"));
        Files.writeString(conf.resolve("flink-conf.yaml"), String.join("\n",
                "jobmanager.rpc.address: localhost", "jobmanager.bind-host: localhost",
                "jobmanager.rpc.port: " + freePort(), "rest.address: localhost", "rest.bind-address: localhost",
                "rest.port: " + rest, "taskmanager.host: localhost", "taskmanager.bind-host: localhost",
                "taskmanager.rpc.port: 0", "taskmanager.data.port: 0", "blob.server.port: 0",
                "taskmanager.numberOfTaskSlots: 2", "parallelism.default: 2",
                "jobmanager.memory.process.size: 768m",
                // what the distribution's scripts compute and hand a TaskManager (BashJavaUtils)
                "taskmanager.cpu.cores: 2", "taskmanager.memory.framework.heap.size: 128m",
                "taskmanager.memory.framework.off-heap.size: 128m", "taskmanager.memory.task.heap.size: 256m",
                "taskmanager.memory.task.off-heap.size: 0m", "taskmanager.memory.network.min: 64m",
                "taskmanager.memory.network.max: 64m", "taskmanager.memory.managed.size: 64m",
                "taskmanager.memory.jvm-metaspace.size: 256m", "taskmanager.memory.jvm-overhead.min: 192m",
                "taskmanager.memory.jvm-overhead.max: 192m",
                "io.tmp.dirs: " + Files.createDirectories(work.resolve("flink-tmp")), ""));
        List<Process> cluster = new ArrayList<>();
        try {
            cluster.add(start(conf, "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint",
                    work.resolve("jobmanager.log")));
            cluster.add(start(conf, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner",
                    work.resolve("taskmanager.log")));
            awaitTaskManager(rest, cluster, work);

            Path out = work.resolve("removed");
            CliProcess.Result r = CliProcess.withFlink("remove-keyed-state", savepoint.toString(), "--state", "a",
                    "--apply", "--output", out.toString(), "--on-flink", "--jobmanager", "localhost:" + rest).run();
            assertEquals(r.toString(), 0, r.exitCode);
            // the cluster's 2 task slots, as no --threads is given (the client's own default would be 1)
            assertTrue(r.output, r.output.contains("2 keyed state file(s) to rewrite, parallelism 2, JobManager"));
            assertTrue(r.output, r.output.contains("loaded by Flink"));
            assertTrue("the cluster ran the job: " + get(rest, "/jobs/overview"),
                    get(rest, "/jobs/overview").contains("\"state\":\"FINISHED\""));
            assertEquals(List.of("b"), KeyedSurgeryRestoreTest.dataStates(out));
            KeyedSurgeryRestoreTest.assertRestoredExact(work, "s1", "s2", KeyedSurgeryRestoreTest.Version.V2, out, 2);
        } finally {
            for (Process p : cluster) {
                p.destroy();
                if (!p.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) p.destroyForcibly().waitFor();
            }
        }
    }

    /** A JVM of Flink's jars (this JVM's class path without checkpoint-surgeon and the test classes). */
    private static Process start(Path conf, String main, Path log) throws Exception {
        String cp = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
                .filter(e -> e.endsWith(".jar") && !e.endsWith("checkpoint-surgeon.jar"))
                .collect(Collectors.joining(File.pathSeparator));
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "--add-opens", "java.base/java.util=ALL-UNNAMED", "-cp", cp,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", main, "--configDir", conf.toString()));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    private static void awaitTaskManager(int rest, List<Process> cluster, Path work) throws Exception {
        long end = System.nanoTime() + 90_000_000_000L;
        while (System.nanoTime() < end) {
            for (Process p : cluster) {
                if (!p.isAlive()) fail("a cluster JVM exited: " + logs(work));
            }
            try {
                if (get(rest, "/taskmanagers").contains("\"slotsNumber\":2")) return;
            } catch (java.io.IOException notYet) {
                // the REST endpoint is not up yet
            }
            Thread.sleep(300);
        }
        fail("no TaskManager registered in 90 s: " + logs(work));
    }

    private static String logs(Path work) throws Exception {
        return Files.readString(work.resolve("jobmanager.log")) + "\n" + Files.readString(work.resolve("taskmanager.log"));
    }

    private static String get(int port, String path) throws Exception {
        HttpURLConnection c = (HttpURLConnection) new URL("http://localhost:" + port + path).openConnection();
        c.setConnectTimeout(2000);
        c.setReadTimeout(5000);
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            c.disconnect();
        }
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
