package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;

/**
 * The test-only natives ({@code native/testing}), declared here in the test source set and built
 * into a library of their own (the build names it in {@value #LIBRARY}), so that neither a
 * production class nor the shipped library carries them. The production library is loaded first:
 * the tests exercise it, and its version check runs.
 */
final class NativeTesting {
    static final String LIBRARY = "checkpointsurgeon.testing.library";

    static {
        try {
            NativeBridge.ensureLoaded();
        } catch (CheckpointSurgeonException e) {
            throw new ExceptionInInitializerError(e);
        }
        String path = System.getProperty(LIBRARY);
        if (path == null) throw new ExceptionInInitializerError("no -D" + LIBRARY + " (run the tests with gradle)");
        System.load(path);
    }

    private NativeTesting() {}

    /** Decodes any wire payload and encodes it again (tests of the wire). */
    static native byte[] wireEcho(byte[] payload) throws CheckpointSurgeonException;

    /** A payload the native side built from known values ({@code native/src/wire/samples.rs}). */
    static native byte[] wireSample(String name) throws CheckpointSurgeonException;

    /**
     * Decodes a request or source and compares it with the native side's sample {@code name}:
     * empty when they agree, else the fields that differ.
     */
    static native String wireCheck(String name, byte[] payload) throws CheckpointSurgeonException;

    /** The names of Rust's error codes, one per line, in order (the Java enum must match). */
    static native String errorCodes() throws CheckpointSurgeonException;

    /** Panics in Rust: the panic must reach Java as a {@code PANIC} exception. */
    static native void panicForTesting() throws CheckpointSurgeonException;
}
