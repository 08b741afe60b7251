package io.checkpointsurgeon.cli;

/**
 * A POJO whose class file {@link HostileNamesTest#hostilePojoClass} loads once more under a name of
 * as many bytes that carries ESC, BEL, C1's CSI, CR, LF and a bidi override (a class name may: the
 * JVM forbids only {@code . ; [ /} in it), so that Flink's PojoSerializerSnapshot of a keyed state
 * writes that name into the checkpoint's meta info.
 */
public class PojoOfHostileName {
    public long count;
    public String text;

    public PojoOfHostileName() {}
}
