package io.checkpointsurgeon.internal;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertNull;

import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.StateFile;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * The wire across the language boundary, field by field (the echo of {@link WireTest} only shows
 * that Rust agrees with itself): Java decodes the payloads the Rust side built from known values
 * ({@code native/src/wire/samples.rs}) and compares every field with the value written here, and
 * Rust decodes the requests and sources Java built and compares them with its own
 * ({@code samples::check}). Every field of a payload holds a value no other field of its type
 * holds, so two fields of one type read or written in each other's place fail a test.
 */
public class WireSamplesTest {
    @Test
    public void reportFields() throws Exception {
        NativeBridge.ensureLoaded();
        InspectReport r = Wire.report(NativeTesting.wireSample("report"));
        assertEquals("source", r.source());
        assertEquals("metadataVersion", 7, r.metadataVersion());
        assertEquals("checkpointId", 1001, r.checkpointId());
        assertEquals("metadataBytes", 1002, r.metadataBytes());
        assertEquals("propertiesBytes", 1003, r.propertiesBytes());
        assertEquals(List.of(new InspectReport.MasterStateInfo("master.name", 11, 1004)), r.masterStates());
        assertEquals(1, r.operators().size());
        InspectReport.OperatorInfo op = r.operators().get(0);
        assertEquals("operator.id", op.id());
        assertEquals("operator.name", op.name());
        assertEquals("operator.uid", op.uid());
        assertEquals("parallelism", 12, op.parallelism());
        assertEquals("maxParallelism", 13, op.maxParallelism());
        assertEquals("coordinatorStateBytes", 1005, op.coordinatorStateBytes());
        assertArrayEquals("coordinatorHead", new byte[] {1, 2, 3}, op.coordinatorHead());
        assertEquals("fullyFinished", true, op.fullyFinished());
        assertEquals("finishedSubtasks", 14, op.finishedSubtasks());
        InspectReport.KafkaEnumerator en = op.kafkaEnumerator();
        assertEquals("enumerator version", 15, en.version());
        assertEquals("enumerator.error", en.error());
        assertEquals("initialDiscoveryFinished", false, en.initialDiscoveryFinished());
        assertEquals(List.of(kafkaOffset("assigned", 16, 1)), en.assigned());
        assertEquals(List.of(kafkaOffset("pending", 17, 1)), en.pending());
        assertEquals(1, op.subtasks().size());
        InspectReport.SubtaskInfo s = op.subtasks().get(0);
        assertEquals("index", 18, s.index());
        handle("managed", 100, s.managedOperatorState());
        handle("raw", 200, s.rawOperatorState());
        assertEquals("managedKeyed.kind", s.managedKeyedState().kind());
        assertEquals("managedKeyed stateSize", 301, s.managedKeyedState().stateSize());
        assertEquals("rawKeyed.kind", s.rawKeyedState().kind());
        assertEquals("rawKeyed stateSize", 302, s.rawKeyedState().stateSize());
        assertEquals("inputChannelHandles", 19, s.inputChannelHandles());
        assertEquals("outputChannelHandles", 20, s.outputChannelHandles());
        assertEquals("channelStateBytes", 303, s.channelStateBytes());
    }

    /** The sample's operator state handle whose strings start with {@code prefix} and whose numbers start at {@code base}. */
    private static void handle(String prefix, long base, InspectReport.OperatorStateHandleInfo h) {
        assertEquals(prefix + ".kind", h.kind());
        assertEquals(prefix + ".delegateKind", h.delegateKind());
        assertEquals(prefix + ".location", h.location());
        assertEquals(prefix + " delegateSize", base + 1, h.delegateSize());
        assertEquals(prefix + " inline", true, h.inline());
        assertEquals(prefix + " proxyVersion", base + 2, h.proxyVersion());
        assertEquals(prefix + " compressed", false, h.compressed());
        assertEquals(prefix + ".streamError", h.streamError());
        assertEquals(prefix + " headerBytes", base + 3, h.headerBytes());
        assertEquals(1, h.states().size());
        InspectReport.StateInfo st = h.states().get(0);
        assertEquals(prefix + ".state.name", st.name());
        assertEquals(InspectReport.Mode.BROADCAST, st.mode());
        assertEquals(prefix + " elements", base + 4, st.elements());
        assertEquals(prefix + " bytes", base + 5, st.bytes());
        assertEquals(prefix + ".state.serializer", st.serializer());
        assertEquals(prefix + ".state.elementType", st.elementType());
        assertEquals(prefix + " distinctElements", base + 6, st.distinctElements());
        assertEquals(prefix + " digest", base + 7, st.digest());
        assertEquals(List.of(kafkaOffset(prefix + ".state.kafka", (int) base + 8, 9000 + base)), st.kafkaOffsets());
    }

    /** The sample's Kafka offset: topic {@code <prefix>.topic}, partition {@code p}, offsets 10p+1 and 10p+2. */
    private static InspectReport.KafkaOffset kafkaOffset(String prefix, int p, long count) {
        return new InspectReport.KafkaOffset(prefix + ".topic", p, p * 10L + 1, p * 10L + 2, count);
    }

    @Test
    public void planFields() throws Exception {
        NativeBridge.ensureLoaded();
        Staged staged = Wire.plan(NativeTesting.wireSample("plan"));
        SurgeryPlan p = staged.plan;
        assertEquals("source", p.source());
        assertEquals(SurgeryPlan.Depth.METADATA_ONLY, p.depth());
        assertEquals("metadataBytesBefore", 1001, p.metadataBytesBefore());
        assertEquals("metadataBytesAfter", 1002, p.metadataBytesAfter());
        assertEquals(1, p.changes().size());
        SurgeryPlan.Change c = p.changes().get(0);
        assertEquals("change.operator", c.operatorId());
        assertEquals("subtask", 3, c.subtask());
        assertEquals("change.state", c.state());
        assertEquals(SurgeryPlan.Change.Action.KAFKA_SET_OFFSET, c.action());
        assertEquals("elementsBefore", 1003, c.elementsBefore());
        assertEquals("elementsAfter", 1004, c.elementsAfter());
        assertEquals("bytesRemoved", 1005, c.bytesRemoved());
        assertEquals("change.detail", c.detail());
        assertEquals(List.of(new SurgeryPlan.NewStream("stream.fileName", "stream.replaces", 1006)), p.newStreams());
        assertEquals("operators", 4, staged.operators);
        assertEquals(List.of(new SurgeryPlan.Relocation("relocated.old", "relocated.new")), p.relocated());
        assertEquals(new SurgeryPlan.KeyedFigures(1008, 1009, 5), p.keyed());
        assertNull(p.result());
        assertEquals("staged.metadataTmp", staged.metadataTmp);
        assertEquals("staged metadataBytes", 1007, staged.metadataBytes);
        assertEquals(List.of("staged.written"), staged.written);
        assertEquals(List.of("staged.unchanged"), staged.unchanged);
    }

    @Test
    public void stateFileFields() throws Exception {
        NativeBridge.ensureLoaded();
        List<StateFile> files = Wire.stateFiles(NativeTesting.wireSample("state-files"));
        assertEquals(3, files.size());
        stateFile(files.get(0), true, StateFile.Kind.RELATIVE, "relative.path", 0, 1003);
        stateFile(files.get(1), false, StateFile.Kind.FILE, "file.path", 0, 1004);
        stateFile(files.get(2), true, StateFile.Kind.SEGMENT, "segment.path", 1001, 1002);
    }

    private static void stateFile(StateFile f, boolean operatorState, StateFile.Kind kind, String path, long start, long size) {
        assertEquals(path + " operatorState", operatorState, f.operatorState());
        assertEquals(path + " kind", kind, f.kind());
        assertEquals(path, f.path());
        assertEquals(path + " start", start, f.start());
        assertEquals(path + " size", size, f.size());
    }

    @Test
    public void keyedReportFields() throws Exception {
        NativeBridge.ensureLoaded();
        KeyedReport r = Wire.keyedReport(NativeTesting.wireSample("keyed-report"));
        assertEquals("keyed.source", r.source());
        assertEquals(1, r.operators().size());
        KeyedReport.Operator op = r.operators().get(0);
        assertEquals("keyed.operatorId", op.id());
        assertEquals("keyed.name", op.name());
        assertEquals("keyed.uid", op.uid());
        assertEquals("parallelism", 21, op.parallelism());
        assertEquals("maxParallelism", 22, op.maxParallelism());
        assertEquals(1, op.states().size());
        KeyedReport.State st = op.states().get(0);
        assertEquals("state.name", st.name());
        assertEquals(KeyedReport.BackendStateType.PRIORITY_QUEUE, st.backendStateType());
        // "state.type" is no type Flink has
        assertEquals(KeyedReport.StateType.UNKNOWN, st.stateType());
        assertEquals(1, st.serializers().size());
        assertEquals(KeyedReport.SerializerKey.USER_KEY_SERIALIZER, st.serializers().get(0).role());
        KeyedReport.SerializerSnapshot inner = new KeyedReport.SerializerSnapshot("serializer.nested.snapshotClass", 24,
                "serializer.nested.serializerClass", List.of("serializer.nested.class"), List.of(), false);
        assertEquals(new KeyedReport.SerializerSnapshot("serializer.snapshotClass", 23, "serializer.serializerClass",
                List.of("serializer.class"), List.of(inner), true), st.serializers().get(0).snapshot());
        assertEquals("ttl", true, st.ttl());
        assertEquals(new KeyedReport.Count(2001, 2002, 2003, false), st.total());
        assertEquals(List.of(new KeyedReport.SubtaskCount(24, new KeyedReport.Count(2101, 2102, 2103, true))),
                st.subtasks());
        assertEquals(List.of(KeyedReport.SnapshotFormat.HEAP_CHECKPOINT, KeyedReport.SnapshotFormat.CHANGELOG),
                st.formats());
        assertEquals(new KeyedReport.RocksDbFigures(2201, 2202, 2203, 2204, 2205), st.rocksDb());
        assertEquals(1, op.handles().size());
        KeyedReport.Handle h = op.handles().get(0);
        assertEquals("subtask", 25, h.subtask());
        assertEquals("raw", true, h.raw());
        assertEquals("handle.kind", h.kind());
        assertEquals(KeyedReport.SnapshotFormat.ROCKSDB_FILES, h.format());
        assertEquals("firstKeyGroup", 26, h.firstKeyGroup());
        assertEquals("keyGroups", 27, h.keyGroups());
        assertEquals("totalBytes", 2301, h.totalBytes());
        assertEquals("headerBytes", 2302, h.headerBytes());
        assertEquals("overheadBytes", 2303, h.overheadBytes());
        assertEquals("unattributedBytes", 2304, h.unattributedBytes());
        assertEquals("storedApportioned", true, h.storedApportioned());
        assertEquals(List.of(new KeyedReport.Note("note.file", 2305, "note.message")), h.notes());
        assertEquals("handle.error", h.error());
    }

    @Test
    public void requestFields() throws Exception {
        NativeBridge.ensureLoaded();
        Surgery s = Surgery.removeState(Surgery.OperatorSelector.uid("remove.uid"), "remove.state")
                .andRemoveOperator(Surgery.OperatorSelector.id("0102030405060708090a0b0c0d0e0f10"))
                .andDedupeUnion(Surgery.OperatorSelector.name("dedupe.name"), "dedupe.state")
                .andRenameOperator(Surgery.OperatorSelector.uid("rename.uid"), "rename.toUid", null, "rename.toName")
                .andRenameOperator(Surgery.OperatorSelector.all(), null, "fefefefefefefefefefefefefefefefe", null)
                .andRelocate("relocate.from", "relocate.to")
                .andRelocate("relocateOutside.from", "relocateOutside.to")
                .andRenameOperator(Surgery.OperatorSelector.name("renameName.name"), null, null, "renameName.toName")
                .metadataOnly();
        assertAgrees("request", Wire.request(Request.of(s).referencing("request.referencedSource").withOutsideRelocated(1)));
        Surgery.OperatorSelector uid = Surgery.OperatorSelector.uid("kafka.uid");
        assertAgrees("migrate-legacy", Wire.request(Request.of(
                Surgery.migrateKafkaLegacy(uid, 3, 7, Surgery.KafkaStart.earliest()))));
        assertAgrees("drop-topic", Wire.request(Request.of(Surgery.dropKafkaTopic(uid, "drop.topic", 5))));
        assertAgrees("set-offsets", Wire.request(Request.of(
                Surgery.setKafkaOffsets(uid, "set.topic", 6, Surgery.KafkaStart.shift(-8)))));
        assertAgrees("keyed", Wire.request(Request.of(
                Surgery.removeKeyedState(Surgery.OperatorSelector.uid("keyed.uid"), "keyed.remove")
                        .andRenameKeyedState(Surgery.OperatorSelector.all(), "keyed.from", "keyed.to").threads(3))
                .referencing("keyed.referencedSource")));
        assertNotEquals("", NativeTesting.wireCheck("keyed", Wire.request(Request.of(
                Surgery.removeKeyedState(Surgery.OperatorSelector.uid("keyed.uid"), "keyed.remove")
                        .andRenameKeyedState(Surgery.OperatorSelector.all(), "keyed.from", "keyed.to").threads(4))
                .referencing("keyed.referencedSource"))));
        // and the check can fail: another value in one field
        assertNotEquals("", NativeTesting.wireCheck("drop-topic",
                Wire.request(Request.of(Surgery.dropKafkaTopic(uid, "drop.topic", 6)))));
    }

    @Test
    public void sourceFields() throws Exception {
        NativeBridge.ensureLoaded();
        assertAgrees("path", Wire.source(Path.of("/source.path")));
        assertAgrees("bytes", Wire.source(new byte[] {9, 8, 7}, "source.name", "source.dir",
                Map.of("mirror.prefix", "mirror.local")));
    }

    /** Rust decodes {@code payload} and finds every field equal to its sample {@code name}'s. */
    private static void assertAgrees(String name, byte[] payload) throws Exception {
        assertEquals("the fields Rust decoded that differ from its sample '" + name + "'", "",
                NativeTesting.wireCheck(name, payload));
    }
}
