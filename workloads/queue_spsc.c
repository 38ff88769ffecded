/*
 * queue-spsc: 10,000 integers from one producer task to one consumer task through a
 * bounded channel of capacity 1,024.
 *
 * The studies' "integer queue, one producer and one consumer" (Kyo ~1.45x
 * cats-effect): the op spawns both tasks and joins them. Where the two run decides the
 * cost: on one worker they take turns, each filling or draining the channel before it
 * waits; on two they run side by side and wake each other when it runs full or empty.
 * The producer sends 1..n; the op returns the consumer's sum, n(n+1)/2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

struct queue_spsc {
	struct rt_chan chan; /* first: the struct is allocated 64-byte aligned */
	void **slots;
	long n;
	uint32_t cap;
	int64_t sent, received; /* by the last op, for check's message */
};

static uint64_t queue_spsc_producer(void *arg)
{
	struct queue_spsc *q = arg;
	long i, n = q->n;

	for (i = 1; i <= n; i++)
		if (rt_chan_send(&q->chan, (void *)(uintptr_t)i))
			break;
	return (uint64_t)(i - 1);
}

static uint64_t queue_spsc_consumer(void *arg)
{
	struct queue_spsc *q = arg;
	uint64_t sum = 0;
	long i, n = q->n;
	void *v;

	for (i = 0; i < n; i++) {
		if (rt_chan_recv(&q->chan, &v))
			break;
		sum += (uint64_t)(uintptr_t)v;
	}
	q->received = i;
	return sum;
}

static int queue_spsc_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	long cap = wl_int(ctx, "cap");
	struct queue_spsc *q = aligned_alloc(64, sizeof(*q));

	if (!q || !(q->slots = calloc(RT_CHAN_SLOTS(cap), sizeof(void *)))) {
		free(q);
		snprintf(err, errlen, "queue-spsc: out of memory");
		return -ENOMEM;
	}
	q->n = wl_int(ctx, "n");
	q->cap = (uint32_t)cap;
	ctx->state = q;
	return 0;
}

static uint64_t queue_spsc_op(struct wl_ctx *ctx)
{
	struct queue_spsc *q = ctx->state;
	struct rt_task *producer, *consumer;
	uint64_t sum;

	/* a fresh channel per op, as the studies make a new queue; the last op's is empty */
	rt_chan_init(&q->chan, q->slots, q->cap);
	q->sent = q->received = 0;
	consumer = rt_spawn(queue_spsc_consumer, q);
	if (!consumer)
		return 0;
	producer = rt_spawn(queue_spsc_producer, q);
	if (!producer) {
		rt_chan_close(&q->chan); /* the consumer stops at once */
		rt_join(consumer);
		return 0;
	}
	q->sent = (int64_t)rt_join(producer);
	sum = rt_join(consumer);
	return sum;
}

static bool queue_spsc_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct queue_spsc *q = ctx->state;
	uint64_t n = (uint64_t)q->n, want = n * (n + 1) / 2;

	if (result == want)
		return true;
	snprintf(err, errlen,
		 "queue-spsc: the consumer's sum is %llu, expected %llu (%lld sent, %lld received)",
		 (unsigned long long)result, (unsigned long long)want, (long long)q->sent,
		 (long long)q->received);
	return false;
}

static void queue_spsc_teardown(struct wl_ctx *ctx)
{
	struct queue_spsc *q = ctx->state;

	if (q)
		free(q->slots);
	free(q);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "10000", 1, 100000000, NULL, "integers sent per op" },
	{ "cap", WL_POW2, "1024", 2, 1 << 20, NULL, "the channel's capacity, a power of two" },
	{ 0 },
};

const struct wl_desc wl_queue_spsc = {
	.name = "queue-spsc",
	.summary = "n integers from one producer task to one consumer task through a bounded "
		   "channel of capacity cap",
	.unit = "ops/s",
	.params = params,
	.setup = queue_spsc_setup,
	.op = queue_spsc_op,
	.check = queue_spsc_check,
	.teardown = queue_spsc_teardown,
};
