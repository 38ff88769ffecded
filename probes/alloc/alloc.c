/*
 * alloc loader: opens, sizes and loads alloc.bpf.c once; at each start finds the libc
 * the target maps and attaches one uprobe per allocator function to that process
 * alone, at each stop detaches them; the drain turns the kernel's aggregates and
 * exact totals into probe_alloc_stack records and probe_alloc_stats.
 *
 * Invariant kept by the drain: the bytes (and samples) of the records handed to fn add
 * up to the sampled bytes (and samples) the kernel counted; samples whose key could not
 * be inserted come back as one record flagged PROBE_ALLOC_LOST_COUNTS_FULL. Each drain
 * empties the stacks map too, so stack_entries bounds the distinct stacks between two
 * drains.
 */
#include "probes/probes.h"
#include "probes/common/env.h"
#include "probes/common/maps.h"
#include "probes/common/perf.h"

#include <linux/types.h> /* before the shared header and the skeleton, which use __u64 */
#include "probes/alloc/alloc.h"
#include "probes/alloc/alloc.skel.h"
#include "runtime/clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct alloc_key) == 32, "alloc_key ABI");
_Static_assert(sizeof(struct alloc_val) == 16, "alloc_val ABI");
_Static_assert(sizeof(struct alloc_stack) == 1024, "alloc_stack ABI");
_Static_assert(sizeof(struct alloc_counters) == (2 * ALLOC_NFN + 9) * 8, "alloc_counters ABI");
_Static_assert(ALLOC_NFN == PROBE_ALLOC_NFN && ALLOC_FN_MALLOC == PROBE_ALLOC_MALLOC &&
	       ALLOC_FN_CALLOC == PROBE_ALLOC_CALLOC && ALLOC_FN_REALLOC == PROBE_ALLOC_REALLOC &&
	       ALLOC_FN_POSIX_MEMALIGN == PROBE_ALLOC_POSIX_MEMALIGN &&
	       ALLOC_FN_ALIGNED_ALLOC == PROBE_ALLOC_ALIGNED_ALLOC, "functions");
_Static_assert(ALLOC_LOST_STACK_FULL == PROBE_ALLOC_LOST_STACK_FULL &&
	       ALLOC_LOST_STACK_ERROR == PROBE_ALLOC_LOST_STACK_ERROR &&
	       ALLOC_LOST_NO_THREAD == PROBE_ALLOC_LOST_NO_THREAD, "loss bits");

#define DEFAULT_STACK_ENTRIES 4096
#define DEFAULT_COUNT_ENTRIES 4096
/* The functions a start must find; the aligned ones are optional (older libcs). */
#define REQUIRED_FNS ((1u << PROBE_ALLOC_MALLOC) | (1u << PROBE_ALLOC_CALLOC) | \
		      (1u << PROBE_ALLOC_REALLOC))

static const char *const fn_names[PROBE_ALLOC_NFN + 1] = {
	"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc", "[unknown]",
};

struct probe_alloc {
	struct alloc_bpf *skel;
	struct bpf_link *links[PROBE_ALLOC_NFN];
	uint64_t period;
	unsigned stack_entries, count_entries;
	unsigned max_depth;        /* a stack this long may have been cut */
	bool started;
	unsigned attached;         /* 1 << fn, at the last start */
	char libc[PATH_MAX];       /* as the target maps it */
	char libc_path[PATH_MAX + 32]; /* the same through /proc/PID/root, attached */
	uint64_t attach_ns;        /* the starts' attaches since the last drain */
	uint64_t starts;
	int stats_fd;              /* probe_bpf_stats_fd(), shared: not ours to close */
	uint64_t prog_runs, prog_ns; /* the program's counters at the last drain */
	int ncpus;
	struct alloc_counters *pcpu;
	struct alloc_key *keys;    /* drain scratch, count_entries long */
	__u64 *ids;                /* drain scratch, stack_entries long */
	struct alloc_stack sbuf;
	uint64_t ubuf[ALLOC_MAX_DEPTH];
};

const char *probe_alloc_fn_name(unsigned fn)
{
	return fn < PROBE_ALLOC_NFN ? fn_names[fn] : fn_names[PROBE_ALLOC_NFN];
}

struct probe_alloc *probe_alloc_open(const struct probe_alloc_opts *o, char *err, size_t errlen)
{
	struct probe_alloc_opts d = {};
	struct probe_alloc *p;
	struct probe__host h;
	long max_stack;
	int ret;

	if (!o)
		o = &d;
	p = probe__state_new("alloc", sizeof(*p), &h, err, errlen);
	if (!p)
		return NULL;
	p->stats_fd = -1;
	p->period = o->sample_bytes ? o->sample_bytes : PROBE_ALLOC_SAMPLE_DEFAULT;
	p->stack_entries = o->stack_entries ? o->stack_entries : DEFAULT_STACK_ENTRIES;
	p->count_entries = o->count_entries ? o->count_entries : DEFAULT_COUNT_ENTRIES;
	p->max_depth = ALLOC_MAX_DEPTH;
	if (!probe__read_sysctl("kernel/perf_event_max_stack", &max_stack) && max_stack > 0 &&
	    max_stack < ALLOC_MAX_DEPTH)
		p->max_depth = max_stack;
	p->ncpus = h.ncpus;
	p->pcpu = calloc(p->ncpus, sizeof(*p->pcpu));
	p->keys = calloc(p->count_entries, sizeof(*p->keys));
	p->ids = calloc(p->stack_entries, sizeof(*p->ids));
	if (!p->pcpu || !p->keys || !p->ids) {
		ret = -ENOMEM;
		snprintf(err, errlen, "alloc: out of memory for %u counts and %u stacks",
			 p->count_entries, p->stack_entries);
		goto out_free;
	}

	probe__libbpf_capture();
	p->skel = alloc_bpf__open();
	if (!p->skel) {
		ret = -errno;
		probe__step_error(err, errlen, "alloc", "open", errno);
		goto out_free;
	}
	p->skel->rodata->pidns_dev = h.pidns_dev;
	p->skel->rodata->pidns_ino = h.pidns_ino;
	p->skel->rodata->period = p->period;
	ret = bpf_map__set_max_entries(p->skel->maps.stacks, p->stack_entries);
	if (!ret)
		ret = bpf_map__set_max_entries(p->skel->maps.counts, p->count_entries);
	if (ret) {
		probe__step_error(err, errlen, "alloc", "sizing maps", -ret);
		goto out_destroy;
	}
	ret = probe__load(p->skel->skeleton, "alloc", err, errlen);
	if (ret)
		goto out_destroy;
	/* What a call costs in the program is measured, not guessed: the kernel times
	 * every BPF program while the process's statistics fd is open. Without it the
	 * cost is unknown. */
	p->stats_fd = probe_bpf_stats_fd();
	return p;

out_destroy:
	alloc_bpf__destroy(p->skel);
out_free:
	free(p->ids);
	free(p->keys);
	free(p->pcpu);
	free(p);
	errno = -ret;
	return NULL;
}

static void detach(struct probe_alloc *p)
{
	for (unsigned i = 0; i < PROBE_ALLOC_NFN; i++) {
		bpf_link__destroy(p->links[i]);
		p->links[i] = NULL;
	}
}

void probe_alloc_free(struct probe_alloc *p)
{
	if (!p)
		return;
	detach(p);
	alloc_bpf__destroy(p->skel);
	free(p->ids);
	free(p->keys);
	free(p->pcpu);
	free(p);
}

uint64_t probe_alloc_sample_bytes(const struct probe_alloc *p)
{
	return p->period;
}

unsigned probe_alloc_stack_entries(const struct probe_alloc *p)
{
	return p->stack_entries;
}

unsigned probe_alloc_count_entries(const struct probe_alloc *p)
{
	return p->count_entries;
}

const char *probe_alloc_libc(const struct probe_alloc *p)
{
	return p->libc;
}

unsigned probe_alloc_attached(const struct probe_alloc *p)
{
	return p->attached;
}

/* Whether a mapped file's name is the C library's: libc.so.6 (glibc), libc-2.31.so
 * (older glibc), libc.so (musl, where it is also the dynamic loader). */
static bool is_libc(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, "libc.so", 7) ||
	       (!strncmp(base, "libc-", 5) && strstr(base, ".so"));
}

/* The path of the libc pid maps into buf. 0, or -ENOENT (statically linked, or not a
 * process). */
static int find_libc(pid_t pid, char *buf, size_t len)
{
	char path[64], line[PATH_MAX + 128];
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');

		if (!file)
			continue;
		file[strcspn(file, "\n")] = '\0';
		if (is_libc(file)) {
			snprintf(buf, len, "%s", file);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

int probe_alloc_start(struct probe_alloc *p, pid_t pid, char *err, size_t errlen)
{
	uint64_t t0 = rt_clock_ns();
	char msg[PATH_MAX + 64];
	int ret;

	if (pid <= 0)
		return -EINVAL;
	if (p->started)
		return -EBUSY;
	ret = find_libc(pid, p->libc, sizeof(p->libc));
	if (ret) {
		snprintf(err, errlen, "alloc: pid %d maps no libc (%s): a statically linked "
			 "program cannot be probed", (int)pid, strerror(-ret));
		p->libc[0] = '\0';
		return ret;
	}
	/* through the target's root, so that the path names the same file from our mount
	 * namespace */
	snprintf(p->libc_path, sizeof(p->libc_path), "/proc/%d/root%s", (int)pid, p->libc);
	p->attached = 0;
	probe__libbpf_capture();
	for (unsigned i = 0; i < PROBE_ALLOC_NFN; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = fn_names[i], .bpf_cookie = i);

		p->links[i] = bpf_program__attach_uprobe_opts(p->skel->progs.alloc_entry, pid,
							      p->libc_path, 0, &uo);
		if (p->links[i]) {
			p->attached |= 1u << i;
			continue;
		}
		ret = -errno;
		if (!(REQUIRED_FNS & (1u << i)))
			continue;
		snprintf(msg, sizeof(msg), "uprobe on %s in %s", fn_names[i], p->libc);
		probe__step_error(err, errlen, "alloc", msg, -ret);
		detach(p);
		p->attached = 0;
		return ret;
	}
	p->skel->bss->target_tgid = pid;
	/* Publish the target before the flag; pairs with the program's read of enabled
	 * before target_tgid. */
	__atomic_store_n(&p->skel->bss->enabled, 1, __ATOMIC_RELEASE);
	p->started = true;
	p->starts++;
	p->attach_ns += rt_clock_ns() - t0;
	return 0;
}

void probe_alloc_mute(struct probe_alloc *p)
{
	/* a flag alone, no data published with it: the program's next read sees it */
	if (p->started)
		__atomic_store_n(&p->skel->bss->enabled, 0, __ATOMIC_RELAXED);
}

int probe_alloc_stop(struct probe_alloc *p)
{
	if (!p->started)
		return 0;
	probe_alloc_mute(p);
	/* Detaching waits for the programs in flight (the uprobe's SRCU grace period), so
	 * the drain sees their counts whole. */
	detach(p);
	p->started = false;
	return 0;
}

/* The leaf-first ips of the stack stored under id into buf: their number, 0 for none,
 * -1 when id is not in the map (never expected: only the drain deletes). */
static int read_stack(struct probe_alloc *p, __u64 id, uint64_t *buf)
{
	unsigned n;

	if (id == ALLOC_NO_STACK)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.stacks), &id, &p->sbuf))
		return -1;
	n = p->sbuf.nr < ALLOC_MAX_DEPTH ? p->sbuf.nr : ALLOC_MAX_DEPTH;
	for (unsigned i = 0; i < n; i++)
		buf[i] = p->sbuf.ips[i];
	return n;
}

/* The program's runs and run time since the last call, added to *stats; nothing where
 * the kernel would not time it. */
static void take_prog_stats(struct probe_alloc *p, struct probe_alloc_stats *stats)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (p->stats_fd < 0 ||
	    bpf_obj_get_info_by_fd(bpf_program__fd(p->skel->progs.alloc_entry), &info, &len))
		return;
	if (stats) {
		stats->prog_timed = true;
		stats->prog_runs += info.run_cnt - p->prog_runs;
		stats->prog_ns += info.run_time_ns - p->prog_ns;
	}
	p->prog_runs = info.run_cnt;
	p->prog_ns = info.run_time_ns;
}

/* Sum the per-CPU counters into *c and zero them. */
static int take_counters(struct probe_alloc *p, struct alloc_counters *c)
{
	/* every member is a __u64 sum (the ABI assert fixes the size) */
	return probe__take_percpu_sums(bpf_map__fd(p->skel->maps.counters), p->pcpu, p->ncpus,
				       sizeof(*c), c);
}

int probe_alloc_drain(struct probe_alloc *p, probe_alloc_fn fn, void *ctx,
		      struct probe_alloc_stats *stats)
{
	int fd = bpf_map__fd(p->skel->maps.counts), ret = 0, err;
	uint64_t truncated = 0, missing = 0;
	struct alloc_counters c;
	unsigned n;

	/* While attached, counts would move between our reads and the deletes. */
	if (p->started)
		return -EBUSY;
	n = probe__map_keys(fd, p->keys, sizeof(*p->keys), p->count_entries);
	for (unsigned i = 0; i < n; i++) {
		const struct alloc_key *k = &p->keys[i];
		struct probe_alloc_stack s = { .fn = k->fn, .lost = k->lost, .ustack = p->ubuf };
		struct alloc_val v;
		int nu;

		if (bpf_map_lookup_elem(fd, k, &v))
			return -errno;
		memcpy(s.comm, k->comm, sizeof(s.comm));
		s.comm[sizeof(s.comm) - 1] = '\0';
		s.samples = v.samples;
		s.bytes = v.bytes;
		nu = read_stack(p, k->ustack, p->ubuf);
		if (nu < 0) {
			s.lost |= PROBE_ALLOC_LOST_STACK_ERROR;
			missing += v.samples;
		}
		s.nuser = nu > 0 ? nu : 0;
		if (s.nuser >= p->max_depth) {
			s.lost |= PROBE_ALLOC_TRUNCATED;
			truncated += v.samples;
		}
		/* After a stop, keep emptying the maps but call fn no more. */
		if (!ret && fn)
			ret = fn(&s, ctx);
	}
	/* the stacks too, including those whose count could not be inserted */
	err = probe__map_delete(fd, p->keys, sizeof(*p->keys), n);
	if (!err)
		err = probe__map_clear(bpf_map__fd(p->skel->maps.stacks), p->ids, sizeof(*p->ids),
				       p->stack_entries);
	if (!err)
		err = take_counters(p, &c);
	if (err)
		return err;
	if (c.counts_full && !ret && fn) {
		struct probe_alloc_stack s = {
			.fn = PROBE_ALLOC_NFN,
			.ustack = p->ubuf,
			.lost = PROBE_ALLOC_LOST_COUNTS_FULL,
			.samples = c.counts_full,
			.bytes = c.counts_full_bytes,
		};

		ret = fn(&s, ctx);
	}
	take_prog_stats(p, stats);
	if (stats) {
		for (unsigned i = 0; i < PROBE_ALLOC_NFN; i++) {
			stats->calls[i] += c.calls[i];
			stats->bytes[i] += c.bytes[i];
		}
		stats->realloc_null += c.realloc_null;
		stats->overflow += c.overflow;
		stats->samples += c.samples;
		stats->sampled_bytes += c.sampled_bytes;
		stats->counts_full += c.counts_full;
		stats->counts_full_bytes += c.counts_full_bytes;
		stats->stack_full += c.stack_full;
		stats->stack_errors += c.stack_errors + missing;
		stats->no_thread += c.no_thread;
		stats->truncated += truncated;
		stats->starts += p->starts;
		stats->attach_ns += p->attach_ns;
	}
	p->starts = 0;
	p->attach_ns = 0;
	return ret;
}
