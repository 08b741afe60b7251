package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.FlinkJudge;
import io.checkpointsurgeon.flink.HaCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * The entry point of checkpoint-surgeon: inspect Flink checkpoints, savepoints and their
 * {@code _metadata} bytes. The format work is done by the native library bundled in this jar.
 */
public final class CheckpointSurgeon {
    private CheckpointSurgeon() {}

    /** This jar's version; the bundled native library must have the same. */
    public static final String VERSION = NativeBridge.VERSION;

    /** A system property: when set, unexpected failures print their stack trace. */
    public static final String TRACE_PROPERTY = "checkpointsurgeon.trace";

    /** The loaded native library: its version and platform ({@code 0.2.0 for linux-x86_64}). */
    public static String nativeLibrary() throws CheckpointSurgeonException {
        return Native.library();
    }

    /** The local path of a {@code file:} URI or a plain path. */
    public static Path localPath(String path) {
        return FlinkFileSystems.localPath(Objects.requireNonNull(path, "path"));
    }

    /**
     * The HA {@code completedCheckpoint*} files in a directory (up to three levels deep), or the
     * file itself; without the backups and staged files this tool writes beside them.
     */
    public static List<Path> haFiles(Path p) throws CheckpointSurgeonException {
        if (!Files.isDirectory(p)) return List.of(p);
        try (var s = Files.walk(p, 3)) {
            return s.filter(f -> HaCheckpoint.isHaFileName(f.getFileName().toString()) && Files.isRegularFile(f))
                    .sorted().collect(java.util.stream.Collectors.toList());
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, p + ": " + e, e);
        }
    }

    /**
     * Inspects a checkpoint or savepoint on the local file system.
     *
     * @param path a {@code _metadata} file, or the directory that holds it
     */
    public static InspectReport inspect(Path path) throws CheckpointSurgeonException {
        Objects.requireNonNull(path, "path");
        return Native.inspect(Wire.source(path));
    }

    /**
     * Inspects {@code _metadata} bytes already in memory (for example from an HA file or a remote
     * file system).
     *
     * @param name how errors name the input
     * @param checkpointDir where relative state files live, or null if they should not be read
     */
    public static InspectReport inspect(byte[] metadata, String name, Path checkpointDir)
            throws CheckpointSurgeonException {
        Objects.requireNonNull(metadata, "metadata");
        return Native.inspect(Native.source(metadata, name, checkpointDir));
    }

    /**
     * The canonical text description of {@code _metadata} bytes (see tests/describe-format.md):
     * every operator, subtask and handle, in an order that does not depend on hash order.
     */
    public static String describe(byte[] metadata) throws CheckpointSurgeonException {
        Objects.requireNonNull(metadata, "metadata");
        return Native.describe(metadata);
    }

    /** Parses {@code _metadata} bytes and writes the model again: identical bytes for valid input. */
    public static byte[] roundTrip(byte[] metadata) throws CheckpointSurgeonException {
        Objects.requireNonNull(metadata, "metadata");
        return Native.roundTrip(metadata);
    }

    /** Computes what a surgery would remove and write. Writes nothing. */
    public static SurgeryPlan plan(Path checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        return Native.plan(Wire.source(checkpoint), Commit.LocalCheckpoint.referencing(checkpoint, surgery), null,
                null).plan;
    }

    /**
     * Writes the repaired checkpoint into a new directory (created by this call, or existing and
     * empty), through the one commit sequence ({@code Commit}): the directory is locked, the new
     * state files and the new {@code _metadata} are written under fresh names and checked natively
     * and, when Flink is on the classpath, by Flink's own loader, before unchanged relative state files
     * are hard-linked (or copied, see {@link Surgery#copyUnchangedFiles()}) and {@code _metadata} is
     * published. On any failure the directory holds no {@code _metadata} and the run's files are
     * removed. The input is never modified.
     */
    public static SurgeryPlan apply(Path checkpoint, Surgery surgery, Path outputDir) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        Objects.requireNonNull(outputDir, "outputDir");
        return Commit.runOne(new Commit.LocalCheckpoint(checkpoint, surgery, outputDir));
    }

    /**
     * Repairs the checkpoint where it is, through the one commit sequence: the checkpoint directory
     * is locked, new state files are added next to {@code _metadata}, the new {@code _metadata} is
     * validated before it becomes visible, the old one is kept as {@code _metadata.backup-<millis>}
     * (a fresh name), and the new one is put in place with an atomic rename.
     */
    public static SurgeryPlan applyInPlace(Path checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        return Commit.runOne(new Commit.LocalCheckpoint(checkpoint, surgery, null));
    }

    /**
     * Inspects the state inside an HA {@code completedCheckpoint<random>} file. Needs the Flink jars
     * of the version that wrote it on the classpath.
     */
    public static InspectReport inspectHa(Path haFile) throws CheckpointSurgeonException {
        HaCheckpoint ha = HaCheckpoint.read(haFile);
        return Native.inspect(Native.source(ha.metadataBytes(), haFile.toString(), ha.checkpointDir()));
    }

    // ---------------------------------------------------------------------------------------------
    // Flink paths: s3://, hdfs://, gs://, ... through Flink's own FileSystem (Flink and its file
    // system plugin must be available); a local path or file: URI goes the native way.

    /**
     * Configures Flink's file systems for the {@code String} path methods, as a Flink process is
     * configured: the configuration in {@code flinkConfDir} ({@code config.yaml} or
     * {@code flink-conf.yaml}, e.g. {@code s3.endpoint}, {@code s3.access-key}; Flink's defaults
     * when null) and the file system plugins under {@code pluginsDir} (e.g.
     * {@code plugins/s3-fs-presto/flink-s3-fs-presto-1.20.0.jar}; none when null). This calls
     * Flink's {@code FileSystem.initialize}, which is global to the JVM. Without this call the first
     * remote access configures from {@code FLINK_CONF_DIR} / {@code FLINK_PLUGINS_DIR} (or
     * {@code $FLINK_HOME/conf} and {@code $FLINK_HOME/plugins}) when set, and otherwise uses Flink's
     * file systems as they are (as the embedding application initialized them).
     */
    public static void configureFileSystems(Path flinkConfDir, Path pluginsDir) throws CheckpointSurgeonException {
        FlinkFileSystems.configure(flinkConfDir, pluginsDir);
    }

    /** Whether a path is handled through Flink's file systems (a scheme other than {@code file:}). */
    /**
     * The paths among {@code paths} that do not exist: Flink paths are asked through Flink's
     * FileSystem (Flink on the class path), local paths and {@code file:} URIs on the local disk.
     * For {@code relocate --check}.
     */
    public static List<String> missingFiles(java.util.Collection<String> paths) throws CheckpointSurgeonException {
        List<String> missing = new java.util.ArrayList<>();
        for (String p : paths) {
            boolean there;
            if (isFlinkPath(p)) {
                try {
                    there = FlinkFileSystems.exists(p);
                } catch (java.io.IOException e) {
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, p + ": " + e, e);
                }
            } else {
                there = java.nio.file.Files.exists(localPath(p));
            }
            if (!there) missing.add(p);
        }
        return missing;
    }

    public static boolean isFlinkPath(String path) {
        return FlinkFileSystems.isRemote(Objects.requireNonNull(path, "path"));
    }

    /**
     * {@link #inspect(Path)} for a Flink path ({@code s3://bucket/checkpoints/<job>/chk-42}) or a
     * local one. A remote checkpoint is staged in a temporary local mirror: {@code _metadata} and
     * the files of operator state handles are downloaded; keyed state is not.
     */
    public static InspectReport inspect(String path) throws CheckpointSurgeonException {
        Objects.requireNonNull(path, "path");
        return isFlinkPath(path) ? RemoteRepair.inspect(path) : inspect(FlinkFileSystems.localPath(path));
    }

    /** {@link #plan(Path, Surgery)} for a Flink path or a local one. Writes nothing. */
    public static SurgeryPlan plan(String checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        return isFlinkPath(checkpoint) ? RemoteRepair.plan(checkpoint, surgery)
                : plan(FlinkFileSystems.localPath(checkpoint), surgery);
    }

    /**
     * {@link #apply(Path, Surgery, Path)} for Flink paths. With a remote checkpoint, the output
     * directory may be on any Flink file system (usually the same bucket) or local (a repaired
     * local copy); it must not exist or be empty. The new state files are written first, then the unchanged relative state files are
     * copied from the old directory through Flink's FileSystem, and {@code _metadata} is written
     * last. Absolute handles keep pointing where they point (the old {@code chk-N}, {@code shared/}).
     * Nothing is written unless Flink's own loader accepts the new {@code _metadata}. Two local paths
     * go the native way; a local checkpoint with a remote output directory is not supported.
     */
    public static SurgeryPlan apply(String checkpoint, Surgery surgery, String outputDir)
            throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        Objects.requireNonNull(outputDir, "outputDir");
        if (isFlinkPath(checkpoint)) {
            return RemoteRepair.apply(checkpoint, surgery, outputDir);
        }
        if (isFlinkPath(outputDir)) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.UNSUPPORTED, "the checkpoint " + checkpoint + " is local but the"
                    + " output " + outputDir + " is not: repair it into a local directory and upload that, or"
                    + " upload the checkpoint first");
        }
        return apply(FlinkFileSystems.localPath(checkpoint), surgery, FlinkFileSystems.localPath(outputDir));
    }

    /**
     * {@link #applyInPlace(Path, Surgery)} for a Flink path. Object stores have no atomic rename:
     * the new state files are written first, the old {@code _metadata} is copied to
     * {@code _metadata.backup-<millis>}, and {@code _metadata} is overwritten last (one PUT, which
     * readers see whole or not at all). On HDFS-like file systems the new file is written as
     * {@code _metadata.tmp-<millis>} and renamed over the deleted old one. Nothing is written unless
     * Flink's loader accepts the new {@code _metadata}.
     */
    public static SurgeryPlan applyInPlace(String checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        return isFlinkPath(checkpoint) ? RemoteRepair.apply(checkpoint, surgery, null)
                : applyInPlace(FlinkFileSystems.localPath(checkpoint), surgery);
    }

    /**
     * {@link #doctor(String)} of a checkpoint already inspected: {@code report} must be
     * {@link #inspect(String) inspect(checkpoint)}'s (it is not read again, except for the state
     * file and loader checks of a local checkpoint).
     */
    public static List<Finding> doctor(InspectReport report, String checkpoint) throws CheckpointSurgeonException {
        Objects.requireNonNull(report, "report");
        Objects.requireNonNull(checkpoint, "checkpoint");
        return isFlinkPath(checkpoint) ? Doctor.examine(report, checkpoint)
                : Doctor.examine(report, FlinkFileSystems.localPath(checkpoint));
    }

    /** {@link #doctor(Path)} for a Flink path or a local one. */
    public static List<Finding> doctor(String checkpoint) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        return isFlinkPath(checkpoint) ? Doctor.examine(RemoteRepair.inspect(checkpoint), checkpoint)
                : doctor(FlinkFileSystems.localPath(checkpoint));
    }

    /** The job and checkpoint an HA file belongs to. */
    public static final class HaFileInfo {
        private final Path file;
        private final String jobId;
        private final long checkpointId;
        private final long fileBytes;
        private final String checkpointPath;

        public HaFileInfo(Path file, String jobId, long checkpointId, long fileBytes, String checkpointPath) {
            this.file = file;
            this.jobId = jobId;
            this.checkpointId = checkpointId;
            this.fileBytes = fileBytes;
            this.checkpointPath = checkpointPath;
        }

        public Path file() {
            return file;
        }

        public String jobId() {
            return jobId;
        }

        public long checkpointId() {
            return checkpointId;
        }

        public long fileBytes() {
            return fileBytes;
        }

        public String checkpointPath() {
            return checkpointPath;
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof HaFileInfo)) return false;
            HaFileInfo that = (HaFileInfo) o;
            return java.util.Objects.equals(file, that.file) && java.util.Objects.equals(jobId, that.jobId) && java.util.Objects.equals(checkpointId, that.checkpointId) && java.util.Objects.equals(fileBytes, that.fileBytes) && java.util.Objects.equals(checkpointPath, that.checkpointPath);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(file, jobId, checkpointId, fileBytes, checkpointPath);
        }

        @Override
        public String toString() {
            return "HaFileInfo[file=" + file + ", jobId=" + jobId + ", checkpointId=" + checkpointId + ", fileBytes=" + fileBytes + ", checkpointPath=" + checkpointPath + "]";
        }
    }

    public static HaFileInfo haFileInfo(Path haFile) throws CheckpointSurgeonException {
        HaCheckpoint ha = HaCheckpoint.read(haFile);
        try {
            return new HaFileInfo(haFile, ha.jobId, ha.checkpointId, Files.size(haFile), ha.externalPointer);
        } catch (IOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, haFile + ": " + e, e);
        }
    }

    /**
     * Applies a surgery to an HA {@code CompletedCheckpoint} file in place: Flink serializes its
     * operator states, the native code rewrites them (new state files go into the checkpoint's
     * directory), Flink's loader reads the result back into the object, and the file is replaced
     * through the one commit sequence (locked HA directory, validated new file, backup, atomic
     * rename). The JobManager must be stopped while this runs.
     *
     * @param dryRun only plan: nothing is written
     */
    public static SurgeryPlan repairHa(Path haFile, Surgery surgery, boolean dryRun) throws CheckpointSurgeonException {
        if (dryRun) {
            return planHa(haFile, surgery);
        }
        return Commit.runOne(new HaFileRepair(haFile, surgery, false));
    }

    /** What happened to one HA file in {@link #repairHa(List, Surgery)}. */
    public static final class HaRepair {
        private final Path file;
        private final String status;
        private final SurgeryPlan plan;

        public HaRepair(Path file, String status, SurgeryPlan plan) {
            this.file = file;
            this.status = status;
            this.plan = plan;
        }

        public Path file() {
            return file;
        }

        public String status() {
            return status;
        }

        public SurgeryPlan plan() {
            return plan;
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof HaRepair)) return false;
            HaRepair that = (HaRepair) o;
            return java.util.Objects.equals(file, that.file) && java.util.Objects.equals(status, that.status) && java.util.Objects.equals(plan, that.plan);
        }

        @Override
        public int hashCode() {
            return java.util.Objects.hash(file, status, plan);
        }

        @Override
        public String toString() {
            return "HaRepair[file=" + file + ", status=" + status + ", plan=" + plan + "]";
        }
    }

    /**
     * Repairs several HA files all-or-nothing: every file is staged and validated first, then all
     * are switched. A file in which the surgery selects nothing (for example one repaired by an
     * earlier run) is skipped with status {@code skipped}; if it selects nothing in any file, this
     * throws {@code NOTHING_SELECTED}. If a switch fails midway, the exception names every file
     * as new or old, with its backup.
     */
    public static List<HaRepair> repairHa(List<Path> haFiles, Surgery surgery) throws CheckpointSurgeonException {
        List<HaFileRepair> units = new java.util.ArrayList<>();
        for (Path f : haFiles) units.add(new HaFileRepair(f, surgery, true));
        List<Commit.Outcome> outcomes = Commit.run(units);
        List<HaRepair> out = new java.util.ArrayList<>();
        boolean any = false;
        for (Commit.Outcome o : outcomes) {
            any |= o.plan != null;
            out.add(new HaRepair(((HaFileRepair) o.unit).file, o.status, o.plan));
        }
        if (!any) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "the surgery selects nothing in any of the "
                    + haFiles.size() + " HA file(s)");
        }
        return out;
    }

    /** The plan of a surgery on an HA file; writes nothing. */
    public static SurgeryPlan planHa(Path haFile, Surgery surgery) throws CheckpointSurgeonException {
        HaCheckpoint ha = HaCheckpoint.read(haFile);
        Surgery s = HaFileRepair.relocatePointers(ha, surgery);
        return Native.plan(Native.source(ha.metadataBytes(), haFile.toString(), ha.checkpointDir()), s, null,
                null).plan;
    }

    /**
     * What to do about a finding: examine the checkpoint ({@code inspect}, or {@code inspect-subtasks}
     * for every subtask's handles), or run a surgery on it ({@code remove-state}, {@code dedupe-union}
     * of {@link #state()} in operator {@link #operatorId()}; {@code kafka migrate-legacy} of operator
     * {@link #operatorId()}, whose surgery needs the new job's connector version, so {@link #surgery()}
     * is null for it). {@link #surgery()} gives the surgery to
     * pass to {@link #apply}; the CLI prints the command line. A remedy for an HA completedCheckpoint
     * file ({@link #haRepair()}) is an HA repair of the same surgery ({@link #repairHa}: the HA files
     * and their state streams rewritten together), or examining the HA files ({@code ha list}).
     */
    public static final class Remedy {
        private final String action;
        private final String operatorId;
        private final String state;
        private final boolean haRepair;

        public Remedy(String action, String operatorId, String state) {
            this(action, operatorId, state, false);
        }

        private Remedy(String action, String operatorId, String state, boolean haRepair) {
            this.action = Objects.requireNonNull(action, "action");
            this.operatorId = operatorId;
            this.state = state;
            this.haRepair = haRepair;
        }

        /**
         * This remedy for an HA completedCheckpoint file: a surgery stays itself, applied to the HA
         * files; examining (and a Kafka migration, which needs a savepoint) becomes {@code ha list}.
         */
        Remedy forHaFile() {
            boolean surgery = action.equals("remove-state") || action.equals("dedupe-union");
            return surgery ? new Remedy(action, operatorId, state, true) : new Remedy("ha list", null, null, true);
        }

        /** Whether this remedy applies to HA completedCheckpoint files, not to a checkpoint. */
        public boolean haRepair() {
            return haRepair;
        }

        static Remedy inspect(boolean subtasks) {
            return new Remedy(subtasks ? "inspect-subtasks" : "inspect", null, null);
        }

        public String action() {
            return action;
        }

        /** The operator a surgery applies to (32 hex digits), or null. */
        public String operatorId() {
            return operatorId;
        }

        /** The state a surgery applies to, or null. */
        public String state() {
            return state;
        }

        /** The surgery this remedy is, or null when it only examines. */
        public Surgery surgery() {
            Surgery.OperatorSelector op = operatorId == null ? null : Surgery.OperatorSelector.id(operatorId);
            switch (action) {
                case "remove-state":
                    return Surgery.removeState(op, state);
                case "dedupe-union":
                    return Surgery.dedupeUnion(op, state);
                default:
                    return null;
            }
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Remedy)) return false;
            Remedy that = (Remedy) o;
            return action.equals(that.action) && Objects.equals(operatorId, that.operatorId)
                    && Objects.equals(state, that.state) && haRepair == that.haRepair;
        }

        @Override
        public int hashCode() {
            return Objects.hash(action, operatorId, state, haRepair);
        }

        @Override
        public String toString() {
            return "Remedy[action=" + action + ", operatorId=" + operatorId + ", state=" + state
                    + (haRepair ? ", haRepair" : "") + "]";
        }
    }

    /**
     * A problem {@link #doctor} found: severity ({@code ERROR}, {@code WARNING}), a stable code, what
     * is wrong, the remedy that fixes or examines it, and alternative remedies.
     */
    public static final class Finding {
        private final String severity;
        private final String code;
        private final String message;
        private final Remedy fix;
        private final List<Remedy> alternatives;

        public Finding(String severity, String code, String message, Remedy fix, List<Remedy> alternatives) {
            this.severity = severity;
            this.code = code;
            this.message = message;
            this.fix = fix;
            this.alternatives = List.copyOf(alternatives);
        }

        public String severity() {
            return severity;
        }

        public String code() {
            return code;
        }

        public String message() {
            return message;
        }

        public Remedy fix() {
            return fix;
        }

        public List<Remedy> alternatives() {
            return alternatives;
        }

        @Override
        public boolean equals(Object o) {
            if (this == o) return true;
            if (!(o instanceof Finding)) return false;
            Finding that = (Finding) o;
            return Objects.equals(severity, that.severity) && Objects.equals(code, that.code)
                    && Objects.equals(message, that.message) && Objects.equals(fix, that.fix)
                    && Objects.equals(alternatives, that.alternatives);
        }

        @Override
        public int hashCode() {
            return Objects.hash(severity, code, message, fix, alternatives);
        }

        @Override
        public String toString() {
            return "Finding[severity=" + severity + ", code=" + code + ", message=" + message + ", fix=" + fix
                    + ", alternatives=" + alternatives + "]";
        }
    }

    /**
     * Finds what is wrong with a checkpoint or savepoint: a union state identical in every subtask
     * that repeats its values (the never-read union state multiplying on restore), {@code _metadata}
     * or per-task deployment payload near or over the 10 MiB RPC frame, serializer classes that are
     * not on the classpath (checked when Flink is on it), inline state near the 1 MiB maximum.
     */
    public static List<Finding> doctor(Path checkpoint) throws CheckpointSurgeonException {
        return Doctor.examine(inspect(checkpoint), checkpoint);
    }

    /**
     * {@link #doctor} for an HA completedCheckpoint file: its remedies are HA repairs
     * ({@link Remedy#haRepair()}), since a restore after a JobManager failover reads the HA file.
     */
    public static List<Finding> doctorHa(Path haFile) throws CheckpointSurgeonException {
        List<Finding> out = new java.util.ArrayList<>();
        for (Finding f : Doctor.examine(inspectHa(haFile), haFile.toString())) {
            List<Remedy> alternatives = new java.util.ArrayList<>();
            for (Remedy r : f.alternatives()) {
                Remedy ha = r.forHaFile();
                if (!alternatives.contains(ha) && !ha.equals(f.fix().forHaFile())) alternatives.add(ha);
            }
            out.add(new Finding(f.severity(), f.code(), f.message(), f.fix().forHaFile(), alternatives));
        }
        return out;
    }

    /**
     * Applies a surgery to Flink's own {@code CheckpointMetadata} object (typed {@code Object} so that
     * this jar needs no Flink at compile time): Flink serializes it, the native code rewrites it, and
     * Flink's loader reads the result, which is returned as a new {@code CheckpointMetadata}.
     *
     * @param checkpointDir where the checkpoint's relative state files live, and where rewritten
     *     state files are written (null if the state is inline only)
     */
    public static Object apply(Object checkpointMetadata, Surgery surgery, Path checkpointDir)
            throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpointMetadata, "checkpointMetadata");
        HaCheckpoint.requireFlink(Path.of("CheckpointMetadata"));
        FlinkObject unit = new FlinkObject("CheckpointMetadata", checkpointDir, surgery) {
            @Override
            byte[] metadataBytes() throws CheckpointSurgeonException {
                try {
                    return HaCheckpoint.store(checkpointMetadata);
                } catch (java.lang.reflect.InvocationTargetException e) {
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
                } catch (java.lang.reflect.InvocationTargetException e) {
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

    /**
     * A Flink object in memory as a unit of the commit sequence: stage writes new state files into
     * the checkpoint directory (locked), validate is Flink's loader building the new object, and the
     * switch hands it over.
     */
    private abstract static class FlinkObject implements Commit.Unit {
        final String name;
        final Path dir;
        final Surgery surgery;
        Commit.StagedBytes staged;
        Object loaded;

        FlinkObject(String name, Path dir, Surgery surgery) {
            this.name = name;
            this.dir = dir == null ? null : dir.toAbsolutePath().normalize();
            this.surgery = surgery;
        }

        abstract byte[] metadataBytes() throws CheckpointSurgeonException;

        abstract Object load(byte[] metadata) throws CheckpointSurgeonException;

        abstract void switchTo(Object loaded) throws CheckpointSurgeonException;

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
            staged = Commit.stageBytes(metadataBytes(), name, dir, surgery, undo);
            return true;
        }

        @Override
        public String validate() throws CheckpointSurgeonException {
            loaded = load(staged.metadata);
            return "loaded by Flink " + FlinkJudge.flinkVersion();
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
        public SurgeryPlan result(String backup, String validation) {
            return staged.staged.plan.withResult(new SurgeryPlan.Result(name, staged.metadata.length,
                    staged.staged.written, List.of(), List.of(), null, validation));
        }
    }

    /**
     * Applies a surgery to Flink's own {@code CompletedCheckpoint} object in place: its operator
     * states are replaced by the repaired ones that Flink's loader read back. Returns the plan.
     */
    public static SurgeryPlan applyToCompletedCheckpoint(Object completedCheckpoint, Surgery surgery)
            throws CheckpointSurgeonException {
        HaCheckpoint.requireFlink(Path.of("CompletedCheckpoint"));
        HaCheckpoint ha = HaCheckpoint.of(completedCheckpoint);
        return Commit.runOne(new FlinkObject("CompletedCheckpoint " + ha.checkpointId, ha.checkpointDir(), surgery) {
            @Override
            byte[] metadataBytes() throws CheckpointSurgeonException {
                return ha.metadataBytes();
            }

            @Override
            Object load(byte[] metadata) throws CheckpointSurgeonException {
                try {
                    return HaCheckpoint.load(metadata, ha.externalPointer);
                } catch (java.lang.reflect.InvocationTargetException e) {
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
}
