package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.TestFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.apache.flink.configuration.Configuration;
import org.junit.Test;

/**
 * Checkpoints moved to another directory tree (the old one deleted), then {@code relocate}, then a
 * restore whose keyed state ends exact: a retained incremental RocksDB checkpoint, whose
 * {@code shared/} files are named by absolute paths, and a native savepoint, whose relative
 * handles need nothing. And {@code --reference-unchanged}: a rename into a new directory that
 * holds only the new {@code _metadata}, from which the job restores.
 */
public class RelocateRestoreTest {

    private static Configuration rocksDb(Path base, String run) {
        Configuration conf = NumbersJob.conf(base, run, "rocksdb");
        FlinkConf.set(conf, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.inlineThreshold(conf, "0");
        return conf;
    }

    @Test
    public void movedIncrementalRocksDbCheckpointRestoresAfterRelocate() throws Exception {
        Path work = Files.createTempDirectory("cs-relocate");
        Path oldBase = work.resolve("old");
        Path chk = NumbersJob.midStream(rocksDb(oldBase, "A"), "A", "a", 3, NumbersJob.Ending.CANCEL)
                .checkpointPath();
        SurgeryPlan planned = CheckpointSurgeon.plan(chk, Surgery.relocate(oldBase.toString(), "/x"));
        long shared = planned.relocated().stream().filter(r -> r.oldPath().contains("/shared/")).count();
        assertTrue("the checkpoint names shared/ files by absolute path: " + planned.relocated(), shared > 0);

        Path newBase = work.resolve("new");
        Files.move(oldBase, newBase);
        Path moved = newBase.resolve(oldBase.relativize(chk));
        byte[] before = Files.readAllBytes(moved.resolve("_metadata"));

        // --check with a wrong target: the missing files are listed, exit 2, nothing written
        CliProcess.Result wrong = CliProcess.withFlink("relocate", moved.toString(), "--from", oldBase.toString(),
                "--to", work.resolve("elsewhere").toString(), "--check", "--apply", "--in-place").run();
        assertEquals(wrong.toString(), 2, wrong.exitCode);
        assertTrue(wrong.output, wrong.output.contains("missing: file:" + work.resolve("elsewhere")));
        assertTrue(Arrays.equals(before, Files.readAllBytes(moved.resolve("_metadata"))));

        CliProcess.Result r = CliProcess.withFlink("relocate", moved.toString(), "--from", oldBase.toString(),
                "--to", newBase.toString(), "--check", "--apply", "--in-place").run();
        assertEquals(r.toString(), 0, r.exitCode);
        int paths = planned.relocated().size();
        assertTrue(r.output, r.output.contains("check: " + paths + " of " + paths + " rewritten paths exist"));
        assertTrue(r.output, r.output.contains("loaded by Flink"));

        NumbersJob.runToEnd(rocksDb(newBase, "B"), "B", "a", moved);
        NumbersJob.Outcome o = NumbersJob.outcome("A", "B");
        assertEquals(o.toString(), 0, o.missing);
        assertEquals(o.toString(), NumbersJob.expectedSums(), o.finalSums);
    }

    @Test
    public void movedNativeSavepointNeedsNothingAndRestores() throws Exception {
        Path work = Files.createTempDirectory("cs-relocate-native");
        Path oldBase = work.resolve("old");
        Path savepoint = NumbersJob.midStream(rocksDb(oldBase, "A"), "A", "a", 1,
                NumbersJob.Ending.NATIVE_SAVEPOINT).savepointPath();
        Path newBase = work.resolve("new");
        Files.move(oldBase, newBase);
        Path moved = newBase.resolve(oldBase.relativize(savepoint));

        CliProcess.Result r = CliProcess.jar("relocate", moved.toString(), "--from", oldBase.toString(), "--to",
                newBase.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertTrue(r.output, r.output.contains("relative file handles move with the directory"));

        NumbersJob.runToEnd(rocksDb(newBase, "B"), "B", "a", moved);
        NumbersJob.Outcome o = NumbersJob.outcome("A", "B");
        assertEquals(o.toString(), 0, o.twice);
        assertEquals(o.toString(), 0, o.missing);
        assertEquals(o.toString(), NumbersJob.expectedSums(), o.finalSums);
    }

    @Test
    public void aRenameThatReferencesTheUnchangedFilesMovesOnlyTheMetadata() throws Exception {
        Path work = Files.createTempDirectory("cs-reference");
        Configuration conf = NumbersJob.conf(work, "A");
        FlinkConf.inlineThreshold(conf, "0");
        Path savepoint = NumbersJob.midStream(conf, "A", "a", 1, NumbersJob.Ending.SAVEPOINT).savepointPath();
        long stateBytes = TestFiles.sizeOf(savepoint) - Files.size(savepoint.resolve("_metadata"));

        Path map = work.resolve("uids.map");
        Files.writeString(map, "a-source b-source\na-throttle b-throttle\na-sum b-sum\na-sink b-sink\n");
        Path out = work.resolve("renamed");
        CliProcess.Result r = CliProcess.withFlink("rename-operator", savepoint.toString(), "--map", map.toString(),
                "--reference-unchanged", "--apply", "--output", out.toString()).run();
        assertEquals(r.toString(), 0, r.exitCode);
        assertTrue(r.output, r.output.contains("depends on that directory"));
        assertTrue("the savepoint has state files: " + stateBytes, stateBytes > 0);
        // the new directory holds the new _metadata and nothing else
        try (java.util.stream.Stream<Path> files = Files.list(out)) {
            assertEquals(java.util.List.of(out.resolve("_metadata")), files.collect(java.util.stream.Collectors.toList()));
        }
        System.out.printf("--reference-unchanged: %d bytes of state stay in %s; the new directory holds %d bytes%n",
                stateBytes, savepoint, TestFiles.sizeOf(out));

        NumbersJob.runToEnd(work, "B", "b", out);
        NumbersJob.Outcome o = NumbersJob.outcome("A", "B");
        assertEquals(o.toString(), 0, o.twice);
        assertEquals(o.toString(), 0, o.missing);
        assertEquals(o.toString(), NumbersJob.expectedSums(), o.finalSums);
        assertFalse(Files.exists(out.resolve("_metadata.backup")));
    }
}
