/*
 * A waiter's gate: cats-effect's Deferred, Kyo's promise, for the workloads that build a
 * library's primitive from effects (permit's semaphores, queue-spsc's queues).
 *
 * Completed once, with a value when the primitive hands one over. Reference counted:
 * held by the waiter and by the list a completer takes it from; the last of them frees
 * it, so a waiter that wakes may go while its completer is still leaving the latch.
 *
 * And the FIFO of gates a primitive's waiters wait in (Kyo's MpmcUnboundedXaddArrayQueue
 * of promises, cats-effect's UnsafeUnbounded list of callbacks): lock-free on the JVM;
 * here a lock guards the links and an atomic length lets every operation see "nobody
 * waits", its common case, with one load.
 */
#ifndef SCHEDLAB_WORKLOADS_GATE_H
#define SCHEDLAB_WORKLOADS_GATE_H

#include <pthread.h>
#include <stdint.h>

#include "runtime/rt.h"

struct wl_gate {
	uint32_t refs;  /* atomic */
	uint64_t value; /* written before the completion, read after the wait */
	struct rt_latch latch;
};

/* refs references (1 or 2), or NULL when out of memory. */
static inline struct wl_gate *wl_gate_new(uint32_t refs)
{
	struct wl_gate *g = rt_alloc(sizeof(*g));

	if (g) {
		g->refs = refs;
		g->value = 0;
		rt_latch_init(&g->latch, 1);
	}
	return g;
}

static inline void wl_gate_unref(struct wl_gate *g)
{
	if (__atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0)
		rt_free(g);
}

/* Wait for the completion and drop the waiter's reference: the value handed over. An
 * fx thunk (fx_delay(wl_gate_wait, g)). */
static inline uint64_t wl_gate_wait(void *env)
{
	struct wl_gate *g = env;
	uint64_t v;

	rt_latch_wait(&g->latch);
	v = g->value;
	wl_gate_unref(g);
	return v;
}

/* Complete with value and drop the completer's reference. */
static inline void wl_gate_complete(struct wl_gate *g, uint64_t value)
{
	g->value = value;
	rt_latch_count_down(&g->latch);
	wl_gate_unref(g);
}

struct wl_waiter {
	struct wl_gate *gate;
	struct wl_waiter *next;
};

struct wl_waiters {
	uint32_t len; /* atomic */
	pthread_mutex_t lock;
	struct wl_waiter *head, *tail;
};

static inline void wl_waiters_init(struct wl_waiters *ws)
{
	ws->len = 0;
	ws->head = ws->tail = NULL;
	pthread_mutex_init(&ws->lock, NULL);
}

static inline void wl_waiters_append(struct wl_waiters *ws, struct wl_waiter *w)
{
	w->next = NULL;
	pthread_mutex_lock(&ws->lock);
	if (ws->tail)
		ws->tail->next = w;
	else
		ws->head = w;
	ws->tail = w;
	__atomic_add_fetch(&ws->len, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&ws->lock);
}

/* The oldest entry, or NULL when nobody waits: one load then, after a full fence that
 * orders the caller's change to the primitive before it. */
static inline struct wl_waiter *wl_waiters_take(struct wl_waiters *ws)
{
	struct wl_waiter *w;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&ws->len, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&ws->lock);
	w = ws->head;
	if (w) {
		if (!(ws->head = w->next))
			ws->tail = NULL;
		__atomic_sub_fetch(&ws->len, 1, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&ws->lock);
	return w;
}

#endif /* SCHEDLAB_WORKLOADS_GATE_H */
