package io.checkpointsurgeon.cli;

import io.checkpointsurgeon.Surgery;

/** What the keyed-state surgeries share: {@code --threads}. */
final class KeyedOptions {
    private KeyedOptions() {}

    static Surgery threads(Surgery s, Integer threads) {
        return threads == null ? s : s.threads(threads);
    }
}
