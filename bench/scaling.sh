#!/usr/bin/env bash
# make bench-scaling: how the presets hold up as workers are added, on this machine.
# spawn-join under each work-stealing preset at 1, 2, 4, ... workers up to the CPUs
# (at least 2), beside Go's goroutines and pthread create/join, with the counters that
# explain the shape: steal attempts, stolen tasks and parks per op. Then the studied
# blocking-TCP case under ce and the three kyo presets with the default worker count.
# Writes Markdown on stdout, progress on stderr. Compare figures within one run only.
set -euo pipefail

BUILD=${BUILD:-build}
WARMUP=${WARMUP:-1}
ITERATIONS=${ITERATIONS:-3}
TIME=${TIME:-0.5}
SL=$BUILD/schedlab
PT=$BUILD/bench/pthreads
GOPEER=$BUILD/bench/gopeer
CPUS=$(nproc)

say() { echo "bench-scaling: $*" >&2; }

for p in "$SL" "$PT" "$GOPEER"; do
	[ -x "$p" ] || { say "$p is missing: run 'make bench' once first"; exit 1; }
done

# One schedlab run's score ± error and its counters per op, as table cells; "failed: why"
# when it did not finish.
cells() { # ARGS...
	local out
	if ! out=$("$SL" run "$@" --forks 1 --warmup "$WARMUP" --iterations "$ITERATIONS" \
		--time "$TIME" --probes none --json 2>&1); then
		echo "failed: $(echo "$out" | grep -m1 -v '^ ' | cut -c1-120) | | |"
		return
	fi
	echo "$out" | awk '
		/^  "score": / { gsub(/[,]/, "", $2); score = $2 }
		/^  "error": / { gsub(/[,]/, "", $2); err = $2 }
		/^  "runtime": / {
			line = $0
			sub(/^  "runtime": \{/, "", line)
			sub(/\},?$/, "", line)
			n = split(line, kv, /, /)
			for (i = 1; i <= n; i++) {
				split(kv[i], p, /": /); key = p[1]; sub(/.*"/, "", key)
				v[key] = p[2] + 0
			}
		}
		END {
			ops = v["ops"] ? v["ops"] : 1
			printf "%.0f ± %.0f | %.0f | %.1f | %.2f\n", score, err,
			       v["steal_attempts"] / ops, v["stolen"] / ops, v["parks"] / ops
		}'
}

# A peer's mean over its measured iterations (one figure a line).
mean() { awk '{ s += $1; n++ } END { if (n) printf "%.0f", s / n; else printf "failed" }'; }

workers=(1)
for ((w = 2; w < CPUS; w *= 2)); do workers+=("$w"); done
[ "$CPUS" -ge 2 ] && workers+=("$CPUS") || workers+=(2)

cat <<MD
# Scaling with workers

Reproduce with \`make bench-scaling\` (WARMUP=$WARMUP, ITERATIONS=$ITERATIONS, TIME=$TIME; one fork
per row). On $(uname -sr) $(uname -m), $CPUS CPUs, $(date -u +%F); no probes attached. Each row
is one run: mean ± 99.9% half-width over its measured iterations.

## spawn-join by preset and workers

One op spawns 1,000 children one after another, each joined before the next. Per op:
steal attempts (victims examined), tasks stolen, and parks.

| preset | workers | ops/s | steal attempts | stolen | parks |
| --- | ---: | ---: | ---: | ---: | ---: |
MD
for preset in ce tokio go kyo; do
	for w in "${workers[@]}"; do
		say "spawn-join $preset workers=$w"
		echo "| \`$preset\` | $w | $(cells spawn-join --preset "$preset" -c "workers=$w") |"
	done
done
say "go spawn-join, pthread create/join"
cat <<MD

The same op elsewhere, on all $CPUS CPUs:

| peer | ops/s |
| --- | ---: |
| Go, goroutine + \`sync.WaitGroup\` (GOMAXPROCS = $CPUS) | $("$GOPEER" spawn-join --warmup "$WARMUP" --iterations "$ITERATIONS" --time "$TIME" | mean) |
| pthread create/join | $("$PT" spawn-join-create --warmup "$WARMUP" --iterations "$ITERATIONS" --time "$TIME" | mean) |

## tcp-blocking: the studied case at the default worker count

256 exchanges over 64 connections, a 1 ms blocking read each. The study measured 149
(Loom), 4.96 (Kyo), 82 (Kyo with flush) and 145 (Kyo tuned) batches/s.

| preset | ops/s | steal attempts | stolen | parks |
| --- | ---: | ---: | ---: | ---: |
MD
for preset in ce kyo kyo-flush kyo-tuned; do
	say "tcp-blocking $preset"
	echo "| \`$preset\` | $(TIME=1 cells tcp-blocking --preset "$preset") |"
done
