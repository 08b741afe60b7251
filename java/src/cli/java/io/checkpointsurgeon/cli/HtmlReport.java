package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.KeyedReport;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * One self-contained HTML page for people: where a checkpoint's bytes are (per operator and state,
 * inline in {@code _metadata} or in files, keyed, operator or coordinator state) and what the doctor
 * or the history found. Inline CSS and SVG only, no script and no external resource; every text
 * taken from a checkpoint is escaped.
 */
final class HtmlReport {
    private HtmlReport() {
    }

    /** The kinds of bytes an operator holds, in the order of the bars, with their colours. */
    private static final String[] KINDS = {"operator state inline in _metadata", "operator state in files",
            "keyed state", "coordinator state", "channel state"};
    private static final String[] COLORS = {"#e4572e", "#4c78a8", "#54a24b", "#b279a2", "#9d9d9d"};

    private static final String CSS = "body{margin:0;background:#f4f5f7;color:#1d2433;"
            + "font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif}"
            + "main{max-width:1180px;margin:0 auto;padding:20px 24px 40px}"
            + "h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px}h3{font-size:15px;margin:0 0 4px}h3 .mono{font-size:14px}"
            + "code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12.5px}"
            + ".muted{color:#5f6b7a}.path{overflow-wrap:anywhere}"
            + ".card{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:14px 16px;margin:0 0 12px}"
            + ".finding{border-left:6px solid #1f77b4}.finding.ERROR{border-left-color:#c62828;background:#fff5f5}"
            + ".finding.WARNING{border-left-color:#e08e0b;background:#fffaf0}"
            + ".sev{display:inline-block;font-weight:700;font-size:12px;padding:1px 8px;border-radius:10px;color:#fff;"
            + "background:#1f77b4;margin-right:8px}.ERROR .sev{background:#c62828}.WARNING .sev{background:#e08e0b}"
            + ".fix code{display:block;background:#1d2433;color:#e8ecf1;padding:6px 10px;border-radius:5px;"
            + "white-space:pre-wrap;overflow-wrap:anywhere;margin-top:3px}"
            + ".ok{border-left:6px solid #2e7d32;background:#f3fbf4}"
            + ".tiles{display:flex;flex-wrap:wrap;gap:10px;margin-bottom:12px}"
            + ".tile{flex:1 1 140px;background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:8px 12px}"
            + ".tile b{display:block;font-size:16px}.sw{display:inline-block;width:11px;height:11px;border-radius:2px;"
            + "margin-right:6px;vertical-align:-1px}"
            + ".bar{display:flex;height:18px;background:#eef0f3;border-radius:4px;overflow:hidden;min-width:2px}"
            + ".bar span{display:block;height:100%}"
            + "table{border-collapse:collapse;width:100%}th,td{padding:4px 8px;text-align:left;vertical-align:top}"
            + "th{font-size:12px;color:#5f6b7a;font-weight:600;border-bottom:1px solid #dde1e7}"
            + "tr+tr td{border-top:1px solid #f0f2f5}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
            + ".bars td{vertical-align:middle}.bars td.label{width:34%}.bars td.size{width:20%}"
            + ".flag td{background:#fff0f0}.warn{color:#c62828}"
            + "svg{max-width:100%;height:auto}";

    /**
     * The report of one checkpoint with the doctor's findings; {@code command} gives a remedy's
     * command line.
     */
    static String inspect(InspectReport r, List<CheckpointSurgeon.Finding> findings,
            Function<CheckpointSurgeon.Remedy, String> command) {
        return inspect(r, null, findings, command);
    }

    /** {@link #inspect(InspectReport, List, Function)} with each operator's keyed states, when {@code keyed} is given. */
    static String inspect(InspectReport r, KeyedReport keyed, List<CheckpointSurgeon.Finding> findings,
            Function<CheckpointSurgeon.Remedy, String> command) {
        StringBuilder sb = new StringBuilder();
        head(sb, "checkpoint " + r.checkpointId());
        sb.append("<h1>Checkpoint ").append(r.checkpointId()).append("</h1>\n");
        sb.append("<div class=\"muted path mono\">").append(esc(r.source())).append("</div>\n");
        sb.append("<p class=\"muted\">_metadata version ").append(r.metadataVersion()).append(", <span>")
                .append(InspectReport.formatBytes(r.metadataBytes())).append("</span>, ").append(r.operators().size())
                .append(" operators</p>\n");
        findings(sb, "Doctor", findings, command);
        bytes(sb, r, keyed);
        return foot(sb);
    }

    /**
     * The report of a job's history: the findings, the chart and the series of every state, and
     * where the bytes of the newest checkpoint are.
     */
    static String history(Growth.History h, InspectReport newest, Function<CheckpointSurgeon.Remedy, String> command) {
        StringBuilder sb = new StringBuilder();
        List<Growth.Checkpoint> cps = h.checkpoints();
        head(sb, "history of " + cps.size() + " checkpoints");
        sb.append("<h1>History of ").append(cps.size()).append(" checkpoints</h1>\n<div class=\"muted path mono\">");
        for (Growth.Checkpoint c : cps) sb.append(c.id()).append(": ").append(esc(c.path())).append("<br>");
        sb.append("</div>\n");
        findings(sb, "History", h.findings(), command);
        sb.append("<h2>Elements per state</h2>\n<div class=\"card\">")
                .append(SvgChart.of(h).replace(" xmlns=\"http://www.w3.org/2000/svg\"", "")).append("</div>\n");
        Set<String> flagged = new HashSet<>();
        for (CheckpointSurgeon.Finding f : h.findings()) {
            if (f.fix() != null) flagged.add(f.fix().operatorId() + "\n" + f.fix().state());
        }
        sb.append("<h2>Series</h2>\n<div class=\"card\"><table><tr><th>operator</th><th>state</th><th>mode</th><th></th>");
        for (Growth.Checkpoint c : cps) sb.append("<th class=\"n\">").append(c.id()).append("</th>");
        sb.append("</tr>\n<tr><td colspan=\"3\" class=\"muted\">_metadata</td><td class=\"muted\">bytes</td>");
        for (Growth.Checkpoint c : cps) sb.append("<td class=\"n\">").append(count(c.metadataBytes())).append("</td>");
        sb.append("</tr>\n");
        for (Growth.Series s : h.series()) {
            String tr = flagged.contains(s.operatorId() + "\n" + s.state()) ? "<tr class=\"flag\">" : "<tr>";
            sb.append(tr).append("<td rowspan=\"3\" class=\"mono\">").append(esc(s.operatorId())).append("</td><td rowspan=\"3\"><b>")
                    .append(esc(s.state())).append("</b></td><td rowspan=\"3\">").append(esc(s.mode().toString())).append("</td><td class=\"muted\">elements</td>");
            for (long e : s.elements()) sb.append("<td class=\"n\"><b>").append(count(e)).append("</b></td>");
            sb.append("</tr>\n").append(tr).append("<td class=\"muted\">bytes</td>");
            for (long b : s.bytes()) sb.append("<td class=\"n\">").append(count(b)).append("</td>");
            sb.append("</tr>\n").append(tr).append("<td class=\"muted\">parallelism</td>");
            for (int p : s.parallelism()) sb.append("<td class=\"n\">").append(count(p)).append("</td>");
            sb.append("</tr>\n");
        }
        sb.append("</table></div>\n");
        sb.append("<h2 style=\"margin-top:36px\">Newest checkpoint ").append(newest.checkpointId()).append("</h2>\n")
                .append("<div class=\"muted path mono\">").append(esc(newest.source())).append("</div>\n");
        bytes(sb, newest, null);
        return foot(sb);
    }

    private static void head(StringBuilder sb, String title) {
        sb.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
                .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
                .append("<title>").append(esc(title)).append(" - checkpoint-surgeon</title>\n<style>").append(CSS)
                .append("</style></head>\n<body><main>\n");
    }

    private static String foot(StringBuilder sb) {
        return sb.append("<p class=\"muted\" style=\"margin-top:30px\">checkpoint-surgeon ").append(esc(CheckpointSurgeon.VERSION))
                .append("</p>\n</main></body></html>\n").toString();
    }

    private static void findings(StringBuilder sb, String who, List<CheckpointSurgeon.Finding> findings,
            Function<CheckpointSurgeon.Remedy, String> command) {
        sb.append("<h2>Findings</h2>\n");
        if (findings.isEmpty()) {
            sb.append("<div class=\"card ok\">").append(who).append(" found nothing wrong.</div>\n");
        }
        for (CheckpointSurgeon.Finding f : findings) {
            sb.append("<div class=\"card finding ").append(esc(f.severity().toString())).append("\"><span class=\"sev\">")
                    .append(esc(f.severity().toString())).append("</span><code><b>").append(esc(f.code().name())).append("</b></code>")
                    .append("<p>").append(esc(CliSpelling.text(f.typedMessage()))).append("</p>");
            if (f.fix() != null) {
                sb.append("<div class=\"fix\">fix:<code>").append(esc(command.apply(f.fix()))).append("</code></div>");
            }
            for (CheckpointSurgeon.Remedy r : f.alternatives()) {
                sb.append("<div class=\"fix\">or:<code>").append(esc(command.apply(r))).append("</code></div>");
            }
            sb.append("</div>\n");
        }
    }

    /** An operator's bytes by kind (the order of {@link #KINDS}). */
    static long[] bytes(InspectReport.OperatorInfo op) {
        long[] b = new long[KINDS.length];
        for (InspectReport.SubtaskInfo s : op.subtasks()) {
            for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                b[h.inline() ? 0 : 1] += Math.max(0, h.delegateSize());
            }
            b[4] += Math.max(0, s.channelStateBytes());
        }
        b[2] = Math.max(0, op.keyedStateBytes());
        b[3] = Math.max(0, op.coordinatorStateBytes());
        return b;
    }

    private static long sum(long[] b) {
        long s = 0;
        for (long x : b) s += x;
        return s;
    }

    /** Where the bytes are: totals by kind, one bar per operator, and each operator's states. */
    private static void bytes(StringBuilder sb, InspectReport r, KeyedReport keyed) {
        Map<InspectReport.OperatorInfo, long[]> ops = new LinkedHashMap<>();
        long[] total = new long[KINDS.length];
        for (InspectReport.OperatorInfo op : r.operators()) {
            long[] b = bytes(op);
            ops.put(op, b);
            for (int k = 0; k < b.length; k++) total[k] += b[k];
        }
        List<InspectReport.OperatorInfo> sorted = new ArrayList<>(r.operators());
        sorted.sort(Comparator.comparingLong((InspectReport.OperatorInfo o) -> -sum(ops.get(o))));
        long max = Math.max(1, sorted.isEmpty() ? 1 : sum(ops.get(sorted.get(0))));

        sb.append("<h2>Where the bytes are</h2>\n<div class=\"tiles\">");
        sb.append("<div class=\"tile\">total state<b>").append(InspectReport.formatBytes(sum(total))).append("</b></div>");
        for (int k = 0; k < KINDS.length; k++) {
            sb.append("<div class=\"tile\"><span class=\"sw\" style=\"background:").append(COLORS[k]).append("\"></span>")
                    .append(KINDS[k]).append("<b>").append(InspectReport.formatBytes(total[k])).append("</b></div>");
        }
        sb.append("</div>\n<div class=\"card\"><div class=\"muted\">all state by kind</div><div class=\"bar\" style=\"height:26px\">").append(segments(total, sum(total)))
                .append("</div>\n<table class=\"bars\" style=\"margin-top:10px\"><tr><th>operator</th><th>bytes by kind"
                        + " (scaled to the largest operator)</th><th class=\"n\">total</th></tr>\n");
        for (InspectReport.OperatorInfo op : sorted) {
            long[] b = ops.get(op);
            sb.append("<tr><td class=\"label\">").append(label(op)).append("</td><td><div class=\"bar\" style=\"width:")
                    .append(pct(sum(b), max)).append("\">").append(segments(b, sum(b))).append("</div></td><td class=\"n\">")
                    .append(InspectReport.formatBytes(sum(b))).append("</td></tr>\n");
        }
        sb.append("</table></div>\n<h2>Operators and states</h2>\n");
        for (InspectReport.OperatorInfo op : sorted) {
            operator(sb, op, ops.get(op), keyed == null ? null : keyed.operator(op.id()));
        }
    }

    private static void operator(StringBuilder sb, InspectReport.OperatorInfo op, long[] b, KeyedReport.Operator keyed) {
        sb.append("<div class=\"card\"><h3>").append(label(op)).append("</h3><div class=\"muted\">parallelism ")
                .append(op.parallelism()).append(", max parallelism ").append(op.maxParallelism());
        if (op.fullyFinished()) sb.append(", fully finished");
        else if (op.finishedSubtasks() > 0) sb.append(", ").append(op.finishedSubtasks()).append(" subtasks finished");
        for (int k = 0; k < KINDS.length; k++) {
            boolean shown = k == 3 ? op.coordinatorStateBytes() >= 0 : b[k] > 0;
            if (shown) {
                sb.append(" &middot; <span class=\"sw\" style=\"background:").append(COLORS[k]).append("\"></span>")
                        .append(KINDS[k]).append(" <span>").append(InspectReport.formatBytes(b[k])).append("</span>");
            }
        }
        sb.append("</div>\n");
        List<InspectReport.StateTotal> totals = op.stateTotals();
        if (!totals.isEmpty()) {
            Map<String, Long> distinct = new LinkedHashMap<>();
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (InspectReport.StateInfo st : h.states()) distinct.merge(st.name(), st.distinctElements(), Math::max);
                }
            }
            long max = 1;
            for (InspectReport.StateTotal t : totals) max = Math.max(max, t.bytes());
            sb.append("<table style=\"margin-top:8px\"><tr><th>operator state</th><th>mode</th><th class=\"n\">elements</th>"
                    + "<th class=\"n\" title=\"the most distinct values one subtask holds\">distinct (max per subtask)</th>"
                    + "<th class=\"n\">bytes</th><th class=\"n\">subtasks</th><th style=\"width:22%\"></th></tr>\n");
            for (InspectReport.StateTotal t : totals) {
                long d = distinct.getOrDefault(t.name(), -1L);
                sb.append("<tr><td><b>").append(esc(t.name())).append("</b></td><td>").append(esc(t.mode().name()))
                        .append("</td><td class=\"n\">").append(count(t.elements())).append("</td><td class=\"n\">")
                        .append(d < 0 ? "?" : count(d)).append("</td><td class=\"n\">")
                        .append(t.bytes() < 0 ? "?" : InspectReport.formatBytes(t.bytes())).append("</td><td class=\"n\">")
                        .append(t.handles()).append("</td><td><div class=\"bar\" style=\"height:12px;width:")
                        .append(pct(Math.max(0, t.bytes()), max)).append("\"><span style=\"width:100%;background:#7b8aa0\"></span>")
                        .append("</div></td></tr>\n");
            }
            sb.append("</table>\n");
        }
        long keyedSubtasks = op.subtasks().stream().filter(s -> s.managedKeyedState() != null || s.rawKeyedState() != null).count();
        if (keyedSubtasks > 0) {
            String kind = op.subtasks().stream().filter(s -> s.managedKeyedState() != null)
                    .map(s -> s.managedKeyedState().kind()).findFirst().orElse("raw keyed state");
            sb.append("<p>keyed state: ").append(esc(kind)).append(" in ").append(keyedSubtasks).append(" subtasks, <span>")
                    .append(InspectReport.formatBytes(op.keyedStateBytes())).append("</span></p>\n");
        }
        if (keyed != null) keyed(sb, keyed);
        for (InspectReport.SubtaskInfo s : op.subtasks()) {
            for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                if (!h.streamError().isEmpty()) {
                    sb.append("<p class=\"warn\">subtask ").append(s.index()).append(": stream not read: ")
                            .append(esc(h.streamError())).append("</p>\n");
                }
            }
        }
        sb.append("</div>\n");
    }

    /** An operator's keyed states: type, TTL, entries and bytes, per subtask, serializers; what was not read. */
    private static void keyed(StringBuilder sb, KeyedReport.Operator op) {
        long max = 1;
        for (KeyedReport.State s : op.states()) max = Math.max(max, s.total().storedBytes());
        sb.append("<table style=\"margin-top:8px\"><tr><th>keyed state</th><th>type</th><th>TTL</th>"
                + "<th class=\"n\">entries</th><th class=\"n\">bytes</th><th class=\"n\">entries per subtask</th>"
                + "<th>value serializer</th><th>format</th><th style=\"width:16%\"></th></tr>\n");
        boolean rocksDb = false, changelog = false;
        for (KeyedReport.State s : op.states()) {
            long min = Long.MAX_VALUE, most = 0;
            for (KeyedReport.SubtaskCount t : s.subtasks()) {
                min = Math.min(min, t.count().entries());
                most = Math.max(most, t.count().entries());
            }
            KeyedReport.Serializer v = s.serializer(KeyedReport.SerializerKey.VALUE_SERIALIZER);
            StringBuilder formats = new StringBuilder();
            for (KeyedReport.SnapshotFormat f : s.formats()) formats.append(formats.length() > 0 ? ", " : "").append(f);
            sb.append("<tr><td><b>").append(esc(s.name())).append("</b></td><td>").append(esc(s.kind()))
                    .append("</td><td>").append(s.ttl() ? "yes" : "no").append("</td><td class=\"n\">")
                    .append(count(s.total().entries())).append("</td><td class=\"n\">")
                    .append(InspectReport.formatBytes(s.total().storedBytes())).append("</td><td class=\"n\">")
                    .append(s.subtasks().isEmpty() ? "-" : count(min) + " .. " + count(most)).append("</td><td class=\"mono\"")
                    .append(v == null ? ">" : " title=\"" + esc(v.snapshot().snapshotClass()) + "\">" + esc(v.snapshot().shortName()))
                    .append("</td><td>").append(esc(formats.toString())).append("</td><td><div class=\"bar\" style=\"height:12px;width:")
                    .append(pct(s.total().storedBytes(), max)).append("\"><span style=\"width:100%;background:")
                    .append(COLORS[2]).append("\"></span></div></td></tr>\n");
            rocksDb |= s.rocksDbNumbers();
            changelog |= s.changelogNumbers();
        }
        sb.append("</table>\n");
        if (rocksDb) sb.append("<p class=\"muted\">").append(esc(TextRenderer.ROCKSDB_NUMBERS)).append("</p>\n");
        if (changelog) sb.append("<p class=\"muted\">").append(esc(TextRenderer.CHANGELOG_NUMBERS)).append("</p>\n");
        for (KeyedReport.Handle h : op.handles()) {
            if (h.error() != null) {
                sb.append("<p class=\"warn\">subtask ").append(h.subtask()).append(": keyed handle not read: ")
                        .append(esc(h.error())).append("</p>\n");
            }
            for (KeyedReport.Note n : h.notes()) {
                sb.append("<p class=\"muted\">subtask ").append(h.subtask()).append(": ")
                        .append(n.file().isEmpty() ? "" : esc(n.file()) + " at byte " + n.offset() + ": ")
                        .append(esc(n.message())).append("</p>\n");
            }
        }
    }

    /** An operator as people know it: its name, uid and id (name and uid where the format stores them). */
    private static String label(InspectReport.OperatorInfo op) {
        StringBuilder sb = new StringBuilder();
        if (!op.name().isEmpty()) sb.append("<b>").append(esc(op.name())).append("</b> ");
        if (!op.uid().isEmpty()) sb.append("<span class=\"muted\">uid</span> <b>").append(esc(op.uid())).append("</b> ");
        if (sb.length() > 0) sb.append("<br>");
        return sb.append("<span class=\"mono\">").append(esc(op.id())).append("</span>").toString();
    }

    private static String segments(long[] b, long total) {
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < b.length; k++) {
            if (b[k] <= 0) continue;
            sb.append("<span style=\"width:").append(pct(b[k], total)).append(";background:").append(COLORS[k])
                    .append("\" title=\"").append(KINDS[k]).append(": ").append(InspectReport.formatBytes(b[k]))
                    .append("\"></span>");
        }
        return sb.toString();
    }

    private static String pct(long part, long whole) {
        return String.format(Locale.ROOT, "%.2f%%", whole <= 0 ? 0 : 100.0 * part / whole);
    }

    /** A count, or "-" for an absent value (-1). */
    private static String count(long n) {
        return n < 0 ? "-" : String.format(Locale.ROOT, "%,d", n);
    }

    /**
     * Text for HTML and SVG: {@code <>&"'} as character references, control and bidirectional
     * formatting characters as {@link Terminal} shows them, so that every name shows on one line
     * as it is (and the SVG stays well-formed XML, which allows no C0 control at all).
     */
    static String esc(String s) {
        if (s == null) return "";
        StringBuilder b = new StringBuilder(s.length() + 16);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '<': b.append("&lt;"); break;
                case '>': b.append("&gt;"); break;
                case '&': b.append("&amp;"); break;
                case '"': b.append("&quot;"); break;
                case '\'': b.append("&#39;"); break;
                default:
                    if (Terminal.escaped(c)) b.append(Terminal.escape(c));
                    else b.append(c);
            }
        }
        return b.toString();
    }
}
