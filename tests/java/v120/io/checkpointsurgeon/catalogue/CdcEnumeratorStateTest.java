package io.checkpointsurgeon.catalogue;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.fixtures.Shims;
import io.checkpointsurgeon.testing.CliProcess;
import io.checkpointsurgeon.testing.MiniClusterJob;

import io.debezium.relational.TableId;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.cdc.connectors.mysql.source.assigners.AssignerStatus;
import org.apache.flink.cdc.connectors.mysql.source.assigners.state.ChunkSplitterState;
import org.apache.flink.cdc.connectors.mysql.source.assigners.state.HybridPendingSplitsState;
import org.apache.flink.cdc.connectors.mysql.source.assigners.state.PendingSplitsState;
import org.apache.flink.cdc.connectors.mysql.source.assigners.state.PendingSplitsStateSerializer;
import org.apache.flink.cdc.connectors.mysql.source.assigners.state.SnapshotPendingSplitsState;
import org.apache.flink.cdc.connectors.mysql.source.offset.BinlogOffset;
import org.apache.flink.cdc.connectors.mysql.source.split.MySqlSchemalessSnapshotSplit;
import org.apache.flink.cdc.connectors.mysql.source.split.MySqlSplit;
import org.apache.flink.cdc.connectors.mysql.source.split.MySqlSplitSerializer;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.RowType;
import org.junit.ClassRule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

/**
 * The Flink CDC entry of the catalogue: coordinator state written by Flink CDC's own
 * {@code PendingSplitsStateSerializer} (flink-sql-connector-mysql-cdc 3.5.0) through Flink's real
 * {@code SourceCoordinator} into a savepoint of a MiniCluster job. The source under test is a test
 * FLIP-27 source whose enumerator checkpoint is MySqlSource's {@code HybridPendingSplitsState} (the
 * snapshot finished, the binlog split assigned), with one assigned chunk and one finished offset per
 * snapshot chunk of a table, as MySqlSource keeps them; a real MySqlSource needs a MySQL server.
 * 2,000 chunks (over 1 MiB) give a finding; 20 chunks of the same layout give none.
 */
public class CdcEnumeratorStateTest {
    @ClassRule
    public static final TemporaryFolder TMP = new TemporaryFolder();

    @Test
    public void aGrownCdcEnumeratorStateIsAWarningAndASmallOneIsNot() throws Exception {
        Path work = TMP.newFolder("cdc").toPath();
        Path savepoint = MiniClusterJob.of("cdc", StaleStatesTest.conf(work), 1, env -> {
            for (int chunks : new int[] {2000, 20}) {
                String uid = "cdc-" + chunks;
                Shims.discard(env.fromSource(new CdcLikeSource(chunks), WatermarkStrategy.noWatermarks(), uid).uid(uid),
                        uid + "-sink");
            }
        }).timeout(Duration.ofSeconds(120)).checkpointsAfterReady(1).stopWithSavepoint().run().orThrow().savepointPath();

        List<CheckpointSurgeon.Finding> found = CheckpointSurgeon.doctor(savepoint).stream()
                .filter(f -> f.code() == CheckpointSurgeon.Finding.Code.CONNECTOR_STATE).collect(Collectors.toList());
        assertEquals(found.toString(), 1, found.size());
        String m = found.get(0).message();
        assertEquals(CheckpointSurgeon.Finding.Severity.WARNING, found.get(0).severity());
        assertTrue(m, m.contains("Flink CDC incremental snapshot source") && m.contains("scan.incremental.snapshot.chunk.size")
                && m.contains("heuristic") && m.contains("Known"));
        // it is the big one's operator
        InspectReport.OperatorInfo big = CheckpointSurgeon.inspect(savepoint).operators().stream()
                .filter(o -> o.coordinatorStateBytes() > 1024 * 1024).findFirst().orElseThrow();
        assertTrue(m, m.startsWith("operator " + big.id()));
        // the layout doctor recognises, as CDC's serializer and Flink's SourceCoordinator wrote it
        ByteBuffer head = ByteBuffer.wrap(big.coordinatorHead());
        assertEquals(256, head.remaining());
        assertEquals("coordinator serde version", 1, head.getInt());
        assertEquals(new PendingSplitsStateSerializer(MySqlSplitSerializer.INSTANCE).getVersion(), head.getInt());
        assertEquals(big.coordinatorStateBytes() - 12, head.getInt());
        assertEquals(MySqlSplitSerializer.INSTANCE.getVersion(), head.getInt());
        assertEquals("HYBRID_PENDING_SPLITS_STATE_FLAG", 3, head.getInt());
        assertEquals("already processed tables", 1, head.getInt());
        byte[] table = new byte[head.getShort()];
        head.get(table);
        assertEquals("\"shop\".\"orders\"", new String(table, StandardCharsets.UTF_8)); // toDoubleQuotedString

        CliProcess.Result json = CliProcess.withFlink("doctor", savepoint.toString(), "--json").run();
        assertEquals(json.output, 0, json.exitCode);
        assertTrue(json.output, json.output.contains("\"CONNECTOR_STATE\""));
    }

    /** MySqlSource's enumerator state after the snapshot of `shop.orders` in {@code chunks} chunks. */
    static PendingSplitsState state(int chunks) {
        TableId table = new TableId("shop", null, "orders");
        RowType key = RowType.of(new BigIntType());
        Map<String, MySqlSchemalessSnapshotSplit> assigned = new LinkedHashMap<>();
        Map<String, BinlogOffset> finished = new LinkedHashMap<>();
        for (int i = 0; i < chunks; i++) {
            String id = table + ":" + i;
            BinlogOffset high = BinlogOffset.ofBinlogFilePosition("mysql-bin.000003", 4L + 100L * i);
            assigned.put(id, new MySqlSchemalessSnapshotSplit(table, id, key,
                    i == 0 ? null : new Object[] {8096L * i}, i == chunks - 1 ? null : new Object[] {8096L * (i + 1)}, high));
            finished.put(id, high);
        }
        SnapshotPendingSplitsState snapshot = new SnapshotPendingSplitsState(List.of(table), new ArrayList<>(), assigned,
                new HashMap<>(), finished, AssignerStatus.INITIAL_ASSIGNING_FINISHED, new ArrayList<>(), true, true,
                ChunkSplitterState.NO_SPLITTING_TABLE_STATE);
        return new HybridPendingSplitsState(snapshot, true);
    }

    /** A FLIP-27 source whose enumerator checkpoints MySqlSource's state with CDC's serializer; reads nothing. */
    static final class CdcLikeSource implements Source<Long, MySqlSplit, PendingSplitsState> {
        private final int chunks;

        CdcLikeSource(int chunks) {
            this.chunks = chunks;
        }

        @Override
        public Boundedness getBoundedness() {
            return Boundedness.CONTINUOUS_UNBOUNDED;
        }

        @Override
        public SourceReader<Long, MySqlSplit> createReader(SourceReaderContext context) {
            return new IdleReader();
        }

        @Override
        public SplitEnumerator<MySqlSplit, PendingSplitsState> createEnumerator(SplitEnumeratorContext<MySqlSplit> context) {
            return new Enumerator(chunks);
        }

        @Override
        public SplitEnumerator<MySqlSplit, PendingSplitsState> restoreEnumerator(
                SplitEnumeratorContext<MySqlSplit> context, PendingSplitsState checkpoint) {
            return new Enumerator(chunks);
        }

        @Override
        public SimpleVersionedSerializer<MySqlSplit> getSplitSerializer() {
            return MySqlSplitSerializer.INSTANCE;
        }

        @Override
        public SimpleVersionedSerializer<PendingSplitsState> getEnumeratorCheckpointSerializer() {
            return new PendingSplitsStateSerializer(MySqlSplitSerializer.INSTANCE);
        }
    }

    static final class Enumerator implements SplitEnumerator<MySqlSplit, PendingSplitsState> {
        private final int chunks;

        Enumerator(int chunks) {
            this.chunks = chunks;
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtaskId, String requesterHostname) {}

        @Override
        public void addSplitsBack(List<MySqlSplit> splits, int subtaskId) {}

        @Override
        public void addReader(int subtaskId) {}

        @Override
        public PendingSplitsState snapshotState(long checkpointId) {
            return state(chunks);
        }

        @Override
        public void close() {}
    }

    static final class IdleReader implements SourceReader<Long, MySqlSplit> {
        private final CompletableFuture<Void> never = new CompletableFuture<>();

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Long> output) {
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public List<MySqlSplit> snapshotState(long checkpointId) {
            return Collections.emptyList();
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return never;
        }

        @Override
        public void addSplits(List<MySqlSplit> splits) {}

        @Override
        public void notifyNoMoreSplits() {}

        @Override
        public void close() {}
    }
}
