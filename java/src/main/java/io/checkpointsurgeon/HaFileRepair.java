package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.HaCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * An HA file as a unit of the commit sequence: stage writes the new state files into the
 * checkpoint's directory and the re-serialized CompletedCheckpoint as {@code <file>.tmp-<uuid>};
 * validate reads that file back; switch renames it over the HA file after a backup.
 */
final class HaFileRepair implements Commit.Unit {
    final Path file;
    private final Surgery surgery;
    private final boolean skipUnchanged;
    private HaCheckpoint ha;
    private Commit.StagedBytes staged;
    private Path tmp;
    private String identity;

    /** @param skipUnchanged a file in which the surgery selects nothing is skipped (a multi-file run) */
    HaFileRepair(Path file, Surgery surgery, boolean skipUnchanged) {
        this.file = file.toAbsolutePath().normalize();
        this.surgery = surgery;
        this.skipUnchanged = skipUnchanged;
    }

    @Override
    public String name() {
        return file.toString();
    }

    @Override
    public void lock(Commit.Locks locks, Commit.Undo undo) throws CheckpointSurgeonException {
        if (!Files.isRegularFile(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, file + " is not a regular file");
        }
        locks.lock(file.getParent());
    }

    @Override
    public boolean stage(Commit.Undo undo) throws CheckpointSurgeonException {
        try {
            identity = Commit.identity(file);
        } catch (IOException e) {
            throw Commit.io(file.toString(), e);
        }
        ha = HaCheckpoint.read(file);
        Surgery s = relocatePointers(ha, surgery);
        try {
            staged = Commit.stageBytes(ha.metadataBytes(), file.toString(), ha.checkpointDir(), s, undo);
        } catch (CheckpointSurgeonException e) {
            if (skipUnchanged && e.code() == CheckpointSurgeonException.Code.NOTHING_SELECTED) return false;
            throw e;
        }
        ha.replaceOperatorStates(staged.metadata);
        for (int n = 0; ; n++) {
            Path t = file.resolveSibling(file.getFileName() + ".tmp-" + java.util.UUID.randomUUID());
            try {
                ha.serializeTo(t);
                tmp = t;
                undo.deleteLater(t);
                return true;
            } catch (CheckpointSurgeonException e) {
                if (!(e.getCause() instanceof java.nio.file.FileAlreadyExistsException) || n > 16) throw e;
            }
        }
    }

    /**
     * A relocation moves the HA file's pointers to the checkpoint first, so that its directory is
     * the new one; the surgery to run on its state then (which may find no path to move inside).
     */
    static Surgery relocatePointers(HaCheckpoint ha, Surgery surgery) throws CheckpointSurgeonException {
        Surgery s = surgery;
        List<String[]> relocations = surgery.relocations();
        for (int i = 0; i < relocations.size(); i++) {
            String[] r = relocations.get(i);
            if (ha.relocatePointers(p -> Native.relocatedPath(p, r[0], r[1])) > 0) s = s.withOutsideRelocated(i);
        }
        return s;
    }

    @Override
    public String validate() throws CheckpointSurgeonException {
        HaCheckpoint check = HaCheckpoint.read(tmp);
        if (check.checkpointId != ha.checkpointId) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, tmp + ": holds checkpoint " + check.checkpointId
                    + ", expected " + ha.checkpointId);
        }
        int ops = check.operatorCount();
        if (ops != staged.staged.operators) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, tmp + ": holds " + ops
                    + " operators, expected " + staged.staged.operators);
        }
        return "loaded by Flink " + FlinkJudge.flinkVersion() + " into the CompletedCheckpoint and re-read from"
                + " the new HA file";
    }

    @Override
    public void place(Commit.Undo undo) {
        // the new state files are already in the checkpoint's directory
    }

    @Override
    public String backup(Commit.Undo undo) throws CheckpointSurgeonException {
        return Commit.backup(file, undo).toString();
    }

    @Override
    public void switchOver() throws CheckpointSurgeonException {
        try {
            if (!Commit.identity(file).equals(identity)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + " was changed by someone else while it was"
                        + " repaired (is a JobManager running?); it was not switched");
            }
        } catch (IOException e) {
            throw Commit.io(file.toString(), e);
        }
        Commit.replace(tmp, file);
    }

    @Override
    public SurgeryPlan result(String backup, String validation) {
        long size;
        try {
            size = Files.size(file);
        } catch (IOException e) {
            size = -1;
        }
        return staged.staged.plan.withResult(new SurgeryPlan.Result(file.toString(), size, staged.staged.written,
                List.of(), List.of(), backup, validation));
    }
}
