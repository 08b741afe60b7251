package io.checkpointsurgeon.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.util.Locale;

/**
 * The one place where text meets a terminal. Every string that comes from a checkpoint, a path or
 * an argument is made safe here before it is printed: control characters (C0 with tab, line feed
 * and carriage return, DEL, the C1 range U+0080-U+009F) and the bidirectional formatting and line
 * separator characters are shown as escapes ({@code \t}, {@code \n}, {@code \u001b}), so no escape
 * sequence reaches the terminal and no value breaks a line or reorders one; a value longer than
 * {@value #LIMIT} characters shows its beginning and its end with its length between.
 *
 * <p>{@link #safe} takes one value (a name, a path, a command line) or one message (an error, a
 * progress line: the library's messages are one line each). {@link #writer} is the last guard:
 * the CLI's output and error streams go through it, so a value a renderer did not pass through
 * {@link #safe} still cannot carry a control character to the terminal (only line feeds pass).
 */
final class Terminal {
    /** Longer values and lines are shortened. */
    static final int LIMIT = 1000;
    private static final int HEAD = 600;
    private static final int TAIL = 300;

    private Terminal() {}

    /** One value or message on one line: every control character escaped, shortened above {@value #LIMIT} characters. */
    static String safe(Object value) {
        String s = String.valueOf(value);
        if (s.length() <= LIMIT) return escape(s);
        int head = boundary(s, HEAD);
        int tail = boundary(s, s.length() - TAIL);
        return escape(s.substring(0, head)) + String.format(Locale.ROOT, "...(%,d characters)...", s.length())
                + escape(s.substring(tail));
    }

    /** Whether a character is shown escaped: C0, DEL, C1, bidirectional formatting, line and paragraph separators. */
    static boolean escaped(char c) {
        return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f
                || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
    }

    /** The escape of one character ({@link #escaped}, or half of a broken surrogate pair). */
    static String escape(char c) {
        switch (c) {
            case '\t':
                return "\\t";
            case '\n':
                return "\\n";
            case '\r':
                return "\\r";
            default:
                return String.format(Locale.ROOT, "\\u%04x", (int) c);
        }
    }

    private static String escape(String s) {
        StringBuilder b = null;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7f) {
                // printable ASCII, most of every line: no call per character (the CLI runs interpreted)
                if (b != null) b.append(c);
                continue;
            }
            boolean lone = Character.isHighSurrogate(c) ? i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))
                    : Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(s.charAt(i - 1)));
            if (escaped(c) || lone) {
                if (b == null) b = new StringBuilder(s.length() + 16).append(s, 0, i);
                b.append(escape(c));
            } else if (b != null) {
                b.append(c);
            }
        }
        return b == null ? s : b.toString();
    }

    /** {@code i}, moved off the middle of a surrogate pair. */
    private static int boundary(String s, int i) {
        return i > 0 && i < s.length() && Character.isLowSurrogate(s.charAt(i)) && Character.isHighSurrogate(s.charAt(i - 1))
                ? i + 1 : i;
    }

    /** A print writer onto {@code out} (the platform's charset) that lets no control character but the line feed through. */
    static PrintWriter writer(OutputStream out) {
        return new PrintWriter(new Guard(new OutputStreamWriter(out)), true);
    }

    /** Escapes every {@link #escaped} character except the line feed on its way through. */
    private static final class Guard extends Writer {
        private final Writer out;

        Guard(Writer out) {
            this.out = out;
        }

        @Override
        public void write(char[] buf, int off, int len) throws IOException {
            int start = off;
            for (int i = off; i < off + len; i++) {
                char c = buf[i];
                if ((c < 0x20 || c >= 0x7f) && c != '\n' && escaped(c)) {
                    out.write(buf, start, i - start);
                    out.write(escape(c));
                    start = i + 1;
                }
            }
            out.write(buf, start, off + len - start);
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }
}
