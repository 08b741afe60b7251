package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.flink.StateFile;
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
 * {@code orphans} where the roots name the storage differently than the job did: a copy of a real
 * RocksDB incremental checkpoint whose absolute handles name the generator's directory, as a
 * volume mounted at another path would. No reference matches, yet the same {@code shared/<uuid>}
 * files are listed: a blocker, and {@code --delete} deletes nothing.
 */
public class OrphansMisnamedRootsTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @Test(timeout = 120_000)
    public void rootsNamedDifferentlyThanTheJobBlockDeletion() throws Exception {
        Path src = CheckpointSurgeonTest.FIXTURES.resolve("1.15.4").resolve("keyed-all-incremental");
        Path job = tmp.getRoot().toPath().toRealPath().resolve("mnt").resolve("job");
        List<Path> files;
        try (var s = Files.walk(src)) {
            files = s.filter(Files::isRegularFile).collect(Collectors.toList());
        }
        long old = System.currentTimeMillis() - 3 * 3600_000L;
        for (Path f : files) {
            Path to = job.resolve(src.relativize(f).toString());
            Files.createDirectories(to.getParent());
            Files.copy(f, to);
            Files.setLastModifiedTime(to, FileTime.fromMillis(old));
        }
        Path chk3 = job.resolve("chk-3");
        String absolute = CheckpointSurgeon.references(chk3).stream().filter(f -> f.kind() == StateFile.Kind.FILE)
                .map(StateFile::path).filter(p -> p.contains("/shared/")).findFirst().orElseThrow();
        assertTrue(absolute, !absolute.contains(job.toString()));

        Path log = tmp.getRoot().toPath().resolve("log");
        try {
            OrphanReport d = CheckpointSurgeon.deleteOrphans(List.of(job), List.of(), Duration.ofHours(1), log);
            fail("deleted " + d.deleted().size() + " of " + files.size() + " files with the roots named differently"
                    + " than the job");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().startsWith("nothing deleted: ") && e.getMessage().contains("give the roots"));
        }

        OrphanReport r = CheckpointSurgeon.orphans(List.of(job), List.of(), Duration.ofHours(1));
        String blocker = r.deleteBlockers().stream().filter(b -> b.contains("name the storage differently"))
                .findFirst().orElse(null);
        assertTrue("report shows the blocker: " + r.deleteBlockers(), blocker != null);
        assertTrue(blocker, blocker.contains("/_metadata references ") && blocker.contains(job.resolve("shared").toString()));
        for (Path f : files) assertTrue(f + " deleted", Files.isRegularFile(job.resolve(src.relativize(f).toString())));
        assertTrue(Files.notExists(log));
    }

    @Test
    public void suffixIsTheLastTwoComponents() {
        assertEquals("shared/a-b", MisnamedRoots.suffix("hdfs://nn:8020/cp/job/shared/a-b"));
        assertEquals("chk-7/x", MisnamedRoots.suffix("/checkpoints/job/chk-7/x"));
        assertEquals(null, MisnamedRoots.suffix("x"));
        assertEquals(null, MisnamedRoots.suffix("/x"));
    }
}
