/*
 * stream-queue: 10,000 elements in chunks of 128 through a queue-backed stream, mapped
 * and folded.
 *
 * The studies' "queue-backed stream batches" (Kyo ~3.7x cats-effect). A stream whose
 * upstream runs ahead of its consumer through a bounded queue of chunks, as a buffered
 * (prefetching) stream does: the op spawns the upstream as a producer task, which emits
 * 0..n-1 in chunks of `chunk` elements, each a fresh allocation, into a bounded channel
 * of `cap` chunks, then closes it; the op's own task is the downstream: it maps each
 * element (x + 1), folds it (wl__fold, so order counts) and frees the chunk. What is measured is the hand-off of chunks between two tasks and the chunks'
 * allocation, as in the studies, not the per-element arithmetic.
 *
 * The check: the fold equals the sequential fold computed at setup and every element
 * arrived (a producer that could not allocate a chunk stops early and says so).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/internal.h"
#include "workloads/workload.h"

struct stream_queue {
	struct rt_chan chan; /* first: the struct is allocated 64-byte aligned */
	void **slots;
	long n, chunk;
	uint32_t cap;
	uint64_t reference; /* the fold of a correct op */
	/* by the last op, for check's message */
	int64_t emitted, folded;
	bool alloc_failed;
};

/* One chunk of the stream, allocated by the producer and freed by the consumer. */
struct chunk {
	uint32_t len;
	uint64_t v[];
};

static inline uint64_t stream_queue_map(uint64_t x)
{
	return x + 1;
}

static uint64_t stream_queue_producer(void *arg)
{
	struct stream_queue *q = arg;
	long n = q->n, next = 0;

	while (next < n) {
		long len = n - next < q->chunk ? n - next : q->chunk;
		struct chunk *c = rt_alloc(sizeof(*c) + (size_t)len * sizeof(c->v[0]));

		if (!c) {
			q->alloc_failed = true;
			break;
		}
		c->len = (uint32_t)len;
		for (long i = 0; i < len; i++)
			c->v[i] = (uint64_t)(next + i);
		if (rt_chan_send(&q->chan, c)) {
			rt_free(c); /* closed under us: nothing takes it any more */
			break;
		}
		next += len;
	}
	q->emitted = next;
	rt_chan_close(&q->chan); /* the end of the stream */
	return 0;
}

static int stream_queue_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	long cap = wl_int(ctx, "cap");
	struct stream_queue *q = aligned_alloc(64, sizeof(*q));

	if (!q || !(q->slots = calloc(RT_CHAN_SLOTS(cap), sizeof(void *)))) {
		free(q);
		snprintf(err, errlen, "stream-queue: out of memory");
		return -ENOMEM;
	}
	q->n = wl_int(ctx, "n");
	q->chunk = wl_int(ctx, "chunk");
	q->cap = (uint32_t)cap;
	q->reference = WL__FOLD_SEED;
	for (long i = 0; i < q->n; i++)
		q->reference = wl__fold(q->reference, stream_queue_map((uint64_t)i));
	q->emitted = q->folded = 0;
	q->alloc_failed = false;
	ctx->state = q;
	return 0;
}

static uint64_t stream_queue_op(struct wl_ctx *ctx)
{
	struct stream_queue *q = ctx->state;
	uint64_t acc = WL__FOLD_SEED;
	struct rt_task *producer;
	int64_t folded = 0;
	void *v;

	/* a fresh channel per op, as each op builds its stream anew; the last op's is empty */
	rt_chan_init(&q->chan, q->slots, q->cap);
	q->emitted = q->folded = 0;
	q->alloc_failed = false;
	producer = rt_spawn(stream_queue_producer, q);
	if (!producer)
		return 0; /* nothing folded: the check names it */
	while (!rt_chan_recv(&q->chan, &v)) {
		struct chunk *c = v;

		for (uint32_t i = 0; i < c->len; i++)
			acc = wl__fold(acc, stream_queue_map(c->v[i]));
		folded += c->len;
		rt_free(c);
	}
	rt_join(producer);
	q->folded = folded;
	return acc;
}

static bool stream_queue_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct stream_queue *q = ctx->state;

	if (result == q->reference && q->folded == q->n)
		return true;
	snprintf(err, errlen,
		 "stream-queue: the fold is %llu, expected %llu (the sequential fold); %lld of "
		 "%ld elements emitted, %lld folded%s",
		 (unsigned long long)result, (unsigned long long)q->reference,
		 (long long)q->emitted, q->n, (long long)q->folded,
		 q->alloc_failed ? "; the producer could not allocate a chunk" : "");
	return false;
}

static void stream_queue_teardown(struct wl_ctx *ctx)
{
	struct stream_queue *q = ctx->state;

	if (q)
		free(q->slots);
	free(q);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "10000", 1, 100000000, NULL, "elements through the stream per op" },
	{ "chunk", WL_INT, "128", 1, 1 << 20, NULL, "elements per chunk" },
	{ "cap", WL_POW2, "16", 2, 1 << 20, NULL,
	  "chunks the queue holds before the producer waits, a power of two" },
	{ 0 },
};

const struct wl_desc wl_stream_queue = {
	.name = "stream-queue",
	.summary = "n elements in chunks of chunk through a queue-backed stream of cap chunks, "
		   "mapped and folded",
	.unit = "ops/s",
	.params = params,
	.setup = stream_queue_setup,
	.op = stream_queue_op,
	.check = stream_queue_check,
	.teardown = stream_queue_teardown,
};
