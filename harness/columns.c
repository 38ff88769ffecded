/*
 * The runtime's counters as report columns. One table of names and offsets keeps the
 * totals, the per-iteration rows and the per-worker rows in the same order.
 */
#include <math.h>
#include <stddef.h>

#include "harness/harness.h"

#define COL(field) { #field, offsetof(struct rt_worker_stats, field) }

static const struct {
	const char *name;
	size_t offset;
} cols[] = {
	COL(tasks_run),      COL(spawned),         COL(stolen),
	COL(steal_attempts), COL(steals),          COL(parks),
	COL(noop_wakeups),   COL(notifies),        COL(place_local),
	COL(place_lifo),     COL(place_external),  COL(place_scan),
	COL(place_fallback), COL(place_flush),     COL(place_remote),
	COL(lifo_runs),      COL(overflows),       COL(global_pops),
	COL(regret_sum),     COL(missed_idle),     COL(idle_while_queued_ns),
	COL(stranded_ns),    COL(stranded_task_ns), COL(blocking_episodes),
	COL(blocking_ns),    COL(handoffs),        COL(detector_flags),
	COL(detector_misses), COL(compensations),  COL(offloads),
	COL(stalls),         COL(preemptions),
	COL(alloc_calls),
	COL(alloc_bytes),    COL(frees),           COL(latency_count),
	COL(latency_ns),
};

#define NCOLS (sizeof(cols) / sizeof(cols[0]))

static const char *names[NCOLS];

const char *const *hx_stat_columns(size_t *n)
{
	if (!names[0])
		for (size_t i = 0; i < NCOLS; i++)
			names[i] = cols[i].name;
	*n = NCOLS;
	return names;
}

void hx_stat_row(const struct rt_worker_stats *st, double *out)
{
	for (size_t i = 0; i < NCOLS; i++)
		out[i] = (double)*(const uint64_t *)((const char *)st + cols[i].offset);
}

double hx_latency_quantile(const struct rt_worker_stats *st, double q)
{
	uint64_t want, seen = 0;

	if (!st->latency_count)
		return NAN;
	want = (uint64_t)ceil(q * (double)st->latency_count);
	for (unsigned k = 0; k < RT_LATENCY_BUCKETS; k++) {
		seen += st->latency_hist[k];
		if (seen >= want)
			return ldexp(1.0, (int)k + 1);
	}
	return ldexp(1.0, RT_LATENCY_BUCKETS);
}
