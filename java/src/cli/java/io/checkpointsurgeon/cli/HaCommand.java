package io.checkpointsurgeon.cli;

import picocli.CommandLine.Command;

/** The HA file commands, one subcommand each. */
@Command(name = "ha", mixinStandardHelpOptions = true,
        description = "HA CompletedCheckpoint files (ZooKeeper or Kubernetes HA storage dir) and the checkpoint"
                + " pointers to them. Needs the Flink jars of the cluster's version on the classpath.",
        subcommands = {HaListCommand.class, HaRepairCommand.class, HaRemoveCheckpointCommand.class})
final class HaCommand {
}
