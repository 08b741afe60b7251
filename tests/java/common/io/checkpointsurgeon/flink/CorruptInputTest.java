package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.CheckpointSurgeonException.Code;
import org.junit.AfterClass;
import org.junit.Test;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.Assert.fail;

/**
 * Damaged {@code _metadata}: truncations and byte flips of every fixture, and of a few generated
 * files so the test bites even without fixtures. Each native call must either succeed or throw
 * {@link CheckpointSurgeonException} (a flipped payload byte can still be valid input) and must
 * finish within {@code corrupt.timeoutMillis} (default 5000). Never any other Throwable, and never
 * the codes PANIC (a caught Rust panic is a bug), JNI or LIBRARY.
 *
 * <p>A damaged input that the codec accepts must also round-trip byte-identically (the codec
 * promises identical bytes for any input it accepts); {@code -Dcorrupt.strictRoundTrip=false}
 * turns that into a printed count. Where both the codec and Flink's own loader accept a damaged
 * input, the two descriptions are compared too; disagreements are only printed, because Flink
 * normalizes some values on read (paths, empty key-group ranges) and rejects some the codec keeps
 * opaque (the V4+ properties blob).
 */
public class CorruptInputTest {

    private static final int TRUNCATIONS = Integer.getInteger("corrupt.truncations", 200);
    private static final int FLIPS = Integer.getInteger("corrupt.flips", 200);
    private static final long TIMEOUT_MILLIS = Long.getLong("corrupt.timeoutMillis", 5000L);
    private static final boolean STRICT_ROUND_TRIP =
            Boolean.parseBoolean(System.getProperty("corrupt.strictRoundTrip", "true"));
    private static final int GENERATED_SAMPLES = 4;
    private static final int REPORTED = 10;

    private static final ExecutorService EXECUTOR = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "corrupt-input-call");
        t.setDaemon(true); // a hung native call must not keep the test JVM alive
        return t;
    });

    @AfterClass
    public static void shutdown() {
        EXECUTOR.shutdownNow();
    }

    @Test
    public void damagedInputFailsCleanly() throws Exception {
        Map<String, byte[]> inputs = inputs();
        List<String> failures = new ArrayList<>();
        int calls = 0;
        int accepted = 0;
        int changedByRoundTrip = 0;
        int acceptedByBoth = 0;
        int disagreements = 0;
        boolean hung = false;
        for (Map.Entry<String, byte[]> input : inputs.entrySet()) {
            if (hung) {
                break; // the executor thread is stuck in native code
            }
            // Where Flink resolves relative handles: the fixture's own directory.
            String pointer = input.getKey().startsWith("fixture ")
                    ? new File(TestSupport.fixturesDir(), input.getKey().substring(8)).getAbsolutePath()
                    : TestSupport.pointerDir();
            byte[] original = input.getValue();
            Random random = new Random(input.getKey().hashCode());
            List<String> labels = new ArrayList<>();
            List<byte[]> variants = new ArrayList<>();
            for (int length : truncationLengths(original.length, random)) {
                labels.add("truncated to " + length);
                variants.add(Arrays.copyOf(original, length));
            }
            for (int i = 0; i < FLIPS; i++) {
                byte[] damaged = original.clone();
                labels.add(flip(damaged, random));
                variants.add(damaged);
            }
            for (int v = 0; v < variants.size(); v++) {
                byte[] damaged = variants.get(v);
                String where = input.getKey() + " " + labels.get(v);
                Outcome d = call(() -> CheckpointSurgeon.describe(damaged));
                Outcome r = call(() -> CheckpointSurgeon.roundTrip(damaged));
                calls += 2;
                String problem = d.problem("describe", where);
                if (problem == null) {
                    problem = r.problem("roundTrip", where);
                }
                if (problem == null && d.value != null && r.value == null) {
                    problem = where + ": describe accepted the input but roundTrip rejected it: " + r.error;
                }
                if (problem == null && d.value != null) {
                    String flinkText = flinkDescription(damaged, pointer);
                    if (flinkText != null) {
                        acceptedByBoth++;
                        if (!flinkText.equals(d.value)) {
                            disagreements++;
                            if (disagreements <= 3) {
                                System.err.println("CorruptInputTest (info): " + where
                                        + ": Flink and the codec both accept it but differ at "
                                        + TestSupport.firstDifference(flinkText, (String) d.value));
                            }
                        }
                    }
                }
                if (problem == null && r.value != null) {
                    accepted++;
                    if (!Arrays.equals((byte[]) r.value, damaged)) {
                        changedByRoundTrip++;
                        if (STRICT_ROUND_TRIP) {
                            problem = where + ": accepted, but the round trip changed the bytes at "
                                    + TestSupport.firstDifferingByte(damaged, (byte[]) r.value);
                        }
                    }
                }
                if (problem != null) {
                    failures.add(problem);
                }
                if (d.timedOut || r.timedOut) {
                    hung = true;
                    break;
                }
            }
        }
        System.err.printf("CorruptInputTest: Flink %s, %d inputs %s, %d native calls, %d variants "
                        + "accepted, %d of those not byte-identical after roundTrip, %d also "
                        + "accepted by Flink, %d of those described differently, %d failures%n",
                FlinkCompat.FLINK_LINE, inputs.size(), inputs.keySet(), calls, accepted,
                changedByRoundTrip, acceptedByBoth, disagreements, failures.size());
        if (!failures.isEmpty()) {
            fail(failures.size() + " damaged inputs were not handled cleanly; first ones:\n"
                    + String.join("\n", failures.subList(0, Math.min(REPORTED, failures.size()))));
        }
    }

    /** The fixtures (if any), then a few generated files with more handle kinds. */
    private static Map<String, byte[]> inputs() throws Exception {
        Map<String, byte[]> inputs = new LinkedHashMap<>();
        File dir = TestSupport.fixturesDir();
        if (dir != null && dir.isDirectory()) {
            for (File metadata : TestSupport.fixtureMetadataFiles(dir)) {
                inputs.put("fixture " + metadata.getParentFile().getName(),
                        Files.readAllBytes(metadata.toPath()));
            }
        }
        int found = 0;
        for (long seed = 0; found < GENERATED_SAMPLES && seed < 10_000; seed++) {
            byte[] bytes = RandomMetadata.store(RandomMetadata.generate(seed));
            if (bytes.length >= 1500) {
                inputs.put("generated seed " + seed, bytes);
                found++;
            }
        }
        return inputs;
    }

    /** Every length up to 64, the rest spread over the file and drawn at random (sorted, unique). */
    private static List<Integer> truncationLengths(int length, Random random) {
        TreeSet<Integer> lengths = new TreeSet<>();
        for (int i = 0; i < Math.min(length, 64); i++) {
            lengths.add(i);
        }
        int spread = Math.max(0, TRUNCATIONS - lengths.size()) / 2;
        for (int i = 0; i < spread && length > 0; i++) {
            lengths.add((int) ((long) length * i / spread));
        }
        while (lengths.size() < Math.min(TRUNCATIONS, length)) {
            lengths.add(random.nextInt(length));
        }
        lengths.add(length - 1);
        lengths.remove(length); // the intact file is not damaged
        return new ArrayList<>(lengths);
    }

    /** Damages {@code bytes} in place; returns what was done. */
    private static String flip(byte[] bytes, Random random) {
        int pos = random.nextInt(bytes.length);
        switch (random.nextInt(4)) {
            case 0: {
                // One bit: a count, code, flag or length that is slightly off.
                int bit = random.nextInt(8);
                bytes[pos] ^= (byte) (1 << bit);
                return "bit " + bit + " flipped at " + pos;
            }
            case 1: {
                // A few random bytes anywhere.
                StringBuilder s = new StringBuilder("bytes changed at");
                int n = 1 + random.nextInt(3);
                for (int i = 0; i < n; i++) {
                    int p = random.nextInt(bytes.length);
                    bytes[p] ^= (byte) (1 + random.nextInt(255));
                    s.append(' ').append(p);
                }
                return s.toString();
            }
            case 2: {
                // A huge or negative i32 (length/count fields): must not allocate or loop on trust.
                int[] values = {Integer.MAX_VALUE, -1, Integer.MIN_VALUE, 0x00FFFFFF, 65535};
                int value = values[random.nextInt(values.length)];
                for (int i = 0; i < 4 && pos + i < bytes.length; i++) {
                    bytes[pos + i] = (byte) (value >>> (24 - 8 * i));
                }
                return "i32 " + value + " written at " + pos;
            }
            default: {
                // A byte set to a handle-code-like value.
                int value = random.nextInt(20);
                bytes[pos] = (byte) value;
                return "byte set to " + value + " at " + pos;
            }
        }
    }

    /** Flink's description of the damaged bytes, or null when Flink's loader rejects them. */
    private static String flinkDescription(byte[] bytes, String pointer) {
        try {
            return FlinkDescriber.describe(FlinkDescriber.load(bytes, pointer));
        } catch (Exception | OutOfMemoryError | StackOverflowError e) {
            return null;
        }
    }

    private static Outcome call(Callable<Object> nativeCall) throws InterruptedException {
        Future<Object> future = EXECUTOR.submit(nativeCall);
        Outcome outcome = new Outcome();
        try {
            outcome.value = future.get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            if (outcome.value == null) {
                outcome.error = new NullPointerException("the native call returned null");
            }
        } catch (ExecutionException e) {
            outcome.error = e.getCause();
        } catch (TimeoutException e) {
            future.cancel(true);
            outcome.timedOut = true;
        }
        return outcome;
    }

    private static final class Outcome {
        Object value;
        Throwable error;
        boolean timedOut;

        /** Null if acceptable. */
        String problem(String method, String where) {
            if (timedOut) {
                return where + ": " + method + " did not finish within " + TIMEOUT_MILLIS + " ms";
            }
            if (error == null) {
                return null;
            }
            if (error instanceof CheckpointSurgeonException) {
                Code code = ((CheckpointSurgeonException) error).code();
                if (code == Code.PANIC || code == Code.JNI || code == Code.LIBRARY) {
                    return where + ": " + method + " threw " + error;
                }
                return null;
            }
            return where + ": " + method + " threw " + error.getClass().getName() + ": "
                    + error.getMessage();
        }
    }
}
