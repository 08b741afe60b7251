package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.KeyedRewriteJob;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * A checkpoint or savepoint on the local file system as a unit of the commit sequence, repaired
 * into a new directory ({@code --output}) or in place: the directory is locked, the native stage
 * step writes the new state files and metadata under fresh names, Flink's loader validates them,
 * unchanged relative files are hard-linked (or copied) into a new output, a backup is kept in place,
 * and the new {@code _metadata} is switched in.
 */
final class LocalRepair implements Commit.Unit {
    private final Path checkpoint;
    private final Request request;
    private final Path output;
    private Path dir;
    private Path metadata;
    private Path target;
    private String identity;
    private Staged staged;
    private final List<String> linked = new ArrayList<>();
    private final List<String> copied = new ArrayList<>();

    /** The plan of a surgery on a local checkpoint; writes nothing. */
    static SurgeryPlan plan(Path checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        return Native.plan(Wire.source(checkpoint), referencing(checkpoint, Request.of(surgery)));
    }

    /**
     * The request with its unchanged files referenced in the checkpoint's directory (as the
     * {@code file:} URI Flink writes) when the surgery asks for that.
     */
    static Request referencing(Path checkpoint, Request request) throws CheckpointSurgeonException {
        if (!request.surgery.referencesUnchangedFiles()) return request;
        Path abs = checkpoint.toAbsolutePath().normalize();
        Path dir = Files.isDirectory(abs) ? abs : abs.getParent();
        try {
            dir = dir.toRealPath();
        } catch (IOException e) {
            throw Commit.io(dir.toString(), e);
        }
        return request.referencing("file:" + dir);
    }

    /** {@code output} null: in place. */
    LocalRepair(Path checkpoint, Request request, Path output) {
        this.checkpoint = checkpoint.toAbsolutePath().normalize();
        this.request = request;
        this.output = output == null ? null : output.toAbsolutePath().normalize();
    }

    @Override
    public String name() {
        return metadata != null ? metadata.toString() : checkpoint.toString();
    }

    @Override
    public void lock(Commit.Locks locks, Commit.Undo undo) throws CheckpointSurgeonException {
        locate();
        if (output == null) {
            if (Files.isSymbolicLink(metadata)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, Message.of(metadata
                        + " is a symbolic link; repair it into a new directory with ", Choice.OUTPUT, " instead of in place"));
            }
            target = dir;
            locks.lock(dir);
            mentionLeftovers();
            return;
        }
        mentionLeftovers();
        boolean created = !Files.exists(output, LinkOption.NOFOLLOW_LINKS);
        target = createOutput();
        locks.lock(target);
        if (created) {
            // removed on failure only once this run holds it: a racing run may be working in it
            undo.add(() -> Files.deleteIfExists(target));
        }
        try (Stream<Path> s = Files.list(target)) {
            List<Path> there = s.limit(1).collect(java.util.stream.Collectors.toList());
            if (!there.isEmpty()) {
                boolean killed = !Files.exists(target.resolve("_metadata")) && !Leftovers.find(target).isEmpty();
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "output directory " + target + " is not"
                        + " empty (it holds " + there.get(0).getFileName() + "); choose a new directory" + (killed
                        ? " (it holds no _metadata but a staged one: the output of a repair that was killed before"
                                + " its switch, which can be removed)" : ""));
            }
        } catch (IOException e) {
            throw Commit.io("listing " + target, e);
        }
    }

    /** Says so when the checkpoint's directory holds what a killed repair left ({@link Leftovers}). */
    private void mentionLeftovers() {
        List<Path> found;
        try {
            found = Leftovers.find(dir);
        } catch (CheckpointSurgeonException e) {
            return;
        }
        if (!found.isEmpty()) CheckpointSurgeon.progressListener().leftoversFound(dir, List.copyOf(found));
    }

    private void locate() throws CheckpointSurgeonException {
        try {
            if (Files.isDirectory(checkpoint)) {
                dir = checkpoint.toRealPath();
                metadata = dir.resolve("_metadata");
            } else {
                dir = checkpoint.getParent().toRealPath();
                metadata = dir.resolve(checkpoint.getFileName());
            }
        } catch (IOException e) {
            throw Commit.io(checkpoint.toString(), e);
        }
        if (Files.isDirectory(metadata, LinkOption.NOFOLLOW_LINKS)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, metadata + " is a directory, not a"
                    + " checkpoint's _metadata file");
        }
        if (!Files.exists(metadata)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, metadata + ": no such file (a checkpoint or savepoint"
                    + " directory, or its _metadata file, is expected)");
        }
    }

    /** The output directory: created by this run, or an existing empty one (checked once locked). */
    private Path createOutput() throws CheckpointSurgeonException {
        if (Files.isSymbolicLink(output)) {
            String to;
            try {
                to = String.valueOf(Files.readSymbolicLink(output));
            } catch (IOException e) {
                to = "?";
            }
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "output " + output + " is a "
                    + (Files.exists(output) ? "" : "dangling ") + "symbolic link (to " + to + "); give a new"
                    + " directory, not a link");
        }
        refuseNested(realPath(output));
        try {
            if (!Files.exists(output, LinkOption.NOFOLLOW_LINKS)) {
                Path parent = output.getParent();
                Files.createDirectories(parent);
                try {
                    Files.createDirectory(output);
                } catch (FileAlreadyExistsException e) {
                    // created by someone else meanwhile: treated as an existing directory below
                }
            }
            if (!Files.isDirectory(output, LinkOption.NOFOLLOW_LINKS)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "output " + output + " exists and is"
                        + " not a directory; give a new directory");
            }
            Path real = output.toRealPath();
            refuseNested(real); // again once created: a link may have been swapped in meanwhile
            return real;
        } catch (IOException e) {
            throw Commit.io("creating the output directory " + output, e);
        }
    }

    /** {@link Commit#refuseNested} for the output, {@code real} with its links and {@code ..} resolved. */
    private void refuseNested(Path real) throws CheckpointSurgeonException {
        Commit.refuseNested(output + (real.equals(output) ? "" : " (" + real + ")"), dir.toString(), real.startsWith(dir),
                dir.startsWith(real));
    }

    /** {@code p} with the links of its longest existing prefix resolved, the rest appended as it is. */
    private static Path realPath(Path p) throws CheckpointSurgeonException {
        Path existing = p;
        while (existing != null && !Files.exists(existing)) existing = existing.getParent();
        if (existing == null) return p;
        try {
            return existing.toRealPath().resolve(existing.relativize(p));
        } catch (IOException e) {
            throw Commit.io(p.toString(), e);
        }
    }

    @Override
    public boolean stage(Commit.Undo undo) throws CheckpointSurgeonException {
        try {
            identity = Commit.identity(metadata);
        } catch (IOException e) {
            throw Commit.io(metadata.toString(), e);
        }
        Commit.refuseReferencesInPlace(request, output == null);
        staged = Native.plan(Wire.source(metadata), referencing(dir, request), target, null, onFlink());
        for (String w : staged.written) undo.deleteLater(Path.of(w));
        undo.deleteLater(Path.of(staged.metadataTmp));
        return true;
    }

    /** The Flink job that rewrites the keyed state files when the surgery runs on Flink; else null. */
    private KeyedRewriteJob onFlink() throws CheckpointSurgeonException {
        Surgery s = request.surgery;
        if (!s.runsOnFlink()) return null;
        if (!FlinkJudge.flinkAvailable()) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FLINK_MISSING, Message.of(Choice.ON_FLINK,
                    " needs Flink's jars on the class path (e.g. $FLINK_HOME/lib/*)"));
        }
        return new KeyedRewriteJob(s.flinkEnvironment(), s.flinkJobManager(), s.threadCount(),
                "checkpoint-surgeon: keyed state files of " + metadata);
    }

    @Override
    public SurgeryPlan.Validation validate() throws CheckpointSurgeonException {
        if (!FlinkJudge.flinkAvailable()) return SurgeryPlan.Validation.notValidated("Flink is not on the classpath");
        return FlinkJudge.validate(Path.of(staged.metadataTmp), staged.operators);
    }

    @Override
    public void place(Commit.Undo undo) throws CheckpointSurgeonException {
        if (output == null) return;
        for (String name : staged.unchanged) {
            Commit.checkStop();
            Path from = dir.resolve(name);
            Path to = target.resolve(name);
            try {
                Path real = from.toRealPath();
                if (!real.startsWith(dir)) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "state file " + from + " is a symbolic"
                            + " link to " + real + ", outside the checkpoint directory; refusing to use it");
                }
                boolean link = Commit.linkOrCopyNew(real, to, request.surgery.copiesUnchangedFiles());
                undo.deleteLater(to);
                (link ? linked : copied).add(to.toString());
            } catch (IOException e) {
                throw Commit.io("placing the unchanged state file " + from + " as " + to, e);
            }
        }
    }

    @Override
    public String backup(Commit.Undo undo) throws CheckpointSurgeonException {
        return output == null ? Commit.backup(metadata, undo).toString() : null;
    }

    @Override
    public void switchOver() throws CheckpointSurgeonException {
        Path tmp = Path.of(staged.metadataTmp);
        if (output == null) {
            try {
                if (!Commit.identity(metadata).equals(identity)) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, metadata + " was changed by someone else while it"
                            + " was repaired; nothing was switched");
                }
            } catch (IOException e) {
                throw Commit.io(metadata.toString(), e);
            }
            Commit.replace(tmp, metadata);
        } else {
            Path live = target.resolve("_metadata");
            try {
                Files.createLink(live, tmp);
            } catch (IOException e) {
                throw Commit.io("publishing " + live, e);
            }
            // switched: what follows must not fail the run (its undo would remove what _metadata references)
            try {
                Files.delete(tmp);
            } catch (IOException e) {
                CheckpointSurgeon.progressListener().message("warning: " + live + " is written, but its staged twin "
                        + tmp + " could not be removed: " + e);
            }
            Commit.syncAfterSwitch(target);
        }
    }

    @Override
    public SurgeryPlan result(String backup, SurgeryPlan.Validation validation) {
        return staged.plan.withResult(new SurgeryPlan.Result(target.resolve(output == null
                ? metadata.getFileName().toString() : "_metadata").toString(), staged.metadataBytes,
                staged.written, List.copyOf(linked), List.copyOf(copied), backup, validation));
    }
}
