/*
 * runtime loader: opens, sizes and loads runtime.bpf.c once; for each process, attaches
 * every USDT point of its executable to it (libbpf resolves the notes and turns the
 * semaphores on) and runs a reader thread that hands each ring-buffer record to the
 * caller as it arrives, so the ring needs room for a fraction of a second of events,
 * not for the whole measurement.
 *
 * Invariant: every event the programs saw was either handed to fn or counted in the
 * drops array, by CPU and kind; stop detaches before it empties the ring, so nothing
 * arrives after it.
 */
#include "probes/probes.h"
#include "probes/common/env.h"

#include <linux/types.h> /* before the shared header and the skeleton, which use __u64 */
#include "probes/runtime/runtime.h"
#include "probes/runtime/runtime.skel.h"
#include "runtime/clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct runtime_event) == 48, "runtime_event ABI");
_Static_assert(RUNTIME_EV_SPAWN == PROBE_RT_SPAWN && RUNTIME_EV_ENQUEUE == PROBE_RT_ENQUEUE &&
	       RUNTIME_EV_RUN_BEGIN == PROBE_RT_RUN_BEGIN &&
	       RUNTIME_EV_RUN_END == PROBE_RT_RUN_END && RUNTIME_EV_STEAL == PROBE_RT_STEAL &&
	       RUNTIME_EV_PLACE == PROBE_RT_PLACE && RUNTIME_EV_PARK == PROBE_RT_PARK &&
	       RUNTIME_EV_UNPARK == PROBE_RT_UNPARK &&
	       RUNTIME_EV_BLOCK_BEGIN == PROBE_RT_BLOCK_BEGIN &&
	       RUNTIME_EV_BLOCK_END == PROBE_RT_BLOCK_END && RUNTIME_EV_FLUSH == PROBE_RT_FLUSH &&
	       RUNTIME_EV_WINDOW == PROBE_RT_WINDOW && RUNTIME_NKINDS == PROBE_RT_NKINDS,
	       "event kinds");

#define RING_MAX (64u << 20)

static const char *const kind_names[PROBE_RT_NKINDS] = {
	"spawn", "enqueue", "run_begin", "run_end", "steal", "place",
	"park",	 "unpark",  "block_begin", "block_end", "flush", "window",
};

struct probe_runtime {
	struct runtime_bpf *skel;
	struct ring_buffer *ring;
	struct bpf_link *links[PROBE_RT_NKINDS];
	int stats_fd;              /* probe_bpf_stats_fd(), shared: not ours to close */
	int ncpus;                 /* possible CPUs: per-CPU map values */
	__u64 *pcpu;               /* one drops value per CPU, for reading */
	unsigned ring_bytes;
	probe_rt_fn fn;
	void *ctx;
	bool hold_reader;
	bool started;
	pthread_t reader;
	bool reader_running;
	bool reader_stop;          /* atomic: the reader's loop condition */
};

const char *probe_rt_kind_name(unsigned kind)
{
	return kind < PROBE_RT_NKINDS ? kind_names[kind] : "?";
}

static void step_error(char *err, size_t len, const char *step, int e)
{
	probe__step_error(err, len, "runtime", step, e);
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct probe_runtime *p = ctx;
	const struct runtime_event *r = data;
	struct probe_rt_event e;

	if (size < sizeof(*r))
		return 0;
	e.ts = r->ts;
	e.tid = r->tid;
	e.kind = r->kind;
	e.worker = r->worker;
	e.in_window = r->flags & RUNTIME_IN_WINDOW;
	e.a0 = r->a0;
	e.a1 = r->a1;
	e.a2 = r->a2;
	p->fn(&e, p->ctx);
	return 0;
}

/* The programs submit without waking anyone (an event would otherwise cost a wake-up
 * of this thread), so the reader empties the ring on a timer instead of waiting on it. */
static void *reader_main(void *arg)
{
	struct probe_runtime *p = arg;
	struct timespec ts = { 0, PROBE_RT_POLL_MS * 1000000L };

	while (!__atomic_load_n(&p->reader_stop, __ATOMIC_ACQUIRE)) {
		ring_buffer__consume(p->ring);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* Events of PROBE_RT_RING_MS (or the whole measurement) at PROBE_RT_RATE on every CPU,
 * each a record and its 8-byte header, as a power of two. */
static unsigned ring_size(unsigned asked, double measure_s, int ncpus)
{
	double s = measure_s > 0 ? measure_s : 1.0, want;
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE), r = page;

	if (s > PROBE_RT_RING_MS / 1000.0)
		s = PROBE_RT_RING_MS / 1000.0;
	want = asked ? asked : s * PROBE_RT_RATE * ncpus * (sizeof(struct runtime_event) + 8);
	while (r < want && r < RING_MAX)
		r <<= 1;
	return (unsigned)r;
}

struct probe_runtime *probe_runtime_open(const struct probe_runtime_opts *o, char *err,
					 size_t errlen)
{
	struct probe_runtime *p;
	struct probe__host h;
	int ret;

	if (!o || !o->fn) {
		snprintf(err, errlen, "runtime: an event handler is required");
		errno = EINVAL;
		return NULL;
	}
	p = probe__state_new("runtime", sizeof(*p), &h, err, errlen);
	if (!p)
		return NULL;
	p->stats_fd = -1;
	p->fn = o->fn;
	p->ctx = o->ctx;
	p->hold_reader = o->hold_reader;
	p->ncpus = h.ncpus;
	p->pcpu = calloc(p->ncpus, sizeof(*p->pcpu));
	if (!p->pcpu) {
		ret = -ENOMEM;
		snprintf(err, errlen, "runtime: out of memory");
		goto out_free;
	}
	p->ring_bytes = ring_size(o->ring_bytes, o->measure_s, p->ncpus);

	probe__libbpf_capture();
	p->skel = runtime_bpf__open();
	if (!p->skel) {
		ret = -errno;
		step_error(err, errlen, "open", errno);
		goto out_free;
	}
	p->skel->rodata->pidns_dev = h.pidns_dev;
	p->skel->rodata->pidns_ino = h.pidns_ino;
	ret = bpf_map__set_max_entries(p->skel->maps.events, p->ring_bytes);
	if (ret) {
		step_error(err, errlen, "sizing the ring buffer", -ret);
		goto out_destroy;
	}
	ret = probe__load(p->skel->skeleton, "runtime", err, errlen);
	if (ret)
		goto out_destroy;
	p->ring = ring_buffer__new(bpf_map__fd(p->skel->maps.events), on_record, p, NULL);
	if (!p->ring) {
		ret = -errno;
		step_error(err, errlen, "ring buffer", errno);
		goto out_destroy;
	}
	/* What an event costs in the program is measured, not guessed (two clock reads a
	 * run while the process's statistics fd is open); without it the report says it was not measured. */
	p->stats_fd = probe_bpf_stats_fd();
	return p;

out_destroy:
	runtime_bpf__destroy(p->skel);
out_free:
	free(p->pcpu);
	free(p);
	errno = -ret;
	return NULL;
}

static struct bpf_program *prog_of(struct runtime_bpf *skel, unsigned kind)
{
	struct bpf_program *const progs[PROBE_RT_NKINDS] = {
		skel->progs.rt_spawn,	   skel->progs.rt_enqueue,   skel->progs.rt_run_begin,
		skel->progs.rt_run_end,	   skel->progs.rt_steal,     skel->progs.rt_place,
		skel->progs.rt_park,	   skel->progs.rt_unpark,    skel->progs.rt_block_begin,
		skel->progs.rt_block_end, skel->progs.rt_flush,	     skel->progs.rt_window,
	};

	return progs[kind];
}

static void detach(struct probe_runtime *p)
{
	for (unsigned k = 0; k < PROBE_RT_NKINDS; k++) {
		bpf_link__destroy(p->links[k]);
		p->links[k] = NULL;
	}
}

int probe_runtime_start(struct probe_runtime *p, pid_t pid, uint64_t *attach_ns, char *err,
			size_t errlen)
{
	char link[64], exe[PATH_MAX], step[96];
	uint64_t t0 = rt_clock_ns();
	ssize_t n;
	int ret;

	if (p->started) {
		snprintf(err, errlen, "runtime: already attached");
		return -EBUSY;
	}
	/* the file itself, not /proc/PID/exe: libbpf reads its notes and the kernel's
	 * uprobes key on its inode */
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, exe, sizeof(exe) - 1);
	if (n < 0) {
		ret = -errno;
		snprintf(err, errlen, "runtime: cannot read %s: %s", link, strerror(errno));
		return ret;
	}
	exe[n] = '\0';
	p->skel->bss->target_tgid = (__u32)pid;
	p->skel->bss->in_window = 0;
	probe__libbpf_capture();
	for (unsigned k = 0; k < PROBE_RT_NKINDS; k++) {
		p->links[k] = bpf_program__attach_usdt(prog_of(p->skel, k), pid, exe, "rt",
						       kind_names[k], NULL);
		if (!p->links[k]) {
			ret = -errno;
			snprintf(step, sizeof(step), "attach to rt:%s in %s", kind_names[k], exe);
			step_error(err, errlen, step, errno);
			detach(p);
			return ret;
		}
	}
	if (attach_ns)
		*attach_ns = rt_clock_ns() - t0;
	p->started = true;
	if (p->hold_reader)
		return 0;
	__atomic_store_n(&p->reader_stop, false, __ATOMIC_RELEASE);
	ret = -pthread_create(&p->reader, NULL, reader_main, p);
	if (ret) {
		snprintf(err, errlen, "runtime: cannot start the reader thread: %s", strerror(-ret));
		detach(p);
		p->started = false;
		return ret;
	}
	p->reader_running = true;
	return 0;
}

void probe_runtime_mute(struct probe_runtime *p)
{
	/* no process has tgid 0: every program returns before it reserves a record (a flag
	 * alone, no data published with it) */
	__atomic_store_n(&p->skel->bss->target_tgid, 0, __ATOMIC_RELAXED);
}

int probe_runtime_stop(struct probe_runtime *p)
{
	int ret;

	if (!p->started)
		return 0;
	/* no event can arrive once detached; then the reader goes, and what it left is
	 * handed over here */
	detach(p);
	if (p->reader_running) {
		__atomic_store_n(&p->reader_stop, true, __ATOMIC_RELEASE);
		pthread_join(p->reader, NULL);
		p->reader_running = false;
	}
	p->started = false;
	ret = ring_buffer__consume(p->ring);
	return ret < 0 ? ret : 0;
}

void probe_runtime_free(struct probe_runtime *p)
{
	if (!p)
		return;
	probe_runtime_stop(p);
	ring_buffer__free(p->ring);
	runtime_bpf__destroy(p->skel);
	free(p->pcpu);
	free(p);
}

unsigned probe_runtime_ring_bytes(const struct probe_runtime *p)
{
	return p->ring_bytes;
}

int probe_runtime_ncpus(const struct probe_runtime *p)
{
	return p->ncpus;
}

int probe_runtime_drops(struct probe_runtime *p, uint64_t *per_cpu,
			uint64_t by_kind[PROBE_RT_NKINDS][2])
{
	int fd = bpf_map__fd(p->skel->maps.drops);

	for (__u32 key = 0; key < PROBE_RT_NKINDS * 2; key++) {
		if (bpf_map_lookup_elem(fd, &key, p->pcpu))
			return -errno;
		for (int c = 0; c < p->ncpus; c++) {
			if (per_cpu)
				per_cpu[c] += p->pcpu[c];
			if (by_kind)
				by_kind[key / 2][key % 2] += p->pcpu[c];
		}
		memset(p->pcpu, 0, p->ncpus * sizeof(*p->pcpu));
		if (bpf_map_update_elem(fd, &key, p->pcpu, BPF_ANY))
			return -errno;
	}
	return 0;
}

int probe_runtime_prog_stats(const struct probe_runtime *p, uint64_t *runs, uint64_t *ns)
{
	*runs = *ns = 0;
	if (p->stats_fd < 0)
		return -ENOTSUP;
	for (unsigned k = 0; k < PROBE_RT_NKINDS; k++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog_of(p->skel, k)), &info, &len))
			return -errno;
		*runs += info.run_cnt;
		*ns += info.run_time_ns;
	}
	return 0;
}
