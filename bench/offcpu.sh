#!/usr/bin/env bash
# The off-CPU probe's cost per sched_switch event, against perf stat counting the same
# tracepoint on the same child, interleaved in one run (bench/offcpu_cost.c says how): a
# Markdown section on stdout (make bench appends it to BENCHMARKS.md). Needs root; perf
# (Debian linux-perf) for its row.
set -euo pipefail

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-11}
SECONDS_PER=${SECONDS_PER:-0.3}

echo "## Off-CPU probe: cost per sched_switch event"
echo
echo "\`$BUILD/bench/offcpu_cost $ROUNDS $SECONDS_PER\`:"
echo
out=$("$BUILD/bench/offcpu_cost" "$ROUNDS" "$SECONDS_PER")
echo "$out"

# The goal, judged from the rows above, for each probe row (bench/per_event_goal.awk).
echo "$out" | awk -F'|' -v probe='| offcpu, the child its target |' -v col=4 \
	-v label='user and kernel stacks' -f "$(dirname "$0")/per_event_goal.awk"
echo "$out" | awk -F'|' -v probe='| offcpu --offcpu-stacks user, the child its target |' -v col=4 \
	-v label='--offcpu-stacks user' -f "$(dirname "$0")/per_event_goal.awk"
