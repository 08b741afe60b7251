package io.checkpointsurgeon;

import java.util.Objects;

/**
 * A value class's {@code equals}, {@code hashCode} and {@code toString} from its components, as a
 * record derives them (the library targets Java 11, before records): one list per class, so a
 * component added to a class cannot be left out of one of the three.
 */
abstract class Value {
    /** The components in declaration order, as name, value, name, value, ... */
    abstract Object[] components();

    @Override
    public final boolean equals(Object o) {
        if (this == o) return true;
        if (o == null || o.getClass() != getClass()) return false;
        Object[] a = components(), b = ((Value) o).components();
        for (int i = 1; i < a.length; i += 2) {
            if (!Objects.equals(a[i], b[i])) return false;
        }
        return true;
    }

    /** {@link Objects#hash} of the values. */
    @Override
    public final int hashCode() {
        Object[] a = components();
        int h = 1;
        for (int i = 1; i < a.length; i += 2) h = 31 * h + Objects.hashCode(a[i]);
        return h;
    }

    /** {@code Name[a=1, b=x]}, as a record prints itself. */
    @Override
    public String toString() {
        Object[] a = components();
        StringBuilder b = new StringBuilder(getClass().getSimpleName()).append('[');
        for (int i = 0; i < a.length; i += 2) {
            if (i > 0) b.append(", ");
            b.append(a[i]).append('=').append(a[i + 1]);
        }
        return b.append(']').toString();
    }
}
