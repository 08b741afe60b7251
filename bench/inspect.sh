#!/usr/bin/env bash
# Benchmark (issue 17): `inspect` and `doctor` against Flink's own route on the same bloated
# checkpoint, and the CLI's fixed start-up cost. Not part of `gradle test`; no test asserts a time.
#
#   bash bench/inspect.sh                        build, generate, measure, update BENCHMARKS.md
#   bash bench/inspect.sh --runs 15 --before bf51ccb
#
# Options:
#   --dir DIR          inputs, builds and results (default /tmp/checkpoint-surgeon-inspect-bench)
#   --runs N           measured runs per route (default 11), interleaved route by route
#   --target-mib M     size of the generated _metadata in MiB (default 64: 67 MB, 8.4 M stale
#                      elements, 32 x 8.9 MB of state files, the shape of issue 17's input)
#   --parallelism P    subtasks of the bloated operator (default 32)
#   --before REV       also measure the CLI of git revision REV (exported with `git archive` and
#                      built with `gradle installDist` in DIR/before), for before/after figures
#   --no-build         use the existing builds
#   --no-report        print the table only; do not touch BENCHMARKS.md
#
# Routes, each a fresh process (wall time from the shell, peak RSS from /usr/bin/time):
#   inspect / doctor          build/install/checkpoint-surgeon/bin/checkpoint-surgeon (the launcher:
#                             AppCDS archive from installDist, C1) on the big input
#   inspect-jar               java -jar build/libs/checkpoint-surgeon.jar inspect (no AppCDS, C2)
#   flink                     bench FlinkRoute: Checkpoints.loadCheckpointMetadata, drop the stale
#                             state from every handle, storeCheckpointMetadata (issue 17's reference)
#   version / inspect-small   --version, and inspect of tests/fixtures/1.20.3/stale-union
#   before-*                  the same commands with REV's launcher (--before)
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

DIR=/tmp/checkpoint-surgeon-inspect-bench
RUNS=11
TARGET_MIB=64
PARALLELISM=32
BEFORE=""
BUILD=1
REPORT=1
STATE=topic-partition-offset-states

while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --target-mib) TARGET_MIB=$2; shift ;;
        --parallelism) PARALLELISM=$2; shift ;;
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

IN=$DIR/input
if [ ! -f "$IN/_metadata" ]; then
    rm -rf "$IN"
    java -Xmx6g "${JAVA_Q[@]}" -cp "$CP" io.checkpointsurgeon.bench.GenerateCheckpoint --dir "$IN" \
        --layout relative --parallelism "$PARALLELISM" --target-bytes $((TARGET_MIB * 1024 * 1024)) >&2 || exit 1
fi
cat "$IN"/* >/dev/null # into the page cache

routes=(inspect doctor inspect-jar flink version inspect-small)
[ -n "$BEFORE" ] && [ -x "$BEFORE_LAUNCHER" ] && routes+=(before-inspect before-doctor before-version before-inspect-small)

command_of() {
    case "$1" in
        inspect) echo "$LAUNCHER inspect $IN" ;;
        doctor) echo "$LAUNCHER doctor $IN" ;;
        inspect-jar) echo "java -jar $JAR inspect $IN" ;;
        flink) echo "java ${JAVA_Q[*]} -cp $CP io.checkpointsurgeon.bench.FlinkRoute remove $IN $DIR/out $STATE" ;;
        version) echo "$LAUNCHER --version" ;;
        inspect-small) echo "$LAUNCHER inspect $SMALL" ;;
        before-inspect) echo "$BEFORE_LAUNCHER inspect $IN" ;;
        before-doctor) echo "$BEFORE_LAUNCHER doctor $IN" ;;
        before-version) echo "$BEFORE_LAUNCHER --version" ;;
        before-inspect-small) echo "$BEFORE_LAUNCHER inspect $SMALL" ;;
    esac
}

RESULTS=$DIR/inspect-results.tsv
printf 'route\trun\tseconds\tmax_rss_kib\texit\n' >"$RESULTS"
for run in $(seq 1 "$RUNS"); do
    for route in "${routes[@]}"; do
        rm -rf "$DIR/out"
        t0=$(date +%s%N)
        # shellcheck disable=SC2046
        /usr/bin/time -f '%M' -o "$DIR/time.txt" $(command_of "$route") >/dev/null 2>"$DIR/err.txt"
        rc=$?
        t1=$(date +%s%N)
        # doctor exits 4 on its finding (the stale union state); anything else but 0 is a failure.
        if [ $rc != 0 ] && ! { [ $rc = 4 ] && [[ $route == *doctor ]]; }; then
            echo "route $route failed (exit $rc):" >&2; head -5 "$DIR/err.txt" >&2; exit 1
        fi
        printf '%s\t%s\t%s\t%s\t%s\n' "$route" "$run" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", (b - a) / 1e9}')" \
            "$(tail -1 "$DIR/time.txt")" "$rc" >>"$RESULTS"
    done
done
rm -rf "$DIR/out"

input_mib=$(du -smL "$IN/_metadata" | cut -f1)
files_mib=$(find "$IN" -type f ! -name _metadata -printf '%s\n' | awk '{s += $1} END {printf "%.0f", s / 1048576}')
table=$(awk -F'\t' -v input="$input_mib" '
    NR > 1 { t[$1] = t[$1] " " $3; r[$1] = r[$1] " " $4; n[$1]++; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
    function sorted(s, a,   m, i, j, x) { m = split(s, a, " "); for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } return m }
    function median(s,   a, m) { m = sorted(s, a); return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    function lo(s,   a) { sorted(s, a); return a[1] }
    function hi(s,   a, m) { m = sorted(s, a); return a[m] }
    END {
        printf "| route | runs | wall min / **median** / max | peak RSS (median) | RSS − `_metadata` | Flink ÷ route |\n|---|---:|---|---:|---:|---:|\n"
        f = median(t["flink"])
        for (i = 1; i <= k; i++) {
            x = order[i]; m = median(t[x]); rss = median(r[x]) / 1024
            printf "| %s | %d | %.0f ms / **%.0f ms** / %.0f ms | %.1f MiB | %+.1f MiB | %s |\n", x, n[x], lo(t[x]) * 1000, m * 1000, hi(t[x]) * 1000, rss, rss - input, (x ~ /small|version/) ? "" : sprintf("%.2f×", f / m)
        }
    }' "$RESULTS")

load=$(cut -d' ' -f1-3 /proc/loadavg)
section=$(cat <<EOF
<!-- begin inspect bench (bench/inspect.sh writes this section) -->
## inspect and doctor against Flink's route (issue 17)

Command: \`bash bench/inspect.sh --runs $RUNS${BEFORE:+ --before $BEFORE}\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(java -version 2>&1 | head -1), load at the end $load.

Input: \`GenerateCheckpoint --layout relative --parallelism $PARALLELISM --target-bytes $((TARGET_MIB * 1024 * 1024))\` (Flink 1.20.3's own classes): \`_metadata\` of ${input_mib} MiB, state files of ${files_mib} MiB in all (one stream per subtask, each holding the whole stale union state, as after restores). Every route is a fresh process, run $RUNS times, the routes interleaved run by run; \`flink\` is Flink's load + drop + store (\`bench/java/.../FlinkRoute.java\`), the reference of issue 17. \`before-*\` is the CLI of ${BEFORE:-(not measured)}.

$table
<!-- end inspect bench -->
EOF
)
printf '%s\n' "$section"
if [ "$REPORT" = 1 ]; then
    python3 - "$ROOT/BENCHMARKS.md" "$section" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read()
pattern = re.compile(r"<!-- begin inspect bench.*?<!-- end inspect bench -->", re.S)
text = pattern.sub(lambda m: section, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
fi
