package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.ObjectInputFilter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

/**
 * The JEP 290 filter on every Java deserialization the tool does (HA {@code completedCheckpoint}
 * files; the Kubernetes HA ConfigMaps' pointers, with their own allow-list: {@link KubernetesHa}). Only the classes that a {@code CompletedCheckpoint} graph of a supported Flink version
 * holds are resolved, each no deeper in the graph than real files have it (plus Flink's own
 * {@code StateObject} implementations of its state and checkpoint packages, for handle kinds no
 * fixture holds); everything else is refused before any of its code runs (no {@code readObject}, no constructor). Limits derived from
 * the stream's size bound array lengths, references and bytes, so a small file cannot ask for a
 * large allocation.
 *
 * <p>The allow-list is {@code serialization-allowlist.txt} next to this class (also read by the
 * native check of the {@code CheckpointProperties} trailer of {@code _metadata}): one class a
 * line with the deepest graph depth it may appear at. It was recorded from real HA files of every
 * supported Flink version ({@code gradle -PrecordSerialClasses=DIR testFlink120}, see the README),
 * through the package-private {@link #recording} seam: nothing in a user's JVM (no system property,
 * no environment variable) can switch the filter off.
 */
public final class SerialFilter implements ObjectInputFilter {
    public static final String ALLOWLIST = "serialization-allowlist.txt";

    /** Generous for real graphs (the deepest recorded is far below), small enough to stop nesting bombs. */
    public static final long MAX_DEPTH = 64;

    private static final Map<String, Integer> ALLOWED = load();

    /** Told each class a stream holds, with its graph depth. */
    interface Recording {
        void record(String className, long depth);
    }

    /**
     * The seam of the build's recording lane ({@code SerialClassRecorder}, an agent in the tests'
     * sources): when set, every class is reported to it and allowed (the limits still apply).
     * Null in production.
     */
    static volatile Recording recording;

    private final String file;
    private final long streamLength;
    private final Map<String, Integer> allowed;
    private volatile String refused;

    /** @param streamLength the length of the stream (the file), which bounds every count in it */
    SerialFilter(String file, long streamLength) {
        this(file, streamLength, ALLOWED);
    }

    /**
     * A filter for another kind of stream (the HA pointers of {@link KubernetesHa}): only the
     * classes of {@code allowed} (class name -> deepest depth), with the same limits.
     */
    SerialFilter(String file, long streamLength, Map<String, Integer> allowed) {
        this.file = file;
        this.streamLength = streamLength;
        this.allowed = allowed;
    }

    /** Why the filter refused the stream, or null. */
    String refusal() {
        return refused;
    }

    @Override
    public Status checkInput(FilterInfo info) {
        if (info.depth() > MAX_DEPTH) {
            return reject("objects nested " + info.depth() + " deep (at most " + MAX_DEPTH + ")");
        }
        if (info.references() > streamLength + 1) {
            return reject(info.references() + " object references in a stream of " + streamLength + " bytes");
        }
        if (info.streamBytes() > streamLength + 1) {
            return reject("more than the stream's " + streamLength + " bytes read");
        }
        if (info.arrayLength() > streamLength) {
            return reject("an array of " + info.arrayLength() + " elements in a stream of " + streamLength + " bytes");
        }
        Class<?> c = info.serialClass();
        if (c == null) {
            return Status.UNDECIDED;
        }
        while (c.isArray()) {
            c = c.getComponentType();
        }
        if (c.isPrimitive()) {
            return Status.ALLOWED;
        }
        String name = c.getName();
        Recording r = recording;
        if (r != null) {
            r.record(name, info.depth());
            return Status.ALLOWED;
        }
        Integer maxDepth = allowed.get(name);
        if (maxDepth == null && allowed == ALLOWED && isFlinkStateObject(c)) {
            // a state handle kind no fixture holds (changelog handles, for example): Flink's own
            // StateObject implementations restore plain fields
            maxDepth = (int) MAX_DEPTH - 8;
        }
        if (maxDepth == null) {
            return reject("class " + name + ", which " + (allowed == ALLOWED ? "a CompletedCheckpoint" : "such a stream")
                    + " does not hold (not in the allow-list)");
        }
        if (info.depth() > maxDepth + 8) {
            return reject("class " + name + " nested " + info.depth() + " deep, where real files have it at most "
                    + maxDepth + " deep");
        }
        return Status.ALLOWED;
    }

    /** A {@code StateObject} of Flink's own checkpoint and state packages (the class is not initialized). */
    private static boolean isFlinkStateObject(Class<?> c) {
        String n = c.getName();
        if (!n.startsWith("org.apache.flink.runtime.state.") && !n.startsWith("org.apache.flink.runtime.checkpoint.")) {
            return false;
        }
        try {
            Class<?> stateObject = Class.forName("org.apache.flink.runtime.state.StateObject", false, c.getClassLoader());
            return stateObject.isAssignableFrom(c);
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    private Status reject(String why) {
        if (refused == null) {
            refused = why;
        }
        return Status.REJECTED;
    }

    /** The message of a refusal: names the file and what was refused. */
    CheckpointSurgeonException exception(Throwable cause) {
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.FORMAT, file + ": refused to deserialize " + refused + "; nothing"
                + " of it was instantiated", cause);
    }

    /** Class name -> deepest allowed depth, from the allow-list resource. */
    public static Map<String, Integer> allowList() {
        return ALLOWED;
    }

    private static Map<String, Integer> load() {
        Map<String, Integer> m = new HashMap<>();
        try (InputStream in = SerialFilter.class.getResourceAsStream(ALLOWLIST)) {
            if (in == null) {
                throw new IllegalStateException("resource " + ALLOWLIST + " is missing from the jar");
            }
            BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
            String line;
            while ((line = r.readLine()) != null) {
                line = line.trim();
                if (line.isEmpty() || line.startsWith("#")) continue;
                String[] f = line.split("\\s+");
                m.put(f[0], f.length > 1 ? Integer.parseInt(f[1]) : (int) MAX_DEPTH);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return Collections.unmodifiableMap(m);
    }
}
