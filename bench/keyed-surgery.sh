#!/usr/bin/env bash
# Benchmark (issue 28): remove-keyed-state against the State Processor API program that rebuilds
# the savepoint without the state, and against cp of the same bytes, on one canonical savepoint
# written by real Flink 1.20.3, in one run, the routes alternating run by run. Each route is a
# fresh process (wall time and peak RSS from /usr/bin/time), warm page cache. Not part of any test
# lane.
#
#   bash bench/keyed-surgery.sh [--dir DIR] [--keys N] [--runs N] [--no-build] [--native]
#
# Options:
#   --dir DIR    inputs and outputs (default /tmp/checkpoint-surgeon-keyed-surgery-bench)
#   --keys N     keys of the canonical savepoint (default 3400000: ~1 GiB; per key a 200-byte value
#                state "value", a list state of 2 and a map state of 3, parallelism 2)
#   --runs N     measured runs per route (default 3)
#   --native     also the native rewrite without the JVM (bench/rust bench_keyed) on savepoints grown
#                from the fixtures, against cp+sync
# Routes:
#   surgeon   checkpoint-surgeon remove-keyed-state SP --state value --apply --output OUT
#   spa       the State Processor API reads list and map of every key and writes a new savepoint with
#             the operator rebuilt from them (KeyedBench spa-remove, -Xmx12g)
#   cp        cp -r SP OUT && sync (the rewrite syncs every file it writes)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIR=/tmp/checkpoint-surgeon-keyed-surgery-bench
KEYS=3400000
RUNS=3
BUILD=1
NATIVE=0
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR=$2; shift ;;
        --keys) KEYS=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --no-build) BUILD=0 ;;
        --native) NATIVE=1 ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 1 ;;
    esac
    shift
done
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 1; }
log() { echo "[keyed-surgery bench $(date +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }
if [ "$BUILD" = 1 ]; then
    log "building (gradle jar installDist benchClasspath)"
    gradle --no-daemon -q jar installDist benchClasspath >&2 || { echo "gradle build failed" >&2; exit 1; }
fi
CP=$(cat build/bench/classpath.txt)
CLI=$ROOT/build/install/checkpoint-surgeon/bin/checkpoint-surgeon
JAVA=(java --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT=$DIR/out
trap 'rm -rf "$OUT"' EXIT

SP=$DIR/canonical-$KEYS
if [ ! -f "$SP/_metadata" ]; then
    log "writing the canonical savepoint ($KEYS keys) with the State Processor API"
    rm -rf "$SP"
    "${JAVA[@]}" -Xmx12g -cp "$CP" io.checkpointsurgeon.bench.KeyedBench canonical "file://$SP" "$KEYS" >&2 || exit 1
fi
BYTES=$(du -sb "$SP" | cut -f1)
log "input: $SP, $BYTES bytes"

# measure ROUTE CMD...: one fresh process into an empty $OUT; prints "route wall_s peak_rss_kb"
measure() {
    local route=$1; shift
    rm -rf "$OUT"; sync
    if /usr/bin/time -o "$DIR/time" -f "%e %M" "$@" > "$DIR/log" 2>&1; then
        echo "$route $(cat "$DIR/time")"
    else
        echo "$route FAILED (see $DIR/log-$route)"; cp "$DIR/log" "$DIR/log-$route"
    fi
}
for f in "$SP"/*; do cat "$f" > /dev/null; done
echo "input_bytes $BYTES"
echo "route wall_s peak_rss_kb"
for run in $(seq "$RUNS"); do
    measure cp sh -c "cp -r '$SP' '$OUT' && sync"
    measure surgeon "$CLI" remove-keyed-state "$SP" --state value --apply --output "$OUT"
    measure spa "${JAVA[@]}" -Xmx12g -cp "$CP" io.checkpointsurgeon.bench.KeyedBench spa-remove "file://$SP" "file://$OUT"
done
# the last surgeon output, for the record
measure surgeon "$CLI" remove-keyed-state "$SP" --state value --apply --output "$OUT" > /dev/null
grep -E "keyed state:|validation" "$DIR/log" >&2

[ "$NATIVE" = 1 ] || exit 0
# ---- the native rewrite alone (no JVM), on savepoints grown from the fixtures to --mib
export CARGO_TARGET_DIR=$ROOT/target/bench-rust
cargo build --release -q --manifest-path bench/rust/Cargo.toml
B=$CARGO_TARGET_DIR/release/bench_keyed
MIB=$(( BYTES / 1048576 ))
F=$ROOT/tests/fixtures/2.3.0
G=$DIR/grown
rm -rf "$G"; mkdir -p "$G"
"$B" grow "$F/keyed-all-savepoint-rocksdb" "$G/plain" "$MIB"
"$B" grow "$F/keyed-all-savepoint-rocksdb-compressed" "$G/snappy" "$MIB"
streams() { find "$1" -maxdepth 1 -type f -size +1M ! -name _metadata; }
echo "input threads route wall_s peak_rss_kb"
for input in plain snappy; do
    in=$G/$input
    for f in $(streams "$in"); do cat "$f" > /dev/null; done
    for run in $(seq "$RUNS"); do
        rm -rf "$OUT"; mkdir "$OUT"; sync
        /usr/bin/time -o "$DIR/t" -f "%e %M" sh -c "cp $(streams "$in" | tr '\n' ' ') $OUT/ && sync"
        echo "$input - cp+sync $(cat "$DIR/t")"
        rm -rf "$OUT"; sync
        /usr/bin/time -o "$DIR/t" -f "%e %M" "$B" remove "$in" "$OUT" value-state 1 > "$DIR/log"
        echo "$input 1 remove $(cat "$DIR/t")   # $(cat "$DIR/log")"
    done
done
rm -rf "$G"
