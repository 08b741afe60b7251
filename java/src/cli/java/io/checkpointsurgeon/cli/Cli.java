package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.ProgressListener;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The command line: {@code main}, the exit codes, the error handlers and the table of commands
 * (one class per command beside this one). Exit codes: 0 ok, 1 usage error, 2 invalid input,
 * validation failure or a held lock, 3 outcome unknown (an unexpected failure), 4 findings.
 * {@code recover}: 0 the newest checkpoint restores, 4 an older one restores (or an HA pointer names a
 * broken one), 2 none restores. {@code orphans}: 0 none found (or deleted), 4 orphans found, 2 --delete
 * refused (a checkpoint in progress, an unreadable _metadata).
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
        "remove-keyed-state", "rename-keyed-state", "rename-operator", "relocate", "ha", "kafka", "diff", "history",
        "watch", "clean-leftovers", "recover", "orphans"};

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
            case "remove-keyed-state":
                return RemoveKeyedStateCommand.class;
            case "rename-keyed-state":
                return RenameKeyedStateCommand.class;
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
            case "clean-leftovers":
                return CleanLeftoversCommand.class;
            case "recover":
                return RecoverCommand.class;
            case "orphans":
                return OrphansCommand.class;
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
                lib = "native library not loaded: " + CliSpelling.message(e);
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
            return unknownOutcome(e, Terminal.writer(System.err));
        }
    }

    private static int execute(String... args) {
        if (args.length == 1 && (args[0].equals("--version") || args[0].equals("-V"))) {
            PrintWriter out = Terminal.writer(System.out);
            for (String line : new Version().getVersion()) out.println(Terminal.safe(line));
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
        Prefetch.CURRENT.set(prefetch);
        try {
            if (prefetch != null && args.length == 2) return plain(args[0], args[1]);
            return execute(args.length > 0 ? command(args[0]) : null, args);
        } finally {
            Prefetch.CURRENT.remove();
            // the outcome is printed: a signal from now on has nothing of this run left to report
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
        // an argument is what it says: a uid or state name starting with '@' is not a file of more
        // arguments (picocli's default), which could add --apply --in-place to a plan
        cl.setExpandAtFiles(false);
        // every text the command prints goes through the terminal guard (see Terminal)
        cl.setOut(Terminal.writer(System.out));
        cl.setErr(Terminal.writer(System.err));
        cl.setExecutionExceptionHandler(new CommandLine.IExecutionExceptionHandler() {
            @Override
            public int handleExecutionException(Exception e, CommandLine cmd, CommandLine.ParseResult parsed) {
                if (e instanceof CheckpointSurgeonException) {
                    CheckpointSurgeonException cse = (CheckpointSurgeonException) e;
                    // the library's shutdown hook reports an interrupted run ("interrupted, nothing
                    // was changed") and the JVM exits with the signal's status (143 for SIGTERM)
                    if (cse.code() == CheckpointSurgeonException.Code.INTERRUPTED) return INVALID;
                    // the message carries checkpoint strings and arguments: made safe here, once
                    cmd.getErr().println("error [" + cse.code() + "]: " + Terminal.safe(CliSpelling.text(cse.typedMessage())));
                    return INVALID;
                }
                return unknownOutcome(e, cmd.getErr());
            }
        });
        cl.setParameterExceptionHandler(new CommandLine.IParameterExceptionHandler() {
            @Override
            public int handleParseException(CommandLine.ParameterException e, String[] a) {
                e.getCommandLine().getErr().println("error: " + Terminal.safe(e.getMessage()));
                e.getCommandLine().usage(e.getCommandLine().getErr());
                return USAGE;
            }
        });
        CheckpointSurgeon.setProgressListener(new Progress(cl.getErr()));
        return cl.execute(args);
    }

    /**
     * {@code inspect PATH} and {@code doctor PATH} without options, an incident's first commands,
     * run without picocli's model of the command: reading a command's annotations defines one
     * dynamic proxy class per annotation type, ~60 ms of a ~150 ms start-up. The same code runs,
     * with the same output and exit codes.
     */
    private static int plain(String name, String path) {
        // the same terminal guard as picocli's streams below (see Terminal)
        PrintWriter out = Terminal.writer(System.out), err = Terminal.writer(System.err);
        CheckpointSurgeon.setProgressListener(new Progress(err));
        try {
            BaseCommand command;
            if (name.equals("inspect")) {
                InspectCommand inspect = new InspectCommand();
                inspect.path = path;
                command = inspect;
            } else {
                DoctorCommand doctor = new DoctorCommand();
                doctor.pathArg = path;
                command = doctor;
            }
            command.plainOut = out;
            command.plainErr = err;
            return command.call();
        } catch (CheckpointSurgeonException e) {
            err.println("error [" + e.code() + "]: " + Terminal.safe(CliSpelling.text(e.typedMessage())));
            return INVALID;
        } catch (Exception e) {
            return unknownOutcome(e, err);
        } finally {
            out.flush();
        }
    }

    /** Exit 3 with one line; the stack trace only with {@code -Dcheckpointsurgeon.trace}. */
    private static int unknownOutcome(Throwable e, PrintWriter err) {
        err.println("outcome unknown (exit 3): unexpected " + Terminal.safe(String.valueOf(e)) + "; what was being written may be incomplete,"
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
            err.println(Terminal.safe(text));
            err.flush();
        }

        @Override
        public void message(Message text) {
            message(CliSpelling.text(text));
        }

        @Override
        public void file(int index, int count, Path file) {
            err.printf(Locale.ROOT, "[%d/%d] %s%n", index, count, Terminal.safe(file));
            err.flush();
        }

        @Override
        public void commitStep(CommitStep step, String unit) {
            if (trace) message("commit: " + step + " " + Terminal.safe(unit));
        }

        /** The CLI replaces this listener once the command's output is printed (see execute). */
        @Override
        public boolean outcomeUntilReplaced() {
            return true;
        }

        @Override
        public void leftoversFound(Path dir, List<Path> found) {
            message(TextRenderer.leftoversFound(dir, found));
        }
    }
}
