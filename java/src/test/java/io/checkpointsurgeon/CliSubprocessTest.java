package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeonTest.Result;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import io.checkpointsurgeon.internal.CommitFaults;
import org.junit.Test;

/**
 * Every command as a user runs it: {@code java -jar checkpoint-surgeon.jar ...} in its own JVM, on
 * checkpoints that real Flink wrote, checking output, files and exit codes (0 ok, 1 usage,
 * 2 invalid input).
 */
public class CliSubprocessTest {
    static final String STALE = "topic-partition-offset-states";

    static Result cli(String... args) throws IOException, InterruptedException {
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-jar", jar));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile("cli", ".out"), err = Files.createTempFile("cli", ".err");
        Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        int code = p.waitFor();
        return new Result(code, Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    @Test
    public void everyCommandHasHelp() throws Exception {
        for (String[] c : new String[][] {{"--help"}, {"inspect", "--help"}, {"doctor", "--help"},
                {"remove-state", "--help"}, {"remove-operator", "--help"}, {"dedupe-union", "--help"},
                {"ha", "--help"}, {"ha", "list", "--help"}, {"ha", "repair", "--help"},
                {"ha", "remove-checkpoint", "--help"}, {"kafka", "--help"},
                {"kafka", "migrate-legacy", "--help"}, {"kafka", "drop-topic", "--help"}, {"kafka", "set-offsets", "--help"},
                {"diff", "--help"}, {"history", "--help"}, {"remove-keyed-state", "--help"},
                {"rename-keyed-state", "--help"}}) {
            Result r = cli(c);
            assertEquals(String.join(" ", c) + ": " + r.err, 0, r.code);
            assertTrue(r.out, r.out.startsWith("Usage: checkpoint-surgeon"));
        }
        Result v = cli("--version");
        assertEquals(0, v.code);
        assertTrue(v.out.startsWith("checkpoint-surgeon "));
    }

    /**
     * remove-keyed-state and rename-keyed-state as a user runs them: the plan with the keyed bytes,
     * its JSON, the repair into a new directory (read back without the state, with the renamed
     * one), a state that is not there, a bad --threads, and --on-flink without Flink.
     */
    @Test
    public void keyedSurgeryCommands() throws Exception {
        String in = CheckpointSurgeonTest.fixture("keyed-all-savepoint-heap").toString();
        Result plan = cli("remove-keyed-state", in, "--state", "value-state");
        assertEquals(plan.err, 0, plan.code);
        assertTrue(plan.out, plan.out.contains("remove-keyed-state") && plan.out.contains("keyed state: ")
                && plan.out.contains("nothing written"));
        Result json = cli("remove-keyed-state", in, "--state", "value-state", "--json", "--threads", "1");
        assertTrue(json.out, json.out.contains("\"bytesRead\"") && json.out.contains("\"threads\": 1"));
        Path work = Files.createTempDirectory("keyed-cli");
        Path out = work.resolve("removed");
        Result apply = cli("remove-keyed-state", in, "--state", "value-state", "--apply", "--output", out.toString());
        assertEquals(apply.err, 0, apply.code);
        Result after = cli("inspect", out.toString(), "--keyed");
        assertEquals(after.err, 0, after.code);
        assertTrue(after.out, !after.out.contains("value-state") && after.out.contains("map-state"));
        Path renamed = work.resolve("renamed");
        Result rename = cli("rename-keyed-state", in, "--state", "map-state", "--to", "map-state-v1", "--apply",
                "--output", renamed.toString());
        assertEquals(rename.err, 0, rename.code);
        assertTrue(cli("inspect", renamed.toString(), "--keyed").out.contains("map-state-v1"));
        Result missing = cli("remove-keyed-state", in, "--state", "nope");
        assertEquals(missing.err, 2, missing.code);
        assertTrue(missing.err, missing.err.contains("NOTHING_SELECTED"));
        assertEquals(1, cli("remove-keyed-state", in, "--state", "value-state", "--threads", "0").code);
        // --on-flink: --jobmanager goes with it, and without Flink's jars it says what is missing, writing nothing
        Result stray = cli("remove-keyed-state", in, "--state", "value-state", "--jobmanager", "localhost:8081");
        assertEquals(stray.err, 1, stray.code);
        assertTrue(stray.err, stray.err.contains("--jobmanager goes with --on-flink"));
        Path onFlink = work.resolve("on-flink");
        Result noFlink = cli("remove-keyed-state", in, "--state", "value-state", "--apply", "--output",
                onFlink.toString(), "--on-flink", "--jobmanager", "localhost:8081");
        assertTrue(noFlink.err, noFlink.code != 0 && noFlink.err.contains("FLINK_MISSING"));
        assertTrue("nothing is left of the run", !Files.exists(onFlink));
    }

    /**
     * {@code ha --kubernetes}: its options are checked before anything is read, and without Flink's
     * flink-kubernetes jar on the class path (java -jar) it says what is missing.
     */
    @Test
    public void haKubernetesOptions() throws Exception {
        Path dir = Files.createTempDirectory("ha");
        Result noId = cli("ha", "list", dir.toString(), "--kubernetes");
        assertEquals(noId.err, 1, noId.code);
        assertTrue(noId.err, noId.err.contains("--kubernetes needs --cluster-id (kubernetes.cluster-id)"));
        Result stray = cli("ha", "list", dir.toString(), "--namespace", "ns");
        assertEquals(stray.err, 1, stray.code);
        assertTrue(stray.err, stray.err.contains("--kubeconfig and --namespace go with --kubernetes"));
        Result both = cli("ha", "repair", dir.toString(), "--state", STALE, "--apply", "--kubernetes", "--cluster-id",
                "c", "--zookeeper-quorum", "localhost:2181");
        assertEquals(both.err, 1, both.code);
        assertTrue(both.err, both.err.contains("--kubernetes or --zookeeper-quorum, not both"));
        Result noJar = cli("ha", "repair", dir.toString(), "--state", STALE, "--apply", "--kubernetes", "--cluster-id", "c");
        assertEquals(noJar.err, 2, noJar.code);
        assertTrue(noJar.err, noJar.err.contains("error [FLINK_MISSING]: Kubernetes HA needs Flink's flink-kubernetes jar"));
        // ha remove-checkpoint: the store is named, one of them; without Flink's jars it says what is missing
        Result noStore = cli("ha", "remove-checkpoint", "--checkpoint-id", "7");
        assertEquals(noStore.err, 1, noStore.code);
        assertTrue(noStore.err, noStore.err.contains("give --zookeeper-quorum HOSTS or --kubernetes"));
        Result twoStores = cli("ha", "remove-checkpoint", "--checkpoint-id", "7", "--kubernetes", "--cluster-id", "c",
                "--zookeeper-quorum", "localhost:2181");
        assertEquals(twoStores.err, 1, twoStores.code);
        Result noZk = cli("ha", "remove-checkpoint", "--checkpoint-id", "7", "--zookeeper-quorum", "localhost:2181", "--apply");
        assertEquals(noZk.err, 2, noZk.code);
        assertTrue(noZk.err, noZk.err.contains("error [FLINK_MISSING]: reading ZooKeeper HA needs Flink's jars"));
    }

    @Test
    public void inspectAndDoctor() throws Exception {
        String in = CheckpointSurgeonTest.fixture("stale-union").toString();
        Result table = cli("inspect", in);
        assertEquals(table.err, 0, table.code);
        assertTrue(table.out, table.out.contains(STALE) && table.out.contains("UNION"));
        Result json = cli("inspect", "--json", in);
        assertEquals(0, json.code);
        assertTrue(json.out.trim().startsWith("{") && json.out.contains("\"metadataVersion\": 3"));
        Result doctor = cli("doctor", in);
        assertEquals("an ERROR finding gates with exit 4", 4, doctor.code);
        assertTrue(doctor.out, doctor.out.contains("STALE_UNION_STATE") && doctor.out.contains("remove-state"));
        Result healthy = cli("doctor", CheckpointSurgeonTest.fixture("keyed-hashmap").toString());
        assertTrue(healthy.out, healthy.out.contains("no problems found"));
        assertEquals(0, healthy.code);
    }

    @Test
    public void theFixThatDoctorPrintsWorks() throws Exception {
        Path work = Files.createTempDirectory("cli-doctor");
        Path in = work.resolve("chk-5");
        Files.createDirectories(in);
        Files.copy(CheckpointSurgeonTest.fixture("stale-union").resolve("_metadata"), in.resolve("_metadata"));
        String fix = cli("doctor", in.toString()).out.lines().filter(l -> l.trim().startsWith("fix: "))
                .findFirst().orElseThrow().trim().substring("fix: ".length()).split(" {3}")[0];
        String[] words = fix.split(" ");
        assertEquals("checkpoint-surgeon", words[0]);
        Result r = cli(java.util.Arrays.copyOfRange(words, 1, words.length));
        assertEquals(r.err, 0, r.code);
        Result after = cli("doctor", in + "-repaired");
        assertTrue(after.out, after.out.contains("no problems found"));
    }

    @Test
    public void surgeryCommandsPlanThenApply() throws Exception {
        Path in = CheckpointSurgeonTest.fixture("operator-state-files");
        byte[] before = Files.readAllBytes(in.resolve("_metadata"));
        Path out = Files.createTempDirectory("cli").resolve("out");

        Result plan = cli("remove-state", in.toString(), "--state", "union-list");
        assertEquals(plan.err, 0, plan.code);
        assertTrue(plan.out, plan.out.contains("purge-state") && plan.out.contains("nothing written"));
        assertFalse(Files.exists(out));

        Result apply = cli("remove-state", in.toString(), "--state", "union-list", "--apply", "--output", out.toString(), "--json");
        assertEquals(apply.err, 0, apply.code);
        assertTrue(apply.out, apply.out.contains("\"metadataPath\""));
        assertTrue(Files.isRegularFile(out.resolve("_metadata")));
        assertTrue(cli("inspect", out.toString()).out.contains("split-list"));
        assertFalse(cli("inspect", out.toString()).out.contains("union-list"));

        Path out2 = Files.createTempDirectory("cli").resolve("out");
        Result dedupe = cli("dedupe-union", in.toString(), "--state", "union-list", "--apply", "--output", out2.toString());
        assertEquals(dedupe.err, 0, dedupe.code);

        String opId = CheckpointSurgeon.inspect(in).operators().stream()
                .filter(o -> !o.stateTotals().isEmpty() && o.stateTotals().stream().anyMatch(t -> t.name().equals("union-list")))
                .findFirst().orElseThrow().id();
        Path out3 = Files.createTempDirectory("cli").resolve("out");
        Result rmop = cli("remove-operator", in.toString(), "--operator-id", opId, "--apply", "--output", out3.toString());
        assertEquals(rmop.err, 0, rmop.code);
        assertFalse(cli("inspect", out3.toString()).out.contains(opId));

        Path copy = Files.createTempDirectory("cli-inplace");
        try (var s = Files.list(in)) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) Files.copy(p, copy.resolve(p.getFileName()));
        }
        Result inPlace = cli("remove-state", copy.toString(), "--state", "broadcast-map", "--apply", "--in-place");
        assertEquals(inPlace.err, 0, inPlace.code);
        assertTrue(inPlace.out, inPlace.out.contains("backup of the old _metadata"));
        assertFalse(cli("inspect", copy.toString()).out.contains("broadcast-map"));

        assertTrue(java.util.Arrays.equals(before, Files.readAllBytes(in.resolve("_metadata"))));
    }

    @Test
    public void exitCodes() throws Exception {
        String in = CheckpointSurgeonTest.fixture("stale-union").toString();
        assertEquals(1, cli("inspect").code);
        assertEquals(1, cli("no-such-command").code);
        assertEquals(1, cli("remove-state", in, "--state", STALE, "--apply").code);
        assertEquals(1, cli("remove-operator", in).code);
        Result nothing = cli("remove-state", in, "--state", "no-such-state");
        assertEquals(2, nothing.code);
        assertTrue(nothing.err, nothing.err.contains("selects nothing"));
        Path garbage = Files.createTempFile("garbage", "_metadata");
        Files.write(garbage, new byte[] {0x49, 0x60, 0x67, 0x2D, 0, 0, 0, 3, 1});
        Result bad = cli("inspect", garbage.toString());
        assertEquals(2, bad.code);
        assertTrue(bad.err, bad.err.contains(garbage.toString()) && bad.err.contains("at byte 8"));
        assertEquals(2, cli("inspect", "/no/such/checkpoint").code);
        Path notEmpty = Files.createTempDirectory("cli-notempty");
        Files.writeString(notEmpty.resolve("x"), "x");
        assertEquals(2, cli("remove-state", in, "--state", STALE, "--apply", "--output", notEmpty.toString()).code);
    }

    /** The messages of the commit sequence's refusals: each names what is wrong, exit 2. */
    @Test
    public void outputAndLockRefusalsSayWhatIsWrong() throws Exception {
        Path in = CheckpointSurgeonTest.fixture("operator-state-files");
        Path tmp = Files.createTempDirectory("cs-cli-refusals");

        Path dangling = tmp.resolve("dangling");
        Files.createSymbolicLink(dangling, tmp.resolve("nowhere"));
        Result r = cli("remove-state", in.toString(), "--state", "union-list", "--apply", "--output", dangling.toString());
        assertEquals(r.err, 2, r.code);
        assertTrue(r.err, r.err.contains("dangling symbolic link"));
        assertFalse(Files.exists(tmp.resolve("nowhere")));

        Path withDir = tmp.resolve("chk");
        Files.createDirectories(withDir.resolve("_metadata"));
        r = cli("inspect", withDir.toString());
        assertEquals(r.err, 2, r.code);
        assertTrue(r.err, r.err.contains("_metadata is a directory"));

        // A second repair while the first holds the lock (it stalls at validation through a test hook).
        Path copy = Files.createDirectory(tmp.resolve("copy"));
        try (var s = Files.list(in)) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) Files.copy(p, copy.resolve(p.getFileName()));
        }
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process first = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dcheckpointsurgeon.test.stallAt=validate", "-cp", withFaults(jar), CommitFaults.class.getName(),
                "remove-state", copy.toString(), "--state", "union-list", "--apply", "--in-place")
                .redirectErrorStream(true).start();
        try {
            var lines = new java.io.BufferedReader(new java.io.InputStreamReader(first.getInputStream()));
            String line;
            while ((line = lines.readLine()) != null && !line.contains("stalling at validate")) {
                // wait until the first run holds the lock
            }
            r = cli("remove-state", copy.toString(), "--state", "split-list", "--apply", "--in-place");
            assertEquals(r.err, 2, r.code);
            assertTrue(r.err, r.err.contains("[LOCKED]") && r.err.contains(copy.toRealPath().toString())
                    && r.err.contains("pid " + first.pid()) && r.err.contains("stallAt=validate"));
        } finally {
            first.destroyForcibly().waitFor();
        }
        // the kernel released the killed run's lock: the next run goes through
        r = cli("remove-state", copy.toString(), "--state", "split-list", "--apply", "--in-place");
        assertEquals(r.err, 0, r.code);

        // An unwritable directory, as an unprivileged user (root writes everywhere).
        Path setpriv = Path.of("/usr/bin/setpriv");
        org.junit.Assume.assumeTrue(Files.isExecutable(setpriv) && "root".equals(System.getProperty("user.name")));
        Path shared = Files.createDirectories(Path.of("/tmp", "cs-cli-unwritable-" + ProcessHandle.current().pid()));
        Files.setPosixFilePermissions(shared, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Path jarCopy = shared.resolve("cs.jar");
        Files.copy(Path.of(jar), jarCopy);
        Path readable = Files.createDirectory(shared.resolve("chk"));
        try (var s = Files.list(in)) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) Files.copy(p, readable.resolve(p.getFileName()));
        }
        // a java the unprivileged user can start (this JVM's may live under /root)
        String java = null;
        for (String candidate : List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "/usr/bin/java")) {
            Process probe = new ProcessBuilder(setpriv.toString(), "--reuid=65534", "--regid=65534", "--clear-groups",
                    candidate, "-version").redirectErrorStream(true).start();
            probe.getInputStream().readAllBytes();
            if (probe.waitFor() == 0) {
                java = candidate;
                break;
            }
        }
        org.junit.Assume.assumeTrue("no java the user nobody can start", java != null);
        List<String> cmd = List.of(setpriv.toString(), "--reuid=65534", "--regid=65534", "--clear-groups",
                java, "-jar", jarCopy.toString(),
                "remove-state", readable.toString(), "--state", "union-list", "--apply", "--output",
                shared.resolve("out").toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(text, 2, p.waitFor());
        assertTrue(text, text.contains("directory not writable"));
        assertFalse(Files.exists(shared.resolve("out")));
    }

    /**
     * What a repair killed with SIGKILL after its stage step leaves (its staged _metadata.tmp-* and
     * new state files, found by this tool's naming): doctor reports it with the command that removes
     * it, the next repair there mentions it, clean-leftovers lists it, refuses while a repair runs
     * there, and with --apply deletes exactly that, logging each file. Files of this tool's naming
     * that a _metadata or a backup references are never leftovers.
     */
    @Test
    public void aKilledRepairsLeftoversAreReportedMentionedAndCleaned() throws Exception {
        Path dir = copyOfOperatorStateFiles("cs-cli-leftovers");
        // an in-place repair that switched: its new files are referenced by _metadata, the old one by the backup
        assertEquals(0, cli("remove-state", dir.toString(), "--state", "broadcast-map", "--apply", "--in-place").code);
        List<String> before = CheckpointSurgeonTest.listing(dir);
        assertEquals(List.of(), CheckpointSurgeon.leftovers(dir));

        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process killed = stalled(jar, "place", "remove-state", dir.toString(), "--state", "union-list", "--apply", "--in-place");
        killed.destroyForcibly().waitFor();
        List<Path> left = CheckpointSurgeon.leftovers(dir);
        List<String> added = new ArrayList<>(CheckpointSurgeonTest.listing(dir));
        added.removeAll(before);
        assertEquals("the leftovers are exactly what the killed run added", added,
                left.stream().map(p -> p.getFileName().toString()).sorted().collect(java.util.stream.Collectors.toList()));
        assertTrue(added.toString(), added.size() > 1 && added.stream().anyMatch(n -> n.startsWith("_metadata.tmp-")));

        Result doctor = cli("doctor", dir.toString());
        assertTrue(doctor.out, doctor.out.contains("WARNING LEFTOVER_FILES: " + left.size() + " file(s) in " + dir));
        assertTrue(doctor.out, doctor.out.contains("fix: checkpoint-surgeon clean-leftovers " + dir + " --apply"));

        Result listed = cli("clean-leftovers", dir.toString());
        assertEquals(listed.err, 0, listed.code);
        for (String n : added) assertTrue(listed.out, listed.out.contains("  " + n + "\n"));
        assertTrue(listed.out, listed.out.contains("nothing deleted"));
        assertEquals(added.size(), CheckpointSurgeon.leftovers(dir).size());

        // while a repair holds the directory's lock, nothing is deleted
        Process running = stalled(jar, "validate", "remove-state", dir.toString(), "--state", "split-list", "--apply",
                "--in-place");
        try {
            Result locked = cli("clean-leftovers", dir.toString(), "--apply");
            assertEquals(locked.err, 2, locked.code);
            assertTrue(locked.err, locked.err.contains("[LOCKED]"));
        } finally {
            running.destroyForcibly().waitFor();
        }
        // that kill left a stage of its own: the next repair mentions both runs' files, and goes on
        Result next = cli("remove-state", dir.toString(), "--state", "union-list", "--apply", "--in-place");
        assertEquals(next.err, 0, next.code);
        assertTrue(next.err, next.err.contains("note: " + dir.toRealPath() + " holds ")
                && next.err.contains("clean-leftovers " + dir.toRealPath() + " --apply"));
        List<Path> now = CheckpointSurgeon.leftovers(dir);
        assertTrue(now.size() > left.size());

        Result cleaned = cli("clean-leftovers", dir.toString(), "--apply");
        assertEquals(cleaned.err, 0, cleaned.code);
        for (Path p : now) {
            assertFalse(p + " deleted", Files.exists(p));
            assertTrue(cleaned.err, cleaned.err.contains("deleted " + p));
        }
        assertEquals(List.of(), CheckpointSurgeon.leftovers(dir));
        assertFalse(cli("doctor", dir.toString()).out.contains("LEFTOVER_FILES"));
        // every file the live _metadata and the backups reference is still there
        for (String f : CheckpointSurgeonTest.listing(dir)) {
            if (f.startsWith("_metadata")) assertEquals(0, cli("inspect", dir.resolve(f).toString()).code);
        }
        assertEquals(0, cli("doctor", dir.toString()).code);
    }

    /**
     * SIGTERM after the run switched and returned, before the CLI printed its outcome (stalled at
     * its first write to stdout): the shutdown hook still says which _metadata is the repaired one
     * and where the old one is kept. Before, the process exited 143 and said nothing at all.
     */
    @Test
    public void aSignalBetweenTheSwitchAndTheReportStillNamesTheRepairAndItsBackup() throws Exception {
        Path dir = copyOfOperatorStateFiles("cs-cli-report");
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dcheckpointsurgeon.test.stallAt=report", "-cp", withFaults(jar), CommitFaults.class.getName(),
                "remove-state", dir.toString(), "--state", "union-list", "--apply", "--in-place")
                .redirectErrorStream(true).redirectOutput(dir.resolveSibling("cli.out").toFile()).start();
        // (the output goes to a file: Process.destroy closes the pipes it would be read from)
        String text = "";
        for (long end = System.nanoTime() + 60_000_000_000L; !text.contains("stalling at report") && p.isAlive()
                && System.nanoTime() < end; text = Files.readString(dir.resolveSibling("cli.out"), StandardCharsets.UTF_8)) {
            Thread.sleep(20);
        }
        assertTrue(text, text.contains("stalling at report"));
        p.destroy(); // SIGTERM
        int code = p.waitFor();
        text = Files.readString(dir.resolveSibling("cli.out"), StandardCharsets.UTF_8);
        assertEquals(text, 143, code);
        List<String> backups;
        try (var s = Files.list(dir)) {
            backups = s.map(f -> f.getFileName().toString()).filter(n -> n.startsWith("_metadata.backup-"))
                    .collect(java.util.stream.Collectors.toList());
        }
        assertEquals(backups.toString(), 1, backups.size());
        Path real = dir.toRealPath();
        assertTrue(text, text.contains("interrupted after the switch, which completed: " + real
                + "/_metadata is the repaired one (the old one is kept as " + real.resolve(backups.get(0)) + ")"));
        assertEquals("the repair is live", 0, cli("inspect", dir.toString()).code);
        assertFalse(cli("inspect", dir.toString()).out.contains("union-list"));
    }

    /**
     * A --output run killed before its switch leaves an output with no _metadata: the doctor of that
     * output names what is there and the command that removes it (before: only "No such file"), and
     * once removed the output takes the repair.
     */
    @Test
    public void theDoctorOfAKilledOutputNamesItsLeftovers() throws Exception {
        Path in = CheckpointSurgeonTest.fixture("operator-state-files");
        Path out = Files.createTempDirectory("cs-cli-killed-output").resolve("out");
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process killed = stalled(jar, "place", "remove-state", in.toString(), "--state", "union-list", "--apply", "--output",
                out.toString());
        killed.destroyForcibly().waitFor();
        List<Path> left = CheckpointSurgeon.leftovers(out);
        assertTrue(left.toString(), left.size() > 1 && !Files.exists(out.resolve("_metadata")));
        Result doctor = cli("doctor", out.toString());
        assertEquals(doctor.out + doctor.err, 4, doctor.code);
        assertTrue(doctor.out, doctor.out.contains("ERROR LEFTOVER_FILES: no _metadata, only what a repair left: " + left.size()
                + " file(s) in " + out.toRealPath()));
        assertTrue(doctor.out, doctor.out.contains("fix: checkpoint-surgeon clean-leftovers " + out + " --apply"));
        assertEquals(0, cli("clean-leftovers", out.toString(), "--apply").code);
        assertEquals(0, cli("remove-state", in.toString(), "--state", "union-list", "--apply", "--output", out.toString()).code);
    }

    /** A copy of the fixture operator-state-files as {@code chk-5} in a new temporary directory. */
    private static Path copyOfOperatorStateFiles(String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix).resolve("chk-5");
        Files.createDirectory(dir);
        try (var s = Files.list(CheckpointSurgeonTest.fixture("operator-state-files"))) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) Files.copy(p, dir.resolve(p.getFileName()));
        }
        return dir;
    }

    /** The CLI stalled at a commit step (the tests' fault seam), once it reached it. */
    private static Process stalled(String jar, String step, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dcheckpointsurgeon.test.stallAt=" + step, "-cp", withFaults(jar), CommitFaults.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        var lines = new java.io.BufferedReader(new java.io.InputStreamReader(p.getInputStream()));
        for (String line; (line = lines.readLine()) != null; ) {
            if (line.contains("stalling at " + step)) return p;
        }
        throw new AssertionError("the run ended before " + step + ": exit " + p.waitFor());
    }

    /** An Error inside a command (here an OutOfMemoryError injected at a step) exits 3 with one line. */
    @Test
    public void anErrorExitsThreeWithOneLineAndUndoesTheRun() throws Exception {
        Path in = CheckpointSurgeonTest.fixture("operator-state-files");
        Path out = Files.createTempDirectory("cs-cli-oom").resolve("out");
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Dcheckpointsurgeon.test.failAt=oom:place", "-cp", withFaults(jar), CommitFaults.class.getName(),
                "remove-state", in.toString(), "--state", "union-list", "--apply", "--output", out.toString())
                .redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(text, 3, p.waitFor());
        assertEquals(text, 1, text.trim().split("\n").length);
        assertTrue(text, text.contains("OutOfMemoryError"));
        assertFalse("the output the run created is removed", Files.exists(out));

        Result bad = cli("remove-state", in.toString(), "--operator-id", "not-hex", "--state", "union-list");
        assertEquals(bad.err, 1, bad.code);
    }

    /** doctor gates: exit 4 on findings at or above --fail-on, and every printed command runs as printed. */
    @Test
    public void doctorExitCodesAndRunnableFixes() throws Exception {
        Path tmp = Files.createTempDirectory("cs-cli-doctor");
        Path stale = tmp.resolve("chk stale");
        Files.createDirectory(stale);
        try (var s = Files.list(CheckpointSurgeonTest.fixture("stale-union"))) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) Files.copy(p, stale.resolve(p.getFileName()));
        }
        Result r = cli("doctor", stale.toString());
        assertEquals(r.out + r.err, 4, r.code);
        assertEquals(4, cli("doctor", "--fail-on", "warning", stale.toString()).code);
        assertEquals(0, cli("doctor", CheckpointSurgeonTest.fixture("operator-state-files").toString()).code);
        assertEquals(1, cli("doctor", "--fail-on", "sometimes", stale.toString()).code);
        List<String> commands = new ArrayList<>();
        for (String line : r.out.split("\n")) {
            String t = line.trim();
            if (t.startsWith("fix: ")) commands.add(t.substring(5));
            if (t.startsWith("or:  ")) commands.add(t.substring(5));
        }
        assertEquals(r.out, 2, commands.size());
        String jar = Path.of(System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar"))
                .toAbsolutePath().toString();
        Path bin = Files.createDirectory(tmp.resolve("bin"));
        Path launcher = bin.resolve("checkpoint-surgeon");
        Files.writeString(launcher, "#!/bin/sh\nexec '" + Path.of(System.getProperty("java.home"), "bin", "java")
                + "' -jar '" + jar + "' \"$@\"\n");
        launcher.toFile().setExecutable(true);
        for (String c : commands) {
            ProcessBuilder pb = new ProcessBuilder("sh", "-c", c).directory(tmp.toFile()).redirectErrorStream(true);
            pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
            Process q = pb.start();
            String text = new String(q.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(c + "\n" + text, 0, q.waitFor());
        }
        assertTrue(Files.exists(tmp.resolve("chk stale-repaired").resolve("_metadata")));
        assertTrue(Files.exists(tmp.resolve("chk stale-deduped").resolve("_metadata")));

        // A deleted state file is reported by name, with exit 4.
        Path files = tmp.resolve("files");
        Files.createDirectory(files);
        Path victim = null;
        try (var s = Files.list(CheckpointSurgeonTest.fixture("operator-state-files"))) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) {
                Files.copy(p, files.resolve(p.getFileName()));
                if (!p.getFileName().toString().equals("_metadata")) victim = files.resolve(p.getFileName());
            }
        }
        Files.delete(victim);
        Result missing = cli("doctor", files.toString());
        assertEquals(missing.out + missing.err, 4, missing.code);
        assertTrue(missing.out, missing.out.contains(victim.toString()) && missing.out.contains("STATE_FILE_MISSING"));
    }

    /** --version names both versions; a native library of another version than the jar is refused. */
    @Test
    public void aNativeLibraryOfAnotherVersionIsRefused() throws Exception {
        Result v = cli("--version");
        assertEquals(v.err, 0, v.code);
        assertTrue(v.out, v.out.matches("(?s)checkpoint-surgeon (\\S+) \\(native library \\1 for linux-\\w+\\).*"));
        // The jar's version as another build would have it: its BuildVersion class, compiled with
        // version 9.9.9, ahead of the jar's on the class path.
        Path other = Files.createTempDirectory("cs-other-version");
        Path source = other.resolve("src/io/checkpointsurgeon/internal/BuildVersion.java");
        Files.createDirectories(source.getParent());
        Files.writeString(source, "package io.checkpointsurgeon.internal;\n"
                + "final class BuildVersion { static String version() { return \"9.9.9\"; } }\n");
        // the build's javac where this JVM has none (the Java 11 runtime the plain lane runs on is a JRE)
        javax.tools.JavaCompiler compiler = javax.tools.ToolProvider.getSystemJavaCompiler();
        if (compiler != null) {
            assertEquals(0, compiler.run(null, null, null, "--release", "11", "-d", other.toString(), source.toString()));
        } else {
            String javac = System.getProperty("checkpointsurgeon.javac");
            assertNotNull("no Java compiler in this JVM and no checkpointsurgeon.javac", javac);
            assertEquals(0, new ProcessBuilder(javac, "--release", "11", "-d", other.toString(), source.toString())
                    .inheritIO().start().waitFor());
        }
        String jar = System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar");
        Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                other + java.io.File.pathSeparator + jar, "io.checkpointsurgeon.cli.Cli", "inspect",
                CheckpointSurgeonTest.fixture("stale-union").toString()).redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(text, 2, p.waitFor());
        assertTrue(text, text.contains("[LIBRARY]") && text.contains("9.9.9") && text.contains("has version"));
    }

    /** The class path of the built jar and the tests' fault injection ({@link CommitFaults}, which then runs the CLI). */
    static String withFaults(String jar) throws Exception {
        return jar + java.io.File.pathSeparator
                + Path.of(CommitFaults.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    }
}
