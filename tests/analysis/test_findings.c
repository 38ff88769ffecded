/*
 * Tests of analysis/findings.c: for each finding, a synthetic result.json that crosses
 * its threshold and one that does not; the ranking (shares first, most first; NAN
 * shares after, by how far they crossed); the F tail the fork test uses; and the
 * Findings section and "findings" array a report gains from an_run_findings().
 *
 * Inputs are built at a multiple of the threshold that findings.c states, so that the
 * tests follow the table rather than copying its numbers.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"

/* 2 workers × 1 fork × 3 iterations × 0.5 s: 3 s of worker time. */
#define WORKER_NS 3e9

static struct an_finding found[AN_FINDINGS_MAX];
static int nfound;

static double th(const char *name)
{
	double v = an_findings_threshold(name);

	cr_assert(!isnan(v), "no threshold %s", name);
	return v;
}

/* Findings of a document: the fixed header, then `members` (a JSON object's members). */
static int diagnose(const char *members)
{
	char text[16384], err[256] = "";
	struct an_result *r;
	int n;

	snprintf(text, sizeof(text),
		 "{\"schema\": \"schedlab-result/1\", \"workload\": \"w\", \"preset\": \"p\", "
		 "\"workers\": 2, \"forks\": 1, \"iterations\": 3, \"iteration_seconds\": 0.5, "
		 "\"unit\": \"ops/s\"%s%s}", *members ? ", " : "", members);
	r = an_result_parse(text, strlen(text), "test.json", err, sizeof(err));
	cr_assert_not_null(r, "%s\n%s", err, text);
	n = an_findings(r, found, AN_FINDINGS_MAX);
	cr_assert_geq(n, 0);
	an_result_free(r);
	nfound = n;
	return n;
}

static const struct an_finding *get(const char *id)
{
	for (int i = 0; i < nfound && i < AN_FINDINGS_MAX; i++)
		if (!strcmp(found[i].id, id))
			return &found[i];
	return NULL;
}

static void expect_found(const char *id)
{
	cr_expect_not_null(get(id), "%s not found (%d findings%s%s)", id, nfound,
			   nfound ? ", first " : "", nfound ? found[0].id : "");
}

static void expect_absent(const char *id)
{
	const struct an_finding *f = get(id);

	cr_expect_null(f, "%s found: %s / %s", id, f ? f->claim : "", f ? f->evidence : "");
}

Test(findings, thresholds_are_named)
{
	cr_expect_eq(an_findings_threshold("stranded_share"), 0.05);
	cr_expect(isnan(an_findings_threshold("no-such-threshold")));
}

Test(findings, an_empty_result_has_none)
{
	cr_expect_eq(diagnose(""), 0);
	cr_expect_eq(diagnose("\"runtime\": {}, \"samples\": []"), 0);
}

Test(findings, stranded_work_crosses_its_threshold)
{
	char m[1024];
	const struct an_finding *f;

	snprintf(m, sizeof(m),
		 "\"runtime\": {\"stranded_ns\": %.0f, \"stranded_task_ns\": 4e9, "
		 "\"blocking_episodes\": 1280, \"detector_misses\": 1280}, "
		 "\"knobs\": {\"blocking\": \"detect\", \"detect_us\": \"2000\", "
		 "\"detect_samples\": \"2\"}, "
		 "\"per_worker\": {\"columns\": [\"stranded_ns\"], \"rows\": [[1], [2]]}",
		 WORKER_NS * th("stranded_share") * 4);
	diagnose(m);
	expect_found("stranded-work");
	f = get("stranded-work");
	if (!f)
		return;
	cr_expect_float_eq(f->share, th("stranded_share") * 4, 1e-9);
	cr_expect_not_null(strstr(f->evidence, "detector_misses 1,280 of 1,280"), "%s", f->evidence);
	cr_expect_not_null(strstr(f->evidence, "3.00 s worker time (2 workers × 1 fork × 3 "
					       "iterations × 0.5 s)"), "%s", f->evidence);
	cr_expect_not_null(strstr(f->evidence, "most on worker 1"), "%s", f->evidence);
	cr_expect_not_null(strstr(f->action, "-c blocking=handoff"), "%s", f->action);
	cr_expect_not_null(strstr(f->action, "kyo-tuned"), "%s", f->action);
}

/* A runtime that started workers beyond its configured ones (kyo's regulator, spares):
 * their time is in the base, so a share cannot pass 100% ("49.8 s of 18.0 s worker
 * time" where 2 workers were configured and 9 ran), and the base says so. */
Test(findings, workers_started_later_count_in_the_worker_time)
{
	char m[512];
	const struct an_finding *f;

	/* 6 s stranded: twice the 3 s that 2 workers hold, a fifth of the 9 workers' 13.5 s */
	snprintf(m, sizeof(m),
		 "\"runtime\": {\"stranded_ns\": 6e9, \"workers_started\": 9}, "
		 "\"knobs\": {\"blocking\": \"detect\", \"detect_us\": \"2000\", "
		 "\"detect_samples\": \"2\"}");
	diagnose(m);
	expect_found("stranded-work");
	f = get("stranded-work");
	if (!f)
		return;
	cr_expect_float_eq(f->share, 6.0 / 13.5, 1e-9);
	cr_expect_not_null(strstr(f->evidence, "13.5 s worker time (9 workers with the 7 "
					       "started later × 1 fork × 3 iterations × 0.5 s)"),
			   "%s", f->evidence);
}

/* Under kyo-flush the queues are flushed already: the advice is what is left to try. */
Test(findings, stranded_work_with_the_flush_on_does_not_suggest_the_flush)
{
	const struct an_finding *f;

	diagnose("\"runtime\": {\"stranded_ns\": 2e9}, \"knobs\": {\"blocking\": \"detect\", "
		 "\"blocking_flush\": \"true\", \"detect_us\": \"2000\", \"detect_samples\": \"2\"}");
	expect_found("stranded-work");
	f = get("stranded-work");
	if (!f)
		return;
	cr_expect_null(strstr(f->action, "kyo-flush"), "%s", f->action);
	cr_expect_not_null(strstr(f->action, "blocking_flush=true"), "%s", f->action);
	cr_expect_not_null(strstr(f->action, "-c blocking=handoff"), "%s", f->action);
	cr_expect_not_null(strstr(f->action, "kyo-tuned"), "%s", f->action);
}

Test(findings, stranded_work_below_its_threshold)
{
	char m[256];

	snprintf(m, sizeof(m), "\"runtime\": {\"stranded_ns\": %.0f}",
		 WORKER_NS * th("stranded_share") / 2);
	diagnose(m);
	expect_absent("stranded-work");
}

Test(findings, stranded_work_of_inline_blocking_says_hand_off)
{
	diagnose("\"runtime\": {\"stranded_ns\": 2e9}, \"knobs\": {\"blocking\": \"none\"}");
	expect_found("stranded-work");
	if (get("stranded-work"))
		cr_expect_not_null(strstr(get("stranded-work")->action, "run inline"));
}

/* placed placements from worker queues, missed of them past a parked worker; then more
 * members (a comma first) */
static void diagnose_placements(double placed, double missed, const char *more)
{
	char m[512];

	snprintf(m, sizeof(m), "\"runtime\": {\"place_local\": %.0f, \"missed_idle\": %.0f, "
			       "\"idle_while_queued_ns\": 2e8}%s", placed, missed, more);
	diagnose(m);
}

Test(findings, missed_idle_crosses_and_not)
{
	double placed = 10000, rate = th("missed_idle_rate");

	diagnose_placements(placed, placed * rate * 2, "");
	expect_found("missed-idle");
	if (get("missed-idle"))
		cr_expect_float_eq(get("missed-idle")->share, 2e8 / WORKER_NS, 1e-9);
	/* what to try leaves out the knobs already set that way */
	diagnose_placements(placed, placed * rate * 2,
			    ", \"knobs\": {\"idle_steal\": \"true\", \"notify\": \"never\"}");
	expect_found("missed-idle");
	if (get("missed-idle")) {
		cr_expect_null(strstr(get("missed-idle")->action, "idle_steal=true"), "%s",
			       get("missed-idle")->action);
		cr_expect_not_null(strstr(get("missed-idle")->action, "notify=if-no-searchers"));
	}
	diagnose_placements(placed, placed * rate / 2, "");
	expect_absent("missed-idle");
	/* a high rate over a handful of placements is no finding */
	diagnose_placements(th("missed_idle_min") - 1, th("missed_idle_min") - 1, "");
	expect_absent("missed-idle");
}

Test(findings, idle_time_beside_stranded_work_is_stranded_works_share)
{
	char m[512];

	/* the blocking-TCP collapse under kyo: idle time as large as the stranded time */
	snprintf(m, sizeof(m),
		 "\"runtime\": {\"stranded_ns\": %.0f, \"idle_while_queued_ns\": %.0f, "
		 "\"place_local\": 200, \"missed_idle\": 200}",
		 WORKER_NS * 0.78, WORKER_NS * 0.79);
	diagnose(m);
	cr_assert_gt(nfound, 0);
	cr_expect_str_eq(found[0].id, "stranded-work");
	expect_found("missed-idle");
	expect_absent("idle-while-queued");
	if (get("missed-idle")) {
		cr_expect(isnan(get("missed-idle")->share));
		cr_expect_not_null(strstr(get("missed-idle")->evidence, "counted there"));
	}
	snprintf(m, sizeof(m), "\"runtime\": {\"stranded_ns\": %.0f, \"idle_while_queued_ns\": "
			       "%.0f}", WORKER_NS * 0.5, WORKER_NS * 0.5);
	diagnose(m);
	expect_absent("idle-while-queued");
}

Test(findings, idle_while_queued_crosses_and_not)
{
	char m[256];

	snprintf(m, sizeof(m), "\"runtime\": {\"idle_while_queued_ns\": %.0f}",
		 WORKER_NS * th("idle_while_queued_share") * 2);
	diagnose(m);
	expect_found("idle-while-queued");
	snprintf(m, sizeof(m), "\"runtime\": {\"idle_while_queued_ns\": %.0f}",
		 WORKER_NS * th("idle_while_queued_share") / 2);
	diagnose(m);
	expect_absent("idle-while-queued");
}

Test(findings, imbalance_crosses_and_not)
{
	char m[512];
	double base = th("imbalance_min_tasks") * 10;
	/* two workers a and b: cv = |a - b| / (a + b) */
	double cv = th("imbalance_cv") * 1.5, a = base * (1 + cv), b = base * (1 - cv);

	snprintf(m, sizeof(m),
		 "\"per_worker\": {\"columns\": [\"parks\", \"tasks_run\"], "
		 "\"rows\": [[0, %.0f], [0, %.0f]]}", a, b);
	diagnose(m);
	expect_found("worker-imbalance");
	if (get("worker-imbalance")) {
		cr_expect(isnan(get("worker-imbalance")->share));
		cr_expect_not_null(strstr(get("worker-imbalance")->evidence,
					  "no on-CPU time per worker"));
	}
	cv = th("imbalance_cv") / 2;
	snprintf(m, sizeof(m),
		 "\"per_worker\": {\"columns\": [\"tasks_run\"], \"rows\": [[%.0f], [%.0f]]}",
		 base * (1 + cv), base * (1 - cv));
	diagnose(m);
	expect_absent("worker-imbalance");
	/* few tasks: counting noise, not imbalance */
	snprintf(m, sizeof(m),
		 "\"per_worker\": {\"columns\": [\"tasks_run\"], \"rows\": [[%.0f], [0]]}",
		 th("imbalance_min_tasks"));
	diagnose(m);
	expect_absent("worker-imbalance");
}

Test(findings, wakeups_from_counters_cross_and_not)
{
	char m[512];
	double tasks = 10000;

	snprintf(m, sizeof(m),
		 "\"runtime\": {\"ops\": 10, \"tasks_run\": %.0f, \"parks\": %.0f, "
		 "\"notifies\": %.0f}", tasks, tasks * th("wakeups_per_task"),
		 tasks * th("wakeups_per_task"));
	diagnose(m);
	expect_found("wakeup-cost");
	if (get("wakeup-cost")) {
		cr_expect(isnan(get("wakeup-cost")->share), "no profile: no share of time");
		cr_expect_not_null(strstr(get("wakeup-cost")->evidence, "counters only"));
	}
	snprintf(m, sizeof(m),
		 "\"runtime\": {\"ops\": 10, \"tasks_run\": %.0f, \"parks\": %.0f}", tasks,
		 tasks * th("wakeups_per_task") / 2);
	diagnose(m);
	expect_absent("wakeup-cost");
}

/* A run folder with result.json, whose probes are `probes` (after oncpu's), and an
 * oncpu.folded of `folded`; the findings of the folder as diagnose reads it. */
static void diagnose_folded(const char *probes, const char *folded)
{
	char dir[] = "/tmp/schedlab-findings-XXXXXX", path[128], err[256] = "";
	struct an_result *r;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/result.json", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f, "{\"schema\": \"schedlab-result/1\", \"id\": \"run\", \"workload\": \"w\", "
		"\"preset\": \"p\", \"unit\": \"ops/s\", \"samples\": [1, 2], "
		"\"runtime\": {\"ops\": 10, \"tasks_run\": 1e6,"
		" \"parks\": 1}, \"probes\": [{\"name\": \"oncpu\", \"attached\": true, "
		"\"samples\": 1, \"folded\": \"oncpu.folded\"}%s]}", probes);
	cr_assert_eq(fclose(f), 0);
	snprintf(path, sizeof(path), "%s/oncpu.folded", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(folded, f);
	cr_assert_eq(fclose(f), 0);
	r = an_result_load(dir, err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	nfound = an_findings(r, found, AN_FINDINGS_MAX);
	cr_assert_geq(nfound, 0);
	an_result_free(r);
	unlink(path);
	snprintf(path, sizeof(path), "%s/result.json", dir);
	unlink(path);
	rmdir(dir);
}

/* `futex` futex samples in `total`. */
static void diagnose_folder(unsigned futex, unsigned total)
{
	char folded[256];

	snprintf(folded, sizeof(folded),
		 "[parking];rt-worker;park;rt__futex_wait %u\n[work];rt-worker;task;spin %u\n",
		 futex, total - futex);
	diagnose_folded("", folded);
}

/* `trapped` of `total` samples in the uprobe trap, with the runtime probe attached
 * beside oncpu (runtime) or not. */
static void diagnose_traps(unsigned trapped, unsigned total, bool runtime)
{
	char folded[512];

	snprintf(folded, sizeof(folded),
		 "[scheduling];rt-worker;rt__park;-;asm_exc_int3_[k];exc_int3_[k] %u\n"
		 "[work];rt-worker;task;spin %u\n", trapped, total - trapped);
	diagnose_folded(runtime ? ", {\"name\": \"runtime\", \"attached\": true}" :
				  ", {\"name\": \"runtime\", \"attached\": false}", folded);
}

/* The other probes' uprobe traps in the on-CPU samples (--probes all: 72% of them on
 * spawn-join) are the probes distorting the profile, where those probes ran. */
Test(findings, uprobe_traps_in_the_samples_cross_and_not)
{
	unsigned total = 1000;
	double trap = th("probe_trap_share");

	diagnose_traps((unsigned)(total * trap * 2), total, true);
	expect_found("probe-distortion");
	if (get("probe-distortion")) {
		const struct an_finding *f = get("probe-distortion");

		cr_expect_float_eq(f->share, trap * 2, 1e-9);
		cr_expect_not_null(strstr(f->claim, "uprobe traps"), "%s", f->claim);
		cr_expect_not_null(strstr(f->evidence, "that the runtime probe's uprobes take"),
				   "%s", f->evidence);
		cr_expect_not_null(strstr(f->action, "--probes oncpu, then --probes runtime"),
				   "%s", f->action);
	}
	diagnose_traps((unsigned)(total * trap / 2), total, true);
	expect_absent("probe-distortion");
	/* traps with no uprobe probe of ours attached are not ours to explain */
	diagnose_traps((unsigned)(total * trap * 2), total, false);
	expect_absent("probe-distortion");
}

Test(findings, wakeups_from_the_profile_cross_and_not)
{
	unsigned total = 1000;

	diagnose_folder((unsigned)(total * th("futex_share") * 2), total);
	expect_found("wakeup-cost");
	if (get("wakeup-cost")) {
		cr_expect_float_eq(get("wakeup-cost")->share, th("futex_share") * 2, 1e-9);
		cr_expect_not_null(strstr(get("wakeup-cost")->evidence, "by category: parking"),
				   "%s", get("wakeup-cost")->evidence);
	}
	diagnose_folder((unsigned)(total * th("futex_share") / 2), total);
	expect_absent("wakeup-cost");
}

/* A probe with `samples` samples, `cat` holding `n` of them and work `work`. */
static void diagnose_categories(const char *cat, double n, double work, double samples)
{
	char m[1024];

	snprintf(m, sizeof(m),
		 "\"probes\": [{\"attached\": true, \"samples\": %.0f, \"categories\": "
		 "{\"work\": %.0f, \"%s\": %.0f}}]",
		 samples, work, cat, n);
	diagnose(m);
}

Test(findings, scheduling_and_submission_dominate_or_not)
{
	double total = 1000, share = th("category_share");

	diagnose_categories("scheduling", total * share * 2, total * share, total);
	expect_found("scheduling-dominates");
	expect_absent("submission-dominates");
	diagnose_categories("submission", total * share * 2, total * share, total);
	expect_found("submission-dominates");
	if (get("submission-dominates"))
		cr_expect_float_eq(get("submission-dominates")->share, share * 2, 1e-9);
	/* a large share, but the work is larger */
	diagnose_categories("scheduling", total * share * 1.5, total * share * 2, total);
	expect_absent("scheduling-dominates");
	diagnose_categories("scheduling", total * share / 2, 0, total);
	expect_absent("scheduling-dominates");
	/* too few samples to say */
	diagnose_categories("scheduling", th("min_samples") / 2, 0, th("min_samples") / 2);
	expect_absent("scheduling-dominates");
}

Test(findings, stack_capture_crosses_and_not)
{
	double total = 1000;

	diagnose_categories("stack-capture", total * th("stack_capture_share") * 2, total, total);
	expect_found("stack-capture");
	diagnose_categories("stack-capture", total * th("stack_capture_share") / 2, total, total);
	expect_absent("stack-capture");
}

Test(findings, allocation_crosses_and_not)
{
	char m[256];
	double total = 1000;

	diagnose_categories("allocation", total * th("allocation_share") * 2, total, total);
	expect_found("allocation");
	diagnose_categories("allocation", total * th("allocation_share") / 2, total, total);
	expect_absent("allocation");
	snprintf(m, sizeof(m), "\"runtime\": {\"ops\": 100, \"alloc_calls\": 100, "
			       "\"alloc_bytes\": %.0f}", 100 * th("alloc_bytes_per_op") * 2);
	diagnose(m);
	expect_found("allocation");
	if (get("allocation"))
		cr_expect(isnan(get("allocation")->share), "bytes per op are no share of time");
	snprintf(m, sizeof(m), "\"runtime\": {\"ops\": 100, \"alloc_calls\": 100, "
			       "\"alloc_bytes\": %.0f}", 100 * th("alloc_bytes_per_op") / 2);
	diagnose(m);
	expect_absent("allocation");
}

/* A probe that took `taken` of 10,000 expected samples at 1000 Hz (10 CPU-seconds),
 * lost `lost` of 1000 kept, and ran `prog_ns` in the kernel. */
/* 10,000 samples owed over the forks' 10 s of CPU time at 1,000 Hz, and the program's
 * 10,000 runs taking prog_ns in all. */
static void diagnose_probe(double taken, bool throttled, double lost, double prog_ns)
{
	char m[1024];

	snprintf(m, sizeof(m),
		 "\"probes\": [{\"attached\": true, \"samples\": 1000, \"frequency_hz\": 1000, "
		 "\"sampling\": {\"expected\": 10000, \"taken\": %.0f, \"cpu_ns\": 1e10, "
		 "\"short_pct\": %.1f, \"tolerance_pct\": 25, \"cost_pct\": %d, \"throttled\": %s}, "
		 "\"lost\": {\"ring_buffer_full\": %.0f}, \"program\": {\"runs\": 10000, "
		 "\"ns\": %.0f}}]",
		 taken, 100 - taken / 100, throttled ? 60 : 5, throttled ? "true" : "false", lost,
		 prog_ns);
	diagnose(m);
}

/* A throttled shortfall, losses, or the program's own time in the forks are each a
 * finding; a shortfall the report puts down to timers lapsing in idle is not. */
Test(findings, probe_distortion_crosses_and_not)
{
	double loss = th("probe_loss_share"), kernel = th("probe_kernel_share");

	diagnose_probe(5000, true, 0, 0);
	expect_found("probe-distortion");
	if (get("probe-distortion"))
		cr_expect_not_null(strstr(get("probe-distortion")->claim, "throttled"));
	diagnose_probe(5000, false, 0, 0);
	expect_absent("probe-distortion");
	diagnose_probe(10000, false, 1000 * loss * 2, 0);
	expect_found("probe-distortion");
	/* prog_ns / runs × taken / cpu_ns = prog_ns / 1e10 */
	diagnose_probe(10000, false, 0, 1e10 * kernel * 2);
	expect_found("probe-distortion");
	if (get("probe-distortion"))
		cr_expect_not_null(strstr(get("probe-distortion")->claim, "kernel time"));
	diagnose_probe(10000, false, 1000 * loss / 2, 1e10 * kernel / 2);
	expect_absent("probe-distortion");
}

/* A run whose sched probe saw the workers wait p99_us at the 99th percentile over
 * waits waits (600 ms in all), and its busiest worker move rate times a second. */
static void diagnose_sched(double p99_us, double waits, double rate, bool attached)
{
	char m[1024];

	snprintf(m, sizeof(m),
		 "\"probes\": [{\"name\": \"oncpu\", \"attached\": false}, {\"name\": \"sched\", "
		 "\"attached\": %s, \"window_s\": 1.5, \"workers\": {\"workers\": 2, "
		 "\"runq_waits\": %.17g, \"runq_p50_us\": 8.192, \"runq_p99_us\": %.17g, "
		 "\"runq_ms\": 600, \"voluntary\": 500, \"involuntary\": 700, \"migrations\": "
		 "%.17g, \"migrations_per_s_max\": %.17g, \"migrations_max_worker\": 1}}]",
		 attached ? "true" : "false", waits, p99_us, rate * 1.5, rate);
	diagnose(m);
}

Test(findings, run_queue_latency_crosses_and_not)
{
	double p99 = th("runq_p99_us"), min = th("runq_min_waits");
	const struct an_finding *f;

	diagnose_sched(2 * p99, 10 * min, 0, true);
	expect_found("run-queue-latency");
	f = get("run-queue-latency");
	if (f) {
		/* waits of threads overlap: no share of the measured time */
		cr_expect(isnan(f->share));
		cr_expect_not_null(strstr(f->evidence, "600 ms waiting in all"), "%s",
				   f->evidence);
		cr_expect_not_null(strstr(f->evidence, "700 of 1200 switches out were "
						       "involuntary"), "%s", f->evidence);
		cr_expect_not_null(strstr(f->evidence, "(sched probe, workers)"), "%s",
				   f->evidence);
	}
	diagnose_sched(p99 / 2, 10 * min, 0, true);
	expect_absent("run-queue-latency");
	/* too few waits for a 99th percentile */
	diagnose_sched(2 * p99, min / 2, 0, true);
	expect_absent("run-queue-latency");
	/* the probe not attached: nothing to read */
	diagnose_sched(2 * p99, 10 * min, 0, false);
	expect_absent("run-queue-latency");
}

Test(findings, migrations_cross_and_not)
{
	double rate = th("migrations_per_s");
	const struct an_finding *f;

	diagnose_sched(0, 0, 3 * rate, true);
	expect_found("migrations");
	f = get("migrations");
	if (f) {
		cr_expect(isnan(f->share));
		cr_expect_not_null(strstr(f->claim, "worker 1"), "%s", f->claim);
	}
	diagnose_sched(0, 0, rate / 2, true);
	expect_absent("migrations");
	diagnose_sched(0, 0, 3 * rate, false);
	expect_absent("migrations");
}

Test(findings, not_examined_names_what_no_attached_probe_measures)
{
	char line[256];

	an_findings_not_examined(false, false, line, sizeof(line));
	cr_expect_str_eq(line, AN_FINDINGS_NOT_EXAMINED);
	an_findings_not_examined(true, false, line, sizeof(line));
	cr_expect_null(strstr(line, "run-queue"), "%s", line);
	cr_expect_null(strstr(line, "migrations"), "%s", line);
	cr_expect_not_null(strstr(line, "off-CPU time"), "%s", line);
	an_findings_not_examined(false, true, line, sizeof(line));
	cr_expect_not_null(strstr(line, "run-queue latency and migrations"), "%s", line);
	an_findings_not_examined(true, true, line, sizeof(line));
	cr_expect_str_eq(line, "");
}

/* forks × iterations samples, fork-major, and the score's error. */
static void diagnose_samples(unsigned forks, unsigned iters, const double *x, double error)
{
	char m[4096];
	size_t off, n = (size_t)forks * iters;
	double mean = 0;

	for (size_t i = 0; i < n; i++)
		mean += x[i] / (double)n;
	off = (size_t)snprintf(m, sizeof(m),
			       "\"forks\": %u, \"iterations\": %u, \"score\": %.17g, "
			       "\"error\": %.17g, \"samples\": [",
			       forks, iters, mean, error);
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(m + off, sizeof(m) - off, "%s%.17g", i ? ", " : "", x[i]);
	snprintf(m + off, sizeof(m) - off, "]");
	diagnose(m);
}

/* the fresh clone's spawn-join: one fork near 8,800 ops/s, two near 3,700 */
static const double apart[] = { 8800, 8750, 8850, 3700, 3650, 3720, 3690, 3710, 3680 };

Test(findings, forks_that_disagree_and_forks_that_agree)
{
	static const double together[] = { 3700, 3900, 3500, 3800, 3600, 3750, 3550, 3850, 3650 };
	/* 80% of the variance between two forks of two iterations: F(1, 2) = 8, p = 0.11,
	 * which four iterations cannot tell from chance */
	static const double few[] = { 100, 110, 120, 130 };
	/* two forks of 50 iterations, ±1 about means 0.6 apart: F(1, 98) = 8.8, p = 0.004,
	 * yet only 8% of the variance lies between them */
	double many[100];

	diagnose_samples(3, 3, apart, 1);
	expect_found("forks-disagree");
	if (get("forks-disagree"))
		cr_expect_not_null(strstr(get("forks-disagree")->evidence, "F(2, 6)"), "%s",
				   get("forks-disagree")->evidence);
	diagnose_samples(3, 3, together, 1);
	expect_absent("forks-disagree");
	diagnose_samples(2, 2, few, 1);
	expect_absent("forks-disagree");
	for (size_t i = 0; i < 100; i++)
		many[i] = (i < 50 ? 100 : 100.6) + (i % 2 ? 1 : -1);
	diagnose_samples(2, 50, many, 1);
	expect_absent("forks-disagree");
}

Test(findings, noisy_score_says_where_the_spread_is)
{
	static const double x[] = { 100, 101, 99 };
	const struct an_finding *f;

	diagnose_samples(3, 3, apart, 3749);
	expect_found("noisy-score");
	f = get("noisy-score");
	if (f)
		cr_expect_not_null(strstr(f->evidence, "between forks"), "%s", f->evidence);
	diagnose_samples(1, 3, x, 100 * th("error_share") * 2);
	expect_found("noisy-score");
	f = get("noisy-score");
	if (f)
		cr_expect_not_null(strstr(f->evidence, "one fork"), "%s", f->evidence);
	diagnose_samples(1, 3, x, 100 * th("error_share") / 2);
	expect_absent("noisy-score");
}

Test(findings, drift_crosses_and_not)
{
	/* falling by about 40% over each of two forks, with a little noise */
	static const double falling[] = { 100, 91, 79, 70, 61, 101, 90, 80, 69, 60 };
	static const double steady[] = { 100, 97, 103, 99, 101, 98, 102, 100, 99, 101 };
	/* noise ±35 around a slope of -5 per iteration: -21% over a fork, but no trend a
	 * t test can tell from the noise */
	static const double noisy[] = { 130, 60, 120, 50, 110, 120, 70, 110, 60, 100 };

	diagnose_samples(2, 5, falling, 1);
	expect_found("drift");
	if (get("drift"))
		cr_expect_not_null(strstr(get("drift")->claim, "falls"));
	diagnose_samples(2, 5, steady, 1);
	expect_absent("drift");
	diagnose_samples(2, 5, noisy, 1);
	expect_absent("drift");
}

Test(findings, ranked_by_share_then_by_severity)
{
	char m[1024];

	/* stranded 50%, scheduling 30%, and two without a share */
	snprintf(m, sizeof(m),
		 "\"runtime\": {\"stranded_ns\": %.0f}, \"probes\": [{\"attached\": true, "
		 "\"samples\": 1000, \"categories\": {\"work\": 100, \"scheduling\": 300}}], "
		 "\"score\": 100, \"error\": 90, \"per_worker\": {\"columns\": [\"tasks_run\"], "
		 "\"rows\": [[100000], [1000]]}",
		 WORKER_NS * 0.5);
	cr_assert_eq(diagnose(m), 4);
	cr_expect_str_eq(found[0].id, "stranded-work");
	cr_expect_str_eq(found[1].id, "scheduling-dominates");
	/* noisy-score is 9× over its threshold, the imbalance (cv 0.98) 2× over its own */
	cr_expect_str_eq(found[2].id, "noisy-score");
	cr_expect_str_eq(found[3].id, "worker-imbalance");
	/* share first, however far over its threshold: stranded work (share 20%, 4× its
	 * threshold) ranks after scheduling (share 30%, 1.2× its threshold) */
	snprintf(m, sizeof(m),
		 "\"runtime\": {\"stranded_ns\": %.0f}, \"probes\": [{\"attached\": true, "
		 "\"samples\": 1000, \"categories\": {\"work\": 100, \"scheduling\": 300}}]",
		 WORKER_NS * 0.2);
	cr_assert_eq(diagnose(m), 2);
	cr_expect_str_eq(found[0].id, "scheduling-dominates");
	cr_expect_str_eq(found[1].id, "stranded-work");
	snprintf(m, sizeof(m),
		 "\"runtime\": {\"stranded_ns\": %.0f, \"idle_while_queued_ns\": 0}, "
		 "\"score\": 100, \"error\": 90, \"per_worker\": {\"columns\": [\"tasks_run\"], "
		 "\"rows\": [[100000], [1000]]}",
		 WORKER_NS * 0.5);
	/* at most max are written, and all are counted */
	{
		char text[2048], err[256];
		struct an_finding one[1];
		struct an_result *r;

		snprintf(text, sizeof(text),
			 "{\"schema\": \"schedlab-result/1\", \"workers\": 2, \"forks\": 1, "
			 "\"iterations\": 3, \"iteration_seconds\": 0.5, %s}", m);
		r = an_result_parse(text, strlen(text), "t", err, sizeof(err));
		cr_assert_not_null(r, "%s", err);
		cr_expect_eq(an_findings(r, one, 1), 3);
		cr_expect_str_eq(one[0].id, "stranded-work");
		cr_expect_eq(an_findings(r, NULL, 0), 3);
		an_result_free(r);
	}
}

Test(findings, f_tail_matches_the_tables)
{
	/* F tables: the 0.05 and 0.01 points */
	cr_expect_float_eq(an_f_upper_tail(5.143, 2, 6), 0.05, 1e-4);
	cr_expect_float_eq(an_f_upper_tail(4.965, 1, 10), 0.05, 1e-4);
	cr_expect_float_eq(an_f_upper_tail(10.92, 2, 6), 0.01, 1e-4);
	cr_expect_eq(an_f_upper_tail(0, 2, 6), 1.0);
	cr_expect_eq(an_f_upper_tail(INFINITY, 2, 6), 0.0);
	cr_expect(isnan(an_f_upper_tail(1, 0, 6)));
}

/* ---- in the report ---------------------------------------------------------------------- */

/* report.md and result.json of r, as the run folder would get them. */
struct rendered {
	char *md, *json;
	size_t md_len, json_len;
};

static struct rendered render_both(const struct an_run *r)
{
	struct rendered out = { 0 };
	FILE *md = open_memstream(&out.md, &out.md_len);
	FILE *json = open_memstream(&out.json, &out.json_len);

	cr_assert(md && json);
	cr_assert_eq(an_report_markdown(r, md) | an_report_json(r, json), 0);
	cr_assert_eq(fclose(md) | fclose(json), 0);
	return out;
}

static const double run_samples[] = { 5.2, 5.4, 5.0 };
static const struct an_kv run_metrics[] = { { "ops", 5 }, { "stranded_ns", 9e8 } };

static struct an_run blocked_run(void)
{
	return (struct an_run){
		.id = "id", .workload = "tcp-blocking", .op = "op", .preset = "kyo",
		.unit = "ops/s", .params = "conns=8", .command = "schedlab run tcp-blocking",
		.started = "now", .host = "host", .forks = 1, .warmup = 1, .iterations = 3,
		.time_s = 0.2, .workers = 2, .samples = run_samples, .nsamples = 3,
		.score = { .n = 3, .mean = 5.2, .ci_half = 0.3 },
		.metrics = run_metrics, .nmetrics = 2,
	};
}

Test(findings, a_report_leads_with_its_findings)
{
	struct an_run run = blocked_run();
	struct an_finding f[AN_FINDINGS_MAX];
	char err[256] = "", *table, *section, *after;
	struct an_result *r;
	struct rendered out;
	int n = an_run_findings(&run, "/nonexistent/result.json", f, AN_FINDINGS_MAX, err,
				sizeof(err));

	cr_assert_geq(n, 1, "%s", err);
	cr_expect_str_eq(f[0].id, "stranded-work");
	cr_expect_float_eq(f[0].share, 9e8 / (2 * 3 * 0.2e9), 1e-9);
	run.findings = f;
	run.nfindings = (size_t)n;
	out = render_both(&run);
	table = strstr(out.md, "| tcp-blocking | kyo |");
	section = strstr(out.md, "## Findings");
	cr_assert_not_null(table);
	cr_assert_not_null(section, "%s", out.md);
	cr_expect_gt(section, table, "after the score table");
	after = strstr(out.md, "## Runtime");
	cr_expect(!after || section < after, "before the other sections");
	cr_expect_not_null(strstr(section, "1. **Blocked workers held queued tasks"), "%s", section);
	cr_expect_not_null(strstr(section, "Evidence: stranded_ns 900 ms"), "%s", section);

	r = an_result_parse(out.json, out.json_len, "rendered", err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	cr_expect_eq(an_result_len(r, "findings"), (size_t)n);
	cr_expect_str_eq(an_result_str(r, "findings.0.id"), "stranded-work");
	cr_expect_float_eq(an_result_num(r, "findings.0.share"), f[0].share, 1e-12);
	cr_expect_str_eq(an_result_str(r, "findings.0.evidence"), f[0].evidence);
	an_result_free(r);
	free(out.md);
	free(out.json);
}

Test(findings, a_report_says_when_none_crossed)
{
	static const struct an_kv quiet[] = { { "ops", 5 } };
	static const double steady[] = { 5.2, 5.2, 5.2 };
	struct an_run run = blocked_run();
	struct an_finding f[AN_FINDINGS_MAX];
	char err[256] = "";
	struct rendered out;
	int n;

	run.metrics = quiet;
	run.nmetrics = 1;
	run.samples = steady;
	run.score.ci_half = 0;
	n = an_run_findings(&run, "r.json", f, AN_FINDINGS_MAX, err, sizeof(err));
	cr_assert_eq(n, 0, "%d findings, first %s", n, n > 0 ? f[0].id : err);
	run.findings = f;
	out = render_both(&run);
	cr_expect_not_null(strstr(out.md, "## Findings\n\nNo finding crossed its threshold.\n"),
			   "%s", out.md);
	cr_expect_not_null(strstr(out.md, "threshold.\n\n" AN_FINDINGS_NOT_EXAMINED "\n"), "%s",
			   out.md);
	cr_expect_not_null(strstr(out.json, "\"findings\": []"), "%s", out.json);
	free(out.md);
	free(out.json);
	/* not computed: no section, and null */
	run.findings = NULL;
	out = render_both(&run);
	cr_expect_null(strstr(out.md, "## Findings"));
	cr_expect_not_null(strstr(out.json, "\"findings\": null"));
	free(out.md);
	free(out.json);
}

static void sched_part_json(FILE *out, const void *data)
{
	(void)data;
	fputs(", \"window_s\": 1, \"workers\": {\"workers\": 2, \"runq_waits\": 5000, "
	      "\"runq_p50_us\": 4.096, \"runq_p99_us\": 4194.304, \"runq_ms\": 300, "
	      "\"voluntary\": 10, \"involuntary\": 4990, \"migrations\": 0, "
	      "\"migrations_per_s_max\": 0, \"migrations_max_worker\": 0}", out);
}

Test(findings, a_report_with_the_sched_probe_examines_run_queue_latency)
{
	struct an_probe_part part = { .name = "sched", .attached = true, .status = "attached",
				      .json = sched_part_json };
	struct an_run run = blocked_run();
	struct an_finding f[AN_FINDINGS_MAX];
	char err[256] = "";
	struct rendered out;
	int n;

	run.parts = &part;
	run.nparts = 1;
	n = an_run_findings(&run, "r.json", f, AN_FINDINGS_MAX, err, sizeof(err));
	cr_assert_geq(n, 1, "%s", err);
	run.findings = f;
	run.nfindings = (size_t)n;
	out = render_both(&run);
	cr_expect_not_null(strstr(out.md, "`run-queue-latency`"), "%s", out.md);
	cr_expect_null(strstr(out.md, AN_FINDINGS_NOT_EXAMINED), "%s", out.md);
	cr_expect_not_null(strstr(out.md, "\nNot examined: off-CPU time, which needs the off-CPU "
					  "probe (--probes offcpu).\n"), "%s", out.md);
	free(out.md);
	free(out.json);
}
