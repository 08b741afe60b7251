package io.checkpointsurgeon.testing;

import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;

import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A real ZooKeeper server (Curator's TestingServer with the unshaded ZooKeeper of the build) on a
 * free port; Flink's shaded ZooKeeper client talks to it. {@link #children} reads what Flink wrote
 * with a plain ZooKeeper client.
 */
public final class ZooKeeperServer implements AutoCloseable {
    private final TestingServer server;

    private ZooKeeperServer(TestingServer server) {
        this.server = server;
    }

    /** Starts a server that keeps its data in {@code dataDir}. */
    public static ZooKeeperServer start(Path dataDir) throws Exception {
        return new ZooKeeperServer(new TestingServer(-1, dataDir.toFile(), true));
    }

    /** {@code host:port}, for {@code high-availability.zookeeper.quorum}. */
    public String connectString() {
        return server.getConnectString();
    }

    /** The children of {@code node}, each with its data, by child name. */
    public Map<String, byte[]> children(String node) throws Exception {
        ZooKeeper client = client();
        try {
            Map<String, byte[]> out = new TreeMap<>();
            for (String child : client.getChildren(node, false)) {
                out.put(child, client.getData(node + "/" + child, false, null));
            }
            return out;
        } finally {
            client.close();
        }
    }

    /** Sets the data of {@code node} (any version): its data version goes up by one. */
    public void setData(String node, byte[] data) throws Exception {
        ZooKeeper client = client();
        try {
            client.setData(node, data, -1);
        } finally {
            client.close();
        }
    }

    private ZooKeeper client() throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper client = new ZooKeeper(connectString(), 30_000, ev -> {
            if (ev.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        if (!connected.await(30, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("no connection to ZooKeeper at " + connectString() + " within 30 s");
        }
        return client;
    }

    @Override
    public void close() throws Exception {
        server.close();
    }
}
