/*
 * A waiter's gate: cats-effect's Deferred, Kyo's promise, for the workloads that build a
 * library's primitive from effects (permit's semaphores, queue-spsc's queues).
 *
 * Completed once, with a value when the primitive hands one over. Reference counted:
 * held by the waiter and by the list a completer takes it from; the last of them frees
 * it, so a waiter that wakes may go while its completer is still leaving the latch.
 */
#ifndef SCHEDLAB_WORKLOADS_GATE_H
#define SCHEDLAB_WORKLOADS_GATE_H

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

#endif /* SCHEDLAB_WORKLOADS_GATE_H */
