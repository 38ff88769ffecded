/*
 * findings.c — why a run was slow, with evidence: the runtime's counters, the on-CPU
 * probe's category shares and folded stacks, and the measured iterations themselves,
 * read back from a result.json and turned into ranked causes.
 *
 * Invariant: a finding is emitted only when its evidence crosses a threshold of the one
 * table below, and every number in its evidence names where it came from. Shares of time
 * are taken against the worker time of the measurement, workers × forks × iterations ×
 * iteration_seconds, or against the on-CPU samples for what only the probe sees; a
 * finding that is not a share of time (imbalance, the measurement's own spread) has a
 * NAN share and ranks after the others by how far it crossed its threshold.
 *
 * Run-queue latency and migrations come from the scheduler probe (`--probes sched`),
 * its entry of "probes" named "sched": without it attached there is no finding for them,
 * and the not-examined line says so.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* ---- thresholds ------------------------------------------------------------------------ */

enum {
	TH_STRANDED_SHARE,
	TH_MISSED_IDLE_RATE,
	TH_MISSED_IDLE_MIN,
	TH_IDLE_QUEUED_SHARE,
	TH_IMBALANCE_CV,
	TH_IMBALANCE_MIN_TASKS,
	TH_FUTEX_SHARE,
	TH_WAKEUPS_PER_TASK,
	TH_MIN_SAMPLES,
	TH_CATEGORY_SHARE,
	TH_STACKCAP_SHARE,
	TH_ALLOC_SHARE,
	TH_ALLOC_BYTES_PER_OP,
	TH_PROBE_LOSS_SHARE,
	TH_PROBE_KERNEL_SHARE,
	TH_PROBE_TRAP_SHARE,
	TH_FORKS_P,
	TH_FORKS_BETWEEN,
	TH_ERROR_SHARE,
	TH_DRIFT_SHARE,
	TH_DRIFT_P,
	TH_RUNQ_P99_US,
	TH_RUNQ_MIN_WAITS,
	TH_MIGRATIONS_PER_S,
	TH_COUNT
};

static const struct threshold {
	const char *name;
	double value;
} thresholds[TH_COUNT] = {
	/* A twentieth of worker time: below it the stranded time is within the ±5% that a
	 * three-fork run resolves at best, so no change of configuration could be seen to
	 * win it back. */
	[TH_STRANDED_SHARE] = { "stranded_share", 0.05 },
	/* One placement in ten made while a parked worker was passed over: a scan or a
	 * local push that misses that often leaves a worker idle on purpose, not by a race
	 * between a park and a push (which costs a few per thousand). */
	[TH_MISSED_IDLE_RATE] = { "missed_idle_rate", 0.10 },
	/* And at least this many misses, so that a rate over a handful of placements is no
	 * finding. */
	[TH_MISSED_IDLE_MIN] = { "missed_idle_min", 20 },
	/* A tenth of worker time idle while tasks waited elsewhere: twice the stranded
	 * threshold, because every steal and wake-up also idles a worker for microseconds
	 * while a queue is non-empty. */
	[TH_IDLE_QUEUED_SHARE] = { "idle_while_queued_share", 0.10 },
	/* Tasks run per worker with a standard deviation of half their mean: one worker
	 * doing three times another's share, which no chance of scheduling explains once
	 * each worker ran TH_IMBALANCE_MIN_TASKS tasks. */
	[TH_IMBALANCE_CV] = { "imbalance_cv", 0.5 },
	/* With this many tasks per worker on average, counting noise alone (Poisson,
	 * 1/sqrt(mean)) gives a coefficient of variation of 0.1, a fifth of the threshold. */
	[TH_IMBALANCE_MIN_TASKS] = { "imbalance_min_tasks", 100 },
	/* A tenth of the on-CPU samples inside futex calls: waking and parking threads costs
	 * about as much as a tenth of a short task's work (a wake-up is 10-20 µs here). */
	[TH_FUTEX_SHARE] = { "futex_share", 0.10 },
	/* Without a profile: one park or wake-up for every fourth task run, each one a
	 * futex call and a thread switch, is what makes wake-ups the cost of short tasks. */
	[TH_WAKEUPS_PER_TASK] = { "wakeups_per_task", 0.25 },
	/* Fewer on-CPU samples than this and one sample is more than a point of share: no
	 * finding is made from category shares or stacks. */
	[TH_MIN_SAMPLES] = { "min_samples", 100 },
	/* Scheduling or submission taking a quarter of the on-CPU samples, and more than the
	 * tasks' own work: the runtime costs more than what it runs. */
	[TH_CATEGORY_SHARE] = { "category_share", 0.25 },
	/* Filling stack traces in a twentieth of the samples: the studies' exceptions spent
	 * a quarter there; a twentieth is already a style worth changing. */
	[TH_STACKCAP_SHARE] = { "stack_capture_share", 0.05 },
	/* A tenth of the on-CPU samples in the allocator. */
	[TH_ALLOC_SHARE] = { "allocation_share", 0.10 },
	/* A MiB asked for per op touches 256 pages: page faults and cache misses that a
	 * reused buffer would not pay, whatever the profile says. */
	[TH_ALLOC_BYTES_PER_OP] = { "alloc_bytes_per_op", 1048576 },
	/* A hundredth of the samples lost or truncated: the shares then move by a point. */
	[TH_PROBE_LOSS_SHARE] = { "probe_loss_share", 0.01 },
	/* The sampling program's kernel time in the forks' own context (its mean run × their
	 * samples) above a twentieth of their CPU time: timer sampling at 999 Hz costs about
	 * 2% here with any tool, so beyond 5% the probe itself slows what it measures. */
	[TH_PROBE_KERNEL_SHARE] = { "probe_kernel_share", 0.05 },
	/* The on-CPU samples in the breakpoint trap of the uprobes that the runtime and
	 * alloc probes place (asm_exc_int3) above a twentieth: those probes' own cost, which
	 * the other shares are then taken beside (72% of them, and the score 5,610 -> 15.5
	 * ops/s, on spawn-join under --probes all). */
	[TH_PROBE_TRAP_SHARE] = { "probe_trap_share", 0.05 },
	/* Forks disagree when one-way ANOVA (forks as groups) gives p below this ... */
	[TH_FORKS_P] = { "forks_p", 0.01 },
	/* ... and the forks' means carry at least half the variance of all iterations: a
	 * real but small difference between processes is not what spreads the score. */
	[TH_FORKS_BETWEEN] = { "forks_between_share", 0.5 },
	/* The error above a tenth of the score: no difference under 10% between two such
	 * runs can be told from noise. */
	[TH_ERROR_SHARE] = { "error_share", 0.10 },
	/* Iterations that drift by a tenth of the score from a fork's first to its last ... */
	[TH_DRIFT_SHARE] = { "drift_share", 0.10 },
	/* ... with a slope whose t statistic has p below this (two-sided). */
	[TH_DRIFT_P] = { "drift_p", 0.01 },
	/* Workers whose p99 wait for a CPU (the top of its log2 bucket) is above a
	 * millisecond: the scheduler's base slice is 0.75 ms × (1 + log2 CPUs) (1.5 ms on
	 * two CPUs), so one wait in a hundred that long means a worker queued behind another
	 * thread's whole slice: more runnable threads than CPUs. A wake-up on an idle CPU
	 * takes 10-20 µs here; preemption by a woken thread a few µs. */
	[TH_RUNQ_P99_US] = { "runq_p99_us", 1000 },
	/* With fewer waits than this the p99 is the largest wait, one event. */
	[TH_RUNQ_MIN_WAITS] = { "runq_min_waits", 100 },
	/* A worker moved between CPUs more than this often a second: each move refills its
	 * caches on the new CPU (up to a MiB of L2 at about 65 ns a line between CPUs here,
	 * a millisecond's worth at most, tens of µs typically), so at a hundred a second a
	 * worker may lose a few percent of its time to it, more than a three-fork run
	 * resolves. */
	[TH_MIGRATIONS_PER_S] = { "migrations_per_s", 100 },
};

double an_findings_threshold(const char *name)
{
	for (size_t i = 0; i < TH_COUNT; i++)
		if (!strcmp(thresholds[i].name, name))
			return thresholds[i].value;
	return NAN;
}

#define TH(k) (thresholds[k].value)

/* ---- reading the result ------------------------------------------------------------------ */

struct ctx {
	const struct an_result *r;
	struct an_finding found[AN_FINDINGS_MAX];
	double severity[AN_FINDINGS_MAX]; /* how far over its threshold: ranks NAN shares */
	size_t n;
	double worker_ns;     /* the time base; NAN when the result lacks a part of it */
	char base[160];       /* "1.20 s worker time (2 workers × 1 fork × 3 iterations × 0.2 s)" */
	double ops;
	double samples;       /* on-CPU samples kept by the probe; 0: none */
};

/* The number at PREFIX.NAME ("runtime." for a counter, "probes.0." for the probe's
 * figures, "probes.0.categories." for a category's samples), or 0 when the result has
 * none: an older or partial result.json reads as nothing seen. */
static double num(const struct ctx *c, const char *prefix, const char *name)
{
	char path[160];
	double v;

	snprintf(path, sizeof(path), "%s%s", prefix, name);
	v = an_result_num(c->r, path);
	return isnan(v) ? 0 : v;
}

#define rt_num(c, name)	     num(c, "runtime.", name)
#define probe_num(c, name)   num(c, "probes.0.", name)
#define cat_samples(c, name) num(c, "probes.0.categories.", name)

/* A knob's value as result.json spells it; "?" when it has none. */
static const char *knob(const struct ctx *c, const char *name)
{
	char path[128];
	const char *v;

	snprintf(path, sizeof(path), "knobs.%s", name);
	v = an_result_str(c->r, path);
	return v ? v : "?";
}

/* A time in the unit that shows it with three figures: "946 ms", "1.20 s", "12.3 µs". */
static void fmt_time(double ns, char *buf, size_t len)
{
	static const struct {
		double scale;
		const char *unit;
	} units[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "µs" }, { 1, "ns" } };
	size_t u = 0;

	while (u + 1 < sizeof(units) / sizeof(units[0]) && fabs(ns) < units[u].scale)
		u++;
	ns /= units[u].scale;
	snprintf(buf, len, "%.*f %s", fabs(ns) >= 100 || !strcmp(units[u].unit, "ns") ? 0 :
				      fabs(ns) >= 10 ? 1 : 2, ns, units[u].unit);
}

static void fmt_count(double v, char *buf, size_t len)
{
	an_format_number(v, v == floor(v) ? 0 : 2, buf, len);
}

/* Append to a finding's text field, cut at its size. */
static void add(char *field, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add(char *field, size_t size, const char *fmt, ...)
{
	size_t used = strlen(field);
	va_list ap;

	if (used + 1 >= size)
		return;
	va_start(ap, fmt);
	vsnprintf(field + used, size - used, fmt, ap);
	va_end(ap);
}

#define EVIDENCE(f, ...) add((f)->evidence, sizeof((f)->evidence), __VA_ARGS__)
#define ACTION(f, ...)	 add((f)->action, sizeof((f)->action), __VA_ARGS__)

/* A new finding, its claim written; NULL when the array is full (it never is: there
 * are fewer kinds than AN_FINDINGS_MAX). */
static struct an_finding *emit(struct ctx *c, const char *id, double share, double severity,
			       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static struct an_finding *emit(struct ctx *c, const char *id, double share, double severity,
			       const char *fmt, ...)
{
	struct an_finding *f;
	va_list ap;

	if (c->n == AN_FINDINGS_MAX)
		return NULL;
	f = &c->found[c->n];
	memset(f, 0, sizeof(*f));
	snprintf(f->id, sizeof(f->id), "%s", id);
	f->share = isnan(share) ? NAN : fmin(1, fmax(0, share));
	va_start(ap, fmt);
	vsnprintf(f->claim, sizeof(f->claim), fmt, ap);
	va_end(ap);
	c->severity[c->n++] = severity;
	return f;
}

/* "X of the worker time": the time base every share of time is taken against. */
static void time_base(struct ctx *c)
{
	double workers = an_result_num(c->r, "workers");
	double started = an_result_num(c->r, "runtime.workers_started");
	double forks = an_result_num(c->r, "forks");
	double iters = an_result_num(c->r, "iterations");
	double secs = an_result_num(c->r, "iteration_seconds");
	double measured = (double)an_result_len(c->r, "samples");
	char t[64], who[64];

	c->worker_ns = NAN;
	if (!(workers > 0) || !(secs > 0))
		return;
	/* workers the runtime added (spares, adaptation) held time too: counted from the
	 * start, which overstates their time and so understates no share */
	if (started > workers)
		snprintf(who, sizeof(who), "%g workers with the %g started later", started,
			 started - workers);
	else
		snprintf(who, sizeof(who), "%g worker%s", workers, workers == 1 ? "" : "s");
	if (started > workers)
		workers = started;
	if (!(forks > 0) || !(iters > 0) || (measured > 0 && measured < forks * iters)) {
		/* a partial run: the iterations measured are the base */
		if (!(measured > 0))
			return;
		c->worker_ns = workers * measured * secs * 1e9;
		fmt_time(c->worker_ns, t, sizeof(t));
		snprintf(c->base, sizeof(c->base),
			 "%s worker time (%s × %g measured iterations × %g s)", t, who, measured,
			 secs);
		return;
	}
	c->worker_ns = workers * forks * iters * secs * 1e9;
	fmt_time(c->worker_ns, t, sizeof(t));
	snprintf(c->base, sizeof(c->base), "%s worker time (%s × %g fork%s × %g iteration%s × %g s)",
		 t, who, forks, forks == 1 ? "" : "s", iters, iters == 1 ? "" : "s", secs);
}

/* The worker with the most of column col in the per_worker table; -1 when none has any. */
static ssize_t worst_worker(const struct ctx *c, const char *col, double *value)
{
	size_t rows = an_result_len(c->r, "per_worker.rows");
	ssize_t best = -1;

	*value = 0;
	for (size_t w = 0; w < rows; w++) {
		double v = an_result_cell(c->r, "per_worker", w, col);

		if (v > *value) {
			*value = v;
			best = (ssize_t)w;
		}
	}
	return best;
}

/* ---- the runtime's counters ------------------------------------------------------------ */

static void stranded_work(struct ctx *c)
{
	double stranded = rt_num(c, "stranded_ns"), share, worst;
	double episodes = rt_num(c, "blocking_episodes"), misses = rt_num(c, "detector_misses");
	const char *blocking = knob(c, "blocking");
	char a[64], b[64], d[64];
	struct an_finding *f;
	ssize_t w;

	if (isnan(c->worker_ns) || !(stranded > 0))
		return;
	share = stranded / c->worker_ns;
	if (share < TH(TH_STRANDED_SHARE))
		return;
	f = emit(c, "stranded-work", share, share / TH(TH_STRANDED_SHARE),
		 "Blocked workers held queued tasks: %.0f%% of worker time was stranded behind "
		 "blocking sections while those tasks waited",
		 100 * fmin(1, share));
	if (!f)
		return;
	fmt_time(stranded, a, sizeof(a));
	EVIDENCE(f, "stranded_ns %s of %s (runtime counter)%s", a, c->base,
		 share > 1 ? ", more than the base: iterations ran past iteration_seconds to "
			     "finish their last op" : "");
	fmt_time(rt_num(c, "stranded_task_ns"), a, sizeof(a));
	EVIDENCE(f, "; stranded_task_ns %s: the time tasks sat queued behind a blocked worker, "
		    "summed over tasks (runtime counter)", a);
	fmt_time(rt_num(c, "idle_while_queued_ns"), a, sizeof(a));
	EVIDENCE(f, "; idle_while_queued_ns %s: workers idle while tasks waited elsewhere "
		    "(runtime counter)", a);
	fmt_count(episodes, a, sizeof(a));
	fmt_count(misses, b, sizeof(b));
	fmt_count(rt_num(c, "handoffs"), d, sizeof(d));
	EVIDENCE(f, "; detector_misses %s of %s blocking_episodes (%.0f%%) ended before the "
		    "detector saw them, handoffs %s (runtime counters)", b, a,
		 episodes > 0 ? 100 * misses / episodes : 0, d);
	w = worst_worker(c, "stranded_ns", &worst);
	if (w >= 0) {
		fmt_time(worst, a, sizeof(a));
		EVIDENCE(f, "; most on worker %zd: %s (per_worker)", w, a);
	}
	EVIDENCE(f, "; blocking=%s (knob)", blocking);
	if (!strcmp(blocking, "detect") && !strcmp(knob(c, "blocking_flush"), "true"))
		ACTION(f, "the queues are flushed already (blocking_flush=true), but each blocking "
			  "call still holds its worker and the detector (detect_us=%s, "
			  "detect_samples=%s) misses short ones: try -c blocking=handoff, or more "
			  "workers from the start (--preset kyo-tuned)",
		       knob(c, "detect_us"), knob(c, "detect_samples"));
	else if (!strcmp(blocking, "detect"))
		ACTION(f, "the detector samples CPU time (every detect_us=%s µs, detect_samples=%s "
			  "times), so shorter blocks go unseen: try -c blocking=handoff, --preset "
			  "kyo-flush (rt_flush() before each blocking call) or --preset kyo-tuned",
		       knob(c, "detect_us"), knob(c, "detect_samples"));
	else if (!strcmp(blocking, "none"))
		ACTION(f, "blocking sections run inline and keep the worker's queue: try -c "
			  "blocking=handoff (hand the queue to another thread) or -c blocking=offload");
	else
		ACTION(f, "hand the queue off before the call: -c blocking=handoff, or "
			  "-c blocking_flush=true (rt_flush() before each blocking section)");
}

/* Placements by path, made from the workers (re-placements by rt_flush() included). */
static double placements(const struct ctx *c)
{
	static const char *const paths[] = { "place_local", "place_lifo",     "place_external",
					     "place_scan",  "place_fallback", "place_flush" };
	double n = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		n += rt_num(c, paths[i]);
	return n;
}

static bool found(const struct ctx *c, const char *id)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->found[i].id, id))
			return true;
	return false;
}

/* Placements that passed over an idle worker; else, idle workers beside queued tasks.
 * While a worker is stranded, the others idle beside its queue: that idle time is the
 * stranded work's, so with stranded work found it is no share of these. */
static void missed_idle(struct ctx *c)
{
	double missed = rt_num(c, "missed_idle"), placed = placements(c);
	double iwq = rt_num(c, "idle_while_queued_ns"), scans = rt_num(c, "place_scan");
	double time_share = isnan(c->worker_ns) ? NAN : iwq / c->worker_ns;
	bool stranded = found(c, "stranded-work");
	double share = stranded ? NAN : time_share;
	char a[64], b[64];
	struct an_finding *f;

	if (placed > 0 && missed >= TH(TH_MISSED_IDLE_MIN) &&
	    missed / placed >= TH(TH_MISSED_IDLE_RATE)) {
		f = emit(c, "missed-idle", share, missed / placed / TH(TH_MISSED_IDLE_RATE),
			 "Placement passed over idle workers: %.0f%% of placements went to a busy "
			 "worker while another was parked",
			 100 * missed / placed);
		if (!f)
			return;
		fmt_count(missed, a, sizeof(a));
		fmt_count(placed, b, sizeof(b));
		EVIDENCE(f, "missed_idle %s of %s placements (place_local + place_lifo + "
			    "place_external + place_scan + place_fallback + place_flush; runtime "
			    "counters)", a, b);
		if (scans > 0) {
			fmt_count(scans, a, sizeof(a));
			EVIDENCE(f, "; regret_sum %.0f over %s scans: the chosen worker's load "
				    "exceeded the least by %.2f tasks on average (runtime counters)",
				 rt_num(c, "regret_sum"), a, rt_num(c, "regret_sum") / scans);
		}
		if (!isnan(time_share)) {
			fmt_time(iwq, a, sizeof(a));
			EVIDENCE(f, "; idle_while_queued_ns %s of %s (runtime counter)%s", a, c->base,
				 stranded ? ", idle time beside stranded work and counted there, "
					    "so no share here" : "");
		}
		EVIDENCE(f, "; spawn=%s, wake=%s, notify=%s, scan_stride=%s, idle_steal=%s (knobs)",
			 knob(c, "spawn"), knob(c, "wake"), knob(c, "notify"), knob(c, "scan_stride"),
			 knob(c, "idle_steal"));
		ACTION(f, "let idle workers find the work:");
		if (strcmp(knob(c, "idle_steal"), "true"))
			ACTION(f, " -c idle_steal=true,");
		if (!strcmp(knob(c, "notify"), "never"))
			ACTION(f, " -c notify=if-no-searchers (wake a parked worker on a local "
				  "spawn),");
		ACTION(f, " or a wider scan (-c scan_stride=N, now %s); compare with --preset ce",
		       knob(c, "scan_stride"));
		return;
	}
	if (stranded || isnan(share) || share < TH(TH_IDLE_QUEUED_SHARE))
		return;
	f = emit(c, "idle-while-queued", share, share / TH(TH_IDLE_QUEUED_SHARE),
		 "Workers idled while tasks waited in other workers' queues: %.0f%% of worker time",
		 100 * fmin(1, share));
	if (!f)
		return;
	fmt_time(iwq, a, sizeof(a));
	EVIDENCE(f, "idle_while_queued_ns %s of %s (runtime counter); stolen %.0f in %.0f steal "
		    "attempts (runtime counters); idle_steal=%s, steal=%s (knobs)",
		 a, c->base, rt_num(c, "stolen"), rt_num(c, "steal_attempts"),
		 knob(c, "idle_steal"), knob(c, "steal"));
	ACTION(f, "let idle workers take queued tasks: -c idle_steal=true, -c search_passes=2, or "
		  "-c steal=half");
}

static void imbalance(struct ctx *c)
{
	size_t rows = an_result_len(c->r, "per_worker.rows"), lo = 0, hi = 0;
	double sum = 0, sq = 0, mean, cv, v, min = INFINITY, max = -INFINITY;
	char a[64], b[64], m[64];
	struct an_finding *f;

	if (rows < 2)
		return;
	for (size_t w = 0; w < rows; w++) {
		v = an_result_cell(c->r, "per_worker", w, "tasks_run");
		if (isnan(v))
			return;
		sum += v;
		if (v < min) {
			min = v;
			lo = w;
		}
		if (v > max) {
			max = v;
			hi = w;
		}
	}
	mean = sum / (double)rows;
	if (mean < TH(TH_IMBALANCE_MIN_TASKS))
		return;
	for (size_t w = 0; w < rows; w++) {
		v = an_result_cell(c->r, "per_worker", w, "tasks_run") - mean;
		sq += v * v;
	}
	cv = sqrt(sq / (double)rows) / mean;
	if (cv < TH(TH_IMBALANCE_CV))
		return;
	f = emit(c, "worker-imbalance", NAN, cv / TH(TH_IMBALANCE_CV),
		 "Work was spread unevenly: worker %zu ran %.1f× the tasks of worker %zu", hi,
		 min > 0 ? max / min : INFINITY, lo);
	if (!f)
		return;
	fmt_count(min, a, sizeof(a));
	fmt_count(max, b, sizeof(b));
	an_format_number(mean, 0, m, sizeof(m));
	EVIDENCE(f, "tasks_run per worker: min %s (worker %zu), max %s (worker %zu), mean %s, "
		    "coefficient of variation %.2f over %zu workers (per_worker table, summed over "
		    "forks); tasks_run only: result.json has no on-CPU time per worker; stolen "
		    "%.0f (runtime counter); idle_steal=%s, spawn=%s (knobs)",
		 a, lo, b, hi, m, cv, rows, rt_num(c, "stolen"), knob(c, "idle_steal"),
		 knob(c, "spawn"));
	ACTION(f, "spread the work: -c idle_steal=true, -c steal=half, or spawn where it runs "
		  "(-c spawn=scan); compare with --preset ce");
}

/* ---- the on-CPU profile ----------------------------------------------------------------- */

/* The run folder's folded stacks, when result.json names them and the file reads; its
 * name in *name. */
static struct an_folded *run_folded(const struct ctx *c, const char **name)
{
	char err[PATH_MAX + 256];

	*name = an_result_str(c->r, "probes.0.folded");
	if (!*name || !**name || !*an_result_dir(c->r))
		return NULL;
	return an_result_folded(c->r, *name, err, sizeof(err));
}

/* Samples with a futex frame, by the category their root frame names. */
struct futex_tally {
	uint64_t futex, total;
	char cats[AN_CAT_COUNT][24];
	uint64_t by_cat[AN_CAT_COUNT];
	size_t ncats;
};

static void futex_tally(const struct an_folded *fo, struct futex_tally *t)
{
	const struct an_folded_line *lines;
	size_t n;

	memset(t, 0, sizeof(*t));
	lines = an_folded_lines(fo, &n);
	t->total = an_folded_total(fo);
	for (size_t i = 0; i < n; i++) {
		const char *s = lines[i].stack;
		size_t k, rootlen = strcspn(s, ";");

		if (!strstr(s, "futex"))
			continue;
		t->futex += lines[i].count;
		if (s[0] != '[' || rootlen < 3)
			continue;
		for (k = 0; k < t->ncats; k++)
			if (strlen(t->cats[k]) == rootlen - 2 && !strncmp(t->cats[k], s + 1, rootlen - 2))
				break;
		if (k == t->ncats) {
			if (t->ncats == AN_CAT_COUNT)
				continue;
			snprintf(t->cats[k], sizeof(t->cats[k]), "%.*s", (int)(rootlen - 2), s + 1);
			t->ncats++;
		}
		t->by_cat[k] += lines[i].count;
	}
}

static void wakeup_cost(struct ctx *c)
{
	double parks = rt_num(c, "parks"), notifies = rt_num(c, "notifies");
	double noops = rt_num(c, "noop_wakeups"), tasks = rt_num(c, "tasks_run");
	double share = NAN, severity, per_task = tasks > 0 ? (parks + notifies) / tasks : 0;
	char a[64], b[64];
	struct futex_tally t = { 0 };
	const char *name;
	struct an_folded *fo = run_folded(c, &name);
	struct an_finding *f;

	if (fo) {
		futex_tally(fo, &t);
		an_folded_free(fo);
	}
	if (fo && (double)t.total >= TH(TH_MIN_SAMPLES)) {
		share = (double)t.futex / (double)t.total;
		if (share < TH(TH_FUTEX_SHARE))
			return;
		severity = share / TH(TH_FUTEX_SHARE);
	} else {
		if (per_task < TH(TH_WAKEUPS_PER_TASK))
			return;
		severity = per_task / TH(TH_WAKEUPS_PER_TASK);
	}
	f = emit(c, "wakeup-cost", share, severity,
		 isnan(share) ? "Waking and parking threads is a cost of every few tasks: %.2f "
				"parks and wake-ups per task run" :
				"Waking and parking threads took %.0f%% of the on-CPU samples "
				"(futex calls)",
		 isnan(share) ? per_task : 100 * share);
	if (!f)
		return;
	if (!isnan(share)) {
		fmt_count((double)t.futex, a, sizeof(a));
		fmt_count((double)t.total, b, sizeof(b));
		EVIDENCE(f, "stacks with a futex frame: %s of %s samples in %s (oncpu probe)", a,
			 b, name);
		for (size_t k = 0; k < t.ncats; k++)
			EVIDENCE(f, "%s %s %llu", k ? "," : ", by category:", t.cats[k],
				 (unsigned long long)t.by_cat[k]);
		EVIDENCE(f, "; ");
	} else {
		EVIDENCE(f, "no folded stacks with %.0f samples or more, so counters only; ",
			 TH(TH_MIN_SAMPLES));
	}
	if (c->ops > 0)
		EVIDENCE(f, "per op: parks %.2f, noop_wakeups %.2f, notifies (parked workers "
			    "woken) %.2f; ", parks / c->ops, noops / c->ops, notifies / c->ops);
	EVIDENCE(f, "per task run: %.4f parks and notifies (runtime counters); notify=%s, "
		    "park_spin_us=%s (knobs)", per_task, knob(c, "notify"), knob(c, "park_spin_us"));
	if (strcmp(knob(c, "notify"), "never"))
		ACTION(f, "wake fewer workers: -c notify=never with -c spawn=local (kyo's way: the "
			  "spawner runs its children), or spin before parking (-c park_spin_us=50)");
	else
		ACTION(f, "park less often: spin before parking (-c park_spin_us=50 or "
			  "-c search_spin_us=50), or give each task more work");
}

/* Scheduling or submission above the work, from the phase word's categories. */
static void category_dominates(struct ctx *c, const char *cat, const char *id, const char *why,
			       const char *action)
{
	double s = cat_samples(c, cat), work = cat_samples(c, "work"), share;
	char a[64], t[64], w[64];
	struct an_finding *f;

	if (c->samples < TH(TH_MIN_SAMPLES))
		return;
	share = s / c->samples;
	if (share < TH(TH_CATEGORY_SHARE) || s <= work)
		return;
	f = emit(c, id, share, share / TH(TH_CATEGORY_SHARE),
		 "%s dominates: %.0f%% of the on-CPU samples, against %.0f%% for the tasks' own "
		 "work", why, 100 * share, 100 * work / c->samples);
	if (!f)
		return;
	fmt_count(s, a, sizeof(a));
	fmt_count(c->samples, t, sizeof(t));
	fmt_count(work, w, sizeof(w));
	EVIDENCE(f, "%s %s of %s on-CPU samples (%.1f%%), work %s (%.1f%%) (oncpu probe, phase "
		    "word)", cat, a, t, 100 * share, w, 100 * work / c->samples);
	if (c->ops > 0)
		EVIDENCE(f, "; per op: tasks_run %.1f, spawned %.1f, steal_attempts %.2f (runtime "
			    "counters)", rt_num(c, "tasks_run") / c->ops,
			 rt_num(c, "spawned") / c->ops, rt_num(c, "steal_attempts") / c->ops);
	ACTION(f, "%s", action);
}

static void stack_capture(struct ctx *c)
{
	double s = cat_samples(c, "stack-capture"), share;
	struct an_finding *f;

	if (c->samples < TH(TH_MIN_SAMPLES))
		return;
	share = s / c->samples;
	if (share < TH(TH_STACKCAP_SHARE))
		return;
	f = emit(c, "stack-capture", share, share / TH(TH_STACKCAP_SHARE),
		 "Filling error stack traces took %.0f%% of the on-CPU samples", 100 * share);
	if (!f)
		return;
	EVIDENCE(f, "stack-capture %.0f of %.0f on-CPU samples (%.1f%%) (oncpu probe, phase "
		    "word)", s, c->samples, 100 * share);
	ACTION(f, "create errors without a backtrace (the raise-notrace style), or return "
		  "results as values instead of raising");
}

static void allocation(struct ctx *c)
{
	double bytes = rt_num(c, "alloc_bytes"), calls = rt_num(c, "alloc_calls");
	double s = cat_samples(c, "allocation");
	double share = c->samples >= TH(TH_MIN_SAMPLES) ? s / c->samples : NAN;
	double per_op = c->ops > 0 ? bytes / c->ops : 0;
	bool by_share = !isnan(share) && share >= TH(TH_ALLOC_SHARE);
	char a[64];
	struct an_finding *f;

	if (!by_share && per_op < TH(TH_ALLOC_BYTES_PER_OP))
		return;
	fmt_count(per_op, a, sizeof(a));
	f = emit(c, "allocation", by_share ? share : NAN,
		 fmax(by_share ? share / TH(TH_ALLOC_SHARE) : 0, per_op / TH(TH_ALLOC_BYTES_PER_OP)),
		 by_share ? "Allocation took %.0f%% of the on-CPU samples (%s bytes per op)" :
			    "Each op allocates %.0f MiB (%s bytes)",
		 by_share ? 100 * share : per_op / 1048576, a);
	if (!f)
		return;
	EVIDENCE(f, "alloc_bytes/op %s, alloc_calls/op %.1f (runtime counters, over ops %.0f)", a,
		 c->ops > 0 ? calls / c->ops : 0, c->ops);
	if (!isnan(share))
		EVIDENCE(f, "; allocation %.0f of %.0f on-CPU samples (%.1f%%) (oncpu probe, phase "
			    "word)", s, c->samples, 100 * share);
	ACTION(f, "reuse buffers or allocate once per op; 'schedlab sweep' over the size "
		  "parameter shows whether bytes/op grows faster than linearly");
}

/* ---- the probe itself ------------------------------------------------------------------- */

/* The uprobe probes attached beside oncpu ("runtime,alloc", as --probes takes them), into
 * buf; false when none. */
static bool uprobe_probes(const struct ctx *c, char *buf, size_t len)
{
	size_t n = an_result_len(c->r, "probes"), used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char key[64];
		const char *name;

		snprintf(key, sizeof(key), "probes.%zu.name", i);
		name = an_result_str(c->r, key);
		snprintf(key, sizeof(key), "probes.%zu.attached", i);
		if (name && (!strcmp(name, "runtime") || !strcmp(name, "alloc")) &&
		    an_result_num(c->r, key) > 0 && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
						 name);
	}
	return used > 0;
}

/* Samples whose stacks hold the breakpoint trap a uprobe takes (asm_exc_int3), of all. */
static double trap_share(const struct an_folded *fo, uint64_t *trapped)
{
	const struct an_folded_line *lines;
	uint64_t total = an_folded_total(fo);
	size_t n;

	*trapped = 0;
	lines = an_folded_lines(fo, &n);
	for (size_t i = 0; i < n; i++)
		if (strstr(lines[i].stack, ";asm_exc_int3_[k]"))
			*trapped += lines[i].count;
	return total ? (double)*trapped / (double)total : 0;
}

static void probe_distortion(struct ctx *c)
{
	static const char *const losses[] = {
		"lost.user_stack_storage_full", "lost.kernel_stack_storage_full",
		"lost.user_stack_errors",       "lost.kernel_stack_errors",
		"lost.counts_map_full",         "lost.ring_buffer_full",
		"lost.truncated_stacks",
	};
	double expected = probe_num(c, "sampling.expected"), taken = probe_num(c, "sampling.taken");
	double short_pct = probe_num(c, "sampling.short_pct");
	double tolerance = probe_num(c, "sampling.tolerance_pct");
	double cost = probe_num(c, "sampling.cost_pct"), cpu_ns = probe_num(c, "sampling.cpu_ns");
	double runs = probe_num(c, "program.runs"), prog_ns = probe_num(c, "program.ns");
	double lost = 0, loss_share, own_ns, kernel_share, sev = 0;
	bool is_short, is_lossy, is_costly, is_trapped = false;
	char a[64], b[64], probes[64];
	double traps = 0;
	uint64_t trapped = 0;
	struct an_finding *f;

	if (!(probe_num(c, "attached") > 0))
		return;
	/* the uprobe probes' traps, where they ran beside the on-CPU probe */
	if (uprobe_probes(c, probes, sizeof(probes))) {
		const char *name;
		struct an_folded *fo = run_folded(c, &name);

		if (fo && an_folded_total(fo) >= TH(TH_MIN_SAMPLES)) {
			traps = trap_share(fo, &trapped);
			is_trapped = traps > TH(TH_PROBE_TRAP_SHARE);
		}
		an_folded_free(fo);
	}
	for (size_t i = 0; i < sizeof(losses) / sizeof(losses[0]); i++)
		lost += probe_num(c, losses[i]);
	loss_share = c->samples > 0 ? lost / c->samples : 0;
	/* the program runs on every CPU for every process; the forks pay for their own
	 * samples: its mean run times the samples they got */
	own_ns = runs > 0 && taken > 0 ? prog_ns / runs * taken : 0;
	kernel_share = cpu_ns > 0 ? own_ns / cpu_ns : 0;
	/* the report's own judgement: a shortfall beyond chance that sampling's cost
	 * explains (a shortfall from timers lapsing in idle leaves what is sampled true) */
	is_short = probe_num(c, "sampling.throttled") > 0;
	is_lossy = loss_share > TH(TH_PROBE_LOSS_SHARE);
	is_costly = kernel_share > TH(TH_PROBE_KERNEL_SHARE);
	if (!is_short && !is_lossy && !is_costly && !is_trapped)
		return;
	sev = fmax(fmax(is_short ? 1 + short_pct / 100 : 0,
			is_trapped ? traps / TH(TH_PROBE_TRAP_SHARE) : 0),
		   fmax(loss_share / TH(TH_PROBE_LOSS_SHARE),
			kernel_share / TH(TH_PROBE_KERNEL_SHARE)));
	f = emit(c, "probe-distortion", is_trapped ? traps : NAN, sev,
		 "The %s may distort this profile:%s%s%s%s", is_trapped ? "probes" : "probe",
		 is_trapped ? " the other probes' uprobe traps take a share of the samples" : "",
		 is_short ? (is_trapped ? ", the kernel throttled sampling" :
					  " the kernel throttled sampling") : "",
		 is_lossy ? (is_short || is_trapped ? ", samples were lost" : " samples were lost")
			  : "",
		 is_costly ? (is_short || is_lossy || is_trapped ? ", its own kernel time is large"
								 : " its own kernel time is large")
			   : "");
	if (!f)
		return;
	if (is_trapped) {
		fmt_count((double)trapped, a, sizeof(a));
		EVIDENCE(f, "%s samples (%.0f%%) in the breakpoint trap (asm_exc_int3) that the %s "
			    "probe%s uprobes take (oncpu probe); ", a, 100 * traps, probes,
			 strchr(probes, ',') ? "s'" : "'s");
	}
	fmt_count(expected, a, sizeof(a));
	fmt_count(taken, b, sizeof(b));
	EVIDENCE(f, "samples expected %s (the forks' CPU time × frequency), taken %s: short by "
		    "%.1f%% (chance allows %.0f%%), sampling taking %.0f%% of a CPU%s (oncpu "
		    "probe, sampling)", a, b, isnan(short_pct) ? 0 : short_pct,
		 isnan(tolerance) ? 0 : tolerance, isnan(cost) ? 0 : cost,
		 is_short ? ": throttled" : "");
	EVIDENCE(f, "; lost or truncated %.0f of %.0f samples kept (%.1f%%) (oncpu probe, lost)",
		 lost, c->samples, 100 * loss_share);
	fmt_time(runs > 0 ? prog_ns / runs : 0, a, sizeof(a));
	fmt_time(own_ns, b, sizeof(b));
	EVIDENCE(f, "; the sampling program took %s per run, %s over the forks' samples, %.1f%% "
		    "of their CPU time (oncpu probe, program)", a, b, 100 * kernel_share);
	if (is_trapped)
		ACTION(f, "run the on-CPU probe apart from the %s probe%s (--probes oncpu, then "
			  "--probes %s), or --overhead to measure what they cost%s", probes,
		       strchr(probes, ',') ? "s" : "", probes,
		       is_short || is_lossy || is_costly ? "; " : "");
	if (is_short || is_lossy || is_costly)
		ACTION(f, "sample less often (--freq 499), or raise the kernel's limits "
			  "(perf_event_max_sample_rate, perf_cpu_time_max_percent); for losses, "
			  "--call-graph fp copies no stacks");
}

/* ---- the scheduler probe ---------------------------------------------------------------- */

/* The number at probes.I.NAME, or 0 when there is none. */
static double part_num(const struct ctx *c, ssize_t i, const char *name)
{
	char prefix[32];

	snprintf(prefix, sizeof(prefix), "probes.%zd.", i);
	return num(c, prefix, name);
}

static void runq_latency(struct ctx *c)
{
	ssize_t i = an_result_probe(c->r, "sched");
	double p99, p50, waits, runq_ms, vol, invol;
	char a[64], b[64];
	struct an_finding *f;

	if (i < 0)
		return;
	p99 = part_num(c, i, "workers.runq_p99_us");
	p50 = part_num(c, i, "workers.runq_p50_us");
	waits = part_num(c, i, "workers.runq_waits");
	runq_ms = part_num(c, i, "workers.runq_ms");
	vol = part_num(c, i, "workers.voluntary");
	invol = part_num(c, i, "workers.involuntary");
	if (waits < TH(TH_RUNQ_MIN_WAITS) || !(p99 > TH(TH_RUNQ_P99_US)))
		return;
	/* not a share of the measured time: the threads that drove a worker (with blocking
	 * hand-off, many) wait for CPUs at once, so their waits overlap */
	fmt_time(p99 * 1e3, a, sizeof(a));
	f = emit(c, "run-queue-latency", NAN, p99 / TH(TH_RUNQ_P99_US),
		 "Workers waited for a CPU: one wait in a hundred was %s or more, with "
		 "other threads holding the CPUs", a);
	if (!f)
		return;
	fmt_time(p50 * 1e3, b, sizeof(b));
	EVIDENCE(f, "run-queue latency p99 ≤ %s, p50 ≤ %s (tops of their log2 buckets) over "
		    "%.0f waits (sched probe, workers)", a, b, waits);
	fmt_time(runq_ms * 1e6, a, sizeof(a));
	EVIDENCE(f, "; %s waiting in all, summed over the workers' threads", a);
	EVIDENCE(f, "; %.0f of %.0f switches out were involuntary (preempted while runnable) "
		    "(sched probe, workers)", invol, vol + invol);
	ACTION(f, "run no more workers than CPUs free for them (-c workers=N), or keep other "
		  "work off the benchmark's CPUs");
}

static void migrations(struct ctx *c)
{
	ssize_t i = an_result_probe(c->r, "sched");
	double rate, worker, total, secs;
	struct an_finding *f;

	if (i < 0)
		return;
	rate = part_num(c, i, "workers.migrations_per_s_max");
	worker = part_num(c, i, "workers.migrations_max_worker");
	total = part_num(c, i, "workers.migrations");
	secs = part_num(c, i, "window_s");
	if (!(rate > TH(TH_MIGRATIONS_PER_S)))
		return;
	f = emit(c, "migrations", NAN, rate / TH(TH_MIGRATIONS_PER_S),
		 "Workers moved between CPUs: worker %.0f %.0f times a second, each move "
		 "refilling its caches on the new CPU", worker, rate);
	if (!f)
		return;
	EVIDENCE(f, "%.0f migrations of %.0f workers over %.2f s measured, the most worker "
		    "%.0f at %.0f/s (sched probe, workers)", total,
		 part_num(c, i, "workers.workers"), secs, worker, rate);
	ACTION(f, "a worker that parks and is woken elsewhere moves: -c park_spin_us=50 keeps "
		  "it on its CPU between bursts, and no more workers than free CPUs leaves the "
		  "scheduler no reason to move them");
}

bool an_result_probe_attached(const struct an_result *r, const char *name)
{
	return r && an_result_probe(r, name) >= 0;
}

void an_findings_not_examined(bool sched, bool offcpu, char *buf, size_t len)
{
	if (sched && offcpu)
		snprintf(buf, len, "%s", "");
	else if (sched)
		snprintf(buf, len, "Not examined: off-CPU time, which needs the off-CPU probe "
			 "(--probes offcpu).");
	else if (offcpu)
		snprintf(buf, len, "Not examined: run-queue latency and migrations, which need "
			 "the scheduler probe (--probes sched).");
	else
		snprintf(buf, len, "%s", AN_FINDINGS_NOT_EXAMINED);
}

/* ---- the measurement -------------------------------------------------------------------- */

/* The measured iterations in fork-major order, as the harness appends them. */
struct spread {
	size_t n, forks, per;     /* iterations, forks with any, iterations per fork */
	double mean, sst, ssb;    /* total and between-fork sums of squares */
	double f, p;              /* one-way ANOVA, forks as groups; NAN: not computable */
};

static double sample(const struct ctx *c, size_t i)
{
	char path[64];

	snprintf(path, sizeof(path), "samples.%zu", i);
	return an_result_num(c->r, path);
}

static void spread_of(const struct ctx *c, struct spread *s)
{
	double iters = an_result_num(c->r, "iterations");

	memset(s, 0, sizeof(*s));
	s->f = s->p = NAN;
	s->n = an_result_len(c->r, "samples");
	s->per = iters >= 1 && iters <= (double)s->n ? (size_t)iters : s->n;
	if (!s->n || !s->per)
		return;
	s->forks = (s->n + s->per - 1) / s->per;
	for (size_t i = 0; i < s->n; i++)
		s->mean += sample(c, i) / (double)s->n;
	for (size_t k = 0; k < s->forks; k++) {
		size_t from = k * s->per, to = from + s->per < s->n ? from + s->per : s->n;
		double m = 0;

		for (size_t i = from; i < to; i++)
			m += sample(c, i) / (double)(to - from);
		s->ssb += (double)(to - from) * (m - s->mean) * (m - s->mean);
	}
	for (size_t i = 0; i < s->n; i++)
		s->sst += (sample(c, i) - s->mean) * (sample(c, i) - s->mean);
	if (s->forks >= 2 && s->n > s->forks && s->sst > 0) {
		double ssw = s->sst - s->ssb;
		unsigned d1 = (unsigned)(s->forks - 1), d2 = (unsigned)(s->n - s->forks);

		s->f = ssw > 0 ? (s->ssb / d1) / (ssw / d2) : INFINITY;
		s->p = an_f_upper_tail(s->f, d1, d2);
	}
}

/* "between forks 80% and within them 20% of the variance", or why it cannot be split. */
static void where_spread(const struct spread *s, char *buf, size_t len)
{
	if (s->forks < 2)
		snprintf(buf, len, "one fork: all the spread is within it");
	else if (!(s->sst > 0))
		snprintf(buf, len, "no spread");
	else
		snprintf(buf, len, "the spread is %.0f%% between forks and %.0f%% within them "
				   "(sums of squares)",
			 100 * s->ssb / s->sst, 100 * (1 - s->ssb / s->sst));
}

static void forks_disagree(struct ctx *c, const struct spread *s)
{
	struct an_finding *f;
	double between;
	char m[64];

	if (isnan(s->p) || s->p > TH(TH_FORKS_P))
		return;
	between = s->ssb / s->sst;
	if (between < TH(TH_FORKS_BETWEEN))
		return;
	f = emit(c, "forks-disagree", NAN, between / TH(TH_FORKS_BETWEEN),
		 "Forks disagree: %.0f%% of the iterations' variance lies between forks, not "
		 "within them", 100 * between);
	if (!f)
		return;
	EVIDENCE(f, "fork means");
	for (size_t k = 0; k < s->forks; k++) {
		size_t from = k * s->per, to = from + s->per < s->n ? from + s->per : s->n;
		double mean = 0;

		for (size_t i = from; i < to; i++)
			mean += sample(c, i) / (double)(to - from);
		an_format_number(mean, fabs(mean) >= 1000 ? 0 : 2, m, sizeof(m));
		EVIDENCE(f, "%s %s", k ? "," : "", m);
	}
	EVIDENCE(f, " %s; one-way ANOVA over %zu forks × %zu iterations: F(%zu, %zu) = %.1f, "
		    "p = %.2g (samples, fork-major)", an_result_str(c->r, "unit") ?
		 an_result_str(c->r, "unit") : "", s->forks, s->per, s->forks - 1,
		 s->n - s->forks, s->f, s->p);
	ACTION(f, "something differs between processes (where the host put the vCPUs, memory "
		  "layout, a warm-up that ends in different states): run more forks (--forks 5), "
		  "a longer --warmup, and compare runs interleaved in one session");
}

static void noisy_score(struct ctx *c, const struct spread *s)
{
	double score = an_result_num(c->r, "score"), error = an_result_num(c->r, "error");
	char a[64], b[64], where[160];
	struct an_finding *f;

	if (!(score > 0) || isnan(error) || error / score <= TH(TH_ERROR_SHARE))
		return;
	f = emit(c, "noisy-score", NAN, error / score / TH(TH_ERROR_SHARE),
		 "The score is uncertain: its 99.9%% error is %.0f%% of it", 100 * error / score);
	if (!f)
		return;
	an_format_number(score, an_score_decimals(score, error), a, sizeof(a));
	an_format_number(error, an_score_decimals(score, error), b, sizeof(b));
	where_spread(s, where, sizeof(where));
	EVIDENCE(f, "score %s ± %s %s over n = %zu iterations (score, error); %s", a, b,
		 an_result_str(c->r, "unit") ? an_result_str(c->r, "unit") : "", s->n, where);
	if (s->n >= 2)
		EVIDENCE(f, "; Student's t(0.9995, %zu) = %.2f multiplies the standard error", s->n - 1,
			 an_t_quantile(0.9995, (unsigned)(s->n - 1)));
	if (s->forks >= 2 && s->sst > 0 && s->ssb / s->sst >= TH(TH_FORKS_BETWEEN))
		ACTION(f, "the forks differ more than iterations do: more forks (--forks 5) shrink "
			  "the error, more iterations will not");
	else
		ACTION(f, "more than the %zu fork%s × %zu iterations measured (--forks, "
			  "--iterations; not --quick), or longer ones (--time)",
		       s->forks, s->forks == 1 ? "" : "s", s->per);
}

/* The slope of throughput over iteration index within forks (pooled, each fork about
 * its own mean), and its t statistic. */
static void drift(struct ctx *c, const struct spread *s)
{
	double sxx = 0, sxy = 0, syy = 0, slope, res, t, over, tcrit;
	size_t df;
	struct an_finding *f;
	char a[64];

	if (s->per < 3 || !(s->mean > 0))
		return;
	for (size_t k = 0; k < s->forks; k++) {
		size_t from = k * s->per, to = from + s->per < s->n ? from + s->per : s->n;
		double mx = 0, my = 0, cnt = (double)(to - from);

		for (size_t i = from; i < to; i++) {
			mx += (double)(i - from) / cnt;
			my += sample(c, i) / cnt;
		}
		for (size_t i = from; i < to; i++) {
			double dx = (double)(i - from) - mx, dy = sample(c, i) - my;

			sxx += dx * dx;
			sxy += dx * dy;
			syy += dy * dy;
		}
	}
	if (!(sxx > 0) || s->n < s->forks + 2)
		return;
	df = s->n - s->forks - 1;
	slope = sxy / sxx;
	over = slope * (double)(s->per - 1) / s->mean;
	if (fabs(over) < TH(TH_DRIFT_SHARE))
		return;
	res = fmax(0, syy - slope * sxy);
	t = res > 0 ? slope / sqrt(res / (double)df / sxx) : INFINITY;
	tcrit = an_t_quantile(1 - TH(TH_DRIFT_P) / 2, (unsigned)df);
	if (fabs(t) < tcrit)
		return;
	f = emit(c, "drift", NAN, fabs(over) / TH(TH_DRIFT_SHARE),
		 "Throughput %s across iterations: %.0f%% from a fork's first iteration to its last",
		 slope > 0 ? "rises" : "falls", 100 * fabs(over));
	if (!f)
		return;
	an_format_number(slope, fabs(slope) >= 1000 ? 0 : 2, a, sizeof(a));
	EVIDENCE(f, "slope %s %s per iteration within forks, pooled over %zu forks of %zu "
		    "iterations; t = %.1f with %zu degrees of freedom (|t| >= %.2f for p < %g) "
		    "(samples, fork-major)",
		 a, an_result_str(c->r, "unit") ? an_result_str(c->r, "unit") : "", s->forks,
		 s->per, fabs(t), df, tcrit, TH(TH_DRIFT_P));
	if (slope > 0)
		ACTION(f, "the warm-up is too short for a steady state: more --warmup iterations "
			  "or longer ones (--time)");
	else
		ACTION(f, "something accumulates over a fork (heap, queues, timers): check "
			  "bytes_per_op and the workload's memory figures across iterations");
}

/* ---- ranking ---------------------------------------------------------------------------- */

static int rank_cmp(const struct ctx *c, size_t i, size_t j)
{
	double si = c->found[i].share, sj = c->found[j].share;

	if (!isnan(si) && !isnan(sj) && si != sj)
		return si > sj ? -1 : 1;
	if (isnan(si) != isnan(sj))
		return isnan(si) ? 1 : -1;
	if (c->severity[i] != c->severity[j])
		return c->severity[i] > c->severity[j] ? -1 : 1;
	return strcmp(c->found[i].id, c->found[j].id);
}

int an_findings(const struct an_result *r, struct an_finding *out, size_t max)
{
	struct ctx *c;
	struct spread s;
	size_t order[AN_FINDINGS_MAX], n;

	if (!r || (max && !out))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->r = r;
	c->ops = rt_num(c, "ops");
	c->samples = probe_num(c, "attached") > 0 ? probe_num(c, "samples") : 0;
	time_base(c);

	stranded_work(c);
	missed_idle(c);
	imbalance(c);
	wakeup_cost(c);
	category_dominates(c, "scheduling", "scheduling-dominates", "Scheduling",
			   "the tasks are too short for what picking and switching costs: give each "
			   "task more work, or try --preset tokio (a LIFO slot runs a woken task "
			   "next)");
	category_dominates(c, "submission", "submission-dominates", "Submission",
			   strcmp(knob(c, "notify"), "never") ?
				   "spawning and waking cost more than the work: spawn fewer, larger "
				   "tasks, or -c notify=never with -c spawn=local (no wake-up on a "
				   "local spawn, as kyo)" :
				   "spawning costs more than the work, with no wake-ups to spare "
				   "(notify=never): spawn fewer, larger tasks");
	stack_capture(c);
	allocation(c);
	probe_distortion(c);
	runq_latency(c);
	migrations(c);
	spread_of(c, &s);
	forks_disagree(c, &s);
	noisy_score(c, &s);
	drift(c, &s);

	/* insertion sort of at most AN_FINDINGS_MAX indexes */
	for (size_t i = 0; i < c->n; i++) {
		size_t j = i;

		while (j > 0 && rank_cmp(c, order[j - 1], i) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	for (size_t i = 0; i < c->n && i < max; i++)
		out[i] = c->found[order[i]];
	n = c->n;
	free(c);
	return (int)n;
}
