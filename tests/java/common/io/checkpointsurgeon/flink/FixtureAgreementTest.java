package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.junit.Assume;
import org.junit.Test;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

/**
 * Every {@code <fixtures.dir>/<fixture>/_metadata} that real Flink wrote: Flink's loader read
 * through FlinkDescriber must equal the native description, the native round trip must return
 * the same bytes, and {@code inspect} must report what Flink's loader holds (operators, their
 * parallelism and coordinator state, and per subtask each operator state's mode and element
 * count). Skipped when the directory has no fixtures; fails when {@code fixtures.dir} is unset or
 * missing, so a misconfigured build cannot pass silently.
 */
public class FixtureAgreementTest {

    @Test
    public void nativeCodecAgreesWithFlinkOnFixtures() throws Exception {
        File dir = TestSupport.fixturesDir();
        assertTrue("system property fixtures.dir is not set", dir != null);
        assertTrue("fixtures.dir " + dir + " does not exist", dir.isDirectory());
        List<File> fixtures = TestSupport.fixtureMetadataFiles(dir);
        Assume.assumeFalse("no fixtures in " + dir, fixtures.isEmpty());

        List<String> failures = new ArrayList<>();
        for (File metadata : fixtures) {
            String fixture = metadata.getParentFile().getName();
            byte[] bytes = Files.readAllBytes(metadata.toPath());
            // The fixture directory is the pointer: relative handles resolve next to _metadata.
            String expected = FlinkDescriber.describe(
                    FlinkDescriber.load(bytes, metadata.getParentFile().getAbsolutePath()));
            try {
                String actual = CheckpointSurgeon.describe(bytes);
                if (!expected.equals(actual)) {
                    failures.add(fixture + ": descriptions differ at "
                            + TestSupport.firstDifference(expected, actual));
                    continue;
                }
                byte[] rewritten = CheckpointSurgeon.roundTrip(bytes);
                if (!Arrays.equals(rewritten, bytes)) {
                    failures.add(fixture + ": round trip is not byte-identical: first difference at byte "
                            + TestSupport.firstDifferingByte(bytes, rewritten));
                }
            } catch (Exception e) {
                failures.add(fixture + ": native call threw " + e);
            }
        }
        System.err.printf("FixtureAgreementTest: %d fixtures in %s, %d failed%n",
                fixtures.size(), dir, failures.size());
        if (!failures.isEmpty()) {
            fail(String.join("\n\n", failures));
        }
    }

    @Test
    public void inspectAgreesWithFlinkOnFixtures() throws Exception {
        File dir = TestSupport.fixturesDir();
        assertTrue("fixtures.dir " + dir + " does not exist", dir != null && dir.isDirectory());
        List<File> fixtures = TestSupport.fixtureMetadataFiles(dir);
        Assume.assumeFalse("no fixtures in " + dir, fixtures.isEmpty());
        List<String> failures = new ArrayList<>();
        int states = 0;
        for (File metadata : fixtures) {
            File fixture = metadata.getParentFile();
            CheckpointMetadata flink = FlinkDescriber.load(Files.readAllBytes(metadata.toPath()),
                    fixture.getAbsolutePath());
            String expected = flinkView(flink);
            String actual = inspectView(CheckpointSurgeon.inspect(fixture.toPath()));
            states += expected.split("=", -1).length - 1;
            if (!expected.equals(actual)) {
                failures.add(fixture.getName() + ": inspect differs from Flink's loader at "
                        + TestSupport.firstDifference(expected, actual));
            }
        }
        System.err.printf("inspect vs Flink's loader: %d fixtures, %d subtask states, %d failed%n",
                fixtures.size(), states, failures.size());
        assertTrue("no operator state compared", states > 0);
        if (!failures.isEmpty()) {
            fail(String.join("\n\n", failures));
        }
    }

    /** One line per operator and per subtask with operator state; states by name. */
    private static String flinkView(CheckpointMetadata md) {
        StringBuilder b = new StringBuilder("checkpoint " + md.getCheckpointId() + "\n");
        Map<String, OperatorState> ops = new TreeMap<>();
        for (OperatorState op : md.getOperatorStates()) {
            ops.put(op.getOperatorID().toHexString(), op);
        }
        for (Map.Entry<String, OperatorState> e : ops.entrySet()) {
            OperatorState op = e.getValue();
            // inspect reports -1 for an operator without coordinator state
            long coordinator = op.getCoordinatorState() == null ? -1 : op.getCoordinatorState().getStateSize();
            b.append(operatorLine(e.getKey(), op.getParallelism(), op.getMaxParallelism(), coordinator,
                    FlinkCompat.isFullyFinished(op)));
            for (Map.Entry<Integer, OperatorSubtaskState> s : new TreeMap<>(op.getSubtaskStates()).entrySet()) {
                Map<String, String> states = new TreeMap<>();
                List<OperatorStateHandle> handles = new ArrayList<>(s.getValue().getManagedOperatorState());
                handles.addAll(s.getValue().getRawOperatorState());
                for (OperatorStateHandle h : handles) {
                    for (Map.Entry<String, OperatorStateHandle.StateMetaInfo> st
                            : h.getStateNameToPartitionOffsets().entrySet()) {
                        states.merge(st.getKey(), st.getValue().getDistributionMode().name() + " "
                                + st.getValue().getOffsets().length, FixtureAgreementTest::sum);
                    }
                }
                b.append(subtaskLine(s.getKey(), states));
            }
        }
        return b.toString();
    }

    private static String inspectView(InspectReport r) {
        StringBuilder b = new StringBuilder("checkpoint " + r.checkpointId() + "\n");
        Map<String, InspectReport.OperatorInfo> ops = new TreeMap<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            ops.put(op.id(), op);
        }
        for (Map.Entry<String, InspectReport.OperatorInfo> e : ops.entrySet()) {
            InspectReport.OperatorInfo op = e.getValue();
            b.append(operatorLine(e.getKey(), op.parallelism(), op.maxParallelism(), op.coordinatorStateBytes(),
                    op.fullyFinished()));
            Map<Integer, InspectReport.SubtaskInfo> subtasks = new TreeMap<>();
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                subtasks.put(s.index(), s);
            }
            for (InspectReport.SubtaskInfo s : subtasks.values()) {
                Map<String, String> states = new TreeMap<>();
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (InspectReport.StateInfo st : h.states()) {
                        states.merge(st.name(), st.mode() + " " + st.elements(), FixtureAgreementTest::sum);
                    }
                }
                b.append(subtaskLine(s.index(), states));
            }
        }
        return b.toString();
    }

    private static String operatorLine(String id, int parallelism, int maxParallelism, long coordinator,
                                       boolean fullyFinished) {
        return "operator " + id + " parallelism " + parallelism + "/" + maxParallelism + " coordinator "
                + coordinator + (fullyFinished ? " fully finished" : "") + "\n";
    }

    private static String subtaskLine(int index, Map<String, String> states) {
        if (states.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder("  subtask " + index + ":");
        states.forEach((name, modeAndCount) -> b.append(" [").append(name).append("=").append(modeAndCount).append("]"));
        return b.append("\n").toString();
    }

    /** The same state in two handles of a subtask: "MODE n" + "MODE m" = "MODE n+m". */
    private static String sum(String a, String b) {
        String[] x = a.split(" ");
        String[] y = b.split(" ");
        return (x[0].equals(y[0]) ? x[0] : x[0] + "|" + y[0]) + " " + (Long.parseLong(x[1]) + Long.parseLong(y[1]));
    }
}
