package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.file.Path;
import org.junit.Test;

/**
 * Flink paths without Flink on the class path (this test source set has none): which paths go
 * through Flink's file systems, that local paths and file: URIs keep working natively, and the
 * error a remote path gives without Flink. The S3 route itself is tested with real Flink and an
 * S3 server in tests/java/common/io/checkpointsurgeon/s3/S3CheckpointTest.
 */
public class FlinkPathTest {
    static final Path FIXTURES = Path.of(System.getProperty("fixtures.root", "tests/fixtures"));

    @Test
    public void schemesOtherThanFileAreFlinkPaths() {
        for (String p : new String[] {"s3://b/chk-1", "s3a://b/x", "hdfs:///flink/chk-1", "gs://b/c", "oss://b/c"}) {
            assertTrue(p, CheckpointSurgeon.isFlinkPath(p));
        }
        for (String p : new String[] {"/tmp/chk-1", "chk-1", "file:/tmp/chk-1", "file:///tmp/chk-1", "C:\\chk", "a:b"}) {
            assertFalse(p, CheckpointSurgeon.isFlinkPath(p));
        }
    }

    /**
     * Whether a Flink path lies in another, as the commit sequence checks an output against the
     * checkpoint: normalized URIs, the scheme in any case, the path on a / boundary.
     */
    @Test
    public void flinkPathsInsideOthersAreFoundOnNormalizedUris() {
        String chk = "s3://bucket/checkpoints/job/chk-5";
        for (String inside : new String[] {chk, chk + "/", chk + "/sub", chk + "/a/b/c", "S3://bucket/checkpoints/job/chk-5/x",
                "s3://bucket//checkpoints/./job/chk-5/x", chk + "/x/../y", "s3://bucket/checkpoints/job/other/../chk-5/z"}) {
            assertTrue(inside, io.checkpointsurgeon.flink.FlinkFileSystems.within(inside, chk));
        }
        for (String outside : new String[] {"s3://bucket/checkpoints/job/chk-50", "s3://bucket/checkpoints/job/chk-5-repaired",
                "s3://other/checkpoints/job/chk-5/x", "gs://bucket/checkpoints/job/chk-5/x", chk + "/../chk-6",
                "file:/checkpoints/job/chk-5/x", "/checkpoints/job/chk-5/x"}) {
            assertFalse(outside, io.checkpointsurgeon.flink.FlinkFileSystems.within(outside, chk));
        }
        // an output that holds the checkpoint
        assertTrue(io.checkpointsurgeon.flink.FlinkFileSystems.within(chk, "s3://bucket/checkpoints"));
        assertTrue(io.checkpointsurgeon.flink.FlinkFileSystems.within(chk, "s3://bucket/"));
        assertTrue(io.checkpointsurgeon.flink.FlinkFileSystems.within("hdfs:///flink/job/chk-5", "hdfs:///flink"));
        assertFalse(io.checkpointsurgeon.flink.FlinkFileSystems.within("hdfs:///flink/job/chk-5", "hdfs://nn:8020/flink"));
    }

    @Test
    public void fileUrisArePlainLocalPaths() {
        assertEquals(Path.of("/tmp/chk-1"), CheckpointSurgeon.localPath("file:/tmp/chk-1"));
        assertEquals(Path.of("/tmp/chk-1"), CheckpointSurgeon.localPath("file:///tmp/chk-1"));
        assertEquals(Path.of("/tmp/a b"), CheckpointSurgeon.localPath("file:///tmp/a b"));
        assertEquals(Path.of("rel/chk"), CheckpointSurgeon.localPath("rel/chk"));
    }

    @Test
    public void stringOverloadsReadLocalCheckpointsNatively() throws Exception {
        Path dir = FIXTURES.resolve("1.15.4").resolve("stale-union").toAbsolutePath();
        InspectReport viaPath = CheckpointSurgeon.inspect(dir);
        assertEquals(viaPath, CheckpointSurgeon.inspect(dir.toString()));
        assertEquals(viaPath, CheckpointSurgeon.inspect("file://" + dir));
        Surgery s = Surgery.removeState(Surgery.OperatorSelector.uid("source_consumer"), "topic-partition-offset-states");
        assertEquals(CheckpointSurgeon.plan(dir, s), CheckpointSurgeon.plan(dir.toString(), s));
    }

    @Test
    public void remotePathsNeedFlink() throws Exception {
        try {
            CheckpointSurgeon.inspect("s3://bucket/checkpoints/job/chk-1");
            fail();
        } catch (CheckpointSurgeonException e) {
            assertEquals("FLINK_MISSING", e.code().name());
            assertTrue(e.getMessage(), e.getMessage().contains("Flink's jars"));
        }
        Path dir = FIXTURES.resolve("1.15.4").resolve("stale-union").toAbsolutePath();
        try {
            CheckpointSurgeon.apply(dir.toString(), Surgery.removeOperator(Surgery.OperatorSelector.uid("x")),
                    "s3://bucket/out");
            fail();
        } catch (CheckpointSurgeonException e) {
            assertEquals("UNSUPPORTED", e.code().name());
        }
    }
}
