#!/usr/bin/env bash
# The off-CPU probe's cost per sched_switch event, against perf stat counting the same
# tracepoint on the same child, interleaved in one run (bench/offcpu_cost.c says how): a
# Markdown section on stdout (make bench appends it to BENCHMARKS.md), with perf record -g
# taking both stacks of the same events beside it. Needs root; perf
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
# perf stat only counts; perf record -g walks the same two stacks of each event as the
# probe does, so that row is the like-for-like figure for the probe with both stacks.
echo "$out" | awk -F'|' '
	function num(s) { gsub(/[^0-9.+-]/, "", s); return s + 0 }
	index($0, "| offcpu, the child its target |") == 1 { p = num($4); hp = 1 }
	index($0, "| perf record -g") == 1 { q = num($4); hq = 1 }
	/every event of each window was walked/ { whole = 1 }
	END {
		if (hp && hq && q > 0 && whole)
			printf "\nThe same work in perf (perf record -g, both stacks of every event): %+.0f ns an event against the probe'"'"'s %+.0f ns, %.2f× the probe'"'"'s cost.\n", q, p, q / p
	}'
