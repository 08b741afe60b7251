package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.stream.Collectors;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@link CheckpointSurgeon#doctor(java.util.concurrent.Future, String)}, the doctor whose checks of
 * the checkpoint's files run while another thread still reads the report: the same findings in the
 * same order as {@code doctor(report, checkpoint)}, and a checkpoint that cannot be read fails as
 * inspect's read says, not as the file checks (which read {@code _metadata} too) would.
 */
public class DoctorAheadTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /**
     * job/chk-7, a copy of a checkpoint real Flink wrote, with one finding of each file check: a
     * state file deleted, a staged {@code _metadata.tmp-*} of a killed repair, an hour-old orphan.
     */
    private Path checkpoint() throws Exception {
        Path job = tmp.getRoot().toPath().toRealPath().resolve("job");
        Path chk = Files.createDirectories(job.resolve("chk-7"));
        List<Path> stateFiles = new ArrayList<>();
        try (var s = Files.list(CheckpointSurgeonTest.fixture("operator-state-files"))) {
            for (Path f : s.sorted().collect(Collectors.toList())) {
                Files.copy(f, chk.resolve(f.getFileName()));
                if (!f.getFileName().toString().equals("_metadata")) stateFiles.add(chk.resolve(f.getFileName()));
            }
        }
        Files.delete(stateFiles.get(0));
        Files.write(chk.resolve("_metadata.tmp-0123abcd-0123-8c5a-8bcd-0123456789ab"), new byte[] {1, 2, 3});
        Path orphan = Files.createDirectories(job.resolve("shared")).resolve("orphan");
        Files.write(orphan, new byte[123]);
        Files.setLastModifiedTime(orphan, FileTime.fromMillis(System.currentTimeMillis() - 2 * 3600_000L));
        return chk;
    }

    private static List<String> described(List<CheckpointSurgeon.Finding> found) {
        List<String> out = new ArrayList<>();
        for (CheckpointSurgeon.Finding f : found) {
            out.add(f.severity() + " " + f.code() + " " + f.message() + " fix=" + f.fix() + " or=" + f.alternatives());
        }
        return out;
    }

    @Test(timeout = 120_000)
    public void theFindingsAreThoseOfTheReportReadFirstInTheSameOrder() throws Exception {
        Path chk = checkpoint();
        List<String> expected = described(CheckpointSurgeon.doctor(CheckpointSurgeon.inspect(chk), chk.toString()));
        List<String> codes = new ArrayList<>();
        for (String e : expected) codes.add(e.split(" ")[1]);
        assertTrue(codes.toString(), codes.containsAll(List.of("STATE_FILE_MISSING", "LEFTOVER_FILES", "ORPHAN_FILES")));

        // the report is not read yet when the doctor is asked: it waits for it
        CountDownLatch go = new CountDownLatch(1);
        FutureTask<InspectReport> report = new FutureTask<>(() -> {
            go.await();
            return CheckpointSurgeon.inspect(chk.toString());
        });
        new Thread(report, "reader").start();
        assertFalse(report.isDone());
        new Thread(() -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            go.countDown();
        }, "starter").start();
        List<CheckpointSurgeon.Finding> found = CheckpointSurgeon.doctor(report, chk.toString());
        assertEquals(expected, described(found));
        // a report already read gives the same
        assertEquals(expected, described(CheckpointSurgeon.doctor(report, chk.toString())));
    }

    @Test(timeout = 120_000)
    public void aMetadataThatCannotBeReadFailsAsInspectSaysNotAsTheFileChecks() throws Exception {
        Path chk = checkpoint();
        byte[] all = Files.readAllBytes(chk.resolve("_metadata"));
        Files.write(chk.resolve("_metadata"), java.util.Arrays.copyOf(all, all.length / 2));
        CheckpointSurgeonException expected = null;
        try {
            CheckpointSurgeon.inspect(chk);
            fail("a truncated _metadata was read");
        } catch (CheckpointSurgeonException e) {
            expected = e;
        }
        FutureTask<InspectReport> report = new FutureTask<>(() -> CheckpointSurgeon.inspect(chk.toString()));
        new Thread(report, "reader").start();
        try {
            CheckpointSurgeon.doctor(report, chk.toString());
            fail("doctor of a truncated _metadata succeeded");
        } catch (CheckpointSurgeonException e) {
            assertEquals(expected.code(), e.code());
            assertEquals(expected.getMessage(), e.getMessage());
        }
    }

    @Test(timeout = 120_000)
    public void anUncheckedFailureOfTheReadIsThrownAsItIs() throws Exception {
        Path chk = checkpoint();
        IllegalStateException thrown = new IllegalStateException("the reader failed");
        FutureTask<InspectReport> report = new FutureTask<>(() -> {
            throw thrown;
        });
        report.run();
        try {
            CheckpointSurgeon.doctor(report, chk.toString());
            fail("doctor succeeded without a report");
        } catch (IllegalStateException e) {
            assertSame(thrown, e);
        }
    }
}
