package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.junit.Assume.assumeTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.CheckpointSurgeonException.Code;
import io.checkpointsurgeon.Surgery;

import org.apache.flink.util.InstantiationUtil;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

/** What {@code repairHa} and {@code inspectHa} say about files they must not touch. */
public class HaGuardRailTest {

    private static final Surgery REMOVE_OFFSETS =
            Surgery.removeState(Surgery.OperatorSelector.uid(HaJobs.CONSUMER_UID), HaJobs.OFFSETS_STATE);

    /** The unrepaired HA file committed from a Flink 1.15.4 cluster (see its README). */
    static final String FIXTURE_VERSION = "1.15.4";

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private Path write(String name, byte[] bytes) throws Exception {
        Path p = tmp.getRoot().toPath().resolve(name);
        Files.write(p, bytes);
        return p;
    }

    /** repairHa must throw with the given code, mention the file, and leave the directory as it was. */
    private CheckpointSurgeonException assertRejected(Path file, Code code, String... messageParts) throws Exception {
        byte[] before = Files.readAllBytes(file);
        List<String> dirBefore = list(file.getParent());
        CheckpointSurgeonException e = null;
        try {
            CheckpointSurgeon.repairHa(file, REMOVE_OFFSETS, false);
            fail("repairHa accepted " + file);
        } catch (CheckpointSurgeonException x) {
            e = x;
        }
        assertEquals(e.toString(), code, e.code());
        assertTrue(e.getMessage(), e.getMessage().contains(file.toString()));
        for (String part : messageParts) {
            assertTrue("message should contain '" + part + "': " + e.getMessage(), e.getMessage().contains(part));
        }
        assertArrayEquals("the file is untouched", before, Files.readAllBytes(file));
        assertEquals("no backup or temp file left", dirBefore, list(file.getParent()));
        // inspectHa and the dry run reject it the same way.
        for (int i = 0; i < 2; i++) {
            try {
                if (i == 0) {
                    CheckpointSurgeon.inspectHa(file);
                } else {
                    CheckpointSurgeon.repairHa(file, REMOVE_OFFSETS, true);
                }
                fail("accepted " + file);
            } catch (CheckpointSurgeonException x) {
                assertEquals(x.toString(), code, x.code());
            }
        }
        return e;
    }

    private static List<String> list(Path dir) throws Exception {
        List<String> names = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.forEach(p -> names.add(p.getFileName().toString()));
        }
        names.sort(null);
        return names;
    }

    @Test
    public void randomBytesAreNotACompletedCheckpoint() throws Exception {
        byte[] junk = new byte[4096];
        new java.util.Random(42).nextBytes(junk);
        assertRejected(write("completedCheckpoint0123456789ab", junk), Code.FORMAT, "not a Java-serialized");
    }

    @Test
    public void emptyAndTruncatedFiles() throws Exception {
        assertRejected(write("completedCheckpointempty", new byte[0]), Code.FORMAT);
        // A valid Java serialization stream header, then nothing.
        assertRejected(write("completedCheckpointtruncated", new byte[] {(byte) 0xac, (byte) 0xed, 0, 5}), Code.FORMAT);
    }

    @Test
    public void anotherSerializedObjectIsNotACompletedCheckpoint() throws Exception {
        Path f = write("completedCheckpointabcdefabcdef",
                InstantiationUtil.serializeObject(new ArrayList<>(Arrays.asList("a", "b"))));
        assertRejected(f, Code.FORMAT, "java.util.ArrayList", "CompletedCheckpoint");
    }

    @Test
    public void aRetrievableHandleIsNotTheCheckpoint() throws Exception {
        // What ZooKeeper (or, Base64-encoded, a Kubernetes ConfigMap) holds: the handle to the HA file.
        Object handle = new org.apache.flink.runtime.state.RetrievableStreamStateHandle<>(
                new org.apache.flink.runtime.state.filesystem.FileStateHandle(
                        new org.apache.flink.core.fs.Path("file:/tmp/ha/completedCheckpoint0123456789ab"), 1234));
        Path f = write("zk-node-data", InstantiationUtil.serializeObject(handle));
        assertRejected(f, Code.FORMAT, "RetrievableStreamStateHandle");
    }

    @Test
    public void aMetadataFileIsNotACompletedCheckpoint() throws Exception {
        File fixtures = fixturesDir();
        assumeTrue("fixtures.dir is not set", fixtures != null);
        Path metadata = fixtures.toPath().resolve("stale-union-restore-1").resolve("_metadata");
        assumeTrue(metadata + " is missing", Files.exists(metadata));
        Path copy = write("_metadata", Files.readAllBytes(metadata));
        assertRejected(copy, Code.FORMAT);
    }

    /**
     * The committed HA file of Flink 1.15.4: its own version reads it; every other version must
     * refuse it with a clear version message instead of rewriting it.
     */
    @Test
    public void haFileOfAnotherFlinkVersion() throws Exception {
        Path dir = Paths.get(System.getProperty("fixtures.dir", "tests/fixtures/x")).getParent()
                .resolve(FIXTURE_VERSION).resolve("ha");
        Path fixture;
        try (Stream<Path> s = Files.list(dir)) {
            fixture = s.filter(p -> HaCluster.HA_FILE.matcher(p.getFileName().toString()).matches()).findFirst()
                    .orElseThrow(() -> new AssertionError("no completedCheckpoint file in " + dir));
        }
        Path copy = write(fixture.getFileName().toString(), Files.readAllBytes(fixture));
        String version = System.getProperty("flink.version");
        if (FIXTURE_VERSION.equals(version)) {
            // Its own version reads it: the job after three restores, 4 x 2^3 union entries.
            CheckpointSurgeon.HaFileInfo info = CheckpointSurgeon.haFileInfo(copy);
            assertEquals(Files.size(fixture), info.fileBytes());
            assertEquals(4, info.checkpointId());
            assertEquals(32, ZooKeeperHaRepairTest.unionElements(CheckpointSurgeon.inspectHa(copy)));
            return;
        }
        // Java serialization alone would accept it (the serialVersionUIDs never change): the tool
        // must compare the classes' fields and refuse. 1.16 added CompletedCheckpoint.restoredProps.
        assertRejected(copy, Code.VALIDATION, "another Flink version", "Flink " + version, "restoredProps",
                "Flink jars of the cluster that wrote it");
    }

    static File fixturesDir() {
        String dir = System.getProperty("fixtures.dir");
        return dir == null || dir.isEmpty() ? null : new File(dir);
    }
}
