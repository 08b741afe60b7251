#!/usr/bin/env bash
# Benchmark (issues 17, 31): `inspect` and `doctor` against Flink's own route on the same bloated
# checkpoint, on two inputs measured in one run, and the CLI's fixed start-up cost. Not part of
# `gradle test`; no test asserts a time.
#
#   bash bench/inspect.sh                        build, make both inputs, measure, update BENCHMARKS.md
#   bash bench/inspect.sh --runs 15 --before bf51ccb
#
# Inputs (made once, kept in DIR):
#   grown       a real Flink 1.20.3 job restored again and again, as the incident grows it
#               (bench/grow GrowByRestores, `gradle benchGrowInput`): v1 of source_consumer keeps the
#               legacy Kafka consumer's union state (its own serializer: Kryo KafkaTopicPartition and
#               Long, two partitions per subtask), v2 never reads it; --grow-parallelism 4 and
#               --restores 10 give 8 x 4^10 = 8,388,608 elements, a 67 MB _metadata and 4 state files
#   generator   GenerateCheckpoint (bench/java, Flink 1.20.3's operator state backend and
#               Checkpoints.storeCheckpointMetadata): one stream hard-linked into every subtask,
#               Tuple2<String, Long> elements (--target-mib 64, --parallelism 32)
#
# Options:
#   --dir DIR          inputs, builds and results (default /tmp/checkpoint-surgeon-inspect-bench)
#   --runs N           timed runs per route (default 11), the routes interleaved run by run
#   --mem-runs N       runs per route under bench/rss.py for the memory figures (default 3)
#   --target-mib M     size of the generated _metadata in MiB (default 64)
#   --parallelism P    subtasks of the generated input (default 32)
#   --grow-parallelism P, --restores N   the grown input (default 4 and 10)
#   --before REV       also measure the CLI of git revision REV (exported with `git archive` and
#                      built with `gradle installDist` in DIR/before), for before/after figures
#   --no-build         use the existing builds
#   --no-report        print the tables only; do not touch BENCHMARKS.md
#
# Routes, each a fresh process (wall time from the shell):
#   inspect / doctor   build/install/checkpoint-surgeon/bin/checkpoint-surgeon (the launcher: AppCDS
#                      archive from installDist, C1) on the input
#   inspect-jar        java -jar build/libs/checkpoint-surgeon.jar inspect (no AppCDS, C2)
#   flink              bench FlinkRoute: Checkpoints.loadCheckpointMetadata, drop the stale state from
#                      every handle, storeCheckpointMetadata (issue 17's reference)
#   version / inspect-small   --version, and inspect of tests/fixtures/1.20.3/stale-union
#   before-*           the same commands with REV's launcher (--before)
# Memory (separate runs, not timed): peak RSS (VmHWM) and the peaks of its anonymous and
# file-backed parts (RssAnon, RssFile of /proc/PID/status, sampled every millisecond by rss.py):
# the input is mapped, so its pages are file-backed; the anonymous part is what the process adds.
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

DIR=/tmp/checkpoint-surgeon-inspect-bench
RUNS=11
MEM_RUNS=3
TARGET_MIB=64
PARALLELISM=32
GROW_PARALLELISM=4
RESTORES=10
BEFORE=""
BUILD=1
REPORT=1
STATE=topic-partition-offset-states

while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --mem-runs) MEM_RUNS=$2; shift ;;
        --target-mib) TARGET_MIB=$2; shift ;;
        --parallelism) PARALLELISM=$2; shift ;;
        --grow-parallelism) GROW_PARALLELISM=$2; shift ;;
        --restores) RESTORES=$2; shift ;;
        --before) BEFORE=$2; shift ;;
        --no-build) BUILD=0 ;;
        --no-report) REPORT=0 ;;
        *) echo "unknown option $1" >&2; exit 1 ;;
    esac
    shift
done

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
LAUNCHER=$ROOT/build/install/checkpoint-surgeon/bin/checkpoint-surgeon
JAR=$ROOT/build/libs/checkpoint-surgeon.jar
SMALL=$ROOT/tests/fixtures/1.20.3/stale-union
JAVA_Q=(-Dlog4j2.level=OFF -Dorg.slf4j.simpleLogger.defaultLogLevel=off)

if [ "$BUILD" = 1 ]; then
    gradle --no-daemon -q installDist benchClasspath >&2 || exit 1
    if [ -n "$BEFORE" ]; then
        rm -rf "$DIR/before" && mkdir -p "$DIR/before"
        git archive "$BEFORE" | tar -x -C "$DIR/before" || exit 1
        (cd "$DIR/before" && gradle --no-daemon -q installDist >&2) || exit 1
    fi
fi
CP=$(cat build/bench/classpath.txt)
BEFORE_LAUNCHER=$DIR/before/build/install/checkpoint-surgeon/bin/checkpoint-surgeon

GENERATED=$DIR/input-generator-p$PARALLELISM-$TARGET_MIB
if [ ! -f "$GENERATED/_metadata" ]; then
    rm -rf "$GENERATED"
    java -Xmx6g "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.bench.GenerateCheckpoint --dir "$GENERATED" \
        --layout relative --parallelism "$PARALLELISM" --target-bytes $((TARGET_MIB * 1024 * 1024)) >&2 || exit 1
fi
GROWN=$DIR/input-grown-p$GROW_PARALLELISM-r$RESTORES
if [ ! -f "$GROWN/_metadata" ]; then
    rm -rf "$GROWN"
    gradle --no-daemon -q benchGrowInput -PbenchOut="$GROWN" \
        -PbenchArgs="--parallelism $GROW_PARALLELISM --restores $RESTORES" >&2 || exit 1
fi
inputs=(grown generator)
input_dir() { case "$1" in grown) echo "$GROWN" ;; generator) echo "$GENERATED" ;; esac; }
for i in "${inputs[@]}"; do cat "$(input_dir "$i")"/* >/dev/null; done # into the page cache

routes=()
for i in "${inputs[@]}"; do
    routes+=("inspect:$i" "doctor:$i" "inspect-jar:$i" "flink:$i")
    [ -n "$BEFORE" ] && [ -x "$BEFORE_LAUNCHER" ] && routes+=("before-inspect:$i" "before-doctor:$i")
done
routes+=(version inspect-small)
[ -n "$BEFORE" ] && [ -x "$BEFORE_LAUNCHER" ] && routes+=(before-version before-inspect-small)

command_of() {
    local route=${1%%:*} in
    in=$(input_dir "${1#*:}")
    case "$route" in
        inspect) echo "$LAUNCHER inspect $in" ;;
        doctor) echo "$LAUNCHER doctor $in" ;;
        inspect-jar) echo "java -jar $JAR inspect $in" ;;
        flink) echo "java ${JAVA_Q[*]} -cp $CP io.checkpointsurgeon.bench.FlinkRoute remove $in $DIR/out $STATE" ;;
        version) echo "$LAUNCHER --version" ;;
        inspect-small) echo "$LAUNCHER inspect $SMALL" ;;
        before-inspect) echo "$BEFORE_LAUNCHER inspect $in" ;;
        before-doctor) echo "$BEFORE_LAUNCHER doctor $in" ;;
        before-version) echo "$BEFORE_LAUNCHER --version" ;;
        before-inspect-small) echo "$BEFORE_LAUNCHER inspect $SMALL" ;;
    esac
}

# doctor exits 4 on its finding (the stale union state); anything else but 0 is a failure.
check_exit() {
    if [ "$2" != 0 ] && ! { [ "$2" = 4 ] && [[ $1 == *doctor* ]]; }; then
        echo "route $1 failed (exit $2):" >&2; head -5 "$DIR/err.txt" >&2; exit 1
    fi
}

RESULTS=$DIR/inspect-results.tsv
printf 'route\trun\tseconds\n' >"$RESULTS"
for run in $(seq 1 "$RUNS"); do
    for route in "${routes[@]}"; do
        rm -rf "$DIR/out"
        t0=$(date +%s%N)
        # shellcheck disable=SC2046
        $(command_of "$route") >/dev/null 2>"$DIR/err.txt"
        rc=$?
        t1=$(date +%s%N)
        check_exit "$route" "$rc"
        printf '%s\t%s\t%s\n' "$route" "$run" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')" >>"$RESULTS"
    done
done
MEMORY=$DIR/inspect-memory.tsv
printf 'route\trun\thwm_kib\tanon_kib\tfile_kib\n' >"$MEMORY"
for run in $(seq 1 "$MEM_RUNS"); do
    for route in "${routes[@]}"; do
        rm -rf "$DIR/out"
        # shellcheck disable=SC2046
        line=$(python3 bench/rss.py $(command_of "$route"))
        rc=$(sed 's/.*exit=\([0-9-]*\).*/\1/' <<<"$line")
        check_exit "$route" "$rc"
        printf '%s\t%s\t%s\n' "$route" "$run" "$(sed 's/.*hwm_kib=\([0-9]*\) anon_kib=\([0-9]*\) file_kib=\([0-9]*\).*/\1\t\2\t\3/' <<<"$line")" >>"$MEMORY"
    done
done
rm -rf "$DIR/out"

mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN {printf "%.1f", b / 1048576}'; }
files_mib() { find "$1" -type f ! -name _metadata -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s / 1048576}'; }
table() { # $1: input name (or "" for the routes without an input)
    awk -F'\t' -v want="$1" -v input_mib="${2:-0}" '
        function sorted(s, a,   m, i, j, x) { m = split(s, a, " "); for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } return m }
        function median(s,   a, m) { m = sorted(s, a); return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
        function lo(s,   a) { sorted(s, a); return a[1] }
        function hi(s,   a, m) { m = sorted(s, a); return a[m] }
        function mine(r,   i) { i = index(r, ":"); return want == "" ? i == 0 : i > 0 && substr(r, i + 1) == want }
        function name(r,   i) { i = index(r, ":"); return i ? substr(r, 1, i - 1) : r }
        FNR == 1 { file++; next }
        file == 1 && mine($1) { t[$1] = t[$1] " " $3; n[$1]++; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
        file == 2 && mine($1) { hwm[$1] = hwm[$1] " " $3; anon[$1] = anon[$1] " " $4; fb[$1] = fb[$1] " " $5 }
        END {
            printf "| route | runs | wall min / **median** / max | Flink ÷ route | peak RSS | of it anonymous | of it file-backed |\n|---|---:|---|---:|---:|---:|---:|\n"
            f = median(t["flink:" want])
            for (i = 1; i <= k; i++) {
                x = order[i]; m = median(t[x])
                printf "| %s | %d | %.0f ms / **%.0f ms** / %.0f ms | %s | %.1f MiB | %.1f MiB | %.1f MiB |\n", name(x), n[x], lo(t[x]) * 1000, m * 1000, hi(t[x]) * 1000, (want == "" || x ~ /^flink/) ? "" : sprintf("%.2f×", f / m), median(hwm[x]) / 1024, median(anon[x]) / 1024, median(fb[x]) / 1024
            }
        }' "$RESULTS" "$MEMORY"
}

load=$(cut -d' ' -f1-3 /proc/loadavg)
cmd="bash bench/inspect.sh --runs $RUNS --mem-runs $MEM_RUNS${BEFORE:+ --before $BEFORE}"
section=$(cat <<EOF
<!-- begin inspect bench (bench/inspect.sh writes this section) -->
## inspect and doctor against Flink's route (issues 17 and 31)

Command: \`$cmd\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(java -version 2>&1 | head -1), load at the end $load.

Every route is a fresh process, run $RUNS times for the times, the routes and both inputs interleaved run by run, and $MEM_RUNS more times under \`bench/rss.py\` for the memory (medians). \`flink\` is Flink 1.20.3's load + drop + store (\`bench/java/.../FlinkRoute.java\`), the reference of issue 17. The input is mapped, so its pages are file-backed RSS; "anonymous" is what the process adds (heap, native allocations). \`before-*\` is the CLI of ${BEFORE:-(not measured)}.

### Grown by restores (the incident's own shape)

Input: \`gradle benchGrowInput\` (\`bench/grow/.../GrowByRestores.java\`): a real Flink 1.20.3 job, parallelism $GROW_PARALLELISM, whose union state \`$STATE\` (the legacy Kafka consumer's serializer, $((2 * GROW_PARALLELISM)) elements written by v1) is restored and written back $RESTORES times: \`_metadata\` of $(mib "$GROWN/_metadata") MiB, state files of $(files_mib "$GROWN") MiB.

$(table grown)

### Generated (one stream hard-linked into every subtask)

Input: \`GenerateCheckpoint --layout relative --parallelism $PARALLELISM --target-bytes $((TARGET_MIB * 1024 * 1024))\` (Flink 1.20.3's own classes, \`Tuple2<String, Long>\` elements): \`_metadata\` of $(mib "$GENERATED/_metadata") MiB, state files of $(files_mib "$GENERATED") MiB.

$(table generator)

### Start-up

$(table "")
<!-- end inspect bench -->
EOF
)
printf '%s\n' "$section"
if [ "$REPORT" = 1 ]; then
    python3 "$ROOT/bench/section.py" "$ROOT/BENCHMARKS.md" inspect "$section"
fi
