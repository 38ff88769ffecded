/*
 * The runtime's allocator entry points: the system allocator, counted.
 *
 * Every call adds to the calling worker's counters (calls and bytes), so a workload's
 * bytes per op is exact, as a JVM harness's normalized allocation rate is; the phase
 * word says "alloc" while the system allocator runs, so the on-CPU profile attributes
 * that time too. Calls from threads that drive no worker are not counted: a harness
 * thread's allocations are not an op's.
 */
#include <stdlib.h>

#include "runtime/internal.h"

/* One look-up of the calling thread per call: nothing here switches tasks, so the
 * thread cannot change under us. */
static inline struct rt__thread *enter(uint64_t *phase)
{
	struct rt__thread *th = rt__thread();

	if (th) {
		*phase = th->phase;
		rt__phase(th, RT_PHASE_ALLOC, RT_PHASE_TASK(*phase));
	}
	return th;
}

static inline void leave(struct rt__thread *th, uint64_t phase)
{
	if (th)
		__atomic_store_n(&th->phase, phase, __ATOMIC_RELAXED);
}

static inline void count(struct rt__thread *th, size_t bytes)
{
	struct rt__worker *w = th && !th->blocking ? th->w : NULL;

	if (w) {
		RT_STAT_INC(w, alloc_calls);
		RT_STAT_ADD(w, alloc_bytes, bytes);
	}
}

void *rt_alloc(size_t bytes)
{
	uint64_t phase = 0;
	struct rt__thread *th = enter(&phase);
	void *p = malloc(bytes);

	leave(th, phase);
	if (p)
		count(th, bytes);
	return p;
}

void *rt_calloc(size_t n, size_t size)
{
	uint64_t phase = 0;
	struct rt__thread *th = enter(&phase);
	void *p = calloc(n, size);

	leave(th, phase);
	if (p)
		count(th, n * size);
	return p;
}

void rt_free(void *p)
{
	uint64_t phase = 0;
	struct rt__thread *th;

	if (!p)
		return;
	th = enter(&phase);
	free(p);
	leave(th, phase);
	if (th && !th->blocking && th->w)
		RT_STAT_INC(th->w, frees);
}
