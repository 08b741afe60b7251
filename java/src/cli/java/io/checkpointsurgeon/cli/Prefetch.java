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
    final Ahead report;

    Prefetch(String path) {
        this.path = path;
        this.report = new Ahead();
    }

    /**
     * The read ahead. {@link #take()} runs it on the caller's thread unless the other thread has
     * started it, and reads again on the caller's thread when it failed there, so that the failure
     * is the caller's own; {@link #get()} is {@code take()} for the library's {@code doctor}.
     */
    final class Ahead extends FutureTask<InspectReport> {
        Ahead() {
            // A Flink path needs the file systems the command configures first: not read ahead.
            super(() -> CheckpointSurgeon.isFlinkPath(path) ? null : CheckpointSurgeon.inspect(path));
        }

        InspectReport take() throws CheckpointSurgeonException {
            run(); // unless the other thread has started it
            try {
                InspectReport r = super.get();
                if (r != null) return r;
            } catch (ExecutionException e) {
                // read again below
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return CheckpointSurgeon.inspect(path);
        }

        @Override
        public InspectReport get() throws ExecutionException {
            try {
                return take();
            } catch (CheckpointSurgeonException e) {
                throw new ExecutionException(e);
            }
        }
    }

    /** The report of {@code path}: the one read ahead when it is of this path, else a new one. */
    static InspectReport inspect(String path) throws CheckpointSurgeonException {
        Ahead ahead = ahead(path, false);
        return ahead == null ? CheckpointSurgeon.inspect(path) : ahead.take();
    }

    /**
     * The read ahead of {@code path} (under way, perhaps), or null when none is of this path. For the
     * doctor, which also asks whether Flink is on the class path: the first miss opens every jar of
     * the class path (~4 ms), done here while the checkpoint is read.
     */
    static Ahead ahead(String path, boolean doctor) {
        Prefetch p = CURRENT.get();
        if (p == null || !p.path.equals(path)) return null;
        // While the other thread loads the library and reads the checkpoint, this one does
        // what would otherwise follow the read: the first non-capturing lambda a JVM links
        // needs a method-handle form the class-data archive does not hold, and the JVM
        // generates its bytecode (4-14 ms); linked here, not by the report's decoding. (No
        // String.format here: the text path formats nothing, and its ~20 ms of locale set-up
        // competed with the read for the two cores.)
        java.util.function.Function.identity();
        if (doctor) FlinkJudge.flinkAvailable();
        return p.report;
    }
}
