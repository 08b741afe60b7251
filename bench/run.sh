#!/usr/bin/env bash
# Benchmark (issue 7): checkpoint-surgeon's native surgery against Flink's own Java route, on the
# same bloated checkpoints, from ~10 MB to beyond 2 GiB of _metadata. Not part of `gradle test`.
#
#   bash bench/run.sh                 everything: build, generate, measure, write the report
#   bash bench/run.sh --dir /big/tmp --runs 5 --big-runs 3 --wait-load 1.0
#
# Options:
#   --dir DIR        where inputs and outputs go (default /tmp/checkpoint-surgeon-bench); needs
#                    ~2x the largest input free (the cp route copies it)
#   --runs N         measured runs per route and input (default 3)
#   --big-runs N     runs for inputs over 2 GiB (default 1)
#   --sizes "A B"    file-backed _metadata sizes in MiB (default "10 100 1024 2253"; 2253 MiB = 2.2 GiB > 2^31 B)
#   --inline "A B"   inline (ByteStreamStateHandle) sizes in MiB (default "10 100")
#   --absolute "A"   sizes with absolute file handles (default "100")
#   --parallelism P  subtasks of the bloated operator (default 32)
#   --no-ladder      skip the smallest-working -Xmx search for Flink's route
#   --wait-load L    before each input, wait until the 1-minute load is below L ...
#   --wait-max S     ... but at most S seconds (default 600)
#   --keep           keep the generated inputs (they are deleted at the end otherwise, also on error)
#   --no-build       use the existing build (build/bench/classpath.txt, build/install, target/bench-rust)
#   --no-report      measure only (results stay in DIR/results.tsv)
#
# Routes, each on the same input, each a fresh process (wall time from the shell, peak RSS from
# /usr/bin/time -v; outputs go to a fresh directory, are deleted and `sync`ed after every run):
#   cli-purge          checkpoint-surgeon remove-state IN --state S --apply --output OUT   (installDist launcher)
#   cli-metadata-only  the same with --metadata-only (what Flink's route does: the streams keep the state)
#   rust-purge         the same surgery in-process in Rust, no JVM (bench/rust: bench_apply)
#   bytes-purge        Java reads _metadata into a byte[], NativeBridge.stageMirrored, writes the result
#   bytes-metadata-only  the same, --metadata-only
#   flink              Checkpoints.loadCheckpointMetadata, drop S from every handle map, storeCheckpointMetadata
#   cp                 cp IN/_metadata OUT/_metadata (the physical floor: read + write every byte, no fsync)
# Results: DIR/results.tsv, DIR/variants.tsv; report: BENCHMARKS.md and docs/bench-chart.svg.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

DIR=/tmp/checkpoint-surgeon-bench
RUNS=3
BIG_RUNS=1
SIZES="10 100 1024 2253"
INLINE_SIZES="10 100"
ABS_SIZES="100"
PARALLELISM=32
LADDER=1
WAIT_LOAD=""
WAIT_MAX=600
KEEP=0
BUILD=1
REPORT=1
STATE=topic-partition-offset-states

while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --big-runs) BIG_RUNS=$2; shift ;;
        --sizes) SIZES=$2; shift ;;
        --inline) INLINE_SIZES=$2; shift ;;
        --absolute) ABS_SIZES=$2; shift ;;
        --parallelism) PARALLELISM=$2; shift ;;
        --no-ladder) LADDER=0 ;;
        --wait-load) WAIT_LOAD=$2; shift ;;
        --wait-max) WAIT_MAX=$2; shift ;;
        --keep) KEEP=1 ;;
        --no-build) BUILD=0 ;;
        --no-report) REPORT=0 ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 1 ;;
    esac
    shift
done

if [ ! -x /usr/bin/time ]; then
    echo "/usr/bin/time is missing: apt-get install time" >&2
    exit 1
fi

log() { echo "[bench $(date +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }

# ---- build ------------------------------------------------------------------------------------
if [ "$BUILD" = 1 ]; then
    log "building (gradle jar installDist benchClasspath; cargo bench/rust)"
    gradle --no-daemon -q jar installDist benchClasspath >/dev/null || { echo "gradle build failed" >&2; exit 1; }
    CARGO_TARGET_DIR=$ROOT/target/bench-rust cargo build --release --quiet --manifest-path bench/rust/Cargo.toml \
        || { echo "cargo build failed" >&2; exit 1; }
fi
CP=$(cat build/bench/classpath.txt)
CLI=$ROOT/build/install/checkpoint-surgeon/bin/checkpoint-surgeon
RUST=$ROOT/target/bench-rust/release/bench_apply
JAVA_Q=(-Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
for f in "$CLI" "$RUST"; do
    [ -x "$f" ] || { echo "missing $f (run without --no-build)" >&2; exit 1; }
done

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
INPUTS=$DIR/inputs
OUT=$DIR/out
RESULTS=$DIR/results.tsv
VARIANTS=$DIR/variants.tsv
ENVFILE=$DIR/env.txt

cleanup() {
    rm -rf "$OUT" "$OUT.metadata"
    if [ "$KEEP" = 0 ]; then
        rm -rf "$INPUTS"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

printf 'variant\tlayout\tinput_bytes\troute\trun\twall_s\trss_kb\trc\tload1\tnote\n' >"$RESULTS"
printf 'variant\tlayout\tmetadata_bytes\tparallelism\telements\tstream_file_bytes\tgenerate_s\n' >"$VARIANTS"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "command: bash bench/run.sh --dir $DIR --runs $RUNS --big-runs $BIG_RUNS --sizes \"$SIZES\" --inline \"$INLINE_SIZES\" --absolute \"$ABS_SIZES\" --parallelism $PARALLELISM$([ "$LADDER" = 0 ] && echo ' --no-ladder')${WAIT_LOAD:+ --wait-load $WAIT_LOAD --wait-max $WAIT_MAX}"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores)"
    echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "disk: $(df -hT "$DIR" | awk 'NR==2 {print $2 " on " $1 ", " $5 " free of " $3}')"
    echo "kernel: $(uname -r)"
    echo "java: $(java -version 2>&1 | head -1)"
    echo "rustc: $(rustc --version)"
    echo "load_start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$ENVFILE"

wait_load() {
    [ -n "$WAIT_LOAD" ] || return 0
    local waited=0
    while awk -v l="$WAIT_LOAD" '{exit !($1 >= l)}' /proc/loadavg && [ $waited -lt "$WAIT_MAX" ]; do
        [ $((waited % 60)) = 0 ] && log "waiting for load < $WAIT_LOAD"
        sleep 10
        waited=$((waited + 10))
    done
}

# measure VARIANT LAYOUT INPUT_BYTES ROUTE RUN -- command...
measure() {
    local variant=$1 layout=$2 bytes=$3 route=$4 run=$5
    shift 6
    rm -rf "$OUT"
    local tf="$DIR/time.txt" of="$DIR/stdout.txt"
    local load1
    load1=$(cut -d' ' -f1 /proc/loadavg)
    local t0 t1 rc
    t0=$(date +%s%N)
    /usr/bin/time -v -o "$tf" "$@" >"$of" 2>&1
    rc=$?
    t1=$(date +%s%N)
    local rss note
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tf")
    note=$(grep -E '^(rust|bytes|flink) ' "$of" | head -1)
    if [ $rc != 0 ] && [ -z "$note" ]; then
        note=$(grep -vE '^\[|^(openjdk|OpenJDK)' "$of" | grep -m1 -iE 'error|exception|N/A|memory' | cut -c1-200)
    fi
    [ -z "$rss" ] && rss=0
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$layout" "$bytes" "$route" "$run" \
        "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')" "$rss" "$rc" "$load1" \
        "$(echo "$note" | tr '\t\n' '  ')" >>"$RESULTS"
    log "$variant $route #$run: $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f s", (b - a) / 1e9}'), $((rss / 1024)) MiB, rc $rc ${note:0:100}"
    rm -rf "$OUT" "$OUT.metadata"
    sync
    return $rc
}

run_variant() {
    local variant=$1 layout=$2 mib=$3
    local in=$INPUTS/$variant/chk-42
    wait_load
    rm -rf "$INPUTS/$variant"
    log "generating $variant ($layout, ~$mib MiB _metadata, parallelism $PARALLELISM)"
    local t0 gen
    t0=$(date +%s%N)
    gen=$(java -Xmx6g "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.bench.GenerateCheckpoint --dir "$in" \
        --layout "$layout" --parallelism "$PARALLELISM" --target-bytes $((mib * 1048576)) 2>&1)
    local rc=$?
    local gs
    gs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
    if [ $rc != 0 ]; then
        echo "$gen" >&2
        log "generation of $variant failed"
        return 1
    fi
    local line bytes n stream
    line=$(echo "$gen" | grep '^generated ')
    bytes=$(stat -c %s "$in/_metadata")
    n=$(echo "$line" | sed 's/.*elements=\([0-9]*\).*/\1/')
    stream=$(find "$in" -type f ! -name _metadata -links +1 -printf '%s\n' | head -1)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$layout" "$bytes" "$PARALLELISM" "$n" "${stream:-0}" "$gs" >>"$VARIANTS"
    log "$line (${gs} s)"

    # Warm the page cache: every route reads the input from memory.
    cat "$in"/* >/dev/null

    # Check once that the native outputs are what Flink expects (untimed).
    for depth in purge metadata-only; do
        rm -rf "$OUT"
        local extra=()
        [ $depth = metadata-only ] && extra=(--metadata-only)
        if ! "$CLI" remove-state "$in" --state $STATE "${extra[@]}" --apply --output "$OUT" >"$DIR/check.txt" 2>&1; then
            cat "$DIR/check.txt" >&2
            log "native $depth failed on $variant"
        elif ! java "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.bench.FlinkRoute check "$OUT" $STATE >"$DIR/check.txt" 2>&1; then
            cat "$DIR/check.txt" >&2
            log "Flink rejects the native $depth output of $variant"
        else
            log "$(grep '^flink check' "$DIR/check.txt" | sed "s#$OUT#native $depth output#")"
        fi
        rm -rf "$OUT"
    done

    local runs=$RUNS
    [ "$bytes" -gt 2147483647 ] && runs=$BIG_RUNS
    for run in $(seq 1 "$runs"); do
        measure "$variant" "$layout" "$bytes" cli-purge "$run" -- \
            "$CLI" remove-state "$in" --state $STATE --apply --output "$OUT"
        measure "$variant" "$layout" "$bytes" cli-metadata-only "$run" -- \
            "$CLI" remove-state "$in" --state $STATE --metadata-only --apply --output "$OUT"
        measure "$variant" "$layout" "$bytes" rust-purge "$run" -- "$RUST" "$in" "$OUT" $STATE purge
        measure "$variant" "$layout" "$bytes" bytes-purge "$run" -- \
            java "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.internal.BenchBytesRoute "$in" "$OUT" $STATE purge
        measure "$variant" "$layout" "$bytes" bytes-metadata-only "$run" -- \
            java "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.internal.BenchBytesRoute "$in" "$OUT" $STATE metadata-only
        measure "$variant" "$layout" "$bytes" flink "$run" -- \
            java "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.bench.FlinkRoute remove "$in" "$OUT" $STATE
        measure "$variant" "$layout" "$bytes" cp "$run" -- cp "$in/_metadata" "$OUT.metadata"
    done

    # The smallest -Xmx with which Flink's route works: a descending ladder of multiples of the
    # input size, stopping at the first failure.
    if [ "$LADDER" = 1 ]; then
        for f in 6 4 3 2 1.5 1 0.75 0.5; do
            local xmx
            xmx=$(awk -v b="$bytes" -v f="$f" 'BEGIN {m = int(b * f / 1048576 + 0.999); if (m < 2) m = 2; print m}')
            if ! measure "$variant" "$layout" "$bytes" flink-xmx "${f}x=${xmx}m" -- \
                java -Xmx"${xmx}m" "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.bench.FlinkRoute remove "$in" "$OUT" $STATE; then
                break
            fi
        done
    fi
    [ "$KEEP" = 0 ] && rm -rf "$INPUTS/$variant"
    return 0
}

for mib in $SIZES; do
    run_variant "file-relative-$mib" relative "$mib"
done
for mib in $ABS_SIZES; do
    run_variant "file-absolute-$mib" absolute "$mib"
done
for mib in $INLINE_SIZES; do
    run_variant "inline-$mib" inline "$mib"
done
echo "load_end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$ENVFILE"

if [ "$REPORT" = 1 ]; then
    java -cp "$CP" io.checkpointsurgeon.bench.BenchReport "$DIR" "$ROOT/BENCHMARKS.md" "$ROOT/docs/bench-chart.svg" \
        || { echo "report failed" >&2; exit 1; }
    log "wrote BENCHMARKS.md and docs/bench-chart.svg (raw results: $RESULTS)"
fi
