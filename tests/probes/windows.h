/*
 * Sampling windows of the harness's profile (harness/profile.c) on a child of the probe
 * tests, until what the test waits for has been seen: the CPUs may be busy with other
 * work, which only makes it take longer. Included by the probe tests that profile
 * tests/helpers/busy through the harness; everything is static.
 */
#ifndef SCHEDLAB_TESTS_PROBES_WINDOWS_H
#define SCHEDLAB_TESTS_PROBES_WINDOWS_H

#include "harness/harness.h"
#include "tests/probes/busy.h"

#include <time.h>

#define WINDOWS_MAX_S 60 /* a bound on the wait, not the condition it waits for */

/* Start `busy 100 1 MODE NAME`, open the profile *p with o, and sample the child in
 * windows of ms through p's hooks until enough(p), or fail after WINDOWS_MAX_S seconds
 * saying what (what(p), a line) had been seen. The caller closes p; the suite's .fini
 * (reap_kids) ends the child. */
static __attribute__((unused)) void profile_busy(struct hx_profile *p,
						 const struct probe_oncpu_opts *o,
						 const char *mode, const char *name, long ms,
						 bool (*enough)(const struct hx_profile *p),
						 void (*what)(const struct hx_profile *p, char *buf,
							      size_t len))
{
	struct timespec t0, t;
	struct hx_hooks h;
	char seen[256];
	int64_t tls;
	pid_t pid;

	need_bpf();
	pid = spawn_busy("100", "1", mode, name, &tls);
	cr_assert_eq(hx_profile_open(p, true, o), 0);
	cr_assert(p->attached, "oncpu: %s", p->status);
	hx_profile_hooks(p, &h);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!enough(p)) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		what(p, seen, sizeof(seen));
		cr_assert_lt(t.tv_sec - t0.tv_sec, WINDOWS_MAX_S, "after %d s: %s", WINDOWS_MAX_S,
			     seen);
		cr_assert_eq(h.measure_begin(h.ctx, pid, tls), 0);
		sleep_ms(ms);
		cr_assert_eq(h.measure_end(h.ctx, pid), 0);
	}
}

#endif /* SCHEDLAB_TESTS_PROBES_WINDOWS_H */
