package io.checkpointsurgeon.keyed;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.fixtures.KeyedStateJob;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.TestFiles;
import org.apache.flink.api.common.JobID;
import org.apache.flink.changelog.fs.FsStateChangelogStorageFactory;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateBackendHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateHandle;
import org.apache.flink.runtime.state.changelog.ChangelogStateHandleStreamImpl;
import org.apache.flink.runtime.state.changelog.StateChange;
import org.apache.flink.runtime.state.changelog.StateChangelogHandleReader;
import org.apache.flink.runtime.state.changelog.inmemory.InMemoryChangelogStateHandle;
import org.apache.flink.state.changelog.StateChangeOperation;
import org.apache.flink.util.CloseableIterator;
import org.junit.Assume;
import org.junit.Test;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

/**
 * The state change log of changelog checkpoints, judged by Flink: per subtask and state, the change
 * records and their bytes that {@code inspect --keyed} reports equal what Flink's own reader of the
 * log hands its restore ({@code InMemoryChangelogStateHandle.getChanges}, the file system log's
 * {@code StateChangelogHandleStreamHandleReader} over {@code StateChangeFormat}), counted the way
 * {@code ChangelogBackendLogApplier} applies them: METADATA records map a short id to a state, data
 * changes of the handle's key groups count for the state their id names.
 *
 * <p>Input: the changelog checkpoints of Flink's own migration tests in {@code ../shared/corpus}
 * (Flink 1.16, 1.17, 1.19; in-memory logs; skipped when absent), and a file system log this test
 * has Flink write (snappy-compressed; the Rust tests read the generated keyed-changelog fixtures).
 */
public class ChangelogJudgeTest {
    private static final String[] CORPUS = {
        "new-stateful-udf-migration-itcase-flink1.17-hashmap-checkpoint",
        "stateful-scala-udf-migration-itcase-flink1.16-rocksdb-checkpoint",
        "stateful-scala-udf-migration-itcase-flink1.19-hashmap-checkpoint",
        "stateful-scala-with-broadcast-udf-migration-itcase-flink1.16-hashmap-checkpoint",
        "stateful-scala-with-broadcast-udf-migration-itcase-flink1.19-hashmap-checkpoint",
    };

    @Test
    public void corpusChangeLogsCountAsFlinkReadsThem() throws Exception {
        Path root = corpus();
        Assume.assumeTrue("../shared/corpus is absent", root != null);
        int compared = 0;
        for (String name : CORPUS) {
            compared += compare(root.resolve("apache__flink/flink-tests/src/test/resources").resolve(name));
        }
        assertTrue("change logs compared: " + compared, compared >= 10);
    }

    /**
     * KeyedStateJob v1 (value, list, map, reducing, aggregating, POJO and TTL states, timers) on the
     * changelog backend, its log snappy-compressed in files below the job directory (the job id is
     * fixed so that the log's path is known before it starts), no materialization: a few seconds.
     */
    @Test
    public void aFileSystemChangeLogCountsAsFlinkReadsIt() throws Exception {
        Path work = Files.createTempDirectory("changelog-judge");
        try {
            Configuration c = FlinkConf.checkpointing("hashmap",
                    Files.createDirectories(work.resolve("checkpoints")).toUri().toString(),
                    Files.createDirectories(work.resolve("savepoints")).toUri().toString(), "300 ms", 1);
            FlinkConf.inlineThreshold(c, "0");
            FlinkConf.noRestarts(c);
            String jobId = new JobID().toHexString();
            FlinkConf.set(c, jobId, "$internal.pipeline.job-id");
            FlinkConf.set(c, "true", "state.backend.changelog.enabled");
            FlinkConf.set(c, "filesystem", "state.backend.changelog.storage");
            FlinkConf.set(c, work.resolve("checkpoints").resolve(jobId).resolve("changelog").toUri().toString(),
                    "dstl.dfs.base-path");
            FlinkConf.set(c, "true", "dstl.dfs.compression.enabled");
            FlinkConf.set(c, "1 h", "state.backend.changelog.periodic-materialize.interval");
            MiniClusterJob.Result r = MiniClusterJob.of("changelog-judge", c, 2,
                    env -> KeyedStateJob.topology(env, 2, 32, false))
                    .checkpointsAfterReady(2).timeout(java.time.Duration.ofSeconds(120)).run();
            r.orThrow();
            Path chk = TestFiles.localPath(r.checkpoint());
            assertEquals(jobId, chk.getParent().getFileName().toString());
            assertTrue("change logs compared", compare(chk) >= 2);
        } finally {
            TestFiles.deleteRecursively(work);
        }
    }

    /** Compares every changelog handle of a checkpoint without a materialized part; returns how many. */
    static int compare(Path dir) throws Exception {
        CheckpointMetadata md;
        try (DataInputStream in = new DataInputStream(Files.newInputStream(dir.resolve("_metadata")))) {
            md = Checkpoints.loadCheckpointMetadata(in, ChangelogJudgeTest.class.getClassLoader(), dir.toString());
        }
        KeyedReport report = CheckpointSurgeon.inspectKeyed(dir);
        int compared = 0;
        for (OperatorState op : md.getOperatorStates()) {
            for (Map.Entry<Integer, OperatorSubtaskState> e : op.getSubtaskStates().entrySet()) {
                for (KeyedStateHandle h : e.getValue().getManagedKeyedState()) {
                    if (!(h instanceof ChangelogStateBackendHandle)) continue;
                    ChangelogStateBackendHandle c = (ChangelogStateBackendHandle) h;
                    // the report adds a materialized part's entries to the state's: compare logs alone
                    if (!c.getMaterializedStateHandles().isEmpty()) continue;
                    String what = dir.getFileName() + " " + op.getOperatorID() + " #" + e.getKey();
                    Map<String, long[]> flink = flinkCounts(c);
                    assertTrue(what + ": Flink finds changes", flink.values().stream().anyMatch(v -> v[0] > 0));
                    KeyedReport.Operator o = report.operator(op.getOperatorID().toHexString());
                    assertNotNull(what, o);
                    Map<String, long[]> ours = new TreeMap<>();
                    for (KeyedReport.State s : o.states()) {
                        for (KeyedReport.SubtaskCount t : s.subtasks()) {
                            if (t.subtask() == e.getKey()) {
                                ours.put(s.name(), new long[] {t.count().entries(), t.count().storedBytes()});
                            }
                        }
                        assertTrue(what + " " + s.name(), s.formats().contains(KeyedReport.SnapshotFormat.CHANGELOG));
                    }
                    assertEquals(what, text(flink), text(ours));
                    compared++;
                }
            }
        }
        return compared;
    }

    /** Per state name: data changes and their bytes, as Flink's reader hands them to its restore. */
    private static Map<String, long[]> flinkCounts(ChangelogStateBackendHandle c) throws Exception {
        Map<Short, String> ids = new HashMap<>();
        Map<String, long[]> out = new TreeMap<>();
        for (ChangelogStateHandle part : c.getNonMaterializedStateHandles()) {
            for (StateChange change : changes(part)) {
                byte[] b = change.getChange();
                DataInputViewStreamWrapper in = new DataInputViewStreamWrapper(new ByteArrayInputStream(b));
                StateChangeOperation op = StateChangeOperation.byCode(in.readByte());
                if (op == StateChangeOperation.METADATA) {
                    // meta info version, then StateMetaInfoSnapshot's name; the short id is written
                    // after the TTL config and default value, as the record's last 3 bytes but one
                    in.readInt();
                    String name = in.readUTF();
                    short id = (short) (((b[b.length - 3] & 0xFF) << 8) | (b[b.length - 2] & 0xFF));
                    ids.put(id, name);
                    out.computeIfAbsent(name, k -> new long[2]);
                } else if (c.getKeyGroupRange().contains(change.getKeyGroup())) {
                    String name = ids.get(in.readShort());
                    assertNotNull("a data change of a state with meta data", name);
                    long[] n = out.computeIfAbsent(name, k -> new long[2]);
                    n[0]++;
                    n[1] += b.length;
                }
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    private static List<StateChange> changes(ChangelogStateHandle part) throws Exception {
        if (part instanceof InMemoryChangelogStateHandle) {
            return ((InMemoryChangelogStateHandle) part).getChanges();
        }
        assertTrue(part.getClass().getName(), part instanceof ChangelogStateHandleStreamImpl);
        StateChangelogHandleReader<ChangelogStateHandleStreamImpl> reader =
                (StateChangelogHandleReader<ChangelogStateHandleStreamImpl>) new FsStateChangelogStorageFactory()
                        .createStorageView(new Configuration()).createReader();
        List<StateChange> out = new ArrayList<>();
        try (CloseableIterator<StateChange> it = reader.getChanges((ChangelogStateHandleStreamImpl) part)) {
            while (it.hasNext()) out.add(it.next());
        }
        return out;
    }

    private static String text(Map<String, long[]> m) {
        StringBuilder sb = new StringBuilder();
        m.forEach((k, v) -> sb.append(k).append(": ").append(v[0]).append(" changes, ").append(v[1]).append(" bytes\n"));
        return sb.toString();
    }

    private static Path corpus() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("CHECKPOINT_SURGEON_CORPUS");
        if (env != null) candidates.add(Paths.get(env));
        candidates.add(Paths.get("../shared/corpus"));
        candidates.add(Paths.get("../../shared/corpus"));
        for (Path p : candidates) {
            if (Files.isDirectory(p)) return p;
        }
        return null;
    }
}
