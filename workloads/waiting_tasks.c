/*
 * waiting-tasks: 100,000 tasks each holding a 1 KiB payload, all waiting on one latch;
 * then the latch opens and every task returns its payload's checksum.
 *
 * The studies' memory benchmark (cats-effect: live heap 191.0 MiB, footprint 418.5;
 * Loom 228.7 / 390.0): what a waiting task costs. Each task allocates its payload with
 * rt_alloc(), fills it from its index, counts down `ready` and waits on `go`; the op
 * waits for `ready`, so all of them wait at once, opens `go` and joins them. The check
 * is the sum of the checksums, computed at setup without tasks.
 *
 * Memory is measured in a pass of its own, from `report` after the measured iterations:
 * one more op that samples the process at its peak (every task waiting). Reading
 * /proc/self/smaps_rollup walks 200,000 mappings, so sampling in every op would slow the
 * very ops being timed; the extra op runs after the throughput and the runtime's
 * counters were taken, so only an attached profiler sees it. The figures: malloc's bytes
 * in use (mallinfo2(), which also holds the task objects and saved stacks of the compact
 * stack mode, which do not go through rt_alloc), the bytes the op's tasks rt_alloc'ed,
 * RSS and PSS, RSS per waiting task, and the stack mode that ran.

 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "workloads/internal.h"

#define MIB (1024.0 * 1024.0)

struct waiting_tasks;

struct wt_slot {
	struct waiting_tasks *st;
	uint64_t index;
};

struct wt_memory {
	double live_heap;   /* malloc's bytes in use at the peak */
	double op_heap;     /* bytes the op's tasks had rt_alloc'ed by then */
	double rss, pss;    /* at the peak; 0 when smaps_rollup cannot be read */
	double rss_before;  /* when the op began */
	bool smaps;
};

struct waiting_tasks {
	struct rt_sched *sched;
	struct rt_task **tasks;
	struct wt_slot *slots;
	long ntasks;
	size_t payload;
	uint64_t reference;
	struct rt_latch ready, go;
	uint32_t alloc_failures;
	long spawned;
	int spawn_errno;
	bool sample;        /* this op measures memory at its peak */
	struct wt_memory mem;
};

/* ---- the payload ------------------------------------------------------------------------- */

/* Task i's payload: an LCG stream seeded from i, so any task can be checked alone. */
static void payload_fill(uint8_t *buf, size_t len, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		uint64_t w;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		w = x ^ (x >> 29);
		memcpy(buf + off, &w, 8);
	}
	x = x * 6364136223846793005ull + 1442695040888963407ull;
	for (; off < len; off++, x >>= 8)
		buf[off] = (uint8_t)x;
}

static __attribute__((noinline)) uint64_t payload_checksum(const uint8_t *buf, size_t len)
{
	uint64_t h = WL__FOLD_SEED;
	size_t off = 0;

	for (; off + 8 <= len; off += 8) {
		uint64_t w;

		memcpy(&w, buf + off, 8);
		h = wl__fold(h, w);
	}
	for (; off < len; off++)
		h = wl__fold(h, buf[off]);
	return h;
}

/* ---- memory ------------------------------------------------------------------------------ */

static double malloc_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (double)(mi.uordblks + mi.hblkhd); /* arena chunks in use + mmap'd chunks */
}

static uint64_t rt_alloc_bytes(struct rt_sched *s)
{
	struct rt_worker_stats total;

	rt_sched_stats_total(s, &total);
	return total.alloc_bytes;
}

/* ---- the op ------------------------------------------------------------------------------ */

static uint64_t waiting_task(void *arg)
{
	const struct wt_slot *slot = arg;
	struct waiting_tasks *st = slot->st;
	uint8_t *buf = rt_alloc(st->payload);
	uint64_t sum;

	if (buf)
		payload_fill(buf, st->payload, slot->index);
	else
		__atomic_fetch_add(&st->alloc_failures, 1, __ATOMIC_RELAXED);
	rt_latch_count_down(&st->ready);
	rt_latch_wait(&st->go);
	if (!buf)
		return 0;
	sum = payload_checksum(buf, st->payload);
	rt_free(buf);
	return sum;
}

/* At the peak: every task holds its payload and waits. */
static __attribute__((noinline)) void waiting_tasks_sample(struct waiting_tasks *st,
							   uint64_t alloc_before)
{
	struct wt_memory *m = &st->mem;

	m->live_heap = malloc_in_use();
	m->op_heap = (double)(rt_alloc_bytes(st->sched) - alloc_before);
	m->smaps = !wl__smaps_rollup(&m->rss, &m->pss);
}

static uint64_t waiting_tasks_op(struct wl_ctx *ctx)
{
	struct waiting_tasks *st = ctx->state;
	uint64_t sum = 0, alloc_before = 0;
	double pss;

	st->alloc_failures = 0;
	st->spawn_errno = 0;
	rt_latch_init(&st->ready, (uint64_t)st->ntasks);
	rt_latch_init(&st->go, 1);
	if (st->sample) {
		memset(&st->mem, 0, sizeof(st->mem));
		wl__smaps_rollup(&st->mem.rss_before, &pss);
		alloc_before = rt_alloc_bytes(st->sched);
	}
	for (st->spawned = 0; st->spawned < st->ntasks; st->spawned++) {
		struct rt_task *t = rt_spawn(waiting_task, &st->slots[st->spawned]);

		if (!t) {
			st->spawn_errno = errno;
			break;
		}
		st->tasks[st->spawned] = t;
	}
	/* with a task missing, ready never opens: release the ones there are */
	if (st->spawned == st->ntasks) {
		rt_latch_wait(&st->ready);
		if (st->sample)
			waiting_tasks_sample(st, alloc_before);
	}
	rt_latch_count_down(&st->go);
	for (long i = 0; i < st->spawned; i++)
		sum += rt_join(st->tasks[i]);
	return sum;
}

static bool waiting_tasks_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct waiting_tasks *st = ctx->state;

	if (st->spawned < st->ntasks) {
		snprintf(err, errlen, "waiting-tasks: task %ld of %ld could not be spawned: %s",
			 st->spawned + 1, st->ntasks, strerror(st->spawn_errno));
		return false;
	}
	if (st->alloc_failures) {
		snprintf(err, errlen, "waiting-tasks: %u of %ld payloads could not be allocated",
			 st->alloc_failures, st->ntasks);
		return false;
	}
	if (result == st->reference)
		return true;
	snprintf(err, errlen, "waiting-tasks: the checksums sum to %#llx, expected %#llx",
		 (unsigned long long)result, (unsigned long long)st->reference);
	return false;
}

/* ---- setup, report, teardown ----------------------------------------------------------- */

static int waiting_tasks_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	long ntasks = wl_int(ctx, "tasks");
	size_t payload = (size_t)wl_int(ctx, "payload");
	struct waiting_tasks *st;
	uint8_t *buf;

	st = calloc(1, sizeof(*st));
	buf = malloc(payload);
	if (!st || !buf || !(st->tasks = calloc((size_t)ntasks, sizeof(*st->tasks))) ||
	    !(st->slots = calloc((size_t)ntasks, sizeof(*st->slots)))) {
		if (st)
			free(st->tasks);
		free(st);
		free(buf);
		snprintf(err, errlen, "waiting-tasks: out of memory");
		return -ENOMEM;
	}
	st->sched = ctx->sched;
	st->ntasks = ntasks;
	st->payload = payload;
	for (long i = 0; i < ntasks; i++) {
		st->slots[i] = (struct wt_slot){ st, (uint64_t)i };
		payload_fill(buf, payload, (uint64_t)i);
		st->reference += payload_checksum(buf, payload);
	}
	free(buf);
	ctx->state = st;
	return 0;
}

static uint64_t waiting_tasks_sample_op(void *arg)
{
	return waiting_tasks_op(arg);
}

/* The dedicated pass: one more op, sampled at its peak. No figures if it failed. */
static size_t waiting_tasks_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	struct waiting_tasks *st = ctx->state;
	const struct wt_memory *m = &st->mem;
	struct rt_task *t;
	char err[256];
	uint64_t r;
	size_t n = 0;

	st->sample = true;
	t = rt_submit(ctx->sched, waiting_tasks_sample_op, ctx);
	r = t ? rt_join(t) : 0;
	st->sample = false;
	if (!t || !waiting_tasks_check(ctx, r, err, sizeof(err)))
		return 0;
	wl_metric_add(out, &n, max, "live_heap", "MiB", m->live_heap / MIB);
	wl_metric_add(out, &n, max, "payload_heap", "MiB", m->op_heap / MIB);
	if (m->smaps) {
		wl_metric_add(out, &n, max, "rss", "MiB", m->rss / MIB);
		wl_metric_add(out, &n, max, "pss", "MiB", m->pss / MIB);
		wl_metric_add(out, &n, max, "rss_per_task", "KiB",
		       (m->rss - m->rss_before) / 1024.0 / (double)st->ntasks);
	}
	wl_metric_add(out, &n, max, "compact_stacks", "0/1",
	       rt_sched_config(ctx->sched)->stack_mode == RT_STACK_COMPACT);
	return n;
}

static void waiting_tasks_teardown(struct wl_ctx *ctx)
{
	struct waiting_tasks *st = ctx->state;

	if (st) {
		free(st->tasks);
		free(st->slots);
	}
	free(st);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "tasks", WL_INT, "100000", 1, 1000000, NULL, "tasks waiting at once" },
	{ "payload", WL_INT, "1024", 1, 65536, NULL, "bytes each task allocates and holds" },
	{ 0 },
};

const struct wl_desc wl_waiting_tasks = {
	.name = "waiting-tasks",
	.summary = "tasks each holding a payload-byte buffer, all waiting on one latch, then "
		   "released and joined; reports live heap, RSS and PSS",
	.unit = "ops/s",
	.params = params,
	.setup = waiting_tasks_setup,
	.op = waiting_tasks_op,
	.check = waiting_tasks_check,
	.teardown = waiting_tasks_teardown,
	.report = waiting_tasks_report,
};
