package io.checkpointsurgeon;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import org.junit.Test;

/**
 * The library is only a library: no class of the main source set imports the CLI package or
 * picocli, none refers to a class of either anywhere in its bytecode, and the library jar of the
 * Maven artifact holds no {@code cli/} class, no picocli and no {@code Main-Class}. The CLI jar
 * holds both.
 */
public class LibraryLayeringTest {
    private static final Path MAIN_SOURCES = Path.of("java/src/main/java");
    private static final String CLI = "io/checkpointsurgeon/cli/";
    private static final String PICOCLI = "picocli/";

    @Test
    public void noLibrarySourceImportsTheCliOrPicocli() throws IOException {
        List<String> offending = new ArrayList<>();
        try (Stream<Path> files = Files.walk(MAIN_SOURCES)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList())) {
                for (String line : Files.readAllLines(f)) {
                    String l = line.strip();
                    if (l.startsWith("import picocli.") || l.startsWith("import io.checkpointsurgeon.cli.")
                            || l.startsWith("import static picocli.") || l.startsWith("import static io.checkpointsurgeon.cli.")) {
                        offending.add(f + ": " + l);
                    }
                }
            }
        }
        assertEquals("library sources that import the CLI package or picocli", List.of(), offending);
    }

    @Test
    public void theLibraryJarHoldsNoCliAndNamesNone() throws IOException {
        Path jar = Path.of(System.getProperty("checkpointsurgeon.libraryJar", "build/maven/checkpoint-surgeon-0.2.0.jar"));
        List<String> offending = new ArrayList<>();
        int classes = 0;
        try (JarFile zip = new JarFile(jar.toFile())) {
            assertNull(jar + " is a library: no Main-Class", zip.getManifest().getMainAttributes().getValue("Main-Class"));
            for (ZipEntry e : Collections.list(zip.entries())) {
                if (e.getName().startsWith(CLI) || e.getName().startsWith(PICOCLI)) {
                    offending.add(e.getName());
                } else if (e.getName().endsWith(".class")) {
                    classes++;
                    // a reference to another class is its name in the constant pool, in plain ASCII
                    String bytes = new String(read(zip, e), StandardCharsets.ISO_8859_1);
                    if (bytes.contains(CLI) || bytes.contains(PICOCLI)) offending.add(e.getName() + " names the CLI or picocli");
                }
            }
        }
        assertTrue(jar + " holds the library", classes > 20);
        assertEquals("entries of " + jar + " that belong to the CLI", List.of(), offending);
    }

    @Test
    public void theCliJarHoldsTheCliAndPicocli() throws IOException {
        Path jar = Path.of(System.getProperty("checkpointsurgeon.jar", "build/libs/checkpoint-surgeon.jar"));
        try (JarFile zip = new JarFile(jar.toFile())) {
            assertEquals("io.checkpointsurgeon.cli.Cli", zip.getManifest().getMainAttributes().getValue("Main-Class"));
            assertNotNull(zip.getEntry(CLI + "Cli.class"));
            assertNotNull(zip.getEntry(PICOCLI + "CommandLine.class"));
            assertNotNull(zip.getEntry("io/checkpointsurgeon/CheckpointSurgeon.class"));
        }
    }

    private static byte[] read(JarFile zip, ZipEntry e) throws IOException {
        try (InputStream in = zip.getInputStream(e)) {
            return in.readAllBytes();
        }
    }
}
