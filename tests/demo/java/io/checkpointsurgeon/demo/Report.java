package io.checkpointsurgeon.demo;

import io.checkpointsurgeon.demo.IncidentDemo.Restore;
import io.checkpointsurgeon.demo.IncidentDemo.Result;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The demo's table (stdout and Markdown) and chart (hand-written SVG). */
final class Report {
    private Report() {}

    private static final String[] HEAD = {"restore", "phase", "loads", "`_metadata` bytes", "× prev",
            "stale elements", "× prev", "SourceReaderState elements", "inspect ms", "Flink load ms",
            "1st checkpoint after start (s)"};

    static List<String[]> rows(Result r) {
        List<String[]> rows = new ArrayList<>();
        Restore prev = null;
        for (Restore x : r.restores()) {
            rows.add(new String[] {
                    x.number() == 0 ? "-" : Integer.toString(x.number()), x.phase(), x.loaded(), Long.toString(x.metadataBytes()),
                    prev == null ? "" : ratio(x.metadataBytes(), prev.metadataBytes()),
                    Long.toString(x.staleElements()),
                    prev == null ? "" : ratio(x.staleElements(), prev.staleElements()),
                    Long.toString(x.readerElements()), f2(x.inspectMillis()), f2(x.flinkLoadMillis()),
                    Double.isNaN(x.firstCheckpointSeconds()) ? "" : f1(x.firstCheckpointSeconds())});
            prev = x;
        }
        return rows;
    }

    static void print(Result r, PrintStream out) {
        out.println();
        out.println("=== incident demo: one row per restore (what the restored job loaded) ===");
        List<String[]> rows = rows(r);
        int[] w = new int[HEAD.length];
        for (int i = 0; i < HEAD.length; i++) {
            w[i] = HEAD[i].replace("`", "").length();
            for (String[] row : rows) w[i] = Math.max(w[i], row[i].length());
        }
        StringBuilder sb = new StringBuilder();
        line(sb, w, HEAD);
        for (String[] row : rows) line(sb, w, row);
        out.print(sb);
        for (String s : summary(r)) out.println(s);
    }

    private static void line(StringBuilder sb, int[] w, String[] cells) {
        for (int i = 0; i < cells.length; i++) {
            String c = cells[i].replace("`", "");
            sb.append(i < 3 ? String.format("%-" + w[i] + "s", c) : String.format("%" + w[i] + "s", c));
            sb.append(i + 1 < cells.length ? "  " : "\n");
        }
    }

    static List<String> summary(Result r) {
        IncidentDemo.Options o = r.options();
        List<String> s = new ArrayList<>();
        Restore firstAfter = r.restores().stream().filter(x -> x.phase().equals("repaired")).findFirst().orElseThrow();
        s.add(String.format(Locale.ROOT, "setup: Flink 1.15.4 MiniCluster, Kafka 3.7.2 broker (KRaft), input topic %d partitions,"
                + " parallelism %d, %d records per run, %d restores before the repair", o.partitions(), o.parallelism(),
                o.recordsPerRun(), o.restores()));
        s.add(String.format(Locale.ROOT, "before the migration (v1 savepoint): _metadata %d bytes, %d stale elements",
                r.preMigration().metadataBytes(), r.preMigration().staleElements()));
        s.add(String.format(Locale.ROOT, "after %d restores: _metadata %d bytes (×%s the savepoint), %d stale elements"
                        + " (%d = %d × %d^%d)", o.restores(), r.grown().metadataBytes(),
                ratio(r.grown().metadataBytes(), r.preMigration().metadataBytes()), r.grown().staleElements(),
                r.grown().staleElements(), r.preMigration().staleElements(), o.parallelism(), o.restores()));
        s.add(String.format(Locale.ROOT, "repair (CheckpointSurgeon.apply, removeState uid %s %s): _metadata %d -> %d bytes,"
                        + " %d elements removed; %s", Jobs.SOURCE_UID, Jobs.STALE_STATE, r.plan().metadataBytesBefore(),
                r.plan().metadataBytesAfter(), r.plan().elementsRemoved(), r.plan().result().flinkValidation()));
        s.add(String.format(Locale.ROOT, "first checkpoint written after restoring the repaired checkpoint: %s, _metadata %d bytes"
                        + " (×%s the pre-migration savepoint); latest: _metadata %d bytes, %d stale elements",
                firstAfter.wrote(), firstAfter.wroteMetadataBytes(),
                ratio(firstAfter.wroteMetadataBytes(), r.preMigration().metadataBytes()), r.last().metadataBytes(),
                r.last().staleElements()));
        s.add("KafkaSource split offsets (SourceReaderState) before the repair: " + r.splitsBefore());
        s.add("KafkaSource split offsets (SourceReaderState) after the repair:  " + r.splitsAfter()
                + (r.splitsBefore().equals(r.splitsAfter()) ? " (unchanged)" : " (CHANGED)"));
        s.add(String.format(Locale.ROOT, "records: %d produced, %d in the output topic, %d missing, %d duplicates (at-least-once)",
                r.produced(), r.outputRecords(), r.missing(), r.duplicates()));
        s.add(String.format(Locale.ROOT, "run time: %.1f s", r.seconds()));
        return s;
    }

    static String markdown(Result r) {
        StringBuilder sb = new StringBuilder();
        sb.append("# Incident reproduction: measured table\n\n");
        sb.append("Written by `gradle demo` (`io.checkpointsurgeon.demo.IncidentDemo`) from a real run. Each row is one"
                + " restore of the job; the columns describe the checkpoint it loaded. \"stale elements\" is the"
                + " element count of `topic-partition-offset-states` (UNION) of operator uid `source_consumer`, summed"
                + " over subtasks, as `CheckpointSurgeon.inspect` reports it. Load times are the best of 3:"
                + " `CheckpointSurgeon.inspect` and Flink's `Checkpoints.loadCheckpointMetadata`.\n\n");
        sb.append('|');
        for (String h : HEAD) sb.append(' ').append(h).append(" |");
        sb.append("\n|");
        for (int i = 0; i < HEAD.length; i++) sb.append(i < 3 ? "---|" : "---:|");
        sb.append('\n');
        for (String[] row : rows(r)) {
            sb.append('|');
            for (String c : row) sb.append(' ').append(c).append(" |");
            sb.append('\n');
        }
        sb.append('\n');
        for (String s : summary(r)) sb.append("- ").append(s).append('\n');
        sb.append("\nNotes: the stale elements multiply by exactly the parallelism at every restore. `_metadata` follows"
                + " once they dominate it: while a subtask's state stream is below `state.storage.fs.memory-threshold`"
                + " (20 kB, the default) it is stored inline in `_metadata`; above it, the stream moves to a file and"
                + " `_metadata` keeps one 8-byte offset per element, hence the dip at one restore and then"
                + " ×parallelism. The \"surgery input\" row is the checkpoint the next restore would have loaded;"
                + " the surgery wrote the repaired copy into a new directory, which the next restore loaded instead."
                + " \"1st checkpoint after start\" is the time from job submission (fresh MiniCluster) to the first"
                + " completed checkpoint, so it includes the restore.\n");
        sb.append("\n![_metadata size per restore](incident-chart.svg)\n");
        return sb.toString();
    }

    /** A bar chart of the loaded {@code _metadata} size per restore, on a logarithmic axis. */
    static String svg(Result r) {
        List<Restore> xs = r.restores();
        int width = 780, height = 430, left = 70, right = 20, top = 56, bottom = 84;
        double plotW = width - left - right, plotH = height - top - bottom;
        long max = 1, min = Long.MAX_VALUE;
        for (Restore x : xs) {
            max = Math.max(max, x.metadataBytes());
            min = Math.min(min, Math.max(1, x.metadataBytes()));
        }
        int lo = (int) Math.floor(Math.log10(min)) - 1; // one decade below the smallest bar, so it shows
        int hi = (int) Math.ceil(Math.log10(max));
        if (hi == lo) hi++;
        final int fLo = lo, fHi = hi;
        java.util.function.DoubleUnaryOperator yOf =
                v -> top + plotH - plotH * (Math.log10(Math.max(v, 1)) - fLo) / (fHi - fLo);
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", width, height, width, height));
        sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">"
                + "_metadata loaded at each restore (Flink 1.15.4, Kafka, parallelism %d; log scale)</text>\n", left,
                r.options().parallelism()));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"40\" fill=\"#555\">stale topic-partition-offset-states"
                + " multiplied by %d at every restore, until checkpoint-surgeon removed it</text>\n", left,
                r.options().parallelism()));
        for (int e = lo; e <= hi; e++) {
            double y = yOf.applyAsDouble(Math.pow(10, e));
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                    left, y, width - right, y));
            sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                    left - 6, y + 4, human((long) Math.pow(10, e))));
        }
        double slot = plotW / xs.size();
        double bw = slot * 0.62;
        double base = top + plotH;
        for (int i = 0; i < xs.size(); i++) {
            Restore x = xs.get(i);
            boolean healthy = x.phase().equals("repaired") || x.phase().equals("after repair");
            boolean input = x.number() == 0;
            double by = yOf.applyAsDouble(x.metadataBytes());
            double bx = left + i * slot + (slot - bw) / 2;
            sb.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
                            + "<title>restore %s (%s): %d bytes, %d stale elements</title></rect>\n", bx, by, bw, base - by,
                    healthy ? "#2e7d32" : input ? "#ef6c00" : "#c62828", input ? "-" : Integer.toString(x.number()),
                    x.phase(), x.metadataBytes(), x.staleElements()));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\">%s</text>\n",
                    bx + bw / 2, by - 4, human(x.metadataBytes())));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                    bx + bw / 2, base + 16, input ? "(next)" : Integer.toString(x.number())));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\" font-size=\"10\">%d</text>\n",
                    bx + bw / 2, base + 30, x.staleElements()));
        }
        sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n",
                left, base, width - right, base));
        sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">restore # (below it:"
                + " stale elements in the checkpoint it loads)</text>\n", left + plotW / 2, height - 30));
        String[][] legend = {{"#c62828", "before repair"}, {"#ef6c00", "grown checkpoint (surgery input)"},
                {"#2e7d32", "repaired by checkpoint-surgeon, and after"}};
        int lx = left;
        for (String[] l : legend) {
            sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                    + "<text x=\"%d\" y=\"%d\">%s</text>\n", lx, height - 18, l[0], lx + 16, height - 8, l[1]));
            lx += 40 + 7 * l[1].length();
        }
        sb.append("</svg>\n");
        return sb.toString();
    }

    private static String human(long b) {
        if (b >= 1_000_000) return trim(b / 1e6) + " MB";
        if (b >= 1000) return trim(b / 1e3) + " kB";
        return b + " B";
    }

    private static String trim(double d) {
        return d >= 100 || d == Math.rint(d) ? Long.toString(Math.round(d)) : String.format(Locale.ROOT, "%.1f", d);
    }

    static String ratio(long a, long b) {
        double q = b == 0 ? 0 : (double) a / b;
        return b == 0 ? "-" : String.format(Locale.ROOT, q > 0 && q < 0.1 ? "%.4f" : "%.2f", q);
    }

    private static String f1(double d) {
        return String.format(Locale.ROOT, "%.1f", d);
    }

    private static String f2(double d) {
        return String.format(Locale.ROOT, "%.2f", d);
    }
}
