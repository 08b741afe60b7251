package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import java.io.PrintWriter;
import java.nio.file.Path;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "watch", mixinStandardHelpOptions = true,
        description = "Follow the checkpoints of running jobs (Flink's REST API or a checkpoint directory): the doctor"
                + " on every new one, Prometheus metrics per job, operator and state, a hook on new findings."
                + " Reads checkpoints only.")
final class WatchCommand extends BaseCommand {
    @Option(names = "--rest", paramLabel = "URL", description = "Flink's REST address, e.g. http://jobmanager:8081:"
            + " the latest completed checkpoint of every job it lists")
    String rest;

    @Option(names = "--dir", paramLabel = "DIR", description = "a checkpoint base directory (<dir>/<job id>/chk-<n>)"
            + " or one job's checkpoint directory")
    Path dir;

    @Option(names = "--metrics-port", paramLabel = "PORT", description = "serve Prometheus metrics at"
            + " http://HOST:PORT/metrics (0: any free port, printed)")
    Integer metricsPort;

    @Option(names = "--metrics-host", paramLabel = "HOST", description = "the address to serve them on (default"
            + " 127.0.0.1: this host only; 0.0.0.0 for every interface, see README on exposing them)")
    String metricsHost = "127.0.0.1";

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
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Override
    public Integer call() throws Exception {
        if ((rest == null) == (dir == null)) {
            throw usage("give exactly one of --rest and --dir");
        }
        if (rest != null) fs.configure(); // the REST API may name checkpoints on any file system
        PrintWriter out = out();
        try (Watch w = new Watch(rest, dir, onFinding, hookTimeout * 1000,
                once ? err() : out)) {
            if (metricsPort != null) {
                int port = w.serveMetrics(metricsHost, metricsPort);
                out.println(TextRenderer.metricsAt(metricsHost, port));
                out.flush();
            }
            if (once) {
                w.poll();
                out.print(w.metrics());
                out.flush();
                return w.hasFinding(CheckpointSurgeon.Finding.Severity.ERROR) ? Cli.FINDINGS : Cli.OK;
            }
            w.run(Math.max(10, (long) (interval * 1000)));
            return Cli.OK;
        }
    }
}
