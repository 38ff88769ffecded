/*
 * Adaptive worker counts: Kyo's concurrency regulator.
 *
 * Kyo keeps a thread that sleeps 1 ms every 10 ms and measures how late it wakes; the
 * standard deviation of that lateness ("jitter") over the last 200 samples says how
 * contended the machine is. Every 1.5 s it adjusts the number of active workers: fewer
 * when jitter is above 0.8 ms, more when it is below 0.5 ms and the active workers are
 * at least 80% loaded (sum of loads over workers), and not at all otherwise. A step
 * grows with the number of steps in a row in the same direction, k^1.2 rounded.
 * Adaptation is slow by design, which is half of why Kyo's 1 ms blocking calls hurt:
 * queued work waits on one worker while the regulator takes seconds to add any.
 *
 * Here the monitor thread's own wake-ups are the probe (it sleeps every tick), and
 * active workers are the first nactive: scans place only on them; the others finish
 * what they hold and park.
 */
#include <math.h>

#include "runtime/internal.h"

#define KYO_WINDOW       200
#define KYO_REGULATE_NS  1500000000ull
#define KYO_JITTER_HI_NS 800000.0
#define KYO_JITTER_LO_NS 500000.0
#define KYO_LOAD_TARGET  0.8
#define KYO_STEP_EXP     1.2

int rt__regulate_step(int *streak, double jitter_ns, double load_avg)
{
	int dir = jitter_ns > KYO_JITTER_HI_NS			      ? -1
		  : jitter_ns < KYO_JITTER_LO_NS && load_avg >= KYO_LOAD_TARGET ? 1
										      : 0;
	int k;

	if (!dir) {
		*streak = 0;
		return 0;
	}
	/* a step in the same direction as the last one grows; a turn starts over */
	*streak = (*streak > 0) == (dir > 0) && *streak ? *streak + dir : dir;
	k = *streak < 0 ? -*streak : *streak;
	return dir * (int)lround(pow(k, KYO_STEP_EXP));
}

/* The standard deviation of the window. */
static double jitter(const struct rt__regulator *r)
{
	double mean = 0, var = 0;

	if (r->n < 2)
		return 0;
	for (unsigned i = 0; i < r->n; i++)
		mean += (double)r->window[i];
	mean /= r->n;
	for (unsigned i = 0; i < r->n; i++)
		var += ((double)r->window[i] - mean) * ((double)r->window[i] - mean);
	return sqrt(var / (r->n - 1));
}

static double load_avg(struct rt_sched *s, unsigned active)
{
	double sum = 0;

	for (unsigned i = 0; i < active; i++)
		sum += rt__load(s->workers[i]);
	return active ? sum / active : 0;
}

void rt__adapt_tick(struct rt_sched *s, uint64_t now, uint64_t late_ns)
{
	struct rt__regulator *r = &s->regulator;
	unsigned active = __atomic_load_n(&s->nactive, __ATOMIC_ACQUIRE), lo, hi, want;
	int delta;

	r->window[r->pos] = late_ns;
	r->pos = (r->pos + 1) % KYO_WINDOW;
	if (r->n < KYO_WINDOW)
		r->n++;
	if (!r->last_ns)
		r->last_ns = now;
	if (now - r->last_ns < KYO_REGULATE_NS)
		return;
	r->last_ns = now;

	delta = rt__regulate_step(&r->streak, jitter(r), load_avg(s, active));
	lo = s->cfg.workers_min ? s->cfg.workers_min : (s->ncore + 1) / 2;
	hi = s->nmax;
	want = (int)active + delta < (int)lo ? lo : (unsigned)((int)active + delta);
	if (want > hi)
		want = hi;
	if (want == active)
		return;
	/* more than have ever started: start them (each counts itself active) */
	while (__atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE) < want && rt__worker_add(s))
		;
	__atomic_store_n(&s->nactive, want, __ATOMIC_RELEASE);
	__atomic_store_n(&s->adaptations, s->adaptations + 1, __ATOMIC_RELAXED);
}
