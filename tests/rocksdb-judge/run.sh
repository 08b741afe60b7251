#!/usr/bin/env bash
# RocksDB's judgement of remove-keyed-state and rename-keyed-state on RocksDB handles (issue 28),
# without a Flink job: the Rust test `rocksdb_instances_for_the_judge` stages each surgery on the
# RocksDB fixtures and writes the instance directories Flink would restore from the input and
# from the result; RocksDbJudge.java opens them with the FRocksDB JNI jar of the Flink version
# that wrote each fixture and compares every key and value of every kept state.
#
#   bash tests/rocksdb-judge/run.sh        (needs cargo and Java 11+; the jars come from
#                                           Gradle's cache, else from Maven Central)
set -euo pipefail
cd "$(dirname "$0")/../.."

DIR=$(mktemp -d /tmp/rocksdb-judge.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
CHECKPOINT_SURGEON_JUDGE_DIR=$DIR cargo test --release -q -p checkpoint-surgeon \
    --test keyed_surgery -- --ignored --exact rocksdb_instances_for_the_judge

# the FRocksDB of each Flink line (flink-statebackend-rocksdb's pom)
frocksdb_of() {
    case "$1" in
        1.15.*|1.16.*|1.17.*) echo 6.20.3-ververica-1.0 ;;
        1.*) echo 6.20.3-ververica-2.0 ;;
        *) echo 8.10.0-ververica-1.0 ;;
    esac
}
jar_of() {
    local v=$1 jar
    jar=$(find "$HOME/.gradle/caches/modules-2/files-2.1/com.ververica/frocksdbjni/$v" \
        -name "frocksdbjni-$v.jar" 2>/dev/null | head -1)
    if [ -z "$jar" ]; then
        jar=$DIR/frocksdbjni-$v.jar
        curl -sfo "$jar" "https://repo.maven.apache.org/maven2/com/ververica/frocksdbjni/$v/frocksdbjni-$v.jar"
    fi
    echo "$jar"
}

status=0
versions=$(for f in "$DIR"/*/version; do cat "$f"; echo; done | sort -u)
[ -n "$versions" ] || { echo "no cases were written" >&2; exit 1; }
for v in $versions; do
    f=$(frocksdb_of "$v")
    cases=()
    for c in "$DIR"/*/; do
        [ "$(cat "$c/version")" = "$v" ] && cases+=("$c")
    done
    echo "== Flink $v: FRocksDB $f, ${#cases[@]} cases"
    java -cp "$(jar_of "$f")" tests/rocksdb-judge/RocksDbJudge.java "${cases[@]}" || status=1
done
exit $status
