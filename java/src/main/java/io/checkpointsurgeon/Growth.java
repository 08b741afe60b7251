package io.checkpointsurgeon;

import io.checkpointsurgeon.internal.Json;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * How state changes from checkpoint to checkpoint: {@link #diff} of two inspection reports, and
 * {@link #history} of many, with the signature of a union state that nothing reads any more (it
 * grows by exactly the parallelism on every restore) found while it is still small.
 */
public final class Growth {
    private Growth() {}

    /** One state of one operator in checkpoints A and B (-1: not in that checkpoint). */
    public static final class StateChange {
        private final String operatorId;
        private final String state;
        private final String mode;
        private final String change;
        private final long elementsA, elementsB, bytesA, bytesB, distinctA, distinctB;
        private final double factor;

        public StateChange(String operatorId, String state, String mode, String change, long elementsA, long elementsB,
                long bytesA, long bytesB, long distinctA, long distinctB, double factor) {
            this.operatorId = operatorId;
            this.state = state;
            this.mode = mode;
            this.change = change;
            this.elementsA = elementsA;
            this.elementsB = elementsB;
            this.bytesA = bytesA;
            this.bytesB = bytesB;
            this.distinctA = distinctA;
            this.distinctB = distinctB;
            this.factor = factor;
        }

        public String operatorId() {
            return operatorId;
        }

        public String state() {
            return state;
        }

        public String mode() {
            return mode;
        }

        /** {@code added}, {@code removed}, {@code grown}, {@code shrunk} or {@code same}. */
        public String change() {
            return change;
        }

        public long elementsA() {
            return elementsA;
        }

        public long elementsB() {
            return elementsB;
        }

        public long bytesA() {
            return bytesA;
        }

        public long bytesB() {
            return bytesB;
        }

        /** The most distinct element values one subtask holds (-1 when the stream was not read). */
        public long distinctA() {
            return distinctA;
        }

        public long distinctB() {
            return distinctB;
        }

        /** Elements in B over elements in A (0 when A had none). */
        public double factor() {
            return factor;
        }
    }

    /** One operator's sizes outside its operator state, in A and B (-1: operator absent there). */
    public static final class OperatorChange {
        private final String operatorId;
        private final String uid;
        private final int parallelismA, parallelismB;
        private final long keyedBytesA, keyedBytesB, coordinatorBytesA, coordinatorBytesB;

        public OperatorChange(String operatorId, String uid, int parallelismA, int parallelismB, long keyedBytesA,
                long keyedBytesB, long coordinatorBytesA, long coordinatorBytesB) {
            this.operatorId = operatorId;
            this.uid = uid;
            this.parallelismA = parallelismA;
            this.parallelismB = parallelismB;
            this.keyedBytesA = keyedBytesA;
            this.keyedBytesB = keyedBytesB;
            this.coordinatorBytesA = coordinatorBytesA;
            this.coordinatorBytesB = coordinatorBytesB;
        }

        public String operatorId() {
            return operatorId;
        }

        public String uid() {
            return uid;
        }

        public int parallelismA() {
            return parallelismA;
        }

        public int parallelismB() {
            return parallelismB;
        }

        public long keyedBytesA() {
            return keyedBytesA;
        }

        public long keyedBytesB() {
            return keyedBytesB;
        }

        public long coordinatorBytesA() {
            return coordinatorBytesA;
        }

        public long coordinatorBytesB() {
            return coordinatorBytesB;
        }
    }

    /** The difference between two checkpoints. */
    public static final class Diff {
        private final String a, b;
        private final long checkpointA, checkpointB, metadataBytesA, metadataBytesB;
        private final List<OperatorChange> operators;
        private final List<StateChange> states;

        public Diff(String a, String b, long checkpointA, long checkpointB, long metadataBytesA, long metadataBytesB,
                List<OperatorChange> operators, List<StateChange> states) {
            this.a = a;
            this.b = b;
            this.checkpointA = checkpointA;
            this.checkpointB = checkpointB;
            this.metadataBytesA = metadataBytesA;
            this.metadataBytesB = metadataBytesB;
            this.operators = operators;
            this.states = states;
        }

        public String a() {
            return a;
        }

        public String b() {
            return b;
        }

        public long checkpointA() {
            return checkpointA;
        }

        public long checkpointB() {
            return checkpointB;
        }

        public long metadataBytesA() {
            return metadataBytesA;
        }

        public long metadataBytesB() {
            return metadataBytesB;
        }

        public List<OperatorChange> operators() {
            return operators;
        }

        public List<StateChange> states() {
            return states;
        }

        /** The largest growth factor of a state present in both. */
        public double maxFactor() {
            return states.stream().filter(s -> s.elementsA() > 0 && s.elementsB() >= 0).mapToDouble(StateChange::factor)
                    .max().orElse(0);
        }

        public String toJson() {
            return Json.write(this);
        }
    }

    /** One operator state of a checkpoint, over all its subtasks. */
    public static final class StateSize {
        private final String operatorId;
        private final String state;
        private final String mode;
        private final long elements, bytes, distinct;

        public StateSize(String operatorId, String state, String mode, long elements, long bytes, long distinct) {
            this.operatorId = operatorId;
            this.state = state;
            this.mode = mode;
            this.elements = elements;
            this.bytes = bytes;
            this.distinct = distinct;
        }

        public String operatorId() {
            return operatorId;
        }

        public String state() {
            return state;
        }

        public String mode() {
            return mode;
        }

        public long elements() {
            return elements;
        }

        /** The bytes of its elements (those of unknown size count 0). */
        public long bytes() {
            return bytes;
        }

        /** The most distinct element values one subtask holds (-1 when no stream was read). */
        public long distinct() {
            return distinct;
        }
    }

    /** Every operator state of a checkpoint, by operator id and state name. */
    public static List<StateSize> stateSizes(InspectReport r) {
        Map<List<String>, String> modes = new LinkedHashMap<>();
        List<StateSize> out = new ArrayList<>();
        for (Map.Entry<List<String>, long[]> e : states(r, modes).entrySet()) {
            long[] v = e.getValue();
            out.add(new StateSize(e.getKey().get(0), e.getKey().get(1), modes.get(e.getKey()), v[0], v[1], v[2]));
        }
        return out;
    }

    /** Per operator id and state name: elements, bytes, distinct (max per subtask), mode. */
    static Map<List<String>, long[]> states(InspectReport r, Map<List<String>, String> modes) {
        Map<List<String>, long[]> out = new TreeMap<>(Comparator.comparing((List<String> l) -> l.get(0))
                .thenComparing(l -> l.get(1)));
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (InspectReport.StateInfo st : h.states()) {
                        List<String> key = List.of(op.id(), st.name());
                        modes.put(key, st.mode());
                        long[] v = out.computeIfAbsent(key, k -> new long[] {0, 0, -1});
                        v[0] += st.elements();
                        v[1] += Math.max(0, st.bytes());
                        v[2] = Math.max(v[2], st.distinctElements());
                    }
                }
            }
        }
        return out;
    }

    /** What changed from checkpoint {@code a} to checkpoint {@code b}. */
    public static Diff diff(InspectReport a, InspectReport b) {
        Map<List<String>, String> modes = new LinkedHashMap<>();
        Map<List<String>, long[]> sa = states(a, modes), sb = states(b, modes);
        Map<List<String>, long[]> keys = new TreeMap<>(Comparator.comparing((List<String> l) -> l.get(0))
                .thenComparing(l -> l.get(1)));
        keys.putAll(sa);
        keys.putAll(sb);
        List<StateChange> states = new ArrayList<>();
        long[] none = {-1, -1, -1};
        for (List<String> k : keys.keySet()) {
            long[] x = sa.getOrDefault(k, none), y = sb.getOrDefault(k, none);
            String change = x == none ? "added" : y == none ? "removed"
                    : y[0] > x[0] || y[0] == x[0] && y[1] > x[1] ? "grown" : y[0] < x[0] || y[1] < x[1] ? "shrunk" : "same";
            double factor = x[0] > 0 && y[0] >= 0 ? (double) y[0] / x[0] : 0;
            states.add(new StateChange(k.get(0), k.get(1), modes.get(k), change, x[0], y[0], x[1], y[1], x[2], y[2], factor));
        }
        Map<String, OperatorChange> ops = new TreeMap<>();
        Map<String, InspectReport.OperatorInfo> oa = new LinkedHashMap<>(), ob = new LinkedHashMap<>();
        a.operators().forEach(o -> oa.put(o.id(), o));
        b.operators().forEach(o -> ob.put(o.id(), o));
        for (String id : new java.util.TreeSet<>(concat(oa.keySet(), ob.keySet()))) {
            InspectReport.OperatorInfo x = oa.get(id), y = ob.get(id);
            InspectReport.OperatorInfo any = x != null ? x : y;
            ops.put(id, new OperatorChange(id, any.uid(), x == null ? -1 : x.parallelism(), y == null ? -1 : y.parallelism(),
                    x == null ? -1 : x.keyedStateBytes(), y == null ? -1 : y.keyedStateBytes(),
                    x == null ? -1 : x.coordinatorStateBytes(), y == null ? -1 : y.coordinatorStateBytes()));
        }
        return new Diff(a.source(), b.source(), a.checkpointId(), b.checkpointId(), a.metadataBytes(), b.metadataBytes(),
                new ArrayList<>(ops.values()), states);
    }

    private static List<String> concat(java.util.Collection<String> x, java.util.Collection<String> y) {
        List<String> l = new ArrayList<>(x);
        l.addAll(y);
        return l;
    }

    /** One checkpoint of a history. */
    public static final class Checkpoint {
        private final long id;
        private final String path;
        private final long metadataBytes;

        public Checkpoint(long id, String path, long metadataBytes) {
            this.id = id;
            this.path = path;
            this.metadataBytes = metadataBytes;
        }

        public long id() {
            return id;
        }

        public String path() {
            return path;
        }

        public long metadataBytes() {
            return metadataBytes;
        }
    }

    /** One state's elements over the checkpoints of a history (-1: absent), with its operator's parallelism. */
    public static final class Series {
        private final String operatorId;
        private final String state;
        private final String mode;
        private final List<Long> elements;
        private final List<Long> bytes;
        private final List<Integer> parallelism;

        public Series(String operatorId, String state, String mode, List<Long> elements, List<Long> bytes,
                List<Integer> parallelism) {
            this.operatorId = operatorId;
            this.state = state;
            this.mode = mode;
            this.elements = elements;
            this.bytes = bytes;
            this.parallelism = parallelism;
        }

        public String operatorId() {
            return operatorId;
        }

        public String state() {
            return state;
        }

        public String mode() {
            return mode;
        }

        public List<Long> elements() {
            return elements;
        }

        public List<Long> bytes() {
            return bytes;
        }

        public List<Integer> parallelism() {
            return parallelism;
        }
    }

    /** A job's checkpoints in id order, each state's series, and what the series show. */
    public static final class History {
        private final List<Checkpoint> checkpoints;
        private final List<Series> series;
        private final List<CheckpointSurgeon.Finding> findings;

        public History(List<Checkpoint> checkpoints, List<Series> series, List<CheckpointSurgeon.Finding> findings) {
            this.checkpoints = checkpoints;
            this.series = series;
            this.findings = findings;
        }

        public List<Checkpoint> checkpoints() {
            return checkpoints;
        }

        public List<Series> series() {
            return series;
        }

        public List<CheckpointSurgeon.Finding> findings() {
            return findings;
        }

        public String toJson() {
            return Json.write(this);
        }
    }

    /**
     * The history of these checkpoints (sorted by checkpoint id). A union state whose element count
     * is multiplied by exactly its operator's parallelism from one checkpoint to the next, twice or
     * more, is the signature of a union state no one reads (each subtask restores all of it and
     * writes it back): an ERROR finding, however small it still is.
     */
    public static History history(List<InspectReport> reports) {
        List<InspectReport> sorted = new ArrayList<>(reports);
        sorted.sort(Comparator.comparingLong(InspectReport::checkpointId));
        List<Checkpoint> cps = new ArrayList<>();
        Map<List<String>, String> modes = new LinkedHashMap<>();
        List<Map<List<String>, long[]>> per = new ArrayList<>();
        List<Map<String, Integer>> parallelism = new ArrayList<>();
        Map<List<String>, Boolean> keys = new TreeMap<>(Comparator.comparing((List<String> l) -> l.get(0))
                .thenComparing(l -> l.get(1)));
        for (InspectReport r : sorted) {
            cps.add(new Checkpoint(r.checkpointId(), r.source(), r.metadataBytes()));
            Map<List<String>, long[]> s = states(r, modes);
            s.keySet().forEach(k -> keys.put(k, true));
            per.add(s);
            Map<String, Integer> p = new LinkedHashMap<>();
            r.operators().forEach(o -> p.put(o.id(), o.parallelism()));
            parallelism.add(p);
        }
        List<Series> series = new ArrayList<>();
        List<CheckpointSurgeon.Finding> findings = new ArrayList<>();
        for (List<String> k : keys.keySet()) {
            List<Long> el = new ArrayList<>(), by = new ArrayList<>();
            List<Integer> par = new ArrayList<>();
            for (int i = 0; i < per.size(); i++) {
                long[] v = per.get(i).get(k);
                el.add(v == null ? -1 : v[0]);
                by.add(v == null ? -1 : v[1]);
                par.add(parallelism.get(i).getOrDefault(k.get(0), -1));
            }
            String mode = modes.get(k);
            series.add(new Series(k.get(0), k.get(1), mode, el, by, par));
            if (!"UNION".equals(mode)) continue;
            int times = 0;
            List<String> steps = new ArrayList<>();
            for (int i = 1; i < el.size(); i++) {
                if (el.get(i - 1) > 0 && par.get(i) > 1 && el.get(i) == el.get(i - 1) * par.get(i)) {
                    times++;
                    steps.add(String.format(Locale.ROOT, "%,d -> %,d (x%d) at checkpoint %d", el.get(i - 1), el.get(i),
                            par.get(i), cps.get(i).id()));
                }
            }
            if (times >= 2) {
                findings.add(new CheckpointSurgeon.Finding(CheckpointSurgeon.Finding.Severity.ERROR, "UNION_STATE_GROWS_BY_PARALLELISM", String.format(Locale.ROOT,
                        "union state '%s' of operator %s is multiplied by the parallelism from checkpoint to checkpoint"
                                + " (%s): every subtask restores all of it and writes it back, so nothing reads it;"
                                + " it is %,d elements now and keeps multiplying on every restore",
                        k.get(1), k.get(0), String.join(", ", steps), el.get(el.size() - 1)),
                        new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.REMOVE_STATE, k.get(0), k.get(1)),
                        List.of(new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.DEDUPE_UNION, k.get(0),
                                k.get(1)))));
            }
        }
        return new History(cps, series, findings);
    }
}
