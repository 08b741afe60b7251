package io.checkpointsurgeon.demo;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.InspectReport;
import io.checkpointsurgeon.Surgery;
import io.checkpointsurgeon.SurgeryPlan;
import io.checkpointsurgeon.testing.KafkaBroker;
import io.checkpointsurgeon.testing.KafkaState;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The incident of the README, end to end, with real Flink 1.15.4 and a real Kafka broker:
 * <ol>
 *   <li>job v1 reads the input topic with {@code FlinkKafkaConsumer} (uid {@code source_consumer}),
 *       counts per key and writes the output topic; stopped with a savepoint;</li>
 *   <li>job v2 replaces the consumer by {@code KafkaSource} under the same uid, starting from the
 *       committed offsets, restored from that savepoint, then restarted from its latest retained
 *       checkpoint again and again: the never-read union state {@code topic-partition-offset-states}
 *       is multiplied by the parallelism at every restore, and {@code _metadata} grows with it;</li>
 *   <li>checkpoint-surgeon inspects the last checkpoint, names that state as the cause and purges it
 *       into a new directory; job v2 restarts from there (and again twice): the checkpoints are back
 *       to the size they had before the migration, the KafkaSource split offsets did not change, and
 *       every produced record is in the output topic.</li>
 * </ol>
 * Usage: {@code gradle demo} (or {@code -PdemoArgs="--parallelism 3 --restores 6"}). Writes
 * {@code docs/incident-table.md} and {@code docs/incident-chart.svg} unless {@code --no-docs}.
 */
public final class IncidentDemo {

    private static final long TIMEOUT_SECONDS = 180;

    /** Settings of one run. */
    public record Options(int partitions, int parallelism, int restores, int restoresAfterRepair,
                          int recordsPerRun, Path docs, boolean keepWorkDir) {
        static Options defaults() {
            return new Options(8, 4, 8, 2, 500, null, false);
        }
    }

    /** What one restore loaded, and what its job did. */
    public record Restore(int number, String phase, String loaded, long metadataBytes, long staleElements,
                          long staleBytes, long readerElements, long readerBytes, double inspectMillis,
                          double flinkLoadMillis, double firstCheckpointSeconds, String wrote,
                          long wroteMetadataBytes) {}

    /** Everything the demo measured. */
    public record Result(Options options, Checkpoint preMigration, List<Restore> restores, Checkpoint grown,
                         Checkpoint repaired, SurgeryPlan plan, Map<String, Long> splitsBefore,
                         Map<String, Long> splitsAfter, Map<String, Long> splitsNative, Checkpoint last, long produced, long outputRecords,
                         long missing, long duplicates, double seconds) {}

    /** A measured checkpoint or savepoint. */
    public record Checkpoint(Path dir, long metadataBytes, long staleElements, long staleBytes, long readerElements,
                             long readerBytes, double inspectMillis, double flinkLoadMillis) {}

    private final Options o;
    private final Path work;
    private KafkaBroker broker;
    private OutputTracker output;
    private long produced;
    private int run;

    private IncidentDemo(Options o, Path work) {
        this.o = o;
        this.work = work;
    }

    public static void main(String[] args) throws Exception {
        Options o = Options.defaults();
        String docs = System.getProperty("demo.docs");
        if (docs != null) o = with(o, "docs", docs);
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--no-docs" -> o = new Options(o.partitions(), o.parallelism(), o.restores(), o.restoresAfterRepair(),
                        o.recordsPerRun(), null, o.keepWorkDir());
                case "--keep" -> o = new Options(o.partitions(), o.parallelism(), o.restores(), o.restoresAfterRepair(),
                        o.recordsPerRun(), o.docs(), true);
                default -> {
                    if (!a.startsWith("--") || i + 1 >= args.length) {
                        System.err.println("usage: IncidentDemo [--partitions N] [--parallelism N] [--restores N]"
                                + " [--restores-after-repair N] [--records N] [--docs DIR | --no-docs] [--keep]");
                        System.exit(2);
                    }
                    o = with(o, a.substring(2), args[++i]);
                }
            }
        }
        int rc = 0;
        try {
            Result r = run(o, System.out);
            List<String> problems = problems(r);
            System.out.println(problems.isEmpty() ? "checks: stale state ×" + o.parallelism() + " per restore,"
                    + " repaired restore ran and stopped the growth, split offsets unchanged, no record missing: OK"
                    : "CHECKS FAILED: " + problems);
            rc = problems.isEmpty() ? 0 : 1;
        } catch (Throwable t) {
            t.printStackTrace();
            rc = 1;
        }
        // Flink may leave non-daemon threads behind.
        System.exit(rc);
    }

    private static Options with(Options o, String key, String v) {
        return switch (key) {
            case "partitions" -> new Options(Integer.parseInt(v), o.parallelism(), o.restores(), o.restoresAfterRepair(), o.recordsPerRun(), o.docs(), o.keepWorkDir());
            case "parallelism" -> new Options(o.partitions(), Integer.parseInt(v), o.restores(), o.restoresAfterRepair(), o.recordsPerRun(), o.docs(), o.keepWorkDir());
            case "restores" -> new Options(o.partitions(), o.parallelism(), Integer.parseInt(v), o.restoresAfterRepair(), o.recordsPerRun(), o.docs(), o.keepWorkDir());
            case "restores-after-repair" -> new Options(o.partitions(), o.parallelism(), o.restores(), Integer.parseInt(v), o.recordsPerRun(), o.docs(), o.keepWorkDir());
            case "records" -> new Options(o.partitions(), o.parallelism(), o.restores(), o.restoresAfterRepair(), Integer.parseInt(v), o.docs(), o.keepWorkDir());
            case "docs" -> new Options(o.partitions(), o.parallelism(), o.restores(), o.restoresAfterRepair(), o.recordsPerRun(), Paths.get(v), o.keepWorkDir());
            default -> throw new IllegalArgumentException("unknown option --" + key);
        };
    }

    /** Runs the whole scenario and prints the report to {@code out}. */
    public static Result run(Options o, java.io.PrintStream out) throws Exception {
        if (o.restores() < 1 || o.parallelism() < 2 || o.partitions() < o.parallelism()) {
            throw new IllegalArgumentException("need restores >= 1, parallelism >= 2, partitions >= parallelism: " + o);
        }
        Path work = Files.createTempDirectory("incident-demo");
        IncidentDemo d = new IncidentDemo(o, work);
        long t0 = System.nanoTime();
        try {
            Result r = d.scenario(out, t0);
            Report.print(r, out);
            if (o.docs() != null) {
                Files.createDirectories(o.docs());
                Path md = o.docs().resolve("incident-table.md");
                Path svg = o.docs().resolve("incident-chart.svg");
                Files.writeString(md, Report.markdown(r), StandardCharsets.UTF_8);
                Files.writeString(svg, Report.svg(r), StandardCharsets.UTF_8);
                out.println("wrote " + md + " and " + svg);
            }
            return r;
        } finally {
            d.close();
            if (o.keepWorkDir()) {
                out.println("work dir kept: " + work);
            } else {
                deleteRecursively(work);
            }
        }
    }

    private Result scenario(java.io.PrintStream out, long t0) throws Exception {
        out.printf("Flink %s, Kafka broker (KRaft) in a local process; input topic with %d partitions, parallelism %d%n",
                org.apache.flink.runtime.util.EnvironmentInformation.getVersion(), o.partitions(), o.parallelism());
        broker = KafkaBroker.start(work.resolve("kafka"));
        out.println("broker ready at " + broker.bootstrapServers() + " (" + secs(t0) + " s)");
        broker.createTopic("input", o.partitions());
        broker.createTopic("output", o.parallelism());
        output = new OutputTracker(broker.bootstrapServers(), "output");

        // 1. Job v1 (FlinkKafkaConsumer), stopped with a savepoint.
        Path savepoint = runJob(true, null, out);
        Checkpoint pre = measure(savepoint);
        out.printf("v1 (FlinkKafkaConsumer) stopped with savepoint %s: _metadata %d bytes, %s %d elements%n",
                savepoint.getFileName(), pre.metadataBytes(), Jobs.STALE_STATE, pre.staleElements());

        // 2. Job v2 (KafkaSource, same uid): restore from the savepoint, then from each latest checkpoint.
        List<Restore> restores = new ArrayList<>();
        Path from = savepoint;
        Checkpoint loaded = pre;
        int number = 0;
        for (int i = 1; i <= o.restores(); i++) {
            number++;
            long start = System.nanoTime();
            JobRun jr = runJobTimed(false, from, out);
            restores.add(restore(number, i == 1 ? "migration" : "before repair", loaded, from, jr));
            out.printf("restore %d from %s -> %s: _metadata %d bytes, %s %d elements (%.1f s)%n", number,
                    name(from), name(jr.checkpoint), jr.written.metadataBytes(), Jobs.STALE_STATE,
                    jr.written.staleElements(), (System.nanoTime() - start) / 1e9);
            from = jr.checkpoint;
            loaded = jr.written;
        }
        Checkpoint grown = loaded;
        // The checkpoint the next restore would load: the input of the surgery.
        restores.add(new Restore(0, "surgery input", name(from), grown.metadataBytes(), grown.staleElements(),
                grown.staleBytes(), grown.readerElements(), grown.readerBytes(), grown.inspectMillis(),
                grown.flinkLoadMillis(), Double.NaN, "", -1));

        // 3. Diagnose and repair.
        InspectReport report = CheckpointSurgeon.inspect(from);
        out.println();
        out.println("diagnosis of " + from + " (" + report.metadataBytes() + " bytes):");
        for (InspectReport.OperatorInfo op : report.operators()) {
            for (InspectReport.StateTotal st : op.stateTotals()) {
                out.printf("  operator %s  %-32s %-16s %8d elements %10d bytes in %d subtasks%s%n", op.id(), st.name(),
                        st.mode(), st.elements(), st.bytes(), st.handles(),
                        st.name().equals(Jobs.STALE_STATE) ? "   <-- stale" : "");
            }
        }
        out.printf("cause: operator uid %s is a KafkaSource now, which never reads the UNION state %s of the old"
                        + " FlinkKafkaConsumer; every subtask restores all %d elements and writes them back, so they"
                        + " are multiplied by the parallelism (%d) at every restore.%n",
                Jobs.SOURCE_UID, Jobs.STALE_STATE, grown.staleElements(), o.parallelism());
        Path repairedDir = work.resolve("repaired");
        SurgeryPlan plan = CheckpointSurgeon.apply(from,
                Surgery.removeState(Surgery.OperatorSelector.uid(Jobs.SOURCE_UID), Jobs.STALE_STATE), repairedDir);
        out.printf("repair: CheckpointSurgeon.apply(removeState(uid %s, %s)) -> %s: removed %d elements,"
                        + " _metadata %d -> %d bytes; %s%n", Jobs.SOURCE_UID, Jobs.STALE_STATE, repairedDir,
                plan.elementsRemoved(), plan.metadataBytesBefore(), plan.metadataBytesAfter(),
                plan.result().flinkValidation());
        Checkpoint repaired = measure(repairedDir);
        Map<String, Long> splitsBefore = KafkaState.startingOffsets(from);
        Map<String, Long> splitsAfter = KafkaState.startingOffsets(repairedDir);
        // the same offsets as checkpoint-surgeon's inspect decodes them natively
        Map<String, Long> splitsNative = new java.util.TreeMap<>();
        for (io.checkpointsurgeon.InspectReport.OperatorInfo op : CheckpointSurgeon.inspect(from).operators()) {
            for (io.checkpointsurgeon.InspectReport.KafkaOffset k
                    : op.kafkaOffsets().getOrDefault(Jobs.READER_STATE, List.of())) {
                splitsNative.put(k.topic() + "-" + k.partition(), k.offset());
            }
        }
        out.println("KafkaSource split offsets as `checkpoint-surgeon inspect` decodes them: " + splitsNative);
        out.println("KafkaSource split offsets before the repair: " + splitsBefore);
        out.println("KafkaSource split offsets after the repair:  " + splitsAfter
                + (splitsBefore.equals(splitsAfter) ? "  (unchanged)" : "  (CHANGED)"));

        // 4. Restart from the repaired checkpoint, and a few more times.
        from = repairedDir;
        loaded = repaired;
        for (int i = 0; i <= o.restoresAfterRepair(); i++) {
            number++;
            JobRun jr = runJobTimed(false, from, out);
            restores.add(restore(number, i == 0 ? "repaired" : "after repair", loaded, from, jr));
            out.printf("restore %d from %s -> %s: _metadata %d bytes, %s %d elements%n", number, name(from),
                    name(jr.checkpoint), jr.written.metadataBytes(), Jobs.STALE_STATE, jr.written.staleElements());
            from = jr.checkpoint;
            loaded = jr.written;
        }

        // 5. Every produced record must be in the output topic.
        output.awaitAll(produced, TIMEOUT_SECONDS);
        OutputTracker.Summary s = output.summary(produced);
        return new Result(o, pre, restores, grown, repaired, plan, splitsBefore, splitsAfter, splitsNative, loaded, produced,
                s.records(), s.missing(), s.duplicates(), secs(t0));
    }

    private static String name(Path p) {
        return p.getFileName().toString();
    }

    private Restore restore(int number, String phase, Checkpoint loaded, Path from, JobRun jr) {
        return new Restore(number, phase, name(from), loaded.metadataBytes(), loaded.staleElements(),
                loaded.staleBytes(), loaded.readerElements(), loaded.readerBytes(), loaded.inspectMillis(),
                loaded.flinkLoadMillis(), jr.firstCheckpointSeconds, name(jr.checkpoint), jr.written.metadataBytes());
    }

    /** What the run must show; empty when it did. */
    public static List<String> problems(Result r) {
        List<String> p = new ArrayList<>();
        long expected = r.preMigration().staleElements();
        if (expected != r.options().partitions()) {
            p.add("v1 savepoint has " + expected + " offset entries, expected one per partition");
        }
        for (Restore x : r.restores()) {
            boolean before = x.phase().equals("migration") || x.phase().equals("before repair")
                    || x.phase().equals("surgery input");
            if (before) {
                if (x.staleElements() != expected) {
                    p.add("restore " + x.number() + " loaded " + x.staleElements() + " stale elements, expected " + expected);
                }
                expected *= r.options().parallelism();
            } else if (x.staleElements() != 0) {
                p.add("restore " + x.number() + " (" + x.phase() + ") still loaded " + x.staleElements() + " stale elements");
            }
        }
        if (r.last().staleElements() != 0) p.add("the latest checkpoint has stale elements again");
        if (!r.splitsBefore().equals(r.splitsAfter()) || r.splitsBefore().size() != r.options().partitions()) {
            p.add("split offsets changed or incomplete: " + r.splitsBefore() + " -> " + r.splitsAfter());
        }
        if (!r.splitsNative().equals(r.splitsBefore())) {
            p.add("inspect decoded the split offsets as " + r.splitsNative() + ", the connector as " + r.splitsBefore());
        }
        if (r.missing() != 0) p.add(r.missing() + " records missing from the output topic");
        return p;
    }

    // ---------------------------------------------------------------------------------------------
    // Jobs

    private record JobRun(Path checkpoint, Checkpoint written, double firstCheckpointSeconds) {}

    private Path runJob(boolean v1, Path restoreFrom, java.io.PrintStream out) throws Exception {
        return runJobTimed(v1, restoreFrom, out).checkpoint;
    }

    /**
     * Produces a new batch of records, runs the job until all records so far are in the output topic
     * and one more checkpoint completed, then stops it: v1 with a savepoint, v2 by cancelling (its
     * latest checkpoint is retained). Returns that savepoint or checkpoint.
     */
    private JobRun runJobTimed(boolean v1, Path restoreFrom, java.io.PrintStream out) throws Exception {
        int r = run++;
        produce(o.recordsPerRun());
        Path base = work.resolve("run-" + r);
        Path checkpoints = base.resolve("checkpoints");
        Path savepoints = base.resolve("savepoints");
        Files.createDirectories(checkpoints);
        Files.createDirectories(savepoints);
        Configuration c = new Configuration();
        c.setString("state.backend", "hashmap");
        c.setString("state.checkpoints.dir", checkpoints.toUri().toString());
        c.setString("state.savepoints.dir", savepoints.toUri().toString());
        c.setString("execution.checkpointing.interval", "500 ms");
        c.setString("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION");
        c.setString("state.checkpoints.num-retained", "1");
        c.setString("execution.checkpointing.tolerable-failed-checkpoints", "100");
        c.setString("rest.bind-port", "0");
        c.setString("restart-strategy", "none");
        if (restoreFrom != null) {
            c.setString("execution.savepoint.path", restoreFrom.toUri().toString());
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(o.parallelism(), c);
        Jobs.build(env, v1, broker.bootstrapServers(), "input", "output", o.parallelism());
        long start = System.nanoTime();
        JobClient client = env.executeAsync((v1 ? "v1" : "v2") + "-run-" + r);
        Path jobDir = checkpoints.resolve(client.getJobID().toString());
        Path result;
        double firstCheckpoint;
        try {
            long first = awaitCheckpointAfter(client, jobDir, -1);
            firstCheckpoint = (System.nanoTime() - start) / 1e9;
            output.awaitAll(produced, TIMEOUT_SECONDS);
            awaitCheckpointAfter(client, jobDir, Math.max(first, latestId(jobDir)));
            if (v1) {
                // A savepoint, then cancel. (stop-with-savepoint fails on Flink 1.15.4 with the legacy
                // FlinkKafkaConsumer: Handover$ClosedException while stopping the source.)
                String sp = client.triggerSavepoint(savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
                result = toPath(sp);
            } else {
                result = null;
            }
            client.cancel().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } finally {
            try {
                client.getJobExecutionResult().get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (Exception expected) {
                // a cancelled job completes exceptionally
            }
        }
        if (result == null) {
            long id = latestId(jobDir);
            if (id < 0) throw new IllegalStateException("no retained checkpoint in " + jobDir);
            result = jobDir.resolve("chk-" + id);
        }
        return new JobRun(result, measure(result), firstCheckpoint);
    }

    private void produce(int n) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) {
                long number = produced + i;
                producer.send(new ProducerRecord<>("input", (int) (number % o.partitions()),
                        Long.toString(number), Long.toString(number)));
            }
            producer.flush();
        }
        produced += n;
    }

    private static long awaitCheckpointAfter(JobClient client, Path jobDir, long after) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(TIMEOUT_SECONDS);
        while (true) {
            long id = latestId(jobDir);
            if (id > after) return id;
            if (client.getJobStatus().get(10, TimeUnit.SECONDS).isGloballyTerminalState()) {
                client.getJobExecutionResult().get(10, TimeUnit.SECONDS); // throws the failure
                throw new IllegalStateException("job ended before checkpoint " + (after + 1));
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out waiting for a checkpoint after " + after + " in " + jobDir);
            }
            Thread.sleep(50);
        }
    }

    private static long latestId(Path jobDir) throws IOException {
        if (!Files.isDirectory(jobDir)) return -1;
        try (Stream<Path> dirs = Files.list(jobDir)) {
            return dirs.filter(d -> d.getFileName().toString().startsWith("chk-"))
                    .filter(d -> Files.exists(d.resolve("_metadata")))
                    .mapToLong(d -> Long.parseLong(d.getFileName().toString().substring(4)))
                    .max().orElse(-1);
        } catch (UncheckedIOException e) {
            return -1;
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Measuring

    /** Sizes and element counts by CheckpointSurgeon.inspect; load times are the best of 3. */
    static Checkpoint measure(Path dir) throws Exception {
        InspectReport r = null;
        double inspect = Double.MAX_VALUE;
        double flink = Double.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            long t = System.nanoTime();
            r = CheckpointSurgeon.inspect(dir);
            inspect = Math.min(inspect, (System.nanoTime() - t) / 1e6);
            t = System.nanoTime();
            KafkaState.load(dir);
            flink = Math.min(flink, (System.nanoTime() - t) / 1e6);
        }
        long staleElements = 0, staleBytes = 0, readerElements = 0, readerBytes = 0;
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.StateTotal st : op.stateTotals()) {
                if (st.name().equals(Jobs.STALE_STATE)) {
                    staleElements += st.elements();
                    staleBytes += st.bytes();
                } else if (st.name().equals(Jobs.READER_STATE)) {
                    readerElements += st.elements();
                    readerBytes += st.bytes();
                }
            }
        }
        return new Checkpoint(dir, r.metadataBytes(), staleElements, staleBytes, readerElements, readerBytes, inspect, flink);
    }

    // ---------------------------------------------------------------------------------------------

    private void close() {
        if (output != null) output.close();
        if (broker != null) broker.close();
    }

    private static double secs(long t0) {
        return Math.round((System.nanoTime() - t0) / 1e8) / 10.0;
    }

    static Path toPath(String uriOrPath) {
        return uriOrPath.startsWith("file:") ? Paths.get(URI.create(uriOrPath)) : Paths.get(uriOrPath);
    }

    static void deleteRecursively(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(x);
            }
        }
    }

    static String fmt(double d) {
        return String.format(Locale.ROOT, "%.1f", d);
    }
}
