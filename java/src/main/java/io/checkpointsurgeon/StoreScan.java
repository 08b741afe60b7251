package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.internal.Native;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One listing of checkpoint roots on a Flink file system ({@code s3://}, {@code gs://},
 * {@code hdfs://}, ...), the counterpart of {@link CheckpointScan} for {@code recover} and
 * {@code orphans}: every {@code _metadata}, every file with its size and mtime, the {@code chk-*}
 * directories (on S3: prefixes) without {@code _metadata}. Each directory is one
 * {@code listStatus} (on S3 one prefix listing), at most {@link Pool#size} at once.
 */
final class StoreScan {
    /** A checkpoint or savepoint directory holding a {@code _metadata}. */
    static final class Meta {
        final String dir;
        /** The checkpoint id of a {@code chk-<id>} directory, -1 for a savepoint. */
        final long id;
        final CheckpointScan.FileInfo file;
        /** {@code _metadata}, or a backup {@code _metadata.backup-*} of this tool's in-place repairs. */
        final String name;

        Meta(String dir, long id, CheckpointScan.FileInfo file) {
            this(dir, id, file, "_metadata");
        }

        Meta(String dir, long id, CheckpointScan.FileInfo file, String name) {
            this.dir = dir;
            this.id = id;
            this.file = file;
            this.name = name;
        }

        String metadata() {
            return dir + "/" + name;
        }
    }

    /** The roots as Flink qualifies them (no trailing slash). */
    final List<String> roots = new ArrayList<>();
    final List<Meta> metadata = new ArrayList<>();
    /** The {@code _metadata.backup-*} of in-place repairs: their references are references too (orphans). */
    final List<Meta> backups = new ArrayList<>();
    /** Every file under the roots, by the path Flink lists (deletions use it as is), sorted. */
    final Map<String, CheckpointScan.FileInfo> files = new TreeMap<>();
    /** {@code chk-*} directories without a {@code _metadata}, with the newest mtime in them. */
    final Map<String, Long> incomplete = new TreeMap<>();
    long directories;

    private StoreScan() {}

    /** Lists the roots, each directory one request, through {@code pool}. */
    static StoreScan list(List<String> given, Pool pool) throws CheckpointSurgeonException {
        StoreScan s = new StoreScan();
        for (String g : given) {
            String root = root(g);
            if (s.roots.stream().anyMatch(r -> FlinkFileSystems.within(root, r))) continue;
            s.roots.removeIf(r -> FlinkFileSystems.within(r, root));
            s.roots.add(root);
        }
        CompletionService<Object[]> cs = new ExecutorCompletionService<>(pool.exec);
        int pending = 0;
        for (String root : s.roots) {
            submitListing(cs, root);
            pending++;
        }
        Set<String> withMetadata = new HashSet<>();
        Map<String, Long> chkDirs = new HashMap<>();
        Progress progress = new Progress();
        try {
            while (pending > 0) {
                Object[] done = Pool.get(cs.take(), "listing");
                pending--;
                s.directories++;
                @SuppressWarnings("unchecked")
                List<FlinkFileSystems.Status> entries = (List<FlinkFileSystems.Status>) done[1];
                for (FlinkFileSystems.Status st : entries) {
                    String name = name(st.path);
                    if (st.dir) {
                        if (CheckpointScan.SNAPSHOT_DIR.matcher(name).matches()) chkDirs.put(st.path, st.mtime);
                        submitListing(cs, st.path);
                        pending++;
                        continue;
                    }
                    CheckpointScan.FileInfo info = new CheckpointScan.FileInfo(st.length, st.mtime);
                    s.files.put(st.path, info);
                    if (name.equals("_metadata")) {
                        String dir = parent(st.path);
                        withMetadata.add(dir);
                        s.metadata.add(new Meta(dir, id(dir), info));
                    }
                    if (CheckpointScan.isBackup(name)) s.backups.add(new Meta(parent(st.path), id(parent(st.path)), info, name));
                }
                progress.report(s.directories, pending, s.files.size(), pool.size);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "listing interrupted", e);
        }
        // chk-* without _metadata: an aborted checkpoint, or one being written now. An S3 prefix has
        // no mtime of its own (0): its newest object's counts.
        Map<String, Long> newest = new HashMap<>();
        for (Map.Entry<String, CheckpointScan.FileInfo> e : s.files.entrySet()) {
            String chk = s.chkDirOf(e.getKey());
            if (chk != null && !withMetadata.contains(chk)) newest.merge(chk, e.getValue().mtime, Math::max);
        }
        for (Map.Entry<String, Long> e : chkDirs.entrySet()) {
            if (!withMetadata.contains(e.getKey())) newest.merge(e.getKey(), e.getValue(), Math::max);
        }
        s.incomplete.putAll(newest);
        s.metadata.sort(newestFirst(s.metadata));
        return s;
    }

    private static void submitListing(CompletionService<Object[]> cs, String dir) {
        cs.submit(() -> {
            try {
                return new Object[] {dir, FlinkFileSystems.listStatus(dir)};
            } catch (IOException e) {
                throw new IOException(dir + ": " + e, e);
            }
        });
    }

    /** A root as Flink qualifies it; it must be a directory (on S3: a prefix with objects below it). */
    private static String root(String given) throws CheckpointSurgeonException {
        FlinkFileSystems.Status st;
        try {
            st = FlinkFileSystems.status(given);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, given + ": " + e, e);
        }
        if (st == null) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, given + " does not exist (no object"
                    + " below it)");
        }
        if (!st.dir) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, given + " is a file:"
                    + " give a checkpoint, job or base directory");
        }
        return trim(st.path);
    }

    /** Newest first, as {@link CheckpointScan} orders them: job directories by their newest, then id, then mtime. */
    private static Comparator<Meta> newestFirst(List<Meta> all) {
        Map<String, Long> groupTime = new HashMap<>();
        for (Meta m : all) groupTime.merge(parent(m.dir), m.file.mtime, Math::max);
        return Comparator.<Meta>comparingLong(m -> -groupTime.get(parent(m.dir)))
                .thenComparing(m -> parent(m.dir))
                .thenComparingLong(m -> -m.id)
                .thenComparingLong(m -> -m.file.mtime)
                .thenComparing(m -> m.dir);
    }

    /** The root a path lies under, or null. */
    String rootOf(String path) {
        for (String r : roots) {
            if (path.startsWith(r + "/")) return r;
        }
        return null;
    }

    /** The nearest snapshot directory ({@code chk-<id>}, {@code savepoint-*}) a file lies in, inside its root; or null. */
    String chkDirOf(String file) {
        String root = rootOf(file);
        for (String p = parent(file); root != null && p.length() >= root.length(); p = parent(p)) {
            if (CheckpointScan.SNAPSHOT_DIR.matcher(name(p)).matches()) return p;
        }
        return null;
    }

    /** The directory names from a file's root (counted) down to its parent. */
    List<String> dirNames(String file) {
        List<String> out = new ArrayList<>();
        String root = rootOf(file);
        if (root == null) return out;
        out.add(name(root));
        String[] parts = file.substring(root.length() + 1).split("/");
        for (int i = 0; i < parts.length - 1; i++) out.add(parts[i]);
        return out;
    }

    /** The bytes of a {@code _metadata} (small: read whole). */
    static byte[] read(Meta m) throws CheckpointSurgeonException {
        try {
            return FlinkFileSystems.readAll(m.metadata());
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, m.metadata() + ": " + e, e);
        }
    }

    /**
     * The files a {@code _metadata} references, each once, relative handles resolved against its
     * directory; {@link CheckpointScan.Ref#name} is the path to ask the file system for, compared
     * with listed paths after {@link FlinkFileSystems#normalize}.
     */
    static List<CheckpointScan.Ref> references(Meta m, byte[] bytes) throws CheckpointSurgeonException {
        Map<String, CheckpointScan.Ref> seen = new LinkedHashMap<>();
        for (StateFile f : Native.stateFiles(bytes, m.metadata())) {
            String name = f.kind() == StateFile.Kind.RELATIVE ? m.dir + "/" + f.path() : f.path();
            String key = f.kind() + " " + FlinkFileSystems.normalize(name) + " " + f.start() + " " + f.size();
            seen.putIfAbsent(key, new CheckpointScan.Ref(f, null, name));
        }
        return new ArrayList<>(seen.values());
    }

    static long id(String dir) {
        java.util.regex.Matcher m = CheckpointScan.CHK.matcher(name(dir));
        if (!m.matches()) return -1;
        try {
            return Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static String trim(String p) {
        return p.endsWith("/") && !p.endsWith("://") ? trim(p.substring(0, p.length() - 1)) : p;
    }

    static String parent(String p) {
        int i = p.lastIndexOf('/');
        return i <= 0 ? p : p.substring(0, i);
    }

    static String name(String p) {
        return p.substring(p.lastIndexOf('/') + 1);
    }

    /** Listing progress, at most every 2 s. */
    private static final class Progress {
        private long next = System.nanoTime() + 2_000_000_000L;

        void report(long dirs, int pending, int files, int parallelism) {
            long now = System.nanoTime();
            if (now < next) return;
            next = now + 2_000_000_000L;
            CheckpointSurgeon.progressListener().message(String.format(Locale.ROOT, "listed %,d directories, %,d files;"
                    + " %,d listings to go (%d at once)", dirs, files, pending, parallelism));
        }
    }

    /** Requests to a Flink file system, at most {@link #size} at once (daemon threads: an abandoned run cannot hang the JVM). */
    static final class Pool implements AutoCloseable {
        final int size;
        final ExecutorService exec;

        Pool(int size) {
            if (size < 1 || size > 256) {
                throw new IllegalArgumentException("parallelism " + size + ": expected 1 to 256");
            }
            this.size = size;
            AtomicInteger n = new AtomicInteger();
            this.exec = Executors.newFixedThreadPool(size, r -> {
                Thread t = new Thread(r, "checkpoint-surgeon-store-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }

        /** One call per item, at most {@link #size} at once; results in order, the first failure thrown. */
        <T, R> List<R> map(List<T> items, Call<T, R> f, String what) throws CheckpointSurgeonException {
            List<Future<R>> fs = new ArrayList<>();
            for (T t : items) fs.add(exec.submit(() -> f.apply(t)));
            List<R> out = new ArrayList<>();
            try {
                for (Future<R> x : fs) out.add(get(x, what));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, what + " interrupted", e);
            } finally {
                for (Future<R> x : fs) x.cancel(true);
            }
            return out;
        }

        static <R> R get(Future<R> f, String what) throws CheckpointSurgeonException, InterruptedException {
            try {
                return f.get();
            } catch (ExecutionException e) {
                Throwable c = e.getCause();
                if (c instanceof CheckpointSurgeonException) throw (CheckpointSurgeonException) c;
                if (c instanceof Error) throw (Error) c;
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, what + ": " + c, c);
            }
        }

        @Override
        public void close() {
            exec.shutdownNow();
        }
    }

    /** A request that may fail. */
    interface Call<T, R> {
        R apply(T t) throws Exception;
    }
}
