package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The keyed state of a RocksDB incremental checkpoint that was copied away from where Flink wrote
 * it (the fixtures' {@code keyed-all-incremental}: its {@code _metadata} names the shared SST files
 * by absolute paths into the generator's directory): read at the same place below the job
 * directory it was copied to, said on the progress listener, and never through a link that
 * leaves the job directory. Before, every state read 0 entries, each file "refusing to read it".
 * Likewise the change logs of the changelog fixtures.
 */
public class MovedCheckpointTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private Path copy(String version) throws Exception {
        return copy(version, "keyed-all-incremental");
    }

    private Path copy(String version, String fixture) throws Exception {
        Path src = KeyedReportTest.fixture(version, fixture);
        Path job = tmp.getRoot().toPath().toRealPath().resolve(version).resolve(fixture).resolve("job");
        List<Path> files;
        try (Stream<Path> s = Files.walk(src)) {
            files = s.filter(Files::isRegularFile).collect(Collectors.toList());
        }
        for (Path f : files) {
            Path to = job.resolve(src.relativize(f).toString());
            Files.createDirectories(to.getParent());
            Files.copy(f, to);
        }
        return job;
    }

    @Test(timeout = 120_000)
    public void aCopiedIncrementalCheckpointIsReadPerStateBelowItsJobDirectory() throws Exception {
        List<String> said = new ArrayList<>();
        ProgressListener before = CheckpointSurgeon.progressListener();
        CheckpointSurgeon.setProgressListener(new ProgressListener() {
            @Override
            public void message(String text) {
                said.add(text);
            }
        });
        try {
            for (String v : KeyedReportTest.VERSIONS) {
                Path job = copy(v);
                List<String> chks;
                try (Stream<Path> s = Files.list(job)) {
                    chks = s.map(c -> c.getFileName().toString()).filter(c -> c.startsWith("chk-")).sorted()
                            .collect(Collectors.toList());
                }
                assertEquals(v + ": " + chks, 2, chks.size());
                for (String chk : chks) {
                    said.clear();
                    KeyedReport r = CheckpointSurgeon.inspectKeyed(job.resolve(chk));
                    KeyedReport.Operator op = KeyedReportTest.job(r);
                    TreeSet<String> expected = new TreeSet<>(KeyedReportTest.V2_STATES);
                    expected.add(KeyedReportTest.DROPPED);
                    assertEquals(v + " " + chk, expected,
                            op.states().stream().map(KeyedReport.State::name).collect(Collectors.toCollection(TreeSet::new)));
                    for (KeyedReport.State s : op.states()) {
                        String what = v + " " + chk + " " + s.name();
                        assertEquals(what, List.of(KeyedReport.SnapshotFormat.ROCKSDB_FILES), s.formats());
                        assertTrue(what + ": " + s.total(), s.total().complete() && s.total().entries() > 0);
                    }
                    for (KeyedReport.Handle h : op.handles()) {
                        assertEquals(v + " " + chk, null, h.error());
                        assertEquals(v + " " + chk, List.of(), h.notes());
                    }
                    assertEquals(said.toString(), 1, said.size());
                    assertTrue(said.get(0), said.get(0).contains("the checkpoint was moved or copied")
                            && said.get(0).contains("/checkpoint-surgeon-fixtures/" + v + "/") && said.get(0).contains(job + "/"));
                }
            }
        } finally {
            CheckpointSurgeon.setProgressListener(before);
        }
    }

    /**
     * The changelog fixtures (Flink 1.20.3) name their {@code dstl} log files by absolute path below
     * the old job directory ({@code changelog/<job>/dstl/<uuid>}): copied, every state is counted
     * from the log; with the log directory gone and its files copied beside {@code _metadata}, too.
     */
    @Test(timeout = 120_000)
    public void aCopiedChangelogCheckpointIsCountedFromItsLogWhereverTheLogWasCopied() throws Exception {
        for (String name : List.of("keyed-changelog", "keyed-changelog-compressed")) {
            Path job = copy("1.20.3", name);
            Path chk;
            try (Stream<Path> s = Files.list(job)) {
                chk = s.filter(c -> c.getFileName().toString().startsWith("chk-")).findFirst().orElseThrow();
            }
            assertCountedFromTheLog(name, CheckpointSurgeon.inspectKeyed(chk));
            List<Path> logs;
            try (Stream<Path> s = Files.walk(job.resolve("changelog"))) {
                logs = s.filter(Files::isRegularFile).collect(Collectors.toList());
            }
            assertTrue(name, !logs.isEmpty());
            for (Path log : logs) Files.move(log, chk.resolve(log.getFileName()));
            assertCountedFromTheLog(name + " flat", CheckpointSurgeon.inspectKeyed(chk));
        }
    }

    private static void assertCountedFromTheLog(String what, KeyedReport r) {
        KeyedReport.Operator op = KeyedReportTest.job(r);
        for (KeyedReport.Handle h : op.handles()) assertEquals(what, null, h.error());
        for (KeyedReport.State s : op.states()) {
            assertTrue(what + " " + s.name() + ": " + s.formats(), s.formats().contains(KeyedReport.SnapshotFormat.CHANGELOG));
            assertTrue(what + " " + s.name() + ": " + s.total(), s.total().entries() > 0);
        }
    }

    @Test(timeout = 120_000)
    public void aSharedFileThatIsALinkOutOfTheJobDirectoryIsNotRead() throws Exception {
        Path job = copy("1.20.3");
        Path victim;
        try (Stream<Path> s = Files.list(job.resolve("shared"))) {
            victim = s.filter(p -> {
                try {
                    return Files.size(p) > 1000;
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).sorted().findFirst().orElseThrow();
        }
        Path outside = Files.copy(victim, tmp.getRoot().toPath().resolve("outside"));
        Files.delete(victim);
        Files.createSymbolicLink(victim, outside);
        KeyedReport r = CheckpointSurgeon.inspectKeyed(job.resolve("chk-3"));
        List<String> notes = KeyedReportTest.job(r).handles().stream().flatMap(h -> h.notes().stream())
                .map(KeyedReport.Note::message).collect(Collectors.toList());
        assertTrue(notes.toString(), notes.stream().anyMatch(n -> n.contains(victim.getFileName().toString())
                && n.contains("symbolic link") && n.contains("refusing")));
    }
}
