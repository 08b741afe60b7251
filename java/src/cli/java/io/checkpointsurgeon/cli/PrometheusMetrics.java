package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.InspectReport;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The metrics {@code watch} serves: per job its latest checkpoint's state sizes, findings and
 * timings, in Prometheus' text exposition format (version 0.0.4), label values escaped.
 */
final class PrometheusMetrics {
    private PrometheusMetrics() {}

    /** The metrics of the watched jobs in Prometheus' text exposition format (version 0.0.4). */
    static String render(Collection<Watch.Job> jobs, long polls, long errors, long now) {
        StringBuilder sb = new StringBuilder();
        Map<String, List<String>> families = new LinkedHashMap<>();
        String[][] help = {
            {"checkpoint_surgeon_state_bytes", "gauge", "Bytes of an operator state's elements in the latest checkpoint, over all subtasks."},
            {"checkpoint_surgeon_state_elements", "gauge", "Elements of an operator state in the latest checkpoint, over all subtasks."},
            {"checkpoint_surgeon_state_distinct_elements", "gauge", "Distinct elements of an operator state in the latest checkpoint (the most in one subtask)."},
            {"checkpoint_surgeon_keyed_state_bytes", "gauge", "Keyed state bytes of an operator in the latest checkpoint."},
            {"checkpoint_surgeon_coordinator_state_bytes", "gauge", "Operator coordinator state bytes in the latest checkpoint."},
            {"checkpoint_surgeon_findings", "gauge", "The doctor's findings on the latest checkpoint, by severity."},
            {"checkpoint_surgeon_finding", "gauge", "1 for each finding code of the latest checkpoint."},
            {"checkpoint_surgeon_last_checkpoint_id", "gauge", "Id of the latest checkpoint inspected."},
            {"checkpoint_surgeon_last_checkpoint_timestamp_seconds", "gauge", "When the latest checkpoint inspected completed (Unix time)."},
            {"checkpoint_surgeon_last_checkpoint_age_seconds", "gauge", "Seconds since the latest checkpoint inspected completed."},
            {"checkpoint_surgeon_metadata_bytes", "gauge", "Size of the latest checkpoint's _metadata."},
            {"checkpoint_surgeon_inspect_seconds", "gauge", "Time taken to inspect and examine the latest checkpoint."},
            {"checkpoint_surgeon_watch_polls_total", "counter", "Polls of the checkpoint source."},
            {"checkpoint_surgeon_watch_errors_total", "counter", "Sources or checkpoints that could not be read, and hooks that failed."},
        };
        for (String[] h : help) families.put(h[0], new ArrayList<>());
        for (Watch.Job job : jobs) {
            if (job.report == null) continue;
            String j = "job_id=\"" + label(job.id) + "\",job_name=\"" + label(job.name) + "\"";
            Map<String, InspectReport.OperatorInfo> ops = new LinkedHashMap<>();
            for (InspectReport.OperatorInfo op : job.report.operators()) ops.put(op.id(), op);
            for (Growth.StateSize s : Growth.stateSizes(job.report)) {
                InspectReport.OperatorInfo op = ops.get(s.operatorId());
                String l = j + "," + operator(op) + ",state=\"" + label(s.state()) + "\",mode=\"" + label(s.mode().toString()) + "\"";
                families.get("checkpoint_surgeon_state_elements").add(l + "} " + s.elements());
                families.get("checkpoint_surgeon_state_bytes").add(l + "} " + s.bytes());
                if (s.distinct() >= 0) families.get("checkpoint_surgeon_state_distinct_elements").add(l + "} " + s.distinct());
            }
            for (InspectReport.OperatorInfo op : ops.values()) {
                families.get("checkpoint_surgeon_keyed_state_bytes").add(j + "," + operator(op) + "} " + op.keyedStateBytes());
                if (op.coordinatorStateBytes() >= 0) {
                    families.get("checkpoint_surgeon_coordinator_state_bytes").add(j + "," + operator(op) + "} " + op.coordinatorStateBytes());
                }
            }
            for (CheckpointSurgeon.Finding.Severity severity : CheckpointSurgeon.Finding.Severity.values()) {
                long n = job.findings.stream().filter(f -> f.severity() == severity).count();
                families.get("checkpoint_surgeon_findings").add(j + ",severity=\"" + severity + "\"} " + n);
            }
            Map<String, CheckpointSurgeon.Finding.Severity> codes = new TreeMap<>();
            for (CheckpointSurgeon.Finding f : job.findings) codes.putIfAbsent(f.code().name(), f.severity());
            for (Map.Entry<String, CheckpointSurgeon.Finding.Severity> c : codes.entrySet()) {
                families.get("checkpoint_surgeon_finding").add(j + ",code=\"" + label(c.getKey()) + "\",severity=\"" + c.getValue() + "\"} 1");
            }
            families.get("checkpoint_surgeon_last_checkpoint_id").add(j + "} " + job.checkpointId);
            if (job.timestampMillis > 0) {
                families.get("checkpoint_surgeon_last_checkpoint_timestamp_seconds").add(j + "} " + String.format(Locale.ROOT, "%.3f", job.timestampMillis / 1000.0));
                families.get("checkpoint_surgeon_last_checkpoint_age_seconds").add(j + "} " + String.format(Locale.ROOT, "%.3f", Math.max(0, now - job.timestampMillis) / 1000.0));
            }
            families.get("checkpoint_surgeon_metadata_bytes").add(j + "} " + job.report.metadataBytes());
            families.get("checkpoint_surgeon_inspect_seconds").add(j + "} " + String.format(Locale.ROOT, "%.6f", job.inspectSeconds));
        }
        families.get("checkpoint_surgeon_watch_polls_total").add("} " + polls);
        families.get("checkpoint_surgeon_watch_errors_total").add("} " + errors);
        for (String[] h : help) {
            List<String> samples = families.get(h[0]);
            if (samples.isEmpty()) continue;
            sb.append("# HELP ").append(h[0]).append(' ').append(h[2]).append('\n');
            sb.append("# TYPE ").append(h[0]).append(' ').append(h[1]).append('\n');
            for (String s : samples) {
                sb.append(h[0]).append(s.startsWith("}") ? s.substring(1) : "{" + s).append('\n');
            }
        }
        return sb.toString();
    }

    private static String operator(InspectReport.OperatorInfo op) {
        return "operator_id=\"" + label(op == null ? "" : op.id()) + "\",operator_uid=\"" + label(op == null ? "" : op.uid()) + "\"";
    }

    /**
     * A label value as the exposition format escapes it (backslash, double quote and line feed);
     * other control characters (ESC, C1, bidirectional formatting; a tab stays, the format allows it)
     * have no escape there and become the text {@code \u001b}, its backslash escaped, so no raw
     * control character reaches a scrape that someone reads on a terminal.
     */
    static String label(String v) {
        if (v == null) return "";
        StringBuilder b = new StringBuilder(v.length());
        for (char c : v.toCharArray()) {
            if (c == '\\') b.append("\\\\");
            else if (c == '"') b.append("\\\"");
            else if (c == '\n') b.append("\\n");
            else if (c != '\t' && Terminal.escaped(c)) b.append('\\').append(Terminal.escape(c));
            else b.append(c);
        }
        return b.toString();
    }
}
