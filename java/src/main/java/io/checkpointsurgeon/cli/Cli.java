package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.HtmlReport;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Json;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The command line. Exit codes: 0 ok, 1 usage error, 2 invalid input, validation failure or a held lock,
 * 3 outcome unknown (an unexpected failure).
 */
@Command(
        name = "checkpoint-surgeon",
        mixinStandardHelpOptions = true,
        versionProvider = Cli.Version.class,
        description = "Inspect and repair Apache Flink checkpoints, savepoints and HA files.",
        subcommands = {Cli.Inspect.class, Cli.DoctorCommand.class, Cli.RemoveState.class, Cli.RemoveOperator.class, Cli.DedupeUnion.class, Cli.RenameOperator.class, Cli.Relocate.class, Cli.Ha.class,
                Cli.Kafka.class, Cli.DiffCommand.class, Cli.HistoryCommand.class, Cli.WatchCommand.class,                CommandLine.HelpCommand.class})
public final class Cli {
    public static final int OK = 0, USAGE = 1, INVALID = 2, UNKNOWN = 3, FINDINGS = 4;

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
        Prefetch.CURRENT.set(prefetch);
        try {
            if (prefetch != null && args.length == 2) return plain(args[0], args[1]);
            return execute(args.length > 0 ? subcommand(args[0]) : null, args);
        } finally {
            Prefetch.CURRENT.remove();
        }
    }

    /**
     * {@code inspect PATH} and {@code doctor PATH} without options, an incident's first commands,
     * run without picocli's model of the command: reading a command's annotations defines one
     * dynamic proxy class per annotation type, ~60 ms of a ~150 ms start-up. The same code runs,
     * with the same output and exit codes.
     */
    private static int plain(String command, String path) {
        PrintWriter out = new PrintWriter(System.out), err = new PrintWriter(System.err, true);
        try {
            if (command.equals("inspect")) {
                Inspect inspect = new Inspect();
                inspect.path = path;
                return inspect.run(out);
            }
            DoctorCommand doctor = new DoctorCommand();
            doctor.pathArg = path;
            return doctor.run(out, err);
        } catch (CheckpointSurgeonException e) {
            err.println("error [" + e.code() + "]: " + e.getMessage());
            return INVALID;
        } catch (Exception e) {
            return unknownOutcome(e, err);
        } finally {
            out.flush();
        }
    }

    private static int execute(Class<?> command, String... args) {
        CommandLine cl;
        if (command == null) {
            cl = new CommandLine(new Cli());
        } else {
            // Only the command that runs is built: picocli's model of every command and option
            // took ~0.2 s of each run's start-up.
            cl = new CommandLine(command);
            cl.setCommandName("checkpoint-surgeon " + args[0]);
            cl.getCommandSpec().versionProvider(new Version());
            args = java.util.Arrays.copyOfRange(args, 1, args.length);
        }
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof CheckpointSurgeonException) {
                CheckpointSurgeonException cse = (CheckpointSurgeonException) e;
                cmd.getErr().println("error [" + cse.code() + "]: " + cse.getMessage());
                return INVALID;
            }
            return unknownOutcome(e, cmd.getErr());
        });
        cl.setParameterExceptionHandler((e, a) -> {
            e.getCommandLine().getErr().println("error: " + e.getMessage());
            e.getCommandLine().usage(e.getCommandLine().getErr());
            return USAGE;
        });
        return cl.execute(args);
    }

    /**
     * inspect and doctor read the checkpoint on the other core while picocli builds the command
     * (~60 ms of start-up): the report of the operand right after the command name, when it is a
     * local path, is computed ahead, and the command takes it when it inspects that same path. Inspecting
     * writes nothing, so a report no command takes costs only its time.
     */
    static final class Prefetch {
        static final ThreadLocal<Prefetch> CURRENT = new ThreadLocal<>();
        final String path;
        final java.util.concurrent.FutureTask<InspectReport> report;

        Prefetch(String path) {
            this.path = path;
            // A Flink path needs the file systems the command configures first: not read ahead.
            this.report = new java.util.concurrent.FutureTask<>(
                    () -> CheckpointSurgeon.isFlinkPath(path) ? null : CheckpointSurgeon.inspect(path));
        }

        /** The report of {@code path}: the one read ahead when it is of this path, else a new one. */
        static InspectReport inspect(String path) throws CheckpointSurgeonException {
            Prefetch p = CURRENT.get();
            if (p != null && p.path.equals(path)) {
                // While the other thread loads the library and reads the checkpoint, this one sets up
                // what the output needs: the first String.format with number grouping initializes the
                // Formatter and the locale's number symbols, ~20 ms.
                String.format(Locale.ROOT, "%,d %-1s %.1f", 1L, "", 1.0);
                p.report.run(); // unless the other thread has started it
                try {
                    InspectReport r = p.report.get();
                    if (r != null) return r;
                } catch (java.util.concurrent.ExecutionException e) {
                    // read again below, so that the failure is this thread's own
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return CheckpointSurgeon.inspect(path);
        }
    }

    /** The class of the top-level command named {@code name}; null for help and for unknown names. */
    private static Class<?> subcommand(String name) {
        java.util.List<Class<?>> all = java.util.Arrays.asList(Cli.class.getAnnotation(Command.class).subcommands());
        // The class the naming convention gives first (remove-state: RemoveState, doctor:
        // DoctorCommand), so that only the command that runs has its annotations read; then all.
        StringBuilder camel = new StringBuilder();
        for (String part : name.split("-")) {
            if (!part.isEmpty()) camel.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
        }
        for (String candidate : new String[] {camel.toString(), camel + "Command"}) {
            try {
                Class<?> c = Class.forName(Cli.class.getName() + "$" + candidate, false, Cli.class.getClassLoader());
                Command command = c.getAnnotation(Command.class);
                if (all.contains(c) && command != null && command.name().equals(name)) return c;
            } catch (ClassNotFoundException | LinkageError e) {
                // not by the convention
            }
        }
        for (Class<?> c : all) {
            Command command = c.getAnnotation(Command.class);
            if (c != CommandLine.HelpCommand.class && command != null && command.name().equals(name)) return c;
        }
        return null;
    }

    /** Exit 3 with one line; the stack trace only with {@code -Dcheckpointsurgeon.trace}. */
    private static int unknownOutcome(Throwable e, PrintWriter err) {
        err.println("outcome unknown (exit 3): unexpected " + e + "; what was being written may be incomplete,"
                + " the input was not changed");
        if (System.getProperty(CheckpointSurgeon.TRACE_PROPERTY) != null) e.printStackTrace(err);
        err.flush();
        return UNKNOWN;
    }

    @Command(name = "inspect", mixinStandardHelpOptions = true,
            description = "Show every operator of a checkpoint or savepoint, its states, and their sizes.")
    static final class Inspect implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file or the checkpoint/savepoint directory;"
                + " local, or a Flink path such as s3://bucket/checkpoints/<job>/chk-42")
        String path;

        @Option(names = "--json", description = "print the full report as JSON")
        boolean json;

        @Option(names = "--subtasks", description = "also list every subtask's handles")
        boolean subtasks;

        @Option(names = "--html", paramLabel = "FILE", description = "also write an HTML report to FILE (a new file):"
                + " where the bytes are, per operator and state, and the findings of doctor")
        Path html;

        @CommandLine.Mixin
        FlinkFsOptions fs = new FlinkFsOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws CheckpointSurgeonException {
            return run(spec.commandLine().getOut());
        }

        int run(PrintWriter out) throws CheckpointSurgeonException {
            fs.apply(path);
            InspectReport r = Prefetch.inspect(path);
            out.print(json ? r.toJson() : table(r, subtasks));
            out.flush();
            if (html != null) {
                java.util.List<CheckpointSurgeon.Finding> findings = CheckpointSurgeon.doctor(r, path);
                writeNewFile(html, "--html", HtmlReport.inspect(r, findings, remedy -> command(remedy, path)));
            }
            return OK;
        }
    }

    @Command(name = "doctor", mixinStandardHelpOptions = true,
            description = "Find what is wrong with a checkpoint, savepoint or HA dir, and print the command that fixes it.")
    static final class DoctorCommand implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file, checkpoint/savepoint dir, or HA dir/file;"
                + " checkpoints may be Flink paths such as s3://...")
        String pathArg;

        @CommandLine.Mixin
        FlinkFsOptions fs = new FlinkFsOptions();

        @Option(names = "--json", description = "print the findings as JSON")
        boolean json;

        @Option(names = "--fail-on", paramLabel = "LEVEL", description = "exit 4 when a finding of this severity or"
                + " higher is found: error (default) or warning")
        String failOn = "error";

        @Option(names = "--zookeeper-quorum", paramLabel = "HOSTS", description = "HA dir: the cluster's ZooKeeper, for the"
                + " printed `ha repair` fix (its --apply then checks that no JobManager holds the leadership)")
        String zookeeperQuorum;

        @Option(names = "--zookeeper-root", paramLabel = "PATH", description = "HA dir: high-availability.zookeeper.path.root"
                + " for the printed fix, when not /flink")
        String zookeeperRoot;

        @CommandLine.Mixin
        KubernetesOptions k8s = new KubernetesOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        /** The HA options the printed `ha repair` and `ha list` fixes repeat, as given to doctor. */
        String haOptions(boolean repair) {
            StringBuilder b = new StringBuilder();
            if (zookeeperQuorum != null && repair) {
                b.append(" --zookeeper-quorum ").append(quote(zookeeperQuorum));
                if (zookeeperRoot != null) b.append(" --zookeeper-root ").append(quote(zookeeperRoot));
            }
            if (k8s.kubernetes) b.append(" --kubernetes");
            if (k8s.clusterId != null && (k8s.kubernetes || zookeeperQuorum != null && repair)) {
                b.append(" --cluster-id ").append(quote(k8s.clusterId));
            }
            if (k8s.namespace != null) b.append(" --namespace ").append(quote(k8s.namespace));
            if (k8s.kubeconfig != null) b.append(" --kubeconfig ").append(quote(k8s.kubeconfig.toString()));
            return b.toString();
        }

        /** A finding as the CLI shows it: its remedies as command lines, each runnable as printed. */
        public static final class Problem {
            private final String severity;
            private final String code;
            private final String message;
            private final String fix;
            private final java.util.List<String> alternatives;

            public Problem(String severity, String code, String message, String fix, java.util.List<String> alternatives) {
                this.severity = severity;
                this.code = code;
                this.message = message;
                this.fix = fix;
                this.alternatives = alternatives;
            }

            static Problem of(CheckpointSurgeon.Finding f, java.util.function.Function<CheckpointSurgeon.Remedy, String> command) {
                java.util.List<String> alternatives = new java.util.ArrayList<>();
                for (CheckpointSurgeon.Remedy r : f.alternatives()) alternatives.add(command.apply(r));
                return new Problem(f.severity(), f.code(), f.message(), command.apply(f.fix()), alternatives);
            }

            public String severity() {
                return severity;
            }

            public String code() {
                return code;
            }

            public String message() {
                return message;
            }

            public String fix() {
                return fix;
            }

            public java.util.List<String> alternatives() {
                return alternatives;
            }
        }

        /** The findings of one checkpoint or HA file. */
        public static final class Result {
            private final String path;
            private final java.util.List<Problem> findings;

            public Result(String path, java.util.List<CheckpointSurgeon.Finding> findings) {
                this.path = path;
                this.findings = new java.util.ArrayList<>();
                for (CheckpointSurgeon.Finding f : findings) this.findings.add(Problem.of(f, r -> command(r, path)));
            }

            /** The findings with their remedies as {@code command} prints them (an HA dir's: ha repair). */
            static Result of(String path, java.util.List<CheckpointSurgeon.Finding> findings,
                    java.util.function.Function<CheckpointSurgeon.Remedy, String> command) {
                Result r = new Result(path, java.util.List.of());
                for (CheckpointSurgeon.Finding f : findings) r.findings.add(Problem.of(f, command));
                return r;
            }

            public String path() {
                return path;
            }

            public java.util.List<Problem> findings() {
                return findings;
            }
        }

        /** 4 when a finding at or above --fail-on was found, else 0. */
        private int exitCode(java.util.List<Result> results) {
            boolean warnings = failOn.equalsIgnoreCase("warning");
            for (Result r : results) {
                for (Problem f : r.findings()) {
                    if (f.severity().equals("ERROR") || warnings) return FINDINGS;
                }
            }
            return OK;
        }

        @Override
        public Integer call() throws CheckpointSurgeonException {
            return run(spec.commandLine().getOut(), spec.commandLine().getErr());
        }

        int run(PrintWriter out, PrintWriter err) throws CheckpointSurgeonException {
            if (!failOn.equalsIgnoreCase("error") && !failOn.equalsIgnoreCase("warning")) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--fail-on must be error or warning, not "
                        + failOn);
            }
            java.util.List<Result> results = new java.util.ArrayList<>();
            if (CheckpointSurgeon.isFlinkPath(pathArg)) {
                fs.apply(pathArg);
                results.add(new Result(pathArg, CheckpointSurgeon.doctor(pathArg)));
                print(results, out);
                return exitCode(results);
            }
            Path path = CheckpointSurgeon.localPath(pathArg);
            boolean ha = java.nio.file.Files.isDirectory(path)
                    ? !java.nio.file.Files.exists(path.resolve("_metadata")) && !CheckpointSurgeon.haFiles(path).isEmpty()
                    : path.getFileName().toString().startsWith("completedCheckpoint");
            if (zookeeperQuorum != null && k8s.kubernetes) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--kubernetes or --zookeeper-quorum, not both");
            }
            if (k8s.kubernetes && k8s.clusterId == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--kubernetes needs --cluster-id (kubernetes.cluster-id)");
            }
            if (ha) {
                // the fix of an HA file is one `ha repair` of the HA dir (or file) given, all its files at once
                java.util.List<Path> files = CheckpointSurgeon.haFiles(path);
                for (int i = 0; i < files.size(); i++) {
                    err.printf("[%d/%d] %s%n", i + 1, files.size(), files.get(i));
                    results.add(Result.of(files.get(i).toString(), CheckpointSurgeon.doctorHa(files.get(i)),
                            r -> haCommand(r, path.toString(), haOptions(!r.action().equals("ha list")))));
                }
            } else {
                results.add(new Result(path.toString(), CheckpointSurgeon.doctor(Prefetch.inspect(pathArg), pathArg)));
            }
            print(results, out);
            return exitCode(results);
        }

        private void print(java.util.List<Result> results, PrintWriter out) {
            if (json) {
                out.print(Json.write(results));
            } else {
                // an HA dir's files share their fixes (one ha repair covers them all): each is printed once
                java.util.Set<String> shown = new java.util.HashSet<>();
                for (Result r : results) {
                    out.println(r.path() + ": " + (r.findings().isEmpty() ? "no problems found" : r.findings().size() + " problem(s)"));
                    for (Problem f : r.findings()) {
                        out.printf("  %s %s: %s%n", f.severity(), f.code(), f.message());
                        if (results.size() > 1 && !shown.add(f.fix())) {
                            out.println("    same fix as above (one ha repair covers every file it selects)");
                            continue;
                        }
                        out.printf("    fix: %s%n", f.fix());
                        for (String alternative : f.alternatives()) out.printf("    or:  %s%n", alternative);
                    }
                }
            }
            out.flush();
        }
    }

    /**
     * How Flink's file systems are configured for Flink paths (s3://, hdfs://, gs://, ...): Flink's
     * jars must be on the class path; the file system plugin is loaded from the plugins directory.
     */
    static final class FlinkFsOptions {
        @Option(names = "--flink-conf", paramLabel = "DIR", description = "Flink configuration directory (config.yaml or"
                + " flink-conf.yaml with s3.endpoint, s3.access-key, ...) for Flink paths; default FLINK_CONF_DIR or $FLINK_HOME/conf")
        Path flinkConf;

        @Option(names = "--plugins", paramLabel = "DIR", description = "Flink plugins directory (e.g. plugins/s3-fs-presto/*.jar)"
                + " for Flink paths; default FLINK_PLUGINS_DIR or $FLINK_HOME/plugins")
        Path plugins;

        /** Configures Flink's file systems when the path needs them and an option was given. */
        void apply(String path) throws CheckpointSurgeonException {
            if (CheckpointSurgeon.isFlinkPath(path)) configure();
        }

        /** Configures Flink's file systems when an option was given (paths not known in advance). */
        void configure() throws CheckpointSurgeonException {
            if (flinkConf != null || plugins != null) {
                String env = System.getenv("FLINK_CONF_DIR");
                String envPlugins = System.getenv("FLINK_PLUGINS_DIR");
                CheckpointSurgeon.configureFileSystems(
                        flinkConf != null ? flinkConf : env != null && !env.isEmpty() ? Path.of(env) : null,
                        plugins != null ? plugins : envPlugins != null && !envPlugins.isEmpty() ? Path.of(envPlugins) : null);
            }
        }
    }

    /** Which operators: by uid, id or name; all operators when none is given (state commands only). */
    static final class Selection {
        @Option(names = "--uid", paramLabel = "UID", description = "the operator's uid as set in the job")
        String uid;

        @Option(names = "--operator-id", paramLabel = "HEX", description = "the operator id (32 hex digits)")
        String id;

        @Option(names = "--operator-name", paramLabel = "NAME", description = "the operator name (Flink 2.x metadata)")
        String name;

        Surgery.OperatorSelector selector(boolean allowAll) {
            int given = (uid != null ? 1 : 0) + (id != null ? 1 : 0) + (name != null ? 1 : 0);
            if (given > 1) throw new IllegalArgumentException("give at most one of --uid, --operator-id, --operator-name");
            if (uid != null) return Surgery.OperatorSelector.uid(uid);
            if (id != null) return Surgery.OperatorSelector.id(id);
            if (name != null) return Surgery.OperatorSelector.name(name);
            if (!allowAll) throw new IllegalArgumentException("give one of --uid, --operator-id, --operator-name");
            return Surgery.OperatorSelector.all();
        }
    }

    /** Plan by default; --apply writes to --output (a new directory) or --in-place. */
    abstract static class SurgeryCommand implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file or the checkpoint/savepoint directory;"
                + " local, or a Flink path such as s3://bucket/checkpoints/<job>/chk-42")
        String path;

        @CommandLine.Mixin
        Selection selection = new Selection();

        @CommandLine.Mixin
        FlinkFsOptions fs = new FlinkFsOptions();

        @Option(names = "--apply", description = "write the result (without it, only the plan is printed)")
        boolean apply;

        @Option(names = "--output", paramLabel = "DIR", description = "new checkpoint directory to write (must not exist or be empty);"
                + " a Flink path such as s3://... for a remote checkpoint")
        String output;

        @Option(names = "--in-place", description = "replace _metadata where it is, keeping _metadata.backup-<millis>")
        boolean inPlace;

        @Option(names = "--copy-unchanged", description = "copy unchanged state files into --output instead of hard-linking"
                + " them (for a Flink path --output: copy them even when they hold more than 1 GiB, above which they"
                + " are referenced by default)")
        boolean copyUnchanged;

        @Option(names = "--reference-unchanged", description = "with --output: the new _metadata references the unchanged"
                + " state files in the old directory (absolute paths) instead of linking or copying them, so only"
                + " rewritten bytes move; the new checkpoint then depends on the old directory")
        boolean referenceUnchanged;

        @Option(names = "--json", description = "print the plan (and result) as JSON")
        boolean json;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        abstract Surgery surgery() throws CheckpointSurgeonException;

        /**
         * A check of the plan ({@code planned}, or null with --apply) before anything is written;
         * an exit code stops the command (relocate --check).
         */
        Integer check(Surgery surgery, SurgeryPlan planned) throws CheckpointSurgeonException {
            return null;
        }

        @Override
        public Integer call() throws CheckpointSurgeonException {
            Surgery surgery;
            try {
                surgery = surgery();
                if (copyUnchanged) surgery.copyUnchangedFiles();
                if (referenceUnchanged) {
                    if (copyUnchanged || inPlace) {
                        throw new IllegalArgumentException("--reference-unchanged goes with --output, without --copy-unchanged");
                    }
                    surgery.referenceUnchangedFiles();
                }
                if (apply && (output == null) == !inPlace) {
                    throw new IllegalArgumentException("--apply needs exactly one of --output DIR and --in-place");
                }
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
            }
            fs.apply(path);
            SurgeryPlan planned = apply ? null : CheckpointSurgeon.plan(path, surgery);
            Integer refused = check(surgery, planned);
            if (refused != null) return refused;
            SurgeryPlan plan = planned != null ? planned
                    : inPlace ? CheckpointSurgeon.applyInPlace(path, surgery)
                    : CheckpointSurgeon.apply(path, surgery, output);
            PrintWriter out = spec.commandLine().getOut();
            out.print(json ? plan.toJson() : planText(plan));
            out.flush();
            return OK;
        }
    }

    @Command(name = "remove-state", mixinStandardHelpOptions = true,
            description = "Remove a named operator state (list, union or broadcast) from the selected operators, "
                    + "or from every operator that has it. By default the state is purged: its header entry and "
                    + "elements are cut out of every stream, so Flink no longer needs its classes.")
    static final class RemoveState extends SurgeryCommand {
        @Option(names = "--state", required = true, paramLabel = "NAME", description = "the state name, e.g. topic-partition-offset-states")
        String state;

        @Option(names = "--metadata-only", description = "only drop the name from _metadata's handle maps (streams untouched)")
        boolean metadataOnly;

        @Override
        Surgery surgery() {
            Surgery s = Surgery.removeState(selection.selector(true), state);
            return metadataOnly ? s.metadataOnly() : s;
        }
    }

    @Command(name = "remove-operator", mixinStandardHelpOptions = true,
            description = "Remove one operator and all its state (what allowNonRestoredState skips at restore, but for good).")
    static final class RemoveOperator extends SurgeryCommand {
        @Override
        Surgery surgery() {
            return Surgery.removeOperator(selection.selector(false));
        }
    }

    @Command(name = "dedupe-union", mixinStandardHelpOptions = true,
            description = "Keep exactly one copy of each distinct element of a union list state.")
    static final class DedupeUnion extends SurgeryCommand {
        @Option(names = "--state", required = true, paramLabel = "NAME", description = "the union state name")
        String state;

        @Override
        Surgery surgery() {
            return Surgery.dedupeUnion(selection.selector(true), state);
        }
    }

    @Command(name = "rename-operator", mixinStandardHelpOptions = true,
            description = "Give an operator a new uid (its id becomes Flink's hash of it) or a new operator id. All its"
                    + " state moves with it: operator, keyed and channel state of every subtask, the coordinator state"
                    + " (a FLIP-27 source's enumerator) and finished markers; in Flink 2.x metadata also the stored uid"
                    + " and name. --map renames many operators at once.")
    static final class RenameOperator extends SurgeryCommand {
        @Option(names = "--to-uid", paramLabel = "UID", description = "the new uid")
        String toUid;

        @Option(names = "--to-operator-id", paramLabel = "HEX", description = "the new operator id (32 hex digits)")
        String toId;

        @Option(names = "--to-name", paramLabel = "NAME", description = "the new operator name (Flink 2.x metadata only)")
        String toName;

        @Option(names = "--map", paramLabel = "FILE", description = "lines 'OLD NEW': OLD an operator id (32 hex digits,"
                + " as inspect prints it) or a uid, NEW the new uid; separated by a tab, or by spaces when neither"
                + " contains one; blank lines and lines starting with # are skipped")
        Path map;

        @Override
        Surgery surgery() throws CheckpointSurgeonException {
            if (map == null) {
                if ((toUid == null) == (toId == null)) {
                    throw new IllegalArgumentException("give exactly one of --to-uid, --to-operator-id (or --map FILE)");
                }
                return Surgery.rename(selection.selector(false), toUid, toId, toName);
            }
            if (toUid != null || toId != null || toName != null || selection.uid != null || selection.id != null
                    || selection.name != null) {
                throw new IllegalArgumentException("--map takes the place of the operator and --to-... options");
            }
            return renames(map);
        }

        /** The surgery of a --map file; two lines with one target are refused before anything is read. */
        static Surgery renames(Path file) throws CheckpointSurgeonException {
            java.util.List<String> lines;
            try {
                lines = java.nio.file.Files.readAllLines(file);
            } catch (java.io.IOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e, e);
            }
            Surgery s = null;
            java.util.Map<String, Integer> targets = new java.util.HashMap<>();
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i).strip();
                if (line.isEmpty() || line.startsWith("#")) continue;
                String[] f = line.indexOf('\t') >= 0 ? line.split("\t", 2) : line.split("\\s+", 2);
                if (f.length != 2 || f[0].isEmpty() || f[1].strip().isEmpty()) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, file + " line "
                            + (i + 1) + ": expected 'OLD NEW' (an operator id or uid, then the new uid), found '" + line + "'");
                }
                String target = f[1].strip();
                Integer before = targets.put(target, i + 1);
                if (before != null) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, file + " line "
                            + (i + 1) + ": uid '" + target + "' is also the target of line " + before
                            + "; two operators cannot share an id");
                }
                Surgery.OperatorSelector from = f[0].matches("[0-9A-Fa-f]{32}") ? Surgery.OperatorSelector.id(f[0])
                        : Surgery.OperatorSelector.uid(f[0]);
                s = s == null ? Surgery.renameOperator(from, target) : s.andRenameOperator(from, target, null, null);
            }
            if (s == null) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, file
                        + ": no 'OLD NEW' line");
            }
            return s;
        }
    }

    @Command(name = "relocate", mixinStandardHelpOptions = true,
            description = "Rewrite every absolute path under --from to lie under --to, for a checkpoint that was copied"
                    + " or moved to another directory, bucket or cluster: file handles, incremental RocksDB shared and"
                    + " private files, changelog files, file-merging segments and directories. Relative handles (files"
                    + " next to _metadata) need nothing. A local --from without a scheme also matches file: URIs.")
    static final class Relocate extends SurgeryCommand {
        @Option(names = "--from", required = true, paramLabel = "PREFIX", description = "the old location, e.g. s3://old-bucket/checkpoints")
        String from;

        @Option(names = "--to", required = true, paramLabel = "PREFIX", description = "the new location, e.g. s3://new-bucket/checkpoints")
        String to;

        @Option(names = "--check", description = "check that every rewritten path exists at its new place (through"
                + " Flink's FileSystem for Flink paths), list the missing ones and exit 2 if there are any; with"
                + " --apply, nothing is written then")
        boolean check;

        @Override
        Surgery surgery() {
            if (selection.uid != null || selection.id != null || selection.name != null) {
                throw new IllegalArgumentException("relocate rewrites the paths of every operator; it takes no operator selection");
            }
            return Surgery.relocate(from, to);
        }

        @Override
        Integer check(Surgery surgery, SurgeryPlan planned) throws CheckpointSurgeonException {
            if (!check) return null;
            // with --apply the check needs a plan of its own: nothing may be written before it
            SurgeryPlan plan = planned != null ? planned : CheckpointSurgeon.plan(path, surgery);
            java.util.List<String> paths = new java.util.ArrayList<>();
            for (SurgeryPlan.Relocation r : plan.relocated()) paths.add(r.newPath());
            java.util.List<String> missing = CheckpointSurgeon.missingFiles(paths);
            PrintWriter out = spec.commandLine().getOut();
            out.printf(Locale.ROOT, "check: %d of %d rewritten paths exist at their new place%n",
                    paths.size() - missing.size(), paths.size());
            for (String m : missing) out.println("  missing: " + printable(m));
            out.flush();
            if (missing.isEmpty()) return null;
            spec.commandLine().getErr().println("error [VALIDATION]: " + missing.size() + " rewritten paths do not exist"
                    + " under " + to + (apply ? "; nothing was written" : "") + ". Copy the files there first.");
            return INVALID;
        }
    }

    @Command(name = "diff", mixinStandardHelpOptions = true,
            description = "Compare two checkpoints: per operator and state the elements, bytes and distinct values in A and"
                    + " in B, the growth factor, states added or removed, and keyed and coordinator state sizes; finds a"
                    + " union state multiplied by the parallelism on every restore in between (any number of restores)."
                    + " Exits 4 on that finding, or, with --max-growth, when a state grew by more.")
    static final class DiffCommand implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "A", description = "the older checkpoint or savepoint")
        String a;

        @Parameters(index = "1", paramLabel = "B", description = "the newer checkpoint or savepoint")
        String b;

        @Option(names = "--json", description = "print JSON")
        boolean json;

        @Option(names = "--max-growth", paramLabel = "FACTOR", description = "exit 4 when a state's element count grew by"
                + " more than FACTOR from A to B")
        Double maxGrowth;

        @CommandLine.Mixin
        FlinkFsOptions fs = new FlinkFsOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws CheckpointSurgeonException {
            fs.apply(a);
            fs.apply(b);
            Growth.Diff d = Growth.diff(CheckpointSurgeon.inspect(a), CheckpointSurgeon.inspect(b));
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                out.print(d.toJson());
            } else {
                out.printf(Locale.ROOT, "A: checkpoint %d, _metadata %s  %s%nB: checkpoint %d, _metadata %s  %s%n",
                        d.checkpointA(), bytes(d.metadataBytesA()), d.a(), d.checkpointB(), bytes(d.metadataBytesB()), d.b());
                out.printf(Locale.ROOT, "  %-32s %-32s %-8s %12s %12s %8s %12s %12s %9s %9s%n", "operator", "state", "change",
                        "elements A", "elements B", "factor", "bytes A", "bytes B", "distinct A", "distinct B");
                for (Growth.StateChange c : d.states()) {
                    out.printf(Locale.ROOT, "  %-32s %-32s %-8s %12s %12s %8s %12s %12s %9s %9s%n", c.operatorId(),
                            printable(c.state()), c.change(), count(c.elementsA()), count(c.elementsB()),
                            c.elementsA() > 0 && c.elementsB() >= 0 ? String.format(Locale.ROOT, "x%.2f", c.factor()) : "-",
                            count(c.bytesA()), count(c.bytesB()), count(c.distinctA()), count(c.distinctB()));
                }
                for (Growth.OperatorChange o : d.operators()) {
                    if (o.keyedBytesA() != o.keyedBytesB() || o.coordinatorBytesA() != o.coordinatorBytesB()
                            || o.parallelismA() != o.parallelismB()) {
                        out.printf(Locale.ROOT, "  operator %s%s: parallelism %s -> %s, keyed state %s -> %s, coordinator state %s -> %s%n",
                                o.operatorId(), o.uid().isEmpty() ? "" : " (uid " + printable(o.uid()) + ")",
                                count(o.parallelismA()), count(o.parallelismB()), count(o.keyedBytesA()),
                                count(o.keyedBytesB()), count(o.coordinatorBytesA()), count(o.coordinatorBytesB()));
                    }
                }
                String bDir = b.endsWith("/_metadata") ? b.substring(0, b.length() - 10) : b;
                for (CheckpointSurgeon.Finding f : d.findings()) {
                    out.printf("%s %s: %s%n  fix: %s%n", f.severity(), f.code(), f.message(), command(f.fix(), bDir));
                    for (CheckpointSurgeon.Remedy r : f.alternatives()) out.printf("  or:  %s%n", command(r, bDir));
                }
            }
            out.flush();
            if (maxGrowth != null && d.maxFactor() > maxGrowth) {
                spec.commandLine().getErr().printf(Locale.ROOT, "a state grew by x%.2f, more than --max-growth %s%n",
                        d.maxFactor(), maxGrowth);
                return FINDINGS;
            }
            // --max-growth is the gate when given; else the signature of a union state nothing reads
            return maxGrowth == null && !d.findings().isEmpty() ? FINDINGS : OK;
        }
    }

    /** A count, or "-" for a value that is absent (-1). */
    static String count(long n) {
        return n < 0 ? "-" : String.format(Locale.ROOT, "%,d", n);
    }

    @Command(name = "history", mixinStandardHelpOptions = true,
            description = "The series of every state over a job's checkpoints: give checkpoint or savepoint directories,"
                    + " or a job's checkpoint directory (its chk-* are taken). Finds a union state that is multiplied by"
                    + " the parallelism from checkpoint to checkpoint, the signature of a state nothing reads, while it is"
                    + " still small; exits 4 when it finds one.")
    static final class HistoryCommand implements Callable<Integer> {
        @Parameters(arity = "1..*", paramLabel = "PATH", description = "checkpoints, savepoints, or directories holding them")
        java.util.List<String> paths;

        @Option(names = "--json", description = "print JSON")
        boolean json;

        @Option(names = "--svg", paramLabel = "FILE", description = "also write the chart of element counts to FILE (a new file)")
        Path svg;

        @Option(names = "--html", paramLabel = "FILE", description = "also write an HTML report to FILE (a new file):"
                + " the findings, the chart and series, and where the bytes of the newest checkpoint are")
        Path html;

        @CommandLine.Mixin
        FlinkFsOptions fs = new FlinkFsOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws CheckpointSurgeonException {
            java.util.List<InspectReport> reports = new java.util.ArrayList<>();
            java.util.List<String> dirs = new java.util.ArrayList<>();
            for (String p : paths) {
                for (String cp : checkpointsUnder(p)) {
                    fs.apply(cp);
                    reports.add(CheckpointSurgeon.inspect(cp));
                    dirs.add(cp);
                }
            }
            if (reports.isEmpty()) {
                throw new CommandLine.ParameterException(spec.commandLine(), "no checkpoint under " + paths);
            }
            Growth.History h = Growth.history(reports);
            Growth.Checkpoint last = h.checkpoints().get(h.checkpoints().size() - 1);
            String lastDir = last.path().endsWith("/_metadata") ? last.path().substring(0, last.path().length() - 10) : last.path();
            PrintWriter out = spec.commandLine().getOut();
            if (json) {
                out.print(h.toJson());
            } else {
                out.print("checkpoint ");
                for (Growth.Checkpoint c : h.checkpoints()) out.printf(Locale.ROOT, "%12d", c.id());
                out.println();
                out.print("_metadata  ");
                for (Growth.Checkpoint c : h.checkpoints()) out.printf(Locale.ROOT, "%12s", count(c.metadataBytes()));
                out.println();
                for (Growth.Series s : h.series()) {
                    out.printf(Locale.ROOT, "%s %s (%s)%n", s.operatorId(), printable(s.state()), s.mode());
                    out.print("  elements ");
                    for (long e : s.elements()) out.printf(Locale.ROOT, "%12s", count(e));
                    out.println();
                    out.print("  parallel ");
                    for (int p : s.parallelism()) out.printf(Locale.ROOT, "%12s", count(p));
                    out.println();
                }
                for (CheckpointSurgeon.Finding f : h.findings()) {
                    out.printf("%s %s: %s%n  fix: %s%n", f.severity(), f.code(), f.message(), command(f.fix(), lastDir));
                    for (CheckpointSurgeon.Remedy r : f.alternatives()) out.printf("  or:  %s%n", command(r, lastDir));
                }
            }
            out.flush();
            if (svg != null) writeNewFile(svg, "--svg", Growth.svg(h));
            if (html != null) {
                InspectReport newest = java.util.Collections.max(reports, java.util.Comparator.comparingLong(InspectReport::checkpointId));
                writeNewFile(html, "--html", HtmlReport.history(h, newest, remedy -> command(remedy, lastDir)));
            }
            return h.findings().isEmpty() ? OK : FINDINGS;
        }

        /**
         * The checkpoints a path names: itself when it holds {@code _metadata} (or is one, or is a
         * Flink path), else every directory below it, two levels deep, that holds {@code _metadata}
         * (a job's {@code chk-*}, a savepoint directory's {@code savepoint-*}).
         */
        static java.util.List<String> checkpointsUnder(String path) throws CheckpointSurgeonException {
            if (CheckpointSurgeon.isFlinkPath(path)) return java.util.List.of(path);
            Path p = Path.of(path);
            if (p.getFileName() != null && p.getFileName().toString().equals("_metadata") || java.nio.file.Files.isRegularFile(p.resolve("_metadata"))) {
                return java.util.List.of(path);
            }
            try (java.util.stream.Stream<Path> s = java.nio.file.Files.find(p, 3,
                    (f, a) -> a.isRegularFile() && f.getFileName().toString().equals("_metadata"))) {
                return s.map(f -> f.getParent().toString()).sorted().collect(java.util.stream.Collectors.toList());
            } catch (java.io.IOException | java.io.UncheckedIOException e) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, path + ": " + e, e);
            }
        }
    }

    @Command(name = "watch", mixinStandardHelpOptions = true,
            description = "Follow the checkpoints of running jobs (Flink's REST API or a checkpoint directory): the doctor"
                    + " on every new one, Prometheus metrics per job, operator and state, a hook on new findings."
                    + " Reads checkpoints only.")
    static final class WatchCommand implements Callable<Integer> {
        @Option(names = "--rest", paramLabel = "URL", description = "Flink's REST address, e.g. http://jobmanager:8081:"
                + " the latest completed checkpoint of every job it lists")
        String rest;

        @Option(names = "--dir", paramLabel = "DIR", description = "a checkpoint base directory (<dir>/<job id>/chk-<n>)"
                + " or one job's checkpoint directory")
        Path dir;

        @Option(names = "--metrics-port", paramLabel = "PORT", description = "serve Prometheus metrics at"
                + " http://HOST:PORT/metrics (0: any free port, printed)")
        Integer metricsPort;

        @Option(names = "--metrics-host", paramLabel = "HOST", description = "the address to serve them on (default: all)")
        String metricsHost = "0.0.0.0";

        @Option(names = "--interval", paramLabel = "SECONDS", description = "seconds between polls (default 10)")
        double interval = 10;

        @Option(names = "--on-finding", paramLabel = "CMD", description = "run CMD (with /bin/sh) when a checkpoint has a"
                + " finding its job's previous checkpoint did not have; CHECKPOINT_SURGEON_JOB_ID, _JOB_NAME, _CHECKPOINT,"
                + " _CHECKPOINT_ID, _FINDINGS and _SEVERITY are set, the findings are on its stdin as JSON")
        String onFinding;

        @Option(names = "--hook-timeout", paramLabel = "SECONDS", description = "kill the hook after this long (default 60)")
        long hookTimeout = 60;

        @Option(names = "--once", description = "poll once, print the metrics and exit (4 on an error finding),"
                + " e.g. for node_exporter's textfile collector")
        boolean once;

        @CommandLine.Mixin
        FlinkFsOptions fs = new FlinkFsOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            if ((rest == null) == (dir == null)) {
                throw new CommandLine.ParameterException(spec.commandLine(), "give exactly one of --rest and --dir");
            }
            if (rest != null) fs.configure(); // the REST API may name checkpoints on any file system
            PrintWriter out = spec.commandLine().getOut();
            try (io.checkpointsurgeon.Watch w = new io.checkpointsurgeon.Watch(rest, dir, onFinding, hookTimeout * 1000,
                    once ? new PrintWriter(System.err, true) : out)) {
                if (metricsPort != null) {
                    int port = w.serveMetrics(metricsHost, metricsPort);
                    out.println("metrics at http://" + metricsHost + ":" + port + "/metrics");
                    out.flush();
                }
                if (once) {
                    w.poll();
                    out.print(w.metrics());
                    out.flush();
                    return w.hasFinding("ERROR") ? FINDINGS : OK;
                }
                w.run(Math.max(10, (long) (interval * 1000)));
                return OK;
            }
        }
    }

    @Command(name = "kafka", mixinStandardHelpOptions = true,
            description = "Kafka source state: move a FlinkKafkaConsumer's offsets into KafkaSource state, drop a topic"
                    + " a KafkaSource no longer reads, set starting offsets. Plans by default, like every surgery.",
            subcommands = {KafkaMigrateLegacy.class, KafkaDropTopic.class, KafkaSetOffsets.class})
    static final class Kafka {
    }

    /** The topic and partition options of drop-topic and set-offsets. */
    static final class TopicPartition {
        @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic")
        String topic;

        @Option(names = "--partition", paramLabel = "P", description = "only this partition (default: every partition of the topic)")
        Integer partition;
    }

    @Command(name = "migrate-legacy", mixinStandardHelpOptions = true,
            description = "Turn the FlinkKafkaConsumer state (topic-partition-offset-states) of the source into KafkaSource"
                    + " state under the same uid: one split per partition, starting after the last offset the job"
                    + " processed, in the reader the KafkaSource enumerator assigns it to, and the enumerator's state in"
                    + " the operator's coordinator state; the legacy state is purged. The plan lists every partition"
                    + " with its legacy offset and its new starting offset.")
    static final class KafkaMigrateLegacy extends SurgeryCommand {
        @Option(names = "--connector-version", paramLabel = "VERSION", description = "the Kafka connector of the new job:"
                + " 1.15.4 (bundled with Flink 1.14-1.16), 3.0.x, 3.4.0-1.20, 4.0.1-2.0, 5.0.0-2.2, ...; default: the"
                + " connector on the class path")
        String connectorVersion;

        @Option(names = "--parallelism", paramLabel = "N", description = "the new job's source parallelism (default: the"
                + " operator's parallelism in the checkpoint)")
        Integer parallelism;

        @Option(names = "--offset-not-set", paramLabel = "MARKER", description = "where a partition whose legacy offset"
                + " is OFFSET_NOT_SET starts: earliest, latest or committed (default: refuse)")
        String offsetNotSet;

        @Override
        Surgery surgery() {
            int version;
            if (connectorVersion != null) {
                version = Surgery.kafkaEnumeratorStateVersion(connectorVersion);
            } else {
                version = Surgery.detectKafkaEnumeratorStateVersion(Cli.class.getClassLoader());
                if (version < 0) {
                    throw new IllegalArgumentException("no Kafka connector on the class path: give --connector-version"
                            + " (the flink-connector-kafka version of the new job)");
                }
            }
            return Surgery.migrateKafkaLegacy(selection.selector(true), version, parallelism,
                    offsetNotSet == null ? null : Surgery.KafkaStart.marker(offsetNotSet));
        }
    }

    @Command(name = "drop-topic", mixinStandardHelpOptions = true,
            description = "Remove a topic's splits (or one partition's) from every KafkaSource reader and from the"
                    + " enumerator state, so that a job that no longer subscribes to the topic stops reading it"
                    + " (a restored KafkaSource keeps reading removed topics: FLINK-34089).")
    static final class KafkaDropTopic extends SurgeryCommand {
        @CommandLine.Mixin
        TopicPartition tp = new TopicPartition();

        @Override
        Surgery surgery() {
            return Surgery.dropKafkaTopic(selection.selector(true), tp.topic, tp.partition);
        }
    }

    @Command(name = "set-offsets", mixinStandardHelpOptions = true,
            description = "Set the starting offset of a topic's KafkaSource splits (or one partition's): the first record"
                    + " the restored job reads from it. The enumerator state is updated where it holds offsets.")
    static final class KafkaSetOffsets extends SurgeryCommand {
        @CommandLine.Mixin
        TopicPartition tp = new TopicPartition();

        @CommandLine.ArgGroup(exclusive = true, multiplicity = "1")
        Start start;

        static final class Start {
            @Option(names = "--offset", paramLabel = "N", description = "start at offset N")
            Long offset;

            @Option(names = "--earliest", description = "start at the earliest offset")
            boolean earliest;

            @Option(names = "--latest", description = "start at the latest offset")
            boolean latest;

            @Option(names = "--committed", description = "start at the group's committed offset")
            boolean committed;

            @Option(names = "--shift", paramLabel = "DELTA", description = "move the current offset by DELTA (+ or -)")
            Long shift;
        }

        @Override
        Surgery surgery() {
            Surgery.KafkaStart to = start.offset != null ? Surgery.KafkaStart.at(start.offset)
                    : start.shift != null ? Surgery.KafkaStart.shift(start.shift)
                    : start.earliest ? Surgery.KafkaStart.earliest()
                    : start.latest ? Surgery.KafkaStart.latest() : Surgery.KafkaStart.committed();
            return Surgery.setKafkaOffsets(selection.selector(true), tp.topic, tp.partition, to);
        }
    }

    @Command(name = "ha", mixinStandardHelpOptions = true,
            description = "HA CompletedCheckpoint files (ZooKeeper or Kubernetes HA storage dir). Needs the Flink jars "
                    + "of the cluster's version on the classpath.",
            subcommands = {HaList.class, HaRepair.class})
    static final class Ha {}


    /** The options of Kubernetes HA, shared by ha list and ha repair. */
    static final class KubernetesOptions {
        @Option(names = "--kubernetes", description = "Kubernetes HA: read the cluster's HA ConfigMaps (their"
                + " checkpointID-<n> pointers to the completedCheckpoint files; with ha repair --apply, the leader's"
                + " lease) through Flink's Kubernetes client (flink-kubernetes on the class path)")
        boolean kubernetes;

        @Option(names = "--kubeconfig", paramLabel = "FILE", description = "with --kubernetes: the kubeconfig (default:"
                + " $KUBECONFIG, ~/.kube/config, or the pod's service account)")
        Path kubeconfig;

        @Option(names = "--namespace", paramLabel = "NS", description = "with --kubernetes: kubernetes.namespace"
                + " (default: default)")
        String namespace;

        @Option(names = "--cluster-id", paramLabel = "ID", description = "kubernetes.cluster-id (with --kubernetes,"
                + " required), or high-availability.cluster-id (with --zookeeper-quorum; default: default)")
        String clusterId;

        /** The cluster's ConfigMaps, or null without --kubernetes. */
        io.checkpointsurgeon.flink.KubernetesHa connect(CommandLine.Model.CommandSpec spec) throws CheckpointSurgeonException {
            if (!kubernetes) {
                if (kubeconfig != null || namespace != null) {
                    throw new CommandLine.ParameterException(spec.commandLine(), "--kubeconfig and --namespace go with --kubernetes");
                }
                return null;
            }
            if (clusterId == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--kubernetes needs --cluster-id (kubernetes.cluster-id)");
            }
            return io.checkpointsurgeon.flink.KubernetesHa.connect(kubeconfig, namespace == null ? "default" : namespace, clusterId);
        }
    }

    /** What ha list --kubernetes finds: the ConfigMaps' pointers against the HA dir's files. */
    public static final class KubernetesListing {
        private final String apiServer;
        private final String namespace;
        private final String clusterId;
        private final java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointers;
        private final java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointersWithoutFile;
        private final java.util.List<Path> filesWithoutPointer;
        private final java.util.List<HaList.Entry> files;

        KubernetesListing(String apiServer, String namespace, String clusterId,
                java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointers,
                java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointersWithoutFile,
                java.util.List<Path> filesWithoutPointer, java.util.List<HaList.Entry> files) {
            this.apiServer = apiServer;
            this.namespace = namespace;
            this.clusterId = clusterId;
            this.pointers = pointers;
            this.pointersWithoutFile = pointersWithoutFile;
            this.filesWithoutPointer = filesWithoutPointer;
            this.files = files;
        }
    }

    /** The status of a pointer: "" when its local file exists. */
    static String pointerStatus(io.checkpointsurgeon.flink.KubernetesHa.Pointer p) {
        String deleted = p.markedForDeletion ? " (marked for deletion)" : "";
        if (p.problem != null) return ": unreadable, " + p.problem + deleted;
        if (p.file == null) return ": not a local file" + deleted;
        return (java.nio.file.Files.isRegularFile(p.file) ? "" : ": NO SUCH FILE") + deleted;
    }

    /** A pointer that names no file Flink could recover from (one marked for deletion is on its way out). */
    static boolean withoutFile(io.checkpointsurgeon.flink.KubernetesHa.Pointer p) {
        return !p.markedForDeletion && (p.problem != null || p.file != null && !java.nio.file.Files.isRegularFile(p.file));
    }

    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "List every completedCheckpoint file with its job, checkpoint id, size and union states;"
                    + " with --kubernetes, first the HA ConfigMaps' pointers to them, the pointers without a file and"
                    + " the files without a pointer.")
    static final class HaList implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "HA_DIR", description = "high-availability.storageDir (or its <cluster-id> dir)")
        Path dir;

        @Option(names = "--json", description = "print JSON")
        boolean json;

        @CommandLine.Mixin
        KubernetesOptions k8s = new KubernetesOptions();

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        public static final class Entry {
            private final CheckpointSurgeon.HaFileInfo file;
            private final java.util.List<String> unionStates;

            public Entry(CheckpointSurgeon.HaFileInfo file, java.util.List<String> unionStates) {
                this.file = file;
                this.unionStates = unionStates;
            }

            public CheckpointSurgeon.HaFileInfo file() {
                return file;
            }

            public java.util.List<String> unionStates() {
                return unionStates;
            }

            @Override
            public boolean equals(Object o) {
                if (this == o) return true;
                if (!(o instanceof Entry)) return false;
                Entry that = (Entry) o;
                return java.util.Objects.equals(file, that.file) && java.util.Objects.equals(unionStates, that.unionStates);
            }

            @Override
            public int hashCode() {
                return java.util.Objects.hash(file, unionStates);
            }

            @Override
            public String toString() {
                return "Entry[file=" + file + ", unionStates=" + unionStates + "]";
            }
        }

        @Override
        public Integer call() throws CheckpointSurgeonException {
            PrintWriter out = spec.commandLine().getOut();
            java.util.List<Entry> entries = new java.util.ArrayList<>();
            java.util.List<Path> files = CheckpointSurgeon.haFiles(dir);
            KubernetesListing listing = null;
            try (io.checkpointsurgeon.flink.KubernetesHa ha = k8s.connect(spec)) {
                if (ha != null) {
                    java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointers = ha.checkpointPointers();
                    java.util.Set<Path> pointed = new java.util.HashSet<>();
                    for (io.checkpointsurgeon.flink.KubernetesHa.Pointer p : pointers) pointed.add(p.file);
                    java.util.List<Path> unpointed = new java.util.ArrayList<>();
                    for (Path f : files) {
                        if (!pointed.contains(f.toAbsolutePath().normalize())) unpointed.add(f);
                    }
                    listing = new KubernetesListing(ha.masterUrl, ha.namespace, ha.clusterId, pointers,
                            pointers.stream().filter(Cli::withoutFile).collect(java.util.stream.Collectors.toList()),
                            unpointed, entries);
                }
            }
            if (listing != null && !json) {
                out.printf("HA ConfigMaps of cluster '%s' in namespace '%s' (Kubernetes API server %s):%n",
                        listing.clusterId, listing.namespace, listing.apiServer);
                for (io.checkpointsurgeon.flink.KubernetesHa.Pointer p : listing.pointers) {
                    out.println("  " + p.configMap + " " + p.key + " -> " + (p.target == null ? "?" : p.target)
                            + pointerStatus(p));
                }
                if (listing.pointers.isEmpty()) out.println("  no checkpointID-<n> pointers");
                out.println("pointers without a file: " + listing.pointersWithoutFile.size());
                for (io.checkpointsurgeon.flink.KubernetesHa.Pointer p : listing.pointersWithoutFile) {
                    out.println("  " + p.configMap + " " + p.key + " (checkpoint " + p.checkpointId + ")");
                }
                out.println("files without a pointer: " + listing.filesWithoutPointer.size());
                for (Path f : listing.filesWithoutPointer) out.println("  " + f);
            }
            for (int i = 0; i < files.size(); i++) {
                Path f = files.get(i);
                spec.commandLine().getErr().printf("[%d/%d] %s%n", i + 1, files.size(), f);
                CheckpointSurgeon.HaFileInfo info = CheckpointSurgeon.haFileInfo(f);
                InspectReport r = CheckpointSurgeon.inspectHa(f);
                java.util.List<String> unions = new java.util.ArrayList<>();
                for (InspectReport.OperatorInfo op : r.operators()) {
                    for (InspectReport.StateTotal t : op.stateTotals()) {
                        if (t.mode().equals("UNION")) {
                            unions.add(String.format(Locale.ROOT, "%s %s: %,d elements, %s", op.id(), printable(t.name()), t.elements(),
                                    t.bytes() < 0 ? "? bytes" : bytes(t.bytes())));
                        }
                    }
                }
                entries.add(new Entry(info, unions));
            }
            if (json) {
                out.print(Json.write(listing != null ? listing : entries));
            } else {
                for (Entry e : entries) {
                    out.printf(Locale.ROOT, "%s%n  job %s, checkpoint %d, %s, %s%n", e.file().file(), e.file().jobId(),
                            e.file().checkpointId(), bytes(e.file().fileBytes()), e.file().checkpointPath());
                    for (String u : e.unionStates()) out.println("  union state " + u);
                }
                if (entries.isEmpty()) out.println("no completedCheckpoint files under " + dir);
            }
            out.flush();
            return OK;
        }
    }

    @Command(name = "repair", mixinStandardHelpOptions = true,
            description = "Remove (or de-duplicate) a state in HA completedCheckpoint files, or relocate them (--from,"
                    + " --to) after their checkpoints moved. Plans by default; --apply rewrites each file in place after"
                    + " a backup. Stop the JobManager first.")
    static final class HaRepair implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "PATH", description = "a completedCheckpoint file or the HA dir")
        Path path;

        @CommandLine.Mixin
        Selection selection = new Selection();

        @Option(names = "--state", paramLabel = "NAME", description = "the state name to remove (or de-duplicate)")
        String state;

        @Option(names = "--from", paramLabel = "PREFIX", description = "relocate: the old location of the checkpoints"
                + " (with --to): the state's absolute paths and the files' pointers to their checkpoint move")
        String from;

        @Option(names = "--to", paramLabel = "PREFIX", description = "relocate: the new location")
        String to;

        @Option(names = "--dedupe", description = "de-duplicate the union state instead of removing it")
        boolean dedupe;

        @Option(names = "--metadata-only", description = "only drop the name from the handle maps")
        boolean metadataOnly;

        @Option(names = "--apply", description = "rewrite the files (a backup of each is kept)")
        boolean apply;

        @Option(names = "--json", description = "print JSON")
        boolean json;

        @Option(names = "--zookeeper-quorum", paramLabel = "HOSTS", description = "with --apply: refuse (exit 2) while a"
                + " JobManager holds or waits for the cluster's leadership in this ZooKeeper (its leader latch)")
        String zookeeperQuorum;

        @CommandLine.Mixin
        KubernetesOptions k8s = new KubernetesOptions();

        @Option(names = "--zookeeper-root", paramLabel = "PATH", description = "high-availability.zookeeper.path.root"
                + " (default: /flink)")
        String zookeeperRoot = "/flink";

        @Option(names = "--force", description = "repair even though a JobManager holds the leadership (it will"
                + " overwrite or use the files it has in memory)")
        boolean force;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws CheckpointSurgeonException {
            if (k8s.kubernetes && zookeeperQuorum != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--kubernetes or --zookeeper-quorum, not both");
            }
            String leader = null;
            java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointers = null;
            try (io.checkpointsurgeon.flink.KubernetesHa ha = k8s.connect(spec)) {
                if (ha != null) {
                    if (apply) leader = ha.liveLeader();
                    pointers = ha.checkpointPointers();
                }
            }
            if (apply && zookeeperQuorum != null) {
                leader = io.checkpointsurgeon.flink.ZooKeeperLeader.liveLeader(zookeeperQuorum, zookeeperRoot,
                        k8s.clusterId == null ? "default" : k8s.clusterId);
            }
            if (leader != null && !force) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.LOCKED, leader
                        + ". Stop the JobManager(s) before repairing their HA files, or give --force");
            }
            if (leader != null) {
                spec.commandLine().getErr().println("warning (--force): " + leader);
            } else if (apply && !force && zookeeperQuorum == null && !k8s.kubernetes) {
                spec.commandLine().getErr().println("warning: not checked whether a JobManager holds the cluster's"
                        + " leadership (give --zookeeper-quorum and --cluster-id, or --kubernetes and --cluster-id)");
            }
            Surgery s = null;
            try {
                if ((from == null) != (to == null)) throw new IllegalArgumentException("--from and --to go together");
                if (from == null && state == null) throw new IllegalArgumentException("give --state NAME, or --from and --to");
                if (from != null) s = Surgery.relocate(from, to);
                if (state != null) {
                    s = dedupe ? (s == null ? Surgery.dedupeUnion(selection.selector(true), state)
                            : s.andDedupeUnion(selection.selector(true), state))
                            : (s == null ? Surgery.removeState(selection.selector(true), state)
                            : s.andRemoveState(selection.selector(true), state));
                }
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
            }
            if (metadataOnly) s.metadataOnly();
            PrintWriter out = spec.commandLine().getOut();
            if (!apply && !json) {
                out.println("The JobManager(s) must be stopped before --apply: a running leader rewrites these files.");
            }
            java.util.List<Path> files = pointers == null ? CheckpointSurgeon.haFiles(path) : pointedFiles(pointers);
            java.util.List<CheckpointSurgeon.HaRepair> results = new java.util.ArrayList<>();
            if (apply) {
                // all-or-nothing: every file is staged and validated before any is switched
                results = CheckpointSurgeon.repairHa(files, s);
            } else {
                boolean any = false;
                for (int i = 0; i < files.size(); i++) {
                    spec.commandLine().getErr().printf("[%d/%d] %s%n", i + 1, files.size(), files.get(i));
                    try {
                        results.add(new CheckpointSurgeon.HaRepair(files.get(i), "planned",
                                CheckpointSurgeon.planHa(files.get(i), s)));
                        any = true;
                    } catch (CheckpointSurgeonException e) {
                        if (e.code() != CheckpointSurgeonException.Code.NOTHING_SELECTED) throw e;
                        results.add(new CheckpointSurgeon.HaRepair(files.get(i), "skipped", null));
                    }
                }
                if (!any) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "the surgery selects nothing in any of the "
                            + files.size() + " HA file(s)");
                }
            }
            if (json) {
                out.print(Json.write(results));
            } else {
                for (CheckpointSurgeon.HaRepair r : results) {
                    if (r.plan() == null) {
                        out.println(r.file() + ": skipped, the surgery selects nothing in it (already repaired?)");
                    } else {
                        out.print(planText(r.plan()));
                    }
                }
                if (apply) {
                    out.println("summary:");
                    for (CheckpointSurgeon.HaRepair r : results) {
                        out.println("  " + r.file() + ": " + (r.plan() == null ? "skipped (nothing to change)"
                                : "repaired, backup " + r.plan().result().backup()));
                    }
                }
            }
            out.flush();
            return OK;
        }

        /**
         * With --kubernetes the files to repair are those the ConfigMaps point at (the ones Flink recovers
         * from), under PATH; the other pointers and files are named on standard error and left alone.
         */
        java.util.List<Path> pointedFiles(java.util.List<io.checkpointsurgeon.flink.KubernetesHa.Pointer> pointers)
                throws CheckpointSurgeonException {
            PrintWriter err = spec.commandLine().getErr();
            Path base = path.toAbsolutePath().normalize();
            java.util.SortedSet<Path> files = new java.util.TreeSet<>();
            for (io.checkpointsurgeon.flink.KubernetesHa.Pointer p : pointers) {
                String status = pointerStatus(p);
                if (!status.isEmpty()) {
                    err.println("warning: " + p.configMap + " " + p.key + " -> " + p.target + status + "; not repaired");
                } else if (!p.file.startsWith(base)) {
                    err.println("warning: " + p.configMap + " " + p.key + " -> " + p.target + " is not under " + path
                            + "; not repaired");
                } else {
                    files.add(p.file);
                }
            }
            for (Path f : CheckpointSurgeon.haFiles(path)) {
                if (!files.contains(f.toAbsolutePath().normalize())) {
                    err.println("note: " + f + " has no pointer in the ConfigMaps (Flink does not recover from it); not repaired");
                }
            }
            if (files.isEmpty()) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "no checkpointID-<n>"
                        + " pointer of the HA ConfigMaps names a completedCheckpoint file under " + path);
            }
            return new java.util.ArrayList<>(files);
        }
    }

    static String planText(SurgeryPlan p) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "plan for %s (%s)%n", p.source(), p.depth()));
        sb.append(String.format(Locale.ROOT, "  %-32s %7s %-32s %-16s %12s %12s %12s%n", "operator", "subtask", "state", "action",
                "elements", "after", "bytes cut"));
        for (SurgeryPlan.Change c : p.changes()) {
            sb.append(String.format(Locale.ROOT, "  %-32s %7s %-32s %-16s %,12d %,12d %,12d%n",
                    c.operatorId().isEmpty() ? "(checkpoint)" : c.operatorId(),
                    c.subtask() < 0 ? "all" : String.valueOf(c.subtask()), printable(c.state()), c.action(), c.elementsBefore(),
                    c.elementsAfter(), c.bytesRemoved()));
            if (!c.detail().isEmpty()) sb.append("    ").append(printable(c.detail())).append(System.lineSeparator());
        }
        java.util.List<SurgeryPlan.Relocation> moved = p.relocated();
        for (int i = 0; i < Math.min(moved.size(), 20); i++) {
            sb.append("  path ").append(printable(moved.get(i).oldPath())).append(" -> ")
                    .append(printable(moved.get(i).newPath())).append(System.lineSeparator());
        }
        if (moved.size() > 20) {
            sb.append(String.format(Locale.ROOT, "  ... and %,d more paths (--json lists them all)%n", moved.size() - 20));
        }
        for (SurgeryPlan.NewStream s : p.newStreams()) {
            sb.append(String.format(Locale.ROOT, "  %s %s -> %s (%s)%n", s.replaces().startsWith("(") ? "write" : "rewrite", s.replaces(),
                    s.fileName().isEmpty() ? "inline in _metadata" : "new file " + s.fileName(), bytes(s.bytes())));
        }
        sb.append(String.format(Locale.ROOT, "  %,d elements and %s of state removed; _metadata %s -> %s%n",
                p.elementsRemoved(), bytes(p.bytesRemoved()), bytes(p.metadataBytesBefore()), bytes(p.metadataBytesAfter())));
        SurgeryPlan.Result r = p.result();
        if (r == null) {
            sb.append("  nothing written: add --apply with --output DIR (or --in-place) to write it\n");
        } else {
            sb.append(String.format(Locale.ROOT, "wrote %s (%s)%n", r.metadataPath(), bytes(r.metadataBytes())));
            for (String w : r.written()) sb.append("  new state file ").append(w).append(System.lineSeparator());
            if (!r.linked().isEmpty()) sb.append(String.format(Locale.ROOT, "  %d unchanged state files hard-linked%n", r.linked().size()));
            if (!r.copied().isEmpty()) sb.append(String.format(Locale.ROOT, "  %d unchanged state files copied%n", r.copied().size()));
            if (r.backup() != null) sb.append("  backup of the old _metadata: ").append(r.backup()).append(System.lineSeparator());
            sb.append("  validation: ").append(r.flinkValidation()).append(System.lineSeparator());
        }
        return sb.toString();
    }

    /** A Kafka offset, or the name of the connector's marker. */
    static String kafkaOffset(long o) {
        return o == -2 ? "EARLIEST" : o == -1 ? "LATEST" : o == -3 ? "COMMITTED" : Long.toString(o);
    }

    static String table(InspectReport r, boolean subtasks) {
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "checkpoint %d: %s%n  _metadata version %d, %s%n",
                r.checkpointId(), r.source(), r.metadataVersion(), bytes(r.metadataBytes())));
        for (InspectReport.MasterStateInfo m : r.masterStates()) {
            sb.append(String.format(Locale.ROOT, "  master state %s (version %d): %s%n", m.name(), m.version(), bytes(m.bytes())));
        }
        for (InspectReport.OperatorInfo op : r.operators()) {
            sb.append(String.format(Locale.ROOT, "%noperator %s", op.id()));
            if (!op.uid().isEmpty()) sb.append("  uid=").append(op.uid());
            if (!op.name().isEmpty()) sb.append("  name=").append(op.name());
            sb.append(String.format(Locale.ROOT, "%n  parallelism %d, max parallelism %d", op.parallelism(), op.maxParallelism()));
            if (op.coordinatorStateBytes() >= 0) sb.append(", coordinator state ").append(bytes(op.coordinatorStateBytes()));
            if (op.fullyFinished()) sb.append(", fully finished");
            else if (op.finishedSubtasks() > 0) sb.append(", ").append(op.finishedSubtasks()).append(" subtasks finished");
            sb.append(System.lineSeparator());
            var totals = op.stateTotals();
            if (!totals.isEmpty()) {
                sb.append(String.format(Locale.ROOT, "  %-40s %-16s %12s %14s %8s%n", "operator state", "mode", "elements", "bytes", "subtasks"));
                for (InspectReport.StateTotal t : totals) {
                    sb.append(String.format(Locale.ROOT, "  %-40s %-16s %,12d %14s %8d%n",
                            printable(t.name()), t.mode(), t.elements(), t.bytes() < 0 ? "?" : String.format(Locale.ROOT, "%,d", t.bytes()), t.handles()));
                }
            }
            var readerSplits = op.kafkaReaderSplits();
            if (!readerSplits.isEmpty()) {
                sb.append("  KafkaSource reader splits (SourceReaderState): topic-partition from starting offset [to stopping offset]")
                        .append(System.lineSeparator());
                readerSplits.forEach((subtask, splits) -> sb.append(String.format(Locale.ROOT, "    subtask %d: %s%n", subtask,
                        splits.stream().map(k -> printable(k.topic()) + "-" + k.partition() + " from " + kafkaOffset(k.offset())
                                + (k.stoppingOffset() == Long.MIN_VALUE ? "" : " to " + kafkaOffset(k.stoppingOffset()))
                                + (k.count() > 1 ? " (x" + k.count() + ")" : ""))
                                .collect(java.util.stream.Collectors.joining(", ")))));
            }
            InspectReport.KafkaEnumerator en = op.kafkaEnumerator();
            if (en != null) {
                if (!en.error().isEmpty()) {
                    sb.append("  KafkaSource enumerator state: not readable: ").append(printable(en.error())).append(System.lineSeparator());
                } else {
                    sb.append(String.format(Locale.ROOT, "  KafkaSource enumerator state (version %d%s): %d assigned, %d pending%n",
                            en.version(), en.initialDiscoveryFinished() ? ", initial discovery finished" : "",
                            en.assigned().size(), en.pending().size()));
                    for (var part : java.util.List.of(java.util.Map.entry("assigned", en.assigned()), java.util.Map.entry("pending", en.pending()))) {
                        if (part.getValue().isEmpty()) continue;
                        sb.append(String.format(Locale.ROOT, "    %s: %s%n", part.getKey(), part.getValue().stream()
                                .map(k -> printable(k.topic()) + "-" + k.partition()
                                        + (k.offset() == Long.MIN_VALUE ? "" : " from " + kafkaOffset(k.offset())))
                                .collect(java.util.stream.Collectors.joining(", "))));
                    }
                }
            }
            op.kafkaOffsets().forEach((state, offsets) -> {
                if (state.equals("SourceReaderState")) return;
                sb.append(String.format(Locale.ROOT, "  Kafka offsets in %s:%n", state));
                int shown = 0;
                for (InspectReport.KafkaOffset k : offsets) {
                    if (shown++ == 20) {
                        sb.append(String.format(Locale.ROOT, "    ... %d more (see --json)%n", offsets.size() - 20));
                        break;
                    }
                    sb.append(String.format(Locale.ROOT, "    %s-%d @ %d%s%n", k.topic(), k.partition(), k.offset(),
                            k.count() > 1 ? String.format(Locale.ROOT, "  (x%,d)", k.count()) : ""));
                }
            });
            String lookAlike = op.kafkaLegacyLookAlike();
            if (lookAlike != null) {
                sb.append(String.format(Locale.ROOT, "  %s is not Kafka's (elements %s, not FlinkKafkaConsumer's %s):"
                        + " no Kafka offsets shown%n", InspectReport.KAFKA_LEGACY_STATE,
                        lookAlike.isEmpty() ? "not read" : printable(lookAlike), InspectReport.KAFKA_LEGACY_ELEMENT_TYPE));
            }
            long keyed = op.keyedStateBytes();
            long keyedHandles = op.subtasks().stream().filter(s -> s.managedKeyedState() != null || s.rawKeyedState() != null).count();
            if (keyedHandles > 0) {
                String kind = op.subtasks().stream().filter(s -> s.managedKeyedState() != null)
                        .map(s -> s.managedKeyedState().kind()).findFirst().orElse("raw keyed state");
                sb.append(String.format(Locale.ROOT, "  keyed state: %s in %d subtasks, %s%n", kind, keyedHandles, bytes(keyed)));
            }
            long channel = op.subtasks().stream().mapToLong(InspectReport.SubtaskInfo::channelStateBytes).sum();
            int channels = op.subtasks().stream().mapToInt(s -> s.inputChannelHandles() + s.outputChannelHandles()).sum();
            if (channels > 0) {
                sb.append(String.format(Locale.ROOT, "  channel state: %d handles, %s%n", channels, bytes(channel)));
            }
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    if (!h.streamError().isEmpty()) {
                        sb.append(String.format(Locale.ROOT, "  subtask %d: stream not read: %s%n", s.index(), h.streamError()));
                    }
                }
                if (!subtasks) continue;
                sb.append(String.format(Locale.ROOT, "  subtask %d%n", s.index()));
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    sb.append(String.format(Locale.ROOT, "    %s -> %s %s (%s)%s%n", h.kind(), h.delegateKind(),
                            h.inline() ? "inline" : h.location(), bytes(h.delegateSize()),
                            h.proxyVersion() > 0 ? ", header proxy v" + h.proxyVersion() + (h.compressed() ? ", snappy" : "") : ""));
                    for (InspectReport.StateInfo st : h.states()) {
                        sb.append(String.format(Locale.ROOT, "      %-38s %-16s %,10d elements %12s  %s%n", printable(st.name()), st.mode(),
                                st.elements(), st.bytes() < 0 ? "?" : bytes(st.bytes()), st.serializer()));
                    }
                }
                if (s.managedKeyedState() != null) {
                    sb.append(String.format(Locale.ROOT, "    keyed %s (%s)%n", s.managedKeyedState().kind(), bytes(s.managedKeyedState().stateSize())));
                }
                if (s.inputChannelHandles() + s.outputChannelHandles() > 0) {
                    sb.append(String.format(Locale.ROOT, "    channel state: %d input, %d output handles, %s%n",
                            s.inputChannelHandles(), s.outputChannelHandles(), bytes(s.channelStateBytes())));
                }
            }
        }
        sb.append(String.format(Locale.ROOT, "%ntotal: %d operators, operator state %s, keyed state %s, channel state %s%n",
                r.operators().size(), bytes(r.totalOperatorStateBytes()), bytes(r.totalKeyedStateBytes()), bytes(r.totalChannelStateBytes())));
        return sb.toString();
    }

    /**
     * Writes {@code text} to a new file, as every file the tool creates: never over an existing path
     * or through a symbolic link (exit 2, naming the {@code option} that asked for it).
     */
    static void writeNewFile(Path file, String option, String text) throws CheckpointSurgeonException {
        java.io.OutputStream o;
        try {
            o = java.nio.file.Files.newOutputStream(file, java.nio.file.StandardOpenOption.CREATE_NEW,
                    java.nio.file.StandardOpenOption.WRITE, java.nio.file.LinkOption.NOFOLLOW_LINKS);
        } catch (java.io.IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e
                    + " (" + option + " writes a new file, never over an existing one)", e);
        }
        try (o) {
            o.write(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (java.io.IOException e) {
            // The file is this run's own: a partial one is removed (disk full, ...).
            try {
                java.nio.file.Files.deleteIfExists(file);
            } catch (java.io.IOException ignored) {
                // reported below
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": " + e
                    + " (" + option + "; the partial file was removed)", e);
        }
    }

    /** The command line of a doctor's remedy for the checkpoint at {@code path}. */
    static String command(CheckpointSurgeon.Remedy r, String path) {
        String p = quote(path);
        switch (r.action()) {
            case "inspect":
                return "checkpoint-surgeon inspect " + p;
            case "inspect-subtasks":
                return "checkpoint-surgeon inspect " + p + " --subtasks";
            case "kafka migrate-legacy":
                // the connector version comes from the class path, else --connector-version is asked for
                return "checkpoint-surgeon kafka migrate-legacy " + p + " --operator-id " + r.operatorId()
                        + " --apply --output " + quote(path + "-migrated");
            default:
                return "checkpoint-surgeon " + r.action() + " " + p + " --operator-id " + r.operatorId() + " --state "
                        + quote(r.state()) + " --apply --output "
                        + quote(path + (r.action().equals("dedupe-union") ? "-deduped" : "-repaired"));
        }
    }

    /**
     * The command line of a doctor's remedy for HA files under {@code path} (the HA dir or file given):
     * {@code ha repair} of the same surgery with --apply, or {@code ha list}, with {@code haOptions}.
     */
    static String haCommand(CheckpointSurgeon.Remedy r, String path, String haOptions) {
        if (!r.haRepair()) return command(r, path);
        if (r.action().equals("ha list")) return "checkpoint-surgeon ha list " + quote(path) + haOptions;
        return "checkpoint-surgeon ha repair " + quote(path) + " --operator-id " + r.operatorId() + " --state "
                + quote(r.state()) + (r.action().equals("dedupe-union") ? " --dedupe" : "") + " --apply" + haOptions;
    }

    /** A name on one line: control characters (a tab or newline in a state name) as Java escapes. */
    static String printable(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            if (c == '\t') b.append("\\t");
            else if (c == '\n') b.append("\\n");
            else if (c == '\r') b.append("\\r");
            else if (Character.isISOControl(c)) b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }

    /** A word for a POSIX shell, quoted when it needs to be. */
    static String quote(String s) {
        return s.matches("[A-Za-z0-9_./:@%+=,-]+") ? s : "'" + s.replace("'", "'\\''") + "'";
    }

    static String bytes(long n) {
        return InspectReport.formatBytes(n);
    }
}
