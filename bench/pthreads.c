/*
 * The benchmark jobs written with plain pthreads, for `make bench` to set beside the
 * runtime's: the same ops, the same checks, the same iteration structure (warm-up,
 * then measured iterations of fixed time, one throughput sample each).
 *
 *   pthreads JOB [--warmup N] [--iterations N] [--time S]   one line per measured iteration
 *   pthreads summarize < samples                            "mean error n" (99.9% t interval)
 *
 * JOB is spawn-join-create (pthread_create + pthread_join per child), spawn-join-pool
 * (submit to a persistent pool of one thread per CPU, wait), workers-create (a thread
 * per slice) or workers-pool (slices submitted to the pool).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "workloads/workload.h"

#define SPAWN_JOIN_N 1000
#define WORKERS      8
#define VALUES       4096
#define ROUNDS       64

/* ---- a persistent pool: one shared queue under a mutex, like a plain executor ---- */

struct job {
	void *(*fn)(void *);
	void *arg;
	void *result;
	bool done;
	pthread_cond_t cv;
	struct job *next;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;
	struct job *head, *tail;
	pthread_t *threads;
	unsigned n;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .nonempty = PTHREAD_COND_INITIALIZER };

static void *pool_thread(void *arg)
{
	for (;;) {
		struct job *j;

		pthread_mutex_lock(&pool.lock);
		while (!pool.head)
			pthread_cond_wait(&pool.nonempty, &pool.lock);
		j = pool.head;
		pool.head = j->next;
		if (!pool.head)
			pool.tail = NULL;
		pthread_mutex_unlock(&pool.lock);

		j->result = j->fn(j->arg);
		pthread_mutex_lock(&pool.lock);
		j->done = true;
		pthread_cond_signal(&j->cv);
		pthread_mutex_unlock(&pool.lock);
	}
	return NULL;
}

static int pool_start(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	pool.n = cpus > 0 ? (unsigned)cpus : 1;
	pool.threads = calloc(pool.n, sizeof(*pool.threads));
	if (!pool.threads)
		return -ENOMEM;
	for (unsigned i = 0; i < pool.n; i++)
		if (pthread_create(&pool.threads[i], NULL, pool_thread, NULL))
			return -EAGAIN;
	return 0;
}

static void pool_submit(struct job *j, void *(*fn)(void *), void *arg)
{
	j->fn = fn;
	j->arg = arg;
	j->done = false;
	j->next = NULL;
	pthread_cond_init(&j->cv, NULL);
	pthread_mutex_lock(&pool.lock);
	if (pool.tail)
		pool.tail->next = j;
	else
		pool.head = j;
	pool.tail = j;
	pthread_cond_signal(&pool.nonempty);
	pthread_mutex_unlock(&pool.lock);
}

static void *pool_wait(struct job *j)
{
	pthread_mutex_lock(&pool.lock);
	while (!j->done)
		pthread_cond_wait(&j->cv, &pool.lock);
	pthread_mutex_unlock(&pool.lock);
	pthread_cond_destroy(&j->cv);
	return j->result;
}

/* ---- the jobs ---------------------------------------------------------------------- */

static void *child(void *arg)
{
	return (void *)((uintptr_t)arg + 1);
}

struct slice {
	uint64_t first, count;
};

static void *slice_sum(void *arg)
{
	const struct slice *s = arg;

	return (void *)(uintptr_t)wl_workers_mix(s->first, s->count, ROUNDS);
}

static void make_slices(struct slice *s)
{
	for (unsigned k = 0; k < WORKERS; k++) {
		s[k].first = (uint64_t)k * (VALUES / WORKERS);
		s[k].count = VALUES / WORKERS;
	}
}

static uint64_t spawn_join_create(void)
{
	uint64_t sum = 0;

	for (uintptr_t i = 0; i < SPAWN_JOIN_N; i++) {
		pthread_t t;
		void *r;

		if (pthread_create(&t, NULL, child, (void *)i))
			return 0;
		pthread_join(t, &r);
		sum += (uintptr_t)r;
	}
	return sum;
}

static uint64_t spawn_join_pool(void)
{
	uint64_t sum = 0;
	struct job j;

	for (uintptr_t i = 0; i < SPAWN_JOIN_N; i++) {
		pool_submit(&j, child, (void *)i);
		sum += (uintptr_t)pool_wait(&j);
	}
	return sum;
}

static uint64_t workers_create(void)
{
	struct slice s[WORKERS];
	pthread_t t[WORKERS];
	uint64_t sum = 0;

	make_slices(s);
	for (unsigned k = 0; k < WORKERS; k++)
		if (pthread_create(&t[k], NULL, slice_sum, &s[k]))
			return 0;
	for (unsigned k = 0; k < WORKERS; k++) {
		void *r;

		pthread_join(t[k], &r);
		sum += (uintptr_t)r;
	}
	return sum;
}

static uint64_t workers_pool(void)
{
	struct slice s[WORKERS];
	struct job j[WORKERS];
	uint64_t sum = 0;

	make_slices(s);
	for (unsigned k = 0; k < WORKERS; k++)
		pool_submit(&j[k], slice_sum, &s[k]);
	for (unsigned k = 0; k < WORKERS; k++)
		sum += (uintptr_t)pool_wait(&j[k]);
	return sum;
}

static const struct {
	const char *name;
	uint64_t (*op)(void);
	bool pool;
	uint64_t expect;
} jobs[] = {
	{ "spawn-join-create", spawn_join_create, false, SPAWN_JOIN_N * (SPAWN_JOIN_N + 1ull) / 2 },
	{ "spawn-join-pool", spawn_join_pool, true, SPAWN_JOIN_N * (SPAWN_JOIN_N + 1ull) / 2 },
	{ "workers-create", workers_create, false, 16452561075408646571ull },
	{ "workers-pool", workers_pool, true, 16452561075408646571ull },
};

/* ---- driver ------------------------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int summarize(void)
{
	double x[4096], v;
	struct an_summary s;
	size_t n = 0;

	while (n < sizeof(x) / sizeof(x[0]) && scanf("%lf", &v) == 1)
		x[n++] = v;
	if (an_summarize(x, n, 0.999, &s)) {
		fprintf(stderr, "pthreads summarize: no samples on stdin\n");
		return 2;
	}
	printf("%.17g %.17g %zu\n", s.mean, s.ci_half, s.n);
	return 0;
}

int main(int argc, char **argv)
{
	long warmup = 3, iterations = 3;
	double time_s = 1.0;
	size_t j;

	if (argc == 2 && !strcmp(argv[1], "summarize"))
		return summarize();
	if (argc < 2) {
		fprintf(stderr, "usage: pthreads JOB [--warmup N] [--iterations N] [--time S]\n");
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--warmup"))
			warmup = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--iterations"))
			iterations = strtol(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--time"))
			time_s = strtod(argv[i + 1], NULL);
		else {
			fprintf(stderr, "pthreads: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	for (j = 0; j < sizeof(jobs) / sizeof(jobs[0]); j++)
		if (!strcmp(jobs[j].name, argv[1]))
			break;
	if (j == sizeof(jobs) / sizeof(jobs[0]) || warmup < 0 || iterations < 1 || !(time_s > 0)) {
		fprintf(stderr, "pthreads: unknown job '%s' or bad counts\n", argv[1]);
		return 2;
	}
	if (jobs[j].pool && pool_start()) {
		fprintf(stderr, "pthreads: cannot start the pool\n");
		return 1;
	}
	for (long it = 0; it < warmup + iterations; it++) {
		double t0 = now(), t;
		uint64_t ops = 0;

		do {
			uint64_t r = jobs[j].op();

			if (r != jobs[j].expect) {
				fprintf(stderr, "pthreads %s: result %llu, expected %llu\n", jobs[j].name,
					(unsigned long long)r, (unsigned long long)jobs[j].expect);
				return 1;
			}
			ops++;
			t = now();
		} while (t - t0 < time_s);
		if (it >= warmup)
			printf("%.17g\n", (double)ops / (t - t0));
	}
	return 0;
}
