#!/usr/bin/env bash
# Benchmark (issue 29): `orphans` on a generated base directory of 1,000 checkpoints and 100,000
# files against `find DIR -type f | wc -l` (the floor: one walk, no parsing), paired run by run
# in one invocation. Not part of `gradle test`.
#
#   bash bench/orphans.sh [--dir /tmp/checkpoint-surgeon-orphans-bench] [--runs 3] [--keep]
#
# Input: 10 jobs x 100 checkpoints chk-<n>, each a copy of the fixture Flink 1.20.3 wrote
# (tests/fixtures/1.20.3/operator-state-files: _metadata + 4 relative state files, all
# referenced), and 95,000 unreferenced files of 1 KiB in the jobs' shared/ directories.
# Needs the CLI jar: gradle --no-daemon jar (build/libs/checkpoint-surgeon.jar).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=/tmp/checkpoint-surgeon-orphans-bench
RUNS=3
KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    *) echo "unknown option $1" >&2; exit 1 ;;
  esac
done
JAR=build/libs/checkpoint-surgeon.jar
FIXTURE=tests/fixtures/1.20.3/operator-state-files
[ -f "$JAR" ] || { echo "no $JAR: run gradle --no-daemon jar" >&2; exit 1; }
BASE=$DIR/base
if [ ! -d "$BASE" ]; then
  start=$(date +%s.%N)
  for j in $(seq 0 9); do
    job=$BASE/job-$j
    mkdir -p "$job/shared"
    for c in $(seq 1 100); do
      mkdir "$job/chk-$c"
      cp "$FIXTURE"/* "$job/chk-$c/"
    done
    # 9,500 unreferenced 1 KiB files per job, an hour old
    (cd "$job/shared" && for i in $(seq -w 1 9500); do printf '%1024s' '' > "orphan-$i"; done)
    find "$job/shared" -type f -exec touch -d '2 hours ago' {} +
  done
  echo "generated $BASE in $(echo "$(date +%s.%N) - $start" | bc) s" >&2
fi
echo "files: $(find "$BASE" -type f | wc -l), checkpoints: $(find "$BASE" -name _metadata | wc -l)" >&2
find "$BASE" -type f -print0 | xargs -0 cat > /dev/null   # page cache warm for both routes

measure() { # label command...: prints "label seconds maxrss_kib"
  local label=$1; shift
  local out
  /usr/bin/time -o "$DIR/time.txt" -f "%e %M" "$@" > /dev/null 2>&1 || true
  echo "$label $(tail -1 "$DIR/time.txt")"
}
echo "run route wall_s max_rss_kib"
for r in $(seq 1 "$RUNS"); do
  echo "$r $(measure find sh -c "find '$BASE' -type f | wc -l")"
  echo "$r $(measure orphans java -jar "$JAR" orphans "$BASE")"
  echo "$r $(measure orphans-json java -jar "$JAR" orphans "$BASE" --json)"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[ "$KEEP" = 1 ] || rm -rf "$DIR"
