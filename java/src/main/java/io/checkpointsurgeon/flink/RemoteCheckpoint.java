package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.ProgressListener;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

/**
 * A checkpoint or savepoint on a non-local Flink file system (S3, HDFS, GCS, ...), staged in a
 * local mirror so that the native library can work on it. Part of the Flink adapter: it moves
 * files through Flink's file systems and knows nothing of the native library.
 *
 * <p>Staging reads {@code _metadata} into memory and downloads only the state files the native
 * code reads: the streams of operator state handles (relative files next to {@code _metadata},
 * absolute file handles below the job directory, and the byte ranges of file-merging segments,
 * into sparse local files at the same offsets). Keyed, channel and other state is never
 * downloaded: inspect reports its sizes from {@code _metadata}, and a keyed surgery reads it in
 * ranges through {@link RangedReads}.
 *
 * <p>The mirror keeps the remote layout below the job directory (the parent of the checkpoint
 * directory, which holds {@code chk-N/}, {@code shared/}, {@code taskowned/}), and the native
 * library is told which remote prefix the mirror stands for. Absolute state paths outside the job
 * directory are not read, as for local checkpoints.
 */
public final class RemoteCheckpoint implements AutoCloseable {
    private static final int THREADS = 8;

    /** The remote checkpoint directory (no trailing slash). */
    public final String dir;
    /** Its {@code _metadata} file. */
    public final String metadataPath;
    /** The parent of {@link #dir}: absolute state paths below it are mirrored. */
    public final String jobDir;
    public final byte[] metadata;
    public final Path mirrorRoot;
    /** The mirror of {@link #dir}. */
    public final Path mirrorDir;
    /** Relative file names already downloaded in full into {@link #mirrorDir}. */
    public final Set<String> mirroredRelative = new HashSet<>();

    private RemoteCheckpoint(String dir, String metadataPath, byte[] metadata, Path mirrorRoot) {
        this.dir = dir;
        this.metadataPath = metadataPath;
        this.jobDir = parent(dir);
        this.metadata = metadata;
        this.mirrorRoot = mirrorRoot;
        this.mirrorDir = mirrorRoot.resolve("job").resolve(name(dir));
    }

    /** The remote directory the mirror stands for (with a trailing slash) and the local directory that holds it. */
    public Map<String, String> mirrors() {
        return Map.of(jobDir + "/", mirrorRoot.resolve("job").toString());
    }

    /**
     * Reads {@code _metadata} of a remote checkpoint (the directory, or the {@code _metadata}
     * file) and creates its local mirror; {@link #download} fills it.
     */
    public static RemoteCheckpoint open(String path) throws CheckpointSurgeonException {
        String[] loc = locate(path);
        String dir = loc[0];
        String metadataPath = loc[1];
        byte[] bytes;
        try {
            bytes = FlinkFileSystems.readAll(metadataPath);
        } catch (IOException e) {
            throw io(metadataPath, e);
        }
        Path root;
        try {
            root = Files.createTempDirectory("checkpoint-surgeon-mirror");
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "creating a local mirror directory: " + e, e);
        }
        RemoteCheckpoint rc = new RemoteCheckpoint(dir, metadataPath, bytes, root);
        try {
            Files.createDirectories(rc.mirrorDir);
            return rc;
        } catch (IOException e) {
            rc.close();
            throw io(dir, e);
        }
    }

    /** The checkpoint directory and its {@code _metadata} file of a path naming either. */
    public static String[] locate(String path) throws CheckpointSurgeonException {
        FlinkFileSystems.ensureConfigured();
        String p = trimSlashes(path);
        String dir;
        String metadataPath;
        try {
            if (name(p).equals("_metadata")) {
                metadataPath = p;
                dir = parent(p);
            } else if (FlinkFileSystems.exists(p + "/_metadata")) {
                dir = p;
                metadataPath = p + "/_metadata";
            } else if (FlinkFileSystems.exists(p) && !FlinkFileSystems.isDirectory(p)) {
                metadataPath = p;
                dir = parent(p);
            } else {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, path + ": no _metadata there (a checkpoint or savepoint"
                        + " directory, or its _metadata file, is expected)");
            }
        } catch (IOException e) {
            throw io(path, e);
        }
        return new String[] {dir, metadataPath};
    }

    /**
     * Downloads the files of operator state handles among {@code files} into the mirror: relative
     * files, absolute files below the job directory, and the byte ranges of file-merging segments.
     * A long download reports to {@code progress}.
     */
    public void download(List<StateFile> files, ProgressListener progress) throws CheckpointSurgeonException {
        try {
            downloadAll(files, progress);
        } catch (IOException e) {
            throw io(dir, e);
        }
    }

    private void downloadAll(List<StateFile> files, ProgressListener progress) throws IOException, CheckpointSurgeonException {
        long t0 = System.nanoTime();
        Map<String, Path> whole = new LinkedHashMap<>();
        Map<String, List<long[]>> ranges = new LinkedHashMap<>();
        for (StateFile f : files) {
            if (!f.operatorState()) continue;
            if (f.kind() == StateFile.Kind.RELATIVE) {
                checkPlainName(f.path());
                whole.put(dir + "/" + f.path(), mirrorDir.resolve(f.path()));
                mirroredRelative.add(f.path());
            } else if (f.kind() == StateFile.Kind.FILE) {
                Path local = localFor(f.path());
                if (local != null) whole.put(f.path(), local);
            } else if (f.kind() == StateFile.Kind.SEGMENT && localFor(f.path()) != null) {
                ranges.computeIfAbsent(f.path(), k -> new ArrayList<>()).add(new long[] {f.start(), f.size()});
            }
        }
        long[] bytes = new long[1];
        List<IoTask> tasks = new ArrayList<>();
        whole.forEach((remote, local) -> tasks.add(() -> {
            long n = FlinkFileSystems.download(remote, local, progress);
            synchronized (bytes) {
                bytes[0] += n;
            }
        }));
        ranges.forEach((remote, rs) -> tasks.add(() -> {
            Path local = localFor(remote);
            for (long[] r : rs) {
                FlinkFileSystems.downloadRange(remote, local, r[0], r[1]);
                synchronized (bytes) {
                    bytes[0] += r[1];
                }
            }
        }));
        runAll(tasks);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        if (ms > 2000 || bytes[0] > (64L << 20)) {
            progress.message(String.format(Locale.ROOT, "staged %d state files (%s) of %s in %.1f s", tasks.size(),
                    InspectReport.formatBytes(bytes[0]), dir, ms / 1000.0));
        }
    }

    /** The mirror path of an absolute remote state path below the job directory, else null. */
    public Path localFor(String remote) throws IOException {
        String prefix = jobDir + "/";
        if (!remote.startsWith(prefix)) return null;
        String rest = remote.substring(prefix.length());
        for (String c : rest.split("/", -1)) {
            if (c.isEmpty() || c.equals(".") || c.equals("..") || c.contains("\\")) {
                throw new IOException("state file " + remote + " is not a plain path below " + prefix);
            }
        }
        return mirrorRoot.resolve("job").resolve(rest);
    }

    @Override
    public void close() {
        try (Stream<Path> s = Files.walk(mirrorRoot)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).collect(java.util.stream.Collectors.toList())) {
                Files.deleteIfExists(p);
            }
        } catch (IOException ignored) {
            // a temp directory; nothing depends on its removal
        }
    }

    public static final String LOCK_NAME = ".checkpoint-surgeon.lock";

    public static String owner() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "?";
        }
        return "pid " + ProcessHandle.current().pid() + " on " + host + " since " + java.time.Instant.now();
    }

    public static void checkEmptyTarget(String target) throws IOException, CheckpointSurgeonException {
        if (FlinkFileSystems.exists(target + "/_metadata")
                || FlinkFileSystems.list(target).stream().anyMatch(p -> !name(p).equals(LOCK_NAME))) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "output directory " + target
                    + " is not empty; choose a new directory");
        }
    }

    // ---------------------------------------------------------------------------------------------

    public interface IoTask {
        void run() throws IOException;
    }

    /** Runs the tasks on up to {@value #THREADS} threads; the first failure is thrown. */
    public static void runAll(List<IoTask> tasks) throws IOException {
        if (tasks.size() <= 1) {
            for (IoTask t : tasks) t.run();
            return;
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(THREADS, tasks.size()), r -> {
            Thread t = new Thread(r, "checkpoint-surgeon-io");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (IoTask t : tasks) {
                futures.add(pool.submit(() -> {
                    t.run();
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    for (Future<?> other : futures) other.cancel(true);
                    Throwable c = e.getCause();
                    if (c instanceof IOException) throw (IOException) c;
                    if (c instanceof RuntimeException) throw (RuntimeException) c;
                    throw new IOException(c);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } finally {
            pool.shutdownNow();
        }
    }

    public static void checkPlainName(String name) throws IOException {
        if (name.isEmpty() || name.contains("/") || name.contains("\\") || name.equals(".") || name.equals("..")) {
            throw new IOException("relative state file name '" + name + "' is not a plain file name");
        }
    }

    public static String trimSlashes(String p) {
        String s = p;
        while (s.endsWith("/") && !s.endsWith("://") && s.length() > 1) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    public static String parent(String p) {
        int i = p.lastIndexOf('/');
        return i < 0 ? p : p.substring(0, i);
    }

    public static String name(String p) {
        return p.substring(p.lastIndexOf('/') + 1);
    }

    public static CheckpointSurgeonException io(String path, IOException e) {
        String what = e instanceof FileNotFoundException ? "not found: " + e.getMessage() : String.valueOf(e);
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, path + ": " + what + " (Flink file systems: "
                + FlinkFileSystems.configuredFrom() + ")", e);
    }
}
