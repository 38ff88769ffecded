/*
 * sleeper: a child that spends known time off CPU, for the offcpu probe tests.
 *
 *   sleeper COUNT MS [MODE]
 *
 * Prints the offset of its thread-local phase word (rt_phase_word, holding
 * RT_PHASE_WORD(RT_PHASE_BLOCK, 1, 7) in the napping thread) from the thread pointer on
 * one line, waits for a line on stdin (the probe is started then), naps COUNT times
 * for MS milliseconds, timing each nap itself with CLOCK_MONOTONIC, prints the total
 * it measured in nanoseconds on one line, and waits for stdin to close (so that the
 * probe reads its mappings while it lives). MODE:
 *   nap   (default) the naps in sleeper_nap, as clock_nanosleep called straight from
 *         it (no glibc wrapper, which has no frame pointers: the walk then names the
 *         napping function itself)
 *   many  each nap from a recursion of a different depth (1 + i % 48) through
 *         sleeper_deep: as many distinct user stacks as naps, up to 48
 *   pipe  the main thread blocks in sleeper_wait on a pipe that a second thread,
 *         named sleeper-waker, writes in sleeper_wake after each nap of its own; the
 *         total printed is the main thread's measured time blocked
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

static long count, ms;
static int fds[2];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
	uint64_t t0 = now_ns();

	/* relative: an interrupted nap (never expected here) is simply shorter */
	raw_syscall4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&ts, 0);
	return now_ns() - t0;
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
	uint64_t t0 = now_ns();

	raw_syscall4(SYS_read, fds[0], (long)&b, 1, 0);
	return now_ns() - t0;
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
	    (strcmp(mode, "nap") && strcmp(mode, "many") && strcmp(mode, "pipe"))) {
		fprintf(stderr, "usage: sleeper COUNT MS [nap|many|pipe]\n");
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
			total += !strcmp(mode, "many") ? sleeper_deep((int)(1 + i % 48), ms)
						       : sleeper_nap(ms);
	}
	printf("%llu\n", (unsigned long long)total);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
