package io.checkpointsurgeon.internal;

import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.ProgressListener;
import io.checkpointsurgeon.cli.Cli;

/**
 * Fault injection for the tests of the commit sequence, through its package-private seam
 * ({@link Commit#testHook}): stall or fail a run when a step starts, e.g. {@code validate} or
 * {@code switch:2} (the third unit's switch); {@code oom:stage} throws an OutOfMemoryError there;
 * {@code report} (as a CLI process) stalls the CLI's first write to stdout, after the run returned.
 * In the test JVM: {@link #failAt}, {@link #clear}. As a CLI process: this class's {@code main}
 * takes the faults from the system properties {@value #STALL_AT} and {@value #FAIL_AT}, then runs
 * the CLI ({@code CliProcess} starts it when a test gives one of them). Test code only: the
 * production classes hold no hook of their own.
 */
public final class CommitFaults {
    public static final String STALL_AT = "checkpointsurgeon.test.stallAt";
    public static final String FAIL_AT = "checkpointsurgeon.test.failAt";

    private CommitFaults() {}

    /** The CLI with the faults of the system properties. */
    public static void main(String[] args) {
        install(System.getProperty(STALL_AT), System.getProperty(FAIL_AT));
        if ("report".equals(System.getProperty(STALL_AT))) System.setOut(stallingFirstWrite(System.out));
        Cli.main(args);
    }

    /** {@code out}, whose first write waits until the JVM shuts down (at most 10 minutes). */
    private static java.io.PrintStream stallingFirstWrite(java.io.PrintStream out) {
        return new java.io.PrintStream(new java.io.FilterOutputStream(out) {
            private boolean stalled;

            @Override
            public void write(byte[] b, int off, int len) throws java.io.IOException {
                stall();
                out.write(b, off, len);
            }

            @Override
            public void write(int b) throws java.io.IOException {
                stall();
                out.write(b);
            }

            private void stall() {
                if (stalled) return;
                stalled = true;
                System.err.println("commit: stalling at report");
                System.err.flush();
                untilShutdown();
            }
        }, true);
    }

    /** Waits until the JVM shuts down (the shutdown hook asks the runs to stop), at most 10 minutes. */
    private static void untilShutdown() {
        for (int i = 0; i < 60_000 && !Commit.stopping(); i++) {
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Fails every run of this JVM at {@code spec} (a step, {@code step:index}, or {@code oom:step}). */
    public static void failAt(String spec) {
        install(null, spec);
    }

    /** Removes the faults. */
    public static void clear() {
        Commit.testHook = null;
    }

    private static void install(String stallAt, String failAt) {
        Commit.testHook = (step, index, unit) -> {
            if (matches(stallAt, step, index)) {
                System.err.println("commit: stalling at " + step + " " + unit);
                // (the run then stops at this safe point)
                untilShutdown();
            }
            if (failAt != null && failAt.startsWith("oom:") && matches(failAt.substring(4), step, index)) {
                throw new OutOfMemoryError("injected at " + step + " (" + FAIL_AT + ")");
            }
            if (matches(failAt, step, index)) {
                throw new CheckpointSurgeonException(CheckpointSurgeonException.Code.IO, unit + ": injected failure at "
                        + step + " (" + FAIL_AT + ")");
            }
        };
    }

    private static boolean matches(String spec, ProgressListener.CommitStep step, int index) {
        if (spec == null) return false;
        String[] p = spec.split(":");
        return p[0].equals(step.toString()) && (p.length == 1 || Integer.parseInt(p[1]) == index);
    }
}
