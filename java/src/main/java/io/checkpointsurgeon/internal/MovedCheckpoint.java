package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.KeyedReport;
import io.checkpointsurgeon.flink.StateFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A local checkpoint that was moved or copied away from where Flink wrote it (downloaded from
 * S3, a volume mounted elsewhere, a test fixture): its {@code _metadata} still names the files of
 * the job directory ({@code shared/}, {@code taskowned/}, {@code chk-N/}) by their old absolute
 * paths, which the native reader refuses as outside the job directory. For reading only (the
 * keyed-state report), such a path is read at the same place below the job directory here:
 * nothing outside it is read (the native side refuses {@code ..} and links that leave it), and
 * no surgery follows a move (Flink restores the checkpoint only where its {@code _metadata}
 * points).
 */
final class MovedCheckpoint {
    /** The old directories as {@code _metadata} names them (each ending in {@code /}), and where they are here. */
    final Map<String, String> mirrors;
    final Path metadata;
    final int files;

    private MovedCheckpoint(Map<String, String> mirrors, Path metadata, int files) {
        this.mirrors = mirrors;
        this.metadata = metadata;
        this.files = files;
    }

    /** How many trailing components of a path are tried as its place below the job directory. */
    private static final int MAX_DEPTH = 8;

    /**
     * The move {@code files} (the references of {@code checkpoint}) show, or null. A referenced
     * absolute path outside the job directory counts as moved when its last components name a
     * file below the job directory here ({@code shared/<uuid>}, {@code chk-3/<uuid>}, a change log's
     * {@code changelog/<job>/dstl/<uuid>}: the fewest components that do), or a file beside
     * {@code _metadata} (a flat copy); the part before them is then read at that place.
     */
    static MovedCheckpoint of(Path checkpoint, List<StateFile> files) {
        Path metadata = Files.isDirectory(checkpoint) ? checkpoint.resolve("_metadata") : checkpoint;
        Path dir;
        Path jobDir;
        try {
            dir = metadata.toAbsolutePath().getParent().toRealPath();
            jobDir = dir.getParent();
        } catch (IOException e) {
            return null;
        }
        if (jobDir == null) return null;
        Map<String, String> mirrors = new TreeMap<>();
        int moved = 0;
        for (StateFile f : files) {
            if (f.kind() == StateFile.Kind.RELATIVE) continue;
            String p = f.path();
            if (p.contains("..") || p.endsWith("/")) continue;
            if (placed(p, jobDir, mirrors) || placed(p, dir, mirrors)) moved++;
        }
        return mirrors.isEmpty() ? null : new MovedCheckpoint(mirrors, metadata, moved);
    }

    /**
     * Whether a read of the checkpoint left a handle unread or noted (a moved checkpoint's files are
     * refused as outside its job directory): only then is {@link #of} worth its listing of the files.
     */
    static boolean refusedSome(KeyedReport r) {
        for (KeyedReport.Operator op : r.operators()) {
            for (KeyedReport.Handle h : op.handles()) {
                if (h.error() != null || !h.notes().isEmpty()) return true;
            }
        }
        return false;
    }

    /** Whether the last components of {@code p} (the fewest that do) name a file of {@code to}; then {@code mirrors} maps the rest. */
    private static boolean placed(String p, Path to, Map<String, String> mirrors) {
        int end = p.length();
        for (int depth = 0; depth < MAX_DEPTH && end > 0; depth++) {
            int slash = p.lastIndexOf('/', end - 1);
            if (slash <= 0) return false;
            if (here(p.substring(0, slash + 1), to, p.substring(slash + 1), mirrors)) return true;
            end = slash;
        }
        return false;
    }

    /** Whether {@code from + rest} is a file of {@code to} here, under a mirror {@code from -> to} (added if new). */
    private static boolean here(String from, Path to, String rest, Map<String, String> mirrors) {
        String local = from.startsWith("file://") ? from.substring(7) : from.startsWith("file:") ? from.substring(5) : from;
        if (local.equals(to + "/") || rest.isEmpty() || rest.startsWith("/") || rest.contains("//")) return false;
        String known = mirrors.get(from);
        if (known != null && !known.equals(to.toString())) return false;
        if (!Files.isRegularFile(to.resolve(rest), LinkOption.NOFOLLOW_LINKS)) return false;
        mirrors.put(from, to.toString());
        return true;
    }

    /** The native source that reads the moved files at their places here ({@link #mirrors}). */
    byte[] source() throws CheckpointSurgeonException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(metadata);
        } catch (IOException | OutOfMemoryError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO,
                    metadata + ": cannot read it again to follow the checkpoint's move: " + e.getMessage(), null);
        }
        return Wire.source(bytes, metadata.toString(), metadata.toAbsolutePath().getParent().toString(), mirrors);
    }

    /** The line the report's reader is told. */
    String note() {
        StringBuilder b = new StringBuilder("the checkpoint was moved or copied: its _metadata names ").append(files)
                .append(" file(s) where Flink wrote them; read here instead:");
        mirrors.forEach((from, to) -> b.append(' ').append(from).append(" -> ").append(to).append('/'));
        return b.append(" (Flink itself restores it only where its _metadata points)").toString();
    }
}
