package io.checkpointsurgeon;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * The native methods and the loading of the library. Not API: only {@link CheckpointSurgeon} calls
 * these. The library is taken from the system property {@value #LIBRARY_PROPERTY} when it is set,
 * otherwise from this jar's {@code /native/<os>-<arch>/} resource, extracted to a temporary file and
 * loaded once.
 */
final class NativeBridge {
    static final String LIBRARY_PROPERTY = "checkpointsurgeon.library";
    private static final String LIBRARY_FILE = "libcheckpoint_surgeon.so";

    /** This jar's version (from {@code version.properties}, written by the build). */
    static final String VERSION = readVersion();

    private static final CheckpointSurgeonException LOAD_FAILURE = checkVersion(load());

    private NativeBridge() {}

    static native byte[] inspect(String path) throws CheckpointSurgeonException;

    static byte[] inspectBytes(byte[] metadata, String name, String dir) throws CheckpointSurgeonException {
        return inspectMirrored(metadata, name, dir, null);
    }

    static native String describe(byte[] metadata) throws CheckpointSurgeonException;

    static native byte[] roundTrip(byte[] metadata) throws CheckpointSurgeonException;

    static native byte[] plan(String path, String request) throws CheckpointSurgeonException;

    /**
     * Plans the surgery and stages it in {@code streamDir}: new state files and the new metadata
     * ({@code _metadata.tmp-<uuid>}), each created exclusively and checked (see {@link Commit}).
     */
    static native byte[] stage(String path, String request, String streamDir) throws CheckpointSurgeonException;

    static byte[] planBytes(byte[] metadata, String name, String dir, String request)
            throws CheckpointSurgeonException {
        return planMirrored(metadata, name, dir, request, null);
    }

    /** Takes the commit lock of a directory; returns an id for {@link #unlockDirectory}. */
    static native long lockDirectory(String dir) throws CheckpointSurgeonException;

    static native void unlockDirectory(long id) throws CheckpointSurgeonException;

    static native void panicForTesting() throws CheckpointSurgeonException;

    /** The native library's crate version. */
    static native String libraryVersion() throws CheckpointSurgeonException;

    private static String readVersion() {
        java.util.Properties p = new java.util.Properties();
        try (InputStream in = NativeBridge.class.getResourceAsStream("version.properties")) {
            if (in != null) p.load(in);
        } catch (IOException e) {
            // reported as version "unknown"
        }
        return p.getProperty("version", "unknown");
    }

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
            return new CheckpointSurgeonException("LIBRARY", "the native library has version " + v + ", but this jar is "
                    + VERSION + ": use the library built with this jar (" + (System.getProperty(LIBRARY_PROPERTY) != null
                    ? LIBRARY_PROPERTY + "=" + System.getProperty(LIBRARY_PROPERTY) : "the one bundled in it") + ")");
        }
        return null;
    }

    // Remote checkpoints (RemoteCheckpoint): `mirrors` are lines `remote-prefix<TAB>local-dir`.

    /** Every file-backed stream handle: lines {@code op|other<TAB>relative|file|segment<TAB>path[<TAB>start<TAB>size]}. */
    static native String stateFiles(byte[] metadata) throws CheckpointSurgeonException;

    /** {@link #stateFiles} of a local checkpoint ({@code _metadata} or its directory), read natively. */
    static native String stateFilesOf(String path) throws CheckpointSurgeonException;

    static native byte[] inspectMirrored(byte[] metadata, String name, String dir, String mirrors)
            throws CheckpointSurgeonException;

    static native byte[] planMirrored(byte[] metadata, String name, String dir, String request, String mirrors)
            throws CheckpointSurgeonException;

    /**
     * {@link #stage} on metadata bytes; with an {@code outputUri}, absolute handles of new files
     * name {@code <outputUri>/<file>}, where the caller uploads them from {@code streamDir}.
     */
    static native byte[] stageMirrored(byte[] metadata, String name, String dir, String request, String mirrors,
            String outputUri, String streamDir) throws CheckpointSurgeonException;

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

    private static CheckpointSurgeonException load() {
        String override = System.getProperty(LIBRARY_PROPERTY);
        try {
            if (override != null && !override.isEmpty()) {
                System.load(Path.of(override).toAbsolutePath().toString());
                return null;
            }
            String resource = "/native/" + platform() + "/" + LIBRARY_FILE;
            try (InputStream in = NativeBridge.class.getResourceAsStream(resource)) {
                if (in == null) {
                    return new CheckpointSurgeonException("LIBRARY", "no native library for os.name="
                            + System.getProperty("os.name") + " os.arch=" + System.getProperty("os.arch")
                            + ": resource " + resource + " is not in the jar; build it for this platform"
                            + " and point the system property " + LIBRARY_PROPERTY + " at it");
                }
                Path tmp = Files.createTempFile("checkpoint_surgeon", ".so");
                tmp.toFile().deleteOnExit();
                Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
                System.load(tmp.toAbsolutePath().toString());
            }
            return null;
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            return new CheckpointSurgeonException("LIBRARY", "could not load the native library ("
                    + (override != null ? LIBRARY_PROPERTY + "=" + override : "from the jar, for " + platform())
                    + "): " + e, e);
        }
    }
}
