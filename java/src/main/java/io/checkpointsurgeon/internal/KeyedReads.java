package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.RangedReads;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the native keyed reader calls back from its reading threads ({@code JavaReads} in
 * {@code native/src/bridge.rs}): ranged reads of a remote checkpoint's files, the new files a keyed
 * rewrite streams onto a Flink path, and how far the read is. Not API.
 */
final class KeyedReads {
    /** How often a long read reports its progress. */
    private static final long PROGRESS_NANOS = 2_000_000_000L;

    private final RangedReads files;
    private final ProgressListener progress;
    private final long start = System.nanoTime();
    private long next = start + PROGRESS_NANOS;

    /** New files being written, by id; the paths this run created go into {@link #created}. */
    private final Map<Long, OutputStream> writing = new ConcurrentHashMap<>();
    private final Map<Long, String> writingPath = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);
    private final Set<String> created;

    /** {@code files} is null for a local checkpoint, which the native code reads itself. */
    KeyedReads(RangedReads files, ProgressListener progress) {
        this(files, progress, null);
    }

    /**
     * {@code created} (null: no file is written) receives every path this run created through
     * {@link #create}, as soon as it was created: the caller's undo removes those, and only those.
     */
    KeyedReads(RangedReads files, ProgressListener progress, Set<String> created) {
        this.files = files;
        this.progress = progress;
        this.created = created;
    }

    /** Called by the native code: the length of {@code path}. */
    long length(String path) throws IOException {
        return FlinkFileSystems.length(path);
    }

    /**
     * Called by the native code: creates {@code path}, which must not exist (Flink's
     * {@code NO_OVERWRITE}); an id for {@link #write}, {@link #close} and {@link #abandon}.
     */
    long create(String path) throws IOException {
        if (created == null) throw new IOException(path + ": this run writes no remote files");
        OutputStream out = FlinkFileSystems.create(path, false);
        created.add(path);
        long id = nextId.getAndIncrement();
        writing.put(id, out);
        writingPath.put(id, path);
        return id;
    }

    /** Called by the native code: the next {@code len} bytes of the file {@code id} (the array is reused). */
    void write(long id, byte[] buf, int len) throws IOException {
        // a safe point, as between the place step's transfers: the run fails and its undo removes the file
        if (Commit.stopping()) throw new IOException("interrupted (the JVM is shutting down)");
        stream(id).write(buf, 0, len);
    }

    /** Called by the native code once the whole file {@code id} was written: completes it. */
    void close(long id) throws IOException {
        OutputStream out = stream(id);
        writing.remove(id);
        writingPath.remove(id);
        out.close();
    }

    /** Called by the native code when the file {@code id} cannot be finished: never completed. */
    void abandon(long id) {
        OutputStream out = writing.remove(id);
        String path = writingPath.remove(id);
        if (out != null) FlinkFileSystems.abandon(out, path);
    }

    private OutputStream stream(long id) throws IOException {
        OutputStream out = writing.get(id);
        if (out == null) throw new IOException("no new file is being written as " + id);
        return out;
    }

    /** Called by the native code: {@code len} bytes of {@code path} at {@code offset}. */
    byte[] read(String path, long offset, int len) throws IOException {
        if (files == null) throw new IOException(path + ": a local checkpoint has no remote files");
        return files.read(path, offset, len);
    }

    /** Called by the native code: it is done with {@code path} for now. */
    void done(String path) {
        if (files != null) files.done(path);
    }

    /**
     * Called by the native code after every part it read: each SST file (read ahead, many at once),
     * then each keyed handle.
     */
    void progress(int partsDone, int parts, long bytesDone, long bytes) {
        long now = System.nanoTime();
        synchronized (this) {
            if (now < next && partsDone < parts) return;
            if (now < next && now - start < PROGRESS_NANOS) return; // a short read says nothing
            next = now + PROGRESS_NANOS;
        }
        progress.message(String.format(Locale.ROOT, "keyed state: %,d of %,d SST files and handles read (%s of %s%s), %.1f s",
                partsDone, parts, InspectReport.formatBytes(bytesDone), InspectReport.formatBytes(bytes),
                files == null ? "" : "; " + InspectReport.formatBytes(files.bytesRead()) + " fetched",
                (now - start) / 1e9));
    }
}
