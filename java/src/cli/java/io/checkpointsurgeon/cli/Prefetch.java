package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.flink.FlinkJudge;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;

/**
 * inspect and doctor read the checkpoint on the other core while picocli builds the command
 * (~60 ms of start-up): the report of the operand right after the command name, when it is a
 * local path, is computed ahead, and the command takes it when it inspects that same path.
 * Inspecting writes nothing, so a report no command takes costs only its time.
 */
final class Prefetch {
    static final ThreadLocal<Prefetch> CURRENT = new ThreadLocal<>();
    final String path;
    final FutureTask<InspectReport> report;

    Prefetch(String path) {
        this.path = path;
        // A Flink path needs the file systems the command configures first: not read ahead.
        this.report = new FutureTask<>(() -> CheckpointSurgeon.isFlinkPath(path) ? null : CheckpointSurgeon.inspect(path));
    }

    /** The report of {@code path}: the one read ahead when it is of this path, else a new one. */
    static InspectReport inspect(String path) throws CheckpointSurgeonException {
        return inspect(path, false);
    }

    /**
     * {@link #inspect(String)} for the doctor, which also asks whether Flink is on the class path: the
     * first miss opens every jar of the class path (~4 ms), done here while the checkpoint is read.
     */
    static InspectReport inspect(String path, boolean doctor) throws CheckpointSurgeonException {
        Prefetch p = CURRENT.get();
        if (p != null && p.path.equals(path)) {
            // While the other thread loads the library and reads the checkpoint, this one does
            // what would otherwise follow the read: the first non-capturing lambda a JVM links
            // needs a method-handle form the class-data archive does not hold, and the JVM
            // generates its bytecode (4-14 ms); linked here, not by the report's decoding. (No
            // String.format here: the text path formats nothing, and its ~20 ms of locale set-up
            // competed with the read for the two cores.)
            java.util.function.Function.identity();
            if (doctor) FlinkJudge.flinkAvailable();
            p.report.run(); // unless the other thread has started it
            try {
                InspectReport r = p.report.get();
                if (r != null) return r;
            } catch (ExecutionException e) {
                // read again below, so that the failure is this thread's own
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return CheckpointSurgeon.inspect(path);
    }
}
