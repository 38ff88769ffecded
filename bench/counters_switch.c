/*
 * What the counters cost a context switch: two threads pinned to one CPU ping-pong a
 * byte through two pipes, so that every round trip is two switches, with no events or
 * with the events of argv[2] inherited from the main thread as a fork opens them. The
 * figure is the process's CPU time per round trip (CLOCK_PROCESS_CPUTIME_ID), which other
 * work on the machine does not inflate the way it does wall time: the inherited events
 * are switched out and in with each thread, and that is what it measures.
 *
 *   counters_switch ROUND_TRIPS [EVENTS]     prints "ns_per_round_trip N"
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probes/counters/counters.h"

static int ping[2], pong[2];
static long trips;

static void *echo(void *arg)
{
	char c;

	for (long i = 0; i < trips; i++)
		if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1)
			return arg;
	return NULL;
}

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct probe_counters *c = NULL;
	char err[512], b = 'x';
	cpu_set_t one;
	pthread_t t;
	double t0, t1;
	char *end;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: counters_switch ROUND_TRIPS [EVENTS]\n");
		return 2;
	}
	errno = 0;
	trips = strtol(argv[1], &end, 10);
	if (errno || *end || trips < 1) {
		fprintf(stderr, "counters_switch: bad ROUND_TRIPS %s: give a positive number\n",
			argv[1]);
		return 2;
	}
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof(one), &one) || pipe(ping) || pipe(pong)) {
		perror("counters_switch: setup");
		return 1;
	}
	if (argc == 3 && !(c = probe_counters_open(argv[2], err, sizeof(err)))) {
		fprintf(stderr, "counters_switch: %s\n", err);
		return 2;
	}
	if (pthread_create(&t, NULL, echo, NULL)) {
		fprintf(stderr, "counters_switch: cannot start a thread\n");
		return 1;
	}
	t0 = cpu_ns();
	for (long i = 0; i < trips; i++)
		if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1) {
			perror("counters_switch: pipe");
			return 1;
		}
	t1 = cpu_ns();
	pthread_join(t, NULL);
	printf("ns_per_round_trip %.1f\n", (t1 - t0) / (double)trips);
	probe_counters_free(c);
	return 0;
}
