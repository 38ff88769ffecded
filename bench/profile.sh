#!/usr/bin/env bash
# `schedlab profile -p` beside `perf record -g -p` on the same process at the same time:
# tests/helpers/three_split spinning in three functions (5, 3 and 2 ms of its CPU time in
# turn), both at 999 Hz on cpu-clock for SECONDS_PROFILE (5) seconds; each function's own
# share (its samples as the leaf) from both, the ten largest, and the largest gap. A
# Markdown section on stdout; progress on stderr. Needs root and perf (Debian linux-perf).
set -euo pipefail

BUILD=${BUILD:-build}
SECONDS_=${SECONDS_PROFILE:-5}
SL=$BUILD/schedlab
HELPER=$BUILD/tests/helpers/three_split
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
[ -x "$HELPER" ] || { echo "profile.sh: $HELPER is not built (make $HELPER)" >&2; exit 2; }

"$HELPER" --wait >"$tmp/own" &
pid=$!
until grep -q waiting "$tmp/own" 2>/dev/null; do sleep 0.05; done
kill -USR1 "$pid"
echo "profile.sh: schedlab profile and perf record on pid $pid for $SECONDS_ s" >&2
perf record -F 999 -e cpu-clock -g -p "$pid" -o "$tmp/perf.data" -- sleep "$SECONDS_" \
	>/dev/null 2>&1 &
perf_pid=$!
"$SL" profile -p "$pid" --duration "$SECONDS_" -o "$tmp/r" >/dev/null 2>"$tmp/err"
wait "$perf_pid"

# leaf function -> samples, both tools; kernel frames without our _[k] suffix
perf script -i "$tmp/perf.data" -F ip,sym 2>/dev/null |
	awk '/^$/ { leaf = 1; next } leaf { sub(/@@.*/, "", $2); c[$2]++; leaf = 0 }
	     BEGIN { leaf = 1 } END { for (f in c) print f, c[f] }' >"$tmp/perf.leaf"
awk '{ n = $NF; $NF = ""; k = split($0, f, ";"); l = f[k]; sub(/ $/, "", l);
       sub(/_\[k\]$/, "", l); c[l] += n } END { for (x in c) print x, c[x] }' \
	"$tmp/r/latest/oncpu.folded" >"$tmp/ours.leaf"

echo "## schedlab profile beside perf record"
echo
echo "The same process sampled by both at once for $SECONDS_ s (\`bench/profile.sh\`):"
echo "\`three_split\` spinning in three functions, 999 Hz cpu-clock each. Each function's"
echo "own share (its samples as the leaf of the stack), the ten largest by perf."
echo
awk -v ours="$tmp/ours.leaf" '
	BEGIN { while ((getline l < ours) > 0) { split(l, a, " "); o[a[1]] = a[2]; ot += a[2] } }
	{ p[$1] = $2; pt += $2 }
	END {
		printf "| function | perf record | schedlab profile | gap (points) |\n"
		printf "| --- | ---: | ---: | ---: |\n"
		n = 0
		for (f in p) names[++n] = f
		# ten largest by perf, a selection sort: n is small
		for (i = 1; i <= n && i <= 10; i++) {
			best = i
			for (j = i + 1; j <= n; j++) if (p[names[j]] > p[names[best]]) best = j
			t = names[i]; names[i] = names[best]; names[best] = t
			f = names[i]; ps = 100 * p[f] / pt; os = 100 * o[f] / ot
			gap = os - ps; if (gap < 0) gap = -gap; if (gap > worst) worst = gap
			printf "| %s | %.1f%% | %.1f%% | %.1f |\n", f, ps, os, os - ps
		}
		printf "\nSamples: perf %d, schedlab %d. Largest gap: %.1f points.\n", pt, ot, worst
	}' "$tmp/perf.leaf"
kill "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
echo
