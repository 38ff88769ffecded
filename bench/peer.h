/*
 * peer.h — the driver every C program in bench/ shares, so that each peer runs the
 * iteration structure the harness runs (warm-up iterations, then measured iterations
 * of fixed time, one throughput sample a line on stdout) and `make bench` summarizes
 * every peer, the Go, Tokio and JDK ones included, with one summarizer:
 *
 *   PROG JOB [--warmup N] [--iterations N] [--time S]   one sample per measured iteration
 *   PROG summarize < samples                            "mean error n" (99.9% t interval)
 *
 * A program lists its jobs in a table and calls peer_main(). A job's op runs on the
 * calling thread unless the program passes an `iterate` hook, which runs a whole
 * iteration somewhere else (inside a runtime task, say) through peer_iterate().
 * Header-only because the Makefile makes a program of every .c file in bench/.
 */
#ifndef SCHEDLAB_BENCH_PEER_H
#define SCHEDLAB_BENCH_PEER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis.h"

struct peer_job {
	const char *name;
	uint64_t (*op)(void); /* one op; its result must equal expect */
	uint64_t expect;
	double units;         /* what one op counts for in a sample: 1 for ops/s */
	int (*setup)(void);   /* optional, once before the warm-up: 0 or -errno */
	int tag;              /* the program's own, for its iterate hook */
};

/* Runs one iteration of job for time_s; 0 with *rate (units/s), or -errno. */
typedef int (*peer_iterate_fn)(const struct peer_job *job, double time_s, double *rate);

static inline double peer_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Call job->op until time_s has passed, checking every result, on the calling thread. */
static inline int peer_iterate(const struct peer_job *job, double time_s, double *rate)
{
	double t0 = peer_now(), t;
	uint64_t ops = 0;

	do {
		uint64_t r = job->op();

		if (r != job->expect) {
			fprintf(stderr, "%s: result %llu, expected %llu\n", job->name,
				(unsigned long long)r, (unsigned long long)job->expect);
			return -EIO;
		}
		ops++;
		t = peer_now();
	} while (t - t0 < time_s);
	*rate = (double)ops * job->units / (t - t0);
	return 0;
}

static inline int peer_summarize(const char *prog)
{
	double x[4096], v;
	struct an_summary s;
	size_t n = 0;

	while (n < sizeof(x) / sizeof(x[0]) && scanf("%lf", &v) == 1)
		x[n++] = v;
	if (an_summarize(x, n, 0.999, &s)) {
		fprintf(stderr, "%s summarize: no samples on stdin\n", prog);
		return 2;
	}
	printf("%.17g %.17g %zu\n", s.mean, s.ci_half, s.n);
	return 0;
}

/* A whole number >= min from text, or -1. */
static inline long peer_count(const char *text, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	return errno || end == text || *end || v < min ? -1 : v;
}

static inline int peer_main(int argc, char **argv, const struct peer_job *jobs, size_t njobs,
			    peer_iterate_fn iterate)
{
	const char *prog = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	long warmup = 3, iterations = 3;
	double time_s = 1.0;
	size_t j;
	int err;

	if (argc == 2 && !strcmp(argv[1], "summarize"))
		return peer_summarize(prog);
	if (argc < 2 || argc % 2) {
		fprintf(stderr, "usage: %s JOB [--warmup N] [--iterations N] [--time S]\n"
				"       %s summarize < samples\njobs:",
			prog, prog);
		for (j = 0; j < njobs; j++)
			fprintf(stderr, " %s", jobs[j].name);
		fputc('\n', stderr);
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		char *end;

		if (!strcmp(argv[i], "--warmup")) {
			warmup = peer_count(argv[i + 1], 0);
		} else if (!strcmp(argv[i], "--iterations")) {
			iterations = peer_count(argv[i + 1], 1);
		} else if (!strcmp(argv[i], "--time")) {
			errno = 0;
			time_s = strtod(argv[i + 1], &end);
			if (errno || end == argv[i + 1] || *end)
				time_s = -1;
		} else {
			fprintf(stderr, "%s: unknown option %s\n", prog, argv[i]);
			return 2;
		}
	}
	for (j = 0; j < njobs; j++)
		if (!strcmp(jobs[j].name, argv[1]))
			break;
	if (j == njobs || warmup < 0 || iterations < 1 || !(time_s > 0)) {
		fprintf(stderr, "%s: unknown job '%s' or bad counts\n", prog, argv[1]);
		return 2;
	}
	if (jobs[j].setup && (err = jobs[j].setup())) {
		fprintf(stderr, "%s %s: setup failed: %s\n", prog, jobs[j].name, strerror(-err));
		return 1;
	}
	for (long it = 0; it < warmup + iterations; it++) {
		double rate;

		err = iterate ? iterate(&jobs[j], time_s, &rate) : peer_iterate(&jobs[j], time_s, &rate);
		if (err) {
			fprintf(stderr, "%s %s: iteration %ld failed: %s\n", prog, jobs[j].name,
				it + 1, strerror(-err));
			return 1;
		}
		if (it >= warmup)
			printf("%.17g\n", rate);
	}
	return 0;
}

#endif /* SCHEDLAB_BENCH_PEER_H */
