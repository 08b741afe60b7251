package io.checkpointsurgeon.cli;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import org.junit.Test;

/** {@link Terminal}: what is escaped, how a long value is shortened, and the guard on the CLI's streams. */
public class TerminalTest {
    @Test
    public void controlAndBidiCharactersAreShownEscaped() {
        assertEquals("a\\u001b[2J\\u0007\\u0000\\r\\n\\t\\u007f\\u009b\\u0085b", Terminal.safe("a\u001b[2J\u0007\u0000\r\n\t\u007f\u009b\u0085b"));
        assertEquals("\\u202e\\u202a\\u2066\\u2069\\u200e\\u200f\\u061c\\u2028\\u2029",
                Terminal.safe("\u202e\u202a\u2066\u2069\u200e\u200f\u061c\u2028\u2029"));
        // printable text, non-ASCII letters and pairs of surrogates pass as they are; a lone half does not
        assertEquals("Zustand-ä✓ 😀 \"q\" \\ '", Terminal.safe("Zustand-ä✓ 😀 \"q\" \\ '"));
        assertEquals("x\\ud83dy", Terminal.safe("x\ud83dy"));
        assertEquals("null", Terminal.safe(null));
    }

    @Test
    public void aLongValueShowsItsBeginningItsEndAndItsLength() {
        String s = "a".repeat(600) + "\u001b" + "b".repeat(100_000) + "\u001b[2J";
        String shown = Terminal.safe(s);
        assertTrue(shown, shown.startsWith("a".repeat(600) + "...(100,605 characters)...b"));
        assertTrue(shown, shown.endsWith("b\\u001b[2J"));
        assertTrue(shown.length() < Terminal.LIMIT + 100);
        assertEquals("x".repeat(Terminal.LIMIT), Terminal.safe("x".repeat(Terminal.LIMIT)));
        // a pair of surrogates is never cut in half (both cuts fall between the halves of one here)
        String pairs = "x" + "😀".repeat(2000) + "x";
        String cut = Terminal.safe(pairs);
        assertTrue(cut, !cut.contains("\\ud83d") && !cut.contains("\\ude00"));
    }

    @Test
    public void theGuardLetsOnlyLineFeedsThrough() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintWriter w = Terminal.writer(bytes);
        w.print("line 1\nraw\u001b]0;t\u0007 \u009b\u202e\tend\n");
        w.flush();
        assertEquals("line 1\nraw\\u001b]0;t\\u0007 \\u009b\\u202e\\tend\n",
                new String(bytes.toByteArray(), Charset.defaultCharset()));
    }

    @Test
    public void shellWordsStayRunnableAndCarryNoControlCharacter() {
        assertEquals("chk-5/_metadata", TextRenderer.quote("chk-5/_metadata"));
        assertEquals("'chk 5'", TextRenderer.quote("chk 5"));
        assertEquals("'it'\\''s'", TextRenderer.quote("it's"));
        assertEquals("$'a\\x1b[2J\\x07\\ttab\\nnl\\'q\\\\b\\u202e\\u0085'",
                TextRenderer.quote("a\u001b[2J\u0007\ttab\nnl'q\\b\u202e\u0085"));
    }
}
