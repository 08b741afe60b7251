package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;
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

    /**
     * The move {@code files} (the references of {@code checkpoint}) show, or null. The old job
     * directory is the part of an absolute path before the checkpoint directory's own name, or
     * before {@code shared/} or {@code taskowned/}; it counts when the file it names exists at the
     * same place below the job directory here. A checkpoint copied flat (its shared files beside
     * {@code _metadata}) maps the file's old directory to the checkpoint directory instead.
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
        String name = "/" + dir.getFileName() + "/";
        Map<String, String> mirrors = new TreeMap<>();
        int moved = 0;
        for (StateFile f : files) {
            if (f.kind() == StateFile.Kind.RELATIVE) continue;
            String p = f.path();
            if (p.contains("..") || p.endsWith("/")) continue;
            int at = oldJobDirEnd(p, name);
            int slash = p.lastIndexOf('/');
            if (at > 0 && here(p.substring(0, at), jobDir, p.substring(at), mirrors)
                    || slash > 0 && here(p.substring(0, slash + 1), dir, p.substring(slash + 1), mirrors)) {
                moved++;
            }
        }
        return mirrors.isEmpty() ? null : new MovedCheckpoint(mirrors, metadata, moved);
    }

    /** Whether {@code from + rest} is a file of {@code to} here, under a mirror {@code from -> to} (added if new). */
    private static boolean here(String from, Path to, String rest, Map<String, String> mirrors) {
        String local = from.startsWith("file://") ? from.substring(7) : from.startsWith("file:") ? from.substring(5) : from;
        if (local.equals(to + "/") || rest.isEmpty() || rest.startsWith("/")) return false;
        String known = mirrors.get(from);
        if (known != null && !known.equals(to.toString())) return false;
        if (!Files.isRegularFile(to.resolve(rest), LinkOption.NOFOLLOW_LINKS)) return false;
        mirrors.put(from, to.toString());
        return true;
    }

    /** Where the old job directory ends in {@code p} (after its {@code /}), or -1. */
    private static int oldJobDirEnd(String p, String checkpointDirName) {
        for (String marker : new String[] {checkpointDirName, "/shared/", "/taskowned/"}) {
            int i = p.lastIndexOf(marker);
            if (i > 0) return i + 1;
        }
        return -1;
    }

    /** The native source that reads the old job directory's files below {@link #jobDir}. */
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
