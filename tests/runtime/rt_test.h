/*
 * Shared by the runtime tests: starting schedulers, running a test under every preset,
 * waiting for a flag, pinning a thread. Sizes: whole in the normal build, a tenth under
 * ThreadSanitizer (make test SANITIZE=thread), which slows every access by an order of
 * magnitude; the races it looks for need interleavings, not volume. Tests of memory
 * figures are off under it (.disabled = RT_UNDER_TSAN): its shadow memory is in them.
 */
#ifndef SCHEDLAB_TESTS_RT_TEST_H
#define SCHEDLAB_TESTS_RT_TEST_H

#if defined(RT_SANITIZE_THREAD)
#define RT_TEST_N(n) ((n) / 10 ? (n) / 10 : 1)
#define RT_UNDER_TSAN 1
#else
#define RT_TEST_N(n) (n)
#define RT_UNDER_TSAN 0
#endif

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt.h"

/* Burn ns of CPU on the calling thread (a task's worker stays busy all the while). */
static inline void rt_test_spin_ns(uint64_t ns)
{
	uint64_t until = rt_now_ns() + ns;

	while (rt_now_ns() < until)
		;
}

/* A scheduler of a preset (NULL: the default) with `workers` workers (0: the preset's). */
static inline struct rt_sched *rt_test_start(const char *preset, unsigned workers)
{
	struct rt_config c;
	struct rt_sched *s;

	cr_assert_eq(rt_config_preset(&c, preset ? preset : "ce"), 0, "preset %s", preset);
	if (workers)
		c.workers = workers;
	s = rt_sched_new(&c);
	cr_assert_not_null(s, "rt_sched_new(%s, %u): %s", preset ? preset : "ce", workers,
			   strerror(errno));
	return s;
}

/* A preset with knob overrides: NULL-terminated name, value pairs. */
static inline struct rt_sched *rt_test_start_with(const char *preset, unsigned workers, ...)
{
	struct rt_config c;
	struct rt_sched *s;
	const char *knob;
	char err[256];
	va_list ap;

	cr_assert_eq(rt_config_preset(&c, preset), 0, "preset %s", preset);
	if (workers)
		c.workers = workers;
	va_start(ap, workers);
	while ((knob = va_arg(ap, const char *))) {
		const char *value = va_arg(ap, const char *);

		cr_assert_eq(rt_config_set(&c, knob, value, err, sizeof(err)), 0, "%s", err);
	}
	va_end(ap);
	s = rt_sched_new(&c);
	cr_assert_not_null(s, "%s: %s", preset, strerror(errno));
	return s;
}

/* Run fn under every preset (the list grows as presets are added) with 2 and 8 workers. */
static inline void rt_test_each_config(void (*fn)(struct rt_sched *s, const char *what))
{
	static const unsigned counts[] = { 2, 8 };

	for (const char *const *p = rt_preset_names(); *p; p++) {
		for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			struct rt_sched *s = rt_test_start(*p, counts[i]);
			char what[64];

			snprintf(what, sizeof(what), "%s/%u workers", *p, counts[i]);
			fn(s, what);
			rt_sched_free(s);
		}
	}
}

/* Wait (politely) until *word reaches want; fail the test after 30 s on the clock. */
static inline void rt_test_await_u32(const uint32_t *word, uint32_t want, const char *what)
{
	/* a deadline on the clock, not a count of sleeps, which a loaded machine stretches */
	uint64_t until = rt_now_ns() + 30 * 1000000000ull;

	while (rt_now_ns() < until) {
		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == want)
			return;
		usleep(100);
	}
	if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == want)
		return;
	cr_assert_fail("%s: stuck at %u, want %u", what, __atomic_load_n(word, __ATOMIC_ACQUIRE),
		       want);
}

/* The state letter of thread tid of this process in /proc/self/task/TID/stat (R running or
 * runnable, S asleep, ...); '?' when it cannot be read (the thread is gone). */
static inline char rt_test_thread_state(pid_t tid)
{
	char path[64], buf[512], state = '?';
	const char *paren;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	if (fgets(buf, sizeof(buf), f) && (paren = strrchr(buf, ')')) && paren[1] == ' ')
		state = paren[2]; /* "tid (comm) S ..." */
	fclose(f);
	return state;
}

/* Wait until thread tid is asleep (state S: blocked, not runnable, which other work on the
 * CPUs cannot make it); fail after 30 s on the clock. */
static inline void rt_test_await_asleep(pid_t tid, const char *what)
{
	uint64_t until = rt_now_ns() + 30 * 1000000000ull;
	char state;

	while ((state = rt_test_thread_state(tid)) != 'S' && rt_now_ns() < until)
		usleep(100);
	if (state != 'S')
		cr_assert_fail("%s: thread %d still in state %c after 30 s", what, (int)tid, state);
}

/* Pin the calling thread to CPU i (modulo the CPUs there are). */
static inline void rt_test_pin(unsigned i)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(i % (unsigned)(cpus > 0 ? cpus : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

#endif /* SCHEDLAB_TESTS_RT_TEST_H */
