package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * The native methods (the Rust exports of {@code native/src/bridge.rs}) and the loading of the
 * library. Not API: only {@link Native} calls these. The library is taken from the system property
 * {@value #LIBRARY_PROPERTY} when it is set, otherwise from this jar's {@code /native/<os>-<arch>/}
 * resource, extracted to a temporary file and loaded once. The test-only natives are declared by
 * {@code NativeTesting} in the test source set and built into a library of their own
 * ({@code native/testing}) that no jar carries.
 */
final class NativeBridge {
    static final String LIBRARY_PROPERTY = "checkpointsurgeon.library";
    /** A directory with {@code <platform>/libcheckpoint_surgeon.so} (the launcher's lib/native). */
    static final String LIBRARY_DIR_PROPERTY = "checkpointsurgeon.libraryDir";
    private static final String LIBRARY_FILE = "libcheckpoint_surgeon.so";

    /** This jar's version (written by the build, see {@link BuildVersion}). */
    static final String VERSION = BuildVersion.version();

    private static final CheckpointSurgeonException LOAD_FAILURE = checkVersion(load());

    private NativeBridge() {}

    // Arguments and results are Wire payloads: a source is Wire.source(...), a request
    // Wire.request(...); results decode with Wire.report, Wire.plan and Wire.stateFiles.

    /** The inspection report of a checkpoint. */
    static native byte[] inspect(byte[] source) throws CheckpointSurgeonException;

    /**
     * The surgery plan; writes nothing when {@code streamDir} is null. Otherwise also the stage step
     * of {@link Commit}: new state files and the new metadata ({@code _metadata.tmp-<uuid>}) in
     * {@code streamDir}, each created exclusively and checked; absolute handles of new files name
     * {@code <outputUri>/<file>} when {@code outputUri} (a Flink path the caller uploads to) is set.
     * With {@code remoteDir} and {@code reads}, {@code source} is the mirror of that remote
     * checkpoint directory with its operator state only: every other stream (keyed state) is read
     * through {@code reads} in ranges, never staged whole. A {@code rewriter} (may be null;
     * {@code io.checkpointsurgeon.flink.KeyedRewriteJob}) rewrites the keyed streams on a Flink
     * cluster instead of this process's threads.
     */
    static native byte[] plan(byte[] source, byte[] request, String streamDir, String outputUri, String remoteDir,
            KeyedReads reads, Object rewriter) throws CheckpointSurgeonException;

    /** A Flink task's part of a keyed stage on a cluster: one keyed work item rewritten; its result. */
    static native byte[] rewriteKeyedWork(byte[] item) throws CheckpointSurgeonException;

    /** The files the checkpoint's state lives in. */
    static native byte[] stateFiles(byte[] source) throws CheckpointSurgeonException;

    /**
     * The keyed-state report ({@link Wire#keyedReport}) of a checkpoint read with {@code threads}
     * threads. Without {@code remoteDir}, {@code source} names a local checkpoint (or its
     * {@code _metadata} bytes with local files) that the native code reads; with it, {@code source}
     * holds the {@code _metadata} bytes of that remote directory, whose files the native code reads
     * in ranges through {@code reads}. {@code reads} hears the progress (it may be null locally).
     */
    static native byte[] inspectKeyed(byte[] source, String remoteDir, KeyedReads reads, int threads)
            throws CheckpointSurgeonException;

    static native String describe(byte[] metadata) throws CheckpointSurgeonException;

    /** The path as relocate rewrites it from {@code from} to {@code to}; null when it is not under {@code from}. */
    static native String relocatedPath(String path, String from, String to) throws CheckpointSurgeonException;

    static native byte[] roundTrip(byte[] metadata) throws CheckpointSurgeonException;

    /** Takes the commit lock of a directory; returns an id for {@link #unlockDirectory}. */
    static native long lockDirectory(String dir) throws CheckpointSurgeonException;

    static native void unlockDirectory(long id) throws CheckpointSurgeonException;

    /** The native library's crate version. */
    static native String libraryVersion() throws CheckpointSurgeonException;

    /** A library of another version than this jar is refused: the wire between them is not versioned across releases. */
    private static CheckpointSurgeonException checkVersion(CheckpointSurgeonException loadFailure) {
        if (loadFailure != null) return loadFailure;
        String v;
        try {
            v = libraryVersion();
        } catch (CheckpointSurgeonException | UnsatisfiedLinkError e) {
            v = "unknown (" + e + ")";
        }
        if (!v.equals(VERSION)) {
            return new CheckpointSurgeonException(CheckpointSurgeonException.Code.LIBRARY, "the native library has version " + v + ", but this jar is "
                    + VERSION + ": use the library built with this jar (" + (System.getProperty(LIBRARY_PROPERTY) != null
                    ? LIBRARY_PROPERTY + "=" + System.getProperty(LIBRARY_PROPERTY) : "the one bundled in it") + ")");
        }
        return null;
    }

    /** Throws the load failure, if the library could not be loaded. */
    static void ensureLoaded() throws CheckpointSurgeonException {
        if (LOAD_FAILURE != null) {
            throw LOAD_FAILURE;
        }
    }

    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String o = os.startsWith("linux") ? "linux" : os.startsWith("mac") ? "darwin" : os.replace(' ', '_');
        String a = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
        return o + "-" + a;
    }

    /**
     * Copies the library to a new file of the temporary directory, readable by this user only and
     * created exclusively (never an existing path or a link planted there; a taken name is retried).
     * The name is a clock reading: {@code Files.createTempFile} would seed a SecureRandom, ~15 ms of
     * every run's start-up. The file is deleted once loaded.
     */
    private static Path extract(InputStream in) throws IOException {
        Path dir = Path.of(System.getProperty("java.io.tmpdir"));
        for (int attempt = 0; ; attempt++) {
            Path tmp = dir.resolve("checkpoint_surgeon-" + Long.toHexString(System.nanoTime()) + ".so");
            java.nio.channels.SeekableByteChannel ch;
            try {
                ch = Files.newByteChannel(tmp, java.util.EnumSet.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            } catch (FileAlreadyExistsException e) {
                if (attempt < 100) continue;
                throw e;
            }
            try (OutputStream out = java.nio.channels.Channels.newOutputStream(ch)) {
                in.transferTo(out);
            }
            return tmp;
        }
    }

    private static CheckpointSurgeonException load() {
        String override = System.getProperty(LIBRARY_PROPERTY);
        String dir = System.getProperty(LIBRARY_DIR_PROPERTY);
        if ((override == null || override.isEmpty()) && dir != null && !dir.isEmpty()) {
            // the installation's own copy for this platform; else the jar's
            Path installed = Path.of(dir, platform(), LIBRARY_FILE);
            if (Files.isRegularFile(installed)) {
                override = installed.toString();
            }
        }
        try {
            if (override != null && !override.isEmpty()) {
                System.load(Path.of(override).toAbsolutePath().toString());
                return null;
            }
            String resource = "/native/" + platform() + "/" + LIBRARY_FILE;
            try (InputStream in = NativeBridge.class.getResourceAsStream(resource)) {
                if (in == null) {
                    return new CheckpointSurgeonException(CheckpointSurgeonException.Code.LIBRARY, "no native library for os.name="
                            + System.getProperty("os.name") + " os.arch=" + System.getProperty("os.arch")
                            + ": resource " + resource + " is not in the jar; build it for this platform"
                            + " and point the system property " + LIBRARY_PROPERTY + " at it");
                }
                Path tmp = extract(in);
                try {
                    System.load(tmp.toAbsolutePath().toString());
                } finally {
                    // The loaded library stays mapped; its file is not needed after the load.
                    Files.deleteIfExists(tmp);
                }
            }
            return null;
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            return new CheckpointSurgeonException(CheckpointSurgeonException.Code.LIBRARY, "could not load the native library ("
                    + (override != null ? LIBRARY_PROPERTY + "=" + override : "from the jar, for " + platform())
                    + "): " + e, e);
        }
    }
}
