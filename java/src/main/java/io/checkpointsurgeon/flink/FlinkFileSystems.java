package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.ProgressListener;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Flink paths ({@code s3://}, {@code hdfs://}, {@code gs://}, ...) through Flink's own
 * {@code org.apache.flink.core.fs.FileSystem}, configured the way Flink is: a configuration
 * directory ({@code --flink-conf} / {@code FLINK_CONF_DIR} / {@code $FLINK_HOME/conf}) and a plugins
 * directory ({@code --plugins} / {@code FLINK_PLUGINS_DIR} / {@code $FLINK_HOME/plugins}) whose
 * file system plugins ({@code plugins/s3-fs-presto/flink-s3-fs-presto-*.jar}, ...) are loaded in
 * their own class loaders, as a Flink process loads them.
 *
 * <p>Every Flink class is reached by reflection, so this jar keeps no compile-time Flink
 * dependency. Local paths never come here: the native library reads them itself.
 */
public final class FlinkFileSystems {
    private static final String FILE_SYSTEM = "org.apache.flink.core.fs.FileSystem";
    private static final String FLINK_PATH = "org.apache.flink.core.fs.Path";
    private static final String FILE_STATUS = "org.apache.flink.core.fs.FileStatus";
    private static final String FS_INPUT = "org.apache.flink.core.fs.FSDataInputStream";
    /** Progress lines for a copy that runs longer than this. */
    private static final long PROGRESS_NANOS = 2_000_000_000L;

    private static volatile boolean configured;
    private static volatile String configuredFrom = "Flink's defaults";
    private static final Map<String, Method> METHODS = new ConcurrentHashMap<>();

    private FlinkFileSystems() {}

    /** Whether a path names a non-local file system: a scheme of two or more letters other than {@code file}. */
    public static boolean isRemote(String path) {
        String scheme = scheme(path);
        return scheme != null && !scheme.equalsIgnoreCase("file");
    }

    /**
     * The scheme of {@code scheme:rest} (RFC 3986: a letter, then letters, digits, {@code + . -}),
     * of two characters or more so that {@code C:\x} stays a path; null if there is none. Scanned,
     * not a regex: this runs before every inspect, and the first regex costs start-up (its lambdas,
     * a method handle spun at run time).
     */
    static String scheme(String path) {
        int colon = path.indexOf(':');
        if (colon < 2 || !isAsciiLetter(path.charAt(0))) return null;
        for (int i = 1; i < colon; i++) {
            char c = path.charAt(i);
            if (!isAsciiLetter(c) && !(c >= '0' && c <= '9') && c != '+' && c != '.' && c != '-') return null;
        }
        return path.substring(0, colon);
    }

    private static boolean isAsciiLetter(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    /** A local path given as a plain path or a {@code file:} URI. */
    public static Path localPath(String path) {
        if (path.regionMatches(true, 0, "file:", 0, 5)) {
            String rest = path.substring(5);
            if (rest.startsWith("//")) {
                // file:///x or file://host/x (the host is ignored, as Flink does for local paths)
                int slash = rest.indexOf('/', 2);
                rest = slash < 0 ? "/" : rest.substring(slash);
            }
            return Path.of(rest);
        }
        return Path.of(path);
    }

    /**
     * Whether the Flink path {@code path} is {@code dir} or lies under it, comparing normalized
     * URIs: the scheme (any case), the authority (a bucket, a name node) and the path on a
     * {@code /} boundary, with {@code .}, {@code ..} and repeated slashes resolved. Paths on
     * different file systems (or the local one) are never inside each other.
     */
    public static boolean within(String path, String dir) {
        String[] p = uriParts(path);
        String[] d = uriParts(dir);
        if (!p[0].equalsIgnoreCase(d[0]) || !p[1].equalsIgnoreCase(d[1])) return false;
        return p[2].equals(d[2]) || d[2].equals("/") || p[2].startsWith(d[2] + "/");
    }

    /**
     * The path as references are compared: {@code scheme://authority/path} with the path
     * normalized, the scheme in lower case and the S3 schemes of Flink's plugins ({@code s3a},
     * {@code s3n}, {@code s3p}) taken as {@code s3}, so a job configured with {@code s3a://} keeps
     * its files when the bucket is scanned as {@code s3://}.
     */
    public static String normalize(String path) {
        String[] p = uriParts(path);
        String scheme = p[0].toLowerCase(Locale.ROOT);
        if (scheme.equals("s3a") || scheme.equals("s3n") || scheme.equals("s3p")) scheme = "s3";
        return scheme + "://" + p[1] + p[2];
    }

    /** Scheme, authority and normalized absolute path of a {@code scheme://authority/path} or {@code scheme:/path}. */
    private static String[] uriParts(String path) {
        String found = scheme(path);
        String scheme = found != null ? found : "file";
        String rest = found != null ? path.substring(scheme.length() + 1) : path;
        String authority = "";
        if (rest.startsWith("//")) {
            int slash = rest.indexOf('/', 2);
            authority = slash < 0 ? rest.substring(2) : rest.substring(2, slash);
            rest = slash < 0 ? "/" : rest.substring(slash);
        }
        java.util.ArrayDeque<String> parts = new java.util.ArrayDeque<>();
        for (String part : rest.split("/")) {
            if (part.isEmpty() || part.equals(".")) continue;
            if (part.equals("..")) parts.pollLast();
            else parts.addLast(part);
        }
        return new String[] {scheme, authority, "/" + String.join("/", parts)};
    }

    /**
     * Initializes Flink's file systems with the configuration in {@code flinkConfDir} (its
     * {@code config.yaml} or {@code flink-conf.yaml}; Flink's defaults when null) and the plugins
     * under {@code pluginsDir} (none when null). Replaces any earlier initialization in this JVM.
     */
    public static synchronized void configure(Path flinkConfDir, Path pluginsDir) throws CheckpointSurgeonException {
        requireFlink("configuring Flink's file systems");
        ClassLoader cl = FlinkFileSystems.class.getClassLoader();
        try {
            Class<?> confClass = Class.forName("org.apache.flink.configuration.Configuration", true, cl);
            Object conf;
            if (flinkConfDir != null) {
                if (!Files.isDirectory(flinkConfDir)) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "Flink configuration directory "
                            + flinkConfDir + " does not exist");
                }
                conf = Class.forName("org.apache.flink.configuration.GlobalConfiguration", true, cl)
                        .getMethod("loadConfiguration", String.class)
                        .invoke(null, flinkConfDir.toAbsolutePath().toString());
            } else {
                conf = confClass.getConstructor().newInstance();
            }
            Object pluginManager = null;
            if (pluginsDir != null) {
                if (!Files.isDirectory(pluginsDir)) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "Flink plugins directory "
                            + pluginsDir + " does not exist");
                }
                Object finder = Class.forName("org.apache.flink.core.plugin.DirectoryBasedPluginFinder", true, cl)
                        .getConstructor(Path.class).newInstance(pluginsDir.toAbsolutePath());
                Collection<?> descriptors = (Collection<?>) finder.getClass().getMethod("findPlugins").invoke(finder);
                Object pluginConfig = Class.forName("org.apache.flink.core.plugin.PluginConfig", true, cl)
                        .getMethod("fromConfiguration", confClass).invoke(null, conf);
                String[] parentFirst = (String[]) pluginConfig.getClass().getMethod("getAlwaysParentFirstPatterns")
                        .invoke(pluginConfig);
                pluginManager = Class.forName("org.apache.flink.core.plugin.DefaultPluginManager", true, cl)
                        .getConstructor(Collection.class, String[].class).newInstance(descriptors, parentFirst);
            }
            Class<?> pmClass = Class.forName("org.apache.flink.core.plugin.PluginManager", true, cl);
            Class.forName(FILE_SYSTEM, true, cl).getMethod("initialize", confClass, pmClass)
                    .invoke(null, conf, pluginManager);
            configured = true;
            configuredFrom = "configuration " + (flinkConfDir == null ? "(Flink's defaults)" : flinkConfDir)
                    + ", plugins " + (pluginsDir == null ? "(none)" : pluginsDir);
        } catch (InvocationTargetException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "initializing Flink's file systems failed: " + e.getCause(),
                    e.getCause());
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "initializing Flink's file systems failed: " + e, e);
        }
    }

    /**
     * Before the first remote access: unless {@link #configure} ran, configures from the
     * environment ({@code FLINK_CONF_DIR}, {@code FLINK_PLUGINS_DIR}, else {@code $FLINK_HOME/conf}
     * and {@code $FLINK_HOME/plugins}) when any of those is set; otherwise Flink's file systems stay
     * as they are (as an embedding application initialized them, or the ones on the class path).
     */
    public static synchronized void ensureConfigured() throws CheckpointSurgeonException {
        requireFlink("reading a non-local path");
        if (configured) {
            return;
        }
        String conf = System.getenv("FLINK_CONF_DIR");
        String plugins = System.getenv("FLINK_PLUGINS_DIR");
        String home = System.getenv("FLINK_HOME");
        if (home != null && !home.isEmpty()) {
            if (conf == null && Files.isDirectory(Path.of(home, "conf"))) conf = Path.of(home, "conf").toString();
            if (plugins == null && Files.isDirectory(Path.of(home, "plugins"))) plugins = Path.of(home, "plugins").toString();
        }
        if ((conf != null && !conf.isEmpty()) || (plugins != null && !plugins.isEmpty())) {
            configure(conf == null || conf.isEmpty() ? null : Path.of(conf),
                    plugins == null || plugins.isEmpty() ? null : Path.of(plugins));
        }
        configured = true;
    }

    public static String configuredFrom() {
        return configuredFrom;
    }

    private static void requireFlink(String what) throws CheckpointSurgeonException {
        try {
            Class.forName(FILE_SYSTEM, false, FlinkFileSystems.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FLINK_MISSING, Message.of(what + " needs"
                    + " Flink's jars on the class path (e.g. java -cp \"checkpoint-surgeon.jar:$FLINK_HOME/lib/*\""
                    + " io.checkpointsurgeon.cli.Cli ...), with the file system plugin under ", Choice.PLUGINS,
                    " or FLINK_PLUGINS_DIR"));
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Operations on Flink paths

    public static boolean exists(String path) throws IOException {
        return (Boolean) call(fs(path), FILE_SYSTEM, "exists", new Class<?>[] {pathClass()}, flinkPath(path));
    }

    /** The length of a file; FileNotFoundException when it does not exist. */
    public static long length(String path) throws IOException {
        Object status = call(fs(path), FILE_SYSTEM, "getFileStatus", new Class<?>[] {pathClass()}, flinkPath(path));
        return (Long) call(status, FILE_STATUS, "getLen", new Class<?>[0]);
    }

    public static boolean isDirectory(String path) throws IOException {
        try {
            Object status = call(fs(path), FILE_SYSTEM, "getFileStatus", new Class<?>[] {pathClass()}, flinkPath(path));
            return (Boolean) call(status, FILE_STATUS, "isDir", new Class<?>[0]);
        } catch (FileNotFoundException e) {
            return false;
        }
    }

    /** A file or directory as Flink's {@code FileStatus} describes it (its path as Flink qualifies it). */
    public static final class Status {
        public final String path;
        public final boolean dir;
        public final long length;
        /** Modification time (ms); 0 where the file system has none (an S3 prefix). */
        public final long mtime;

        Status(Object status) throws IOException {
            this.path = call(status, FILE_STATUS, "getPath", new Class<?>[0]).toString();
            this.dir = (Boolean) call(status, FILE_STATUS, "isDir", new Class<?>[0]);
            this.length = (Long) call(status, FILE_STATUS, "getLen", new Class<?>[0]);
            this.mtime = (Long) call(status, FILE_STATUS, "getModificationTime", new Class<?>[0]);
        }
    }

    /** One request for a path's status (on S3 a HEAD, or a listing of the prefix); null when it does not exist. */
    public static Status status(String path) throws IOException {
        try {
            return new Status(call(fs(path), FILE_SYSTEM, "getFileStatus", new Class<?>[] {pathClass()}, flinkPath(path)));
        } catch (FileNotFoundException e) {
            return null;
        }
    }

    /** The entries of a directory with their status (on S3 one prefix listing); empty when it does not exist. */
    public static List<Status> listStatus(String dir) throws IOException {
        Object[] statuses;
        try {
            statuses = (Object[]) call(fs(dir), FILE_SYSTEM, "listStatus", new Class<?>[] {pathClass()}, flinkPath(dir));
        } catch (FileNotFoundException e) {
            return List.of();
        }
        List<Status> out = new ArrayList<>();
        if (statuses != null) {
            for (Object s : statuses) out.add(new Status(s));
        }
        return out;
    }

    /** The entries of a directory (full paths); empty when it does not exist. */
    public static List<String> list(String dir) throws IOException {
        List<String> out = new ArrayList<>();
        for (Status s : listStatus(dir)) out.add(s.path);
        return out;
    }

    /**
     * {@code OBJECT_STORE} or {@code FILE_SYSTEM}, as the Flink file system says ({@code getKind()},
     * Flink 1.x), or by the scheme where Flink has no such method (2.x).
     */
    public static String kind(String path) throws IOException {
        try {
            flinkClass(FILE_SYSTEM).getMethod("getKind");
        } catch (NoSuchMethodException e) {
            String found = scheme(path);
            String scheme = found != null ? found.toLowerCase(Locale.ROOT) : "";
            return OBJECT_STORE_SCHEMES.contains(scheme) ? "OBJECT_STORE" : "FILE_SYSTEM";
        }
        return String.valueOf(call(fs(path), FILE_SYSTEM, "getKind", new Class<?>[0]));
    }

    private static final java.util.Set<String> OBJECT_STORE_SCHEMES = java.util.Set.of("s3", "s3a", "s3n", "s3p",
            "gs", "oss", "cosn", "obs", "wasb", "wasbs", "abfs", "abfss", "blob");

    public static boolean delete(String path) throws IOException {
        return (Boolean) call(fs(path), FILE_SYSTEM, "delete", new Class<?>[] {pathClass(), boolean.class},
                flinkPath(path), false);
    }

    public static boolean rename(String from, String to) throws IOException {
        return (Boolean) call(fs(from), FILE_SYSTEM, "rename", new Class<?>[] {pathClass(), pathClass()},
                flinkPath(from), flinkPath(to));
    }

    public static InputStream open(String path) throws IOException {
        return (InputStream) call(fs(path), FILE_SYSTEM, "open", new Class<?>[] {pathClass()}, flinkPath(path));
    }

    /**
     * Moves a stream {@link #open} returned to byte {@code pos} of its file without reading the gap:
     * Flink's Hadoop streams (S3A, HDFS) skip a forward gap of up to 1 MiB by reading it
     * ({@code HadoopDataInputStream.seek}), so an SST file's last 4 KiB would cost the whole file;
     * their {@code forceSeek} repositions (one ranged request).
     */
    public static void seek(InputStream in, long pos) throws IOException {
        Method force = FORCE_SEEK.computeIfAbsent(in.getClass(), c -> {
            try {
                return java.util.Optional.of(c.getMethod("forceSeek", long.class));
            } catch (NoSuchMethodException e) {
                return java.util.Optional.empty();
            }
        }).orElse(null);
        if (force == null) {
            call(in, FS_INPUT, "seek", new Class<?>[] {long.class}, pos);
            return;
        }
        invoke(force, in, pos);
    }

    /** Per stream class, its public {@code forceSeek(long)} if it has one. */
    private static final Map<Class<?>, java.util.Optional<Method>> FORCE_SEEK = new ConcurrentHashMap<>();

    /** A new file; fails when it exists unless {@code overwrite}. */
    public static OutputStream create(String path, boolean overwrite) throws IOException {
        try {
            Class<?> mode = Class.forName(FILE_SYSTEM + "$WriteMode", true, FlinkFileSystems.class.getClassLoader());
            Object m = mode.getMethod("valueOf", String.class).invoke(null, overwrite ? "OVERWRITE" : "NO_OVERWRITE");
            return (OutputStream) call(fs(path), FILE_SYSTEM, "create", new Class<?>[] {pathClass(), mode},
                    flinkPath(path), m);
        } catch (ReflectiveOperationException e) {
            throw new IOException("Flink's FileSystem.WriteMode: " + e, e);
        }
    }

    public static byte[] readAll(String path) throws IOException {
        try (InputStream in = open(path)) {
            return in.readAllBytes();
        }
    }

    public static void write(byte[] data, String path, boolean overwrite) throws IOException {
        closeIfWhole(create(path, overwrite), out -> {
            out.write(data);
            return data.length;
        });
    }

    /** What writes a whole file through an output stream; returns the bytes written. */
    private interface Writing {
        long into(OutputStream out) throws IOException;
    }

    /**
     * Runs {@code writing} and closes {@code out} only when it wrote the whole file: on an object
     * store closing the stream completes the upload, so a copy that failed half way must not close
     * it (the partial object never becomes visible under its name; the stream is abandoned).
     */
    private static long closeIfWhole(OutputStream out, Writing writing) throws IOException {
        long n = writing.into(out);
        out.close();
        return n;
    }

    /**
     * Gives up a stream of {@link #create} whose file was not written whole: on an object store it
     * is never closed (closing would complete the upload of the part); elsewhere it is closed, and
     * the partial file is the caller's to delete.
     */
    public static void abandon(OutputStream out, String path) {
        try {
            if (!kind(path).equals("OBJECT_STORE")) out.close();
        } catch (IOException | RuntimeException e) {
            // the file is deleted by the caller's undo all the same
        }
    }

    /** Downloads a file; a long download reports its progress to {@code progress} every 2 s. */
    public static long download(String remote, Path local, ProgressListener progress) throws IOException {
        Files.createDirectories(local.getParent());
        try (InputStream in = open(remote); OutputStream out = Files.newOutputStream(local)) {
            return pump(in, out, remote + " -> " + local, lengthOrUnknown(remote), progress);
        }
    }

    /** Copies bytes {@code [start, start + size)} of a remote file to the same offsets of a local (sparse) file. */
    public static void downloadRange(String remote, Path local, long start, long size) throws IOException {
        Files.createDirectories(local.getParent());
        try (InputStream in = open(remote); RandomAccessFile out = new RandomAccessFile(local.toFile(), "rw")) {
            call(in, FS_INPUT, "seek", new Class<?>[] {long.class}, start);
            out.seek(start);
            byte[] buf = new byte[1 << 20];
            long left = size;
            while (left > 0) {
                int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                if (n < 0) {
                    throw new IOException(remote + ": ends before the segment " + start + "+" + size);
                }
                out.write(buf, 0, n);
                left -= n;
            }
        }
    }

    /** Uploads a file; a long upload reports its progress to {@code progress} every 2 s. */
    public static long upload(Path local, String remote, boolean overwrite, ProgressListener progress)
            throws IOException {
        try (InputStream in = Files.newInputStream(local)) {
            return closeIfWhole(create(remote, overwrite),
                    out -> pump(in, out, local + " -> " + remote, Files.size(local), progress));
        }
    }

    /** Copies a file through this JVM (any Flink file system to any other). */
    public static long copy(String from, String to, boolean overwrite) throws IOException {
        return copy(from, to, overwrite, ProgressListener.SILENT);
    }

    /** {@link #copy(String, String, boolean)}; a long copy reports its progress to {@code progress} every 2 s. */
    public static long copy(String from, String to, boolean overwrite, ProgressListener progress) throws IOException {
        try (InputStream in = open(from)) {
            return closeIfWhole(create(to, overwrite), out -> pump(in, out, from + " -> " + to, lengthOrUnknown(from), progress));
        }
    }

    private static long lengthOrUnknown(String path) {
        try {
            return length(path);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** Streams {@code in} to {@code out}; a long copy reports its progress every 2 s. */
    private static long pump(InputStream in, OutputStream out, String what, long total, ProgressListener progress)
            throws IOException {
        byte[] buf = new byte[1 << 20];
        long done = 0;
        long start = System.nanoTime();
        long next = start + PROGRESS_NANOS;
        int n;
        while ((n = in.read(buf)) >= 0) {
            out.write(buf, 0, n);
            done += n;
            long now = System.nanoTime();
            if (now >= next) {
                next = now + PROGRESS_NANOS;
                progress.message(String.format(Locale.ROOT, "  copying %s: %.1f%s MiB (%.1f MiB/s)", what,
                        done / 1048576.0, total > 0 ? String.format(Locale.ROOT, " / %.1f", total / 1048576.0) : "",
                        done / 1048576.0 / ((now - start) / 1e9)));
            }
        }
        return done;
    }

    // ---------------------------------------------------------------------------------------------
    // Reflection

    private static Class<?> pathClass() throws IOException {
        return flinkClass(FLINK_PATH);
    }

    private static Object flinkPath(String path) throws IOException {
        try {
            return pathClass().getConstructor(String.class).newInstance(path);
        } catch (InvocationTargetException e) {
            throw new IOException("not a valid Flink path: " + path + ": " + e.getCause(), e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IOException("Flink's Path: " + e, e);
        }
    }

    /** The Flink file system of a path (FileSystem.get of its URI, with the configured plugins). */
    private static Object fs(String path) throws IOException {
        Object p = flinkPath(path);
        return call(p, FLINK_PATH, "getFileSystem", new Class<?>[0]);
    }

    private static Class<?> flinkClass(String name) throws IOException {
        try {
            return Class.forName(name, true, FlinkFileSystems.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IOException("Flink's " + name + " is not on the class path: " + e, e);
        }
    }

    /**
     * Calls a public method declared by a public Flink type on an instance (plugin file systems are
     * instances of classes this code may not access, so the method is taken from the Flink type).
     */
    private static Object call(Object target, String declaringType, String name, Class<?>[] types, Object... args)
            throws IOException {
        String key = declaringType + "#" + name + java.util.Arrays.toString(types);
        Method m = METHODS.get(key);
        if (m == null) {
            try {
                m = flinkClass(declaringType).getMethod(name, types);
            } catch (ReflectiveOperationException e) {
                throw new IOException("Flink's " + declaringType + "." + name + ": " + e, e);
            }
            METHODS.put(key, m);
        }
        return invoke(m, target, args);
    }

    /** {@code m} on {@code target}; what it throws is rethrown as itself (an IOException's cause, if checked). */
    private static Object invoke(Method m, Object target, Object... args) throws IOException {
        try {
            return m.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable c = e.getCause();
            if (c instanceof IOException) throw (IOException) c;
            if (c instanceof RuntimeException) throw (RuntimeException) c;
            if (c instanceof Error) throw (Error) c;
            throw new IOException(c);
        } catch (IllegalAccessException e) {
            throw new IOException(m + ": " + e, e);
        }
    }
}
