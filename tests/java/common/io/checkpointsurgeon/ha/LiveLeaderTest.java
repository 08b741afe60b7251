package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.testing.CliProcess;
import org.apache.flink.api.common.JobID;
import org.junit.Test;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code ha repair --apply --zookeeper-quorum} refuses while a JobManager holds the cluster's
 * leadership in ZooKeeper (its ephemeral node under the leader latch) and names the leader; once
 * the cluster is stopped the same command repairs the files. Real ZooKeeper, real Flink HA.
 */
public class LiveLeaderTest extends ZooKeeperHaCase {

    @Test
    public void repairIsRefusedUnderALiveLeaderAndAllowedAfterItStops() throws Exception {
        cluster.start();
        JobID job = cluster.submit(env -> HaJobs.consumerJob(env, true), null);
        cluster.awaitRunning(job);
        cluster.awaitHaCheckpoint(job, 0);
        String[] repair = {"ha", "repair", cluster.haClusterDir().toString(), "--uid", HaJobs.CONSUMER_UID,
            "--state", HaJobs.OFFSETS_STATE, "--apply", "--zookeeper-quorum", zk.connectString(),
            "--cluster-id", HaCluster.CLUSTER_ID};

        CliProcess.Result refused = CliProcess.withFlink(repair).run();
        assertEquals(refused.toString(), 2, refused.exitCode);
        assertTrue(refused.toString(), refused.output.contains("holds or waits for the leadership of cluster '"
                + HaCluster.CLUSTER_ID + "'"));
        assertTrue("the leader is named: " + refused, refused.output.contains(" at ") && refused.output.contains("leader "));
        assertTrue(refused.toString(), refused.output.contains("--force"));
        // Nothing written while refused (the running JobManager itself adds and removes its files).
        try (java.util.stream.Stream<Path> files = Files.list(cluster.haClusterDir())) {
            java.util.List<String> names = files.map(f -> f.getFileName().toString()).sorted()
                    .collect(java.util.stream.Collectors.toList());
            assertTrue("no backup, temporary or lock file: " + names, names.stream()
                    .noneMatch(n -> n.contains("backup") || n.contains(".tmp") || n.contains("lock")));
        }

        // The JobManager stops (its ZooKeeper session ends, and its latch node with it).
        cluster.crash();
        CliProcess.Result allowed = CliProcess.withFlink(repair).run();
        assertEquals(allowed.toString(), 0, allowed.exitCode);
        assertTrue(allowed.toString(), allowed.output.contains("repaired, backup"));
        for (Path f : cluster.haFilesById(job).values()) {
            for (io.checkpointsurgeon.InspectReport.OperatorInfo op : io.checkpointsurgeon.CheckpointSurgeon.inspectHa(f).operators()) {
                for (io.checkpointsurgeon.InspectReport.StateTotal t : op.stateTotals()) {
                    assertNotEquals("repaired " + f, HaJobs.OFFSETS_STATE, t.name());
                }
            }
        }
    }
}
