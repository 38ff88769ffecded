/*
 * The runtime's allocator entry points: the system allocator, counted.
 *
 * Every call adds to the calling worker's counters (calls and bytes), so a workload's
 * bytes per op is exact, as a JVM harness's normalized allocation rate is; the phase
 * word says "alloc" for the whole of each entry point, the counting too, so the on-CPU
 * profile attributes that time as well. Calls from threads that drive no worker are
 * not counted: a harness thread's allocations are not an op's.
 */
#include <stdlib.h>

#include "runtime/internal.h"

/* Counted on the worker the calling thread drives, if any: nothing here switches
 * tasks, so the thread cannot change under us. */
static inline void count(size_t bytes)
{
	struct rt__thread *th = rt__thread();
	struct rt__worker *w = th && !th->blocking ? th->w : NULL;

	if (w) {
		RT_STAT_INC(w, alloc_calls);
		RT_STAT_ADD(w, alloc_bytes, bytes);
	}
}

RT_PHASE_FN void *(rt_alloc)(size_t bytes)
{
	uint64_t phase = rt__phase_push(RT_PHASE_ALLOC);
	void *p = malloc(bytes);

	if (p)
		count(bytes);
	rt__phase_pop(phase);
	return p;
}

RT_PHASE_FN void *(rt_calloc)(size_t n, size_t size)
{
	uint64_t phase = rt__phase_push(RT_PHASE_ALLOC);
	void *p = calloc(n, size);

	if (p)
		count(n * size);
	rt__phase_pop(phase);
	return p;
}

RT_PHASE_FN void (rt_free)(void *p)
{
	uint64_t phase = rt__phase_push(RT_PHASE_ALLOC);
	struct rt__thread *th;

	if (p) {
		free(p);
		th = rt__thread();
		if (th && !th->blocking && th->w)
			RT_STAT_INC(th->w, frees);
	}
	rt__phase_pop(phase);
}
