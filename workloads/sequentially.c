/*
 * sequentially: n operations on random keys, serialized per key, with an empty body.
 *
 * Study 2 (semaphore buckets vs actors, docs/studies.md §2). Each op draws n keys at random
 * from [0, keys), 2^32 of them by default, so that nearly every operation meets a key that
 * no other operation of the op has (as the study's random keys did), and runs one
 * operation per key by one of three means:
 *   buckets    `buckets` one-permit semaphores (5 x workers by default); an operation takes
 *              its key's bucket around the body (the study's applyF:
 *              bucket.permit.use(_ => fa));
 *   actors     an actor per key, made on the key's first use in the op: a mailbox that a
 *              task drains whenever it holds messages; each operation is a message with a
 *              future of its own, which the caller awaits;
 *   converted  buckets, each operation's effect converted to a future through a
 *              dispatcher (the study's apply, dispatcher.unsafeToFuture(applyF(...))): the
 *              caller hands the effect to a dispatcher task, which starts a task per
 *              operation to run it, and awaits the future;
 * in one of two forms, `form`:
 *   sequence    one operation after another. buckets builds the n effects, then runs them
 *               in order in the op's own task (the study's operations.sequence
 *               .unsafeRunSync(): one fiber, so no bucket is ever contended); actors and
 *               converted issue an operation and await its future before the next;
 *   concurrent  every operation issued before any is awaited. actors and converted send
 *               them all, then await each future in issue order (the study's
 *               futures.map(Await.result)); buckets spawns a task per operation, which
 *               takes its bucket (what this workload ran before it followed the study,
 *               kept for the contention it shows);
 * and form=study, the default, is each impl as the study ran it: buckets in sequence,
 * actors and converted concurrent.
 *
 * The body records, inside the serialized section, the position at which the operation
 * ran among its key's operations (a counter read and written without an atomic increment,
 * so that two bodies at once would lose a count), its place among all the op's bodies and
 * the task it ran in, counts the bodies inside at once and flags an overlap when another
 * body of the key is inside. The check: every operation ran exactly once, no two of a key
 * overlapped, each key's positions are 0..count-1 once each; where the form promises
 * order (actors, whose mailbox is FIFO and whose one sender sends in issue order; every
 * sequence), each operation ran at its issue position among its key's; and a sequence
 * ran one body at a time in issue order, the buckets' in the op's own task. A bucket
 * taken concurrently serializes but does not order. wl__sequentially_inject() breaks the
 * promise once, so that a test can see the check catch it: where order is promised, a
 * key's first operation is issued after its second; else a bucket lets go while its body
 * is still inside. The report gives the actors made per op and the most bodies inside at
 * once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/effect/effect.h"
#include "workloads/gate.h"
#include "workloads/internal.h"

/* The order of the `impl` and `form` choices. */
enum sq_impl { SQ_BUCKETS, SQ_ACTORS, SQ_CONVERTED };
enum sq_form { SQ_STUDY, SQ_SEQUENCE, SQ_CONCURRENT };

/* The dispatcher's channel: operations in flight between the caller and it. A power of
 * two; a caller that fills it waits for the dispatcher, which never waits for the caller. */
#define SQ_CHAN_CAP 1024

struct sq_state;

/* One operation of the op. */
struct sq_slot {
	struct sq_state *st;
	uint64_t raw;           /* its key */
	uint32_t key;           /* its key's index among the op's distinct keys */
	uint32_t seq;           /* its place among its key's operations, in issue order */
	uint32_t pos;           /* the place at which it ran among its key's */
	uint32_t runs;          /* times its body ran */
	uint64_t ticket;        /* its body's place among all the op's bodies */
	struct rt_task *runner; /* the task its body ran in */
	bool released;          /* the injected fault let its bucket go already */
	struct wl_gate *gate;   /* actors, converted: its future */
	struct fx_io *io;       /* converted: its effect, built by the caller */
	struct sq_slot *next;   /* actors: the next older message in the mailbox */
};

/* An entry of an open-addressing table by key, live when gen is the op's. */
struct sq_entry {
	uint64_t key;
	uint64_t gen;
	union {
		uint32_t index;          /* kid: the key's index in the op */
		struct sq_actor *actor;  /* reg: the key's actor */
	};
};

struct sq_state {
	struct rt_sched *sched;
	long impl, n, keys, nbuckets;
	bool sequence;           /* the form in effect is a sequence */
	uint64_t seed, ops;
	struct sq_slot *slots;   /* n, in issue order */
	long *issue;             /* n: the order the op issues them in (slot indexes) */
	struct rt_task **tasks;  /* n: buckets, converted (by slot); actors: the drains */
	long ndrains;
	struct rt_task *op_task; /* the task running the op */
	struct rt_sem *buckets;  /* nbuckets */
	struct sq_entry *kid;    /* kmask + 1: each key's index in the op */
	uint64_t kmask;
	long nkeys;              /* distinct keys in the op */
	/* buckets in sequence */
	struct fx_io **fx;       /* n: the effects, taken as the sequence runs them */
	long cursor;
	/* actors */
	struct sq_entry *reg;    /* kmask + 1: the op's actors by key */
	struct sq_actor **made;  /* n: the actors the op made, freed at its end */
	long nmade;
	uint64_t actors_made;    /* since setup, for the report */
	/* converted */
	struct rt_chan *chan;
	void **chan_slots;
	/* per key index (n): */
	uint32_t *issued;        /* operations issued per key this op */
	uint32_t *ran;           /* bodies run per key, counted inside the section */
	uint8_t *busy;           /* a body of the key is inside */
	uint32_t *base, *seen;   /* n + 1 / n: the check's scratch */
	uint64_t overlaps;       /* bodies that found another of their key inside */
	uint64_t tickets;        /* bodies begun this op */
	uint32_t inside;         /* bodies inside now */
	uint32_t inside_max;     /* the most at once this op */
	uint32_t inside_max_ever; /* since setup, for the report */
	long failed_at;          /* operation that could not be issued or run, or -1 */
	int start_errno;
	/* the injected fault (wl__sequentially_inject) */
	bool inject;
	bool inject_order;       /* reordered issue, not a bucket let go early */
	uint32_t inject_key;
	uint32_t inject_taken;
	struct rt_latch inject_inside; /* the next body of the key is inside */
};

/* ---- the body -------------------------------------------------------------------------- */

static void sq_enter(struct sq_slot *s)
{
	struct sq_state *st = s->st;
	uint32_t pos, in, max;

	if (__atomic_exchange_n(&st->busy[s->key], 1, __ATOMIC_ACQ_REL)) {
		__atomic_fetch_add(&st->overlaps, 1, __ATOMIC_RELAXED);
		if (st->inject)
			rt_latch_count_down(&st->inject_inside);
	}
	in = __atomic_add_fetch(&st->inside, 1, __ATOMIC_RELAXED);
	max = __atomic_load_n(&st->inside_max, __ATOMIC_RELAXED);
	while (in > max && !__atomic_compare_exchange_n(&st->inside_max, &max, in, true,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	/* a load and a store, not an atomic increment: serialization is what keeps it */
	pos = __atomic_load_n(&st->ran[s->key], __ATOMIC_RELAXED);
	__atomic_store_n(&st->ran[s->key], pos + 1, __ATOMIC_RELAXED);
	s->pos = pos;
	s->ticket = __atomic_fetch_add(&st->tickets, 1, __ATOMIC_RELAXED);
	s->runner = rt_current();
	__atomic_fetch_add(&s->runs, 1, __ATOMIC_RELAXED);
}

static void sq_leave(struct sq_slot *s)
{
	__atomic_sub_fetch(&s->st->inside, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->st->busy[s->key], 0, __ATOMIC_RELEASE);
}

static void sq_failed(struct sq_state *st, long i, int err)
{
	long none = -1;

	/* the first failure wins; the dispatcher and the caller may both meet one */
	if (__atomic_compare_exchange_n(&st->failed_at, &none, i, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		st->start_errno = err;
}

/* ---- buckets --------------------------------------------------------------------------- */

static struct rt_sem *sq_bucket(struct sq_slot *s)
{
	return &s->st->buckets[s->raw % (uint64_t)s->st->nbuckets];
}

/* The body in its bucket; with the injected fault, the bucket is let go before the body
 * ends, and the body stays inside until the key's next operation has come in. */
static void sq_bucket_body(struct sq_slot *s)
{
	struct sq_state *st = s->st;

	sq_enter(s);
	if (st->inject && !st->inject_order && s->key == st->inject_key &&
	    !__atomic_exchange_n(&st->inject_taken, 1, __ATOMIC_ACQ_REL)) {
		rt_sem_release(sq_bucket(s));
		s->released = true;
		rt_latch_wait(&st->inject_inside);
	}
	sq_leave(s);
}

/* The effects, as applyF builds one: bucket.permit.use(_ => body), i.e. acquire, the
 * body, release. The bucket is the runtime's semaphore (one atomic instruction each way
 * when free), not cats-effect's Semaphore built as effects (permit's encoding=ce): in
 * sequence no bucket is ever contended, so its fast path is all the study's buckets paid,
 * and here it costs less than cats-effect's dozen steps and allocations. */
static uint64_t sq_fx_acquire(void *env)
{
	rt_sem_acquire(sq_bucket(env));
	return 0;
}

static uint64_t sq_fx_body(uint64_t x, void *env)
{
	sq_bucket_body(env);
	return x;
}

static uint64_t sq_fx_release(uint64_t x, void *env)
{
	struct sq_slot *s = env;

	if (!s->released)
		rt_sem_release(sq_bucket(s));
	return x;
}

/* NULL when out of memory (the constructors consume it, and fx_run fails on it). */
static struct fx_io *sq_fx_op(struct sq_slot *s)
{
	return fx_map(fx_map(fx_delay(sq_fx_acquire, s), sq_fx_body, s), sq_fx_release, s);
}

/* The sequence's bind: the effect just run is done, run the next. Built one bind at a
 * time, so the interpreter holds one pending continuation, not n: a chain of n binds
 * nested to the right, which is what the study's sequence runs (cats-effect's traverse
 * also collects the n results in a list; the body's is Unit, and the count stands in). */
static struct fx_io *sq_fx_next(uint64_t x, void *env)
{
	struct sq_state *st = env;
	struct fx_io *io;

	if (++st->cursor == st->n)
		return fx_pure((uint64_t)st->n);
	io = st->fx[st->cursor];
	st->fx[st->cursor] = NULL;
	return fx_flat_map(io, sq_fx_next, st);
}

/* form=sequence: the n effects built first, in issue order, then one run of the sequence
 * in this task, whose value is the count of effects that ran. */
static void sq_buckets_sequence(struct sq_state *st)
{
	struct rt_result r;
	struct fx_io *io;

	for (long i = 0; i < st->n; i++)
		st->fx[i] = sq_fx_op(&st->slots[st->issue[i]]);
	st->cursor = 0;
	io = st->fx[0];
	st->fx[0] = NULL;
	r = fx_run(fx_flat_map(io, sq_fx_next, st), FX_RUNTIME);
	if (!r.ok) {
		sq_failed(st, st->issue[st->cursor], rt_error_code(r.err));
		rt_error_free(r.err);
	} else if (r.value != (uint64_t)st->n) {
		sq_failed(st, st->issue[st->cursor], EPROTO);
	}
	for (long i = 0; i < st->n; i++) { /* those a failure left unrun */
		fx_free(st->fx[i]);
		st->fx[i] = NULL;
	}
}

static uint64_t sq_bucket_task(void *arg)
{
	struct sq_slot *s = arg;

	rt_sem_acquire(sq_bucket(s));
	sq_bucket_body(s);
	if (!s->released)
		rt_sem_release(sq_bucket(s));
	return 0;
}

/* form=concurrent: a task per operation, all at once. */
static void sq_buckets_concurrent(struct sq_state *st)
{
	long started = 0;

	for (; started < st->n; started++) {
		long i = st->issue[started];

		st->tasks[started] = rt_spawn(sq_bucket_task, &st->slots[i]);
		if (!st->tasks[started]) {
			sq_failed(st, i, errno);
			break;
		}
	}
	for (long i = 0; i < started; i++)
		rt_join(st->tasks[i]);
}

/* ---- converted: through a dispatcher ----------------------------------------------------- *
 *
 * cats-effect's Dispatcher: unsafeToFuture enqueues the effect for the dispatcher's worker
 * fiber, waking it when it sleeps, and the worker starts a fiber for each effect it takes,
 * which runs it and completes the future's promise. Here the caller sends the operation
 * on a channel to a dispatcher task, which spawns a task per operation; the task runs the
 * effect the caller built and completes the operation's future. One hop to the
 * dispatcher and one spawn per operation, on top of the buckets' effect. The op starts its
 * dispatcher and ends it (a Dispatcher lives as long as its resource): one spawn and one
 * join more per op of n operations.
 */

static uint64_t sq_converted_task(void *arg)
{
	struct sq_slot *s = arg;
	struct sq_state *st = s->st;
	struct wl_gate *gate = s->gate;
	struct rt_result r = fx_run(s->io, FX_RUNTIME);

	s->io = NULL;
	if (!r.ok) {
		sq_failed(st, s - st->slots, rt_error_code(r.err));
		rt_error_free(r.err);
	}
	wl_gate_complete(gate, 0); /* the caller may reuse the slot from here */
	return 0;
}

static uint64_t sq_dispatcher_task(void *arg)
{
	struct sq_state *st = arg;
	void *v;

	while (!rt_chan_recv(st->chan, &v)) {
		struct sq_slot *s = v;
		long i = s - st->slots;

		st->tasks[i] = rt_spawn(sq_converted_task, s);
		if (!st->tasks[i]) {
			sq_failed(st, i, errno);
			fx_free(s->io);
			s->io = NULL;
			wl_gate_complete(s->gate, 0);
		}
	}
	return 0; /* closed, and everything sent before the close taken */
}

static void sq_converted(struct sq_state *st)
{
	struct rt_task *dispatcher;
	long sent = 0;

	rt_chan_init(st->chan, st->chan_slots, SQ_CHAN_CAP);
	memset(st->tasks, 0, (size_t)st->n * sizeof(*st->tasks));
	dispatcher = rt_spawn(sq_dispatcher_task, st);
	if (!dispatcher) {
		sq_failed(st, st->issue[0], errno);
		return;
	}
	for (; sent < st->n; sent++) {
		struct sq_slot *s = &st->slots[st->issue[sent]];

		s->gate = wl_gate_new(2); /* the caller's and the task's */
		if (!s->gate) {
			sq_failed(st, st->issue[sent], ENOMEM);
			break;
		}
		s->io = sq_fx_op(s);
		if (rt_chan_send(st->chan, s)) { /* cannot happen: only this task closes it */
			sq_failed(st, st->issue[sent], EPIPE);
			fx_free(s->io);
			s->io = NULL;
			wl_gate_unref(s->gate);
			wl_gate_unref(s->gate);
			break;
		}
		if (st->sequence)
			wl_gate_wait(s->gate);
	}
	rt_chan_close(st->chan);
	if (!st->sequence)
		for (long i = 0; i < sent; i++)
			wl_gate_wait(st->slots[st->issue[i]].gate);
	/* the futures were the answers; the joins end the tasks' use of their slots, which
	 * the one that completed a future may still be inside when its waiter returns */
	rt_join(dispatcher);
	for (long i = 0; i < st->n; i++)
		if (st->tasks[i])
			rt_join(st->tasks[i]);
}

/* ---- actors ------------------------------------------------------------------------------ *
 *
 * An actor is a mailbox and a "scheduled" flag, as in Akka's dispatcher: a send that
 * finds the actor idle schedules it, i.e. spawns a task that drains the mailbox in
 * arrival order and goes idle again when it finds it empty; an idle actor costs no
 * task. The mailbox is a lock-free stack of the operations (one push per send), which the
 * drain takes whole and reverses: FIFO per sender, and the op is the only sender.
 *
 * The op looks each key's actor up in a registry, making it on the key's first use. The
 * registry starts empty each op and the op frees its actors at its end: with keys drawn
 * from 2^32, an op meets an earlier op's key about once in 4,000 ops, so keeping them
 * would change nothing but the footprint (the study's map kept its actors for the
 * collector; each new one is counted in bytes per op here as it was there).
 *
 * The caller awaits each future: the study's benchmark makes its futures with one map over
 * the keys and then awaits them with another, futures.map(Await.result), over a strict
 * collection, so every message is sent before the first await and the actors run
 * concurrently with each other and with the sends (form=concurrent). Awaiting each future
 * before sending the next message is form=sequence.
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
			wl_gate_complete(fifo->gate, 0);
			fifo = next;
		}
	}
}

/* The key's actor in this op's registry, made on the key's first use; NULL when out of
 * memory. */
static struct sq_actor *sq_actor(struct sq_state *st, uint64_t key)
{
	struct sq_entry *e;

	for (uint64_t h = wl__splitmix64(key);; h++) {
		e = &st->reg[h & st->kmask];
		if (e->gen != st->ops)
			break;
		if (e->key == key)
			return e->actor;
	}
	e->actor = rt_calloc(1, sizeof(struct sq_actor));
	if (!e->actor)
		return NULL;
	e->key = key;
	e->gen = st->ops;
	st->made[st->nmade++] = e->actor;
	return e->actor;
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

static void sq_actors(struct sq_state *st)
{
	long sent = 0;
	int err;

	st->ndrains = 0;
	st->nmade = 0;
	for (; sent < st->n; sent++) {
		struct sq_slot *s = &st->slots[st->issue[sent]];
		struct sq_actor *a = sq_actor(st, s->raw);

		s->gate = a ? wl_gate_new(2) : NULL; /* the caller's and the drain's */
		if (!s->gate) {
			sq_failed(st, st->issue[sent], ENOMEM);
			break;
		}
		err = sq_send(st, a, s);
		if (err) {
			/* the message is in the mailbox, with no drain to take it: it never runs,
			 * and its future is the caller's alone */
			sq_failed(st, st->issue[sent], -err);
			wl_gate_unref(s->gate);
			wl_gate_unref(s->gate);
			break;
		}
		if (st->sequence)
			wl_gate_wait(s->gate);
	}
	if (!st->sequence)
		for (long i = 0; i < sent; i++)
			wl_gate_wait(st->slots[st->issue[i]].gate);
	/* the futures were the answers; the joins end the drains' use of the slots and the
	 * actors, before the actors go and the next op initialises the slots again */
	for (long i = 0; i < st->ndrains; i++)
		rt_join(st->tasks[i]);
	for (long i = 0; i < st->nmade; i++)
		rt_free(st->made[i]);
	st->actors_made += (uint64_t)st->nmade;
}

/* ---- the op ------------------------------------------------------------------------------ */

/* The index of key in this op, numbered in order of first appearance. */
static uint32_t sq_key_index(struct sq_state *st, uint64_t key)
{
	struct sq_entry *e;

	for (uint64_t h = wl__splitmix64(key);; h++) {
		e = &st->kid[h & st->kmask];
		if (e->gen != st->ops)
			break;
		if (e->key == key)
			return e->index;
	}
	e->key = key;
	e->gen = st->ops;
	e->index = (uint32_t)st->nkeys++;
	return e->index;
}

/* Draw the op's keys, number each key's operations in issue order, and set the order the
 * op issues them in (with the injected fault, one out of it). */
static void sq_prepare(struct sq_state *st)
{
	uint64_t x = wl__splitmix64(st->seed ^ wl__splitmix64(st->ops++));

	/* ops counts from 1 here: a table entry of generation 0 is empty */
	st->nkeys = 0;
	for (long i = 0; i < st->n; i++) {
		struct sq_slot *s = &st->slots[i];
		long known = st->nkeys;

		s->raw = wl__splitmix64(x + (uint64_t)i) % (uint64_t)st->keys;
		s->key = sq_key_index(st, s->raw);
		if (st->nkeys > known) /* a new key */
			st->issued[s->key] = 0;
		s->seq = st->issued[s->key]++;
		s->runs = 0;
		s->pos = UINT32_MAX;
		s->ticket = UINT64_MAX;
		s->runner = NULL;
		s->released = false;
		s->gate = NULL;
		s->io = NULL;
		st->issue[i] = i;
	}
	memset(st->ran, 0, (size_t)st->nkeys * sizeof(*st->ran));
	memset(st->busy, 0, (size_t)st->nkeys);
	st->overlaps = 0;
	st->tickets = 0;
	st->inside = 0;
	st->inside_max = 0;
	st->failed_at = -1;
	st->start_errno = 0;
	st->inject_taken = 0;
	if (!st->inject)
		return;
	/* the fault needs a key with two operations: the first such one */
	st->inject = false;
	for (long b = 0; b < st->n && !st->inject; b++) {
		if (st->slots[b].seq != 1)
			continue;
		st->inject = true;
		st->inject_key = st->slots[b].key;
		if (st->inject_order) {
			/* the key's first operation issued right after its second */
			long a = 0;

			while (st->slots[a].key != st->inject_key)
				a++;
			memmove(&st->issue[a], &st->issue[a + 1], (size_t)(b - a) * sizeof(long));
			st->issue[b] = a;
		}
	}
	rt_latch_init(&st->inject_inside, 1);
}

static uint64_t sequentially_op(struct wl_ctx *ctx)
{
	struct sq_state *st = ctx->state;

	sq_prepare(st);
	st->op_task = rt_current();
	switch (st->impl) {
	case SQ_BUCKETS:
		if (st->sequence)
			sq_buckets_sequence(st);
		else
			sq_buckets_concurrent(st);
		break;
	case SQ_ACTORS:
		sq_actors(st);
		break;
	default:
		sq_converted(st);
		break;
	}
	if (st->inside_max > st->inside_max_ever)
		st->inside_max_ever = st->inside_max;
	st->inject = false;
	return (uint64_t)st->n;
}

/* ---- the check ---------------------------------------------------------------------------- */

/* Where the form promises each key's operations run in issue order. */
static bool sq_ordered(const struct sq_state *st)
{
	return st->impl == SQ_ACTORS || st->sequence;
}

static bool sequentially_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	struct sq_state *st = ctx->state;
	uint32_t *base = st->base, *seen = st->seen;

	if (st->failed_at >= 0) {
		snprintf(err, errlen, "sequentially: operation %ld could not be issued or run: %s",
			 st->failed_at, strerror(st->start_errno));
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
	if (st->sequence && st->inside_max > 1) {
		snprintf(err, errlen,
			 "sequentially: %u bodies were inside at once in a sequence (not one after "
			 "another)", st->inside_max);
		return false;
	}
	/* each key's operations own a run of `seen`, one entry per position */
	base[0] = 0;
	for (long k = 0; k < st->nkeys; k++)
		base[k + 1] = base[k] + st->issued[k];
	memset(seen, 0, (size_t)st->n * sizeof(*seen));
	for (long i = 0; i < st->n; i++) {
		const struct sq_slot *s = &st->slots[i];
		unsigned long long key = (unsigned long long)s->raw;

		if (s->runs != 1) {
			snprintf(err, errlen,
				 "sequentially: operation %ld (key %llu, its %u of %u) ran %u times, "
				 "expected once (%s)",
				 i, key, s->seq + 1, st->issued[s->key], s->runs,
				 s->runs ? "duplicated" : "lost");
			return false;
		}
		if (s->pos >= st->issued[s->key] || seen[base[s->key] + s->pos]++) {
			snprintf(err, errlen,
				 "sequentially: key %llu: operation %ld ran at position %u, which is "
				 "taken or past its %u operations (a count lost in the section)",
				 key, i, s->pos, st->issued[s->key]);
			return false;
		}
		if (sq_ordered(st) && s->pos != s->seq) {
			snprintf(err, errlen,
				 "sequentially: key %llu: operation %ld, issued %u of %u, ran at "
				 "position %u (per-key order not preserved)",
				 key, i, s->seq + 1, st->issued[s->key], s->pos + 1);
			return false;
		}
		if (st->sequence && s->ticket != (uint64_t)i) {
			snprintf(err, errlen, "sequentially: operation %ld ran as body %llu of "
				 "the sequence (not in issue order)", i,
				 (unsigned long long)s->ticket + 1);
			return false;
		}
		if (st->sequence && st->impl == SQ_BUCKETS && s->runner != st->op_task) {
			snprintf(err, errlen, "sequentially: operation %ld ran in another task "
				 "than the sequence's own", i);
			return false;
		}
	}
	return true;
}

void wl__sequentially_inject(struct wl_ctx *ctx)
{
	struct sq_state *st = ctx->state;

	st->inject = true;
	st->inject_order = sq_ordered(st);
}

/* ---- setup, report and teardown ------------------------------------------------------------ */

static size_t sequentially_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	struct sq_state *st = ctx->state;
	size_t n = 0;

	if (st->impl == SQ_ACTORS)
		wl_metric_add(out, &n, max, "actors_per_op", "actors",
			      st->ops ? (double)st->actors_made / (double)st->ops : 0);
	wl_metric_add(out, &n, max, "inside_max", "bodies", st->inside_max_ever);
	return n;
}

static void sequentially_teardown(struct wl_ctx *ctx)
{
	struct sq_state *st = ctx->state;

	if (!st)
		return;
	for (long b = 0; st->buckets && b < st->nbuckets; b++)
		rt_sem_destroy(&st->buckets[b]);
	free(st->slots);
	free(st->issue);
	free(st->tasks);
	free(st->buckets);
	free(st->kid);
	free(st->fx);
	free(st->reg);
	free(st->made);
	free(st->chan);
	free(st->chan_slots);
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
	size_t n, tab = 2;
	long form;

	if (!st)
		goto out_nomem;
	ctx->state = st;
	st->sched = ctx->sched;
	st->impl = wl_choice(ctx, "impl");
	form = wl_choice(ctx, "form");
	st->sequence = form == SQ_SEQUENCE || (form == SQ_STUDY && st->impl == SQ_BUCKETS);
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
	n = (size_t)st->n;
	while (tab < 2 * n) /* at most half full */
		tab *= 2;
	st->kmask = tab - 1;
	st->slots = calloc(n, sizeof(*st->slots));
	st->issue = calloc(n, sizeof(*st->issue));
	st->tasks = calloc(n, sizeof(*st->tasks));
	st->buckets = calloc((size_t)st->nbuckets, sizeof(*st->buckets));
	st->kid = calloc(tab, sizeof(*st->kid));
	st->issued = calloc(n, sizeof(*st->issued));
	st->ran = calloc(n, sizeof(*st->ran));
	st->busy = calloc(n, 1);
	st->base = calloc(n + 1, sizeof(*st->base));
	st->seen = calloc(n, sizeof(*st->seen));
	if (!st->slots || !st->issue || !st->tasks || !st->buckets || !st->kid || !st->issued ||
	    !st->ran || !st->busy || !st->base || !st->seen)
		goto out_nomem;
	if (st->impl == SQ_BUCKETS && st->sequence) {
		st->fx = calloc(n, sizeof(*st->fx));
		if (!st->fx)
			goto out_nomem;
	}
	if (st->impl == SQ_ACTORS) {
		st->reg = calloc(tab, sizeof(*st->reg));
		st->made = calloc(n, sizeof(*st->made));
		if (!st->reg || !st->made)
			goto out_nomem;
	}
	if (st->impl == SQ_CONVERTED) {
		/* the channel's head and tail sit on cache lines of their own */
		st->chan = aligned_alloc(_Alignof(struct rt_chan), sizeof(*st->chan));
		st->chan_slots = calloc(RT_CHAN_SLOTS(SQ_CHAN_CAP), sizeof(*st->chan_slots));
		if (!st->chan || !st->chan_slots)
			goto out_nomem;
	}
	for (long b = 0; b < st->nbuckets; b++)
		rt_sem_init(&st->buckets[b], 1);
	for (long i = 0; i < st->n; i++)
		st->slots[i].st = st;
	return 0;

out_nomem:
	snprintf(err, errlen, "sequentially: out of memory for n=%ld", wl_int(ctx, "n"));
	sequentially_teardown(ctx);
	return -ENOMEM;
}

static const struct wl_param params[] = {
	/* the order of enum sq_impl */
	{ "impl", WL_CHOICE, "buckets", 0, 0, "buckets,actors,converted",
	  "buckets: each operation takes its key's semaphore around the body; actors: one per "
	  "key, made on first use, a future per operation; converted: buckets, each "
	  "operation converted to a future through a dispatcher" },
	/* the order of enum sq_form */
	{ "form", WL_CHOICE, "study", 0, 0, "study,sequence,concurrent",
	  "sequence: one operation after another (buckets: the effects in one task); "
	  "concurrent: all issued, then awaited (buckets: a task each); study: as the study "
	  "ran each impl, buckets in sequence, actors and converted concurrent" },
	{ "buckets", WL_INT, "0", 0, 65536, NULL,
	  "one-permit semaphores the keys share; 0: 5 x workers (threads: 5 x CPUs)" },
	{ "n", WL_INT, "1000", 1, 1000000, NULL, "operations per op" },
	{ "keys", WL_INT, "4294967296", 1, 4611686018427387904.0, NULL,
	  "the operations' keys are drawn from [0, keys): by default nearly every operation "
	  "meets a new key" },
	{ "seed", WL_INT, "1", 0, 4294967295.0, NULL, "seed of the keys" },
	{ 0 },
};

const struct wl_desc wl_sequentially = {
	.name = "sequentially",
	.summary = "n operations on random keys, serialized per key (semaphore buckets in "
		   "sequence, an actor per key, or buckets converted to futures through a "
		   "dispatcher), with an empty body",
	.unit = "ops/s",
	.params = params,
	.setup = sequentially_setup,
	.op = sequentially_op,
	.check = sequentially_check,
	.teardown = sequentially_teardown,
	.report = sequentially_report,
};
