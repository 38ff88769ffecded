#!/usr/bin/env bash
# Each probe's attach time (open, load, attach: what its line in report.md says) on a
# short run of `workers`, with the machine otherwise idle and then with a busy loop on
# each CPU, the probes taken in turn within each round: a Markdown section on stdout
# (make bench appends it to BENCHMARKS.md). The goal is 50 ms in every run. Needs root.
# counters has no BPF: its attach is libpfm4's encoding of the events and perf_event_open
# of their groups, which each fork does for itself; report.md gives the longest fork's.
set -euo pipefail

BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-9}
PROBES=${PROBES:-oncpu offcpu sched runtime alloc counters}
LONG="--iterations 3 --time 1"
BIN=$BUILD/schedlab

tmp=$(mktemp -d)
busy=()
stop_busy() {
	for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || :; done
	busy=()
}
trap 'stop_busy; rm -rf "$tmp"' EXIT

# One run with probe $1 (and measured iterations $2, 1 x 0.1 s unless given); its attach
# time in ms on stdout.
attach_ms() {
	local p=$1 ms
	local -a iters=(${2:---iterations 1 --time 0.1})

	"$BIN" run workers --forks 1 --warmup 0 "${iters[@]}" --probes "$p" \
		-o "$tmp/runs" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; exit 1; }
	ms=$(grep -o -m1 "^- \*\*$p\*\*: .*attached in [0-9.]* ms" "$tmp/runs/latest/report.md" |
		grep -o 'attached in [0-9.]*' | grep -o '[0-9.]*$')
	[ -n "$ms" ] || { echo "attach.sh: no attach time for $p in $tmp/runs/latest/report.md" >&2; exit 1; }
	# the sizes oncpu's maps got, as result.json states them
	[ "$p" != oncpu ] || grep -o '"maps": {"stack_entries": [0-9]*, "count_entries": [0-9]*' \
		"$tmp/runs/latest/result.json" | grep -o '[0-9][0-9]*' | paste -sd' ' \
		>"$tmp/maps.$([ -n "${2:-}" ] && echo long || echo short)"
	rm -rf "$tmp/runs"
	echo "$ms"
}

# ROUNDS rounds of every probe into $tmp/$1.<probe>.
measure() {
	for _ in $(seq "$ROUNDS"); do
		for p in $PROBES; do
			attach_ms "$p" >>"$tmp/$1.$p"
		done
		# oncpu's maps are sized for the run's measured time: also at the CLI's default
		attach_ms oncpu "$LONG" >>"$tmp/$1.oncpu-long"
	done
}

measure quiet
for _ in $(seq "$(nproc)"); do
	bash -c 'while :; do :; done' &
	busy+=($!)
done
measure busy
stop_busy

# "median (min-max)" of the numbers in file $1, and whether every one is within 50 ms.
summary() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f (%.1f-%.1f)|%s", m, v[1], v[NR], v[NR] <= 50 ? "yes" : "no"
	}'
}

echo "## Probes: attach time"
echo
echo "\`BUILD=$BUILD ROUNDS=$ROUNDS bench/attach.sh\`: each probe alone on"
echo "\`schedlab run workers --forks 1 --warmup 0 --iterations 1 --time 0.1 --probes PROBE\`,"
echo "$ROUNDS rounds, the probes in turn within a round; the time is report.md's (open, load and"
echo "attach), in ms; for counters, which loads no BPF, libpfm4's encoding of its default events"
echo "and perf_event_open of their groups in the fork. Busy: a busy loop on each of the $(nproc)"
echo "CPUs. Goal: 50 ms in every run."
echo
echo "| probe | quiet: median (min-max) | busy: median (min-max) | within 50 ms, quiet | within 50 ms, busy |"
echo "| --- | --- | --- | --- | --- |"
for p in $PROBES oncpu-long; do
	IFS='|' read -r q qok <<<"$(summary "$tmp/quiet.$p")"
	IFS='|' read -r b bok <<<"$(summary "$tmp/busy.$p")"
	label=$p
	[ "$p" = oncpu-long ] && label="oncpu, \`$LONG\` (the CLI's default)"
	echo "| $label | $q | $b | $qok | $bok |"
done
read -r s_short c_short <"$tmp/maps.short"
read -r s_long c_long <"$tmp/maps.long"
echo
echo "oncpu's maps are preallocated, the counts sized for the samples a fork's measured iterations"
echo "can take on every CPU and the stacks, which repeat, for a quarter of them: $s_short distinct"
echo "stacks and $c_short counts for 1 × 0.1 s, $s_long and $c_long for \`$LONG\` on these $(nproc) CPUs"
echo "(result.json's \`maps\`). Each probe's attach time leaves out turning on the kernel's BPF"
echo "statistics, which the process does once before the first attach (2.5 to 4 ms here)."
