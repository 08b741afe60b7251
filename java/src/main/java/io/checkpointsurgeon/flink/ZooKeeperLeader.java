package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A cluster's ZooKeeper HA nodes, read with the ZooKeeper client Flink ships
 * (flink-shaded-zookeeper-3, on the class path with Flink's jars): its checkpoint pointers (and
 * the removal of one, {@link #remove}), and whether a JobManager holds leadership. A JobManager that
 * runs has an ephemeral node under the cluster's leader latch: {@code <root>/<cluster-id>/leader/latch}
 * (one latch for all components, as Flink 1.15+ writes it; {@code <root>/<cluster-id>/latch} is
 * checked too), {@code <root>/<cluster-id>/leader/<component>/latch} (1.14) or
 * {@code <root>/<cluster-id>/leaderlatch/<component>} (up to 1.13). The leader's
 * address is in {@code <root>/<cluster-id>/leader/<component>/connection_info} (or
 * {@code .../leader/<component>} up to 1.14), written by an ObjectOutputStream as a UTF string (the
 * address) and the session id.
 */
public final class ZooKeeperLeader {
    private static final String SHADED = "org.apache.flink.shaded.zookeeper3.org.apache.zookeeper.";
    private static final int TIMEOUT_MS = 15_000;

    private ZooKeeperLeader() {}

    /**
     * The live contenders of the cluster's leader latch and the leaders' addresses, as one line; null
     * when no JobManager holds or waits for leadership.
     */
    public static String liveLeader(String quorum, String root, String clusterId) throws CheckpointSurgeonException {
        String base = ("/" + root + "/" + clusterId).replaceAll("/+", "/").replaceAll("/$", "");
        Object zk = connect(quorum, Message.of("cannot check that no JobManager holds the leadership (",
                Choice.SKIP_LEADER_CHECK, " skips the check)"));
        try {
            List<String> contenders = new ArrayList<>();
            for (String latch : new String[] {base + "/leader/latch", base + "/latch"}) {
                for (String c : children(zk, latch)) contenders.add(latch + "/" + c);
            }
            // 1.14: a latch per component, <root>/<cluster-id>/leader/<component>/latch
            for (String component : children(zk, base + "/leader")) {
                String latch = base + "/leader/" + component + "/latch";
                if (!component.equals("latch")) for (String c : children(zk, latch)) contenders.add(latch + "/" + c);
            }
            for (String component : children(zk, base + "/leaderlatch")) {
                for (String c : children(zk, base + "/leaderlatch/" + component)) {
                    contenders.add(base + "/leaderlatch/" + component + "/" + c);
                }
            }
            if (contenders.isEmpty()) return null;
            List<String> leaders = new ArrayList<>();
            for (String component : children(zk, base + "/leader")) {
                if (component.equals("latch")) continue;
                String address = address(data(zk, base + "/leader/" + component + "/connection_info"));
                if (address == null) address = address(data(zk, base + "/leader/" + component));
                if (address != null) leaders.add(component + " at " + address);
            }
            return "a JobManager holds or waits for the leadership of cluster '" + clusterId + "' in ZooKeeper "
                    + quorum + ": " + (leaders.isEmpty() ? "leader unknown" : "leader " + String.join(", ", leaders))
                    + "; latch node(s) " + String.join(", ", contenders);
        } finally {
            invoke(zk, "close");
        }
    }

    /**
     * The cluster's checkpoint pointers: the nodes {@code <root>/<cluster-id>/jobs/<job id>/checkpoints/<id>}
     * (Flink 1.14+; {@code <root>/<cluster-id>/checkpoints/<job id>/<id>} up to 1.13), each holding a
     * Java-serialized RetrievableStreamStateHandle of a completedCheckpoint file; a pointer's
     * {@code configMap} is the node's parent, its {@code key} the node's name.
     */
    public static List<KubernetesHa.Pointer> checkpointPointers(String quorum, String root, String clusterId)
            throws CheckpointSurgeonException {
        String base = ("/" + root + "/" + clusterId).replaceAll("/+", "/").replaceAll("/$", "");
        Object zk = connect(quorum, Message.of("cannot read the cluster's checkpoint pointers"));
        try {
            List<KubernetesHa.Pointer> out = new ArrayList<>();
            // 1.15's single leader latch; 1.14 has per-component latches (and the same /jobs layout)
            boolean since115 = data(zk, base + "/leader/latch") != null;
            for (String job : sorted(children(zk, base + "/jobs"))) {
                pointers(zk, base + "/jobs/" + job + "/checkpoints", job, since115, out);
            }
            for (String job : sorted(children(zk, base + "/checkpoints"))) {
                pointers(zk, base + "/checkpoints/" + job, job, false, out);
            }
            return out;
        } finally {
            invoke(zk, "close");
        }
    }

    /**
     * The pointers under {@code dir}. From Flink 1.15 a live node has a {@code locks} child, and one
     * without it is marked for deletion (Flink's {@code ZooKeeperStateHandleStore} skips it on
     * recovery); up to 1.14 the locks are the node's own children, and nothing marks a node. The
     * version shows in {@code since115} (the cluster's leader latch) or in a sibling's {@code locks}.
     */
    private static void pointers(Object zk, String dir, String job, boolean since115, List<KubernetesHa.Pointer> out)
            throws CheckpointSurgeonException {
        List<String> nodes = new ArrayList<>();
        List<List<String>> nodeChildren = new ArrayList<>();
        for (String node : sorted(children(zk, dir))) {
            try {
                Long.parseLong(node);
            } catch (NumberFormatException notOne) {
                continue; // not Flink's %019d checkpoint id
            }
            List<String> c = children(zk, dir + "/" + node);
            since115 |= c.contains(LOCKS);
            nodes.add(node);
            nodeChildren.add(c);
        }
        for (int i = 0; i < nodes.size(); i++) {
            String node = nodes.get(i);
            Object stat = newStat();
            byte[] handle = data(zk, dir + "/" + node, stat);
            if (handle == null) continue;
            boolean marked = since115 && !nodeChildren.get(i).contains(LOCKS);
            out.add(KubernetesHa.pointer(dir, node, Long.parseLong(node), job, handle)
                    .at(String.valueOf(version(stat)), handle, marked));
        }
    }

    /**
     * Removes the pointer's node, compare-and-set, the way Flink's ZooKeeperStateHandleStore removes
     * one: its {@code locks} child (1.15+; deleting it marks the node for deletion) and the node, in
     * one ZooKeeper transaction, the node at the data version the pointer was read at. A lock, an
     * ephemeral node of a JobManager's session ({@code <node>/locks/<id>} from 1.15, {@code
     * <node>/<id>} before), means a JobManager holds the checkpoint: Flink never removes a locked node,
     * and neither does this (LOCKED). Any change since the read fails the transaction; then nothing changed.
     */
    public static void remove(String quorum, KubernetesHa.Pointer p) throws CheckpointSurgeonException {
        String node = p.configMap + "/" + p.key;
        Object zk = connect(quorum, Message.of("cannot remove " + node));
        try {
            Object stat = newStat();
            if (data(zk, node, stat) == null) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.NOTHING_SELECTED, "ZooKeeper node "
                        + node + " is gone already: nothing to remove");
            }
            if (!String.valueOf(version(stat)).equals(p.version)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "ZooKeeper node " + node
                        + " changed since it was read (data version " + p.version + ", now " + version(stat)
                        + "): nothing was changed; run again");
            }
            List<String> locks = new ArrayList<>();
            boolean lockSubPath = false;
            for (String c : children(zk, node)) {
                if (c.equals(LOCKS)) {
                    lockSubPath = true;
                    for (String l : children(zk, node + "/" + LOCKS)) locks.add(node + "/" + LOCKS + "/" + l);
                } else {
                    locks.add(node + "/" + c);
                }
            }
            if (!locks.isEmpty()) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.LOCKED, "ZooKeeper node " + node
                        + " is locked by a JobManager's session (" + String.join(", ", locks) + "): a JobManager still"
                        + " holds checkpoint " + p.checkpointId + ". Flink removes no locked node; the lock goes with"
                        + " the session (high-availability.zookeeper.client.session-timeout after the JobManager died)");
            }
            Class<?> op = Class.forName(SHADED + "Op");
            Method delete = op.getMethod("delete", String.class, int.class);
            List<Object> ops = new ArrayList<>();
            if (lockSubPath) ops.add(delete.invoke(null, node + "/" + LOCKS, -1));
            ops.add(delete.invoke(null, node, version(stat)));
            zk.getClass().getMethod("multi", Iterable.class).invoke(zk, ops);
        } catch (InvocationTargetException e) {
            String cause = e.getCause().getClass().getSimpleName();
            if (cause.equals("BadVersionException") || cause.equals("NotEmptyException") || cause.equals("NoNodeException")) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.VALIDATION, "ZooKeeper node " + node
                        + ": the removal failed (" + e.getCause() + "): the node changed since it was read; nothing was"
                        + " changed (a ZooKeeper transaction is all or nothing); run again", e.getCause());
            }
            // a lost connection may or may not have committed the transaction
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "ZooKeeper node " + node + ": the"
                    + " removal's outcome is unknown (" + e.getCause() + "): the node is either removed whole or"
                    + " unchanged; run again to see which", e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "ZooKeeper node " + node + ": " + e, e);
        } finally {
            invoke(zk, "close");
        }
    }

    private static final String LOCKS = "locks";

    private static Object newStat() throws CheckpointSurgeonException {
        try {
            return Class.forName(SHADED + "data.Stat").getConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FLINK_MISSING, "ZooKeeper's Stat: " + e, e);
        }
    }

    private static int version(Object stat) throws CheckpointSurgeonException {
        return (Integer) invoke(stat, "getVersion");
    }

    private static List<String> sorted(List<String> names) {
        List<String> out = new ArrayList<>(names);
        java.util.Collections.sort(out);
        return out;
    }

    /**
     * The address an ObjectOutputStream wrote with writeUTF first (stream header, a block-data
     * record, then the string); null if the bytes are not that.
     */
    static String address(byte[] b) {
        if (b == null || b.length < 9 || (b[0] & 0xff) != 0xac || (b[1] & 0xff) != 0xed || b[4] != 0x77) return null;
        int len = ((b[6] & 0xff) << 8) | (b[7] & 0xff);
        if (8 + len > b.length) return null;
        String s = new String(b, 8, len, StandardCharsets.UTF_8);
        return s.chars().allMatch(c -> c >= 0x20 && c < 0x7f) ? s : null;
    }

    /** A connected client; {@code unreachable} says what cannot be done when it does not connect. */
    private static Object connect(String quorum, Message unreachable) throws CheckpointSurgeonException {
        try {
            Class<?> zkClass = Class.forName(SHADED + "ZooKeeper");
            Class<?> watcher = Class.forName(SHADED + "Watcher");
            Object noWatch = Proxy.newProxyInstance(watcher.getClassLoader(), new Class<?>[] {watcher},
                    (proxy, method, args) -> method.getName().equals("hashCode") ? 0
                            : method.getName().equals("equals") ? proxy == args[0]
                            : method.getName().equals("toString") ? "no watch" : null);
            Object zk = zkClass.getConstructor(String.class, int.class, watcher).newInstance(quorum, TIMEOUT_MS, noWatch);
            long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000L;
            while (!(Boolean) invoke(invoke(zk, "getState"), "isConnected")) {
                if (System.nanoTime() > deadline) {
                    invoke(zk, "close");
                    throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, Message.of("no connection to"
                            + " ZooKeeper " + quorum + " within " + TIMEOUT_MS / 1000 + " s: ", unreachable));
                }
                Thread.sleep(50);
            }
            return zk;
        } catch (ClassNotFoundException | LinkageError e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.FLINK_MISSING, "reading ZooKeeper HA"
                    + " needs Flink's jars (flink-shaded-zookeeper-3) on the class path: " + e, e);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "ZooKeeper " + quorum + ": " + cause(e), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "interrupted while connecting to ZooKeeper", e);
        }
    }

    @SuppressWarnings("unchecked")
    private static List<String> children(Object zk, String path) throws CheckpointSurgeonException {
        Object r = call(zk, "getChildren", path);
        return r == null ? List.of() : (List<String>) r;
    }

    private static byte[] data(Object zk, String path) throws CheckpointSurgeonException {
        return (byte[]) call(zk, "getData", path, null);
    }

    /** The node's data, and its version etc. into {@code stat}; null when the node does not exist. */
    private static byte[] data(Object zk, String path, Object stat) throws CheckpointSurgeonException {
        return (byte[]) call(zk, "getData", path, stat);
    }

    private static Object call(Object zk, String name, String path) throws CheckpointSurgeonException {
        return call(zk, name, path, null);
    }

    /** getChildren(path, false) or getData(path, false, stat); null when the node does not exist. */
    private static Object call(Object zk, String name, String path, Object stat) throws CheckpointSurgeonException {
        try {
            for (Method m : zk.getClass().getMethods()) {
                if (!m.getName().equals(name) || m.getParameterCount() != (name.equals("getData") ? 3 : 2)
                        || m.getParameterTypes()[0] != String.class || m.getParameterTypes()[1] != boolean.class) {
                    continue;
                }
                if (name.equals("getData") && !m.getParameterTypes()[2].getSimpleName().equals("Stat")) continue;
                return name.equals("getData") ? m.invoke(zk, path, false, stat) : m.invoke(zk, path, false);
            }
            throw new NoSuchMethodException(name);
        } catch (InvocationTargetException e) {
            if (e.getCause().getClass().getName().endsWith("KeeperException$NoNodeException")) return null;
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "ZooKeeper node " + path + ": " + e.getCause(), e);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "ZooKeeper node " + path + ": " + e, e);
        }
    }

    private static Object invoke(Object target, String name) throws CheckpointSurgeonException {
        try {
            return target.getClass().getMethod(name).invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, "ZooKeeper client: " + cause(e), e);
        }
    }

    private static Throwable cause(Throwable e) {
        return e instanceof InvocationTargetException && e.getCause() != null ? e.getCause() : e;
    }
}
