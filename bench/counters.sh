#!/usr/bin/env bash
# What the counters probe costs, two ways, each interleaved pair by pair in one session
# so that the host's placement of the vCPUs changes both sides alike:
#  1. its mechanism: the CPU time of a context switch with the default events inherited
#     (build/bench/counters_switch: two threads on one CPU, process CPU time per round
#     trip of two switches), which other work on the machine does not inflate;
#  2. its effect: workers with --probes none and with --probes counters, the throughput
#     ratio (counters ÷ none).
# Each: the pairs, then the mean ratio with a 99.9% Student-t interval over the pairs.
# PAIRS (5), TRIPS (50000), TIME (0.5), ITERATIONS (3) set the size.
set -euo pipefail

BUILD=${BUILD:-build}
PAIRS=${PAIRS:-5}
TIME=${TIME:-0.5}
ITERATIONS=${ITERATIONS:-3}
WORKLOAD=${WORKLOAD:-workers}
TRIPS=${TRIPS:-50000}
SL=$BUILD/schedlab
SW=$BUILD/bench/counters_switch
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

for p in "$SL" "$SW"; do
	[ -x "$p" ] || { echo "counters.sh: $p is missing: make $p" >&2; exit 1; }
done
EVENTS=cycles,instructions,cache-references,cache-misses,branch-misses,perf::task-clock,perf::context-switches,perf::cpu-migrations,perf::page-faults

# mean ± 99.9% half-width of the numbers on stdin, one a line
interval() { # WHAT
	awk -v what="$1" '
	{ x[NR] = $1; s += $1 }
	END {
		n = NR; m = s / n
		for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
		sd = n > 1 ? sqrt(v / (n - 1)) : 0
		# t quantiles for 99.9% two-sided, n - 1 = 1..9 degrees of freedom
		split("636.62 31.60 12.92 8.61 6.87 5.96 5.41 5.04 4.78", t, " ")
		q = n > 1 && n <= 10 ? t[n - 1] : 3.29
		h = n > 1 ? q * sd / sqrt(n) : 0
		printf "\n%s: %.4f ± %.4f (99.9%%, %d pairs)\n\n", what, m, h, n
	}'
}

switch_ns() { # [EVENTS]
	"$SW" "$TRIPS" "$@" | awk '/^ns_per_round_trip / { print $2 }'
}

echo "## Counters probe: its cost"
echo
echo "Two ways, each interleaved pair by pair: the CPU time of a context-switch round trip"
echo "(two threads on one CPU) with the probe's default events inherited ÷ without, and"
echo "\`$WORKLOAD\`'s throughput with \`--probes counters\` ÷ \`--probes none\`."
echo
echo "\`BUILD=$BUILD bench/counters.sh\` (PAIRS=$PAIRS, TRIPS=$TRIPS; $WORKLOAD with ITERATIONS=$ITERATIONS of TIME=$TIME s)."
echo
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| pair | round trip, no events (ns CPU) | with the default events | ratio |"
echo "| ---: | ---: | ---: | ---: |"
sratios=()
for ((i = 1; i <= PAIRS; i++)); do
	if ((i % 2)); then a=$(switch_ns); b=$(switch_ns "$EVENTS")
	else b=$(switch_ns "$EVENTS"); a=$(switch_ns); fi
	r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')
	sratios+=("$r")
	printf '| %d | %.1f | %.1f | %s |\n' "$i" "$a" "$b" "$r"
done
printf '%s\n' "${sratios[@]}" | interval "CPU per context-switch round trip, with events ÷ without"

score() { # PROBES
	"$SL" run "$WORKLOAD" --forks 1 --warmup 1 --iterations "$ITERATIONS" --time "$TIME" \
		--probes "$1" --out "$OUT" --json 2>/dev/null |
		awk '/^  "score": / && !done { gsub(/,/, "", $2); print $2; done = 1 }'
}

ratios=()
echo "| pair | none | counters | ratio |"
echo "| ---: | ---: | ---: | ---: |"
for ((i = 1; i <= PAIRS; i++)); do
	# alternate which goes first, so that neither always follows the other
	if ((i % 2)); then a=$(score none); b=$(score counters)
	else b=$(score counters); a=$(score none); fi
	r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", b / a }')
	ratios+=("$r")
	printf '| %d | %.1f | %.1f | %s |\n' "$i" "$a" "$b" "$r"
done
printf '%s\n' "${ratios[@]}" | interval "$WORKLOAD throughput with counters ÷ without"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
