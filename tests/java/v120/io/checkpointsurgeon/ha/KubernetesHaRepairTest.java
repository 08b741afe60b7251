package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.cli.InProcessCli;
import io.checkpointsurgeon.flink.KubernetesHa;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.internal.Json;
import io.checkpointsurgeon.testing.CliProcess;

import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.client.NamespacedKubernetesClient;
import io.fabric8.kubernetes.client.extended.leaderelection.resourcelock.LeaderElectionRecord;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.Serialization;
import io.fabric8.mockwebserver.Context;
import okhttp3.mockwebserver.MockWebServer;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.runtime.state.RetrievableStreamStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.util.InstantiationUtil;
import org.junit.After;
import org.junit.Before;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The incident end to end with Flink's Kubernetes HA services (flink-kubernetes, its shaded fabric8
 * client) against fabric8's KubernetesMockServer in CRUD mode on loopback: an API server that
 * stores what is written to it (ConfigMaps with resourceVersion checks, labels, watches), not a
 * real kube-apiserver (none can run here). The stale union state grows across JobManager
 * failovers; {@code ha repair --kubernetes --apply} is refused while a JobManager holds the lease
 * of the cluster's leader ConfigMap, and repairs the files the ConfigMap's pointers name once it
 * stopped; a new JobManager recovers from those pointers without the stale state and with the exact
 * values snapshotted.
 */
public class KubernetesHaRepairTest {
    private static final String NAMESPACE = "flink-ha";
    private static final String LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader";
    /** The mock server logs every request at INFO through java.util.logging (held: JUL keeps loggers weakly). */
    private static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("okhttp3.mockwebserver");

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private KubernetesMockServer apiServer;
    /** The test's own (unshaded) fabric8 client: reads the ConfigMaps Flink wrote. */
    private NamespacedKubernetesClient kube;
    private Path kubeconfig;
    private HaCluster cluster;
    private final long started = System.nanoTime();

    @Before
    public void setUp() throws Exception {
        HaJobs.resetAll();
        MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
        apiServer = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
                new KubernetesCrudDispatcher(), false);
        apiServer.init(InetAddress.getLoopbackAddress(), 0);
        kube = apiServer.createClient();
        kubeconfig = writeKubeconfig(tmp.newFile("kubeconfig").toPath(), "http://127.0.0.1:" + apiServer.getPort());
        cluster = new HaCluster(tmp.newFolder("flink").toPath(), Map.of(
                "high-availability.type", "kubernetes",
                "kubernetes.cluster-id", HaCluster.CLUSTER_ID,
                "kubernetes.namespace", NAMESPACE,
                "kubernetes.config.file", kubeconfig.toString()));
    }

    @After
    public void tearDown() throws Exception {
        try {
            if (cluster != null) cluster.close();
        } finally {
            if (kube != null) kube.close();
            if (apiServer != null) apiServer.destroy();
            System.err.printf("KubernetesHaRepairTest: %.1f s%n", (System.nanoTime() - started) / 1e9);
        }
    }

    static Path writeKubeconfig(Path file, String server) throws Exception {
        Files.writeString(file, String.join("\n",
                "apiVersion: v1",
                "kind: Config",
                "clusters:",
                "- name: test",
                "  cluster:",
                "    server: " + server,
                "contexts:",
                "- name: test",
                "  context:",
                "    cluster: test",
                "    user: test",
                "current-context: test",
                "users:",
                "- name: test",
                "  user:",
                "    token: test-token",
                ""));
        return file;
    }

    private String[] kubernetes(String... command) {
        List<String> args = new ArrayList<>(List.of(command));
        args.addAll(List.of("--kubernetes", "--kubeconfig", kubeconfig.toString(), "--namespace", NAMESPACE,
                "--cluster-id", HaCluster.CLUSTER_ID));
        return args.toArray(new String[0]);
    }

    @Test
    public void repairedHaCheckpointIsWhatTheRecoveredJobRestores() throws Exception {
        // ---- v1 writes the union state; v2 starts from v1's retained checkpoint. -------------------
        JobID job = cluster.startV2FromV1();
        long expected = 2L * HaJobs.PARALLELISM * HaJobs.PARALLELISM;

        // ---- JobManager failover: the new one recovers the job from the ConfigMap; the union grows. -
        long b = cluster.recoverAndCheckpoint(job, "recovery 1");
        expected *= HaJobs.PARALLELISM;
        cluster.assertUnionInNewestHaFile("after recovery 1", job, b, expected);
        assertConfigMapPointsAtHaFiles(job, cluster.haFilesById(job));

        // ---- Another failover; while that JobManager leads, the repair is refused. ------------------
        String[] repair = kubernetes("ha", "repair", cluster.haClusterDir().toString(), "--uid", HaJobs.CONSUMER_UID,
                "--state", HaJobs.OFFSETS_STATE, "--apply");
        long c = cluster.recoverAndCheckpoint(job, "recovery 2", false);
        CliProcess.Result refused = CliProcess.withFlink(repair).run();
        System.err.println("ha repair --kubernetes --apply under a live leader: " + refused);
        assertEquals(refused.toString(), 2, refused.exitCode);
        assertTrue(refused.toString(), refused.output.contains("error [LOCKED]: a JobManager holds the leadership of"
                + " cluster '" + HaCluster.CLUSTER_ID + "' in namespace '" + NAMESPACE + "'"));
        assertTrue("the holder and its ConfigMap are named: " + refused, refused.output.contains("holder ")
                && refused.output.contains(" of " + HaCluster.CLUSTER_ID + "-cluster-config-map (renewed "));
        assertTrue("the leaders' addresses are named: " + refused, refused.output.contains("restserver at http://"));
        assertTrue(refused.toString(), refused.output.contains("--force"));
        try (Stream<Path> files = Files.list(cluster.haClusterDir())) {
            List<String> names = files.map(f -> f.getFileName().toString()).sorted().collect(Collectors.toList());
            assertTrue("no backup, temporary or lock file: " + names, names.stream()
                    .noneMatch(n -> n.contains("backup") || n.contains(".tmp") || n.contains("lock")));
        }
        assertEquals(JobStatus.RUNNING, cluster.status(job));
        cluster.crash();
        expected *= HaJobs.PARALLELISM;
        cluster.assertUnionInNewestHaFile("after recovery 2", job, c, expected);
        Map<Long, Path> pointed = assertConfigMapPointsAtHaFiles(job, cluster.haFilesById(job));

        // ---- The JobManager stopped and its lease ran out: the pointed files are repaired. ----------
        awaitLeaseRunOut();
        CliProcess.Result repaired = CliProcess.withFlink(repair).run();
        System.err.println("ha repair --kubernetes --apply after the JobManager stopped: " + repaired);
        assertEquals(repaired.toString(), 0, repaired.exitCode);
        for (Map.Entry<Long, Path> e : pointed.entrySet()) {
            assertTrue(repaired.toString(), repaired.output.contains("  " + e.getValue() + ": repaired, backup "));
            InspectReport r = CheckpointSurgeon.inspectHa(e.getValue());
            assertEquals("no union state left in HA checkpoint " + e.getKey(), 0, ZooKeeperHaRepairTest.unionElements(r));
            assertEquals("position state kept in HA checkpoint " + e.getKey(), HaJobs.PARALLELISM,
                    ZooKeeperHaRepairTest.stateElements(r, HaJobs.POSITION_STATE));
        }
        // The ConfigMap still points at the same (now repaired) files.
        assertEquals(pointed, assertConfigMapPointsAtHaFiles(job, cluster.haFilesById(job)));

        // ---- A new JobManager recovers from the ConfigMap's pointers: no stale state, exact values. -
        long newest = Collections.max(pointed.keySet());
        long d = cluster.recoverAndCheckpoint(job, "recovery 3 (HA repaired)", false);
        HaCluster.assertRestoredFrom(newest, "recovery 3");
        long e = cluster.awaitHaCheckpoint(job, d);
        assertEquals(JobStatus.RUNNING, cluster.status(job));
        cluster.crash();
        Map<Long, Path> after = assertConfigMapPointsAtHaFiles(job, cluster.haFilesById(job));
        assertTrue(Collections.max(after.keySet()) >= e);
        for (Map.Entry<Long, Path> en : after.entrySet()) {
            InspectReport r = CheckpointSurgeon.inspectHa(en.getValue());
            assertFalse("HA checkpoint " + en.getKey() + " (after recovery from the repaired HA file) has no "
                    + HaJobs.OFFSETS_STATE, ZooKeeperHaRepairTest.stateNames(r).contains(HaJobs.OFFSETS_STATE));
            assertEquals(HaJobs.PARALLELISM, ZooKeeperHaRepairTest.stateElements(r, HaJobs.POSITION_STATE));
        }
    }

    /**
     * {@code ha list --kubernetes} names a pointer whose file is gone and a file no pointer names
     * (here a copy of a pointed file under another completedCheckpoint name).
     */
    @Test
    public void listShowsPointersWithoutAFileAndFilesWithoutAPointer() throws Exception {
        JobID job = twoHaCheckpointsThenCrash();
        Map<Long, Path> pointed = assertConfigMapPointsAtHaFiles(job, cluster.haFilesById(job));
        assertTrue("two retained checkpoints: " + pointed, pointed.size() >= 2);
        long gone = Collections.min(pointed.keySet());
        Files.delete(pointed.get(gone));
        Path orphan = cluster.haClusterDir().resolve("completedCheckpoint0123456789ab");
        Files.copy(pointed.get(Collections.max(pointed.keySet())), orphan);
        List<Path> unpointed = new ArrayList<>(cluster.haFiles());
        unpointed.removeAll(pointed.values());

        CliProcess.Result r = CliProcess.withFlink(kubernetes("ha", "list", cluster.haClusterDir().toString())).run();
        System.err.println("ha list --kubernetes: " + r);
        assertEquals(r.toString(), 0, r.exitCode);
        String key = String.format("checkpointID-%019d", gone);
        String configMap = HaCluster.CLUSTER_ID + "-" + job + "-config-map";
        assertTrue(r.toString(), r.output.contains("HA ConfigMaps of cluster '" + HaCluster.CLUSTER_ID + "' in namespace '"
                + NAMESPACE + "' (Kubernetes API server http://127.0.0.1:" + apiServer.getPort() + "/):"));
        assertTrue(r.toString(), r.output.contains("  " + configMap + " " + key + " -> file:" + pointed.get(gone)
                + ": NO SUCH FILE\n"));
        assertTrue(r.toString(), r.output.contains("pointers without a file: 1\n  " + configMap + " " + key
                + " (checkpoint " + gone + ")\n"));
        String unpointedList = unpointed.stream().sorted().map(p -> "\n  " + p).collect(Collectors.joining());
        assertTrue(unpointed + ": " + r, unpointed.contains(orphan) && r.output.contains("files without a pointer: "
                + unpointed.size() + unpointedList + "\n"));

        CliProcess.Result json = CliProcess.withFlink(kubernetes("ha", "list", cluster.haClusterDir().toString(),
                "--json")).run();
        assertEquals(json.toString(), 0, json.exitCode);
        Map<?, ?> listing = (Map<?, ?>) Json.parse(json.output.substring(json.output.indexOf('{')));
        List<?> without = (List<?>) listing.get("pointersWithoutFile");
        assertEquals(json.output, 1, without.size());
        assertEquals(key, ((Map<?, ?>) without.get(0)).get("key"));
        assertEquals(unpointed.stream().map(Path::toString).sorted().collect(Collectors.toList()),
                listing.get("filesWithoutPointer"));
    }

    /**
     * {@code recover --kubernetes}: the checkpoint the newest ConfigMap pointer names lost a state
     * file; recover names that pointer (Flink recovers from it before any execution.savepoint.path),
     * the missing file, an older checkpoint that restores, and the {@code ha remove-checkpoint}
     * command that takes the pointer away: a stale read of the ConfigMap removes nothing (the API
     * server refuses the update, 409), the command as printed removes the key keeping its value and
     * file, and a second run finds nothing to remove.
     */
    @Test
    public void recoverNamesTheConfigMapPointerToABrokenCheckpoint() throws Exception {
        JobID job = twoHaCheckpointsThenCrash();
        Map<Long, Path> pointed = assertConfigMapPointsAtHaFiles(job, cluster.haFilesById(job));
        long newest = Collections.max(pointed.keySet());
        Path chk = cluster.checkpointDir(job, newest);
        StateFile lost = CheckpointSurgeon.references(chk).stream().filter(f -> f.kind() == StateFile.Kind.RELATIVE)
                .findFirst().orElseThrow();
        Files.delete(chk.resolve(lost.path()));

        CliProcess.Result r = CliProcess.withFlink(kubernetes("recover", cluster.checkpoints.toString())).run();
        System.err.println("recover --kubernetes: " + r);
        assertEquals(r.toString(), 4, r.exitCode);
        String pointer = "ConfigMap " + HaCluster.CLUSTER_ID + "-" + job + "-config-map "
                + String.format("checkpointID-%019d", newest);
        String broken = chk.toRealPath().toUri().toString().replaceAll("/$", "");
        assertTrue(r.toString(), r.output.contains("BROKEN     " + broken));
        assertTrue(r.toString(), r.output.contains(lost.path() + ": missing"));
        assertTrue(r.toString(), r.output.contains("HA pointer " + pointer + " names checkpoint " + newest + " (file:"
                + chk.toRealPath() + "), which does not restore"));
        String command = "checkpoint-surgeon ha remove-checkpoint --checkpoint-id " + newest + " --job-id " + job
                + " --kubernetes --kubeconfig " + kubeconfig + " --namespace " + NAMESPACE + " --cluster-id "
                + HaCluster.CLUSTER_ID;
        assertTrue(r.toString(), r.output.contains(" with " + command + " --apply; Flink then recovers from the newest"
                + " checkpoint pointer left"));
        String restores = r.output.substring(r.output.indexOf("RESTORES   ") + "RESTORES   ".length()).split(" ")[0];
        assertTrue(r.toString(), r.output.contains("start the job with -s " + restores));
        // only the pointer to the broken checkpoint is named
        assertEquals(r.toString(), 1, r.output.split("\nHA pointer ", -1).length - 1);

        long t0 = System.nanoTime();
        // --json names the same command
        InProcessCli.Run json = InProcessCli.run(kubernetes("recover", cluster.checkpoints.toString(), "--json"));
        Map<?, ?> report = (Map<?, ?>) Json.parse(json.out);
        List<?> brokenPointers = (List<?>) report.get("brokenHaPointers");
        assertEquals(json.toString(), 1, brokenPointers.size());
        assertEquals(command, ((Map<?, ?>) brokenPointers.get(0)).get("removeCommand"));

        // ---- compare-and-set: a pointer read before the ConfigMap changed removes nothing. ----------
        String configMap = HaCluster.CLUSTER_ID + "-" + job + "-config-map";
        String key = String.format("checkpointID-%019d", newest);
        String value = kube.configMaps().inNamespace(NAMESPACE).withName(configMap).get().getData().get(key);
        try (KubernetesHa ha = KubernetesHa.connect(kubeconfig, NAMESPACE, HaCluster.CLUSTER_ID)) {
            KubernetesHa.Pointer read = ha.checkpointPointers().stream().filter(p -> p.key.equals(key)).findFirst()
                    .orElseThrow();
            kube.configMaps().inNamespace(NAMESPACE).withName(configMap).edit(cm -> {
                if (cm.getMetadata().getAnnotations() == null) cm.getMetadata().setAnnotations(new HashMap<>());
                cm.getMetadata().getAnnotations().put("test/touched", "yes");
                return cm;
            });
            try {
                ha.remove(read);
                throw new AssertionError("removed a key of a ConfigMap that changed since it was read");
            } catch (CheckpointSurgeonException e) {
                assertEquals(e.toString(), CheckpointSurgeonException.Code.VALIDATION, e.code());
                assertTrue(e.toString(), e.getMessage().contains("ConfigMap " + configMap + " key " + key
                        + ": the ConfigMap changed since it was read (resourceVersion " + read.version));
            }
        }
        assertEquals("the key is kept", value, kube.configMaps().inNamespace(NAMESPACE).withName(configMap).get()
                .getData().get(key));

        // ---- As printed, with --apply, once the lease ran out: the key goes, value and file are kept. -
        awaitLeaseRunOut();
        Path haFile = pointed.get(newest);
        byte[] fileBytes = Files.readAllBytes(haFile);
        CliProcess.Result removed = CliProcess.withFlinkAsPrinted(command + " --apply").run();
        System.err.println("ha remove-checkpoint --kubernetes --apply: " + removed);
        assertEquals(removed.toString(), 0, removed.exitCode);
        Path keptValue = haFile.resolveSibling(job + "-" + key + ".configmap-value.backup-removed");
        Path keptFile = haFile.resolveSibling(haFile.getFileName() + ".backup-removed");
        assertTrue(removed.toString(), removed.output.contains("\nkept the pointer's value in " + keptValue + "\n"));
        assertTrue(removed.toString(), removed.output.contains("\nremoved ConfigMap " + configMap + " " + key + " (version "));
        assertTrue(removed.toString(), removed.output.contains("\nmoved " + haFile + " to " + keptFile + "\n"));
        assertEquals("the ConfigMap value is kept exactly", value, Files.readString(keptValue));
        assertTrue(java.util.Arrays.equals(fileBytes, Files.readAllBytes(keptFile)));
        Map<String, String> data = kube.configMaps().inNamespace(NAMESPACE).withName(configMap).get().getData();
        assertFalse(data.toString(), data.containsKey(key));
        assertTrue("the older pointer stays: " + data.keySet(), data.keySet().stream()
                .anyMatch(k -> k.startsWith("checkpointID-") && !k.equals(key)));

        InProcessCli.Run again = InProcessCli.run(ZooKeeperHaRecoverTest.words(command + " --apply"));
        assertEquals(again.toString(), 2, again.code);
        assertTrue(again.toString(), again.err.contains("error [NOTHING_SELECTED]: no pointer to checkpoint " + newest));
        InProcessCli.Run after = InProcessCli.run(kubernetes("recover", cluster.checkpoints.toString()));
        assertEquals(after.toString(), 4, after.code);
        assertFalse(after.toString(), after.out.contains("HA pointer "));

        // ---- A new JobManager recovers the job from the key left and checkpoints on (a restore of
        // the broken one would fail every restart, and no checkpoint would complete). ---------------
        cluster.start();
        cluster.awaitRunning(job);
        long next = cluster.awaitHaCheckpoint(job, newest);
        assertEquals(JobStatus.RUNNING, cluster.status(job));
        assertTrue(next > newest);
        System.err.printf("ha remove-checkpoint steps: %.1f s%n", (System.nanoTime() - t0) / 1e9);
    }

    /** An API server that does not answer is an IO error naming its URL, at once (no retries). */
    @Test
    public void unreachableApiServerIsAClearError() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path bad = writeKubeconfig(tmp.newFile("unreachable").toPath(), "http://127.0.0.1:" + port);
        long t0 = System.nanoTime();
        CliProcess.Result r = CliProcess.withFlink("ha", "repair", cluster.haClusterDir().toString(), "--state",
                HaJobs.OFFSETS_STATE, "--apply", "--kubernetes", "--kubeconfig", bad.toString(), "--cluster-id",
                HaCluster.CLUSTER_ID).run();
        double seconds = (System.nanoTime() - t0) / 1e9;
        System.err.printf("ha repair --kubernetes, API server unreachable (%.1f s): %s%n", seconds, r);
        assertEquals(r.toString(), 2, r.exitCode);
        assertTrue(r.toString(), r.output.contains("error [IO]: Kubernetes API server http://127.0.0.1:" + port
                + "/: cannot list the HA ConfigMaps of cluster '" + HaCluster.CLUSTER_ID + "' in namespace 'default'"));
        assertTrue("the refused connection is named: " + r, r.output.contains("ConnectException"));
        assertTrue("took " + seconds + " s", seconds < 30);
    }

    /** Starts the cluster, runs the consumer job until two HA checkpoints completed, and crashes the cluster. */
    private JobID twoHaCheckpointsThenCrash() throws Exception {
        cluster.start();
        JobID job = cluster.submit(env -> HaJobs.consumerJob(env, true), null);
        cluster.awaitRunning(job);
        cluster.awaitHaCheckpoint(job, cluster.awaitHaCheckpoint(job, 0));
        cluster.crash();
        return job;
    }

    /**
     * Waits until the lease in the cluster's leader ConfigMap is released or has run out. Flink's
     * leader elector has fabric8 release it when it stops, asynchronously: it may still be held when
     * the MiniCluster's close returns (so the CLI refuses, rightly, until it is released or runs
     * out). The lease found is printed.
     */
    private void awaitLeaseRunOut() throws Exception {
        String name = HaCluster.CLUSTER_ID + "-cluster-config-map";
        long deadline = System.currentTimeMillis() + HaCluster.TIMEOUT_MS;
        LeaderElectionRecord r = null;
        while (System.currentTimeMillis() < deadline) {
            ConfigMap cm = kube.configMaps().inNamespace(NAMESPACE).withName(name).get();
            r = Serialization.unmarshal(cm.getMetadata().getAnnotations().get(LEADER_ANNOTATION), LeaderElectionRecord.class);
            if (r.getHolderIdentity() == null || r.getHolderIdentity().isEmpty()
                    || r.getRenewTime().plus(r.getLeaseDuration()).isBefore(ZonedDateTime.now())) {
                System.err.println("lease of " + name + " after the JobManager stopped: holder '" + r.getHolderIdentity()
                        + "', renewed " + r.getRenewTime() + ", lease " + r.getLeaseDuration());
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("the lease of " + name + " is still held: " + r);
    }

    /**
     * Reads the job's ConfigMap with the test's own client: each {@code checkpointID-<n>} value is a
     * Java-serialized handle (in a StateHandleWithDeleteMarker) whose FileStateHandle is one of the
     * HA files. Returns the pointed files by checkpoint id.
     */
    private Map<Long, Path> assertConfigMapPointsAtHaFiles(JobID job, Map<Long, Path> haFiles) throws Exception {
        String name = HaCluster.CLUSTER_ID + "-" + job + "-config-map";
        ConfigMap cm = kube.configMaps().inNamespace(NAMESPACE).withName(name).get();
        assertNotNull("ConfigMap " + name, cm);
        Map<Long, Path> pointed = new TreeMap<>();
        for (Map.Entry<String, String> e : cm.getData().entrySet()) {
            if (!e.getKey().startsWith("checkpointID-")) continue;
            Object marker = InstantiationUtil.deserializeObject(Base64.getDecoder().decode(e.getValue()),
                    getClass().getClassLoader());
            java.lang.reflect.Field inner = marker.getClass().getDeclaredField("inner");
            inner.setAccessible(true);
            StreamStateHandle file = ZooKeeperHaRepairTest.wrapped((RetrievableStreamStateHandle<?>) inner.get(marker));
            assertTrue(String.valueOf(file), file instanceof FileStateHandle);
            pointed.put(Long.parseLong(e.getKey().substring("checkpointID-".length())),
                    Paths.get(((FileStateHandle) file).getFilePath().toUri()));
        }
        assertFalse("checkpointID-<n> keys in " + name + ": " + cm.getData().keySet(), pointed.isEmpty());
        for (Map.Entry<Long, Path> e : pointed.entrySet()) {
            assertEquals("ConfigMap key of checkpoint " + e.getKey() + " -> HA file", haFiles.get(e.getKey()), e.getValue());
            assertEquals(e.getKey().longValue(), CheckpointSurgeon.haFileInfo(e.getValue()).checkpointId());
        }
        return pointed;
    }
}
