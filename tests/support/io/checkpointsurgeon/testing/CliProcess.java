package io.checkpointsurgeon.testing;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The checkpoint-surgeon CLI in its own JVM, as a user runs it, in one of two ways:
 *
 * <ul>
 *   <li>{@link #jar}: {@code java -jar checkpoint-surgeon.jar ...}, the CLI alone, without Flink on
 *       the class path;</li>
 *   <li>{@link #withFlink}: the CLI on this test JVM's class path, i.e. the jar plus the jars of the
 *       Flink version under test, so Flink's loader validates results and HA files deserialize. That
 *       JVM gets the flags the build gives this Flink version's test JVM (system property
 *       {@value #JVM_ARGS}; {@code --add-opens} for Flink 1.x on Java 17).</li>
 * </ul>
 *
 * A system property of the commit's fault injection ({@code checkpointsurgeon.test.stallAt},
 * {@code .failAt}) starts the CLI through the tests' {@value #FAULTS_CLASS}, which installs the
 * faults into the commit engine's seam first; the tests' classes are then on the class path.
 */
public final class CliProcess {
    /** Space-separated JVM flags for a CLI with Flink on its class path; set by the build. */
    public static final String JVM_ARGS = "checkpointsurgeon.test.cliJvmArgs";

    private static final String MAIN_CLASS = "io.checkpointsurgeon.cli.Cli";
    /** The tests' main class that injects commit faults before it runs the CLI (tests/commit-faults). */
    private static final String FAULTS_CLASS = "io.checkpointsurgeon.internal.CommitFaults";
    private static final String FAULTS_PREFIX = "-Dcheckpointsurgeon.test.";
    private static final long TIMEOUT_SECONDS = 60;

    private final boolean withFlink;
    private final List<String> args;
    private final List<String> launcher = new ArrayList<>();
    private final List<String> properties = new ArrayList<>();

    private CliProcess(boolean withFlink, String... args) {
        this.withFlink = withFlink;
        this.args = Arrays.asList(args);
    }

    /** {@code java -jar checkpoint-surgeon.jar args}: the CLI without Flink. */
    public static CliProcess jar(String... args) {
        return new CliProcess(false, args);
    }

    /** The CLI with this test JVM's class path: the jar and this Flink version's jars. */
    public static CliProcess withFlink(String... args) {
        return new CliProcess(true, args);
    }

    /**
     * A command line as the tool prints it ({@code checkpoint-surgeon ARGS}: words split as a POSIX
     * shell splits them, single quotes included), run as {@link #withFlink}.
     */
    public static CliProcess withFlinkAsPrinted(String commandLine) {
        List<String> words = new ArrayList<>();
        StringBuilder w = null;
        for (int i = 0; i < commandLine.length(); i++) {
            char c = commandLine.charAt(i);
            if (c == ' ') {
                if (w != null) words.add(w.toString());
                w = null;
                continue;
            }
            if (w == null) w = new StringBuilder();
            if (c == '\'') {
                int end = commandLine.indexOf('\'', i + 1);
                if (end < 0) throw new IllegalArgumentException("unterminated quote: " + commandLine);
                w.append(commandLine, i + 1, end);
                i = end;
            } else if (c == '\\' && i + 1 < commandLine.length()) {
                w.append(commandLine.charAt(++i));
            } else {
                w.append(c);
            }
        }
        if (w != null) words.add(w.toString());
        if (words.isEmpty() || !words.get(0).equals("checkpoint-surgeon")) {
            throw new IllegalArgumentException("not a checkpoint-surgeon command line: " + commandLine);
        }
        return withFlink(words.subList(1, words.size()).toArray(new String[0]));
    }

    /** {@code -Dkey=value} for the CLI's JVM. */
    public CliProcess systemProperty(String key, Object value) {
        properties.add("-D" + key + "=" + value);
        return this;
    }

    /** Starts the JVM through another program, e.g. {@code /usr/bin/time -o FILE -f %M}. */
    public CliProcess launchedBy(String... command) {
        Collections.addAll(launcher, command);
        return this;
    }

    public List<String> command() {
        List<String> cmd = new ArrayList<>(launcher);
        cmd.add(javaBin());
        if (withFlink) {
            String flags = System.getProperty(JVM_ARGS, "").trim();
            if (!flags.isEmpty()) {
                cmd.addAll(Arrays.asList(flags.split("\\s+")));
            }
        }
        cmd.addAll(properties);
        boolean faults = properties.stream().anyMatch(p -> p.startsWith(FAULTS_PREFIX));
        if (withFlink) {
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(faults ? FAULTS_CLASS : MAIN_CLASS);
        } else if (faults) {
            cmd.add("-cp");
            cmd.add(jarPath() + File.pathSeparator + faultsClassPath());
            cmd.add(FAULTS_CLASS);
        } else {
            cmd.add("-jar");
            cmd.add(jarPath().toString());
        }
        cmd.addAll(args);
        return cmd;
    }

    /** The process builder of {@link #command()}, standard error merged into standard output. */
    public ProcessBuilder processBuilder() {
        return new ProcessBuilder(command()).redirectErrorStream(true);
    }

    public Process start() throws IOException {
        return processBuilder().start();
    }

    /** Runs the CLI to its end (at most 60 s) and returns its exit code and output. */
    public Result run() throws IOException, InterruptedException {
        Process p = start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("the CLI did not end within " + TIMEOUT_SECONDS + " s: " + command()
                    + "\n" + output);
        }
        return new Result(p.exitValue(), output);
    }

    /** The built {@code checkpoint-surgeon.jar} on this JVM's class path (the Flink test tasks put it first). */
    public static Path jarPath() {
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            if (e.endsWith("checkpoint-surgeon.jar")) {
                return Paths.get(e);
            }
        }
        throw new IllegalStateException("checkpoint-surgeon.jar is not on the class path");
    }

    /** Where this JVM loads the fault-injecting main class from. */
    private static String faultsClassPath() {
        try {
            return Paths.get(Class.forName(FAULTS_CLASS).getProtectionDomain().getCodeSource().getLocation().toURI())
                    .toString();
        } catch (ReflectiveOperationException | java.net.URISyntaxException e) {
            throw new IllegalStateException(FAULTS_CLASS + " is not on this test's class path", e);
        }
    }

    /** The {@code java} of the running JVM (the Java 11 runtime when the build runs the suite on it). */
    public static String javaBin() {
        return Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Exit code and output (standard output and error) of a CLI run. */
    public static final class Result {
        public final int exitCode;
        public final String output;

        Result(int exitCode, String output) {
            this.exitCode = exitCode;
            this.output = output;
        }

        @Override
        public String toString() {
            return "exit " + exitCode + ":\n" + output;
        }
    }
}
