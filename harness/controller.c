/*
 * The benchmark harness's fork protocol: the controller's loop over forks, and the
 * fork's side. The benchmark's specification is parsed in spec.c.
 *
 * Controller and fork talk over a SOCK_SEQPACKET socket pair with fixed-size binary
 * messages: the fork is this same binary, so the layout is the same on both sides.
 * The fork drives; the controller answers twice, and each answer is a rendezvous:
 *
 *   fork -> HELLO (pid, phase TLS offset, workers, how long the counters took to open),
 *           EVENT x counters (whether each is counted, and if not why), WARMUP x warmup,
 *           MEASURE
 *   ctrl -> GO       (after the probes started on the fork's pid)
 *   fork -> ITER x iterations (each with its runtime counters and the performance
 *           counters read at its two ends), RTSTATS, WORKER x
 *           workers (each worker's counters and steal row), METRIC x the workload's
 *           own figures, END
 *   ctrl -> BYE      (after the probes were drained and the fork's maps read)
 *   fork -> ERROR at any point, with a one-line reason, then exits 1
 *
 * A fork the hooks run without the probes (--overhead's baseline) is started without the
 * counters' events, and of what it sends only its throughput is kept.
 *
 * A fork that goes silent for longer than any iteration could take is killed and
 * reported, so a scheduler deadlock fails the run instead of hanging it. SIGINT and
 * SIGTERM reach the controller only inside ppoll() (blocked elsewhere), so an
 * interrupt is never lost between checking the flag and waiting: the fork in flight
 * is drained by the probes, killed and reaped, and what was measured is kept.
 *
 * A fork never outlives the controller (PR_SET_PDEATHSIG, SIGKILL), and the probes take
 * their uprobes out of a fork only after it is reaped (hx_hooks.fork_gone says why), so
 * that a controller killed while it detaches leaves no uprobe in the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "runtime/clock.h"
#include "runtime/usdt.h"

enum msg_type {
	MSG_HELLO = 1,
	MSG_WARMUP,
	MSG_MEASURE,
	MSG_GO,
	MSG_ITER,
	MSG_RTSTATS,
	MSG_WORKER,
	MSG_METRIC,
	MSG_END,
	MSG_BYE,
	MSG_ERROR,
	MSG_EVENT,
};

struct msg {
	uint32_t type;
	uint32_t index;
	uint64_t ops;
	uint64_t ns;                  /* MSG_HELLO: the counters' open; else the time measured */
	int64_t pid;
	int64_t tls_off;
	uint32_t workers;
	uint32_t active;       /* MSG_RTSTATS: workers active at the end (adaptation) */
	uint64_t adaptations;  /* MSG_RTSTATS: changes to the active workers */
	struct rt_worker_stats rt;
	uint64_t row[RT_MAX_WORKERS]; /* MSG_WORKER: tasks this worker stole from each */
	struct wl_metric metric;      /* MSG_METRIC: one of the workload's own figures */
	uint32_t counted;             /* MSG_EVENT: event index counts; else text says why */
	uint32_t nctr;                /* MSG_ITER: performance counters in ctr */
	struct probe_counter_value ctr[PROBE_COUNTERS_MAX]; /* MSG_ITER: over the iteration */
	char text[400];
};


/* The signal that asked hx_run() to stop (hx_interrupt()): process-wide by nature, like
 * the signal itself. */
static volatile sig_atomic_t interrupted;

void hx_interrupt(int sig)
{
	if (!interrupted)
		interrupted = sig;
}

int hx_interrupted(void)
{
	return interrupted;
}

/* ---- messages ------------------------------------------------------------------------- */

static int msg_send(int fd, struct msg *m)
{
	ssize_t n;

	do
		n = send(fd, m, sizeof(*m), MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(*m) ? 0 : -EPIPE;
}

/* 0, -EPIPE on end of stream or a short message, -ETIMEDOUT after timeout_ms (< 0:
 * none). With wait_mask (the controller's), signals are let in only while waiting, and
 * -EINTR once hx_interrupt() was called. */
static int msg_recv(int fd, struct msg *m, int timeout_ms, const sigset_t *wait_mask)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000 };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int r;

	for (;;) {
		if (wait_mask && interrupted)
			return -EINTR;
		r = ppoll(&p, 1, timeout_ms < 0 ? NULL : &ts, wait_mask);
		if (r >= 0 || errno != EINTR)
			break;
	}
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	do
		n = recv(fd, m, sizeof(*m), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*m))
		return -EPIPE;
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}

static void fmt_rate(char *buf, size_t len, double v)
{
	/* group thousands in the integer part: 12,345.67 */
	char digits[64];
	int n, lead, off = 0;

	snprintf(digits, sizeof(digits), "%.2f", v);
	n = (int)(strchr(digits, '.') - digits);
	lead = n % 3 ? n % 3 : 3;
	for (int i = 0; digits[i] && off + 2 < (int)len; i++) {
		if (i < n && i >= lead && (i - lead) % 3 == 0 && digits[0] != '-')
			buf[off++] = ',';
		buf[off++] = digits[i];
	}
	buf[off] = '\0';
}

/* ---- the controller ----------------------------------------------------------------- */

static void stats_add(struct rt_worker_stats *dst, const struct rt_worker_stats *src)
{
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;

	for (size_t i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
		d[i] += s[i];
}

static void stats_sub(struct rt_worker_stats *out, const struct rt_worker_stats *a,
		      const struct rt_worker_stats *b)
{
	uint64_t *o = (uint64_t *)out;
	const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = x[i] - y[i];
}

/* A workload figure from fork k: kept per fork until all are in, then the median. */
static void metric_add(struct hx_result *res, const struct msg *m, unsigned fork, unsigned forks)
{
	size_t i;

	for (i = 0; i < res->nwl_metrics; i++)
		if (!strcmp(res->wl_metrics[i].name, m->metric.name))
			break;
	if (i == res->nwl_metrics) {
		if (i == WL_MAX_METRICS)
			return;
		res->wl_metrics[i] = m->metric;
		res->nwl_metrics++;
	}
	res->wl_per_fork[i * forks + fork] = m->metric.value;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of each figure over the first n of forks forks. */
static void metric_medians(struct hx_result *res, unsigned forks, unsigned n)
{
	if (!n) {
		res->nwl_metrics = 0;
		return;
	}
	for (size_t i = 0; i < res->nwl_metrics; i++) {
		double *v = &res->wl_per_fork[i * forks];

		qsort(v, n, sizeof(double), cmp_double);
		res->wl_metrics[i].value = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	}
}

/* The steal matrix travels as full rows; squeeze it to nper x nper at the end. */
static void steals_compact(struct hx_result *res)
{
	for (unsigned t = 0; t < res->nper; t++)
		for (unsigned v = 0; v < res->nper; v++)
			res->steals[t * res->nper + v] = res->steals[t * RT_MAX_WORKERS + v];
}

/* What fork k says of one of its counters: an event not counted in one fork is not
 * counted (the first reason kept); a counted one may carry a limit. */
static void counter_state(struct hx_counter *c, bool *counted, const struct msg *m, unsigned k)
{
	/* the fork's notes fit: they were written into as much room as this */
	int room = (int)sizeof(c->note) - 1;

	*counted = m->counted;
	if (!m->counted && c->counted) {
		c->counted = false;
		if (k > 1)
			snprintf(c->note, sizeof(c->note), "in fork %u: %.*s", k, room - 24, m->text);
		else
			snprintf(c->note, sizeof(c->note), "%.*s", room, m->text);
	} else if (m->counted && c->counted && !c->note[0]) {
		snprintf(c->note, sizeof(c->note), "%.*s", room, m->text);
	}
}

/* One measured iteration's counters, scaled for multiplexing one by one. */
static void counters_add(struct hx_result *res, const struct msg *m, const bool *counted)
{
	double *row = &res->iter_counters[res->nsamples * PROBE_COUNTERS_MAX];

	for (unsigned i = 0; i < res->ncounters; i++) {
		struct hx_counter *c = &res->counters[i];
		const struct probe_counter_value *v = &m->ctr[i];
		double x;

		row[i] = NAN;
		if (!counted[i] || i >= m->nctr)
			continue;
		c->sum.value += v->value;
		c->sum.enabled += v->enabled;
		c->sum.running += v->running;
		x = probe_counter_scaled(v);
		if (isnan(x)) {
			c->unscaled++;
			continue;
		}
		row[i] = m->ops ? x / (double)m->ops : NAN;
		c->total += x;
		c->ops += m->ops;
	}
}

/* An event that never got onto the PMU in any iteration counted nothing: n/a, not 0. */
static void counters_finish(struct hx_result *res)
{
	for (unsigned i = 0; i < res->ncounters; i++) {
		struct hx_counter *c = &res->counters[i];

		if (c->counted && c->sum.enabled && !c->sum.running) {
			c->counted = false;
			snprintf(c->note, sizeof(c->note),
				 "never scheduled on the PMU (multiplexed out in every iteration): "
				 "count fewer events");
		}
	}
}

/* What the controller keeps of one fork while it runs. */
struct fork_run {
	const struct hx_spec *spec;
	struct hx_result *res;
	unsigned k;                /* 1 for the first fork */
	FILE *progress;
	bool probed;               /* it runs with the probes: its figures are the run's */
	bool counted[PROBE_COUNTERS_MAX]; /* events this fork counted */
	unsigned iters;            /* measured iterations it reported */
};

/* Take a message of f's figures (the fork's hello, its counters, warm-ups, iterations,
 * runtime statistics, metrics, workers) into the result. 0, or -EPROTO with res->error
 * said when the fork reports more iterations than were asked for. */
static int fork_figures(struct fork_run *f, struct msg *m)
{
	const struct hx_spec *spec = f->spec;
	struct hx_result *res = f->res;
	char rate[64];
	double v;

	switch (m->type) {
	case MSG_HELLO:
		res->workers = m->workers;
		if (f->probed && m->ns > res->counters_attach_ns)
			res->counters_attach_ns = m->ns;
		break;
	case MSG_EVENT:
		if (m->index < res->ncounters)
			counter_state(&res->counters[m->index], &f->counted[m->index], m, f->k);
		break;
	case MSG_WARMUP:
		fmt_rate(rate, sizeof(rate), m->ops / (m->ns / 1e9));
		if (f->progress)
			fprintf(f->progress, "  fork %u/%u  warm-up    %u/%u: %s %s\n", f->k,
				spec->opt.forks, m->index + 1, spec->opt.warmup, rate, spec->wl->unit);
		break;
	case MSG_ITER:
		/* the result has room for iterations per fork and no more: a fork that sends
		 * another breaks the protocol (a mismatched binary, or memory gone bad), and
		 * is stopped before it writes past the samples */
		if (f->iters == spec->opt.iterations ||
		    res->nsamples >= (size_t)spec->opt.forks * spec->opt.iterations) {
			snprintf(res->error, sizeof(res->error),
				 "fork %u: protocol error: %u measured iterations, %u asked for; killed it",
				 f->k, f->iters + 1, spec->opt.iterations);
			return -EPROTO;
		}
		v = m->ops / (m->ns / 1e9);
		f->iters++;
		res->iter_rt[res->nsamples] = m->rt;
		counters_add(res, m, f->counted);
		res->samples[res->nsamples++] = v;
		if (f->probed)
			res->ops += m->ops;
		fmt_rate(rate, sizeof(rate), v);
		if (f->progress)
			fprintf(f->progress, "  fork %u/%u  iteration  %u/%u: %s %s\n", f->k,
				spec->opt.forks, m->index + 1, spec->opt.iterations, rate,
				spec->wl->unit);
		break;
	case MSG_RTSTATS:
		if (!f->probed)
			break;
		stats_add(&res->rt, &m->rt);
		res->threads_created += m->ops;
		if (m->workers > res->workers_started)
			res->workers_started = m->workers;
		if (m->active > res->workers_active)
			res->workers_active = m->active;
		res->adaptations += m->adaptations;
		break;
	case MSG_METRIC:
		/* kept and printed as strings: the fork's must end in the struct */
		m->metric.name[sizeof(m->metric.name) - 1] = '\0';
		m->metric.unit[sizeof(m->metric.unit) - 1] = '\0';
		metric_add(res, m, f->k - 1, spec->opt.forks);
		break;
	case MSG_WORKER:
		if (f->probed && m->index < RT_MAX_WORKERS) {
			stats_add(&res->per_worker[m->index], &m->rt);
			for (unsigned w = 0; w < RT_MAX_WORKERS; w++)
				res->steals[m->index * RT_MAX_WORKERS + w] += m->row[w];
			if (m->index + 1 > res->nper)
				res->nper = m->index + 1;
		}
		break;
	}
	return 0;
}

/* Why fork k ended as it did, from its wait status, into res->error when nothing said so
 * before (ended: it said goodbye). -EIO when it failed, else 0. */
static int fork_status(struct hx_result *res, unsigned k, int status, bool ended,
		       const char *self)
{
	if (!res->error[0]) {
		if (WIFSIGNALED(status))
			snprintf(res->error, sizeof(res->error), "fork %u: killed by signal %d (%s)", k,
				 WTERMSIG(status), strsignal(WTERMSIG(status)));
		else if (WEXITSTATUS(status) == 127 && !ended)
			snprintf(res->error, sizeof(res->error), "fork %u: could not execute %s", k,
				 self);
		else if (WEXITSTATUS(status) || !ended)
			snprintf(res->error, sizeof(res->error),
				 "fork %u: exited with status %d before it finished", k,
				 WEXITSTATUS(status));
	}
	return res->error[0] ? -EIO : 0;
}

static int run_fork(const struct hx_spec *spec, const char *self, const struct hx_hooks *hooks,
		    struct hx_result *res, unsigned k, FILE *progress, const sigset_t *wait_mask)
{
	/* the longest a fork may stay silent: setup or an iteration and its last op */
	int timeout_ms = (int)(spec->opt.time_s * 20000) + 60000;
	char **argv = NULL;
	int sv[2] = { -1, -1 }, err, status, r;
	bool ended = false, measuring = false, begun = false;
	/* a fork without the probes: its figures other than throughput are not the run's */
	struct fork_run f = { .spec = spec, .res = res, .k = k, .progress = progress,
			      .probed = !hooks || !hooks->probed || hooks->probed(hooks->ctx, k) };
	struct hx_spec *bare = NULL;
	struct msg m;
	pid_t pid, self_pid = getpid();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		snprintf(res->error, sizeof(res->error), "fork %u: socketpair: %s", k, strerror(errno));
		return err;
	}
	if (!f.probed && spec->events[0]) {
		/* the same benchmark, counting nothing */
		bare = malloc(sizeof(*bare));
		if (!bare) {
			err = -ENOMEM;
			snprintf(res->error, sizeof(res->error), "fork %u: out of memory", k);
			goto out_close;
		}
		*bare = *spec;
		bare->events[0] = '\0';
	}
	err = hx_fork_argv(bare ? bare : spec, sv[1], &argv);
	if (err) {
		snprintf(res->error, sizeof(res->error), "fork %u: out of memory", k);
		goto out_close;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		snprintf(res->error, sizeof(res->error), "fork %u: fork: %s", k, strerror(errno));
		goto out_close;
	}
	if (pid == 0) {
		/* The fork dies with the controller, which alone reads it: on its own it
		 * would notice only at its next message, an iteration (--time) later. The
		 * signal comes when the thread that forked exits, and this one lives until
		 * the fork is reaped; a controller gone before the prctl left us another
		 * parent already. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != self_pid)
			_exit(127);
		/* the fork keeps its end of the pair across exec, and takes signals */
		fcntl(sv[1], F_SETFD, 0);
		sigprocmask(SIG_SETMASK, wait_mask, NULL);
		execv(self, argv);
		_exit(127);
	}
	close(sv[1]);
	sv[1] = -1;

	for (;;) {
		err = msg_recv(sv[0], &m, timeout_ms, wait_mask);
		if (err == -EINTR) {
			/* keep the samples of the iterations measured so far: the probes read
			 * the fork's maps, so drain them while it still lives */
			if (measuring && hooks && hooks->measure_end)
				hooks->measure_end(hooks->ctx, pid);
			goto out_kill;
		}
		if (err == -ETIMEDOUT) {
			kill(pid, SIGKILL);
			snprintf(res->error, sizeof(res->error),
				 "fork %u: no word for %d s (a deadlock?); killed it", k,
				 timeout_ms / 1000);
			break;
		}
		if (err) {
			err = 0; /* end of stream: the exit status says why */
			break;
		}
		switch (m.type) {
		case MSG_MEASURE:
			begun = true;
			if (hooks && hooks->measure_begin &&
			    (err = hooks->measure_begin(hooks->ctx, pid, m.tls_off))) {
				snprintf(res->error, sizeof(res->error), "fork %u: probes: %s", k,
					 strerror(-err));
				goto out_kill;
			}
			measuring = true;
			m.type = MSG_GO;
			msg_send(sv[0], &m);
			break;
		case MSG_END:
			if (hooks && hooks->measure_end &&
			    (err = hooks->measure_end(hooks->ctx, pid))) {
				snprintf(res->error, sizeof(res->error), "fork %u: probes: %s", k,
					 strerror(-err));
				goto out_kill;
			}
			measuring = false;
			ended = true;
			m.type = MSG_BYE;
			msg_send(sv[0], &m);
			break;
		case MSG_ERROR:
			snprintf(res->error, sizeof(res->error), "fork %u: %s", k, m.text);
			break;
		default:
			if ((err = fork_figures(&f, &m)))
				goto out_kill;
		}
		if (m.type == MSG_ERROR)
			break;
	}
	goto out_wait;

out_kill:
	kill(pid, SIGKILL);
out_wait:
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* the probes let go of the fork only now that it is reaped (hx_hooks.fork_gone) */
	if (begun && hooks && hooks->fork_gone && (r = hooks->fork_gone(hooks->ctx, pid)) &&
	    !err && !res->error[0]) {
		err = r;
		snprintf(res->error, sizeof(res->error), "fork %u: probes: %s", k, strerror(-r));
	}
	if (!err)
		err = fork_status(res, k, status, ended, self);
out_close:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	hx_fork_argv_free(argv);
	free(bare);
	return err;
}

/* After an interrupt before or during fork k: summarize the iterations measured. */
static int interrupted_result(const struct hx_spec *spec, struct hx_result *res, unsigned k,
			      bool during)
{
	const char *abbrev = sigabbrev_np(interrupted);

	steals_compact(res);
	counters_finish(res);
	metric_medians(res, spec->opt.forks, k - 1);
	memset(&res->summary, 0, sizeof(res->summary));
	if (res->nsamples)
		an_summarize(res->samples, res->nsamples, 0.999, &res->summary);
	snprintf(res->error, sizeof(res->error),
		 "interrupted by SIG%s %s fork %u of %u (%zu of %u measured iterations)",
		 abbrev ? abbrev : "?", during ? "during" : "before", k, spec->opt.forks,
		 res->nsamples, spec->opt.forks * spec->opt.iterations);
	return -EINTR;
}

static int run_forks(const struct hx_spec *spec, const char *self, const struct hx_hooks *hooks,
		     struct hx_result *res, FILE *progress, const sigset_t *wait_mask)
{
	int err;

	for (unsigned k = 1; k <= spec->opt.forks; k++) {
		if (interrupted)
			return interrupted_result(spec, res, k, false);
		err = run_fork(spec, self, hooks, res, k, progress, wait_mask);
		if (err == -EINTR)
			return interrupted_result(spec, res, k, true);
		if (err)
			return err;
	}
	steals_compact(res);
	counters_finish(res);
	metric_medians(res, spec->opt.forks, spec->opt.forks);
	err = an_summarize(res->samples, res->nsamples, 0.999, &res->summary);
	if (err)
		snprintf(res->error, sizeof(res->error), "no measured iterations");
	return err;
}

int hx_run(const struct hx_spec *spec, const char *self, const struct hx_hooks *hooks,
	   struct hx_result *res, FILE *progress)
{
	size_t total = (size_t)spec->opt.forks * spec->opt.iterations;
	sigset_t block, wait_mask;
	int err = 0;

	memset(res, 0, sizeof(*res));
	if (!spec->opt.forks || !spec->opt.iterations || !(spec->opt.time_s > 0)) {
		snprintf(res->error, sizeof(res->error),
			 "nothing to measure: forks, iterations and time must be positive");
		return -EINVAL;
	}
	res->samples = calloc(total, sizeof(*res->samples));
	res->iter_rt = calloc(total, sizeof(*res->iter_rt));
	res->per_worker = calloc(RT_MAX_WORKERS, sizeof(*res->per_worker));
	res->steals = calloc((size_t)RT_MAX_WORKERS * RT_MAX_WORKERS, sizeof(*res->steals));
	res->wl_per_fork = calloc((size_t)WL_MAX_METRICS * spec->opt.forks, sizeof(double));
	res->iter_counters = calloc(total * PROBE_COUNTERS_MAX, sizeof(double));
	if (!res->samples || !res->iter_rt || !res->per_worker || !res->steals ||
	    !res->wl_per_fork || !res->iter_counters) {
		hx_result_free(res);
		snprintf(res->error, sizeof(res->error), "out of memory");
		return -ENOMEM;
	}
	if (spec->events[0]) {
		char names[PROBE_COUNTERS_MAX][PROBE_COUNTER_NAME_LEN];
		int n = probe_counters_split(spec->events, names, res->error, sizeof(res->error));

		if (n < 0) {
			hx_result_free(res);
			return n;
		}
		res->ncounters = (unsigned)n;
		for (unsigned i = 0; i < res->ncounters; i++) {
			memcpy(res->counters[i].name, names[i], sizeof(res->counters[i].name));
			res->counters[i].counted = true;
		}
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &wait_mask);
	err = run_forks(spec, self, hooks, res, progress, &wait_mask);
	sigprocmask(SIG_SETMASK, &wait_mask, NULL);
	return err;
}

void hx_result_free(struct hx_result *res)
{
	if (!res)
		return;
	free(res->samples);
	free(res->iter_rt);
	free(res->per_worker);
	free(res->steals);
	free(res->wl_per_fork);
	free(res->iter_counters);
	res->iter_counters = NULL;
	res->wl_per_fork = NULL;
	res->samples = NULL;
	res->iter_rt = NULL;
	res->per_worker = NULL;
	res->steals = NULL;
}

/* ---- the fork ------------------------------------------------------------------------- */

static uint64_t op_task(void *arg)
{
	struct wl_ctx *ctx = arg;

	return ctx->desc->op(ctx);
}

/* Run ops for time_s; every result is checked. 0, or -EIO with the reason in err. */
static int iteration(struct wl_ctx *ctx, double time_s, uint64_t *ops, uint64_t *ns, char *err,
		     size_t errlen)
{
	uint64_t t0 = rt_clock_ns(), limit = (uint64_t)(time_s * 1e9), t, n = 0;

	do {
		struct rt_task *task = rt_submit(ctx->sched, op_task, ctx);
		uint64_t r;

		if (!task) {
			snprintf(err, errlen, "cannot start a task: %s", strerror(errno));
			return -EIO;
		}
		r = rt_join(task);
		if (!ctx->desc->check(ctx, r, err, errlen))
			return -EIO;
		n++;
		t = rt_clock_ns();
	} while (t - t0 < limit);
	*ops = n;
	*ns = t - t0;
	return 0;
}

static void fork_error(int fd, const char *fmt, ...)
{
	struct msg m = { .type = MSG_ERROR };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	msg_send(fd, &m);
}

static int await(int fd, uint32_t type)
{
	struct msg m;
	int err = msg_recv(fd, &m, -1, NULL);

	if (err)
		return err;
	return m.type == type ? 0 : -EPROTO;
}

/* Each worker's counters and steal row at the start of measurement, to send the
 * differences at the end. */
struct worker_marks {
	struct rt_worker_stats stats[RT_MAX_WORKERS];
	uint64_t steals[RT_MAX_WORKERS][RT_MAX_WORKERS];
	unsigned n;
};

static void marks_take(struct rt_sched *s, struct worker_marks *wm)
{
	wm->n = rt_sched_stats(s, wm->stats, RT_MAX_WORKERS);
	for (unsigned t = 0; t < wm->n; t++)
		for (unsigned v = 0; v < wm->n; v++)
			wm->steals[t][v] = rt_sched_steals_from(s, t, v);
}

/* One MSG_WORKER per worker: what it did since marks_take(). */
/* The runtime probe's window marks (rt:window), fired with the counters' reads. */
static void window_open(void *ctx)
{
	(void)ctx;
	RT_USDT(window, 1);
}

static void window_close(void *ctx)
{
	(void)ctx;
	RT_USDT(window, 0);
}

static int send_workers(int fd, struct rt_sched *s, const struct worker_marks *before)
{
	struct worker_marks *now = malloc(sizeof(*now));
	struct msg *m = malloc(sizeof(*m));
	int err = 0;

	if (!now || !m) {
		err = -ENOMEM;
		goto out_free;
	}
	marks_take(s, now);
	for (unsigned i = 0; i < now->n && !err; i++) {
		memset(m, 0, sizeof(*m));
		m->type = MSG_WORKER;
		m->index = i;
		/* a worker added during measurement counts from zero */
		if (i < before->n)
			stats_sub(&m->rt, &now->stats[i], &before->stats[i]);
		else
			m->rt = now->stats[i];
		for (unsigned v = 0; v < now->n; v++)
			m->row[v] = now->steals[i][v] -
				    (i < before->n && v < before->n ? before->steals[i][v] : 0);
		err = msg_send(fd, m);
	}
out_free:
	free(now);
	free(m);
	return err;
}

/* One MSG_EVENT per counter: counted, or why not. Counters that could not be opened at
 * all (libpfm4 would not start) are each not counted, for the reason in why. */
static int send_events(int fd, const struct hx_spec *spec, const struct probe_counters *ctr,
		       const char *why)
{
	char names[PROBE_COUNTERS_MAX][PROBE_COUNTER_NAME_LEN], err[160];
	int n = probe_counters_split(spec->events, names, err, sizeof(err));
	struct msg m;

	for (int i = 0; i < n; i++) {
		memset(&m, 0, sizeof(m));
		m.type = MSG_EVENT;
		m.index = (uint32_t)i;
		m.counted = ctr && probe_counters_counted(ctr, (unsigned)i);
		snprintf(m.text, sizeof(m.text), "%s", ctr ? probe_counters_note(ctr, (unsigned)i)
							   : why);
		if (msg_send(fd, &m))
			return -EPIPE;
	}
	return 0;
}

int hx_fork_main(const struct hx_spec *spec, int fd)
{
	struct wl_ctx ctx = { .desc = spec->wl };
	struct probe_counter_value ctr_before[PROBE_COUNTERS_MAX], ctr_after[PROBE_COUNTERS_MAX];
	struct probe_counters *ctr = NULL;
	uint64_t ctr_open_ns = 0;
	char ctr_why[256] = "";
	struct rt_worker_stats before, after, iter_before;
	struct worker_marks *marks = NULL;
	char err[sizeof(((struct msg *)0)->text)];
	struct msg m;
	int status = 1, rc;

	memcpy(ctx.values, spec->values, sizeof(ctx.values));
	/* before the runtime and the workload start any thread, so that each inherits the
	 * counters: a read then sums every thread of this process but none of the
	 * controller's */
	if (spec->events[0]) {
		uint64_t t0 = rt_clock_ns();

		/* the counters' attach, timed as the other probes' open-load-attach is */
		ctr = probe_counters_open(spec->events, ctr_why, sizeof(ctr_why));
		if (ctr)
			ctr_open_ns = rt_clock_ns() - t0;
	}
	ctx.sched = rt_sched_new(&spec->rt);
	if (!ctx.sched) {
		fork_error(fd, "cannot start the runtime (preset %s): %s", spec->rt.preset,
			   strerror(errno));
		probe_counters_free(ctr);
		return 1;
	}
	if (spec->wl->setup && spec->wl->setup(&ctx, err, sizeof(err))) {
		fork_error(fd, "%s", err);
		goto out_sched;
	}

	memset(&m, 0, sizeof(m));
	m.type = MSG_HELLO;
	m.pid = getpid();
	m.tls_off = rt_phase_tls_offset();
	m.workers = rt_sched_workers(ctx.sched);
	m.ns = ctr_open_ns;
	if (msg_send(fd, &m))
		goto out_teardown;
	if (spec->events[0] && send_events(fd, spec, ctr, ctr_why))
		goto out_teardown;

	for (unsigned i = 0; i < spec->opt.warmup; i++) {
		memset(&m, 0, sizeof(m));
		if (iteration(&ctx, spec->opt.time_s, &m.ops, &m.ns, err, sizeof(err))) {
			fork_error(fd, "warm-up iteration %u: %s", i + 1, err);
			goto out_teardown;
		}
		m.type = MSG_WARMUP;
		m.index = i;
		if (msg_send(fd, &m))
			goto out_teardown;
	}

	memset(&m, 0, sizeof(m));
	m.type = MSG_MEASURE;
	m.pid = getpid();
	m.tls_off = rt_phase_tls_offset();
	if (msg_send(fd, &m) || await(fd, MSG_GO))
		goto out_teardown;

	marks = malloc(sizeof(*marks));
	if (!marks) {
		fork_error(fd, "out of memory");
		goto out_teardown;
	}
	marks_take(ctx.sched, marks);
	/* the runtime probe counts events between the two window marks, to set them beside
	 * the counters read here: each mark is fired with its read, no park half-counted */
	rt_sched_stats_edge(ctx.sched, &before, window_open, NULL);
	for (unsigned i = 0; i < spec->opt.iterations; i++) {
		memset(&m, 0, sizeof(m));
		rt_sched_stats_total(ctx.sched, &iter_before);
		if (ctr && (rc = probe_counters_read(ctr, ctr_before))) {
			fork_error(fd, "iteration %u: counters: read: %s", i + 1, strerror(-rc));
			goto out_teardown;
		}
		if (iteration(&ctx, spec->opt.time_s, &m.ops, &m.ns, err, sizeof(err))) {
			fork_error(fd, "iteration %u: %s", i + 1, err);
			goto out_teardown;
		}
		if (ctr && (rc = probe_counters_read(ctr, ctr_after))) {
			fork_error(fd, "iteration %u: counters: read: %s", i + 1, strerror(-rc));
			goto out_teardown;
		}
		if (ctr) {
			m.nctr = probe_counters_count(ctr);
			probe_counters_delta(ctr_after, ctr_before, m.ctr, m.nctr);
		}
		rt_sched_stats_total(ctx.sched, &after);
		stats_sub(&m.rt, &after, &iter_before);
		m.type = MSG_ITER;
		m.index = i;
		if (msg_send(fd, &m))
			goto out_teardown;
	}
	rt_sched_stats_edge(ctx.sched, &after, window_close, NULL);

	memset(&m, 0, sizeof(m));
	m.type = MSG_RTSTATS;
	stats_sub(&m.rt, &after, &before);
	m.ops = rt_sched_threads_created(ctx.sched);
	m.workers = rt_sched_workers_started(ctx.sched);
	m.active = rt_sched_workers_active(ctx.sched);
	m.adaptations = rt_sched_adaptations(ctx.sched);
	if (msg_send(fd, &m) || send_workers(fd, ctx.sched, marks))
		goto out_teardown;
	if (spec->wl->report) {
		struct wl_metric wm[WL_MAX_METRICS];
		size_t n = spec->wl->report(&ctx, wm, WL_MAX_METRICS);

		for (size_t i = 0; i < n && i < WL_MAX_METRICS; i++) {
			memset(&m, 0, sizeof(m));
			m.type = MSG_METRIC;
			m.metric = wm[i];
			if (msg_send(fd, &m))
				goto out_teardown;
		}
	}
	m.type = MSG_END;
	if (msg_send(fd, &m) || await(fd, MSG_BYE))
		goto out_teardown;
	status = 0;

out_teardown:
	free(marks);
	if (spec->wl->teardown)
		spec->wl->teardown(&ctx);
out_sched:
	rt_sched_free(ctx.sched);
	probe_counters_free(ctr);
	return status;
}
