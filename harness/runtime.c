/*
 * The runtime probe in the probe set: the runtime's USDT events of each fork, counted
 * exactly by kind, set beside the runtime's own counters for the same window (the
 * harness fires rt:window with its reads of the counters, rt_sched_stats_edge(), which
 * holds parks off meanwhile, so that none is counted on one side of a mark and traced
 * on the other), and the first
 * events of each fork drawn as a per-worker timeline in Chrome's trace-event format
 * (timeline.json, which chrome://tracing and Perfetto open).
 *
 * Counts come from every event delivered, not only the ones the timeline keeps; an
 * event the ring buffer had no room for is counted by CPU and by kind, so for each kind
 * delivered + dropped is what the runtime produced, and the check against the counters
 * says "agree" only when nothing of that kind was dropped.
 *
 * A fork's tracing ends with its measurement (the probe muted), but its uprobes come
 * out, and its last events in, only once it has exited (gone; hx_hooks.fork_gone says
 * why the kernel needs that order).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

#define NK PROBE_RT_NKINDS

/* One fork's stored events, for the timeline. */
struct rt_fork {
	pid_t pid;
	struct probe_rt_event *ev;
	size_t n, cap;       /* stored; room */
	uint64_t cut;        /* events past the cap, counted only */
	uint64_t lost;       /* events the ring buffer dropped */
	uint64_t open_ts;    /* the window's opening mark; 0: not seen */
	uint64_t window_ns;  /* between the window marks */
};

/* A check of a count against the runtime's counter of the same thing. */
enum { CK_SPAWNED, CK_TASKS_RUN, CK_STEALS, CK_STOLEN, CK_PARKS, NCHECKS };

static const char *const check_names[NCHECKS] = { "spawned", "tasks_run", "steals", "stolen",
						  "parks" };
/* the event kind each check counts, whose drops make it unknown */
static const unsigned check_kinds[NCHECKS] = { PROBE_RT_SPAWN, PROBE_RT_RUN_BEGIN, PROBE_RT_STEAL,
					       PROBE_RT_STEAL, PROBE_RT_PARK };

struct rt_state {
	struct probe_runtime *p;
	unsigned cap;            /* timeline events kept per fork */
	int ncpus;
	/* totals over the forks since the reset */
	uint64_t counts[NK][2];  /* delivered, [kind][in window] */
	uint64_t on_worker[NK];  /* delivered in the window from a worker thread */
	uint64_t stolen;         /* tasks moved by the steals in the window */
	uint64_t dropped[NK][2];
	uint64_t *drops_cpu;     /* ncpus */
	uint64_t attach_ns_max, attach_ns_sum;
	uint64_t runs0, ns0, runs, ns; /* BPF run-time statistics: at begin; summed */
	bool stats_ok;
	uint64_t window_ns;
	struct rt_fork *forks;
	size_t nforks, forks_cap;
	struct rt_fork *cur;     /* the fork being traced */
	int error;               /* the reader's first failure (out of memory), -errno */
	/* the runtime's counters for the same windows, from observe */
	bool observed;
	uint64_t counter[NCHECKS];
	uint64_t seen[NCHECKS];
	/* finish's output */
	char summary[256];
	char file_err[160];
	bool timeline_written;
	uint64_t timeline_records;
};

static void on_event(const struct probe_rt_event *e, void *ctx)
{
	struct rt_state *s = ctx;
	struct rt_fork *f = s->cur;

	if (e->kind >= NK)
		return;
	s->counts[e->kind][e->in_window]++;
	if (e->in_window) {
		if (e->worker != RT_NO_WORKER)
			s->on_worker[e->kind]++;
		if (e->kind == PROBE_RT_STEAL)
			s->stolen += e->a1;
	}
	if (!f)
		return;
	/* the window's length from its marks, whether or not the timeline keeps them */
	if (e->kind == PROBE_RT_WINDOW && e->a0)
		f->open_ts = e->ts;
	else if (e->kind == PROBE_RT_WINDOW && f->open_ts && e->ts > f->open_ts)
		f->window_ns = e->ts - f->open_ts;
	if (f->n == f->cap) {
		size_t want = f->cap ? f->cap * 2 : 4096;
		void *ev;

		if (want > s->cap)
			want = s->cap;
		if (f->n >= want) {
			f->cut++;
			return;
		}
		ev = realloc(f->ev, want * sizeof(*f->ev));
		if (!ev) {
			f->cut++; /* counted as cut, and the collection marked failed */
			if (!s->error)
				s->error = -ENOMEM;
			return;
		}
		f->ev = ev;
		f->cap = want;
	}
	f->ev[f->n++] = *e;
}

static int rt_open(void **state, const struct hx_probe_config *cfg, char *why, size_t len)
{
	struct probe_runtime_opts o = { 0 };
	struct rt_state *s;

	if (cfg->timeline_events > 100000000u) {
		snprintf(why, len, "--timeline-events %u: at most 100000000 events per fork",
			 cfg->timeline_events);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, len, "runtime: out of memory");
		return -ENOMEM;
	}
	s->cap = cfg->timeline_events ? cfg->timeline_events : HX_TIMELINE_EVENTS;
	o.measure_s = cfg->measure_s;
	o.ring_bytes = cfg->ring_bytes;
	o.fn = on_event;
	o.ctx = s;
	s->p = probe_runtime_open(&o, why, len);
	if (!s->p) {
		/* -EINVAL would say the configuration was bad input and stop the run; a
		 * verifier's refusal is the machine's answer, said in why */
		int err = errno && errno != EINVAL ? -errno : -EIO;

		free(s);
		return err;
	}
	s->ncpus = probe_runtime_ncpus(s->p);
	s->drops_cpu = calloc(s->ncpus, sizeof(*s->drops_cpu));
	if (!s->drops_cpu) {
		probe_runtime_free(s->p);
		free(s);
		snprintf(why, len, "runtime: out of memory");
		return -ENOMEM;
	}
	*state = s;
	return 0;
}

static int rt_gone(void *state, pid_t pid);

/* For hooks that never say the fork is gone: let go of it before anything that starts
 * again, reads the counts or frees them. */
static void settle(struct rt_state *s)
{
	int r;

	if (s->cur && (r = rt_gone(s, 0)) && !s->error)
		s->error = r;
}

static int rt_begin(void *state, pid_t pid, int64_t phase_tls_off)
{
	struct rt_state *s = state;
	char err[256];
	uint64_t ns = 0;
	int r;

	(void)phase_tls_off;
	settle(s);
	if (s->nforks == s->forks_cap) {
		size_t want = s->forks_cap ? s->forks_cap * 2 : 4;
		void *f = realloc(s->forks, want * sizeof(*s->forks));

		if (!f)
			return -ENOMEM;
		s->forks = f;
		s->forks_cap = want;
	}
	s->cur = &s->forks[s->nforks++];
	memset(s->cur, 0, sizeof(*s->cur));
	s->cur->pid = pid;
	s->stats_ok = !probe_runtime_prog_stats(s->p, &s->runs0, &s->ns0);
	r = probe_runtime_start(s->p, pid, &ns, err, sizeof(err));
	if (r) {
		fprintf(stderr, "schedlab: %s\n", err);
		s->cur = NULL;
		return r;
	}
	if (ns > s->attach_ns_max)
		s->attach_ns_max = ns;
	s->attach_ns_sum += ns;
	return 0;
}

/* The fork measured: trace no more of it, but leave the uprobes in it (rt_gone()). */
static int rt_end(void *state, pid_t pid)
{
	struct rt_state *s = state;

	(void)pid;
	if (s->cur)
		probe_runtime_mute(s->p);
	return 0;
}

/* The fork has exited: only now do the uprobes come out (hx_hooks.fork_gone says why),
 * and the last of its events with them. */
static int rt_gone(void *state, pid_t pid)
{
	struct rt_state *s = state;
	struct rt_fork *f = s->cur;
	uint64_t lost[NK][2] = { { 0 } }, runs, ns;
	int r;

	(void)pid;
	if (!f)
		return 0;
	r = probe_runtime_stop(s->p);
	if (!r)
		r = probe_runtime_drops(s->p, s->drops_cpu, lost);
	for (unsigned k = 0; k < NK; k++) {
		s->dropped[k][0] += lost[k][0];
		s->dropped[k][1] += lost[k][1];
		f->lost += lost[k][0] + lost[k][1];
	}
	if (s->stats_ok && !probe_runtime_prog_stats(s->p, &runs, &ns)) {
		s->runs += runs - s->runs0;
		s->ns += ns - s->ns0;
	} else {
		s->stats_ok = false;
	}
	s->window_ns += f->window_ns;
	s->cur = NULL;
	return r ? r : s->error;
}

static int rt_reset(void *state)
{
	struct rt_state *s = state;

	settle(s);
	for (size_t i = 0; i < s->nforks; i++)
		free(s->forks[i].ev);
	s->nforks = 0;
	memset(s->counts, 0, sizeof(s->counts));
	memset(s->on_worker, 0, sizeof(s->on_worker));
	memset(s->dropped, 0, sizeof(s->dropped));
	memset(s->drops_cpu, 0, s->ncpus * sizeof(*s->drops_cpu));
	s->stolen = s->attach_ns_max = s->attach_ns_sum = s->runs = s->ns = s->window_ns = 0;
	s->stats_ok = true;
	s->error = 0;
	s->observed = false;
	s->timeline_written = false;
	s->timeline_records = 0;
	s->file_err[0] = '\0';
	return 0;
}

static void rt_observe(void *state, const struct hx_result *res)
{
	struct rt_state *s = state;

	settle(s);
	s->observed = true;
	s->counter[CK_SPAWNED] = res->rt.spawned;
	s->counter[CK_TASKS_RUN] = res->rt.tasks_run;
	s->counter[CK_STEALS] = res->rt.steals;
	s->counter[CK_STOLEN] = res->rt.stolen;
	s->counter[CK_PARKS] = res->rt.parks;
	s->seen[CK_SPAWNED] = s->on_worker[PROBE_RT_SPAWN];
	s->seen[CK_TASKS_RUN] = s->on_worker[PROBE_RT_RUN_BEGIN];
	s->seen[CK_STEALS] = s->counts[PROBE_RT_STEAL][1];
	s->seen[CK_STOLEN] = s->stolen;
	s->seen[CK_PARKS] = s->counts[PROBE_RT_PARK][1];
}

/* ---- timeline.json ---------------------------------------------------------------------- */

static int by_time(const void *a, const void *b)
{
	const struct probe_rt_event *x = a, *y = b;

	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* What one thread is doing, as spans open since an event: a task run, a blocking
 * section inside it, parked, searching. */
struct lane {
	uint32_t tid;
	uint32_t worker;       /* the last worker index seen on it; RT_NO_WORKER */
	uint64_t run_ts, run_task, block_ts, block_task, park_ts, search_ts;
	bool run, block, park, search;
};

struct tl_ctx {
	struct rt_state *s;
	uint64_t base;         /* the earliest stored event: ts 0 */
	uint64_t records;
	bool first;
};

static struct lane *lane_of(struct lane **lanes, size_t *n, size_t *cap, uint32_t tid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*lanes)[i].tid == tid)
			return &(*lanes)[i];
	if (*n == *cap) {
		size_t want = *cap ? *cap * 2 : 16;
		void *l = realloc(*lanes, want * sizeof(**lanes));

		if (!l)
			return NULL;
		*lanes = l;
		*cap = want;
	}
	memset(&(*lanes)[*n], 0, sizeof(**lanes));
	(*lanes)[*n].tid = tid;
	(*lanes)[*n].worker = RT_NO_WORKER;
	return &(*lanes)[(*n)++];
}

static void sep(FILE *out, struct tl_ctx *c)
{
	fputs(c->first ? "\n" : ",\n", out);
	c->first = false;
	c->records++;
}

static void us(FILE *out, const char *key, uint64_t ns)
{
	fprintf(out, "\"%s\": %" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static void span(FILE *out, struct tl_ctx *c, pid_t pid, uint32_t tid, const char *name,
		 const char *cat, uint64_t from, uint64_t to, const char *args)
{
	sep(out, c);
	fprintf(out, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", ", name, cat);
	us(out, "ts", from - c->base);
	fputs(", ", out);
	us(out, "dur", to > from ? to - from : 0);
	fprintf(out, ", \"pid\": %d, \"tid\": %u, \"args\": {%s}}", (int)pid, tid, args);
}

/* scope "t" (the thread) for placement events, "p" (the fork) for the harness's marks */
static void instant(FILE *out, struct tl_ctx *c, pid_t pid, uint32_t tid, const char *scope,
		    const char *name, uint64_t ts, const char *args)
{
	sep(out, c);
	fprintf(out, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"i\", \"s\": \"%s\", ",
		name, *scope == 't' ? "placement" : "harness", scope);
	us(out, "ts", ts - c->base);
	fprintf(out, ", \"pid\": %d, \"tid\": %u, \"args\": {%s}}", (int)pid, tid, args);
}

/* A search ends when the worker runs a task or parks. */
static void end_search(FILE *out, struct tl_ctx *c, pid_t pid, struct lane *l, uint64_t ts)
{
	if (l->search)
		span(out, c, pid, l->tid, "searching", "search", l->search_ts, ts, "");
	l->search = false;
}

static void worker_arg(char *buf, size_t len, uint32_t w)
{
	if (w == RT_NO_WORKER)
		snprintf(buf, len, "null");
	else
		snprintf(buf, len, "%u", w);
}

static const char *const next_names[] = { "done", "yield", "wait" };

/* enum rt_place's names, as the knobs spell them: an event's path as a word */
static const char *const path_names[] = { "local", "lifo", "runnext", "external", "scan" };

/* "\"path\": \"local\"", or the number where it names no path this build knows. */
static void path_arg(char *buf, size_t len, uint64_t path)
{
	if (path < sizeof(path_names) / sizeof(path_names[0]))
		snprintf(buf, len, "\"path\": \"%s\"", path_names[path]);
	else
		snprintf(buf, len, "\"path\": %" PRIu64, path);
}

/* One of fork pid's events that is a moment, not a span (a spawn, an enqueue, a steal, a
 * placement, a flush, the measured window's edges), w its worker as an argument. */
static void write_instant(FILE *out, struct tl_ctx *c, pid_t pid, const struct probe_rt_event *e,
			  const char *w)
{
	char a[192], path[48];

	switch (e->kind) {
	case PROBE_RT_SPAWN:
		path_arg(path, sizeof(path), e->a1);
		snprintf(a, sizeof(a), "\"task\": %" PRIu64 ", \"worker\": %s, %s", e->a0, w,
			 path);
		instant(out, c, pid, e->tid, "t", "spawn", e->ts, a);
		break;
	case PROBE_RT_ENQUEUE:
		path_arg(path, sizeof(path), e->a1);
		snprintf(a, sizeof(a), "\"task\": %" PRIu64 ", \"to\": %s, %s", e->a0, w, path);
		instant(out, c, pid, e->tid, "t", "enqueue", e->ts, a);
		break;
	case PROBE_RT_STEAL:
		/* one name for every steal, so that a viewer groups them; the victim an arg */
		snprintf(a, sizeof(a), "\"thief\": %s, \"victim\": %" PRIu64 ", \"tasks\": %"
			 PRIu64, w, e->a0, e->a1);
		instant(out, c, pid, e->tid, "t", "steal", e->ts, a);
		break;
	case PROBE_RT_PLACE: {
		char to[16];

		worker_arg(to, sizeof(to), (uint32_t)e->a1);
		snprintf(a, sizeof(a), "\"task\": %" PRIu64 ", \"from\": %s, \"to\": %s, "
			 "\"load\": %u, \"fallback\": %s", e->a0, w, to,
			 (unsigned)(uint32_t)e->a2, e->a2 >> 32 ? "true" : "false");
		instant(out, c, pid, e->tid, "t", "place", e->ts, a);
		break;
	}
	case PROBE_RT_FLUSH:
		snprintf(a, sizeof(a), "\"worker\": %s, \"tasks\": %" PRIu64, w, e->a0);
		instant(out, c, pid, e->tid, "t", "flush", e->ts, a);
		break;
	case PROBE_RT_WINDOW:
		instant(out, c, pid, e->tid, "p",
			e->a0 ? "measured iterations begin" : "measured iterations end",
			e->ts, "");
		break;
	}
}

static int write_fork(FILE *out, struct tl_ctx *c, const struct rt_fork *f, unsigned k)
{
	struct lane *lanes = NULL, *l;
	size_t nl = 0, capl = 0;
	uint64_t last = f->n ? f->ev[f->n - 1].ts : c->base;
	char a[192], w[16];

	sep(out, c);
	fprintf(out, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": 0, "
		"\"args\": {\"name\": \"fork %u (pid %d)\"}}", (int)f->pid, k + 1, (int)f->pid);
	for (size_t i = 0; i < f->n; i++) {
		const struct probe_rt_event *e = &f->ev[i];

		l = lane_of(&lanes, &nl, &capl, e->tid);
		if (!l) {
			free(lanes);
			return -ENOMEM;
		}
		if (e->worker != RT_NO_WORKER && e->kind != PROBE_RT_PLACE &&
		    e->kind != PROBE_RT_ENQUEUE)
			l->worker = e->worker;
		worker_arg(w, sizeof(w), e->worker);
		switch (e->kind) {
		case PROBE_RT_RUN_BEGIN:
			end_search(out, c, f->pid, l, e->ts);
			l->run = true;
			l->run_ts = e->ts;
			l->run_task = e->a0;
			break;
		case PROBE_RT_RUN_END:
			if (l->run) {
				/* one name for every task's run, so that a viewer groups and
				 * sums them; which task is an arg */
				snprintf(a, sizeof(a), "\"task\": %" PRIu64 ", \"worker\": %s, "
					 "\"then\": \"%s\"", l->run_task, w,
					 e->a1 < 3 ? next_names[e->a1] : "?");
				span(out, c, f->pid, e->tid, "task", "run", l->run_ts, e->ts, a);
				l->run = false;
			}
			break;
		case PROBE_RT_PARK:
			end_search(out, c, f->pid, l, e->ts);
			l->park = true;
			l->park_ts = e->ts;
			break;
		case PROBE_RT_UNPARK:
			if (l->park) {
				snprintf(a, sizeof(a), "\"worker\": %s", w);
				span(out, c, f->pid, e->tid, "parked", "park", l->park_ts, e->ts, a);
				l->park = false;
			}
			snprintf(a, sizeof(a), "\"worker\": %s, \"to_search\": %s", w,
				 e->a0 ? "true" : "false");
			instant(out, c, f->pid, e->tid, "t", "notified", e->ts, a);
			if (e->a0) {
				l->search = true;
				l->search_ts = e->ts;
			}
			break;
		case PROBE_RT_BLOCK_BEGIN:
			l->block = true;
			l->block_ts = e->ts;
			l->block_task = e->a0;
			break;
		case PROBE_RT_BLOCK_END:
			if (l->block) {
				snprintf(a, sizeof(a), "\"task\": %" PRIu64 ", \"worker\": %s, "
					 "\"ns\": %" PRIu64, l->block_task, w, e->a1);
				span(out, c, f->pid, e->tid, "blocked", "block", l->block_ts, e->ts, a);
				l->block = false;
			}
			break;
		default:
			write_instant(out, c, f->pid, e, w);
			break;
		}
	}
	/* what is still open at the last stored event ends there */
	for (size_t i = 0; i < nl; i++) {
		l = &lanes[i];
		if (l->block)
			span(out, c, f->pid, l->tid, "blocked", "block", l->block_ts, last,
			     "\"open\": true");
		if (l->run) {
			snprintf(a, sizeof(a), "\"task\": %" PRIu64 ", \"open\": true", l->run_task);
			span(out, c, f->pid, l->tid, "task", "run", l->run_ts, last, a);
		}
		if (l->park)
			span(out, c, f->pid, l->tid, "parked", "park", l->park_ts, last,
			     "\"open\": true");
		if (l->search)
			span(out, c, f->pid, l->tid, "searching", "search", l->search_ts, last,
			     "\"open\": true");
		l->search = false;
	}
	for (size_t i = 0; i < nl; i++) {
		sep(out, c);
		if (lanes[i].worker != RT_NO_WORKER)
			fprintf(out, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %u, "
				"\"args\": {\"name\": \"worker %u (tid %u)\"}}", (int)f->pid,
				lanes[i].tid, lanes[i].worker, lanes[i].tid);
		else
			fprintf(out, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %u, "
				"\"args\": {\"name\": \"thread %u\"}}", (int)f->pid, lanes[i].tid,
				lanes[i].tid);
	}
	free(lanes);
	/* nothing left out without a mark where it would have been */
	if (f->cut) {
		snprintf(a, sizeof(a), "\"events\": %" PRIu64 ", \"kept\": %zu", f->cut, f->n);
		instant(out, c, f->pid, 0, "p", "[truncated]", last, a);
	}
	if (f->lost) {
		snprintf(a, sizeof(a), "\"events\": %" PRIu64, f->lost);
		instant(out, c, f->pid, 0, "p", "[lost: ring buffer]", last, a);
	}
	return 0;
}

static int write_timeline(void *ctx, FILE *out)
{
	struct tl_ctx *c = ctx;
	struct rt_state *s = c->s;
	int err = 0;

	c->base = UINT64_MAX;
	for (size_t i = 0; i < s->nforks; i++)
		if (s->forks[i].n && s->forks[i].ev[0].ts < c->base)
			c->base = s->forks[i].ev[0].ts;
	if (c->base == UINT64_MAX)
		c->base = 0;
	c->first = true;
	c->records = 0;
	fputs("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [", out);
	for (size_t i = 0; i < s->nforks && !err; i++)
		err = write_fork(out, c, &s->forks[i], (unsigned)i);
	fputs("\n]}\n", out);
	return err;
}

/* ---- result.json and report.md ---------------------------------------------------------- */

static uint64_t sum2(const uint64_t v[NK][2], unsigned k)
{
	return v[k][0] + v[k][1];
}

static uint64_t total_dropped(const struct rt_state *s)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < NK; k++)
		n += sum2(s->dropped, k);
	return n;
}

static uint64_t total_delivered(const struct rt_state *s)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < NK; k++)
		n += sum2(s->counts, k);
	return n;
}

static uint64_t total_cut(const struct rt_state *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nforks; i++)
		n += s->forks[i].cut;
	return n;
}

static double ns_per_event(const struct rt_state *s)
{
	return s->stats_ok && s->runs ? (double)s->ns / (double)s->runs : NAN;
}

/* The measured iterations' wall time per event traced in them: what the benchmark's
 * threads spent per event, traps included, with the work in between (an upper bound on
 * the trap's cost where events come back to back). */
static double window_ns_per_event(const struct rt_state *s)
{
	uint64_t n = 0;

	for (unsigned k = 0; k < NK; k++)
		n += s->counts[k][1];
	return n && s->window_ns ? (double)s->window_ns / (double)n : NAN;
}

static void rt_json(FILE *out, const void *data)
{
	const struct rt_state *s = data;

	fputs(", \"events\": {", out);
	for (unsigned k = 0; k < NK; k++)
		fprintf(out, "%s\"%s\": %" PRIu64, k ? ", " : "", probe_rt_kind_name(k),
			s->counts[k][1]);
	fputs("}, \"outside_window\": {", out);
	for (unsigned k = 0; k < NK; k++)
		fprintf(out, "%s\"%s\": %" PRIu64, k ? ", " : "", probe_rt_kind_name(k),
			s->counts[k][0]);
	fprintf(out, "}, \"delivered\": %" PRIu64 ", \"lost\": {\"ring_buffer\": %" PRIu64
		", \"per_cpu\": [", total_delivered(s), total_dropped(s));
	for (int c = 0; c < s->ncpus; c++)
		fprintf(out, "%s%" PRIu64, c ? ", " : "", s->drops_cpu[c]);
	fputs("], \"by_kind\": {", out);
	for (unsigned k = 0; k < NK; k++)
		fprintf(out, "%s\"%s\": {\"window\": %" PRIu64 ", \"outside\": %" PRIu64 "}",
			k ? ", " : "", probe_rt_kind_name(k), s->dropped[k][1], s->dropped[k][0]);
	fprintf(out, "}, \"timeline_cut\": %" PRIu64 "}", total_cut(s));
	fputs(", \"check\": [", out);
	for (unsigned i = 0; s->observed && i < NCHECKS; i++) {
		uint64_t d = s->dropped[check_kinds[i]][1];

		fprintf(out, "%s{\"counter\": \"%s\", \"events\": %" PRIu64 ", \"runtime\": %" PRIu64
			", \"dropped\": %" PRIu64 ", \"agree\": %s}", i ? ", " : "", check_names[i],
			s->seen[i], s->counter[i], d,
			d ? "null" : s->seen[i] == s->counter[i] ? "true" : "false");
	}
	fprintf(out, "], \"ring_bytes\": %u, \"ring_rate\": %u, \"ring_ms\": %u",
		probe_runtime_ring_bytes(s->p), PROBE_RT_RATE, PROBE_RT_RING_MS);
	fprintf(out, ", \"window_ns\": %" PRIu64 ", \"attach_per_fork_ns\": %" PRIu64
		", \"prog_runs\": %" PRIu64 ", \"prog_ns\": %" PRIu64 ", \"prog_ns_per_event\": ",
		s->window_ns, s->attach_ns_max, s->runs, s->ns);
	an_json_num(out, ns_per_event(s));
	fputs(", \"window_ns_per_event\": ", out);
	an_json_num(out, window_ns_per_event(s));
	fputs(", \"timeline\": {\"file\": ", out);
	an_json_str(out, s->timeline_written ? "timeline.json" : NULL);
	fprintf(out, ", \"cap_per_fork\": %u, \"records\": %" PRIu64 ", \"events_cut\": %" PRIu64
		"}", s->cap, s->timeline_records, total_cut(s));
}

static void rt_md(FILE *out, const void *data)
{
	const struct rt_state *s = data;
	uint64_t lost = total_dropped(s), cut = total_cut(s), all = total_delivered(s);
	char a[64], b[64], c[64];

	fputs("### Runtime events (USDT)\n\n", out);
	fputs("| event | in the measured iterations | outside them | dropped |\n"
	      "| --- | ---: | ---: | ---: |\n", out);
	for (unsigned k = 0; k < NK; k++) {
		an_format_number((double)s->counts[k][1], 0, a, sizeof(a));
		an_format_number((double)s->counts[k][0], 0, b, sizeof(b));
		an_format_number((double)sum2(s->dropped, k), 0, c, sizeof(c));
		fprintf(out, "| %s | %s | %s | %s |\n", probe_rt_kind_name(k), a, b, c);
	}
	fputs("\n", out);
	if (s->observed) {
		fputs("| runtime counter | from events | runtime's own | |\n| --- | ---: | ---: | --- |\n",
		      out);
		for (unsigned i = 0; i < NCHECKS; i++) {
			uint64_t d = s->dropped[check_kinds[i]][1];

			an_format_number((double)s->seen[i], 0, a, sizeof(a));
			an_format_number((double)s->counter[i], 0, b, sizeof(b));
			if (d)
				fprintf(out, "| %s | %s | %s | not comparable: %" PRIu64 " %s events "
					"dropped |\n", check_names[i], a, b, d,
					probe_rt_kind_name(check_kinds[i]));
			else
				fprintf(out, "| %s | %s | %s | %s |\n", check_names[i], a, b,
					s->seen[i] == s->counter[i] ? "agree" :
					"DISAGREE (an event that raced the counters' read, "
					"or a bug)");
		}
		fputs("\n", out);
	} else {
		fputs("The counts are not set beside the runtime's counters: the run stopped before "
		      "a fork reported them.\n\n", out);
	}
	an_format_number((double)probe_runtime_ring_bytes(s->p) / 1024, 0, a, sizeof(a));
	an_format_number(PROBE_RT_RATE, 0, b, sizeof(b));
	fprintf(out, "Ring buffer %s KiB: the measurement's events, up to %u ms of them, at %s "
		"a second on each of %d CPUs (a uprobe trap takes a microsecond or more); the "
		"reader empties it every %u ms. ", a, PROBE_RT_RING_MS, b, s->ncpus,
		PROBE_RT_POLL_MS);
	if (lost) {
		an_format_number((double)lost, 0, a, sizeof(a));
		fprintf(out, "**%s events dropped** (ring buffer full), by CPU:", a);
		for (int cpu = 0; cpu < s->ncpus; cpu++)
			fprintf(out, " %" PRIu64, s->drops_cpu[cpu]);
		fputs(".\n\n", out);
	} else {
		fputs("No event was dropped.\n\n", out);
	}
	if (s->stats_ok && s->runs) {
		an_format_number((double)s->runs, 0, a, sizeof(a));
		fprintf(out, "Cost: %.0f ns an event in the BPF program (%s runs, kernel run-time "
			"statistics); the uprobe trap that runs it, which is most of an event's "
			"cost, is not in that figure: compare the throughput with `--probes none`. ",
			ns_per_event(s), a);
		if (!isnan(window_ns_per_event(s)))
			fprintf(out, "The measured iterations took %.0f ns of wall time per event "
				"traced in them (traps and the work between events). ",
				window_ns_per_event(s));
	} else {
		fputs("Cost per event: not measured (the kernel's BPF statistics are off). ", out);
	}
	fprintf(out, "Attach: %.1f ms per fork at most (every USDT point of the fork's binary).\n\n",
		s->attach_ns_max / 1e6);
	if (s->timeline_written) {
		an_format_number((double)s->timeline_records, 0, a, sizeof(a));
		fprintf(out, "Timeline: `timeline.json` (Chrome trace-event format: chrome://tracing "
			"or Perfetto), %s records from the first %u events of each fork", a, s->cap);
		if (cut) {
			an_format_number((double)cut, 0, b, sizeof(b));
			fprintf(out, "; **%s later events are not in it** (counted above; raise "
				"--timeline-events to keep them)", b);
		}
		fputs(".\n", out);
	} else if (*s->file_err) {
		fprintf(out, "Timeline: not written: %s.\n", s->file_err);
	}
	(void)all;
}

static int rt_finish(void *state, const char *dir, struct an_probe_part *part)
{
	struct rt_state *s = state;
	struct tl_ctx c = { .s = s };
	char path[4096], n1[32], n2[32];
	int err;

	settle(s);
	for (size_t i = 0; i < s->nforks; i++)
		qsort(s->forks[i].ev, s->forks[i].n, sizeof(*s->forks[i].ev), by_time);
	snprintf(path, sizeof(path), "%s/timeline.json", dir);
	err = an_write_file_atomic(path, write_timeline, &c);
	if (err) {
		snprintf(s->file_err, sizeof(s->file_err), "%s: %s", path, strerror(-err));
	} else {
		s->timeline_written = true;
		s->timeline_records = c.records;
		part->files[0] = "timeline.json";
	}
	an_format_number((double)total_delivered(s), 0, n1, sizeof(n1));
	an_format_number((double)total_dropped(s), 0, n2, sizeof(n2));
	snprintf(s->summary, sizeof(s->summary), "%s events, %s dropped%s", n1, n2,
		 total_cut(s) ? "; the timeline cut at its per-fork cap" : "");
	part->summary = s->summary;
	part->json = rt_json;
	part->md = rt_md;
	part->data = s;
	return err ? err : s->error;
}

static void rt_close(void *state)
{
	struct rt_state *s = state;

	rt_reset(s);
	probe_runtime_free(s->p);
	free(s->forks);
	free(s->drops_cpu);
	free(s);
}

const struct hx_probe_ops hx_runtime_probe = {
	.id = HX_PROBE_RUNTIME,
	.name = "runtime",
	.summary = "the runtime's USDT events: exact counts checked against its counters, "
		   "and a per-worker timeline.json (Chrome trace format)",
	.opt_in = true,
	.open = rt_open,
	.begin = rt_begin,
	.end = rt_end,
	.gone = rt_gone,
	.reset = rt_reset,
	.finish = rt_finish,
	.close = rt_close,
	.observe = rt_observe,
};
