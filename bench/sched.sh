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

# The goal (issue: offcpu and sched cost no more than perf stat counting the tracepoint,
# per event), judged here from the two rows above, never typed in.
echo "$out" | awk -F'|' -v probe='| sched probe |' -v perf='| perf stat' -v col=5 '
	function num(s) { gsub(/[^0-9.+-]/, "", s); return s + 0 }
	index($0, probe) == 1 { p = num($col); hp = 1 }
	index($0, perf) == 1 { q = num($col); hq = 1 }
	END {
		if (!hp || !hq) { print "\nGoal (≤ perf stat per event): not measured: a row is missing."; exit }
		printf "\nGoal, the probe'"'"'s cost per event ≤ perf stat'"'"'s in the same rounds: %s (%+.0f ns against %+.0f ns).\n",
			p <= q ? "**met**" : "**not met**", p, q
	}'

