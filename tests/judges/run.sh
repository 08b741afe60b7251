#!/usr/bin/env bash
# The judges of remove-keyed-state and rename-keyed-state (issue 28) that need no Flink job:
# - RocksDB (RocksDbJudge.java): the Rust test `rocksdb_instances_for_the_judge` stages each
#   surgery on the RocksDB fixtures and writes the instance directories Flink would restore from
#   the input and from the result; they are opened with the FRocksDB JNI jar of the Flink version
#   that wrote each fixture, and every key and value of every kept state is compared.
# - snappy (SnappyJudge.java): the Rust test `snappy_frames_for_the_judge` writes every key group
#   of the rewritten compressed streams; xerial's SnappyFramedInputStream (the snappy-java of each
#   Flink version) must read from each what the tool reads.
#
#   bash tests/judges/run.sh        (needs cargo and Java 11+; the jars come from Gradle's cache,
#                                    else from Maven Central)
set -euo pipefail
cd "$(dirname "$0")/../.."

DIR=$(mktemp -d /tmp/keyed-judges.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
mkdir "$DIR/rocksdb" "$DIR/snappy" "$DIR/jars"
for t in rocksdb_instances_for_the_judge:rocksdb snappy_frames_for_the_judge:snappy; do
    CHECKPOINT_SURGEON_JUDGE_DIR=$DIR/${t#*:} cargo test --release -q -p checkpoint-surgeon \
        --test keyed_surgery -- --ignored --exact "${t%%:*}"
done

# what each Flink line bundles (the poms of flink-statebackend-rocksdb and flink-runtime)
frocksdb_of() {
    case "$1" in
        1.15.*|1.16.*|1.17.*) echo 6.20.3-ververica-1.0 ;;
        1.*) echo 6.20.3-ververica-2.0 ;;
        *) echo 8.10.0-ververica-1.0 ;;
    esac
}
snappy_of() {
    case "$1" in
        1.15.*) echo 1.1.8.3 ;;
        1.*) echo 1.1.10.4 ;;
        *) echo 1.1.10.7 ;;
    esac
}
# jar GROUP_PATH ARTIFACT VERSION
jar() {
    local found
    found=$(find "$HOME/.gradle/caches/modules-2/files-2.1/${1//\//.}/$2/$3" \
        -name "$2-$3.jar" 2>/dev/null | head -1)
    if [ -z "$found" ]; then
        found=$DIR/jars/$2-$3.jar
        [ -f "$found" ] || curl -sfo "$found" "https://repo.maven.apache.org/maven2/$1/$2/$3/$2-$3.jar"
    fi
    echo "$found"
}
# judge KIND: runs the judge of KIND on its cases, version by version
status=0
judge() {
    local kind=$1 versions v cases c classpath main
    versions=$(for f in "$DIR/$kind"/*/version; do cat "$f"; echo; done | sort -u)
    [ -n "$versions" ] || { echo "no $kind cases were written" >&2; status=1; return; }
    for v in $versions; do
        cases=()
        for c in "$DIR/$kind"/*/; do
            [ "$(cat "$c/version")" = "$v" ] && cases+=("$c")
        done
        if [ "$kind" = rocksdb ]; then
            classpath=$(jar com/ververica frocksdbjni "$(frocksdb_of "$v")"); main=RocksDbJudge
        else
            classpath=$(jar org/xerial/snappy snappy-java "$(snappy_of "$v")"); main=SnappyJudge
        fi
        echo "== Flink $v: $(basename "$classpath"), ${#cases[@]} cases"
        java -cp "$classpath" "tests/judges/$main.java" "${cases[@]}" | tail -4 || status=1
    done
}
judge rocksdb
judge snappy
exit $status
