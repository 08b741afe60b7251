package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.testing.CliProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.junit.Test;

/**
 * {@code recover --ha-dir} and {@code recover --zookeeper-quorum} on a real ZooKeeper-HA cluster that
 * crashed: the checkpoint its newest completedCheckpoint file (and the ZooKeeper node naming that
 * file) points to lost a state file, and recover names that HA pointer (Flink would recover from it
 * before any {@code execution.savepoint.path}) and how to take it away.
 */
public class ZooKeeperHaRecoverTest extends ZooKeeperHaCase {

    @Test
    public void recoverNamesTheHaPointerToABrokenCheckpoint() throws Exception {
        JobID job = cluster.startV2FromV1();
        cluster.recoverAndCheckpoint(job, "recovery 1");
        Map<Long, Path> ha = cluster.haFilesById(job);
        long newest = Collections.max(ha.keySet());
        Path chk = cluster.checkpointDir(job, newest);
        StateFile lost = CheckpointSurgeon.references(chk).stream().filter(f -> f.kind() == StateFile.Kind.RELATIVE)
                .findFirst().orElseThrow();
        Files.delete(chk.resolve(lost.path()));

        CliProcess.Result r = CliProcess.withFlink("recover", cluster.checkpoints.toString(), "--ha-dir",
                cluster.haClusterDir().toString()).run();
        System.out.println(r.output);
        assertNotEquals(r.output, 0, r.exitCode);
        assertTrue(r.output, r.output.contains("BROKEN     " + chk.toRealPath().toUri().toString().replaceAll("/$", "")));
        assertTrue(r.output, r.output.contains("HA pointer " + ha.get(newest) + " names checkpoint " + newest));
        assertTrue(r.output, r.output.contains(lost.path() + ": missing"));
        // the union state this job grows is a doctor's error, but no reason a restore fails
        assertTrue(r.output, !r.output.contains("STALE_UNION_STATE") && r.output.contains("RESTORES   "));
        assertTrue(r.output, r.output.contains("move the completedCheckpoint file out of the HA directory"));

        // the same pointer as the cluster's ZooKeeper node
        CliProcess.Result z = CliProcess.withFlink("recover", cluster.checkpoints.toString(), "--zookeeper-quorum",
                zk.connectString(), "--cluster-id", HaCluster.CLUSTER_ID).run();
        System.out.println(z.output);
        assertEquals(z.output, 4, z.exitCode);
        String node = "/flink/" + HaCluster.CLUSTER_ID + "/jobs/" + job + "/checkpoints/" + String.format("%019d", newest);
        assertTrue(z.output, z.output.contains("HA pointer ZooKeeper node " + node + " names checkpoint " + newest));
        assertTrue(z.output, z.output.contains("drop the ConfigMap key or ZooKeeper node that names it"));
        assertEquals(z.output, 1, z.output.split("\nHA pointer ", -1).length - 1);
    }
}
