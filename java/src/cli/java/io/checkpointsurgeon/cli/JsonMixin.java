package io.checkpointsurgeon.cli;

import picocli.CommandLine.Option;

/**
 * {@code --json} of the commands whose JSON needs no more words (diff, history, ha list, ha
 * repair); inspect, doctor and the surgeries say what their JSON holds in their own option.
 */
final class JsonMixin {
    @Option(names = "--json", description = "print JSON")
    boolean json;
}
