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
#   leak            a uprobe left in the kernel, or a process that outlived its run
#   privileged      a process kept a privilege it does not need (the TCP server)
#   served a stranger  the TCP server answered a connection the workload did not open
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
	if { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [[ "|$want|" != *"|$rc|"* ]]; then
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
# await PATTERN [FILE]: until FILE ($tmp/err) holds a line matching PATTERN (grep), or the
# time limit; a row's check then says what did not come.
await() { local n=0; until grep -q "$1" "${2:-$tmp/err}" 2>/dev/null || [ $n -ge $((LIMIT * 10)) ]; do sleep 0.1; n=$((n + 1)); done; }
# await_path GLOB: until a path matches GLOB, or the same bound.
await_path() { local n=0; until compgen -G "$1" >/dev/null || [ $n -ge $((LIMIT * 10)) ]; do sleep 0.1; n=$((n + 1)); done; }

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
flame_bad "flame: /dev/zero (a device, not a regular file)" /dev/zero
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

# ---- hostile run folders ------------------------------------------------------------------

group="Hostile run folders: what a run folder says is not trusted, what is planted in one is not written through"

# Two real runs to craft from; each crafted folder is a copy with result.json edited.
"$BIN" run spawn-join --quick -o "$tmp/base" >/dev/null 2>&1 </dev/null
"$BIN" run spawn-join --quick -o "$tmp/base" >/dev/null 2>&1 </dev/null
runs=$(ls -d "$tmp/base"/2*/ | head -2)
runA=$(echo "$runs" | sed -n 1p) runB=$(echo "$runs" | sed -n 2p)
printf 'secretfn;leaked 42\nroot;private 7\n' >"$tmp/secret.txt" && chmod 0600 "$tmp/secret.txt"
# craft NAME PYTHON: a copy of run A as $tmp/hostile/NAME with d (result.json) edited
craft() {
	mkdir -p "$tmp/hostile" && rm -rf "$tmp/hostile/$1" && cp -a "$runA" "$tmp/hostile/$1"
	python3 - "$tmp/hostile/$1/result.json" "$2" <<'PY'
import json, sys
p, code = sys.argv[1], sys.argv[2]
d = json.load(open(p))
exec(code)
s = json.dumps(d, allow_nan=True)
open(p, "w").write(s.replace('"@NAN@"', "NaN"))
PY
}
leaked() { ! grep -rqs 'secretfn\|private' "$tmp/hostile" "$tmp/base" --include='compare*' --include='diff.svg'; }

craft climb 'd["probes"][0]["folded"] = "../../../secret.txt"'
try "compare: result.json's folded climbs out of its folder" 2 "$BIN" compare "$runB" "$tmp/hostile/climb"
says "probes.0.folded" "the error does not name the field"
check "destroyed file" "another file's lines were copied into a compare output" leaked
craft absolute 'd["probes"][0]["folded"] = "'"$tmp"'/secret.txt"'
try "compare: result.json's folded is an absolute path" 2 "$BIN" compare "$runB" "$tmp/hostile/absolute"
check "destroyed file" "another file's lines were copied into a compare output" leaked
craft escape 'd["id"] = "x/../../escape_t"'
try "compare: result.json's id climbs out of the results folder" 2 "$BIN" compare "$runB" "$tmp/hostile/escape"
says '"id"' "the error does not name the field"
check "destroyed file" "a folder was made outside the results folder" \
	bash -c "! ls -d '$tmp'/escape_t* '$tmp'/hostile/escape_t* 2>/dev/null | grep -q ."

# A compare folder that another user made, with compare.md a link to root's file.
cp /etc/hostname "$tmp/victim" && chmod 0600 "$tmp/victim" && cp "$tmp/victim" "$tmp/victim.orig"
idA=$(basename "$runA") idB=$(basename "$runB")
planted="$tmp/base/compare-$idA-vs-$idB"
mkdir -p "$planted" && ln -sf "$tmp/victim" "$planted/compare.md" && chown -h nobody "$planted" "$planted/compare.md"
try "compare: its default folder is another user's, compare.md planted as a link" 2 "$BIN" compare "$runA" "$runB"
check "destroyed file" "the link's target was written" same_content "$tmp/victim" "$tmp/victim.orig"
check "destroyed file" "the link's target changed mode" test "$(stat -c %a "$tmp/victim")" = 600
check "destroyed file" "the planted link was replaced" is_link_to "$planted/compare.md" "$tmp/victim"
chown -h root "$planted"
try "compare -o a folder holding a planted compare.md link" 2 "$BIN" compare "$runA" "$runB" -o "$planted"
says "symbolic link" "the error does not say the link is refused"
check "destroyed file" "the link's target was written" same_content "$tmp/victim" "$tmp/victim.orig"
check "destroyed file" "the planted link was replaced" is_link_to "$planted/compare.md" "$tmp/victim"
rm -rf "$planted"

# FIFOs where files are read: refused at once, never waited on.
saved_limit=$LIMIT
LIMIT=20
craft fifo_folded 'pass'
rm "$tmp/hostile/fifo_folded/oncpu.folded" && mkfifo "$tmp/hostile/fifo_folded/oncpu.folded"
try "diagnose: oncpu.folded is a FIFO" 0 "$BIN" diagnose "$tmp/hostile/fifo_folded"
try "compare: oncpu.folded is a FIFO" 0 "$BIN" compare "$runA" "$tmp/hostile/fifo_folded" -o "$tmp/hostile/fifo_cmp"
try "run --baseline a run whose oncpu.folded is a FIFO" 0 "$BIN" run spawn-join --quick --probes none -o "$tmp/hostile/fifo_base" --baseline "$tmp/hostile/fifo_folded"
craft fifo_result 'pass'
rm "$tmp/hostile/fifo_result/result.json" && mkfifo "$tmp/hostile/fifo_result/result.json"
try "diagnose: result.json is a FIFO" 2 "$BIN" diagnose "$tmp/hostile/fifo_result"
says "not a regular file" "the error does not say why"
try "compare: result.json is a FIFO" 2 "$BIN" compare "$runA" "$tmp/hostile/fifo_result"
mkfifo "$tmp/hostile/in.folded"
try "flame: the input is a FIFO" 2 "$BIN" flame "$tmp/hostile/in.folded" -o "$tmp/hostile/in.svg"
says "not a regular file" "the error does not say why"
LIMIT=$saved_limit

# Garbage read back: refused naming the field, never a verdict.
craft null_sample 'd["samples"][1] = None'
try "compare: a null sample" 2 "$BIN" compare "$runA" "$tmp/hostile/null_sample"
says "samples.1" "the error does not name the sample"
craft string_sample 'd["samples"][0] = "fast"'
try "compare: a string sample" 2 "$BIN" compare "$runA" "$tmp/hostile/string_sample"
craft nan_sample 'd["samples"][0] = "@NAN@"'
try "compare: a NaN sample" 2 "$BIN" compare "$runA" "$tmp/hostile/nan_sample"
says "finite" "the error does not say the number is not finite"
craft negative_sample 'd["samples"][2] = -5.0'
try "compare: a negative throughput" 2 "$BIN" compare "$runA" "$tmp/hostile/negative_sample"
mkdir -p "$tmp/hostile/bare" && echo '{"schema":"schedlab-result/1"}' >"$tmp/hostile/bare/result.json"
try "diagnose: a result.json that is only its schema" 2 "$BIN" diagnose "$tmp/hostile/bare"

# Terminal escapes in what a run folder says are printed as text.
craft escapes 'd["workload"] = "\u001b]0;PWNED\u0007\u001b[2J"; d["preset"] = "ce\u009b31m"'
try "diagnose: escape sequences in result.json's strings" 0 "$BIN" diagnose "$tmp/hostile/escapes"
check "destroyed file" "a control character reached the terminal" \
	bash -c "! LC_ALL=C grep -q \$'\\x1b\\|\\x07\\|\\xc2\\x9b' '$tmp/out'"

# Modes come from the umask; a file rewritten keeps its own.
(umask 077 && exec "$BIN" run spawn-join --quick -o "$tmp/umask" >/dev/null 2>"$tmp/err" </dev/null)
record "run under umask 077: files 0600, folders 0700" 0 $? "umask 077; schedlab run spawn-join --quick"
check "silent loss" "a file is readable by others" \
	bash -c "[ -z \"\$(find '$tmp/umask' -mindepth 1 \\( -type f -perm /077 -o -type d -perm /077 \\))\" ]"
echo old >"$tmp/mode.svg" && chmod 0640 "$tmp/mode.svg"
try "flame -o a 0640 file: rewritten, still 0640" 0 "$BIN" flame "$tmp/small.folded" -o "$tmp/mode.svg"
check "silent loss" "the file's mode changed" test "$(stat -c %a "$tmp/mode.svg")" = 640

# One table of exit statuses: the user's path is 2, the machine's failure 1.
try "run -o '' (empty)" 2 "$BIN" run spawn-join --quick --probes none -o ""
says "^schedlab: --out " "the error does not name --out"
ln -sfn loop_b "$tmp/loop_a" && ln -sfn loop_a "$tmp/loop_b"
try "run --out a symlink loop" 2 "$BIN" run spawn-join --quick --probes none -o "$tmp/loop_a/x"
try "flame -o into a symlink loop" 2 "$BIN" flame "$tmp/small.folded" -o "$tmp/loop_a/x.svg"
cp "$tmp/small.folded" "$tmp/self.folded"
try "flame -o its own input" 2 "$BIN" flame "$tmp/self.folded" -o "$tmp/self.folded"
check "destroyed file" "the input was overwritten" same_content "$tmp/self.folded" "$tmp/small.folded"
try "--forks ' +1' (a space and a plus)" 2 "$BIN" run spawn-join --forks " +1" --probes none
try "--time 0x1p-3 (hexadecimal)" 2 "$BIN" run spawn-join --time 0x1p-3 --probes none
try "-c workers=' 2' (a leading space)" 2 "$BIN" run spawn-join -c "workers= 2" --quick --probes none

# A SIGKILL before anything is written leaves no run folder.
: >"$tmp/out"; : >"$tmp/err"
"$BIN" run spawn-join --forks 1 --warmup 1 --iterations 5 --time 0.5 --probes none -o "$tmp/killed" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
await 'iteration  1/5'
kill -KILL "$pid"
wait "$pid"
record "SIGKILL of run while measuring" 137 $? "schedlab run spawn-join (SIGKILL)"
check "silent loss" "an empty run folder was left" \
	bash -c "! find '$tmp/killed' -mindepth 1 -type d -empty 2>/dev/null | grep -q ."

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
	# what it left is a failed run by its own result.json, or no run at all
	partial=$(ls -d "$tmp/full"/2*/ | grep -v "/$good/\$" | head -1)
	check "silent loss" "result.json says the run did not fail" \
		bash -c "[ ! -e '${partial}result.json' ] || python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))[\"failure\"] is None)' '${partial}result.json'"
	if [ -n "$partial" ]; then
		try "diagnose of what the full disk left" "1|2" "$BIN" diagnose "$partial"
	fi
	# compare into the full file system: exit 1, and no folder of its own left behind
	dd if=/dev/zero of="$tmp/full/filler2" bs=4k 2>/dev/null
	try "compare into a full file system" 1 "$BIN" compare "$tmp/full/$good" "$tmp/full/$good" -o "$tmp/full/cmp"
	check "silent loss" "an empty or partial compare folder was left" test ! -e "$tmp/full/cmp"
	rm -f "$tmp/full/filler" "$tmp/full/filler2"
	# read-only: no run folder can be made, the machine's failure, exit 1
	mount -o remount,ro "$tmp/full"
	try "run into a read-only file system" 1 "$BIN" run spawn-join --quick --probes none -o "$tmp/full"
	says "Read-only file system" "exit 1 but not EROFS"
	check "silent loss" "latest was switched to a failed run" is_link_to "$tmp/full/latest" "$good"
	try "flame -o into a read-only file system" 1 "$BIN" flame "$tmp/small.folded" -o "$tmp/full/x.svg"
	says "Read-only file system" "exit 1 but not EROFS"
	try "compare -o into a read-only file system" 1 "$BIN" compare "$tmp/full/$good" "$tmp/full/$good" -o "$tmp/full/cmp"
	says "Read-only file system" "exit 1 but not EROFS"
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
	local pid=$!
	await 'fork 2/3  iteration  1/3'
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

# Interrupted before any measured iteration: nothing to point latest at.
: >"$tmp/out"; : >"$tmp/err"
"$BIN" run spawn-join --quick --probes none -o "$tmp/early" >/dev/null 2>&1 </dev/null
early=$(readlink "$tmp/early/latest")
"$BIN" run spawn-join --forks 1 --warmup 3 --iterations 3 --time 0.5 --probes none -o "$tmp/early" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
await 'warm-up    1/3'
kill -INT "$pid"
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "SIGINT during warm-up: latest stays on the last run with data" 130 $? "schedlab run spawn-join (SIGINT in warm-up)"
check "silent loss" "latest moved to a run with no measured iteration" is_link_to "$tmp/early/latest" "$early"

# A sweep interrupted in its second point: sweep.json says so, the point too.
: >"$tmp/out"; : >"$tmp/err"
# its own process group, which the SIGINT goes to as a terminal's Ctrl-C does
setsid "$BIN" sweep spawn-join -P n=100,200,400 --forks 1 --warmup 0 --iterations 4 --time 0.5 \
	--probes none -o "$tmp/sweepint" >"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
await '\[2/3\]'
# the point's log is made after its "[2/3]" line is printed: wait for the file before
# reading it, or the wait would read the sweep's own stderr, where no iteration shows,
# and the SIGINT would come after the sweep ended
await_path "$tmp/sweepint/02-*.log"
await 'iteration  1/4' "$(ls "$tmp/sweepint"/02-*.log 2>/dev/null | head -1)"
kill -INT -- -"$pid"
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "SIGINT during a sweep's second point" 130 $? "schedlab sweep spawn-join -P n=100,200,400 (SIGINT)"
check "silent loss" "sweep.json does not say it was interrupted" \
	json_key "$tmp/sweepint/sweep.json" 'd["interrupted"] is True and d["points"][1]["status"] == "interrupted" and d["points"][2]["status"] == "not run"'
check "silent loss" "sweep.md does not say it was interrupted" grep -q Interrupted "$tmp/sweepint/sweep.md"

# A fork killed mid-run: the run fails, saying which fork and how.
: >"$tmp/out"; : >"$tmp/err" # not an earlier row's lines for the poll below
"$BIN" run spawn-join --forks 2 --iterations 3 --time 1 --probes none -o "$tmp/kill" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
await 'fork 1/2  iteration  1/3'
pkill -KILL -P "$pid" -f __fork
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "a fork killed by SIGKILL mid-run" 1 $? "schedlab run spawn-join --forks 2 (fork 1 killed)"
says "fork 1|signal|Killed" "exit 1 but the fork's death not named"
res=$(ls -d "$tmp/kill"/2*/ 2>/dev/null | head -1)
check "silent loss" "no result.json saying why" json_key "${res}result.json" '"error" in str(d)'
check "silent loss" "latest was pointed at the failed run" test ! -e "$tmp/kill/latest"

# The TCP server killed mid-run.
: >"$tmp/out"; : >"$tmp/err" # not an earlier row's lines for the poll below
"$BIN" run tcp-blocking --forks 1 --iterations 3 --time 1 --warmup 1 --probes none -o "$tmp/srv" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
await 'iteration  1/3'
pkill -KILL -f __tcp-server
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "the TCP server killed mid-run" 1 $? "schedlab run tcp-blocking (server killed)"
says "server" "exit 1 but the server not named"

# SIGKILL at random moments while the runtime and alloc probes are attached: no uprobe is
# left in the kernel (dmesg: "failed to unregister, leaking uprobe", what a detach from a
# living fork left when the kill came), and no fork outlives its killed run.
running() { # PID runs: exists and is no zombie (a dead fork waits for init to reap it)
	local s
	s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ -n "$s" ] && [ "$s" != Z ]
}
sigkill_run() {
	"$BIN" run spawn-join --probes runtime,alloc --forks 2 --warmup 1 --iterations 2 \
		--time 0.5 -o "$tmp/sigkill" >/dev/null 2>"$tmp/sigkill.err" </dev/null &
}
t0=$(date +%s%N)
sigkill_run
wait $!
len=$((($(date +%s%N) - t0) / 1000000)) # ms, the run's length unkilled
leaks0=$(dmesg | grep -c 'leaking uprobe')
rc=137 survivors=""
for i in $(seq 20); do
	sigkill_run
	pid=$!
	sleep "$(awk -v s="$RANDOM" -v ms="$len" 'BEGIN { srand(s); printf "%.3f", rand() * ms / 1000 }')"
	kids=$(pgrep -P "$pid")
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	st=$?
	[ "$st" = 137 ] || [ "$st" = 0 ] || rc=$st # 0: it ended before the kill
	for k in $kids; do # half a second to follow
		n=0
		while running "$k" && [ $n -lt 10 ]; do sleep 0.05; n=$((n + 1)); done
		running "$k" && { survivors="$survivors $k"; kill -KILL "$k"; }
	done
done
leaks=$(($(dmesg | grep -c 'leaking uprobe') - leaks0))
echo "20 runs of ${len} ms SIGKILLed at random moments: $leaks uprobes leaked," \
	"forks outlived their run:${survivors:- none}" >"$tmp/err"
record "SIGKILL at random moments, runtime and alloc probes attached (x20)" 137 "$rc" \
	"schedlab run spawn-join --probes runtime,alloc (SIGKILL x20)"
check "leak" "dmesg gained $leaks 'leaking uprobe' lines" test "$leaks" = 0
check "leak" "forks outlived their killed run:$survivors" test -z "$survivors"

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

# ---- the TCP server ----------------------------------------------------------------------

group="The TCP server: no privilege, no stranger"
# Mid-run, the server has no capability and no way to regain one, runs as nobody, and
# answers no stranger on its port (it stopped listening once the workload's connections
# were in); the run passes.
: >"$tmp/out"; : >"$tmp/err" # not an earlier row's lines for the poll below
"$BIN" run tcp-blocking --forks 1 --iterations 3 --time 1 --warmup 1 --probes none -o "$tmp/tcpsec" \
	>"$tmp/out" 2>"$tmp/err" </dev/null &
pid=$!
await 'iteration  1/3'
srv=$(pgrep -P "$(pgrep -P "$pid" -f __fork | head -1)" -f __tcp-server | head -1)
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Uid):' "/proc/${srv:-0}/status" >"$tmp/srv.status" 2>/dev/null
port=$(ss -Htnp state established 2>/dev/null | awk -v p="pid=${srv:-0}," 'index($0, p) { sub(/.*:/, "", $3); print $3; exit }')
# a stranger on the server's port: "refused", or how many bytes of a request came back
timeout 5 bash -c 'exec 5<>"/dev/tcp/127.0.0.1/$1" || { echo refused; exit; }
	printf "%016d" 7 >&5; head -c 16 <&5 | wc -c' _ "${port:-0}" >"$tmp/stranger" 2>/dev/null
timeout -k 5 "$LIMIT" tail --pid="$pid" -f /dev/null
wait "$pid"
record "a stranger on the TCP server's port mid-run" 0 $? "schedlab run tcp-blocking (server checked mid-run)"
check "silent loss" "no TCP server found mid-run" test -n "$srv" -a -n "$port"
check "privileged" "the server keeps a capability: $(tr '\n' ' ' <"$tmp/srv.status")" \
	awk '/^Cap/ { n++; if ($2 !~ /^0+$/) bad = 1 } END { exit bad || n != 5 }' "$tmp/srv.status"
check "privileged" "the server may regain privileges or runs as root" \
	awk -v n="$(id -u nobody)" '/^NoNewPrivs:/ { nnp = $2 } /^Uid:/ { ok = $2 == n && $3 == n && $4 == n && $5 == n }
		END { exit !(nnp == 1 && ok) }' "$tmp/srv.status"
check "served a stranger" "a stranger on the server's port got: $(cat "$tmp/stranger")" \
	grep -qx refused "$tmp/stranger"

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
		# the whole story on stderr, so that CI's log names the tests and their lines
		grep -E '^\[(FAIL|----)\]|^== |Synthesis|WARNING: [A-Za-z]*Sanitizer|SUMMARY: |runtime error:' \
			"$log" | grep -v 'Failing: 0 | Crashing: 0' | head -60 | sed "s/^/reliability: $name: /" >&2
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
	echo "failure*, *destroyed file* (a path the command was not asked to write changed),"
	echo "*silent loss* (a result missing, a partial run not marked partial, a temporary left),"
	echo "*leak* (a uprobe left in the kernel, a process that outlived its run),"
	echo "*privileged* (a process kept a privilege it does not need) or *served a stranger* (the"
	echo "TCP server answered a connection the workload did not open)."
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
for i in "${!names[@]}"; do
	[ "${verdicts[$i]}" = ok ] ||
		printf 'reliability: not ok: %s: %s (exit %s, want %s): %s\n' "${names[$i]}" \
			"${verdicts[$i]}" "${gots[$i]}" "${wants[$i]}" "${notes[$i]}" >&2
done
exit $failed
