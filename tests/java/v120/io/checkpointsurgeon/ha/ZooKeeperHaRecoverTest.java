package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.cli.InProcessCli;
import io.checkpointsurgeon.flink.KubernetesHa;
import io.checkpointsurgeon.flink.ZooKeeperLeader;
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
 * before any {@code execution.savepoint.path}) and the {@code ha remove-checkpoint} command that
 * takes it away. That command, run as printed, refuses while a JobManager leads or locks the node,
 * removes the node compare-and-set keeping its value and file, and a restarted JobManager then
 * recovers the job from the next retained checkpoint with exactly its values.
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
        assertTrue(r.output, r.output.contains("with checkpoint-surgeon ha remove-checkpoint --checkpoint-id " + newest
                + " --job-id " + job + " {--zookeeper-quorum HOSTS | --kubernetes} --cluster-id ID --apply; "));

        // the same pointer as the cluster's ZooKeeper node
        CliProcess.Result z = CliProcess.withFlink("recover", cluster.checkpoints.toString(), "--zookeeper-quorum",
                zk.connectString(), "--cluster-id", HaCluster.CLUSTER_ID).run();
        System.out.println(z.output);
        assertEquals(z.output, 4, z.exitCode);
        String node = "/flink/" + HaCluster.CLUSTER_ID + "/jobs/" + job + "/checkpoints/" + String.format("%019d", newest);
        assertTrue(z.output, z.output.contains("HA pointer ZooKeeper node " + node + " names checkpoint " + newest));
        String command = "checkpoint-surgeon ha remove-checkpoint --checkpoint-id " + newest + " --job-id " + job
                + " --zookeeper-quorum " + zk.connectString() + " --cluster-id " + HaCluster.CLUSTER_ID;
        assertTrue(z.output, z.output.contains(" with " + command + " --apply; Flink then recovers from the newest"
                + " checkpoint pointer left, or with none left, start the job with -s "));
        assertEquals(z.output, 1, z.output.split("\nHA pointer ", -1).length - 1);
        removeCheckpointAsPrinted(job, newest, node, command);
    }

    /**
     * {@code ha remove-checkpoint} as recover printed it: plans; refuses the older checkpoint (it
     * restores), a stale read, a live leader and a JobManager's lock; removes the node keeping its
     * data and file under fresh names; a second run finds nothing; the job recovers the next one.
     */
    private void removeCheckpointAsPrinted(JobID job, long newest, String node, String command) throws Exception {
        long t0 = System.nanoTime();
        Path haFile = cluster.haFilesById(job).get(newest);
        long previous = cluster.haFilesById(job).keySet().stream().filter(id -> id < newest).max(Long::compare).orElseThrow();
        byte[] fileBytes = Files.readAllBytes(haFile);
        String parent = node.substring(0, node.lastIndexOf('/'));
        String name = node.substring(node.lastIndexOf('/') + 1);
        byte[] nodeData = zk.children(parent).get(name);

        CliProcess.Result plan = CliProcess.withFlinkAsPrinted(command).run();
        System.out.println(plan.output);
        assertEquals(plan.output, 0, plan.exitCode);
        assertTrue(plan.output, plan.output.contains("ZooKeeper node " + node + " names checkpoint " + newest + " of job "
                + job + ": file:" + haFile));
        assertTrue(plan.output, plan.output.contains("  which Flink cannot recover from: the checkpoint file:"
                + cluster.checkpointDir(job, newest) + " does not restore: "));
        assertTrue(plan.output, plan.output.contains("afterwards Flink recovers job " + job + " from checkpoint " + previous
                + " (file:" + cluster.checkpointDir(job, previous) + "), which restores"));
        assertTrue(plan.output, plan.output.contains("would remove ZooKeeper node " + node));
        assertTrue("planned only", zk.children(parent).containsKey(name) && Files.exists(haFile));

        // (the other runs in this JVM: a process of its own is a JVM start and Flink's class loading)
        InProcessCli.Run healthy = InProcessCli.run(words(command.replace("--checkpoint-id " + newest,
                "--checkpoint-id " + previous) + " --apply"));
        assertEquals(healthy.toString(), 2, healthy.code);
        assertTrue(healthy.toString(), healthy.err.contains("error [INVALID_ARGUMENT]: checkpoint " + previous + " (file:"
                + cluster.checkpointDir(job, previous) + ") restores: removing its pointer makes Flink recover an older"
                + " checkpoint and lose the progress since; give --even-if-restorable"));

        // compare-and-set: a pointer read before the node changed removes nothing
        KubernetesHa.Pointer read = ZooKeeperLeader.checkpointPointers(zk.connectString(), "/flink", HaCluster.CLUSTER_ID)
                .stream().filter(p -> p.checkpointId == newest).findFirst().orElseThrow();
        zk.setData(node, nodeData);
        try {
            ZooKeeperLeader.remove(zk.connectString(), read);
            throw new AssertionError("removed a node that changed since it was read");
        } catch (CheckpointSurgeonException e) {
            assertEquals(e.toString(), CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.toString(), e.getMessage().contains("changed since it was read (data version 0, now 1)"));
        }
        assertTrue("the node is kept", zk.children(parent).containsKey(name));

        // a JobManager that leads (and, recovering the job, locks the node) stops the removal
        cluster.start();
        long deadline = System.currentTimeMillis() + HaCluster.TIMEOUT_MS;
        while (zk.children(node + "/locks").isEmpty() && System.currentTimeMillis() < deadline) Thread.sleep(50);
        assertFalse("the recovering JobManager locked " + node, zk.children(node + "/locks").isEmpty());
        InProcessCli.Run leading = InProcessCli.run(words(command + " --apply"));
        assertEquals(leading.toString(), 2, leading.code);
        assertTrue(leading.toString(), leading.err.contains("error [LOCKED]: a JobManager holds or waits for the leadership"
                + " of cluster '" + HaCluster.CLUSTER_ID + "'") && leading.err.contains("--force"));
        InProcessCli.Run locked = InProcessCli.run(words(command + " --apply --force"));
        assertEquals(locked.toString(), 2, locked.code);
        assertTrue(locked.toString(), locked.err.contains("error [LOCKED]: ZooKeeper node " + node + " is locked by a"
                + " JobManager's session (" + node + "/locks/"));
        cluster.crash();
        assertTrue("nothing removed while refused", zk.children(parent).containsKey(name) && Files.exists(haFile));

        // names that exist are never written: the next free ones are taken
        Path valueName = haFile.resolveSibling(job + "-checkpointID-" + name + ".zookeeper-node.backup-removed");
        Path fileName = haFile.resolveSibling(haFile.getFileName() + ".backup-removed");
        Files.writeString(valueName, "precious");
        Files.writeString(fileName, "precious");
        CliProcess.Result removed = CliProcess.withFlinkAsPrinted(command + " --apply").run();
        System.out.println(removed.output);
        assertEquals(removed.output, 0, removed.exitCode);
        Path keptValue = valueName.resolveSibling(valueName.getFileName() + "-1");
        Path keptFile = fileName.resolveSibling(fileName.getFileName() + "-1");
        // (the ZooKeeper client logs between these lines)
        assertTrue(removed.output, removed.output.contains("\nkept the pointer's value in " + keptValue + "\n"));
        assertTrue(removed.output, removed.output.contains("\nremoved ZooKeeper node " + node + " (version 1)\n"));
        assertTrue(removed.output, removed.output.contains("\nmoved " + haFile + " to " + keptFile + "\n"));
        assertTrue(removed.output, removed.output.contains("\nlogged in " + haFile.resolveSibling(job + "-checkpointID-"
                + name + ".removed.log") + "\n"));
        assertEquals("precious", Files.readString(valueName));
        assertEquals("precious", Files.readString(fileName));
        assertArrayEquals(nodeData, Files.readAllBytes(keptValue));
        assertArrayEquals(fileBytes, Files.readAllBytes(keptFile));
        assertFalse("the node is gone", zk.children(parent).containsKey(name));
        assertFalse("the file moved", Files.exists(haFile));

        InProcessCli.Run again = InProcessCli.run(words(command + " --apply"));
        assertEquals(again.toString(), 2, again.code);
        assertTrue(again.toString(), again.err.contains("error [NOTHING_SELECTED]: no pointer to checkpoint " + newest
                + " of job " + job + " in the cluster's ZooKeeper nodes: nothing to remove"));

        InProcessCli.Run after = InProcessCli.run("recover", cluster.checkpoints.toString(), "--zookeeper-quorum",
                zk.connectString(), "--cluster-id", HaCluster.CLUSTER_ID);
        assertEquals(after.toString(), 4, after.code);
        assertFalse(after.toString(), after.out.contains("HA pointer "));

        // a JobManager on the same HA services recovers the next retained checkpoint, exact values
        cluster.recoverAndCheckpoint(job, "after ha remove-checkpoint");
        HaCluster.assertRestoredFrom(previous, "after ha remove-checkpoint");
        System.err.printf("ha remove-checkpoint steps: %.1f s%n", (System.nanoTime() - t0) / 1e9);
    }

    /** The words of a printed command line without quotes (these have none), after "checkpoint-surgeon". */
    static String[] words(String commandLine) {
        assertTrue(commandLine, commandLine.startsWith("checkpoint-surgeon ") && !commandLine.contains("'"));
        return commandLine.substring("checkpoint-surgeon ".length()).split(" ");
    }
}
