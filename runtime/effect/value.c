/*
 * IO values: the constructors, and the reference counts that free them.
 *
 * A node holds one reference to its child. Constructors consume the references they
 * are given, even on failure, so that nested constructors need no checks in between;
 * nodes come from rt_alloc(), so a workload's bytes per op counts them.
 */
#include <errno.h>

#include "runtime/effect/internal.h"

static struct fx_io *node(enum fx__tag tag, struct fx_io *child)
{
	struct fx_io *io = rt_alloc(sizeof(*io));

	if (!io) {
		fx_free(child);
		errno = ENOMEM;
		return NULL;
	}
	io->refs = 1;
	io->tag = tag;
	io->trace = false;
	io->code = 0;
	io->io = child;
	io->u.value = 0;
	io->env = NULL;
	return io;
}

/* A node over a child that must exist: NULL is a failed construction below. */
static struct fx_io *node_over(enum fx__tag tag, struct fx_io *child)
{
	if (!child) {
		errno = ENOMEM;
		return NULL;
	}
	return node(tag, child);
}

struct fx_io *fx_pure(uint64_t value)
{
	struct fx_io *io = node(FX_PURE, NULL);

	if (io)
		io->u.value = value;
	return io;
}

struct fx_io *fx_delay(fx_thunk fn, void *env)
{
	struct fx_io *io = node(FX_DELAY, NULL);

	if (io) {
		io->u.thunk = fn;
		io->env = env;
	}
	return io;
}

struct fx_io *fx_map(struct fx_io *child, fx_map_fn f, void *env)
{
	struct fx_io *io = node_over(FX_MAP, child);

	if (io) {
		io->u.map = f;
		io->env = env;
	}
	return io;
}

struct fx_io *fx_flat_map(struct fx_io *child, fx_bind_fn k, void *env)
{
	struct fx_io *io = node_over(FX_FLAT_MAP, child);

	if (io) {
		io->u.bind = k;
		io->env = env;
	}
	return io;
}

struct fx_io *fx_attempt(struct fx_io *child, fx_attempt_fn k, void *env)
{
	struct fx_io *io = node_over(FX_ATTEMPT, child);

	if (io) {
		io->u.attempt = k;
		io->env = env;
	}
	return io;
}

struct fx_io *fx_raise(int code, const char *msg, bool trace)
{
	struct fx_io *io = node(FX_RAISE, NULL);

	if (io) {
		io->code = code;
		io->trace = trace;
		io->u.msg = msg;
	}
	return io;
}

struct fx_io *fx_async(struct fx_io *child)
{
	return node_over(FX_ASYNC, child);
}

struct fx_io *fx_ref(struct fx_io *io)
{
	if (io)
		__atomic_fetch_add(&io->refs, 1, __ATOMIC_RELAXED);
	return io;
}

/* Drop one reference: true when it was the last, and the caller must free the node
 * (which still holds its child's reference). */
static bool unref(struct fx_io *io)
{
	/* A holder of the only reference is the only one who can see the node: no other
	 * thread can change the count, so no read-modify-write is needed (the fast path
	 * for the interpreter, which mostly holds values alone). The acquire pairs with the
	 * release in the decrements of the other holders, whose use of the node must
	 * happen before it is freed. */
	if (__atomic_load_n(&io->refs, __ATOMIC_ACQUIRE) == 1)
		return true;
	return __atomic_sub_fetch(&io->refs, 1, __ATOMIC_ACQ_REL) == 0;
}

void fx_free(struct fx_io *io)
{
	while (io && unref(io)) {
		struct fx_io *child = io->io;

		rt_free(io);
		io = child;
	}
}
