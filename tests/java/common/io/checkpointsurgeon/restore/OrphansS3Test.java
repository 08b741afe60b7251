package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.OrphanReport;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.S3ProxyServer;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.junit.AfterClass;
import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * {@code orphans} and {@code recover} on S3: a real job (RocksDB incremental, {@code num-retained}
 * 3) checkpoints into S3Proxy (its own JVM on 127.0.0.1) through Flink's S3 file system loaded as
 * a plugin, as in {@code S3CheckpointTest}. Orphans are planted next to its checkpoints; the
 * expected set is computed here from a plain recursive listing and the references of each
 * retained {@code _metadata}, not by the scan under test.
 */
public class OrphansS3Test {
    private static final String BUCKET = "orphans";

    private static Path work;
    private static S3ProxyServer s3proxy;
    private static Path confDir;
    private static Path pluginsDir;

    @BeforeClass
    public static void startS3() throws Exception {
        String pluginJar = System.getProperty("s3.plugin.jar");
        String proxyClasspath = System.getProperty("s3proxy.classpath");
        Assume.assumeTrue("no S3 plugin in this build", pluginJar != null && proxyClasspath != null);
        work = Files.createTempDirectory("checkpoint-surgeon-orphans-s3");
        s3proxy = S3ProxyServer.start(proxyClasspath, work, BUCKET);
        confDir = S3ProxyServer.flinkConf(work.resolve("conf"), s3proxy.endpoint(), System.getProperty("flink.version", ""));
        pluginsDir = S3ProxyServer.pluginsDir(pluginJar);
        CheckpointSurgeon.configureFileSystems(confDir, pluginsDir);
    }

    @AfterClass
    public static void stopS3() throws Exception {
        if (s3proxy != null) s3proxy.close();
        if (work != null) TestFiles.deleteRecursively(work);
    }

    private static Configuration conf(String run) {
        Configuration c = FlinkConf.checkpointing("rocksdb", "s3://" + BUCKET + "/checkpoints",
                "s3://" + BUCKET + "/savepoints", "100ms", 3);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.inlineThreshold(c, "0");
        FlinkConf.set(c, "FIFO", "state.backend.rocksdb.compaction.style");
        return c;
    }

    private static FileSystem fs() throws IOException {
        return FileSystem.get(URI.create("s3://" + BUCKET + "/"));
    }

    /** Every object below {@code dir} with its size, by a plain recursive listing. */
    private static Map<String, Long> objects(String dir) throws IOException {
        Map<String, Long> out = new TreeMap<>();
        FileStatus[] entries = fs().listStatus(new org.apache.flink.core.fs.Path(dir));
        for (FileStatus s : entries == null ? new FileStatus[0] : entries) {
            if (s.isDir()) out.putAll(objects(s.getPath().toString()));
            else out.put(s.getPath().toString(), s.getLen());
        }
        return out;
    }

    /**
     * {@link #objects} once two listings a second apart agree: the cancelled job's cluster may still
     * discard a subsumed checkpoint while it shuts down (a listing then meets a vanished prefix).
     */
    private static Map<String, Long> settledObjects(String dir) throws Exception {
        Map<String, Long> last = null;
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            Map<String, Long> now;
            try {
                now = objects(dir);
            } catch (java.io.FileNotFoundException e) {
                now = null;
            }
            if (now != null && now.equals(last)) return now;
            last = now;
            Thread.sleep(1000);
        }
        throw new AssertionError(dir + " kept changing for 60 s after the job ended");
    }

    /** The retained checkpoints of a job directory (those with a {@code _metadata}), oldest first. */
    private static List<String> retained(Map<String, Long> objects) {
        List<String> out = new ArrayList<>();
        for (String o : objects.keySet()) {
            if (o.endsWith("/_metadata") && o.matches(".*/chk-\\d+/_metadata")) out.add(o.substring(0, o.length() - 10));
        }
        out.sort((a, b) -> Long.compare(id(a), id(b)));
        return out;
    }

    private static long id(String chk) {
        return Long.parseLong(chk.substring(chk.lastIndexOf("/chk-") + 5));
    }

    /** What a checkpoint's {@code _metadata} references, read by the library from a local copy of it. */
    private static Set<String> refs(String chk) throws Exception {
        Path local = Files.createTempFile(work, "metadata", "");
        try (InputStream in = fs().open(new org.apache.flink.core.fs.Path(chk + "/_metadata"))) {
            Files.write(local, in.readAllBytes());
        }
        Set<String> out = new TreeSet<>();
        for (StateFile f : CheckpointSurgeon.references(local)) {
            out.add(f.kind() == StateFile.Kind.RELATIVE ? chk + "/" + f.path() : f.path());
        }
        return out;
    }

    private static void put(String path, byte[] data) throws IOException {
        try (OutputStream out = fs().create(new org.apache.flink.core.fs.Path(path), FileSystem.WriteMode.NO_OVERWRITE)) {
            out.write(data);
        }
    }

    private static CliProcess.Result cli(String... args) throws Exception {
        List<String> a = new ArrayList<>(List.of(args));
        a.addAll(List.of("--flink-conf", confDir.toString(), "--plugins", pluginsDir.toString()));
        return CliProcess.withFlink(a.toArray(new String[0])).run();
    }

    @Test
    public void orphansOnS3ListAndDeleteOnlyThePlantedFilesAndRecoverNamesTheNextCheckpoint() throws Exception {
        MiniClusterJob.Result job = NumbersJob.midStream(conf("s3"), "s3", "op", 3, NumbersJob.Ending.CANCEL, 5);
        String jobDir = job.checkpoint().substring(0, job.checkpoint().lastIndexOf('/'));
        assertTrue(jobDir, jobDir.startsWith("s3://" + BUCKET + "/checkpoints/"));
        Map<String, Long> before = settledObjects(jobDir);
        List<String> kept = retained(before);
        assertEquals(kept.toString(), 3, kept.size());
        Set<String> referenced = new TreeSet<>();
        for (String chk : kept) referenced.addAll(refs(chk));
        assertTrue("the checkpoints reference shared/ files: " + referenced,
                referenced.stream().anyMatch(p -> p.startsWith(jobDir + "/shared/")));
        // what the job itself left unreferenced (an aborted checkpoint's files), by this listing
        Set<String> natural = new TreeSet<>(before.keySet());
        natural.removeIf(p -> p.endsWith("/_metadata"));
        natural.removeAll(referenced);

        // planted: a copy of a shared file, a file of an aborted checkpoint, a taskowned file, a
        // staged _metadata of this tool; and a file outside checkpoint storage, never an orphan
        String sharedFile = referenced.stream().filter(p -> p.startsWith(jobDir + "/shared/")).findFirst().get();
        byte[] sst;
        try (InputStream in = fs().open(new org.apache.flink.core.fs.Path(sharedFile))) {
            sst = in.readAllBytes();
        }
        List<String> planted = List.of(jobDir + "/shared/" + UUID.randomUUID(), jobDir + "/chk-999/" + UUID.randomUUID(),
                jobDir + "/taskowned/" + UUID.randomUUID(), kept.get(0) + "/_metadata.tmp-" + UUID.randomUUID());
        for (String p : planted) put(p, sst);
        String notStorage = jobDir + "/notes.txt";
        put(notStorage, "not checkpoint storage".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        Set<String> expected = new TreeSet<>(natural);
        expected.addAll(planted);

        // the library: exactly those, each with the size the store lists; the kept files name a checkpoint
        Map<String, Long> withPlanted = objects(jobDir);
        OrphanReport r = CheckpointSurgeon.orphansAt(List.of(jobDir + "/"), List.of(), Duration.ZERO, 4);
        Set<String> listed = new TreeSet<>();
        for (OrphanReport.Entry e : r.orphans()) {
            listed.add(e.path());
            assertEquals(e.path() + " (planted " + planted.contains(e.path()) + ", " + sst.length + " bytes)",
                    withPlanted.get(e.path()), (Long) e.size());
        }
        assertEquals(expected, listed);
        assertEquals(List.of(), r.deleteBlockers());
        for (OrphanReport.Entry e : r.kept()) assertTrue(e.path(), referenced.contains(e.path()));
        assertEquals(referenced.size(), r.kept().size());
        System.out.println("orphans on S3: " + listed.size() + " (" + natural.size() + " left by the job), "
                + r.kept().size() + " kept, " + r.filesScanned() + " objects in " + r.directoriesScanned() + " listings");

        // refused, nothing deleted, no log: chk-999 (no _metadata) changed less than --older-than ago
        // (the library in this JVM: each CLI process costs seconds of S3A start-up)
        Path refusedLog = work.resolve("refused.log");
        try {
            CheckpointSurgeon.deleteOrphansAt(List.of(jobDir), List.of(), Duration.ofHours(1), refusedLog, 4);
            throw new AssertionError("deleted while a chk-* without _metadata is young");
        } catch (io.checkpointsurgeon.CheckpointSurgeonException e) {
            assertEquals(io.checkpointsurgeon.CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains(jobDir + "/chk-999 has no _metadata and changed"));
        }
        assertFalse(Files.exists(refusedLog));
        assertEquals("nothing deleted", withPlanted.keySet(), objects(jobDir).keySet());
        // a savepoint being written, given itself as the root: in progress as well
        String savepoint = jobDir.substring(0, jobDir.indexOf("/checkpoints/")) + "/savepoints/savepoint-0a1b2c-0123456789ab";
        put(savepoint + "/" + UUID.randomUUID(), sst);
        try {
            CheckpointSurgeon.deleteOrphansAt(List.of(savepoint), List.of(), Duration.ofHours(1), refusedLog, 4);
            throw new AssertionError("deleted in a savepoint without _metadata that changed just now");
        } catch (io.checkpointsurgeon.CheckpointSurgeonException e) {
            assertEquals(io.checkpointsurgeon.CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains(savepoint + " has no _metadata and changed"));
        }
        assertFalse(Files.exists(refusedLog));
        // local and Flink paths are not mixed in one run
        try {
            CheckpointSurgeon.orphansAt(List.of(jobDir, work.toString()), List.of(), Duration.ZERO, 4);
            throw new AssertionError("a local and an S3 root were accepted together");
        } catch (io.checkpointsurgeon.CheckpointSurgeonException e) {
            assertEquals(io.checkpointsurgeon.CheckpointSurgeonException.Code.INVALID_ARGUMENT, e.code());
        }

        // the CLI deletes exactly those, logged; the referenced objects and notes.txt remain
        Path log = work.resolve("deletions.log");
        CliProcess.Result del = cli("orphans", jobDir, "--older-than", "0s", "--unsafe-allow-young", "--delete",
                "--deletion-log", log.toString(), "--list-parallelism", "4");
        assertEquals(del.output, 0, del.exitCode);
        String logText = Files.readString(log);
        System.out.println("deletion log of " + getClass().getSimpleName() + ":\n" + logText);
        Set<String> logged = new TreeSet<>();
        for (String line : logText.split("\n")) {
            if (line.startsWith("deleted\t")) logged.add(line.substring(line.lastIndexOf('\t') + 1));
        }
        assertEquals(expected, logged);
        Map<String, Long> after = objects(jobDir);
        Set<String> remaining = new TreeSet<>(before.keySet());
        remaining.removeAll(natural);
        remaining.add(notStorage);
        assertEquals(remaining, after.keySet());
        for (String p : referenced) assertTrue(p + " kept", after.containsKey(p));
        assertFalse("chk-999 is gone, its prefix too", fs().exists(new org.apache.flink.core.fs.Path(jobDir + "/chk-999")));
        assertEquals(List.of(), CheckpointSurgeon.orphansAt(List.of(jobDir), List.of(), Duration.ZERO, 4).orphans());

        // recover: the newest restores; with a file only the newest references deleted, the next one
        assertTrue(CheckpointSurgeon.recoverAt(List.of(jobDir), Map.of(), 4).newestRestores());
        String newest = kept.get(2);
        String next = kept.get(1);
        Set<String> onlyNewest = refs(newest);
        onlyNewest.removeAll(refs(next));
        onlyNewest.removeAll(refs(kept.get(0)));
        String victim = onlyNewest.stream().filter(p -> p.contains("/shared/")).findFirst()
                .orElse(onlyNewest.iterator().next());
        assertTrue(fs().delete(new org.apache.flink.core.fs.Path(victim), false));
        CliProcess.Result rec = cli("recover", jobDir, "--list-parallelism", "4");
        System.out.println("recover on S3:\n" + rec.output);
        assertEquals(rec.output, 4, rec.exitCode);
        assertTrue(rec.output, rec.output.contains("BROKEN     " + newest));
        assertTrue(rec.output, rec.output.contains(victim + ": missing"));
        assertTrue(rec.output, rec.output.contains("RESTORES   " + next));
        assertTrue(rec.output, rec.output.contains("execution.savepoint.path: " + next));
        // the job restores from what it printed, after the deletion
        NumbersJob.runToEnd(conf("restored"), "restored", "op", next);
    }

    /**
     * A copy of a real incremental checkpoint whose absolute handles name another directory (as a
     * job that named its storage differently than the roots): the same shared/<uuid> are listed but
     * no reference matches them. A blocker; --delete refuses and deletes nothing.
     */
    @Test
    public void rootsNamedDifferentlyThanTheJobBlockDeletion() throws Exception {
        Path src = TestFiles.fixture("keyed-all-incremental");
        String jobDir = "s3://" + BUCKET + "/misnamed/job";
        List<Path> files;
        try (var s = Files.walk(src)) {
            files = s.filter(Files::isRegularFile).collect(java.util.stream.Collectors.toList());
        }
        for (Path f : files) put(jobDir + "/" + src.relativize(f), Files.readAllBytes(f));
        Map<String, Long> before = objects(jobDir);
        assertEquals(files.size(), before.size());
        Thread.sleep(2000); // S3 keeps whole seconds: the _metadata must be older than the scan

        OrphanReport r = CheckpointSurgeon.orphansAt(List.of(jobDir), List.of(), Duration.ZERO, 4);
        assertTrue(r.deleteBlockers().toString(), r.deleteBlockers().stream().anyMatch(b -> b.startsWith(jobDir + "/chk-")
                && b.contains("name the storage differently") && b.contains(jobDir + "/shared/")));
        try {
            OrphanReport d = CheckpointSurgeon.deleteOrphansAtUnsafeAge(List.of(jobDir), List.of(), Duration.ZERO,
                    work.resolve("misnamed.log"), 4);
            throw new AssertionError("deleted " + d.deleted().size() + " of " + files.size() + " files with the roots"
                    + " named differently than the job");
        } catch (io.checkpointsurgeon.CheckpointSurgeonException e) {
            assertEquals(io.checkpointsurgeon.CheckpointSurgeonException.Code.VALIDATION, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("give the roots as the job names them"));
        }
        assertEquals("nothing deleted", before, objects(jobDir));
        assertFalse(Files.exists(work.resolve("misnamed.log")));
    }
}
