package io.checkpointsurgeon;

/**
 * The one exception of checkpoint-surgeon. {@link #code()} is stable: {@code FORMAT} (the bytes do
 * not follow Flink's format; the message names the file, the byte offset and what was expected),
 * {@code UNSUPPORTED}, {@code IO}, {@code INVALID_ARGUMENT}, {@code VALIDATION}, {@code LIBRARY}
 * (the native library could not be loaded), {@code PANIC} (a bug in the native code, caught at the
 * boundary) and {@code JNI}.
 */
public class CheckpointSurgeonException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String code;

    public CheckpointSurgeonException(String code, String message) {
        super(message);
        this.code = code;
    }

    public CheckpointSurgeonException(String code, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
    }

    /** Called by the native library with {@code "CODE: message"}. */
    CheckpointSurgeonException(String codeAndMessage) {
        this(codeOf(codeAndMessage), messageOf(codeAndMessage));
    }

    public String code() {
        return code;
    }

    @Override
    public String toString() {
        return "CheckpointSurgeonException[" + code + "]: " + getMessage();
    }

    private static String codeOf(String s) {
        int i = s.indexOf(": ");
        return i > 0 && s.substring(0, i).matches("[A-Z_]+") ? s.substring(0, i) : "NATIVE";
    }

    private static String messageOf(String s) {
        int i = s.indexOf(": ");
        return i > 0 && s.substring(0, i).matches("[A-Z_]+") ? s.substring(i + 2) : s;
    }
}
