package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Find what is wrong with a checkpoint, savepoint or HA dir, and print the command that fixes it.")
final class DoctorCommand extends BaseCommand {
    @Parameters(index = "0", paramLabel = "PATH", description = "a _metadata file, checkpoint/savepoint dir, or HA dir/file;"
            + " checkpoints may be Flink paths such as s3://...")
    String pathArg;

    @CommandLine.Mixin
    FlinkFileSystemMixin fs = new FlinkFileSystemMixin();

    @Option(names = "--json", description = "print the findings as JSON")
    boolean json;

    @Option(names = "--fail-on", paramLabel = "LEVEL", description = "exit 4 when a finding of this severity or"
            + " higher is found: error (default) or warning")
    String failOn = "error";

    @Option(names = "--keyed", description = "also examine the keyed state (reads its files, see inspect --keyed):"
            + " the keyed state with the largest share of the checkpoint that has no TTL")
    boolean keyed;

    @Option(names = "--expect-states", paramLabel = "FILE", description = "the keyed states the job registers, one per"
            + " line: NAME (for every operator) or UID/NAME (one operator; an operator id works too), '#' comments;"
            + " every other keyed state in the checkpoint is reported as stale (implies --keyed)")
    Path expectStates;

    @Option(names = "--job-jar", paramLabel = "JAR", description = "the job's jar (repeatable): a class that a keyed"
            + " state's serializer snapshot names (a POJO, Kryo's type, the snapshot class) and that these jars (with"
            + " this JVM's class path) cannot load is reported, as a restore would fail on it; classes are loaded,"
            + " never initialized (implies --keyed)")
    List<Path> jobJars = new ArrayList<>();

    @Option(names = "--zookeeper-quorum", paramLabel = "HOSTS", description = "HA dir: the cluster's ZooKeeper, for the"
            + " printed `ha repair` fix (its --apply then checks that no JobManager holds the leadership)")
    String zookeeperQuorum;

    @Option(names = "--zookeeper-root", paramLabel = "PATH", description = "HA dir: high-availability.zookeeper.path.root"
            + " for the printed fix, when not /flink")
    String zookeeperRoot;

    @CommandLine.Mixin
    KubernetesMixin k8s = new KubernetesMixin();

    /** One checkpoint's or HA file's findings, and how their remedies are printed. */
    private static final class Result {
        final String path;
        final List<CheckpointSurgeon.Finding> findings;
        final Function<CheckpointSurgeon.Remedy, String> command;

        Result(String path, List<CheckpointSurgeon.Finding> findings, Function<CheckpointSurgeon.Remedy, String> command) {
            this.path = path;
            this.findings = findings;
            this.command = command;
        }
    }

    /** The HA options the printed `ha repair` (or `ha list`) repeats, as given to doctor. */
    private String haOptions(boolean repair) {
        StringBuilder b = new StringBuilder();
        if (zookeeperQuorum != null && repair) {
            b.append(" --zookeeper-quorum ").append(TextRenderer.quote(zookeeperQuorum));
            if (zookeeperRoot != null) b.append(" --zookeeper-root ").append(TextRenderer.quote(zookeeperRoot));
        }
        if (k8s.kubernetes) b.append(" --kubernetes");
        if (k8s.clusterId != null && (k8s.kubernetes || zookeeperQuorum != null && repair)) {
            b.append(" --cluster-id ").append(TextRenderer.quote(k8s.clusterId));
        }
        if (k8s.namespace != null) b.append(" --namespace ").append(TextRenderer.quote(k8s.namespace));
        if (k8s.kubeconfig != null) b.append(" --kubeconfig ").append(TextRenderer.quote(k8s.kubeconfig.toString()));
        return b.toString();
    }

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (!failOn.equalsIgnoreCase("error") && !failOn.equalsIgnoreCase("warning")) {
            throw usage("--fail-on must be error or warning, not " + failOn);
        }
        if (zookeeperQuorum != null && k8s.kubernetes) throw usage("--kubernetes or --zookeeper-quorum, not both");
        if (k8s.kubernetes && k8s.clusterId == null) throw usage("--kubernetes needs --cluster-id (kubernetes.cluster-id)");
        boolean examineKeyed = keyed || expectStates != null || !jobJars.isEmpty();
        List<String> registered = expectStates == null ? null : expectedStates(expectStates);
        List<Result> results = new ArrayList<>();
        if (CheckpointSurgeon.isFlinkPath(pathArg)) {
            fs.apply(pathArg);
            InspectReport r = CheckpointSurgeon.inspect(pathArg);
            List<CheckpointSurgeon.Finding> found = new ArrayList<>(CheckpointSurgeon.doctor(r, pathArg));
            if (examineKeyed) found.addAll(keyedFindings(r, registered));
            results.add(new Result(pathArg, found, f -> TextRenderer.command(f, pathArg)));
        } else {
            Path path = CheckpointSurgeon.localPath(pathArg);
            boolean ha = CheckpointSurgeon.isHaPath(path);
            if (ha && examineKeyed) {
                throw usage("--keyed, --expect-states and --job-jar read a checkpoint's keyed state, not an HA file:"
                        + " give the checkpoint directory the HA file names (ha list shows it)");
            }
            if (ha) {
                // the fix of an HA file is one `ha repair` of the HA dir (or file) given, all its files at once
                Function<CheckpointSurgeon.Remedy, String> command = r -> TextRenderer.haCommand(r, path.toString(),
                        haOptions(r.action() != CheckpointSurgeon.Remedy.Action.LIST_HA));
                for (Map.Entry<Path, List<CheckpointSurgeon.Finding>> e
                        : CheckpointSurgeon.doctorHa(CheckpointSurgeon.haFiles(path)).entrySet()) {
                    results.add(new Result(e.getKey().toString(), e.getValue(), command));
                }
            } else if (!leftoversOnly(path).isEmpty()) {
                // the --output of a repair killed before its switch: what it left, and the command that removes it
                String p = path.toString();
                results.add(new Result(p, leftoversOnly(path), f -> TextRenderer.command(f, p)));
            } else {
                String p = path.toString();
                // read ahead: the checks of the checkpoint's files run while the other core reads it
                Prefetch.Ahead ahead = Prefetch.ahead(pathArg, true);
                InspectReport r = ahead == null ? CheckpointSurgeon.inspect(pathArg) : null;
                List<CheckpointSurgeon.Finding> found = new ArrayList<>(
                        r == null ? CheckpointSurgeon.doctor(ahead, pathArg) : CheckpointSurgeon.doctor(r, pathArg));
                if (examineKeyed) found.addAll(keyedFindings(r == null ? ahead.take() : r, registered));
                results.add(new Result(p, found, f -> TextRenderer.command(f, p)));
            }
        }
        PrintWriter out = out();
        if (json) {
            out.print(CliSpelling.json(json(results)));
        } else {
            Set<String> shown = new HashSet<>();
            for (Result r : results) out.print(TextRenderer.doctor(r.path, r.findings, r.command, shown));
        }
        out.flush();
        return exitCode(results);
    }

    /** What a killed repair left in a directory without {@code _metadata} (read once per run). */
    private List<CheckpointSurgeon.Finding> leftoversOnly(Path path) {
        if (leftoversOnly == null) {
            leftoversOnly = Files.isDirectory(path) && !Files.exists(path.resolve("_metadata"))
                    ? CheckpointSurgeon.doctorLeftovers(path) : List.of();
        }
        return leftoversOnly;
    }

    private List<CheckpointSurgeon.Finding> leftoversOnly;

    /** The keyed findings of the checkpoint at {@link #pathArg}, whose report is {@code r}. */
    private List<CheckpointSurgeon.Finding> keyedFindings(InspectReport r, List<String> registered)
            throws CheckpointSurgeonException {
        ClassLoader classPath = null;
        if (!jobJars.isEmpty()) {
            List<URL> urls = new ArrayList<>();
            for (Path j : jobJars) {
                if (!Files.isRegularFile(j)) throw usage("--job-jar " + j + ": no such file");
                try {
                    urls.add(j.toUri().toURL());
                } catch (MalformedURLException e) {
                    throw usage("--job-jar " + j + ": " + e.getMessage());
                }
            }
            classPath = new URLClassLoader(urls.toArray(new URL[0]), DoctorCommand.class.getClassLoader());
        }
        return CheckpointSurgeon.doctorKeyed(r, CheckpointSurgeon.inspectKeyed(pathArg), registered, classPath);
    }

    /** The lines of {@code --expect-states}: a state (or uid/state) each, without blank lines and '#' comments. */
    private List<String> expectedStates(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw usage("--expect-states " + file + ": " + e);
        }
        List<String> out = new ArrayList<>();
        for (String l : lines) {
            String t = l.strip();
            if (!t.isEmpty() && !t.startsWith("#")) out.add(t);
        }
        return out;
    }

    /** The JSON of the findings: per path, each finding with its remedies as command lines. */
    private static List<Map<String, Object>> json(List<Result> results) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Result e : results) {
            List<Map<String, Object>> problems = new ArrayList<>();
            for (CheckpointSurgeon.Finding f : e.findings) {
                List<String> alternatives = new ArrayList<>();
                for (CheckpointSurgeon.Remedy r : f.alternatives()) alternatives.add(e.command.apply(r));
                Map<String, Object> p = new LinkedHashMap<>();
                p.put("severity", f.severity());
                p.put("code", f.code().name());
                p.put("message", CliSpelling.text(f.typedMessage()));
                p.put("fix", e.command.apply(f.fix()));
                p.put("alternatives", alternatives);
                problems.add(p);
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("path", e.path);
            r.put("findings", problems);
            out.add(r);
        }
        return out;
    }

    /** 4 when a finding at or above --fail-on was found, else 0. */
    private int exitCode(List<Result> results) {
        boolean warnings = failOn.equalsIgnoreCase("warning");
        for (Result r : results) {
            for (CheckpointSurgeon.Finding f : r.findings) {
                if (f.severity() == CheckpointSurgeon.Finding.Severity.ERROR || warnings) return Cli.FINDINGS;
            }
        }
        return Cli.OK;
    }
}
