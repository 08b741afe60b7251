package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * How Flink's file systems are configured for Flink paths (s3://, hdfs://, gs://, ...): Flink's
 * jars must be on the class path; the file system plugin is loaded from the plugins directory.
 */
final class FlinkFileSystemMixin {
    @Option(names = "--flink-conf", paramLabel = "DIR", description = "Flink configuration directory (config.yaml or"
            + " flink-conf.yaml with s3.endpoint, s3.access-key, ...) for Flink paths; default FLINK_CONF_DIR or $FLINK_HOME/conf")
    Path flinkConf;

    @Option(names = "--plugins", paramLabel = "DIR", description = "Flink plugins directory (e.g. plugins/s3-fs-presto/*.jar)"
            + " for Flink paths; default FLINK_PLUGINS_DIR or $FLINK_HOME/plugins")
    Path plugins;

    /** Configures Flink's file systems when the path needs them and an option was given. */
    void apply(String path) throws CheckpointSurgeonException {
        if (CheckpointSurgeon.isFlinkPath(path)) configure();
    }

    /** Configures Flink's file systems when an option was given (paths not known in advance). */
    void configure() throws CheckpointSurgeonException {
        if (flinkConf != null || plugins != null) {
            String env = System.getenv("FLINK_CONF_DIR");
            String envPlugins = System.getenv("FLINK_PLUGINS_DIR");
            CheckpointSurgeon.configureFileSystems(
                    flinkConf != null ? flinkConf : env != null && !env.isEmpty() ? Path.of(env) : null,
                    plugins != null ? plugins : envPlugins != null && !envPlugins.isEmpty() ? Path.of(envPlugins) : null);
        }
    }
}
