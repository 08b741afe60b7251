package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.internal.Native;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * The keyed stage step of the commit sequence as a Flink batch job ({@code --on-flink}): the
 * native stage hands over its keyed work items (one per keyed stream to rewrite: the old stream,
 * the new file, the edit), the job's source emits them, a map rewrites each through the native
 * library of this jar on a TaskManager ({@link Native#rewriteKeyedWork}), and the results
 * (new sizes and key-group offsets) are collected back with {@code executeAndCollect}; the stage
 * then writes {@code _metadata} here. Flink is used by reflection, with only the DataStream calls
 * every line from 1.13 to 2.3 has ({@code fromElements}, {@code rebalance}, {@code map} with its
 * type, {@code executeAndCollect}, {@code setRuntimeMode(BATCH)}); the map function is a
 * serializable {@link Proxy} of Flink's {@code MapFunction}, so this jar compiles without Flink.
 * The job never restarts a task: a failed rewrite fails it, and the stage removes every new file.
 */
public final class KeyedRewriteJob {
    private static final String ENV = "org.apache.flink.streaming.api.environment.StreamExecutionEnvironment";

    private final Object environment;
    private final String jobManager;
    private final Integer parallelism;
    private final String jobName;

    /**
     * {@code environment}: a {@code StreamExecutionEnvironment}, or null for {@code jobManager}
     * ({@code host:port} of the REST endpoint), or, both null, {@code getExecutionEnvironment()}.
     * {@code parallelism} null: the environment's.
     */
    public KeyedRewriteJob(Object environment, String jobManager, Integer parallelism, String jobName) {
        this.environment = environment;
        this.jobManager = jobManager;
        this.parallelism = parallelism;
        this.jobName = jobName;
    }

    /** Called by the native stage: the framed work items in, the framed results out. */
    byte[] rewrite(byte[] framed) throws CheckpointSurgeonException {
        List<byte[]> items = unframe(framed);
        long start = System.nanoTime();
        List<byte[]> done = run(items);
        CheckpointSurgeon.progressListener().message(String.format(Locale.ROOT, "on Flink: %,d keyed state file(s)"
                + " rewritten by the job '%s' in %.1f s", done.size(), jobName, (System.nanoTime() - start) / 1e9));
        return frame(done);
    }

    private List<byte[]> run(List<byte[]> items) throws CheckpointSurgeonException {
        ClassLoader cl = KeyedRewriteJob.class.getClassLoader();
        Object env;
        try {
            env = environment(cl);
            Class<?> envClass = Class.forName(ENV, true, cl);
            Class<?> mode = Class.forName("org.apache.flink.api.common.RuntimeExecutionMode", true, cl);
            envClass.getMethod("setRuntimeMode", mode).invoke(env, enumValue(mode, "BATCH"));
            jobOptions(env, envClass, cl);
            int p = Math.min(parallelism != null ? parallelism : defaultParallelism(env, envClass), items.size());
            Object source = envClass.getMethod("fromElements", Class.class, Object[].class)
                    .invoke(env, byte[].class, items.toArray(new byte[0][]));
            Class<?> stream = Class.forName("org.apache.flink.streaming.api.datastream.DataStream", true, cl);
            Class<?> mapFunction = Class.forName("org.apache.flink.api.common.functions.MapFunction", true, cl);
            Class<?> typeInfo = Class.forName("org.apache.flink.api.common.typeinfo.TypeInformation", true, cl);
            Object bytesType = Class.forName("org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo", true, cl)
                    .getField("BYTE_PRIMITIVE_ARRAY_TYPE_INFO").get(null);
            Object rebalanced = stream.getMethod("rebalance").invoke(source);
            Object task = Proxy.newProxyInstance(cl, new Class<?>[] {mapFunction}, new Rewrite());
            Object mapped = stream.getMethod("map", mapFunction, typeInfo).invoke(rebalanced, task, bytesType);
            mapped.getClass().getMethod("name", String.class).invoke(mapped, "rewrite keyed state files");
            mapped.getClass().getMethod("setParallelism", int.class).invoke(mapped, Math.max(1, p));
            CheckpointSurgeon.progressListener().message(String.format(Locale.ROOT, "on Flink: job '%s', %,d keyed"
                    + " state file(s) to rewrite, parallelism %d%s", jobName, items.size(), Math.max(1, p),
                    jobManager == null ? "" : ", JobManager " + jobManager));
            List<byte[]> done = new ArrayList<>(items.size());
            // the job's client too (package-private in every line from 1.13 to 2.3): a failed run
            // waits for the job to stop before the stage removes the new files
            Method withClient = stream.getDeclaredMethod("executeAndCollectWithClient", String.class);
            withClient.setAccessible(true);
            Object both = withClient.invoke(mapped, jobName);
            Object client = both.getClass().getField("client").get(both);
            Object it = both.getClass().getField("iterator").get(both);
            try {
                Iterator<?> results = (Iterator<?>) it;
                while (results.hasNext()) done.add((byte[]) results.next());
            } catch (RuntimeException e) {
                throw failed(e, awaitStopped(client));
            } finally {
                ((AutoCloseable) it).close();
            }
            return done;
        } catch (InvocationTargetException e) {
            throw failed(e.getCause(), Message.of());
        } catch (CheckpointSurgeonException e) {
            throw e;
        } catch (Exception | LinkageError e) {
            throw failed(e, Message.of());
        }
    }

    /** How long a failed run waits for its job to stop ({@code -Dcheckpointsurgeon.onFlink.stopSeconds}). */
    static final long STOP_SECONDS = Long.getLong("checkpointsurgeon.onFlink.stopSeconds", 120);

    /**
     * Cancels the failed job and waits, at most {@link #STOP_SECONDS}, until it reached a globally
     * terminal state (its result is there): only then has no task left that may still create a new
     * file. Returns what to add to the error when it did not stop.
     */
    private Message awaitStopped(Object client) {
        long start = System.nanoTime();
        Object id = "?";
        try {
            Class<?> jobClient = Class.forName("org.apache.flink.core.execution.JobClient", true,
                    client.getClass().getClassLoader());
            id = jobClient.getMethod("getJobID").invoke(client);
            java.util.concurrent.CompletableFuture<?> result =
                    (java.util.concurrent.CompletableFuture<?>) jobClient.getMethod("getJobExecutionResult").invoke(client);
            if (!result.isDone()) {
                // a task still running after the collect failed: stop it (a failing job ignores this)
                ((java.util.concurrent.CompletableFuture<?>) jobClient.getMethod("cancel").invoke(client))
                        .exceptionally(t -> null);
            }
            try {
                result.get(STOP_SECONDS, java.util.concurrent.TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.CancellationException stopped) {
                // failed or cancelled: stopped all the same
            }
            CheckpointSurgeon.progressListener().message(String.format(Locale.ROOT, "on Flink: the failed job %s"
                    + " stopped (%.1f s after its failure reached the client)", id, (System.nanoTime() - start) / 1e9));
            return Message.of();
        } catch (java.util.concurrent.TimeoutException e) {
            return Message.of(String.format(Locale.ROOT, "; the job %s had not stopped %d s after it was cancelled: a"
                    + " task still running may yet leave a new state file no _metadata names (", id, STOP_SECONDS),
                    Choice.CLEAN_LEFTOVERS, " removes it once the job stopped)");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Message.of("; interrupted while waiting for the job " + id + " to stop");
        } catch (ReflectiveOperationException | RuntimeException e) {
            return Message.of("; whether the job " + id + " stopped is not known (" + e + ")");
        }
    }

    private Object environment(ClassLoader cl) throws ReflectiveOperationException, CheckpointSurgeonException {
        if (environment != null) return environment;
        Class<?> envClass = Class.forName(ENV, true, cl);
        if (jobManager == null) return envClass.getMethod("getExecutionEnvironment").invoke(null);
        int colon = jobManager.lastIndexOf(':');
        return envClass.getMethod("createRemoteEnvironment", String.class, int.class, String[].class).invoke(null,
                jobManager.substring(0, colon), Integer.parseInt(jobManager.substring(colon + 1)),
                new String[] {thisJar()});
    }

    /**
     * The job's parallelism without {@code --threads}: a cluster's task slots (its REST
     * {@code /overview}: a remote environment's own is the client's {@code parallelism.default},
     * 1 unless configured), else the environment's.
     */
    private int defaultParallelism(Object env, Class<?> envClass) throws ReflectiveOperationException {
        if (jobManager != null) {
            try {
                java.net.HttpURLConnection c = (java.net.HttpURLConnection) new java.net.URL("http://" + jobManager
                        + "/overview").openConnection();
                c.setConnectTimeout(10_000);
                c.setReadTimeout(10_000);
                try (java.io.InputStream in = c.getInputStream()) {
                    String json = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
                    java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"slots-total\"\\s*:\\s*(\\d+)")
                            .matcher(json);
                    if (m.find() && Integer.parseInt(m.group(1)) > 0) return Integer.parseInt(m.group(1));
                } finally {
                    c.disconnect();
                }
            } catch (IOException | RuntimeException e) {
                CheckpointSurgeon.progressListener().message("on Flink: the task slots of " + jobManager
                        + " are not known (" + e + "); the job runs with the environment's parallelism");
            }
        }
        return (Integer) envClass.getMethod("getParallelism").invoke(env);
    }

    /** This jar, shipped with the job: the tasks load the classes and the native library from it. */
    private static String thisJar() throws CheckpointSurgeonException {
        try {
            Path p = Path.of(KeyedRewriteJob.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            if (!p.toString().endsWith(".jar")) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "the classes run"
                        + " from " + p + ", not a jar, which a remote Flink cluster could load; run the checkpoint-surgeon jar");
            }
            return p.toString();
        } catch (java.net.URISyntaxException | SecurityException | NullPointerException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.INVALID_ARGUMENT, "the location of the"
                    + " checkpoint-surgeon jar is not known: " + e, e);
        }
    }

    /**
     * A failed task fails the job (a retry would meet its own new file, created exclusively); and
     * no closure cleaning.
     */
    private static void jobOptions(Object env, Class<?> envClass, ClassLoader cl) throws ReflectiveOperationException {
        Class<?> conf = Class.forName("org.apache.flink.configuration.Configuration", true, cl);
        Object c = conf.getConstructor().newInstance();
        Method set = conf.getMethod("setString", String.class, String.class);
        set.invoke(c, "restart-strategy", "none");
        set.invoke(c, "restart-strategy.type", "none");
        // the map function is a Proxy with no closure to clean; Flink 1.15's cleaner on Java 17
        // fails on the proxy class's fields (module jdk.proxyN does not open them)
        set.invoke(c, "pipeline.closure-cleaner-level", "NONE");
        Class<?> readable = Class.forName("org.apache.flink.configuration.ReadableConfig", true, cl);
        envClass.getMethod("configure", readable, ClassLoader.class).invoke(env, c, cl);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object enumValue(Class<?> type, String name) {
        return Enum.valueOf((Class) type, name);
    }

    /**
     * The job's failure, with the task's own message (a native error names the file and the byte)
     * and its code: a task's error reaches the client as Flink serialized it, so the task puts the
     * code into its message ({@link #CODE_MARK}), which is read back here.
     */
    private CheckpointSurgeonException failed(Throwable e, Message stopped) {
        Throwable root = e;
        for (Throwable c = e; c != null; c = c.getCause()) {
            root = c;
            if (c instanceof CheckpointSurgeonException || c.getClass().getName().endsWith("CheckpointSurgeonException")) break;
        }
        String text = String.valueOf(root);
        CheckpointSurgeonException.Code code = CheckpointSurgeonException.Code.IO;
        java.util.regex.Matcher m = CODE_MARK.matcher(text);
        if (m.find()) {
            try {
                code = CheckpointSurgeonException.Code.valueOf(m.group(1));
                text = text.substring(0, m.start()) + text.substring(m.end());
            } catch (IllegalArgumentException unknown) {
                // a code of another version of the tool: the job failed, as IO
            }
        }
        return new CheckpointSurgeonException(code, Message.of("the Flink job '" + jobName
                + "' that rewrites the keyed state files failed: " + text, stopped), e);
    }

    /** How a task's error carries its code to the client: {@code [code FORMAT] } before its message. */
    static final java.util.regex.Pattern CODE_MARK = java.util.regex.Pattern.compile("\\[code ([A-Z_]+)\\] ");

    /**
     * The map function of the job, behind a {@link Proxy} of {@code MapFunction}: a work item in,
     * its result out. Serializable, so Flink ships it to the TaskManagers with the job.
     */
    static final class Rewrite implements InvocationHandler, Serializable {
        private static final long serialVersionUID = 1L;

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            switch (method.getName()) {
                case "map":
                    try {
                        return Native.rewriteKeyedWork((byte[]) args[0]);
                    } catch (CheckpointSurgeonException e) {
                        throw new CheckpointSurgeonException(e.code(), Message.of("[code " + e.code() + "] ", e.typedMessage()), e);
                    }
                case "hashCode":
                    return System.identityHashCode(proxy);
                case "equals":
                    return proxy == args[0];
                case "toString":
                    return "checkpoint-surgeon keyed rewrite";
                default:
                    throw new UnsupportedOperationException(method.toString());
            }
        }
    }

    private static List<byte[]> unframe(byte[] framed) {
        ByteBuffer b = ByteBuffer.wrap(framed);
        int n = b.getInt();
        List<byte[]> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            byte[] item = new byte[b.getInt()];
            b.get(item);
            items.add(item);
        }
        return items;
    }

    private static byte[] frame(List<byte[]> items) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(items.size());
            for (byte[] i : items) {
                out.writeInt(i.length);
                out.write(i);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return bytes.toByteArray();
    }
}
