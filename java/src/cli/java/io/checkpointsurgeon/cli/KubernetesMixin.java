package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.flink.HaStore;
import io.checkpointsurgeon.flink.KubernetesHa;
import java.nio.file.Path;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The options of Kubernetes HA, shared by ha list and ha repair. */
final class KubernetesMixin {
    @Option(names = "--kubernetes", description = "Kubernetes HA: read the cluster's HA ConfigMaps (their"
            + " checkpointID-<n> pointers to the completedCheckpoint files; with ha repair --apply, the leader's"
            + " lease) through Flink's Kubernetes client (flink-kubernetes on the class path)")
    boolean kubernetes;

    @Option(names = "--kubeconfig", paramLabel = "FILE", description = "with --kubernetes: the kubeconfig (default:"
            + " $KUBECONFIG, ~/.kube/config, or the pod's service account)")
    Path kubeconfig;

    @Option(names = "--namespace", paramLabel = "NS", description = "with --kubernetes: kubernetes.namespace"
            + " (default: default)")
    String namespace;

    @Option(names = "--cluster-id", paramLabel = "ID", description = "kubernetes.cluster-id (with --kubernetes,"
            + " required), or high-availability.cluster-id (with --zookeeper-quorum; default: default)")
    String clusterId;

    /**
     * Where the cluster keeps its checkpoint pointers: its ConfigMaps with --kubernetes, else the
     * ZooKeeper at {@code zookeeperQuorum} when given (under {@code zookeeperRoot}), else null.
     */
    HaStore store(CommandLine.Model.CommandSpec spec, String zookeeperQuorum, String zookeeperRoot)
            throws CheckpointSurgeonException {
        KubernetesHa ha = connect(spec);
        if (ha != null) return HaStore.kubernetes(ha);
        return zookeeperQuorum == null ? null
                : HaStore.zooKeeper(zookeeperQuorum, zookeeperRoot, clusterId == null ? "default" : clusterId);
    }

    /** The cluster's ConfigMaps, or null without --kubernetes. */
    KubernetesHa connect(CommandLine.Model.CommandSpec spec) throws CheckpointSurgeonException {
        if (!kubernetes) {
            if (kubeconfig != null || namespace != null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--kubeconfig and --namespace go with --kubernetes");
            }
            return null;
        }
        if (clusterId == null) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--kubernetes needs --cluster-id (kubernetes.cluster-id)");
        }
        return KubernetesHa.connect(kubeconfig, namespace == null ? "default" : namespace, clusterId);
    }
}
