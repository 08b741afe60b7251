package io.checkpointsurgeon.flink;

/**
 * One file a checkpoint's state lives in, as {@code _metadata} references it: the stream of an
 * operator state handle or of any other handle, a file relative to the checkpoint directory, an
 * absolute file, or a byte range (segment) of a file-merging file.
 */
public final class StateFile {
    /** Where the stream lies. */
    public enum Kind {
        /** A file next to {@code _metadata}, named relative to it. */
        RELATIVE,
        /** A file named by its absolute path. */
        FILE,
        /** A byte range of a file-merging file. */
        SEGMENT
    }

    private final boolean operatorState;
    private final Kind kind;
    private final String path;
    private final long start;
    private final long size;

    public StateFile(boolean operatorState, Kind kind, String path, long start, long size) {
        this.operatorState = operatorState;
        this.kind = kind;
        this.path = path;
        this.start = start;
        this.size = size;
    }

    /** The stream of an operator state handle (the ones inspect and surgery read). */
    public boolean operatorState() {
        return operatorState;
    }

    public Kind kind() {
        return kind;
    }

    public String path() {
        return path;
    }

    /** A segment's first byte in its file (0 for a whole file). */
    public long start() {
        return start;
    }

    /** A segment's size (0 for a whole file). */
    public long size() {
        return size;
    }

    @Override
    public String toString() {
        return kind.name().toLowerCase(java.util.Locale.ROOT) + " " + path
                + (kind == Kind.SEGMENT ? "@" + start + "+" + size : "");
    }
}
