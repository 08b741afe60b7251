package io.checkpointsurgeon.flink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;

/**
 * How the allow-list of {@link SerialFilter} is recorded: a Java agent that the build attaches to
 * a test JVM with {@code -PrecordSerialClasses=DIR} ({@code -javaagent:JAR=DIR/<task>.txt}). It
 * sets the filter's package-private seam, so the filter lets every class through (its limits still
 * apply) and this appends one {@code class depth} line to the file for each class at a depth deeper
 * than any seen before. Test code only: the production classes hold no switch of their own.
 */
public final class SerialClassRecorder implements SerialFilter.Recording {
    private final Path file;
    private final Map<String, Long> deepest = new HashMap<>();

    private SerialClassRecorder(Path file) {
        this.file = file;
    }

    /** The agent's entry point: {@code args} is the record file. */
    public static void premain(String args) {
        if (args == null || args.isEmpty()) {
            throw new IllegalArgumentException("SerialClassRecorder: give the record file, -javaagent:JAR=FILE");
        }
        SerialFilter.recording = new SerialClassRecorder(Path.of(args));
    }

    @Override
    public synchronized void record(String className, long depth) {
        Long old = deepest.get(className);
        if (old != null && old >= depth) return;
        deepest.put(className, depth);
        try {
            Files.writeString(file, className + " " + depth + System.lineSeparator(), StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
