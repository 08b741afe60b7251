package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.HaCheckpoint;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.Path;
import java.util.List;

/**
 * A Flink object in memory as a unit of the commit sequence: stage writes new state files into
 * the checkpoint directory (locked), validate is Flink's loader building the new object, and the
 * switch hands it over. The object is Flink's {@code CheckpointMetadata} (a new one is returned)
 * or a {@code CompletedCheckpoint} (repaired in place).
 */
abstract class FlinkObjectRepair implements Commit.Unit {
    final String name;
    final Path dir;
    final Request request;
    Commit.StagedBytes staged;
    Object loaded;

    FlinkObjectRepair(String name, Path dir, Surgery surgery) {
        this.name = name;
        this.dir = dir == null ? null : dir.toAbsolutePath().normalize();
        this.request = Request.of(surgery);
    }

    abstract byte[] metadataBytes() throws CheckpointSurgeonException;

    abstract Object load(byte[] metadata) throws CheckpointSurgeonException;

    abstract void switchTo(Object loaded) throws CheckpointSurgeonException;

    /** Flink serializes {@code checkpointMetadata}, the native code rewrites it, and Flink's loader reads the result. */
    static Object applyToMetadata(Object checkpointMetadata, Surgery surgery, Path checkpointDir)
            throws CheckpointSurgeonException {
        HaCheckpoint.requireFlink(Path.of("CheckpointMetadata"));
        FlinkObjectRepair unit = new FlinkObjectRepair("CheckpointMetadata", checkpointDir, surgery) {
            @Override
            byte[] metadataBytes() throws CheckpointSurgeonException {
                try {
                    return HaCheckpoint.store(checkpointMetadata);
                } catch (InvocationTargetException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "Flink could not serialize the checkpoint"
                            + " metadata: " + e.getCause(), e.getCause());
                } catch (ReflectiveOperationException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "Flink's checkpoint classes are not usable: "
                            + e, e);
                }
            }

            @Override
            Object load(byte[] metadata) throws CheckpointSurgeonException {
                try {
                    return HaCheckpoint.load(metadata, dir == null ? null : dir.toString());
                } catch (InvocationTargetException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "Flink rejected the new checkpoint metadata: "
                            + e.getCause(), e.getCause());
                } catch (ReflectiveOperationException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "Flink's checkpoint classes are not usable: "
                            + e, e);
                }
            }

            @Override
            void switchTo(Object loaded) {
                // the caller receives the new object
            }
        };
        Commit.runOne(unit);
        return unit.loaded;
    }

    /** Flink's {@code CompletedCheckpoint}'s operator states are replaced by the repaired ones Flink's loader read back. */
    static SurgeryPlan applyToCompletedCheckpoint(Object completedCheckpoint, Surgery surgery)
            throws CheckpointSurgeonException {
        HaCheckpoint.requireFlink(Path.of("CompletedCheckpoint"));
        HaCheckpoint ha = HaCheckpoint.of(completedCheckpoint);
        return Commit.runOne(new FlinkObjectRepair("CompletedCheckpoint " + ha.checkpointId, ha.checkpointDir(), surgery) {
            @Override
            byte[] metadataBytes() throws CheckpointSurgeonException {
                return ha.metadataBytes();
            }

            @Override
            Object load(byte[] metadata) throws CheckpointSurgeonException {
                try {
                    return HaCheckpoint.load(metadata, ha.externalPointer);
                } catch (InvocationTargetException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, name + ": Flink's loader rejected the repaired"
                            + " metadata: " + e.getCause(), e.getCause());
                } catch (ReflectiveOperationException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, name + ": " + e, e);
                }
            }

            @Override
            void switchTo(Object loaded) throws CheckpointSurgeonException {
                ha.replaceOperatorStates(staged.metadata);
            }
        });
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void lock(Commit.Locks locks, Commit.Undo undo) throws CheckpointSurgeonException {
        if (dir != null) locks.lock(dir);
    }

    @Override
    public boolean stage(Commit.Undo undo) throws CheckpointSurgeonException {
        staged = Commit.stageBytes(metadataBytes(), name, dir, request, undo);
        return true;
    }

    @Override
    public SurgeryPlan.Validation validate() throws CheckpointSurgeonException {
        loaded = load(staged.metadata);
        return SurgeryPlan.Validation.loadedByFlink(FlinkJudge.flinkVersion(), "");
    }

    @Override
    public void place(Commit.Undo undo) {
        // new state files are already in the checkpoint directory
    }

    @Override
    public String backup(Commit.Undo undo) {
        return null;
    }

    @Override
    public void switchOver() throws CheckpointSurgeonException {
        switchTo(loaded);
    }

    @Override
    public SurgeryPlan result(String backup, SurgeryPlan.Validation validation) {
        return staged.staged.plan.withResult(new SurgeryPlan.Result(name, staged.metadata.length,
                staged.staged.written, List.of(), List.of(), null, validation));
    }
}
