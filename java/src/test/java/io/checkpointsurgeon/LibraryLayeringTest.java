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
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
    private static final Path CLI_SOURCES = Path.of("java/src/cli/java/io/checkpointsurgeon/cli");
    private static final Path CLI_MAIN = CLI_SOURCES.resolve("Cli.java");
    /** A string literal of Java source, escapes included. */
    private static final Pattern LITERAL = Pattern.compile("\"((?:[^\"\\\\\n]|\\\\.)*)\"");
    /** The names of a picocli option: {@code names = "--x"} or {@code names = {"-x", "--x"}}. */
    private static final Pattern OPTION_NAMES = Pattern.compile("names\\s*=\\s*(\\{[^}]*\\}|\"[^\"]*\")");
    private static final Pattern LONG_OPTION = Pattern.compile("\"(--[a-z0-9-]+)\"");
    private static final Pattern SUBCOMMAND = Pattern.compile("@Command\\(\\s*name\\s*=\\s*\"([a-z-]+)\"");
    /** Literals that may stay, by file and the literal's text, each with its reason. */
    private static final Map<String, String> ALLOWED = Map.of();

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

    /**
     * A message names a choice of the caller as a {@link Choice}, which each front end spells its
     * own way; a literal holding one of the CLI's long options or verbs spells it for the CLI only.
     */
    @Test
    public void noLibraryLiteralSpellsACliCommandOrOption() throws IOException {
        Pattern command = cliCommandOrOption();
        List<String> offending = new ArrayList<>();
        try (Stream<Path> files = Files.walk(MAIN_SOURCES)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().collect(Collectors.toList())) {
                List<String> lines = Files.readAllLines(f);
                for (int i = 0; i < lines.size(); i++) {
                    String code = lines.get(i).strip();
                    if (code.startsWith("*") || code.startsWith("/*") || code.startsWith("//")) continue; // a comment
                    Matcher m = LITERAL.matcher(lines.get(i));
                    while (m.find()) {
                        String text = m.group(1);
                        if (!command.matcher(text).find()) continue;
                        String where = MAIN_SOURCES.relativize(f) + ": " + text;
                        if (ALLOWED.containsKey(where)) offending.add("!" + where);
                        else offending.add(MAIN_SOURCES.relativize(f) + ":" + (i + 1) + ": " + text);
                    }
                }
            }
        }
        List<String> stale = new ArrayList<>(ALLOWED.keySet());
        stale.removeIf(allowed -> offending.contains("!" + allowed));
        offending.removeIf(o -> o.startsWith("!"));
        assertEquals("exceptions that match no literal any more: take them out", List.of(), stale);
        assertEquals("library string literals that spell a CLI command or option (a typed value the CLI renders"
                + " belongs there)", List.of(), offending);
    }

    /**
     * What spells a CLI command or option: one of the long options the CLI's picocli annotations
     * declare; a verb of more than one word ({@code clean-leftovers}, {@code migrate-legacy}); a
     * one-word verb ({@code history}, {@code kafka}) as a command: a top-level one after
     * {@code checkpoint-surgeon}, any between backquotes, before an option, a subcommand or "command(s)".
     */
    public static Pattern cliCommandOrOption() throws IOException {
        Set<String> options = new TreeSet<>();
        Set<String> verbs = new TreeSet<>();
        // the top-level verbs, from the CLI's name-to-class table; the subcommands from their @Command
        Matcher table = Pattern.compile("COMMANDS = \\{([^}]*)\\}").matcher(Files.readString(CLI_MAIN));
        assertTrue(CLI_MAIN + " lists its commands", table.find());
        for (Matcher m = LITERAL.matcher(table.group(1)); m.find(); ) verbs.add(m.group(1));
        String topLevel = "(" + String.join("|", verbs) + ")";
        try (Stream<Path> files = Files.list(CLI_SOURCES)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).collect(Collectors.toList())) {
                String source = Files.readString(f);
                for (Matcher m = OPTION_NAMES.matcher(source); m.find(); ) {
                    for (Matcher o = LONG_OPTION.matcher(m.group(1)); o.find(); ) options.add(o.group(1));
                }
                for (Matcher m = SUBCOMMAND.matcher(source); m.find(); ) verbs.add(m.group(1));
            }
        }
        // the root command's name is the tool's, which the library says too (lock files, job names)
        verbs.remove("checkpoint-surgeon");
        assertTrue("the CLI's verbs: " + verbs, verbs.containsAll(List.of("recover", "kafka", "migrate-legacy", "list")));
        assertTrue("the CLI's options: " + options, options.containsAll(List.of("--force", "--older-than", "--output",
                "--in-place", "--on-flink", "--plugins", "--copy-unchanged", "--also-referenced-by", "--keyed")));
        List<String> oneWord = verbs.stream().filter(v -> !v.contains("-")).collect(Collectors.toList());
        List<String> words = verbs.stream().filter(v -> v.contains("-")).collect(Collectors.toList());
        String verb = "(" + String.join("|", oneWord) + ")";
        return Pattern.compile("(?<![\\w-])(" + String.join("|", options) + "|" + String.join("|", words) + ")(?![\\w-])"
                + "|checkpoint-surgeon " + topLevel + "(?![\\w-])|`" + verb + "[` ]"
                + "|(?<![\\w-])" + verb + " (--[a-z]|(" + String.join("|", verbs) + "|commands?)(?![\\w-]))");
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
