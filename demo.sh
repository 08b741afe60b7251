#!/usr/bin/env bash
# The main job: reproduces the FlinkKafkaConsumer -> KafkaSource incident with real Flink 1.15.4
# and a real Kafka broker on 127.0.0.1, lets the stale union state grow over several restores,
# repairs the checkpoint with checkpoint-surgeon and restarts the job from it. Prints a table per
# restore and writes build/demo/incident-table.md and build/demo/incident-chart.svg (`gradle
# refreshDocs` copies them into docs/).
# Extra arguments go to gradle, e.g. ./demo.sh -PdemoArgs="--parallelism 3 --restores 5".
set -euo pipefail
cd "$(dirname "$0")"
. scripts/tools.sh
exec gradle --no-daemon -q demo "$@"
