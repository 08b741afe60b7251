package io.checkpointsurgeon.cli;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonTest;
import io.checkpointsurgeon.Growth;
import io.checkpointsurgeon.GrowthTest;
import io.checkpointsurgeon.InspectReport;
import java.awt.image.BufferedImage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.imageio.ImageIO;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * {@code inspect --html} and {@code history --html}: the page headless Chromium renders shows what
 * {@link CheckpointSurgeon#inspect} and the doctor report, has no external resource, escapes what the
 * checkpoint names, and is written as a new file only.
 */
public class HtmlReportTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    static final Path V120 = CheckpointSurgeonTest.FIXTURES.resolve("1.20.3");

    /** Headless Chromium ({@code CHROMIUM} or /usr/bin/chromium); the tests fail without it, they never skip. */
    static String chromiumBinary() {
        String c = System.getenv().getOrDefault("CHROMIUM", "/usr/bin/chromium");
        assertTrue("the HTML report tests render with headless Chromium, not found at " + c
                + ": install it (Debian: apt-get install chromium) or set CHROMIUM to its binary", Files.isExecutable(Path.of(c)));
        return c;
    }

    /** Runs headless Chromium on {@code html} with its own profile and HOME; returns its standard output. */
    String chromium(Path html, String... args) throws Exception {
        Path home = tmp.newFolder().toPath();
        List<String> cmd = new ArrayList<>(List.of(chromiumBinary(), "--headless", "--no-sandbox", "--disable-gpu",
                "--user-data-dir=" + home.resolve("profile")));
        cmd.addAll(List.of(args));
        cmd.add(html.toUri().toString());
        Path out = home.resolve("stdout"), err = home.resolve("stderr");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().put("HOME", home.toString());
        Process p = pb.start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            fail("Chromium did not finish within 60 s: " + cmd + "\n" + Files.readString(err));
        }
        assertEquals(cmd + "\n" + Files.readString(err), 0, p.exitValue());
        return Files.readString(out, StandardCharsets.UTF_8);
    }

    /** The DOM's text as people read it (Chromium serializes text with these references). */
    static String text(String dom) {
        return dom.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&nbsp;", " ").replace("&amp;", "&");
    }

    /** A name as the report shows it: a tab or newline as a Java escape. */
    static String shown(String name) {
        return name.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r");
    }

    /** No external resource: no URL other than data:, no link, import, script or frame. */
    static void selfContained(String html) {
        String h = html.toLowerCase(Locale.ROOT);
        for (String bad : List.of("http://", "https://", "file://", "<link", "@import", "<script", "<iframe", "<object", "<embed")) {
            assertFalse(bad, h.contains(bad));
        }
        Matcher m = Pattern.compile("\\b(?:src|href|srcset)\\s*=\\s*[\"']?([^\"'\\s>]*)").matcher(h);
        while (m.find()) assertTrue(m.group(), m.group(1).startsWith("data:"));
        m = Pattern.compile("url\\(\\s*[\"']?([^\"')]*)").matcher(h);
        while (m.find()) assertTrue(m.group(), m.group(1).startsWith("data:"));
    }

    /** {@code inspect PATH --html FILE}; the text output is printed as usual. */
    Path inspectHtml(Path checkpoint) throws Exception {
        Path html = tmp.newFolder().toPath().resolve("report.html");
        CheckpointSurgeonTest.Result r = CheckpointSurgeonTest.run("inspect", checkpoint.toString(), "--html", html.toString());
        assertEquals(r.err, 0, r.code);
        assertTrue(r.out, r.out.startsWith("checkpoint "));
        return html;
    }

    @Test
    public void inspectShowsEveryOperatorStateAndSizeAndTheDoctorsFindings() throws Exception {
        int findings = 0;
        for (Path cp : List.of(V120.resolve("stale-union"), V120.resolve("keyed-hashmap"), V120.resolve("operator-state-files"),
                CheckpointSurgeonTest.FIXTURES.resolve("2.3.0").resolve("stale-union"))) {
            Path html = inspectHtml(cp);
            selfContained(Files.readString(html));
            String dom = chromium(html, "--dump-dom");
            String text = text(dom);
            InspectReport r = CheckpointSurgeon.inspect(cp);
            assertTrue(cp + "\n" + dom, dom.contains(">Checkpoint " + r.checkpointId() + "<"));
            assertTrue(dom.contains(InspectReport.formatBytes(r.metadataBytes())));
            assertTrue(dom.contains(">" + InspectReport.formatBytes(r.totalKeyedStateBytes()) + "<"));
            for (InspectReport.OperatorInfo op : r.operators()) {
                assertTrue(op.id(), dom.contains(op.id()));
                if (!op.uid().isEmpty()) assertTrue(op.uid(), text.contains(shown(op.uid())));
                if (!op.name().isEmpty()) assertTrue(op.name(), text.contains(shown(op.name())));
                if (op.keyedStateBytes() > 0) assertTrue(dom.contains(">" + InspectReport.formatBytes(op.keyedStateBytes()) + "<"));
                if (op.coordinatorStateBytes() >= 0) {
                    assertTrue(dom.contains(">" + InspectReport.formatBytes(op.coordinatorStateBytes()) + "<"));
                }
                for (InspectReport.StateTotal t : op.stateTotals()) {
                    assertTrue(t.name(), text.contains(">" + shown(t.name()) + "<"));
                    assertTrue(t.name(), dom.contains(">" + t.mode() + "<"));
                    assertTrue(t.name(), dom.contains(String.format(Locale.ROOT, ">%,d<", t.elements())));
                    assertTrue(t.name(), dom.contains(">" + InspectReport.formatBytes(t.bytes()) + "<"));
                }
            }
            List<CheckpointSurgeon.Finding> found = CheckpointSurgeon.doctor(cp);
            for (CheckpointSurgeon.Finding f : found) assertTrue(f.code().name(), dom.contains(f.code().name()));
            if (found.isEmpty()) assertTrue(dom.contains("found nothing wrong"));
            findings += found.size();
        }
        assertTrue("the stale unions are findings", findings >= 2);
    }

    @Test
    public void theRenderedPageIsNotBlank() throws Exception {
        Path html = inspectHtml(V120.resolve("stale-union"));
        Path png = tmp.newFolder().toPath().resolve("shot.png");
        chromium(html, "--hide-scrollbars", "--window-size=1280,1600", "--screenshot=" + png);
        BufferedImage img = ImageIO.read(png.toFile());
        assertEquals(1280, img.getWidth());
        int background = img.getRGB(0, 0), other = 0;
        Set<Integer> colours = new HashSet<>();
        for (int y = 0; y < img.getHeight(); y++) {
            for (int x = 0; x < img.getWidth(); x++) {
                int c = img.getRGB(x, y);
                if (c != background) other++;
                colours.add(c & 0xf0f0f0);
            }
        }
        double share = other / (double) (img.getWidth() * img.getHeight());
        assertTrue("share of non-background pixels " + share, share > 0.2);
        assertTrue("distinct colours " + colours.size(), colours.size() >= 12);
    }

    @Test
    public void historyShowsTheChartTheSeriesAndTheUnionThatGrowsByTheParallelism() throws Exception {
        for (Path v : GrowthTest.versions()) {
            List<String> args = new ArrayList<>(List.of("history"));
            for (String step : GrowthTest.STEPS) args.add(v.resolve(step).toString());
            Path html = tmp.newFolder().toPath().resolve("history.html");
            args.addAll(List.of("--html", html.toString()));
            CheckpointSurgeonTest.Result r = CheckpointSurgeonTest.run(args.toArray(new String[0]));
            assertEquals(r.err, 4, r.code);
            assertTrue(r.out, r.out.contains("UNION_STATE_GROWS_BY_PARALLELISM"));
            selfContained(Files.readString(html));
            String dom = chromium(html, "--dump-dom");
            assertTrue(v + "\n" + dom, dom.contains("<svg") && dom.contains("<polyline"));
            assertTrue(dom.contains("UNION_STATE_GROWS_BY_PARALLELISM"));
            List<InspectReport> reports = new ArrayList<>();
            for (String step : GrowthTest.STEPS) reports.add(CheckpointSurgeon.inspect(v.resolve(step)));
            Growth.History h = Growth.history(reports);
            for (Growth.Series s : h.series()) {
                assertTrue(s.state(), dom.contains(">" + s.state() + "<"));
                for (long e : s.elements()) {
                    assertTrue(s.state(), dom.contains(e < 0 ? ">-<" : String.format(Locale.ROOT, ">%,d<", e)));
                }
            }
            // the bytes of the newest checkpoint
            InspectReport newest = reports.get(reports.size() - 1);
            assertTrue(dom.contains(">Newest checkpoint " + newest.checkpointId() + "<"));
            for (InspectReport.OperatorInfo op : newest.operators()) {
                assertTrue(op.id(), dom.contains(op.id()));
                for (InspectReport.StateTotal t : op.stateTotals()) {
                    assertTrue(dom.contains(">" + InspectReport.formatBytes(t.bytes()) + "<"));
                }
            }
        }
    }

    @Test
    public void neverWritesOverAFileOrThroughASymlink() throws Exception {
        Path dir = tmp.newFolder().toPath();
        Path existing = Files.writeString(dir.resolve("existing.html"), "keep");
        Path target = Files.writeString(dir.resolve("target.html"), "keep too");
        Path link = Files.createSymbolicLink(dir.resolve("link.html"), target);
        Path dangling = Files.createSymbolicLink(dir.resolve("dangling.html"), dir.resolve("absent.html"));
        String cp = V120.resolve("stale-union").toString();
        for (Path to : List.of(existing, link, dangling)) {
            for (String[] args : List.of(new String[] {"inspect", cp, "--html", to.toString()},
                    new String[] {"history", V120.resolve("stale-union-restore-2").toString(), cp, "--html", to.toString()})) {
                CheckpointSurgeonTest.Result r = CheckpointSurgeonTest.run(args);
                assertEquals(String.join(" ", args) + ": " + r.err, 2, r.code);
                assertTrue(r.err, r.err.contains("--html writes a new file, never over an existing one"));
            }
        }
        assertEquals("keep", Files.readString(existing));
        assertEquals("keep too", Files.readString(target));
        assertTrue(Files.isSymbolicLink(link) && Files.isSymbolicLink(dangling));
        assertFalse(Files.exists(dir.resolve("absent.html"), LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    public void escapesOddStateNamesUidsAndPaths() throws Exception {
        for (String version : List.of("1.20.3", "2.3.0")) {
            // the fixture under a directory whose name is markup
            String odd = "chk <b>&\"'x</b>";
            Path cp = Files.createDirectories(tmp.newFolder().toPath().resolve(odd));
            try (Stream<Path> files = Files.list(CheckpointSurgeonTest.FIXTURES.resolve(version).resolve("odd-state-names"))) {
                for (Path f : (Iterable<Path>) files::iterator) Files.copy(f, cp.resolve(f.getFileName()));
            }
            Path html = inspectHtml(cp);
            String raw = Files.readString(html);
            assertFalse(raw.contains(odd));
            assertTrue(raw.contains("chk &lt;b&gt;&amp;&quot;&#39;x&lt;/b&gt;"));
            String dom = chromium(html, "--dump-dom");
            assertFalse("the name became markup", dom.contains("<b>&amp;"));
            String text = text(dom);
            assertTrue(text.contains(cp.resolve("_metadata").toString()));
            InspectReport r = CheckpointSurgeon.inspect(cp);
            int names = 0;
            for (InspectReport.OperatorInfo op : r.operators()) {
                if (!op.uid().isEmpty()) assertTrue(op.uid(), text.contains(shown(op.uid())));
                for (InspectReport.StateTotal t : op.stateTotals()) {
                    assertTrue(t.name(), text.contains(">" + shown(t.name()) + "<"));
                    names++;
                }
            }
            assertTrue(names >= 4);
            // a tab and a newline show as escapes, other characters as they are (UTF-8)
            assertTrue(text.contains(">offsets\\tv2<") && text.contains(">line\\nbreak<") && text.contains(">Zustand-ä✓<"));
            if (version.equals("2.3.0")) assertTrue(text.contains("odd\\tuid ü"));
        }
        // markup in a state name and a uid stays text
        InspectReport.StateInfo st = new InspectReport.StateInfo("<img src=x onerror=alert(1)>", InspectReport.Mode.UNION, 3, 30, "", 1, 0, List.of());
        InspectReport.OperatorStateHandleInfo h = new InspectReport.OperatorStateHandleInfo("OperatorStreamStateHandle",
                "ByteStreamStateHandle", "inline", 40, true, 6, false, "", 10, List.of(st));
        InspectReport.OperatorInfo op = new InspectReport.OperatorInfo("0123456789abcdef0123456789abcdef", "</td><script>x",
                "'\"&", 1, 128, -1, false, 0, null, List.of(new InspectReport.SubtaskInfo(0, h, null, null, null, 0, 0, 0)));
        String page = HtmlReport.inspect(new InspectReport("/a&b/_metadata", 6, 1, 100, 0, List.of(), List.of(op)), List.of(), f -> "");
        assertFalse(page.contains("<img") || page.contains("<script"));
        assertTrue(page.contains("&lt;img src=x onerror=alert(1)&gt;") && page.contains("&lt;/td&gt;&lt;script&gt;x")
                && page.contains("&#39;&quot;&amp;") && page.contains("/a&amp;b/_metadata"));
    }
}
