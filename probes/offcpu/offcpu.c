/*
 * offcpu loader: opens, sizes and loads offcpu.bpf.c, attaches sched_switch (and, with
 * wakers, sched_waking and sched_wakeup_new) once, lets the programs keep intervals
 * only between start and stop (the skeleton's mmapped .bss flag), and drains the
 * kernel's aggregates.
 */
#include "probes/probes.h"
#include "probes/common/env.h"
#include "probes/common/maps.h"

#include <linux/types.h> /* before the shared header and the skeleton, which use __u64 */
#include "probes/offcpu/offcpu.h"
#include "probes/offcpu/offcpu.skel.h"
#include "runtime/clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct offcpu_stack) == 1024, "offcpu_stack ABI");
_Static_assert(sizeof(struct offcpu_waker) == 40, "offcpu_waker ABI");
_Static_assert(sizeof(struct offcpu_key) == 88, "offcpu_key ABI");
_Static_assert(sizeof(struct offcpu_start) == 104, "offcpu_start ABI");
_Static_assert(sizeof(struct offcpu_counters) == 144, "offcpu_counters ABI");
_Static_assert(OFFCPU_LOST_USTACK_FULL == PROBE_LOST_USTACK_FULL &&
	       OFFCPU_LOST_KSTACK_FULL == PROBE_LOST_KSTACK_FULL &&
	       OFFCPU_LOST_USTACK_ERROR == PROBE_LOST_USTACK_ERROR &&
	       OFFCPU_LOST_KSTACK_ERROR == PROBE_LOST_KSTACK_ERROR &&
	       OFFCPU_LOST_WUSTACK_FULL == PROBE_LOST_WUSTACK_FULL &&
	       OFFCPU_LOST_WKSTACK_FULL == PROBE_LOST_WKSTACK_FULL &&
	       OFFCPU_LOST_WAKER_FULL == PROBE_LOST_WAKER_FULL, "loss bits");
_Static_assert(OFFCPU_MAX_DEPTH == PROBE_MAX_DEPTH, "sizes");

struct probe_offcpu {
	struct offcpu_bpf *skel;
	int stats_fd;              /* probe_bpf_stats_fd(), shared: not ours to close */
	unsigned min_block_us;
	bool wakers;
	unsigned stacks;           /* PROBE_OFFCPU_USER | PROBE_OFFCPU_KERNEL */
	bool started;
	unsigned stack_entries, count_entries, thread_entries;
	unsigned waker_entries;    /* 0 without wakers */
	uint64_t window_start_ns, window_ns;
	int ncpus;
	struct offcpu_counters *pcpu;
	struct offcpu_key *keys;   /* drain scratch, count_entries long */
	__u64 *ids;                /* drain scratch: stacks-map keys, or tids */
	struct offcpu_stack sbuf;
	uint64_t ubuf[OFFCPU_MAX_DEPTH], kbuf[OFFCPU_MAX_DEPTH];
	uint64_t wubuf[OFFCPU_MAX_DEPTH], wkbuf[OFFCPU_MAX_DEPTH];
};

static void step_error(char *err, size_t len, const char *step, int e)
{
	probe__step_error(err, len, "offcpu", step, e);
}

struct probe_offcpu *probe_offcpu_open(const struct probe_offcpu_opts *o, char *err,
				       size_t errlen)
{
	struct probe_offcpu_opts d = {};
	struct probe_offcpu *p;
	struct bpf_link *link;
	struct probe__host h;
	unsigned ids;
	int ret;

	if (!o)
		o = &d;
	p = probe__state_new("offcpu", sizeof(*p), &h, err, errlen);
	if (!p)
		return NULL;
	p->stats_fd = -1;
	p->min_block_us = o->min_block_us ? o->min_block_us : 1;
	p->wakers = o->wakers;
	p->stacks = o->stacks ? o->stacks : PROBE_OFFCPU_USER | PROBE_OFFCPU_KERNEL;
	p->stack_entries = o->stack_entries ? o->stack_entries : PROBE_OFFCPU_STACK_ENTRIES;
	p->count_entries = o->count_entries ? o->count_entries : PROBE_OFFCPU_COUNT_ENTRIES;
	p->thread_entries = o->thread_entries ? o->thread_entries : PROBE_OFFCPU_THREAD_ENTRIES;
	if (p->wakers)
		p->waker_entries = o->waker_entries ? o->waker_entries : p->thread_entries;
	p->ncpus = h.ncpus;
	ids = p->stack_entries > p->thread_entries ? p->stack_entries : p->thread_entries;
	if (p->waker_entries > ids)
		ids = p->waker_entries;
	p->pcpu = calloc(p->ncpus, sizeof(*p->pcpu));
	p->keys = calloc(p->count_entries, sizeof(*p->keys));
	p->ids = calloc(ids, sizeof(*p->ids));
	if (!p->pcpu || !p->keys || !p->ids) {
		ret = -ENOMEM;
		snprintf(err, errlen, "offcpu: out of memory for %u keys and %u stacks",
			 p->count_entries, p->stack_entries);
		goto out_free;
	}

	probe__libbpf_capture();
	{
		LIBBPF_OPTS(bpf_object_open_opts, open_opts,
			    .btf_custom_path = probe__core_btf("offcpu"));

		p->skel = offcpu_bpf__open_opts(&open_opts);
	}
	if (!p->skel) {
		ret = -errno;
		step_error(err, errlen, "open", errno);
		goto out_free;
	}
	p->skel->rodata->pidns_dev = h.pidns_dev;
	p->skel->rodata->pidns_ino = h.pidns_ino;
	p->skel->rodata->min_block_ns = (__u64)p->min_block_us * 1000;
	p->skel->rodata->wakers = p->wakers;
	p->skel->rodata->user_stacks = !!(p->stacks & PROBE_OFFCPU_USER);
	p->skel->rodata->kernel_stacks = !!(p->stacks & PROBE_OFFCPU_KERNEL);
	ret = bpf_map__set_max_entries(p->skel->maps.stacks, p->stack_entries);
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.counts, p->count_entries);
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.starts, p->thread_entries);
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.woken,
					       p->wakers ? p->waker_entries : 1);
	if (!ret && !p->wakers)
		ret = bpf_program__set_autoload(p->skel->progs.offcpu_wakeup, false);
	if (!ret && !p->wakers)
		ret = bpf_program__set_autoload(p->skel->progs.offcpu_wakeup_new, false);
	if (ret) {
		step_error(err, errlen, "sizing maps", -ret);
		goto out_destroy;
	}
	ret = probe__load(p->skel->skeleton, "offcpu", err, errlen);
	if (ret)
		goto out_destroy;
	/* attached once, for the probe's life: until start the programs see enabled = 0 */
	link = bpf_program__attach(p->skel->progs.offcpu_switch);
	if (!link) {
		ret = -errno;
		step_error(err, errlen, "attach sched_switch", errno);
		goto out_destroy;
	}
	p->skel->links.offcpu_switch = link;
	if (p->wakers) {
		p->skel->links.offcpu_wakeup = bpf_program__attach(p->skel->progs.offcpu_wakeup);
		p->skel->links.offcpu_wakeup_new =
			bpf_program__attach(p->skel->progs.offcpu_wakeup_new);
		if (!p->skel->links.offcpu_wakeup || !p->skel->links.offcpu_wakeup_new) {
			ret = -errno;
			step_error(err, errlen, "attach sched_waking", errno);
			goto out_destroy;
		}
	}
	/* The per-event cost is measured, not guessed: the kernel times every BPF program
	 * while the process's statistics fd is open. */
	p->stats_fd = probe_bpf_stats_fd();
	return p;

out_destroy:
	offcpu_bpf__destroy(p->skel);
out_free:
	free(p->ids);
	free(p->keys);
	free(p->pcpu);
	free(p);
	errno = -ret;
	return NULL;
}

void probe_offcpu_free(struct probe_offcpu *p)
{
	if (!p)
		return;
	if (p->started)
		probe_offcpu_stop(p);
	offcpu_bpf__destroy(p->skel);
	free(p->ids);
	free(p->keys);
	free(p->pcpu);
	free(p);
}

unsigned probe_offcpu_min_block_us(const struct probe_offcpu *p)
{
	return p->min_block_us;
}

bool probe_offcpu_wakers(const struct probe_offcpu *p)
{
	return p->wakers;
}

unsigned probe_offcpu_stacks(const struct probe_offcpu *p)
{
	return p->stacks;
}

void probe_offcpu_sizes(const struct probe_offcpu *p, unsigned *stacks, unsigned *counts,
			unsigned *threads, unsigned *wakers)
{
	*stacks = p->stack_entries;
	*counts = p->count_entries;
	*threads = p->thread_entries;
	*wakers = p->waker_entries;
}

int probe_offcpu_prog_stats(const struct probe_offcpu *p, uint64_t *runs, uint64_t *ns)
{
	return probe__prog_stats(p->stats_fd, p->skel->progs.offcpu_switch, runs, ns);
}

uint64_t probe_offcpu_misses(const struct probe_offcpu *p)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	uint64_t n = 0;

	if (!bpf_obj_get_info_by_fd(bpf_program__fd(p->skel->progs.offcpu_switch), &info, &len))
		n += info.recursion_misses;
	for (int i = 0; p->wakers && i < 2; i++) {
		struct bpf_program *prog = i ? p->skel->progs.offcpu_wakeup_new
					     : p->skel->progs.offcpu_wakeup;

		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

int probe_offcpu_start(struct probe_offcpu *p, pid_t tgid, int64_t phase_tls_off)
{
	if (tgid <= 0)
		return -EINVAL;
	if (p->started)
		return -EBUSY;
	p->skel->bss->target_tgid = (__u32)tgid;
	p->skel->bss->target_ktgid = 0;
	p->skel->bss->phase_tls_off = phase_tls_off;
	p->window_start_ns = rt_clock_ns();
	/* Publish the target before the flag; pairs with the programs' read of enabled
	 * first (x86 keeps store order; the release says so elsewhere). */
	__atomic_store_n(&p->skel->bss->enabled, 1, __ATOMIC_RELEASE);
	p->started = true;
	return 0;
}

int probe_offcpu_stop(struct probe_offcpu *p)
{
	if (!p->started)
		return 0;
	__atomic_store_n(&p->skel->bss->enabled, 0, __ATOMIC_RELEASE);
	p->window_ns += rt_clock_ns() - p->window_start_ns;
	p->started = false;
	/* a program that saw enabled = 1 may still run on another CPU */
	probe__wait_programs();
	return 0;
}

/* The leaf-first ips of the stack stored under id into buf: their number, 0 for no
 * stack, -1 when id is not in the map (never expected: only the drain deletes). */
static int read_stack(struct probe_offcpu *p, __u64 id, uint64_t *buf)
{
	unsigned n;

	if (id == OFFCPU_NO_STACK)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.stacks), &id, &p->sbuf))
		return -1;
	n = p->sbuf.nr < OFFCPU_MAX_DEPTH ? p->sbuf.nr : OFFCPU_MAX_DEPTH;
	memcpy(buf, p->sbuf.ips, n * sizeof(buf[0]));
	return n;
}

/* Empty a map of key_size-byte keys (at most 8), cap entries at most; how many it held.
 * Keys are collected first: deleting while walking with get_next_key restarts the walk. */
static int clear_map(struct probe_offcpu *p, struct bpf_map *m, unsigned cap, uint64_t *held)
{
	int fd = bpf_map__fd(m);
	unsigned n = 0;
	void *prev = NULL;

	while (n < cap && !bpf_map_get_next_key(fd, prev, &p->ids[n])) {
		prev = &p->ids[n++];
	}
	for (unsigned i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, &p->ids[i]) && errno != ENOENT)
			return -errno;
	if (held)
		*held = n;
	return 0;
}

/* Empty the start records (one per thread seen, kept between its intervals): how many
 * were still timing an interval, a thread off CPU at the stop (or gone). */
static int clear_starts(struct probe_offcpu *p, uint64_t *open)
{
	int fd = bpf_map__fd(p->skel->maps.starts);
	struct offcpu_start st;
	unsigned n = 0;
	void *prev = NULL;

	*open = 0;
	while (n < p->thread_entries && !bpf_map_get_next_key(fd, prev, &p->ids[n]))
		prev = &p->ids[n++];
	for (unsigned i = 0; i < n; i++) {
		if (!bpf_map_lookup_elem(fd, &p->ids[i], &st) && st.ts)
			(*open)++;
		if (bpf_map_delete_elem(fd, &p->ids[i]) && errno != ENOENT)
			return -errno;
	}
	return 0;
}

/* Sum the per-CPU counters into *c and zero them. */
static int take_counters(struct probe_offcpu *p, struct offcpu_counters *c)
{
	/* every member is a __u64 sum (the ABI assert fixes the size) */
	return probe__take_percpu_sums(bpf_map__fd(p->skel->maps.counters), p->pcpu, p->ncpus,
				       sizeof(*c), c);
}

int probe_offcpu_drain(struct probe_offcpu *p, probe_offcpu_fn fn, void *ctx,
		       struct probe_offcpu_stats *stats)
{
	int fd = bpf_map__fd(p->skel->maps.counts), ret = 0, err;
	uint64_t truncated = 0, uerrors = 0, kerrors = 0, unfinished = 0;
	struct offcpu_counters c;
	struct offcpu_key *prev = NULL;
	uint64_t nstacks = 0;
	unsigned n = 0;

	/* While started, counts would move between our reads and the deletes. */
	if (p->started)
		return -EBUSY;
	while (n < p->count_entries && !bpf_map_get_next_key(fd, prev, &p->keys[n]))
		prev = &p->keys[n++];

	for (unsigned i = 0; i < n; i++) {
		const struct offcpu_key *k = &p->keys[i];
		struct offcpu_value v;
		struct probe_offcpu_interval iv = {
			.kind = k->kind,
			.lost = k->lost,
			.preempted = k->preempted,
			.ustack = p->ubuf,
			.kstack = p->kbuf,
			.wustack = p->wubuf,
			.wkstack = p->wkbuf,
		};
		int nu, nk, nwu, nwk;

		if (bpf_map_lookup_elem(fd, k, &v))
			return -errno;
		memcpy(iv.comm, k->comm, sizeof(iv.comm));
		iv.comm[sizeof(iv.comm) - 1] = '\0';
		iv.ns = v.ns;
		iv.intervals = v.intervals;
		nu = read_stack(p, k->ustack, p->ubuf);
		nk = read_stack(p, k->kstack, p->kbuf);
		if (nu < 0) {
			iv.lost |= PROBE_LOST_USTACK_ERROR;
			uerrors += v.intervals;
		}
		if (nk < 0) {
			iv.lost |= PROBE_LOST_KSTACK_ERROR;
			kerrors += v.intervals;
		}
		iv.nuser = nu > 0 ? nu : 0;
		iv.nkernel = nk > 0 ? nk : 0;
		if (iv.nuser >= OFFCPU_MAX_DEPTH) {
			iv.lost |= PROBE_TRUNCATED_USTACK;
			truncated += v.intervals;
		}
		if (iv.nkernel >= OFFCPU_MAX_DEPTH) {
			iv.lost |= PROBE_TRUNCATED_KSTACK;
			truncated += v.intervals;
		}
		/* a wake-up kept always has a name (a comm is never empty); one that found
		 * no room is only a loss bit */
		iv.woken = k->waker.kstack || k->waker.comm[0];
		iv.lost |= k->waker.lost;
		if (iv.woken) {
			iv.waker_tgid = k->waker.tgid;
			/* the target's kernel tgid, learnt by the programs in this window (a key
			 * exists only once a target thread switched out) */
			iv.waker_in_target = k->waker.tgid &&
					     k->waker.tgid == p->skel->bss->target_ktgid;
			memcpy(iv.waker_comm, k->waker.comm, sizeof(iv.waker_comm));
			iv.waker_comm[sizeof(iv.waker_comm) - 1] = '\0';
			nwu = read_stack(p, k->waker.ustack, p->wubuf);
			nwk = read_stack(p, k->waker.kstack, p->wkbuf);
			iv.nwuser = nwu > 0 ? nwu : 0;
			iv.nwkernel = nwk > 0 ? nwk : 0;
		}
		/* After a stop, keep emptying the maps but call fn no more. */
		if (!ret && fn)
			ret = fn(&iv, ctx);
	}
	for (unsigned i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, &p->keys[i]) && errno != ENOENT)
			return -errno;
	err = clear_map(p, p->skel->maps.stacks, p->stack_entries, &nstacks);
	/* threads still off CPU at the stop: their intervals are not timed */
	if (!err)
		err = clear_starts(p, &unfinished);
	if (!err && p->wakers)
		err = clear_map(p, p->skel->maps.woken, p->waker_entries, NULL);
	if (!err)
		err = take_counters(p, &c);
	if (err)
		return err;

	if (c.counts_full && !ret && fn) {
		struct probe_offcpu_interval iv = {
			.ustack = p->ubuf,
			.kstack = p->kbuf,
			.wustack = p->wubuf,
			.wkstack = p->wkbuf,
			.lost = PROBE_LOST_COUNTS_FULL,
			.ns = c.counts_full_ns,
			.intervals = c.counts_full,
		};

		ret = fn(&iv, ctx);
	}
	if (stats) {
		stats->switches += c.switches;
		stats->intervals += c.intervals;
		stats->kept += c.kept;
		stats->kept_ns += c.kept_ns;
		stats->under_min += c.under_min;
		stats->under_min_ns += c.under_min_ns;
		stats->counts_full += c.counts_full;
		stats->counts_full_ns += c.counts_full_ns;
		stats->start_full += c.start_full;
		stats->unfinished += unfinished;
		stats->ustack_full += c.ustack_full;
		stats->kstack_full += c.kstack_full;
		stats->ustack_errors += c.ustack_errors + uerrors;
		stats->kstack_errors += c.kstack_errors + kerrors;
		stats->truncated += truncated;
		if (nstacks > stats->stacks_held_max)
			stats->stacks_held_max = nstacks;
		if (n > stats->keys_held_max)
			stats->keys_held_max = n;
		stats->wakeups += c.wakeups;
		stats->waker_full += c.waker_full;
		stats->waker_lost += c.waker_lost;
		stats->fired += c.fired;
		stats->restarts += c.restarts;
		stats->window_ns += p->window_ns;
	}
	p->window_ns = 0;
	return ret;
}
