#!/usr/bin/env bash
# The studies' grids (docs/studies.md) at the studies' settings: `schedlab suite
# five-runtimes`, `kyo-blocking`, `micro` and `memory` (study 1), `sequentially` (study 2) and
# `errors` (study 3) with the probes off, so that each figure is the runtime's speed (errors'
# stack-capture table runs its own cells under the on-CPU probe, as the suite says). On
# stdout, Markdown for BENCHMARKS.md (make bench appends it): a heading that says which
# build, host and sitting every grid came from, then a section per suite, the suite's own
# table with our figure beside the published one and the shape column the suite computes,
# without the run-folder links (the folders are temporary). Progress on stderr. SUITES (all
# six; or SUITE, one name) and SUITE_ARGS (empty: 3 forks, 3 × 1 s warm-up, 3 × 1 s
# measured) change what runs.
set -euo pipefail

BUILD=${BUILD:-build}
SUITES=${SUITES:-${SUITE:-five-runtimes kyo-blocking micro memory sequentially errors}}
SUITE_ARGS=${SUITE_ARGS:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the TCP cells talk to schedlab's own server process, which a rebuild must not replace
mkdir -p "$tmp/bin"
cp "$BUILD/schedlab" "$tmp/bin/"
# and the peers that the suite looks for beside it, in bench/ (kyo-blocking's epoll client)
if [ -x "$BUILD/bench/tcppeer" ]; then
	mkdir -p "$tmp/bin/bench"
	cp "$BUILD/bench/tcppeer" "$tmp/bin/bench/"
fi
export SCHEDLAB_EXE=$tmp/bin/schedlab

# One suite's section.
section() {
	local suite=$1 load_before load_after t0 rc=0

	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	t0=$(date +%s)
	# shellcheck disable=SC2086 # SUITE_ARGS is a list of options
	"$tmp/bin/schedlab" suite "$suite" --probes none $SUITE_ARGS -o "$tmp/$suite" >/dev/null ||
		rc=$?
	load_after=$(cut -d' ' -f1-3 /proc/loadavg)

	echo "## The studies' grid: \`$suite\`"
	echo
	echo "Reproduce with \`$BUILD/schedlab suite $suite --probes none${SUITE_ARGS:+ $SUITE_ARGS}\` (this part alone:"
	echo "\`SUITES=$suite bench/suite.sh\`); it ran for $(($(date +%s) - t0)) s, load average $load_before before and"
	echo "$load_after after.$([ "$rc" = 0 ] || echo " The suite exited with status $rc: a row below says which cell failed and why.")"
	echo
	if [ ! -s "$tmp/$suite/suite.md" ]; then
		echo "Not measured: the suite wrote no suite.md (exit status $rc)."
		return
	fi
	# Everything after the suite's own title and command line; the last column (each
	# cell's run folder) dropped from the tables that have it, those whose header ends
	# in "run folder" (the findings across tables keep their verdicts).
	awk 'NR > 4 {
		if ($0 !~ /^\| /) { folder = 0; print; next }
		if ($0 ~ /\| run folder \|$/) folder = 1
		if (folder) sub(/ [^|]*\|$/, "")
		print
	}' "$tmp/$suite/suite.md" | sed -E 's/^(#+) /#\1 /'
}

# Every grid from one build on one host in one sitting: the sections go to a file, and
# the heading that says when, where and with what comes first once they are done.
start=$(date -u '+%Y-%m-%d %H:%M')
t_all=$(date +%s)
# the build's commit as the sitting begins (the binary was copied then; a commit made
# while it runs would be named otherwise)
build_id=$(git describe --always --dirty 2>/dev/null || echo "of unknown commit")
first=1
for suite in $SUITES; do
	echo "suite.sh: $suite" >&2
	[ "$first" = 1 ] || echo
	first=0
	section "$suite"
done >"$tmp/sections.md"
echo "## The studies' grids, in one sitting"
echo
echo "Every grid below ran one after another from one build (schedlab $(cat VERSION 2>/dev/null)," \
	"commit $build_id) on one host ($(uname -r), $(nproc) CPUs): \`BUILD=$BUILD SUITES=\"$SUITES\"" \
	"bench/suite.sh\` (\`make bench\`'s \`suite\` part), from $start UTC for" \
	"$(($(date +%s) - t_all)) s. Numbers across these grids compare; numbers against other" \
	"sections of this file, from other sittings, only as ratios."
echo
cat "$tmp/sections.md"
