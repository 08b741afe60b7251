package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.cli.InProcessCli;
import io.checkpointsurgeon.flink.StateFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.junit.Test;

/**
 * {@code ha remove-checkpoint} on Flink 1.14's ZooKeeper layout (testFlink114 only): a JobManager
 * locks a pointer {@code <root>/<cluster-id>/jobs/<job id>/checkpoints/<id>} with an ephemeral
 * child of the node itself (1.15+: under {@code <node>/locks}, and a node without it is marked for
 * deletion; 1.14's nodes have no such child and are not), and waits for leadership under a latch per
 * component ({@code <root>/<cluster-id>/leader/<component>/latch}). While the recovering JobManager
 * runs, the removal is refused for its leadership, and with --force for its locks; once it stopped,
 * the node goes and a new JobManager recovers the job from the next retained checkpoint, exact values.
 */
public class ZooKeeperHaRemoveCheckpointBefore115Test extends ZooKeeperHaCase {

    @Test
    public void removedPointerLetsTheJobRecoverTheNextCheckpoint() throws Exception {
        // the v2 job alone (it records what it restores): two retained HA checkpoints holding every key
        cluster.start();
        JobID job = cluster.submit(env -> HaJobs.consumerJob(env, false), null);
        cluster.awaitRunning(job);
        cluster.awaitHaCheckpoint(job, cluster.awaitCheckpointHoldingEveryKey(job));
        cluster.crash();
        Map<Long, Path> ha = cluster.haFilesById(job);
        long newest = Collections.max(ha.keySet());
        long previous = ha.keySet().stream().filter(id -> id < newest).max(Long::compare).orElseThrow();
        Path chk = cluster.checkpointDir(job, newest);
        StateFile lost = CheckpointSurgeon.references(chk).stream().filter(f -> f.kind() == StateFile.Kind.RELATIVE)
                .findFirst().orElseThrow();
        Files.delete(chk.resolve(lost.path()));
        String parent = "/flink/" + HaCluster.CLUSTER_ID + "/jobs/" + job + "/checkpoints";
        String name = String.format("%019d", newest);
        assertTrue("1.14's layout: " + zk.children(parent).keySet(), zk.children(parent).containsKey(name));
        String[] remove = {"ha", "remove-checkpoint", "--checkpoint-id", String.valueOf(newest), "--job-id",
            job.toString(), "--zookeeper-quorum", zk.connectString(), "--cluster-id", HaCluster.CLUSTER_ID, "--apply"};

        // the recovering JobManager locks every pointer with an ephemeral child of the node
        cluster.start();
        long deadline = System.currentTimeMillis() + HaCluster.TIMEOUT_MS;
        while (zk.children(parent + "/" + name).isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(50);
        String lock = zk.children(parent + "/" + name).keySet().stream().findFirst().orElseThrow();
        InProcessCli.Run leading = InProcessCli.run(remove);
        assertEquals(leading.toString(), 2, leading.code);
        assertTrue(leading.toString(), leading.err.contains("error [LOCKED]: a JobManager holds or waits for the"
                + " leadership of cluster '" + HaCluster.CLUSTER_ID + "'") && leading.err.contains("/leader/dispatcher/latch/"));
        InProcessCli.Run locked = InProcessCli.run(withForce(remove));
        assertEquals(locked.toString(), 2, locked.code);
        assertTrue(locked.toString(), locked.err.contains("error [LOCKED]: ZooKeeper node " + parent + "/" + name
                + " is locked by a JobManager's session (" + parent + "/" + name + "/" + lock + ")"));
        cluster.crash();
        assertTrue("nothing removed while locked", zk.children(parent).containsKey(name));

        InProcessCli.Run removed = InProcessCli.run(remove);
        assertEquals(removed.toString(), 0, removed.code);
        assertTrue(removed.toString(), removed.out.contains("afterwards Flink recovers job " + job + " from checkpoint "
                + previous + " ("));
        assertTrue(removed.toString(), removed.out.contains("\nremoved ZooKeeper node " + parent + "/" + name + " (version 0)\n"));
        assertFalse(zk.children(parent).containsKey(name));
        assertFalse("the file moved aside", Files.exists(ha.get(newest)));
        assertTrue(Files.exists(ha.get(newest).resolveSibling(ha.get(newest).getFileName() + ".backup-removed")));

        cluster.recoverAndCheckpoint(job, "after ha remove-checkpoint");
        HaCluster.assertRestoredFrom(previous, "after ha remove-checkpoint");
    }

    private static String[] withForce(String[] args) {
        String[] out = java.util.Arrays.copyOf(args, args.length + 1);
        out[args.length] = "--force";
        return out;
    }
}
