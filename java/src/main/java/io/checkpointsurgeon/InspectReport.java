package io.checkpointsurgeon;

import io.checkpointsurgeon.internal.Json;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a checkpoint, savepoint or HA metadata holds and how big it is, as the native inspector
 * reports it. Sizes are bytes; {@code -1} means unknown (the state stream could not be read).
 */
public final class InspectReport extends Value {
    private final String source;
    private final int metadataVersion;
    private final long checkpointId;
    private final long metadataBytes;
    private final long propertiesBytes;
    private final List<MasterStateInfo> masterStates;
    private final List<OperatorInfo> operators;

    /**
     * Flink's {@code OperatorStateHandle.Mode}: how a restore hands out an operator state's elements.
     * Its name is its spelling in JSON and text.
     */
    public enum Mode {
        /** Each subtask gets a share of the elements (list state). */
        SPLIT_DISTRIBUTE,
        /** Every subtask gets all elements (union list state). */
        UNION,
        /** Every subtask gets the same copy (broadcast state). */
        BROADCAST
    }

    public InspectReport(String source, int metadataVersion, long checkpointId, long metadataBytes, long propertiesBytes, List<MasterStateInfo> masterStates, List<OperatorInfo> operators) {
        this.source = source;
        this.metadataVersion = metadataVersion;
        this.checkpointId = checkpointId;
        this.metadataBytes = metadataBytes;
        this.propertiesBytes = propertiesBytes;
        this.masterStates = masterStates;
        this.operators = operators;
    }

    public String source() {
        return source;
    }

    public int metadataVersion() {
        return metadataVersion;
    }

    public long checkpointId() {
        return checkpointId;
    }

    public long metadataBytes() {
        return metadataBytes;
    }

    public long propertiesBytes() {
        return propertiesBytes;
    }

    public List<MasterStateInfo> masterStates() {
        return masterStates;
    }

    public List<OperatorInfo> operators() {
        return operators;
    }

    @Override
    Object[] components() {
        return new Object[] {"source", source, "metadataVersion", metadataVersion, "checkpointId", checkpointId,
                "metadataBytes", metadataBytes, "propertiesBytes", propertiesBytes, "masterStates", masterStates,
                "operators", operators};
    }

    public static final class MasterStateInfo extends Value {
        private final String name;
        private final int version;
        private final long bytes;

        public MasterStateInfo(String name, int version, long bytes) {
            this.name = name;
            this.version = version;
            this.bytes = bytes;
        }

        public String name() {
            return name;
        }

        public int version() {
            return version;
        }

        public long bytes() {
            return bytes;
        }

        @Override
        Object[] components() {
            return new Object[] {"name", name, "version", version, "bytes", bytes};
        }
    }

    /** One operator: id as Flink prints it, name and uid where the format stores them (V5+). */
    public static final class OperatorInfo extends Value {
        private final String id;
        private final String name;
        private final String uid;
        private final int parallelism;
        private final int maxParallelism;
        private final long coordinatorStateBytes;
        private final boolean fullyFinished;
        private final int finishedSubtasks;
        private final KafkaEnumerator kafkaEnumerator;
        private final List<SubtaskInfo> subtasks;
        /** Set by the report's decoder; not a component (not in the JSON report, not in equals). */
        private byte[] coordinatorHead = new byte[0];

        public OperatorInfo(String id, String name, String uid, int parallelism, int maxParallelism, long coordinatorStateBytes, boolean fullyFinished, int finishedSubtasks, KafkaEnumerator kafkaEnumerator, List<SubtaskInfo> subtasks) {
            this.id = id;
            this.name = name;
            this.uid = uid;
            this.parallelism = parallelism;
            this.maxParallelism = maxParallelism;
            this.coordinatorStateBytes = coordinatorStateBytes;
            this.fullyFinished = fullyFinished;
            this.finishedSubtasks = finishedSubtasks;
            this.kafkaEnumerator = kafkaEnumerator;
            this.subtasks = subtasks;
        }

        /** A KafkaSource's enumerator state, decoded from the coordinator state; null for other operators. */
        public KafkaEnumerator kafkaEnumerator() {
            return kafkaEnumerator;
        }

        public String id() {
            return id;
        }

        public String name() {
            return name;
        }

        public String uid() {
            return uid;
        }

        public int parallelism() {
            return parallelism;
        }

        public int maxParallelism() {
            return maxParallelism;
        }

        public long coordinatorStateBytes() {
            return coordinatorStateBytes;
        }

        /**
         * The first bytes (at most 256) of the coordinator state, for recognising a source's
         * enumerator state by its layout; empty when there is none.
         */
        public byte[] coordinatorHead() {
            return coordinatorHead.clone();
        }

        /** This operator with the first bytes of its coordinator state (the report's decoder sets them). */
        public OperatorInfo withCoordinatorHead(byte[] head) {
            OperatorInfo o = new OperatorInfo(id, name, uid, parallelism, maxParallelism, coordinatorStateBytes,
                    fullyFinished, finishedSubtasks, kafkaEnumerator, subtasks);
            o.coordinatorHead = head.clone();
            return o;
        }

        public boolean fullyFinished() {
            return fullyFinished;
        }

        public int finishedSubtasks() {
            return finishedSubtasks;
        }

        public List<SubtaskInfo> subtasks() {
            return subtasks;
        }

        @Override
        Object[] components() {
            return new Object[] {"id", id, "name", name, "uid", uid, "parallelism", parallelism,
                    "maxParallelism", maxParallelism, "coordinatorStateBytes", coordinatorStateBytes,
                    "fullyFinished", fullyFinished, "finishedSubtasks", finishedSubtasks,
                    "kafkaEnumerator", kafkaEnumerator, "subtasks", subtasks};
        }

        /** Every state name of this operator, summed over its subtasks' managed operator state. */
        public List<StateTotal> stateTotals() {
            Map<String, StateTotal> totals = new LinkedHashMap<>();
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (StateInfo st : h.states()) {
                        StateTotal t = new StateTotal(st.name(), st.mode(), st.elements(), st.bytes(), 1);
                        StateTotal before = totals.get(st.name());
                        totals.put(st.name(), before == null ? t : before.plus(t));
                    }
                }
            }
            return new ArrayList<>(totals.values());
        }

        /**
         * The element type of this operator's {@code topic-partition-offset-states} when it is not the
         * legacy FlinkKafkaConsumer's ({@link #KAFKA_LEGACY_ELEMENT_TYPE}), so its values are no Kafka
         * offsets (pulsar-flink and jobs of their own use the name too); null when the operator has
         * no such state or it is Kafka's.
         */
        public String kafkaLegacyLookAlike() {
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (StateInfo st : h.states()) {
                        if (!st.name().equals(KAFKA_LEGACY_STATE)) continue;
                        String t = elementType(KAFKA_LEGACY_STATE);
                        return t.equals(KAFKA_LEGACY_ELEMENT_TYPE) ? null : t;
                    }
                }
            }
            return null;
        }

        /**
         * The element type of operator state {@code state} (see {@link StateInfo#elementType}): the
         * first that a subtask's stream names; empty when none was read.
         */
        public String elementType(String state) {
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (StateInfo st : h.states()) {
                        if (st.name().equals(state) && !st.elementType().isEmpty()) return st.elementType();
                    }
                }
            }
            return "";
        }

        /**
         * Kafka positions (topic, partition, offset, stopping offset) in that order. A class, not
         * {@code Comparator.comparing(...).thenComparing(...)}: those lambdas are serializable, which
         * the class-data archive leaves out, so each run would generate them.
         */
        private static final java.util.Comparator<List<Object>> KAFKA_ORDER = new java.util.Comparator<List<Object>>() {
            @Override
            public int compare(List<Object> a, List<Object> b) {
                int c = ((String) a.get(0)).compareTo((String) b.get(0));
                if (c == 0) c = ((Integer) a.get(1)).compareTo((Integer) b.get(1));
                if (c == 0) c = ((Long) a.get(2)).compareTo((Long) b.get(2));
                return c != 0 ? c : ((Long) a.get(3)).compareTo((Long) b.get(3));
            }
        };

        /**
         * The Kafka positions in this operator's state, summed over subtasks: per state name, each
         * distinct (topic, partition, offset) with the number of elements that hold it.
         */
        public Map<String, List<KafkaOffset>> kafkaOffsets() {
            Map<String, Map<List<Object>, long[]>> acc = new LinkedHashMap<>();
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (StateInfo st : h.states()) {
                        for (KafkaOffset k : st.kafkaOffsets()) {
                            acc.computeIfAbsent(st.name(), x -> new java.util.TreeMap<>(KAFKA_ORDER))
                                    .computeIfAbsent(List.of(k.topic(), k.partition(), k.offset(), k.stoppingOffset()),
                                            x -> new long[1])[0] += k.count();
                        }
                    }
                }
            }
            Map<String, List<KafkaOffset>> out = new LinkedHashMap<>();
            // a loop, not a stream: a sorted map's stream makes Map.Entry.comparingByKey's lambda
            for (Map.Entry<String, Map<List<Object>, long[]>> state : acc.entrySet()) {
                List<KafkaOffset> offsets = new ArrayList<>(state.getValue().size());
                for (Map.Entry<List<Object>, long[]> e : state.getValue().entrySet()) {
                    offsets.add(new KafkaOffset((String) e.getKey().get(0), (Integer) e.getKey().get(1),
                            (Long) e.getKey().get(2), (Long) e.getKey().get(3), e.getValue()[0]));
                }
                out.put(state.getKey(), offsets);
            }
            return out;
        }

        /**
         * The KafkaSource splits each reader holds ({@code SourceReaderState}), by subtask index;
         * empty for operators without Kafka splits.
         */
        public Map<Integer, List<KafkaOffset>> kafkaReaderSplits() {
            Map<Integer, List<KafkaOffset>> out = new java.util.TreeMap<>();
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (StateInfo st : h.states()) {
                        if (st.name().equals("SourceReaderState") && !st.kafkaOffsets().isEmpty()) {
                            out.computeIfAbsent(s.index(), x -> new ArrayList<>()).addAll(st.kafkaOffsets());
                        }
                    }
                }
            }
            return out;
        }

        public long operatorStateBytes() {
            long sum = 0;
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    sum += h.delegateSize();
                }
            }
            return sum;
        }

        public long keyedStateBytes() {
            long sum = 0;
            for (SubtaskInfo s : subtasks) {
                if (s.managedKeyedState() != null) sum += s.managedKeyedState().stateSize();
                if (s.rawKeyedState() != null) sum += s.rawKeyedState().stateSize();
            }
            return sum;
        }

    }

    /** A state name summed over subtasks; {@code handles} counts the subtasks that carry it. */
    public static final class StateTotal extends Value {
        private final String name;
        private final Mode mode;
        private final long elements;
        private final long bytes;
        private final int handles;

        public StateTotal(String name, Mode mode, long elements, long bytes, int handles) {
            this.name = name;
            this.mode = mode;
            this.elements = elements;
            this.bytes = bytes;
            this.handles = handles;
        }

        public String name() {
            return name;
        }

        public Mode mode() {
            return mode;
        }

        public long elements() {
            return elements;
        }

        public long bytes() {
            return bytes;
        }

        public int handles() {
            return handles;
        }

        @Override
        Object[] components() {
            return new Object[] {"name", name, "mode", mode, "elements", elements, "bytes", bytes, "handles", handles};
        }

        StateTotal plus(StateTotal o) {
            long b = bytes < 0 || o.bytes < 0 ? -1 : bytes + o.bytes;
            return new StateTotal(name, mode, elements + o.elements, b, handles + o.handles);
        }

    }

    public static final class SubtaskInfo extends Value {
        private final int index;
        private final OperatorStateHandleInfo managedOperatorState;
        private final OperatorStateHandleInfo rawOperatorState;
        private final KeyedStateHandleInfo managedKeyedState;
        private final KeyedStateHandleInfo rawKeyedState;
        private final int inputChannelHandles;
        private final int outputChannelHandles;
        private final long channelStateBytes;

        public SubtaskInfo(int index, OperatorStateHandleInfo managedOperatorState, OperatorStateHandleInfo rawOperatorState, KeyedStateHandleInfo managedKeyedState, KeyedStateHandleInfo rawKeyedState, int inputChannelHandles, int outputChannelHandles, long channelStateBytes) {
            this.index = index;
            this.managedOperatorState = managedOperatorState;
            this.rawOperatorState = rawOperatorState;
            this.managedKeyedState = managedKeyedState;
            this.rawKeyedState = rawKeyedState;
            this.inputChannelHandles = inputChannelHandles;
            this.outputChannelHandles = outputChannelHandles;
            this.channelStateBytes = channelStateBytes;
        }

        public int index() {
            return index;
        }

        public OperatorStateHandleInfo managedOperatorState() {
            return managedOperatorState;
        }

        public OperatorStateHandleInfo rawOperatorState() {
            return rawOperatorState;
        }

        public KeyedStateHandleInfo managedKeyedState() {
            return managedKeyedState;
        }

        public KeyedStateHandleInfo rawKeyedState() {
            return rawKeyedState;
        }

        public int inputChannelHandles() {
            return inputChannelHandles;
        }

        public int outputChannelHandles() {
            return outputChannelHandles;
        }

        public long channelStateBytes() {
            return channelStateBytes;
        }

        @Override
        Object[] components() {
            return new Object[] {"index", index, "managedOperatorState", managedOperatorState,
                    "rawOperatorState", rawOperatorState, "managedKeyedState", managedKeyedState,
                    "rawKeyedState", rawKeyedState, "inputChannelHandles", inputChannelHandles,
                    "outputChannelHandles", outputChannelHandles, "channelStateBytes", channelStateBytes};
        }

        public List<OperatorStateHandleInfo> operatorStateHandles() {
            List<OperatorStateHandleInfo> l = new ArrayList<>(2);
            if (managedOperatorState != null) l.add(managedOperatorState);
            if (rawOperatorState != null) l.add(rawOperatorState);
            return l;
        }

    }

    /**
     * An operator state handle: its Flink class, where its stream lives ({@code inline} for a
     * ByteStreamStateHandle inside {@code _metadata}), the stream header's proxy version, and its
     * states. {@code streamError} says why the stream could not be read; empty when it was.
     */
    public static final class OperatorStateHandleInfo extends Value {
        private final String kind;
        private final String delegateKind;
        private final String location;
        private final long delegateSize;
        private final boolean inline;
        private final int proxyVersion;
        private final boolean compressed;
        private final String streamError;
        private final long headerBytes;
        private final List<StateInfo> states;

        public OperatorStateHandleInfo(String kind, String delegateKind, String location, long delegateSize, boolean inline, int proxyVersion, boolean compressed, String streamError, long headerBytes, List<StateInfo> states) {
            this.kind = kind;
            this.delegateKind = delegateKind;
            this.location = location;
            this.delegateSize = delegateSize;
            this.inline = inline;
            this.proxyVersion = proxyVersion;
            this.compressed = compressed;
            this.streamError = streamError;
            this.headerBytes = headerBytes;
            this.states = states;
        }

        public String kind() {
            return kind;
        }

        public String delegateKind() {
            return delegateKind;
        }

        public String location() {
            return location;
        }

        public long delegateSize() {
            return delegateSize;
        }

        public boolean inline() {
            return inline;
        }

        public int proxyVersion() {
            return proxyVersion;
        }

        public boolean compressed() {
            return compressed;
        }

        public String streamError() {
            return streamError;
        }

        public long headerBytes() {
            return headerBytes;
        }

        public List<StateInfo> states() {
            return states;
        }

        @Override
        Object[] components() {
            return new Object[] {"kind", kind, "delegateKind", delegateKind, "location", location,
                    "delegateSize", delegateSize, "inline", inline, "proxyVersion", proxyVersion,
                    "compressed", compressed, "streamError", streamError, "headerBytes", headerBytes, "states", states};
        }
    }

    /**
     * One state in a handle: its distribution mode, element count, element bytes, value serializer
     * snapshot class, how many distinct element values it has (-1 if unknown) and an
     * order-independent digest of the values (equal contents give equal digests).
     */
    /** The union state of the legacy FlinkKafkaConsumer (FlinkKafkaConsumerBase.OFFSETS_STATE_NAME). */
    public static final String KAFKA_LEGACY_STATE = "topic-partition-offset-states";

    /**
     * Its element type as {@link StateInfo#elementType} names it: FlinkKafkaConsumerBase's
     * createStateSerializer, a TupleSerializer of KryoSerializer(KafkaTopicPartition) and LongSerializer.
     */
    public static final String KAFKA_LEGACY_ELEMENT_TYPE =
            "Tuple2<org.apache.flink.streaming.connectors.kafka.internals.KafkaTopicPartition (Kryo), Long>";

    public static final class StateInfo extends Value {
        private final String name;
        private final Mode mode;
        private final long elements;
        private final long bytes;
        private final String serializer;
        private final String elementType;
        private final long distinctElements;
        private final long digest;
        private final List<KafkaOffset> kafkaOffsets;

        public StateInfo(String name, Mode mode, long elements, long bytes, String serializer, long distinctElements, long digest, List<KafkaOffset> kafkaOffsets) {
            this(name, mode, elements, bytes, serializer, "", distinctElements, digest, kafkaOffsets);
        }

        public StateInfo(String name, Mode mode, long elements, long bytes, String serializer, String elementType,
                long distinctElements, long digest, List<KafkaOffset> kafkaOffsets) {
            this.name = name;
            this.mode = mode;
            this.elements = elements;
            this.bytes = bytes;
            this.serializer = serializer;
            this.elementType = elementType;
            this.distinctElements = distinctElements;
            this.digest = digest;
            this.kafkaOffsets = kafkaOffsets;
        }

        public String name() {
            return name;
        }

        public Mode mode() {
            return mode;
        }

        public long elements() {
            return elements;
        }

        public long bytes() {
            return bytes;
        }

        public String serializer() {
            return serializer;
        }

        /**
         * The element type the state's serializer snapshot names, e.g. {@code Tuple2<String, Long>} or
         * {@code Tuple2<org.example.Partition (Kryo), Long>}; empty for a broadcast state or when the
         * stream was not read.
         */
        public String elementType() {
            return elementType;
        }

        public long distinctElements() {
            return distinctElements;
        }

        public long digest() {
            return digest;
        }

        public List<KafkaOffset> kafkaOffsets() {
            return kafkaOffsets;
        }

        @Override
        Object[] components() {
            return new Object[] {"name", name, "mode", mode, "elements", elements, "bytes", bytes,
                    "serializer", serializer, "elementType", elementType, "distinctElements", distinctElements,
                    "digest", digest, "kafkaOffsets", kafkaOffsets};
        }
    }

    /**
     * A Kafka source position decoded natively from {@code topic-partition-offset-states} (the
     * legacy FlinkKafkaConsumer: the offset of the last record processed) or {@code SourceReaderState}
     * (KafkaSource splits: the starting offset is the next one to read, and a bounded split has a
     * stopping offset), with how many elements hold it. Markers: -2 earliest, -1 latest, -3
     * committed; {@link Long#MIN_VALUE} as stopping offset: unbounded.
     */
    public static final class KafkaOffset extends Value {
        private final String topic;
        private final int partition;
        private final long offset;
        private final long stoppingOffset;
        private final long count;

        public KafkaOffset(String topic, int partition, long offset, long stoppingOffset, long count) {
            this.topic = topic;
            this.partition = partition;
            this.offset = offset;
            this.stoppingOffset = stoppingOffset;
            this.count = count;
        }

        /** The stopping offset of a KafkaSource split ({@link Long#MIN_VALUE}: none). */
        public long stoppingOffset() {
            return stoppingOffset;
        }

        public String topic() {
            return topic;
        }

        public int partition() {
            return partition;
        }

        public long offset() {
            return offset;
        }

        public long count() {
            return count;
        }

        @Override
        Object[] components() {
            return new Object[] {"topic", topic, "partition", partition, "offset", offset, "stoppingOffset", stoppingOffset,
                    "count", count};
        }
    }

    /**
     * A KafkaSource's enumerator state ({@code KafkaSourceEnumState}): the partitions it assigned
     * to readers and those discovered but not assigned yet (pending). Version 3 (connector 5.x)
     * stores each partition's split with its offsets; versions 1 and 2 only the partition.
     */
    public static final class KafkaEnumerator extends Value {
        private final int version;
        private final String error;
        private final boolean initialDiscoveryFinished;
        private final List<KafkaOffset> assigned;
        private final List<KafkaOffset> pending;

        public KafkaEnumerator(int version, String error, boolean initialDiscoveryFinished, List<KafkaOffset> assigned,
                List<KafkaOffset> pending) {
            this.version = version;
            this.error = error;
            this.initialDiscoveryFinished = initialDiscoveryFinished;
            this.assigned = assigned;
            this.pending = pending;
        }

        /** The {@code KafkaSourceEnumStateSerializer} version (-1 if it could not be read). */
        public int version() {
            return version;
        }

        /** Why the state could not be decoded (for example a version from the future); empty if it was. */
        public String error() {
            return error;
        }

        public boolean initialDiscoveryFinished() {
            return initialDiscoveryFinished;
        }

        /** Partitions assigned to readers (offsets: version 3 only, else {@link Long#MIN_VALUE}). */
        public List<KafkaOffset> assigned() {
            return assigned;
        }

        /** Partitions discovered but not assigned yet. */
        public List<KafkaOffset> pending() {
            return pending;
        }

        @Override
        Object[] components() {
            return new Object[] {"version", version, "error", error, "initialDiscoveryFinished", initialDiscoveryFinished,
                    "assigned", assigned, "pending", pending};
        }
    }

    public static final class KeyedStateHandleInfo extends Value {
        private final String kind;
        private final long stateSize;

        public KeyedStateHandleInfo(String kind, long stateSize) {
            this.kind = kind;
            this.stateSize = stateSize;
        }

        public String kind() {
            return kind;
        }

        public long stateSize() {
            return stateSize;
        }

        @Override
        Object[] components() {
            return new Object[] {"kind", kind, "stateSize", stateSize};
        }
    }

    // The totals and the per-operator sums below are loops, not streams: they run in every
    // inspect and doctor, and a JVM that just started interprets a stream pipeline (its classes,
    // its lambdas' call sites) many times slower than a loop.
    public long totalOperatorStateBytes() {
        long sum = 0;
        for (OperatorInfo o : operators) sum += o.operatorStateBytes();
        return sum;
    }

    public long totalKeyedStateBytes() {
        long sum = 0;
        for (OperatorInfo o : operators) sum += o.keyedStateBytes();
        return sum;
    }

    public long totalChannelStateBytes() {
        long sum = 0;
        for (OperatorInfo o : operators) {
            for (SubtaskInfo s : o.subtasks()) sum += s.channelStateBytes();
        }
        return sum;
    }

    /** This report as JSON: every record component becomes a field. */
    public String toJson() {
        return Json.write(this);
    }

    /** A byte count for people: {@code 812 B}, {@code 12,345 B (12.1 KiB)}, {@code 1,234,567 B (1.2 MiB)}. */
    public static String formatBytes(long n) {
        if (n < 1024) return n + " B";
        // by hand what String.format("%,d B (%.1f MiB)") prints: every inspect and doctor prints
        // several, and a JVM that just started takes ~0.3 ms for each such format (its regex)
        long unit = n < 1024 * 1024 ? 1024 : 1024 * 1024;
        if (n >= 1L << 50) {
            // from a PiB on, the double's shortest digits that %.1f rounds may lie across a tie
            return String.format(java.util.Locale.ROOT, "%,d B (%.1f MiB)", n, n / (1024.0 * 1024));
        }
        // n / unit to one decimal, half up: exact below 2^50, and never a tie (unit is 2^10 or 2^20)
        long tenths = (n * 10 + unit / 2) / unit;
        return grouped(n) + " B (" + tenths / 10 + "." + tenths % 10 + (unit == 1024 ? " KiB)" : " MiB)");
    }

    /** {@code n} with a comma between groups of three digits, as {@code String.format("%,d")} in the ROOT locale. */
    public static String grouped(long n) {
        if (n < 0) return n == Long.MIN_VALUE ? String.format(java.util.Locale.ROOT, "%,d", n) : "-" + grouped(-n);
        String d = Long.toString(n);
        int first = (d.length() - 1) % 3 + 1;
        StringBuilder b = new StringBuilder(d.length() + d.length() / 3).append(d, 0, first);
        for (int i = first; i < d.length(); i += 3) b.append(',').append(d, i, i + 3);
        return b.toString();
    }
}
