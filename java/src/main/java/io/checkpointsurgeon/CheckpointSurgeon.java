package io.checkpointsurgeon;

import java.nio.file.Path;
import java.util.Objects;

/**
 * The entry point of checkpoint-surgeon: inspect Flink checkpoints, savepoints and their
 * {@code _metadata} bytes. The format work is done by the native library bundled in this jar.
 */
public final class CheckpointSurgeon {
    private CheckpointSurgeon() {}

    /**
     * Inspects a checkpoint or savepoint on the local file system.
     *
     * @param path a {@code _metadata} file, or the directory that holds it
     */
    public static InspectReport inspect(Path path) throws CheckpointSurgeonException {
        Objects.requireNonNull(path, "path");
        NativeBridge.ensureLoaded();
        return InspectReport.decode(NativeBridge.inspect(path.toAbsolutePath().toString()));
    }

    /**
     * Inspects {@code _metadata} bytes already in memory (for example from an HA file or a remote
     * file system).
     *
     * @param name how errors name the input
     * @param checkpointDir where relative state files live, or null if they should not be read
     */
    public static InspectReport inspect(byte[] metadata, String name, Path checkpointDir)
            throws CheckpointSurgeonException {
        Objects.requireNonNull(metadata, "metadata");
        NativeBridge.ensureLoaded();
        return InspectReport.decode(NativeBridge.inspectBytes(
                metadata, name, checkpointDir == null ? null : checkpointDir.toAbsolutePath().toString()));
    }

    /**
     * The canonical text description of {@code _metadata} bytes (see tests/describe-format.md):
     * every operator, subtask and handle, in an order that does not depend on hash order.
     */
    public static String describe(byte[] metadata) throws CheckpointSurgeonException {
        Objects.requireNonNull(metadata, "metadata");
        NativeBridge.ensureLoaded();
        return NativeBridge.describe(metadata);
    }

    /** Parses {@code _metadata} bytes and writes the model again: identical bytes for valid input. */
    public static byte[] roundTrip(byte[] metadata) throws CheckpointSurgeonException {
        Objects.requireNonNull(metadata, "metadata");
        NativeBridge.ensureLoaded();
        return NativeBridge.roundTrip(metadata);
    }
}
