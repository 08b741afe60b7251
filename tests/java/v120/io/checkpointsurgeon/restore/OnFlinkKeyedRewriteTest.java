package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.testing.CliProcess;
import java.io.File;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code remove-keyed-state --on-flink}: the keyed state files of a canonical savepoint that
 * Flink 1.20 wrote are rewritten by a Flink batch job, on a MiniCluster in this JVM and on a
 * standalone cluster (Flink's own JobManager and TaskManager entry points, each a JVM of its own,
 * on loopback ports), and {@code _metadata} is written by the client through the commit sequence.
 * The result is the local route's, file for file, and the incident's v2 restores from it with
 * every value of {@code b}, every timer and the source's position exact
 * ({@link KeyedSurgeryRestoreTest}'s job and checks).
 */
public class OnFlinkKeyedRewriteTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void onAMiniClusterTheResultIsTheLocalRoutesAndRestores() throws Exception {
        Path work = tmp.newFolder("cs-onflink-mini").toPath();
        Path savepoint = KeyedSurgeryRestoreTest.v1(work, "m1", "hashmap", false, true);
        Path local = work.resolve("local");
        Path onFlink = work.resolve("on-flink");
        SurgeryPlan l = CheckpointSurgeon.apply(savepoint, Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a"),
                local);
        SurgeryPlan f = CheckpointSurgeon.apply(savepoint, Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a")
                .onFlink(StreamExecutionEnvironment.createLocalEnvironment(2)), onFlink);
        assertTrue(f.result().flinkValidation(), f.result().flinkValidation().startsWith("loaded by Flink"));
        assertEquals(l.keyed().bytesRead(), f.keyed().bytesRead());
        assertEquals(l.keyed().bytesWritten(), f.keyed().bytesWritten());
        assertTrue("keyed state files were rewritten: " + f.keyed(), f.keyed().bytesWritten() > 0);
        // the same _metadata but for the new files' random names, and the same bytes in every file
        assertEquals(normalized(local), normalized(onFlink));
        assertEquals(List.of("b"), KeyedSurgeryRestoreTest.dataStates(onFlink));
        KeyedSurgeryRestoreTest.assertRestoredExact(work, "m1", "m2", KeyedSurgeryRestoreTest.Version.V2, onFlink, 2);
    }

    /** A task whose rewrite fails fails the job; the run then removes what it created, the output directory too. */
    @Test
    public void aFailedTaskFailsTheRunAndLeavesNothing() throws Exception {
        Path work = tmp.newFolder("cs-onflink-fail").toPath();
        Path savepoint = KeyedSurgeryRestoreTest.v1(work, "x1", "hashmap", false, true);
        Path copy = Files.createDirectories(work.resolve("copy"));
        try (Stream<Path> s = Files.list(savepoint)) {
            for (Path p : s.collect(Collectors.toList())) Files.copy(p, copy.resolve(p.getFileName()));
        }
        // every keyed state file's last key group loses its end mark: the meta info still reads (the
        // plan), the key groups do not (the tasks)
        Surgery removal = Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a");
        List<String> cut = new ArrayList<>();
        for (SurgeryPlan.NewStream n : CheckpointSurgeon.plan(copy, removal).newStreams()) {
            Path f = copy.resolve(Path.of(n.replaces()).getFileName().toString());
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f,
                    java.nio.file.StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(new byte[] {0x7f, 0x7f, 0x7f}), ch.size() - 3);
            }
            cut.add(f.getFileName().toString());
        }
        assertEquals("both subtasks' keyed state files", 2, cut.size());
        Path out = work.resolve("out");
        try {
            CheckpointSurgeon.apply(copy, removal.onFlink(StreamExecutionEnvironment.createLocalEnvironment(2)), out);
            fail("a keyed state file without its end mark cannot be rewritten");
        } catch (CheckpointSurgeonException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("Flink job"));
            assertTrue(e.getMessage(), cut.stream().anyMatch(e.getMessage()::contains));
            assertTrue(e.getMessage(), e.getMessage().endsWith("nothing was changed"));
        }
        assertFalse("the output directory the run created is gone", Files.exists(out));
    }

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

    /**
     * {@code _metadata} as Flink's model in text, each file name replaced by its content's
     * SHA-256 and the output directory by {@code OUT}: two outputs with equal bytes in equal places
     * give the same text.
     */
    static String normalized(Path out) throws Exception {
        Map<String, String> hashes = new TreeMap<>();
        try (Stream<Path> s = Files.list(out)) {
            for (Path p : s.collect(Collectors.toList())) {
                String name = p.getFileName().toString();
                if (name.equals("_metadata")) continue;
                byte[] d = MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p));
                StringBuilder hex = new StringBuilder();
                for (byte b : d) hex.append(String.format("%02x", b));
                hashes.put(name, "sha256:" + hex);
            }
        }
        String text = CheckpointSurgeon.describe(Files.readAllBytes(out.resolve("_metadata")));
        for (Map.Entry<String, String> e : hashes.entrySet()) text = text.replace(e.getKey(), e.getValue());
        assertFalse("describe names the files: " + text, hashes.isEmpty() || text.equals(
                CheckpointSurgeon.describe(Files.readAllBytes(out.resolve("_metadata")))));
        return text.replace(out.toString(), "OUT");
    }
}
