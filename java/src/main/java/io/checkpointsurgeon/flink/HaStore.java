package io.checkpointsurgeon.flink;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a cluster keeps its checkpoint pointers: a job's ZooKeeper nodes or its HA ConfigMaps. One
 * face over {@link ZooKeeperLeader} and {@link KubernetesHa} for what reads, names and removes a
 * pointer; closing it closes the Kubernetes client.
 */
public final class HaStore implements AutoCloseable {
    private final KubernetesHa kubernetes;
    private final String quorum;
    private final String root;
    private final String clusterId;

    private HaStore(KubernetesHa kubernetes, String quorum, String root, String clusterId) {
        this.kubernetes = kubernetes;
        this.quorum = quorum;
        this.root = root;
        this.clusterId = clusterId;
    }

    /** The ConfigMaps of a connected cluster; the store owns {@code ha} from here on. */
    public static HaStore kubernetes(KubernetesHa ha) {
        return new HaStore(ha, null, null, ha.clusterId);
    }

    /** The nodes under {@code root}/{@code clusterId} of the ZooKeeper at {@code quorum}. */
    public static HaStore zooKeeper(String quorum, String root, String clusterId) {
        return new HaStore(null, quorum, root, clusterId);
    }

    /** Whether the pointers are ConfigMap keys (else ZooKeeper nodes). */
    public boolean isKubernetes() {
        return kubernetes != null;
    }

    /** Every {@code checkpointID-<n>} pointer of every job, with its version and exact value. */
    public List<KubernetesHa.Pointer> checkpointPointers() throws CheckpointSurgeonException {
        return kubernetes != null ? kubernetes.checkpointPointers() : ZooKeeperLeader.checkpointPointers(quorum, root, clusterId);
    }

    /**
     * The pointers whose completedCheckpoint file is a local file that exists and that Flink has not
     * marked for deletion, by {@link #name}, in the store's order.
     */
    public Map<String, KubernetesHa.Pointer> pointersToLocalFiles() throws CheckpointSurgeonException {
        Map<String, KubernetesHa.Pointer> found = new LinkedHashMap<>();
        for (KubernetesHa.Pointer p : checkpointPointers()) {
            if (p.markedForDeletion || p.file == null || !Files.isRegularFile(p.file)) continue;
            found.put(name(p), p);
        }
        return found;
    }

    /** The live leader holding the cluster's leadership, described, or null when none holds it. */
    public String liveLeader() throws CheckpointSurgeonException {
        return kubernetes != null ? kubernetes.liveLeader() : ZooKeeperLeader.liveLeader(quorum, root, clusterId);
    }

    /** Removes {@code p}, compare-and-set on the version it was read at. */
    public void remove(KubernetesHa.Pointer p) throws CheckpointSurgeonException {
        if (kubernetes != null) {
            kubernetes.remove(p);
        } else {
            ZooKeeperLeader.remove(quorum, p);
        }
    }

    /** The pointer as the store names it: {@code ConfigMap <map> <key>} or {@code ZooKeeper node <job node>/<key>}. */
    public String name(KubernetesHa.Pointer p) {
        return kubernetes != null ? "ConfigMap " + p.configMap + " " + p.key : "ZooKeeper node " + p.configMap + "/" + p.key;
    }

    /** How to take {@code p} away from this store. */
    public PointerRemoval.Target target(KubernetesHa.Pointer p) {
        return new PointerRemoval.Target(kind(), clusterId, p.jobId, p.checkpointId, name(p), p.file);
    }

    /** How to take away the pointer of this store that names the completedCheckpoint file {@code info}. */
    public PointerRemoval.Target target(CheckpointSurgeon.HaFileInfo info) {
        return new PointerRemoval.Target(kind(), clusterId, info.jobId(), info.checkpointId(), null, info.file());
    }

    private PointerRemoval.Target.Store kind() {
        return kubernetes != null ? PointerRemoval.Target.Store.KUBERNETES : PointerRemoval.Target.Store.ZOOKEEPER;
    }

    /** What the store's pointers are, in the plural: for messages that find none. */
    String pointersName() {
        return kubernetes != null ? "HA ConfigMaps" : "ZooKeeper nodes";
    }

    /** The suffix of the file that keeps a removed pointer's value. */
    String valueSuffix() {
        return kubernetes != null ? ".configmap-value" : ".zookeeper-node";
    }

    @Override
    public void close() {
        if (kubernetes != null) kubernetes.close();
    }
}
