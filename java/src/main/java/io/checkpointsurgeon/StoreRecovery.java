package io.checkpointsurgeon;

import io.checkpointsurgeon.flink.FlinkFileSystems;
import io.checkpointsurgeon.flink.FlinkJudge;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code recover} on a Flink file system: {@link Recovery}'s verdicts on a {@link StoreScan}. Each
 * {@code _metadata} is read whole (small) and judged by the native parser, the doctor's restore
 * checks on it and Flink's loader; every file it references gets one status request (on S3 a
 * HEAD), at most the pool's size at once: nothing else is downloaded, so only the operator state
 * streams inline in {@code _metadata} are read; those in files are checked by their size.
 */
final class StoreRecovery {
    private StoreRecovery() {}

    static RecoverReport run(List<String> roots, Map<String, Map.Entry<Long, String>> pointers,
                             int parallelism) throws CheckpointSurgeonException {
        try (StoreScan.Pool pool = new StoreScan.Pool(parallelism)) {
            StoreScan scan = StoreScan.list(roots, pool);
            Recovery.Walk<StoreScan.Meta, String> walk = Recovery.newestFirst(scan.metadata,
                    m -> FlinkFileSystems.normalize(m.dir), m -> m.dir, m -> Recovery.notExamined(m.dir, m.id),
                    m -> examine(m, pool));
            return Recovery.report(scan.roots, walk.candidates, walk.best, pointers, target -> {
                if (!FlinkFileSystems.isRemote(target)) return null; // not under these roots
                String dir = FlinkFileSystems.normalize(target);
                if (dir.endsWith("/_metadata")) dir = StoreScan.parent(dir);
                RecoverReport.Candidate c = walk.examined(dir);
                if (c == null) {
                    boolean under = scan.roots.stream().anyMatch(r -> FlinkFileSystems.within(target, r));
                    return under ? "the checkpoint " + target + " has no _metadata" : null;
                }
                return Recovery.problem(c);
            });
        }
    }

    /** The operator state streams held in {@code _metadata} itself: they were read with it. */
    private static void inlineStreams(InspectReport r, String metadata, List<RecoverReport.Reason> reasons) {
        for (InspectReport.OperatorInfo op : r.operators()) {
            for (InspectReport.SubtaskInfo s : op.subtasks()) {
                for (InspectReport.OperatorStateHandleInfo h : s.operatorStateHandles()) {
                    if (!h.inline() || h.streamError().isEmpty()) continue;
                    reasons.add(new RecoverReport.Reason(metadata, String.format(Locale.ROOT, "STATE_STREAM_UNREADABLE: the"
                            + " operator state of operator %s subtask %d cannot be read, so a restore fails: %s", op.id(),
                            s.index(), h.streamError())));
                }
            }
        }
    }

    private static RecoverReport.Candidate examine(StoreScan.Meta m, StoreScan.Pool pool) {
        List<RecoverReport.Reason> reasons = new ArrayList<>();
        String metadata = m.metadata();
        int files = 0;
        long bytes = 0;
        if (m.file.size == 0) {
            reasons.add(new RecoverReport.Reason(metadata, "is empty, expected Flink's checkpoint metadata"));
        } else {
            try {
                byte[] md = StoreScan.read(m);
                InspectReport r = CheckpointSurgeon.inspect(md, metadata, null);
                for (CheckpointSurgeon.Finding f : Doctor.examine(r, metadata)) {
                    // the operator state streams in files are not read here (their size is checked below)
                    if (f.code() == CheckpointSurgeon.Finding.Code.STATE_STREAM_UNREADABLE) continue;
                    if (f.severity() == CheckpointSurgeon.Finding.Severity.ERROR && Recovery.RESTORE_FAILS.contains(f.code())) {
                        reasons.add(new RecoverReport.Reason(metadata, f.code() + ": " + f.message()));
                    }
                }
                inlineStreams(r, metadata, reasons);
                if (FlinkJudge.flinkAvailable()) {
                    try {
                        FlinkJudge.validate(md, metadata, m.dir, r.operators().size());
                    } catch (CheckpointSurgeonException e) {
                        reasons.add(new RecoverReport.Reason(metadata, "FLINK_REJECTS_METADATA: Flink "
                                + FlinkJudge.flinkVersion() + " cannot load this _metadata: " + e.getMessage()));
                    }
                }
                List<CheckpointScan.Ref> refs = StoreScan.references(m, md);
                List<String> problems = pool.map(refs, Recovery::remoteProblem, "status requests");
                int more = 0;
                for (int i = 0; i < refs.size(); i++) {
                    files++;
                    bytes += refs.get(i).file.size();
                    if (problems.get(i) == null) continue;
                    if (reasons.size() < Recovery.MAX_REASONS) {
                        reasons.add(new RecoverReport.Reason(refs.get(i).name, problems.get(i)));
                    } else {
                        more++;
                    }
                }
                if (more > 0) reasons.add(new RecoverReport.Reason(m.dir, more + " more referenced files missing or short"));
            } catch (CheckpointSurgeonException e) {
                String msg = String.valueOf(e.getMessage());
                reasons.add(new RecoverReport.Reason(metadata, msg.startsWith(metadata + ": ")
                        ? msg.substring(metadata.length() + 2) : msg));
            }
        }
        return new RecoverReport.Candidate(m.dir, m.id, reasons.isEmpty() ? RecoverReport.Verdict.RESTORABLE
                : RecoverReport.Verdict.BROKEN, files, bytes, 0, reasons);
    }
}
