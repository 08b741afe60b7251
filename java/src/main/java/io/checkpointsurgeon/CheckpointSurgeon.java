package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.HaCheckpoint;
import io.checkpointsurgeon.flink.HaStore;
import io.checkpointsurgeon.flink.KubernetesHa;
import io.checkpointsurgeon.flink.PointerRemoval;
import io.checkpointsurgeon.internal.Leftovers;
import io.checkpointsurgeon.internal.Native;
import io.checkpointsurgeon.internal.Repairs;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The entry point of checkpoint-surgeon: inspect Flink checkpoints, savepoints and their
 * {@code _metadata} bytes. The format work is done by the native library bundled in this jar.
 */
public final class CheckpointSurgeon {
    private CheckpointSurgeon() {}

    /** This jar's version; the bundled native library must have the same. */
    public static final String VERSION = Native.VERSION;

    /** A system property: when set, unexpected failures print their stack trace (and the CLI each commit step). */
    public static final String TRACE_PROPERTY = "checkpointsurgeon.trace";

    private static volatile ProgressListener progress = ProgressListener.SILENT;

    /** The loaded native library: its version and platform ({@code 0.2.0 for linux-x86_64}). */
    public static String nativeLibrary() throws CheckpointSurgeonException {
        return Native.library();
    }

    /** Where the library reports its progress from now on, for the whole JVM (null: nowhere). */
    public static void setProgressListener(ProgressListener listener) {
        progress = listener == null ? ProgressListener.SILENT : listener;
    }

    /** The listener set by {@link #setProgressListener}, or one that reports nothing. */
    public static ProgressListener progressListener() {
        return progress;
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
     * Whether a local path names HA {@code completedCheckpoint*} files: a directory without
     * {@code _metadata} that holds some ({@link #haFiles}), or a file so named (read as named, as
     * {@link #haFiles} returns it, even a backup or staged one).
     */
    public static boolean isHaPath(Path p) throws CheckpointSurgeonException {
        if (Files.isDirectory(p)) return !Files.exists(p.resolve("_metadata")) && !haFiles(p).isEmpty();
        return p.getFileName().toString().startsWith("completedCheckpoint");
    }

    /**
     * Inspects a checkpoint or savepoint on the local file system.
     *
     * @param path a {@code _metadata} file, or the directory that holds it
     */
    public static InspectReport inspect(Path path) throws CheckpointSurgeonException {
        Objects.requireNonNull(path, "path");
        return Native.inspect(path);
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
        return Native.inspect(metadata, name, checkpointDir);
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
        return Repairs.planLocal(checkpoint, surgery);
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
        return Repairs.applyLocal(checkpoint, surgery, outputDir);
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
        return Repairs.applyLocal(checkpoint, surgery, null);
    }

    /**
     * Inspects the state inside an HA {@code completedCheckpoint<random>} file. Needs the Flink jars
     * of the version that wrote it on the classpath.
     */
    public static InspectReport inspectHa(Path haFile) throws CheckpointSurgeonException {
        return inspectHa(haFile, HaCheckpoint.read(haFile));
    }

    private static InspectReport inspectHa(Path haFile, HaCheckpoint ha) throws CheckpointSurgeonException {
        return Native.inspect(ha.metadataBytes(), haFile.toString(), ha.checkpointDir());
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

    /** Whether a path is handled through Flink's file systems (a scheme other than {@code file:}). */
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
        return isFlinkPath(path) ? Repairs.inspectRemote(path) : inspect(FlinkFileSystems.localPath(path));
    }

    /**
     * The keyed state of a local checkpoint or savepoint per operator and per keyed state (name,
     * type, serializers, TTL, entries and bytes in total and per subtask), read natively without
     * any class of the job: a canonical savepoint's or heap checkpoint's streams are read once
     * each (in parallel across handles, in bounded memory), a RocksDB checkpoint's SST files only
     * at their footer and properties block. A handle that cannot be read is reported with its
     * error and the rest is still read. Long reads report to the {@link #setProgressListener
     * progress listener}.
     *
     * @param path a {@code _metadata} file, or the directory that holds it
     */
    public static KeyedReport inspectKeyed(Path path) throws CheckpointSurgeonException {
        Objects.requireNonNull(path, "path");
        return Native.inspectKeyed(path, progress);
    }

    /**
     * {@link #inspectKeyed(Path)} for a Flink path ({@code s3://bucket/checkpoints/<job>/chk-42})
     * or a local one. Nothing is downloaded or staged: each file is read through Flink's
     * FileSystem in the ranges the readers need (a few KiB at the end of each SST file; canonical
     * and heap streams front to back), with a bounded number of requests at once.
     */
    public static KeyedReport inspectKeyed(String path) throws CheckpointSurgeonException {
        Objects.requireNonNull(path, "path");
        return isFlinkPath(path) ? Native.inspectKeyedRemote(path, progress)
                : inspectKeyed(FlinkFileSystems.localPath(path));
    }

    /** {@link #plan(Path, Surgery)} for a Flink path or a local one. Writes nothing. */
    public static SurgeryPlan plan(String checkpoint, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        Objects.requireNonNull(surgery, "surgery");
        return isFlinkPath(checkpoint) ? Repairs.planRemote(checkpoint, surgery)
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
            return Repairs.applyRemote(checkpoint, surgery, outputDir);
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
        return isFlinkPath(checkpoint) ? Repairs.applyRemote(checkpoint, surgery, null)
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

    /**
     * {@link #doctor(InspectReport, String)} of a report another thread is still reading: {@code report}
     * is that thread's {@link #inspect(String) inspect(checkpoint)}. The checks that need only a local
     * checkpoint's files (its state files, leftovers, orphans) run on this thread meanwhile; the
     * findings, their order and a failure to read are those of {@code doctor(report.get(), checkpoint)}.
     */
    public static List<Finding> doctor(java.util.concurrent.Future<InspectReport> report, String checkpoint)
            throws CheckpointSurgeonException {
        Objects.requireNonNull(report, "report");
        Objects.requireNonNull(checkpoint, "checkpoint");
        return isFlinkPath(checkpoint) ? Doctor.examine(Doctor.await(report), checkpoint)
                : Doctor.examine(report, FlinkFileSystems.localPath(checkpoint));
    }

    /** {@link #doctor(Path)} for a Flink path or a local one. */
    public static List<Finding> doctor(String checkpoint) throws CheckpointSurgeonException {
        Objects.requireNonNull(checkpoint, "checkpoint");
        return isFlinkPath(checkpoint) ? Doctor.examine(Repairs.inspectRemote(checkpoint), checkpoint)
                : doctor(FlinkFileSystems.localPath(checkpoint));
    }

    /**
     * Every file a checkpoint's {@code _metadata} references, as its handles record them: relative
     * and absolute file handles (operator, keyed, RocksDB incremental shared and private files,
     * changelog, channel and coordinator state) with their sizes, and file-merging segments with
     * their byte ranges; each listed once.
     */
    public static List<io.checkpointsurgeon.flink.StateFile> references(Path checkpoint) throws CheckpointSurgeonException {
        Path p = Objects.requireNonNull(checkpoint, "checkpoint");
        return Native.stateFiles(Files.isDirectory(p) ? p.resolve("_metadata") : p);
    }

    /**
     * Finds the newest checkpoint or savepoint under local {@code roots} that will restore (see
     * {@link RecoverReport}), and which of {@code haPointers} (named as the report names them, each
     * the HA file it points to) name one that will not.
     */
    public static RecoverReport recover(List<Path> roots, java.util.Map<String, HaFileInfo> haPointers)
            throws CheckpointSurgeonException {
        return Recovery.run(roots, checkpointsOf(haPointers));
    }

    /** Each HA pointer's checkpoint id and path, as recover compares them with the checkpoints found. */
    private static java.util.Map<String, java.util.Map.Entry<Long, String>> checkpointsOf(
            java.util.Map<String, HaFileInfo> haPointers) {
        java.util.Map<String, java.util.Map.Entry<Long, String>> pointers = new java.util.LinkedHashMap<>();
        for (java.util.Map.Entry<String, HaFileInfo> e : haPointers.entrySet()) {
            pointers.put(e.getKey(), new java.util.AbstractMap.SimpleImmutableEntry<>(e.getValue().checkpointId(),
                    e.getValue().checkpointPath()));
        }
        return pointers;
    }

    /**
     * The files of checkpoint storage under local {@code roots} that no {@code _metadata} under
     * {@code roots} or {@code alsoReferencedBy} references, split by age; deletes nothing.
     */
    public static OrphanReport orphans(List<Path> roots, List<Path> alsoReferencedBy, java.time.Duration olderThan)
            throws CheckpointSurgeonException {
        return Orphans.report(roots, alsoReferencedBy, olderThan);
    }

    /**
     * Deletes the orphans older than {@code olderThan} (at least one hour) that a second, fresh
     * scan confirms, logging each to {@code deletionLog} (a new file). Refuses (VALIDATION) while
     * a {@code _metadata} cannot be read or is newer than the scan, or a {@code chk-*} without
     * {@code _metadata} is younger than {@code olderThan}.
     */
    public static OrphanReport deleteOrphans(List<Path> roots, List<Path> alsoReferencedBy,
                                             java.time.Duration olderThan, Path deletionLog)
            throws CheckpointSurgeonException {
        return Orphans.delete(roots, alsoReferencedBy, olderThan, deletionLog, false);
    }

    /**
     * {@link #recover} of roots given as local paths or Flink paths ({@code s3://bucket/prefix},
     * any scheme Flink's file systems serve; all of one kind). On a Flink file system each
     * directory is one listing request and each referenced file one status request (on S3 a HEAD),
     * at most {@code parallelism} at once; only {@code _metadata} files are read.
     */
    public static RecoverReport recoverAt(List<String> roots, java.util.Map<String, HaFileInfo> haPointers,
                                          int parallelism) throws CheckpointSurgeonException {
        java.util.Map<String, java.util.Map.Entry<Long, String>> pointers = checkpointsOf(haPointers);
        if (!onFlinkPaths(roots, List.of())) return Recovery.run(localPaths(roots), pointers);
        return StoreRecovery.run(roots, pointers, parallelism);
    }

    /**
     * {@link #recoverAt(List, java.util.Map, int)} with the HA pointers gathered here: the
     * completedCheckpoint files under {@code haDir} and the pointers of {@code store} to local files
     * (either may be null); each broken one names its {@link RecoverReport.HaPointer#removal()}.
     */
    public static RecoverReport recoverAt(List<String> roots, Path haDir, HaStore store, int parallelism)
            throws CheckpointSurgeonException {
        java.util.Map<String, HaFileInfo> pointers = new java.util.LinkedHashMap<>();
        java.util.Map<String, PointerRemoval.Target> removals = new java.util.HashMap<>();
        if (haDir != null) {
            for (Path f : haFiles(haDir)) {
                HaFileInfo info = haFileInfo(f);
                pointers.put(f.toString(), info);
                removals.put(f.toString(), store == null ? PointerRemoval.Target.of(info) : store.target(info));
            }
        }
        if (store != null) {
            for (java.util.Map.Entry<String, KubernetesHa.Pointer> e : store.pointersToLocalFiles().entrySet()) {
                pointers.put(e.getKey(), haFileInfo(e.getValue().file));
                removals.put(e.getKey(), store.target(e.getValue()));
            }
        }
        return recoverAt(roots, pointers, parallelism).withRemovals(removals);
    }

    /** {@link #orphans} of local paths or Flink paths (all of one kind), listed {@code parallelism} requests at once. */
    public static OrphanReport orphansAt(List<String> roots, List<String> alsoReferencedBy, java.time.Duration olderThan,
                                         int parallelism) throws CheckpointSurgeonException {
        return onFlinkPaths(roots, alsoReferencedBy)
                ? StoreOrphans.report(roots, alsoReferencedBy, olderThan, parallelism)
                : orphans(localPaths(roots), localPaths(alsoReferencedBy), olderThan);
    }

    /**
     * {@link #deleteOrphans} of local paths or Flink paths (all of one kind): on a Flink file
     * system the deletes are single requests (Flink's file systems have no batch delete), at most
     * {@code parallelism} at once, each logged when it completed.
     */
    public static OrphanReport deleteOrphansAt(List<String> roots, List<String> alsoReferencedBy,
                                               java.time.Duration olderThan, Path deletionLog, int parallelism)
            throws CheckpointSurgeonException {
        return deleteOrphansAt(roots, alsoReferencedBy, olderThan, deletionLog, parallelism, false);
    }

    /** {@link #deleteOrphansAt} without the one-hour floor of {@code olderThan}: for tests, unsafe on live jobs. */
    public static OrphanReport deleteOrphansAtUnsafeAge(List<String> roots, List<String> alsoReferencedBy,
                                                        java.time.Duration olderThan, Path deletionLog, int parallelism)
            throws CheckpointSurgeonException {
        return deleteOrphansAt(roots, alsoReferencedBy, olderThan, deletionLog, parallelism, true);
    }

    private static OrphanReport deleteOrphansAt(List<String> roots, List<String> also, java.time.Duration olderThan,
                                                Path log, int parallelism, boolean belowFloor)
            throws CheckpointSurgeonException {
        return onFlinkPaths(roots, also) ? StoreOrphans.delete(roots, also, olderThan, log, belowFloor, parallelism)
                : Orphans.delete(localPaths(roots), localPaths(also), olderThan, log, belowFloor);
    }

    /** Whether the paths are Flink paths; refuses a mix of local and Flink paths. */
    private static boolean onFlinkPaths(List<String> roots, List<String> also) throws CheckpointSurgeonException {
        int remote = 0;
        for (String p : roots) remote += isFlinkPath(p) ? 1 : 0;
        for (String p : also) remote += isFlinkPath(p) ? 1 : 0;
        if (remote == 0) return false;
        if (remote != roots.size() + also.size()) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "give either local"
                    + " directories or Flink paths, not both: " + roots + (also.isEmpty() ? "" : ", " + also));
        }
        FlinkFileSystems.ensureConfigured();
        return true;
    }

    private static List<Path> localPaths(List<String> paths) {
        List<Path> out = new java.util.ArrayList<>();
        for (String p : paths) out.add(FlinkFileSystems.localPath(p));
        return out;
    }

    /** The job and checkpoint an HA file belongs to. */
    public static final class HaFileInfo extends Value {
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
        Object[] components() {
            return new Object[] {"file", file, "jobId", jobId, "checkpointId", checkpointId, "fileBytes", fileBytes,
                    "checkpointPath", checkpointPath};
        }
    }

    /** One HA file's job and checkpoint ({@link #haFileInfo}) and the union states its checkpoint holds. */
    public static final class HaListing extends Value {
        /** A union state of one operator, with its totals. */
        public static final class UnionState extends Value {
            private final String operatorId;
            private final InspectReport.StateTotal state;

            public UnionState(String operatorId, InspectReport.StateTotal state) {
                this.operatorId = operatorId;
                this.state = state;
            }

            public String operatorId() {
                return operatorId;
            }

            public InspectReport.StateTotal state() {
                return state;
            }

            @Override
            Object[] components() {
                return new Object[] {"operatorId", operatorId, "state", state};
            }
        }

        private final HaFileInfo file;
        private final List<UnionState> unionStates;

        public HaListing(HaFileInfo file, List<UnionState> unionStates) {
            this.file = file;
            this.unionStates = List.copyOf(unionStates);
        }

        public HaFileInfo file() {
            return file;
        }

        public List<UnionState> unionStates() {
            return unionStates;
        }

        @Override
        Object[] components() {
            return new Object[] {"file", file, "unionStates", unionStates};
        }
    }

    /** The {@link HaListing} of each HA file, in order, each reported to the progress listener as it starts. */
    public static List<HaListing> listHa(List<Path> haFiles) throws CheckpointSurgeonException {
        List<HaListing> out = new java.util.ArrayList<>();
        for (int i = 0; i < haFiles.size(); i++) {
            Path f = haFiles.get(i);
            progress.file(i + 1, haFiles.size(), f);
            HaCheckpoint ha = HaCheckpoint.read(f); // one deserialization for both
            HaFileInfo info = haFileInfo(f, ha);
            List<HaListing.UnionState> unions = new java.util.ArrayList<>();
            for (InspectReport.OperatorInfo op : inspectHa(f, ha).operators()) {
                for (InspectReport.StateTotal t : op.stateTotals()) {
                    if (t.mode() == InspectReport.Mode.UNION) unions.add(new HaListing.UnionState(op.id(), t));
                }
            }
            out.add(new HaListing(info, unions));
        }
        return out;
    }

    public static HaFileInfo haFileInfo(Path haFile) throws CheckpointSurgeonException {
        return haFileInfo(haFile, HaCheckpoint.read(haFile));
    }

    private static HaFileInfo haFileInfo(Path haFile, HaCheckpoint ha) throws CheckpointSurgeonException {
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
        return Repairs.repairHa(haFile, surgery);
    }

    /** What happened to one HA file in {@link #repairHa(List, Surgery)} or {@link #planHa(List, Surgery)}. */
    public static final class HaRepair extends Value {
        /** {@link #toString()} is the status's spelling in JSON. */
        public enum Status {
            /** Planned only: nothing was written. */
            PLANNED,
            /** The surgery selects nothing in the file (repaired by an earlier run?); it was left as it is. */
            SKIPPED,
            /** Repaired: the new file is in place, the old one kept as the plan's backup. */
            SWITCHED;

            @Override
            public String toString() {
                return Spelling.of(this);
            }
        }

        private final Path file;
        private final Status status;
        private final SurgeryPlan plan;

        public HaRepair(Path file, Status status, SurgeryPlan plan) {
            this.file = file;
            this.status = status;
            this.plan = plan;
        }

        public Path file() {
            return file;
        }

        public Status status() {
            return status;
        }

        public SurgeryPlan plan() {
            return plan;
        }

        @Override
        Object[] components() {
            return new Object[] {"file", file, "status", status, "plan", plan};
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
        Objects.requireNonNull(surgery, "surgery");
        return Repairs.repairHa(List.copyOf(haFiles), surgery);
    }

    /** The plan of a surgery on an HA file; writes nothing. */
    public static SurgeryPlan planHa(Path haFile, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(surgery, "surgery");
        return Repairs.planHa(haFile, surgery);
    }

    /**
     * The plans of a surgery on several HA files, each with status {@code PLANNED}, or
     * {@code SKIPPED} where the surgery selects nothing; if it selects nothing in any of them, this
     * throws {@code NOTHING_SELECTED}. Each file is reported to the progress listener as it starts.
     * Writes nothing.
     */
    public static List<HaRepair> planHa(List<Path> haFiles, Surgery surgery) throws CheckpointSurgeonException {
        Objects.requireNonNull(surgery, "surgery");
        return Repairs.planHa(List.copyOf(haFiles), surgery);
    }

    /**
     * What to do about a finding: examine the checkpoint ({@code INSPECT}, or
     * {@code INSPECT_SUBTASKS} for every subtask's handles), or run a surgery on it
     * ({@code REMOVE_STATE} or {@code DEDUPE_UNION} of {@link #state()} in operator
     * {@link #operatorId()}; {@code MIGRATE_KAFKA_LEGACY} of operator {@link #operatorId()}, whose
     * surgery needs the new job's connector version, so {@link #surgery()} is null for it), or
     * delete what a killed repair left in the directory ({@code CLEAN_LEFTOVERS}, {@link #removeLeftovers}).
     * {@link #surgery()} gives the surgery to pass to {@link #apply}; an application shows the
     * remedy its own way (the CLI as a command line). A remedy for an HA completedCheckpoint file
     * ({@link #haRepair()}) is an HA repair of the same surgery ({@link #repairHa}: the HA files and
     * their state streams rewritten together), or examining the HA files ({@code LIST_HA}).
     */
    public static final class Remedy {
        /** What a remedy does; {@link #toString()} is its spelling in JSON. */
        public enum Action {
            INSPECT,
            INSPECT_SUBTASKS,
            /** Examine the keyed state per state ({@link CheckpointSurgeon#inspectKeyed(String)}). */
            INSPECT_KEYED,
            REMOVE_STATE,
            DEDUPE_UNION,
            /** FlinkKafkaConsumer state to KafkaSource state ({@link Surgery#migrateKafkaLegacy}). */
            MIGRATE_KAFKA_LEGACY,
            /** Examine HA completedCheckpoint files ({@link #haFileInfo}, {@link #inspectHa}). */
            LIST_HA,
            /** Delete the files a killed repair left ({@link CheckpointSurgeon#removeLeftovers}). */
            CLEAN_LEFTOVERS,
            /** List the files of the job directory no checkpoint references ({@link CheckpointSurgeon#orphans}). */
            LIST_ORPHANS;

            @Override
            public String toString() {
                return Spelling.of(this);
            }
        }

        private final Action action;
        private final String operatorId;
        private final String state;
        private final boolean haRepair;

        public Remedy(Action action, String operatorId, String state) {
            this(action, operatorId, state, false);
        }

        private Remedy(Action action, String operatorId, String state, boolean haRepair) {
            this.action = Objects.requireNonNull(action, "action");
            this.operatorId = operatorId;
            this.state = state;
            this.haRepair = haRepair;
        }

        /**
         * This remedy for an HA completedCheckpoint file: a surgery stays itself, applied to the HA
         * files; examining (and a Kafka migration, which needs a savepoint) becomes {@code LIST_HA}.
         */
        Remedy forHaFile() {
            boolean surgery = action == Action.REMOVE_STATE || action == Action.DEDUPE_UNION;
            return surgery ? new Remedy(action, operatorId, state, true) : new Remedy(Action.LIST_HA, null, null, true);
        }

        /** Whether this remedy applies to HA completedCheckpoint files, not to a checkpoint. */
        public boolean haRepair() {
            return haRepair;
        }

        static Remedy inspect(boolean subtasks) {
            return new Remedy(subtasks ? Action.INSPECT_SUBTASKS : Action.INSPECT, null, null);
        }

        static Remedy inspectKeyed() {
            return new Remedy(Action.INSPECT_KEYED, null, null);
        }

        public Action action() {
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

        /** The surgery this remedy is, or null when it only examines or needs more than the finding knows. */
        public Surgery surgery() {
            Surgery.OperatorSelector op = operatorId == null ? null : Surgery.OperatorSelector.id(operatorId);
            switch (action) {
                case REMOVE_STATE:
                    return Surgery.removeState(op, state);
                case DEDUPE_UNION:
                    return Surgery.dedupeUnion(op, state);
                default:
                    return null;
            }
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Remedy)) return false;
            Remedy that = (Remedy) o;
            return action == that.action && Objects.equals(operatorId, that.operatorId)
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
     * A problem {@link #doctor} found: severity, a stable code, what is wrong, the remedy that fixes
     * or examines it, and alternative remedies.
     */
    public static final class Finding extends Value {
        /** How bad a finding is: an {@code ERROR} keeps a job from restoring or will; a {@code WARNING} may. */
        public enum Severity {
            ERROR, WARNING
        }

        /**
         * What a finding is about: a stable name that scripts, alerts ({@code watch}'s hooks and
         * metrics) and the README match on.
         */
        public enum Code {
            /** Flink's own loader throws on {@code _metadata}. */
            FLINK_REJECTS_METADATA,
            /** A file {@code _metadata} references is not there. */
            STATE_FILE_MISSING,
            /** A referenced file lies outside the job's checkpoint directory. */
            STATE_FILE_OUTSIDE_JOB_DIR,
            /** A killed repair left files (an output without {@code _metadata}, a lock, a staged file). */
            LEFTOVER_FILES,
            /** Files under the checkpoint roots that no retained checkpoint references. */
            ORPHAN_FILES,
            /** {@code _metadata} near or over the RPC frame size. */
            METADATA_SIZE,
            /** A state stream that cannot be read as its meta info says. */
            STATE_STREAM_UNREADABLE,
            /** A union state that no current operator reads, re-snapshotted on every restore. */
            STALE_UNION_STATE,
            /** Inline (in {@code _metadata}) state near the inline limit. */
            INLINE_STATE_NEAR_LIMIT,
            /** A task's deployment payload near or over the RPC frame size. */
            DEPLOYMENT_SIZE,
            /** An operator state's serializer class is not on the classpath. */
            SERIALIZER_CLASS_MISSING,
            /** The largest keyed state has no TTL. */
            LARGEST_KEYED_STATE_WITHOUT_TTL,
            /** A keyed state a known connector or operator no longer registers. */
            STALE_KEYED_STATE,
            /** A keyed state's serializer class is not on the classpath. */
            KEYED_SERIALIZER_CLASS_MISSING,
            /** A state with a known connector's name and mode that is not that connector's. */
            LOOK_ALIKE_STATE,
            /** A known connector's state, with what it means for a restore. */
            CONNECTOR_STATE,
            /** A union state that grows by the parallelism from one checkpoint to the next. */
            UNION_STATE_GROWS_BY_PARALLELISM
        }

        private final Severity severity;
        private final Code code;
        private final Message message;
        private final Remedy fix;
        private final List<Remedy> alternatives;

        public Finding(Severity severity, Code code, String message, Remedy fix, List<Remedy> alternatives) {
            this(severity, code, Message.of(message), fix, alternatives);
        }

        public Finding(Severity severity, Code code, Message message, Remedy fix, List<Remedy> alternatives) {
            this.severity = severity;
            this.code = code;
            this.message = message;
            this.fix = fix;
            this.alternatives = List.copyOf(alternatives);
        }

        public Severity severity() {
            return severity;
        }

        public Code code() {
            return code;
        }

        /** The message, with the choices it names as the Java API does. */
        public String message() {
            return message.toString();
        }

        /** The message with the choices it names, for a front end to name them its own way ({@link Message#render}). */
        public Message typedMessage() {
            return message;
        }

        public Remedy fix() {
            return fix;
        }

        public List<Remedy> alternatives() {
            return alternatives;
        }

        @Override
        Object[] components() {
            return new Object[] {"severity", severity, "code", code, "message", message, "fix", fix,
                    "alternatives", alternatives};
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
     * What a repair killed with SIGKILL left in a local checkpoint directory (or the directory of a
     * {@code _metadata} file): its staged {@code _metadata.tmp-*} and the state files only such a
     * staged file references, named the way this tool names new files (never Flink's names). Reads
     * only. A run stopped by SIGTERM, SIGHUP or SIGINT removes its own files and leaves none.
     */
    public static List<Path> leftovers(Path checkpoint) throws CheckpointSurgeonException {
        return Leftovers.find(directoryOf(checkpoint));
    }

    /**
     * The doctor of a local directory that holds no {@code _metadata}: {@code LEFTOVER_FILES} (an
     * ERROR) when a repair killed before its switch left files there, e.g. an {@code --output}
     * holding only its staged {@code _metadata.tmp-*} and new state files; else nothing. Reads only.
     */
    public static List<Finding> doctorLeftovers(Path dir) {
        return Doctor.leftoversWithoutMetadata(dir.toAbsolutePath().normalize());
    }

    /**
     * Deletes {@link #leftovers} under the directory's commit lock (fails with {@code LOCKED} while a
     * repair runs there), each deletion reported to the progress listener; returns what it deleted.
     */
    public static List<Path> removeLeftovers(Path checkpoint) throws CheckpointSurgeonException {
        return Leftovers.remove(directoryOf(checkpoint));
    }

    private static Path directoryOf(Path checkpoint) {
        Path p = Objects.requireNonNull(checkpoint, "checkpoint").toAbsolutePath().normalize();
        return Files.isDirectory(p) ? p : p.getParent();
    }

    /**
     * What is wrong with a checkpoint's keyed state ({@code keyed} must be
     * {@link #inspectKeyed(String)}'s of the checkpoint {@code report} describes):
     * <ul>
     * <li>{@code LARGEST_KEYED_STATE_WITHOUT_TTL} (WARNING): the keyed state that holds the largest
     * share of the checkpoint's bytes, 1 MiB or more of it, has no TTL, the usual case of a state
     * that grows without bound;
     * <li>{@code STALE_KEYED_STATE} (WARNING), when {@code registeredStates} is given: a keyed state
     * in the checkpoint that the job no longer registers. Flink restores every state of the meta
     * info and writes it back on every checkpoint, so it is carried forever. Each entry is a state
     * name, for every operator, or {@code uid/name} (or {@code operatorId/name}) for one operator,
     * which is then checked against its own entries and the unscoped ones; timers (priority queue
     * states) are not the job's to register and are not checked;
     * <li>{@code KEYED_SERIALIZER_CLASS_MISSING} (ERROR), when {@code classPath} is given: a class a
     * state's serializer snapshot names (the snapshot class, a POJO, Kryo's type) that the class
     * path cannot load, so that a restore with it fails. Flink's own classes are checked only when
     * the class path has Flink.
     * </ul>
     */
    public static List<Finding> doctorKeyed(InspectReport report, KeyedReport keyed,
            java.util.Collection<String> registeredStates, ClassLoader classPath) {
        Objects.requireNonNull(report, "report");
        Objects.requireNonNull(keyed, "keyed");
        return Doctor.examineKeyed(report, keyed, registeredStates, classPath);
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
     * {@link #doctorHa(Path)} of each HA file, in order (a file's findings by its path), each
     * reported to the progress listener as it starts.
     */
    public static java.util.Map<Path, List<Finding>> doctorHa(List<Path> haFiles) throws CheckpointSurgeonException {
        java.util.Map<Path, List<Finding>> out = new java.util.LinkedHashMap<>();
        for (int i = 0; i < haFiles.size(); i++) {
            progress.file(i + 1, haFiles.size(), haFiles.get(i));
            out.put(haFiles.get(i), doctorHa(haFiles.get(i)));
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
        Objects.requireNonNull(surgery, "surgery");
        return Repairs.applyToCheckpointMetadata(checkpointMetadata, surgery, checkpointDir);
    }

    /**
     * Applies a surgery to Flink's own {@code CompletedCheckpoint} object in place: its operator
     * states are replaced by the repaired ones that Flink's loader read back. Returns the plan.
     */
    public static SurgeryPlan applyToCompletedCheckpoint(Object completedCheckpoint, Surgery surgery)
            throws CheckpointSurgeonException {
        Objects.requireNonNull(surgery, "surgery");
        return Repairs.applyToCompletedCheckpoint(completedCheckpoint, surgery);
    }

    /**
     * The checkpoints a path names: itself when it holds {@code _metadata} (or is one, or is a
     * Flink path), else every directory below it, two levels deep, that holds {@code _metadata}
     * (a job's {@code chk-*}, a savepoint directory's {@code savepoint-*}), in name order.
     */
    public static List<String> checkpointsUnder(String path) throws CheckpointSurgeonException {
        if (isFlinkPath(path)) return List.of(path);
        Path p = Path.of(path);
        if (p.getFileName() != null && p.getFileName().toString().equals("_metadata")
                || Files.isRegularFile(p.resolve("_metadata"))) {
            return List.of(path);
        }
        try (Stream<Path> s = Files.find(p, 3,
                (f, a) -> a.isRegularFile() && f.getFileName().toString().equals("_metadata"))) {
            return s.map(f -> f.getParent().toString()).sorted().collect(Collectors.toList());
        } catch (IOException | UncheckedIOException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, path + ": " + e, e);
        }
    }
}
