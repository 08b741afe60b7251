package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.StateFile;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The typed calls of the native library: each loads the library if needed, encodes its arguments
 * with {@link Wire}, calls one {@link NativeBridge} native and decodes the result. Not API.
 */
final class Native {
    private Native() {}

    static InspectReport inspect(byte[] source) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.report(NativeBridge.inspect(source));
    }

    /** The plan; with a {@code streamDir}, also the stage step of {@link Commit} (see {@link NativeBridge#plan}). */
    static SurgeryPlan.Staged plan(byte[] source, Surgery surgery, Path streamDir, String outputUri)
            throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.plan(NativeBridge.plan(source, Wire.request(surgery),
                streamDir == null ? null : streamDir.toString(), outputUri));
    }

    static List<io.checkpointsurgeon.flink.StateFile> stateFiles(byte[] source) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.stateFiles(NativeBridge.stateFiles(source));
    }

    /** A source for metadata bytes without mirrors. */
    static byte[] source(byte[] metadata, String name, Path dir) {
        return Wire.source(metadata, name, dir == null ? null : dir.toAbsolutePath().toString(), Map.of());
    }

    /** {@code path} with {@code from} replaced by {@code to}, by relocate's rule; null when it is not under {@code from}. */
    static String relocatedPath(String path, String from, String to) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.relocatedPath(path, from, to);
    }

    static String describe(byte[] metadata) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.describe(metadata);
    }

    static byte[] roundTrip(byte[] metadata) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.roundTrip(metadata);
    }

    /** Takes the commit lock of a directory; returns an id for {@link #unlockDirectory}. */
    static long lockDirectory(Path dir) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.lockDirectory(dir.toString());
    }

    static void unlockDirectory(long id) throws CheckpointSurgeonException {
        NativeBridge.unlockDirectory(id);
    }

    /** The native library's version and platform. */
    static String library() throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.libraryVersion() + " for " + NativeBridge.platform();
    }
}
