package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import java.nio.file.Path;
import java.util.List;

/**
 * The entry points of the repair routes, each a unit of the one commit sequence ({@link Commit}) or
 * a plan that writes nothing: a local checkpoint, a checkpoint on a Flink file system, HA files,
 * Flink's own objects. Not API: {@link CheckpointSurgeon} calls these.
 */
public final class Repairs {
    private Repairs() {}

    /** The plan of a surgery on a local checkpoint; writes nothing. */
    public static SurgeryPlan planLocal(Path checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        return LocalRepair.plan(checkpoint, surgery);
    }

    /** Repairs a local checkpoint into {@code outputDir} (new or empty), or in place when it is null. */
    public static SurgeryPlan applyLocal(Path checkpoint, Surgery surgery, Path outputDir)
            throws CheckpointSurgeonException {
        return Commit.runOne(new LocalRepair(checkpoint, Request.of(surgery), outputDir));
    }

    /** Inspects a checkpoint on a Flink file system through a local mirror of its operator state. */
    public static InspectReport inspectRemote(String path) throws CheckpointSurgeonException {
        return RemoteRepair.inspect(path);
    }

    /** The plan of a surgery on a checkpoint on a Flink file system; writes nothing. */
    public static SurgeryPlan planRemote(String path, Surgery surgery) throws CheckpointSurgeonException {
        return RemoteRepair.plan(path, surgery);
    }

    /** Repairs a checkpoint on a Flink file system into {@code outputDir}, or in place when it is null. */
    public static SurgeryPlan applyRemote(String path, Surgery surgery, String outputDir)
            throws CheckpointSurgeonException {
        if (surgery.runsOnFlink()) {
            // the tasks rewrite into local files of the stage; the remote route uploads from one machine
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, Message.of(path + ": ",
                    Choice.ON_FLINK, " rewrites checkpoints on a path every TaskManager reads as a local file (one"
                    + " machine, or a shared file system mounted at the same path); for a Flink path, run without ",
                    Choice.ON_FLINK));
        }
        return RemoteRepair.apply(path, surgery, outputDir);
    }

    /** The plan of a surgery on an HA file; writes nothing. */
    public static SurgeryPlan planHa(Path haFile, Surgery surgery) throws CheckpointSurgeonException {
        return HaFileRepair.plan(haFile, surgery);
    }

    /** The plans of a surgery on many HA files ({@code PLANNED} or {@code SKIPPED} each); writes nothing. */
    public static List<CheckpointSurgeon.HaRepair> planHa(List<Path> haFiles, Surgery surgery)
            throws CheckpointSurgeonException {
        return HaFileRepair.plan(haFiles, surgery);
    }

    /** Repairs one HA file in place. */
    public static SurgeryPlan repairHa(Path haFile, Surgery surgery) throws CheckpointSurgeonException {
        return Commit.runOne(new HaFileRepair(haFile, surgery, false));
    }

    /** Repairs many HA files all-or-nothing ({@code SWITCHED} or {@code SKIPPED} each). */
    public static List<CheckpointSurgeon.HaRepair> repairHa(List<Path> haFiles, Surgery surgery)
            throws CheckpointSurgeonException {
        return HaFileRepair.repair(haFiles, surgery);
    }

    /** A surgery on Flink's {@code CheckpointMetadata}: returns the new one. */
    public static Object applyToCheckpointMetadata(Object checkpointMetadata, Surgery surgery, Path checkpointDir)
            throws CheckpointSurgeonException {
        return FlinkObjectRepair.applyToMetadata(checkpointMetadata, surgery, checkpointDir);
    }

    /** A surgery on Flink's {@code CompletedCheckpoint}, in place. */
    public static SurgeryPlan applyToCompletedCheckpoint(Object completedCheckpoint, Surgery surgery)
            throws CheckpointSurgeonException {
        return FlinkObjectRepair.applyToCompletedCheckpoint(completedCheckpoint, surgery);
    }
}
