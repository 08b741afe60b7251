package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.StateFile;
import io.checkpointsurgeon.internal.Native;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitOption;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One walk of local checkpoint roots, shared by {@code recover} and {@code orphans}: every
 * {@code _metadata} (checkpoint or savepoint), every regular file with its size and mtime, the
 * {@code chk-*} directories without {@code _metadata}, and what was not walked into (symbolic
 * links, FIFOs, devices). Symbolic links are never followed, so a walk stays inside its roots and
 * a link loop cannot make it run forever.
 */
final class CheckpointScan {
    static final Pattern CHK = Pattern.compile("chk-(\\d+)");
    /**
     * A directory Flink writes one snapshot into, {@code _metadata} last: a checkpoint's {@code chk-<id>}
     * or a savepoint's {@code savepoint-<job>-<random>}. Without {@code _metadata} it is aborted or
     * still being written (a savepoint of a large state can take hours), never a source of orphans alone.
     */
    static final Pattern SNAPSHOT_DIR = Pattern.compile("chk-\\d+|savepoint-.+");

    /** One regular file: size and modification time (ms). */
    static final class FileInfo {
        final long size;
        final long mtime;

        FileInfo(long size, long mtime) {
            this.size = size;
            this.mtime = mtime;
        }
    }

    /** A directory holding a {@code _metadata}: a checkpoint or a savepoint. */
    static final class Metadata {
        final Path dir;
        /** The checkpoint id of a {@code chk-<id>} directory, -1 for a savepoint. */
        final long id;
        /** Null unless {@code _metadata} is a regular file. */
        final FileInfo file;
        /** What {@code _metadata} is when it is no regular file ("a FIFO", "a symbolic link", ...), else null. */
        final String notRegular;

        /** {@code _metadata}, or a backup {@code _metadata.backup-*} of this tool's in-place repairs. */
        final String name;

        Metadata(Path dir, long id, FileInfo file, String notRegular) {
            this(dir, id, file, notRegular, "_metadata");
        }

        Metadata(Path dir, long id, FileInfo file, String notRegular, String name) {
            this.dir = dir;
            this.id = id;
            this.file = file;
            this.notRegular = notRegular;
            this.name = name;
        }

        Path metadata() {
            return dir.resolve(name);
        }
    }

    final List<Path> roots = new ArrayList<>();
    final List<Metadata> metadata = new ArrayList<>();
    /** The {@code _metadata.backup-*} of in-place repairs: their references are references too (orphans). */
    final List<Metadata> backups = new ArrayList<>();
    /** Every regular file under the roots (real, normalized paths), sorted. */
    final Map<Path, FileInfo> files = new TreeMap<>();
    /** {@code chk-*} directories without a {@code _metadata}, with the newest mtime in them. */
    final Map<Path, Long> incomplete = new TreeMap<>();
    /** Directories seen (for reports of their number). */
    long directories;
    /** Not walked into or not taken as a file: path and what it is. */
    final Map<Path, String> skipped = new TreeMap<>();

    private CheckpointScan() {}

    /** Walks the roots (each a local directory; a root may itself be a link, which is resolved once). */
    static CheckpointScan walk(List<Path> roots) throws CheckpointSurgeonException {
        CheckpointScan s = new CheckpointScan();
        Map<Path, Boolean> dirsWithMetadata = new HashMap<>();
        Map<Path, Long> chkDirs = new HashMap<>();
        for (Path given : roots) {
            Path root = realRoot(given);
            if (s.roots.stream().anyMatch(root::startsWith)) continue;
            s.roots.removeIf(r -> r.startsWith(root));
            s.roots.add(root);
        }
        for (Path root : s.roots) {
            try {
                Files.walkFileTree(root, EnumSet.noneOf(FileVisitOption.class), Integer.MAX_VALUE,
                        new SimpleFileVisitor<Path>() {
                            @Override
                            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes a) {
                                s.directories++;
                                if (SNAPSHOT_DIR.matcher(dir.getFileName() == null ? "" : dir.getFileName().toString()).matches()) {
                                    chkDirs.put(dir, a.lastModifiedTime().toMillis());
                                }
                                return FileVisitResult.CONTINUE;
                            }

                            @Override
                            public FileVisitResult visitFile(Path f, BasicFileAttributes a) {
                                String name = f.getFileName().toString();
                                if (name.equals("_metadata")) dirsWithMetadata.put(f.getParent(), Boolean.TRUE);
                                if (a.isRegularFile()) {
                                    FileInfo info = new FileInfo(a.size(), a.lastModifiedTime().toMillis());
                                    s.files.put(f, info);
                                    if (name.equals("_metadata")) s.metadata.add(new Metadata(f.getParent(), id(f.getParent()), info, null));
                                    if (isBackup(name)) s.backups.add(new Metadata(f.getParent(), id(f.getParent()), info, null, name));
                                } else {
                                    String what = a.isSymbolicLink() ? "a symbolic link (not followed)" : kind(f);
                                    s.skipped.put(f, what);
                                    if (name.equals("_metadata")) s.metadata.add(new Metadata(f.getParent(), id(f.getParent()), null, what));
                                    if (isBackup(name)) s.backups.add(new Metadata(f.getParent(), id(f.getParent()), null, what, name));
                                }
                                return FileVisitResult.CONTINUE;
                            }

                            @Override
                            public FileVisitResult visitFileFailed(Path f, IOException e) throws IOException {
                                // deleted after its directory was listed (a running job discards subsumed
                                // checkpoints): no file of the roots any more
                                if (e instanceof NoSuchFileException && !f.equals(root)) return FileVisitResult.CONTINUE;
                                throw e;
                            }
                        });
            } catch (IOException e) {
                throw io("walking " + root, e);
            }
        }
        // chk-* directories without _metadata: an aborted checkpoint, or one being written now
        Map<Path, Long> newest = new HashMap<>();
        Map<Path, java.util.Optional<Path>> chkOfDir = new HashMap<>();
        for (Map.Entry<Path, FileInfo> e : s.files.entrySet()) {
            Path chk = chkDirOf(e.getKey(), s.roots, chkOfDir);
            if (chk != null && !dirsWithMetadata.containsKey(chk)) newest.merge(chk, e.getValue().mtime, Math::max);
        }
        for (Map.Entry<Path, Long> e : chkDirs.entrySet()) {
            if (!dirsWithMetadata.containsKey(e.getKey())) newest.merge(e.getKey(), e.getValue(), Math::max);
        }
        s.incomplete.putAll(newest);
        s.metadata.sort(newestFirst(s.metadata));
        return s;
    }

    /**
     * Newest first: the job directories by their newest {@code _metadata}, inside one by checkpoint
     * id (a truncated or copied {@code _metadata} has a new mtime, its id is still its place), then
     * savepoints by mtime.
     */
    private static Comparator<Metadata> newestFirst(List<Metadata> all) {
        Map<Path, Long> groupTime = new HashMap<>();
        for (Metadata m : all) groupTime.merge(parent(m), m.file == null ? 0 : m.file.mtime, Math::max);
        return Comparator.<Metadata>comparingLong(m -> -groupTime.get(parent(m)))
                .thenComparing(CheckpointScan::parent)
                .thenComparingLong(m -> -m.id)
                .thenComparingLong(m -> m.file == null ? 0 : -m.file.mtime)
                .thenComparing(m -> m.dir);
    }

    private static Path parent(Metadata m) {
        return m.dir.getParent() == null ? m.dir : m.dir.getParent();
    }

    /** {@link #chkDirOf(Path, List)}, remembered by the file's directory (a walk has 100,000s of files, few directories). */
    static Path chkDirOf(Path file, List<Path> roots, Map<Path, java.util.Optional<Path>> byDir) {
        return byDir.computeIfAbsent(file.getParent(), d -> java.util.Optional.ofNullable(chkDirOf(file, roots))).orElse(null);
    }

    /** The snapshot directory ({@code chk-<id>}, {@code savepoint-*}) a file lies in, directly or below, inside one of the roots; or null. */
    static Path chkDirOf(Path file, List<Path> roots) {
        for (Path p = file.getParent(); p != null; p = p.getParent()) {
            if (SNAPSHOT_DIR.matcher(p.getFileName() == null ? "" : p.getFileName().toString()).matches()) return p;
            if (roots.contains(p)) return null;
        }
        return null;
    }

    /** A backup of {@code _metadata} an in-place repair keeps ({@code Commit.backup}, {@code RemoteRepair}). */
    static boolean isBackup(String name) {
        return name.startsWith("_metadata.backup-");
    }

    static long id(Path dir) {
        Matcher m = CHK.matcher(dir.getFileName() == null ? "" : dir.getFileName().toString());
        if (!m.matches()) return -1;
        try {
            return Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static Path realRoot(Path given) throws CheckpointSurgeonException {
        Path root;
        try {
            root = given.toRealPath();
        } catch (FileSystemException e) {
            String reason = e.getReason() == null ? e.toString() : e.getReason();
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, given + ": " + reason, e);
        } catch (IOException e) {
            throw io("resolving " + given, e);
        }
        if (!Files.isDirectory(root, LinkOption.NOFOLLOW_LINKS)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT,
                    given + " is not a directory (" + kind(root) + "): give a checkpoint, job or base directory");
        }
        return root;
    }

    /** What a path that is no regular file is, for messages. */
    static String kind(Path p) {
        try {
            BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (a.isSymbolicLink()) return "a symbolic link";
            if (a.isDirectory()) return "a directory";
            if (a.isRegularFile()) return "a regular file";
            Object type = Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            int mode = type instanceof Integer ? (Integer) type : 0;
            switch (mode & 0170000) {
                case 0010000:
                    return "a FIFO";
                case 0140000:
                    return "a socket";
                case 0020000:
                    return "a character device";
                case 0060000:
                    return "a block device";
                default:
                    return "no regular file";
            }
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return "no regular file";
        }
    }

    /** One reference of a {@code _metadata} to a file, with its path resolved. */
    static final class Ref {
        final StateFile file;
        /** The local file (real directory, normalized), or null for a path on another file system. */
        final Path local;
        /** The path as Flink names it (absolute; a relative handle resolved against the checkpoint directory). */
        final String name;

        Ref(StateFile file, Path local, String name) {
            this.file = file;
            this.local = local;
            this.name = name;
        }

        /** The bytes the file must hold at least. */
        long minimumSize() {
            return file.kind() == StateFile.Kind.SEGMENT ? file.start() + file.size() : file.size();
        }
    }

    /** The files one {@code _metadata} references; parent directories resolved through {@code realDirs}. */
    static List<Ref> references(Metadata m, Map<Path, Path> realDirs) throws CheckpointSurgeonException {
        List<Ref> out = new ArrayList<>();
        Map<String, Ref> seen = new LinkedHashMap<>();
        for (StateFile f : Native.stateFiles(m.metadata())) {
            Path local;
            String name;
            if (f.kind() == StateFile.Kind.RELATIVE) {
                local = m.dir.resolve(f.path()).normalize();
                name = local.toString();
            } else if (FlinkFileSystems.isRemote(f.path())) {
                local = null;
                name = f.path();
            } else {
                local = FlinkFileSystems.localPath(f.path()).toAbsolutePath().normalize();
                name = f.path();
            }
            if (local != null) local = real(local, realDirs);
            String key = f.kind() + " " + (local != null ? local.toString() : name) + " " + f.start() + " " + f.size();
            if (seen.containsKey(key)) continue;
            Ref r = new Ref(f, local, name);
            seen.put(key, r);
            out.add(r);
        }
        return out;
    }

    /**
     * The file with its directory's real path: a checkpoint directory configured through a link
     * names its files by the link, the walk sees the real paths; both must compare equal, or every
     * file would look unreferenced.
     */
    static Path real(Path file, Map<Path, Path> realDirs) {
        Path dir = file.getParent();
        if (dir == null) return file;
        Path r = realDirs.computeIfAbsent(dir, d -> {
            try {
                return d.toRealPath();
            } catch (IOException e) {
                return d; // gone: the file is missing anyway
            }
        });
        return r.resolve(file.getFileName());
    }

    static CheckpointSurgeonException io(String what, IOException e) {
        String reason = e instanceof FileSystemException && ((FileSystemException) e).getReason() != null
                ? ((FileSystemException) e).getFile() + ": " + ((FileSystemException) e).getReason() : e.toString();
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, what + ": " + reason, e);
    }
}
