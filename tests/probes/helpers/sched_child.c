/*
 * sched_child: the sched probe tests' child, whose scheduling is known.
 *
 *   sched_child pingpong N CPU   two threads pinned to CPU hand a token back and forth N
 *                                times (each waits on a semaphore the other posts)
 *   sched_child migrate N        one thread pinned to CPU 0 moves itself between CPUs 0
 *                                and 1 N times, each move waited for with sched_getcpu()
 *   sched_child spin MS          one thread spins for MS ms of its own CPU time
 *
 * Protocol on stdin/stdout: it prints "ready OFF TID..." once its threads wait (OFF: its
 * phase word's offset from the thread pointer; TID: each worker thread's), starts on a
 * line from stdin, prints "done FIGURES..." when the work is over, and exits when stdin
 * closes, so that a test reads the probe while it lives. Each worker thread keeps
 * RT_PHASE_WORD(RT_PHASE_RUN, 5 + i, 0) in its phase word, as a runtime worker would.
 * FIGURES: pingpong, each thread's voluntary and involuntary switch counts over its
 * part (getrusage(RUSAGE_THREAD)), then the ns from the go to both threads' end
 * (CLOCK_MONOTONIC) and the process's CPU time over it (CLOCK_PROCESS_CPUTIME_ID); migrate, the moves made; spin, the thread's CPU time in ns
 * (CLOCK_THREAD_CPUTIME_ID) when it stopped spinning. The ping-pong's threads are named
 * rt-worker, as the runtime's workers are.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/phase.h"

__thread volatile uint64_t rt_phase_word;

static sem_t ready, go, token[2];
static long rounds;
static int cpu;
static pid_t tids[2];
static long figures[6];
static volatile uint64_t sink; /* what the spin computes, so that it is not optimised away */

static void die(const char *what)
{
	fprintf(stderr, "sched_child: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pin(int c)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
	while (sched_getcpu() != c)
		; /* the move is made once we run there */
}

static void start(int i)
{
	rt_phase_word = RT_PHASE_WORD(RT_PHASE_RUN, 5 + i, 0);
	tids[i] = (pid_t)syscall(SYS_gettid);
	sem_post(&ready);
	while (sem_wait(&go) && errno == EINTR)
		;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *pingpong(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct rusage r0, r1;

	pthread_setname_np(pthread_self(), "rt-worker");
	pin(cpu);
	start(i);
	getrusage(RUSAGE_THREAD, &r0);
	for (long n = 0; n < rounds; n++) {
		if (i == 0)
			sem_post(&token[1]);
		while (sem_wait(&token[i]) && errno == EINTR)
			;
		if (i == 1)
			sem_post(&token[0]);
	}
	getrusage(RUSAGE_THREAD, &r1);
	figures[2 * i] = r1.ru_nvcsw - r0.ru_nvcsw;
	figures[2 * i + 1] = r1.ru_nivcsw - r0.ru_nivcsw;
	return NULL;
}

static void *migrate(void *arg)
{
	(void)arg;
	pin(0);
	start(0);
	for (long n = 0; n < rounds; n++)
		pin(n % 2 ? 0 : 1);
	figures[0] = rounds;
	return NULL;
}

static void *spin(void *arg)
{
	uint64_t until;

	(void)arg;
	start(0);
	until = thread_cpu_ns() + (uint64_t)rounds * 1000000u;
	while (thread_cpu_ns() < until)
		for (int k = 0; k < 1000; k++)
			sink += k;
	figures[0] = (long)thread_cpu_ns();
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*fn)(void *);
	pthread_t th[2];
	char line[16];
	uint64_t t0, cpu0;
	int n, c;

	if (argc < 3) {
		fprintf(stderr, "usage: sched_child pingpong N CPU | migrate N | spin MS\n");
		return 2;
	}
	rounds = strtol(argv[2], NULL, 10);
	if (!strcmp(argv[1], "pingpong") && argc == 4) {
		fn = pingpong, n = 2, c = 6;
		cpu = (int)strtol(argv[3], NULL, 10);
	} else if (!strcmp(argv[1], "migrate")) {
		fn = migrate, n = 1, c = 1;
	} else if (!strcmp(argv[1], "spin")) {
		fn = spin, n = 1, c = 1;
	} else {
		fprintf(stderr, "sched_child: no mode '%s'\n", argv[1]);
		return 2;
	}
	sem_init(&ready, 0, 0);
	sem_init(&go, 0, 0);
	sem_init(&token[0], 0, 0);
	sem_init(&token[1], 0, 0);
	for (int i = 0; i < n; i++)
		if ((errno = pthread_create(&th[i], NULL, fn, (void *)(intptr_t)i)))
			die("pthread_create");
	for (int i = 0; i < n; i++)
		while (sem_wait(&ready) && errno == EINTR)
			;
	printf("ready %lld", (long long)((char *)&rt_phase_word - (char *)__builtin_thread_pointer()));
	for (int i = 0; i < n; i++)
		printf(" %d", tids[i]);
	printf("\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	t0 = clock_ns(CLOCK_MONOTONIC);
	cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < n; i++)
		sem_post(&go);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (fn == pingpong) {
		figures[4] = (long)(clock_ns(CLOCK_MONOTONIC) - t0);
		figures[5] = (long)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0);
	}
	printf("done");
	for (int i = 0; i < c; i++)
		printf(" %ld", figures[i]);
	printf("\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
