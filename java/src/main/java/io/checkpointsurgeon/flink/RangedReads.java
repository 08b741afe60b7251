package io.checkpointsurgeon.flink;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Ranged reads of files on Flink paths, for the native keyed reader: a read at the position where
 * the previous one of the same file and thread ended goes on in the open stream (a canonical stream
 * read front to back is one request), any other opens or seeks (an SST file's last few KiB). Each
 * reading thread keeps its own stream of a file; {@link #done} closes it, {@link #close} all.
 */
public final class RangedReads implements AutoCloseable {
    private static final class Open {
        final InputStream in;
        long pos;

        Open(InputStream in) {
            this.in = in;
        }
    }

    private final Map<String, Open> open = new ConcurrentHashMap<>();
    private final AtomicLong bytes = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();

    private static String key(String path) {
        return Thread.currentThread().getId() + "\u0000" + path;
    }

    /** {@code len} bytes of {@code path} at {@code offset}; an EOFException when the file ends before them. */
    public byte[] read(String path, long offset, int len) throws IOException {
        String k = key(path);
        Open o = open.get(k);
        if (o == null || o.pos != offset) {
            if (o == null) {
                o = new Open(FlinkFileSystems.open(path));
                open.put(k, o);
            }
            if (offset != 0 || o.pos != 0) {
                FlinkFileSystems.seek(o.in, offset);
            }
            o.pos = offset;
            requests.incrementAndGet();
        }
        byte[] b = new byte[len];
        int n = 0;
        while (n < len) {
            int r = o.in.read(b, n, len - n);
            if (r < 0) {
                throw new EOFException(path + ": ends at byte " + (offset + n) + ", before the " + len
                        + " bytes at byte " + offset + " that its state handle names");
            }
            n += r;
        }
        o.pos += len;
        bytes.addAndGet(len);
        return b;
    }

    /** Closes this thread's stream of {@code path}, if it has one. */
    public void done(String path) {
        Open o = open.remove(key(path));
        if (o != null) closeQuietly(o.in);
    }

    /** The bytes read so far. */
    public long bytesRead() {
        return bytes.get();
    }

    /** The streams opened or repositioned so far: about the requests made. */
    public long requests() {
        return requests.get();
    }

    @Override
    public void close() {
        List<Open> all = new ArrayList<>(open.values());
        open.clear();
        for (Open o : all) closeQuietly(o.in);
    }

    private static void closeQuietly(InputStream in) {
        try {
            in.close();
        } catch (IOException | RuntimeException e) {
            // a read-only stream: nothing is lost when its close fails
        }
    }
}
