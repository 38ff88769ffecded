/*
 * The runtime's allocator entry points: the system allocator, counted.
 *
 * Every call adds to the calling worker's counters (calls and bytes), so a workload's
 * bytes per op is exact, as a JVM harness's normalized allocation rate is; the phase
 * word says "alloc" while the system allocator runs, so the on-CPU profile attributes
 * that time too. Calls from threads that are not workers are counted process-wide.
 */
#include <stdlib.h>

#include "runtime/internal.h"

/* Process-wide by nature: allocations from threads no worker owns. */
static uint64_t outside_calls, outside_bytes;

static inline void count(struct rt__worker *w, size_t bytes)
{
	if (w) {
		RT_STAT_INC(w, alloc_calls);
		RT_STAT_ADD(w, alloc_bytes, bytes);
	} else {
		__atomic_fetch_add(&outside_calls, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&outside_bytes, bytes, __ATOMIC_RELAXED);
	}
}

void *rt_alloc(size_t bytes)
{
	struct rt__worker *w = rt__self();
	uint64_t phase = 0;
	void *p;

	if (w) {
		phase = w->phase;
		rt__phase(w, RT_PHASE_ALLOC, RT_PHASE_TASK(phase));
	}
	p = malloc(bytes);
	if (w)
		__atomic_store_n(&w->phase, phase, __ATOMIC_RELAXED);
	if (p)
		count(w, bytes);
	return p;
}

void *rt_calloc(size_t n, size_t size)
{
	struct rt__worker *w = rt__self();
	uint64_t phase = 0;
	void *p;

	if (w) {
		phase = w->phase;
		rt__phase(w, RT_PHASE_ALLOC, RT_PHASE_TASK(phase));
	}
	p = calloc(n, size);
	if (w)
		__atomic_store_n(&w->phase, phase, __ATOMIC_RELAXED);
	if (p)
		count(w, n * size);
	return p;
}

void rt_free(void *p)
{
	struct rt__worker *w = rt__self();
	uint64_t phase;

	if (!p)
		return;
	if (!w) {
		free(p);
		return;
	}
	phase = w->phase;
	rt__phase(w, RT_PHASE_ALLOC, RT_PHASE_TASK(phase));
	free(p);
	__atomic_store_n(&w->phase, phase, __ATOMIC_RELAXED);
	RT_STAT_INC(w, frees);
}

void rt_alloc_outside(uint64_t *calls, uint64_t *bytes)
{
	*calls = __atomic_load_n(&outside_calls, __ATOMIC_RELAXED);
	*bytes = __atomic_load_n(&outside_bytes, __ATOMIC_RELAXED);
}
