#!/usr/bin/env bash
# make bench: the runtime's spawn-join and workers beside the same jobs written with
# plain pthreads, measured in one run and interleaved fork by fork (so that a change in
# what the host does to this VM hits every job alike). Writes Markdown on stdout.
set -euo pipefail

BUILD=${BUILD:-build}
FORKS=${FORKS:-3}
WARMUP=${WARMUP:-3}
ITERATIONS=${ITERATIONS:-3}
TIME=${TIME:-1}
SL=$BUILD/schedlab
PT=$BUILD/bench/pthreads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

say() { echo "bench: $*" >&2; }

# schedlab's measured iterations, one number a line, from result.json's "samples".
schedlab_samples() {
	"$SL" run "$1" --preset "$2" --forks 1 --warmup "$WARMUP" --iterations "$ITERATIONS" \
		--time "$TIME" --probes none --json --out "$tmp/results" 2>/dev/null |
		sed -n 's/^  "samples": \[\(.*\)\],$/\1/p' | tr ',' '\n' | sed 's/ //g;/^$/d'
}

peer_samples() {
	"$PT" "$1" --warmup "$WARMUP" --iterations "$ITERATIONS" --time "$TIME"
}

jobs="rt-spawn-join pt-spawn-join-create pt-spawn-join-pool rt-workers pt-workers-create pt-workers-pool"
for r in $(seq 1 "$FORKS"); do
	for j in $jobs; do
		say "fork $r/$FORKS: $j"
		case $j in
		rt-*) schedlab_samples "${j#rt-}" ce >>"$tmp/$j" ;;
		pt-*) peer_samples "${j#pt-}" >>"$tmp/$j" ;;
		esac
	done
done

declare -A mean err n
for j in $jobs; do
	read -r mean[$j] err[$j] n[$j] < <("$PT" summarize <"$tmp/$j")
done

group() { LC_ALL=C printf "%.0f" "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
fmt() { echo "$(group "${mean[$1]}") ± $(group "${err[$1]}") (${n[$1]})"; }
ratio() { LC_ALL=C awk -v a="${mean[$1]}" -v b="${mean[$2]}" 'BEGIN { printf "%.2f×", a / b }'; }

cat <<MD
# Benchmarks

Reproduce with \`make bench\` (FORKS, WARMUP, ITERATIONS and TIME override the defaults
below). Figures are mean ops/s ± the 99.9% confidence-interval half-width (Student's t,
n − 1 degrees of freedom) over $FORKS forks × $ITERATIONS measured iterations of ${TIME} s,
each after $WARMUP warm-up iterations. The jobs ran in one session, interleaved fork by fork,
on $(uname -sr) $(uname -m), $(nproc) CPUs, $(date -u +%Y-%m-%d). This is a shared virtual
machine: read the ratios, which were measured side by side, not the absolute figures.

## The runtime against plain pthreads

The same ops and checks as the workloads: \`spawn-join\` spawns and joins 1,000 children in
sequence; \`workers\` splits 4,096 values × 64 rounds over 8 tasks. The runtime runs the
\`ce\` preset with no probes attached. The pthread peers are in \`bench/pthreads.c\`:
*create/join* starts a thread per child (or per slice), *pool* submits to a persistent pool of
one thread per CPU with one shared queue, as a plain executor does.

| job | schedlab (ce) | pthread create/join | schedlab ÷ create/join | pthread pool | schedlab ÷ pool |
| --- | ---: | ---: | ---: | ---: | ---: |
| spawn-join | $(fmt rt-spawn-join) | $(fmt pt-spawn-join-create) | $(ratio rt-spawn-join pt-spawn-join-create) | $(fmt pt-spawn-join-pool) | $(ratio rt-spawn-join pt-spawn-join-pool) |
| workers | $(fmt rt-workers) | $(fmt pt-workers-create) | $(ratio rt-workers pt-workers-create) | $(fmt pt-workers-pool) | $(ratio rt-workers pt-workers-pool) |
MD
