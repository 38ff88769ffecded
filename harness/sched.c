/*
 * The sched probe in the probe set: per thread scheduler figures of each fork, read
 * while the fork lives, grouped by what the thread is to the runtime and summed over
 * the forks.
 *
 * A thread's group: a worker thread ("rt-worker") under the worker its phase word named
 * at its last switch-out that named one ("worker 3"; "spare workers" for one that never
 * drove any), the blocking pool ("rt-blocking"), the monitor ("rt-monitor"), the I/O
 * reactor ("rt-io"), the fork's main thread, and any other thread. Run-queue latency
 * percentiles come from the summed log2 histograms: each is the top of the
 * power-of-two bucket of nanoseconds that holds it (at most the largest wait), so
 * the true value is at most that and more than half of it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "probes/probes.h"

enum group_kind { G_WORKER, G_SPARE, G_BLOCKING, G_MONITOR, G_IO, G_MAIN, G_OTHER };

static const char *const kind_names[] = {
	[G_WORKER] = "worker",   [G_SPARE] = "spare",	[G_BLOCKING] = "blocking",
	[G_MONITOR] = "monitor", [G_IO] = "io",		[G_MAIN] = "main",
	[G_OTHER] = "other",
};

struct group {
	enum group_kind kind;
	unsigned worker;          /* G_WORKER: its index */
	uint64_t threads;         /* thread entries, summed over forks */
	uint64_t voluntary, involuntary, migrations, wakeups, worker_changes;
	uint64_t oncpu_ns, traced_ns, runq_count, runq_ns, runq_max_ns;
	uint64_t hist[PROBE_SCHED_SLOTS];
};

struct hx_sched {
	struct probe_sched *p;
	unsigned entries, hint;
	pid_t pid;                /* the fork being drained */
	struct group *g;
	size_t ng, cap;
	struct probe_sched_stats st;
	unsigned forks;
	bool cost_ok;
	uint64_t runs0, ns0, runs, ns; /* the programs' run-time statistics at reset, and since */
	char summary[256];
};

static bool same_group(const struct group *g, enum group_kind k, unsigned worker)
{
	return g->kind == k && (k != G_WORKER || g->worker == worker);
}

/* Add from's counts and hist (its own, or a thread's) into to. */
static void group_add(struct group *to, const struct group *from, const uint64_t *hist)
{
	to->threads += from->threads;
	to->voluntary += from->voluntary;
	to->involuntary += from->involuntary;
	to->migrations += from->migrations;
	to->wakeups += from->wakeups;
	to->worker_changes += from->worker_changes;
	to->oncpu_ns += from->oncpu_ns;
	to->traced_ns += from->traced_ns;
	to->runq_count += from->runq_count;
	to->runq_ns += from->runq_ns;
	if (from->runq_max_ns > to->runq_max_ns)
		to->runq_max_ns = from->runq_max_ns;
	for (int i = 0; i < PROBE_SCHED_SLOTS; i++)
		to->hist[i] += hist[i];
}

static int add_thread(const struct probe_sched_thread *t, void *ctx)
{
	struct hx_sched *s = ctx;
	enum group_kind k = G_OTHER;
	struct group *g = NULL;

	if (!strcmp(t->comm, "rt-worker"))
		k = t->worker == PROBE_SCHED_NO_WORKER ? G_SPARE : G_WORKER;
	else if (!strcmp(t->comm, "rt-blocking"))
		k = G_BLOCKING;
	else if (!strcmp(t->comm, "rt-monitor"))
		k = G_MONITOR;
	else if (!strcmp(t->comm, "rt-io"))
		k = G_IO;
	else if ((pid_t)t->tid == s->pid)
		k = G_MAIN;
	for (size_t i = 0; i < s->ng && !g; i++)
		if (same_group(&s->g[i], k, t->worker))
			g = &s->g[i];
	if (!g) {
		if (s->ng == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct group *n = realloc(s->g, cap * sizeof(*n));

			if (!n)
				return -ENOMEM;
			s->g = n;
			s->cap = cap;
		}
		g = &s->g[s->ng++];
		memset(g, 0, sizeof(*g));
		g->kind = k;
		g->worker = k == G_WORKER ? t->worker : PROBE_SCHED_NO_WORKER;
	}
	group_add(g, &(struct group){
		.threads = 1, .voluntary = t->voluntary, .involuntary = t->involuntary,
		.migrations = t->migrations, .wakeups = t->wakeups,
		.worker_changes = t->worker_changes, .oncpu_ns = t->oncpu_ns,
		.traced_ns = t->traced_ns,
		.runq_count = t->runq_count, .runq_ns = t->runq_ns, .runq_max_ns = t->runq_max_ns,
	}, t->hist);
	return 0;
}

/* Workers by index, then the other kinds in enum order. */
static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->kind != y->kind)
		return (x->kind > y->kind) - (x->kind < y->kind);
	return (x->worker > y->worker) - (x->worker < y->worker);
}

/* The q-quantile (0..1) of hist in ns, as the top of its bucket, at most max; NAN for
 * an empty one. */
double hx_sched_quantile_ns(const uint64_t *hist, uint64_t max_ns, double q)
{
	uint64_t n = 0, rank, seen = 0;

	for (int i = 0; i < PROBE_SCHED_SLOTS; i++)
		n += hist[i];
	if (!n)
		return NAN;
	/* the smallest rank with at least q of the waits at or below it; q × n rounded up,
	 * but not past a product that is a whole number but for rounding (0.98 × 100) */
	rank = (uint64_t)ceil(q * (double)n - 1e-9);
	if (rank < 1)
		rank = 1;
	for (int i = 0; i < PROBE_SCHED_SLOTS; i++) {
		seen += hist[i];
		if (seen >= rank) {
			double top = i == PROBE_SCHED_SLOTS - 1 ? INFINITY : ldexp(1.0, i + 1);

			return fmin(top, (double)max_ns);
		}
	}
	return (double)max_ns;
}

static void group_name(const struct group *g, char *buf, size_t len)
{
	static const char *const shown[] = {
		[G_SPARE] = "spare workers", [G_BLOCKING] = "blocking pool",
		[G_MONITOR] = "monitor",     [G_IO] = "reactor (rt-io)",
		[G_MAIN] = "main",           [G_OTHER] = "other threads",
	};

	if (g->kind == G_WORKER)
		snprintf(buf, len, "worker %u", g->worker);
	else
		snprintf(buf, len, "%s", shown[g->kind]);
}

static double window_s(const struct hx_sched *s)
{
	return (double)s->st.window_ns / 1e9;
}

static void json_group(FILE *out, const struct hx_sched *s, const struct group *g)
{
	char name[32];

	group_name(g, name, sizeof(name));
	fputs("{\"name\": ", out);
	an_json_str(out, name);
	fputs(", \"kind\": ", out);
	an_json_str(out, kind_names[g->kind]);
	if (g->kind == G_WORKER)
		fprintf(out, ", \"worker\": %u", g->worker);
	fprintf(out, ", \"threads\": %llu, \"runq_waits\": %llu, \"runq_p50_us\": ",
		(unsigned long long)g->threads, (unsigned long long)g->runq_count);
	an_json_num(out, hx_sched_quantile_ns(g->hist, g->runq_max_ns, 0.50) / 1e3);
	fputs(", \"runq_p99_us\": ", out);
	an_json_num(out, hx_sched_quantile_ns(g->hist, g->runq_max_ns, 0.99) / 1e3);
	fputs(", \"runq_mean_us\": ", out);
	an_json_num(out, g->runq_count ? (double)g->runq_ns / (double)g->runq_count / 1e3 : NAN);
	fputs(", \"runq_max_us\": ", out);
	an_json_num(out, (double)g->runq_max_ns / 1e3);
	fputs(", \"runq_ms\": ", out);
	an_json_num(out, (double)g->runq_ns / 1e6);
	fprintf(out, ", \"voluntary\": %llu, \"involuntary\": %llu, \"migrations\": %llu, "
		"\"migrations_per_s\": ", (unsigned long long)g->voluntary,
		(unsigned long long)g->involuntary, (unsigned long long)g->migrations);
	an_json_num(out, window_s(s) > 0 ? (double)g->migrations / window_s(s) : NAN);
	fputs(", \"oncpu_ms\": ", out);
	an_json_num(out, (double)g->oncpu_ns / 1e6);
	fputs(", \"oncpu_traced_ms\": ", out);
	an_json_num(out, (double)g->traced_ns / 1e6);
	fprintf(out, ", \"wakeups\": %llu, \"worker_changes\": %llu, \"runq_hist_ns\": [",
		(unsigned long long)g->wakeups, (unsigned long long)g->worker_changes);
	for (int k = 0, first = 1; k < PROBE_SCHED_SLOTS; k++) {
		if (!g->hist[k])
			continue;
		fprintf(out, "%s{\"from\": %.0f, \"count\": %llu}", first ? "" : ", ",
			ldexp(1.0, k), (unsigned long long)g->hist[k]);
		first = 0;
	}
	fputs("]}", out);
}

static const char *const event_names[PROBE_SCHED_NEVENTS] = {
	[PROBE_SCHED_SWITCH_OUT] = "switch_out", [PROBE_SCHED_SWITCH_IN] = "switch_in",
	[PROBE_SCHED_WAKEUP] = "wakeup",	 [PROBE_SCHED_MIGRATE] = "migrate",
};

static uint64_t lost_total(const struct hx_sched *s)
{
	uint64_t n = 0;

	for (int k = 0; k < PROBE_SCHED_NEVENTS; k++)
		n += s->st.lost[k];
	return n;
}

/* The workers' groups together: what the findings read. */
static void workers_total(const struct hx_sched *s, struct group *w, size_t *n,
			  double *max_rate, unsigned *max_worker)
{
	memset(w, 0, sizeof(*w));
	*n = 0;
	*max_rate = 0;
	*max_worker = PROBE_SCHED_NO_WORKER;
	for (size_t i = 0; i < s->ng; i++) {
		const struct group *g = &s->g[i];
		double rate = window_s(s) > 0 ? (double)g->migrations / window_s(s) : 0;

		if (g->kind != G_WORKER)
			continue;
		(*n)++;
		group_add(w, g, g->hist);
		if (rate > *max_rate || *max_worker == PROBE_SCHED_NO_WORKER) {
			*max_rate = rate;
			*max_worker = g->worker;
		}
	}
}

static void sched_json(FILE *out, const void *data)
{
	const struct hx_sched *s = data;
	double max_rate;
	unsigned max_worker;
	struct group w;
	size_t nw;

	fprintf(out, ", \"thread_entries\": %u, \"threads_hint\": %u, \"forks\": %u, "
		"\"window_s\": ", s->entries, s->hint, s->forks);
	an_json_num(out, window_s(s));
	fputs(", \"percentiles\": \"the top of the power-of-two bucket of nanoseconds holding "
	      "it, at most the largest wait\"", out);
	fputs(", \"groups\": [", out);
	for (size_t i = 0; i < s->ng; i++) {
		fputs(i ? ", " : "", out);
		json_group(out, s, &s->g[i]);
	}
	workers_total(s, &w, &nw, &max_rate, &max_worker);
	fprintf(out, "], \"workers\": {\"workers\": %zu, \"runq_waits\": %llu, \"runq_p50_us\": ",
		nw, (unsigned long long)w.runq_count);
	an_json_num(out, hx_sched_quantile_ns(w.hist, w.runq_max_ns, 0.50) / 1e3);
	fputs(", \"runq_p99_us\": ", out);
	an_json_num(out, hx_sched_quantile_ns(w.hist, w.runq_max_ns, 0.99) / 1e3);
	fputs(", \"runq_ms\": ", out);
	an_json_num(out, (double)w.runq_ns / 1e6);
	fprintf(out, ", \"voluntary\": %llu, \"involuntary\": %llu, \"migrations\": %llu, "
		"\"migrations_per_s_max\": ", (unsigned long long)w.voluntary,
		(unsigned long long)w.involuntary, (unsigned long long)w.migrations);
	an_json_num(out, nw ? max_rate : NAN);
	fputs(", \"migrations_max_worker\": ", out);
	if (nw)
		fprintf(out, "%u", max_worker);
	else
		fputs("null", out);
	fputs(", \"oncpu_ms\": ", out);
	an_json_num(out, (double)w.oncpu_ns / 1e6);
	fputs(", \"oncpu_traced_ms\": ", out);
	an_json_num(out, (double)w.traced_ns / 1e6);
	fputs("}, \"seen\": {", out);
	for (int k = 0; k < PROBE_SCHED_NEVENTS; k++)
		fprintf(out, "%s\"%s\": %llu", k ? ", " : "", event_names[k],
			(unsigned long long)s->st.seen[k]);
	fputs("}, \"lost\": {", out);
	for (int k = 0; k < PROBE_SCHED_NEVENTS; k++)
		fprintf(out, "%s\"thread_map_full_%s\": %llu", k ? ", " : "", event_names[k],
			(unsigned long long)s->st.lost[k]);
	fprintf(out, ", \"unseen_switch_ins\": %llu, \"unseen_span_ms\": ",
		(unsigned long long)s->st.unseen_ins);
	an_json_num(out, (double)s->st.unseen_ns / 1e6);
	fputs("}, \"oncpu_ms\": ", out);
	an_json_num(out, (double)s->st.oncpu_ns / 1e6);
	fputs(", \"oncpu_traced_ms\": ", out);
	an_json_num(out, (double)s->st.traced_ns / 1e6);
	fputs(", \"program\": ", out);
	if (s->cost_ok) {
		fprintf(out, "{\"runs\": %llu, \"ns\": %llu, \"ns_per_run\": ",
			(unsigned long long)s->runs, (unsigned long long)s->ns);
		an_json_num(out, s->runs ? (double)s->ns / (double)s->runs : NAN);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
}

static void md_us(double us, char *buf, size_t len)
{
	if (isnan(us))
		snprintf(buf, len, "–");
	else if (us >= 1000)
		snprintf(buf, len, "%.1f ms", us / 1000);
	else
		snprintf(buf, len, "%.1f µs", us);
}

static void sched_md(FILE *out, const void *data)
{
	const struct hx_sched *s = data;
	uint64_t lost = lost_total(s), seen = 0, switches = 0;

	fprintf(out, "### Scheduler\n\nThe benchmark's threads over %u fork%s (%.2f s measured), "
		"from sched_switch, sched_wakeup and sched_migrate_task. Run-queue latency is the "
		"wait from a wake-up, or from a preemption that left the thread runnable, until it "
		"runs; p50 and p99 are the top of the power-of-two bucket of nanoseconds holding "
		"them (at most the largest wait): the true value is at most that, and more than "
		"half of it. Voluntary switches are the thread's own waits, involuntary ones "
		"preemptions, as the kernel counts them.\n\n", s->forks, s->forks == 1 ? "" : "s",
		window_s(s));
	fputs("| threads | n | waits | p50 | p99 | mean | max | voluntary | involuntary | "
	      "migrations | migrations/s | on-CPU ms |\n"
	      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
	      out);
	for (size_t i = 0; i < s->ng; i++) {
		const struct group *g = &s->g[i];
		char name[32], p50[24], p99[24], mean[24], max[24];

		group_name(g, name, sizeof(name));
		md_us(hx_sched_quantile_ns(g->hist, g->runq_max_ns, 0.50) / 1e3, p50, sizeof(p50));
		md_us(hx_sched_quantile_ns(g->hist, g->runq_max_ns, 0.99) / 1e3, p99, sizeof(p99));
		md_us(g->runq_count ? (double)g->runq_ns / (double)g->runq_count / 1e3 : NAN, mean,
		      sizeof(mean));
		md_us(g->runq_count ? (double)g->runq_max_ns / 1e3 : NAN, max, sizeof(max));
		fprintf(out, "| %s | %llu | %llu | ≤ %s | ≤ %s | %s | %s | %llu | %llu | %llu | "
			"%.1f | %.1f |\n", name, (unsigned long long)g->threads,
			(unsigned long long)g->runq_count, p50, p99, mean, max,
			(unsigned long long)g->voluntary, (unsigned long long)g->involuntary,
			(unsigned long long)g->migrations,
			window_s(s) > 0 ? (double)g->migrations / window_s(s) : 0,
			(double)g->oncpu_ns / 1e6);
	}
	for (int k = 0; k < PROBE_SCHED_NEVENTS; k++)
		seen += s->st.seen[k];
	fprintf(out, "\nThread map: %u entries per fork (%d × %u threads + %d, at least %d). ",
		s->entries, HX_THREADS_PER_WORKER, s->hint, HX_THREADS_EXTRA, HX_THREADS_MIN);
	if (!lost) {
		fprintf(out, "%s: all %llu events of the benchmark's threads kept.",
			s->st.unseen_ins ? "No thread missing" : "Nothing lost",
			(unsigned long long)seen);
	} else {
		fprintf(out, "Lost %llu of %llu events, of threads the map had no room for "
			"(switch-out %llu, switch-in %llu, wake-up %llu, migration %llu): the table "
			"is missing those threads.", (unsigned long long)lost,
			(unsigned long long)seen,
			(unsigned long long)s->st.lost[PROBE_SCHED_SWITCH_OUT],
			(unsigned long long)s->st.lost[PROBE_SCHED_SWITCH_IN],
			(unsigned long long)s->st.lost[PROBE_SCHED_WAKEUP],
			(unsigned long long)s->st.lost[PROBE_SCHED_MIGRATE]);
	}
	/* the traced intervals check the kernel's count, which is what the table shows */
	fprintf(out, " On-CPU time is the kernel's own count (se.sum_exec_runtime, read at "
		"each switch-out); the traced switch-in to switch-out intervals sum to %.1f ms "
		"against its %.1f ms", (double)s->st.traced_ns / 1e6, (double)s->st.oncpu_ns / 1e6);
	if (s->st.oncpu_ns)
		fprintf(out, " (%+.2f%%)", 100.0 * ((double)s->st.traced_ns -
						    (double)s->st.oncpu_ns) /
						   (double)s->st.oncpu_ns);
	for (size_t i = 0; i < s->ng; i++)
		switches += s->g[i].voluntary + s->g[i].involuntary;
	/* the scheduler charges a thread on its run queue's clock, from points of a switch
	 * other than the tracepoint: some of the difference comes with every switch */
	if (switches)
		fprintf(out, ", %+.2f µs a switch (the scheduler's count starts and stops at "
			"other points of a switch than the tracepoint, on the run queue's clock)", ((double)s->st.traced_ns -
						   (double)s->st.oncpu_ns) / 1e3 /
						  (double)switches);
	fputc('.', out);
	if (s->st.unseen_ins)
		fprintf(out, " Switch-ins that never reached the sched_switch tracepoint: %llu (a "
			"thread switched out twice with no switch-in between; perf record -e "
			"sched:sched_switch shows the same gaps), within %.1f ms in all: the "
			"intervals lack them, and the histogram the run-queue waits they ended.",
			(unsigned long long)s->st.unseen_ins, (double)s->st.unseen_ns / 1e6);
	if (s->cost_ok && s->runs)
		fprintf(out, " Its programs ran %llu times (on every switch, wake-up and migration "
			"of the machine while it was attached), %.0f ns a run.\n",
			(unsigned long long)s->runs, (double)s->ns / (double)s->runs);
	else
		fputs(" Its programs' cost was not measured (the kernel's BPF statistics are "
		      "off).\n", out);
}

static int sched_open(void **state, const struct hx_probe_config *cfg, char *why, size_t len)
{
	struct probe_sched_opts o = { 0 };
	struct hx_sched *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(why, len, "sched: out of memory");
		return -ENOMEM;
	}
	s->hint = cfg->threads ? cfg->threads : 1;
	o.thread_entries = hx_thread_entries(cfg);
	s->p = probe_sched_open(&o, why, len);
	if (!s->p) {
		int err = -errno;

		free(s);
		/* -EINVAL would read as bad input and stop the run: a program the verifier
		 * refused (with EINVAL, for an unknown helper, say) is the machine's answer */
		return err && err != -EINVAL ? err : -ENOTSUP;
	}
	s->entries = probe_sched_thread_entries(s->p);
	s->cost_ok = !probe_sched_prog_stats(s->p, &s->runs0, &s->ns0);
	*state = s;
	return 0;
}

static int sched_begin(void *state, pid_t pid, int64_t phase_tls_off)
{
	struct hx_sched *s = state;

	s->pid = pid;
	return probe_sched_start(s->p, pid, phase_tls_off);
}

static int sched_end(void *state, pid_t pid)
{
	struct hx_sched *s = state;
	int err = probe_sched_stop(s->p);

	(void)pid;
	s->forks++;
	if (!err)
		err = probe_sched_drain(s->p, add_thread, s, &s->st);
	return err;
}

static int sched_reset(void *state)
{
	struct hx_sched *s = state;

	s->ng = 0;
	s->forks = 0;
	memset(&s->st, 0, sizeof(s->st));
	s->cost_ok = !probe_sched_prog_stats(s->p, &s->runs0, &s->ns0);
	return 0;
}

static int sched_finish(void *state, const char *dir, struct an_probe_part *part)
{
	struct hx_sched *s = state;
	uint64_t lost = lost_total(s), sw;
	double max_rate;
	unsigned max_worker;
	struct group w;
	size_t nw;
	char p99[24];

	(void)dir;
	if (s->cost_ok && !probe_sched_prog_stats(s->p, &s->runs, &s->ns)) {
		s->runs -= s->runs0;
		s->ns -= s->ns0;
	} else {
		s->cost_ok = false;
	}
	qsort(s->g, s->ng, sizeof(*s->g), group_cmp);
	workers_total(s, &w, &nw, &max_rate, &max_worker);
	sw = w.voluntary + w.involuntary;
	md_us(hx_sched_quantile_ns(w.hist, w.runq_max_ns, 0.99) / 1e3, p99, sizeof(p99));
	if (nw)
		snprintf(s->summary, sizeof(s->summary), "%zu workers: run-queue p99 ≤ %s over %llu "
			 "waits, %llu switches (%.0f%% involuntary), %llu migrations; %s", nw, p99,
			 (unsigned long long)w.runq_count, (unsigned long long)sw,
			 sw ? 100.0 * (double)w.involuntary / (double)sw : 0,
			 (unsigned long long)w.migrations,
			 lost ? "events lost: thread map full" : "nothing lost");
	else
		snprintf(s->summary, sizeof(s->summary), "%zu thread groups, no runtime worker; %s",
			 s->ng, lost ? "events lost: thread map full" : "nothing lost");
	part->summary = s->summary;
	part->json = sched_json;
	part->md = sched_md;
	part->data = s;
	return 0;
}

static void sched_close(void *state)
{
	struct hx_sched *s = state;

	probe_sched_free(s->p);
	free(s->g);
	free(s);
}

const struct hx_probe_ops hx_sched_ops = {
	.id = HX_PROBE_SCHED,
	.name = "sched",
	.summary = "run-queue latency, voluntary and involuntary switches, migrations and "
		   "on-CPU time per thread (scheduler tracepoints)",
	.open = sched_open,
	.begin = sched_begin,
	.end = sched_end,
	.reset = sched_reset,
	.finish = sched_finish,
	.close = sched_close,
};
