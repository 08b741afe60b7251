package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.Surgery;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * A surgery as the native library gets it: the user's {@link Surgery} plus what the repair route
 * decides about it, the directory whose unchanged files the new metadata references, and the
 * relocations that already moved a path outside {@code _metadata} (an HA file's pointers).
 */
final class Request {
    final Surgery surgery;
    /** The source directory the unchanged files are referenced in (a Flink path or file: URI), or null. */
    final String referencedSource;
    /** Indexes (among the relocations, in order) of those that moved a path outside {@code _metadata}. */
    final Set<Integer> outside;

    private Request(Surgery surgery, String referencedSource, Set<Integer> outside) {
        this.surgery = Objects.requireNonNull(surgery, "surgery");
        this.referencedSource = referencedSource;
        this.outside = Set.copyOf(outside);
    }

    static Request of(Surgery surgery) {
        return new Request(surgery, null, Set.of());
    }

    /** This request with the unchanged files referenced in {@code sourceDir}. */
    Request referencing(String sourceDir) {
        return new Request(surgery, sourceDir, outside);
    }

    /** This request with its {@code n}-th relocation marked as having moved a path outside {@code _metadata}. */
    Request withOutsideRelocated(int n) {
        Set<Integer> o = new HashSet<>(outside);
        o.add(n);
        return new Request(surgery, referencedSource, o);
    }
}
