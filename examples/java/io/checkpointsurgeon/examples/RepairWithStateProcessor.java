package io.checkpointsurgeon.examples;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;

/**
 * A State Processor API program that uses checkpoint-surgeon as a library (Flink 1.20):
 * reads the live split state of the operator with uid {@code source_consumer} with Flink's
 * {@link SavepointReader}, removes the stale union state {@code topic-partition-offset-states}
 * with {@link CheckpointSurgeon#apply}, and reads the live state again from the repaired copy.
 *
 * <pre>gradle runExample -PexampleArgs="path/to/chk-42"</pre>
 *
 * Arguments: checkpoint or savepoint directory (default: the bundled 1.20.3 stale-union fixture),
 * operator uid, stale state name, live list state name (a list of Long).
 */
public final class RepairWithStateProcessor {
    public static void main(String[] args) throws Exception {
        Path checkpoint = Path.of(args.length > 0 ? args[0] : "tests/fixtures/1.20.3/stale-union");
        String uid = args.length > 1 ? args[1] : "source_consumer";
        String stale = args.length > 2 ? args[2] : "topic-partition-offset-states";
        String live = args.length > 3 ? args[3] : "position";
        Path repaired = Files.createTempDirectory("repaired-").resolve("checkpoint");
        List<Long> after = run(checkpoint, uid, stale, live, repaired);
        System.out.println("repaired checkpoint: " + repaired + " (" + after.size() + " values of '" + live + "' kept)");
    }

    /** Repairs {@code checkpoint} into {@code repaired}; returns the live state read from the result. */
    public static List<Long> run(Path checkpoint, String uid, String stale, String live, Path repaired) throws Exception {
        InspectReport before = CheckpointSurgeon.inspect(checkpoint);
        long staleElements = before.operators().stream().flatMap(o -> o.stateTotals().stream())
                .filter(t -> t.name().equals(stale)).mapToLong(InspectReport.StateTotal::elements).sum();
        List<Long> liveBefore = readLongList(checkpoint, uid, live);
        System.out.printf("before: %s holds %d elements of '%s'; '%s' = %s%n", checkpoint, staleElements, stale, live,
                liveBefore);

        SurgeryPlan plan = CheckpointSurgeon.apply(checkpoint,
                Surgery.removeState(Surgery.OperatorSelector.uid(uid), stale), repaired);
        System.out.printf("surgery: %d elements removed, _metadata %d -> %d bytes; %s%n", plan.elementsRemoved(),
                plan.metadataBytesBefore(), plan.result().metadataBytes(), plan.result().flinkValidation());

        List<Long> liveAfter = readLongList(repaired, uid, live);
        System.out.printf("after:  '%s' = %s%n", live, liveAfter);
        if (!liveAfter.equals(liveBefore)) {
            throw new IllegalStateException("the live state changed: " + liveBefore + " -> " + liveAfter);
        }
        return liveAfter;
    }

    static List<Long> readLongList(Path checkpoint, String uid, String state) throws Exception {
        Configuration conf = new Configuration();
        conf.setString("rest.bind-port", "0");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
        SavepointReader reader = SavepointReader.read(env, checkpoint.toAbsolutePath().toString());
        List<Long> out = new ArrayList<>();
        try (CloseableIterator<Long> it = reader.readListState(OperatorIdentifier.forUid(uid), state, Types.LONG)
                .executeAndCollect()) {
            it.forEachRemaining(out::add);
        }
        Collections.sort(out);
        return out;
    }
}
