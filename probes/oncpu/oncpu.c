/*
 * oncpu loader: opens, sizes, loads and attaches oncpu.bpf.c to one sampling perf
 * event per online CPU, turns sampling of one process on and off (the events
 * themselves, and the skeleton's mmapped .bss flag), and drains the kernel's aggregates
 * into probe_stack records. At open it measures the share of a CPU the frequency
 * costs and refuses one over the budget; at start and stop it reads the target's
 * process CPU clock, for the samples the frequency owes it.
 *
 * In the DWARF modes a reader thread, started and stopped with sampling, hands each
 * ring-buffer sample to the caller's dwarf_fn as it arrives, so the ring needs room for
 * a fraction of a second of samples, not for the whole measurement.
 *
 * Invariant kept by the drain: the counts handed to fn plus the DWARF samples handed to
 * dwarf_fn add up to the samples the kernel counted (stats->samples); samples whose
 * stacks are unknown because the counts map was full come back as one record flagged
 * PROBE_LOST_COUNTS_FULL. Each drain empties the stacks map too, so stack_entries
 * bounds the distinct stacks between two drains, not over the probe's life.
 */
#include "probes/probes.h"
#include "probes/common/env.h"
#include "probes/common/maps.h"
#include "probes/common/perf.h"
#include "probes/common/treeclock.h"

#include <linux/types.h> /* before the shared header and the skeleton, which use __u64 */
#include "probes/oncpu/oncpu.h"
#include "probes/oncpu/oncpu.skel.h"
#include "runtime/clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct oncpu_key) == 56, "oncpu_key ABI");
_Static_assert(sizeof(struct oncpu_stack) == 1024, "oncpu_stack ABI");
_Static_assert(sizeof(struct oncpu_counters) == 104, "oncpu_counters ABI");
_Static_assert(ONCPU_MAX_TARGETS == PROBE_ONCPU_MAX_TARGETS, "one bound on a set");
_Static_assert(sizeof(struct oncpu_range) == 24, "oncpu_range ABI");
_Static_assert(sizeof(struct oncpu_dwarf_sample) == 2240, "oncpu_dwarf_sample ABI");
_Static_assert(ONCPU_RED_ZONE == PROBE_RED_ZONE, "one red zone");
_Static_assert(ONCPU_LOST_USTACK_FULL == PROBE_LOST_USTACK_FULL &&
	       ONCPU_LOST_KSTACK_FULL == PROBE_LOST_KSTACK_FULL &&
	       ONCPU_LOST_USTACK_ERROR == PROBE_LOST_USTACK_ERROR &&
	       ONCPU_LOST_KSTACK_ERROR == PROBE_LOST_KSTACK_ERROR &&
	       ONCPU_LOST_RING == PROBE_LOST_RING, "loss bits");
_Static_assert(ONCPU_CG_FP == PROBE_CG_FP && ONCPU_CG_DWARF == PROBE_CG_DWARF &&
	       ONCPU_CG_AUTO == PROBE_CG_AUTO, "call-graph modes");
_Static_assert(ONCPU_RANGE_NOFP == PROBE_RANGE_NOFP && ONCPU_RANGE_ROOT == PROBE_RANGE_ROOT &&
	       ONCPU_MAX_RANGES == PROBE_MAX_RANGES, "code ranges");
_Static_assert(ONCPU_NREGS == PROBE_NREGS && ONCPU_STACK_MAX == PROBE_STACK_COPY_MAX &&
	       ONCPU_MAX_DEPTH == PROBE_MAX_DEPTH, "sizes");

#define DEFAULT_FREQ	      999
#define RING_MIN	      (64u << 10)
#define RING_MAX	      (256u << 20)
#define READER_POLL_MS	      50

struct probe_oncpu {
	struct oncpu_bpf *skel;
	struct probe__perf pe;
	struct bpf_link **links;   /* one per pe CPU; each owns its perf fd */
	int stats_fd;              /* probe_bpf_stats_fd(), shared: not ours to close */
	unsigned freq;
	unsigned count_entries;
	unsigned max_depth;        /* a stack this long may have been cut */
	double cost_share;         /* the share of a CPU sampling took, measured at open */
	uint64_t cost_ns;          /* how long measuring it took, wall clock */
	bool started;
	bool group_task;           /* the entry word is read and kept in the key */
	int *ctl_fds;              /* each CPU's perf event again (the link owns the first
				    * fd): switched on only between start and stop; -1 */
	uint64_t window_start_ns;  /* CLOCK_MONOTONIC when sampling was last enabled */
	uint64_t window_ns;        /* time enabled since the last drain */
	clockid_t cpu_clock;       /* the target's process CPU clock, while started */
	struct probe__tree_clock set_clock; /* a set's, and what it starts, while started */
	bool cpu_clock_ok;         /* it could be read when sampling was enabled */
	uint64_t cpu_start_ns;     /* its reading then */
	uint64_t cpu_ns;           /* the targets' CPU time while enabled, since the last drain */
	uint64_t unclocked;        /* windows since the last drain whose CPU time is unknown */
	uint32_t last_tgid;        /* owner of the counts-full record */
	struct bpf_link *fork_link; /* oncpu_fork, while started following a set */
	bool set_mode;             /* started with a set of processes (probe_target.tgids) */
	int ncpus;                 /* possible CPUs: per-CPU map values */
	struct oncpu_counters *pcpu;
	struct oncpu_key *keys;    /* drain scratch, count_entries long */
	__u64 *ids;                /* drain scratch, stacks-map keys, stack_entries long */
	struct oncpu_stack sbuf;   /* drain scratch, one stacks-map value */
	uint64_t ubuf[ONCPU_MAX_DEPTH], kbuf[ONCPU_MAX_DEPTH];

	/* DWARF modes: the ring buffer's reader, running between start and stop */
	enum probe_callgraph callgraph;
	unsigned stack_copy, ring_bytes;
	probe_dwarf_fn dwarf_fn;
	void *dwarf_ctx;
	struct ring_buffer *ring;
	pthread_t reader;
	bool reader_running;
	bool reader_stop;          /* atomic: the reader's loop condition */
	int dwarf_err;             /* dwarf_fn's first non-zero return since the start */
	uint64_t dwarf_seen;       /* records handed to dwarf_fn since the last drain */
};

/* The target's CPU time so far (every thread's, live or exited), or false once the
 * process is gone. */
static bool read_cpu_clock(clockid_t clock, uint64_t *ns)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts))
		return false;
	*ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return true;
}

/* Switch every CPU's event on or off. Off, no timer fires, so a frequency's cost is
 * paid only while a target is sampled, not while the loader's process sets up,
 * symbolizes or waits for the next fork. */
static int switch_events(struct probe_oncpu *p, bool on)
{
	int ret = 0;

	for (int i = 0; i < p->pe.n; i++)
		if (ioctl(p->ctl_fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0) &&
		    !ret)
			ret = -errno;
	return ret;
}

static void step_error(char *err, size_t len, const char *step, int e)
{
	probe__step_error(err, len, "oncpu", step, e);
}

/* ---- what a sample costs ------------------------------------------------------------ */

#define COST_PHASE_NS	 (3 * 1000 * 1000) /* CPU time each phase of the measurement spins */
#define COST_ROUNDS	 5                 /* pairs of phases, events off then on */
#define COST_CHUNK	 4096              /* spin iterations between clock reads */
#define NO_LIMIT_PCT	 90                /* the budget where the kernel's sets none */
/* At or below this rate (the default's, 999 Hz, and perf's own are of this order) the
 * cost is measured and reported but never refused: a burst of other work on the CPU
 * during the measurement reads as cost, and to refuse the default run on a busy
 * machine would be worse than what such a rate costs, which the report then shows. */
#define ALWAYS_FITS_HZ	 1000

struct cost_run {
	struct probe_oncpu *p;
	int idx;             /* the event (and CPU) measured: pe.cpus[idx] */
	double share;        /* out: the share of the CPU its samples took */
	int err;             /* out: 0 or -errno */
};

/* where the spin's result goes, so that the compiler keeps the spin */
static volatile uint64_t cost_sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spin for COST_PHASE_NS of this thread's CPU time: iterations per CPU nanosecond. The
 * kernel charges the sampling interrupts to the task they interrupt (this kernel has no
 * IRQ_TIME_ACCOUNTING; with it they are left out and the share reads low), so the more
 * the samples take, the fewer iterations a nanosecond holds. Timed on the CPU clock, a
 * phase lasts as long at a frequency this machine cannot sustain as at any other. */
static double spin_rate(void)
{
	uint64_t t0 = thread_cpu_ns(), t, n = 0, x = t0;

	do {
		for (int i = 0; i < COST_CHUNK; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		n += COST_CHUNK;
		t = thread_cpu_ns();
	} while (t - t0 < COST_PHASE_NS);
	cost_sink = x;
	return (double)n / (double)(t - t0);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The share of the CPU the event on fd takes at its current frequency: rounds of a
 * phase off and a phase on (the program runs and keeps nothing: enabled is 0), each
 * "on" against the "off" phases beside it, and the median of the rounds, so that one
 * phase slowed by something else (a host that stole the vCPU) does not decide. */
static int share_now(int fd, double *share)
{
	double off[COST_ROUNDS + 1], shares[COST_ROUNDS], on[COST_ROUNDS];

	for (int r = 0; r < COST_ROUNDS; r++) {
		off[r] = spin_rate();
		if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
			return -errno;
		on[r] = spin_rate();
		if (ioctl(fd, PERF_EVENT_IOC_DISABLE, 0))
			return -errno;
	}
	off[COST_ROUNDS] = spin_rate();
	for (int r = 0; r < COST_ROUNDS; r++) {
		double base = (off[r] + off[r + 1]) / 2;

		shares[r] = on[r] < base ? 1.0 - on[r] / base : 0.0;
	}
	qsort(shares, COST_ROUNDS, sizeof(shares[0]), cmp_double);
	*share = shares[COST_ROUNDS / 2];
	return 0;
}

/* On one CPU, pinned: the share at the probe's frequency. */
static void *cost_main(void *arg)
{
	struct cost_run *c = arg;

	c->err = share_now(c->p->ctl_fds[c->idx], &c->share);
	return NULL;
}

/* Measure what sampling at p's frequency takes of the first sampled CPU this process
 * may run on, in about 33 ms of CPU time. 0 or -errno. */
static int measure_cost(struct probe_oncpu *p, struct cost_run *c)
{
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t t;
	int err;

	if (!sched_getaffinity(0, sizeof(set), &set))
		while (c->idx + 1 < p->pe.n && !CPU_ISSET(p->pe.cpus[c->idx], &set))
			c->idx++;
	CPU_ZERO(&set);
	CPU_SET(p->pe.cpus[c->idx], &set);
	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!err)
		err = pthread_create(&t, &attr, cost_main, c);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	pthread_join(t, NULL);
	return c->err;
}

/* Refuse a frequency whose samples would take more of a CPU than the kernel allows
 * sample handling (kernel.perf_cpu_time_max_percent, 25 by default). The kernel
 * enforces that budget only for PMU interrupts (perf_sample_event_took()); a cpu-clock
 * event's hrtimer is never held to it, and on this project's VMs, where a sample costs
 * tens of microseconds, 100 kHz took both CPUs whole: a 0.05 s iteration took 11 s, a
 * --quick run did not end in 13 minutes. budget_pct 0: the sysctl's (NO_LIMIT_PCT
 * where it sets none); >= 100: none (the cost is still measured, for
 * probe_oncpu_cost_share()). -ERANGE when over the budget. */
static int check_cost(struct probe_oncpu *p, int budget_pct, char *err, size_t errlen)
{
	const char *source = "the budget asked";
	struct cost_run c = { .p = p };
	char fits[96] = "";
	long sysctl = 25;
	int ret;

	if (budget_pct <= 0) {
		if (probe__read_sysctl("kernel/perf_cpu_time_max_percent", &sysctl))
			sysctl = 25;
		/* the kernel reads 0 and 100 as no limit; a run that the timers starve
		 * of CPU never ends, so some limit stays */
		budget_pct = sysctl > 0 && sysctl < 100 ? (int)sysctl : NO_LIMIT_PCT;
		source = "kernel.perf_cpu_time_max_percent";
	}
	ret = measure_cost(p, &c);
	if (!ret && c.share * 100 > budget_pct && budget_pct < 100) {
		/* a real cost is there each time; a burst of other work on the CPU is not:
		 * once more, and the lower share */
		double first = c.share;

		ret = measure_cost(p, &c);
		if (first < c.share)
			c.share = first;
	}
	if (ret) {
		step_error(err, errlen, "measuring the cost of a sample", -ret);
		return ret;
	}
	p->cost_share = c.share;
	if (budget_pct >= 100 || c.share * 100 <= budget_pct || p->freq <= ALWAYS_FITS_HZ)
		return 0;
	/* Below saturation the share grows with the frequency about in proportion; near
	 * it, it does not, and only "lower" is known. */
	if (c.share < 0.5)
		snprintf(fits, sizeof(fits), "; at most about %u Hz fits",
			 (unsigned)(p->freq * (budget_pct / 100.0) / c.share));
	else
		snprintf(fits, sizeof(fits), "; choose a much lower frequency");
	snprintf(err, errlen,
		 "oncpu: sampling at %u Hz would take %.0f%% of a CPU here (measured on cpu %d), "
		 "above %s (%d%%)%s",
		 p->freq, c.share * 100, p->pe.cpus[c.idx], source, budget_pct, fits);
	return -ERANGE;
}

/* A quarter second of DWARF samples on every CPU (the reader polls every 50 ms and
 * wakes on the first sample after it caught up), as a power of two the kernel accepts. */
static unsigned ring_size(unsigned asked, unsigned freq, int ncpus, unsigned stack_copy)
{
	uint64_t want = asked ? asked :
		(uint64_t)ncpus * freq * (sizeof(struct oncpu_dwarf_sample) + stack_copy) / 4;
	unsigned size = RING_MIN;

	while (size < want && size < RING_MAX)
		size <<= 1;
	return size;
}

/* A ring-buffer record to dwarf_fn. The kernel writes whole records of the size they
 * say; a shorter one would be an ABI mismatch, and is cut to what it holds. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct probe_oncpu *p = ctx;
	const struct oncpu_dwarf_sample *d = data;
	struct probe_dwarf_sample s;
	int ret;

	if (size < sizeof(*d))
		return 0;
	s = (struct probe_dwarf_sample){
		.tgid = d->tgid,
		.tid = d->tid,
		.phase = d->phase,
		.entry = d->entry,
		.regs = (const uint64_t *)d->regs,
		.stack = d->stack,
		.stack_len = d->stack_len <= size - sizeof(*d) ? d->stack_len :
								   (uint32_t)(size - sizeof(*d)),
		.stack_addr = d->regs[7] - (d->below_sp <= ONCPU_RED_ZONE ? d->below_sp : 0),
		.kstack = (const uint64_t *)d->kips,
		.nkernel = d->knr < ONCPU_MAX_DEPTH ? d->knr : ONCPU_MAX_DEPTH,
		.lost = d->lost,
		.fallback = d->fallback,
		.fp_ips = (const uint64_t *)d->fpips,
		.fp_nr = d->fpnr < ONCPU_MAX_DEPTH ? d->fpnr : ONCPU_MAX_DEPTH,
	};
	memcpy(s.comm, d->comm, sizeof(s.comm));
	s.comm[sizeof(s.comm) - 1] = '\0';
	p->dwarf_seen++;
	ret = p->dwarf_fn(&s, p->dwarf_ctx);
	if (ret && !p->dwarf_err)
		p->dwarf_err = ret;
	return 0;
}

static void *reader_main(void *arg)
{
	struct probe_oncpu *p = arg;

	while (!__atomic_load_n(&p->reader_stop, __ATOMIC_ACQUIRE))
		ring_buffer__poll(p->ring, READER_POLL_MS);
	return NULL;
}

/* Let go of the sampling events: their links, the descriptors that switch them, the
 * events themselves. Safe on a part-made set (NULL arrays, -1 descriptors). */
static void events_close(struct probe_oncpu *p)
{
	for (int i = 0; p->links && i < p->pe.n; i++)
		bpf_link__destroy(p->links[i]);
	for (int i = 0; p->ctl_fds && i < p->pe.n; i++)
		if (p->ctl_fds[i] >= 0)
			close(p->ctl_fds[i]);
	free(p->ctl_fds);
	free(p->links);
	p->ctl_fds = NULL;
	p->links = NULL;
	probe__perf_close(&p->pe);
}

/* Open a sampling event on every CPU (the hardware one, else the software fallback),
 * attach the loaded program to each, keep a descriptor to switch each, and leave them
 * off until probe_oncpu_start(). 0, or -errno with one line in err and nothing left open. */
static int events_attach(struct probe_oncpu *p, bool software_only, char *err, size_t errlen)
{
	char msg[256];
	int ret;

	ret = probe__perf_open(&p->pe, p->freq, software_only, msg, sizeof(msg));
	if (ret) {
		snprintf(err, errlen, "oncpu: %s", msg);
		return ret;
	}
	p->links = calloc(p->pe.n, sizeof(*p->links));
	p->ctl_fds = malloc(p->pe.n * sizeof(*p->ctl_fds));
	if (!p->links || !p->ctl_fds) {
		ret = -ENOMEM;
		snprintf(err, errlen, "oncpu: out of memory");
		goto fail;
	}
	for (int i = 0; i < p->pe.n; i++)
		p->ctl_fds[i] = -1;
	for (int i = 0; i < p->pe.n; i++) {
		p->ctl_fds[i] = fcntl(p->pe.fds[i], F_DUPFD_CLOEXEC, 0);
		if (p->ctl_fds[i] < 0) {
			ret = -errno;
			snprintf(msg, sizeof(msg), "dup of the event on cpu %d", p->pe.cpus[i]);
			step_error(err, errlen, msg, errno);
			goto fail;
		}
		p->links[i] = bpf_program__attach_perf_event(p->skel->progs.oncpu_sample,
							     p->pe.fds[i]);
		if (!p->links[i]) {
			ret = -errno;
			snprintf(msg, sizeof(msg), "attach on cpu %d", p->pe.cpus[i]);
			step_error(err, errlen, msg, errno);
			goto fail;
		}
		p->pe.fds[i] = -1; /* the link closes it */
	}
	/* attaching enabled the events; they run only between start and stop */
	ret = switch_events(p, false);
	if (ret) {
		step_error(err, errlen, "switching the events off", -ret);
		goto fail;
	}
	return 0;

fail:
	events_close(p);
	return ret;
}

struct probe_oncpu *probe_oncpu_open(const struct probe_oncpu_opts *o, char *err, size_t errlen)
{
	struct probe_oncpu_opts d = {};
	struct timespec t0, t1;
	struct probe_oncpu *p;
	unsigned stack_entries;
	struct probe__host h;
	long max_stack;
	int ret;

	if (!o)
		o = &d;
	p = probe__state_new("oncpu", sizeof(*p), &h, err, errlen);
	if (!p)
		return NULL;
	p->stats_fd = -1;
	p->freq = o->freq ? o->freq : DEFAULT_FREQ;
	p->callgraph = o->callgraph;
	if (p->callgraph != PROBE_CG_FP && !o->dwarf_fn) {
		snprintf(err, errlen, "oncpu: DWARF call graphs need a sample handler");
		free(p);
		errno = EINVAL;
		return NULL;
	}
	p->dwarf_fn = o->dwarf_fn;
	p->dwarf_ctx = o->dwarf_ctx;
	p->stack_copy = o->stack_copy ? o->stack_copy : PROBE_STACK_COPY_DEFAULT;
	if (p->stack_copy > PROBE_STACK_COPY_MAX)
		p->stack_copy = PROBE_STACK_COPY_MAX;
	p->stack_copy &= ~7u;
	if (!p->stack_copy)
		p->stack_copy = 8;
	stack_entries = o->stack_entries ? o->stack_entries : PROBE_ONCPU_STACK_ENTRIES;
	p->count_entries = o->count_entries ? o->count_entries : PROBE_ONCPU_COUNT_ENTRIES;
	/* The walk stops at the smaller of the map's depth and this sysctl. */
	p->max_depth = ONCPU_MAX_DEPTH;
	if (!probe__read_sysctl("kernel/perf_event_max_stack", &max_stack) && max_stack > 0 &&
	    max_stack < ONCPU_MAX_DEPTH)
		p->max_depth = max_stack;
	p->ncpus = h.ncpus;
	p->pcpu = calloc(p->ncpus, sizeof(*p->pcpu));
	p->keys = calloc(p->count_entries, sizeof(*p->keys));
	p->ids = calloc(stack_entries, sizeof(*p->ids));
	if (!p->pcpu || !p->keys || !p->ids) {
		ret = -ENOMEM;
		snprintf(err, errlen, "oncpu: out of memory for %u counts and %u stacks",
			 p->count_entries, stack_entries);
		goto out_free;
	}

	probe__libbpf_capture();
	{
		LIBBPF_OPTS(bpf_object_open_opts, open_opts,
			    .btf_custom_path = probe__core_btf("oncpu"));

		p->skel = oncpu_bpf__open_opts(&open_opts);
	}
	if (!p->skel) {
		ret = -errno;
		step_error(err, errlen, "open", errno);
		goto out_free;
	}
	p->skel->rodata->pidns_dev = h.pidns_dev;
	p->skel->rodata->pidns_ino = h.pidns_ino;
	p->skel->rodata->callgraph = p->callgraph;
	p->skel->rodata->stack_copy = p->stack_copy;
	p->skel->rodata->group_task = o->group_task;
	p->group_task = o->group_task;
	p->ring_bytes = p->callgraph == PROBE_CG_FP ? (unsigned)sysconf(_SC_PAGESIZE) :
			ring_size(o->ring_bytes, p->freq, p->ncpus, p->stack_copy);
	ret = bpf_map__set_max_entries(p->skel->maps.stacks, stack_entries);
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.counts, p->count_entries);
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.dwarf_ring, p->ring_bytes);
	/* one scratch per CPU where DWARF samples are built; none needed otherwise */
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.dwarf_scratch,
					       p->callgraph == PROBE_CG_FP ? 1 : p->ncpus);
	if (ret) {
		step_error(err, errlen, "sizing maps", -ret);
		goto out_destroy;
	}
	ret = probe__load(p->skel->skeleton, "oncpu", err, errlen);
	if (ret)
		goto out_destroy;
	if (p->callgraph != PROBE_CG_FP) {
		p->ring = ring_buffer__new(bpf_map__fd(p->skel->maps.dwarf_ring), on_record, p,
					   NULL);
		if (!p->ring) {
			ret = -errno;
			step_error(err, errlen, "ring buffer", errno);
			goto out_destroy;
		}
	}

	ret = events_attach(p, o->software_only, err, errlen);
	if (ret)
		goto out_destroy;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = check_cost(p, o->cpu_budget_pct, err, errlen);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	p->cost_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
		     (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	if (ret) {
		events_close(p);
		goto out_destroy;
	}
	/* What a sample costs is measured, not guessed: the kernel times every BPF
	 * program while the process's statistics fd is open (two clock reads a run).
	 * Without it the report says the cost was not measured. */
	p->stats_fd = probe_bpf_stats_fd();
	return p;

out_destroy:
	ring_buffer__free(p->ring);
	oncpu_bpf__destroy(p->skel);
out_free:
	free(p->ids);
	free(p->keys);
	free(p->pcpu);
	free(p);
	errno = -ret;
	return NULL;
}

void probe_oncpu_free(struct probe_oncpu *p)
{
	if (!p)
		return;
	probe_oncpu_stop(p);
	probe__tree_clock_close(&p->set_clock); /* opened unless a start failed past it */
	bpf_link__destroy(p->fork_link); /* NULL unless a start failed past attaching it */
	events_close(p);
	ring_buffer__free(p->ring);
	oncpu_bpf__destroy(p->skel);
	free(p->ids);
	free(p->keys);
	free(p->pcpu);
	free(p);
}

const char *probe_oncpu_event(const struct probe_oncpu *p)
{
	return p->pe.hardware ? "cycles" : "cpu-clock";
}

unsigned probe_oncpu_freq(const struct probe_oncpu *p)
{
	return p->freq;
}

double probe_oncpu_cost_share(const struct probe_oncpu *p)
{
	return p->cost_share;
}

uint64_t probe_oncpu_cost_ns(const struct probe_oncpu *p)
{
	return p->cost_ns;
}

int probe_oncpu_prog_stats(const struct probe_oncpu *p, uint64_t *runs, uint64_t *ns)
{
	return probe__prog_stats(p->stats_fd, p->skel->progs.oncpu_sample, runs, ns);
}

bool probe_oncpu_group_task(const struct probe_oncpu *p)
{
	return p->group_task;
}

enum probe_callgraph probe_oncpu_callgraph(const struct probe_oncpu *p)
{
	return p->callgraph;
}

unsigned probe_oncpu_stack_copy(const struct probe_oncpu *p)
{
	return p->stack_copy;
}

unsigned probe_oncpu_ring_bytes(const struct probe_oncpu *p)
{
	return p->ring_bytes;
}

unsigned probe_oncpu_stack_entries(const struct probe_oncpu *p)
{
	return bpf_map__max_entries(p->skel->maps.stacks);
}

unsigned probe_oncpu_count_entries(const struct probe_oncpu *p)
{
	return p->count_entries;
}

const char *probe_oncpu_event_note(const struct probe_oncpu *p)
{
	return p->pe.note;
}

/* Join the DWARF reader and hand what it had not reached to dwarf_fn. */
static void stop_reader(struct probe_oncpu *p)
{
	if (!p->reader_running)
		return;
	__atomic_store_n(&p->reader_stop, true, __ATOMIC_RELEASE);
	pthread_join(p->reader, NULL);
	p->reader_running = false;
	/* what the reader had not reached yet: every sample is in the ring by now */
	ring_buffer__consume(p->ring);
}

/* Make the targets map hold exactly the processes of t->tgids, and follow their new
 * processes when asked. */
static int set_targets(struct probe_oncpu *p, const struct probe_target *t)
{
	int fd = bpf_map__fd(p->skel->maps.targets);
	__u32 *keys = calloc(ONCPU_MAX_TARGETS, sizeof(*keys));
	unsigned n;
	__u8 one = 1;
	int err;

	if (!keys)
		return -ENOMEM;
	n = probe__map_keys(fd, keys, sizeof(*keys), ONCPU_MAX_TARGETS);
	err = probe__map_delete(fd, keys, sizeof(*keys), n);
	free(keys);
	if (err)
		return err;
	for (unsigned i = 0; i < t->ntgids; i++) {
		__u32 tgid = (__u32)t->tgids[i];

		if (t->tgids[i] <= 0)
			return -EINVAL;
		if (bpf_map_update_elem(fd, &tgid, &one, BPF_ANY))
			return -errno;
	}
	p->skel->bss->follow = t->follow;
	if (t->follow) {
		p->fork_link = bpf_program__attach(p->skel->progs.oncpu_fork);
		if (!p->fork_link)
			return -errno;
	}
	return 0;
}

int probe_oncpu_targets(struct probe_oncpu *p, pid_t *out, size_t max)
{
	int fd = bpf_map__fd(p->skel->maps.targets);
	__u32 *keys = calloc(ONCPU_MAX_TARGETS, sizeof(*keys));
	unsigned n;

	if (!keys)
		return -ENOMEM;
	n = probe__map_keys(fd, keys, sizeof(*keys), ONCPU_MAX_TARGETS);
	for (unsigned i = 0; i < n && i < max; i++)
		out[i] = (pid_t)keys[i];
	free(keys);
	return (int)(n < max ? n : max);
}

void probe_oncpu_set_ranges(struct probe_oncpu *p, pid_t tgid, const struct probe_range *r,
			    unsigned n)
{
	if (!r || n > ONCPU_MAX_RANGES)
		n = r ? ONCPU_MAX_RANGES : 0;
	/* none while they change: a sample meanwhile goes unchecked, never checked against
	 * half of them (x86 keeps the stores in order; the release says so) */
	__atomic_store_n(&p->skel->bss->nranges, 0, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < n; i++)
		p->skel->bss->ranges[i] = (struct oncpu_range){
			.start = r[i].start,
			.end = r[i].end,
			.kind = r[i].kind,
		};
	p->skel->bss->ranges_tgid = (__u32)tgid;
	__atomic_store_n(&p->skel->bss->nranges, n, __ATOMIC_RELEASE);
}

/* Count the set's threads from now (their descendants too, processes when followed):
 * its CPU time at the stop is the counters' sum less the one read here. 0, or -errno
 * (a process gone, no counter allowed): the window then goes unclocked. */
static int set_clock_start(struct probe_oncpu *p, const struct probe_target *t)
{
	int err = 0;

	probe__tree_clock_close(&p->set_clock);
	p->set_clock.processes = t->follow;
	for (unsigned i = 0; i < t->ntgids && !err; i++)
		err = probe__tree_clock_add(&p->set_clock, t->tgids[i]);
	if (!err)
		err = probe__tree_clock_read(&p->set_clock, &p->cpu_start_ns);
	if (err)
		probe__tree_clock_close(&p->set_clock);
	return err;
}

int probe_oncpu_start(struct probe_oncpu *p, const struct probe_target *t)
{
	int err;

	if (!t || (t->tgid <= 0 && !t->ntgids) || (t->tgid > 0 && t->ntgids) ||
	    t->ntgids > ONCPU_MAX_TARGETS)
		return -EINVAL;
	if (p->started)
		return -EBUSY;
	p->set_mode = t->ntgids > 0;
	if (p->set_mode) {
		err = set_targets(p, t);
		if (err) {
			bpf_link__destroy(p->fork_link);
			p->fork_link = NULL;
			return err;
		}
	}
	probe_oncpu_set_ranges(p, p->set_mode ? t->tgids[0] : t->tgid, t->ranges, t->nranges);
	p->skel->bss->target_tgid = p->set_mode ? 0 : (__u32)t->tgid;
	p->skel->bss->phase_tls_off = t->phase_tls_off;
	p->dwarf_err = 0;
	if (p->ring) {
		__atomic_store_n(&p->reader_stop, false, __ATOMIC_RELAXED);
		err = pthread_create(&p->reader, NULL, reader_main, p);
		if (err)
			return -err;
		p->reader_running = true;
	}
	err = switch_events(p, true);
	if (err) {
		switch_events(p, false);
		stop_reader(p);
		bpf_link__destroy(p->fork_link);
		p->fork_link = NULL;
		return err;
	}
	/* The target's CPU time brackets the window, read inside the events' on/off:
	 * what it spends while enabled is what the frequency owes samples for. A set's
	 * processes come and go, so no process clock covers it: its threads' counters,
	 * inherited as the followed processes are, do. */
	p->cpu_clock_ok = p->set_mode ? !set_clock_start(p, t)
				      : !clock_getcpuclockid(t->tgid, &p->cpu_clock) &&
					read_cpu_clock(p->cpu_clock, &p->cpu_start_ns);
	/* Publish the target before the flag; pairs with the program's read of enabled
	 * before target_tgid (x86 keeps store order; the release says so elsewhere). */
	p->window_start_ns = rt_clock_ns();
	__atomic_store_n(&p->skel->bss->enabled, 1, __ATOMIC_RELEASE);
	p->last_tgid = p->set_mode ? (uint32_t)t->tgids[0] : (uint32_t)t->tgid;
	p->started = true;
	return 0;
}

int probe_oncpu_stop(struct probe_oncpu *p)
{
	uint64_t cpu_end;
	int err;

	if (!p->started)
		return 0;
	__atomic_store_n(&p->skel->bss->enabled, 0, __ATOMIC_RELEASE);
	p->window_ns += rt_clock_ns() - p->window_start_ns;
	if (p->cpu_clock_ok && (p->set_mode ? !probe__tree_clock_read(&p->set_clock, &cpu_end)
					    : read_cpu_clock(p->cpu_clock, &cpu_end)) &&
	    cpu_end >= p->cpu_start_ns)
		p->cpu_ns += cpu_end - p->cpu_start_ns;
	else
		p->unclocked++; /* the target was gone, or its clock never readable */
	probe__tree_clock_close(&p->set_clock);
	err = switch_events(p, false);
	p->started = false;
	/* no new process joins after the window: it would never be sampled */
	bpf_link__destroy(p->fork_link);
	p->fork_link = NULL;
	/* A sample that saw enabled = 1 may still be running on another CPU (in irq or
	 * NMI context): after this every such sample has finished and the drain sees it. */
	probe__wait_programs();
	stop_reader(p);
	return p->dwarf_err ? p->dwarf_err : err;
}

/* The leaf-first ips of the stack stored under id into buf: their number, 0 for no
 * stack, -1 when id is not in the map (never expected: a hash map does not evict, and
 * only the drain deletes). */
static int read_stack(struct probe_oncpu *p, __u64 id, uint64_t *buf)
{
	unsigned n;

	if (id == ONCPU_NO_STACK)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.stacks), &id, &p->sbuf))
		return -1;
	n = p->sbuf.nr < ONCPU_MAX_DEPTH ? p->sbuf.nr : ONCPU_MAX_DEPTH;
	for (unsigned i = 0; i < n; i++)
		buf[i] = p->sbuf.ips[i];
	return n;
}

/* Sum the per-CPU loss counters into *c and zero them. */
static int take_counters(struct probe_oncpu *p, struct oncpu_counters *c)
{
	int fd = bpf_map__fd(p->skel->maps.counters);
	__u32 zero = 0;

	memset(c, 0, sizeof(*c));
	if (bpf_map_lookup_elem(fd, &zero, p->pcpu))
		return -errno;
	for (int i = 0; i < p->ncpus; i++) {
		c->samples += p->pcpu[i].samples;
		c->counts_full += p->pcpu[i].counts_full;
		c->ustack_full += p->pcpu[i].ustack_full;
		c->kstack_full += p->pcpu[i].kstack_full;
		c->ustack_errors += p->pcpu[i].ustack_errors;
		c->kstack_errors += p->pcpu[i].kstack_errors;
		c->dwarf_samples += p->pcpu[i].dwarf_samples;
		c->ring_full += p->pcpu[i].ring_full;
		c->stack_bytes += p->pcpu[i].stack_bytes;
		c->root_cut += p->pcpu[i].root_cut;
		c->fired += p->pcpu[i].fired;
		c->followed += p->pcpu[i].followed;
		c->targets_full += p->pcpu[i].targets_full;
	}
	memset(p->pcpu, 0, p->ncpus * sizeof(*p->pcpu));
	if (bpf_map_update_elem(fd, &zero, p->pcpu, BPF_ANY))
		return -errno;
	return 0;
}

/* Remove every stack, including those whose count could not be inserted; *held, how
 * many there were. */
static int clear_stacks(struct probe_oncpu *p, unsigned *held)
{
	int fd = bpf_map__fd(p->skel->maps.stacks);

	*held = probe__map_keys(fd, p->ids, sizeof(*p->ids),
				bpf_map__max_entries(p->skel->maps.stacks));
	return probe__map_delete(fd, p->ids, sizeof(*p->ids), *held);
}

int probe_oncpu_drain(struct probe_oncpu *p, probe_stack_fn fn, void *ctx,
		      struct probe_oncpu_stats *stats)
{
	int fd = bpf_map__fd(p->skel->maps.counts), ret = 0, err;
	struct oncpu_counters c;
	uint64_t truncated = 0, uerrors = 0, kerrors = 0;
	unsigned n, nstacks = 0;

	/* While sampling, counts would move between our reads and the deletes. */
	if (p->started)
		return -EBUSY;
	n = probe__map_keys(fd, p->keys, sizeof(*p->keys), p->count_entries);

	for (unsigned i = 0; i < n; i++) {
		const struct oncpu_key *k = &p->keys[i];
		struct probe_stack s = {
			.tgid = k->tgid, .phase = k->phase, .entry = k->entry, .lost = k->lost
		};
		__u64 count;
		int nu, nk;

		if (bpf_map_lookup_elem(fd, k, &count))
			return -errno;
		memcpy(s.comm, k->comm, sizeof(s.comm));
		s.comm[sizeof(s.comm) - 1] = '\0';
		s.count = count;
		s.ustack = p->ubuf;
		s.kstack = p->kbuf;
		nu = read_stack(p, k->ustack, p->ubuf);
		nk = read_stack(p, k->kstack, p->kbuf);
		if (nu < 0) {
			s.lost |= PROBE_LOST_USTACK_ERROR;
			uerrors += count;
		}
		if (nk < 0) {
			s.lost |= PROBE_LOST_KSTACK_ERROR;
			kerrors += count;
		}
		s.nuser = nu > 0 ? nu : 0;
		s.nkernel = nk > 0 ? nk : 0;
		if (s.nuser >= p->max_depth) {
			s.lost |= PROBE_TRUNCATED_USTACK;
			truncated += count;
		}
		if (s.nkernel >= p->max_depth) {
			s.lost |= PROBE_TRUNCATED_KSTACK;
			truncated += count;
		}
		/* After a stop, keep emptying the maps but call fn no more. */
		if (!ret && fn)
			ret = fn(&s, ctx);
	}
	err = probe__map_delete(fd, p->keys, sizeof(*p->keys), n);
	if (!err)
		err = clear_stacks(p, &nstacks);
	if (!err)
		err = take_counters(p, &c);
	if (err)
		return err;

	/* Counts-full samples: one record, no frames, owned by the last target (the only
	 * one unless the caller switched targets without draining). */
	if (c.counts_full && !ret && fn) {
		struct probe_stack s = {
			.tgid = p->last_tgid,
			.ustack = p->ubuf,
			.kstack = p->kbuf,
			.lost = PROBE_LOST_COUNTS_FULL,
			.count = c.counts_full,
		};

		ret = fn(&s, ctx);
	}
	/* Every record the kernel put in the ring was read by the stop; one that was not
	 * would be a reader bug, and still counts, as a sample without stacks. */
	if (c.dwarf_samples > p->dwarf_seen && !ret && fn) {
		struct probe_stack s = {
			.tgid = p->last_tgid,
			.ustack = p->ubuf,
			.kstack = p->kbuf,
			.lost = PROBE_LOST_RING,
			.count = c.dwarf_samples - p->dwarf_seen,
		};

		ret = fn(&s, ctx);
	}
	if (stats) {
		stats->samples += c.samples;
		stats->ustack_full += c.ustack_full;
		stats->kstack_full += c.kstack_full;
		stats->ustack_errors += c.ustack_errors + uerrors;
		stats->kstack_errors += c.kstack_errors + kerrors;
		stats->counts_full += c.counts_full;
		stats->truncated += truncated;
		stats->dwarf_samples += c.dwarf_samples;
		stats->ring_full += c.ring_full;
		stats->stack_bytes += c.stack_bytes;
		stats->root_cut += c.root_cut;
		stats->fired += c.fired;
		stats->followed += c.followed;
		stats->targets_full += c.targets_full;
		stats->window_ns += p->window_ns;
		stats->cpu_ns += p->cpu_ns;
		if (nstacks > stats->stacks_held_max)
			stats->stacks_held_max = nstacks;
		if (n > stats->keys_held_max)
			stats->keys_held_max = n;
		stats->unclocked += p->unclocked;
		/* A cpu-clock event's hrtimer fires every 1/freq s on a CPU while it runs
		 * a task; a CPU in tickless idle lets it lapse (measured here: 5 samples in
		 * 2 s on an idle CPU at 999 Hz). So what the kernel owes the target is freq
		 * samples per second of the target's own CPU time; what it keeps back it
		 * throttled or could not deliver. Cycles' frequency is the kernel's running
		 * estimate of a period, no such promise. */
		if (!p->pe.hardware)
			stats->expected += (uint64_t)((double)p->cpu_ns * p->freq / 1e9 + 0.5);
	}
	p->window_ns = 0;
	p->cpu_ns = 0;
	p->unclocked = 0;
	p->dwarf_seen = 0;
	return ret;
}
