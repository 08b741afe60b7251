package io.checkpointsurgeon.cli;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.checkpointsurgeon.CheckpointSurgeonTest;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.Charset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * Arguments as a hostile (or unlucky) user gives them, through the CLI in this JVM: a name that
 * starts with '@' is that name, never a file of more arguments; an argument echoed in a message is
 * shown escaped on one line and shortened.
 */
public class HostileArgumentsTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /**
     * {@code --state @evil} with a file {@code evil} holding "union-list --apply --in-place": picocli's
     * default read that file as arguments, and the plan rewrote the checkpoint in place.
     */
    @Test
    public void anArgumentStartingWithAtIsTakenLiterally() throws Exception {
        Path dir = copy(CheckpointSurgeonTest.fixture("operator-state-files"), tmp.newFolder("chk").toPath());
        byte[] before = Files.readAllBytes(dir.resolve("_metadata"));
        Path evil = Files.writeString(tmp.getRoot().toPath().resolve("evil"), "union-list --apply --in-place\n");
        String[] run = run("remove-state", dir.toString(), "--state", "@" + evil);
        assertEquals(run[1], "2", run[0]);
        assertTrue(run[1], run[1].contains("state '@" + evil + "' of any operator selects nothing"));
        assertArrayEquals("the plan wrote nothing", before, Files.readAllBytes(dir.resolve("_metadata")));
        try (var names = Files.list(dir)) {
            assertEquals("no backup, no staged file", List.of("_metadata"), names.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("_metadata")).collect(java.util.stream.Collectors.toList()));
        }
    }

    /** relocate --check names the --to it checked: escaped, on one line, and shortened when long. */
    @Test
    public void relocateCheckShowsToEscapedAndShortened() throws Exception {
        Path dir = copy(CheckpointSurgeonTest.FIXTURES.resolve("1.20.3").resolve("keyed-rocksdb-incremental"),
                tmp.newFolder("rocks").toPath());
        String to = "/y\nFAKE: a line of its own\u001b[2J" + "z".repeat(30_000);
        String[] run = run("relocate", dir.toString(), "--from", "/tmp", "--to", to, "--check");
        assertEquals(run[1], "2", run[0]);
        String error = run[1];
        assertTrue(error, error.startsWith("error [VALIDATION]: ") && error.contains("/y\\nFAKE: a line of its own\\u001b[2J"));
        assertEquals(error, 1, error.split("\n").length);
        assertTrue(error, error.length() < 2_000 && error.contains(String.format(java.util.Locale.ROOT, "...(%,d characters)...", to.length())));
    }

    /** A checkpoint directory copied file by file (the fixtures are flat). */
    static Path copy(Path from, Path to) throws Exception {
        try (var s = Files.list(from)) {
            for (Path p : s.collect(java.util.stream.Collectors.toList())) Files.copy(p, to.resolve(p.getFileName()));
        }
        return to;
    }

    /** The CLI in this JVM: exit code, stderr, stdout (decoded as written, the platform's charset). */
    static synchronized String[] run(String... args) {
        PrintStream oldOut = System.out, oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true));
            System.setErr(new PrintStream(err, true));
            int code = Cli.run(args);
            Charset cs = Charset.defaultCharset();
            return new String[] {Integer.toString(code), new String(err.toByteArray(), cs), new String(out.toByteArray(), cs)};
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }
}
