package io.checkpointsurgeon.internal;

/**
 * This jar's version, written by the build from {@code project.version} (gradle/native.gradle): a
 * class, not a resource, so that no run opens the jar to read it (its zip index, ~10 ms of start-up).
 */
final class BuildVersion {
    private BuildVersion() {}

    /** A method, not a constant: a constant would be compiled into its callers. */
    static String version() {
        return "${version}";
    }
}
