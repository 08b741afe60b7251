package io.checkpointsurgeon.ha;

import io.checkpointsurgeon.testing.ZooKeeperServer;
import org.junit.After;
import org.junit.Before;
import org.junit.Rule;
import org.junit.rules.TemporaryFolder;

/**
 * A test on a real ZooKeeper and a Flink ZooKeeper-HA cluster on it: both new for each test method
 * (the jobs' shared counters reset), and closed after it, the cluster first.
 */
public abstract class ZooKeeperHaCase {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    ZooKeeperServer zk;
    HaCluster cluster;

    @Before
    public void startZooKeeperHa() throws Exception {
        HaJobs.resetAll();
        zk = ZooKeeperServer.start(tmp.newFolder("zk").toPath());
        cluster = new HaCluster(tmp.newFolder("flink").toPath(), zk.connectString());
    }

    @After
    public void closeZooKeeperHa() throws Exception {
        try {
            if (cluster != null) cluster.close();
        } finally {
            if (zk != null) zk.close();
        }
    }
}
