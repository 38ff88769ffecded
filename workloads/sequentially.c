/*
 * sequentially: n operations on random keys, serialized per key, with an empty body.
 *
 * Study 2 (semaphore buckets vs actors). Each op draws n keys in [0, keys) and runs one
 * operation per key, all at once, by one of three means:
 *   buckets    a task per operation, which takes its key's bucket (one of `buckets`
 *              one-permit semaphores, 5 x workers by default) inside the task;
 *   actors     one actor per key, made on the key's first use and kept: a mailbox that a
 *              task drains whenever it holds messages; the op sends each operation to its
 *              key's actor and then awaits the operation's completion (a latch each);
 *   converted  buckets again, but each operation is handed to the runtime from outside
 *              (rt_submit, the global queue) with an external completion, and awaited.
 *
 * The body records, inside the serialized section, the position at which the
 * operation ran among its key's operations (a counter read and written without an
 * atomic increment, so that two bodies at once would lose a count) and flags an overlap
 * when another body of the key is inside. The check: every operation ran exactly once,
 * no two of a key overlapped, each key's positions are 0..count-1 once each, and with
 * actors, whose mailbox is FIFO, each operation ran at its issue position (per-key order
 * preserved). A bucket serializes but does not order: its operations run in the order
 * they reach it. wl__sequentially_inject() breaks each impl's promise once, so that a
 * test can see the check catch it: actors get two operations of one key in the wrong
 * order, buckets let go while the body is still inside.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workloads/internal.h"

/* The order of the `impl` choices. */
enum sq_impl { SQ_BUCKETS, SQ_ACTORS, SQ_CONVERTED };

struct sq_state;

/* One operation of the op. */
struct sq_slot {
	struct sq_state *st;
	uint32_t key;
	uint32_t seq;        /* its place among its key's operations, in issue order */
	uint32_t pos;        /* the place at which it ran */
	uint32_t runs;       /* times its body ran */
	struct rt_latch done; /* actors, converted: its completion */
	struct sq_slot *next; /* actors: the next older message in the mailbox */
};

struct sq_actor;

struct sq_state {
	struct rt_sched *sched;
	long impl, n, keys, nbuckets;
	uint64_t seed, ops;
	struct sq_slot *slots;   /* n */
	struct rt_task **tasks;  /* n: buckets, converted; actors: the drains */
	long ndrains;
	struct rt_sem *buckets;  /* nbuckets */
	struct sq_actor **actors; /* keys: actors, each made on first use */
	uint32_t *issued;        /* keys: operations issued per key this op */
	uint32_t *ran;           /* keys: bodies run per key, counted inside the section */
	uint8_t *busy;           /* keys: a body of the key is inside */
	uint32_t *base, *seen;   /* keys + 1 / n: the check's scratch */
	uint64_t overlaps;       /* bodies that found another of their key inside */
	long failed_at;          /* operation whose task or actor could not start, or -1 */
	int start_errno;
	/* the injected fault (wl__sequentially_inject) */
	bool inject;
	uint32_t inject_key;
	uint32_t inject_taken;
	struct rt_latch inject_inside; /* buckets: the next body of the key is inside */
};

/* ---- the body -------------------------------------------------------------------------- */

static void sq_enter(struct sq_slot *s)
{
	struct sq_state *st = s->st;
	uint32_t pos;

	if (__atomic_exchange_n(&st->busy[s->key], 1, __ATOMIC_ACQ_REL)) {
		__atomic_fetch_add(&st->overlaps, 1, __ATOMIC_RELAXED);
		if (st->inject)
			rt_latch_count_down(&st->inject_inside);
	}
	/* a load and a store, not an atomic increment: serialization is what keeps it */
	pos = __atomic_load_n(&st->ran[s->key], __ATOMIC_RELAXED);
	__atomic_store_n(&st->ran[s->key], pos + 1, __ATOMIC_RELAXED);
	s->pos = pos;
	__atomic_fetch_add(&s->runs, 1, __ATOMIC_RELAXED);
}

static void sq_leave(struct sq_slot *s)
{
	__atomic_store_n(&s->st->busy[s->key], 0, __ATOMIC_RELEASE);
}

/* ---- buckets and converted -------------------------------------------------------------- */

static void sq_bucket_run(struct sq_slot *s)
{
	struct sq_state *st = s->st;
	struct rt_sem *b = &st->buckets[s->key % (uint32_t)st->nbuckets];

	rt_sem_acquire(b);
	sq_enter(s);
	if (st->inject && s->key == st->inject_key &&
	    !__atomic_exchange_n(&st->inject_taken, 1, __ATOMIC_ACQ_REL)) {
		/* the injected fault: the bucket let go before the body ends, and the body
		 * stays inside until the key's next operation has come in */
		rt_sem_release(b);
		rt_latch_wait(&st->inject_inside);
		sq_leave(s);
		return;
	}
	sq_leave(s);
	rt_sem_release(b);
}

static uint64_t sq_bucket_task(void *arg)
{
	sq_bucket_run(arg);
	return 0;
}

static uint64_t sq_converted_task(void *arg)
{
	struct sq_slot *s = arg;

	sq_bucket_run(s);
	rt_latch_count_down(&s->done);
	return 0;
}

/* ---- actors ------------------------------------------------------------------------------ *
 *
 * An actor is a mailbox and a "scheduled" flag, as in Akka's dispatcher: a send that
 * finds the actor idle schedules it, i.e. spawns a task that drains the mailbox in
 * arrival order and goes idle again when it finds it empty; an idle actor costs no
 * task. The mailbox is a lock-free stack of the operations (one push per send), which the
 * drain takes whole and reverses: FIFO per sender, and the op is the only sender.
 */

struct sq_actor {
	struct sq_slot *head; /* the mailbox: newest first */
	uint32_t scheduled;   /* a drain task runs or is about to */
};

static uint64_t sq_drain_task(void *arg)
{
	struct sq_actor *a = arg;

	for (;;) {
		struct sq_slot *m = __atomic_exchange_n(&a->head, NULL, __ATOMIC_ACQUIRE);
		struct sq_slot *fifo = NULL;

		if (!m) {
			/* idle again, then look once more: a send that pushed before this saw
			 * scheduled still set and left its message to us. Both sides do an
			 * atomic exchange, a full barrier here, so one of them sees the other
			 * (pairs with the push and the exchange in sq_send()) */
			__atomic_exchange_n(&a->scheduled, 0, __ATOMIC_SEQ_CST);
			if (!__atomic_load_n(&a->head, __ATOMIC_SEQ_CST) ||
			    __atomic_exchange_n(&a->scheduled, 1, __ATOMIC_SEQ_CST))
				return 0;
			continue;
		}
		while (m) { /* newest first: reversed, the order they were sent */
			struct sq_slot *next = m->next;

			m->next = fifo;
			fifo = m;
			m = next;
		}
		while (fifo) {
			struct sq_slot *next = fifo->next; /* before the completion frees it */

			sq_enter(fifo);
			sq_leave(fifo);
			rt_latch_count_down(&fifo->done);
			fifo = next;
		}
	}
}

/* The key's actor, made on the key's first use and kept; NULL when out of memory. */
static struct sq_actor *sq_actor(struct sq_state *st, uint32_t key)
{
	if (!st->actors[key])
		st->actors[key] = rt_calloc(1, sizeof(struct sq_actor));
	return st->actors[key];
}

/* Post s to a; 0, or -errno when a drain was needed and could not start. */
static int sq_send(struct sq_state *st, struct sq_actor *a, struct sq_slot *s)
{
	struct rt_task *t;

	s->next = __atomic_load_n(&a->head, __ATOMIC_RELAXED);
	/* publishes the slot's fields with it; pairs with the drain's acquiring exchange */
	while (!__atomic_compare_exchange_n(&a->head, &s->next, s, true, __ATOMIC_SEQ_CST,
					    __ATOMIC_RELAXED))
		;
	if (__atomic_exchange_n(&a->scheduled, 1, __ATOMIC_SEQ_CST))
		return 0; /* a drain is on it */
	t = rt_spawn(sq_drain_task, a);
	if (!t)
		return -errno;
	st->tasks[st->ndrains++] = t;
	return 0;
}

/* ---- the op ------------------------------------------------------------------------------ */

/* Draw the op's keys and number each key's operations in issue order. */
static void sq_prepare(struct sq_state *st)
{
	uint64_t x = wl__splitmix64(st->seed ^ wl__splitmix64(st->ops++));

	memset(st->issued, 0, (size_t)st->keys * sizeof(*st->issued));
	memset(st->ran, 0, (size_t)st->keys * sizeof(*st->ran));
	memset(st->busy, 0, (size_t)st->keys);
	st->overlaps = 0;
	st->failed_at = -1;
	st->start_errno = 0;
	for (long i = 0; i < st->n; i++) {
		struct sq_slot *s = &st->slots[i];

		s->key = (uint32_t)(wl__splitmix64(x + (uint64_t)i) % (uint64_t)st->keys);
		s->seq = st->issued[s->key]++;
		s->runs = 0;
		s->pos = UINT32_MAX;
		rt_latch_init(&s->done, 1);
	}
	st->inject_taken = 0;
	if (st->inject) {
		/* the fault needs a key with two operations: the first such one */
		st->inject = false;
		for (long i = 0; i < st->n && !st->inject; i++)
			if (st->slots[i].seq == 1) {
				st->inject = true;
				st->inject_key = st->slots[i].key;
			}
		rt_latch_init(&st->inject_inside, 1);
	}
}

static void sq_failed(struct sq_state *st, long i)
{
	if (st->failed_at < 0) {
		st->failed_at = i;
		st->start_errno = errno;
	}
}

static void sq_buckets(struct sq_state *st)
{
	long started = 0;

	for (; started < st->n; started++) {
		st->tasks[started] = rt_spawn(sq_bucket_task, &st->slots[started]);
		if (!st->tasks[started]) {
			sq_failed(st, started);
			break;
		}
	}
	for (long i = 0; i < started; i++)
		rt_join(st->tasks[i]);
}

static void sq_converted(struct sq_state *st)
{
	long started = 0;

	for (; started < st->n; started++) {
		struct rt_task *t = rt_submit(st->sched, sq_converted_task, &st->slots[started]);

		st->tasks[started] = t;
		if (!t) {
			sq_failed(st, started);
			break;
		}
	}
	for (long i = 0; i < started; i++)
		rt_latch_wait(&st->slots[i].done);
	/* the completions were the answers; the joins only end the tasks' use of their
	 * slots, which the one that opened a latch may still be inside when its waiter
	 * returns, and the next op initialises again */
	for (long i = 0; i < started; i++)
		rt_join(st->tasks[i]);
}

static void sq_actors(struct sq_state *st)
{
	struct sq_slot *held = NULL;
	long sent = 0;

	st->ndrains = 0;
	for (; sent < st->n; sent++) {
		struct sq_slot *s = &st->slots[sent];
		struct sq_actor *a = sq_actor(st, s->key);

		if (st->inject && s->key == st->inject_key && s->seq == 0) {
			held = s; /* the injected fault: sent after the key's next one */
			continue;
		}
		if (!a || sq_send(st, a, s)) {
			sq_failed(st, sent);
			break;
		}
		if (held && s->key == held->key) {
			if (sq_send(st, a, held)) {
				sq_failed(st, held - st->slots);
				break;
			}
			held = NULL;
		}
	}
	for (long i = 0; i < sent; i++)
		if (&st->slots[i] != held)
			rt_latch_wait(&st->slots[i].done);
	/* the completions were the answers; the joins end the drains' use of the slots,
	 * before the next op initialises them again */
	for (long i = 0; i < st->ndrains; i++)
		rt_join(st->tasks[i]);
}

static uint64_t sequentially_op(struct wl_ctx *ctx)
{
	struct sq_state *st = ctx->state;

	sq_prepare(st);
	switch (st->impl) {
	case SQ_BUCKETS:
		sq_buckets(st);
		break;
	case SQ_ACTORS:
		sq_actors(st);
		break;
	default:
		sq_converted(st);
		break;
	}
	st->inject = false;
	return (uint64_t)st->n;
}

/* ---- the check ---------------------------------------------------------------------------- */

static bool sequentially_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	struct sq_state *st = ctx->state;
	uint32_t *base = st->base, *seen = st->seen;

	if (st->failed_at >= 0) {
		snprintf(err, errlen, "sequentially: operation %ld could not start its %s: %s",
			 st->failed_at, st->impl == SQ_ACTORS ? "actor" : "task",
			 strerror(st->start_errno));
		return false;
	}
	if (result != (uint64_t)st->n) {
		snprintf(err, errlen, "sequentially: the op returned %llu, expected n = %ld",
			 (unsigned long long)result, st->n);
		return false;
	}
	if (st->overlaps) {
		snprintf(err, errlen,
			 "sequentially: %llu operation(s) ran while another of their key was "
			 "inside (not serialized)",
			 (unsigned long long)st->overlaps);
		return false;
	}
	/* each key's operations own a run of `seen`, one entry per position */
	base[0] = 0;
	for (long k = 0; k < st->keys; k++)
		base[k + 1] = base[k] + st->issued[k];
	memset(seen, 0, (size_t)st->n * sizeof(*seen));
	for (long i = 0; i < st->n; i++) {
		const struct sq_slot *s = &st->slots[i];

		if (s->runs != 1) {
			snprintf(err, errlen,
				 "sequentially: operation %ld (key %u, its %u of %u) ran %u times, "
				 "expected once (%s)",
				 i, s->key, s->seq + 1, st->issued[s->key], s->runs,
				 s->runs ? "duplicated" : "lost");
			return false;
		}
		if (s->pos >= st->issued[s->key] || seen[base[s->key] + s->pos]++) {
			snprintf(err, errlen,
				 "sequentially: key %u: operation %ld ran at position %u, which is "
				 "taken or past its %u operations (a count lost in the section)",
				 s->key, i, s->pos, st->issued[s->key]);
			return false;
		}
		if (st->impl == SQ_ACTORS && s->pos != s->seq) {
			snprintf(err, errlen,
				 "sequentially: key %u: operation %ld, issued %u of %u, ran at "
				 "position %u (per-key order not preserved)",
				 s->key, i, s->seq + 1, st->issued[s->key], s->pos + 1);
			return false;
		}
	}
	return true;
}

void wl__sequentially_inject(struct wl_ctx *ctx)
{
	((struct sq_state *)ctx->state)->inject = true;
}

/* ---- setup and teardown -------------------------------------------------------------------- */

static void sequentially_teardown(struct wl_ctx *ctx)
{
	struct sq_state *st = ctx->state;

	if (!st)
		return;
	for (long k = 0; st->actors && k < st->keys; k++)
		rt_free(st->actors[k]);
	for (long b = 0; st->buckets && b < st->nbuckets; b++)
		rt_sem_destroy(&st->buckets[b]);
	free(st->slots);
	free(st->tasks);
	free(st->buckets);
	free(st->actors);
	free(st->issued);
	free(st->ran);
	free(st->busy);
	free(st->base);
	free(st->seen);
	free(st);
	ctx->state = NULL;
}

static int sequentially_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct sq_state *st = calloc(1, sizeof(*st));
	size_t keys;

	if (!st)
		goto out_nomem;
	ctx->state = st;
	st->sched = ctx->sched;
	st->impl = wl_choice(ctx, "impl");
	st->n = wl_int(ctx, "n");
	st->keys = wl_int(ctx, "keys");
	st->seed = (uint64_t)wl_int(ctx, "seed");
	st->nbuckets = wl_int(ctx, "buckets");
	if (!st->nbuckets) {
		/* the study's CPUs x 5, with the runtime's workers for CPUs; the threads
		 * executor has no workers, and runs on the machine's CPUs */
		long cpus = (long)rt_sched_workers(ctx->sched);

		if (!cpus)
			cpus = sysconf(_SC_NPROCESSORS_ONLN);
		st->nbuckets = 5 * (cpus > 0 ? cpus : 1);
	}
	keys = (size_t)st->keys;
	st->slots = calloc((size_t)st->n, sizeof(*st->slots));
	st->tasks = calloc((size_t)st->n, sizeof(*st->tasks));
	st->buckets = calloc((size_t)st->nbuckets, sizeof(*st->buckets));
	st->issued = calloc(keys, sizeof(*st->issued));
	st->ran = calloc(keys, sizeof(*st->ran));
	st->busy = calloc(keys, 1);
	st->base = calloc(keys + 1, sizeof(*st->base));
	st->seen = calloc((size_t)st->n, sizeof(*st->seen));
	if (!st->slots || !st->tasks || !st->buckets || !st->issued || !st->ran || !st->busy ||
	    !st->base || !st->seen)
		goto out_nomem;
	if (st->impl == SQ_ACTORS) {
		st->actors = calloc(keys, sizeof(*st->actors));
		if (!st->actors)
			goto out_nomem;
	}
	for (long b = 0; b < st->nbuckets; b++)
		rt_sem_init(&st->buckets[b], 1);
	for (long i = 0; i < st->n; i++)
		st->slots[i].st = st;
	return 0;

out_nomem:
	snprintf(err, errlen, "sequentially: out of memory for n=%ld keys=%ld",
		 wl_int(ctx, "n"), wl_int(ctx, "keys"));
	sequentially_teardown(ctx);
	return -ENOMEM;
}

static const struct wl_param params[] = {
	/* the order of enum sq_impl */
	{ "impl", WL_CHOICE, "buckets", 0, 0, "buckets,actors,converted",
	  "buckets: a task per operation takes its key's semaphore; actors: one per key, a "
	  "mailbox and a completion per operation; converted: buckets, each operation "
	  "submitted from outside and awaited through an external completion" },
	{ "buckets", WL_INT, "0", 0, 65536, NULL,
	  "one-permit semaphores the keys share; 0: 5 x workers (threads: 5 x CPUs)" },
	{ "n", WL_INT, "1000", 1, 1000000, NULL, "operations per op" },
	{ "keys", WL_INT, "1000", 1, 100000, NULL,
	  "the operations' keys are drawn from [0, keys)" },
	{ "seed", WL_INT, "1", 0, 4294967295.0, NULL, "seed of the keys" },
	{ 0 },
};

const struct wl_desc wl_sequentially = {
	.name = "sequentially",
	.summary = "n operations on random keys, serialized per key (semaphore buckets, "
		   "actors, or buckets behind external completions), with an empty body",
	.unit = "ops/s",
	.params = params,
	.setup = sequentially_setup,
	.op = sequentially_op,
	.check = sequentially_check,
	.teardown = sequentially_teardown,
};
