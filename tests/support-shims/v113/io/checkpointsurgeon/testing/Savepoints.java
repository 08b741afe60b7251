package io.checkpointsurgeon.testing;

import org.apache.flink.core.execution.JobClient;

import java.util.concurrent.CompletableFuture;

/**
 * Savepoint calls of a {@link JobClient} on Flink 1.13 and 1.14: canonical savepoints only (native
 * savepoints came with FLIP-203 in 1.15); tests/support-shims/since115 has those of 1.15+.
 */
public final class Savepoints {
    private Savepoints() {}

    public static CompletableFuture<String> trigger(JobClient client, String dir, boolean nativeFormat) {
        canonicalOnly(nativeFormat);
        return client.triggerSavepoint(dir);
    }

    public static CompletableFuture<String> stop(JobClient client, String dir, boolean nativeFormat) {
        canonicalOnly(nativeFormat);
        return client.stopWithSavepoint(false, dir);
    }

    private static void canonicalOnly(boolean nativeFormat) {
        if (nativeFormat) {
            throw new UnsupportedOperationException("native savepoints need Flink 1.15+");
        }
    }
}
