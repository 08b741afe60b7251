package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.testing.CliProcess;

import org.apache.flink.api.common.JobID;
import org.junit.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * {@code doctor} on a real ZooKeeper-HA storage directory whose completedCheckpoint files hold the
 * grown union state: every {@code fix:} and {@code or:} line it prints is an {@code ha repair} of
 * that directory with the quorum and cluster id doctor was given, and runs as printed (the CLI in
 * its own JVM with this Flink version's jars); a new JobManager then recovers the job from the
 * repaired HA checkpoint, without the union state and with every other state value intact.
 */
public class ZooKeeperHaDoctorTest extends ZooKeeperHaCase {

    /** The lines of {@code output} that start with {@code label}, without it. */
    private static List<String> lines(String output, String label) {
        List<String> out = new ArrayList<>();
        for (String line : output.split("\n")) {
            if (line.trim().startsWith(label)) {
                out.add(line.trim().substring(label.length()).trim());
            }
        }
        return out;
    }

    @Test
    public void everyFixLineRunsAsPrintedAndTheJobRecoversFromTheRepairedHaFiles() throws Exception {
        JobID job = cluster.startV2FromV1();
        long b = cluster.recoverAndCheckpoint(job, "recovery 1");
        long expected = 2L * HaJobs.PARALLELISM * HaJobs.PARALLELISM * HaJobs.PARALLELISM;
        Map<Long, Path> ha = cluster.assertUnionInNewestHaFile("after recovery 1", job, b, expected);
        long newest = Collections.max(ha.keySet());
        String dir = cluster.haClusterDir().toString();
        String haOptions = " --zookeeper-quorum " + zk.connectString() + " --cluster-id " + HaCluster.CLUSTER_ID;

        CliProcess.Result doctor = CliProcess.withFlink("doctor", dir, "--zookeeper-quorum", zk.connectString(),
                "--cluster-id", HaCluster.CLUSTER_ID).run();
        System.out.println("doctor " + dir + " --zookeeper-quorum " + zk.connectString() + " --cluster-id "
                + HaCluster.CLUSTER_ID + "\n" + doctor.output);
        assertEquals(doctor.toString(), 4, doctor.exitCode);
        assertTrue(doctor.output, doctor.output.contains("STALE_UNION_STATE"));
        List<String> fixes = lines(doctor.output, "fix:"), alternatives = lines(doctor.output, "or:");
        assertFalse(doctor.output, fixes.isEmpty());
        String selection = " --operator-id ";
        for (String line : fixes) {
            assertTrue(line, line.startsWith("checkpoint-surgeon ha repair " + dir + selection)
                    && line.endsWith(" --state " + HaJobs.OFFSETS_STATE + " --apply" + haOptions)
                    || line.equals("checkpoint-surgeon ha list " + dir));
        }
        assertTrue(doctor.output, fixes.stream().anyMatch(l -> l.contains(" ha repair ")));
        for (String line : alternatives) {
            assertTrue(line, line.startsWith("checkpoint-surgeon ha repair " + dir + selection)
                    && line.endsWith(" --state " + HaJobs.OFFSETS_STATE + " --dedupe --apply" + haOptions));
        }
        assertFalse(doctor.output, alternatives.isEmpty());
        // no command line twice: one ha repair covers every file of the dir
        List<String> all = new ArrayList<>(alternatives);
        all.addAll(fixes);
        assertEquals(doctor.output, all.size(), all.stream().distinct().count());

        CliProcess.Result json = CliProcess.withFlink("doctor", dir, "--json", "--zookeeper-quorum", zk.connectString(),
                "--cluster-id", HaCluster.CLUSTER_ID).run();
        assertEquals(json.toString(), 4, json.exitCode);
        assertTrue(json.output, json.output.contains("\"fix\": \"" + fixes.get(0) + "\""));

        // Each line as printed, the alternatives first (de-duplicating leaves the state for the fix
        // to remove): each exits 0 and changes the HA files.
        for (String line : all) {
            CliProcess.Result r = CliProcess.withFlinkAsPrinted(line).run();
            assertEquals(line + "\n" + r, 0, r.exitCode);
            if (line.contains(" --dedupe ")) {
                long n = ZooKeeperHaRepairTest.unionElements(CheckpointSurgeon.inspectHa(ha.get(newest)));
                assertTrue("de-duplicated: " + n + " of " + expected + " entries left", n > 0 && n < expected);
            }
        }
        for (Map.Entry<Long, Path> e : cluster.haFilesById(job).entrySet()) {
            assertEquals("HA checkpoint " + e.getKey() + " after the fix", 0,
                    ZooKeeperHaRepairTest.unionElements(CheckpointSurgeon.inspectHa(e.getValue())));
        }
        CliProcess.Result after = CliProcess.withFlink("doctor", dir).run();
        assertFalse(after.output, after.output.contains("STALE_UNION_STATE"));

        // A new JobManager recovers the job from the repaired HA checkpoint.
        cluster.recoverAndCheckpoint(job, "recovery from the HA files repaired by doctor's fix lines", false);
        HaCluster.assertRestoredFrom(newest, "recovery after the fix");
        cluster.crash();
        for (Map.Entry<Long, Path> e : cluster.haFilesById(job).entrySet()) {
            assertEquals("HA checkpoint " + e.getKey() + " written after the recovery", 0,
                    ZooKeeperHaRepairTest.unionElements(CheckpointSurgeon.inspectHa(e.getValue())));
        }
    }
}
