package io.checkpointsurgeon.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.Charset;

/**
 * The CLI in the test's JVM, its stdout and stderr captured: for the runs of a test that need no
 * process of their own (a process per run costs a JVM start and Flink's class loading).
 */
public final class InProcessCli {
    private InProcessCli() {}

    /** A run's exit code and output, decoded as it was written (the platform's charset). */
    public static final class Run {
        public final int code;
        public final String out;
        public final String err;

        Run(int code, String out, String err) {
            this.code = code;
            this.out = out;
            this.err = err;
        }

        @Override
        public String toString() {
            return "exit " + code + "\n" + out + err;
        }
    }

    public static synchronized Run run(String... args) {
        PrintStream oldOut = System.out, oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        Charset cs = Charset.defaultCharset();
        try {
            System.setOut(new PrintStream(out, true));
            System.setErr(new PrintStream(err, true));
            int code = Cli.run(args);
            return new Run(code, new String(out.toByteArray(), cs), new String(err.toByteArray(), cs));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }
}
