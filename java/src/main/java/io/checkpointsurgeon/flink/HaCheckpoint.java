package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InvalidClassException;
import java.io.OutputStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * An HA {@code completedCheckpoint<random>} file: a Java-serialized {@code CompletedCheckpoint}
 * that a JobManager restores from on failover. Read and written with Flink's own classes, found
 * by reflection so that one jar serves every Flink version; the state inside goes through Flink's
 * own metadata serializer to the native surgery and back through Flink's own loader.
 */
public final class HaCheckpoint {
    private static final String COMPLETED_CHECKPOINT = "org.apache.flink.runtime.checkpoint.CompletedCheckpoint";

    public final Path file;
    public final Object completedCheckpoint;
    public final long checkpointId;
    public final String jobId;
    /** The checkpoint's directory as Flink names it ({@link #relocatePointers} rewrites it). */
    public String externalPointer;

    private HaCheckpoint(Path file, Object cc) throws ReflectiveOperationException {
        this.file = file;
        this.completedCheckpoint = cc;
        this.checkpointId = (Long) call(cc, "getCheckpointID");
        this.jobId = String.valueOf(call(cc, "getJobId"));
        this.externalPointer = (String) call(cc, "getExternalPointer");
    }

    public static HaCheckpoint read(Path file) throws CheckpointSurgeonException {
        requireFlink(file);
        ClassLoader cl = HaCheckpoint.class.getClassLoader();
        java.util.Set<String> mismatches = new java.util.LinkedHashSet<>();
        Object o;
        InputStream raw;
        if (!Files.isRegularFile(file)) {
            // a FIFO would block the open forever
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, file + ": expected a regular file (an HA"
                    + " completedCheckpoint file), found " + (Files.isDirectory(file) ? "a directory"
                    : Files.exists(file) ? "a FIFO, device or socket" : "nothing"));
        }
        try {
            raw = new BufferedInputStream(Files.newInputStream(file), 1 << 20);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e, e);
        }
        SerialFilter filter;
        try {
            filter = new SerialFilter(file.toString(), Files.size(file));
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e, e);
        }
        try (InputStream in = raw; java.io.ObjectInputStream ois = new CheckingObjectInputStream(in, cl, mismatches)) {
            ois.setObjectInputFilter(filter);
            o = ois.readObject();
        } catch (IOException | ClassNotFoundException | RuntimeException e) {
            if (filter.refusal() != null) {
                throw filter.exception(e);
            }
            if (!mismatches.isEmpty()) {
                throw otherVersion(file, mismatches, e);
            }
            if (e instanceof InvalidClassException || e instanceof ClassCastException || e instanceof ClassNotFoundException) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": the HA file was written by a Flink version"
                        + " whose classes differ from Flink " + FlinkJudge.flinkVersion() + " on the classpath: " + e
                        + "; run checkpoint-surgeon with the Flink jars of the cluster that wrote it", e);
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FORMAT, file + ": not a Java-serialized CompletedCheckpoint: " + e, e);
        }
        if (o == null || !o.getClass().getName().equals(COMPLETED_CHECKPOINT)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FORMAT, file + ": expected a " + COMPLETED_CHECKPOINT + ", found "
                    + (o == null ? "null" : o.getClass().getName()));
        }
        if (!mismatches.isEmpty()) {
            throw otherVersion(file, mismatches, null);
        }
        try {
            return new HaCheckpoint(file, o);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": unexpected CompletedCheckpoint shape: " + e, e);
        }
    }

    private static CheckpointSurgeonException otherVersion(Path file, java.util.Set<String> mismatches, Throwable cause) {
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": the HA file was written by another Flink version"
                + " than Flink " + FlinkJudge.flinkVersion() + " on the classpath (" + String.join("; ", mismatches)
                + "); run checkpoint-surgeon with the Flink jars of the cluster that wrote it", cause);
    }

    /**
     * Deserializes with the Flink classes of {@code cl} and records every Flink class whose fields in
     * the stream differ from the class on the classpath. Java serialization accepts such a stream
     * (the serialVersionUIDs of Flink's checkpoint classes never change; missing fields stay null,
     * unknown ones are dropped), so Flink 1.20 and 2.x silently read a 1.15 CompletedCheckpoint;
     * rewriting it with the wrong version's classes must not happen.
     */
    private static final class CheckingObjectInputStream extends java.io.ObjectInputStream {
        private final ClassLoader cl;
        private final java.util.Set<String> mismatches;

        CheckingObjectInputStream(InputStream in, ClassLoader cl, java.util.Set<String> mismatches) throws IOException {
            super(in);
            this.cl = cl;
            this.mismatches = mismatches;
        }

        @Override
        protected java.io.ObjectStreamClass readClassDescriptor() throws IOException, ClassNotFoundException {
            java.io.ObjectStreamClass d = super.readClassDescriptor();
            if (d.getName().startsWith("org.apache.flink.")) {
                java.io.ObjectStreamClass local = java.io.ObjectStreamClass.lookup(Class.forName(d.getName(), false, cl));
                java.util.List<String> inFile = fields(d);
                java.util.List<String> here = local == null ? java.util.List.of() : fields(local);
                if (!inFile.equals(here)) {
                    java.util.List<String> onlyFile = new ArrayList<>(inFile);
                    onlyFile.removeAll(here);
                    java.util.List<String> onlyHere = new ArrayList<>(here);
                    onlyHere.removeAll(inFile);
                    mismatches.add(d.getName() + (local == null ? " is not serializable here"
                            : ": fields only in the file " + onlyFile + ", only here " + onlyHere));
                }
            }
            return d;
        }

        @Override
        protected Class<?> resolveClass(java.io.ObjectStreamClass desc) throws IOException, ClassNotFoundException {
            try {
                return Class.forName(desc.getName(), false, cl);
            } catch (ClassNotFoundException e) {
                return super.resolveClass(desc);
            }
        }
    }

    private static java.util.List<String> fields(java.io.ObjectStreamClass c) {
        java.util.List<String> l = new ArrayList<>();
        for (java.io.ObjectStreamField f : c.getFields()) {
            l.add(f.getName() + ":" + (f.isPrimitive() ? String.valueOf(f.getTypeCode()) : f.getTypeString()));
        }
        java.util.Collections.sort(l);
        return l;
    }

    /**
     * Whether a file name is an HA {@code completedCheckpoint<random>} file, and not one of the
     * {@code .tmp-<uuid>} files this tool stages or the {@code .backup-<millis>} it keeps.
     */
    public static boolean isHaFileName(String name) {
        return name.startsWith("completedCheckpoint") && !name.contains(".backup-") && !name.contains(".tmp-");
    }

    /** A CompletedCheckpoint object that is already in memory (not read from a file). */
    public static HaCheckpoint of(Object completedCheckpoint) throws CheckpointSurgeonException {
        if (completedCheckpoint == null || !completedCheckpoint.getClass().getName().equals(COMPLETED_CHECKPOINT)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "expected a " + COMPLETED_CHECKPOINT + ", got "
                    + (completedCheckpoint == null ? "null" : completedCheckpoint.getClass().getName()));
        }
        try {
            return new HaCheckpoint(null, completedCheckpoint);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "unexpected CompletedCheckpoint shape: " + e, e);
        }
    }

    /** Flink's {@code Checkpoints.storeCheckpointMetadata} of a {@code CheckpointMetadata} object. */
    public static byte[] store(Object checkpointMetadata) throws ReflectiveOperationException {
        Class<?> mdClass = Class.forName("org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata");
        ByteArrayOutputStream bos = new ByteArrayOutputStream(1 << 16);
        Class.forName("org.apache.flink.runtime.checkpoint.Checkpoints")
                .getMethod("storeCheckpointMetadata", mdClass, OutputStream.class)
                .invoke(null, checkpointMetadata, bos);
        return bos.toByteArray();
    }

    /** Flink's {@code Checkpoints.loadCheckpointMetadata} of metadata bytes. */
    public static Object load(byte[] metadata, String externalPointer) throws ReflectiveOperationException {
        Method load = Class.forName("org.apache.flink.runtime.checkpoint.Checkpoints").getMethod(
                "loadCheckpointMetadata", DataInputStream.class, ClassLoader.class, String.class);
        return load.invoke(null, new DataInputStream(new ByteArrayInputStream(metadata)),
                HaCheckpoint.class.getClassLoader(), externalPointer);
    }

    /** The exclusive checkpoint directory (where the checkpoint's relative state files live). */
    public Path checkpointDir() {
        if (externalPointer == null || externalPointer.isEmpty()) {
            return null;
        }
        String p = externalPointer.startsWith("file://") ? externalPointer.substring(7)
                : externalPointer.startsWith("file:") ? externalPointer.substring(5) : externalPointer;
        if (!p.startsWith("/")) {
            return null;
        }
        Path dir = Path.of(p);
        return dir.getFileName() != null && dir.getFileName().toString().equals("_metadata") ? dir.getParent() : dir;
    }

    /** The operator states, serialized with Flink's own default metadata serializer. */
    public byte[] metadataBytes() throws CheckpointSurgeonException {
        try {
            Collection<?> ops = operatorStates().values();
            Collection<?> masters = (Collection<?>) call(completedCheckpoint, "getMasterHookStates");
            Class<?> mdClass = Class.forName("org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata");
            Constructor<?> ctor = mdClass.getConstructor(long.class, Collection.class, Collection.class);
            Object md = ctor.newInstance(checkpointId, new ArrayList<>(ops), new ArrayList<>(masters));
            return store(md);
        } catch (InvocationTargetException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": Flink could not serialize the checkpoint's"
                    + " operator states: " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": " + e, e);
        }
    }

    /**
     * Loads new metadata bytes with Flink's loader and puts its operator states into the
     * CompletedCheckpoint in place of the old ones.
     */
    public void replaceOperatorStates(byte[] metadata) throws CheckpointSurgeonException {
        try {
            Object md = load(metadata, externalPointer);
            Collection<?> ops = (Collection<?>) call(md, "getOperatorStates");
            @SuppressWarnings("unchecked")
            Map<Object, Object> live = (Map<Object, Object>) operatorStates();
            live.clear();
            for (Object op : ops) {
                live.put(call(op, "getOperatorID"), op);
            }
        } catch (InvocationTargetException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": Flink's loader rejected the repaired"
                    + " metadata: " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": " + e, e);
        }
    }

    /** A path rewrite: the new path, or null to keep the old one. */
    public interface PathRewrite {
        String apply(String path) throws CheckpointSurgeonException;
    }

    /**
     * Rewrites the checkpoint's location that the CompletedCheckpoint holds besides its state
     * handles: the external pointer, and in its storage location (Flink's
     * {@code FsCompletedCheckpointStorageLocation}) the pointer, the exclusive checkpoint directory
     * and the {@code _metadata} file handle. Returns how many were rewritten.
     */
    public int relocatePointers(PathRewrite rewrite) throws CheckpointSurgeonException {
        try {
            int n = rewriteString(completedCheckpoint, "externalPointer", rewrite);
            Object location = fieldValue(completedCheckpoint, "storageLocation");
            if (location != null) {
                n += rewriteString(location, "externalPointer", rewrite);
                n += rewritePath(location, "exclusiveCheckpointDir", rewrite);
                Object handle = fieldValue(location, "metadataFileHandle");
                if (handle != null) n += rewritePath(handle, "filePath", rewrite);
                java.lang.reflect.Field fs = field(location.getClass(), "fs");
                if (fs != null && !java.lang.reflect.Modifier.isStatic(fs.getModifiers())) {
                    fs.set(location, null); // the old location's file system; Flink opens it again lazily
                }
            }
            externalPointer = (String) call(completedCheckpoint, "getExternalPointer");
            return n;
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.UNSUPPORTED, file
                    + ": cannot rewrite the checkpoint location in this Flink version's CompletedCheckpoint: " + e, e);
        }
    }

    private static int rewriteString(Object target, String name, PathRewrite rewrite)
            throws ReflectiveOperationException, CheckpointSurgeonException {
        java.lang.reflect.Field f = field(target.getClass(), name);
        Object old = f == null ? null : f.get(target);
        String now = old instanceof String ? rewrite.apply((String) old) : null;
        if (now == null) return 0;
        f.set(target, now);
        return 1;
    }

    private static int rewritePath(Object target, String name, PathRewrite rewrite)
            throws ReflectiveOperationException, CheckpointSurgeonException {
        java.lang.reflect.Field f = field(target.getClass(), name);
        Object old = f == null ? null : f.get(target);
        String now = old == null ? null : rewrite.apply(old.toString());
        if (now == null) return 0;
        f.set(target, old.getClass().getConstructor(String.class).newInstance(now));
        return 1;
    }

    private static Object fieldValue(Object target, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = field(target.getClass(), name);
        return f == null ? null : f.get(target);
    }

    /** A declared field of the class or a superclass, made accessible; null when there is none. */
    private static java.lang.reflect.Field field(Class<?> c, String name) {
        for (; c != null; c = c.getSuperclass()) {
            try {
                java.lang.reflect.Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        return null;
    }

    /** The serialized CompletedCheckpoint, written to a new file (created exclusively) and synced. */
    public void serializeTo(Path tmp) throws CheckpointSurgeonException {
        try {
            try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(tmp, StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE), 1 << 20)) {
                Class.forName("org.apache.flink.util.InstantiationUtil")
                        .getMethod("serializeObject", OutputStream.class, Object.class)
                        .invoke(null, out, completedCheckpoint);
            }
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                ch.force(true);
            }
        } catch (InvocationTargetException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": could not serialize the CompletedCheckpoint: "
                    + e.getCause(), e.getCause());
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, tmp + ": " + e, e);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e, e);
        }
    }

    /** The number of operator states in the CompletedCheckpoint. */
    public int operatorCount() throws CheckpointSurgeonException {
        try {
            return operatorStates().size();
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, file + ": " + e, e);
        }
    }

    private Map<?, ?> operatorStates() throws ReflectiveOperationException {
        return (Map<?, ?>) call(completedCheckpoint, "getOperatorStates");
    }

    private static Object call(Object target, String method) throws ReflectiveOperationException {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (InvocationTargetException e) {
            throw e;
        }
    }

    public static void requireFlink(Path file) throws CheckpointSurgeonException {
        if (!FlinkJudge.flinkAvailable()) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FLINK_MISSING, file + ": reading an HA CompletedCheckpoint needs the"
                    + " Flink jars of the cluster's version on the classpath (for example -cp \"$FLINK_HOME/lib/*\")");
        }
    }
}
