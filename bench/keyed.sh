#!/usr/bin/env bash
# Benchmark (issue 27): `inspect --keyed` against Flink's own route on the same inputs, as whole
# processes in one run, the routes interleaved run by run. Not part of any test lane.
#
#   bash bench/keyed.sh                       build, generate the inputs (once), measure, update BENCHMARKS.md
#   bash bench/keyed.sh --runs 5 --no-s3
#
# Options:
#   --dir DIR            inputs and results (default /tmp/checkpoint-surgeon-keyed-bench; ~4 GiB free)
#   --runs N             measured runs per route (default 3)
#   --keys N             keys of the canonical savepoint (default 3400000: ~1 GiB)
#   --rocksdb-keys N     1 KiB values of the RocksDB checkpoint (default 1100000: ~1.1 GiB in >= 1,000 SST files)
#   --no-s3              skip the S3Proxy routes
#   --no-build           use the existing build (build/install, build/bench/*.txt)
#   --no-report          print the table only; do not touch BENCHMARKS.md
#
# Inputs, written by real Flink 1.20.3 (bench/java/.../KeyedBench.java):
#   canonical  the State Processor API's SavepointWriter (heap backend, parallelism 2): per key a
#              200-byte value state, a list state of 2 and a map state of 3 entries
#   rocksdb    a streaming job (RocksDB, incremental checkpoints, SST files of 1 MiB) writes a random
#              1 KiB value per key; its one retained incremental checkpoint
# Routes (each a fresh process; wall time from the shell, peak RSS from /usr/bin/time):
#   keyed-canonical      checkpoint-surgeon inspect SAVEPOINT --keyed
#   spa-canonical        the State Processor API reads the same three states and counts their entries
#                        (KeyedBench spa-read: SavepointReader.readKeyedState, its default heap backend, -Xmx8g)
#   keyed-rocksdb        checkpoint-surgeon inspect CHECKPOINT --keyed
#   copy-rocksdb         cp -r of the checkpoint's job directory (chk-N and shared/): reading every byte
#   keyed-rocksdb-s3     the same inspect on S3Proxy (the CLI with Flink's jars and its S3 plugin)
#   download-rocksdb-s3  downloading every file of the checkpoint from S3Proxy through Flink's FileSystem
# S3 routes go through a relay that counts the bytes S3Proxy sends (headers included).
set -uo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)

DIR=/tmp/checkpoint-surgeon-keyed-bench
RUNS=3
KEYS=3400000
RKEYS=1100000
S3=1
BUILD=1
REPORT=1
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) DIR=$2; shift ;;
        --runs) RUNS=$2; shift ;;
        --keys) KEYS=$2; shift ;;
        --rocksdb-keys) RKEYS=$2; shift ;;
        --no-s3) S3=0 ;;
        --no-build) BUILD=0 ;;
        --no-report) REPORT=0 ;;
        -h|--help) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 1 ;;
    esac
    shift
done
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing: apt-get install time" >&2; exit 1; }
log() { echo "[keyed bench $(date +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)] $*" >&2; }

if [ "$BUILD" = 1 ]; then
    log "building (gradle jar installDist benchClasspath)"
    gradle --no-daemon -q jar installDist benchClasspath >&2 || { echo "gradle build failed" >&2; exit 1; }
fi
CP=$(cat build/bench/classpath.txt)
CLI=$ROOT/build/install/checkpoint-surgeon/bin/checkpoint-surgeon
# Flink 1.20 on Java 17 (the CLI with Flink's jars, the State Processor API, the jobs); java.lang too:
# SavepointWriter's Kryo (reflectasm) defines OperatorSubtaskState's constructor access in Flink's
# class loader only then, else IllegalAccessError (and the bootstrap hung with 1 M keys)
JAVA=(java --add-opens java.base/java.util=ALL-UNNAMED --add-opens java.base/java.lang=ALL-UNNAMED
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn)
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
OUT=$DIR/out
RESULTS=$DIR/keyed-results.tsv
PIDS=()
cleanup() {
    rm -rf "$OUT"
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- inputs (kept between runs of this script)
SP=$DIR/canonical
if [ ! -f "$SP/_metadata" ]; then
    log "writing the canonical savepoint ($KEYS keys) with the State Processor API"
    rm -rf "$SP"
    "${JAVA[@]}" -Xmx12g -cp "$CP" io.checkpointsurgeon.bench.KeyedBench canonical "file://$SP" "$KEYS" >&2 || exit 1
fi
RDIR=$DIR/rocksdb
if ! ls "$RDIR"/checkpoints/*/chk-*/_metadata >/dev/null 2>&1; then
    log "writing the RocksDB checkpoint ($RKEYS values of 1 KiB) with a streaming job"
    rm -rf "$RDIR"
    "${JAVA[@]}" -Xmx4g -cp "$CP" io.checkpointsurgeon.bench.KeyedBench rocksdb "$RDIR" "$RKEYS" >&2 || exit 1
fi
CHK=$(ls -d "$RDIR"/checkpoints/*/chk-* | tail -1)
JOB=$(dirname "$CHK")
sp_bytes=$(du -sb "$SP" | cut -f1)
rocks_bytes=$(du -sb "$JOB" | cut -f1)
sst_files=$(find "$JOB/shared" -type f | wc -l)
log "canonical savepoint: $sp_bytes bytes; RocksDB checkpoint: $rocks_bytes bytes, $sst_files files in shared/"

# ---- S3Proxy: the checkpoint uploaded under s3://bench/jobs/<job>, its paths relocated there
if [ "$S3" = 1 ]; then
    PLUGINS=$DIR/plugins
    mkdir -p "$PLUGINS/s3-fs-hadoop"
    ln -sf "$(cat build/bench/s3-plugin.txt)" "$PLUGINS/s3-fs-hadoop/"
    conf() { # conf DIR ENDPOINT
        mkdir -p "$1"
        printf 's3.endpoint: %s\ns3.path.style.access: true\ns3.access-key: test-access-key\ns3.secret-key: test-secret-key\ns3.endpoint.region: us-east-1\ns3.connection.ssl.enabled: false\n' "$2" >"$1/config.yaml"
    }
    rm -f "$DIR/s3proxy.port"
    mkdir -p "$DIR/s3proxy"
    java -Ds3proxy.classpath="$(cat build/bench/s3proxy-classpath.txt)" -cp "$CP" io.checkpointsurgeon.bench.KeyedBench \
        s3proxy "$DIR/s3proxy" "$DIR/s3proxy.port" >"$DIR/s3proxy.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 120); do [ -s "$DIR/s3proxy.port" ] && break; sleep 1; done
    S3PORT=$(cat "$DIR/s3proxy.port")
    conf "$DIR/conf-direct" "http://127.0.0.1:$S3PORT"
    REMOTE=s3://bench/jobs/$(basename "$JOB")
    log "uploading the RocksDB checkpoint to $REMOTE"
    "${JAVA[@]}" -cp "$CP" io.checkpointsurgeon.bench.KeyedBench upload "$JOB" "$REMOTE" "$DIR/conf-direct" "$PLUGINS" >&2 || exit 1
    "${JAVA[@]}" -cp "$CP" io.checkpointsurgeon.cli.Cli relocate "$REMOTE/$(basename "$CHK")" --from "file:$JOB" --to "$REMOTE" \
        --apply --in-place --flink-conf "$DIR/conf-direct" --plugins "$PLUGINS" >&2 || exit 1
fi

command_of() {
    case "$1" in
        keyed-canonical) echo "$CLI inspect $SP --keyed" ;;
        spa-canonical) echo "${JAVA[*]} -Xmx8g -cp $CP io.checkpointsurgeon.bench.KeyedBench spa-read file://$SP" ;;
        keyed-rocksdb) echo "$CLI inspect $CHK --keyed" ;;
        copy-rocksdb) echo "cp -r $JOB $OUT" ;;
        keyed-rocksdb-s3) echo "${JAVA[*]} -cp $CP io.checkpointsurgeon.cli.Cli inspect $REMOTE/$(basename "$CHK") --keyed --flink-conf $DIR/conf-relay --plugins $PLUGINS" ;;
        download-rocksdb-s3) echo "${JAVA[*]} -cp $CP io.checkpointsurgeon.bench.KeyedBench download $REMOTE $OUT $DIR/conf-relay $PLUGINS" ;;
    esac
}
routes=(keyed-canonical spa-canonical keyed-rocksdb copy-rocksdb)
[ "$S3" = 1 ] && routes+=(keyed-rocksdb-s3 download-rocksdb-s3)

printf 'route\trun\tseconds\tmax_rss_kib\tfetched_bytes\texit\n' >"$RESULTS"
cat "$SP"/* "$JOB"/shared/* >/dev/null # into the page cache
for run in $(seq 1 "$RUNS"); do
    for route in "${routes[@]}"; do
        rm -rf "$OUT"
        fetched=-
        if [[ $route == *-s3 ]]; then
            rm -f "$DIR/relay.port" "$DIR/relay.count"
            java -cp "$CP" io.checkpointsurgeon.bench.KeyedBench relay "$S3PORT" "$DIR/relay.port" "$DIR/relay.count" &
            relay=$!
            for _ in $(seq 1 60); do [ -s "$DIR/relay.port" ] && break; sleep 0.5; done
            conf "$DIR/conf-relay" "$(cat "$DIR/relay.port")"
        fi
        log "run $run: $route"
        t0=$(date +%s%N)
        # shellcheck disable=SC2046
        /usr/bin/time -f '%M' -o "$DIR/time.txt" $(command_of "$route") >"$DIR/out.txt" 2>"$DIR/err.txt"
        rc=$?
        t1=$(date +%s%N)
        if [[ $route == *-s3 ]]; then
            kill "$relay"; wait "$relay" 2>/dev/null
            fetched=$(cut -d' ' -f1 "$DIR/relay.count")
        fi
        if [ $rc != 0 ]; then echo "route $route failed (exit $rc):" >&2; tail -5 "$DIR/err.txt" >&2; exit 1; fi
        [ "$route" = keyed-canonical ] && [ "$run" = 1 ] && cp "$DIR/out.txt" "$DIR/keyed-canonical.txt"
        [ "$route" = spa-canonical ] && [ "$run" = 1 ] && cp "$DIR/out.txt" "$DIR/spa-canonical.txt"
        [ "$route" = keyed-rocksdb ] && [ "$run" = 1 ] && cp "$DIR/out.txt" "$DIR/keyed-rocksdb.txt"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$route" "$run" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')" \
            "$(tail -1 "$DIR/time.txt")" "$fetched" "$rc" >>"$RESULTS"
    done
done

# the two readings of the canonical savepoint must agree: the tool's entries and the State Processor API's
spa=$(grep '^spa ' "$DIR/spa-canonical.txt")
agree=$(awk -v spa="$spa" '
    BEGIN { n = split(spa, f, /[ =]/); for (i = 2; i < n; i += 2) want[f[i]] = f[i + 1] }
    $1 in want && $4 ~ /^[0-9,]+$/ { gsub(",", "", $4); got[$1] = $4 }
    END { ok = 1; for (k in want) if (k != "seconds" && got[k] != want[k]) ok = 0; print ok ? "yes" : "NO" }' "$DIR/keyed-canonical.txt")

table=$(awk -F'\t' -v spb="$sp_bytes" -v rb="$rocks_bytes" '
    NR > 1 { t[$1] = t[$1] " " $3; r[$1] = r[$1] " " $4; if ($5 != "-") b[$1] = b[$1] " " $5; n[$1]++; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
    function sorted(s, a,   m, i, j, x) { m = split(s, a, " "); for (i = 2; i <= m; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x } return m }
    function median(s,   a, m) { m = sorted(s, a); return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END {
        ref["keyed-canonical"] = "spa-canonical"; ref["keyed-rocksdb"] = "copy-rocksdb"; ref["keyed-rocksdb-s3"] = "download-rocksdb-s3"
        printf "| route | runs | wall (median) | peak RSS (median) | bytes fetched from S3Proxy | reference ÷ route |\n|---|---:|---:|---:|---:|---:|\n"
        for (i = 1; i <= k; i++) {
            x = order[i]; m = median(t[x])
            fb = (x in b) ? sprintf("%\047d (%.2f %% of the checkpoint)", median(b[x]), 100 * median(b[x]) / rb) : ""
            printf "| %s | %d | %.2f s | %.0f MiB | %s | %s |\n", x, n[x], m, median(r[x]) / 1024, fb, (x in ref) ? sprintf("%.1f×", median(t[ref[x]]) / m) : ""
        }
    }' "$RESULTS")

section=$(cat <<EOF
<!-- begin keyed bench (bench/keyed.sh writes this section) -->
## inspect --keyed against the State Processor API and a download (issue 27)

Command: \`bash bench/keyed.sh --runs $RUNS --keys $KEYS --rocksdb-keys $RKEYS$([ "$S3" = 0 ] && echo ' --no-s3')\` on $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(java -version 2>&1 | head -1), load at the end $(cut -d' ' -f1-3 /proc/loadavg).

Inputs, written by Flink 1.20.3: a canonical savepoint of $(awk -v b="$sp_bytes" 'BEGIN {printf "%.2f GiB", b / 1073741824}') (the State Processor API's \`SavepointWriter\`, heap backend, parallelism 2, $KEYS keys with a value, a list and a map state); a RocksDB incremental checkpoint of $(awk -v b="$rocks_bytes" 'BEGIN {printf "%.2f GiB", b / 1073741824}') in $sst_files shared files (a streaming job, SST files of 1 MiB, $RKEYS random 1 KiB values). Every route is a fresh process, run $RUNS times, interleaved. The State Processor API's entries per state equal \`inspect --keyed\`'s: **$agree** ($spa).

$table
<!-- end keyed bench -->
EOF
)
printf '%s\n' "$section"
if [ "$REPORT" = 1 ]; then
    python3 "$ROOT/bench/section.py" "$ROOT/BENCHMARKS.md" keyed "$section"
fi
