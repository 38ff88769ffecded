#!/usr/bin/env bash
# What the counters probe costs: workers with --probes none and with --probes counters
# (the default events), interleaved pair by pair in one session so that the host's
# placement of the vCPUs changes both sides alike. Prints each pair's scores and the
# ratio of the means (counters ÷ none) with a 99.9% Student-t interval over the pairs'
# ratios. PAIRS (5), TIME (0.5), ITERATIONS (3) set the size. Compare within one run only.
set -euo pipefail

BUILD=${BUILD:-build}
PAIRS=${PAIRS:-5}
TIME=${TIME:-0.5}
ITERATIONS=${ITERATIONS:-3}
WORKLOAD=${WORKLOAD:-workers}
SL=$BUILD/schedlab
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

[ -x "$SL" ] || { echo "counters.sh: $SL is missing: run make first" >&2; exit 1; }

score() { # PROBES
	"$SL" run "$WORKLOAD" --forks 1 --warmup 1 --iterations "$ITERATIONS" --time "$TIME" \
		--probes "$1" --out "$OUT" --json 2>/dev/null |
		awk '/^  "score": / && !done { gsub(/,/, "", $2); print $2; done = 1 }'
}

ratios=()
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
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
printf '%s\n' "${ratios[@]}" | awk '
	{ x[NR] = $1; s += $1 }
	END {
		n = NR; m = s / n
		for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
		sd = n > 1 ? sqrt(v / (n - 1)) : 0
		# t quantiles for 99.9% two-sided, n - 1 = 1..9 degrees of freedom
		split("636.62 31.60 12.92 8.61 6.87 5.96 5.41 5.04 4.78", t, " ")
		q = n > 1 && n <= 10 ? t[n - 1] : 3.29
		h = n > 1 ? q * sd / sqrt(n) : 0
		printf "\nthroughput with counters ÷ without: %.4f ± %.4f (99.9%%, %d pairs)\n", m, h, n
	}'
