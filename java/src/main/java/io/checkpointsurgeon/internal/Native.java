package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.KeyedRewriteJob;
import io.checkpointsurgeon.flink.RangedReads;
import io.checkpointsurgeon.flink.RemoteCheckpoint;
import io.checkpointsurgeon.flink.StateFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * The typed calls of the native library: each loads the library if needed, encodes its arguments
 * with {@link Wire}, calls one {@link NativeBridge} native and decodes the result. Not API: the
 * public ones are for {@code io.checkpointsurgeon}'s entry class.
 */
public final class Native {
    private Native() {}

    /** This jar's version; the native library must have the same. */
    public static final String VERSION = NativeBridge.VERSION;

    /** The inspection report of a local checkpoint ({@code _metadata} or its directory). */
    public static InspectReport inspect(Path checkpoint) throws CheckpointSurgeonException {
        return inspect(Wire.source(checkpoint));
    }

    /** The inspection report of {@code _metadata} bytes; relative state files are read in {@code dir} (or not, when null). */
    public static InspectReport inspect(byte[] metadata, String name, Path dir) throws CheckpointSurgeonException {
        return inspect(source(metadata, name, dir));
    }

    static InspectReport inspect(byte[] source) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.report(NativeBridge.inspect(source));
    }

    /**
     * Requests at once to a remote file system while keyed state is read: each reads an SST
     * file's tail or streams one canonical or heap stream.
     */
    static final int REMOTE_THREADS = 8;

    /**
     * The keyed-state report of a local checkpoint, read with one thread per core. A moved
     * checkpoint's files are refused on the first read; only then are its files listed and the
     * moved ones read again at their places here.
     */
    public static KeyedReport inspectKeyed(Path checkpoint, ProgressListener progress) throws CheckpointSurgeonException {
        byte[] source = Wire.source(checkpoint);
        KeyedReport r = inspectKeyed(source, progress);
        if (!MovedCheckpoint.refusedSome(r)) return r;
        MovedCheckpoint moved = MovedCheckpoint.of(checkpoint, stateFiles(source));
        if (moved == null) return r;
        progress.message("keyed state of " + checkpoint + ": " + moved.note());
        return inspectKeyed(moved.source(), progress);
    }

    private static KeyedReport inspectKeyed(byte[] source, ProgressListener progress) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.keyedReport(NativeBridge.inspectKeyed(source, null, new KeyedReads(null, progress),
                Runtime.getRuntime().availableProcessors()));
    }

    /**
     * The keyed-state report of a checkpoint on a Flink path: {@code _metadata} is read whole,
     * every other file in ranges through Flink's FileSystem, {@value #REMOTE_THREADS} at a time.
     */
    public static KeyedReport inspectKeyedRemote(String path, ProgressListener progress)
            throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        String[] loc = RemoteCheckpoint.locate(path);
        byte[] metadata;
        try {
            metadata = FlinkFileSystems.readAll(loc[1]);
        } catch (IOException e) {
            throw RemoteCheckpoint.io(loc[1], e);
        }
        try (RangedReads files = new RangedReads()) {
            KeyedReport r = Wire.keyedReport(NativeBridge.inspectKeyed(source(metadata, loc[1], null), loc[0],
                    new KeyedReads(files, progress), REMOTE_THREADS));
            progress.message(String.format(java.util.Locale.ROOT, "keyed state of %s: %s fetched in %,d ranged reads",
                    loc[0], InspectReport.formatBytes(files.bytesRead()), files.requests()));
            return r;
        }
    }

    /** The files the state of a local checkpoint lives in. */
    public static List<StateFile> stateFiles(Path metadata) throws CheckpointSurgeonException {
        return stateFiles(Wire.source(metadata));
    }

    /** The files {@code _metadata} bytes reference ({@code name} names them in errors); relative ones as named. */
    public static List<StateFile> stateFiles(byte[] metadata, String name) throws CheckpointSurgeonException {
        return stateFiles(source(metadata, name, null));
    }

    static List<StateFile> stateFiles(byte[] source) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.stateFiles(NativeBridge.stateFiles(source));
    }

    /** The plan only: nothing is written. */
    static SurgeryPlan plan(byte[] source, Request request) throws CheckpointSurgeonException {
        return plan(source, request, null, null).plan;
    }

    /** The plan; with a {@code streamDir}, also the stage step of {@link Commit} (see {@link NativeBridge#plan}). */
    static Staged plan(byte[] source, Request request, Path streamDir, String outputUri)
            throws CheckpointSurgeonException {
        return plan(source, request, streamDir, outputUri, null, null, null, null);
    }

    /** {@link #plan(byte[], Request, Path, String)}, the keyed streams rewritten by {@code rewriter} when it is set. */
    static Staged plan(byte[] source, Request request, Path streamDir, String outputUri, KeyedRewriteJob rewriter)
            throws CheckpointSurgeonException {
        return plan(source, request, streamDir, outputUri, null, null, rewriter, null);
    }

    /**
     * {@link #plan(byte[], Request, Path, String)} of the mirror of the remote checkpoint directory
     * {@code remoteDir}: the streams the mirror does not hold (keyed state) are read through
     * {@code files} in ranges.
     */
    static Staged plan(byte[] source, Request request, Path streamDir, String outputUri, String remoteDir,
            RangedReads files) throws CheckpointSurgeonException {
        return plan(source, request, streamDir, outputUri, remoteDir, files, null, null);
    }

    /**
     * {@link #plan(byte[], Request, Path, String, String, RangedReads)} whose stage streams the
     * rewritten keyed state files straight to {@code outputUri} (never staged locally): each path
     * it creates there goes into {@code created} as soon as it exists.
     */
    static Staged planStreaming(byte[] source, Request request, Path streamDir, String outputUri, String remoteDir,
            RangedReads files, java.util.Set<String> created) throws CheckpointSurgeonException {
        return plan(source, request, streamDir, outputUri, remoteDir, files, null, created);
    }

    private static Staged plan(byte[] source, Request request, Path streamDir, String outputUri, String remoteDir,
            RangedReads files, KeyedRewriteJob rewriter, java.util.Set<String> created)
            throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return Wire.plan(NativeBridge.plan(source, Wire.request(request),
                streamDir == null ? null : streamDir.toString(), outputUri, remoteDir,
                files == null ? null : new KeyedReads(files, CheckpointSurgeon.progressListener(), created), rewriter));
    }

    /**
     * A Flink task's part of {@code --on-flink}: rewrites one keyed work item (a stream of the
     * plan, into its new file in the staging directory) and returns what was written. Called
     * by {@link KeyedRewriteJob}'s tasks, on the TaskManagers.
     */
    public static byte[] rewriteKeyedWork(byte[] item) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.rewriteKeyedWork(item);
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

    /** The canonical text description of {@code _metadata} bytes. */
    public static String describe(byte[] metadata) throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.describe(metadata);
    }

    /** Parses {@code _metadata} bytes and writes the model again. */
    public static byte[] roundTrip(byte[] metadata) throws CheckpointSurgeonException {
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

    /**
     * Why a repair holds {@code dir}'s commit lock now, or null: the lock is tried without waiting
     * and released at once. A directory gone or unreadable meanwhile holds no lock of a repair.
     */
    public static String lockHeld(Path dir) throws CheckpointSurgeonException {
        long id;
        try {
            id = lockDirectory(dir);
        } catch (CheckpointSurgeonException e) {
            if (e.code() == CheckpointSurgeonException.Code.LOCKED) return e.getMessage();
            return null;
        }
        unlockDirectory(id);
        return null;
    }

    /** The native library's version and platform ({@code 0.2.0 for linux-x86_64}), loading it if needed. */
    public static String library() throws CheckpointSurgeonException {
        NativeBridge.ensureLoaded();
        return NativeBridge.libraryVersion() + " for " + NativeBridge.platform();
    }
}
