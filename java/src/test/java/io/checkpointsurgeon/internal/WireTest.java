package io.checkpointsurgeon.internal;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.CheckpointSurgeonTest;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.StateFile;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * The wire between Java and Rust ({@link Wire}, {@code native/src/wire.rs}): Java's payloads decode
 * in Rust and encode back to the same bytes, Rust's payloads of real fixtures decode in Java, a
 * payload of another version is refused, and both sides have the same error codes.
 */
public class WireTest {
    /** Names Flink allows that text framing would break. */
    static final String[] ODD_NAMES = {"offsets\tv2", "line\nbreak", "nul\u0000", "Zustand-ä✓", "😀", "lone\uD800"};

    @Test
    public void requestsWithAnyNameCrossUnchanged() throws Exception {
        NativeBridge.ensureLoaded();
        Surgery s = Surgery.removeState(Surgery.OperatorSelector.all(), ODD_NAMES[0]);
        for (String n : ODD_NAMES) {
            // State names cross as Java wrote them, lone surrogates too; uids and operator names are
            // compared as Unicode text on the Rust side (a lone surrogate there becomes U+FFFD).
            String text = n.replace('\uD800', '?');
            s.andRemoveState(Surgery.OperatorSelector.uid(text), n).andDedupeUnion(Surgery.OperatorSelector.name(text), n);
        }
        s.andRemoveOperator(Surgery.OperatorSelector.id("000102030405060708090a0b0c0d0e0f"))
                .andRenameOperator(Surgery.OperatorSelector.uid("a"), "b\tc", null, "new\nname")
                .andRenameOperator(Surgery.OperatorSelector.uid("d"), null, "ffffffffffffffffffffffffffffffff", null);
        for (Surgery x : List.of(s, s.metadataOnly())) {
            byte[] bytes = Wire.request(Request.of(x));
            assertArrayEquals(bytes, NativeTesting.wireEcho(bytes));
        }
        byte[] source = Wire.source(new byte[] {1, 2, 3}, "s3://b/chk-1\t/_metadata", "/tmp/mirror\n",
                Map.of("s3://b/", "/tmp/m"));
        assertArrayEquals(source, NativeTesting.wireEcho(source));
    }

    @Test
    public void kafkaRequestsCrossUnchanged() throws Exception {
        NativeBridge.ensureLoaded();
        Surgery.OperatorSelector uid = Surgery.OperatorSelector.uid("kafka-source");
        for (Surgery s : List.of(
                Surgery.migrateKafkaLegacy(uid, 3, 7, Surgery.KafkaStart.earliest()),
                Surgery.migrateKafkaLegacy(Surgery.OperatorSelector.all(), 1, null, null),
                Surgery.dropKafkaTopic(uid, "tópico\t😀", null),
                Surgery.setKafkaOffsets(uid, "t", 3, Surgery.KafkaStart.shift(-5)),
                Surgery.setKafkaOffsets(uid, "t", null, Surgery.KafkaStart.at(Long.MAX_VALUE)))) {
            byte[] bytes = Wire.request(Request.of(s));
            assertArrayEquals(bytes, NativeTesting.wireEcho(bytes));
        }
    }

    @Test
    public void kafkaConnectorLinesMapToTheirEnumeratorStateVersions() {
        String[][] lines = {{"1.15.4", "1"}, {"1.14.6", "1"}, {"3.0.2-1.18", "1"}, {"3.1.0-1.18", "2"},
            {"3.4.0-1.20", "2"}, {"4.0.1-2.0", "2"}, {"5.0.0-2.2", "3"}};
        for (String[] l : lines) assertEquals(l[0], Integer.parseInt(l[1]), Surgery.kafkaEnumeratorStateVersion(l[0]));
        for (String bad : List.of("", "1.20.3", "2.0", "x.y", "1")) {
            try {
                Surgery.kafkaEnumeratorStateVersion(bad);
                fail(bad);
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage(), expected.getMessage().contains("'" + bad + "'"));
            }
        }
        // no connector on this class path
        assertEquals(-1, Surgery.detectKafkaEnumeratorStateVersion(WireTest.class.getClassLoader()));
    }

    @Test
    public void modifiedUtf8IsJavasOwn() throws Exception {
        for (String n : ODD_NAMES) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            new DataOutputStream(b).writeUTF(n);
            byte[] java = Arrays.copyOfRange(b.toByteArray(), 2, b.size());
            assertArrayEquals(n, java, Wire.modifiedUtf8(n));
            assertEquals(n, Wire.decodeModifiedUtf8(java, 0, java.length));
        }
    }

    @Test
    public void reportsPlansAndFileListsOfARealFixtureDecode() throws Exception {
        NativeBridge.ensureLoaded();
        byte[] source = Wire.source(CheckpointSurgeonTest.fixture("stale-union"));
        byte[] report = NativeBridge.inspect(source);
        assertArrayEquals(report, NativeTesting.wireEcho(report));
        InspectReport r = Wire.report(report);
        assertTrue(r.operators().size() > 1);
        byte[] plan = NativeBridge.plan(source, Wire.request(Request.of(Surgery.removeState(Surgery.OperatorSelector.all(),
                "topic-partition-offset-states"))), null, null, null, null, null);
        assertArrayEquals(plan, NativeTesting.wireEcho(plan));
        Staged p = Wire.plan(plan);
        assertEquals(r.operators().size(), p.operators);
        assertTrue(p.plan.changes().stream().allMatch(c -> c.action() == SurgeryPlan.Change.Action.PURGE_STATE));
        byte[] files = NativeBridge.stateFiles(Wire.source(CheckpointSurgeonTest.fixture("operator-state-files")));
        assertArrayEquals(files, NativeTesting.wireEcho(files));
        assertTrue(Wire.stateFiles(files).stream().anyMatch(f -> f.operatorState() && f.kind() == StateFile.Kind.RELATIVE));
    }

    @Test
    public void aPayloadOfAnotherVersionIsRefusedOnBothSides() throws Exception {
        NativeBridge.ensureLoaded();
        byte[] request = Wire.request(Request.of(Surgery.removeState(Surgery.OperatorSelector.all(), "x")));
        request[5] = 99;
        try {
            NativeTesting.wireEcho(request);
            fail("Rust read a request of wire version 99");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.WIRE, e.code());
            assertTrue(e.getMessage(), e.getMessage().contains("wire version " + Wire.VERSION + ", found 99"));
        }
        byte[] report = NativeBridge.inspect(Wire.source(CheckpointSurgeonTest.fixture("stale-union")));
        report[5] = 99;
        try {
            Wire.report(report);
            fail("Java read a report of wire version 99");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.WIRE, e.code());
        }
    }

    /** A change action Java has no constant for is a WIRE error at the byte after its name, not a string passed on. */
    @Test
    public void anUnknownChangeActionIsAWireErrorWithItsOffset() throws Exception {
        NativeBridge.ensureLoaded();
        byte[] plan = NativeBridge.plan(Wire.source(CheckpointSurgeonTest.fixture("stale-union")), Wire.request(Request.of(
                Surgery.removeState(Surgery.OperatorSelector.all(), "topic-partition-offset-states"))), null, null, null,
                null, null);
        byte[] name = "purge-state".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        int at = indexOf(plan, name);
        assertTrue("the plan names the action purge-state", at > 0);
        plan[at + name.length - 1] = '!';
        try {
            Wire.plan(plan);
            fail("Java read an unknown change action");
        } catch (CheckpointSurgeonException e) {
            assertEquals(CheckpointSurgeonException.Code.WIRE, e.code());
            assertEquals("plan payload at byte " + (at + name.length) + ": a change action, found purge-stat!",
                    e.getMessage());
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) continue outer;
            }
            return i;
        }
        return -1;
    }

    @Test
    public void bothSidesHaveTheSameErrorCodesInTheSameOrder() throws Exception {
        NativeBridge.ensureLoaded();
        List<String> java = new ArrayList<>();
        for (CheckpointSurgeonException.Code c : CheckpointSurgeonException.Code.values()) java.add(c.name());
        assertEquals(Arrays.asList(NativeTesting.errorCodes().split("\n")), java);
    }

    @Test
    public void aStateNameWithATabIsRemovedFromARealFixture() throws Exception {
        java.nio.file.Path odd = CheckpointSurgeonTest.FIXTURES.resolve("1.15.4").resolve("odd-state-names");
        InspectReport before = CheckpointSurgeon.inspect(odd);
        assertTrue(before.toJson(), before.toJson().contains("offsets\\tv2"));
        java.nio.file.Path out = Files.createTempDirectory("wire-tab").resolve("out");
        SurgeryPlan plan = CheckpointSurgeon.apply(odd, Surgery.removeState(Surgery.OperatorSelector.all(), "offsets\tv2"), out);
        assertTrue(plan.changes().stream().allMatch(c -> c.state().equals("offsets\tv2")));
        assertTrue(!plan.changes().isEmpty());
        InspectReport after = CheckpointSurgeon.inspect(out);
        for (InspectReport.OperatorInfo op : after.operators()) {
            for (InspectReport.StateTotal t : op.stateTotals()) {
                assertTrue(t.name(), !t.name().equals("offsets\tv2"));
            }
        }
        // the other odd names are still there
        assertTrue(after.toJson().contains("line\\nbreak"));
    }
}
