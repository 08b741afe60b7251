package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Surgery;
import java.io.FileOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Benchmark only (bench/, not part of the library): the native surgery on {@code _metadata} bytes
 * in a Java {@code byte[]}, the route {@link CheckpointSurgeon#repairHa} takes. It lives in the
 * library's internal package to call the package-private {@code Native.plan}, so no API grows
 * for a benchmark.
 *
 * <p>The work directory gets hard links of the input's state files first (untimed, like the
 * output directory of the path route; new state files are written there), then, timed: read
 * {@code _metadata} into a {@code byte[]}, {@code Native.plan} (the stage step), and write the new
 * metadata bytes to {@code WORK_DIR/_metadata} with fsync. The native side copies the array once
 * ({@code convert_byte_array}), so expect about twice the input in RSS.
 *
 * <pre>
 * BenchBytesRoute CHECKPOINT_DIR WORK_DIR STATE purge|metadata-only
 * </pre>
 * Prints {@code bytes read_ms=.. surgery_ms=.. write_ms=.. total_ms=..}. Exit 3 with "N/A" when the
 * input does not fit a Java array (2 GiB and more).
 */
public final class BenchBytesRoute {
    private BenchBytesRoute() {}

    /**
     * Reads in 1 MiB chunks: {@code Files.readAllBytes} would go through a temporary direct buffer
     * as large as the file (one more copy of the input in RSS).
     */
    static byte[] readFully(Path file, int size) throws java.io.IOException {
        byte[] b = new byte[size];
        try (java.io.InputStream in = Files.newInputStream(file)) {
            int off = 0;
            while (off < size) {
                int n = in.read(b, off, Math.min(1 << 20, size - off));
                if (n < 0) {
                    throw new java.io.EOFException(file + " shrank while it was read");
                }
                off += n;
            }
        }
        return b;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: BenchBytesRoute CHECKPOINT_DIR WORK_DIR STATE purge|metadata-only");
            System.exit(1);
        }
        Path in = Path.of(args[0]).toAbsolutePath();
        Path work = Path.of(args[1]).toAbsolutePath();
        Surgery surgery = Surgery.removeState(Surgery.OperatorSelector.all(), args[2]);
        if (args[3].equals("metadata-only")) {
            surgery.metadataOnly();
        }
        Path metadata = in.resolve("_metadata");
        long size = Files.size(metadata);
        if (size > Integer.MAX_VALUE - 8) {
            System.out.println("bytes N/A: _metadata has " + size + " bytes, more than a Java byte[] can hold");
            System.exit(3);
        }
        Files.createDirectories(work);
        try (Stream<Path> files = Files.list(in)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                if (!f.getFileName().toString().equals("_metadata") && Files.isRegularFile(f)) {
                    Files.createLink(work.resolve(f.getFileName()), f);
                }
            }
        }

        long t0 = System.nanoTime();
        byte[] bytes = readFully(metadata, (int) size);
        long t1 = System.nanoTime();
        Staged staged = Native.plan(Native.source(bytes, metadata.toString(), in), Request.of(surgery), work, work.toString());
        byte[] newMetadata = Files.readAllBytes(Path.of(staged.metadataTmp));
        long t2 = System.nanoTime();
        try (FileOutputStream fos = new FileOutputStream(work.resolve("_metadata").toFile())) {
            fos.write(newMetadata);
            fos.getFD().sync();
        }
        Files.delete(Path.of(staged.metadataTmp));
        long t3 = System.nanoTime();
        System.out.printf("bytes read_ms=%.1f surgery_ms=%.1f write_ms=%.1f total_ms=%.1f changes=%d out_bytes=%d%n",
                (t1 - t0) / 1e6, (t2 - t1) / 1e6, (t3 - t2) / 1e6, (t3 - t0) / 1e6,
                staged.plan.changes().size(), newMetadata.length);
    }
}
