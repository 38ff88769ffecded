#!/usr/bin/env bash
# What turning samples into answers costs: a Markdown section on stdout (make bench appends
# it to BENCHMARKS.md), progress on stderr. Needs root and perf (Debian linux-perf).
#
#   1. Folding and symbolizing: one fork of `workers` (both CPUs busy) recorded by
#      `perf record -g -p PID` at a high rate; the same perf.data then folded three ways:
#      schedlab's analysis library (bench/fold.c: count identical stacks, name each
#      distinct one, fold), `perf script | awk` folding as stackcollapse-perf.pl does, and
#      `perf report --stdio`. Ours again over the recorded samples repeated to 1,000,000.
#   2. Rendering: `schedlab flame` on a folded file of 100,000 distinct stacks (generated
#      with a fixed seed), frames narrower than 0.1 px left out.
set -euo pipefail

BUILD=${BUILD:-build}
SL=$BUILD/schedlab
FOLD=$BUILD/bench/fold
RECORD_S=${RECORD_S:-10}
RATE=${RATE:-50000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { echo "bench: analysis: $*" >&2; }
secs() { # COMMAND... : wall seconds, the command's output discarded
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
calc() { awk "BEGIN { printf \"%.3f\", $1 }"; } # EXPRESSION
fmt() { printf "%.0f" "$1" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta'; } # 1,234,567

# ---- 1. a recorded profile ----------------------------------------------------------
say "recording a fork of workers for ${RECORD_S} s at ${RATE} Hz"
"$SL" run workers --probes none --forks 1 --warmup 1 --iterations 1 \
	--time $((RECORD_S + 4)) --out "$tmp/runs" >/dev/null 2>&1 &
runner=$!
pid=
for _ in $(seq 100); do
	pid=$(pgrep -f -P "$runner" "schedlab __fork" | head -1 || true)
	[ -n "$pid" ] && break
	sleep 0.1
done
[ -n "$pid" ] || { echo "bench: analysis: the fork did not start" >&2; exit 1; }
sleep 1.5 # past its warm-up iteration
cat "/proc/$pid/maps" > "$tmp/maps"
perf record -q -e cpu-clock -F "$RATE" -g -p "$pid" -o "$tmp/perf.data" -- sleep "$RECORD_S" \
	2>/dev/null
wait "$runner"
perf script -i "$tmp/perf.data" -F tid,ip,dso 2>/dev/null > "$tmp/raw.txt"
# a sample's first line is its tid, padded with spaces; its frames' lines begin with a tab
samples=$(grep -c -v -e $'^\t' -e '^$' "$tmp/raw.txt" || true)
say "$samples samples recorded"

# stackcollapse-perf.pl's folding: one line per sample, frames root first, counts summed
collapse='
	/^\t/ { f[n++] = $2; next }
	/^[^\t]/ && !/^$/ { n = 0; next }
	/^$/ { if (n) { s = f[n - 1]; for (i = n - 2; i >= 0; i--) s = s ";" f[i]; c[s]++ } n = 0 }
	END { for (s in c) print s, c[s] }'
perf_fold() {
	perf script -i "$tmp/perf.data" -F comm,tid,ip,sym 2>/dev/null | awk "$collapse" > "$tmp/perf.folded"
}
t_perf_fold=$(secs perf_fold)
t_perf_report=$(secs perf report -i "$tmp/perf.data" --stdio)
read -r _ _ _ ours_stacks _ ours_frames _ ours_ms _ ours_total < <("$FOLD" "$tmp/maps" "$pid" "$tmp/ours.folded" < "$tmp/raw.txt")
[ "$ours_total" = "$samples" ] || { echo "bench: analysis: folded $ours_total of $samples samples" >&2; exit 1; }
perf_stacks=$(wc -l < "$tmp/perf.folded")

# the recorded samples read again until there are 1,000,000
reps=$(( (1000000 + samples - 1) / samples ))
for _ in $(seq "$reps"); do cat "$tmp/raw.txt"; done > "$tmp/raw-1m.txt"
read -r _ m_samples _ m_stacks _ _ _ m_ms _ _ < <("$FOLD" "$tmp/maps" "$pid" "$tmp/ours-1m.folded" < "$tmp/raw-1m.txt")

# ---- 2. a 100,000-stack flame graph -------------------------------------------------
say "rendering 100,000 distinct stacks"
awk 'BEGIN {
	srand(7)
	while (n < 100000) {
		d = 4 + int(rand() * 24); s = "root"
		for (i = 0; i < d; i++) s = s ";f" int(rand() * (i < 3 ? 4 : 40)) "_" i
		if (!(s in seen)) { seen[s] = 1; n++; print s, 1 + int(1000 / (1 + rand() * 999)) }
	}
}' > "$tmp/big.folded"
big_samples=$(awk '{ t += $NF } END { print t }' "$tmp/big.folded")
t_svg=$(secs "$SL" flame "$tmp/big.folded" -o "$tmp/big.svg")
svg_frames=$(grep -o '<g><title>' "$tmp/big.svg" | wc -l)
svg_mib=$(du -m "$tmp/big.svg" | cut -f1)
pruned=$(grep -o '[0-9]* frames narrower than [^<]*' "$tmp/big.svg" | head -1 || true)

cat <<EOF
## Folding, symbolizing and rendering

Reproduce with \`make bench\` (this section: \`BUILD=build bench/analysis.sh\`; RECORD_S=$RECORD_S,
RATE=$RATE). One fork of \`workers\` recorded by \`perf record -e cpu-clock -F $RATE -g -p PID\`
for $RECORD_S s: $(fmt "$samples") samples, user and kernel stacks. The same perf.data folded three
ways; wall time of each, on this shared machine.

| what | samples | distinct stacks | time | samples/s |
| --- | ---: | ---: | ---: | ---: |
| schedlab's analysis library (\`bench/fold.c\`: count, name, fold) | $(fmt "$samples") | $(fmt "$ours_stacks") | $(calc "$ours_ms / 1000") s | $(fmt "$(calc "$samples * 1000 / $ours_ms")") |
| the same, the samples repeated $reps times | $(fmt "$m_samples") | $(fmt "$m_stacks") | $(calc "$m_ms / 1000") s | $(fmt "$(calc "$m_samples * 1000 / $m_ms")") |
| \`perf script \| awk\` (stackcollapse-perf.pl's folding) | $(fmt "$samples") | $(fmt "$perf_stacks") | $t_perf_fold s | $(fmt "$(calc "$samples / $t_perf_fold")") |
| \`perf report --stdio\` | $(fmt "$samples") | | $t_perf_report s | $(fmt "$(calc "$samples / $t_perf_report")") |

Ours is timed from reading the fork's maps and /proc/kallsyms to the sorted folded table
($(fmt "$ours_frames") frames named); perf's text was parsed before the clock started, and perf's
user addresses (offsets into their files) were turned back into the addresses the fork ran at.
Its folded total equals the samples recorded. Goal: 1,000,000 samples in under 1 s.

\`schedlab flame\` on $(fmt 100000) distinct stacks ($(fmt "$big_samples") samples, 4 to 27 frames,
fixed seed): $t_svg s for the whole command, a ${svg_mib} MiB SVG of $(fmt "$svg_frames") frames${pruned:+; $pruned}.
Goal: under 1 s.
EOF
