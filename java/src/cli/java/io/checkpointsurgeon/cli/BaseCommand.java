package io.checkpointsurgeon.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine;

/** What every command that runs has: its picocli model, its output streams, and usage errors. */
abstract class BaseCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** The streams of a command that runs without picocli's model ({@link Cli}'s plain path), else null. */
    PrintWriter plainOut, plainErr;

    PrintWriter out() {
        return plainOut != null ? plainOut : spec.commandLine().getOut();
    }

    PrintWriter err() {
        return plainErr != null ? plainErr : spec.commandLine().getErr();
    }

    /** A usage error (exit 1, with the command's usage). */
    CommandLine.ParameterException usage(String message) {
        return new CommandLine.ParameterException(spec.commandLine(), message);
    }
}
