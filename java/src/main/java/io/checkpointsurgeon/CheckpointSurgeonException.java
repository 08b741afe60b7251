package io.checkpointsurgeon;

/**
 * The one exception of checkpoint-surgeon. Its {@link #code()} is stable; README's table of codes
 * says what each means. The native library throws it with the same {@link Code} constants.
 */
public class CheckpointSurgeonException extends Exception {
    private static final long serialVersionUID = 1L;

    /**
     * What went wrong. The twin of Rust's {@code Code} ({@code native/src/error.rs}): same names,
     * same order, checked by a test.
     */
    public enum Code {
        /** The bytes are not what Flink writes: the message names the file, the byte offset and what was expected. */
        FORMAT,
        /** Valid Flink bytes this version of the tool does not handle. */
        UNSUPPORTED,
        /** A file could not be read, created or renamed. */
        IO,
        /** The request cannot be done on this input. */
        INVALID_ARGUMENT,
        /** The selection matches nothing (a typo, or a checkpoint already repaired). */
        NOTHING_SELECTED,
        /** Another run holds the lock of a directory this run would change. */
        LOCKED,
        /** The result failed a check (Flink's loader, the read-back, a file changed meanwhile); nothing was made visible. */
        VALIDATION,
        /** The operation needs Flink's classes on the class path. */
        FLINK_MISSING,
        /** The native library could not be loaded, or is of another version than the jar. */
        LIBRARY,
        /** A payload between Java and the native library is malformed or of another wire version. */
        WIRE,
        /** A JNI call failed. */
        JNI,
        /** A bug: the native code panicked (the JVM keeps running). */
        PANIC,
        /** The JVM shut down (SIGTERM, SIGHUP, SIGINT) before the switch; the run removed what it created, nothing was changed. */
        INTERRUPTED,
    }

    private final Code code;
    private final Message message;

    public CheckpointSurgeonException(Code code, String message) {
        this(code, Message.of(message));
    }

    public CheckpointSurgeonException(Code code, String message, Throwable cause) {
        this(code, Message.of(message), cause);
    }

    /** {@link #getMessage()} is {@code message} as the Java API names its choices. */
    public CheckpointSurgeonException(Code code, Message message) {
        super(message.toString());
        this.code = code;
        this.message = message;
    }

    public CheckpointSurgeonException(Code code, Message message, Throwable cause) {
        super(message.toString(), cause);
        this.code = code;
        this.message = message;
    }

    public Code code() {
        return code;
    }

    /** The message with the choices it names, for a front end to name them its own way ({@link Message#render}). */
    public Message typedMessage() {
        // null only in an instance of another version, deserialized
        return message != null ? message : Message.of(String.valueOf(getMessage()));
    }

    @Override
    public String toString() {
        return "CheckpointSurgeonException[" + code + "]: " + getMessage();
    }
}
