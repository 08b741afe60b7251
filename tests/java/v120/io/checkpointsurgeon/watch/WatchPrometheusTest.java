package io.checkpointsurgeon.watch;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.cli.Watch;
import io.checkpointsurgeon.fixtures.RestoreScenario;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.PrometheusServer;
import io.checkpointsurgeon.testing.TestFiles;
import org.apache.flink.configuration.Configuration;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * {@code watch} against a running cluster (issue 17): the stale-union job of StaleUnionRestoreTest
 * (v1, then three restores of v2, whose union state grows ×3 per restore) runs in MiniClusters that
 * serve Flink's REST API on one port; a {@link Watch} follows them through that API and serves its
 * metrics; a real Prometheus server (Debian's package) scrapes them every second. While each job
 * runs, the test waits until a query through Prometheus' HTTP API returns that job's union element
 * count, which must be the count Flink's own checkpoint holds. The hook runs once per job on its
 * first STALE_UNION_STATE finding (from the second restore on), and nothing in the checkpoint
 * directories is changed by watch.
 */
public class WatchPrometheusTest {
    private static final int P = 3;
    private static final String STATE = RestoreScenario.UNION_STATE;

    private static Path work;

    @BeforeClass
    public static void setUp() throws IOException {
        work = Files.createTempDirectory("checkpoint-surgeon-watch");
    }

    @AfterClass
    public static void tearDown() throws IOException {
        if (work != null) TestFiles.deleteRecursively(work);
    }

    @Test
    public void prometheusScrapesTheUnionStateGrowingThroughRestores() throws Exception {
        int restPort = freePort();
        Path hookLog = work.resolve("hook.log");
        StringWriter log = new StringWriter();
        List<Long> expected = new ArrayList<>();
        List<String> jobIds = new ArrayList<>();
        // The jobs whose retained checkpoint the doctor (run here, without watch) finds stale, and
        // the finding codes of each job's retained checkpoint.
        java.util.TreeSet<String> stale = new java.util.TreeSet<>();
        List<String> codes = new ArrayList<>();
        try (Watch watch = new Watch("http://127.0.0.1:" + restPort, null,
                "echo \"$CHECKPOINT_SURGEON_JOB_ID $CHECKPOINT_SURGEON_CHECKPOINT_ID $CHECKPOINT_SURGEON_FINDINGS\" >> " + hookLog,
                60_000, new PrintWriter(log, true))) {
            int metricsPort = watch.serveMetrics("127.0.0.1", 0);
            Thread poller = new Thread(() -> {
                try {
                    watch.run(200);
                } catch (InterruptedException e) {
                    // stopped
                }
            });
            poller.setDaemon(true);
            poller.start();
            try (PrometheusServer prometheus = PrometheusServer.start(Files.createDirectories(work.resolve("prometheus")),
                    "127.0.0.1:" + metricsPort)) {
                Path from = null;
                long union = (long) P * RestoreScenario.UNION_PER_SUBTASK;
                for (int r = 0; r <= 3; r++) {
                    long want = union;
                    RestoreScenario.resetReports();
                    MiniClusterJob.Result run = MiniClusterJob.of("watch-" + r, conf("watch-" + r, restPort, from), P,
                            env -> RestoreScenario.job(env, P, r0(want) ? new RestoreScenario.ConsumerV1() : new RestoreScenario.ConsumerV2(),
                                    r0(want) ? new RestoreScenario.KeyedWriter() : new RestoreScenario.KeyedProbe()))
                            .readyWhen(() -> RestoreScenario.SPLIT_SEEN.size() == P || RestoreScenario.KEYS_WRITTEN.size() == RestoreScenario.KEYS)
                            .timeout(Duration.ofSeconds(120))
                            .whileRunning(client -> {
                                String jid = client.getJobID().toString();
                                jobIds.add(jid);
                                awaitPrometheus(prometheus, jid, want, log);
                            })
                            .run();
                    assertNull(run.failureText(), run.failure());
                    // What Flink's own checkpoint holds, read without watch.
                    assertEquals(Long.valueOf(want), unionElements(run.checkpointPath()));
                    expected.add(want);
                    java.util.TreeSet<String> found = new java.util.TreeSet<>();
                    CheckpointSurgeon.doctor(run.checkpointPath()).forEach(f -> found.add(f.code().name()));
                    if (found.contains("STALE_UNION_STATE")) stale.add(jobIds.get(r));
                    codes.add(String.join(" ", found));
                    from = run.checkpointPath();
                    union *= P;
                }
                // One series per job in Prometheus, each with the count of its checkpoints: ×3 per restore.
                Map<Map<String, String>, Double> series = prometheus.query(
                        "max_over_time(checkpoint_surgeon_state_elements{state=\"" + STATE + "\"}[10m])");
                Map<String, Long> byJob = new TreeMap<>();
                series.forEach((labels, v) -> byJob.put(labels.get("job_id"), v.longValue()));
                for (int i = 0; i < jobIds.size(); i++) {
                    assertEquals("Prometheus' series of job " + i + ": " + series, expected.get(i), byJob.get(jobIds.get(i)));
                }
                assertEquals(List.of(6L, 18L, 54L, 162L), expected);
                // The finding is a metric too, for the jobs the doctor finds stale: from the second
                // restore on (after the first, each subtask holds each value once).
                assertEquals(new java.util.TreeSet<>(jobIds.subList(2, 4)), stale);
                Map<Map<String, String>, Double> findings = prometheus.query(
                        "max_over_time(checkpoint_surgeon_finding{code=\"STALE_UNION_STATE\"}[10m])");
                TreeMap<String, Double> flagged = new TreeMap<>();
                findings.forEach((labels, v) -> flagged.put(labels.get("job_id"), v));
                assertEquals(findings.toString(), stale, flagged.keySet());
            }
        }
        // The hook ran once for each job, when its first checkpoint had findings (LOOK_ALIKE_STATE:
        // the job's union state has FlinkKafkaConsumer's name but Tuple2<String, Long> elements;
        // then STALE_UNION_STATE from the second restore on), with the codes the doctor finds on the
        // job's checkpoint.
        List<String> hooks = Files.readAllLines(hookLog);
        assertEquals(hooks.toString(), jobIds.size(), hooks.size());
        for (int i = 0; i < jobIds.size(); i++) {
            assertFalse(codes.get(i).isEmpty());
            assertTrue(hooks.toString(), hooks.get(i).startsWith(jobIds.get(i) + " "));
            assertTrue(hooks + " " + codes, hooks.get(i).endsWith(" " + codes.get(i)));
        }
        assertTrue(log.toString(), log.toString().contains("finding(s) [STALE_UNION_STATE]"));

        // Watch wrote nothing into the checkpoint directories: no file but Flink's, and a watch
        // over the directories (the other source) leaves every byte as it was.
        Path jobs = work.resolve("jobs");
        Map<String, String> before = digests(jobs);
        assertFalse(before.toString(), before.keySet().stream().anyMatch(f -> f.contains(".lock") || f.contains(".tmp-")
                || f.contains("backup")));
        for (int r = 0; r <= 3; r++) {
            try (Watch dirWatch = new Watch(null, jobs.resolve("watch-" + r).resolve("checkpoints"), null, 1000,
                    new PrintWriter(new StringWriter()))) {
                dirWatch.poll();
                String metrics = dirWatch.metrics();
                assertTrue(metrics, metrics.contains("state=\"" + STATE + "\",mode=\"UNION\"} " + expected.get(r) + "\n"));
            }
        }
        assertEquals(before, digests(jobs));
    }

    private static boolean r0(long union) {
        return union == (long) P * RestoreScenario.UNION_PER_SUBTASK;
    }

    /** Waits until Prometheus returns the job's union element count (what watch read from its checkpoint). */
    private static void awaitPrometheus(PrometheusServer prometheus, String jid, long want, StringWriter log) throws Exception {
        String q = "checkpoint_surgeon_state_elements{job_id=\"" + jid + "\",state=\"" + STATE + "\"}";
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Map<Map<String, String>, Double> last = Map.of();
        while (System.nanoTime() < deadline) {
            last = prometheus.query(q);
            if (last.size() == 1 && last.values().iterator().next() == want) return;
            Thread.sleep(250);
        }
        throw new AssertionError("Prometheus did not return " + want + " for " + q + " within 60 s: " + last
                + "\nwatch log:\n" + log + "\nprometheus log:\n" + prometheus.log());
    }

    private static Configuration conf(String tag, int restPort, Path from) throws IOException {
        Path base = work.resolve("jobs").resolve(tag);
        Configuration c = FlinkConf.checkpointing("hashmap", Files.createDirectories(base.resolve("checkpoints")).toUri().toString(),
                Files.createDirectories(base.resolve("savepoints")).toUri().toString(), "300 ms", 1);
        FlinkConf.noRestarts(c);
        // Every MiniCluster of the chain serves Flink's REST API on the one port watch follows.
        FlinkConf.set(c, String.valueOf(restPort), "rest.bind-port");
        FlinkConf.set(c, "127.0.0.1", "rest.bind-address");
        FlinkConf.set(c, "127.0.0.1", "rest.address");
        if (from != null) FlinkConf.restoreFrom(c, from.toUri().toString());
        return c;
    }

    private static Long unionElements(Path checkpoint) throws Exception {
        long sum = 0;
        for (InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(checkpoint).operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                if (t.name().equals(STATE)) sum += t.elements();
            }
        }
        return sum;
    }

    /** Every file under {@code dir} with its SHA-256. */
    private static Map<String, String> digests(Path dir) throws Exception {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path f : (Iterable<Path>) s::iterator) {
                if (!Files.isRegularFile(f)) continue;
                out.put(dir.relativize(f).toString(),
                        HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(f))));
            }
        }
        return out;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
