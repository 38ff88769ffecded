#!/usr/bin/env bash
# The on-CPU probe checked against perf on the same child, and what its call-graph modes
# cost: a Markdown section on stdout (make bench appends it to BENCHMARKS.md), progress on
# stderr. Needs root and perf (Debian linux-perf).
#
#   1. Inclusive shares: bind-chain with the naive interpreter (much of its time in malloc
#      and free, which have no frame pointers) sampled at once by schedlab's probe
#      (--call-graph auto) and by `perf record -a --call-graph dwarf` on the same fork: the
#      share of the workers' samples whose stack holds loop, rt_alloc and rt_free, by each,
#      and the monitor thread's share.
#   2. Cost per sample: the same workload without a profiler, under the probe in each
#      mode, and under perf (fp and dwarf), interleaved fork by fork. The cost is the
#      throughput lost per sample taken: (1 - with/without) / (samples per CPU-second),
#      next to what the probe measures of itself (its program's time in the kernel, its
#      unwinding in user space) and perf's unwinding time (perf script's CPU time); and
#      libdw's unwinding alone (bench/unwind.c).
#   3. The probe's own effect: the allocation share by the phase word, which no stack walk
#      decides, with the cheap frame-pointer walk and with every stack copied.
#   4. Stack quality: the share of runtime-thread stacks reaching their root, from
#      result.json, on the two workloads whose stacks go through glibc most.
set -euo pipefail

BUILD=${BUILD:-build}
FORKS=${FORKS:-3}
TIME=${TIME:-0.5}
ITER=${ITERATIONS:-3}
FREQ=999
SL=$BUILD/schedlab
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { echo "bench: stacks: $*" >&2; }

mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
cp "$SL" "$tmp/schedlab"
bin=$tmp/schedlab
naive=(bind-chain -P interpreter=naive)
# the cost runs want many short ops: a shorter chain, still quadratic and malloc-bound
cheap=(bind-chain -P interpreter=naive -P depth=1000)

# perf script | the fork's cpu-clock samples inside its measured iterations (the window
# between the first entry to harness.c's iteration() and the last return from it, which
# perf probe marks), folded by unique symbol: "SYMBOL COUNT" per line, a "TOTAL n" line,
# and a "COMPLETE n" line counting the stacks that reached rt__fiber_start or
# start_thread. The fork is the process with rt-worker threads.
perf_inclusive() { # PERF_DATA
	perf script -i "$1" -F comm,pid,tid,time,event,ip,sym --no-inline 2>/dev/null > "$1.txt"
	awk '
		FNR == NR {
			if ($0 ~ /^[^\t]/) {
				split($2, a, "/"); t = $3 + 0
				if ($1 == "rt-worker") fork = a[1]
				if ($4 == "probe_schedlab:iteration:" && (!(a[1] in lo) || t < lo[a[1]])) lo[a[1]] = t
				if ($4 == "probe_schedlab:iteration__return:" && t > hi[a[1]]) hi[a[1]] = t
			}
			next
		}
		function flush() {
			if (keep) {
				all++; thread[comm]++
				if (comm == "rt-worker") { total++; if (ok) complete++; for (s in seen) inc[s]++ }
			}
			delete seen; keep = 0; ok = 0
		}
		/^[^\t]/ {
			flush(); split($2, a, "/"); t = $3 + 0; comm = $1
			keep = a[1] == fork && $4 == "cpu-clock:" &&
				(!(fork in lo) || (t >= lo[fork] && t <= hi[fork]))
			next
		}
		/^\t/ {
			sub(/^\t *[0-9a-f]+ /, ""); sub(/ \(inlined\)$/, ""); seen[$0] = 1
			if ($0 == "rt__fiber_start" || $0 == "start_thread") ok = 1
			next
		}
		/^$/ { flush() }
		END {
			flush(); print "TOTAL", total + 0; print "COMPLETE", complete + 0; print "FORK", all + 0
			for (c in thread) print "THREAD", c, thread[c]
			for (s in inc) print s, inc[s]
		}
	' "$1.txt" "$1.txt"
}

# oncpu.folded | the same for schedlab's probe (every line is the fork's).
folded_inclusive() { # FOLDED
	awk '{ n = $NF; $NF = ""; m = split($0, f, ";"); all += n; thread[f[2]] += n
		if (f[2] != "rt-worker") next
		total += n; delete seen
		for (i = 1; i <= m; i++) { sub(/ $/, "", f[i]); seen[f[i]] = 1 }
		for (s in seen) inc[s] += n }
		END { print "TOTAL", total + 0; print "FORK", all + 0
			for (c in thread) print "THREAD", c, thread[c]
			for (s in inc) print s, inc[s] }' "$1"
}

# The share of the worker threads' samples that hold SYMBOL; or, for "THREAD NAME", the
# share of all the fork's samples taken on that thread.
share_of() { # FILE SYMBOL | FILE THREAD NAME: percent
	if [ "$2" = THREAD ]; then
		awk -v c="$3" '$1 == "FORK" { t = $2 } $1 == "THREAD" && $2 == c { n = $3 }
			END { printf "%.1f", t ? 100 * n / t : 0 }' "$1"
	else
		awk -v s="$2" '$1 == "TOTAL" { t = $2 } $1 == s { c = $2 }
			END { printf "%.1f", t ? 100 * c / t : 0 }' "$1"
	fi
}

# ---- 1. the same fork seen by both ---------------------------------------------------------
# perf's own DWARF unwinding of this fork sometimes fails for a stretch of a run (most
# samples in glibc keep only their leaf frame, with no lost events): each trial records
# how many of perf's samples of the fork reached rt__fiber_start or start_thread, and
# only trials where perf itself unwound >= 99% are compared.
TRIALS=${TRIALS:-3}
# Mark the measured iterations for perf: uprobes on the copy's iteration() (its own name
# in .symtab), removed at exit with the copy.
# Address-space randomization off for every run here: with it on, perf's own DWARF unwinding
# of this fork often failed, depending on where the mappings landed.
norand="setarch $(uname -m) -R"
marks=(-e probe_schedlab:iteration -e probe_schedlab:iteration__return)
window="its measured iterations (from the first entry to the harness's \`iteration()\` to the
last return from it, marked with \`perf probe\`)"
if ! perf probe -q -x "$bin" -a iteration -a 'iteration%return' >/dev/null 2>&1; then
	say "perf probe could not mark the measured iterations: perf's window is the whole fork"
	marks=()
	window="the whole fork (\`perf probe\` could not mark its measured iterations)"
fi
trap 'perf probe -q -d "probe_schedlab:*" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
for t in $(seq 1 "$TRIALS"); do
	say "bind-chain (naive) under the probe and perf --call-graph dwarf together: trial $t"
	$norand perf record -q -a -m 16M --call-graph dwarf,16384 -F $FREQ -e cpu-clock "${marks[@]}" \
		-o "$tmp/both$t.data" -- \
		"$bin" run "${naive[@]}" --forks 1 --warmup 0 --iterations "$ITER" --time 1 \
		--out "$tmp/both$t" >/dev/null 2>"$tmp/both$t.err"
	perf_inclusive "$tmp/both$t.data" > "$tmp/perf$t.inc"
	folded_inclusive "$tmp/both$t/latest/oncpu.folded" > "$tmp/probe$t.inc"
done

# ---- 2. cost per sample ---------------------------------------------------------------------
configs=(none fp auto dwarf perf-fp perf-dwarf)
run_config() { # CONFIG FORK
	local c=$1 out=$tmp/cost-$1-$2 base=(run "${cheap[@]}" --forks 1 --warmup 1
		--iterations "$ITER" --time "$TIME" --json --out "$tmp/runs")
	case $c in
	none) $norand "$bin" "${base[@]}" --probes none > "$out.json" 2>/dev/null ;;
	fp | auto | dwarf) $norand "$bin" "${base[@]}" --call-graph "$c" > "$out.json" 2>/dev/null ;;
	perf-fp | perf-dwarf)
		local cg=fp
		[ "$c" = perf-dwarf ] && cg=dwarf,16384
		$norand perf record -q -m 8M --call-graph $cg -F $FREQ -e cpu-clock -o "$out.data" -- \
			"$bin" "${base[@]}" --probes none > "$out.json" 2>/dev/null
		# perf's unwinding and symbolization happen here, after the run
		/usr/bin/time -f "%U %S" -o "$out.time" perf script -i "$out.data" > /dev/null 2>&1
		perf script -i "$out.data" -F pid 2>/dev/null | wc -l > "$out.samples" ;;
	esac
}
for f in $(seq 1 "$FORKS"); do
	say "cost per sample: fork $f of $FORKS"
	if [ $((f % 2)) = 1 ]; then order=("${configs[@]}"); else order=($(printf '%s\n' "${configs[@]}" | tac)); fi
	for c in "${order[@]}"; do run_config "$c" "$f"; done
done

# each config: mean ops/s over every iteration of every fork; samples and the probe's own
# times from result.json
iters() { grep -ho '"samples": \[[^]]*\]' "$tmp"/cost-"$1"-*.json | grep -o '[0-9][0-9.e+-]*'; }
mean() { awk '{ s += $1; n++ } END { if (n) printf "%.6g", s / n }'; }
# the sum over a config's forks of the number after PATTERN in result.json
json_sum() { # CONFIG PATTERN
	grep -ho "$2 [0-9]*" "$tmp"/cost-"$1"-*.json | awk '{ s += $NF } END { print s + 0 }'
}
declare -A ops
for c in "${configs[@]}"; do ops[$c]=$(iters "$c" | mean); done
cpu_s=$(awk -v f="$FORKS" -v i="$ITER" -v t="$TIME" 'BEGIN { print f * i * t * 2 }') # both CPUs

cost_row() { # LABEL CONFIG SAMPLES KERNEL_NS USER_NS
	awk -v l="$1" -v w="${ops[$2]}" -v o="${ops[none]}" -v n="$3" -v s="$cpu_s" \
		-v k="$4" -v u="$5" 'BEGIN {
		f = 1 - w / o; per = n ? f * s / n * 1e6 : 0
		printf "| %s | %.0f | %.1f%% | %s | %s | %s |\n", l, w, 100 * f,
			n ? sprintf("%.1f µs", per) : "–", k, u }'
}
us() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f µs", a / b / 1000; else print "–" }'; }

# ---- libdw alone: one unwind of a captured sample, in a loop (bench/unwind.c) ---------------
unwind_us() { # JOB: "mean µs ± half-width (n)" per unwind
	"$BUILD/bench/unwind" "$1" --warmup 2 --iterations 5 --time "$TIME" 2>/dev/null |
		"$BUILD/bench/unwind" summarize |
		awk '{ m = $1; h = $2; printf "%.1f µs (%.1f–%.1f, n = %d)", 1e6 / m, 1e6 / (m + h),
			(m > h ? 1e6 / (m - h) : 0), $3 }'
}
say "libdw alone"
uw_chain=$(unwind_us unwind-chain)
uw_qsort=$(unwind_us unwind-qsort)

# ---- 3. the probe's own effect: the allocation share by the phase word in each mode --------------
# The phase word does not depend on how stacks are walked: a shift of its shares between the
# modes is the probe's own cost changing what it measures.
observe() { # MODE: one run's allocation share by the phase word, in percent
	"$bin" run "${naive[@]}" --forks 1 --warmup 0 --iterations "$ITER" --time 1 --call-graph "$1" \
		--json --out "$tmp/obs" 2>/dev/null |
		grep -o '"agreement": {"samples": [0-9]*.*"by_stack"' |
		awk '{ n = $3 + 0; p = $0; sub(/.*"allocation": /, "", p); printf "%.1f\n", n ? 100 * (p + 0) / n : 0 }'
}
OBS=${OBS:-4}
for i in $(seq 1 "$OBS"); do
	say "the probe's own effect: run $i of $OBS"
	for m in fp dwarf; do observe "$m" >> "$tmp/obs-$m"; done
done
obs_row() { # MODE
	sort -n "$tmp/obs-$1" | awk -v m="$1" '{ v[NR] = $1; s += $1 }
		END { printf "| `--call-graph %s` | %.1f%% | %.1f%% – %.1f%% | %d |\n", m, s / NR, v[1], v[NR], NR }'
}

# ---- 4. stack quality -------------------------------------------------------------------------
quality() { # NAME ARGS...: "rooted of runtime"
	local name=$1
	shift
	"$bin" run "$@" --forks 1 --warmup 1 --iterations "$ITER" --time 1 --json \
		--out "$tmp/q" > "$tmp/q-$name.json" 2>/dev/null
	awk '{ for (i = 1; i <= NF; i++) { if ($i == "\"runtime_threads\":") r = $(i + 1)
		if ($i == "\"runtime_reached_root\":") k = $(i + 1) } }
		END { gsub(/,/, "", r); gsub(/,/, "", k); printf "%.1f%% (%d of %d)", r ? 100 * k / r : 0, k, r }' \
		"$tmp/q-$name.json"
}
say "stack quality"
q_naive=$(quality naive "${naive[@]}")
q_tcp=$(quality tcp --preset kyo tcp-blocking)

# the allocation share by the phase word and by the stacks, from each trial's result.json
alloc_agree=$(for t in $(seq 1 "$TRIALS"); do
	grep -o '"agreement": {"samples": [0-9]*.*"by_stack": {[^}]*}' "$tmp/both$t/latest/result.json" |
		awk '{ n = $3 + 0; split($0, h, "\"by_stack\""); p = h[1]; q = h[2]
			sub(/.*"allocation": /, "", p); sub(/.*"allocation": /, "", q)
			printf "%.1f%% and %.1f%%\n", n ? 100 * (p + 0) / n : 0, n ? 100 * (q + 0) / n : 0 }'
done | paste -sd ';' | sed 's/;/; /g')

cat <<EOF
## The on-CPU probe's stacks

Reproduce with \`make bench\` (this part alone: \`bench/stacks.sh\`, as root, with Debian's
\`linux-perf\`). Workload: \`bind-chain -P interpreter=naive\`, whose naive interpreter copies
its continuations on every bind (in its own code, \`copy_list\`) into an array that glibc's
malloc and free, built without frame pointers, allocate and free.

**The same fork, two profilers.** \`perf record -a -m 16M --call-graph dwarf,16384 -F $FREQ -e
cpu-clock\` around \`schedlab run ${naive[*]} --forks 1 --warmup 0 --iterations $ITER --time 1\`,
whose probe ran in its default \`--call-graph auto\`, $TRIALS trials: perf's samples of the fork
during $window, the probe's of the same iterations. Both sample every CPU $FREQ times a second
and keep the fork's samples, so what differs is how each walks a sample's stack. The
functions' rows are the share of the worker threads' samples (\`rt-worker\`, where every task
runs) whose stack holds the function (inclusive); the last row is the share of all the fork's
samples taken on its monitor thread. Every run here has address-space randomization off
(\`setarch -R\`): with it on, perf's own DWARF unwinding of this fork often failed, keeping only
the leaf frame of most samples in glibc, with no lost events, depending on where the mappings
landed. *perf complete* is the share of perf's worker samples that reached \`rt__fiber_start\`
or \`start_thread\`, and a trial where it is below 99% compares nothing. Two halves of one perf
profile disagree by up to 2.4 points per function at about 3,000 samples: that is the chance
level.

\`rt_alloc\` and \`rt_free\` are where glibc's code, built without frame pointers, is
on the stack: there the probe's stacks come from DWARF, as perf's do. What the probe's stacks say of its own samples is checked
separately, against the phase word the runtime set at each of them (the allocation
category is exactly the time in \`rt_alloc\` and \`rt_free\`): in these trials allocation by
the phase word and by the stacks was $alloc_agree of the probe's samples.

| trial | perf complete | samples, perf / probe | function | perf --call-graph dwarf | schedlab (auto) | difference (points) |
| --- | ---: | ---: | --- | ---: | ---: | ---: |
EOF
for t in $(seq 1 "$TRIALS"); do
	n=$(awk '$1 == "TOTAL" { print $2 }' "$tmp/perf$t.inc")
	g=$(awk '$1 == "COMPLETE" { print $2 }' "$tmp/perf$t.inc")
	pn=$(awk '$1 == "FORK" { print $2 }' "$tmp/perf$t.inc")
	qn=$(awk '$1 == "FORK" { print $2 }' "$tmp/probe$t.inc")
	first=1
	for s in loop rt_alloc rt_free rt-monitor; do
		case $s in
		rt-*) p=$(share_of "$tmp/perf$t.inc" THREAD "$s")
		      q=$(share_of "$tmp/probe$t.inc" THREAD "$s") ;;
		*) p=$(share_of "$tmp/perf$t.inc" "$s")
		   q=$(share_of "$tmp/probe$t.inc" "$s") ;;
		esac
		awk -v t="$t" -v g="$g" -v n="$n" -v pn="${pn:-0}" -v qn="${qn:-0}" -v s="$s" \
			-v p="$p" -v q="$q" -v first=$first 'BEGIN {
			ok = n && g >= 0.99 * n; d = p - q; if (d < 0) d = -d
			if (first) printf "| %d | %.1f%% | %d / %d |", t, n ? 100 * g / n : 0, pn, qn
			else printf "| | | |"
			printf " %s | %.1f%% | %.1f%% | %s |\n",
				s ~ /^rt-/ ? "thread `" s "`, of all the fork" : "`" s "`", p, q,
				ok ? sprintf("%.1f", d) : "(not compared)" }'
		first=0
	done
done

perf_fp_samples=$(cat "$tmp"/cost-perf-fp-*.samples | awk '{ s += $1 } END { print s + 0 }')
perf_dw_samples=$(cat "$tmp"/cost-perf-dwarf-*.samples | awk '{ s += $1 } END { print s + 0 }')
perf_dw_cpu=$(cat "$tmp"/cost-perf-dwarf-*.time | awk '{ s += $1 + $2 } END { print s * 1e9 }')
perf_fp_cpu=$(cat "$tmp"/cost-perf-fp-*.time | awk '{ s += $1 + $2 } END { print s * 1e9 }')

cat <<EOF

**What a sample costs.** \`${cheap[*]}\`, $FORKS forks × $ITER measured iterations of $TIME s
per configuration, interleaved fork by fork (every configuration once, then in reverse order):
without a profiler, under the probe in each \`--call-graph\` mode, and under \`perf record -F $FREQ
-e cpu-clock -m 8M\` with \`--call-graph fp\` and \`dwarf,16384\`. *Cost per sample* is the throughput
lost per sample taken, (1 − ops/ops without) × CPU-seconds ÷ samples: everything a sample
costs the workload, wherever it is spent. The probe also measures its own parts: its program's
time in the kernel per run (the kernel's BPF statistics) and its unwinding per DWARF sample; for
perf, the unwinding is \`perf script\`'s CPU time after the run, per sample. On a 2-CPU shared
machine a throughput loss below about 3% is within noise.

| configuration | ops/s | throughput lost | cost per sample | in the kernel, per run | unwinding, per DWARF sample |
| --- | ---: | ---: | ---: | ---: | ---: |
EOF
cost_row "no profiler" none 0 "–" "–"
for c in fp auto dwarf; do
	n=$(json_sum "$c" '"frequency_hz": [0-9]*, "samples":')
	cost_row "schedlab --call-graph $c" "$c" "$n" \
		"$(us "$(json_sum "$c" '"program": {"runs": [0-9]*, "ns":')" \
			"$(json_sum "$c" '"program": {"runs":')")" \
		"$(us "$(json_sum "$c" '"unwind_ns":')" "$(json_sum "$c" '"dwarf":')")"
done
cost_row "perf record --call-graph fp" perf-fp "$perf_fp_samples" "–" \
	"$(us "$perf_fp_cpu" "$perf_fp_samples") (perf script)"
cost_row "perf record --call-graph dwarf,16384" perf-dwarf "$perf_dw_samples" "–" \
	"$(us "$perf_dw_cpu" "$perf_dw_samples") (perf script)"

cat <<EOF

libdw alone, unwinding one captured stack again and again (\`$BUILD/bench/unwind JOB --warmup 2
--iterations 5 --time $TIME | $BUILD/bench/unwind summarize\`, the 99.9% interval in brackets):
7 frames of the runtime's code to \`clone3\` in $uw_chain, 12 frames through glibc's \`qsort\`
in $uw_qsort.

**The probe's own effect.** The share of the probe's samples in allocation, by the phase word
(which does not depend on how stacks are walked), in runs of \`${naive[*]} --forks 1 --warmup 0
--iterations $ITER --time 1\` with the cheap frame-pointer walk and with every sample's 16 KiB
stack copied, alternated, $OBS runs each. A shift between the two would be the cost of a
sample changing the workload it measures; the range within one mode is the workload's own
variation from run to run.

| mode | allocation (mean) | range | runs |
| --- | ---: | ---: | ---: |
EOF
obs_row fp
obs_row dwarf

cat <<EOF

**Stack quality.** The share of the runtime's threads' samples whose user stack reaches its
thread's root (a fiber's entry, \`start_thread\`), from result.json, \`--call-graph auto\`:

| workload | reached the root |
| --- | ---: |
| \`${naive[*]}\` | $q_naive |
| \`tcp-blocking --preset kyo\` | $q_tcp |
EOF
