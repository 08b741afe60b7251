#!/usr/bin/env bash
# Figures of the native keyed rewrite (issue 28) without the JVM: remove-keyed-state on canonical
# savepoints grown from Flink's fixtures to ~1 GiB (bench/rust `bench_keyed grow`), against `cp`
# of the same stream files followed by `sync` (the stage syncs every file it writes). Each route
# is a fresh process; wall time and peak RSS from /usr/bin/time; warm page cache; the routes
# alternate run by run. The JVM-side bench (against the State Processor API) is issue 28's Java
# phase.
#
#   bash bench/keyed-surgery.sh [--dir /tmp/keyed-bench] [--mib 1024] [--runs 3]
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIR=/tmp/keyed-bench
MIB=1024
RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR=$2; shift ;;
        --mib) MIB=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        *) echo "unknown option $1" >&2; exit 1 ;;
    esac
    shift
done
export CARGO_TARGET_DIR=$ROOT/target/bench-rust
cargo build --release -q --manifest-path bench/rust/Cargo.toml
B=$CARGO_TARGET_DIR/release/bench_keyed
rm -rf "$DIR"; mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
F=$ROOT/tests/fixtures/2.3.0
"$B" grow "$F/keyed-all-savepoint-rocksdb" "$DIR/plain" "$MIB"
"$B" grow "$F/keyed-all-savepoint-rocksdb-compressed" "$DIR/snappy" "$MIB"
"$B" grow "$F/keyed-all-savepoint-heap" "$DIR/two" "$MIB"

# the key-groups stream files of an input: every file but _metadata over 1 MiB
streams() { find "$1" -maxdepth 1 -type f -size +1M ! -name _metadata; }

echo "input threads route wall_s peak_rss_kb"
for input in plain snappy two; do
    in=$DIR/$input
    for f in $(streams "$in"); do cat "$f" > /dev/null; done
    for run in $(seq "$RUNS"); do
        rm -rf "$DIR/out"; mkdir "$DIR/out"; sync
        /usr/bin/time -o "$DIR/t" -f "%e %M" sh -c "cp $(streams "$in" | tr '\n' ' ') $DIR/out/ && sync"
        echo "$input - cp+sync $(cat "$DIR/t")"
        for threads in 1 2; do
            [ "$input" = two ] || [ "$threads" = 1 ] || continue
            rm -rf "$DIR/out"; sync
            /usr/bin/time -o "$DIR/t" -f "%e %M" "$B" remove "$in" "$DIR/out" value-state "$threads" > "$DIR/log"
            echo "$input $threads remove $(cat "$DIR/t")   # $(cat "$DIR/log")"
        done
    done
done
