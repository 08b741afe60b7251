package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.SurgeryPlan;
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
 *
 * <p>A JVM that shuts down (SIGTERM, SIGHUP, SIGINT, {@code System.exit} elsewhere) takes the same
 * path: a shutdown hook asks every run in progress to stop at its next safe point (before a step,
 * between the files it places; never inside the switches, which run to their end), waits until
 * the run has undone what it created, and reports "interrupted, nothing was changed" or, when the
 * switch was already done, where the repaired file and its backup are. The run's thread does
 * the undo itself, so the hook and the run never remove or create the same file at once.
 */
final class Commit {
    private Commit() {}

    /** Called as each step of each unit starts (the steps are reported to the progress listener too). */
    interface StepHook {
        void before(ProgressListener.CommitStep step, int index, String unit) throws CheckpointSurgeonException;
    }

    /**
     * The seam of the fault-injection tests ({@code CommitFaults}, in the tests' sources): they stall
     * or fail a run at a step. Null in production.
     */
    static volatile StepHook testHook;

    /** One file the sequence switches: a checkpoint's {@code _metadata}, or one HA file. */
    interface Unit {
        String name();

        /** Step 1: takes the locks this unit needs (registering anything it creates in {@code undo}). */
        void lock(Locks locks, Undo undo) throws CheckpointSurgeonException;

        /** Step 2. Returns false when the surgery changes nothing here (a file already repaired). */
        boolean stage(Undo undo) throws CheckpointSurgeonException;

        /** Step 3: Flink's verdict, or why there is none; a rejection throws. */
        SurgeryPlan.Validation validate() throws CheckpointSurgeonException;

        /** Step 4. */
        void place(Undo undo) throws CheckpointSurgeonException;

        /** Step 5: the backup's path, or null when nothing is replaced. */
        String backup(Undo undo) throws CheckpointSurgeonException;

        /** Step 6. */
        void switchOver() throws CheckpointSurgeonException;

        /** The plan with what was done. */
        SurgeryPlan result(String backup, SurgeryPlan.Validation validation);
    }

    /** What one unit's run came to. */
    static final class Outcome {
        final Unit unit;
        /** The plan with what was done; null when the surgery changed nothing in the unit (skipped). */
        final SurgeryPlan plan;

        Outcome(Unit unit, SurgeryPlan plan) {
            this.unit = unit;
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
        Run run = Run.start();
        try {
            return run(units, run);
        } finally {
            run.finish();
        }
    }

    private static List<Outcome> run(List<? extends Unit> units, Run run) throws CheckpointSurgeonException {
        Undo runUndo = new Undo();
        Locks locks = new Locks();
        List<Undo> undos = new ArrayList<>();
        List<Unit> changing = new ArrayList<>();
        List<SurgeryPlan.Validation> verdicts = new ArrayList<>();
        List<String> backups = new ArrayList<>();
        List<Outcome> outcomes = new ArrayList<>();
        int switched = 0;
        try {
            for (int i = 0; i < units.size(); i++) {
                step(ProgressListener.CommitStep.LOCK, i, units.get(i));
                units.get(i).lock(locks, runUndo);
            }
            for (int i = 0; i < units.size(); i++) {
                Unit u = units.get(i);
                step(ProgressListener.CommitStep.STAGE, i, u);
                Undo undo = new Undo();
                undos.add(undo);
                if (u.stage(undo)) {
                    changing.add(u);
                }
            }
            for (int i = 0; i < changing.size(); i++) {
                step(ProgressListener.CommitStep.VALIDATE, i, changing.get(i));
                verdicts.add(changing.get(i).validate());
            }
            for (int i = 0; i < changing.size(); i++) {
                step(ProgressListener.CommitStep.PLACE, i, changing.get(i));
                changing.get(i).place(undos.get(units.indexOf(changing.get(i))));
            }
            for (int i = 0; i < changing.size(); i++) {
                step(ProgressListener.CommitStep.BACKUP, i, changing.get(i));
                backups.add(changing.get(i).backup(undos.get(units.indexOf(changing.get(i)))));
            }
            for (int i = 0; i < changing.size(); i++) {
                // a stop is honoured before the first switch only: once one file is switched, all are
                step(ProgressListener.CommitStep.SWITCH, i, changing.get(i), i == 0);
                changing.get(i).switchOver();
                switched++;
                SurgeryPlan.Result done = changing.get(i).result(backups.get(i), verdicts.get(i)).result();
                run.switched.add(done.metadataPath() + " is the repaired one" + (done.backup() == null ? ""
                        : " (the old one is kept as " + done.backup() + ")"));
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
            if (switched == 0 && stopping) throw interrupted(e);
            if (e instanceof RuntimeException) throw (RuntimeException) e;
            if (e instanceof Error) throw (Error) e;
            throw failure(e, units, changing, backups, switched);
        }
        locks.close(null);
        for (Unit u : units) {
            int c = changing.indexOf(u);
            outcomes.add(new Outcome(u, c < 0 ? null : u.result(backups.get(c), verdicts.get(c))));
        }
        return outcomes;
    }

    private static CheckpointSurgeonException failure(Throwable e, List<? extends Unit> units, List<Unit> changing,
            List<String> backups, int switched) {
        CheckpointSurgeonException.Code code = e instanceof CheckpointSurgeonException
                ? ((CheckpointSurgeonException) e).code() : CheckpointSurgeonException.Code.IO;
        Message message = e instanceof CheckpointSurgeonException ? ((CheckpointSurgeonException) e).typedMessage()
                : Message.of(String.valueOf(e));
        if (switched == 0) {
            return new CheckpointSurgeonException(code, message.plus("; nothing was changed"), e);
        }
        // one line, as every message of the library: the CLI shows it escaped as one line
        StringBuilder sb = new StringBuilder("; the run stopped between switches: ");
        for (int i = 0; i < changing.size(); i++) {
            Unit u = changing.get(i);
            sb.append(u.name()).append(i < switched ? ": NEW (repaired; the old one is kept as " + backups.get(i) + "); "
                    : ": OLD (unchanged); ");
        }
        for (Unit u : units) {
            if (!changing.contains(u)) sb.append(u.name()).append(": skipped, nothing to change; ");
        }
        sb.append("run the same command again: it skips the files already repaired");
        return new CheckpointSurgeonException(code, message.plus(sb.toString()), e);
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

    private static void step(ProgressListener.CommitStep step, int index, Unit unit) throws CheckpointSurgeonException {
        step(step, index, unit, true);
    }

    /** Starts a step; {@code safePoint}: a stop asked for by the shutdown hook is honoured here. */
    private static void step(ProgressListener.CommitStep step, int index, Unit unit, boolean safePoint)
            throws CheckpointSurgeonException {
        if (safePoint) checkStop();
        CheckpointSurgeon.progressListener().commitStep(step, unit.name());
        StepHook hook = testHook;
        if (hook != null) hook.before(step, index, unit.name());
        if (safePoint) checkStop();
    }

    // ---------------------------------------------------------------------------------------------
    // Shutdown: SIGTERM, SIGHUP and SIGINT take the path of an error.

    /** Set by the shutdown hook: every run stops at its next safe point. */
    private static volatile boolean stopping;
    /** The runs in progress in this JVM (guarded by itself). */
    private static final List<Run> RUNS = new ArrayList<>();
    /** Runs that switched and returned, whose listener wants them reported until it is replaced (guarded by RUNS). */
    private static final List<Run> RETURNED = new ArrayList<>();
    private static boolean hookInstalled;

    /** Whether the JVM is shutting down and runs are asked to stop (for the fault-injection seam's stalls). */
    static boolean stopping() {
        return stopping;
    }

    /**
     * Throws {@code INTERRUPTED} when the JVM is shutting down. Called at the safe points of a run:
     * before each step, and between the files a step places; never once a switch has begun.
     */
    static void checkStop() throws CheckpointSurgeonException {
        if (stopping) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INTERRUPTED, "interrupted (the JVM is"
                    + " shutting down)");
        }
    }

    private static CheckpointSurgeonException interrupted(Throwable e) {
        return new CheckpointSurgeonException(CheckpointSurgeonException.Code.INTERRUPTED, "interrupted, nothing was"
                + " changed: the files this run created were removed", e);
    }

    /** One run of the sequence, as the shutdown hook sees it. */
    private static final class Run {
        /** The listener of the run's start: the hook reports there. */
        final ProgressListener listener = CheckpointSurgeon.progressListener();
        /** The units switched, each with its backup. */
        final List<String> switched = new java.util.concurrent.CopyOnWriteArrayList<>();
        private boolean done;

        /** Registers a run; one that would start while the JVM shuts down is refused before it does anything. */
        static Run start() throws CheckpointSurgeonException {
            Run r = new Run();
            synchronized (RUNS) {
                if (stopping) {
                    // no hook reports a run it never saw: this one says it did nothing
                    r.listener.message("interrupted, nothing was changed");
                    checkStop();
                }
                if (!hookInstalled) {
                    try {
                        Runtime.getRuntime().addShutdownHook(new Thread(Commit::shutdown, "checkpoint-surgeon-shutdown"));
                    } catch (IllegalStateException shuttingDown) {
                        throw interrupted(shuttingDown);
                    }
                    hookInstalled = true;
                }
                RUNS.add(r);
            }
            return r;
        }

        /** Called by the run's thread once everything is undone (or switched): the hook may report now. */
        void finish() {
            synchronized (RUNS) {
                RUNS.remove(this);
                ProgressListener current = CheckpointSurgeon.progressListener();
                RETURNED.removeIf(r -> r.listener != current);
                if (!switched.isEmpty() && listener == current && listener.outcomeUntilReplaced()) RETURNED.add(this);
            }
            synchronized (this) {
                done = true;
                notifyAll();
            }
        }

        /** What the hook reports for this run once it is done. */
        synchronized String await() throws InterruptedException {
            while (!done) wait();
            // before the first switch, the run's undo removed what it created (an error or the stop)
            return switched.isEmpty() ? "interrupted, nothing was changed"
                    : "interrupted after the switch, which completed: " + String.join("; ", switched);
        }
    }

    /**
     * The shutdown hook: asks every run in progress to stop, waits until each has removed what it
     * created (or finished its switches), and reports each one to the listener it started with.
     */
    private static void shutdown() {
        List<Run> runs;
        synchronized (RUNS) {
            stopping = true;
            runs = new ArrayList<>(RUNS);
            // a run that returned but whose outcome its caller has not shown yet (the listener is still its)
            ProgressListener current = CheckpointSurgeon.progressListener();
            for (Run r : RETURNED) {
                if (r.listener == current) runs.add(r);
            }
        }
        for (Run r : runs) {
            try {
                r.listener.message(r.await());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // a listener that fails must not keep the JVM from exiting
            }
        }
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
        } catch (AtomicMoveNotSupportedException e) {
            throw io("the file system of " + live + " cannot rename atomically", e);
        } catch (IOException e) {
            throw io("switching " + tmp + " to " + live, e);
        }
        syncAfterSwitch(live.getParent());
    }

    /**
     * Syncs a directory once the switch is done. A failure is a warning, not an error: the new file
     * is live, and an error would undo the files it references.
     */
    static void syncAfterSwitch(Path dir) {
        try {
            syncDir(dir);
        } catch (CheckpointSurgeonException e) {
            CheckpointSurgeon.progressListener().message(Message.of("warning: the switch is done, but ", e.typedMessage()));
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

    /**
     * Refuses an output directory that is the checkpoint's directory {@code input}, lies under it
     * ({@code inside}) or holds it ({@code holds}), before anything is written: Flink deletes a
     * checkpoint's directory with everything in it when it subsumes or discards the checkpoint,
     * and a repair written there would go with it.
     */
    static void refuseNested(String output, String input, boolean inside, boolean holds) throws CheckpointSurgeonException {
        Message why = inside && holds ? Message.of("is the checkpoint itself; use ", Choice.IN_PLACE, " to repair it where it is")
                : inside ? Message.of("lies inside the checkpoint's directory " + input + ", which Flink deletes with everything in"
                        + " it when the checkpoint is subsumed or discarded; give a directory outside it")
                : holds ? Message.of("holds the checkpoint's directory " + input + "; give a new directory outside it")
                : null;
        if (why != null) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, Message.of("the output "
                    + output + " ", why));
        }
    }

    /** Referencing unchanged files is for a new output only: in place they are where they are. */
    static void refuseReferencesInPlace(Request request, boolean inPlace) throws CheckpointSurgeonException {
        if (request.surgery.referencesUnchangedFiles() && inPlace) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, Message.of(
                    Choice.REFERENCE_UNCHANGED, " goes with ", Choice.OUTPUT, ": in place, the unchanged state files are"
                    + " already where they are"));
        }
    }

    /** New metadata bytes staged from metadata bytes (HA files, Flink objects). */
    static final class StagedBytes {
        final Staged staged;
        final byte[] metadata;

        StagedBytes(Staged staged, byte[] metadata) {
            this.staged = staged;
            this.metadata = metadata;
        }
    }

    /**
     * The stage step on metadata bytes: new state files go into {@code dir} (the checkpoint's
     * directory), the new metadata comes back as bytes. Without a directory only inline state can
     * be rewritten.
     */
    static StagedBytes stageBytes(byte[] metadata, String name, Path dir, Request request, Undo undo)
            throws CheckpointSurgeonException {
        Path streamDir = dir;
        try {
            if (streamDir == null) {
                Path tmpDir = Files.createTempDirectory("checkpoint-surgeon-stage");
                undo.add(() -> Files.deleteIfExists(tmpDir));
                streamDir = tmpDir;
            }
            Staged st = Native.plan(Native.source(metadata, name, dir), request, streamDir, null);
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
