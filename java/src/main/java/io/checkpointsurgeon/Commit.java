package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkJudge;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The one commit sequence of every repair. Local {@code --output} and {@code --in-place}, Flink
 * paths, HA files and Flink objects are {@link Unit}s that {@link #run} drives through the same
 * steps, in this order:
 *
 * <ol>
 *   <li><b>lock</b> the checkpoint changed in place, the output directory the run creates, or the
 *       HA directory ({@code flock} on the directory: released when the run ends, however it ends);
 *   <li><b>stage</b>: plan, then write the new state files and the new metadata under fresh names,
 *       each created exclusively (never opened onto an existing path), and check them natively;
 *   <li><b>validate</b> the staged metadata with Flink's own loader when Flink is on the class path;
 *   <li><b>place</b> unchanged state files next to the new metadata: a hard link, or a copy into a
 *       new name, never onto an existing one;
 *   <li><b>backup</b> the live metadata under a fresh name;
 *   <li><b>switch</b> atomically: a rename over the old file, or a link into a name that must not exist.
 * </ol>
 *
 * A failure before the first switch removes everything the run created (no {@code _metadata} in an
 * output, no change in place). A failure between switches of a multi-file run (HA) names the files
 * that are new, the ones that are old, and every backup.
 */
final class Commit {
    /**
     * Test hooks (system properties): stall or fail when a step starts, e.g. {@code validate} or
     * {@code switch:2}; {@code oom:stage} throws an OutOfMemoryError there.
     */
    static final String STALL_AT = "checkpointsurgeon.test.stallAt";
    static final String FAIL_AT = "checkpointsurgeon.test.failAt";
    /** Prints every step to stderr when set. */
    static final String TRACE = CheckpointSurgeon.TRACE_PROPERTY;

    private Commit() {}

    /** One file the sequence switches: a checkpoint's {@code _metadata}, or one HA file. */
    interface Unit {
        String name();

        /** Step 1: takes the locks this unit needs (registering anything it creates in {@code undo}). */
        void lock(Locks locks, Undo undo) throws CheckpointSurgeonException;

        /** Step 2. Returns false when the surgery changes nothing here (a file already repaired). */
        boolean stage(Undo undo) throws CheckpointSurgeonException;

        /** Step 3: a one-line verdict. */
        String validate() throws CheckpointSurgeonException;

        /** Step 4. */
        void place(Undo undo) throws CheckpointSurgeonException;

        /** Step 5: the backup's path, or null when nothing is replaced. */
        String backup(Undo undo) throws CheckpointSurgeonException;

        /** Step 6. */
        void switchOver() throws CheckpointSurgeonException;

        /** The plan with what was done. */
        SurgeryPlan result(String backup, String validation);
    }

    /** What one unit's run came to. */
    static final class Outcome {
        final Unit unit;
        /** {@code switched} or {@code skipped} (nothing to change). */
        final String status;
        final SurgeryPlan plan;

        Outcome(Unit unit, String status, SurgeryPlan plan) {
            this.unit = unit;
            this.status = status;
            this.plan = plan;
        }
    }

    /** Runs the sequence over one unit; a unit that changes nothing is an error here. */
    static SurgeryPlan runOne(Unit unit) throws CheckpointSurgeonException {
        Outcome o = run(List.of(unit)).get(0);
        if (o.plan == null) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, unit.name() + ": the surgery changes nothing");
        }
        return o.plan;
    }

    static List<Outcome> run(List<? extends Unit> units) throws CheckpointSurgeonException {
        Undo runUndo = new Undo();
        Locks locks = new Locks();
        List<Undo> undos = new ArrayList<>();
        List<Unit> changing = new ArrayList<>();
        List<String> verdicts = new ArrayList<>();
        List<String> backups = new ArrayList<>();
        List<Outcome> outcomes = new ArrayList<>();
        int switched = 0;
        try {
            for (int i = 0; i < units.size(); i++) {
                step("lock", i, units.get(i));
                units.get(i).lock(locks, runUndo);
            }
            for (int i = 0; i < units.size(); i++) {
                Unit u = units.get(i);
                step("stage", i, u);
                Undo undo = new Undo();
                undos.add(undo);
                if (u.stage(undo)) {
                    changing.add(u);
                }
            }
            for (int i = 0; i < changing.size(); i++) {
                step("validate", i, changing.get(i));
                verdicts.add(changing.get(i).validate());
            }
            for (int i = 0; i < changing.size(); i++) {
                step("place", i, changing.get(i));
                changing.get(i).place(undos.get(units.indexOf(changing.get(i))));
            }
            for (int i = 0; i < changing.size(); i++) {
                step("backup", i, changing.get(i));
                backups.add(changing.get(i).backup(undos.get(units.indexOf(changing.get(i)))));
            }
            for (int i = 0; i < changing.size(); i++) {
                step("switch", i, changing.get(i));
                changing.get(i).switchOver();
                switched++;
            }
        } catch (CheckpointSurgeonException | RuntimeException | Error e) {
            // Undo what was not switched: staged files, placed files and backups of those units.
            for (int i = undos.size() - 1; i >= 0; i--) {
                Unit u = units.get(i);
                int c = changing.indexOf(u);
                if (c < 0 || c >= switched) undos.get(i).run(e);
            }
            if (switched == 0) runUndo.run(e);
            locks.close(e);
            if (e instanceof RuntimeException) throw (RuntimeException) e;
            if (e instanceof Error) throw (Error) e;
            throw failure(e, units, changing, backups, switched);
        }
        locks.close(null);
        for (Unit u : units) {
            int c = changing.indexOf(u);
            outcomes.add(c < 0 ? new Outcome(u, "skipped", null)
                    : new Outcome(u, "switched", u.result(backups.get(c), verdicts.get(c))));
        }
        return outcomes;
    }

    private static CheckpointSurgeonException failure(Throwable e, List<? extends Unit> units, List<Unit> changing,
            List<String> backups, int switched) {
        CheckpointSurgeonException.Code code = e instanceof CheckpointSurgeonException
                ? ((CheckpointSurgeonException) e).code() : CheckpointSurgeonException.Code.IO;
        String message = e instanceof CheckpointSurgeonException ? e.getMessage() : String.valueOf(e);
        if (switched == 0) {
            return new CheckpointSurgeonException(code, message + "; nothing was changed", e);
        }
        StringBuilder sb = new StringBuilder(message).append("; the run stopped between switches:");
        for (int i = 0; i < changing.size(); i++) {
            Unit u = changing.get(i);
            sb.append(String.format(Locale.ROOT, "%n  %s: %s", u.name(), i < switched
                    ? "NEW (repaired; the old one is kept as " + backups.get(i) + ")"
                    : "OLD (unchanged)"));
        }
        for (Unit u : units) {
            if (!changing.contains(u)) sb.append(String.format(Locale.ROOT, "%n  %s: skipped, nothing to change", u.name()));
        }
        sb.append(String.format(Locale.ROOT, "%nRun the same command again: it skips the files already repaired."));
        return new CheckpointSurgeonException(code, sb.toString(), e);
    }

    /** The locks of one run, each directory locked once, released in reverse order. */
    static final class Locks {
        private final List<Object> keys = new ArrayList<>();
        private final List<AutoCloseable> held = new ArrayList<>();

        /** Takes the commit lock of a local directory (see {@code commit::lock_dir} in the native code). */
        void lock(Path dir) throws CheckpointSurgeonException {
            if (keys.contains(dir)) return;
            long id = Native.lockDirectory(dir);
            keys.add(dir);
            held.add(() -> Native.unlockDirectory(id));
        }

        /** Adds a lock taken elsewhere (a lock object on a Flink file system). */
        void add(Object key, AutoCloseable lock) {
            keys.add(key);
            held.add(lock);
        }

        void close(Throwable into) {
            for (int i = held.size() - 1; i >= 0; i--) {
                try {
                    held.get(i).close();
                } catch (Exception x) {
                    if (into != null) into.addSuppressed(x);
                }
            }
            held.clear();
            keys.clear();
        }
    }

    private static void step(String step, int index, Unit unit) throws CheckpointSurgeonException {
        if (System.getProperty(TRACE) != null) {
            System.err.println("commit: " + step + " " + unit.name());
        }
        if (matches(System.getProperty(STALL_AT), step, index)) {
            System.err.println("commit: stalling at " + step + " " + unit.name());
            try {
                Thread.sleep(600_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        String fail = System.getProperty(FAIL_AT);
        if (fail != null && fail.startsWith("oom:") && matches(fail.substring(4), step, index)) {
            throw new OutOfMemoryError("injected at " + step + " (" + FAIL_AT + ")");
        }
        if (matches(fail, step, index)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, unit.name() + ": injected failure at " + step
                    + " (" + FAIL_AT + ")");
        }
    }

    private static boolean matches(String spec, String step, int index) {
        if (spec == null) return false;
        String[] p = spec.split(":");
        return p[0].equals(step) && (p.length == 1 || Integer.parseInt(p[1]) == index);
    }

    /** Undo actions, run in reverse order of registration. */
    static final class Undo {
        interface Action {
            void run() throws Exception;
        }

        private final Deque<Action> actions = new ArrayDeque<>();

        void add(Action a) {
            actions.push(a);
        }

        void deleteLater(Path p) {
            add(() -> Files.deleteIfExists(p));
        }

        void run(Throwable into) {
            while (!actions.isEmpty()) {
                try {
                    actions.pop().run();
                } catch (Exception x) {
                    into.addSuppressed(x);
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Local file-system steps, shared by the local and HA units.

    /**
     * A backup of {@code file} under a fresh name {@code <name>.backup-<millis>[-n]}: a hard link
     * (a copy where links are not possible), created exclusively, so no existing file is touched.
     */
    static Path backup(Path file, Undo undo) throws CheckpointSurgeonException {
        String base = file.getFileName() + ".backup-" + System.currentTimeMillis();
        for (int n = 0; n < 1000; n++) {
            Path b = file.resolveSibling(n == 0 ? base : base + "-" + n);
            try {
                linkOrCopyNew(file, b, false);
                undo.deleteLater(b);
                syncDir(b.getParent());
                return b;
            } catch (FileAlreadyExistsException e) {
                // a fresh name is tried
            } catch (IOException e) {
                throw io("backing up " + file + " to " + b, e);
            }
        }
        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, file + ": 1000 backup names in a row already exist");
    }

    /**
     * Links {@code from} to the new name {@code to}, or copies it there (with {@code copy}, or
     * where a link is impossible). Both fail on an existing {@code to}: link(2), and a copy opened
     * with {@code O_CREAT|O_EXCL}. Returns whether it linked.
     */
    static boolean linkOrCopyNew(Path from, Path to, boolean copy) throws IOException {
        if (!copy) {
            try {
                Files.createLink(to, from);
                return true;
            } catch (FileAlreadyExistsException e) {
                throw e;
            } catch (IOException | UnsupportedOperationException e) {
                // another file system, or no hard links: copy below
            }
        }
        Files.copy(from, to);
        try (FileChannel ch = FileChannel.open(to, StandardOpenOption.READ)) {
            ch.force(true);
        }
        return false;
    }

    static void syncDir(Path dir) throws CheckpointSurgeonException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            throw io("syncing directory " + dir, e);
        }
    }

    /** An identity of a file that changes when it is replaced or rewritten. */
    static String identity(Path p) throws IOException {
        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        return a.fileKey() + "/" + a.size() + "/" + a.lastModifiedTime().toMillis();
    }

    /** Renames {@code tmp} over {@code live} atomically (rename(2)). */
    static void replace(Path tmp, Path live) throws CheckpointSurgeonException {
        try {
            Files.move(tmp, live, StandardCopyOption.ATOMIC_MOVE);
            syncDir(live.getParent());
        } catch (AtomicMoveNotSupportedException e) {
            throw io("the file system of " + live + " cannot rename atomically", e);
        } catch (IOException e) {
            throw io("switching " + tmp + " to " + live, e);
        }
    }

    static CheckpointSurgeonException io(String what, IOException e) {
        String why = e instanceof AccessDeniedException ? "directory not writable (permission denied: "
                + e.getMessage() + ")"
                : e instanceof FileAlreadyExistsException ? "already exists: " + e.getMessage()
                : e instanceof NoSuchFileException ? "no such file: " + e.getMessage()
                : String.valueOf(e);
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, what + ": " + why, e);
    }

    // ---------------------------------------------------------------------------------------------

    /** A checkpoint or savepoint on the local file system, repaired into a new directory or in place. */
    /** Referencing unchanged files is for a new output only: in place they are where they are. */
    static void refuseReferencesInPlace(Surgery surgery, boolean inPlace) throws CheckpointSurgeonException {
        if (surgery.referencesUnchanged() && inPlace) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "--reference-unchanged"
                    + " goes with --output: in place, the unchanged state files are already where they are");
        }
    }

    static final class LocalCheckpoint implements Unit {
        private final Path checkpoint;
        private final Surgery surgery;
        private final Path output;
        private Path dir;
        private Path metadata;
        private Path target;
        private String identity;
        private SurgeryPlan.Staged staged;
        private final List<String> linked = new ArrayList<>();
        private final List<String> copied = new ArrayList<>();

        /**
         * The surgery with its unchanged files referenced in the checkpoint's directory (as the
         * {@code file:} URI Flink writes) when it asks for that.
         */
        static Surgery referencing(Path checkpoint, Surgery surgery) throws CheckpointSurgeonException {
            if (!surgery.referencesUnchanged()) return surgery;
            Path abs = checkpoint.toAbsolutePath().normalize();
            Path dir = Files.isDirectory(abs) ? abs : abs.getParent();
            try {
                dir = dir.toRealPath();
            } catch (IOException e) {
                throw io(dir.toString(), e);
            }
            return surgery.referencing("file:" + dir);
        }

        /** {@code output} null: in place. */
        LocalCheckpoint(Path checkpoint, Surgery surgery, Path output) {
            this.checkpoint = checkpoint.toAbsolutePath().normalize();
            this.surgery = surgery;
            this.output = output == null ? null : output.toAbsolutePath().normalize();
        }

        @Override
        public String name() {
            return metadata != null ? metadata.toString() : checkpoint.toString();
        }

        @Override
        public void lock(Locks locks, Undo undo) throws CheckpointSurgeonException {
            locate();
            if (output == null) {
                if (Files.isSymbolicLink(metadata)) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, metadata + " is a symbolic link; repair"
                            + " it into a new directory with --output instead of in place");
                }
                target = dir;
                locks.lock(dir);
                return;
            }
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
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "output directory " + target + " is not"
                            + " empty (it holds " + there.get(0).getFileName() + "); choose a new directory");
                }
            } catch (IOException e) {
                throw io("listing " + target, e);
            }
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
                throw io(checkpoint.toString(), e);
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
                if (real.equals(dir)) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "the output " + output + " is the"
                            + " checkpoint itself; use --in-place to repair it where it is");
                }
                return real;
            } catch (IOException e) {
                throw io("creating the output directory " + output, e);
            }
        }

        @Override
        public boolean stage(Undo undo) throws CheckpointSurgeonException {
            try {
                identity = identity(metadata);
            } catch (IOException e) {
                throw io(metadata.toString(), e);
            }
            refuseReferencesInPlace(surgery, output == null);
            staged = Native.plan(Wire.source(metadata), referencing(dir, surgery), target, null);
            for (String w : staged.written) undo.deleteLater(Path.of(w));
            undo.deleteLater(Path.of(staged.metadataTmp));
            return true;
        }

        @Override
        public String validate() throws CheckpointSurgeonException {
            if (!FlinkJudge.flinkAvailable()) return "not validated: Flink is not on the classpath";
            return FlinkJudge.validate(Path.of(staged.metadataTmp), staged.operators);
        }

        @Override
        public void place(Undo undo) throws CheckpointSurgeonException {
            if (output == null) return;
            for (String name : staged.unchanged) {
                Path from = dir.resolve(name);
                Path to = target.resolve(name);
                try {
                    Path real = from.toRealPath();
                    if (!real.startsWith(dir)) {
                        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "state file " + from + " is a symbolic"
                                + " link to " + real + ", outside the checkpoint directory; refusing to use it");
                    }
                    boolean link = linkOrCopyNew(real, to, surgery.copyUnchanged());
                    undo.deleteLater(to);
                    (link ? linked : copied).add(to.toString());
                } catch (IOException e) {
                    throw io("placing the unchanged state file " + from + " as " + to, e);
                }
            }
        }

        @Override
        public String backup(Undo undo) throws CheckpointSurgeonException {
            return output == null ? Commit.backup(metadata, undo).toString() : null;
        }

        @Override
        public void switchOver() throws CheckpointSurgeonException {
            Path tmp = Path.of(staged.metadataTmp);
            if (output == null) {
                try {
                    if (!identity(metadata).equals(identity)) {
                        throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, metadata + " was changed by someone else while it"
                                + " was repaired; nothing was switched");
                    }
                } catch (IOException e) {
                    throw io(metadata.toString(), e);
                }
                replace(tmp, metadata);
            } else {
                Path live = target.resolve("_metadata");
                try {
                    Files.createLink(live, tmp);
                    Files.delete(tmp);
                } catch (IOException e) {
                    throw io("publishing " + live, e);
                }
                syncDir(target);
            }
        }

        @Override
        public SurgeryPlan result(String backup, String validation) {
            return staged.plan.withResult(new SurgeryPlan.Result(target.resolve(output == null
                    ? metadata.getFileName().toString() : "_metadata").toString(), staged.metadataBytes,
                    staged.written, List.copyOf(linked), List.copyOf(copied), backup, validation));
        }
    }

    /** New metadata bytes staged from metadata bytes (HA files, Flink objects). */
    static final class StagedBytes {
        final SurgeryPlan.Staged staged;
        final byte[] metadata;

        StagedBytes(SurgeryPlan.Staged staged, byte[] metadata) {
            this.staged = staged;
            this.metadata = metadata;
        }
    }

    /**
     * The stage step on metadata bytes: new state files go into {@code dir} (the checkpoint's
     * directory), the new metadata comes back as bytes. Without a directory only inline state can
     * be rewritten.
     */
    static StagedBytes stageBytes(byte[] metadata, String name, Path dir, Surgery surgery, Undo undo)
            throws CheckpointSurgeonException {
        Path streamDir = dir;
        try {
            if (streamDir == null) {
                Path tmpDir = Files.createTempDirectory("checkpoint-surgeon-stage");
                undo.add(() -> Files.deleteIfExists(tmpDir));
                streamDir = tmpDir;
            }
            SurgeryPlan.Staged st = Native.plan(Native.source(metadata, name, dir), surgery, streamDir, null);
            Path tmp = Path.of(st.metadataTmp);
            for (String w : st.written) undo.deleteLater(Path.of(w));
            try {
                if (dir == null && !st.written.isEmpty()) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, name + ": the surgery rewrites state"
                            + " files, but the checkpoint's directory is not known");
                }
                return new StagedBytes(st, Files.readAllBytes(tmp));
            } finally {
                Files.deleteIfExists(tmp);
            }
        } catch (IOException e) {
            throw io(name + ": staging the new metadata", e);
        }
    }
}
