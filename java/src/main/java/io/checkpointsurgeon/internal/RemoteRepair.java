package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.RangedReads;
import io.checkpointsurgeon.flink.RemoteCheckpoint;
import io.checkpointsurgeon.flink.StateFile;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Surgery on a checkpoint on a Flink file system: the remote checkpoint is staged in a local mirror
 * ({@link RemoteCheckpoint}), the native library works on the mirror, and the commit unit uploads
 * what it wrote. Keyed state is not mirrored: a keyed surgery reads it in ranges through Flink's
 * FileSystem (a canonical stream front to back, an SST file's properties), and a rewritten keyed
 * stream is written straight into the target under a fresh name as it is rewritten, so the local
 * disk holds the mirrored operator state and the new {@code _metadata} only.
 */
final class RemoteRepair {
    private RemoteRepair() {}

    /** Reads a remote checkpoint's {@code _metadata} and mirrors the files of its operator state handles. */
    static RemoteCheckpoint stage(String path) throws CheckpointSurgeonException {
        RemoteCheckpoint rc = RemoteCheckpoint.open(path);
        try {
            rc.download(Native.stateFiles(source(rc)), CheckpointSurgeon.progressListener());
            return rc;
        } catch (CheckpointSurgeonException | RuntimeException e) {
            rc.close();
            throw e;
        }
    }

    /** The wire source of a mirrored checkpoint: its metadata, its local mirror and the mirrored job directory. */
    static byte[] source(RemoteCheckpoint rc) {
        return Wire.source(rc.metadata, rc.metadataPath, rc.mirrorDir.toString(), rc.mirrors());
    }


    static InspectReport inspect(String path) throws CheckpointSurgeonException {
        try (RemoteCheckpoint rc = stage(path)) {
            return Native.inspect(source(rc));
        }
    }

    static SurgeryPlan plan(String path, Surgery surgery) throws CheckpointSurgeonException {
        try (RemoteCheckpoint rc = stage(path); RangedReads files = new RangedReads()) {
            Request r = Request.of(surgery);
            return Native.plan(source(rc), surgery.referencesUnchangedFiles() ? r.referencing(rc.dir) : r, null, null,
                    rc.dir, files).plan;
        }
    }

    /**
     * Above this many bytes of relative state files, a repair into a new directory on a Flink file
     * system references them where they are instead of copying them, unless the surgery asks for
     * copies ({@link Surgery#copyUnchangedFiles()}); {@code -Dcheckpointsurgeon.referenceThreshold}
     * (bytes) overrides it.
     */
    static final long REFERENCE_THRESHOLD = Long.getLong("checkpointsurgeon.referenceThreshold", 1L << 30);

    /** The request as a repair of {@code rc} into a new output applies it: referencing, or not. */
    static Request forOutput(RemoteCheckpoint rc, Request request) throws CheckpointSurgeonException {
        if (request.surgery.referencesUnchangedFiles()) return request.referencing(rc.dir);
        if (request.surgery.copiesUnchangedFiles()) return request;
        long total = 0;
        for (StateFile f : Native.stateFiles(source(rc))) {
            if (f.kind() != StateFile.Kind.RELATIVE) continue;
            try {
                total += FlinkFileSystems.length(rc.dir + "/" + f.path());
            } catch (IOException e) {
                throw RemoteCheckpoint.io(rc.dir + "/" + f.path(), e);
            }
        }
        if (total <= REFERENCE_THRESHOLD) return request;
        CheckpointSurgeon.progressListener().message(Message.of(String.format(Locale.ROOT, "the relative state files"
                + " of %s hold %s (more than %s): the new _metadata references the unchanged ones there instead of"
                + " copying them (", rc.dir, InspectReport.formatBytes(total), InspectReport.formatBytes(REFERENCE_THRESHOLD)),
                Choice.COPY_UNCHANGED, " copies them)"));
        return request.referencing(rc.dir);
    }

    /** Applies a surgery to a remote checkpoint through {@link Commit}. {@code outputDir} null means in place. */
    static SurgeryPlan apply(String path, Surgery surgery, String outputDir) throws CheckpointSurgeonException {
        FlinkFileSystems.ensureConfigured();
        return Commit.runOne(new Unit(path, Request.of(surgery), outputDir));
    }

    /**
     * A checkpoint on a Flink file system as a unit of the commit sequence. Object stores have no
     * atomic create-if-absent or rename, so two things are weaker than on a local disk, and said so:
     * the lock is a lock object ({@value RemoteCheckpoint#LOCK_NAME}) created after checking that none exists, and an
     * in-place switch overwrites {@code _metadata} with one PUT (readers see the old or the new file
     * whole); on a file system such as HDFS the new file is renamed into place instead.
     */
    static final class Unit implements Commit.Unit {
        private final String path;
        private final Request request;
        private final boolean inPlace;
        private final String outputDir;
        private String target;
        private RemoteCheckpoint rc;
        private Staged staged;
        private byte[] newMetadata;
        private long liveLength;
        private final List<String> written = new ArrayList<>();
        private final List<String> copied = new ArrayList<>();
        /** The keyed state files the stage wrote straight into the target. */
        private final Set<String> streamedKeyed = ConcurrentHashMap.newKeySet();

        Unit(String path, Request request, String outputDir) {
            this.path = path;
            this.request = request;
            this.inPlace = outputDir == null;
            this.outputDir = outputDir;
        }

        @Override
        public String name() {
            return target == null ? path : target + "/_metadata";
        }

        @Override
        public void lock(Commit.Locks locks, Commit.Undo undo) throws CheckpointSurgeonException {
            // A local output directory (the remote checkpoint repaired into a local copy) is
            // written through Flink's local file system, named by its absolute file: path.
            String input = RemoteCheckpoint.locate(path)[0];
            target = inPlace ? input
                    : FlinkFileSystems.isRemote(outputDir) ? RemoteCheckpoint.trimSlashes(outputDir)
                    : "file:" + FlinkFileSystems.localPath(outputDir).toAbsolutePath().normalize();
            if (!inPlace) {
                Commit.refuseNested(target, input, FlinkFileSystems.within(target, input),
                        FlinkFileSystems.within(input, target));
            }
            String lock = target + "/" + RemoteCheckpoint.LOCK_NAME;
            try {
                if (!inPlace) RemoteCheckpoint.checkEmptyTarget(target);
                if (FlinkFileSystems.exists(lock)) {
                    String owner = new String(FlinkFileSystems.readAll(lock), java.nio.charset.StandardCharsets.UTF_8);
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.LOCKED, target + " is locked by another repair (" + owner.trim()
                            + "); nothing was changed. A run that was killed leaves " + lock + " behind: delete it"
                            + " when no repair is running");
                }
                FlinkFileSystems.write(RemoteCheckpoint.owner().getBytes(java.nio.charset.StandardCharsets.UTF_8), lock, false);
            } catch (IOException e) {
                throw RemoteCheckpoint.io(lock, e);
            }
            locks.add(lock, () -> {
                try {
                    FlinkFileSystems.delete(lock);
                } finally {
                    if (rc != null) rc.close();
                }
            });
            // read only once the lock is held: an in-place repair works on what it locked
            rc = RemoteRepair.stage(path);
        }

        @Override
        public boolean stage(Commit.Undo undo) throws CheckpointSurgeonException {
            try {
                liveLength = FlinkFileSystems.length(rc.metadataPath);
                Path streamDir = Files.createDirectory(rc.mirrorRoot.resolve("new"));
                Commit.refuseReferencesInPlace(request, inPlace);
                // keyed state streams from the source (ranged reads) into new files of the target
                // (fresh names no _metadata names yet): nothing of it is staged locally. Each one
                // this run created is removed again if the run fails, before or after its upload
                // completed; on an object store an abandoned upload never completes.
                Set<String> streamed = ConcurrentHashMap.newKeySet();
                undo.add(() -> {
                    for (String f : streamed) FlinkFileSystems.delete(f);
                });
                try (RangedReads files = new RangedReads()) {
                    staged = Native.planStreaming(source(rc), inPlace ? request : forOutput(rc, request), streamDir,
                            target, rc.dir, files, streamed);
                }
                streamedKeyed.addAll(streamed);
                newMetadata = Files.readAllBytes(Path.of(staged.metadataTmp));
            } catch (IOException e) {
                throw RemoteCheckpoint.io(path, e);
            }
            return true;
        }

        @Override
        public SurgeryPlan.Validation validate() throws CheckpointSurgeonException {
            if (!FlinkJudge.flinkAvailable()) return SurgeryPlan.Validation.notValidated("Flink is not on the classpath");
            return FlinkJudge.validate(newMetadata, target + "/_metadata", rc.dir, staged.operators);
        }

        @Override
        public void place(Commit.Undo undo) throws CheckpointSurgeonException {
            ProgressListener progress = CheckpointSurgeon.progressListener();
            List<RemoteCheckpoint.IoTask> uploads = new ArrayList<>();
            // Undo deletes only what this run's transfers completed: an object store's "create if
            // absent" is a check and a write, so a second run into the same output may find a name
            // taken by the first, whose file must stay.
            Set<String> created = ConcurrentHashMap.newKeySet();
            for (String w : staged.written) {
                if (streamedKeyed.contains(w)) {
                    written.add(w); // written there by the stage, read back in full
                    continue;
                }
                Path local = Path.of(w);
                String remote = target + "/" + local.getFileName();
                written.add(remote);
                undo.add(() -> {
                    if (created.contains(remote)) FlinkFileSystems.delete(remote);
                });
                uploads.add(() -> {
                    stopPoint();
                    FlinkFileSystems.upload(local, remote, false, progress);
                    created.add(remote);
                });
            }
            if (!inPlace) {
                for (String name : staged.unchanged) {
                    try {
                        RemoteCheckpoint.checkPlainName(name);
                    } catch (IOException e) {
                        throw RemoteCheckpoint.io(name, e);
                    }
                    String to = target + "/" + name;
                    copied.add(to);
                    undo.add(() -> {
                        if (created.contains(to)) FlinkFileSystems.delete(to);
                    });
                    Path mirrored = rc.mirrorDir.resolve(name);
                    if (rc.mirroredRelative.contains(name) && Files.isRegularFile(mirrored)) {
                        uploads.add(() -> {
                            stopPoint();
                            FlinkFileSystems.upload(mirrored, to, false, progress);
                            created.add(to);
                        });
                    } else {
                        String from = rc.dir + "/" + name;
                        uploads.add(() -> {
                            stopPoint();
                            FlinkFileSystems.copy(from, to, false, progress);
                            created.add(to);
                        });
                    }
                }
            }
            long t0 = System.nanoTime();
            try {
                RemoteCheckpoint.runAll(uploads);
            } catch (IOException e) {
                throw RemoteCheckpoint.io(target, e);
            }
            if (uploads.size() > 50 || System.nanoTime() - t0 > 2_000_000_000L) {
                progress.message(String.format(Locale.ROOT, "wrote %d state files to %s in %.1f s", uploads.size(),
                        target, (System.nanoTime() - t0) / 1e9));
            }
        }

        /** A safe point between the transfers of the place step (on the transfer threads). */
        private static void stopPoint() throws IOException {
            if (Commit.stopping()) throw new IOException("interrupted (the JVM is shutting down)");
        }

        @Override
        public String backup(Commit.Undo undo) throws CheckpointSurgeonException {
            if (!inPlace) return null;
            String base = target + "/_metadata.backup-" + System.currentTimeMillis();
            try {
                for (int n = 0; n < 100; n++) {
                    String b = n == 0 ? base : base + "-" + n;
                    if (FlinkFileSystems.exists(b)) continue;
                    FlinkFileSystems.write(rc.metadata, b, false);
                    undo.add(() -> FlinkFileSystems.delete(b));
                    return b;
                }
            } catch (IOException e) {
                throw RemoteCheckpoint.io(base, e);
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, base + ": 100 backup names in a row already exist");
        }

        @Override
        public void switchOver() throws CheckpointSurgeonException {
            String metadataPath = target + "/_metadata";
            try {
                if (!inPlace) {
                    FlinkFileSystems.write(newMetadata, metadataPath, false);
                    return;
                }
                if (FlinkFileSystems.length(metadataPath) != liveLength) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, metadataPath + " was changed by someone else while it"
                            + " was repaired; nothing was switched");
                }
                if (FlinkFileSystems.kind(metadataPath).equals("OBJECT_STORE")) {
                    FlinkFileSystems.write(newMetadata, metadataPath, true);
                } else {
                    String tmp = target + "/_metadata.tmp-" + java.util.UUID.randomUUID();
                    FlinkFileSystems.write(newMetadata, tmp, false);
                    FlinkFileSystems.delete(metadataPath);
                    if (!FlinkFileSystems.rename(tmp, metadataPath)) {
                        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "renaming " + tmp + " to " + metadataPath
                                + " failed; the new _metadata is in " + tmp);
                    }
                }
            } catch (IOException e) {
                throw RemoteCheckpoint.io(metadataPath, e);
            }
        }

        @Override
        public SurgeryPlan result(String backup, SurgeryPlan.Validation validation) {
            return staged.plan.withResult(new SurgeryPlan.Result(target + "/_metadata", newMetadata.length,
                    List.copyOf(written), List.of(), List.copyOf(copied), backup, validation));
        }
    }
}
