package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.flink.StateFile;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What a repair killed with SIGKILL (no shutdown hook runs) leaves in a local checkpoint
 * directory, found by this tool's own naming and nothing else: every staged
 * {@code _metadata.tmp-<uuid>}, and every state file named by the native stage step
 * ({@code commit::random_file_name}: a UUID of version 8 with the tag {@code 8c5}, which Flink's
 * version-4 names never have) that such a staged file references and that neither
 * {@code _metadata} nor a {@code _metadata.backup-*} references. The staged file is written
 * before the state files it names, so each state file a killed stage wrote has one. A file of ours
 * that only an HA file or another checkpoint references (an {@code ha repair}, a
 * {@code --reference-unchanged} output) is never a leftover. Nor is a backup, unless it is
 * {@code _metadata.backup-*} as a second name (hard link) of the live {@code _metadata} itself:
 * what a run killed between its backup and its switch leaves, whose removal loses no byte.
 */
public final class Leftovers {
    private static final String STAGED_PREFIX = "_metadata.tmp-";

    private Leftovers() {}

    /**
     * A staged {@code _metadata}: the native stage's name, or the Flink-path unit's (a version 4
     * UUID): {@code _metadata\.tmp-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}}. Checked by hand, as
     * the next one: every doctor runs them, and a just-started JVM compiles and interprets a regex slowly.
     */
    public static boolean stagedMetadata(String name) {
        return name.length() == STAGED_PREFIX.length() + 36 && name.startsWith(STAGED_PREFIX)
                && uuid(name, STAGED_PREFIX.length());
    }

    /** A state file the native stage named: {@code [0-9a-f]{8}-[0-9a-f]{4}-8c5[0-9a-f]-[89ab][0-9a-f]{3}-[0-9a-f]{12}}. */
    static boolean stagedStateFile(String name) {
        return name.length() == 36 && uuid(name, 0) && name.startsWith("8c5", 14) && "89ab".indexOf(name.charAt(19)) >= 0;
    }

    /** Whether the 36 characters from {@code at} are lower-case hex digits in 8-4-4-4-12 groups. */
    private static boolean uuid(String s, int at) {
        for (int i = 0; i < 36; i++) {
            char c = s.charAt(at + i);
            boolean ok = i == 8 || i == 13 || i == 18 || i == 23 ? c == '-' : (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
            if (!ok) return false;
        }
        return true;
    }

    /** The leftovers in {@code dir}, sorted; nothing is written or locked. */
    public static List<Path> find(Path dir) throws CheckpointSurgeonException {
        List<Path> staged = new ArrayList<>();
        List<Path> metadata = new ArrayList<>();
        List<Path> ours = new ArrayList<>();
        // a directory stream and a sorted list, not Files.list's stream: every doctor lists the
        // checkpoint directory, and a stream pipeline costs a just-started JVM more than the listing
        List<Path> names = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            for (Path p : s) names.add(p);
        } catch (IOException e) {
            throw Commit.io("listing " + dir, e);
        }
        names.sort(null);
        for (Path p : names) {
            if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) continue;
            String name = p.getFileName().toString();
            if (stagedMetadata(name)) staged.add(p);
            else if (name.equals("_metadata") || name.startsWith("_metadata.backup-")) metadata.add(p);
            else if (stagedStateFile(name)) ours.add(p);
        }
        List<Path> out = new ArrayList<>(staged);
        out.addAll(killedBackups(dir, metadata));
        out.sort(null);
        if (staged.isEmpty() || ours.isEmpty()) return out;
        Set<String> named = new HashSet<>();
        for (Path p : staged) {
            try {
                named.addAll(fileNames(p));
            } catch (CheckpointSurgeonException e) {
                // cut short by the kill: written before any state file, so it names none yet
            }
        }
        Set<String> live = new HashSet<>();
        for (Path p : metadata) {
            try {
                live.addAll(fileNames(p));
            } catch (CheckpointSurgeonException e) {
                throw new CheckpointSurgeonException(e.code(), Message.of(p + " cannot be read, so the state files it"
                        + " references are not known and none is taken for a leftover: ", e.typedMessage()), e);
            }
        }
        for (Path p : ours) {
            String name = p.getFileName().toString();
            if (named.contains(name) && !live.contains(name)) out.add(p);
        }
        out.sort(null);
        return out;
    }

    /** The backups among {@code metadata} that are the live {@code _metadata} under a second name. */
    private static List<Path> killedBackups(Path dir, List<Path> metadata) throws CheckpointSurgeonException {
        Path live = dir.resolve("_metadata");
        List<Path> out = new ArrayList<>();
        try {
            for (Path p : metadata) {
                if (p.getFileName().toString().startsWith("_metadata.backup-") && Files.exists(live, LinkOption.NOFOLLOW_LINKS)
                        && Files.isSameFile(p, live)) {
                    out.add(p);
                }
            }
        } catch (IOException e) {
            throw Commit.io("comparing the backups of " + dir + " with its _metadata", e);
        }
        return out;
    }

    /**
     * Removes the leftovers of {@code dir} under the directory's commit lock (so no repair is
     * running there), each reported to the progress listener as it goes; returns them.
     */
    public static List<Path> remove(Path dir) throws CheckpointSurgeonException {
        Commit.Locks locks = new Commit.Locks();
        try {
            locks.lock(dir.toRealPath());
            List<Path> found = find(dir);
            List<Path> removed = new ArrayList<>();
            for (Path p : found) {
                Files.deleteIfExists(p);
                removed.add(p);
                CheckpointSurgeon.progressListener().message("deleted " + p);
            }
            if (!removed.isEmpty()) Commit.syncDir(dir);
            return removed;
        } catch (IOException e) {
            throw Commit.io("removing the leftovers of " + dir, e);
        } finally {
            locks.close(null);
        }
    }

    /** The file names (last path segment) of every state file a metadata file references. */
    private static Set<String> fileNames(Path metadata) throws CheckpointSurgeonException {
        Set<String> names = new HashSet<>();
        for (StateFile f : Native.stateFiles(metadata)) {
            String p = f.path();
            names.add(p.substring(p.lastIndexOf('/') + 1));
        }
        return names;
    }
}
