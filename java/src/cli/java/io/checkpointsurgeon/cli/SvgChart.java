package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.InspectReport;
import java.util.Locale;

/** The chart of {@code history --svg} and of the HTML report's history. */
final class SvgChart {
    private SvgChart() {}

    /**
     * A self-contained SVG line chart of the series' element counts over the checkpoints (log
     * scale), one line per state that has elements, union states drawn thick.
     */
    static String of(Growth.History h) {
        int w = 760, hgt = 360, left = 70, right = 230, top = 30, bottom = 50;
        int n = h.checkpoints().size();
        double max = 1;
        for (Growth.Series s : h.series()) for (long e : s.elements()) max = Math.max(max, e);
        double logMax = Math.log10(max) <= 0 ? 1 : Math.ceil(Math.log10(max));
        StringBuilder sb = new StringBuilder();
        sb.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                + " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">%n", w, hgt, w, hgt));
        sb.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", w, hgt));
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"18\" font-size=\"13\">elements per state over checkpoints (log scale)</text>%n", left));
        int plotW = w - left - right, plotH = hgt - top - bottom;
        for (int d = 0; d <= logMax; d++) {
            double y = top + plotH - plotH * d / logMax;
            sb.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                    + "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%n", left, y, left + plotW, y, left - 6, y + 4,
                    String.format(Locale.ROOT, "%,d", (long) Math.pow(10, d))));
        }
        for (int i = 0; i < n; i++) {
            double x = left + (n == 1 ? plotW / 2.0 : plotW * i / (double) (n - 1));
            sb.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>%n", x,
                    top + plotH + 16, h.checkpoints().get(i).id()));
        }
        sb.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">checkpoint id</text>%n",
                left + plotW / 2, top + plotH + 34));
        String[] colors = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};
        int c = 0, legend = 0;
        for (Growth.Series s : h.series()) {
            if (s.elements().stream().allMatch(e -> e <= 0)) continue;
            String color = colors[c++ % colors.length];
            StringBuilder pts = new StringBuilder();
            for (int i = 0; i < n; i++) {
                long e = s.elements().get(i);
                if (e < 0) continue;
                double x = left + (n == 1 ? plotW / 2.0 : plotW * i / (double) (n - 1));
                double y = top + plotH - plotH * (e <= 1 ? 0 : Math.log10(e)) / logMax;
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", x, y));
            }
            boolean union = s.mode().operatorMode() == InspectReport.Mode.UNION;
            sb.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%d\" points=\"%s\"/>%n",
                    color, union ? 3 : 1, pts.toString().trim()));
            if (legend < 16) {
                int ly = top + 12 + 16 * legend++;
                sb.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"4\" fill=\"%s\"/>"
                        + "<text x=\"%d\" y=\"%d\">%s</text>%n", left + plotW + 12, ly - 4, color, left + plotW + 28, ly,
                        xml(s.state() + " (" + s.operatorId().substring(0, 8) + ")")));
            }
        }
        return sb.append("</svg>\n").toString();
    }

    /** Text for SVG (XML): escaped as in the HTML report, control characters shown as escapes. */
    static String xml(String s) {
        return HtmlReport.esc(s);
    }
}
