package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.flink.RangedReads;
import java.io.IOException;
import java.util.Locale;

/**
 * What the native keyed reader calls back from its reading threads ({@code JavaReads} in
 * {@code native/src/bridge.rs}): ranged reads of a remote checkpoint's files, and how far the
 * read is. Not API.
 */
final class KeyedReads {
    /** How often a long read reports its progress. */
    private static final long PROGRESS_NANOS = 2_000_000_000L;

    private final RangedReads files;
    private final ProgressListener progress;
    private final long start = System.nanoTime();
    private long next = start + PROGRESS_NANOS;

    /** {@code files} is null for a local checkpoint, which the native code reads itself. */
    KeyedReads(RangedReads files, ProgressListener progress) {
        this.files = files;
        this.progress = progress;
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

    /** Called by the native code after every keyed handle it read. */
    void progress(int handlesDone, int handles, long bytesDone, long bytes) {
        long now = System.nanoTime();
        synchronized (this) {
            if (now < next && handlesDone < handles) return;
            if (now < next && now - start < PROGRESS_NANOS) return; // a short read says nothing
            next = now + PROGRESS_NANOS;
        }
        progress.message(String.format(Locale.ROOT, "keyed state: %,d of %,d handles read (%s of %s%s), %.1f s",
                handlesDone, handles, InspectReport.formatBytes(bytesDone), InspectReport.formatBytes(bytes),
                files == null ? "" : "; " + InspectReport.formatBytes(files.bytesRead()) + " fetched",
                (now - start) / 1e9));
    }
}
