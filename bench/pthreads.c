/*
 * The benchmark jobs written with plain pthreads, for `make bench` to set beside the
 * runtime's: the same ops, the same checks, the same iteration structure (warm-up,
 * then measured iterations of fixed time, one throughput sample each; bench/peer.h).
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
#include <stdlib.h>
#include <unistd.h>

#include "bench/peer.h"
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

static const struct peer_job jobs[] = {
	{ "spawn-join-create", spawn_join_create, SPAWN_JOIN_N * (SPAWN_JOIN_N + 1ull) / 2, 1, NULL, 0 },
	{ "spawn-join-pool", spawn_join_pool, SPAWN_JOIN_N * (SPAWN_JOIN_N + 1ull) / 2, 1, pool_start, 0 },
	{ "workers-create", workers_create, 16452561075408646571ull, 1, NULL, 0 },
	{ "workers-pool", workers_pool, 16452561075408646571ull, 1, pool_start, 0 },
};

int main(int argc, char **argv)
{
	return peer_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), NULL);
}
