package io.checkpointsurgeon;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * The catalogue of connector states known to go stale or to grow: the state (its name and
 * distribution mode, or the coordinator state of a source), the connector that writes it, why it
 * grows and how to get rid of it. {@link Doctor} reports a checkpoint that holds one. Each name is
 * the connector's own, checked in its source (repository, path and line beside each entry).
 */
final class StaleStates {
    /** One known state. */
    static final class Entry {
        final String state;
        /** The operator state's distribution mode; null for a source's coordinator state ({@link #coordinator()}). */
        final InspectReport.Mode mode;
        final String connector;
        final String connectorClass;
        final String why;
        final Message fix;
        /** Fewer elements (over all subtasks) are normal; 1: any element. */
        final long minElements;
        /** The state is another connector's when the operator also holds this state (null: none). */
        final String notWith;
        /**
         * The element type the connector's serializer writes, as {@link InspectReport.StateInfo#elementType}
         * names it (null: not checked); a state of another type is a look-alike, not the connector's.
         */
        final String elementType;

        Entry(String state, InspectReport.Mode mode, String connector, String connectorClass, String why, String fix,
              long minElements, String notWith) {
            this(state, mode, connector, connectorClass, why, Message.of(fix), minElements, notWith, null);
        }

        Entry(String state, InspectReport.Mode mode, String connector, String connectorClass, String why, Message fix,
              long minElements, String notWith, String elementType) {
            this.state = state;
            this.mode = mode;
            this.connector = connector;
            this.connectorClass = connectorClass;
            this.why = why;
            this.fix = fix;
            this.minElements = minElements;
            this.notWith = notWith;
            this.elementType = elementType;
        }

        /** Whether the state is a source's enumerator state: the operator's coordinator state, not an operator state. */
        boolean coordinator() {
            return mode == null;
        }

        /** "FlinkKafkaConsumer (org.apache...FlinkKafkaConsumerBase)". */
        String who() {
            return connector + " (" + connectorClass + ")";
        }
    }

    static final Entry KAFKA = new Entry(
            // apache/flink-connector-kafka v3.4.0, flink-connector-kafka/src/main/java/org/apache/flink/
            // streaming/connectors/kafka/FlinkKafkaConsumerBase.java:118 (OFFSETS_STATE_NAME), :986
            // (getUnionListState); the consumer is gone from connector 4.0 on
            "topic-partition-offset-states", InspectReport.Mode.UNION, "FlinkKafkaConsumer",
            "org.apache.flink.streaming.connectors.kafka.FlinkKafkaConsumerBase",
            "every subtask restores the offsets of all partitions and a KafkaSource under the same uid never"
                    + " reads them, so Flink carries them on, once per subtask",
            Message.of("move the offsets into KafkaSource state with `", Choice.MIGRATE_KAFKA_LEGACY, "` (see README,"
                    + " Moving off FlinkKafkaConsumer); a job already on KafkaSource: remove the state"),
            1, "topic-partition-offset-states_subName",
            InspectReport.KAFKA_LEGACY_ELEMENT_TYPE);

    static final Entry KINESIS = new Entry(
            // apache/flink-connector-aws v5.0.0, flink-connector-aws/flink-connector-kinesis/src/main/java/
            // org/apache/flink/streaming/connectors/kinesis/FlinkKinesisConsumer.java:168
            // (sequenceNumsStateStoreName), :458 (getUnionListState)
            "Kinesis-Stream-Shard-State", InspectReport.Mode.UNION, "FlinkKinesisConsumer",
            "org.apache.flink.streaming.connectors.kinesis.FlinkKinesisConsumer",
            "a union state of every shard's sequence number: each subtask restores all shards, including closed"
                    + " shards of past reshards, and a KinesisStreamsSource under the same uid never reads it",
            "move to KinesisStreamsSource (flink-connector-aws-kinesis-streams; Flink offers no state migration:"
                    + " start it from a timestamp or AT_TIMESTAMP near the savepoint, under a new uid or with"
                    + " this state removed)",
            1, null);

    static final Entry PULSAR = new Entry(
            // streamnative/pulsar-flink b09086b42d5b6fb9d738657dfe7526d165c1ad00, pulsar-flink-connector/src/
            // main/java/org/apache/flink/streaming/connectors/pulsar/FlinkPulsarSource.java:116
            // (OFFSETS_STATE_NAME_V3), :808 (getUnionListState)
            "topic-offset-states", InspectReport.Mode.UNION, "FlinkPulsarSource (StreamNative pulsar-flink, also FlinkPulsarRowSource)",
            "org.apache.flink.streaming.connectors.pulsar.FlinkPulsarSource",
            "a union state of every topic range's MessageId, restored whole into every subtask; the connector"
                    + " targets Flink 1.13 and Flink's PulsarSource (flink-connector-pulsar) never reads it",
            "move to Flink's PulsarSource (no state migration: start it from the subscription's cursor with"
                    + " StartCursor.defaultStartCursor() and the same subscription name, under a new uid or with"
                    + " this state removed)",
            1, null);

    static final Entry PULSAR_OLD = new Entry(
            // same file :114 (OFFSETS_STATE_NAME) and :880-882 (OFFSETS_STATE_NAME + "_subName"): the state
            // of pulsar-flink before its V3 state, which the V3 source reads once and clears
            "topic-partition-offset-states_subName", InspectReport.Mode.UNION, "FlinkPulsarSource (StreamNative pulsar-flink, before its V3 state)",
            "org.apache.flink.streaming.connectors.pulsar.FlinkPulsarSource",
            "the subscription names beside the old offsets (`topic-partition-offset-states`), a union state"
                    + " restored whole into every subtask; only pulsar-flink reads it",
            "move to Flink's PulsarSource as for `topic-offset-states`; remove both old states",
            1, null);

    static final Entry PAIMON = new Entry(
            // apache/paimon 5dacde516bf6e29b583aff8b32bab321bfc6e64f, paimon-flink/paimon-flink-common/src/
            // main/java/org/apache/paimon/flink/sink/RestoreCommittableStateManager.java:67 (getListState,
            // BytePrimitiveArraySerializer); CommitterOperator.java:173 snapshots the committables of every
            // checkpoint not yet committed (committablesPerCheckpoint, :74), :198 commits on notification
            "streaming_committer_raw_states", InspectReport.Mode.SPLIT_DISTRIBUTE, "Paimon sink committer",
            "org.apache.paimon.flink.sink.CommitterOperator",
            "one ManifestCommittable per checkpoint whose commit has not happened: it grows when commits fail or"
                    + " checkpoint-complete notifications do not arrive (heuristic: 10 or more pending checkpoints)",
            "find why the committer does not commit (its exceptions, commit conflicts); a restore commits what"
                    + " is pending (RestoreCommittableStateManager) and clears the state",
            10, null);

    static final Entry CDC = new Entry(
            // apache/flink-cdc release-3.5.0 (also 3.4.0), flink-cdc-connect/flink-cdc-source-connectors/
            // flink-connector-mysql-cdc/src/main/java/org/apache/flink/cdc/connectors/mysql/source/assigners/
            // state/PendingSplitsStateSerializer.java:48 (VERSION 5), :52-54 (state flags), :76-85 (split
            // serializer version, flag), :156-161 (table ids first, then splits and finished offsets),
            // :418 (a table id: writeUTF of toDoubleQuotedString, "db"."table"; 3.4.0: toString, db.table);
            // flink-cdc-base/.../assigner/state/PendingSplitsStateSerializer.java:59-65, :87 (same layout)
            "enumerator state", null /* coordinator state */, "Flink CDC incremental snapshot source (MySqlSource, JdbcIncrementalSource)",
            "org.apache.flink.cdc.connectors.mysql.source.assigners.state.PendingSplitsStateSerializer",
            "the enumerator keeps every snapshot chunk it assigned and each chunk's finished offset, in the"
                    + " snapshot and hybrid pending-splits states, for as long as the job runs; coordinator state"
                    + " lives inline in _metadata",
            "a new snapshot with a larger scan.incremental.snapshot.chunk.size (fewer chunks), or a new start"
                    + " from the binlog position the job has reached (scan.startup.mode=specific-offset) under a"
                    + " new uid, which drops the snapshot bookkeeping",
            1, null);

    static final List<Entry> ENTRIES = List.of(KAFKA, KINESIS, PULSAR, PULSAR_OLD, PAIMON, CDC);

    /** Coordinator state at least this big is reported when it is a CDC enumerator's: 1 MiB. */
    static final long CDC_MIN_BYTES = 1024L * 1024;

    private StaleStates() {}

    /** The entry of operator state {@code t} of {@code op}, or null (also for a look-alike). */
    static Entry match(InspectReport.OperatorInfo op, InspectReport.StateTotal t) {
        Entry e = byName(op, t);
        return e != null && lookAlike(e, op, t) == null ? e : null;
    }

    /** The entry whose state name and mode {@code t} has, whatever its element type, or null. */
    static Entry byName(InspectReport.OperatorInfo op, InspectReport.StateTotal t) {
        for (Entry e : ENTRIES) {
            if (e.coordinator() || !e.state.equals(t.name()) || e.mode != t.mode()) continue;
            if (t.elements() < e.minElements) continue;
            if (e.notWith != null && hasState(op, e.notWith)) continue;
            return e;
        }
        return null;
    }

    /** Whether {@code op} has operator state {@code name} (a loop: this runs in every doctor). */
    private static boolean hasState(InspectReport.OperatorInfo op, String name) {
        for (InspectReport.StateTotal o : op.stateTotals()) {
            if (o.name().equals(name)) return true;
        }
        return false;
    }

    /**
     * Why state {@code t} is not entry {@code e}'s although it has its name: the element type its
     * serializer snapshot names, when that is not the connector's (empty when it could not be
     * read); null when it is the connector's or {@code e} checks no type.
     */
    static String lookAlike(Entry e, InspectReport.OperatorInfo op, InspectReport.StateTotal t) {
        if (e.elementType == null) return null;
        String found = op.elementType(t.name());
        return found.equals(e.elementType) ? null : found;
    }

    /**
     * What a finding says of a look-alike of entry {@code e} whose elements are {@code found}: "it
     * has FlinkKafkaConsumer's state name and mode, but it is not Kafka's: its elements are ...".
     */
    static Message explainLookAlike(Entry e, String found) {
        return Message.of(String.format(java.util.Locale.ROOT, "it has the state name and mode of %s, but it is not %s:"
                        + " its elements are %s, not %s", e.who(), e == KAFKA ? "Kafka's" : "that connector's",
                found.isEmpty() ? "of a type that could not be read" : escaped(found), e.elementType),
                e == KAFKA ? Message.of(", so ", Choice.KAFKA_SURGERIES, " refuse it") : "");
    }

    /** A class name from the checkpoint on one line: control characters as Java escapes. */
    private static String escaped(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            if (Character.isISOControl(c)) b.append(String.format(java.util.Locale.ROOT, "\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }

    /**
     * Whether {@code coordinator}, the start of an operator's coordinator state, is a Flink CDC
     * incremental snapshot enumerator's snapshot or hybrid pending-splits state. Known: the layout,
     * as {@code SourceCoordinator} and CDC's {@code PendingSplitsStateSerializer} write it: the
     * coordinator serde version (0 or 1), the enumerator serializer version, the state's length
     * (the rest of the state), the split serializer version, the state flag (1 snapshot, 3 hybrid;
     * 2, the binlog-only state, does not grow), then the list of processed tables (an int count,
     * each a {@code writeUTF} table id with a dot, {@code "db"."table"} or {@code db.table}). A
     * heuristic: no other source is known to write this layout, but nothing in it names the connector.
     */
    static boolean cdcEnumerator(byte[] coordinator, long coordinatorBytes) {
        if (coordinator.length < 24) return false;
        ByteBuffer b = ByteBuffer.wrap(coordinator);
        int serde = b.getInt(), enumVersion = b.getInt(), length = b.getInt();
        int splitVersion = b.getInt(), flag = b.getInt(), tables = b.getInt();
        if (serde < 0 || serde > 1 || enumVersion < 1 || enumVersion > 64 || splitVersion < 1 || splitVersion > 64)
            return false;
        if (length != coordinatorBytes - 12 || (flag != 1 && flag != 3) || tables < 0 || tables > 1_000_000)
            return false;
        if (tables == 0) return true;
        if (b.remaining() < 2) return false;
        // the first table id ("db.table"); the head may end inside it
        int n = b.getShort() & 0xffff;
        boolean whole = n <= b.remaining();
        byte[] id = Arrays.copyOfRange(coordinator, b.position(), b.position() + Math.min(n, b.remaining()));
        String s = new String(id, StandardCharsets.UTF_8);
        return n > 0 && s.chars().allMatch(c -> c >= 0x20) && (!whole || s.indexOf('.') > 0);
    }

    /** The text a finding gives for an entry: the connector, why it grows, and the fix. */
    static Message explain(Entry e) {
        return Message.of(e.who() + ": " + e.why + ". Fix: ", e.fix);
    }
}
