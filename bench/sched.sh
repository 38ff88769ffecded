#!/usr/bin/env bash
# The sched probe's cost per context switch, against perf stat counting the same
# tracepoint on the same child, interleaved in one run (bench/sched_cost.c says how): a
# Markdown section on stdout (make bench appends it to BENCHMARKS.md). Needs root, the
# test helpers (build/tests/helpers/sched_child) and perf (Debian linux-perf) for its row.
set -euo pipefail

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-11}
EXCHANGES=${EXCHANGES:-100000}
CPU=${CPU:-1}

echo "## Scheduler probe: cost per context switch"
echo
echo "\`SCHEDLAB_BUILD=$BUILD $BUILD/bench/sched_cost $ROUNDS $EXCHANGES $CPU\`:"
echo
out=$(SCHEDLAB_BUILD=$BUILD "$BUILD/bench/sched_cost" "$ROUNDS" "$EXCHANGES" "$CPU")
echo "$out"

# The goal, judged from the two rows above (bench/per_event_goal.awk).
echo "$out" | awk -F'|' -v probe='| sched probe |' -v col=5 -f "$(dirname "$0")/per_event_goal.awk"
