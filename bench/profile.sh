#!/usr/bin/env bash
# `schedlab profile -p` beside `perf record -g -p` on the same process at the same time,
# both at 999 Hz on cpu-clock, both walking frame pointers (perf -g, --call-graph fp), for
# SECONDS_PROFILE (5) seconds: each function's own share
# (its samples as the leaf), the ten largest by perf, and each category's share, perf's
# stacks classified by the same stack rules (bench/categories.c); the largest gap of
# each. Two programs: tests/helpers/three_split spinning in three functions (5, 3 and 2
# ms of its CPU time in turn), and the Go peer running spawn-join (its scheduler's frames
# in the runtime categories), where it is built. A Markdown section on stdout; progress
# on stderr. Needs root and perf (Debian linux-perf).
set -euo pipefail

BUILD=${BUILD:-build}
SECONDS_=${SECONDS_PROFILE:-5}
SL=$BUILD/schedlab
HELPER=$BUILD/tests/helpers/three_split
CATEGORIES=$BUILD/bench/categories
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
for p in "$SL" "$HELPER" "$CATEGORIES"; do
	[ -x "$p" ] || { echo "profile.sh: $p is not built (make bench)" >&2; exit 2; }
done

# Both tools on $pid for SECONDS_, at once; their folded stacks into $tmp/LABEL.{perf,ours}.
sample() { # LABEL
	echo "profile.sh: $1: schedlab profile and perf record on pid $pid for $SECONDS_ s" >&2
	perf record -F 999 -e cpu-clock -g -p "$pid" -o "$tmp/perf.data" -- sleep "$SECONDS_" \
		>/dev/null 2>&1 &
	local perf_pid=$!
	rm -rf "$tmp/r"
	"$SL" profile -p "$pid" --duration "$SECONDS_" --call-graph fp -o "$tmp/r" >/dev/null \
		2>"$tmp/err"
	wait "$perf_pid"
	# perf's call chains, leaf first, folded root first; kernel frames as ours name them
	perf script -i "$tmp/perf.data" -F ip,sym,dso 2>/dev/null | awk '
		function flush() { if (n) { s = f[n]; for (i = n - 1; i >= 1; i--) s = s ";" f[i]
					    c[s]++ } n = 0 }
		/^[ \t]*$/ { flush(); next }
		{ dso = $NF; sym = $2; for (i = 3; i < NF; i++) sym = sym " " $i
		  sub(/@@.*/, "", sym); if (sym == "") sym = "[unknown]"
		  if (dso ~ /kernel/) sym = sym "_[k]"; f[++n] = sym }
		END { flush(); for (s in c) print s, c[s] }' >"$tmp/$1.perf"
	# ours without the category, thread-name and "-" frames
	sed -E 's/^\[[a-z-]+\];[^;]*;//; s/;-;/;/' "$tmp/r/latest/oncpu.folded" >"$tmp/$1.ours"
}

# Each function's own share from both, the ten largest by perf.
functions() { # LABEL
	leaves() { awk '{ n = $NF; $NF = ""; k = split($0, f, ";"); l = f[k]; sub(/ $/, "", l)
			  c[l] += n } END { for (x in c) print x, c[x] }' "$1"; }
	leaves "$tmp/$1.ours" >"$tmp/ours.leaf"
	leaves "$tmp/$1.perf" | awk -v ours="$tmp/ours.leaf" '
	BEGIN { while ((getline l < ours) > 0) { k = split(l, a, " "); o[a[1]] = a[k]; ot += a[k] } }
	{ p[$1] = $NF; pt += $NF }
	END {
		printf "| function | perf record | schedlab profile | gap (points) |\n"
		printf "| --- | ---: | ---: | ---: |\n"
		n = 0
		for (f in p) names[++n] = f
		for (i = 1; i <= n && i <= 10; i++) { # ten largest by perf: n is small
			best = i
			for (j = i + 1; j <= n; j++) if (p[names[j]] > p[names[best]]) best = j
			t = names[i]; names[i] = names[best]; names[best] = t
			f = names[i]; ps = 100 * p[f] / pt; os = 100 * o[f] / ot
			gap = os - ps; if (gap < 0) gap = -gap; if (gap > worst) worst = gap
			printf "| %s | %.1f%% | %.1f%% | %+.1f |\n", f, ps, os, os - ps
		}
		printf "\nSamples: perf %d, schedlab %d. Largest gap: %.1f points.\n", pt, ot, worst
	}'
}

# Each category's share: perf's stacks by bench/categories, ours from result.json.
categories() { # LABEL
	"$CATEGORIES" <"$tmp/$1.perf" >"$tmp/perf.cats"
	jq -r '.probes[0].categories | to_entries[] | "\(.key) \(.value)"' \
		"$tmp/r/latest/result.json" | awk -v perf="$tmp/perf.cats" '
	BEGIN { while ((getline l < perf) > 0) { split(l, a, " "); p[a[1]] = a[2]; pt += a[2]
						 order[++n] = a[1] } }
	{ o[$1] = $2; ot += $2 }
	END {
		printf "| category | perf record, by the same rules | schedlab profile | gap (points) |\n"
		printf "| --- | ---: | ---: | ---: |\n"
		for (i = 1; i <= n; i++) {
			c = order[i]; if (!p[c] && !o[c]) continue
			ps = 100 * p[c] / pt; os = 100 * o[c] / ot
			gap = os - ps; if (gap < 0) gap = -gap; if (gap > worst) worst = gap
			printf "| %s | %.1f%% | %.1f%% | %+.1f |\n", c, ps, os, os - ps
		}
		printf "\nLargest gap: %.1f points.\n", worst
	}'
}

stop() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=
}

echo "## schedlab profile beside perf record"
echo
echo "The same process sampled by both at once for $SECONDS_ s (\`bench/profile.sh\`), 999 Hz"
echo "cpu-clock each: each function's own share (its samples as the leaf of the stack), the"
echo "ten largest by perf, and each category's share, perf's stacks classified by the same"
echo "stack rules (\`bench/categories\`)."
echo

"$HELPER" --wait >"$tmp/own" &
pid=$!
until grep -q waiting "$tmp/own" 2>/dev/null; do sleep 0.05; done
kill -USR1 "$pid"
sample split
stop
echo "### three_split, spinning in three functions"
echo
functions split
echo
categories split
echo

if [ -x "$BUILD/bench/gopeer" ]; then
	"$BUILD/bench/gopeer" spawn-join --warmup 0 --iterations 1000 --time 1 >/dev/null &
	pid=$!
	sleep 0.5
	sample go
	stop
	echo "### The Go peer running spawn-join (\`bench/gopeer\`)"
	echo
	functions go
	echo
	categories go
	echo
else
	echo "The Go peer is not built (make peers): its comparison was not made."
	echo
fi
