package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeonException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** The files the CLI writes besides a repair's (--html, --svg). */
final class NewFile {
    private NewFile() {}

    /**
     * Writes {@code text} to a new file, as every file the tool creates: never over an existing path
     * or through a symbolic link (exit 2, naming the {@code option} that asked for it).
     */
    static void write(Path file, String option, String text) throws CheckpointSurgeonException {
        OutputStream o;
        try {
            o = Files.newOutputStream(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e
                    + " (" + option + " writes a new file, never over an existing one)", e);
        }
        try (o) {
            o.write(text.getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            // The file is this run's own: a partial one is removed (disk full, ...).
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // reported below
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e
                    + " (" + option + "; the partial file was removed)", e);
        }
    }
}
