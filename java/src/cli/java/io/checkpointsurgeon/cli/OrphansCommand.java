package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.OrphanReport;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "orphans", mixinStandardHelpOptions = true,
        description = "List the files of checkpoint storage (shared/, taskowned/, chk-*, savepoint-*), local or on a"
                + " Flink path (s3://bucket/prefix, ...), that no"
                + " _metadata under any given directory references, with sizes and the total; each kept file names"
                + " one checkpoint that references it. A file-merging file any segment of which is referenced is kept"
                + " whole. --delete deletes the ones older than --older-than after a second, fresh scan, re-checking"
                + " each file right before, and logs every deletion to a new file. Exit 0: no orphans (or all"
                + " deleted); 4: orphans found; 2: --delete refused. On a Flink path each directory is one listing"
                + " request (on S3 a prefix listing), each deletion a status request then a delete request, at most"
                + " --list-parallelism at once.")
final class OrphansCommand extends BaseCommand {
    @Parameters(arity = "1..*", paramLabel = "BASE_DIR", description = "a job or base checkpoint directory, a savepoint"
            + " directory: local, or a Flink path (all of one kind)")
    List<String> roots;

    @Option(names = "--also-referenced-by", paramLabel = "PATH", arity = "1..*", description = "more directories whose"
            + " _metadata files protect what they reference (a job restored in NO_CLAIM or LEGACY mode from these"
            + " checkpoints); their own files are not listed")
    List<String> also = new ArrayList<>();

    @Option(names = "--older-than", paramLabel = "DURATION", description = "only files older than this (90m, 2h,"
            + " 7d); --delete needs it, at least 1h, and longer than the jobs' checkpoint timeout"
            + " (execution.checkpointing.timeout, default 10m): what protects the files of a checkpoint or savepoint"
            + " in progress is that they are younger")
    String olderThan;

    @Option(names = "--delete", description = "delete the orphans (needs --older-than)")
    boolean delete;

    @Option(names = "--deletion-log", paramLabel = "FILE", description = "with --delete: the log it creates (never"
            + " overwrites; default: ./checkpoint-surgeon-orphans-<UTC time>.log)")
    Path log;

    @Option(names = "--unsafe-allow-young", description = "UNSAFE, for tests: let --older-than go below 1h; a file"
            + " younger than an hour may belong to a checkpoint a running job is writing")
    boolean allowYoung;

    @Option(names = "--list-parallelism", paramLabel = "N", description = "on a Flink path: requests at once (listings,"
            + " _metadata reads, deletes), 1 to 256; default 8")
    int parallelism = 8;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @CommandLine.Mixin
    JsonMixin json = new JsonMixin();

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (parallelism < 1 || parallelism > 256) throw usage("--list-parallelism: 1 to 256, found " + parallelism);
        for (String p : roots) fs.apply(p);
        for (String p : also) fs.apply(p);
        if (delete && olderThan == null) throw usage("--delete needs --older-than (at least 1h)");
        if (!delete && (log != null || allowYoung)) throw usage("--deletion-log and --unsafe-allow-young go with --delete");
        Duration age = olderThan == null ? Duration.ZERO : parse(olderThan);
        OrphanReport r;
        if (delete) {
            Path logFile = log != null ? log
                    : Path.of("checkpoint-surgeon-orphans-" + Instant.now().toString().replace(':', '-') + ".log");
            r = allowYoung ? CheckpointSurgeon.deleteOrphansAtUnsafeAge(roots, also, age, logFile, parallelism)
                    : CheckpointSurgeon.deleteOrphansAt(roots, also, age, logFile, parallelism);
        } else {
            r = CheckpointSurgeon.orphansAt(roots, also, age, parallelism);
        }
        PrintWriter out = out();
        out.print(json.json ? CliSpelling.json(r) : TextRenderer.orphans(r, delete));
        out.flush();
        return delete ? Cli.OK : r.orphans().isEmpty() ? Cli.OK : Cli.FINDINGS;
    }

    private Duration parse(String text) {
        Matcher m = Pattern.compile("(\\d{1,9})(ms|s|m|h|d)").matcher(text.trim());
        if (!m.matches()) throw usage("--older-than: a duration such as 90m, 2h or 7d, found '" + text + "'");
        long n = Long.parseLong(m.group(1));
        switch (m.group(2)) {
            case "ms":
                return Duration.ofMillis(n);
            case "s":
                return Duration.ofSeconds(n);
            case "m":
                return Duration.ofMinutes(n);
            case "h":
                return Duration.ofHours(n);
            default:
                return Duration.ofDays(n);
        }
    }
}
