package io.checkpointsurgeon;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a checkpoint, savepoint or HA metadata holds and how big it is, as the native inspector
 * reports it. Sizes are bytes; {@code -1} means unknown (the state stream could not be read).
 */
public record InspectReport(
        String source,
        int metadataVersion,
        long checkpointId,
        long metadataBytes,
        long propertiesBytes,
        List<MasterStateInfo> masterStates,
        List<OperatorInfo> operators) {

    public record MasterStateInfo(String name, int version, long bytes) {}

    /** One operator: id as Flink prints it, name and uid where the format stores them (V5+). */
    public record OperatorInfo(
            String id,
            String name,
            String uid,
            int parallelism,
            int maxParallelism,
            long coordinatorStateBytes,
            boolean fullyFinished,
            int finishedSubtasks,
            List<SubtaskInfo> subtasks) {

        /** Every state name of this operator, summed over its subtasks' managed operator state. */
        public List<StateTotal> stateTotals() {
            Map<String, StateTotal> totals = new LinkedHashMap<>();
            for (SubtaskInfo s : subtasks) {
                for (OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (StateInfo st : h.states()) {
                        totals.merge(st.name(), new StateTotal(st.name(), st.mode(), st.elements(), st.bytes(), 1),
                                StateTotal::plus);
                    }
                }
            }
            return new ArrayList<>(totals.values());
        }

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
                            acc.computeIfAbsent(st.name(), x -> new java.util.TreeMap<>(java.util.Comparator
                                    .comparing((List<Object> l) -> (String) l.get(0))
                                    .thenComparing(l -> (Integer) l.get(1)).thenComparing(l -> (Long) l.get(2))))
                                    .computeIfAbsent(List.of(k.topic(), k.partition(), k.offset()), x -> new long[1])[0] += k.count();
                        }
                    }
                }
            }
            Map<String, List<KafkaOffset>> out = new LinkedHashMap<>();
            acc.forEach((state, m) -> out.put(state, m.entrySet().stream()
                    .map(e -> new KafkaOffset((String) e.getKey().get(0), (Integer) e.getKey().get(1),
                            (Long) e.getKey().get(2), e.getValue()[0])).toList()));
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
    public record StateTotal(String name, String mode, long elements, long bytes, int handles) {
        StateTotal plus(StateTotal o) {
            long b = bytes < 0 || o.bytes < 0 ? -1 : bytes + o.bytes;
            return new StateTotal(name, mode, elements + o.elements, b, handles + o.handles);
        }
    }

    public record SubtaskInfo(
            int index,
            OperatorStateHandleInfo managedOperatorState,
            OperatorStateHandleInfo rawOperatorState,
            KeyedStateHandleInfo managedKeyedState,
            KeyedStateHandleInfo rawKeyedState,
            int inputChannelHandles,
            int outputChannelHandles,
            long channelStateBytes) {

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
    public record OperatorStateHandleInfo(
            String kind,
            String delegateKind,
            String location,
            long delegateSize,
            boolean inline,
            int proxyVersion,
            boolean compressed,
            String streamError,
            long headerBytes,
            List<StateInfo> states) {}

    /**
     * One state in a handle: its distribution mode, element count, element bytes, value serializer
     * snapshot class, how many distinct element values it has (-1 if unknown) and an
     * order-independent digest of the values (equal contents give equal digests).
     */
    public record StateInfo(String name, String mode, long elements, long bytes, String serializer,
                            long distinctElements, long digest, List<KafkaOffset> kafkaOffsets) {}

    /**
     * A Kafka source position decoded natively from {@code topic-partition-offset-states} (the
     * legacy FlinkKafkaConsumer) or {@code SourceReaderState} (KafkaSource splits; the offset is
     * the next one to read), with how many elements hold it.
     */
    public record KafkaOffset(String topic, int partition, long offset, long count) {}

    public record KeyedStateHandleInfo(String kind, long stateSize) {}

    public long totalOperatorStateBytes() {
        return operators.stream().mapToLong(OperatorInfo::operatorStateBytes).sum();
    }

    public long totalKeyedStateBytes() {
        return operators.stream().mapToLong(OperatorInfo::keyedStateBytes).sum();
    }

    public long totalChannelStateBytes() {
        return operators.stream()
                .flatMap(o -> o.subtasks().stream())
                .mapToLong(SubtaskInfo::channelStateBytes)
                .sum();
    }

    /** This report as JSON: every record component becomes a field. */
    public String toJson() {
        return Json.write(this);
    }

    /** Decodes the native report (layout: {@code native/src/inspect.rs}, {@code Report::encode}). */
    static InspectReport decode(byte[] bytes) throws CheckpointSurgeonException {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            if (in.readInt() != 0x43535231) {
                throw new CheckpointSurgeonException("JNI", "native report has a wrong magic number");
            }
            String source = str(in);
            int version = in.readInt();
            long checkpointId = in.readLong();
            long metadataBytes = in.readLong();
            long propertiesBytes = in.readLong();
            int n = in.readInt();
            List<MasterStateInfo> masters = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                masters.add(new MasterStateInfo(str(in), in.readInt(), in.readLong()));
            }
            n = in.readInt();
            List<OperatorInfo> ops = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                String id = str(in), name = str(in), uid = str(in);
                int p = in.readInt(), maxP = in.readInt();
                long coord = in.readLong();
                boolean fully = in.readBoolean();
                int finished = in.readInt();
                int ns = in.readInt();
                List<SubtaskInfo> subs = new ArrayList<>(ns);
                for (int j = 0; j < ns; j++) {
                    int index = in.readInt();
                    OperatorStateHandleInfo managed = handle(in), raw = handle(in);
                    KeyedStateHandleInfo mk = keyed(in), rk = keyed(in);
                    subs.add(new SubtaskInfo(index, managed, raw, mk, rk, in.readInt(), in.readInt(), in.readLong()));
                }
                ops.add(new OperatorInfo(id, name, uid, p, maxP, coord, fully, finished, List.copyOf(subs)));
            }
            return new InspectReport(source, version, checkpointId, metadataBytes, propertiesBytes,
                    List.copyOf(masters), List.copyOf(ops));
        } catch (IOException e) {
            throw new CheckpointSurgeonException("JNI", "native report is malformed: " + e, e);
        }
    }

    private static OperatorStateHandleInfo handle(DataInputStream in) throws IOException {
        if (!in.readBoolean()) return null;
        String kind = str(in), delegateKind = str(in), location = str(in);
        long size = in.readLong();
        boolean inline = in.readBoolean();
        int proxy = in.readInt();
        boolean compressed = in.readBoolean();
        String error = str(in);
        long header = in.readLong();
        int n = in.readInt();
        List<StateInfo> states = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String name = str(in), mode = str(in);
            long elements = in.readLong(), bytes = in.readLong();
            String serializer = str(in);
            long distinct = in.readLong(), digest = in.readLong();
            int k = in.readInt();
            List<KafkaOffset> kafka = new ArrayList<>(k);
            for (int j = 0; j < k; j++) {
                kafka.add(new KafkaOffset(str(in), in.readInt(), in.readLong(), in.readLong()));
            }
            states.add(new StateInfo(name, mode, elements, bytes, serializer, distinct, digest, List.copyOf(kafka)));
        }
        return new OperatorStateHandleInfo(kind, delegateKind, location, size, inline, proxy, compressed, error,
                header, List.copyOf(states));
    }

    private static KeyedStateHandleInfo keyed(DataInputStream in) throws IOException {
        return in.readBoolean() ? new KeyedStateHandleInfo(str(in), in.readLong()) : null;
    }

    private static String str(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
