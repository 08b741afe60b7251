package io.checkpointsurgeon.testing;

import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;

import java.util.concurrent.CompletableFuture;

/**
 * Savepoint calls of a {@link JobClient} on Flink 1.15+, which takes a savepoint format (canonical
 * or native); tests/support-shims/v113 has those of 1.13 and 1.14 (canonical only).
 */
public final class Savepoints {
    private Savepoints() {}

    public static CompletableFuture<String> trigger(JobClient client, String dir, boolean nativeFormat) {
        return client.triggerSavepoint(dir, format(nativeFormat));
    }

    public static CompletableFuture<String> stop(JobClient client, String dir, boolean nativeFormat) {
        return client.stopWithSavepoint(false, dir, format(nativeFormat));
    }

    private static SavepointFormatType format(boolean nativeFormat) {
        return nativeFormat ? SavepointFormatType.NATIVE : SavepointFormatType.CANONICAL;
    }
}
