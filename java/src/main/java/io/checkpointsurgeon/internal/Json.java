package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.Growth;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Parameter;
import java.util.Collection;
import java.util.Map;
import java.util.function.Function;

/**
 * A minimal JSON writer for the report value classes: the parameters of a class's widest
 * constructor (compiled with {@code -parameters}) become fields, in their order, read from the
 * fields of the same names; an enum (and {@link Growth.StateMode}, an operator state's mode or a
 * keyed state's kind) is its {@code toString()}, a {@code Map} an object in its
 * iteration order. And a reader for Flink's REST answers ({@link #parse}). Not API.
 */
public final class Json {
    private Json() {}

    public static String write(Object value) {
        return write(value, Enum::toString);
    }

    /** {@link #write(Object)} with each enum constant spelled by {@code spelling} (an application's word for it). */
    public static String write(Object value, Function<Enum<?>, String> spelling) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0, spelling);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent, Function<Enum<?>, String> spelling) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Message) {
            string(sb, ((Message) v).render(spelling::apply));
        } else if (v instanceof String) {
            string(sb, (String) v);
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Enum<?>) {
            string(sb, spelling.apply((Enum<?>) v));
        } else if (v instanceof Growth.StateMode) {
            string(sb, v.toString());
        } else if (v instanceof Map<?, ?>) {
            Map<?, ?> m = (Map<?, ?>) v;
            sb.append("{\n");
            int i = 0;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                pad(sb, indent + 1);
                string(sb, String.valueOf(e.getKey()));
                sb.append(": ");
                write(sb, e.getValue(), indent + 1, spelling);
                sb.append(++i < m.size() ? ",\n" : "\n");
            }
            pad(sb, indent);
            sb.append('}');
        } else if (v instanceof Collection<?>) {
            Collection<?> c = (Collection<?>) v;
            if (c.isEmpty()) {
                sb.append("[]");
                return;
            }
            sb.append("[\n");
            int i = 0;
            for (Object o : c) {
                pad(sb, indent + 1);
                write(sb, o, indent + 1, spelling);
                sb.append(++i < c.size() ? ",\n" : "\n");
            }
            pad(sb, indent);
            sb.append(']');
        } else if (v.getClass().getName().startsWith("io.checkpointsurgeon.")) {
            Parameter[] ps = components(v.getClass());
            sb.append("{\n");
            for (int i = 0; i < ps.length; i++) {
                pad(sb, indent + 1);
                string(sb, ps[i].getName());
                sb.append(": ");
                try {
                    Field f = v.getClass().getDeclaredField(ps[i].getName());
                    f.setAccessible(true);
                    write(sb, f.get(v), indent + 1, spelling);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(v.getClass() + " is no value class for JSON", e);
                }
                sb.append(i + 1 < ps.length ? ",\n" : "\n");
            }
            pad(sb, indent);
            sb.append('}');
        } else {
            string(sb, v.toString());
        }
    }

    private static Parameter[] components(Class<?> c) {
        Constructor<?> widest = null;
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (widest == null || k.getParameterCount() > widest.getParameterCount()) widest = k;
        }
        Parameter[] ps = widest == null ? new Parameter[0] : widest.getParameters();
        if (ps.length > 0 && !ps[0].isNamePresent()) {
            throw new IllegalStateException(c + ": compile with -parameters for JSON field names");
        }
        return ps;
    }

    private static void pad(StringBuilder sb, int indent) {
        sb.append("  ".repeat(indent));
    }

    /**
     * JSON requires C0 escaped; DEL, C1 and the bidirectional formatting and line separator
     * characters are escaped too, so that JSON read on a terminal carries no control character.
     */
    private static boolean escaped(char c) {
        return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f
                || (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') sb.append("\\\"");
            else if (c == '\\') sb.append("\\\\");
            else if (c == '\n') sb.append("\\n");
            else if (c == '\r') sb.append("\\r");
            else if (c == '\t') sb.append("\\t");
            else if (escaped(c)) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }

    /**
     * Parses JSON text into {@code Map<String, Object>} (insertion-ordered), {@code List<Object>},
     * {@code String}, {@code Double}, {@code Boolean} or null.
     *
     * @throws IllegalArgumentException on malformed input, naming the character offset
     */
    public static Object parse(String text) {
        Reader r = new Reader(text);
        Object v = r.value();
        r.skipSpace();
        if (r.at < text.length()) throw r.error("end of input");
        return v;
    }

    private static final class Reader {
        final String s;
        int at;

        Reader(String s) {
            this.s = s;
        }

        IllegalArgumentException error(String expected) {
            return new IllegalArgumentException("JSON at offset " + at + ": expected " + expected);
        }

        void skipSpace() {
            while (at < s.length() && Character.isWhitespace(s.charAt(at))) at++;
        }

        boolean take(char c) {
            skipSpace();
            if (at < s.length() && s.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        Object value() {
            skipSpace();
            if (at >= s.length()) throw error("a value");
            char c = s.charAt(at);
            if (c == '{') {
                at++;
                java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
                if (take('}')) return m;
                do {
                    skipSpace();
                    String k = string();
                    if (!take(':')) throw error("':'");
                    m.put(k, value());
                } while (take(','));
                if (!take('}')) throw error("',' or '}'");
                return m;
            }
            if (c == '[') {
                at++;
                java.util.List<Object> l = new java.util.ArrayList<>();
                if (take(']')) return l;
                do {
                    l.add(value());
                } while (take(','));
                if (!take(']')) throw error("',' or ']'");
                return l;
            }
            if (c == '"') return string();
            for (String word : new String[] {"true", "false", "null"}) {
                if (s.startsWith(word, at)) {
                    at += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            int start = at;
            while (at < s.length() && "+-0123456789.eE".indexOf(s.charAt(at)) >= 0) at++;
            try {
                return Double.valueOf(s.substring(start, at));
            } catch (NumberFormatException e) {
                at = start;
                throw error("a value");
            }
        }

        String string() {
            if (at >= s.length() || s.charAt(at) != '"') throw error("a string");
            StringBuilder sb = new StringBuilder();
            for (at++; at < s.length(); at++) {
                char c = s.charAt(at);
                if (c == '"') {
                    at++;
                    return sb.toString();
                }
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                if (++at >= s.length()) break;
                char e = s.charAt(at);
                if (e == 'u' && at + 4 < s.length()) {
                    sb.append((char) Integer.parseInt(s.substring(at + 1, at + 5), 16));
                    at += 4;
                } else {
                    sb.append(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e);
                }
            }
            throw error("the end of a string");
        }
    }
}
