package io.checkpointsurgeon;

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
 * local mirror so that the native library can work on it.
 *
 * <p>Staging reads {@code _metadata} into memory and downloads only the state files the native
 * code reads: the streams of operator state handles (relative files next to {@code _metadata},
 * absolute file handles below the job directory, and the byte ranges of file-merging segments,
 * into sparse local files at the same offsets). Keyed, channel and other state is never
 * downloaded: inspect reports its sizes from {@code _metadata}, and surgery never rewrites it.
 *
 * <p>The mirror keeps the remote layout below the job directory (the parent of the checkpoint
 * directory, which holds {@code chk-N/}, {@code shared/}, {@code taskowned/}), and the native
 * library is told which remote prefix the mirror stands for. Absolute state paths outside the job
 * directory are not read, as for local checkpoints.
 */
final class RemoteCheckpoint implements AutoCloseable {
    private static final int THREADS = 8;

    /** The remote checkpoint directory (no trailing slash). */
    final String dir;
    /** Its {@code _metadata} file. */
    final String metadataPath;
    /** The parent of {@link #dir}: absolute state paths below it are mirrored. */
    final String jobDir;
    final byte[] metadata;
    final Path mirrorRoot;
    /** The mirror of {@link #dir}. */
    final Path mirrorDir;
    /** Relative file names already downloaded in full into {@link #mirrorDir}. */
    final Set<String> mirroredRelative = new HashSet<>();

    private RemoteCheckpoint(String dir, String metadataPath, byte[] metadata, Path mirrorRoot) {
        this.dir = dir;
        this.metadataPath = metadataPath;
        this.jobDir = parent(dir);
        this.metadata = metadata;
        this.mirrorRoot = mirrorRoot;
        this.mirrorDir = mirrorRoot.resolve("job").resolve(name(dir));
    }

    /** Lines {@code remote-prefix<TAB>local-dir} for the native library. */
    /** The wire source of this checkpoint: its metadata, its local mirror and the mirrored job directory. */
    byte[] source() {
        return Wire.source(metadata, metadataPath, mirrorDir.toString(),
                Map.of(jobDir + "/", mirrorRoot.resolve("job").toString()));
    }

    /**
     * Reads {@code _metadata} of a remote checkpoint (the directory, or the {@code _metadata}
     * file) and stages the operator state files.
     */
    static RemoteCheckpoint stage(String path) throws CheckpointSurgeonException {
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
            rc.download();
            return rc;
        } catch (CheckpointSurgeonException | RuntimeException e) {
            rc.close();
            throw e;
        } catch (IOException e) {
            rc.close();
            throw io(dir, e);
        }
    }

    /** The checkpoint directory and its {@code _metadata} file of a path naming either. */
    static String[] locate(String path) throws CheckpointSurgeonException {
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

    private void download() throws IOException, CheckpointSurgeonException {
        long t0 = System.nanoTime();
        Map<String, Path> whole = new LinkedHashMap<>();
        Map<String, List<long[]>> ranges = new LinkedHashMap<>();
        for (Wire.StateFile f : Native.stateFiles(source())) {
            if (!f.operatorState) continue;
            if (f.kind.equals("relative")) {
                checkPlainName(f.path);
                whole.put(dir + "/" + f.path, mirrorDir.resolve(f.path));
                mirroredRelative.add(f.path);
            } else if (f.kind.equals("file")) {
                Path local = localFor(f.path);
                if (local != null) whole.put(f.path, local);
            } else if (f.kind.equals("segment") && localFor(f.path) != null) {
                ranges.computeIfAbsent(f.path, k -> new ArrayList<>()).add(new long[] {f.start, f.size});
            }
        }
        long[] bytes = new long[1];
        List<IoTask> tasks = new ArrayList<>();
        whole.forEach((remote, local) -> tasks.add(() -> {
            long n = FlinkFileSystems.download(remote, local);
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
            System.err.printf(Locale.ROOT, "staged %d state files (%s) of %s in %.1f s%n", tasks.size(),
                    InspectReport.formatBytes(bytes[0]), dir, ms / 1000.0);
        }
    }

    /** The mirror path of an absolute remote state path below the job directory, else null. */
    Path localFor(String remote) throws IOException {
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

    // ---------------------------------------------------------------------------------------------
    // The public operations

    static InspectReport inspect(String path) throws CheckpointSurgeonException {
        try (RemoteCheckpoint rc = stage(path)) {
            return Native.inspect(rc.source());
        }
    }

    static SurgeryPlan plan(String path, Surgery surgery) throws CheckpointSurgeonException {
        try (RemoteCheckpoint rc = stage(path)) {
            return Native.plan(rc.source(), surgery, null, null).plan;
        }
    }

    /** Applies a surgery to a remote checkpoint through {@link Commit}. {@code outputDir} null means in place. */
    static SurgeryPlan apply(String path, Surgery surgery, String outputDir) throws CheckpointSurgeonException {
        FlinkFileSystems.ensureConfigured();
        return Commit.runOne(new Unit(path, surgery, outputDir));
    }

    /**
     * A checkpoint on a Flink file system as a unit of the commit sequence. Object stores have no
     * atomic create-if-absent or rename, so two things are weaker than on a local disk, and said so:
     * the lock is a lock object ({@value #LOCK_NAME}) created after checking that none exists, and an
     * in-place switch overwrites {@code _metadata} with one PUT (readers see the old or the new file
     * whole); on a file system such as HDFS the new file is renamed into place instead.
     */
    static final class Unit implements Commit.Unit {
        private final String path;
        private final Surgery surgery;
        private final boolean inPlace;
        private final String outputDir;
        private String target;
        private RemoteCheckpoint rc;
        private SurgeryPlan.Staged staged;
        private byte[] newMetadata;
        private long liveLength;
        private final List<String> written = new ArrayList<>();
        private final List<String> copied = new ArrayList<>();

        Unit(String path, Surgery surgery, String outputDir) {
            this.path = path;
            this.surgery = surgery;
            this.inPlace = outputDir == null;
            this.outputDir = outputDir;
        }

        @Override
        public String name() {
            return target == null ? path : target + "/_metadata";
        }

        @Override
        public void lock(Commit.Locks locks, Commit.Undo undo) throws CheckpointSurgeonException {
            // A local output directory (the remote checkpoint repaired into a local copy) is
            // written through Flink's local file system, named by its absolute file: path.
            target = inPlace ? locate(path)[0]
                    : FlinkFileSystems.isRemote(outputDir) ? trimSlashes(outputDir)
                    : "file:" + FlinkFileSystems.localPath(outputDir).toAbsolutePath().normalize();
            String lock = target + "/" + LOCK_NAME;
            try {
                if (!inPlace) checkEmptyTarget(target);
                if (FlinkFileSystems.exists(lock)) {
                    String owner = new String(FlinkFileSystems.readAll(lock), java.nio.charset.StandardCharsets.UTF_8);
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.LOCKED, target + " is locked by another repair (" + owner.trim()
                            + "); nothing was changed. A run that was killed leaves " + lock + " behind: delete it"
                            + " when no repair is running");
                }
                FlinkFileSystems.write(owner().getBytes(java.nio.charset.StandardCharsets.UTF_8), lock, false);
            } catch (IOException e) {
                throw io(lock, e);
            }
            locks.add(lock, () -> {
                try {
                    FlinkFileSystems.delete(lock);
                } finally {
                    if (rc != null) rc.close();
                }
            });
            // read only once the lock is held: an in-place repair works on what it locked
            rc = RemoteCheckpoint.stage(path);
        }

        @Override
        public boolean stage(Commit.Undo undo) throws CheckpointSurgeonException {
            try {
                liveLength = FlinkFileSystems.length(rc.metadataPath);
                Path streamDir = Files.createDirectory(rc.mirrorRoot.resolve("new"));
                staged = Native.plan(rc.source(), surgery, streamDir, target);
                newMetadata = Files.readAllBytes(Path.of(staged.metadataTmp));
            } catch (IOException e) {
                throw io(path, e);
            }
            return true;
        }

        @Override
        public String validate() throws CheckpointSurgeonException {
            if (!FlinkJudge.flinkAvailable()) return "not validated: Flink is not on the classpath";
            return FlinkJudge.validate(newMetadata, target + "/_metadata", rc.dir, staged.operators);
        }

        @Override
        public void place(Commit.Undo undo) throws CheckpointSurgeonException {
            List<IoTask> uploads = new ArrayList<>();
            for (String w : staged.written) {
                Path local = Path.of(w);
                String remote = target + "/" + local.getFileName();
                written.add(remote);
                undo.add(() -> FlinkFileSystems.delete(remote));
                uploads.add(() -> FlinkFileSystems.upload(local, remote, false));
            }
            if (!inPlace) {
                for (String name : staged.unchanged) {
                    try {
                        checkPlainName(name);
                    } catch (IOException e) {
                        throw io(name, e);
                    }
                    String to = target + "/" + name;
                    copied.add(to);
                    undo.add(() -> FlinkFileSystems.delete(to));
                    Path mirrored = rc.mirrorDir.resolve(name);
                    if (rc.mirroredRelative.contains(name) && Files.isRegularFile(mirrored)) {
                        uploads.add(() -> FlinkFileSystems.upload(mirrored, to, false));
                    } else {
                        String from = rc.dir + "/" + name;
                        uploads.add(() -> FlinkFileSystems.copy(from, to, false));
                    }
                }
            }
            long t0 = System.nanoTime();
            try {
                runAll(uploads);
            } catch (IOException e) {
                throw io(target, e);
            }
            if (uploads.size() > 50 || System.nanoTime() - t0 > 2_000_000_000L) {
                System.err.printf(Locale.ROOT, "wrote %d state files to %s in %.1f s%n", uploads.size(), target,
                        (System.nanoTime() - t0) / 1e9);
            }
        }

        @Override
        public String backup(Commit.Undo undo) throws CheckpointSurgeonException {
            if (!inPlace) return null;
            String base = target + "/_metadata.backup-" + System.currentTimeMillis();
            try {
                for (int n = 0; n < 100; n++) {
                    String b = n == 0 ? base : base + "-" + n;
                    if (FlinkFileSystems.exists(b)) continue;
                    FlinkFileSystems.write(rc.metadata, b, false);
                    undo.add(() -> FlinkFileSystems.delete(b));
                    return b;
                }
            } catch (IOException e) {
                throw io(base, e);
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, base + ": 100 backup names in a row already exist");
        }

        @Override
        public void switchOver() throws CheckpointSurgeonException {
            String metadataPath = target + "/_metadata";
            try {
                if (!inPlace) {
                    FlinkFileSystems.write(newMetadata, metadataPath, false);
                    return;
                }
                if (FlinkFileSystems.length(metadataPath) != liveLength) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, metadataPath + " was changed by someone else while it"
                            + " was repaired; nothing was switched");
                }
                if (FlinkFileSystems.kind(metadataPath).equals("OBJECT_STORE")) {
                    FlinkFileSystems.write(newMetadata, metadataPath, true);
                } else {
                    String tmp = target + "/_metadata.tmp-" + java.util.UUID.randomUUID();
                    FlinkFileSystems.write(newMetadata, tmp, false);
                    FlinkFileSystems.delete(metadataPath);
                    if (!FlinkFileSystems.rename(tmp, metadataPath)) {
                        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "renaming " + tmp + " to " + metadataPath
                                + " failed; the new _metadata is in " + tmp);
                    }
                }
            } catch (IOException e) {
                throw io(metadataPath, e);
            }
        }

        @Override
        public SurgeryPlan result(String backup, String validation) {
            return staged.plan.withResult(new SurgeryPlan.Result(target + "/_metadata", newMetadata.length,
                    List.copyOf(written), List.of(), List.copyOf(copied), backup, validation));
        }
    }

    static final String LOCK_NAME = ".checkpoint-surgeon.lock";

    private static String owner() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = "?";
        }
        return "pid " + ProcessHandle.current().pid() + " on " + host + " since " + java.time.Instant.now();
    }

    private static void checkEmptyTarget(String target) throws IOException, CheckpointSurgeonException {
        if (FlinkFileSystems.exists(target + "/_metadata")
                || FlinkFileSystems.list(target).stream().anyMatch(p -> !name(p).equals(LOCK_NAME))) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "output directory " + target
                    + " is not empty; choose a new directory");
        }
    }

    // ---------------------------------------------------------------------------------------------

    interface IoTask {
        void run() throws IOException;
    }

    /** Runs the tasks on up to {@value #THREADS} threads; the first failure is thrown. */
    static void runAll(List<IoTask> tasks) throws IOException {
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

    private static void checkPlainName(String name) throws IOException {
        if (name.isEmpty() || name.contains("/") || name.contains("\\") || name.equals(".") || name.equals("..")) {
            throw new IOException("relative state file name '" + name + "' is not a plain file name");
        }
    }

    static String trimSlashes(String p) {
        String s = p;
        while (s.endsWith("/") && !s.endsWith("://") && s.length() > 1) {
            s = s.substring(0, s.length() - 1);
        }
        return s;
    }

    static String parent(String p) {
        int i = p.lastIndexOf('/');
        return i < 0 ? p : p.substring(0, i);
    }

    static String name(String p) {
        return p.substring(p.lastIndexOf('/') + 1);
    }

    private static CheckpointSurgeonException io(String path, IOException e) {
        String what = e instanceof FileNotFoundException ? "not found: " + e.getMessage() : String.valueOf(e);
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, path + ": " + what + " (Flink file systems: "
                + FlinkFileSystems.configuredFrom() + ")", e);
    }
}
