#!/usr/bin/env bash
# The runtime probe's cost on spawn-join under the default preset: one schedlab run with
# --overhead, whose forks alternate without the probe and with it (the first without),
# so that both kinds share whatever the host does meanwhile. From its result.json: the
# throughput ratio with Fieller's 99.9% interval, the events per op and the cost per
# event from the probe's own exact counts, the BPF program's share of it, and the ring
# buffer's drops. A Markdown section on stdout (make bench appends it to BENCHMARKS.md).
# Needs root and jq. FORKS (of each kind), WARMUP, ITERATIONS and TIME set the size.
set -euo pipefail

BUILD=${BUILD:-build}
FORKS=${FORKS:-3}
WARMUP=${WARMUP:-1}
ITERATIONS=${ITERATIONS:-5}
TIME=${TIME:-0.5}
SL=$BUILD/schedlab
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

[ -x "$SL" ] || { echo "runtime.sh: $SL is missing: make $SL" >&2; exit 1; }
command -v jq >/dev/null || { echo "runtime.sh: jq is missing: make deps PKGS_EXTRA=jq" >&2; exit 1; }

cmd=("$SL" run spawn-join --probes runtime --overhead --forks "$FORKS" --warmup "$WARMUP"
	--iterations "$ITERATIONS" --time "$TIME")

echo "## Runtime probe: its cost on spawn-join"
echo
echo "\`BUILD=$BUILD FORKS=$FORKS WARMUP=$WARMUP ITERATIONS=$ITERATIONS TIME=$TIME bench/runtime.sh\`, one run of"
echo
echo "\`${cmd[*]}\`:"
echo
echo "spawn-join (1,000 spawns and joins an op) under the default preset, $FORKS forks without"
echo "the probe and $FORKS with it, interleaved (the first without), each $WARMUP × $TIME s warm-up"
echo "and $ITERATIONS × $TIME s measured. Every event at one of the runtime's USDT points is a"
echo "uprobe trap in the thread that reaches it. The events are the probe's own exact counts"
echo "over the probed forks' measured iterations, the ops those forks' (result.json's"
echo "\`runtime.ops\`)."
echo
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
if ! "${cmd[@]}" --out "$OUT" >"$OUT/stdout" 2>"$OUT/stderr"; then
	why=$(grep -m1 '^schedlab: ' "$OUT/stderr" | sed 's/^schedlab: //' || true)
	echo "Not measured: the run failed: ${why:-$(tail -1 "$OUT/stderr")}"
	exit 0
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
res=$OUT/latest/result.json
part='.probes[] | select(.name == "runtime")'
status=$(jq -r "$part | .status" "$res")
if [ "$status" != attached ]; then
	echo "Not measured: the runtime probe is $status."
	exit 0
fi

# The figures, one a line: the two means and half-widths, the ratio and its bounds (null
# where the interval is unbounded), the ops, the events in the window (the harness's two
# marks a fork left out), the BPF program's ns per event, the wall time per event, drops.
read -r on on_err on_n off off_err off_n ratio lo hi ops events prog wall lost delivered \
	ring_kib < <(jq -r "[.overhead.with_probes.mean, .overhead.with_probes.error,
		.overhead.with_probes.n, .overhead.without_probes.mean,
		.overhead.without_probes.error, .overhead.without_probes.n, .overhead.ratio,
		.overhead.ratio_low, .overhead.ratio_high, .runtime.ops,
		($part | [.events | to_entries[] | select(.key != \"window\") | .value] | add),
		($part | .prog_ns_per_event), ($part | .window_ns_per_event),
		($part | .lost.ring_buffer), ($part | .delivered), ($part | .ring_bytes / 1024)]
		| map(tostring) | join(\" \")" "$res")
if [ "$(jq -r '.overhead.measured' "$res")" != true ]; then
	echo "Not measured: $(jq -r '.overhead.why_not' "$res")."
	exit 0
fi

echo "| forks | spawn-join, ops/s | n |"
echo "| --- | ---: | ---: |"
LC_ALL=C printf '| without the probe (`--probes none`) | %.1f ± %.1f | %s |\n' "$off" "$off_err" "$off_n"
LC_ALL=C printf '| with `--probes runtime` | %.2f ± %.2f | %s |\n' "$on" "$on_err" "$on_n"
echo
LC_ALL=C awk -v r="$ratio" -v lo="$lo" -v hi="$hi" 'BEGIN {
	printf "Throughput with ÷ without: **%.5f**", r
	if (lo != "null" && hi != "null")
		printf " (99.9%% interval %.5f–%.5f, Fieller), the run %.0f× slower under the probe.\n",
			lo, hi, 1 / r
	else
		printf " (no 99.9%% interval: the runs without the probe vary too much), the run %.0f× slower under the probe.\n",
			1 / r
}'
echo
echo "Events per op, by kind:"
echo
echo "| event | per op |"
echo "| --- | ---: |"
jq -r --argjson ops "$ops" "$part | .events | to_entries[] | select(.key != \"window\" and .value > 0)
	| \"| \\(.key) | \\(.value / \$ops * 100 | round / 100) |\"" "$res"
LC_ALL=C printf '| all | **%.1f** |\n' "$(awk -v e="$events" -v o="$ops" 'BEGIN { print e / o }')"
echo
# The time an event adds: (time per op with − without) ÷ events per op; its ± is the
# first-order propagation of the two means' 99.9% half-widths through 1/x.
LC_ALL=C awk -v on="$on" -v eon="$on_err" -v off="$off" -v eoff="$off_err" -v e="$events" \
	-v o="$ops" -v prog="$prog" -v wall="$wall" 'BEGIN {
	epo = e / o
	cost = (1 / on - 1 / off) * 1e9 / epo
	half = sqrt((eon / on ^ 2) ^ 2 + (eoff / off ^ 2) ^ 2) * 1e9 / epo
	printf "Cost per event: **%.0f ns ± %.0f** ((time per op with − without) ÷ %.1f events per op;", cost, half, epo
	printf " ± by first-order propagation of the two means'\'' 99.9%% half-widths). Of it, the BPF"
	if (prog != "null")
		printf " program itself takes %.0f ns (the kernel'\''s run-time statistics, `prog_ns_per_event`),", prog
	else
		printf " program'\''s own time is not known (the kernel'\''s BPF statistics were off),"
	printf " the rest is the uprobe trap around it and the reader taking the events on these same"
	printf " CPUs. The probed forks'\'' measured iterations took"
	if (wall != "null")
		printf " %.0f ns of wall time per event traced (`window_ns_per_event`).\n", wall
	else
		printf " no measured wall time per event.\n"
}'
echo
checks=$(jq -r "$part | [.check[] | \"\\(.counter) \\(if .agree == true then \"agree\" elif .agree == null then \"not comparable (drops)\" else \"DISAGREE (\\(.events) events, \\(.runtime) counted)\" end)\"] | join(\", \")" "$res")
if [ "$lost" = 0 ]; then
	echo "Ring buffer ($ring_kib KiB): no event dropped of $delivered delivered. Counts against the"
else
	echo "Ring buffer ($ring_kib KiB): **$lost events dropped** (by CPU:" \
		"$(jq -r "$part | .lost.per_cpu | map(tostring) | join(\" \")" "$res")) of $delivered" \
		"delivered. Counts against the"
fi
echo "runtime's own counters over the same windows: $checks."
echo
echo "Load average (1, 5, 15 min): $load_before before, $load_after after."
