package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;

import org.apache.flink.api.common.JobID;
import org.apache.flink.runtime.state.RetrievableStreamStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.util.InstantiationUtil;
import org.junit.After;
import org.junit.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The incident end to end with real ZooKeeper HA: the stale union state grows with every
 * JobManager recovery; a repaired {@code _metadata} alone changes nothing (the JobManager restores
 * from the HA CompletedCheckpoint); after {@code repairHa} on the HA files a new cluster recovers
 * the job from them, without the union state and with every other state value intact.
 */
public class ZooKeeperHaRepairTest extends ZooKeeperHaCase {

    private final long started = System.nanoTime();

    private static final Surgery REMOVE_OFFSETS =
            Surgery.removeState(Surgery.OperatorSelector.uid(HaJobs.CONSUMER_UID), HaJobs.OFFSETS_STATE);

    @After
    public void printTime() {
        System.err.printf("ZooKeeperHaRepairTest (Flink %s): %.1f s%n", System.getProperty("flink.version"),
                (System.nanoTime() - started) / 1e9);
    }

    @Test
    public void repairedHaCheckpointIsWhatTheRecoveredJobRestores() throws Exception {
        // ---- v1 writes the union state; v2 starts from v1's retained checkpoint. -------------------
        JobID job = cluster.startV2FromV1();
        long expected = 2L * HaJobs.PARALLELISM * HaJobs.PARALLELISM;

        // ---- JobManager crash and recovery from ZooKeeper: the union grows again. -----------------
        long b = cluster.recoverAndCheckpoint(job, "recovery 1");
        expected *= HaJobs.PARALLELISM;
        Map<Long, Path> haB = cluster.assertUnionInNewestHaFile("after recovery 1", job, b, expected);
        assertZooKeeperPointsAtHaFiles(job, haB);

        // ---- Control: repairing only _metadata changes nothing, the JobManager reads the HA files. -
        for (long id : haB.keySet()) {
            SurgeryPlan p = CheckpointSurgeon.applyInPlace(cluster.checkpointDir(job, id), REMOVE_OFFSETS);
            assertTrue("the _metadata of checkpoint " + id + " had the union state: " + p.toJson(),
                    p.elementsRemoved() > 0);
            assertEquals(0, unionElements(CheckpointSurgeon.inspect(cluster.checkpointDir(job, id))));
        }
        long newestB = Collections.max(haB.keySet());
        long c = cluster.recoverAndCheckpoint(job, "recovery 2 (only _metadata repaired)");
        HaCluster.assertRestoredFrom(newestB, "recovery 2");
        expected *= HaJobs.PARALLELISM;
        Map<Long, Path> haC = cluster.assertUnionInNewestHaFile("after recovery 2, _metadata repaired but not HA", job, c,
                expected);

        // ---- The repair: every HA completedCheckpoint file (and its _metadata), JobManager down. ----
        long newestC = Collections.max(haC.keySet());
        writeFixtureCopy(haC.get(newestC));
        for (Map.Entry<Long, Path> e : haC.entrySet()) {
            long id = e.getKey();
            Path file = e.getValue();
            CheckpointSurgeon.HaFileInfo before = CheckpointSurgeon.haFileInfo(file);
            SurgeryPlan dry = CheckpointSurgeon.repairHa(file, REMOVE_OFFSETS, true);
            assertEquals("a dry run writes nothing", before.fileBytes(), Files.size(file));
            SurgeryPlan p = CheckpointSurgeon.repairHa(file, REMOVE_OFFSETS, false);
            assertEquals(dry.elementsRemoved(), p.elementsRemoved());
            assertTrue("HA checkpoint " + id + " had union entries: " + p.toJson(), p.elementsRemoved() > 0);
            assertNotNull(p.result().backup());
            assertTrue(Files.exists(Paths.get(p.result().backup())));
            assertEquals("the backup is the old file", before.fileBytes(), Files.size(Paths.get(p.result().backup())));
            CheckpointSurgeon.HaFileInfo after = CheckpointSurgeon.haFileInfo(file);
            assertEquals(id, after.checkpointId());
            assertEquals(job.toString(), after.jobId());
            // No size check: with the state in files the HA file only holds handles, and Flink 2.x's
            // loader gives every empty StateObjectCollection its own ArrayList (the repaired file of
            // 2.3.0 is ~80 bytes larger than the original).
            InspectReport r = CheckpointSurgeon.inspectHa(file);
            assertEquals("no union state left in HA checkpoint " + id, 0, unionElements(r));
            assertEquals("position state kept in HA checkpoint " + id, HaJobs.PARALLELISM, stateElements(r,
                    HaJobs.POSITION_STATE));
            Path chk = cluster.checkpointDir(job, id);
            // Its _metadata too (those of the control step above are repaired already).
            if (Files.exists(chk.resolve("_metadata")) && unionElements(CheckpointSurgeon.inspect(chk)) > 0) {
                CheckpointSurgeon.applyInPlace(chk, REMOVE_OFFSETS);
                assertEquals(0, unionElements(CheckpointSurgeon.inspect(chk)));
            }
        }
        // ZooKeeper still points at the same (now repaired) files.
        assertZooKeeperPointsAtHaFiles(job, haC);

        // ---- Recovery from the repaired HA checkpoint. -------------------------------------------
        long d = cluster.recoverAndCheckpoint(job, "recovery 3 (HA repaired)", false);
        HaCluster.assertRestoredFrom(newestC, "recovery 3");
        // The job keeps running and checkpointing; then the JobManager goes down again so the files
        // can be read while nothing writes them.
        long e = cluster.awaitHaCheckpoint(job, d);
        assertEquals(org.apache.flink.api.common.JobStatus.RUNNING, cluster.status(job));
        cluster.crash();
        Map<Long, Path> haD = cluster.haFilesById(job);
        long newestD = Collections.max(haD.keySet());
        assertTrue(newestD >= e);
        for (Map.Entry<Long, Path> en : haD.entrySet()) {
            long id = en.getKey();
            InspectReport r = CheckpointSurgeon.inspectHa(en.getValue());
            assertFalse("HA checkpoint " + id + " (after recovery from the repaired HA file) has no "
                    + HaJobs.OFFSETS_STATE + ": " + stateNames(r), stateNames(r).contains(HaJobs.OFFSETS_STATE));
            assertEquals(HaJobs.PARALLELISM, stateElements(r, HaJobs.POSITION_STATE));
        }
        for (long id : haD.keySet()) {
            InspectReport chk = CheckpointSurgeon.inspect(cluster.checkpointDir(job, id));
            assertFalse("chk-" + id + "/_metadata has no " + HaJobs.OFFSETS_STATE,
                    stateNames(chk).contains(HaJobs.OFFSETS_STATE));
            assertEquals(HaJobs.PARALLELISM, stateElements(chk, HaJobs.POSITION_STATE));
        }
    }

    /**
     * The checkpoints are moved to another directory tree (nothing is left at the old place); the
     * HA files still name the old one. {@code ha repair --from --to} relocates them (the state
     * handles, the pointer to the checkpoint and its storage location), and a new cluster recovers
     * the job from ZooKeeper with exactly the state values snapshotted for that checkpoint.
     */
    @Test
    public void relocatedHaCheckpointIsWhatTheRecoveredJobRestores() throws Exception {
        cluster.start();
        JobID job = cluster.submit(env -> HaJobs.consumerJob(env, false), null);
        cluster.awaitRunning(job);
        cluster.awaitCheckpointHoldingEveryKey(job);
        cluster.crash();
        Map<Long, Path> ha = cluster.haFilesById(job);
        long newest = Collections.max(ha.keySet());

        Path old = cluster.checkpoints;
        Path moved = tmp.getRoot().toPath().resolve("moved").resolve("checkpoints");
        cluster.moveCheckpoints(moved);
        assertFalse(Files.exists(old));

        io.checkpointsurgeon.testing.CliProcess.Result r = io.checkpointsurgeon.testing.CliProcess.withFlink("ha",
                "repair", cluster.haClusterDir().toString(), "--from", old.toString(), "--to", moved.toString(),
                "--apply").run();
        assertEquals(r.toString(), 0, r.exitCode);
        for (Map.Entry<Long, Path> e : cluster.haFilesById(job).entrySet()) {
            CheckpointSurgeon.HaFileInfo info = CheckpointSurgeon.haFileInfo(e.getValue());
            InspectReport after = CheckpointSurgeon.inspectHa(e.getValue());
            // the state files are read from their new place
            assertEquals("HA checkpoint " + e.getKey() + " reads its position state at the new place",
                    HaJobs.PARALLELISM, stateElements(after, HaJobs.POSITION_STATE));
            assertEquals(job.toString(), info.jobId());
        }
        assertZooKeeperPointsAtHaFiles(job, ha);

        // The recovered job restores from the moved files, and writes its new checkpoints where its
        // job graph (kept in the HA storage) says: the old place, created again.
        cluster.checkpoints = old;
        cluster.recoverAndCheckpoint(job, "recovery after the checkpoints moved", false);
        HaCluster.assertRestoredFrom(newest, "recovery after the checkpoints moved");
        assertFalse("chk-" + newest + " was read from its new place only",
                Files.exists(old.resolve(job.toString()).resolve("chk-" + newest)));
    }

    /**
     * Reads the job's checkpoint nodes in ZooKeeper with a plain ZooKeeper client: each holds a
     * Java-serialized RetrievableStreamStateHandle whose FileStateHandle is one of the HA files.
     */
    private void assertZooKeeperPointsAtHaFiles(JobID job, Map<Long, Path> haFiles) throws Exception {
        String node = "/flink/" + HaCluster.CLUSTER_ID + "/jobs/" + job + "/checkpoints";
        Map<Long, Path> fromZk = new TreeMap<>();
        for (Map.Entry<String, byte[]> child : zk.children(node).entrySet()) {
            Object handle = InstantiationUtil.deserializeObject(child.getValue(), getClass().getClassLoader());
            assertTrue(String.valueOf(handle), handle instanceof RetrievableStreamStateHandle);
            StreamStateHandle inner = wrapped((RetrievableStreamStateHandle<?>) handle);
            assertTrue(String.valueOf(inner), inner instanceof FileStateHandle);
            fromZk.put(Long.parseLong(child.getKey()), Paths.get(((FileStateHandle) inner).getFilePath().toUri()));
        }
        assertFalse("checkpoint nodes under " + node, fromZk.isEmpty());
        for (Map.Entry<Long, Path> e : fromZk.entrySet()) {
            assertEquals("ZooKeeper node " + e.getKey() + " -> HA file", haFiles.get(e.getKey()), e.getValue());
            assertEquals(e.getKey().longValue(), CheckpointSurgeon.haFileInfo(e.getValue()).checkpointId());
        }
    }

    static StreamStateHandle wrapped(RetrievableStreamStateHandle<?> h) throws Exception {
        java.lang.reflect.Field f = RetrievableStreamStateHandle.class.getDeclaredField("wrappedStreamStateHandle");
        f.setAccessible(true);
        return (StreamStateHandle) f.get(h);
    }

    /**
     * With {@code CHECKPOINT_SURGEON_WRITE_HA_FIXTURE=<dir>} in the environment, keeps a copy of an
     * unrepaired HA file (tests/fixtures/<version>/ha/ is made this way).
     */
    private void writeFixtureCopy(Path haFile) throws Exception {
        String out = System.getenv("CHECKPOINT_SURGEON_WRITE_HA_FIXTURE");
        if (out == null || out.isEmpty()) {
            return;
        }
        Path dir = Files.createDirectories(Paths.get(out));
        Files.copy(haFile, dir.resolve(haFile.getFileName()), StandardCopyOption.REPLACE_EXISTING);
    }

    static long unionElements(InspectReport r) {
        return stateElements(r, HaJobs.OFFSETS_STATE);
    }

    static long stateElements(InspectReport r, String name) {
        long n = 0;
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                if (t.name().equals(name)) {
                    if (t.elements() < 0) {
                        fail(r.source() + ": state " + name + " could not be read: " + t);
                    }
                    n += t.elements();
                }
            }
        }
        return n;
    }

    static List<String> stateNames(InspectReport r) {
        List<String> names = new ArrayList<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                names.add(t.name());
            }
        }
        return names;
    }
}
