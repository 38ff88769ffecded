/*
 * The one clock: CLOCK_MONOTONIC in nanoseconds, the clock bpf_ktime_get_ns() reads, so
 * that the runtime's timers, the harness's windows and the probes' events share one
 * time line. The bottom floor: header-only, it includes nothing of the runtime, and any
 * file of any folder may use it (rt_now_ns() in rt.h is the same clock, exported).
 */
#ifndef SCHEDLAB_RUNTIME_CLOCK_H
#define SCHEDLAB_RUNTIME_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rt_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* SCHEDLAB_RUNTIME_CLOCK_H */
