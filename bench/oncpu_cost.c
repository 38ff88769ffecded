/*
 * oncpu_cost: what the oncpu probe costs per sample, beside perf record -g sampling the
 * same child at the same frequencies, measured side by side in one run.
 *
 *   oncpu_cost [ROUNDS [SECONDS]]     (as root; perf on PATH for its rows)
 *
 * A child process spins on arithmetic, pinned to one CPU, and times itself with the TSC
 * every SPIN_CHUNK iterations: a chunk that took longer than GAP_NS was preempted (the
 * vCPU by the host, or the child by another task) and is left out; every other chunk,
 * the time the sampling interrupts took out of it included, is kept. A window's rate is
 * the kept iterations per kept nanosecond, so the more a sample costs, the fewer
 * iterations a nanosecond holds, whatever the kernel's IRQ time accounting, while
 * preemptions are in neither count (on a virtual machine that reports no steal time, as
 * here, the host's are in the child's CPU clock, and move it by several % from one
 * window to the next). What is measured is what a sample costs the task it interrupts:
 * perf's reading and writing of its samples, and the probe's drains, run on the other
 * CPUs and outside the windows.
 *
 * Each round (ROUNDS, default 240) measures a window of SECONDS (default 0.05) under each
 * condition, each round starting at the next: nothing; the probe at 99 Hz and at 999 Hz,
 * one probe object per frequency opened before the first round, started on the child
 * and stopped and drained around each window; `perf record -g -e cpu-clock -p CHILD` at
 * 999 and 99 Hz, one perf per frequency attached before the first round with its events
 * off, turned on and off around each window through its control pipe (each command
 * answered before the window opens or the next step runs), its samples those it
 * timestamped inside the window. Attaching is in no window. Each condition's rate over
 * the same round's nothing-rate is its ratio; the mean over rounds with the half-width
 * of its 99.9% interval (Student's t) is printed as a Markdown table, with the samples
 * each took per second of the child's running time, the cost per sample, and the goals
 * judged from the intervals. Progress, a line a round, on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "analysis/analysis.h"
#include "probes/probes.h"

#define MAX_ROUNDS 1000
#define CONFIDENCE 0.999
/* iterations between two reads of the TSC: about a microsecond of spinning, so that a
 * sample's handling (10 to 50 µs here) falls in few chunks and the reads cost ~1% */
#define SPIN_CHUNK 1024
/* a chunk longer than this was preempted, not interrupted: measured here, a cpu-clock
 * sample under perf record -g or the probe takes 10 to 50 µs, the guest's timeslices and
 * the host's preemptions a millisecond or more */
#define GAP_NS 500000
/* how long perf may take to answer a command on its control pipe */
#define PERF_ANSWER_MS 10000
/* the goal for the probe at 99 Hz, in % of the child's running time */
#define GOAL_99_PCT 1.0

enum { C_NONE, C_P99, C_P999, C_PERF999, C_PERF99, NCOND };
static const char *const cond_names[NCOND] = {
	"nothing",
	"oncpu, 99 Hz, the child its target",
	"oncpu, 999 Hz, the child its target",
	"`perf record -g -F 999 -e cpu-clock -p CHILD`",
	"`perf record -g -F 99 -e cpu-clock -p CHILD`",
};
static const char *const cond_short[NCOND] = {
	"nothing", "oncpu 99 Hz", "oncpu 999 Hz", "perf 999 Hz", "perf 99 Hz",
};
static const unsigned cond_freq[NCOND] = { 0, 99, 999, 999, 99 };

/* What the child publishes, in a page shared with it: a sequence count, odd while it
 * writes, around the four totals, so that a reader takes them from one chunk. */
struct spin_shared {
	uint64_t seq;
	uint64_t iters, ticks;    /* of the chunks kept */
	uint64_t gaps, gap_ticks; /* the chunks left out, and their ticks */
};

/* One end of a window: the child's totals and when (monotonic ns). */
struct reading {
	struct spin_shared s;
	uint64_t mono_ns;
};

/* A perf record attached to the child for the whole run, its events turned on and off
 * through its control pipe. */
struct perf_rec {
	pid_t pid;
	int ctl, ack;    /* our ends: commands in, answers out */
	char file[64];
	char err_file[64]; /* its stderr */
	char why[256];   /* why it is not running, where it is not */
};

/* One condition's windows, round by round, and what they add up to. */
struct cond {
	/* per round: the rate (kept iterations per kept tick; 0: not measured), the
	 * window's ends (CLOCK_MONOTONIC ns), the samples taken in it */
	double rate[MAX_ROUNDS];
	uint64_t from[MAX_ROUNDS], to[MAX_ROUNDS], samples[MAX_ROUNDS];
	/* all rounds: the kept ticks, the stretches left out and their ticks, the windows' ns */
	double kept_ticks, gaps, gap_ticks, window_ns;
	struct probe_oncpu *probe;   /* the probe's conditions: one object each */
	uint64_t runs, prog_ns, lost; /* its program's runs and ns, samples not kept whole */
	struct perf_rec perf;        /* perf's conditions: one perf record each */
	bool perf_up;
	uint64_t perf_total, perf_lost; /* samples in its file, its LOST records */
	struct an_summary cost;      /* % of the child's time, against the round's nothing */
	double sps;                  /* samples per second of the child's kept time */
};

struct bench {
	int rounds;
	double secs;
	int cpu;                     /* the child's */
	pid_t child;
	double ticks_ns;             /* TSC ticks per ns */
	struct spin_shared *spin;    /* in a page shared with the child */
	struct cond c[NCOND];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC's ticks per ns (the child's clock), measured against CLOCK_MONOTONIC. */
static double tsc_per_ns(void)
{
	uint64_t m0 = mono_ns(), t0 = __rdtsc(), m1, t1;
	struct timespec ts = { 0, 50000000 };

	nanosleep(&ts, NULL);
	m1 = mono_ns();
	t1 = __rdtsc();
	return (double)(t1 - t0) / (double)(m1 - m0);
}

/* The child: spins for ever, publishing its totals after every chunk. It is the only
 * writer, so it keeps them in t and stores them. */
static void spin_main(struct spin_shared *spin, int cpu, uint64_t gap_ticks)
{
	struct spin_shared t = {};
	uint64_t x = 1, t0, now, d;
	cpu_set_t set;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(1);
	t0 = __rdtsc();
	for (;;) {
		for (int i = 0; i < SPIN_CHUNK; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* one multiply-add per iteration, never folded into fewer */
			__asm__ volatile("" : "+r"(x));
		}
		now = __rdtsc();
		d = now - t0;
		t0 = now;
		if (d < gap_ticks) {
			t.iters += SPIN_CHUNK;
			t.ticks += d;
		} else {
			t.gaps++;
			t.gap_ticks += d;
		}
		/* odd while the totals change: the release fence orders it before them, and
		 * pairs with the acquire fence in read_spin() */
		__atomic_store_n(&spin->seq, ++t.seq, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&spin->iters, t.iters, __ATOMIC_RELAXED);
		__atomic_store_n(&spin->ticks, t.ticks, __ATOMIC_RELAXED);
		__atomic_store_n(&spin->gaps, t.gaps, __ATOMIC_RELAXED);
		__atomic_store_n(&spin->gap_ticks, t.gap_ticks, __ATOMIC_RELAXED);
		/* even again, after the totals; pairs with the acquire load of seq there */
		__atomic_store_n(&spin->seq, ++t.seq, __ATOMIC_RELEASE);
	}
}

/* The child's totals, all from between two of its chunks. */
static void read_spin(const struct spin_shared *spin, struct reading *r)
{
	uint64_t s0, s1;

	do {
		s0 = __atomic_load_n(&spin->seq, __ATOMIC_ACQUIRE);
		r->s.iters = __atomic_load_n(&spin->iters, __ATOMIC_RELAXED);
		r->s.ticks = __atomic_load_n(&spin->ticks, __ATOMIC_RELAXED);
		r->s.gaps = __atomic_load_n(&spin->gaps, __ATOMIC_RELAXED);
		r->s.gap_ticks = __atomic_load_n(&spin->gap_ticks, __ATOMIC_RELAXED);
		/* the totals before seq's second read; pairs with the child's release */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s1 = __atomic_load_n(&spin->seq, __ATOMIC_RELAXED);
	} while ((s0 & 1) || s0 != s1);
	r->mono_ns = mono_ns();
}

static double window_rate(const struct reading *a, const struct reading *b)
{
	return b->s.ticks > a->s.ticks ?
		       (double)(b->s.iters - a->s.iters) / (double)(b->s.ticks - a->s.ticks) : 0;
}

static void sleep_ns(long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* One window of ns nanoseconds: its readings at either end. */
static void window(const struct spin_shared *spin, long ns, struct reading *a,
		   struct reading *b)
{
	read_spin(spin, a);
	sleep_ns(ns);
	read_spin(spin, b);
}

/* The probe's window: started on the child before the first reading, stopped after the
 * last, drained so that its maps never fill; its samples to *samples, its program's
 * runs and time to *runs and *prog_ns, what it could not keep whole to *lost. */
static int probe_window(struct probe_oncpu *p, pid_t child, const struct spin_shared *spin,
			long ns, struct reading *a, struct reading *b, uint64_t *samples,
			uint64_t *runs, uint64_t *prog_ns, uint64_t *lost)
{
	struct probe_target t = { .tgid = child };
	struct probe_oncpu_stats st = {};
	uint64_t r0 = 0, n0 = 0, r1 = 0, n1 = 0;
	int err, serr;

	probe_oncpu_prog_stats(p, &r0, &n0);
	err = probe_oncpu_start(p, &t);
	if (err)
		return err;
	window(spin, ns, a, b);
	err = probe_oncpu_stop(p);
	serr = probe_oncpu_drain(p, NULL, NULL, &st);
	if (!err)
		err = serr;
	if (err)
		return err;
	probe_oncpu_prog_stats(p, &r1, &n1);
	*samples = st.samples;
	*runs += r1 - r0;
	*prog_ns += n1 - n0;
	*lost += st.ustack_full + st.kstack_full + st.ustack_errors + st.kstack_errors +
		 st.counts_full;
	return 0;
}

/* Send cmd to perf and wait for its answer. 0, or -errno (-ETIMEDOUT: no answer in
 * PERF_ANSWER_MS; -EPIPE: perf is gone). */
static int perf_cmd(struct perf_rec *r, const char *cmd)
{
	struct pollfd pfd = { .fd = r->ack, .events = POLLIN };
	char line[16];
	size_t len = strlen(cmd);
	ssize_t n;

	errno = 0;
	if (write(r->ctl, cmd, len) != (ssize_t)len)
		return errno ? -errno : -EIO;
	n = poll(&pfd, 1, PERF_ANSWER_MS);
	if (n < 0)
		return -errno;
	if (!n)
		return -ETIMEDOUT;
	n = read(r->ack, line, sizeof(line) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EPIPE;
	line[n] = '\0';
	return strncmp(line, "ack", 3) ? -EPROTO : 0;
}

/* perf's first line on stderr, into r->why after what. */
static void perf_why(struct perf_rec *r, const char *what)
{
	char line[160] = "", *l;
	FILE *f = fopen(r->err_file, "r");

	if (f) {
		while (fgets(line, sizeof(line), f) && strspn(line, " \t\n") == strlen(line))
			;
		fclose(f);
	}
	line[strcspn(line, "\n")] = '\0';
	l = line + strspn(line, " \t");
	/* a cell of the table: no column separator in it */
	for (char *q = l; *q; q++)
		if (*q == '|')
			*q = '/';
	snprintf(r->why, sizeof(r->why), "%s%s%s", what, *l ? ": perf said: " : "", l);
}

/* perf record -g sampling pid at freq into r->file, its events off until enabled
 * (-D -1), its timestamps on CLOCK_MONOTONIC so that its samples can be matched with the
 * windows. It answers on its control pipe once it has attached. 0, or -errno with r->why
 * said. */
static int perf_open(struct perf_rec *r, pid_t pid, unsigned freq)
{
	int ctl[2], ack[2], err;
	char p[32], f[32], control[64];

	r->pid = -1;
	r->ctl = r->ack = -1;
	snprintf(r->file, sizeof(r->file), "/tmp/oncpu_cost.%d.%u.data", (int)getpid(), freq);
	snprintf(r->err_file, sizeof(r->err_file), "/tmp/oncpu_cost.%d.%u.err", (int)getpid(),
		 freq);
	if (pipe2(ctl, O_CLOEXEC)) {
		err = -errno;
		goto out_why;
	}
	if (pipe2(ack, O_CLOEXEC)) {
		err = -errno;
		goto out_close_ctl;
	}
	r->pid = fork();
	if (r->pid < 0) {
		err = -errno;
		goto out_close_ack;
	}
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* perf's ends are the only ones it keeps across exec */
		fcntl(ctl[0], F_SETFD, 0);
		fcntl(ack[1], F_SETFD, 0);
		snprintf(p, sizeof(p), "%d", (int)pid);
		snprintf(f, sizeof(f), "%u", freq);
		snprintf(control, sizeof(control), "fd:%d,%d", ctl[0], ack[1]);
		if (!freopen(r->err_file, "w", stderr) || !freopen("/dev/null", "w", stdout))
			_exit(127);
		execlp("perf", "perf", "record", "-q", "--no-buildid", "-g", "-F", f, "-e",
		       "cpu-clock", "-k", "mono", "-D", "-1", "--control", control, "-o", r->file,
		       "-p", p, (char *)NULL);
		fprintf(stderr, "perf: %s\n", strerror(errno));
		_exit(127);
	}
	close(ctl[0]);
	close(ack[1]);
	r->ctl = ctl[1];
	r->ack = ack[0];
	/* the events are off already: its answer says that it has attached */
	err = perf_cmd(r, "disable\n");
	if (err) {
		char what[96];

		snprintf(what, sizeof(what), "perf record did not answer on its control pipe (%s)",
			 strerror(-err));
		perf_why(r, what);
		return err;
	}
	return 0;

out_close_ack:
	close(ack[0]);
	close(ack[1]);
out_close_ctl:
	close(ctl[0]);
	close(ctl[1]);
out_why:
	snprintf(r->why, sizeof(r->why), "perf record could not start: %s", strerror(-err));
	return err;
}

/* Stop perf (it writes its file and exits on SIGINT). 0, or -ECHILD when it failed. */
static int perf_close(struct perf_rec *r)
{
	int status = 0, err = 0;

	/* the pipes stay open until it has exited: it would read their end as an error */
	if (r->pid > 0) {
		kill(r->pid, SIGINT);
		if (waitpid(r->pid, &status, 0) < 0)
			err = -errno;
		r->pid = -1;
	}
	if (r->ctl >= 0)
		close(r->ctl);
	if (r->ack >= 0)
		close(r->ack);
	r->ctl = r->ack = -1;
	if (err)
		return err;
	return (WIFEXITED(status) && !WEXITSTATUS(status)) ||
			       (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) ?
		       0 :
		       -ECHILD;
}

static void perf_unlink(const struct perf_rec *r)
{
	unlink(r->file);
	unlink(r->err_file);
}

/* perf's window: its events turned on (and that answered) before the first reading,
 * off after the last. */
static int perf_window(struct perf_rec *r, const struct spin_shared *spin, long ns,
		       struct reading *a, struct reading *b)
{
	int err = perf_cmd(r, "enable\n");

	if (err)
		return err;
	window(spin, ns, a, b);
	return perf_cmd(r, "disable\n");
}

/* The index of the first of the sorted times t[0..n) after x. */
static size_t first_after(const uint64_t *t, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid] <= x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* perf's samples in each of c's measured windows [from, to] (CLOCK_MONOTONIC ns), read
 * from its file; its samples in all and its LOST records. 0, or -errno when the file could
 * not be read. */
static int perf_count(struct cond *c, int rounds)
{
	char cmd[160], line[256];
	uint64_t *t = NULL;
	size_t n = 0, cap = 0;
	FILE *f;
	int err = 0;

	snprintf(cmd, sizeof(cmd), "perf script -i %s -F time --ns --show-lost-events 2>/dev/null",
		 c->perf.file);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, frac;

		if (strstr(line, "LOST")) {
			c->perf_lost++;
			continue;
		}
		if (sscanf(line, " %llu.%9llu:", &s, &frac) != 2)
			continue;
		if (n == cap) {
			size_t more = cap ? 2 * cap : 4096;
			uint64_t *m = realloc(t, more * sizeof(*t));

			if (!m) {
				err = -ENOMEM;
				break;
			}
			t = m;
			cap = more;
		}
		t[n++] = (uint64_t)s * 1000000000u + frac;
	}
	if (pclose(f) && !err)
		err = -EIO;
	if (!err) {
		qsort(t, n, sizeof(*t), cmp_u64);
		c->perf_total = n;
		for (int i = 0; i < rounds; i++)
			if (c->rate[i] > 0)
				c->samples[i] = first_after(t, n, c->to[i]) -
						first_after(t, n, c->from[i] - 1);
	}
	free(t);
	return err;
}

/* Round i's window of condition k: measured, added up. 0, or -errno. */
static int measure(struct bench *b, int k, int i)
{
	struct cond *c = &b->c[k];
	long ns = (long)(b->secs * 1e9);
	struct reading x, y;
	int err = 0;

	switch (k) {
	case C_NONE:
		window(b->spin, ns, &x, &y);
		break;
	case C_P99:
	case C_P999:
		err = probe_window(c->probe, b->child, b->spin, ns, &x, &y, &c->samples[i],
				   &c->runs, &c->prog_ns, &c->lost);
		break;
	default:
		if (!c->perf_up)
			return 0;
		err = perf_window(&c->perf, b->spin, ns, &x, &y);
		break;
	}
	if (err)
		return err;
	c->rate[i] = window_rate(&x, &y);
	c->from[i] = x.mono_ns;
	c->to[i] = y.mono_ns;
	c->kept_ticks += (double)(y.s.ticks - x.s.ticks);
	c->gaps += (double)(y.s.gaps - x.s.gaps);
	c->gap_ticks += (double)(y.s.gap_ticks - x.s.gap_ticks);
	c->window_ns += (double)(y.mono_ns - x.mono_ns);
	return 0;
}

/* Whether round i measured condition k and nothing, so that it has a ratio. */
static bool paired(const struct bench *b, int k, int i)
{
	return b->c[k].rate[i] > 0 && b->c[C_NONE].rate[i] > 0;
}

/* Each condition's cost in % of each round against that round's nothing, summarized, and
 * its samples per second of the child's kept time. */
static void summarize(struct bench *b)
{
	for (int k = C_P99; k < NCOND; k++) {
		struct cond *c = &b->c[k];
		double x[MAX_ROUNDS], n_samples = 0;
		size_t n = 0;

		for (int i = 0; i < b->rounds; i++) {
			if (!paired(b, k, i))
				continue;
			x[n++] = 100 * (1 - c->rate[i] / b->c[C_NONE].rate[i]);
			n_samples += (double)c->samples[i];
		}
		if (n)
			an_summarize(x, n, CONFIDENCE, &c->cost);
		c->sps = c->kept_ticks > 0 ? n_samples / (c->kept_ticks / b->ticks_ns / 1e9) : 0;
	}
}

/* The share of c's windows' time left out, in %. */
static double left_out(const struct bench *b, const struct cond *c)
{
	return c->window_ns > 0 ? 100 * c->gap_ticks / b->ticks_ns / c->window_ns : 0;
}

static void report_table(const struct bench *b)
{
	double gaps = 0;

	printf("A child spinning on arithmetic, pinned to CPU %d (this program and perf on the "
	       "others), timing itself with the TSC every %d iterations and leaving out the "
	       "stretches over %d µs (a preemption, of the vCPU by the host or of the child "
	       "by another task; a sample's handling takes tens of µs): a window's rate is "
	       "its iterations per nanosecond of the rest, the samples' handling included. "
	       "%d rounds of %.2f s per condition, interleaved, each round starting at the "
	       "next; the probes and perf attached throughout, each on only in its windows. "
	       "Each rate divided by the same round's nothing-rate: mean ± 99.9%% "
	       "half-width over the rounds (Student's t). Samples per second of the child's "
	       "running time: the probe's own count, perf's samples timestamped inside the "
	       "window; the cost per sample is the cost over them.\n\n",
	       b->cpu, SPIN_CHUNK, GAP_NS / 1000, b->rounds, b->secs);
	printf("| condition | samples/s | rate ÷ nothing | cost | µs per sample | "
	       "left out |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
	printf("| %s | | 1 | | | %.1f%% |\n", cond_names[C_NONE], left_out(b, &b->c[C_NONE]));
	for (int k = C_P99; k < NCOND; k++) {
		const struct cond *c = &b->c[k];

		gaps += c->gaps;
		if (k >= C_PERF999 && !c->perf_up) {
			printf("| %s | n/a: %s | | | | |\n", cond_names[k], c->perf.why);
			continue;
		}
		printf("| %s | %.0f | %.4f ± %.4f | %.3f%% ± %.3f | %.1f ± %.1f | %.1f%% |\n",
		       cond_names[k], c->sps, 1 - c->cost.mean / 100, c->cost.ci_half / 100,
		       c->cost.mean, c->cost.ci_half,
		       c->sps > 0 ? c->cost.mean / 100 / c->sps * 1e6 : NAN,
		       c->sps > 0 ? c->cost.ci_half / 100 / c->sps * 1e6 : NAN, left_out(b, c));
	}
	printf("\n*Left out*: the share of the windows' time in stretches over %d µs (%.0f of "
	       "them in all); a condition whose samples took that long would show more.\n",
	       GAP_NS / 1000, gaps + b->c[C_NONE].gaps);
	printf("The probe's program alone (the kernel's BPF run-time statistics; it runs on "
	       "every CPU and keeps the child's samples): ");
	for (int k = C_P99; k <= C_P999; k++) {
		const struct cond *c = &b->c[k];

		if (c->runs)
			printf("%.0f ns a run at %u Hz over %llu runs", (double)c->prog_ns /
			       (double)c->runs, cond_freq[k], (unsigned long long)c->runs);
		else
			printf("not known at %u Hz (the kernel would not turn them on)",
			       cond_freq[k]);
		printf(k < C_P999 ? "; " : ". ");
	}
	printf("Samples it could not keep whole (a full map, a failed walk): %llu at 99 Hz, "
	       "%llu at 999 Hz.\n",
	       (unsigned long long)b->c[C_P99].lost, (unsigned long long)b->c[C_P999].lost);
	for (int k = C_PERF999; k <= C_PERF99; k++)
		if (b->c[k].perf_up)
			printf("perf record at %u Hz: %llu samples in its file, those between its "
			       "windows' readings counted; %llu LOST records.\n", cond_freq[k],
			       (unsigned long long)b->c[k].perf_total,
			       (unsigned long long)b->c[k].perf_lost);
}

/* The goals, judged from the intervals. The probe against perf round by round: both are
 * divided by the same nothing, so the difference of their costs in a round leaves that
 * round's baseline out. */
static void report_goals(const struct bench *b)
{
	const struct cond *p99 = &b->c[C_P99], *perf = &b->c[C_PERF999];
	double lo = p99->cost.mean - p99->cost.ci_half, hi = p99->cost.mean + p99->cost.ci_half;

	printf("\nGoal, on the spinning child, the probe at 999 Hz costs no more than perf "
	       "record -g at 999 Hz: ");
	if (!perf->perf_up) {
		printf("not judged (%s).\n", perf->perf.why);
	} else {
		struct an_summary diff = {};
		double d[MAX_ROUNDS];
		size_t n = 0;

		for (int i = 0; i < b->rounds; i++)
			if (paired(b, C_P999, i) && paired(b, C_PERF999, i))
				d[n++] = 100 * (perf->rate[i] - b->c[C_P999].rate[i]) /
					 b->c[C_NONE].rate[i];
		if (n)
			an_summarize(d, n, CONFIDENCE, &diff);
		printf("**%s**%s: the probe's cost less perf's, round by round, %+.3f ± %.3f "
		       "points.\n", diff.mean <= 0 ? "met" : "not met",
		       !(fabs(diff.mean) > diff.ci_half) ? ", within noise (the interval holds 0)" :
							    "",
		       diff.mean, diff.ci_half);
	}
	printf("\nGoal, on the spinning child, the probe at 99 Hz costs ≤ %.0f%%: ", GOAL_99_PCT);
	if (hi <= GOAL_99_PCT)
		printf("**met**");
	else if (lo > GOAL_99_PCT)
		printf("**not met**");
	else
		printf("**not decided**, within noise (its interval holds %.0f%%)", GOAL_99_PCT);
	printf(": %.3f%% ± %.3f.\n", p99->cost.mean, p99->cost.ci_half);
}

/* A number argument in [lo, hi], or -1. */
static double parse_num(const char *s, double lo, double hi, bool integer)
{
	char *end;
	double v;

	errno = 0;
	v = integer ? (double)strtol(s, &end, 10) : strtod(s, &end);
	return errno || end == s || *end || !(v >= lo && v <= hi) ? -1 : v;
}

/* The child on the first CPU this process may use, everything else (this process, perf)
 * on the others, so that none of it takes the child's CPU. The child's CPU, or -errno. */
static int place(void)
{
	cpu_set_t all, rest;
	int cpu = -1;

	if (sched_getaffinity(0, sizeof(all), &all))
		return -errno;
	for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
		if (CPU_ISSET(c, &all))
			cpu = c;
	rest = all;
	CPU_CLR(cpu, &rest);
	if (CPU_COUNT(&rest) && sched_setaffinity(0, sizeof(rest), &rest))
		return -errno;
	return cpu;
}

int main(int argc, char **argv)
{
	/* short windows, many rounds: what disturbs a window on a shared machine comes in
	 * bursts of tens of ms, which fewer windows share */
	double rounds = argc > 1 ? parse_num(argv[1], 2, MAX_ROUNDS, true) : 240;
	double secs = argc > 2 ? parse_num(argv[2], 0.01, 60, false) : 0.05;
	bool have_perf = !system("perf --version >/dev/null 2>&1");
	char err_msg[256];
	struct bench *b;
	int ret = 1, err;

	if (argc > 3 || rounds < 0 || secs < 0) {
		fprintf(stderr, "oncpu_cost: usage: oncpu_cost [ROUNDS (2-%d) [SECONDS "
			"(0.01-60)]]: an interval needs two rounds\n", MAX_ROUNDS);
		return 2;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		fprintf(stderr, "oncpu_cost: out of memory\n");
		return 1;
	}
	b->rounds = (int)rounds;
	b->secs = secs;
	/* a command to a perf that has exited must fail, not kill this program */
	signal(SIGPIPE, SIG_IGN);
	b->cpu = place();
	if (b->cpu < 0) {
		fprintf(stderr, "oncpu_cost: placing the child on a CPU of its own: %s\n",
			strerror(-b->cpu));
		goto out_free_bench;
	}
	b->spin = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (b->spin == MAP_FAILED) {
		fprintf(stderr, "oncpu_cost: mmap: %s\n", strerror(errno));
		goto out_free_bench;
	}
	b->ticks_ns = tsc_per_ns();
	b->child = fork();
	if (b->child < 0) {
		fprintf(stderr, "oncpu_cost: fork: %s\n", strerror(errno));
		goto out_free_bench;
	}
	if (b->child == 0)
		spin_main(b->spin, b->cpu, (uint64_t)(GAP_NS * b->ticks_ns));

	/* one probe per frequency, opened (loaded, its cost measured) before any window */
	for (int k = C_P99; k <= C_P999; k++) {
		struct probe_oncpu_opts o = { .freq = cond_freq[k] };

		b->c[k].probe = probe_oncpu_open(&o, err_msg, sizeof(err_msg));
		if (!b->c[k].probe) {
			fprintf(stderr, "oncpu_cost: %s\n", err_msg);
			goto out_stop;
		}
	}
	/* one perf per frequency, attached with its events off */
	for (int k = C_PERF999; k <= C_PERF99; k++) {
		struct cond *c = &b->c[k];

		if (!have_perf) {
			snprintf(c->perf.why, sizeof(c->perf.why), "perf not on PATH");
		} else if (!perf_open(&c->perf, b->child, cond_freq[k])) {
			c->perf_up = true;
		} else {
			fprintf(stderr, "oncpu_cost: %s\n", c->perf.why);
			perf_close(&c->perf);
			perf_unlink(&c->perf);
		}
	}
	sleep_ns(200000000L); /* warm up: the child at full speed */

	for (int i = 0; i < b->rounds; i++) {
		/* each round starts at another condition, so that none always follows the
		 * same one (a drain, perf's answer) */
		for (int j = 0; j < NCOND; j++) {
			int k = (i + j) % NCOND;

			err = measure(b, k, i);
			if (err) {
				fprintf(stderr, "oncpu_cost: %s: %s\n", cond_names[k], strerror(-err));
				goto out_stop;
			}
		}
		fprintf(stderr, "oncpu_cost: round %d of %d, rate ÷ nothing:", i + 1, b->rounds);
		for (int k = C_P99; k < NCOND; k++)
			if (paired(b, k, i))
				fprintf(stderr, " %s %.4f", cond_short[k],
					b->c[k].rate[i] / b->c[C_NONE].rate[i]);
		fputc('\n', stderr);
	}

	/* perf's samples, from its files: those timestamped inside each window */
	for (int k = C_PERF999; k <= C_PERF99; k++) {
		struct cond *c = &b->c[k];
		char what[96];

		if (!c->perf_up)
			continue;
		err = perf_close(&c->perf);
		if (err) {
			snprintf(what, sizeof(what), "perf record failed at its end (%s)",
				 strerror(-err));
			perf_why(&c->perf, what);
		} else if ((err = perf_count(c, b->rounds))) {
			snprintf(c->perf.why, sizeof(c->perf.why), "perf record's file could not be "
				 "read (%s)", strerror(-err));
		}
		perf_unlink(&c->perf);
		c->perf_up = !err;
	}
	summarize(b);
	report_table(b);
	report_goals(b);
	ret = 0;

out_stop:
	for (int k = 0; k < NCOND; k++) {
		struct cond *c = &b->c[k];

		if (c->perf.pid > 0) {
			perf_close(&c->perf);
			perf_unlink(&c->perf);
		}
		probe_oncpu_free(c->probe);
	}
	kill(b->child, SIGKILL);
	waitpid(b->child, NULL, 0);
out_free_bench:
	free(b);
	return ret;
}
