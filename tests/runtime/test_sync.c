/*
 * Semaphores and latches through the public API: the single-threaded contracts, then
 * tasks and threads racing under 2 and 8 workers and every preset: mutual exclusion
 * with one permit, never more than k holders with k, the count restored at the end,
 * FIFO hand-off to waiters (tasks and threads mixed), no barging past a waiter, and
 * 10,000 tasks parked on one latch all released by a thread.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

/* ---- semaphore: single-threaded contracts ---------------------------------------------- */

Test(sem, init_rejects_more_than_int64_max)
{
	struct rt_sem s;

	cr_expect_eq(rt_sem_init(&s, (uint64_t)INT64_MAX + 1), -EINVAL);
	cr_expect_eq(rt_sem_init(&s, UINT64_MAX), -EINVAL);
	cr_expect_eq(rt_sem_init(&s, INT64_MAX), 0);
	cr_expect_eq(rt_sem_available(&s), INT64_MAX);
	rt_sem_destroy(&s);
}

Test(sem, try_acquire_takes_each_permit_once)
{
	struct rt_sem s;

	cr_assert_eq(rt_sem_init(&s, 3), 0);
	cr_expect_eq(rt_sem_available(&s), 3);
	for (int i = 0; i < 3; i++)
		cr_expect(rt_sem_try_acquire(&s), "permit %d", i);
	cr_expect_not(rt_sem_try_acquire(&s));
	cr_expect_eq(rt_sem_available(&s), 0);
	rt_sem_release(&s);
	cr_expect_eq(rt_sem_available(&s), 1);
	cr_expect(rt_sem_try_acquire(&s));
	for (int i = 0; i < 3; i++)
		rt_sem_release(&s);
	cr_expect_eq(rt_sem_available(&s), 3);
	rt_sem_destroy(&s);
}

Test(sem, zero_permits_refuse_try_acquire)
{
	struct rt_sem s;

	cr_assert_eq(rt_sem_init(&s, 0), 0);
	cr_expect_not(rt_sem_try_acquire(&s));
	cr_expect_eq(rt_sem_available(&s), 0);
	rt_sem_release(&s);
	cr_expect(rt_sem_try_acquire(&s));
	rt_sem_destroy(&s);
}

/* No scheduler at all: the uncontended paths are plain atomics and need none. */
Test(sem, uncontended_from_a_plain_thread)
{
	struct rt_sem s;

	cr_assert_eq(rt_sem_init(&s, 2), 0);
	for (int i = 0; i < RT_TEST_N(100000); i++) {
		rt_sem_acquire(&s);
		rt_sem_acquire(&s);
		rt_sem_release(&s);
		rt_sem_release(&s);
	}
	cr_expect_eq(rt_sem_available(&s), 2);
	cr_expect_eq(s.nwaiters, 0);
	rt_sem_destroy(&s);
}

/* ---- semaphore: holders racing ----------------------------------------------------------- */

struct holders {
	struct rt_sem sem;
	struct rt_latch start;
	uint64_t permits;
	unsigned iters;
	uint64_t counter;      /* plain read-modify-write: only mutual exclusion protects it */
	uint64_t entries;      /* atomic: critical sections entered */
	uint32_t inside;       /* atomic: holders right now */
	uint32_t max_inside;   /* atomic */
	uint32_t over;         /* atomic: entries that found more than `permits` inside */
};

static void holders_loop(struct holders *h, unsigned id)
{
	rt_latch_wait(&h->start);
	for (unsigned i = 0; i < h->iters; i++) {
		uint32_t n, max;
		uint64_t v;

		rt_sem_acquire(&h->sem);
		n = __atomic_add_fetch(&h->inside, 1, __ATOMIC_RELAXED);
		if (n > h->permits)
			__atomic_fetch_add(&h->over, 1, __ATOMIC_RELAXED);
		max = __atomic_load_n(&h->max_inside, __ATOMIC_RELAXED);
		while (n > max && !__atomic_compare_exchange_n(&h->max_inside, &max, n, true,
							       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		}
		__atomic_fetch_add(&h->entries, 1, __ATOMIC_RELAXED);
		v = h->counter;
		/* hold the permit across a switch now and then, so that others must wait */
		if ((i + id) % 8 == 0) {
			if (rt_current())
				rt_yield();
			else
				sched_yield();
		}
		if (h->permits == 1)
			h->counter = v + 1;
		__atomic_fetch_sub(&h->inside, 1, __ATOMIC_RELAXED);
		rt_sem_release(&h->sem);
	}
}

static struct holders *holders_arg;

static uint64_t holders_task(void *arg)
{
	holders_loop(holders_arg, (unsigned)(uintptr_t)arg);
	return 0;
}

struct holder_thread {
	pthread_t th;
	unsigned id;
};

static void *holders_thread(void *arg)
{
	struct holder_thread *t = arg;

	rt_test_pin(t->id);
	holders_loop(holders_arg, t->id);
	return NULL;
}

#define HOLDER_TASKS   16
#define HOLDER_THREADS 3
#define HOLDER_ITERS   1500

static void holders_run(struct rt_sched *s, const char *what, uint64_t permits, bool threads)
{
	struct holders h = { .permits = permits, .iters = HOLDER_ITERS };
	struct holder_thread th[HOLDER_THREADS];
	struct rt_task *t[HOLDER_TASKS];
	unsigned nthreads = threads ? HOLDER_THREADS : 0;
	uint64_t total = (uint64_t)(HOLDER_TASKS + nthreads) * HOLDER_ITERS;

	cr_assert_eq(rt_sem_init(&h.sem, permits), 0);
	rt_latch_init(&h.start, 1);
	holders_arg = &h;
	for (unsigned i = 0; i < HOLDER_TASKS; i++)
		cr_assert_not_null(t[i] = rt_submit(s, holders_task, (void *)(uintptr_t)i));
	for (unsigned i = 0; i < nthreads; i++) {
		th[i].id = HOLDER_TASKS + i;
		cr_assert_eq(pthread_create(&th[i].th, NULL, holders_thread, &th[i]), 0);
	}
	rt_latch_count_down(&h.start); /* everyone starts together */
	for (unsigned i = 0; i < HOLDER_TASKS; i++)
		rt_join(t[i]);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(th[i].th, NULL);

	cr_expect_eq(h.entries, total, "%s: entries", what);
	cr_expect_eq(h.over, 0, "%s: %u entries saw more than %lu holders", what, h.over,
		     (unsigned long)permits);
	cr_expect_leq(h.max_inside, permits, "%s", what);
	if (permits == 1)
		cr_expect_eq(h.counter, total, "%s: lost updates: %lu of %lu", what,
			     (unsigned long)h.counter, (unsigned long)total);
	cr_expect_eq(rt_sem_available(&h.sem), permits, "%s: count not restored", what);
	cr_expect_eq(h.sem.nwaiters, 0, "%s", what);
	rt_sem_destroy(&h.sem);
}

static void one_permit_tasks(struct rt_sched *s, const char *what)
{
	holders_run(s, what, 1, false);
}

static void three_permits_tasks(struct rt_sched *s, const char *what)
{
	holders_run(s, what, 3, false);
}

static void one_permit_mixed(struct rt_sched *s, const char *what)
{
	holders_run(s, what, 1, true);
}

static void three_permits_mixed(struct rt_sched *s, const char *what)
{
	holders_run(s, what, 3, true);
}

Test(sem, one_permit_is_mutual_exclusion_among_tasks, .timeout = 120)
{
	rt_test_each_config(one_permit_tasks);
}

Test(sem, k_permits_never_admit_more_than_k_tasks, .timeout = 120)
{
	rt_test_each_config(three_permits_tasks);
}

Test(sem, one_permit_with_threads_and_tasks_mixed, .timeout = 120)
{
	rt_test_each_config(one_permit_mixed);
}

Test(sem, k_permits_with_threads_and_tasks_mixed, .timeout = 120)
{
	rt_test_each_config(three_permits_mixed);
}

/* ---- semaphore: FIFO hand-off ------------------------------------------------------------- */

#define FIFO_WAITERS 12

struct fifo {
	struct rt_sem sem;
	uint32_t order[FIFO_WAITERS];
	uint32_t served; /* atomic: entries in order[] */
};

static struct fifo *fifo_arg;

static void fifo_take(unsigned id)
{
	struct fifo *f = fifo_arg;
	uint32_t k;

	rt_sem_acquire(&f->sem);
	/* one waiter is served at a time (each release waits for the last to be counted):
	 * write its entry, then publish the count, or the reader may see the count first */
	k = __atomic_load_n(&f->served, __ATOMIC_ACQUIRE);
	f->order[k] = id;
	__atomic_store_n(&f->served, k + 1, __ATOMIC_RELEASE);
}

static uint64_t fifo_task(void *arg)
{
	fifo_take((unsigned)(uintptr_t)arg);
	return 0;
}

static void *fifo_thread(void *arg)
{
	fifo_take((unsigned)(uintptr_t)arg);
	return NULL;
}

/* Waiters queue one by one (even ids are tasks, odd ones threads); each release must
 * wake the oldest, which keeps its permit. */
static void fifo_run(struct rt_sched *s, const char *what)
{
	struct fifo f = { 0 };
	struct rt_task *t[FIFO_WAITERS] = { 0 };
	pthread_t th[FIFO_WAITERS];

	cr_assert_eq(rt_sem_init(&f.sem, 0), 0);
	fifo_arg = &f;
	for (uintptr_t i = 0; i < FIFO_WAITERS; i++) {
		if (i % 2 == 0)
			cr_assert_not_null(t[i] = rt_submit(s, fifo_task, (void *)i));
		else
			cr_assert_eq(pthread_create(&th[i], NULL, fifo_thread, (void *)i), 0);
		rt_test_await_u32(&f.sem.nwaiters, (uint32_t)i + 1, what);
	}
	for (uint32_t i = 0; i < FIFO_WAITERS; i++) {
		rt_sem_release(&f.sem);
		rt_test_await_u32(&f.served, i + 1, what);
		cr_expect_eq(f.order[i], i, "%s: release %u woke waiter %u", what, i, f.order[i]);
	}
	for (uintptr_t i = 0; i < FIFO_WAITERS; i++) {
		if (i % 2 == 0)
			rt_join(t[i]);
		else
			pthread_join(th[i], NULL);
	}
	cr_expect_eq(rt_sem_available(&f.sem), 0, "%s: every permit stays with its waiter", what);
	for (int i = 0; i < FIFO_WAITERS; i++)
		rt_sem_release(&f.sem);
	cr_expect_eq(rt_sem_available(&f.sem), FIFO_WAITERS, "%s", what);
}

Test(sem, waiters_are_served_first_come_first_served, .timeout = 120)
{
	rt_test_each_config(fifo_run);
}

/* A released permit belongs to the waiter: a try_acquire right after cannot take it. */
static void no_barging_run(struct rt_sched *s, const char *what)
{
	struct fifo f = { 0 };
	struct rt_task *t;

	cr_assert_eq(rt_sem_init(&f.sem, 0), 0);
	fifo_arg = &f;
	cr_assert_not_null(t = rt_submit(s, fifo_task, (void *)0));
	rt_test_await_u32(&f.sem.nwaiters, 1, what);
	rt_sem_release(&f.sem);
	cr_expect_not(rt_sem_try_acquire(&f.sem), "%s: barged past a waiter", what);
	rt_join(t);
	cr_expect_eq(f.served, 1, "%s", what);
	cr_expect_eq(rt_sem_available(&f.sem), 0, "%s", what);
}

Test(sem, released_permit_goes_to_the_waiter_not_a_newcomer, .timeout = 60)
{
	rt_test_each_config(no_barging_run);
}

/* A thread blocked in acquire, released by a task. */
static struct rt_sem cross_sem;

static uint64_t release_cross(void *arg)
{
	rt_sleep_ns(2000000);
	rt_sem_release(&cross_sem);
	return 0;
}

static void *acquire_cross(void *arg)
{
	rt_sem_acquire(&cross_sem);
	return NULL;
}

Test(sem, thread_waits_for_a_task_to_release, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 2);
	pthread_t th;

	cr_assert_eq(rt_sem_init(&cross_sem, 0), 0);
	cr_assert_eq(pthread_create(&th, NULL, acquire_cross, NULL), 0);
	rt_test_await_u32(&cross_sem.nwaiters, 1, "thread waiter");
	rt_join(rt_submit(s, release_cross, NULL));
	pthread_join(th, NULL);
	cr_expect_eq(rt_sem_available(&cross_sem), 0);
	rt_sched_free(s);
}

/* ---- latch ---------------------------------------------------------------------------------- */

Test(latch, counts_down_to_zero_and_stays_there)
{
	struct rt_latch l;

	cr_assert_eq(rt_latch_init(&l, 3), 0);
	cr_expect_eq(rt_latch_count(&l), 3);
	rt_latch_count_down(&l);
	rt_latch_count_down(&l);
	cr_expect_eq(rt_latch_count(&l), 1);
	rt_latch_count_down(&l);
	cr_expect_eq(rt_latch_count(&l), 0);
	rt_latch_count_down(&l); /* never below zero */
	cr_expect_eq(rt_latch_count(&l), 0);
	rt_latch_wait(&l); /* open: returns at once, even from a plain thread */
}

Test(latch, zero_count_is_open_from_the_start)
{
	struct rt_latch l;

	cr_assert_eq(rt_latch_init(&l, 0), 0);
	rt_latch_wait(&l);
	cr_expect_eq(rt_latch_count(&l), 0);
}

#define LATCH_TASKS RT_TEST_N(10000)

struct gate {
	struct rt_latch latch;
	uint32_t passed; /* atomic */
};

static struct gate *gate_arg;

static uint64_t gate_task(void *arg)
{
	rt_latch_wait(&gate_arg->latch);
	__atomic_fetch_add(&gate_arg->passed, 1, __ATOMIC_RELAXED);
	return (uint64_t)(uintptr_t)arg * 2 + 1;
}

/* 10,000 tasks parked on one latch, opened by a count-down from this thread. */
static void latch_many_run(struct rt_sched *s, const char *what)
{
	struct gate g = { 0 };
	struct rt_task **t = calloc(LATCH_TASKS, sizeof(*t));

	cr_assert_not_null(t);
	rt_latch_init(&g.latch, 2);
	gate_arg = &g;
	for (uintptr_t i = 0; i < LATCH_TASKS; i++)
		cr_assert_not_null(t[i] = rt_submit(s, gate_task, (void *)i), "%s", what);
	rt_latch_count_down(&g.latch);
	rt_test_await_u32(&g.latch.nwaiters, LATCH_TASKS, what); /* every one of them parked */
	cr_expect_eq(g.passed, 0, "%s: passed a closed latch", what);
	rt_latch_count_down(&g.latch);
	for (uintptr_t i = 0; i < LATCH_TASKS; i++)
		cr_assert_eq(rt_join(t[i]), i * 2 + 1, "%s", what);
	cr_expect_eq(g.passed, LATCH_TASKS, "%s", what);
	cr_expect_eq(g.latch.nwaiters, 0, "%s", what);
	free(t);
}

Test(latch, ten_thousand_waiting_tasks_all_released_by_a_thread, .timeout = 180)
{
	rt_test_each_config(latch_many_run);
}

/* Threads wait; tasks count down, racing each other. */
#define GATE_THREADS 4
#define GATE_COUNTERS 64

static uint64_t count_down_task(void *arg)
{
	if ((uintptr_t)arg % 3 == 0)
		rt_yield();
	rt_latch_count_down(&gate_arg->latch);
	return 0;
}

static void *gate_thread(void *arg)
{
	rt_test_pin((unsigned)(uintptr_t)arg);
	rt_latch_wait(&gate_arg->latch);
	__atomic_fetch_add(&gate_arg->passed, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void latch_threads_run(struct rt_sched *s, const char *what)
{
	struct gate g = { 0 };
	struct rt_task *t[GATE_COUNTERS];
	pthread_t th[GATE_THREADS];

	rt_latch_init(&g.latch, GATE_COUNTERS);
	gate_arg = &g;
	for (uintptr_t i = 0; i < GATE_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, gate_thread, (void *)i), 0);
	for (uintptr_t i = 0; i < GATE_COUNTERS; i++)
		cr_assert_not_null(t[i] = rt_submit(s, count_down_task, (void *)i));
	for (int i = 0; i < GATE_COUNTERS; i++)
		rt_join(t[i]);
	for (int i = 0; i < GATE_THREADS; i++)
		pthread_join(th[i], NULL);
	cr_expect_eq(rt_latch_count(&g.latch), 0, "%s", what);
	cr_expect_eq(g.passed, GATE_THREADS, "%s", what);
}

Test(latch, threads_released_by_racing_task_count_downs, .timeout = 120)
{
	rt_test_each_config(latch_threads_run);
}
