package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.ProgressListener;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The command line: {@code main}, the exit codes, the error handlers and the table of commands
 * (one class per command beside this one). Exit codes: 0 ok, 1 usage error, 2 invalid input,
 * validation failure or a held lock, 3 outcome unknown (an unexpected failure), 4 findings.
 */
@Command(
        name = "checkpoint-surgeon",
        mixinStandardHelpOptions = true,
        versionProvider = Cli.Version.class,
        description = "Inspect and repair Apache Flink checkpoints, savepoints and HA files.")
public final class Cli {
    public static final int OK = 0, USAGE = 1, INVALID = 2, UNKNOWN = 3, FINDINGS = 4;

    /** The top-level commands, in the order {@code --help} lists them (then {@code help}). */
    static final String[] COMMANDS = {"inspect", "doctor", "remove-state", "remove-operator", "dedupe-union",
        "rename-operator", "relocate", "ha", "kafka", "diff", "history", "watch"};

    /**
     * The class of the top-level command {@code name}, or null (help, an unknown name). A switch, so
     * that only the class of the command that runs is loaded and has its annotations read: picocli's
     * model of every command and option took ~0.2 s of each run's start-up.
     */
    static Class<?> command(String name) {
        switch (name) {
            case "inspect":
                return InspectCommand.class;
            case "doctor":
                return DoctorCommand.class;
            case "remove-state":
                return RemoveStateCommand.class;
            case "remove-operator":
                return RemoveOperatorCommand.class;
            case "dedupe-union":
                return DedupeUnionCommand.class;
            case "rename-operator":
                return RenameOperatorCommand.class;
            case "relocate":
                return RelocateCommand.class;
            case "ha":
                return HaCommand.class;
            case "kafka":
                return KafkaCommand.class;
            case "diff":
                return DiffCommand.class;
            case "history":
                return HistoryCommand.class;
            case "watch":
                return WatchCommand.class;
            default:
                return null;
        }
    }

    /** {@code --version}: this jar's version and the native library's. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String lib;
            try {
                lib = "native library " + CheckpointSurgeon.nativeLibrary();
            } catch (CheckpointSurgeonException | LinkageError e) {
                lib = "native library not loaded: " + e.getMessage();
            }
            return new String[] {"checkpoint-surgeon " + CheckpointSurgeon.VERSION + " (" + lib + ")",
                    "Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")"};
        }
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** Runs the command line and returns its exit code (for tests and embedding). */
    public static int run(String... args) {
        try {
            return execute(args);
        } catch (Throwable e) {
            // An Error (OutOfMemoryError, StackOverflowError, ...) may leave anything half done.
            return unknownOutcome(e, new PrintWriter(System.err, true));
        }
    }

    private static int execute(String... args) {
        if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
            PrintWriter out = new PrintWriter(System.out, true);
            for (String line : new Version().getVersion()) out.println(line);
            return OK;
        }
        Prefetch prefetch = args.length > 1 && (args[0].equals("inspect") || args[0].equals("doctor"))
                && !args[1].startsWith("-") ? new Prefetch(args[1]) : null;
        if (args.length > 0 && !args[0].startsWith("-")) {
            // The native library loads on another core while picocli builds the command (~20 ms of
            // every run's start-up); a failure to load is reported by the command that needs it.
            Thread preload = new Thread("checkpoint-surgeon-preload") {
                @Override
                public void run() {
                    try {
                        CheckpointSurgeon.nativeLibrary();
                    } catch (CheckpointSurgeonException | LinkageError e) {
                        // reported by the command
                    }
                    if (prefetch != null) prefetch.report.run();
                }
            };
            preload.setDaemon(true);
            preload.start();
        }
        Class<?> command = args.length > 0 ? command(args[0]) : null;
        Prefetch.CURRENT.set(prefetch);
        try {
            return execute(command, args);
        } finally {
            Prefetch.CURRENT.remove();
            CheckpointSurgeon.setProgressListener(null);
        }
    }

    private static int execute(Class<?> command, String... args) {
        CommandLine cl;
        if (command == null) {
            cl = new CommandLine(new Cli());
            for (String name : COMMANDS) cl.addSubcommand(name, command(name));
            cl.addSubcommand("help", CommandLine.HelpCommand.class);
        } else {
            // Only the command that runs is built.
            cl = new CommandLine(command);
            cl.setCommandName("checkpoint-surgeon " + args[0]);
            cl.getCommandSpec().versionProvider(new Version());
            args = Arrays.copyOfRange(args, 1, args.length);
        }
        cl.setExecutionExceptionHandler(new CommandLine.IExecutionExceptionHandler() {
            @Override
            public int handleExecutionException(Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
                if (e instanceof CheckpointSurgeonException) {
                    CheckpointSurgeonException cse = (CheckpointSurgeonException) e;
                    cmd.getErr().println("error [" + cse.code() + "]: " + cse.getMessage());
                    return INVALID;
                }
                return unknownOutcome(e, cmd.getErr());
            }
        });
        cl.setParameterExceptionHandler(new CommandLine.IParameterExceptionHandler() {
            @Override
            public int handleParseException(CommandLine.ParameterException e, String[] a) {
                e.getCommandLine().getErr().println("error: " + e.getMessage());
                e.getCommandLine().usage(e.getCommandLine().getErr());
                return USAGE;
            }
        });
        CheckpointSurgeon.setProgressListener(new Progress(cl.getErr()));
        return cl.execute(args);
    }

    /** Exit 3 with one line; the stack trace only with {@code -Dcheckpointsurgeon.trace}. */
    private static int unknownOutcome(Throwable e, PrintWriter err) {
        err.println("outcome unknown (exit 3): unexpected " + e + "; what was being written may be incomplete,"
                + " the input was not changed");
        if (System.getProperty(CheckpointSurgeon.TRACE_PROPERTY) != null) e.printStackTrace(err);
        err.flush();
        return UNKNOWN;
    }

    /**
     * The library's progress on standard error: its messages, {@code [i/n] file} for a run over
     * many files, and each commit step with {@code -Dcheckpointsurgeon.trace}.
     */
    static final class Progress implements ProgressListener {
        private final PrintWriter err;
        private final boolean trace = System.getProperty(CheckpointSurgeon.TRACE_PROPERTY) != null;

        Progress(PrintWriter err) {
            this.err = err;
        }

        @Override
        public void message(String text) {
            err.println(text);
            err.flush();
        }

        @Override
        public void file(int index, int count, Path file) {
            err.printf(Locale.ROOT, "[%d/%d] %s%n", index, count, file);
            err.flush();
        }

        @Override
        public void commitStep(CommitStep step, String unit) {
            if (trace) message("commit: " + step + " " + unit);
        }
    }
}
