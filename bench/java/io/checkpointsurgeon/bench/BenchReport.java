package io.checkpointsurgeon.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Writes BENCHMARKS.md and the log-log SVG chart from the files bench/run.sh leaves in its
 * directory: results.tsv (one row per measured process), variants.tsv (the generated inputs) and
 * env.txt (machine, command, load). bench/notes.md, when present, is appended as is (the
 * hand-written analysis).
 *
 * <pre>
 * BenchReport BENCH_DIR BENCHMARKS_MD CHART_SVG
 * </pre>
 */
public final class BenchReport {
    private BenchReport() {}

    record Row(String variant, String layout, long inputBytes, String route, String run, double wall, long rssKb,
            int rc, double load, String note) {}

    record Variant(String name, String layout, long bytes, int parallelism, long elements, long streamBytes,
            double generateS) {}

    static final List<String> ROUTES = List.of("cli-purge", "cli-metadata-only", "rust-purge", "bytes-purge",
            "bytes-metadata-only", "flink", "cp");

    static final Map<String, String> ROUTE_TEXT = Map.of(
            "cli-purge", "native purge, CLI on the path",
            "cli-metadata-only", "native --metadata-only, CLI on the path",
            "rust-purge", "native purge, Rust only (no JVM)",
            "bytes-purge", "native purge, Java API on a byte[]",
            "bytes-metadata-only", "native --metadata-only, Java API on a byte[]",
            "flink", "Flink's Java route (load, edit, store)",
            "cp", "cp of _metadata (physical floor)");

    static final Map<String, String> COLORS = Map.of(
            "cli-purge", "#d62728", "cli-metadata-only", "#ff7f0e", "rust-purge", "#8c564b",
            "bytes-purge", "#9467bd", "bytes-metadata-only", "#e377c2", "flink", "#1f77b4", "cp", "#2ca02c");

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args[0]);
        Path md = Path.of(args[1]);
        Path svg = Path.of(args[2]);
        List<Row> rows = new ArrayList<>();
        List<String> lines = Files.readAllLines(dir.resolve("results.tsv"));
        for (String l : lines.subList(1, lines.size())) {
            String[] f = l.split("\t", -1);
            rows.add(new Row(f[0], f[1], Long.parseLong(f[2]), f[3], f[4], Double.parseDouble(f[5]),
                    Long.parseLong(f[6]), Integer.parseInt(f[7]), Double.parseDouble(f[8]),
                    f.length > 9 ? f[9].trim() : ""));
        }
        Map<String, Variant> variants = new LinkedHashMap<>();
        lines = Files.readAllLines(dir.resolve("variants.tsv"));
        for (String l : lines.subList(1, lines.size())) {
            String[] f = l.split("\t", -1);
            variants.put(f[0], new Variant(f[0], f[1], Long.parseLong(f[2]), Integer.parseInt(f[3]),
                    Long.parseLong(f[4]), Long.parseLong(f[5]), Double.parseDouble(f[6])));
        }
        Map<String, String> env = new LinkedHashMap<>();
        for (String l : Files.readAllLines(dir.resolve("env.txt"))) {
            int i = l.indexOf(": ");
            if (i > 0) {
                env.put(l.substring(0, i), l.substring(i + 2));
            }
        }
        Path notes = md.resolveSibling("bench").resolve("notes.md");
        // bench/inspect.sh's section (between its markers) is kept as it was.
        String kept = "";
        if (Files.exists(md)) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?s)<!-- begin inspect bench.*?<!-- end inspect bench -->")
                    .matcher(Files.readString(md));
            if (m.find()) kept = "\n" + m.group() + "\n";
        }
        Files.writeString(md, markdown(rows, variants, env, Files.exists(notes) ? Files.readString(notes) : "") + kept);
        Files.createDirectories(svg.getParent());
        Files.writeString(svg, chart(rows, variants));
    }

    // ---- statistics -----------------------------------------------------------------------------

    record Stats(int n, double min, double median, double max, long rssMedianKb, long rssMaxKb, int failures,
            String note) {}

    static Optional<Stats> stats(List<Row> rows, String variant, String route) {
        List<Row> all = rows.stream().filter(r -> r.variant.equals(variant) && r.route.equals(route)).toList();
        if (all.isEmpty()) {
            return Optional.empty();
        }
        List<Row> ok = all.stream().filter(r -> r.rc == 0).toList();
        String note = all.stream().filter(r -> r.rc != 0).map(Row::note).findFirst().orElse("");
        if (ok.isEmpty()) {
            return Optional.of(new Stats(0, Double.NaN, Double.NaN, Double.NaN, 0, 0, all.size(), note));
        }
        double[] w = ok.stream().mapToDouble(Row::wall).sorted().toArray();
        long[] m = ok.stream().mapToLong(Row::rssKb).sorted().toArray();
        return Optional.of(new Stats(w.length, w[0], median(w), w[w.length - 1], m[m.length / 2],
                m[m.length - 1], all.size() - ok.size(), note));
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Median of a {@code key=value} number in the notes of a route's successful runs. */
    static Optional<Double> noteMedian(List<Row> rows, String variant, String route, String key) {
        Pattern p = Pattern.compile("\\b" + key + "=([0-9.]+)");
        double[] v = rows.stream().filter(r -> r.variant.equals(variant) && r.route.equals(route) && r.rc == 0)
                .map(r -> p.matcher(r.note)).filter(Matcher::find).mapToDouble(m -> Double.parseDouble(m.group(1)))
                .sorted().toArray();
        return v.length == 0 ? Optional.empty() : Optional.of(median(v));
    }

    // ---- markdown -------------------------------------------------------------------------------

    static String markdown(List<Row> rows, Map<String, Variant> variants, Map<String, String> env, String notes) {
        StringBuilder b = new StringBuilder();
        b.append("# Benchmarks: native surgery vs Flink's own Java route (issue 7)\n\n");
        b.append("Generated by `bench/run.sh` (do not edit by hand; the analysis at the end comes from "
                + "`bench/notes.md`). Command:\n\n```\n").append(env.getOrDefault("command", "bash bench/run.sh"))
                .append("\n```\n\n");
        b.append("The task on every input: remove the stale union list state `topic-partition-offset-states` from "
                + "every subtask of the bloated operator. Every route runs on the same input in the same run, as a "
                + "fresh process; wall time is measured by the shell around the process (JVM start-up included), "
                + "peak RSS by `/usr/bin/time -v`. Inputs are in the page cache (read once before the runs); "
                + "outputs go to a fresh directory on the same disk and are deleted (and `sync`ed) after each run.\n\n");

        b.append("## Machine and load\n\n");
        for (String k : List.of("date", "cpu", "memory", "disk", "kernel", "java", "rustc")) {
            if (env.containsKey(k)) {
                b.append("- ").append(k).append(": ").append(env.get(k)).append('\n');
            }
        }
        double[] loads = rows.stream().mapToDouble(Row::load).sorted().toArray();
        if (loads.length > 0) {
            b.append(String.format(Locale.ROOT,
                    "- load (1-minute average when each measured process started): min %.2f, median %.2f, max %.2f "
                            + "(start of the run: %s; end: %s)%n",
                    loads[0], median(loads), loads[loads.length - 1], env.getOrDefault("load_start", "?"),
                    env.getOrDefault("load_end", "?")));
            if (loads[loads.length - 1] >= 1.0) {
                b.append("- **The machine was not idle**: other processes competed for its ")
                        .append(env.getOrDefault("cpu", "").replaceAll(".*\\((\\d+) cores\\).*", "$1"))
                        .append(" cores during part or all of the measurement, so absolute times are inflated and "
                                + "noisier than on an idle machine; the routes were interleaved run by run, so the "
                                + "ratios are fairer than the absolute numbers.\n");
            }
        }

        b.append("\n## Inputs\n\n");
        b.append("Written by `bench/java/.../GenerateCheckpoint.java` with Flink 1.20.3's own classes: one operator "
                + "(uid `kafka-source`, max parallelism 128) whose every subtask holds the whole stale UNION list "
                + "state (`Tuple2<String, Long>` elements, as the legacy Kafka consumer's) next to a SPLIT list "
                + "state `SourceReaderState`, plus a keyed state handle per subtask and the coordinator state. The "
                + "operator-state stream is a snapshot of Flink's `DefaultOperatorStateBackend`, shared by all "
                + "subtasks (one hard link per subtask); `_metadata` comes from `Checkpoints.storeCheckpointMetadata`.\n\n");
        b.append("| input | handles | `_metadata` | parallelism | union elements per subtask | stream per subtask | generation |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|\n");
        for (Variant v : variants.values()) {
            b.append("| ").append(v.name).append(" | ").append(layoutText(v.layout)).append(" | ")
                    .append(size(v.bytes)).append(" | ").append(v.parallelism).append(" | ")
                    .append(String.format(Locale.ROOT, "%,d", v.elements)).append(" | ")
                    .append(v.streamBytes == 0 ? "inline" : size(v.streamBytes)).append(" | ")
                    .append(String.format(Locale.ROOT, "%.1f s", v.generateS)).append(" |\n");
        }

        b.append("\n## Results\n\n");
        b.append("Wall time min / **median** / max over the runs, peak RSS median (max), and the time the process "
                + "itself reports for the work without JVM start-up (median; `rust-purge`: open+plan+apply, "
                + "`bytes-*`: read+surgery+write, `flink`: load+edit+store).\n\n");
        for (Variant v : variants.values()) {
            b.append("### ").append(v.name).append(" (").append(size(v.bytes)).append(")\n\n");
            b.append("| route | runs | wall min / median / max | peak RSS | RSS − input | in-process |\n");
            b.append("|---|---:|---|---:|---:|---:|\n");
            for (String route : ROUTES) {
                Optional<Stats> so = stats(rows, v.name, route);
                if (so.isEmpty()) {
                    continue;
                }
                Stats s = so.get();
                b.append("| ").append(route).append(" — ").append(ROUTE_TEXT.get(route)).append(" | ").append(s.n);
                if (s.failures > 0) {
                    b.append(" (+").append(s.failures).append(" failed)");
                }
                b.append(" | ");
                if (s.n == 0) {
                    b.append("**N/A**: ").append(s.note.isEmpty() ? "failed" : esc(s.note)).append(" | | | |\n");
                    continue;
                }
                b.append(String.format(Locale.ROOT, "%s / **%s** / %s", secs(s.min), secs(s.median), secs(s.max)))
                        .append(" | ").append(size(s.rssMedianKb * 1024)).append(s.rssMaxKb != s.rssMedianKb
                                ? " (" + size(s.rssMaxKb * 1024) + ")" : "")
                        .append(" | ").append(signedSize(s.rssMedianKb * 1024 - v.bytes)).append(" | ");
                String key = route.equals("cp") || route.startsWith("cli") ? null : "total_ms";
                if (key != null) {
                    noteMedian(rows, v.name, route, key).ifPresent(ms -> b.append(secs(ms / 1000)));
                }
                b.append(" |\n");
            }
            b.append('\n');
        }

        b.append("## Ratios (median wall time, whole process)\n\n");
        b.append("| input | `_metadata` | Flink ÷ native purge (CLI) | Flink ÷ native metadata-only (CLI) | "
                + "Flink ÷ native purge (Rust only) | native purge (CLI) ÷ cp | native metadata-only (CLI) ÷ cp | "
                + "native purge (Rust only) ÷ cp |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Variant v : variants.values()) {
            double f = med(rows, v.name, "flink");
            double p = med(rows, v.name, "cli-purge");
            double m = med(rows, v.name, "cli-metadata-only");
            double r = med(rows, v.name, "rust-purge");
            double c = med(rows, v.name, "cp");
            b.append("| ").append(v.name).append(" | ").append(size(v.bytes)).append(" | ").append(ratio(f, p))
                    .append(" | ").append(ratio(f, m)).append(" | ").append(ratio(f, r)).append(" | ")
                    .append(ratio(p, c)).append(" | ").append(ratio(m, c)).append(" | ").append(ratio(r, c))
                    .append(" |\n");
        }

        // Growth: exponent k of t ~ size^k between consecutive file-relative inputs.
        List<Variant> series = variants.values().stream().filter(v -> v.layout.equals("relative"))
                .sorted(Comparator.comparingLong(Variant::bytes)).toList();
        if (series.size() >= 2) {
            b.append("\n## Growth with input size (file-backed, relative handles)\n\n");
            b.append("Exponent k in wall ∝ size^k between consecutive inputs (1 = linear; below 1 the fixed cost, "
                    + "mostly JVM start-up, still dominates), from the medians.\n\n| route |");
            for (int i = 1; i < series.size(); i++) {
                b.append(' ').append(size(series.get(i - 1).bytes)).append(" → ").append(size(series.get(i).bytes))
                        .append(" |");
            }
            b.append("\n|---|").append("---:|".repeat(series.size() - 1)).append('\n');
            for (String route : ROUTES) {
                b.append("| ").append(route).append(" |");
                for (int i = 1; i < series.size(); i++) {
                    double a = med(rows, series.get(i - 1).name, route);
                    double c = med(rows, series.get(i).name, route);
                    double k = Math.log(c / a) / Math.log((double) series.get(i).bytes / series.get(i - 1).bytes);
                    b.append(' ').append(Double.isFinite(k) ? String.format(Locale.ROOT, "%.2f", k) : "–").append(" |");
                }
                b.append('\n');
            }
        }

        b.append("\n## Flink's heap: the smallest working -Xmx\n\n");
        b.append("Flink's route with -Xmx stepped down in multiples of the input size, stopping at the first failure.\n\n");
        b.append("| input | `_metadata` | attempts (wall, peak RSS) | smallest working -Xmx |\n|---|---:|---|---|\n");
        for (Variant v : variants.values()) {
            List<Row> ladder = rows.stream().filter(r -> r.variant.equals(v.name) && r.route.equals("flink-xmx"))
                    .toList();
            if (ladder.isEmpty()) {
                continue;
            }
            String attempts = ladder.stream().map(r -> r.run + ": " + (r.rc == 0
                    ? "ok (" + secs(r.wall) + ", " + size(r.rssKb * 1024) + ")"
                    : "**fails** (" + (r.rc == 4 ? "OutOfMemoryError" : esc(r.note.isEmpty() ? "exit " + r.rc
                            : r.note.length() > 80 ? r.note.substring(0, 80) + "…" : r.note)) + ")"))
                    .collect(Collectors.joining("; "));
            String smallest = ladder.stream().filter(r -> r.rc == 0).reduce((a, c) -> c).map(r -> r.run.replace("=", " = "))
                    .orElse("none of the ladder");
            if (ladder.get(ladder.size() - 1).rc == 0) {
                smallest = "≤ " + smallest + " (the ladder ended without a failure)";
            }
            b.append("| ").append(v.name).append(" | ").append(size(v.bytes)).append(" | ").append(attempts)
                    .append(" | ").append(smallest).append(" |\n");
        }

        b.append("\n## Targets of the issue\n\n");
        b.append("| input | ≥ 10× faster than Flink (≥ 100 MB) | within 2× of cp | native peak RSS < input + 64 MiB |\n");
        b.append("|---|---|---|---|\n");
        for (Variant v : variants.values()) {
            double f = med(rows, v.name, "flink");
            double p = med(rows, v.name, "cli-purge");
            double c = med(rows, v.name, "cp");
            Optional<Stats> ps = stats(rows, v.name, "cli-purge");
            String speed = v.bytes < 100_000_000L ? "(not a target below 100 MB: " + ratio(f, p) + ")"
                    : verdict(f / p >= 10, ratio(f, p));
            String floor = verdict(p / c <= 2, ratio(p, c) + " of cp");
            String rss = ps.filter(s -> s.n > 0).map(s -> verdict(s.rssMaxKb * 1024 < v.bytes + (64L << 20),
                    "input " + signedSize(s.rssMaxKb * 1024 - v.bytes))).orElse("–");
            b.append("| ").append(v.name).append(" | ").append(speed).append(" | ").append(floor).append(" | ")
                    .append(rss).append(" |\n");
        }
        b.append("\n(native = `cli-purge`, the command a user runs; RSS: the largest peak over its runs.)\n");

        b.append("\n## Chart\n\n![wall time vs input size, log-log](docs/bench-chart.svg)\n");
        if (!notes.isBlank()) {
            b.append("\n").append(notes.strip()).append('\n');
        }
        return b.toString();
    }

    static String verdict(boolean ok, String detail) {
        return (ok ? "met: " : "**missed**: ") + detail;
    }

    static double med(List<Row> rows, String variant, String route) {
        return stats(rows, variant, route).filter(s -> s.n > 0).map(Stats::median).orElse(Double.NaN);
    }

    static String ratio(double a, double b) {
        if (!Double.isFinite(a) || !Double.isFinite(b) || b <= 0) {
            return "–";
        }
        double r = a / b;
        return String.format(Locale.ROOT, r >= 10 ? "%.0f×" : "%.2f×", r);
    }

    static String layoutText(String layout) {
        return switch (layout) {
            case "relative" -> "files, relative";
            case "absolute" -> "files, absolute";
            default -> "inline (ByteStreamStateHandle)";
        };
    }

    static String secs(double s) {
        return s >= 10 ? String.format(Locale.ROOT, "%.1f s", s)
                : s >= 1 ? String.format(Locale.ROOT, "%.2f s", s)
                : String.format(Locale.ROOT, "%.0f ms", s * 1000);
    }

    static String size(long bytes) {
        double b = bytes;
        if (b >= 1L << 30) {
            return String.format(Locale.ROOT, "%.2f GiB", b / (1L << 30));
        }
        if (b >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", b / (1L << 20));
        }
        return String.format(Locale.ROOT, "%.0f KiB", b / 1024);
    }

    static String signedSize(long bytes) {
        return (bytes < 0 ? "− " : "+ ") + size(Math.abs(bytes));
    }

    static String esc(String s) {
        return s.replace("|", "\\|");
    }

    // ---- SVG ------------------------------------------------------------------------------------

    static String chart(List<Row> rows, Map<String, Variant> variants) {
        List<Variant> series = variants.values().stream().filter(v -> v.layout.equals("relative"))
                .sorted(Comparator.comparingLong(Variant::bytes)).toList();
        Map<String, TreeMap<Double, Double>> lines = new LinkedHashMap<>();
        for (String route : ROUTES) {
            TreeMap<Double, Double> pts = new TreeMap<>();
            for (Variant v : series) {
                double t = med(rows, v.name, route);
                if (Double.isFinite(t)) {
                    pts.put(v.bytes / 1048576.0, t);
                }
            }
            if (!pts.isEmpty()) {
                lines.put(route, pts);
            }
        }
        double xmin = Math.pow(10, Math.floor(Math.log10(
                lines.values().stream().mapToDouble(TreeMap::firstKey).min().orElse(1))));
        double xmax = Math.pow(10, Math.ceil(Math.log10(
                lines.values().stream().mapToDouble(TreeMap::lastKey).max().orElse(10))));
        double ymin = Math.pow(10, Math.floor(Math.log10(lines.values().stream()
                .flatMap(m -> m.values().stream()).mapToDouble(Double::doubleValue).min().orElse(0.01))));
        double ymax = Math.pow(10, Math.ceil(Math.log10(lines.values().stream()
                .flatMap(m -> m.values().stream()).mapToDouble(Double::doubleValue).max().orElse(10))));
        int w = 760, h = 480, left = 70, right = 250, top = 40, bottom = 60;
        int pw = w - left - right, ph = h - top - bottom;
        java.util.function.DoubleUnaryOperator sx = x -> left + pw * Math.log10(x / xmin) / Math.log10(xmax / xmin);
        java.util.function.DoubleUnaryOperator sy = y -> top + ph - ph * Math.log10(y / ymin) / Math.log10(ymax / ymin);
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">%n", w, h, w, h));
        s.append("<title>Removing topic-partition-offset-states: wall time vs _metadata size (log-log)</title>\n");
        s.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", w, h));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"14\" font-weight=\"bold\">"
                + "Removing the stale union state: wall time vs _metadata size</text>%n", left));
        for (double x = xmin; x <= xmax * 1.0001; x *= 10) {
            double px = sx.applyAsDouble(x);
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>%n",
                    px, top, px, top + ph));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n", px,
                    top + ph + 18, String.format(Locale.ROOT, "%,.0f MiB", x)));
        }
        double limit = sx.applyAsDouble(2048);
        if (limit > left && limit < left + pw) {
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\" "
                    + "stroke-dasharray=\"3 3\"/>%n", limit, top, limit, top + ph));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" font-size=\"10\" fill=\"#555\" "
                    + "text-anchor=\"end\">2 GiB: Java byte[] limit</text>%n", limit - 4, top + 14));
        }
        for (double y = ymin; y <= ymax * 1.0001; y *= 10) {
            double py = sy.applyAsDouble(y);
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                    left, py, left + pw, py));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n",
                    left - 6, py + 4, y >= 1 ? String.format(Locale.ROOT, "%.0f s", y)
                            : String.format(Locale.ROOT, "%.0f ms", y * 1000)));
        }
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
                + "stroke=\"#444\"/>%n", left, top, pw, ph));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">_metadata size "
                + "(file-backed streams, relative handles)</text>%n", left + pw / 2, h - 18));
        s.append(String.format(Locale.ROOT, "<text transform=\"translate(18 %d) rotate(-90)\" text-anchor=\"middle\">"
                + "median wall time per process</text>%n", top + ph / 2));
        int ly = top + 10;
        for (Map.Entry<String, TreeMap<Double, Double>> e : lines.entrySet()) {
            String color = COLORS.get(e.getKey());
            String dash = e.getKey().contains("metadata-only") ? " stroke-dasharray=\"6 3\"" : "";
            String pts = e.getValue().entrySet().stream().map(p -> String.format(Locale.ROOT, "%.1f,%.1f",
                    sx.applyAsDouble(p.getKey()), sy.applyAsDouble(p.getValue()))).collect(Collectors.joining(" "));
            s.append(String.format("<polyline points=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s/>%n",
                    pts, color, dash));
            for (Map.Entry<Double, Double> p : e.getValue().entrySet()) {
                s.append(String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>%n",
                        sx.applyAsDouble(p.getKey()), sy.applyAsDouble(p.getValue()), color));
            }
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                    + "stroke-width=\"2\"%s/>%n", left + pw + 12, ly, left + pw + 36, ly, color, dash));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", left + pw + 42, ly + 4,
                    e.getKey()));
            ly += 20;
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#555\">each point: median "
                + "of the runs</text>%n", left + pw + 12, ly + 10));
        s.append("</svg>\n");
        return s.toString();
    }
}
