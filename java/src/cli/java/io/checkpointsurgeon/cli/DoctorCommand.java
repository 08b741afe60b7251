package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.internal.Json;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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

    @Override
    public Integer call() throws CheckpointSurgeonException {
        if (!failOn.equalsIgnoreCase("error") && !failOn.equalsIgnoreCase("warning")) {
            throw usage("--fail-on must be error or warning, not " + failOn);
        }
        boolean examineKeyed = keyed || expectStates != null || !jobJars.isEmpty();
        List<String> registered = expectStates == null ? null : expectedStates(expectStates);
        // per checkpoint or HA file: its path and findings
        List<Map.Entry<String, List<CheckpointSurgeon.Finding>>> results = new ArrayList<>();
        if (CheckpointSurgeon.isFlinkPath(pathArg)) {
            fs.apply(pathArg);
            InspectReport r = CheckpointSurgeon.inspect(pathArg);
            List<CheckpointSurgeon.Finding> found = new ArrayList<>(CheckpointSurgeon.doctor(r, pathArg));
            if (examineKeyed) found.addAll(keyedFindings(r, registered));
            results.add(Map.entry(pathArg, found));
        } else {
            Path path = CheckpointSurgeon.localPath(pathArg);
            boolean ha = Files.isDirectory(path)
                    ? !Files.exists(path.resolve("_metadata")) && !CheckpointSurgeon.haFiles(path).isEmpty()
                    : path.getFileName().toString().startsWith("completedCheckpoint");
            if (ha && examineKeyed) {
                throw usage("--keyed, --expect-states and --job-jar read a checkpoint's keyed state, not an HA file:"
                        + " give the checkpoint directory the HA file names (ha list shows it)");
            }
            if (ha) {
                List<Path> files = CheckpointSurgeon.haFiles(path);
                for (int i = 0; i < files.size(); i++) {
                    err().printf("[%d/%d] %s%n", i + 1, files.size(), files.get(i));
                    results.add(Map.entry(files.get(i).toString(), CheckpointSurgeon.doctorHa(files.get(i))));
                }
            } else {
                InspectReport r = Prefetch.inspect(pathArg);
                List<CheckpointSurgeon.Finding> found = new ArrayList<>(CheckpointSurgeon.doctor(r, pathArg));
                if (examineKeyed) found.addAll(keyedFindings(r, registered));
                results.add(Map.entry(path.toString(), found));
            }
        }
        PrintWriter out = out();
        if (json) {
            out.print(Json.write(json(results)));
        } else {
            for (Map.Entry<String, List<CheckpointSurgeon.Finding>> r : results) {
                out.print(TextRenderer.doctor(r.getKey(), r.getValue()));
            }
        }
        out.flush();
        return exitCode(results);
    }

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
    private static List<Map<String, Object>> json(List<Map.Entry<String, List<CheckpointSurgeon.Finding>>> results) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map.Entry<String, List<CheckpointSurgeon.Finding>> e : results) {
            String path = e.getKey();
            List<Map<String, Object>> problems = new ArrayList<>();
            for (CheckpointSurgeon.Finding f : e.getValue()) {
                List<String> alternatives = new ArrayList<>();
                for (CheckpointSurgeon.Remedy r : f.alternatives()) alternatives.add(TextRenderer.command(r, path));
                Map<String, Object> p = new LinkedHashMap<>();
                p.put("severity", f.severity());
                p.put("code", f.code());
                p.put("message", f.message());
                p.put("fix", TextRenderer.command(f.fix(), path));
                p.put("alternatives", alternatives);
                problems.add(p);
            }
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("path", path);
            r.put("findings", problems);
            out.add(r);
        }
        return out;
    }

    /** 4 when a finding at or above --fail-on was found, else 0. */
    private int exitCode(List<Map.Entry<String, List<CheckpointSurgeon.Finding>>> results) {
        boolean warnings = failOn.equalsIgnoreCase("warning");
        for (Map.Entry<String, List<CheckpointSurgeon.Finding>> r : results) {
            for (CheckpointSurgeon.Finding f : r.getValue()) {
                if (f.severity() == CheckpointSurgeon.Finding.Severity.ERROR || warnings) return Cli.FINDINGS;
            }
        }
        return Cli.OK;
    }
}
