#!/usr/bin/env bash
# make bench, "presets against their runtimes": each preset that models a real runtime
# (go ↔ Go, tokio ↔ Tokio, global ↔ the JDK's ForkJoinPool) runs spawn-join, workers and
# tcp-blocking under schedlab, and the same jobs run in that runtime (bench/go, bench/tokio,
# bench/java: the same op, sizes and check, tcp-blocking against the same server). Each
# row gives both throughputs and the ratio preset ÷ real with its 99.9% interval, and says
# where the ratio leaves 0.5–2×. The two sides of a row run next to each other, fork by
# fork, every other fork in reverse order. Then one run of each side under the on-CPU
# probe (`schedlab run --probes oncpu`, `schedlab profile` of the peer): the category
# shares side by side and the largest gap. Markdown on stdout, progress on stderr.
#
#   BUILD=build bench/models.sh                        (FORKS WARMUP ITERATIONS TIME as in run.sh)
#   QUICK=1 bench/models.sh                            one fork, 1 warm-up, 3 × 0.2 s
set -euo pipefail

BUILD=${BUILD:-build}
if [ -n "${QUICK:-}" ]; then
	FORKS=${FORKS:-1} WARMUP=${WARMUP:-1} ITERATIONS=${ITERATIONS:-3} TIME=${TIME:-0.2}
fi
FORKS=${FORKS:-3}
WARMUP=${WARMUP:-2}
ITERATIONS=${ITERATIONS:-5}
TIME=${TIME:-0.5}
SL=$BUILD/schedlab
SUMMARIZE=$BUILD/bench/pthreads # any program on bench/peer.h summarizes samples
B=$BUILD/bench

say() { echo "bench: models: $*" >&2; }

for p in "$SL" "$SUMMARIZE" "$B/tcpserve"; do
	[ -x "$p" ] || { say "$p is missing: run 'make bench'"; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Run copies, so that a rebuild of $BUILD during the run cannot mix two builds; the report
# names the programs in $BUILD. tcpserve starts the copied schedlab's server.
mkdir -p "$tmp/bin" "$tmp/out"
cp "$SL" "$SUMMARIZE" "$B/tcpserve" "$tmp/bin/"
declare -A have=()
missing=()
for p in gopeer tokiopeer jdkpeer; do
	[ -x "$B/$p" ] || { missing+=("$p"); continue; }
	cp "$B/$p" "$tmp/bin/"
	have[$p]=1
done
[ -n "${have[jdkpeer]:-}" ] && cp -r "$B/java" "$tmp/bin/"
export SCHEDLAB_EXE=$tmp/bin/schedlab SCHEDLAB_TCPSERVE=$tmp/bin/tcpserve
as_run() { sed "s|^$B/|$tmp/bin/|; s|^$SL|$tmp/bin/schedlab|"; }

# ---- the jobs --------------------------------------------------------------------------------
#
# rt:PRESET:JOB is schedlab's workload under the preset; PEER:JOB a peer's job.
rows="go:spawn-join:gopeer go:workers:gopeer go:tcp-blocking:gopeer
      tokio:spawn-join:tokiopeer tokio:workers:tokiopeer tokio:tcp-blocking:tokiopeer
      tokio:tcp-blocking:tokiopeer:tcp-block-in-place
      global:spawn-join:jdkpeer global:workers:jdkpeer global:tcp-blocking:jdkpeer"

job_cmd() { # KEY
	local side=${1%%:*} rest=${1#*:}
	if [ "$side" = rt ]; then
		echo "$SL run ${rest#*:} --preset ${rest%%:*} --forks 1 --warmup $WARMUP" \
			"--iterations $ITERATIONS --time $TIME --probes none --json"
	else
		echo "$B/$side $rest --warmup $WARMUP --iterations $ITERATIONS --time $TIME"
	fi
}

# Keys of a row PRESET:JOB:PEER[:PEER_JOB]: the schedlab side and the peer's.
rt_key() { local a; IFS=: read -r -a a <<<"$1"; echo "rt:${a[0]}:${a[1]}"; }
peer_key() { local a; IFS=: read -r -a a <<<"$1"; echo "${a[2]}:${a[3]:-${a[1]}}"; }

keys=()
for r in $rows; do
	IFS=: read -r -a a <<<"$r"
	[ -n "${have[${a[2]}]:-}" ] || continue
	for k in "$(rt_key "$r")" "$(peer_key "$r")"; do
		case " ${keys[*]:-} " in *" $k "*) ;; *) keys+=("$k") ;; esac
	done
done
[ ${#keys[@]} -gt 0 ] || { say "no peer is built (make peers)"; exit 1; }

file() { echo "$tmp/out/${1//:/_}"; }

# One fork of a job: samples appended to its file; why it failed to FILE.why.
run_job() { # KEY
	local k=$1 f cmd limit rc=0
	f=$(file "$k")
	if grep -qs '^timed out' "$f.why"; then
		say "$k: skipped, it timed out before"
		return 0
	fi
	read -r -a cmd <<<"$(job_cmd "$k" | as_run)"
	limit=$(LC_ALL=C awk -v w="$WARMUP" -v i="$ITERATIONS" -v t="$TIME" \
		'BEGIN { printf "%d", 3 * (w + i) * t + 90 }')
	case $k in
	rt:*)
		timeout -k 5 "$limit" "${cmd[@]}" --out "$tmp/results" >"$f.json" 2>"$f.err" || rc=$?
		sed -n 's/^  "samples": \[\(.*\)\],$/\1/p' "$f.json" | tr ',' '\n' | sed 's/ //g;/^$/d' \
			>>"$f"
		;;
	*) timeout -k 5 "$limit" "${cmd[@]}" >>"$f" 2>"$f.err" || rc=$? ;;
	esac
	[ "$rc" = 0 ] && return 0
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "timed out after $limit s" >>"$f.why"
	else
		{ grep -m1 -iE 'failed|error|expected|wrong' "$f.err" || tail -1 "$f.err" ||
			echo "exit status $rc"; } | head -1 >>"$f.why"
	fi
	say "$k failed: $(tail -1 "$f.why")"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
for r in $(seq 1 "$FORKS"); do
	order=("${keys[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((i = ${#keys[@]} - 1; i >= 0; i--)); do order+=("${keys[$i]}"); done
	fi
	for k in "${order[@]}"; do
		say "fork $r/$FORKS: $k ($(($(date +%s) - t0)) s)"
		touch "$(file "$k")"
		run_job "$k"
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
measured_s=$(($(date +%s) - t0))

# ---- where the time goes: the on-CPU categories of each side ----------------------------------
#
# Once per row, beside the throughput forks: schedlab's run of the job under the preset with
# the on-CPU probe (its runtime's phase word), and `schedlab profile` of the peer's job (the
# real runtime's frames by the stack rules; frame pointers: Go, Tokio built with them, and
# the JVM with -XX:+PreserveFramePointer and its perf map; --no-follow: not the TCP server
# the peer starts, which the preset's run does not sample either). Shares of each side's
# samples.
CATS="work scheduling submission parking blocking allocation stack-capture kernel other"
shares() { # RESULT.json: the categories' shares in %, in CATS order, or nothing
	[ -s "$1" ] || return 0
	jq -r --arg cats "$CATS" '.probes[0].categories as $c | ($c | add) as $t
		| if ($t // 0) > 0 then [($cats | split(" "))[] | 100 * (($c[.] // 0) / $t)]
		  | map(. * 10 | round / 10) | map(tostring) | join(" ") else empty end' "$1"
}
declare -A cat_rt cat_peer
for r in $rows; do
	IFS=: read -r -a a <<<"$r"
	[ -n "${have[${a[2]}]:-}" ] || continue
	pk=$(peer_key "$r")
	say "categories: ${a[0]} and ${a[2]} on ${a[3]:-${a[1]}}"
	if [ -z "${cat_rt[${a[0]}:${a[1]}]:-}" ]; then
		"$tmp/bin/schedlab" run "${a[1]}" --preset "${a[0]}" --forks 1 --warmup "$WARMUP" \
			--iterations "$ITERATIONS" --time "$TIME" --probes oncpu --call-graph fp \
			--json --out "$tmp/cats" >"$tmp/cat-rt.json" 2>/dev/null || true
		cat_rt[${a[0]}:${a[1]}]=$(shares "$tmp/cat-rt.json")
	fi
	rm -rf "$tmp/cat-peer"
	read -r -a cmd <<<"$(job_cmd "$pk" | as_run)"
	# Each peer's stacks as they can be walked: Go keeps frame pointers everywhere and
	# makes its own system calls (fp); Tokio's socket calls go through glibc, which has
	# none, so a frame-pointer walk stops there and DWARF takes over (auto); the JVM's
	# compiled frames have no DWARF (fp, with -XX:+PreserveFramePointer). A perf map
	# names a compiled method and not what the JIT inlined into it: with ForkJoinTask's
	# methods inlined, a join that runs its children in place reads as awaitDone, so
	# those are kept out of line.
	cg=fp
	[ "${pk%%:*}" = tokiopeer ] && cg=auto
	JDKPEER_OPTS="-XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,java.util.concurrent.ForkJoinTask::*" \
		"$tmp/bin/schedlab" profile --call-graph "$cg" --no-follow --json \
		-o "$tmp/cat-peer" -- "${cmd[@]}" \
		2>/dev/null | sed -n '/^{/,$p' >"$tmp/cat-peer.json" || true
	cat_peer[$pk]=$(shares "$tmp/cat-peer.json")
done
# the JVM's perf maps, written at its exits
for m in /tmp/perf-*.map; do
	[ -O "$m" ] && [ "$m" -nt "$tmp/bin/schedlab" ] && rm -f "$m"
done

# ---- summaries ---------------------------------------------------------------------------------

declare -A mean err n
for k in "${keys[@]}"; do
	line=$("$tmp/bin/pthreads" summarize <"$(file "$k")" 2>/dev/null) || line="nan nan 0"
	read -r "mean[$k]" "err[$k]" "n[$k]" <<<"$line"
done

ok() { [ "${n[$1]:-0}" -gt 0 ]; }
group() { LC_ALL=C printf "%.${2:-0}f" "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
fmt() { # KEY DECIMALS
	local why
	if ! ok "$1"; then
		why=$(head -1 "$(file "$1").why" 2>/dev/null | sed 's/|/\\|/g' || true)
		echo "not measured${why:+: $why}"
		return
	fi
	if [ "${n[$1]}" -lt 2 ]; then echo "$(group "${mean[$1]}" "$2") (1)"; return; fi
	echo "$(group "${mean[$1]}" "$2") ± $(group "${err[$1]}" "$2") (${n[$1]})"
}
# (a/b) ± (a/b)·sqrt((ea/a)² + (eb/b)²), and whether it leaves 0.5–2× (beyond its interval).
ratio() { # A B
	LC_ALL=C awk -v a="${mean[$1]}" -v ea="${err[$1]}" -v b="${mean[$2]}" -v eb="${err[$2]}" '
	BEGIN {
		r = a / b; h = r * sqrt((ea / a) ^ 2 + (eb / b) ^ 2)
		if (h != h) h = 0
		s = sprintf("%.2f× ± %.2f", r, h)
		if (r + h < 0.5) s = s " — **below 0.5×**"
		else if (r - h > 2) s = s " — **above 2×**"
		else if (r < 0.5 || r > 2) s = s " (outside 0.5–2×, within noise)"
		print s
	}'
}
decimals() { case $1 in *tcp*) echo 1 ;; *) echo 0 ;; esac; }

runtime_of() {
	case $1 in
	gopeer) echo "Go $(go env GOVERSION 2>/dev/null | sed 's/^go//')" ;;
	tokiopeer) # the crate Debian packages, which the build used
		local c
		for c in /usr/share/cargo/registry/tokio-1.*; do echo "Tokio ${c##*/tokio-}"; break; done ;;
	jdkpeer) # the java that jdkpeer runs
		echo "JDK $("$(sed -n 's/^exec \([^ ]*\) .*/\1/p' "$B/jdkpeer")" -version 2>&1 |
			sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -1) ForkJoinPool" ;;
	esac
}

table=$(
	for r in $rows; do
		IFS=: read -r -a a <<<"$r"
		[ -n "${have[${a[2]}]:-}" ] || continue
		rk=$(rt_key "$r") pk=$(peer_key "$r") d=$(decimals "${a[1]}")
		if ok "$rk" && ok "$pk"; then q=$(ratio "$rk" "$pk"); else q="not measured"; fi
		job=${a[1]}
		[ -z "${a[3]:-}" ] || job="${a[1]} (${a[3]})"
		echo "| $job | \`${a[0]}\` | $(fmt "$rk" "$d") | $(runtime_of "${a[2]}") | $(fmt "$pk" "$d") | $q |"
	done
)
# A row of shares, and the category where the two sides differ most.
cat_row() { # LABEL SHARES
	local v
	printf '| %s |' "$1"
	for v in $2; do printf ' %s%% |' "$v"; done
	echo
}
gap() { # SHARES_A SHARES_B: "CATEGORY POINTS" (B − A) of the largest difference
	LC_ALL=C awk -v a="$1" -v b="$2" -v cats="$CATS" 'BEGIN {
		split(a, x, " "); split(b, y, " "); split(cats, c, " ")
		for (i in c) { d = y[i] - x[i]; m = d < 0 ? -d : d
			if (m > best) { best = m; name = c[i]; sign = d } }
		printf "%s %+.1f", name, sign }'
}
cat_table=$(
	for r in $rows; do
		IFS=: read -r -a a <<<"$r"
		[ -n "${have[${a[2]}]:-}" ] || continue
		pk=$(peer_key "$r") ra=${cat_rt[${a[0]}:${a[1]}]:-} pb=${cat_peer[$pk]:-}
		job=${a[1]}
		[ -z "${a[3]:-}" ] || job="${a[1]} (${a[3]})"
		if [ -z "$ra" ] || [ -z "$pb" ]; then
			echo "| $job: \`${a[0]}\` / $(runtime_of "${a[2]}") | not measured |"
			continue
		fi
		cat_row "$job: \`${a[0]}\`" "$ra"
		cat_row "$job: $(runtime_of "${a[2]}")" "$pb"
		read -r gname gpts <<<"$(gap "$ra" "$pb")"
		flag=""
		LC_ALL=C awk -v g="$gpts" 'BEGIN { exit !(g > 10 || g < -10) }' && flag=" — **beyond 10 points**"
		echo "| largest gap | $gname: the runtime $gpts points against the preset$flag |"
	done
)
commands=$(
	for k in "${keys[@]}"; do echo "    $(job_cmd "$k")"; done
)

cat <<MD
## Presets against their runtimes

Each preset named after a runtime, on the same jobs written in that runtime: \`go\` against
Go's goroutines, \`tokio\` against Tokio's multi-thread scheduler, \`global\` against a JDK
ForkJoinPool (bench/go, bench/tokio, bench/java). Every peer does the workload's op with
its sizes and its check: spawn-join spawns and joins 1,000 children in sequence from
inside a task; workers splits 4,096 values × 64 rounds over 8 tasks; tcp-blocking runs 256
exchanges over 64 persistent loopback connections, a task per connection, against the same
server process (\`schedlab __tcp-server\`, 1 ms before each echo, started for the peers by
bench/tcpserve). Go's sockets park the goroutine on its netpoller, as the \`go\` preset's
do (sockets=park); Tokio's \`TcpStream\` parks the task on its reactor, while the \`tokio\`
preset blocks the worker in a blocking section that hands its queue off, which is what
\`tokio::task::block_in_place\` does (the *tcp-block-in-place* row); the JDK 17 peer reads a
\`java.net.Socket\` on a pool thread, which the pool does not compensate, as under \`global\`
(blocking=none). The JDK peer joins with \`ForkJoinTask.join()\`, which runs a child not yet
stolen in place (\`CompletableFuture.join()\` inside the pool stops the pool on JDK 17 here:
bench/java/Peer.java). One worker (thread) per CPU on both sides.

FORKS=$FORKS WARMUP=$WARMUP ITERATIONS=$ITERATIONS TIME=$TIME, measured in $measured_s s; each
figure is a mean ± its 99.9% half-width (Student's t), n in brackets; the ratio's ± comes from
both by first-order propagation. $(nproc) CPUs; load average $load_before before, $load_after
after.

| job | preset | schedlab ops/s | runtime | runtime ops/s | preset ÷ runtime |
| --- | --- | ---: | --- | ---: | ---: |
$table
${missing[*]:+
Not measured, not built (\`make peers\` builds them from the Debian packages \`make deps\` installs): ${missing[*]}.
}
Where the CPU time goes on each side: schedlab's run under the preset with the on-CPU
probe (categories by the runtime's phase word), and \`schedlab profile\` of the peer (the
real runtime's frames by the stack rules, analysis/categories.rules), one run of each
beside the throughput forks. The peers' stacks are walked by frame pointers, Tokio's with
DWARF where the walk stops in glibc (\`--call-graph auto\`: its socket calls go through
glibc, which has no frame pointers); the JVM runs with -XX:+PreserveFramePointer, its
perf map written at exit, and ForkJoinTask's methods kept out of line
(-XX:CompileCommand=dontinline,java.util.concurrent.ForkJoinTask::*), because a perf map
names the compiled method and not what the JIT inlined into it: inlined, a join that runs
its children in place reads as ForkJoinTask.awaitDone, scheduling. Shares of each side's
own samples; the largest gap is the runtime's share less the preset's.

| side | ${CATS// / | } |
| --- |$(for _ in $CATS; do printf ' ---: |'; done)
$cat_table

Commands (\`SCHEDLAB_EXE\` names the schedlab binary whose server tcpserve starts):

$commands
MD
