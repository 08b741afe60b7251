package io.checkpointsurgeon;

import java.util.Locale;

/** How the library's enums are spelled in JSON and text: the constant's name in lower case, {@code _} as {@code -}. */
final class Spelling {
    private Spelling() {}

    static String of(Enum<?> constant) {
        return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
