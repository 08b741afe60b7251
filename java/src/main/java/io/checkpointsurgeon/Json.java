package io.checkpointsurgeon;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Parameter;
import java.util.Collection;

/**
 * A minimal JSON writer for the report value classes: the parameters of a class's widest
 * constructor (compiled with {@code -parameters}) become fields, in their order, read from the
 * fields of the same names.
 */
public final class Json {
    private Json() {}

    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String) {
            string(sb, (String) v);
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
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
                write(sb, o, indent + 1);
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
                    write(sb, f.get(v), indent + 1);
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

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') sb.append("\\\"");
            else if (c == '\\') sb.append("\\\\");
            else if (c == '\n') sb.append("\\n");
            else if (c == '\r') sb.append("\\r");
            else if (c == '\t') sb.append("\\t");
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
    }
}
