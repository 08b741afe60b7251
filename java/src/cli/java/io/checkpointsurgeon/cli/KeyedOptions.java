package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;
import picocli.CommandLine.Option;

/** What the keyed-state surgeries share: {@code --threads} and {@code --on-flink}. */
final class KeyedOptions {
    @Option(names = "--threads", paramLabel = "N", description = "keyed state files rewritten at once (default: the "
            + "core count; with --on-flink, the job's parallelism, default the cluster's task slots)")
    Integer threads;

    @Option(names = "--on-flink", description = "rewrite the keyed state files as a Flink batch job (one task per "
            + "file, through the native library shipped in this jar), then write _metadata here through the same "
            + "commit sequence: for savepoints too large for one machine. Needs Flink's jars on the class path "
            + "($FLINK_HOME/lib/*), and a checkpoint and output every TaskManager reads at the same local path")
    boolean onFlink;

    @Option(names = "--jobmanager", paramLabel = "HOST:PORT", description = "with --on-flink: the cluster's REST "
            + "endpoint (default: a local MiniCluster in this process)")
    String jobManager;

    Surgery apply(Surgery s) {
        if (threads != null) s.threads(threads);
        if (jobManager != null && !onFlink) throw new IllegalArgumentException("--jobmanager goes with --on-flink");
        if (onFlink) {
            if (jobManager != null) s.onFlinkCluster(jobManager);
            else s.onFlink(null);
        }
        return s;
    }
}
