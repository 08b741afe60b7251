package io.checkpointsurgeon.flink;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Shared helpers of the Flink-backed tests: fixtures, the relative-path pointer, diff reporting. */
final class TestSupport {

    private static File pointerDir;

    private TestSupport() {}

    /**
     * A directory holding an empty {@code _metadata}, for use as the external pointer when loading
     * generated metadata: Flink resolves relative file handles against it (only the directory has
     * to exist; the files themselves are never opened).
     */
    static synchronized String pointerDir() throws IOException {
        if (pointerDir == null) {
            File dir = Files.createTempDirectory("checkpoint-surgeon-pointer").toFile();
            File metadata = new File(dir, "_metadata");
            Files.write(metadata.toPath(), new byte[0]);
            metadata.deleteOnExit();
            dir.deleteOnExit();
            pointerDir = dir;
        }
        return pointerDir.getAbsolutePath();
    }

    /** The value of system property {@code fixtures.dir}, or null when unset. */
    static File fixturesDir() {
        String dir = System.getProperty("fixtures.dir");
        return dir == null || dir.isEmpty() ? null : new File(dir);
    }

    /** {@code <dir>/<fixture>/_metadata} files, sorted by fixture name. */
    static List<File> fixtureMetadataFiles(File dir) {
        List<File> out = new ArrayList<>();
        File[] children = dir.listFiles(File::isDirectory);
        if (children == null) {
            return out;
        }
        Arrays.sort(children);
        for (File child : children) {
            File metadata = new File(child, "_metadata");
            if (metadata.isFile()) {
                out.add(metadata);
            }
        }
        return out;
    }

    /** Where two descriptions first differ, as a one-line-per-side report. */
    static String firstDifference(String flink, String nativeText) {
        String[] a = flink.split("\n", -1);
        String[] b = nativeText.split("\n", -1);
        for (int i = 0; i < Math.max(a.length, b.length); i++) {
            String la = i < a.length ? a[i] : "<end of text>";
            String lb = i < b.length ? b[i] : "<end of text>";
            if (!la.equals(lb)) {
                return "line " + (i + 1) + ":\n  flink:  " + la + "\n  native: " + lb;
            }
        }
        return "texts are equal";
    }

    /** The index of the first differing byte, or -1. */
    static int firstDifferingByte(byte[] a, byte[] b) {
        for (int i = 0; i < Math.min(a.length, b.length); i++) {
            if (a[i] != b[i]) {
                return i;
            }
        }
        return a.length == b.length ? -1 : Math.min(a.length, b.length);
    }

    private static final Pattern KIND = Pattern.compile("([A-Z][A-Za-z]*)\\(|EmptySegment");

    /**
     * The handle kinds and structural features a description mentions, e.g. "ByteStream",
     * "SavepointKeyGroups", "fully-finished", "finished-subtask", "master", "coordinator".
     */
    static Set<String> kinds(String description) {
        Set<String> out = new TreeSet<>();
        Matcher m = KIND.matcher(description);
        while (m.find()) {
            out.add(m.group(1) != null ? m.group(1) : m.group());
        }
        for (String line : description.split("\n")) {
            if (line.equals("  fully-finished")) {
                out.add("fully-finished");
            } else if (line.startsWith("  subtask ") && line.endsWith(" finished")) {
                out.add("finished-subtask");
            } else if (line.startsWith("master ")) {
                out.add("master");
            } else if (line.startsWith("operator ")) {
                if (!line.endsWith(" coordinator=null")) {
                    out.add("coordinator");
                }
                if (!line.contains(" name=- ")) {
                    out.add("operator-name");
                }
            }
        }
        return out;
    }

    /** The kinds every Flink line's generator must produce. */
    static Set<String> expectedKinds() {
        Set<String> out = new TreeSet<>(Arrays.asList(
                "ByteStream", "File", "RelativeFile", "KeyGroups", "SavepointKeyGroups",
                "Incremental", "OperatorStream", "InputChannel", "ResultSubpartition",
                "master", "coordinator"));
        if (FlinkCompat.SUPPORTS_CHANGELOG) {
            out.addAll(Arrays.asList("Changelog", "ChangelogInMemory", "ChangelogFile"));
        }
        if (FlinkCompat.SUPPORTS_FINISHED) {
            out.addAll(Arrays.asList("fully-finished", "finished-subtask"));
        }
        if (FlinkCompat.SUPPORTS_FILE_MERGING) {
            out.addAll(Arrays.asList("Segment", "EmptySegment", "FileMergingOperatorStream"));
        }
        if (FlinkCompat.SUPPORTS_MERGED_CHANNELS) {
            out.addAll(Arrays.asList("MergedInputChannel", "MergedResultSubpartition"));
        }
        if (FlinkCompat.SUPPORTS_NAME_AND_UID) {
            out.add("operator-name");
        }
        return out;
    }
}
