#!/usr/bin/env bash
# Builds everything and runs all tests (gradle fullTest): Rust (cargo test --release, and the same
# tests built for aarch64 under qemu-user), plain JUnit tests and the Flink 1.15.4 tests on a Java 11
# runtime, the tests against every other Flink version, the Kafka incident test and the Maven
# consumer build (tests/consumer, against the artifact published to ~/.m2); then a short fuzz run
# of every fuzz target (FUZZ_SECONDS each, default 20; FUZZ_SECONDS=0 skips it).
# Extra arguments are passed to gradle. The last line printed is "N passed, N failed".
set -uo pipefail

cd "$(dirname "$0")"

. scripts/tools.sh

# Stale results must not be counted.
rm -rf build/test-results build/cargo-test.log build/cargo-test-aarch64.log tests/consumer/target/surefire-reports

# Servers and programs the tests start themselves: Debian's Prometheus (watch's metrics are
# scraped by a real one) and Chromium (renders the HTML report headless).
missing=""
[ -x /usr/bin/prometheus ] || missing="$missing prometheus"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi
    echo "installing Debian's$missing" >&2
    $sudo apt-get update >&2 && $sudo apt-get install -y $missing >&2 || { echo "could not install$missing" >&2; exit 1; }
fi

java11=$(scripts/java11.sh) || { echo "no Java 11 runtime for the Java 11 tests" >&2; exit 1; }
# the consumer build (gradle consumerTest) is a plain Maven build
if ! command -v mvn >/dev/null 2>&1; then
    apt-get update >&2 && apt-get install -y maven >&2
fi
gradle --no-daemon --continue -Pjava11="$java11" fullTest "$@"
gradle_rc=$?

# A bounded fuzz smoke run (FUZZ_SECONDS per target; 0 skips it), counted as one test per target.
fuzz_passed=0
fuzz_failed=0
if [ "${FUZZ_SECONDS:-20}" -gt 0 ]; then
    fuzz_out=$(native/fuzz/run.sh "${FUZZ_SECONDS:-20}")
    if [ $? -eq 2 ]; then fuzz_out="fuzz: could not build the fuzz targets: CRASH"; fi
    echo "$fuzz_out"
    fuzz_passed=$(printf '%s\n' "$fuzz_out" | grep -c ', ok$' || true)
    fuzz_failed=$(printf '%s\n' "$fuzz_out" | grep -c 'CRASH' || true)
fi

# ---- summary --------------------------------------------------------------------------------
rust_passed=0
rust_failed=0
if [ -f build/cargo-test.log ]; then
    # "test result: ok. 12 passed; 0 failed; 0 ignored; ..." (one line per test binary)
    while read -r p f; do
        rust_passed=$((rust_passed + p))
        rust_failed=$((rust_failed + f))
    done < <(sed -n 's/.*test result: [A-Za-z]*\. \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1 \2/p' build/cargo-test.log)
fi
# The same Rust tests built for aarch64 and run under qemu-user.
if [ -f build/cargo-test-aarch64.log ]; then
    while read -r p f; do
        rust_passed=$((rust_passed + p))
        rust_failed=$((rust_failed + f))
    done < <(sed -n 's/.*test result: [A-Za-z]*\. \([0-9][0-9]*\) passed; \([0-9][0-9]*\) failed.*/\1 \2/p' build/cargo-test-aarch64.log)
fi

junit_tests=0
junit_failed=0
junit_skipped=0
if [ -d build/test-results ] || [ -d tests/consumer/target/surefire-reports ]; then
    while IFS= read -r -d '' xml; do
        # Only the <testsuite ...> opening tag carries the counts.
        head=$(grep -m1 -o '<testsuite [^>]*>' "$xml" || true)
        attr() { printf '%s' "$head" | sed -n "s/.* $1=\"\([0-9]*\)\".*/\1/p"; }
        t=$(attr tests); f=$(attr failures); e=$(attr errors); s=$(attr skipped)
        junit_tests=$((junit_tests + ${t:-0}))
        junit_failed=$((junit_failed + ${f:-0} + ${e:-0}))
        junit_skipped=$((junit_skipped + ${s:-0}))
    done < <(find build/test-results tests/consumer/target/surefire-reports -name 'TEST-*.xml' -print0 2>/dev/null)
fi
junit_passed=$((junit_tests - junit_failed - junit_skipped))

passed=$((rust_passed + junit_passed + fuzz_passed))
failed=$((rust_failed + junit_failed + fuzz_failed))

echo "rust: ${rust_passed} passed, ${rust_failed} failed; junit: ${junit_passed} passed, ${junit_failed} failed, ${junit_skipped} skipped; fuzz: ${fuzz_passed} passed, ${fuzz_failed} failed; gradle exit ${gradle_rc}"
# The tests must leave the checkout as they found it (fixtures included): anything they added or
# changed outside ignored paths counts as a failure.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    dirty=$(git status --porcelain --untracked-files=all)
    if [ -n "$dirty" ]; then
        echo "the tests left the git tree changed:"
        printf '%s\n' "$dirty" | head -20
        failed=$((failed + 1))
    fi
fi
if [ "$gradle_rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    # The build itself failed (compile error, crashed JVM, ...): count it as a failure.
    failed=1
fi
echo "${passed} passed, ${failed} failed"

if [ "$gradle_rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
    exit 1
fi
exit 0
