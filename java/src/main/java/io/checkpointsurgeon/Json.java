package io.checkpointsurgeon;

import java.lang.reflect.RecordComponent;
import java.util.Collection;

/** A minimal JSON writer for the report records: components become fields, in declaration order. */
final class Json {
    private Json() {}

    static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.append('\n').toString();
    }

    private static void write(StringBuilder sb, Object v, int indent) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof String s) {
            string(sb, s);
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Collection<?> c) {
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
        } else if (v.getClass().isRecord()) {
            RecordComponent[] rc = v.getClass().getRecordComponents();
            sb.append("{\n");
            for (int i = 0; i < rc.length; i++) {
                pad(sb, indent + 1);
                string(sb, rc[i].getName());
                sb.append(": ");
                try {
                    write(sb, rc[i].getAccessor().invoke(v), indent + 1);
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
                sb.append(i + 1 < rc.length ? ",\n" : "\n");
            }
            pad(sb, indent);
            sb.append('}');
        } else {
            string(sb, v.toString());
        }
    }

    private static void pad(StringBuilder sb, int indent) {
        sb.append("  ".repeat(indent));
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }
}
