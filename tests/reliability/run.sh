#!/usr/bin/env bash
# make reliability: try schedlab the way a skeptical user and a hostile machine would,
# and write what happened to RELIABILITY.md.
#
#   tests/reliability/run.sh BUILD OUT.md
#
# Each row runs one command under a time limit and judges its outcome:
#   ok              the exit status wanted, a one-line error for bad input, and every
#                   file check after it held
#   crash           killed by a signal, or a sanitizer, a segfault or an abort on stderr
#   hang            still running at the time limit
#   exit 0 on failure, exit N (want M)
#   destroyed file  a path the command was not asked to write changed kind or content
#   silent loss     a check on what was written failed (a missing result, a partial run
#                   not said to be partial, a temporary left behind)
# The exit status is 1 when any row is not ok. Needs root (tmpfs mounts, a mount
# namespace, running as nobody). RELIABILITY_SAN=0 leaves out the sanitizer and fuzz
# runs (they rebuild the project twice); FUZZ_SECONDS sets each fuzz target's time.
set -uo pipefail

BUILD=${1:?usage: run.sh BUILD OUT.md}
OUT=${2:?usage: run.sh BUILD OUT.md}
BIN=$(realpath "$BUILD/schedlab")
LIMIT=${RELIABILITY_LIMIT:-90}
SAN=${RELIABILITY_SAN:-1}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
MAKE=${MAKE:-make}
tmp=$(mktemp -d /tmp/schedlab-reliability.XXXXXX)
chmod 0755 "$tmp"
mounts=()
cleanup() {
	for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "reliability: run as root (tmpfs mounts, nobody, namespaces)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "reliability: no $BIN: run 'make' first" >&2; exit 2; }

# ---- rows ---------------------------------------------------------------------------

groups=() names=() cmds=() wants=() gots=() verdicts=() notes=()
group=""
failed=0

# A row's command as it reads in the table: the binary's path shortened.
show_cmd() {
	local s="$*"
	s=${s//$BIN/schedlab}
	s=${s//$tmp/\$T}
	printf '%s' "$s"
}

# The last row's verdict becomes $1 (with a note) unless it already failed.
fail_last() {
	local i=$((${#verdicts[@]} - 1))
	if [ "${verdicts[$i]}" = ok ]; then
		verdicts[$i]=$1
		notes[$i]=$2
		failed=1
	fi
}

# try NAME WANT CMD...: run CMD (stdin /dev/null, stdout $tmp/out, stderr $tmp/err) and
# judge its exit status against WANT, a list like "2" or "0|1". With WANT 2 the error
# must be one line (argp's "Try ... --help" hint aside).
try() {
	local name=$1 want=$2 rc verdict=ok note
	shift 2
	timeout -k 5 "$LIMIT" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	record "$name" "$want" "$rc" "$(show_cmd "$@")"
}

# record NAME WANT RC CMD: judge an exit status already taken (from $tmp/err).
record() {
	local name=$1 want=$2 rc=$3 cmd=$4 verdict=ok note lines
	note=$(grep -v '^Try .*--help' "$tmp/err" | head -1 | cut -c1-160)
	lines=$(grep -vc '^Try .*--help' "$tmp/err")
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		verdict=hang
	elif grep -qE 'Sanitizer|runtime error:|Segmentation fault|core dumped|Assertion .* failed' "$tmp/err"; then
		verdict=crash
		note=$(grep -m1 -E 'Sanitizer|runtime error:|Segmentation|core dumped|Assertion' "$tmp/err" | cut -c1-160)
	elif [ "$rc" -gt 128 ] && [[ "|$want|" != *"|$rc|"* ]]; then
		verdict=crash
		note="killed by signal $((rc - 128))"
	elif [[ "|$want|" != *"|$rc|"* ]]; then
		if [ "$rc" = 0 ]; then verdict="exit 0 on failure"; else verdict="exit $rc (want $want)"; fi
	elif [ "$want" = 2 ] && [ -z "${USAGE:-}" ] && { [ "$lines" != 1 ] || [ -z "$note" ]; }; then
		verdict="not one line"
		note="$lines lines on stderr: $note"
	fi
	[ "$verdict" = ok ] || failed=1
	groups+=("$group") names+=("$name") cmds+=("$cmd") wants+=("$want") gots+=("$rc")
	verdicts+=("$verdict") notes+=("$note")
}

# check KIND DESCRIPTION TEST...: a file check after the last row; KIND is the verdict
# when TEST fails ("destroyed file" or "silent loss").
check() {
	local kind=$1 what=$2
	shift 2
	"$@" || fail_last "$kind" "$what"
}

# The last row's stderr must say this (grep -E).
says() {
	grep -qE "$1" "$tmp/err" || fail_last "$2" "stderr does not say /$1/: $(head -c 160 "$tmp/err")"
}

is_chardev() { [ -c "$1" ] && [ ! -L "$1" ]; }
is_fifo() { [ -p "$1" ] && [ ! -L "$1" ]; }
is_link_to() { [ -L "$1" ] && [ "$(readlink "$1")" = "$2" ]; }
is_svg() { head -c 200 "$1" 2>/dev/null | grep -q '<svg\|<?xml'; }
no_temporaries() { ! find "$1" \( -name '*.tmp*' -o -name '*bigout.svg?*' \) 2>/dev/null | grep -q .; }
json_key() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }
same_content() { cmp -s "$1" "$2"; }

# A small folded file and a large one (a few seconds to render).
printf 'main;a;b 10\nmain;a;c 5\nmain;d 3\n' >"$tmp/small.folded"

# ---- bad input -----------------------------------------------------------------------

group="Bad input: refused with one line naming it, exit 2"
USAGE=1 try "no command: the usage, on stderr" 2 "$BIN"
try "unknown command" 2 "$BIN" frobnicate
try "run without a workload" 2 "$BIN" run
try "unknown workload" 2 "$BIN" run no-such-workload --quick --probes none
try "unknown preset" 2 "$BIN" run spawn-join --preset no-such --quick --probes none
try "unknown knob" 2 "$BIN" run spawn-join -c no_such=1 --quick --probes none
try "knob without a value" 2 "$BIN" run spawn-join -c workers --quick --probes none
try "knob out of range" 2 "$BIN" run spawn-join -c workers=257 --quick --probes none
try "knob not a number" 2 "$BIN" run spawn-join -c workers=four --quick --probes none
try "knob overflowing 64 bits" 2 "$BIN" run spawn-join -c workers=99999999999999999999 --quick --probes none
try "knob with trailing junk" 2 "$BIN" run spawn-join -c workers=2x --quick --probes none
try "workers_max below workers" 2 "$BIN" run spawn-join -c workers=4 -c workers_max=2 --quick --probes none
try "unknown parameter" 2 "$BIN" run spawn-join -P no_such=1 --quick --probes none
try "parameter out of range" 2 "$BIN" run spawn-join -P n=0 --quick --probes none
try "parameter in scientific notation" 2 "$BIN" run spawn-join -P n=1e3 --quick --probes none
try "parameter not one of its words" 2 "$BIN" run bind-chain -P interpreter=magic --quick --probes none
try "parameter of another workload" 2 "$BIN" run spawn-join -P depth=10 --quick --probes none
try "--forks 0" 2 "$BIN" run spawn-join --forks 0 --probes none
try "--forks -1" 2 "$BIN" run spawn-join --forks -1 --probes none
try "--iterations 0" 2 "$BIN" run spawn-join --iterations 0 --probes none
try "--time 0" 2 "$BIN" run spawn-join --time 0 --probes none
try "--time not a number" 2 "$BIN" run spawn-join --time soon --probes none
try "--time NaN" 2 "$BIN" run spawn-join --time nan --probes none
try "--time a year" 2 "$BIN" run spawn-join --time 31536000 --probes none
try "--warmup -1" 2 "$BIN" run spawn-join --warmup -1 --probes none
try "--forks × --iterations beyond memory" 2 "$BIN" run spawn-join --forks 4000000000 --iterations 4000000000 --probes none
try "--freq 0" 2 "$BIN" run spawn-join --freq 0 --quick
try "--freq above perf_event_max_sample_rate" 2 "$BIN" run spawn-join --freq 100000000 --quick
# where 100 kHz costs more of a CPU than perf_cpu_time_max_percent it is refused at once;
# where it does not, the run ends (a hang is the failure)
try "--freq 100000: refused where it costs more than perf_cpu_time_max_percent, else run" "2|0" "$BIN" run spawn-join --freq 100000 --quick -o "$tmp/freq"
try "--stack-copy not a multiple of 8" 2 "$BIN" run spawn-join --stack-copy 1001 --quick
try "--stack-copy above 64 KiB" 2 "$BIN" run spawn-join --stack-copy 131072 --quick
try "--call-graph unknown" 2 "$BIN" run spawn-join --call-graph lbr --quick
try "--probes unknown" 2 "$BIN" run spawn-join --probes everything --quick
try "the fork command by hand" 2 "$BIN" __fork
try "list of an unknown kind" 2 "$BIN" list --no-such

printf 'main;a 10\nmain;b\n' >"$tmp/nocount.folded"
printf 'main;a 10\nmain;b -3\n' >"$tmp/negative.folded"
printf 'main;a 99999999999999999999999\n' >"$tmp/overflow.folded"
printf 'main;a 18446744073709551615\nmain;b 18446744073709551615\n' >"$tmp/sum.folded"
: >"$tmp/empty.folded"
head -c 65536 /dev/urandom >"$tmp/random.folded"
python3 -c 'import sys; sys.stdout.write(";".join("f%d" % i for i in range(100000)) + " 1\n")' >"$tmp/deep.folded"
# flame_bad NAME ARGS...: refused, and no output file left behind.
flame_bad() {
	local name=$1
	shift
	rm -f "$tmp/x.svg"
	try "$name" 2 "$BIN" flame "$@" -o "$tmp/x.svg"
	check "silent loss" "a refused input left an output file behind" test ! -e "$tmp/x.svg"
}
try "flame: no such file" 2 "$BIN" flame "$tmp/none.folded"
flame_bad "flame: a line without a count" "$tmp/nocount.folded"
flame_bad "flame: a negative count" "$tmp/negative.folded"
flame_bad "flame: a count beyond 64 bits" "$tmp/overflow.folded"
flame_bad "flame: counts whose sum overflows" "$tmp/sum.folded"
flame_bad "flame: random bytes" "$tmp/random.folded"
flame_bad "flame: /dev/zero (an endless line)" /dev/zero
flame_bad "flame: a directory as input" "$tmp"
flame_bad "flame: a stack too deep to draw" "$tmp/deep.folded"
flame_bad "flame: --width 0" "$tmp/small.folded" --width 0
flame_bad "flame: --width not a number" "$tmp/small.folded" --width wide
flame_bad "flame: --minwidth negative" "$tmp/small.folded" --minwidth -1

try "flame: an empty file: drawn, saying it holds no samples" 0 "$BIN" flame "$tmp/empty.folded" -o "$tmp/empty.svg"
check "silent loss" "no SVG written" is_svg "$tmp/empty.svg"

# ---- output targets --------------------------------------------------------------------

group="Output targets: written atomically when regular, in place or refused otherwise"
try "flame -o a new file" 0 "$BIN" flame "$tmp/small.folded" -o "$tmp/new.svg"
check "silent loss" "no SVG written" is_svg "$tmp/new.svg"
check "silent loss" "a temporary left behind" no_temporaries "$tmp"

echo old >"$tmp/reg.svg"
try "flame -o an existing regular file" 0 "$BIN" flame "$tmp/small.folded" -o "$tmp/reg.svg"
check "silent loss" "the file was not replaced by the SVG" is_svg "$tmp/reg.svg"

echo old >"$tmp/old.svg"
ln -s old.svg "$tmp/link.svg"
try "flame -o a symlink" "0|1" "$BIN" flame "$tmp/small.folded" -o "$tmp/link.svg"
check "destroyed file" "the symlink was replaced" is_link_to "$tmp/link.svg" old.svg

# device nodes of our own, so that a command that replaces them harms nothing else
mknod -m 0666 "$tmp/null" c 1 3 && mknod -m 0666 "$tmp/devfull" c 1 7
try "flame -o a character device (null)" 0 "$BIN" flame "$tmp/small.folded" -o "$tmp/null"
check "destroyed file" "the device node was replaced" is_chardev "$tmp/null"

mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
try "flame -o a FIFO with a reader" 0 "$BIN" flame "$tmp/small.folded" -o "$tmp/fifo"
# a reader still waiting means nothing was written to the FIFO
kill "$reader" 2>/dev/null
wait "$reader"
check "destroyed file" "the FIFO was replaced" is_fifo "$tmp/fifo"
check "silent loss" "the reader got no SVG" is_svg "$tmp/fifo.out"

mkdir "$tmp/dir.svg"
try "flame -o a directory" "1|2" "$BIN" flame "$tmp/small.folded" -o "$tmp/dir.svg"
check "destroyed file" "the directory was replaced" test -d "$tmp/dir.svg"

try "flame -o - (stdout)" 0 "$BIN" flame "$tmp/small.folded" -o -
check "silent loss" "no SVG on stdout" is_svg "$tmp/out"
check "destroyed file" "a file named '-' was written" test ! -e ./-

try "flame -o a full device (full)" 1 "$BIN" flame "$tmp/small.folded" -o "$tmp/devfull"
says "No space left on device" "exit 1 but wrong errno"
check "destroyed file" "the device node was replaced" is_chardev "$tmp/devfull"

mkdir -p "$tmp/ro" && chmod 0555 "$tmp/ro"
try "flame -o in a directory nobody may write (as nobody): a bad path" 2 setpriv --reuid=nobody --regid=nogroup --clear-groups "$BIN" flame "$tmp/small.folded" -o "$tmp/ro/x.svg"
says "Permission denied" "refused without the real errno"

try "run --json with two workloads: one JSON document" 0 "$BIN" run spawn-join permit --quick --probes none --json -o "$tmp/json"
check "silent loss" "stdout is not one JSON array of two results" \
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (isinstance(d, list) and len(d) == 2))' "$tmp/out"

# ---- faults ------------------------------------------------------------------------------

group="Faults: a full disk, signals, killed processes, missing privileges and BTF"

# A full file system, and one with room for a little: the run fails with ENOSPC named,
# exit 1, and results/latest stays on the last complete run.
mkdir -p "$tmp/full"
if mount -t tmpfs -o size=256k tmpfs "$tmp/full" 2>/dev/null; then
	mounts+=("$tmp/full")
	try "run into a file system with room" 0 "$BIN" run spawn-join --quick --probes none -o "$tmp/full"
	good=$(readlink "$tmp/full/latest")
	check "silent loss" "no result.json" test -s "$tmp/full/latest/result.json"
	dd if=/dev/zero of="$tmp/full/filler" bs=4k 2>/dev/null
	try "run into a full file system" 1 "$BIN" run spawn-join --quick --probes none -o "$tmp/full"
	says "No space left on device" "exit 1 but not ENOSPC"
	check "silent loss" "latest was switched to a failed run" is_link_to "$tmp/full/latest" "$good"
	check "silent loss" "the failed run left its empty folder" \
		test "$(find "$tmp/full" -mindepth 1 -maxdepth 1 -type d | wc -l)" = 1
	rm -f "$tmp/full/filler"
	# room for result.json and report.md, not for the SVG
	avail=$(df --output=avail -B1 "$tmp/full" | tail -1)
	dd if=/dev/zero of="$tmp/full/filler" bs=1 count=$((avail - 40960)) 2>/dev/null
	try "run into a file system that fills mid-run" 1 "$BIN" run spawn-join --quick -o "$tmp/full"
	says "No space left on device" "exit 1 but not ENOSPC"
	check "silent loss" "latest was switched to a failed run" is_link_to "$tmp/full/latest" "$good"
	rm -f "$tmp/full/filler"
	# read-only: no run folder can be made, the machine's failure, exit 1
	mount -o remount,ro "$tmp/full"
	try "run into a read-only file system" 1 "$BIN" run spawn-join --quick --probes none -o "$tmp/full"
	says "Read-only file system" "exit 1 but not EROFS"
	check "silent loss" "latest was switched to a failed run" is_link_to "$tmp/full/latest" "$good"
	umount "$tmp/full" && mounts=()
else
	group="$group (tmpfs refused: the full-disk rows were not run)"
fi

# --out that is a file: the user's to fix, exit 2 naming --out; the file stays.
echo "mine" >"$tmp/outfile"
try "run --out a regular file" 2 "$BIN" run spawn-join --quick --probes none -o "$tmp/outfile"
says "^schedlab: --out " "the error does not name --out"
check "destroyed file" "the file given as --out changed" grep -qx mine "$tmp/outfile"

# results/latest that is not a symlink is not ours to replace.
mkdir -p "$tmp/notlink"
echo "mine" >"$tmp/notlink/latest"
try "results/latest is a regular file" 1 "$BIN" run spawn-join --quick --probes none -o "$tmp/notlink"
check "destroyed file" "results/latest was replaced" grep -qx mine "$tmp/notlink/latest"

# A signal while measuring: what completed is written, marked partial; exit 130.
signal_run() {
	local sig=$1 dir=$2
	: >"$tmp/out"; : >"$tmp/err" # not an earlier row's lines for the poll below
	"$BIN" run spawn-join --forks 3 --iterations 3 --time 1 --probes none -o "$dir" \
		>"$tmp/out" 2>"$tmp/err" </dev/null &
	local pid=$! n=0
	until grep -q 'fork 2/3  iteration  1/3' "$tmp/err" || [ $n -ge $((LIMIT * 10)) ]; do
		sleep 0.1
		n=$((n + 1))
	done
	kill -s "$sig" "$pid"
	timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
	wait "$pid"
}
for sig in INT TERM; do
	signal_run "$sig" "$tmp/sig$sig"
	record "SIG$sig during run, while measuring fork 2" 130 $? "schedlab run spawn-join --forks 3 (SIG$sig)"
	res=$(ls -d "$tmp/sig$sig"/2*/ 2>/dev/null | head -1)
	check "silent loss" "no result.json in the run folder" test -s "${res}result.json"
	check "silent loss" "result.json is not marked partial" json_key "${res}result.json" 'd.get("partial") is True'
	check "silent loss" "a temporary left behind" no_temporaries "$tmp/sig$sig"
done

python3 - "$tmp/big.folded" <<'EOF'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    for i in range(1500000):
        f.write(";".join("fn%d" % random.randrange(400) for _ in range(random.randrange(3, 30))))
        f.write(" %d\n" % random.randrange(1, 1000))
EOF
echo old >"$tmp/bigout.svg"
"$BIN" flame "$tmp/big.folded" -o "$tmp/bigout.svg" >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
n=0
until find "$tmp" -maxdepth 1 -name '*bigout.svg?*' | grep -q . || ! kill -0 "$pid" 2>/dev/null || [ $n -ge 600 ]; do
	sleep 0.05
	n=$((n + 1))
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
record "SIGTERM during flame on a 1.5M-line file" "130|0" $? "schedlab flame big.folded -o bigout.svg (SIGTERM)"
check "silent loss" "a temporary left behind" no_temporaries "$tmp"
check "destroyed file" "the old output is neither kept nor replaced whole" \
	bash -c "grep -qx old '$tmp/bigout.svg' || tail -c 10 '$tmp/bigout.svg' | grep -q '</svg>'"

# A fork killed mid-run: the run fails, saying which fork and how.
: >"$tmp/out"; : >"$tmp/err" # not an earlier row's lines for the poll below
"$BIN" run spawn-join --forks 2 --iterations 3 --time 1 --probes none -o "$tmp/kill" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
n=0
until grep -q 'fork 1/2  iteration  1/3' "$tmp/err" || [ $n -ge $((LIMIT * 10)) ]; do sleep 0.1; n=$((n + 1)); done
pkill -KILL -P "$pid" -f __fork
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "a fork killed by SIGKILL mid-run" 1 $? "schedlab run spawn-join --forks 2 (fork 1 killed)"
says "fork 1|signal|Killed" "exit 1 but the fork's death not named"
res=$(ls -d "$tmp/kill"/2*/ 2>/dev/null | head -1)
check "silent loss" "no result.json saying why" json_key "${res}result.json" '"error" in str(d)'

# The TCP server killed mid-run.
: >"$tmp/out"; : >"$tmp/err" # not an earlier row's lines for the poll below
"$BIN" run tcp-blocking --forks 1 --iterations 3 --time 1 --warmup 1 --probes none -o "$tmp/srv" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
n=0
until grep -q 'iteration  1/3' "$tmp/err" || [ $n -ge $((LIMIT * 10)) ]; do sleep 0.1; n=$((n + 1)); done
pkill -KILL -f __tcp-server
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "the TCP server killed mid-run" 1 $? "schedlab run tcp-blocking (server killed)"
says "server" "exit 1 but the server not named"

# Without privileges the probe cannot attach; the run goes on and says why.
mkdir -p "$tmp/nobody" && cp "$BIN" "$tmp/nobody/schedlab" && chown nobody "$tmp/nobody"
try "run as nobody (no BPF)" 0 setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$tmp/nobody/schedlab" run spawn-join --quick -o "$tmp/nobody/results"
check "silent loss" "the report does not say why the probe is off" \
	grep -rqiE 'not attached|permission|privilege' "$tmp/nobody/results/latest/report.md"

# Without kernel BTF (hidden in a mount namespace) the same.
if unshare -m true 2>/dev/null; then
	try "run without /sys/kernel/btf/vmlinux" 0 unshare -m sh -c \
		"mount -t tmpfs none /sys/kernel/btf && exec '$BIN' run spawn-join --quick -o '$tmp/nobtf'"
	check "silent loss" "the report does not say the BTF is missing" \
		grep -rqiE 'btf' "$tmp/nobtf/latest/report.md"
fi

# Two runs at once into one folder: two complete run folders, latest on one of them.
"$BIN" run spawn-join --quick --probes none -o "$tmp/two" >/dev/null 2>"$tmp/err.a" </dev/null &
a=$!
"$BIN" run spawn-join --quick --probes none -o "$tmp/two" >/dev/null 2>"$tmp/err" </dev/null
rc=$?
wait "$a" || rc=$?
record "two runs at once into one folder" 0 $rc "schedlab run … -o DIR & schedlab run … -o DIR"
check "silent loss" "not two complete run folders" \
	bash -c "[ \$(ls '$tmp/two'/2*/result.json | wc -l) = 2 ]"
check "silent loss" "latest is not a complete run" test -s "$tmp/two/latest/result.json"

# ---- sanitizers and fuzzing ---------------------------------------------------------------

# A sanitizer suite is judged by its exit status and its counts: some tests provoke a
# sanitizer report on purpose (the guard page's stack overflow), so its log is not grepped.
san_row() { # NAME LOG RC
	local name=$1 log=$2 rc=$3 tested passed
	tested=$(grep -oE 'Tested: [0-9]+' "$log" | awk '{s += $2} END {print s + 0}')
	passed=$(grep -oE 'Passing: [0-9]+' "$log" | awk '{s += $2} END {print s + 0}')
	[ "$passed" = "$tested" ] && [ "$tested" -gt 0 ] || { [ "$rc" = 0 ] && rc=1; }
	if [ "$rc" = 0 ]; then
		: >"$tmp/err"
	else
		grep -m1 -E 'WARNING: [A-Za-z]*Sanitizer|SUMMARY: |runtime error:|FAIL' "$log" >"$tmp/err"
	fi
	record "$name: $passed of $tested tests passed" 0 "$rc" "make test SANITIZE=${name}"
}
if [ "$SAN" = 1 ]; then
	group="Sanitizers: the whole suite built with each"
	for s in address,undefined thread; do
		$MAKE --no-print-directory test SANITIZE=$s >"$tmp/san.log" 2>&1
		san_row "$s" "$tmp/san.log" $?
	done

	group="Fuzzing: each parser of outside input for ${FUZZ_SECONDS} s"
	$MAKE --no-print-directory fuzz FUZZ_SECONDS="$FUZZ_SECONDS" >"$tmp/fuzz.log" 2>&1
	rc=$?
	# make fuzz names each target ("== DIR/fuzz_NAME (S s)") and leaves its log in
	# DIR/NAME.log, where libFuzzer ends with "Done N runs in S second(s)".
	sed -nE 's/^== (.*)\/fuzz_([a-z_]+) \(.*$/\1 \2/p' "$tmp/fuzz.log" >"$tmp/fuzz.targets"
	: >"$tmp/fuzz.rows"
	while read -r dir t; do
		grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$dir/$t.log" 2>/dev/null | tail -1 |
			awk -v t="$t" '{print t, $2, $5}' >>"$tmp/fuzz.rows"
	done <"$tmp/fuzz.targets"
	while read -r t runs secs; do
		grep -E '(ERROR|WARNING): [A-Za-z]*Sanitizer|runtime error:|deadly signal' \
			"$(awk -v t="$t" '$2 == t {print $1}' "$tmp/fuzz.targets")/$t.log" >"$tmp/err"
		record "$t: $runs executions in $secs s" 0 0 "make fuzz ($t)"
	done <"$tmp/fuzz.rows"
	if [ "$rc" != 0 ] || [ ! -s "$tmp/fuzz.rows" ]; then
		grep -E 'ERROR|SUMMARY|crash-|Error' "$tmp/fuzz.log" | head -3 >"$tmp/err"
		record "make fuzz" 0 "$rc" "make fuzz FUZZ_SECONDS=$FUZZ_SECONDS"
	fi
fi

# ---- the report ------------------------------------------------------------------------------

ok=0
for v in "${verdicts[@]}"; do [ "$v" = ok ] && ok=$((ok + 1)); done
{
	echo "# Reliability"
	echo
	echo "What schedlab does with bad input, hostile output targets, faults, sanitizers and"
	echo "fuzzing. Regenerated by \`make reliability\` (tests/reliability/run.sh, as root);"
	echo "\`.ci/run\` runs it and fails on any row that is not ok. \$T is the script's"
	echo "temporary folder."
	echo
	echo "Last run: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -r), $(nproc) CPUs:" \
		"**$ok of ${#verdicts[@]} rows ok**."
	echo
	echo "A row is *ok* when the exit status is the one wanted, bad input got a one-line error,"
	echo "and each check on the files after it held. Otherwise it says what went wrong: *crash*"
	echo "(a signal, a sanitizer report), *hang* (still running after ${LIMIT} s), *exit 0 on"
	echo "failure*, *destroyed file* (a path the command was not asked to write changed) or"
	echo "*silent loss* (a result missing, a partial run not marked partial, a temporary left)."
	last=""
	for i in "${!names[@]}"; do
		if [ "${groups[$i]}" != "$last" ]; then
			last=${groups[$i]}
			printf '\n## %s\n\n| what | command | exit (want) | outcome | what it said |\n|---|---|---|---|---|\n' "$last"
		fi
		printf '| %s | `%s` | %s (%s) | %s | %s |\n' "${names[$i]}" \
			"$(printf '%s' "${cmds[$i]}" | sed 's/|/\\|/g; s/`/'"'"'/g')" \
			"${gots[$i]}" "${wants[$i]}" "${verdicts[$i]}" \
			"$(printf '%s' "${notes[$i]}" | sed 's/|/\\|/g; s/`/'"'"'/g')"
	done
} >"$tmp/report.md"
# the report replaces only a regular file (or nothing)
if [ -e "$OUT" ] && { [ -L "$OUT" ] || [ ! -f "$OUT" ]; }; then
	echo "reliability: $OUT is not a regular file; the report is left in $tmp/report.md" >&2
	trap - EXIT
	exit 1
fi
cp "$tmp/report.md" "$OUT.tmp.$$" && mv "$OUT.tmp.$$" "$OUT"
echo "reliability: $ok of ${#verdicts[@]} rows ok; see $OUT"
exit $failed
