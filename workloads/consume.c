/*
 * consume_cpu: simulated CPU work, a calibrated spin the compiler cannot remove.
 *
 * The black hole of a benchmark harness (JMH's Blackhole.consumeCPU): each token is one
 * step of a 48-bit linear congruential generator, every step depending on the last, so
 * the loop can be neither vectorised nor folded into a closed form, and its result is
 * stored where the compiler must assume someone reads it whenever it could be 42 (never
 * in practice, so no cache line is written). A token costs the same on every thread;
 * the report says how many nanoseconds it took on this machine, measured in the fork
 * after its iterations, so that "tokens" translate to time.
 */
#include <stdio.h>
#include <time.h>

#include "runtime/clock.h"
#include "workloads/internal.h"

/* Read by every call and written only when a spin ends at 42: process-wide by nature,
 * like JMH's consumedCPU, and what makes the spin's result observable. */
static uint64_t consume_sink;

__attribute__((noinline)) uint64_t consume_cpu(uint64_t tokens)
{
	uint64_t t = __atomic_load_n(&consume_sink, __ATOMIC_RELAXED);

	for (uint64_t i = tokens; i > 0; i--)
		t += (t * 0x5DEECE66Dull + 0xBull + i) & 0xFFFFFFFFFFFFull;
	if (t == 42)
		__atomic_store_n(&consume_sink, t, __ATOMIC_RELAXED);
	return t;
}

#define CALIBRATE_TOKENS (1u << 20) /* about 2 ms a round here */
#define CALIBRATE_ROUNDS 5

/* The fastest of a few rounds: the others include time the thread was not on a CPU,
 * which on a busy machine is most of the spread. */
double wl__consume_cpu_ns_per_token(void)
{
	uint64_t best = UINT64_MAX;

	for (int r = 0; r < CALIBRATE_ROUNDS; r++) {
		uint64_t t0 = rt_clock_ns(), t;

		consume_cpu(CALIBRATE_TOKENS);
		t = rt_clock_ns() - t0;
		if (t < best)
			best = t;
	}
	return (double)best / CALIBRATE_TOKENS;
}

void wl__consume_cpu_metric(struct wl_metric *out, size_t *n, size_t max)
{
	wl_metric_add(out, n, max, "consume_cpu", "ns/token", wl__consume_cpu_ns_per_token());
}
