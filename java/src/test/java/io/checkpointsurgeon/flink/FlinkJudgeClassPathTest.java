package io.checkpointsurgeon.flink;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@link FlinkJudge#flinkAvailable()} looks Flink's loader up on every class path but the jar
 * alone (the launcher's, {@code java -jar}), where the lookup could only miss: Flink beside the jar
 * or appended to the boot class path is found, and the shortcut is taken only for the jar alone.
 * Each case is a JVM of its own whose class path is a copy of the built jar with a small main added.
 */
public class FlinkJudgeClassPathTest {
    private static final String CHECKPOINTS = "org/apache/flink/runtime/checkpoint/Checkpoints";

    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void theBuiltJarHoldsNoFlink() throws Exception {
        try (JarFile jar = new JarFile(jar().toFile())) {
            for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements();) {
                String name = e.nextElement().getName();
                assertFalse(name, name.startsWith("org/apache/flink/"));
            }
        }
    }

    @Test(timeout = 120_000)
    public void flinkIsLookedUpUnlessTheClassPathIsTheJarAlone() throws Exception {
        Path root = tmp.getRoot().toPath();
        // a class of Flink's loader's name (its body does not matter: the lookup only finds it)
        Path flink = Files.createDirectories(root.resolve("flink"));
        Path flinkSource = root.resolve("src-flink").resolve(CHECKPOINTS + ".java");
        Files.createDirectories(flinkSource.getParent());
        Files.writeString(flinkSource, "package org.apache.flink.runtime.checkpoint;\npublic class Checkpoints {}\n");
        compile(flink, null, flinkSource);
        Path main = Files.createDirectories(root.resolve("main"));
        Path mainSource = root.resolve("src-main").resolve("AskFlink.java");
        Files.createDirectories(mainSource.getParent());
        Files.writeString(mainSource, "public class AskFlink { public static void main(String[] a) {"
                + " System.out.print(io.checkpointsurgeon.flink.FlinkJudge.flinkAvailable()); } }\n");
        compile(main, jar(), mainSource);

        Path alone = root.resolve("alone.jar");
        copyAdding(jar(), alone, main, "AskFlink.class");
        assertEquals("the jar alone, no Flink", "false", ask(alone.toString()));
        assertEquals("Flink beside the jar", "true", ask(alone + File.pathSeparator + flink));
        assertEquals("Flink on the boot class path", "true", ask(alone.toString(), "-Xbootclasspath/a:" + flink));
        assertEquals("the jar by a path with ..", "false",
                ask(root.resolve("flink").resolve("..").resolve("alone.jar").toString()));

        // the jar alone is not looked in at all: a jar that held Flink's loader (none does, see
        // theBuiltJarHoldsNoFlink) would still say no, where a lookup would have found it
        Path holding = root.resolve("holding.jar");
        copyAdding(alone, holding, flink, CHECKPOINTS + ".class");
        assertEquals("false", ask(holding.toString()));
        assertEquals("the same jar in a class path of two entries is looked up", "true",
                ask(holding + File.pathSeparator + main));
    }

    private static Path jar() {
        return Path.of(System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar")).toAbsolutePath();
    }

    /** What {@code AskFlink} prints with {@code classPath} (and JVM options before it). */
    private static String ask(String classPath, String... options) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(List.of(options));
        cmd.addAll(List.of("-cp", classPath, "AskFlink"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(out, 0, p.waitFor());
        return out;
    }

    /** {@code from} with the class file {@code name} of {@code classes} added, as {@code to} (no zip file system: the plain lane's Java 11 runtime has none). */
    private static void copyAdding(Path from, Path to, Path classes, String name) throws Exception {
        try (ZipInputStream in = new ZipInputStream(Files.newInputStream(from));
                ZipOutputStream out = new ZipOutputStream(Files.newOutputStream(to, StandardOpenOption.CREATE_NEW))) {
            for (ZipEntry e = in.getNextEntry(); e != null; e = in.getNextEntry()) {
                out.putNextEntry(new ZipEntry(e.getName()));
                in.transferTo(out);
                out.closeEntry();
            }
            out.putNextEntry(new ZipEntry(name));
            out.write(Files.readAllBytes(classes.resolve(name)));
            out.closeEntry();
        }
    }

    /** javac of this JVM, else the build's (the plain lane's Java 11 runtime is a JRE). */
    private static void compile(Path out, Path classPath, Path source) throws Exception {
        List<String> args = new ArrayList<>(List.of("--release", "11", "-d", out.toString()));
        if (classPath != null) args.addAll(List.of("-cp", classPath.toString()));
        args.add(source.toString());
        javax.tools.JavaCompiler compiler = javax.tools.ToolProvider.getSystemJavaCompiler();
        if (compiler != null) {
            assertEquals(0, compiler.run(null, null, null, args.toArray(new String[0])));
        } else {
            String javac = System.getProperty("checkpointsurgeon.javac");
            assertNotNull("no Java compiler in this JVM and no checkpointsurgeon.javac", javac);
            args.add(0, javac);
            assertEquals(0, new ProcessBuilder(args).inheritIO().start().waitFor());
        }
    }
}
