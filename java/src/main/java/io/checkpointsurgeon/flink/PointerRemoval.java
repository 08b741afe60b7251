package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * What removing an HA checkpoint pointer keeps: the pointer's exact value in a new file, and its
 * completedCheckpoint file under a new name in the same directory (never deleted). Every name is
 * new ({@code O_CREAT|O_EXCL}, link(2)): an existing path is never written, a taken name gets
 * {@code -<n>}. The ConfigMap or ZooKeeper side is {@link KubernetesHa#remove} and
 * {@link ZooKeeperLeader#remove}.
 */
public final class PointerRemoval {
    /** The suffix of what a removal keeps; {@link HaCheckpoint#isHaFileName} passes over it (".backup-"). */
    public static final String KEPT = ".backup-removed";

    private PointerRemoval() {}

    /** Writes {@code bytes} to a new file {@code dir/<name>[-n]}, synced with its directory; returns it. */
    public static Path keep(Path dir, String name, byte[] bytes) throws CheckpointSurgeonException {
        for (int n = 0; n < 1000; n++) {
            Path f = dir.resolve(n == 0 ? name : name + "-" + n);
            OutputStream o;
            try {
                o = Files.newOutputStream(f, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, f + ": cannot create: " + e, e);
            }
            try (o) {
                o.write(bytes);
            } catch (IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, f + ": " + e
                        + " (the partial file is left; nothing else was changed)", e);
            }
            sync(f, false);
            sync(dir, true);
            return f;
        }
        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, dir.resolve(name) + ": 1000 names in a row exist");
    }

    /**
     * Moves {@code file} aside to {@code <name>.backup-removed[-n]} in its directory: a hard link to
     * the new name (which fails on an existing one), then the old name is unlinked; where links are
     * impossible, a rename after a check that the name is free.
     */
    public static Path moveAside(Path file) throws CheckpointSurgeonException {
        String base = file.getFileName() + KEPT;
        for (int n = 0; n < 1000; n++) {
            Path to = file.resolveSibling(n == 0 ? base : base + "-" + n);
            boolean linked;
            try {
                Files.createLink(to, file);
                linked = true;
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (UnsupportedOperationException | IOException e) {
                linked = false; // no hard links here
            }
            try {
                if (linked) {
                    Files.delete(file);
                } else {
                    Files.move(file, to); // without REPLACE_EXISTING: fails on an existing name
                }
            } catch (FileAlreadyExistsException e) {
                continue;
            } catch (IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "moving " + file + " to " + to
                        + ": " + e + (linked ? " (both names are left)" : ""), e);
            }
            sync(file.getParent(), true);
            return to;
        }
        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": 1000 names in a row exist");
    }

    private static void sync(Path p, boolean dir) throws CheckpointSurgeonException {
        try (FileChannel ch = FileChannel.open(p, dir ? StandardOpenOption.READ : StandardOpenOption.WRITE)) {
            ch.force(true);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "syncing " + p + ": " + e, e);
        }
    }
}
