package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code orphans} and {@code recover} on checkpoints real jobs wrote (Flink 1.20 only: 2.x has no
 * LEGACY restore mode): RocksDB incremental,
 * {@code num-retained} 3. Job A runs, is restarted from its newest checkpoint (a new job
 * directory), and its first run's checkpoint directories are then removed the way a retention
 * script removes them; job B was restored in LEGACY mode from A's first run and keeps
 * referencing its {@code shared/} files by absolute path.
 */
public class OrphansRecoverTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static Configuration conf(Path work, String run) {
        Configuration c = FlinkConf.checkpointing("rocksdb", work.resolve("checkpoints").toUri().toString(),
                work.resolve(run + "-savepoints").toUri().toString(), "100ms", 3);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.inlineThreshold(c, "0");
        // no merging of SST files: a later checkpoint keeps referencing every earlier SST file, so
        // which files a LEGACY restore still uses does not depend on when RocksDB compacts
        FlinkConf.set(c, "FIFO", "state.backend.rocksdb.compaction.style");
        return c;
    }

    private static List<Path> retained(Path jobDir) throws IOException {
        try (Stream<Path> s = Files.list(jobDir)) {
            return s.filter(p -> p.getFileName().toString().startsWith("chk-") && Files.isRegularFile(p.resolve("_metadata")))
                    .sorted(Comparator.comparingLong(p -> Long.parseLong(p.getFileName().toString().substring(4))))
                    .collect(Collectors.toList());
        }
    }

    /** The local files a checkpoint references (relative ones resolved), by the library's collector. */
    private static Set<Path> refs(Path chk) throws Exception {
        Set<Path> out = new TreeSet<>();
        for (StateFile f : CheckpointSurgeon.references(chk)) {
            out.add(f.kind() == StateFile.Kind.RELATIVE ? chk.resolve(f.path()).toRealPath()
                    : CheckpointSurgeon.localPath(f.path()).toAbsolutePath().normalize());
        }
        return out;
    }

    private static Set<Path> files(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).map(p -> p.toAbsolutePath().normalize()).collect(Collectors.toCollection(TreeSet::new));
        }
    }

    private static void deleteTree(Path p) throws IOException {
        try (Stream<Path> s = Files.walk(p)) {
            for (Path q : s.sorted(Comparator.reverseOrder()).collect(Collectors.toList())) Files.delete(q);
        }
    }

    @Test
    public void orphansKeepWhatALegacyRestoreUsesAndDeleteOnlyTheRest() throws Exception {
        Path work = tmp.getRoot().toPath().toRealPath();
        Path baseA = work.resolve("a");
        Path baseB = work.resolve("b");
        MiniClusterJob.Result a1 = NumbersJob.midStream(conf(baseA, "a1"), "a1", "op", 5, NumbersJob.Ending.CANCEL);
        Path a1Dir = a1.checkpointPath().getParent();
        List<Path> a1Kept = retained(a1Dir);
        assertEquals(a1Kept.toString(), 3, a1Kept.size());
        // B: restored from A's oldest retained checkpoint in LEGACY mode (it keeps referencing A's shared/ files)
        Configuration cb = conf(baseB, "b");
        FlinkConf.restoreFrom(cb, a1Kept.get(0).toUri().toString());
        FlinkConf.set(cb, "LEGACY", "execution.savepoint-restore-mode", "execution.state-recovery.claim-mode");
        MiniClusterJob.Result b = NumbersJob.midStream(cb, "b", "op", 2, NumbersJob.Ending.CANCEL);
        Path bDir = b.checkpointPath().getParent();
        // A restarted from its newest checkpoint (NO_CLAIM: a new job directory with full copies)
        Configuration ca2 = conf(baseA, "a2");
        FlinkConf.restoreFrom(ca2, a1.checkpointPath().toUri().toString());
        MiniClusterJob.Result a2 = NumbersJob.midStream(ca2, "a2", "op", 2, NumbersJob.Ending.CANCEL);
        Path a2Dir = a2.checkpointPath().getParent();
        Set<Path> bRefs = new TreeSet<>();
        for (Path chk : retained(bDir)) bRefs.addAll(refs(chk));
        Set<Path> a2Refs = new TreeSet<>();
        for (Path chk : retained(a2Dir)) a2Refs.addAll(refs(chk));
        for (Path chk : a1Kept) {
            assertTrue("B references nothing in " + chk, bRefs.stream().noneMatch(p -> p.startsWith(chk)));
        }
        // a retention script removes the first run's checkpoints: its shared/ files stay behind
        for (Path chk : a1Kept) deleteTree(chk);
        Set<Path> a1Shared = files(a1Dir.resolve("shared"));
        Set<Path> usedByB = new TreeSet<>(a1Shared);
        usedByB.retainAll(bRefs);
        assertFalse("B's checkpoints reference A's shared/ files (LEGACY restore): " + bRefs, usedByB.isEmpty());

        // Without B's directory, the files B uses are orphans of A's base directory
        CliProcess.Result alone = CliProcess.withFlink("orphans", baseA.toString(), "--json").run();
        assertEquals(alone.output, 4, alone.exitCode);
        for (Path p : usedByB) assertTrue(p + " listed as orphan without B's root", alone.output.contains("\"" + p + "\""));

        CliProcess.Result text = CliProcess.withFlink("orphans", baseA.toString(), "--also-referenced-by", baseB.toString()).run();
        assertEquals(text.output, 4, text.exitCode);
        System.out.println("orphans report:\n" + text.output);
        // With it, they are kept and named with B's checkpoint; the rest is deleted, logged
        // what no retained checkpoint of A or B references, before the deletion
        Set<Path> unreferenced = files(baseA);
        unreferenced.removeIf(p -> p.getFileName().toString().equals("_metadata"));
        unreferenced.removeAll(bRefs);
        unreferenced.removeAll(a2Refs);
        Path log = work.resolve("deletions.log");
        CliProcess.Result del = CliProcess.withFlink("orphans", baseA.toString(), "--also-referenced-by", baseB.toString(),
                "--older-than", "0s", "--unsafe-allow-young", "--delete", "--deletion-log", log.toString()).run();
        assertEquals(del.output, 0, del.exitCode);
        String logText = Files.readString(log);
        System.out.println("deletion log of " + getClass().getSimpleName() + ":\n" + logText);
        Set<Path> expectedGone = new TreeSet<>(a1Shared);
        expectedGone.removeAll(usedByB);
        expectedGone.removeAll(a2Refs);
        assertFalse("A's first run left shared/ files no one uses", expectedGone.isEmpty());
        for (Path p : expectedGone) {
            assertFalse(p + " deleted", Files.exists(p));
            assertTrue(p + " logged", logText.contains("\t" + p + "\n"));
        }
        for (Path p : usedByB) assertTrue(p + " kept", Files.exists(p));
        for (Path p : files(a2Dir)) assertFalse(p + " of A's retained checkpoints is not in the log", logText.contains(p.toString()));
        // besides those, only files no retained checkpoint of A or B references (e.g. of a checkpoint
        // aborted by the cancellation), never a _metadata
        for (String line : logText.split("\n")) {
            if (!line.startsWith("deleted\t")) continue;
            Path p = Path.of(line.substring(line.lastIndexOf('\t') + 1));
            assertTrue(line, unreferenced.contains(p));
        }
        System.out.println("orphans --delete:\n" + del.output);

        // Both jobs restore from each of their retained checkpoints
        int run = 0;
        for (Path chk : concat(retained(a2Dir), retained(bDir))) {
            NumbersJob.runToEnd(conf(work.resolve("restores"), "restore-" + run), "restore-" + run++, "op", chk);
        }
        // A second report finds nothing more to delete
        CliProcess.Result again = CliProcess.withFlink("orphans", baseA.toString(), "--also-referenced-by", baseB.toString()).run();
        assertEquals(again.output, 0, again.exitCode);
    }

    @Test
    public void recoverNamesTheNewestRestorableCheckpointAndWhyNewerOnesAreNot() throws Exception {
        Path work = tmp.getRoot().toPath().toRealPath();
        MiniClusterJob.Result a = NumbersJob.midStream(conf(work.resolve("r"), "r"), "r", "op", 4, NumbersJob.Ending.CANCEL);
        List<Path> kept = retained(a.checkpointPath().getParent());
        assertEquals(3, kept.size());
        Path third = kept.get(0), second = kept.get(1), newest = kept.get(2);
        Set<Path> onlyNewest = refs(newest);
        onlyNewest.removeAll(refs(third));
        onlyNewest.removeAll(refs(second));
        Path victim = onlyNewest.stream().filter(p -> p.toString().contains("/shared/")).findFirst()
                .orElse(onlyNewest.iterator().next());
        Files.delete(victim);
        byte[] md = Files.readAllBytes(second.resolve("_metadata"));
        Files.write(second.resolve("_metadata"), java.util.Arrays.copyOf(md, md.length / 2));

        CliProcess.Result r = CliProcess.withFlink("recover", work.resolve("r").toString()).run();
        assertEquals(r.output, 4, r.exitCode);
        System.out.println("recover:\n" + r.output);
        assertTrue(r.output, r.output.contains("BROKEN     " + newest.toUri().toString().replaceAll("/$", "")));
        assertTrue(r.output, r.output.contains(victim + ": missing"));
        assertTrue(r.output, r.output.contains("BROKEN     " + second.toUri().toString().replaceAll("/$", "")));
        String restore = third.toUri().toString().replaceAll("/$", "");
        assertTrue(r.output, r.output.contains("RESTORES   " + restore));
        assertTrue(r.output, r.output.contains("execution.savepoint.path: " + restore));
        assertTrue(r.output, r.output.contains("flink run -s " + restore));
        CliProcess.Result json = CliProcess.withFlink("recover", work.resolve("r").toString(), "--json").run();
        assertTrue(json.output, json.output.contains("\"newestRestorable\": \"" + restore + "\""));
        // the job restores from what it printed
        NumbersJob.runToEnd(conf(work.resolve("restores"), "restored"), "restored", "op", Path.of(java.net.URI.create(restore)));
    }

    @Test
    public void aFileMergingFileWithAnySegmentReferencedIsKeptWhole() throws Exception {
        Path work = tmp.getRoot().toPath().toRealPath();
        Configuration c = conf(work.resolve("fm"), "fm");
        FlinkConf.fileMerging(c);
        MiniClusterJob.Result a = NumbersJob.midStream(c, "fm", "op", 4, NumbersJob.Ending.CANCEL);
        List<Path> kept = retained(a.checkpointPath().getParent());
        // the byte ranges of each physical file that the retained checkpoints reference
        java.util.Map<Path, Long> referencedBytes = new java.util.TreeMap<>();
        for (Path chk : kept) {
            java.util.Set<String> seen = new java.util.HashSet<>();
            for (StateFile f : CheckpointSurgeon.references(chk)) {
                if (f.kind() != StateFile.Kind.SEGMENT || !seen.add(f.path() + "@" + f.start())) continue;
                referencedBytes.merge(CheckpointSurgeon.localPath(f.path()).toAbsolutePath().normalize(), f.size(), Long::sum);
            }
        }
        assertFalse("segments referenced", referencedBytes.isEmpty());
        Set<Path> partly = new TreeSet<>();
        for (java.util.Map.Entry<Path, Long> e : referencedBytes.entrySet()) {
            if (Files.size(e.getKey()) > e.getValue()) partly.add(e.getKey());
        }
        assertFalse("a physical file only partly referenced (seen: 7 of 30)", partly.isEmpty());
        CliProcess.Result del = CliProcess.withFlink("orphans", work.resolve("fm").toString(), "--older-than", "0s",
                "--unsafe-allow-young", "--delete", "--deletion-log", work.resolve("fm.log").toString()).run();
        assertEquals(del.output, 0, del.exitCode);
        for (Path p : referencedBytes.keySet()) assertTrue(p + " kept whole", Files.exists(p));
        String log = Files.exists(work.resolve("fm.log")) ? Files.readString(work.resolve("fm.log")) : "";
        for (Path p : referencedBytes.keySet()) assertFalse(p + " not in the log", log.contains(p.toString()));
        for (Path chk : kept) {
            NumbersJob.runToEnd(conf(work.resolve("restores"), "fm-" + chk.getFileName()), "fm-" + chk.getFileName(), "op", chk);
        }
    }

    private static List<Path> concat(List<Path> x, List<Path> y) {
        List<Path> out = new ArrayList<>(x);
        out.addAll(y);
        return out;
    }
}
