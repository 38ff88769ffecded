/*
 * The runtime's counters: copied out for the harness (per worker, or summed), the
 * victim-to-thief steal matrix, and the sampled schedule-latency histogram.
 *
 * Counters are plain 64-bit words written with relaxed atomics by the thread that
 * owns them (RT_STAT_ADD) or by several (RT_STAT_ATOMIC_ADD), so a reader on another
 * thread gets each word whole, though not a consistent snapshot of all of them.
 *
 * Each counter has a USDT point beside it, and a tracer sets the events between two
 * marks beside the counters read at the marks. Spawns, runs and steals happen only
 * while there is work, never at a mark, but workers park as the work runs out, just
 * when the harness reads: a park counted before a read whose rt:park fires after the
 * mark would be counted and not seen. So a park's count and event are one step that
 * rt_sched_stats_edge() holds off while it reads and marks (a Dekker handshake: the
 * worker says it is counting, then looks for the edge; the edge says it is there, then
 * looks for counting workers, so one of them always sees the other).
 */
#include <sched.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/usdt.h"

void rt__latency_record(struct rt__worker *w, struct rt_task *t)
{
	uint64_t dt = rt__now_ns() - t->ready_ns;
	unsigned b = dt < 2 ? 0 : 63 - (unsigned)__builtin_clzll(dt);

	t->ready_ns = 0;
	if (b >= RT_LATENCY_BUCKETS)
		b = RT_LATENCY_BUCKETS - 1;
	RT_STAT_INC(w, latency_count);
	RT_STAT_ADD(w, latency_ns, dt);
	RT_STAT_INC(w, latency_hist[b]);
}

static void stats_copy(const struct rt__worker *w, struct rt_worker_stats *out)
{
	const uint64_t *src = (const uint64_t *)&w->stats;
	uint64_t *dst = (uint64_t *)out;

	for (size_t k = 0; k < sizeof(*out) / sizeof(uint64_t); k++)
		dst[k] = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
}

_Static_assert(sizeof(struct rt_worker_stats) % sizeof(uint64_t) == 0,
	       "the counters are 64-bit words only");

unsigned rt_sched_stats(struct rt_sched *s, struct rt_worker_stats *out, unsigned n)
{
	unsigned i, have = __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE);

	for (i = 0; i < n && i < have; i++)
		stats_copy(s->workers[i], &out[i]);
	return i;
}

void rt__count_park(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;

	for (;;) {
		__atomic_store_n(&w->counting_park, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&s->stats_edge, __ATOMIC_SEQ_CST))
			break;
		__atomic_store_n(&w->counting_park, 0, __ATOMIC_RELEASE);
		while (__atomic_load_n(&s->stats_edge, __ATOMIC_ACQUIRE))
			sched_yield();
	}
	RT_STAT_INC(w, parks);
	RT_USDT(park, w->index);
	__atomic_store_n(&w->counting_park, 0, __ATOMIC_RELEASE);
}

void rt_sched_stats_edge(struct rt_sched *s, struct rt_worker_stats *total,
			 void (*mark)(void *ctx), void *ctx)
{
	unsigned have;

	__atomic_store_n(&s->stats_edge, 1, __ATOMIC_SEQ_CST);
	/* after the edge is up: a worker started later looks for it before counting */
	have = __atomic_load_n(&s->nworkers, __ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < have; i++)
		while (__atomic_load_n(&s->workers[i]->counting_park, __ATOMIC_SEQ_CST))
			sched_yield();
	rt_sched_stats_total(s, total);
	if (mark)
		mark(ctx);
	__atomic_store_n(&s->stats_edge, 0, __ATOMIC_RELEASE);
}

void rt_sched_stats_total(struct rt_sched *s, struct rt_worker_stats *total)
{
	unsigned have = __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE);

	memset(total, 0, sizeof(*total));
	for (unsigned i = 0; i < have; i++) {
		struct rt_worker_stats one;
		const uint64_t *src = (const uint64_t *)&one;
		uint64_t *dst = (uint64_t *)total;

		stats_copy(s->workers[i], &one);
		for (size_t k = 0; k < sizeof(one) / sizeof(uint64_t); k++)
			dst[k] += src[k];
	}
}

uint64_t rt_sched_steals_from(struct rt_sched *s, unsigned thief, unsigned victim)
{
	if (thief >= __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE) || victim >= RT_MAX_WORKERS)
		return 0;
	return __atomic_load_n(&s->workers[thief]->steals_from[victim], __ATOMIC_RELAXED);
}
