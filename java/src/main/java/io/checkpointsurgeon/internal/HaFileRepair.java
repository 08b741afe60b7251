package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.HaCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * An HA file as a unit of the commit sequence: stage writes the new state files into the
 * checkpoint's directory and the re-serialized CompletedCheckpoint as {@code <file>.tmp-<uuid>};
 * validate reads that file back; switch renames it over the HA file after a backup.
 */
final class HaFileRepair implements Commit.Unit {
    final Path file;
    private final Request request;
    private final boolean skipUnchanged;
    private HaCheckpoint ha;
    private Commit.StagedBytes staged;
    private Path tmp;
    private String identity;

    /** @param skipUnchanged a file in which the surgery selects nothing is skipped (a multi-file run) */
    HaFileRepair(Path file, Surgery surgery, boolean skipUnchanged) {
        this.file = file.toAbsolutePath().normalize();
        this.request = Request.of(surgery);
        this.skipUnchanged = skipUnchanged;
    }

    /** The plan of a surgery on an HA file; writes nothing. */
    static SurgeryPlan plan(Path haFile, Surgery surgery) throws CheckpointSurgeonException {
        HaCheckpoint ha = HaCheckpoint.read(haFile);
        Request r = relocatePointers(ha, Request.of(surgery));
        return Native.plan(Native.source(ha.metadataBytes(), haFile.toString(), ha.checkpointDir()), r);
    }

    /**
     * The plans of a surgery on many HA files, each reported to the progress listener as it starts;
     * a file in which it selects nothing is {@code SKIPPED}, and if it selects nothing in any file,
     * this throws {@code NOTHING_SELECTED}. Writes nothing.
     */
    static List<CheckpointSurgeon.HaRepair> plan(List<Path> haFiles, Surgery surgery) throws CheckpointSurgeonException {
        ProgressListener progress = CheckpointSurgeon.progressListener();
        List<CheckpointSurgeon.HaRepair> out = new ArrayList<>();
        boolean any = false;
        for (int i = 0; i < haFiles.size(); i++) {
            Path f = haFiles.get(i);
            progress.file(i + 1, haFiles.size(), f);
            try {
                out.add(new CheckpointSurgeon.HaRepair(f, CheckpointSurgeon.HaRepair.Status.PLANNED, plan(f, surgery)));
                any = true;
            } catch (CheckpointSurgeonException e) {
                if (e.code() != CheckpointSurgeonException.Code.NOTHING_SELECTED) throw e;
                out.add(new CheckpointSurgeon.HaRepair(f, CheckpointSurgeon.HaRepair.Status.SKIPPED, null));
            }
        }
        if (!any) throw nothingSelected(haFiles);
        return out;
    }

    /**
     * Repairs several HA files all-or-nothing through {@link Commit}: a file in which the surgery
     * selects nothing is {@code SKIPPED}; if it selects nothing in any file, this throws
     * {@code NOTHING_SELECTED}.
     */
    static List<CheckpointSurgeon.HaRepair> repair(List<Path> haFiles, Surgery surgery) throws CheckpointSurgeonException {
        List<HaFileRepair> units = new ArrayList<>();
        for (Path f : haFiles) units.add(new HaFileRepair(f, surgery, true));
        List<CheckpointSurgeon.HaRepair> out = new ArrayList<>();
        boolean any = false;
        for (Commit.Outcome o : Commit.run(units)) {
            any |= o.plan != null;
            out.add(new CheckpointSurgeon.HaRepair(((HaFileRepair) o.unit).file, o.plan == null
                    ? CheckpointSurgeon.HaRepair.Status.SKIPPED : CheckpointSurgeon.HaRepair.Status.SWITCHED, o.plan));
        }
        if (!any) throw nothingSelected(haFiles);
        return out;
    }

    private static CheckpointSurgeonException nothingSelected(List<Path> haFiles) {
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED,
                "the surgery selects nothing in any of the " + haFiles.size() + " HA file(s)");
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
        Request r = relocatePointers(ha, request);
        try {
            staged = Commit.stageBytes(ha.metadataBytes(), file.toString(), ha.checkpointDir(), r, undo);
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
    static Request relocatePointers(HaCheckpoint ha, Request request) throws CheckpointSurgeonException {
        Request out = request;
        List<String[]> relocations = relocations(request.surgery);
        for (int i = 0; i < relocations.size(); i++) {
            String[] r = relocations.get(i);
            if (ha.relocatePointers(p -> Native.relocatedPath(p, r[0], r[1])) > 0) out = out.withOutsideRelocated(i);
        }
        return out;
    }

    /** The relocations of a surgery, in order: {from, to} each. */
    private static List<String[]> relocations(Surgery surgery) {
        List<String[]> out = new ArrayList<>();
        surgery.accept(new Relocations(out));
        return out;
    }

    /** Collects the relocations of a surgery; every other operation is not the HA file's concern. */
    private static final class Relocations implements Surgery.Visitor {
        private final List<String[]> out;

        Relocations(List<String[]> out) {
            this.out = out;
        }

        @Override
        public void relocate(String fromPrefix, String toPrefix) {
            out.add(new String[] {fromPrefix, toPrefix});
        }

        @Override
        public void removeState(Surgery.OperatorSelector operators, String state) {
        }

        @Override
        public void removeOperator(Surgery.OperatorSelector operator) {
        }

        @Override
        public void dedupeUnion(Surgery.OperatorSelector operators, String state) {
        }

        @Override
        public void renameOperator(Surgery.OperatorSelector operator, String newUid, String newOperatorId,
                String newName) {
        }

        @Override
        public void migrateKafkaLegacy(Surgery.OperatorSelector operators, int enumeratorStateVersion,
                Integer parallelism, Surgery.KafkaStart offsetNotSet) {
        }

        @Override
        public void dropKafkaTopic(Surgery.OperatorSelector operators, String topic, Integer partition) {
        }

        @Override
        public void setKafkaOffsets(Surgery.OperatorSelector operators, String topic, Integer partition,
                Surgery.KafkaStart to) {
        }

        @Override
        public void removeKeyedState(Surgery.OperatorSelector operators, String state) {
        }

        @Override
        public void renameKeyedState(Surgery.OperatorSelector operators, String state, String newName) {
        }
    }

    @Override
    public SurgeryPlan.Validation validate() throws CheckpointSurgeonException {
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
        return SurgeryPlan.Validation.loadedByFlink(FlinkJudge.flinkVersion(),
                " into the CompletedCheckpoint and re-read from the new HA file");
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
    public SurgeryPlan result(String backup, SurgeryPlan.Validation validation) {
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
