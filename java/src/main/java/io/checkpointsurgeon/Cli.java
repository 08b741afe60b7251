package io.checkpointsurgeon;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * The command line. Exit codes: 0 ok, 1 usage error, 2 invalid input or validation failure,
 * 3 outcome unknown (an unexpected failure).
 */
@Command(
        name = "checkpoint-surgeon",
        mixinStandardHelpOptions = true,
        version = "checkpoint-surgeon 0.1.0",
        description = "Inspect and repair Apache Flink checkpoints, savepoints and HA files.",
        subcommands = {Cli.Inspect.class, CommandLine.HelpCommand.class})
public final class Cli {
    static final int OK = 0, USAGE = 1, INVALID = 2, UNKNOWN = 3;

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String... args) {
        CommandLine cl = new CommandLine(new Cli());
        cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof CheckpointSurgeonException cse) {
                cmd.getErr().println("error [" + cse.code() + "]: " + cse.getMessage());
                return INVALID;
            }
            cmd.getErr().println("unexpected failure: " + e);
            e.printStackTrace(cmd.getErr());
            return UNKNOWN;
        });
        cl.setParameterExceptionHandler((e, a) -> {
            e.getCommandLine().getErr().println("error: " + e.getMessage());
            e.getCommandLine().usage(e.getCommandLine().getErr());
            return USAGE;
        });
        return cl.execute(args);
    }

    @Command(name = "inspect", mixinStandardHelpOptions = true,
            description = "Show every operator of a checkpoint or savepoint, its states, and their sizes.")
    static final class Inspect implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file or the checkpoint/savepoint directory")
        Path path;

        @Option(names = "--json", description = "print the full report as JSON")
        boolean json;

        @Option(names = "--subtasks", description = "also list every subtask's handles")
        boolean subtasks;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws CheckpointSurgeonException {
            InspectReport r = CheckpointSurgeon.inspect(path);
            PrintWriter out = spec.commandLine().getOut();
            out.print(json ? r.toJson() : table(r, subtasks));
            out.flush();
            return OK;
        }
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
                            t.name(), t.mode(), t.elements(), t.bytes() < 0 ? "?" : String.format(Locale.ROOT, "%,d", t.bytes()), t.handles()));
                }
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
                        sb.append(String.format(Locale.ROOT, "      %-38s %-16s %,10d elements %12s  %s%n", st.name(), st.mode(),
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

    static String bytes(long n) {
        if (n < 1024) return n + " B";
        if (n < 1024 * 1024) return String.format(Locale.ROOT, "%,d B (%.1f KiB)", n, n / 1024.0);
        return String.format(Locale.ROOT, "%,d B (%.1f MiB)", n, n / (1024.0 * 1024));
    }
}
