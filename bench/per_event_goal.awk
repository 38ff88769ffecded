# The goal that a probe's cost per event is no more than perf stat's counting the same
# tracepoint, judged from the two rows of a cost table (bench/offcpu.sh, bench/sched.sh),
# never typed in. -F'|' with -v probe='| ROW START |' (the probe's row), and -v col=N, the
# field that holds the ns per event over nothing attached; -v label=TEXT names the row
# in the verdict where a table has more than one probe row.
function num(s) { gsub(/[^0-9.+-]/, "", s); return s + 0 }
index($0, probe) == 1 { p = num($col); hp = 1 }
index($0, "| perf stat") == 1 { q = num($col); hq = 1 }
END {
	if (!hp || !hq) {
		print "\nGoal (≤ perf stat per event): not measured: a row is missing."
		exit
	}
	printf "\nGoal, the probe's cost per event ≤ perf stat's in the same rounds%s: %s (%+.0f ns against %+.0f ns).\n",
		label != "" ? " (" label ")" : "", p <= q ? "**met**" : "**not met**", p, q
}
