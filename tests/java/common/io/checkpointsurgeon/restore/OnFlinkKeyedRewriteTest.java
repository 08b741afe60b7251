package io.checkpointsurgeon.restore;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code remove-keyed-state --on-flink}: the keyed state files of a canonical savepoint that this
 * lane's Flink wrote are rewritten by a Flink batch job on a MiniCluster in this JVM, and
 * {@code _metadata} is written by the client through the commit sequence. The result is the local
 * route's, file for file, and the incident's v2 restores from it with every value of {@code b},
 * every timer and the source's position exact ({@link KeyedSurgeryRestoreTest}'s job and checks).
 * A standalone cluster runs it in {@code OnFlinkStandaloneTest} (1.20).
 */
public class OnFlinkKeyedRewriteTest {
    @Rule
    public final TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void onAMiniClusterTheResultIsTheLocalRoutesAndRestores() throws Exception {
        Path work = tmp.newFolder("cs-onflink-mini").toPath();
        Path savepoint = KeyedSurgeryRestoreTest.v1(work, "m1", "hashmap", false, true);
        Path local = work.resolve("local");
        Path onFlink = work.resolve("on-flink");
        SurgeryPlan l = CheckpointSurgeon.apply(savepoint, Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a"),
                local);
        SurgeryPlan f = CheckpointSurgeon.apply(savepoint, Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a")
                .onFlink(StreamExecutionEnvironment.createLocalEnvironment(2)), onFlink);
        assertEquals(f.result().flinkValidation(), SurgeryPlan.Validation.Status.LOADED_BY_FLINK, f.result().validation().status());
        assertEquals(l.keyed().bytesRead(), f.keyed().bytesRead());
        assertEquals(l.keyed().bytesWritten(), f.keyed().bytesWritten());
        assertTrue("keyed state files were rewritten: " + f.keyed(), f.keyed().bytesWritten() > 0);
        // the same _metadata but for the new files' random names, and the same bytes in every file
        assertEquals(normalized(local), normalized(onFlink));
        assertEquals(List.of("b"), KeyedSurgeryRestoreTest.dataStates(onFlink));
        KeyedSurgeryRestoreTest.assertRestoredExact(work, "m1", "m2", KeyedSurgeryRestoreTest.Version.V2, onFlink, 2);
    }

    /** A task whose rewrite fails fails the job; the run then removes what it created, the output directory too. */
    @Test
    public void aFailedTaskFailsTheRunAndLeavesNothing() throws Exception {
        Path work = tmp.newFolder("cs-onflink-fail").toPath();
        Path savepoint = KeyedSurgeryRestoreTest.v1(work, "x1", "hashmap", false, true);
        Path copy = Files.createDirectories(work.resolve("copy"));
        try (Stream<Path> s = Files.list(savepoint)) {
            for (Path p : s.collect(Collectors.toList())) Files.copy(p, copy.resolve(p.getFileName()));
        }
        // every keyed state file's last key group loses its end mark: the meta info still reads (the
        // plan), the key groups do not (the tasks)
        Surgery removal = Surgery.removeKeyedState(Surgery.OperatorSelector.all(), "a");
        List<String> cut = new ArrayList<>();
        for (SurgeryPlan.NewStream n : CheckpointSurgeon.plan(copy, removal).newStreams()) {
            Path f = copy.resolve(Path.of(n.replaces()).getFileName().toString());
            try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f,
                    java.nio.file.StandardOpenOption.WRITE)) {
                ch.write(java.nio.ByteBuffer.wrap(new byte[] {0x7f, 0x7f, 0x7f}), ch.size() - 3);
            }
            cut.add(f.getFileName().toString());
        }
        assertEquals("both subtasks' keyed state files", 2, cut.size());
        CheckpointSurgeonException.Code local = null;
        try {
            CheckpointSurgeon.apply(copy, removal, work.resolve("out-local"));
            fail("a keyed state file without its end mark cannot be rewritten");
        } catch (CheckpointSurgeonException e) {
            local = e.code();
        }
        assertEquals("the local route's error is the native reader's", CheckpointSurgeonException.Code.FORMAT, local);
        Path out = work.resolve("out");
        List<String> messages = java.util.Collections.synchronizedList(new ArrayList<>());
        CheckpointSurgeon.setProgressListener(new io.checkpointsurgeon.ProgressListener() {
            @Override
            public void message(String text) {
                messages.add(text);
            }
        });
        try {
            CheckpointSurgeon.apply(copy, removal.onFlink(StreamExecutionEnvironment.createLocalEnvironment(2)), out);
            fail("a keyed state file without its end mark cannot be rewritten");
        } catch (CheckpointSurgeonException e) {
            assertEquals("the task's code, as on the local route: " + e.getMessage(), local, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("Flink job"));
            assertFalse("the code is not shown twice: " + e.getMessage(), e.getMessage().contains("[code "));
            assertTrue(e.getMessage(), cut.stream().anyMatch(e.getMessage()::contains));
            assertTrue(e.getMessage(), e.getMessage().endsWith("nothing was changed"));
        } finally {
            CheckpointSurgeon.setProgressListener(null);
        }
        // the new files were removed once the job had stopped (no task left to write one)
        assertTrue("the run waited for the job to stop: " + messages,
                messages.stream().anyMatch(m -> m.contains("the failed job") && m.contains("stopped")));
        assertFalse("the output directory the run created is gone", Files.exists(out));
    }

    /**
     * {@code _metadata} as Flink's model in text, each file name replaced by its content's
     * SHA-256 and the output directory by {@code OUT}: two outputs with equal bytes in equal places
     * give the same text.
     */
    static String normalized(Path out) throws Exception {
        Map<String, String> hashes = new TreeMap<>();
        try (Stream<Path> s = Files.list(out)) {
            for (Path p : s.collect(Collectors.toList())) {
                String name = p.getFileName().toString();
                if (name.equals("_metadata")) continue;
                byte[] d = MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p));
                StringBuilder hex = new StringBuilder();
                for (byte b : d) hex.append(String.format("%02x", b));
                hashes.put(name, "sha256:" + hex);
            }
        }
        String text = CheckpointSurgeon.describe(Files.readAllBytes(out.resolve("_metadata")));
        for (Map.Entry<String, String> e : hashes.entrySet()) text = text.replace(e.getKey(), e.getValue());
        assertFalse("describe names the files: " + text, hashes.isEmpty() || text.equals(
                CheckpointSurgeon.describe(Files.readAllBytes(out.resolve("_metadata")))));
        return text.replace(out.toString(), "OUT");
    }
}
