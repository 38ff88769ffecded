/*
 * The interpreters: one run loop over IO values with an explicit stack of pending
 * continuations (map, bind and attempt nodes), so that running a chain never recurses
 * on the C stack, however deep the chain.
 *
 * The two interpreters differ only in how they keep their pending continuations.
 * FX_STACK pushes onto an array grown by doubling: linear in the depth of a
 * left-associated chain. FX_NAIVE keeps them as a linked list of cells and copies the
 * whole list, cell by cell, into freshly allocated cells on every push, so a
 * left-associated chain of n binds allocates (and frees) n^2/2 cells: the quadratic bind
 * chain one study found in Kyo, whose chain of 10,000 allocated ~1.6 GB where
 * cats-effect's took ~943 KB — an object per continuation per bind, not one block —
 * made real so that a parameter sweep can detect it.
 *
 * Errors: callbacks may rt_raise(). The loop runs under one rt_try() per run (not one
 * per step), and keeps its state in struct run, consistent whenever it calls out: a
 * callback is called only once its node is released and nothing is in flight, so a
 * raise loses nothing, and the loop resumes by unwinding with the caught error.
 * Invariant: r->cur != NULL implies r->err == NULL.
 */
#include <errno.h>
#include <string.h>

#include "runtime/effect/internal.h"

#define INLINE_FRAMES 16

/* FX_NAIVE's list: innermost first */
struct cell {
	struct fx_io *frame; /* one reference */
	struct cell *next;
};

struct run {
	enum fx_interp how;
	struct fx_io *cur;     /* the value to evaluate next, owned; NULL: deliver an outcome */
	uint64_t value;        /* the last success */
	struct rt_error *err;  /* set: unwinding with this error, owned */
	struct fx_io **frames; /* FX_STACK: pending continuations, innermost last, one
				* reference each */
	struct cell *list;     /* FX_NAIVE: the same, innermost first */
	size_t depth, cap;
	struct fx_io *inline_frames[INLINE_FRAMES];
};

/* io's child, as a reference the caller owns; io stays a continuation frame. A node
 * nobody else holds gives its child up (no count to touch); a shared one lends a new
 * reference and stays whole. */
static struct fx_io *take_child(struct fx_io *io)
{
	struct fx_io *child = io->io;

	/* acquire: pairs with the release in other holders' decrements (unref(), value.c), whose
	 * reads of io->io must happen before we write it */
	if (__atomic_load_n(&io->refs, __ATOMIC_ACQUIRE) == 1) {
		io->io = NULL;
		return child;
	}
	return fx_ref(child);
}

/* FX_NAIVE's push: a fresh list, the old one's cells copied one by one (an allocation
 * each, as a persistent list's copy makes) behind the new frame, then the old cells
 * freed. What grows with depth is the allocator's work per cell, as in the study, not a
 * block copy whose cost per entry falls as it widens. */
static bool push_copying(struct run *r, struct fx_io *frame)
{
	struct cell *head = rt_alloc(sizeof(*head)), **tail, *old, *next;

	if (!head)
		return false;
	head->frame = frame;
	tail = &head->next;
	for (old = r->list; old; old = old->next) {
		struct cell *c = rt_alloc(sizeof(*c));

		if (!c) {
			*tail = NULL;
			for (struct cell *n = head; n; n = next) { /* the copy so far; r is intact */
				next = n->next;
				rt_free(n);
			}
			return false;
		}
		c->frame = old->frame;
		*tail = c;
		tail = &c->next;
	}
	*tail = NULL;
	for (old = r->list; old; old = next) {
		next = old->next;
		rt_free(old);
	}
	r->list = head;
	r->depth++;
	return true;
}

static struct fx_io *pop(struct run *r)
{
	struct cell *c = r->list;
	struct fx_io *frame;

	r->depth--;
	if (r->how != FX_NAIVE)
		return r->frames[r->depth];
	frame = c->frame;
	r->list = c->next;
	rt_free(c);
	return frame;
}

static bool push(struct run *r, struct fx_io *frame)
{
	if (r->how == FX_NAIVE)
		return push_copying(r, frame);
	if (r->depth == r->cap) {
		struct fx_io **to = rt_alloc(2 * r->cap * sizeof(*to));

		if (!to)
			return false;
		memcpy(to, r->frames, r->depth * sizeof(*to));
		if (r->frames != r->inline_frames)
			rt_free(r->frames);
		r->frames = to;
		r->cap *= 2;
	}
	r->frames[r->depth++] = frame;
	return true;
}

static void fail(struct run *r, struct rt_error *e)
{
	r->cur = NULL;
	r->err = e ? e : rt_error_oom();
}

/* Evaluate io (owned), which is r->cur. */
static void eval(struct run *r, struct fx_io *io)
{
	struct fx_io *next;

	switch ((enum fx__tag)io->tag) {
	case FX_PURE:
		r->value = io->u.value;
		r->cur = NULL;
		fx_free(io);
		return;
	case FX_DELAY: {
		fx_thunk fn = io->u.thunk;
		void *env = io->env;

		r->cur = NULL;
		fx_free(io);
		r->value = fn(env);
		return;
	}
	case FX_RAISE: {
		struct rt_error *e = rt_error_new(io->code, io->u.msg, io->trace);

		fx_free(io);
		fail(r, e);
		return;
	}
	case FX_ASYNC:
		r->cur = take_child(io);
		fx_free(io);
		rt_yield();
		return;
	case FX_MAP:
	case FX_FLAT_MAP:
	case FX_ATTEMPT:
		next = take_child(io);
		if (!push(r, io)) {
			fx_free(io);
			fx_free(next);
			fail(r, NULL);
			return;
		}
		r->cur = next;
		return;
	}
}

/* Hand the outcome (r->value, or r->err) to the innermost frame, popped. */
static void deliver(struct run *r)
{
	struct fx_io *io = pop(r);
	enum fx__tag tag = io->tag;
	void *env = io->env;
	struct rt_result res;

	if (r->err && tag != FX_ATTEMPT) {
		fx_free(io); /* a failure skips maps and binds */
		return;
	}
	switch (tag) {
	case FX_MAP: {
		fx_map_fn f = io->u.map;

		fx_free(io);
		r->value = f(r->value, env);
		return;
	}
	case FX_FLAT_MAP: {
		fx_bind_fn k = io->u.bind;

		fx_free(io);
		r->cur = k(r->value, env);
		break;
	}
	case FX_ATTEMPT: {
		fx_attempt_fn k = io->u.attempt;

		fx_free(io);
		res = r->err ? rt_result_err(r->err) : rt_result_ok(r->value);
		r->err = NULL; /* k owns it now */
		r->cur = k(res, env);
		break;
	}
	default:
		__builtin_unreachable(); /* only these are pushed */
	}
	if (!r->cur)
		fail(r, NULL);
}

static uint64_t loop(void *arg)
{
	struct run *r = arg;

	for (;;) {
		rt_preempt_point(); /* Kyo's IO fibers yield between steps when preempted */
		if (r->cur)
			eval(r, r->cur);
		else if (r->depth)
			deliver(r);
		else
			return 0;
	}
}

struct rt_result fx_run(struct fx_io *io, enum fx_interp how)
{
	struct run r = { .how = how, .cur = io, .cap = INLINE_FRAMES };

	if (!io)
		return rt_result_err(rt_error_oom());
	if (how == FX_RUNTIME)
		r.how = how = rt_binds() == RT_BINDS_COPY ? FX_NAIVE : FX_STACK;
	if (how != FX_STACK && how != FX_NAIVE) {
		fx_free(io);
		return rt_result_err(rt_error_new(EINVAL, "fx_run: no such interpreter", false));
	}
	r.frames = r.inline_frames;
	for (;;) {
		struct rt_result res = rt_try(loop, &r);

		if (res.ok)
			break;
		r.err = res.err; /* a callback raised: r is as it left it; unwind from there */
	}
	if (r.frames != r.inline_frames)
		rt_free(r.frames);
	return r.err ? rt_result_err(r.err) : rt_result_ok(r.value);
}
