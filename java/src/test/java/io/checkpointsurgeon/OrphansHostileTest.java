package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code orphans} and {@code recover} on hostile directories: 100,000 empty directories, symbolic
 * link loops and links out of the root, a FIFO named {@code _metadata}, a deletion log that
 * exists. Clear errors, no hang, nothing deleted that should not be. The checkpoint here is a
 * fixture real Flink wrote (relative state files only, so it is self-contained).
 */
public class OrphansHostileTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** base/job/chk-7 (a copy of a real checkpoint) and base/job/shared/orphan, an hour old. */
    private Path job() throws Exception {
        return job(tmp.getRoot().toPath());
    }

    private Path job(Path root) throws Exception {
        Path job = root.toRealPath().resolve("base").resolve("job");
        Path chk = Files.createDirectories(job.resolve("chk-7"));
        try (var s = Files.list(CheckpointSurgeonTest.fixture("operator-state-files"))) {
            for (Path f : s.collect(Collectors.toList())) Files.copy(f, chk.resolve(f.getFileName()));
        }
        Path orphan = Files.createDirectories(job.resolve("shared")).resolve("orphan");
        Files.write(orphan, new byte[123]);
        old(orphan);
        return job;
    }

    private static void old(Path p) throws Exception {
        Files.setLastModifiedTime(p, FileTime.fromMillis(System.currentTimeMillis() - 2 * 3600_000L));
    }

    private static void mkfifo(Path p) throws Exception {
        assertEquals(0, new ProcessBuilder("mkfifo", p.toString()).inheritIO().start().waitFor());
    }

    @Test(timeout = 300_000)
    public void aHundredThousandEmptyDirectoriesAreWalkedAndNothingIsDeleted() throws Exception {
        // in memory where there is a tmpfs: 100,000 mkdirs on a shared CI disk take longer than the walks
        Path shm = Path.of("/dev/shm");
        Path root = Files.isDirectory(shm) && Files.isWritable(shm) ? Files.createTempDirectory(shm, "orphans-test")
                : tmp.newFolder().toPath();
        try {
            hundredThousandEmptyDirectories(root);
        } finally {
            try (var s = Files.walk(root)) {
                for (Path p : s.sorted(java.util.Comparator.reverseOrder()).collect(Collectors.toList())) Files.delete(p);
            }
        }
    }

    private void hundredThousandEmptyDirectories(Path root) throws Exception {
        Path job = job(root);
        Files.delete(job.resolve("shared").resolve("orphan"));
        Path many = Files.createDirectories(job.resolve("shared").resolve("many"));
        for (int i = 0; i < 100_000; i++) Files.createDirectory(many.resolve(Integer.toString(i)));
        OrphanReport r = CheckpointSurgeon.orphans(List.of(job.getParent()), List.of(), Duration.ZERO);
        assertTrue(r.directoriesScanned() > 100_000);
        assertEquals(List.of(), r.orphans());
        Path log = root.resolve("log");
        OrphanReport d = CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1), log);
        assertEquals(List.of(), d.deleted());
        assertFalse("nothing to delete, no log", Files.exists(log));
        assertTrue("empty directories are not checkpoint files", Files.isDirectory(many.resolve("99999")));
        assertTrue(Files.exists(job.resolve("chk-7").resolve("_metadata")));
    }

    @Test(timeout = 60_000)
    public void symbolicLinksAreNeverFollowedNorDeleted() throws Exception {
        Path job = job();
        Path outside = Files.createDirectories(tmp.getRoot().toPath().resolve("outside"));
        Path precious = Files.write(outside.resolve("precious"), new byte[10]);
        old(precious);
        Files.createSymbolicLink(job.resolve("shared").resolve("loop"), job);
        Files.createSymbolicLink(job.resolve("shared").resolve("out"), outside);
        Files.createSymbolicLink(job.resolve("shared").resolve("file-link"), precious);
        OrphanReport r = CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1),
                tmp.getRoot().toPath().resolve("log"));
        assertEquals(List.of(job.resolve("shared").resolve("orphan").toString()),
                r.deleted().stream().map(OrphanReport.Entry::path).collect(Collectors.toList()));
        assertEquals(3, r.skipped().size());
        assertTrue(Files.exists(precious));
        assertTrue(Files.isSymbolicLink(job.resolve("shared").resolve("file-link")));

        Path self = Files.createSymbolicLink(tmp.getRoot().toPath().resolve("self"), tmp.getRoot().toPath().resolve("self"));
        try {
            CheckpointSurgeon.orphans(List.of(self), List.of(), Duration.ZERO);
            fail("a root that is a link loop");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.IO, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains(self.toString()) && e.getMessage().contains("symbolic links"));
        }
    }

    @Test(timeout = 60_000)
    public void aFifoMetadataIsNamedAndBlocksDeletion() throws Exception {
        Path job = job();
        Path chk8 = Files.createDirectories(job.resolve("chk-8"));
        mkfifo(chk8.resolve("_metadata"));
        RecoverReport r = CheckpointSurgeon.recover(List.of(job.getParent()), java.util.Map.of());
        assertEquals(RecoverReport.Verdict.BROKEN, r.candidates().get(0).verdict());
        assertTrue(r.candidates().get(0).reasons().toString(),
                r.candidates().get(0).reasons().get(0).problem().contains("is a FIFO, expected a regular file"));
        assertTrue(r.newestRestorable(), r.newestRestorable().endsWith("/chk-7"));
        try {
            CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1),
                    tmp.getRoot().toPath().resolve("log"));
            fail("a _metadata whose references are unknown");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("is a FIFO"));
        }
        assertTrue(Files.exists(job.resolve("shared").resolve("orphan")));
        assertFalse(Files.exists(tmp.getRoot().toPath().resolve("log")));
    }

    @Test
    public void deletionNeedsAnHourAndANewLogAndSparesAYoungCheckpointInProgress() throws Exception {
        Path job = job();
        Path log = Files.write(tmp.getRoot().toPath().resolve("log"), new byte[0]);
        try {
            CheckpointSurgeon.deleteOrphans(List.of(job), List.of(), Duration.ofMinutes(59), tmp.getRoot().toPath().resolve("l2"));
            fail("below the floor");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.INVALID_ARGUMENT, e.code());
        }
        try {
            CheckpointSurgeon.deleteOrphans(List.of(job), List.of(), Duration.ofHours(1), log);
            fail("an existing log");
        } catch (CheckpointSurgeonException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("exists"));
        }
        assertTrue(Files.exists(job.resolve("shared").resolve("orphan")));
        // a chk-* without _metadata that changed just now: a checkpoint being written
        Files.write(Files.createDirectories(job.resolve("chk-9")).resolve("op-state"), new byte[5]);
        try {
            CheckpointSurgeon.deleteOrphans(List.of(job), List.of(), Duration.ofHours(1), tmp.getRoot().toPath().resolve("l3"));
            fail("a checkpoint in progress");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("chk-9 has no _metadata"));
        }
        assertTrue(Files.exists(job.resolve("shared").resolve("orphan")));
        assertTrue(Files.exists(job.resolve("chk-9").resolve("op-state")));
    }

    @Test
    public void aSavepointWithoutMetadataIsInProgressNeverASourceOfOrphans() throws Exception {
        Path base = job().getParent();
        // a savepoint of a large state still being written: its first file is two hours old
        Path sp = Files.createDirectories(base.resolve("savepoints").resolve("savepoint-0a1b2c-0123456789ab"));
        Path early = Files.write(sp.resolve("early-state"), new byte[11]);
        old(early);
        Files.write(sp.resolve("late-state"), new byte[13]);
        OrphanReport r = CheckpointSurgeon.orphans(List.of(base), List.of(), Duration.ofHours(1));
        OrphanReport.Entry e = r.orphans().stream().filter(o -> o.path().equals(early.toString())).findFirst()
                .orElseThrow(() -> new AssertionError(r.orphans().toString()));
        assertEquals(OrphanReport.Kind.INCOMPLETE_CHECKPOINT, e.kind());
        assertTrue(r.deleteBlockers().toString(), r.deleteBlockers().stream().anyMatch(b -> b.startsWith(sp + " has no _metadata")
                && b.endsWith("a checkpoint or savepoint in progress")));
        try {
            CheckpointSurgeon.deleteOrphans(List.of(base), List.of(), Duration.ofHours(1), tmp.getRoot().toPath().resolve("log"));
            fail("a savepoint in progress");
        } catch (CheckpointSurgeonException x) {
            assertEquals(CheckpointSurgeonException.Code.VALIDATION, x.code());
            assertTrue(x.getMessage(), x.getMessage().contains(sp + " has no _metadata"));
        }
        assertTrue(Files.exists(early));
        assertTrue(Files.exists(base.resolve("job").resolve("shared").resolve("orphan")));
        assertFalse(Files.exists(tmp.getRoot().toPath().resolve("log")));
    }

    @Test
    public void doctorCountsTheOrphansOlderThanAnHourOfTheJobDirectory() throws Exception {
        Path job = job();
        Files.write(job.resolve("shared").resolve("young"), new byte[7]);
        List<CheckpointSurgeon.Finding> found = CheckpointSurgeon.doctor(job.resolve("chk-7"));
        List<CheckpointSurgeon.Finding> orphans = found.stream().filter(f -> f.code() == CheckpointSurgeon.Finding.Code.ORPHAN_FILES)
                .collect(Collectors.toList());
        assertEquals(found.toString(), 1, orphans.size());
        assertTrue(orphans.get(0).message(), orphans.get(0).message().startsWith("1 file(s) older than an hour, 123 B,"));
        assertEquals(CheckpointSurgeon.Remedy.Action.LIST_ORPHANS, orphans.get(0).fix().action());
    }

    /** The names of the files in a directory. */
    private static java.util.Set<String> names(Path dir) throws Exception {
        try (var s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).collect(Collectors.toCollection(java.util.TreeSet::new));
        }
    }

    @Test(timeout = 120_000)
    public void anInPlaceRepairsBackupAndTheFilesOnlyItReferencesAreNeverOrphans() throws Exception {
        Path job = job();
        Path chk = job.resolve("chk-7");
        java.util.Set<String> before = names(chk);
        CheckpointSurgeon.applyInPlace(chk, Surgery.removeState(Surgery.OperatorSelector.all(), "union-list"));
        java.util.Set<String> now = new java.util.TreeSet<>();
        for (var f : CheckpointSurgeon.references(chk)) now.add(Path.of(f.path()).getFileName().toString());
        List<String> onlyBackup = before.stream().filter(n -> !n.equals("_metadata") && !now.contains(n))
                .collect(Collectors.toList());
        assertFalse("the repair left a file only the backup references", onlyBackup.isEmpty());
        List<String> backups = names(chk).stream().filter(n -> n.startsWith("_metadata.backup-")).collect(Collectors.toList());
        assertEquals(1, backups.size());
        try (var s = Files.list(chk)) {
            for (Path p : s.collect(Collectors.toList())) old(p); // a repair done hours ago
        }
        Path log = tmp.getRoot().toPath().resolve("log");
        OrphanReport d = CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1), log);
        Path orphan = job.resolve("shared").resolve("orphan");
        assertEquals(List.of(orphan.toString()), d.deleted().stream().map(OrphanReport.Entry::path).collect(Collectors.toList()));
        assertTrue(names(chk).containsAll(before));
        assertTrue(names(chk).containsAll(backups));
        // the intent is logged and flushed before the delete: a kill between the two leaves "deleting"
        List<String> lines = Files.readAllLines(log).stream().filter(l -> !l.startsWith("#")).collect(Collectors.toList());
        assertEquals(2, lines.size());
        assertTrue(lines.get(0), lines.get(0).startsWith("deleting\t123\t") && lines.get(0).endsWith("\t" + orphan));
        assertTrue(lines.get(1), lines.get(1).startsWith("deleted\t123\t") && lines.get(1).endsWith("\t" + orphan));
    }

    @Test(timeout = 120_000)
    public void anUnreadableBackupBlocksDeletion() throws Exception {
        Path job = job();
        Path backup = job.resolve("chk-7").resolve("_metadata.backup-1764876000000");
        Files.write(backup, new byte[] {1, 2, 3});
        old(backup);
        try {
            CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1), tmp.getRoot().toPath().resolve("log"));
            fail("deleted while a backup cannot be read");
        } catch (CheckpointSurgeonException x) {
            assertTrue(x.getMessage(), x.getMessage().contains(backup + " cannot be read"));
        }
        assertTrue(Files.exists(backup));
        assertTrue(Files.exists(job.resolve("shared").resolve("orphan")));
    }

    @Test(timeout = 120_000)
    public void aRepairsLockRefusesDeletion() throws Exception {
        Path job = job();
        Path chk = job.resolve("chk-7");
        // the commit lock of a repair in place: flock on its directory, held by another process
        Process holder = new ProcessBuilder("flock", "-x", chk.toString(), "-c", "echo held; exec sleep 60")
                .redirectErrorStream(true).start();
        try {
            assertEquals("held", new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream())).readLine());
            CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1), tmp.getRoot().toPath().resolve("log"));
            fail("deleted while a repair holds " + chk);
        } catch (CheckpointSurgeonException x) {
            assertEquals(x.getMessage(), CheckpointSurgeonException.Code.LOCKED, x.code());
            assertTrue(x.getMessage(), x.getMessage().contains(chk + " is locked by another repair"));
        } finally {
            holder.destroyForcibly().waitFor();
        }
        assertTrue(Files.exists(job.resolve("shared").resolve("orphan")));
        // a repair's lock object (Flink file systems) is no orphan, and blocks while it exists
        Path lock = chk.resolve(io.checkpointsurgeon.flink.RemoteCheckpoint.LOCK_NAME);
        Files.write(lock, new byte[] {'x'});
        old(lock);
        try {
            CheckpointSurgeon.deleteOrphans(List.of(job.getParent()), List.of(), Duration.ofHours(1), tmp.getRoot().toPath().resolve("log"));
            fail("deleted while " + lock + " exists");
        } catch (CheckpointSurgeonException x) {
            assertTrue(x.getMessage(), x.getMessage().contains(lock + " exists"));
        }
        assertTrue(Files.exists(lock));
        assertTrue(Files.exists(job.resolve("shared").resolve("orphan")));
    }
}
