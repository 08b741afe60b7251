package io.checkpointsurgeon;

/**
 * A choice the caller has, as a message names it ("use ... to repair it where it is"): a library
 * caller makes it through a method or parameter of the Java API, a front end through its own
 * option or command. {@link #toString()} is the Java API's name; a front end renders a
 * {@link Message} with its own names ({@link Message#render}).
 */
public enum Choice {
    /** Not checking that no JobManager holds the leadership before an HA pointer changes. */
    SKIP_LEADER_CHECK("not calling HaStore.liveLeader()"),
    /** The age below which an unreferenced file is kept ({@link CheckpointSurgeon#orphans}). */
    OLDER_THAN("olderThan"),
    /** Directories of other jobs whose checkpoints may reference the files ({@link CheckpointSurgeon#orphans}). */
    ALSO_REFERENCED_BY("alsoReferencedBy"),
    /** Repairing a checkpoint where it is. */
    IN_PLACE("CheckpointSurgeon.applyInPlace"),
    /** Repairing a checkpoint into a new directory. */
    OUTPUT("CheckpointSurgeon.apply(..., outputDir)"),
    /** The new {@code _metadata} references the unchanged state files where they are. */
    REFERENCE_UNCHANGED("Surgery.referenceUnchangedFiles()"),
    /** The unchanged state files are copied into the new directory. */
    COPY_UNCHANGED("Surgery.copyUnchangedFiles()"),
    /** Keyed state files rewritten by a Flink batch job. */
    ON_FLINK("Surgery.onFlink"),
    /** Where Flink's file system plugins are. */
    PLUGINS("the pluginsDir of CheckpointSurgeon.configureFileSystems"),
    /** Following the keyed states over checkpoints. */
    KEYED_HISTORY("CheckpointSurgeon.inspectKeyed of each checkpoint"),
    /** Moving FlinkKafkaConsumer's offsets into KafkaSource state. */
    MIGRATE_KAFKA_LEGACY("Surgery.migrateKafkaLegacy"),
    /** The surgeries of Kafka source state (migrate, drop a topic, set offsets). */
    KAFKA_SURGERIES("Surgery's Kafka surgeries"),
    /** Removing a keyed state. */
    REMOVE_KEYED_STATE("Surgery.removeKeyedState"),
    /** Deleting the files a killed repair left. */
    CLEAN_LEFTOVERS("CheckpointSurgeon.removeLeftovers");

    private final String javaApi;

    Choice(String javaApi) {
        this.javaApi = javaApi;
    }

    /** The Java API that makes this choice. */
    @Override
    public String toString() {
        return javaApi;
    }
}
