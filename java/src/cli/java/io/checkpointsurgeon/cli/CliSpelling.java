package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.CheckpointSurgeon;
import io.checkpointsurgeon.CheckpointSurgeonException;
import io.checkpointsurgeon.Choice;
import io.checkpointsurgeon.Message;
import io.checkpointsurgeon.internal.Json;

/**
 * How the CLI names each {@link Choice} the library's messages name: by its own option or command,
 * so that an error, a finding and a blocker read as the user types them. The one place the CLI
 * renders the library's messages from.
 */
final class CliSpelling {
    private CliSpelling() {}

    static String of(Choice choice) {
        switch (choice) {
            case SKIP_LEADER_CHECK:
                return "--force";
            case OLDER_THAN:
                return "--older-than";
            case ALSO_REFERENCED_BY:
                return "--also-referenced-by";
            case IN_PLACE:
                return "--in-place";
            case OUTPUT:
                return "--output";
            case REFERENCE_UNCHANGED:
                return "--reference-unchanged";
            case COPY_UNCHANGED:
                return "--copy-unchanged";
            case ON_FLINK:
                return "--on-flink";
            case PLUGINS:
                return "--plugins DIR";
            case KEYED_HISTORY:
                return "history --keyed";
            case MIGRATE_KAFKA_LEGACY:
                return "checkpoint-surgeon kafka migrate-legacy";
            case KAFKA_SURGERIES:
                return "the kafka commands";
            case REMOVE_KEYED_STATE:
                return "remove-keyed-state";
            case CLEAN_LEFTOVERS:
                return "clean-leftovers";
            default:
                throw new AssertionError(choice);
        }
    }

    /** {@code message} as the CLI says it. */
    static String text(Message message) {
        return message.render(CliSpelling::of);
    }

    /** The message of {@code e} as the CLI says it. */
    static String message(Throwable e) {
        return text(Message.of(e));
    }

    /**
     * The CLI's word for an enum constant in JSON: a {@link Choice} as above; a remedy's
     * MIGRATE_KAFKA_LEGACY is the command {@code kafka migrate-legacy}, as releases before the enum
     * wrote it (the hook of {@code watch --on-finding} reads it); any other its library spelling.
     */
    static String of(Enum<?> constant) {
        if (constant instanceof Choice) return of((Choice) constant);
        return constant == CheckpointSurgeon.Remedy.Action.MIGRATE_KAFKA_LEGACY ? "kafka migrate-legacy" : constant.toString();
    }

    /** {@code value} as JSON, its messages and enum constants as the CLI says them. */
    static String json(Object value) {
        return Json.write(value, CliSpelling::of);
    }
}
