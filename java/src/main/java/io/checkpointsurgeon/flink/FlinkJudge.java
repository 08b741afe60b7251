package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.SurgeryPlan;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;

/**
 * Loads a written {@code _metadata} with Flink's own {@code Checkpoints.loadCheckpointMetadata},
 * when Flink is on the classpath. Reflection keeps this jar free of any compile-time Flink
 * dependency, so one jar serves every Flink version.
 */
public final class FlinkJudge {
    private static final String CHECKPOINTS = "org.apache.flink.runtime.checkpoint.Checkpoints";

    private FlinkJudge() {}

    /** Whether Flink's loader is on this class's class path: asked once (a miss opens every jar of it). */
    public static boolean flinkAvailable() {
        Boolean known = available;
        if (known == null) {
            // the jar alone holds no Flink: only the boot class path (-Xbootclasspath/a) is looked in
            ClassLoader loader = classPathIsThisJarAlone() ? ClassLoader.getPlatformClassLoader()
                    : FlinkJudge.class.getClassLoader();
            try {
                Class.forName(CHECKPOINTS, false, loader);
                known = true;
            } catch (ClassNotFoundException | LinkageError e) {
                known = false;
            }
            available = known;
        }
        return known;
    }

    /**
     * Whether the application class path is this library's jar alone (the CLI's launcher,
     * {@code java -jar}): the jar holds no Flink, so a lookup there can only miss, and a miss opens
     * the jar, whose classes the CLI otherwise takes from its class-data archive without opening it
     * (~4 ms of a doctor's ~90). Anything else, a path that only a link makes equal included, is
     * looked up in full.
     */
    static boolean classPathIsThisJarAlone() {
        String classPath = System.getProperty("java.class.path", "");
        if (classPath.isEmpty() || classPath.indexOf(java.io.File.pathSeparatorChar) >= 0
                || FlinkJudge.class.getClassLoader() != ClassLoader.getSystemClassLoader()) {
            return false;
        }
        try {
            java.security.CodeSource source = FlinkJudge.class.getProtectionDomain().getCodeSource();
            if (source == null || source.getLocation() == null || !source.getLocation().getPath().endsWith(".jar")) return false;
            return Path.of(source.getLocation().toURI()).normalize().equals(Path.of(classPath).toAbsolutePath().normalize());
        } catch (java.net.URISyntaxException | RuntimeException e) {
            return false;
        }
    }

    private static volatile Boolean available;

    public static String flinkVersion() {
        try {
            Class<?> v = Class.forName("org.apache.flink.runtime.util.EnvironmentInformation");
            return String.valueOf(v.getMethod("getVersion").invoke(null));
        } catch (ReflectiveOperationException | LinkageError e) {
            return "?";
        }
    }

    /**
     * Loads the file with Flink and checks it has {@code expectedOperators} operators.
     *
     * @return the verdict, loaded by Flink
     * @throws CheckpointSurgeonException {@code VALIDATION} if Flink cannot load it
     */
    /**
     * Loads {@code _metadata} bytes with Flink before they are written anywhere. Flink resolves
     * relative handles against {@code externalPointer}, which must be an existing checkpoint
     * directory (it is only resolved, no state file is opened); {@code name} names the bytes.
     */
    public static SurgeryPlan.Validation validate(byte[] metadata, String name, String externalPointer, int expectedOperators)
            throws CheckpointSurgeonException {
        ClassLoader cl = FlinkJudge.class.getClassLoader();
        try {
            Class<?> checkpoints = Class.forName(CHECKPOINTS, true, cl);
            Method load = checkpoints.getMethod("loadCheckpointMetadata", DataInputStream.class, ClassLoader.class,
                    String.class);
            Object md = load.invoke(null, new DataInputStream(new java.io.ByteArrayInputStream(metadata)), cl,
                    externalPointer);
            Collection<?> ops = (Collection<?>) md.getClass().getMethod("getOperatorStates").invoke(md);
            if (ops.size() != expectedOperators) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, name + ": Flink loaded " + ops.size()
                        + " operators, expected " + expectedOperators);
            }
            return SurgeryPlan.Validation.loadedByFlink(flinkVersion(), ": " + ops.size() + " operators");
        } catch (InvocationTargetException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, name + ": Flink's Checkpoints.loadCheckpointMetadata"
                    + " rejected the new metadata (nothing was written): " + e.getCause(), e.getCause());
        } catch (CheckpointSurgeonException e) {
            throw e;
        } catch (Exception | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, name + ": could not run Flink's loader: " + e, e);
        }
    }

    public static SurgeryPlan.Validation validate(Path metadata, int expectedOperators) throws CheckpointSurgeonException {
        ClassLoader cl = FlinkJudge.class.getClassLoader();
        try {
            Class<?> checkpoints = Class.forName(CHECKPOINTS, true, cl);
            Method load = checkpoints.getMethod("loadCheckpointMetadata", DataInputStream.class, ClassLoader.class,
                    String.class);
            Object md;
            try (InputStream in = new BufferedInputStream(Files.newInputStream(metadata), 1 << 20)) {
                // the file itself as the pointer: Flink takes its directory as the exclusive one, and a
                // staged file (_metadata.tmp-*) is judged before any _metadata exists there
                md = load.invoke(null, new DataInputStream(in), cl, metadata.toString());
            }
            Collection<?> ops = (Collection<?>) md.getClass().getMethod("getOperatorStates").invoke(md);
            if (ops.size() != expectedOperators) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, metadata + ": Flink loaded " + ops.size()
                        + " operators, expected " + expectedOperators);
            }
            return SurgeryPlan.Validation.loadedByFlink(flinkVersion(), ": " + ops.size() + " operators");
        } catch (InvocationTargetException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, metadata + ": Flink's Checkpoints.loadCheckpointMetadata"
                    + " rejected the new file: " + e.getCause(), e.getCause());
        } catch (CheckpointSurgeonException e) {
            throw e;
        } catch (Exception | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, metadata + ": could not run Flink's loader: " + e, e);
        }
    }
}
