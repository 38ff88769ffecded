/*
 * bounded-workers: 10,000 items pulled by 8 worker tasks from one shared bounded queue.
 *
 * The studies' "bounded workers" (Kyo ~1.13x cats-effect; cats-effect ~2.22x ahead with a
 * little CPU work per item): a fixed number of consumers drain a queue that the op's
 * own task fills. The op spawns `workers` tasks, sends items 0..n-1 into a channel of
 * `cap`, closes it, and joins the workers, each of which receives until the channel is
 * closed and empty. Every item is handed over once, so the op costs n sends and n
 * receives contended by `workers` consumers; whether the items' work runs in parallel
 * depends on where the scheduler puts the workers (all on the spawning worker, or
 * spread over the others).
 *
 * An item's work is the `workers` arithmetic of its value with `rounds` rounds
 * (wl_workers_mix; 64: the "little CPU work" variant). The op returns the wrapping sum
 * of the workers' sums; the check compares it with the sequential sum of the same
 * arithmetic over all items, and the items the workers received with n.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

#define MAX_WORKERS 256

struct bounded_workers {
	struct rt_chan chan; /* first: the struct is allocated 64-byte aligned */
	void **slots;
	long n, workers;
	uint64_t rounds;
	uint32_t cap;
	uint64_t reference; /* the sequential sum */
	/* by the last op, for check's message */
	int64_t sent, received[MAX_WORKERS];
	long spawned;
	struct rt_task *tasks[MAX_WORKERS];
	struct bounded_worker {
		struct bounded_workers *bw;
		long index;
	} args[MAX_WORKERS];
};

static uint64_t bounded_worker(void *arg)
{
	const struct bounded_worker *w = arg;
	struct bounded_workers *bw = w->bw;
	uint64_t sum = 0;
	int64_t received = 0;
	void *v;

	while (!rt_chan_recv(&bw->chan, &v)) {
		sum += wl_workers_mix((uint64_t)(uintptr_t)v, 1, bw->rounds);
		received++;
	}
	bw->received[w->index] = received;
	return sum;
}

static int bounded_workers_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	long cap = wl_int(ctx, "cap");
	struct bounded_workers *bw = aligned_alloc(64, sizeof(*bw));

	if (!bw || !(bw->slots = calloc(RT_CHAN_SLOTS(cap), sizeof(void *)))) {
		free(bw);
		snprintf(err, errlen, "bounded-workers: out of memory");
		return -ENOMEM;
	}
	bw->n = wl_int(ctx, "n");
	bw->workers = wl_int(ctx, "workers");
	bw->rounds = (uint64_t)wl_int(ctx, "rounds");
	bw->cap = (uint32_t)cap;
	bw->reference = wl_workers_mix(0, (uint64_t)bw->n, bw->rounds);
	bw->sent = 0;
	bw->spawned = 0;
	for (long k = 0; k < MAX_WORKERS; k++) {
		bw->received[k] = 0;
		bw->args[k] = (struct bounded_worker){ bw, k };
	}
	ctx->state = bw;
	return 0;
}

static uint64_t bounded_workers_op(struct wl_ctx *ctx)
{
	struct bounded_workers *bw = ctx->state;
	uint64_t sum = 0;
	long i;

	/* a fresh queue per op; the last op's was drained and closed */
	rt_chan_init(&bw->chan, bw->slots, bw->cap);
	for (bw->spawned = 0; bw->spawned < bw->workers; bw->spawned++) {
		bw->received[bw->spawned] = 0;
		bw->tasks[bw->spawned] = rt_spawn(bounded_worker, &bw->args[bw->spawned]);
		if (!bw->tasks[bw->spawned])
			break; /* fewer workers still drain the queue; the check says how many ran */
	}
	for (i = 0; i < bw->n && bw->spawned; i++)
		if (rt_chan_send(&bw->chan, (void *)(uintptr_t)i))
			break;
	bw->sent = i;
	rt_chan_close(&bw->chan); /* the workers stop once they have drained it */
	for (long k = 0; k < bw->spawned; k++)
		sum += rt_join(bw->tasks[k]);
	return sum;
}

static bool bounded_workers_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct bounded_workers *bw = ctx->state;
	int64_t received = 0;

	for (long k = 0; k < bw->spawned; k++)
		received += bw->received[k];
	if (result == bw->reference && received == bw->n)
		return true;
	snprintf(err, errlen,
		 "bounded-workers: the sum is %llu, expected %llu (the sequential reference); "
		 "%lld of %ld items sent, %lld received by %ld of %ld workers",
		 (unsigned long long)result, (unsigned long long)bw->reference,
		 (long long)bw->sent, bw->n, (long long)received, bw->spawned, bw->workers);
	return false;
}

static void bounded_workers_teardown(struct wl_ctx *ctx)
{
	struct bounded_workers *bw = ctx->state;

	if (bw)
		free(bw->slots);
	free(bw);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "10000", 1, 100000000, NULL, "items through the queue per op" },
	{ "workers", WL_INT, "8", 1, MAX_WORKERS, NULL, "worker tasks pulling from the queue" },
	{ "rounds", WL_INT, "0", 0, 1000000, NULL,
	  "arithmetic rounds of the workers' mix per item (64: a little CPU work)" },
	{ "cap", WL_POW2, "1024", 2, 1 << 20, NULL, "the queue's capacity, a power of two" },
	{ 0 },
};

const struct wl_desc wl_bounded_workers = {
	.name = "bounded-workers",
	.summary = "n items sent into one bounded queue, pulled by a fixed number of worker "
		   "tasks",
	.unit = "ops/s",
	.params = params,
	.setup = bounded_workers_setup,
	.op = bounded_workers_op,
	.check = bounded_workers_check,
	.teardown = bounded_workers_teardown,
};
