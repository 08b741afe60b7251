package io.checkpointsurgeon;

import java.nio.file.Path;
import java.util.List;

/**
 * What the library reports while it works, for an application to show: transfers of state files
 * that take a while, each file of a run over many HA files, each step of the commit sequence. The
 * library never prints; it reports here ({@link CheckpointSurgeon#setProgressListener}), and
 * without a listener nothing is reported.
 */
public interface ProgressListener {
    /** Reports nothing. */
    ProgressListener SILENT = new ProgressListener() {};

    /** The steps of the commit sequence, in order; {@link #toString()} is the step's name. */
    enum CommitStep {
        LOCK, STAGE, VALIDATE, PLACE, BACKUP, SWITCH;

        @Override
        public String toString() {
            return Spelling.of(this);
        }
    }

    /** A line about work that takes a while: a transfer, or a choice the run made because of a size. */
    default void message(String text) {
    }

    /** A {@link #message} that names choices the caller has; by default as the Java API names them. */
    default void message(Message text) {
        message(text.toString());
    }

    /** The run starts on file {@code index} (from 1) of {@code count}. */
    default void file(int index, int count, Path file) {
    }

    /** The commit sequence starts {@code step} of {@code unit} (a checkpoint's {@code _metadata}, an HA file). */
    default void commitStep(CommitStep step, String unit) {
    }

    /**
     * Whether a run that switched is still reported by the shutdown hook after it returned, until
     * this listener is replaced (default no): for an application that prints each outcome itself and
     * replaces its listener once it has (the CLI), so that a SIGTERM between the switch and that
     * report still says which file is the repaired one and where its backup is.
     */
    default boolean outcomeUntilReplaced() {
        return false;
    }

    /**
     * A repair of {@code dir} found files a killed repair left there ({@code found}, not empty),
     * and leaves them; {@link CheckpointSurgeon#removeLeftovers} deletes them. An application
     * names its own way of doing that; by default this is a {@link #message}.
     */
    default void leftoversFound(Path dir, List<Path> found) {
        message("note: " + dir + " holds " + found.size() + " file(s) that a repair killed before its switch left ("
                + found.get(0).getFileName() + (found.size() > 1 ? ", ..." : "") + "); this run leaves them,"
                + " CheckpointSurgeon.removeLeftovers deletes them");
    }
}
