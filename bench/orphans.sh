#!/usr/bin/env bash
# Benchmark (issue 29): `orphans` on a generated base directory of 1,000 checkpoints and 100,000
# files against `find DIR -type f | wc -l` (the floor: one walk, no parsing), paired run by run
# in one invocation. Not part of `gradle test`.
#
#   bash bench/orphans.sh [--dir /tmp/checkpoint-surgeon-orphans-bench] [--runs 3] [--keep]
#   bash bench/orphans.sh --s3 [--s3-jobs 10] [--list-parallelism 8] [--runs 3]
#
# --s3: the same tree (all 10 jobs by default: 100,000 files, 1,000 checkpoints; --s3-jobs N takes
# the first N jobs) uploaded to S3Proxy (in-memory store, its own JVM on 127.0.0.1; bucket "bench",
# prefix orphans/), then, paired
# run by run: `orphans s3://bench/orphans` (the CLI with Flink 1.20's jars and its S3 plugin;
# --list-parallelism N and 1), Flink's FileSystem.listStatus directory by directory in one thread
# (the same client, no parsing), and one flat ListObjectsV2 of the prefix over plain HTTP (the
# floor of any lister). The upload is plain HTTP PUTs, 8 at once from one JVM (S3Proxy runs with
# authorization=none); it is not timed as a route.
# Needs `gradle --no-daemon jar benchClasspath` (build/bench/*.txt).
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
S3=0
S3JOBS=10
LISTP=8
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --s3) S3=1; shift ;;
    --s3-jobs) S3JOBS=$2; shift 2 ;;
    --list-parallelism) LISTP=$2; shift 2 ;;
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
if [ "$S3" = 1 ]; then
  [ -f build/bench/classpath.txt ] || { echo "no build/bench/classpath.txt: run gradle --no-daemon jar benchClasspath" >&2; exit 1; }
  CP=$(cat build/bench/classpath.txt)
  JAVA=(java --add-opens java.base/java.util=ALL-UNNAMED -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
  PLUGINS=$DIR/plugins
  mkdir -p "$PLUGINS/s3-fs-hadoop" "$DIR/s3proxy" "$DIR/conf"
  ln -sf "$(cat build/bench/s3-plugin.txt)" "$PLUGINS/s3-fs-hadoop/"
  rm -f "$DIR/s3proxy.port"
  java -Ds3proxy.classpath="$(cat build/bench/s3proxy-classpath.txt)" -cp "$CP" io.checkpointsurgeon.bench.KeyedBench \
      s3proxy "$DIR/s3proxy" "$DIR/s3proxy.port" > "$DIR/s3proxy.log" 2>&1 &
  S3PID=$!
  trap 'kill $S3PID 2>/dev/null' EXIT
  for _ in $(seq 1 120); do [ -s "$DIR/s3proxy.port" ] && break; sleep 1; done
  ENDPOINT=http://127.0.0.1:$(cat "$DIR/s3proxy.port")
  printf 's3.endpoint: %s\ns3.path.style.access: true\ns3.access-key: test-access-key\ns3.secret-key: test-secret-key\ns3.endpoint.region: us-east-1\ns3.connection.ssl.enabled: false\n' \
      "$ENDPOINT" > "$DIR/conf/config.yaml"
  start=$(date +%s.%N)
  if [ "$S3JOBS" -ge 10 ]; then
    java -cp "$CP" io.checkpointsurgeon.bench.StoreList upload "$ENDPOINT" bench orphans "$BASE" 8 >&2
  else
    for j in $(seq 0 $((S3JOBS - 1))); do
      java -cp "$CP" io.checkpointsurgeon.bench.StoreList upload "$ENDPOINT" bench "orphans/job-$j" "$BASE/job-$j" 8 >&2
    done
  fi
  echo "uploaded $S3JOBS jobs to $ENDPOINT in $(echo "$(date +%s.%N) - $start" | bc) s" >&2
  FS=(--flink-conf "$DIR/conf" --plugins "$PLUGINS")
  echo "run route wall_s max_rss_kib"
  for r in $(seq 1 "$RUNS"); do
    echo "$r $(measure s3-list java -cp "$CP" io.checkpointsurgeon.bench.StoreList s3-list "$ENDPOINT" bench orphans/)"
    echo "$r $(measure flink-list "${JAVA[@]}" -cp "$CP" io.checkpointsurgeon.bench.StoreList flink-list s3://bench/orphans "$DIR/conf" "$PLUGINS")"
    echo "$r $(measure orphans-s3 "${JAVA[@]}" -cp "$CP" io.checkpointsurgeon.cli.Cli orphans s3://bench/orphans "${FS[@]}" --list-parallelism "$LISTP")"
    echo "$r $(measure orphans-s3-p1 "${JAVA[@]}" -cp "$CP" io.checkpointsurgeon.cli.Cli orphans s3://bench/orphans "${FS[@]}" --list-parallelism 1)"
  done
  "${JAVA[@]}" -cp "$CP" io.checkpointsurgeon.cli.Cli orphans s3://bench/orphans "${FS[@]}" --json > "$DIR/s3.json" || true
  echo "s3 report: $(grep -o '"filesScanned": [0-9]*' "$DIR/s3.json"), $(grep -o '"checkpoints": [0-9]*' "$DIR/s3.json"), $(grep -o '"orphanBytes": [0-9]*' "$DIR/s3.json")" >&2
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  [ "$KEEP" = 1 ] || rm -rf "$DIR"
  exit 0
fi
echo "run route wall_s max_rss_kib"
for r in $(seq 1 "$RUNS"); do
  echo "$r $(measure find sh -c "find '$BASE' -type f | wc -l")"
  echo "$r $(measure orphans java -jar "$JAR" orphans "$BASE")"
  echo "$r $(measure orphans-json java -jar "$JAR" orphans "$BASE" --json)"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[ "$KEEP" = 1 ] || rm -rf "$DIR"
