/*
 * sleeper: a child that spends known time off CPU, for the offcpu probe tests.
 *
 *   sleeper COUNT MS [MODE]
 *
 * Prints the offset of its thread-local phase word (rt_phase_word, holding
 * RT_PHASE_WORD(RT_PHASE_BLOCK, 1, 7) in the napping thread) from the thread pointer on
 * one line, waits for a line on stdin (the probe is started then), naps COUNT times
 * for MS milliseconds, timing each nap itself (CLOCK_MONOTONIC less its own
 * CLOCK_THREAD_CPUTIME_ID over the nap: the time it was off CPU by its own clocks),
 * prints the total it measured in nanoseconds on one line, and waits for stdin to close (so that the
 * probe reads its mappings while it lives). MODE:
 *   nap   (default) the naps in sleeper_nap, as clock_nanosleep called straight from
 *         it (no glibc wrapper, which has no frame pointers: the walk then names the
 *         napping function itself)
 *   many  each nap from a recursion of a different depth (1 + i % 48) through
 *         sleeper_deep: as many distinct user stacks as naps, up to 48
 *   deep  each nap SLEEPER_DEEP frames of sleeper_deep down: deeper than a stack walk
 *         keeps (PROBE_MAX_DEPTH, 127)
 *   pipe  the main thread blocks in sleeper_wait on a pipe that a second thread,
 *         named sleeper-waker, writes in sleeper_wake after each nap of its own; the
 *         total printed is the main thread's measured time off CPU in sleeper_wait
 * The napping thread's name is "offcpu-nap".
 */
#include "runtime/phase.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

__thread volatile uint64_t rt_phase_word;

#define SLEEPER_DEEP 200

static long count, ms;
static int fds[2];

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Where the thread is off CPU by its own clocks: wall time less its CPU time (the system
 * call's way in and out, and, on a loaded machine, a preemption before it returns). */
struct span {
	uint64_t wall, cpu;
};

static struct span span_begin(void)
{
	return (struct span){ clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_THREAD_CPUTIME_ID) };
}

static uint64_t span_off(struct span s)
{
	uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - s.cpu;
	uint64_t wall = clock_ns(CLOCK_MONOTONIC) - s.wall;

	return wall > cpu ? wall - cpu : 0;
}

/* A system call made here, not in glibc: the interrupted user pc is in the caller. */
static inline long raw_syscall4(long nr, long a, long b, long c, long d)
{
	long ret;
	register long r10 __asm__("r10") = d;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

NOINLINE uint64_t sleeper_nap(long msec)
{
	struct timespec ts = { msec / 1000, (msec % 1000) * 1000000L };
	struct span sp = span_begin();

	/* relative: an interrupted nap (never expected here) is simply shorter */
	raw_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0);
	return span_off(sp);
}

NOINLINE uint64_t sleeper_deep(int depth, long msec)
{
	uint64_t r;

	if (depth <= 0)
		return sleeper_nap(msec);
	r = sleeper_deep(depth - 1, msec);
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
	return r;
}

NOINLINE uint64_t sleeper_wait(void)
{
	char b;
	struct span sp = span_begin();

	raw_syscall4(SYS_read, fds[0], (long)&b, 1, 0);
	return span_off(sp);
}

NOINLINE void sleeper_wake(void)
{
	char b = 'w';

	raw_syscall4(SYS_write, fds[1], (long)&b, 1, 0);
}

static void *waker_main(void *arg)
{
	prctl(PR_SET_NAME, "sleeper-waker");
	for (long i = 0; i < count; i++) {
		sleeper_nap(ms);
		sleeper_wake();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 3 ? argv[3] : "nap";
	char line[16];
	uint64_t total = 0;
	pthread_t waker;

	if (argc < 3 || (count = atol(argv[1])) <= 0 || (ms = atol(argv[2])) < 0 ||
	    (strcmp(mode, "nap") && strcmp(mode, "many") && strcmp(mode, "deep") &&
	     strcmp(mode, "pipe"))) {
		fprintf(stderr, "usage: sleeper COUNT MS [nap|many|deep|pipe]\n");
		return 2;
	}
	prctl(PR_SET_NAME, "offcpu-nap");
	rt_phase_word = RT_PHASE_WORD(RT_PHASE_BLOCK, 1, 7);
	printf("%lld\n", (long long)((char *)&rt_phase_word - (char *)__builtin_thread_pointer()));
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	if (!strcmp(mode, "pipe")) {
		if (pipe(fds) || pthread_create(&waker, NULL, waker_main, NULL))
			return 1;
		for (long i = 0; i < count; i++)
			total += sleeper_wait();
		pthread_join(waker, NULL);
	} else {
		for (long i = 0; i < count; i++)
			total += !strcmp(mode, "many")	 ? sleeper_deep((int)(1 + i % 48), ms)
				 : !strcmp(mode, "deep") ? sleeper_deep(SLEEPER_DEEP, ms)
							 : sleeper_nap(ms);
	}
	printf("%llu\n", (unsigned long long)total);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
