package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectStreamClass;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A cluster's Kubernetes HA ConfigMaps, read with the fabric8 client that Flink's
 * {@code flink-kubernetes} jar shades (on the class path with the cluster's Flink jars, found by
 * reflection like the rest of this package). Flink labels them {@code app=<cluster-id>,
 * configmap-type=high-availability}. A job's ConfigMap ({@code <cluster-id>-<job-id>-config-map}
 * from Flink 1.15, {@code <cluster-id>-<job-id>-jobmanager-leader} up to 1.14) holds a
 * {@code checkpointID-<19 digits>} key per retained checkpoint whose value is the Base64 of a
 * Java-serialized pointer to the HA {@code completedCheckpoint} file: a {@code
 * RetrievableStreamStateHandle} around a {@code FileStateHandle}, wrapped in a {@code
 * StateHandleWithDeleteMarker} from 1.15. A leader ConfigMap ({@code <cluster-id>-cluster-config-map}
 * from 1.15, one per component up to 1.14) carries the lease in the annotation
 * {@value #LEADER_ANNOTATION}. The one write is {@link #remove}, of one checkpoint pointer.
 */
public final class KubernetesHa implements AutoCloseable {
    private static final String FABRIC8 = "org.apache.flink.kubernetes.shaded.io.fabric8.kubernetes.client.";
    public static final String LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader";
    private static final String CHECKPOINT_KEY = "checkpointID-";
    /** The leader's address per component, "<session id>,<address>" (Flink 1.15+). */
    private static final String LEADER_KEY = "org.apache.flink.k8s.leader.";
    private static final int CONNECT_TIMEOUT_MS = 10_000;
    private static final int REQUEST_TIMEOUT_MS = 15_000;
    private static final String MARKER =
            "org.apache.flink.kubernetes.highavailability.KubernetesStateHandleStore$StateHandleWithDeleteMarker";
    /** Everything a pointer holds, with the depth it is at. */
    private static final Map<String, Integer> POINTER_CLASSES = Map.of(
            MARKER, 1,
            "org.apache.flink.runtime.state.RetrievableStreamStateHandle", 2,
            "org.apache.flink.runtime.state.filesystem.FileStateHandle", 3,
            "org.apache.flink.core.fs.Path", 4,
            "java.net.URI", 5);

    private final Object client;
    public final String masterUrl;
    public final String namespace;
    public final String clusterId;

    /** A {@code checkpointID-<n>} entry of a job's ConfigMap. */
    public static final class Pointer {
        public final String configMap;
        public final String key;
        public final long checkpointId;
        /** From the ConfigMap's name; null if it is not a job's. */
        public final String jobId;
        /** The completedCheckpoint file as Flink names it; null if the value could not be read. */
        public final String target;
        /** The local file, or null (another file system, or unreadable). */
        public final Path file;
        /** Flink no longer recovers from it (deleted by Flink 1.15+ when the checkpoint was subsumed). */
        public final boolean markedForDeletion;
        /** Why the value could not be read, or null. */
        public final String problem;
        /**
         * The version the pointer was read at: its ConfigMap's resourceVersion, or the ZooKeeper
         * node's data version; a removal is compare-and-set on it. Null when not known.
         */
        public final String version;
        /** The exact value as stored (the ConfigMap value's characters, or the node's data); null when not known. */
        final byte[] value;

        Pointer(String configMap, String key, long checkpointId, String jobId, String target, Path file,
                boolean markedForDeletion, String problem) {
            this(configMap, key, checkpointId, jobId, target, file, markedForDeletion, problem, null, null);
        }

        private Pointer(String configMap, String key, long checkpointId, String jobId, String target, Path file,
                        boolean markedForDeletion, String problem, String version, byte[] value) {
            this.configMap = configMap;
            this.key = key;
            this.checkpointId = checkpointId;
            this.jobId = jobId;
            this.target = target;
            this.file = file;
            this.markedForDeletion = markedForDeletion;
            this.problem = problem;
            this.version = version;
            this.value = value;
        }

        /** This pointer as read at {@code version} with its exact {@code value}; {@code marked} adds a deletion mark. */
        Pointer at(String version, byte[] value, boolean marked) {
            return new Pointer(configMap, key, checkpointId, jobId, target, file, markedForDeletion || marked, problem,
                    version, value.clone());
        }

        /** The exact value as stored (a copy). */
        public byte[] value() {
            return value == null ? null : value.clone();
        }

        static Pointer of(String configMap, String key, long checkpointId, String jobId, String target,
                boolean markedForDeletion, String problem) {
            Path file = target == null || !(target.startsWith("file:") || target.startsWith("/")) ? null
                    : FlinkFileSystems.localPath(target).toAbsolutePath().normalize();
            return new Pointer(configMap, key, checkpointId, jobId, target, file, markedForDeletion, problem);
        }

        /** Whether Flink recovers from the file it names: readable, a local file that exists, not marked for deletion. */
        public boolean recoverable() {
            return problem == null && file != null && Files.isRegularFile(file) && !markedForDeletion;
        }

        /** Whether it names no file Flink could recover from (one marked for deletion is on its way out). */
        public boolean withoutFile() {
            return !markedForDeletion && (problem != null || file != null && !Files.isRegularFile(file));
        }

        @Override
        public String toString() {
            return configMap + " " + key + " -> " + (target != null ? target : problem);
        }
    }

    /** The pointers of the ConfigMaps against the HA files of a directory. */
    public static final class Reconciliation {
        /** Every pointer, in the order of {@link #checkpointPointers()}. */
        public final List<Pointer> pointers;
        /** The pointers that name no file Flink could recover from. */
        public final List<Pointer> pointersWithoutFile;
        /** The HA files that no pointer names (Flink does not recover from them). */
        public final List<Path> filesWithoutPointer;

        Reconciliation(List<Pointer> pointers, List<Pointer> pointersWithoutFile, List<Path> filesWithoutPointer) {
            this.pointers = pointers;
            this.pointersWithoutFile = pointersWithoutFile;
            this.filesWithoutPointer = filesWithoutPointer;
        }
    }

    /** Which of {@code haFiles} the pointers name, and which pointers name no file. */
    public static Reconciliation reconcile(List<Pointer> pointers, List<Path> haFiles) {
        Set<Path> pointed = new HashSet<>();
        for (Pointer p : pointers) pointed.add(p.file);
        List<Path> unpointed = new ArrayList<>();
        for (Path f : haFiles) {
            if (!pointed.contains(f.toAbsolutePath().normalize())) unpointed.add(f);
        }
        List<Pointer> withoutFile = new ArrayList<>();
        for (Pointer p : pointers) {
            if (p.withoutFile()) withoutFile.add(p);
        }
        return new Reconciliation(List.copyOf(pointers), withoutFile, unpointed);
    }

    /**
     * The HA files under a directory that a repair may change: those Flink recovers from, as the
     * pointers say; the pointers and files passed over are kept to be named.
     */
    public static final class RepairSelection {
        private final Path dir;
        private final SortedSet<Path> files;
        /** The pointers whose file is not repaired, in order: not {@link Pointer#recoverable()}, or outside the directory. */
        public final List<Pointer> passedOver;
        /** The HA files under the directory that no recoverable pointer names; not repaired. */
        public final List<Path> unpointed;

        RepairSelection(Path dir, SortedSet<Path> files, List<Pointer> passedOver, List<Path> unpointed) {
            this.dir = dir;
            this.files = files;
            this.passedOver = passedOver;
            this.unpointed = unpointed;
        }

        /** The files to repair, in path order; {@code NOTHING_SELECTED} when there are none. */
        public List<Path> files() throws CheckpointSurgeonException {
            if (files.isEmpty()) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "no checkpointID-<n>"
                        + " pointer of the HA ConfigMaps names a completedCheckpoint file under " + dir);
            }
            return new ArrayList<>(files);
        }
    }

    /** The files among {@code haFiles} (those under {@code dir}) that the recoverable pointers name. */
    public static RepairSelection toRepair(List<Pointer> pointers, Path dir, List<Path> haFiles) {
        Path base = dir.toAbsolutePath().normalize();
        SortedSet<Path> files = new TreeSet<>();
        List<Pointer> passedOver = new ArrayList<>();
        for (Pointer p : pointers) {
            if (p.recoverable() && p.file.startsWith(base)) {
                files.add(p.file);
            } else {
                passedOver.add(p);
            }
        }
        List<Path> unpointed = new ArrayList<>();
        for (Path f : haFiles) {
            if (!files.contains(f.toAbsolutePath().normalize())) unpointed.add(f);
        }
        return new RepairSelection(dir, files, passedOver, unpointed);
    }

    private KubernetesHa(Object client, String namespace, String clusterId) throws ReflectiveOperationException {
        this.client = client;
        this.masterUrl = String.valueOf(call(client, "getMasterUrl"));
        this.namespace = namespace;
        this.clusterId = clusterId;
    }

    /**
     * A client of the API server that {@code kubeconfig} names (null: {@code KUBECONFIG} or
     * {@code ~/.kube/config}, or the pod's service account), as Flink's {@code
     * FlinkKubeClientFactory} makes it, with bounded timeouts and no retries.
     */
    public static KubernetesHa connect(Path kubeconfig, String namespace, String clusterId)
            throws CheckpointSurgeonException {
        try {
            Class<?> configClass = Class.forName(FABRIC8 + "Config");
            Object config = kubeconfig == null
                    ? configClass.getMethod("autoConfigure", String.class).invoke(null, (Object) null)
                    : configClass.getMethod("fromKubeconfig", String.class, String.class, String.class)
                            .invoke(null, null, Files.readString(kubeconfig), kubeconfig.toString());
            call(config, "setNamespace", namespace);
            call(config, "setConnectionTimeout", CONNECT_TIMEOUT_MS);
            call(config, "setRequestTimeout", REQUEST_TIMEOUT_MS);
            call(config, "setRequestRetryBackoffLimit", 0);
            Object builder = Class.forName(FABRIC8 + "KubernetesClientBuilder").getConstructor().newInstance();
            return new KubernetesHa(call(call(builder, "withConfig", config), "build"), namespace, clusterId);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FLINK_MISSING, "Kubernetes HA needs"
                    + " Flink's flink-kubernetes jar (in the distribution's opt/ or plugins/) on the class path: " + e, e);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, kubeconfig + ": " + e, e);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "Kubernetes client"
                    + (kubeconfig == null ? "" : " of " + kubeconfig) + ": " + cause(e), cause(e));
        }
    }

    /** What this class reads of a ConfigMap. */
    private static final class ConfigMap {
        final String name;
        final Map<String, String> data;
        final Map<String, String> annotations;
        final String resourceVersion;

        ConfigMap(String name, Map<String, String> data, Map<String, String> annotations, String resourceVersion) {
            this.name = name;
            this.resourceVersion = resourceVersion;
            this.data = new TreeMap<>(data);
            this.annotations = annotations;
        }
    }

    /** The cluster's HA ConfigMaps (Flink's labels), by name. */
    private List<ConfigMap> haConfigMaps() throws CheckpointSurgeonException {
        List<ConfigMap> out = new ArrayList<>();
        try {
            Object list = call(call(call(client, "configMaps"), "withLabels",
                    Map.of("app", clusterId, "configmap-type", "high-availability")), "list");
            for (Object cm : (List<?>) call(list, "getItems")) {
                Object meta = call(cm, "getMetadata");
                out.add(new ConfigMap((String) call(meta, "getName"), orEmpty(call(cm, "getData")),
                        orEmpty(call(meta, "getAnnotations")), (String) call(meta, "getResourceVersion")));
            }
            out.sort(java.util.Comparator.comparing(c -> c.name));
            return out;
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "Kubernetes API server " + masterUrl
                    + ": cannot list the HA ConfigMaps of cluster '" + clusterId + "' in namespace '" + namespace
                    + "': " + describe(cause(e)), cause(e));
        }
    }

    /** The exception and, when another, its root cause (fabric8 wraps a refused connection). */
    private static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        return root == e ? String.valueOf(e) : e + " (" + root + ")";
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> orEmpty(Object m) {
        return m == null ? Map.of() : (Map<String, String>) m;
    }

    /** Every {@code checkpointID-<n>} entry of the cluster's job ConfigMaps, by ConfigMap and id. */
    public List<Pointer> checkpointPointers() throws CheckpointSurgeonException {
        Pattern jobMap = Pattern.compile(Pattern.quote(clusterId) + "-([0-9a-f]{32})-(config-map|jobmanager-leader)");
        List<Pointer> out = new ArrayList<>();
        for (ConfigMap cm : haConfigMaps()) {
            Matcher m = jobMap.matcher(cm.name);
            String jobId = m.matches() ? m.group(1) : null;
            for (Map.Entry<String, String> e : cm.data.entrySet()) {
                if (!e.getKey().startsWith(CHECKPOINT_KEY)) continue;
                try {
                    long id = Long.parseLong(e.getKey().substring(CHECKPOINT_KEY.length()));
                    out.add(pointer(cm.name, e.getKey(), id, jobId, e.getValue())
                            .at(cm.resourceVersion, e.getValue().getBytes(java.nio.charset.StandardCharsets.UTF_8), false));
                } catch (NumberFormatException notOne) {
                    // not Flink's checkpointID-%019d
                }
            }
        }
        return out;
    }

    private static Pointer pointer(String configMap, String key, long id, String jobId, String value) {
        byte[] bytes;
        try {
            bytes = Base64.getDecoder().decode(value);
        } catch (IllegalArgumentException e) {
            return Pointer.of(configMap, key, id, jobId, null, false, "not Base64: " + e.getMessage());
        }
        return pointer(configMap, key, id, jobId, bytes);
    }

    /**
     * A pointer from its serialized handle: a RetrievableStreamStateHandle, in a ConfigMap wrapped
     * in a StateHandleWithDeleteMarker (as is in a ZooKeeper node, {@code configMap} its parent node).
     */
    static Pointer pointer(String configMap, String key, long id, String jobId, byte[] bytes) {
        String name = configMap + " " + key;
        try {
            Object handle = deserialize(name, bytes);
            boolean deleted = false;
            if (handle.getClass().getName().equals(MARKER)) {
                deleted = (Boolean) field(handle, "markedForDeletion");
                handle = field(handle, "inner");
            }
            Object file = field(handle, "wrappedStreamStateHandle");
            if (!file.getClass().getName().equals("org.apache.flink.runtime.state.filesystem.FileStateHandle")) {
                return Pointer.of(configMap, key, id, jobId, null, deleted, "points at a " + file.getClass().getName()
                        + ", not a file");
            }
            Object path = file.getClass().getMethod("getFilePath").invoke(file);
            return Pointer.of(configMap, key, id, jobId, path.toString(), deleted, null);
        } catch (CheckpointSurgeonException e) {
            return Pointer.of(configMap, key, id, jobId, null, false, e.getMessage());
        } catch (ReflectiveOperationException | ClassCastException | NullPointerException e) {
            return Pointer.of(configMap, key, id, jobId, null, false, "not a RetrievableStreamStateHandle of this"
                    + " Flink version: " + e);
        }
    }

    /** Java deserialization through the allow-list of a pointer's classes (SerialFilter). */
    private static Object deserialize(String name, byte[] bytes) throws CheckpointSurgeonException {
        ClassLoader cl = KubernetesHa.class.getClassLoader();
        SerialFilter filter = new SerialFilter(name, bytes.length, POINTER_CLASSES);
        try (InputStream in = new ByteArrayInputStream(bytes); ObjectInputStream ois = new ObjectInputStream(in) {
            @Override
            protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
                return Class.forName(desc.getName(), false, cl);
            }
        }) {
            ois.setObjectInputFilter(filter);
            return ois.readObject();
        } catch (IOException | ClassNotFoundException | RuntimeException e) {
            if (filter.refusal() != null) throw filter.exception(e);
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FORMAT, name
                    + ": not a Java-serialized state handle of this Flink version: " + e, e);
        }
    }

    /**
     * Takes the pointer's key out of its ConfigMap, compare-and-set: the update carries the
     * resourceVersion the pointer was read at (Flink's own {@code lockResourceVersion().update()}),
     * so the API server refuses it (409) when the ConfigMap changed since; then nothing changed.
     * Flink's KubernetesStateHandleStore does the same in its {@code releaseAndTryRemove}.
     */
    public void remove(Pointer p) throws CheckpointSurgeonException {
        String what = "ConfigMap " + p.configMap + " key " + p.key;
        try {
            Object cm = call(call(call(client, "configMaps"), "withName", p.configMap), "get");
            if (cm == null) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, what
                        + ": the ConfigMap is gone since it was read; nothing was changed");
            }
            Map<String, String> data = new TreeMap<>(orEmpty(call(cm, "getData")));
            String now = data.remove(p.key);
            if (now == null || !java.util.Arrays.equals(now.getBytes(java.nio.charset.StandardCharsets.UTF_8), p.value)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, what + " changed since"
                        + " it was read (resourceVersion " + p.version + "): nothing was changed; run again");
            }
            call(cm, "setData", new java.util.LinkedHashMap<>(data));
            call(call(cm, "getMetadata"), "setResourceVersion", p.version);
            call(call(call(client, "resource", cm), "lockResourceVersion"), "update");
        } catch (ReflectiveOperationException e) {
            Throwable c = cause(e);
            Object code = null;
            try {
                code = call(c, "getCode");
            } catch (ReflectiveOperationException | RuntimeException notKubernetes) {
                // another failure
            }
            if (Integer.valueOf(409).equals(code)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, what + ": the ConfigMap"
                        + " changed since it was read (resourceVersion " + p.version + "; the API server refused the"
                        + " update: " + describe(c) + "): nothing was changed; run again", c);
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "Kubernetes API server " + masterUrl
                    + ": updating " + what + " failed (" + describe(c) + "); if the request reached the server, the"
                    + " key is gone, else unchanged: run again to see which", c);
        }
    }

    /**
     * The live leases among the cluster's leader ConfigMaps, as one line: a holder whose renewTime +
     * leaseDuration is still ahead; null when there is none. A JobManager that released its lease
     * leaves an empty holder; one that was killed (or whose release did not get through) holds it
     * until it runs out, as far as anyone can tell from outside.
     */
    public String liveLeader() throws CheckpointSurgeonException {
        List<String> leases = new ArrayList<>();
        List<String> leaders = new ArrayList<>();
        ZonedDateTime now = ZonedDateTime.now();
        for (ConfigMap cm : haConfigMaps()) {
            String json = cm.annotations.get(LEADER_ANNOTATION);
            if (json == null) continue;
            Object record;
            try {
                Class<?> recordClass = Class.forName(FABRIC8 + "extended.leaderelection.resourcelock.LeaderElectionRecord");
                record = Class.forName(FABRIC8 + "utils.Serialization").getMethod("unmarshal", String.class, Class.class)
                        .invoke(null, json, recordClass);
                String holder = (String) call(record, "getHolderIdentity");
                Duration lease = (Duration) call(record, "getLeaseDuration");
                ZonedDateTime renewed = (ZonedDateTime) call(record, "getRenewTime");
                if (holder == null || holder.isEmpty() || renewed == null || lease == null
                        || !renewed.plus(lease).isAfter(now)) {
                    continue;
                }
                leases.add("holder " + holder + " of " + cm.name + " (renewed " + renewed + ", lease "
                        + lease.toSeconds() + " s: held until " + renewed.plus(lease) + " unless renewed)");
            } catch (ReflectiveOperationException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FORMAT, Message.of("ConfigMap "
                        + cm.name + ": annotation " + LEADER_ANNOTATION + " is not a leader election record: " + cause(e)
                        + " (", Choice.SKIP_LEADER_CHECK, " skips the check)"), cause(e));
            }
            for (Map.Entry<String, String> e : cm.data.entrySet()) {
                if (e.getKey().startsWith(LEADER_KEY)) {
                    leaders.add(e.getKey().substring(LEADER_KEY.length()) + " at "
                            + e.getValue().substring(e.getValue().indexOf(',') + 1));
                } else if (e.getKey().equals("address")) {
                    leaders.add(cm.name + " at " + e.getValue());
                }
            }
        }
        if (leases.isEmpty()) return null;
        return "a JobManager holds the leadership of cluster '" + clusterId + "' in namespace '" + namespace
                + "' (Kubernetes API server " + masterUrl + "): " + String.join(", ", leases)
                + (leaders.isEmpty() ? "" : "; leader " + String.join(", ", leaders));
    }

    @Override
    public void close() {
        try {
            call(client, "close");
        } catch (ReflectiveOperationException e) {
            // nothing to release then
        }
    }

    /** A public method by name and argument count (the fabric8 classes behind interfaces may not be public). */
    private static Object call(Object target, String name, Object... args) throws ReflectiveOperationException {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == args.length && !m.isBridge()
                    && (args.length == 0 || m.getParameterTypes()[0].isInstance(args[0])
                    || m.getParameterTypes()[0] == int.class && args[0] instanceof Integer)) {
                m.setAccessible(true);
                return m.invoke(target, args);
            }
        }
        throw new NoSuchMethodException(target.getClass().getName() + "." + name);
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // look further up
            }
        }
        throw new NoSuchFieldException(target.getClass().getName() + "." + name);
    }

    private static Throwable cause(Throwable e) {
        return e instanceof InvocationTargetException && e.getCause() != null ? e.getCause() : e;
    }
}
