package io.checkpointsurgeon.bench;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.testing.CountingRelay;
import io.checkpointsurgeon.testing.FlinkConf;
import io.checkpointsurgeon.testing.MiniClusterJob;
import io.checkpointsurgeon.testing.S3ProxyServer;
import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.api.OperatorIdentifier;
import org.apache.flink.state.api.OperatorTransformation;
import org.apache.flink.state.api.SavepointReader;
import org.apache.flink.state.api.SavepointWriter;
import org.apache.flink.state.api.functions.KeyedStateBootstrapFunction;
import org.apache.flink.state.api.functions.KeyedStateReaderFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;

import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Java side of {@code bench/keyed.sh} (issue 27): inputs written by real Flink 1.20.3 and the
 * routes {@code inspect --keyed} is measured against.
 *
 * <pre>
 * KeyedBench canonical OUT KEYS       the State Processor API writes a canonical savepoint (RocksDB backend,
 *                                     parallelism 2): per key a 200-byte value, a list of 2 and a map of 3
 * KeyedBench spa-read SAVEPOINT       the State Processor API reads the same states and counts their entries
 * KeyedBench spa-remove SAVEPOINT OUT the State Processor API rebuilds the savepoint without the state "value"
 *                                     (issue 28's comparison): reads list and map of every key, bootstraps them
 *                                     into a new operator of the same uid, keeps the other operators
 * KeyedBench rocksdb DIR KEYS         a streaming job writes KEYS random 1 KiB values into RocksDB (SST files of
 *                                     1 MiB) and takes one incremental checkpoint; prints its directory
 * KeyedBench s3proxy DIR PORT_FILE    runs S3Proxy (bucket "bench") until killed
 * KeyedBench relay PORT PORT_FILE COUNT_FILE
 *                                     a relay to 127.0.0.1:PORT counting the bytes sent back, until killed
 * KeyedBench upload LOCAL_DIR TARGET CONF PLUGINS    copies a directory tree to a Flink path
 * KeyedBench download SOURCE DEST CONF PLUGINS      copies every file below a Flink path to a local dir
 * </pre>
 */
public final class KeyedBench {
    static final String UID = "keyed-bench";

    private KeyedBench() {}

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "canonical":
                canonical(args[1], Long.parseLong(args[2]));
                break;
            case "spa-read":
                spaRead(args[1]);
                break;
            case "spa-remove":
                spaRemove(args[1], args[2]);
                break;
            case "rocksdb":
                rocksdb(Paths.get(args[1]), Long.parseLong(args[2]));
                break;
            case "s3proxy":
                S3ProxyServer s = S3ProxyServer.start(System.getProperty("s3proxy.classpath"), Paths.get(args[1]), "bench");
                // the bench's kill runs shutdown hooks, not a try block's close: S3Proxy's own JVM goes with this one
                Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                    try {
                        s.close();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }));
                Files.writeString(Paths.get(args[2]), Integer.toString(s.port()));
                Thread.sleep(Long.MAX_VALUE);
                break;
            case "relay":
                relay(Integer.parseInt(args[1]), Paths.get(args[2]), Paths.get(args[3]));
                break;
            case "upload":
                CheckpointSurgeon.configureFileSystems(Paths.get(args[3]), Paths.get(args[4]));
                System.out.println("upload bytes=" + upload(Paths.get(args[1]), args[2]));
                break;
            case "download":
                CheckpointSurgeon.configureFileSystems(Paths.get(args[3]), Paths.get(args[4]));
                System.out.println("download bytes=" + download(args[1], Paths.get(args[2])));
                break;
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    private static StreamExecutionEnvironment local(int parallelism) {
        Configuration c = new Configuration();
        c.setString("rest.bind-port", "0");
        return StreamExecutionEnvironment.createLocalEnvironment(parallelism, c);
    }

    // ---- the canonical savepoint and the State Processor API reading it

    private static void canonical(String out, long keys) throws Exception {
        StreamExecutionEnvironment env = local(2);
        env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        // the canonical format does not depend on the backend that writes it; RocksDB's flushes made
        // the writer ~100x slower (150,000 keys in 400 s)
        SavepointWriter.newSavepoint(env, new HashMapStateBackend(), 128)
                .withOperator(OperatorIdentifier.forUid(UID), OperatorTransformation.bootstrapWith(env.fromSequence(0, keys - 1))
                        .keyBy(k -> k).transform(new Bootstrap()))
                .write(out);
        env.execute("canonical savepoint");
    }

    // the bench's keyed states, as every job and State Processor API function here declares them
    static ValueStateDescriptor<byte[]> valueState() {
        return new ValueStateDescriptor<>("value", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    }

    static ListStateDescriptor<Long> listState() {
        return new ListStateDescriptor<>("list", Types.LONG);
    }

    static MapStateDescriptor<Long, Long> mapState() {
        return new MapStateDescriptor<>("map", Types.LONG, Types.LONG);
    }

    /** Per key: a 200-byte value, a list of 2 longs, a map of 3 entries. */
    static final class Bootstrap extends KeyedStateBootstrapFunction<Long, Long> {
        private transient ValueState<byte[]> value;
        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;

        @Override
        public void open(Configuration parameters) {
            value = getRuntimeContext().getState(valueState());
            list = getRuntimeContext().getListState(listState());
            map = getRuntimeContext().getMapState(mapState());
        }

        @Override
        public void processElement(Long key, Context ctx) throws Exception {
            byte[] b = new byte[200];
            new Random(key).nextBytes(b);
            value.update(b);
            list.add(key);
            list.add(key + 1);
            for (long i = 0; i < 3; i++) map.put(i, key * i);
        }
    }

    private static void spaRead(String savepoint) throws Exception {
        long t0 = System.nanoTime();
        SavepointReader reader = SavepointReader.read(local(2), savepoint);
        long[] sums = new long[3];
        try (CloseableIterator<long[]> it = reader.readKeyedState(OperatorIdentifier.forUid(UID), new Counts())
                .executeAndCollect()) {
            while (it.hasNext()) {
                long[] c = it.next();
                for (int i = 0; i < 3; i++) sums[i] += c[i];
            }
        }
        System.out.printf(Locale.ROOT, "spa value=%d list=%d map=%d seconds=%.1f%n", sums[0], sums[1], sums[2],
                (System.nanoTime() - t0) / 1e9);
    }

    /** Per key: entries of value, list and map in the canonical format's units. */
    static final class Counts extends KeyedStateReaderFunction<Long, long[]> {
        private transient ValueState<byte[]> value;
        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;

        @Override
        public void open(Configuration parameters) {
            value = getRuntimeContext().getState(valueState());
            list = getRuntimeContext().getListState(listState());
            map = getRuntimeContext().getMapState(mapState());
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<long[]> out) throws Exception {
            long m = 0;
            for (Long ignored : map.keys()) m++;
            out.collect(new long[] {value.value() != null ? 1 : 0, list.get().iterator().hasNext() ? 1 : 0, m});
        }
    }

    // ---- the State Processor API removing a keyed state (bench/keyed-surgery.sh)

    /**
     * What a user without checkpoint-surgeon writes to drop the keyed state "value": the State
     * Processor API cannot remove one state of an operator, so the operator is rebuilt from the
     * states it keeps (read with the job's types) and replaces the old one.
     */
    private static void spaRemove(String savepoint, String out) throws Exception {
        long t0 = System.nanoTime();
        StreamExecutionEnvironment env = local(2);
        env.setRuntimeMode(RuntimeExecutionMode.BATCH);
        // the heap backend on both sides: Flink's fastest route for a canonical savepoint (with RocksDB
        // the writer flushes every few dozen entries)
        SavepointReader reader = SavepointReader.read(env, savepoint, new HashMapStateBackend());
        org.apache.flink.streaming.api.datastream.DataStream<long[]> kept =
                reader.readKeyedState(OperatorIdentifier.forUid(UID), new Kept());
        SavepointWriter.fromExistingSavepoint(env, savepoint, new HashMapStateBackend())
                .removeOperator(OperatorIdentifier.forUid(UID))
                .withOperator(OperatorIdentifier.forUid(UID), OperatorTransformation.bootstrapWith(kept)
                        .keyBy(r -> r[0]).transform(new Rebuild()))
                .write(out);
        env.execute("remove keyed state value");
        System.out.printf(Locale.ROOT, "spa-remove seconds=%.1f%n", (System.nanoTime() - t0) / 1e9);
    }

    /** Per key: {key, list size, list..., map size, (map key, map value)...}. */
    static final class Kept extends KeyedStateReaderFunction<Long, long[]> {
        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;

        @Override
        public void open(Configuration parameters) {
            list = getRuntimeContext().getListState(listState());
            map = getRuntimeContext().getMapState(mapState());
        }

        @Override
        public void readKey(Long key, Context ctx, Collector<long[]> out) throws Exception {
            List<Long> r = new ArrayList<>();
            r.add(key);
            List<Long> l = new ArrayList<>();
            for (Long v : list.get()) l.add(v);
            r.add((long) l.size());
            r.addAll(l);
            List<Long> m = new ArrayList<>();
            for (java.util.Map.Entry<Long, Long> e : map.entries()) {
                m.add(e.getKey());
                m.add(e.getValue());
            }
            r.add((long) m.size() / 2);
            r.addAll(m);
            out.collect(r.stream().mapToLong(Long::longValue).toArray());
        }
    }

    /** Writes back what {@link Kept} read. */
    static final class Rebuild extends KeyedStateBootstrapFunction<Long, long[]> {
        private transient ListState<Long> list;
        private transient MapState<Long, Long> map;

        @Override
        public void open(Configuration parameters) {
            list = getRuntimeContext().getListState(listState());
            map = getRuntimeContext().getMapState(mapState());
        }

        @Override
        public void processElement(long[] r, Context ctx) throws Exception {
            int i = 1;
            int n = (int) r[i++];
            for (int j = 0; j < n; j++) list.add(r[i++]);
            int m = (int) r[i++];
            for (int j = 0; j < m; j++, i += 2) map.put(r[i], r[i + 1]);
        }
    }

    // ---- the RocksDB incremental checkpoint of many SST files

    static final AtomicLong WRITTEN = new AtomicLong();

    private static void rocksdb(Path dir, long keys) throws Exception {
        Configuration c = FlinkConf.checkpointing("rocksdb", dir.resolve("checkpoints").toUri().toString(),
                dir.resolve("savepoints").toUri().toString(), "20 s", 1);
        FlinkConf.set(c, "true", "state.backend.incremental", "execution.checkpointing.incremental");
        FlinkConf.set(c, "2mb", "state.backend.rocksdb.writebuffer.size");
        FlinkConf.set(c, "1mb", "state.backend.rocksdb.compaction.level.target-file-size-base");
        FlinkConf.set(c, "600 s", "execution.checkpointing.timeout");
        MiniClusterJob.Result r = MiniClusterJob.of("rocksdb-many-files", c, 1, env -> env
                        .fromSequence(0, Long.MAX_VALUE - 1).keyBy(n -> n % keys).map(new RandomValue(keys))
                        .uid(UID).name(UID).addSink(new org.apache.flink.streaming.api.functions.sink.DiscardingSink<>()))
                .readyWhen(() -> WRITTEN.get() >= keys)
                .checkpointsAfterReady(1)
                .timeout(Duration.ofMinutes(30))
                .pollInterval(Duration.ofMillis(500))
                .run();
        r.orThrow();
        System.out.println("checkpoint " + r.checkpointPath());
    }

    /** A random 1 KiB value for each of the first {@code keys} numbers, then nothing but a pause. */
    static final class RandomValue extends RichMapFunction<Long, Long> {
        private final long keys;
        private transient ValueState<byte[]> value;

        RandomValue(long keys) {
            this.keys = keys;
        }

        @Override
        public Long map(Long n) throws Exception {
            if (value == null) {
                value = getRuntimeContext().getState(valueState());
            }
            if (n < keys) {
                byte[] b = new byte[1024];
                new Random(n).nextBytes(b);
                value.update(b);
                WRITTEN.incrementAndGet();
            } else {
                Thread.sleep(10);
            }
            return n;
        }
    }

    // ---- S3: the relay, upload and download

    private static void relay(int target, Path portFile, Path countFile) throws Exception {
        CountingRelay relay = CountingRelay.to(target);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                Files.writeString(countFile, relay.bytesFromServer() + " " + relay.bytesToServer() + " "
                        + relay.connections() + "\n");
            } catch (java.io.IOException e) {
                e.printStackTrace();
            }
        }));
        Files.writeString(portFile, relay.endpoint());
        Thread.sleep(Long.MAX_VALUE);
    }

    private static long upload(Path local, String target) throws Exception {
        List<Path> files = new ArrayList<>();
        try (java.util.stream.Stream<Path> s = Files.walk(local)) {
            s.filter(Files::isRegularFile).forEach(files::add);
        }
        long n = 0;
        for (Path f : files) {
            n += FlinkFileSystems.upload(f, target + "/" + local.relativize(f), false,
                    io.checkpointsurgeon.ProgressListener.SILENT);
        }
        return n;
    }

    private static long download(String source, Path dest) throws Exception {
        long n = 0;
        for (String p : FlinkFileSystems.list(source)) {
            String name = p.substring(p.lastIndexOf('/') + 1);
            if (FlinkFileSystems.isDirectory(p)) {
                n += download(p, dest.resolve(name));
            } else {
                Files.createDirectories(dest);
                try (InputStream in = FlinkFileSystems.open(p); OutputStream out = Files.newOutputStream(dest.resolve(name))) {
                    n += in.transferTo(out);
                }
            }
        }
        return n;
    }
}
