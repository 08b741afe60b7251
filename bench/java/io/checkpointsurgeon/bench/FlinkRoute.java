package io.checkpointsurgeon.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.core.fs.CloseableRegistry;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.StateObjectCollection;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.state.DefaultOperatorStateBackend;
import org.apache.flink.runtime.state.DefaultOperatorStateBackendBuilder;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;

/**
 * Flink's own Java route to drop a stale operator state: {@link Checkpoints#loadCheckpointMetadata},
 * remove the state from the map of every {@link OperatorStreamStateHandle} of every subtask
 * (rebuilding the handles, subtask states and operator states), {@link Checkpoints#storeCheckpointMetadata}
 * into a new directory (with fsync), and hard-link the input's state files next to it so that
 * relative handles resolve. Like checkpoint-surgeon's {@code --metadata-only}, the streams keep the
 * state (Flink has no API to rewrite them).
 *
 * <pre>
 * FlinkRoute remove CHECKPOINT_DIR OUT_DIR STATE   prints "flink load_ms=.. edit_ms=.. store_ms=.. total_ms=.."
 * FlinkRoute check  CHECKPOINT_DIR STATE           loads with Flink; exit 0 iff no handle names STATE
 * </pre>
 * Exit codes: 0 ok, 2 check failed, 4 the JVM ran out of memory, 5 another failure.
 */
public final class FlinkRoute {
    private FlinkRoute() {}

    public static void main(String[] args) {
        try {
            System.exit(run(args));
        } catch (OutOfMemoryError e) {
            System.err.println("flink OutOfMemoryError: " + e.getMessage());
            System.exit(4);
        } catch (Throwable e) {
            System.err.println("flink failure: " + e);
            e.printStackTrace();
            System.exit(5);
        }
    }

    static int run(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("check")) {
            return check(Path.of(args[1]), args[2]);
        }
        if (args.length != 4 || !args[0].equals("remove")) {
            System.err.println("usage: FlinkRoute remove CHECKPOINT_DIR OUT_DIR STATE | check CHECKPOINT_DIR STATE");
            return 1;
        }
        Path in = Path.of(args[1]).toAbsolutePath();
        Path out = Path.of(args[2]).toAbsolutePath();
        String state = args[3];

        long t0 = System.nanoTime();
        CheckpointMetadata md = load(in);
        long t1 = System.nanoTime();
        int[] removed = {0};
        List<OperatorState> ops = new ArrayList<>();
        for (OperatorState op : md.getOperatorStates()) {
            OperatorState copy = new OperatorState(op.getOperatorID(), op.getParallelism(), op.getMaxParallelism());
            copy.setCoordinatorState(op.getCoordinatorState());
            for (Map.Entry<Integer, OperatorSubtaskState> e : op.getSubtaskStates().entrySet()) {
                OperatorSubtaskState st = e.getValue();
                copy.putState(e.getKey(), st.toBuilder()
                        .setManagedOperatorState(without(st.getManagedOperatorState(), state, removed))
                        .setRawOperatorState(without(st.getRawOperatorState(), state, removed))
                        .build());
            }
            ops.add(copy);
        }
        CheckpointMetadata edited = new CheckpointMetadata(md.getCheckpointId(), ops, md.getMasterStates(),
                md.getCheckpointProperties());
        md = null;
        long t2 = System.nanoTime();
        if (removed[0] == 0) {
            System.err.println("state " + state + " not found");
            return 2;
        }
        Files.createDirectories(out);
        try (FileOutputStream fos = new FileOutputStream(out.resolve("_metadata").toFile());
                DataOutputStream dos = new DataOutputStream(new BufferedOutputStream(fos, 1 << 16))) {
            Checkpoints.storeCheckpointMetadata(edited, dos);
            dos.flush();
            fos.getFD().sync();
        }
        try (Stream<Path> files = Files.list(in)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                if (!f.getFileName().toString().equals("_metadata") && Files.isRegularFile(f)) {
                    Files.createLink(out.resolve(f.getFileName()), f);
                }
            }
        }
        long t3 = System.nanoTime();
        System.out.printf("flink load_ms=%.1f edit_ms=%.1f store_ms=%.1f total_ms=%.1f removed_entries=%d out_bytes=%d%n",
                (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6, (t3 - t0) / 1e6, removed[0],
                Files.size(out.resolve("_metadata")));
        return 0;
    }

    static CheckpointMetadata load(Path dir) throws Exception {
        try (InputStream fin = Files.newInputStream(dir.resolve("_metadata"));
                DataInputStream in = new DataInputStream(new BufferedInputStream(fin, 1 << 16))) {
            return Checkpoints.loadCheckpointMetadata(in, FlinkRoute.class.getClassLoader(), dir.toString());
        }
    }

    static StateObjectCollection<OperatorStateHandle> without(
            StateObjectCollection<OperatorStateHandle> handles, String state, int[] removed) {
        List<OperatorStateHandle> result = new ArrayList<>(handles.size());
        for (OperatorStateHandle h : handles) {
            if (h instanceof OperatorStreamStateHandle s && s.getStateNameToPartitionOffsets().containsKey(state)) {
                Map<String, OperatorStateHandle.StateMetaInfo> map = new HashMap<>(s.getStateNameToPartitionOffsets());
                map.remove(state);
                removed[0]++;
                result.add(new OperatorStreamStateHandle(map, s.getDelegateStateHandle()));
            } else {
                result.add(h);
            }
        }
        return new StateObjectCollection<>(result);
    }

    /** Loads with Flink and counts the handles that still name the state. */
    static int check(Path dir, String state) throws Exception {
        CheckpointMetadata md = load(dir.toAbsolutePath());
        int handles = 0;
        int naming = 0;
        for (OperatorState op : md.getOperatorStates()) {
            for (OperatorSubtaskState st : op.getStates()) {
                for (OperatorStateHandle h : st.getManagedOperatorState()) {
                    handles++;
                    if (h.getStateNameToPartitionOffsets().containsKey(state)) {
                        naming++;
                    }
                }
            }
        }
        // Restore subtask 0's operator state backend: this reads the (possibly rewritten) stream.
        OperatorState first = md.getOperatorStates().iterator().next();
        DefaultOperatorStateBackend backend = new DefaultOperatorStateBackendBuilder(FlinkRoute.class.getClassLoader(),
                new ExecutionConfig(), false, first.getState(0).getManagedOperatorState(), new CloseableRegistry())
                .build();
        List<String> registered = new ArrayList<>(backend.getRegisteredStateNames());
        java.util.Collections.sort(registered);
        backend.dispose();
        System.out.println("flink check " + dir + ": " + md.getOperatorStates().size() + " operators, " + handles
                + " operator state handles, " + naming + " name " + state
                + "; subtask 0 restores with registered states " + registered);
        return naming == 0 ? 0 : 2;
    }
}
