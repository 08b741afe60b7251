package io.checkpointsurgeon.testing;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Files of the generator and the tests: the fixtures of the Flink version under test, copies a test
 * may change, recursive copy and delete, and the local path of a {@code file:} URI that Flink
 * returns for a checkpoint or savepoint.
 */
public final class TestFiles {
    private TestFiles() {}

    /** {@code tests/fixtures/<flink version>}: the system property {@code fixtures.dir} that the build sets. */
    public static Path fixturesDir() {
        String dir = System.getProperty("fixtures.dir");
        if (dir == null || dir.isEmpty()) {
            throw new IllegalStateException("system property fixtures.dir is not set (run the tests through gradle)");
        }
        return Paths.get(dir);
    }

    /** {@code <fixtures.dir>/<name>}. */
    public static Path fixture(String name) {
        return fixturesDir().resolve(name);
    }

    /** A copy of a checkpoint directory in a new temporary directory, for a test that changes it. */
    public static Path copyToTempDir(Path checkpointDir, String prefix) throws IOException {
        Path dir = Files.createTempDirectory(prefix);
        copyRecursively(checkpointDir, dir);
        return dir;
    }

    /** Copies {@code from} to {@code to}, replacing files that exist there. */
    public static void copyRecursively(Path from, Path to) throws IOException {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    /** Deletes {@code p} and everything below it; nothing happens when it does not exist. */
    public static void deleteRecursively(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        List<Path> all;
        try (Stream<Path> s = Files.walk(p)) {
            all = s.sorted(Comparator.reverseOrder()).collect(Collectors.toList());
        }
        for (Path x : all) {
            Files.deleteIfExists(x);
        }
    }

    /** The bytes of all regular files below {@code dir}. */
    public static long sizeOf(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        }
    }

    /** The newest {@code chk-<id>} of a local job directory that has a {@code _metadata}, or null. */
    public static Path latestCheckpoint(Path jobDir) {
        if (jobDir == null || !Files.isDirectory(jobDir)) {
            return null;
        }
        try (Stream<Path> dirs = Files.list(jobDir)) {
            return dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                    .filter(d -> Files.exists(d.resolve("_metadata")))
                    .max(Comparator.comparingLong(d -> Long.parseLong(d.getFileName().toString().substring(4))))
                    .orElse(null);
        } catch (IOException | RuntimeException e) {
            // a directory vanished while it was listed
            return null;
        }
    }

    /** The local path of a {@code file:} URI (any number of slashes) or of a plain path. */
    public static Path localPath(String uriOrPath) {
        if (uriOrPath.startsWith("file:")) {
            return Paths.get(URI.create(uriOrPath.startsWith("file:///") || !uriOrPath.startsWith("file://")
                    ? uriOrPath : "file:///" + uriOrPath.substring("file://".length())));
        }
        return Paths.get(uriOrPath);
    }
}
