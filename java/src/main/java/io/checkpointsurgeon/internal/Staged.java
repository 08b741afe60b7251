package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.SurgeryPlan;
import java.util.List;

/**
 * What the native stage step of {@link Commit} wrote: the new metadata under a temporary name, the
 * new state files, and the relative state files the new metadata still shares with the old one.
 */
final class Staged {
    final SurgeryPlan plan;
    /** Operators the new metadata has (the read-back checks compare it). */
    final int operators;
    final String metadataTmp;
    final long metadataBytes;
    final List<String> written;
    final List<String> unchanged;

    Staged(SurgeryPlan plan, int operators, String metadataTmp, long metadataBytes, List<String> written,
            List<String> unchanged) {
        this.plan = plan;
        this.operators = operators;
        this.metadataTmp = metadataTmp;
        this.metadataBytes = metadataBytes;
        this.written = written;
        this.unchanged = unchanged;
    }
}
