#!/usr/bin/env bash
# The CLI's output as a set of files, to show that a change leaves it byte-identical: `--help` of
# every command, `inspect` (text, --json, --subtasks, --html), `doctor` (text, --json), plans of
# every surgery (text and --json), `recover` (text, --json), `diff`, `history` (text, --json,
# --svg, --html; with --keyed too), `watch --once` with its hook's input, usage errors, and the
# errors, findings and blockers that name an option or command (--older-than, --in-place,
# --output, --on-flink, --plugins, ...), on fixtures of Flink
# 1.15.4, 1.20.3 and 2.3.0.
#
#   scripts/cli-output.sh JAR DIR                 writes the outputs of `java -jar JAR` into DIR
#   scripts/cli-output.sh --compare REV [JAR]     builds REV's jar (git archive, gradle jar) under
#                                                 $CLI_OUTPUT_TMP (default /tmp/checkpoint-surgeon-cli-output)/REV, runs both
#                                                 (JAR: default build/libs/checkpoint-surgeon.jar)
#                                                 and diffs; exit 1 on any difference
#
# Every file holds one run: its exit code, standard output and standard error. Run from the project
# root (fixture paths are printed as given). The watch metrics that hold times are left out.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--compare" ]; then
    rev=${2:?usage: scripts/cli-output.sh --compare REV [JAR]}
    after_jar=${3:-build/libs/checkpoint-surgeon.jar}
    base=${CLI_OUTPUT_TMP:-/tmp/checkpoint-surgeon-cli-output}  # one per concurrent run
    before=$base/$rev
    if [ ! -f "$before/build/libs/checkpoint-surgeon.jar" ]; then
        rm -rf "$before" && mkdir -p "$before"
        git archive "$rev" | tar -x -C "$before" || exit 1
        (cd "$before" && gradle --no-daemon -q jar >&2) || exit 1
    fi
    rm -rf "$base/out-before" "$base/out-after"
    # both runs work in one directory of this comparison: outputs name it, other comparisons keep theirs
    export CLI_OUTPUT_RUN=$base/run
    "$0" "$before/build/libs/checkpoint-surgeon.jar" "$base/out-before" || exit 1
    "$0" "$after_jar" "$base/out-after" || exit 1
    n=$(ls "$base/out-after" | wc -l)
    if diff -r "$base/out-before" "$base/out-after"; then
        echo "identical: $n outputs of $rev and $after_jar" >&2
        exit 0
    fi
    echo "the outputs differ (above: < $rev, > $after_jar)" >&2
    exit 1
fi

jar=${1:?usage: scripts/cli-output.sh JAR DIR}
out=${2:?usage: scripts/cli-output.sh JAR DIR}
mkdir -p "$out"
# fixed paths (messages name them), one set per $CLI_OUTPUT_TMP so that comparisons can run at once
fixed=${CLI_OUTPUT_TMP:-/tmp/checkpoint-surgeon-cli-output}
work=$fixed-run
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# run NAME ARGS...: one CLI run into $out/NAME
run() {
    local name=$1
    shift
    java -jar "$jar" "$@" >"$work/stdout" 2>"$work/stderr"
    local rc=$?
    { echo "exit $rc"; echo "--- stdout"; cat "$work/stdout"; echo "--- stderr"; cat "$work/stderr"; } >"$out/$name"
}

run help --help
run help-command help
run version-short -V
for c in inspect doctor remove-state remove-operator dedupe-union rename-operator relocate ha "ha list" "ha repair" \
        kafka "kafka migrate-legacy" "kafka drop-topic" "kafka set-offsets" diff history watch; do
    # shellcheck disable=SC2086
    run "help-${c// /-}" $c --help
    # shellcheck disable=SC2086
    run "help-command-${c// /-}" help $c
done
run usage-unknown frobnicate
run usage-no-state remove-state tests/fixtures/1.20.3/stale-union
run usage-two-selectors remove-state tests/fixtures/1.20.3/stale-union --uid a --operator-id 00 --state s
run usage-fail-on doctor tests/fixtures/1.20.3/stale-union --fail-on never
run usage-ha-repair ha repair
run usage-watch watch --once
run missing-path inspect /nonexistent/chk-1

for v in 1.15.4 1.20.3 2.3.0; do
    f=tests/fixtures/$v
    for fx in stale-union stale-union-restore-0 operator-state-files odd-state-names keyed-rocksdb-incremental \
            flip27-source unaligned finished-source; do
        run "$v-inspect-$fx" inspect "$f/$fx"
        run "$v-inspect-json-$fx" inspect "$f/$fx" --json
        run "$v-doctor-$fx" doctor "$f/$fx"
        run "$v-doctor-json-$fx" doctor "$f/$fx" --json
    done
    run "$v-inspect-subtasks" inspect "$f/odd-state-names" --subtasks
    run "$v-inspect-html" inspect "$f/stale-union" --html "$work/inspect.html"
    cp "$work/inspect.html" "$out/$v-inspect.html"
    run "$v-doctor-fail-on-warning" doctor "$f/stale-union-restore-0" --fail-on warning
    run "$v-plan-remove-state" remove-state "$f/stale-union" --uid source_consumer --state topic-partition-offset-states
    run "$v-plan-remove-state-json" remove-state "$f/stale-union" --state topic-partition-offset-states --json
    run "$v-plan-remove-state-metadata-only" remove-state "$f/operator-state-files" --state union-list --metadata-only
    run "$v-plan-remove-state-none" remove-state "$f/stale-union" --state no-such-state
    run "$v-plan-remove-operator" remove-operator "$f/stale-union" --uid source_consumer
    run "$v-plan-dedupe-union" dedupe-union "$f/stale-union" --state topic-partition-offset-states --json
    run "$v-plan-rename-operator" rename-operator "$f/stale-union" --uid source_consumer --to-uid renamed
    printf '# renames\nsource_consumer renamed-1\n\n' >"$work/map"
    run "$v-plan-rename-map" rename-operator "$f/stale-union" --map "$work/map" --json
    printf 'a b\nc b\n' >"$work/map-twice"
    run "$v-plan-rename-map-twice" rename-operator "$f/stale-union" --map "$work/map-twice"
    run "$v-plan-relocate-none" relocate "$f/keyed-rocksdb-incremental" --from /nowhere --to /elsewhere
    run "$v-plan-relocate" relocate "$f/keyed-rocksdb-incremental" --from /tmp/checkpoint-surgeon-fixtures --to s3://b/c
    run "$v-plan-relocate-check" relocate "$f/keyed-rocksdb-incremental" --from /tmp/checkpoint-surgeon-fixtures --to /x --check
    run "$v-plan-migrate-legacy" kafka migrate-legacy "$f/stale-union-restore-0" --uid source_consumer \
        --connector-version 3.4.0-1.20 --offset-not-set earliest
    run "$v-plan-migrate-legacy-json" kafka migrate-legacy "$f/stale-union-restore-0" --connector-version 5.0.0-2.2 --json
    run "$v-plan-drop-topic" kafka drop-topic "$f/flip27-source" --topic t
    run "$v-diff" diff "$f/stale-union-restore-1" "$f/stale-union"
    run "$v-diff-json" diff "$f/stale-union-restore-0" "$f/stale-union" --json --max-growth 2
    run "$v-history" history "$f/stale-union-restore-0" "$f/stale-union-restore-1" "$f/stale-union-restore-2" "$f/stale-union"
    run "$v-history-json" history "$f/stale-union-restore-0" "$f/stale-union-restore-1" "$f/stale-union-restore-2" "$f/stale-union" \
        --json --svg "$work/history.svg" --html "$work/history.html"
    cp "$work/history.svg" "$out/$v-history.svg"
    cp "$work/history.html" "$out/$v-history.html"
    rm -f "$work"/*.html "$work"/*.svg
    run "$v-ha-list" ha list "$f/stale-union"
    run "$v-ha-repair" ha repair "$f/stale-union" --state topic-partition-offset-states
done

# keyed states beside operator states in the mode column of diff and history (keyed value, keyed timers, ...)
k=tests/fixtures/1.20.3
run 1.20.3-diff-keyed diff "$k/keyed-hashmap" "$k/keyed-all-hashmap" --keyed
run 1.20.3-diff-keyed-json diff "$k/keyed-hashmap" "$k/keyed-all-hashmap" --keyed --json
run 1.20.3-history-keyed history "$k/keyed-hashmap" "$k/keyed-all-hashmap" --keyed --json --svg "$work/history.svg" \
    --html "$work/history.html"
cp "$work/history.svg" "$out/1.20.3-history-keyed.svg"
cp "$work/history.html" "$out/1.20.3-history-keyed.html"
rm -f "$work"/*.html "$work"/*.svg

run ha-list-without-flink ha list tests/fixtures/1.15.4/ha
run ha-doctor-without-flink doctor tests/fixtures/1.15.4/ha
# a file named as an HA file is read as one, even a backup (the FLINK_MISSING error shows it was)
cp tests/fixtures/1.15.4/ha/completedCheckpoint9f1487aa0bee "$work/completedCheckpoint9f1487aa0bee.backup-1"
run ha-doctor-backup-without-flink doctor "$work/completedCheckpoint9f1487aa0bee.backup-1"
run recover recover tests/fixtures/1.20.3/stale-union tests/fixtures/1.20.3/unaligned
run recover-json recover tests/fixtures/1.20.3/stale-union tests/fixtures/1.20.3/unaligned --json
run recover-ha-without-flink recover tests/fixtures/1.20.3/stale-union --ha-dir tests/fixtures/1.15.4/ha

# what names a choice of the caller (the library a Choice, the CLI its option or command)
j=$work/job
mkdir -p "$j/shared" "$j/chk-2" && cp -r tests/fixtures/1.20.3/stale-union "$j/chk-1"
echo orphan >"$j/shared/left-over" && touch -d '2020-01-01 00:00:00 UTC' "$j/shared/left-over"
run orphans-doctor doctor "$j/chk-1"
run orphans-doctor-json doctor "$j/chk-1" --json
run orphans-blocker orphans "$j" --older-than 3h
run orphans-blocker-json orphans "$j" --older-than 3h --json
sed -i 's/ changed [0-9]*s ago, / changed Ns ago, /' "$out/orphans-blocker" "$out/orphans-blocker-json"
run orphans-delete-young orphans "$j" --delete --older-than 5m
cp -r tests/fixtures/1.20.3/stale-union "$work/copy"
run repair-onto-itself remove-state "$work/copy" --state topic-partition-offset-states --apply --output "$work/copy"
mkdir "$work/link" && ln -s "$PWD/tests/fixtures/1.20.3/stale-union/_metadata" "$work/link/_metadata"
run repair-link-in-place remove-state "$work/link" --state topic-partition-offset-states --apply --in-place
cp -r tests/fixtures/1.20.3/keyed-rocksdb-incremental "$work/keyed"
run repair-on-flink-without-flink remove-keyed-state "$work/keyed" --state count --on-flink --apply --output "$work/keyed-out"
run remote-without-flink inspect s3://bucket/job/chk-1
printf 'value-state\nlist-state\n' >"$work/expect"
run doctor-stale-keyed doctor tests/fixtures/1.20.3/keyed-stale-hashmap --expect-states "$work/expect"
run doctor-stale-keyed-json doctor tests/fixtures/1.20.3/keyed-stale-hashmap --expect-states "$work/expect" --json

# watch: one job directory (a fixed path, so that the output names it the same way every run)
w=$fixed-watch
rm -rf "$w" && mkdir -p "$w/job-a" && cp -r tests/fixtures/1.20.3/stale-union-restore-0 "$w/job-a/chk-2"
# a FlinkKafkaConsumer state: the hook's JSON names the remedy kafka migrate-legacy
mkdir -p "$w/job-b" && cp -r tests/fixtures/1.20.3/union-growth-p2-r1 "$w/job-b/chk-1"
run watch-once watch --dir "$w" --once --on-finding "cat >> $work/hook.json"
cp "$work/hook.json" "$out/watch-hook.json"
sed -i -e '/checkpoint_surgeon_inspect_seconds{/d' -e '/checkpoint_surgeon_last_checkpoint_\(age\|timestamp\)_seconds{/d' \
    "$out/watch-once"
rm -rf "$w"
