package io.checkpointsurgeon;

import io.checkpointsurgeon.internal.Json;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * How state changes from checkpoint to checkpoint: {@link #diff} of two inspection reports, and
 * {@link #history} of many, with the signature of a union state that nothing reads any more (it
 * grows by exactly the parallelism on every restore) found while it is still small.
 */
public final class Growth {
    private Growth() {}

    /** How one state's size went from A to B; {@link #toString()} is its spelling in JSON and text. */
    public enum SizeChange {
        /** Only in B. */
        ADDED,
        /** Only in A. */
        REMOVED,
        /** More elements in B (or as many, in more bytes). */
        GROWN,
        /** Fewer elements or fewer bytes in B. */
        SHRUNK,
        SAME;

        @Override
        public String toString() {
            return Spelling.of(this);
        }
    }

    /**
     * The mode column of a diff or history, where operator and keyed states stand side by side: an
     * operator state's distribution mode (Flink's {@code OperatorStateHandle.Mode}), or a keyed
     * state's kind (its {@code BackendStateType} and {@code StateDescriptor.Type}). {@link #toString()}
     * is its spelling in JSON and text: the mode's name ({@code UNION}), or {@code keyed value},
     * {@code keyed timers}, ...
     */
    public static final class StateMode {
        private final InspectReport.Mode operatorMode;
        private final KeyedReport.BackendStateType backendStateType;
        private final KeyedReport.StateType stateType;

        private StateMode(InspectReport.Mode operatorMode, KeyedReport.BackendStateType backendStateType,
                KeyedReport.StateType stateType) {
            this.operatorMode = operatorMode;
            this.backendStateType = backendStateType;
            this.stateType = stateType;
        }

        /** An operator state of this distribution mode. */
        public static StateMode of(InspectReport.Mode mode) {
            return new StateMode(Objects.requireNonNull(mode, "mode"), null, null);
        }

        /** A keyed state of the kind {@code s} is. */
        public static StateMode keyed(KeyedReport.State s) {
            return new StateMode(null, s.backendStateType(), s.stateType());
        }

        /** The operator state's distribution mode; null for a keyed state. */
        public InspectReport.Mode operatorMode() {
            return operatorMode;
        }

        /** Whether this is a keyed state's kind. */
        public boolean keyed() {
            return operatorMode == null;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof StateMode)) return false;
            StateMode that = (StateMode) o;
            return operatorMode == that.operatorMode && backendStateType == that.backendStateType
                    && stateType == that.stateType;
        }

        @Override
        public int hashCode() {
            return Objects.hash(operatorMode, backendStateType, stateType);
        }

        @Override
        public String toString() {
            return keyed() ? "keyed " + KeyedReport.kind(backendStateType, stateType) : operatorMode.name();
        }
    }

    /** One state of one operator in checkpoints A and B (-1: not in that checkpoint). */
    public static final class StateChange {
        private final String operatorId;
        private final String state;
        private final StateMode mode;
        private final SizeChange change;
        private final long elementsA, elementsB, bytesA, bytesB, distinctA, distinctB;
        private final double factor;

        public StateChange(String operatorId, String state, StateMode mode, SizeChange change, long elementsA, long elementsB,
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

        public StateMode mode() {
            return mode;
        }

        public SizeChange change() {
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
        private final List<CheckpointSurgeon.Finding> findings;

        public Diff(String a, String b, long checkpointA, long checkpointB, long metadataBytesA, long metadataBytesB,
                List<OperatorChange> operators, List<StateChange> states) {
            this(a, b, checkpointA, checkpointB, metadataBytesA, metadataBytesB, operators, states, List.of());
        }

        public Diff(String a, String b, long checkpointA, long checkpointB, long metadataBytesA, long metadataBytesB,
                List<OperatorChange> operators, List<StateChange> states, List<CheckpointSurgeon.Finding> findings) {
            this.a = a;
            this.b = b;
            this.checkpointA = checkpointA;
            this.checkpointB = checkpointB;
            this.metadataBytesA = metadataBytesA;
            this.metadataBytesB = metadataBytesB;
            this.operators = operators;
            this.states = states;
            this.findings = List.copyOf(findings);
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

        /**
         * What the change shows: a union state of B that holds A's elements copied once per restore
         * in between (UNION_STATE_GROWS_BY_PARALLELISM, see {@link Growth#multiplied}).
         */
        public List<CheckpointSurgeon.Finding> findings() {
            return findings;
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
        private final StateMode mode;
        private final long elements, bytes, distinct;

        public StateSize(String operatorId, String state, StateMode mode, long elements, long bytes, long distinct) {
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

        public StateMode mode() {
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
        Map<List<String>, StateMode> modes = new LinkedHashMap<>();
        List<StateSize> out = new ArrayList<>();
        for (Map.Entry<List<String>, long[]> e : states(r, modes).entrySet()) {
            long[] v = e.getValue();
            out.add(new StateSize(e.getKey().get(0), e.getKey().get(1), modes.get(e.getKey()), v[0], v[1], v[2]));
        }
        return out;
    }

    /** State keys in order: operator id, state name, then operator state before keyed state. */
    private static final Comparator<List<String>> KEY_ORDER = Comparator.comparing((List<String> l) -> l.get(0))
            .thenComparing(l -> l.get(1)).thenComparing(l -> l.size() > 2 ? l.get(2) : "");

    /**
     * Per operator id and keyed state name (the key's third part is {@code keyed}, so that an
     * operator state of the same name stays apart): entries, stored bytes, -1 (no distinct values).
     */
    static Map<List<String>, long[]> keyedStates(KeyedReport k, Map<List<String>, StateMode> modes) {
        Map<List<String>, long[]> out = new TreeMap<>(KEY_ORDER);
        if (k == null) return out;
        for (KeyedReport.Operator op : k.operators()) {
            for (KeyedReport.State st : op.states()) {
                List<String> key = List.of(op.id(), st.name(), "keyed");
                modes.put(key, StateMode.keyed(st));
                out.put(key, new long[] {st.total().entries(), st.total().storedBytes(), -1});
            }
        }
        return out;
    }

    /** Per operator id and state name: elements, bytes, distinct (max per subtask), mode. */
    static Map<List<String>, long[]> states(InspectReport r, Map<List<String>, StateMode> modes) {
        Map<List<String>, long[]> out = new TreeMap<>(KEY_ORDER);
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (InspectReport.StateInfo st : h.states()) {
                        List<String> key = List.of(op.id(), st.name());
                        modes.put(key, StateMode.of(st.mode()));
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
        return diff(a, b, null, null);
    }

    /**
     * What changed from checkpoint {@code a} to checkpoint {@code b}, their keyed states included
     * (mode {@code keyed <type>}, entries as elements, stored bytes as bytes) when their keyed
     * reports are given ({@link CheckpointSurgeon#inspectKeyed(String)}; null: none).
     */
    public static Diff diff(InspectReport a, InspectReport b, KeyedReport keyedA, KeyedReport keyedB) {
        Map<List<String>, StateMode> modes = new LinkedHashMap<>();
        Map<List<String>, long[]> sa = states(a, modes), sb = states(b, modes);
        sa.putAll(keyedStates(keyedA, modes));
        sb.putAll(keyedStates(keyedB, modes));
        Map<List<String>, long[]> keys = new TreeMap<>(KEY_ORDER);
        keys.putAll(sa);
        keys.putAll(sb);
        List<StateChange> states = new ArrayList<>();
        long[] none = {-1, -1, -1};
        for (List<String> k : keys.keySet()) {
            long[] x = sa.getOrDefault(k, none), y = sb.getOrDefault(k, none);
            SizeChange change = x == none ? SizeChange.ADDED : y == none ? SizeChange.REMOVED
                    : y[0] > x[0] || y[0] == x[0] && y[1] > x[1] ? SizeChange.GROWN
                    : y[0] < x[0] || y[1] < x[1] ? SizeChange.SHRUNK : SizeChange.SAME;
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
        List<CheckpointSurgeon.Finding> findings = new ArrayList<>();
        Map<List<String>, UnionCopies> ua = unions(a), ub = unions(b);
        for (Map.Entry<List<String>, UnionCopies> e : ub.entrySet()) {
            Multiplication m = multiplied(ua.get(e.getKey()), e.getValue());
            if (m == null || !m.proven) continue;
            findings.add(growsByParallelism(e.getKey(), List.of(m.step(b.checkpointId(), a.checkpointId())), m.b.total));
        }
        return new Diff(a.source(), b.source(), a.checkpointId(), b.checkpointId(), a.metadataBytes(), b.metadataBytes(),
                new ArrayList<>(ops.values()), states, findings);
    }

    /** The copies of one union state in one checkpoint: one per subtask that holds it. */
    static final class UnionCopies {
        final int parallelism;
        final int copies;
        final long total;
        /** Every copy has the same elements (counts; digests too when the streams were read). */
        final boolean identical;
        /** Every copy's values were read: the digests and distinct counts below are known. */
        final boolean read;
        final long perCopy, perCopyDistinct, perCopyDigest;
        /** The wrapping sum of every copy's digest: the digest of all elements together. */
        final long digestSum;

        UnionCopies(int parallelism, List<InspectReport.StateInfo> copies) {
            this.parallelism = parallelism;
            this.copies = copies.size();
            InspectReport.StateInfo first = copies.get(0);
            long total = 0, digestSum = 0;
            boolean read = true, sameCounts = true, sameDigests = true;
            for (InspectReport.StateInfo c : copies) {
                total += c.elements();
                digestSum += c.digest();
                read &= c.distinctElements() >= 0;
                sameCounts &= c.elements() == first.elements();
                sameDigests &= c.digest() == first.digest();
            }
            this.total = total;
            this.digestSum = digestSum;
            this.read = read;
            this.identical = sameCounts && (!read || sameDigests);
            this.perCopy = first.elements();
            this.perCopyDistinct = first.distinctElements();
            this.perCopyDigest = first.digest();
        }
    }

    /** Per operator id and union state name: its copies (operators with a parallelism above 1). */
    static Map<List<String>, UnionCopies> unions(InspectReport r) {
        Map<List<String>, UnionCopies> out = new LinkedHashMap<>();
        for (InspectReport.OperatorInfo op : r.operators()) {
            Map<String, List<InspectReport.StateInfo>> copies = new LinkedHashMap<>();
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    for (InspectReport.StateInfo st : h.states()) {
                        if (st.mode() == InspectReport.Mode.UNION) copies.computeIfAbsent(st.name(), k -> new ArrayList<>()).add(st);
                    }
                }
            }
            copies.forEach((name, l) -> out.put(List.of(op.id(), name), new UnionCopies(op.parallelism(), l)));
        }
        return out;
    }

    /**
     * A union state of B that holds A's elements copied once per restore in between: B's count is
     * A's times a product of the parallelisms, the last restore's being B's (a restore gives every
     * subtask all elements, and each writes them all back), and every subtask of B holds the same.
     */
    static final class Multiplication {
        final UnionCopies a, b;
        final long factor;
        /** The factor as a product of A's and B's parallelism: "4", "4^2", "4 x 8". */
        final String product;
        /**
         * Also shown by the values: B's subtasks hold exactly A's elements (digests), and they repeat
         * (a restore can only copy values, never add one).
         */
        final boolean proven;

        Multiplication(UnionCopies a, UnionCopies b, long factor, String product, boolean proven) {
            this.a = a;
            this.b = b;
            this.factor = factor;
            this.product = product;
            this.proven = proven;
        }

        /** "8 -> 128 (x16 = 4^2) at checkpoint 7", as history lists its steps. */
        String step(long checkpoint, long from) {
            String f = product.equals(Long.toString(factor)) ? "x" + factor : "x" + factor + " = " + product;
            return String.format(Locale.ROOT, "%,d -> %,d (%s) at checkpoint %d%s", a.total, b.total, f, checkpoint,
                    from < 0 ? "" : " (from checkpoint " + from + ")");
        }
    }

    /** The multiplication from {@code a} to {@code b}, or null when B's count is no such product of A's. */
    static Multiplication multiplied(UnionCopies a, UnionCopies b) {
        if (a == null || b == null || a.total <= 0 || b.parallelism < 2 || b.copies != b.parallelism || !b.identical
                || b.total % a.total != 0) {
            return null;
        }
        long factor = b.total / a.total;
        String product = product(factor, a.parallelism, b.parallelism);
        if (factor < 2 || product == null) return null;
        boolean read = a.read && b.read;
        // B's subtasks each hold factor / parallelism copies of all of A's elements, or it is no copy
        if (read && b.perCopyDigest != (factor / b.parallelism) * a.digestSum) return null;
        return new Multiplication(a, b, factor, product, read && b.perCopyDistinct < b.perCopy);
    }

    /**
     * {@code factor} as pa^i x pb^j with j >= 1 (the last restore ran at pb) and the fewest
     * restores i + j: "8", "4^2", "4^2 x 8"; null when it is none.
     */
    static String product(long factor, int pa, int pb) {
        if (pb < 2 || factor < 2) return null;
        String best = null;
        int fewest = Integer.MAX_VALUE;
        long pbj = 1;
        for (int j = 1; pbj <= factor / pb && factor % (pbj * pb) == 0; j++) {
            pbj *= pb;
            long rest = factor / pbj;
            int i = 0;
            while (pa > 1 && pa != pb && rest > 1 && rest % pa == 0) {
                rest /= pa;
                i++;
            }
            if (rest != 1 || i + j >= fewest) continue;
            fewest = i + j;
            String b = pb + (j > 1 ? "^" + j : "");
            best = i == 0 ? b : pa + (i > 1 ? "^" + i : "") + " x " + b;
        }
        return best;
    }

    /** The finding of a union state multiplied by the parallelism from checkpoint to checkpoint. */
    static CheckpointSurgeon.Finding growsByParallelism(List<String> key, List<String> steps, long now) {
        return new CheckpointSurgeon.Finding(CheckpointSurgeon.Finding.Severity.ERROR, CheckpointSurgeon.Finding.Code.UNION_STATE_GROWS_BY_PARALLELISM, String.format(Locale.ROOT,
                "union state '%s' of operator %s is multiplied by the parallelism from checkpoint to checkpoint"
                        + " (%s): every subtask restores all of it and writes it back, so nothing reads it;"
                        + " it is %,d elements now and keeps multiplying on every restore",
                key.get(1), key.get(0), String.join(", ", steps), now),
                new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.REMOVE_STATE, key.get(0), key.get(1)),
                List.of(new CheckpointSurgeon.Remedy(CheckpointSurgeon.Remedy.Action.DEDUPE_UNION, key.get(0), key.get(1))));
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
        private final StateMode mode;
        private final List<Long> elements;
        private final List<Long> bytes;
        private final List<Integer> parallelism;

        public Series(String operatorId, String state, StateMode mode, List<Long> elements, List<Long> bytes,
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

        public StateMode mode() {
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
     * The history of these checkpoints (sorted by checkpoint id). A union state that nothing reads
     * any more is multiplied by the parallelism on every restore (each subtask restores all of it and
     * writes it back), and checkpoints taken any number of restores apart show it multiplied by a
     * power of the parallelism, or by a product of the two parallelisms when it changed, every
     * subtask holding the same copies of the earlier checkpoint's values ({@link #multiplied}). One
     * such step proven by the values, or two by the counts alone (values not read), is an ERROR
     * finding, however small the state still is.
     */
    public static History history(List<InspectReport> reports) {
        return history(reports, null);
    }

    /**
     * {@link #history(List)} with the checkpoints' keyed states (mode {@code keyed <type>}, entries
     * as elements, stored bytes as bytes): {@code keyed} holds the keyed report of each of
     * {@code reports}, in the same order (null: none), so that a keyed state that grows without
     * bound, or one the job no longer registers but Flink carries on, shows as a series.
     */
    public static History history(List<InspectReport> reports, List<KeyedReport> keyed) {
        if (keyed != null && keyed.size() != reports.size()) {
            throw new IllegalArgumentException(keyed.size() + " keyed reports for " + reports.size() + " checkpoints");
        }
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < reports.size(); i++) order.add(i);
        order.sort(Comparator.comparingLong(i -> reports.get(i).checkpointId()));
        List<Checkpoint> cps = new ArrayList<>();
        Map<List<String>, StateMode> modes = new LinkedHashMap<>();
        List<Map<List<String>, long[]>> per = new ArrayList<>();
        List<Map<String, Integer>> parallelism = new ArrayList<>();
        List<Map<List<String>, UnionCopies>> copies = new ArrayList<>();
        Map<List<String>, Boolean> keys = new TreeMap<>(KEY_ORDER);
        for (int i : order) {
            InspectReport r = reports.get(i);
            cps.add(new Checkpoint(r.checkpointId(), r.source(), r.metadataBytes()));
            Map<List<String>, long[]> s = states(r, modes);
            if (keyed != null) s.putAll(keyedStates(keyed.get(i), modes));
            s.keySet().forEach(k -> keys.put(k, true));
            per.add(s);
            copies.add(unions(r));
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
            StateMode mode = modes.get(k);
            series.add(new Series(k.get(0), k.get(1), mode, el, by, par));
            if (mode.operatorMode() != InspectReport.Mode.UNION) continue;
            List<String> steps = new ArrayList<>();
            boolean proven = false;
            int countsOnly = 0;
            for (int i = 1; i < per.size(); i++) {
                Multiplication m = multiplied(copies.get(i - 1).get(k), copies.get(i).get(k));
                if (m == null) continue;
                proven |= m.proven;
                if (!m.a.read || !m.b.read) countsOnly++;
                steps.add(m.step(cps.get(i).id(), -1));
            }
            // the values prove it in one step; without them (streams not read), the counts in two
            if (proven || countsOnly >= 2) findings.add(growsByParallelism(k, steps, el.get(el.size() - 1)));
        }
        return new History(cps, series, findings);
    }
}
