/*
 * queue-spsc: 10,000 integers from one producer task to one consumer task through a
 * bounded channel of capacity 1,024.
 *
 * The studies' "integer queue, one producer and one consumer" (Kyo ~1.45x
 * cats-effect): the op spawns both tasks and joins them. Where the two run decides the
 * cost: on one worker they take turns, each filling or draining the channel before it
 * waits; on two they run side by side and wake each other when it runs full or empty.
 * The producer sends 1..n; the op returns the consumer's sum, n(n+1)/2.
 *
 * The study ran kyo-bench's ProducerConsumerBench: 10,000 items through a queue of
 * 5,000, each side a loop of effects in its own fiber, the queue each library's own:
 *
 *	cats-effect  repeat(n)(q.offer(())) and repeat(n)(q.take) on Queue.bounded
 *	Kyo          repeat(n)(c.put(())) and repeat(n)(c.take) on a Channel (SPSC access)
 *
 * `encoding` chooses the queue:
 *
 *   direct  the runtime's rt_chan, blocking send and receive from C loops.
 *   ce      cats-effect's BoundedAsyncQueue (std/Queue.scala) as IO values: offer and
 *           take are each an F.defer that tries the buffer, notifies one waiter of the
 *           other side, and yields F.unit or F.pure(a) (a new value); on a full or
 *           empty buffer it lists a callback, retries, and when the retry fails too it
 *           waits to be notified and starts over.
 *   kyo     Kyo's Channel (kyo/Channel.scala) as IO values: put and take are each one
 *           IO that tries the queue and then flushes, which hands queued values to
 *           waiting takes and moves waiting puts' values into the queue, completing
 *           their promises; a put or take that cannot go on lists a promise and waits.
 *
 * Both use the runtime's ring only through its non-blocking try_send and try_recv (the
 * buffer is lock-free in both libraries), with their own lists of waiters. Kyo's SPSC
 * access picks a single-producer ring, but its flush polls and offers from either
 * side, so the multi-producer ring serves both here. Neither models cancellation.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/effect/effect.h"
#include "runtime/rt.h"
#include "workloads/gate.h"
#include "workloads/workload.h"

/* In the order of `encoding`'s choices. */
enum spsc_encoding {
	SPSC_DIRECT,
	SPSC_CE,
	SPSC_KYO,
};

struct queue_spsc {
	struct rt_chan chan; /* first: the struct is allocated 64-byte aligned */
	void **slots;
	long n;
	uint32_t cap;
	enum spsc_encoding encoding;
	int64_t sent, received; /* by the last op, for check's message */
	uint64_t ops;           /* for the report */
	uint64_t waits;         /* atomic, ce and kyo: offers and takes that waited */
	struct fx_io *unit;     /* F.unit, one value shared as on the JVM */
	/* cats-effect: offerers and takers; Kyo: puts and takes */
	struct wl_waiters side[2];
};

enum { SPSC_PUTS, SPSC_TAKES };

/* One side's run of n offers or takes, through the interpreter. */
struct spsc_run {
	struct queue_spsc *q;
	uint64_t i;            /* offers or takes begun; the producer sends 1..n */
	uint64_t sum;          /* the consumer's */
	struct wl_gate *wait;  /* kyo: the promise the last put or take left to wait on */
};

/* ---- the waiters' lists -------------------------------------------------------------------- */

/* List g (its list reference); the entry, or NULL when out of memory. */
static struct wl_waiter *waiters_put(struct wl_waiters *ws, struct wl_gate *g)
{
	struct wl_waiter *w = rt_alloc(sizeof(*w));

	if (w) {
		w->gate = g;
		wl_waiters_append(ws, w);
	}
	return w;
}

/* cats-effect's clear(): take w out if no one has taken it yet. True when we did (w is
 * freed and its gate has lost the list's reference); false: a notifier has it. */
static bool waiters_clear(struct wl_waiters *ws, struct wl_waiter *w)
{
	struct wl_waiter **pp, *prev = NULL;
	bool found = false;

	pthread_mutex_lock(&ws->lock);
	for (pp = &ws->head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			if (ws->tail == w)
				ws->tail = prev;
			__atomic_sub_fetch(&ws->len, 1, __ATOMIC_SEQ_CST);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ws->lock);
	if (found) {
		wl_gate_unref(w->gate);
		rt_free(w);
	}
	return found;
}

/* ---- encoding=ce: cats-effect's Queue.bounded (BoundedAsyncQueue) --------------------------- */

static uint64_t io_word(struct fx_io *io)
{
	return (uint64_t)(uintptr_t)io;
}

static struct fx_io *ce_flatten(uint64_t io, void *env)
{
	return (struct fx_io *)(uintptr_t)io;
}

/* notifyOne: wake the oldest waiter on that side, if any. */
static void ce_notify_one(struct wl_waiters *ws)
{
	struct wl_waiter *w = wl_waiters_take(ws);

	if (w) {
		struct wl_gate *g = w->gate;

		rt_free(w);
		wl_gate_complete(g, 0);
	}
}

/* Listen on a side with a new gate *g (the waiter's reference and the list's): the
 * entry, which a notifier may take and free at once; raises when out of memory. */
static struct wl_waiter *ce_listen(struct wl_waiters *ws, struct wl_gate **g)
{
	struct wl_waiter *w = NULL;

	*g = wl_gate_new(2);
	if (!*g || !(w = waiters_put(ws, *g))) {
		rt_free(*g);
		rt_raise(rt_error_oom());
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* listed before the retry looks */
	return w;
}

/* The retry got through after all: clear the listing (w is compared, not read: only
 * this side lists entries here, so a w a notifier freed cannot be listed again yet),
 * and drop the waiter's reference to g. */
static void ce_unlisten(struct wl_waiters *ws, struct wl_waiter *w, struct wl_gate *g)
{
	waiters_clear(ws, w);
	wl_gate_unref(g);
}

static struct fx_io *ce_offer(struct spsc_run *run);
static struct fx_io *ce_take(struct spsc_run *run);

static struct fx_io *ce_offer_again(uint64_t x, void *env)
{
	return ce_offer(env);
}

static struct fx_io *ce_take_again(uint64_t x, void *env)
{
	return ce_take(env);
}

/* offer(a) = F.defer { buffer.put(a); notifyOne(takers); F.unit }, and when the buffer
 * is full: listen among the offerers, retry the put, and when that fails too wait to be
 * notified and offer again. The IO to run next. */
static uint64_t ce_offer_try(void *env)
{
	struct spsc_run *run = env;
	struct queue_spsc *q = run->q;
	void *v = (void *)(uintptr_t)run->i;
	struct wl_waiter *w;
	struct wl_gate *g;

	if (rt_chan_try_send(&q->chan, v)) {
		ce_notify_one(&q->side[SPSC_TAKES]);
		return io_word(fx_ref(q->unit));
	}
	w = ce_listen(&q->side[SPSC_PUTS], &g);
	if (rt_chan_try_send(&q->chan, v)) {
		ce_unlisten(&q->side[SPSC_PUTS], w, g);
		ce_notify_one(&q->side[SPSC_TAKES]);
		return io_word(fx_ref(q->unit));
	}
	__atomic_fetch_add(&q->waits, 1, __ATOMIC_RELAXED);
	/* once listed, w is the notifier's; NULL (out of memory) fails the run */
	return io_word(fx_flat_map(fx_delay(wl_gate_wait, g), ce_offer_again, run));
}

/* take = F.defer { val a = buffer.take(); notifyOne(offerers); F.pure(a) }, and when it
 * is empty: listen among the takers, retry, and when that fails too wait and take
 * again. */
static uint64_t ce_take_try(void *env)
{
	struct spsc_run *run = env;
	struct queue_spsc *q = run->q;
	struct wl_waiter *w;
	struct wl_gate *g;
	void *v;

	if (rt_chan_try_recv(&q->chan, &v)) {
		ce_notify_one(&q->side[SPSC_PUTS]);
		return io_word(fx_pure((uint64_t)(uintptr_t)v));
	}
	w = ce_listen(&q->side[SPSC_TAKES], &g);
	if (rt_chan_try_recv(&q->chan, &v)) {
		ce_unlisten(&q->side[SPSC_TAKES], w, g);
		ce_notify_one(&q->side[SPSC_PUTS]);
		return io_word(fx_pure((uint64_t)(uintptr_t)v));
	}
	__atomic_fetch_add(&q->waits, 1, __ATOMIC_RELAXED);
	return io_word(fx_flat_map(fx_delay(wl_gate_wait, g), ce_take_again, run));
}

static struct fx_io *ce_offer(struct spsc_run *run)
{
	return fx_flat_map(fx_delay(ce_offer_try, run), ce_flatten, NULL);
}

static struct fx_io *ce_take(struct spsc_run *run)
{
	return fx_flat_map(fx_delay(ce_take_try, run), ce_flatten, NULL);
}

/* repeat(n)(q.offer(i)): io.flatMap(_ => repeat(n - 1)(io)) */
static struct fx_io *ce_produce(uint64_t x, void *env)
{
	struct spsc_run *run = env;

	if (run->i == (uint64_t)run->q->n)
		return fx_pure(run->i);
	run->i++;
	return fx_flat_map(ce_offer(run), ce_produce, run);
}

static struct fx_io *ce_consume(uint64_t x, void *env)
{
	struct spsc_run *run = env;

	run->sum += x; /* 0 on the way in */
	if (run->i == (uint64_t)run->q->n)
		return fx_pure(run->sum);
	run->i++;
	return fx_flat_map(ce_take(run), ce_consume, run);
}

/* ---- encoding=kyo: Kyo's Channel -------------------------------------------------------------- */

/* flush: until neither applies, hand a queued value to a waiting take, or move a
 * waiting put's value into the queue; either completes the waiter's promise. Run by
 * both sides after every put and take. */
static void kyo_flush(struct queue_spsc *q)
{
	struct wl_waiters *takes = &q->side[SPSC_TAKES], *puts = &q->side[SPSC_PUTS];

	for (;;) {
		uint32_t size;
		struct wl_waiter *w;
		void *v;

		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		size = rt_chan_len(&q->chan);
		if (size > 0 && __atomic_load_n(&takes->len, __ATOMIC_RELAXED)) {
			if (!(w = wl_waiters_take(takes)))
				continue;
			if (!rt_chan_try_recv(&q->chan, &v)) {
				wl_waiters_append(takes, w); /* emptied before the transfer */
				continue;
			}
			wl_gate_complete(w->gate, (uint64_t)(uintptr_t)v);
			rt_free(w);
		} else if (size < q->cap && __atomic_load_n(&puts->len, __ATOMIC_RELAXED)) {
			if (!(w = wl_waiters_take(puts)))
				continue;
			if (!rt_chan_try_send(&q->chan, (void *)(uintptr_t)w->gate->value)) {
				wl_waiters_append(puts, w); /* filled before the transfer */
				continue;
			}
			wl_gate_complete(w->gate, 0);
			rt_free(w);
		} else {
			return;
		}
	}
}

/* Queue a promise on one side (with value, a put's), flush, and leave it in run->wait
 * for the loop to wait on; raises when out of memory. */
static void kyo_enqueue(struct spsc_run *run, int side, uint64_t value)
{
	struct queue_spsc *q = run->q;
	struct wl_gate *g = wl_gate_new(2);

	if (g)
		g->value = value; /* before the listing: a flush may move it at once */
	if (!g || !waiters_put(&q->side[side], g)) {
		rt_free(g);
		rt_raise(rt_error_oom());
	}
	kyo_flush(q);
	if (rt_latch_count(&g->latch))
		__atomic_fetch_add(&q->waits, 1, __ATOMIC_RELAXED);
	run->wait = g;
}

/* put(v) = IO { if queue.offer(v) then flush() else { puts.add((v, p)); flush(); p.get } } */
static uint64_t kyo_put(void *env)
{
	struct spsc_run *run = env;

	if (rt_chan_try_send(&run->q->chan, (void *)(uintptr_t)run->i))
		kyo_flush(run->q);
	else
		kyo_enqueue(run, SPSC_PUTS, run->i);
	return 0;
}

/* take = IO { queue.poll match { case Some(v) => flush(); v
 *                                case None => takes.add(p); flush(); p.get } } */
static uint64_t kyo_take(void *env)
{
	struct spsc_run *run = env;
	void *v;

	if (rt_chan_try_recv(&run->q->chan, &v)) {
		kyo_flush(run->q);
		return (uint64_t)(uintptr_t)v;
	}
	kyo_enqueue(run, SPSC_TAKES, 0);
	return 0;
}

/* p.get on the promise the last put or take left, then k with its value. */
static struct fx_io *kyo_get(struct spsc_run *run, fx_bind_fn k)
{
	struct wl_gate *g = run->wait;

	run->wait = NULL;
	return fx_flat_map(fx_delay(wl_gate_wait, g), k, run);
}

/* repeat(n)(q.put(i)), p.get in between when a put had to wait. The gate's wait is
 * built as p.get is: only when the put left a promise. */
static struct fx_io *kyo_produce(uint64_t x, void *env)
{
	struct spsc_run *run = env;

	if (run->wait)
		return kyo_get(run, kyo_produce);
	if (run->i == (uint64_t)run->q->n)
		return fx_pure(run->i);
	run->i++;
	return fx_flat_map(fx_delay(kyo_put, run), kyo_produce, run);
}

static struct fx_io *kyo_consume(uint64_t x, void *env)
{
	struct spsc_run *run = env;

	if (run->wait)
		return kyo_get(run, kyo_consume);
	run->sum += x; /* 0 on the way in */
	if (run->i == (uint64_t)run->q->n)
		return fx_pure(run->sum);
	run->i++;
	return fx_flat_map(fx_delay(kyo_take, run), kyo_consume, run);
}

/* ---- the workload --------------------------------------------------------------------------- */

/* One side through the interpreter: its result, or UINT64_MAX when the run failed. */
static uint64_t spsc_run_fx(struct queue_spsc *q, bool producer, uint64_t *done)
{
	struct spsc_run run = { .q = q };
	struct fx_io *io;
	struct rt_result r;

	if (q->encoding == SPSC_CE)
		io = producer ? ce_produce(0, &run) : ce_consume(0, &run);
	else
		io = producer ? kyo_produce(0, &run) : kyo_consume(0, &run);
	r = fx_run(io, FX_STACK);
	*done = run.i;
	if (!r.ok) {
		rt_error_free(r.err);
		return UINT64_MAX;
	}
	return r.value;
}

static uint64_t queue_spsc_producer(void *arg)
{
	struct queue_spsc *q = arg;
	long i, n = q->n;
	uint64_t done;

	/* a run that fails (out of memory) leaves the other side waiting for items or room:
	 * the op then ends only when the harness gives up on the silent fork */
	if (q->encoding != SPSC_DIRECT)
		return spsc_run_fx(q, true, &done) == UINT64_MAX && done ? done - 1 : done;
	for (i = 1; i <= n; i++)
		if (rt_chan_send(&q->chan, (void *)(uintptr_t)i))
			break;
	return (uint64_t)(i - 1);
}

static uint64_t queue_spsc_consumer(void *arg)
{
	struct queue_spsc *q = arg;
	uint64_t sum = 0, done;
	long i, n = q->n;
	void *v;

	if (q->encoding != SPSC_DIRECT) {
		sum = spsc_run_fx(q, false, &done);
		q->received = (int64_t)done;
		return sum == UINT64_MAX ? 0 : sum;
	}
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

	if (!q || !(q->slots = calloc(RT_CHAN_SLOTS(cap), sizeof(void *))) ||
	    !(q->unit = fx_pure(0))) {
		if (q)
			free(q->slots);
		free(q);
		snprintf(err, errlen, "queue-spsc: out of memory");
		return -ENOMEM;
	}
	q->n = wl_int(ctx, "n");
	q->cap = (uint32_t)cap;
	q->encoding = (enum spsc_encoding)wl_choice(ctx, "encoding");
	q->ops = q->waits = 0;
	for (int s = 0; s < 2; s++)
		wl_waiters_init(&q->side[s]);
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
	q->ops++;
	consumer = rt_spawn(queue_spsc_consumer, q);
	if (!consumer)
		return 0;
	producer = rt_spawn(queue_spsc_producer, q);
	if (!producer) {
		if (q->encoding != SPSC_DIRECT) /* run the producer's side here instead */
			q->sent = (int64_t)queue_spsc_producer(q);
		rt_chan_close(&q->chan); /* direct: the consumer stops at once */
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

	if (result == want && !q->side[SPSC_PUTS].len && !q->side[SPSC_TAKES].len)
		return true;
	if (result == want) {
		snprintf(err, errlen, "queue-spsc: %u offer(s) and %u take(s) still listed as "
			 "waiting after the op", q->side[SPSC_PUTS].len, q->side[SPSC_TAKES].len);
		return false;
	}
	snprintf(err, errlen,
		 "queue-spsc: the consumer's sum is %llu, expected %llu (%lld sent, %lld received)",
		 (unsigned long long)result, (unsigned long long)want, (long long)q->sent,
		 (long long)q->received);
	return false;
}

static void queue_spsc_teardown(struct wl_ctx *ctx)
{
	struct queue_spsc *q = ctx->state;

	if (q) {
		free(q->slots);
		fx_free(q->unit);
		for (int s = 0; s < 2; s++)
			pthread_mutex_destroy(&q->side[s].lock);
	}
	free(q);
	ctx->state = NULL;
}

static size_t queue_spsc_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	struct queue_spsc *q = ctx->state;
	size_t n = 0;

	if (q->encoding != SPSC_DIRECT)
		wl_metric_add(out, &n, max, "waits_per_op", "waits",
			      q->ops ? (double)q->waits / (double)q->ops : 0);
	return n;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "10000", 1, 100000000, NULL, "integers sent per op" },
	{ "cap", WL_POW2, "1024", 2, 1 << 20, NULL, "the channel's capacity, a power of two" },
	{ "encoding", WL_CHOICE, "direct", 0, 0, "direct,ce,kyo",
	  "the queue: the runtime's channel from C loops (direct), or cats-effect's "
	  "Queue.bounded (ce) or Kyo's Channel (kyo) as each library builds it, run as "
	  "effects" },
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
	.report = queue_spsc_report,
};
