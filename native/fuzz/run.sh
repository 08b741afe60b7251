#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 60), seeded with the real fixtures, and prints
# one line per target: "fuzz <target>: <runs> runs, ok" or "... CRASH <artifact>". Exits 1 on a
# crash; the crashing input is left in native/fuzz/artifacts/<target>/ (turn it into a regression
# test by copying it to native/tests/regressions/).
# Needs the nightly toolchain and cargo-fuzz (installed here when missing).
#   native/fuzz/run.sh 600          # a long run
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked >/dev/null 2>&1 || { echo "fuzz: cannot install cargo-fuzz" >&2; exit 2; }
fi
cargo +nightly fuzz build -O >/dev/null 2>&1 || { echo "fuzz: build failed (nightly toolchain?)" >&2; exit 2; }
for t in metadata surgery; do
    mkdir -p "fuzz/corpus/$t"
    for f in ../tests/fixtures/*/*/_metadata; do
        n=$(echo "$f" | sed 's|../tests/fixtures/||; s|/|_|g')
        [ -f "fuzz/corpus/$t/$n" ] || cp "$f" "fuzz/corpus/$t/$n"
    done
done
rc=0
for t in metadata opstate compressed surgery structured wire keyed keyed_surgery; do
    mkdir -p "fuzz/corpus/$t"
    log=$(mktemp)
    cargo +nightly fuzz run -O "$t" -- -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1
    status=$?
    runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]*')
    if [ $status -eq 0 ]; then
        echo "fuzz $t: ${runs:-0} runs, ok"
    else
        rc=1
        echo "fuzz $t: CRASH $(grep -o 'Test unit written to [^ ]*' "$log" | tail -1)"
        grep -m3 -E 'panicked at|ERROR' "$log"
    fi
    rm -f "$log"
done
exit $rc
