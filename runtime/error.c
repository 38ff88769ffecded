/*
 * Errors: results as values, and error objects raised with longjmp.
 *
 * An error object may capture the stack when it is created, with glibc's backtrace()
 * (the DWARF unwinder, as costly as a JVM Throwable filling its stack trace); the
 * worker's phase word says STACKCAP meanwhile, so the on-CPU profile attributes
 * that time. rt_raise() jumps to the innermost handler, a frame of rt_try().
 *
 * Invariant: a chain of handlers belongs to one stack. Inside a task it hangs off the
 * task (struct rt_task.err_top), so a task that moved to another worker since it set a
 * handler still finds it, and a raise never reaches a handler in another task's frames;
 * elsewhere it is the thread's. Every handler on a chain lives in a live frame of that
 * stack, innermost first, so addresses rise along the chain: rt_raise() checks this and
 * the owner before it jumps, and rt_try() checks that its own handler is the innermost
 * when it pops it.
 */
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/internal.h"

struct rt_error {
	int code;
	unsigned nframes;
	const char *msg;  /* in the same allocation, after the frames */
	void *frames[];   /* return addresses, innermost first */
};

struct handler {
	sigjmp_buf env;
	struct handler *outer;
	struct rt_task *owner;  /* the task whose stack holds this frame; NULL: a thread's */
	struct rt_error *err;   /* what rt_raise() delivers */
};

/* What rt_error_new() hands out when it cannot allocate: never freed. */
static struct rt_error oom_error = { .code = ENOMEM, .msg = "out of memory" };

/* The innermost handler of code that runs outside any task: one chain per thread,
 * because such code never leaves its thread. */
static __thread void *thread_top;

/* The slot holding the innermost handler of whoever runs now, and its owner. */
static void **chain(struct rt_task **owner)
{
	struct rt_task *t = rt_current();

	*owner = t;
	return t ? &t->err_top : &thread_top;
}

/* Inlined, so that the frame backtrace() sees first is rt_error_new()'s own. The phase
 * is STACKCAP exactly around the call: glibc's backtrace() is the phase function, the
 * one frame of it every sample of a capture has (runtime/phase.h). */
static inline __attribute__((always_inline)) unsigned capture(void **frames, int max)
{
	uint64_t phase = rt__phase_push(RT_PHASE_STACKCAP);
	int n = backtrace(frames, max);

	rt__phase_pop(phase);
	return n > 0 ? (unsigned)n : 0;
}

struct rt_error *rt_error_new(int code, const char *msg, bool trace)
{
	void *frames[RT_ERROR_MAX_FRAMES + 1];
	unsigned n = 0;
	size_t len;
	struct rt_error *e;

	if (trace) {
		n = capture(frames, RT_ERROR_MAX_FRAMES + 1);
		n = n ? n - 1 : 0; /* frames[0] is in this function: not part of the trace */
	}
	if (!msg)
		msg = "";
	len = strlen(msg);
	e = rt_alloc(sizeof(*e) + n * sizeof(void *) + len + 1);
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->code = code;
	e->nframes = n;
	memcpy(e->frames, frames + 1, n * sizeof(void *));
	e->msg = memcpy((char *)&e->frames[n], msg, len + 1);
	return e;
}

struct rt_error *rt_error_oom(void)
{
	return &oom_error;
}

void rt_error_free(struct rt_error *e)
{
	if (e && e != &oom_error)
		rt_free(e);
}

int rt_error_code(const struct rt_error *e)
{
	return e->code;
}

const char *rt_error_message(const struct rt_error *e)
{
	return e->msg;
}

void *const *rt_error_frames(const struct rt_error *e, unsigned *n)
{
	*n = e->nframes;
	return e->frames;
}

__attribute__((noreturn)) static void die(const char *why, const struct rt_error *e,
					  const struct rt_task *owner)
{
	char where[48];

	if (owner)
		snprintf(where, sizeof(where), "task %" PRIu64, rt_task_id(owner));
	else
		snprintf(where, sizeof(where), "a thread outside the runtime's tasks");
	fprintf(stderr, "rt_raise: %s: error %d (%s) raised in %s\n", why, e->code, e->msg, where);
	if (e->nframes) {
		fprintf(stderr, "rt_raise: the error was created at:\n");
		fflush(stderr);
		backtrace_symbols_fd(e->frames, (int)e->nframes, STDERR_FILENO);
	}
	abort();
}

void rt_raise(struct rt_error *e)
{
	struct rt_task *owner;
	void **slot = chain(&owner);
	struct handler *h = *slot;

	if (!e)
		e = &oom_error; /* rt_raise(rt_error_new(...)) when the allocation failed */
	if (!h)
		die("no handler (a task's handlers are its own: wrap its body in rt_try)", e,
		    owner);
	if (h->owner != owner || (char *)h < (char *)__builtin_frame_address(0))
		die("the innermost handler's frame is gone (left by a jump past rt_try)", e, owner);
	*slot = h->outer;
	h->err = e;
	siglongjmp(h->env, 1);
}

void rt_raise_notrace(int code, const char *msg)
{
	rt_raise(rt_error_new(code, msg, false));
}

struct rt_result rt_try(rt_fn fn, void *arg)
{
	struct handler h;
	void **slot = chain(&h.owner); /* not written after sigsetjmp: no volatile needed */
	uint64_t v;

	h.outer = *slot;
	h.err = NULL;
	*slot = &h;
	/* 0: no signal mask, which would cost a syscall on every try */
	if (sigsetjmp(h.env, 0))
		return rt_result_err(h.err); /* rt_raise() popped h */
	v = fn(arg);
	if (*slot != &h) {
		fprintf(stderr, "rt_try: a handler inside %p was left without being popped\n",
			(void *)fn);
		abort();
	}
	*slot = h.outer;
	return rt_result_ok(v);
}

uint64_t rt_result_unwrap(struct rt_result r)
{
	if (!r.ok)
		rt_raise(r.err);
	return r.value;
}
