/*
 * The runtime's allocator entry points (runtime/alloc.c): a task's rt_alloc, rt_calloc and
 * rt_free are counted on the worker it runs on (calls, bytes asked, frees); a thread
 * that drives no worker (outside the pool, or in a blocking section) is not counted, nor
 * is a free of NULL or an allocation that failed.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

#if defined(RT_SANITIZE_ADDRESS)
/* the sanitizers report an allocation too big to make, rather than return NULL */
#define RT_UNDER_ASAN 1
#else
#define RT_UNDER_ASAN 0
#endif

static uint64_t nothing(void *arg)
{
	(void)arg;
	return 0;
}

/* Two allocations of 100 bytes (one zeroed), both freed, and a free of NULL. */
static uint64_t two_blocks(void *arg)
{
	void *a = rt_alloc(100), *b = rt_calloc(4, 25);

	(void)arg;
	rt_free(a);
	rt_free(b);
	rt_free(NULL);
	return a && b;
}

static int block_in_section(void *arg)
{
	(void)arg;
	rt_free(rt_alloc(1 << 20));
	return 0;
}

static uint64_t allocates_while_blocked(void *arg)
{
	(void)arg;
	return (uint64_t)rt_blocking(block_in_section, NULL);
}

static uint64_t too_big(void *arg)
{
	(void)arg;
	return rt_alloc(SIZE_MAX) == NULL && rt_calloc(SIZE_MAX / 2, 4) == NULL;
}

/* The counters' change over fn's task, less that over a task that does nothing: what
 * fn allocated itself, apart from what running any task costs. */
static void counted_by(uint64_t (*fn)(void *), uint64_t want, struct rt_worker_stats *d)
{
	struct rt_sched *s = rt_test_start(NULL, 1);
	struct rt_worker_stats a, b, c;

	rt_sched_stats_total(s, &a);
	cr_assert_eq(rt_join(rt_submit(s, nothing, NULL)), 0);
	rt_sched_stats_total(s, &b);
	cr_assert_eq(rt_join(rt_submit(s, fn, NULL)), want);
	rt_sched_stats_total(s, &c);
	d->alloc_calls = (c.alloc_calls - b.alloc_calls) - (b.alloc_calls - a.alloc_calls);
	d->alloc_bytes = (c.alloc_bytes - b.alloc_bytes) - (b.alloc_bytes - a.alloc_bytes);
	d->frees = (c.frees - b.frees) - (b.frees - a.frees);
	rt_sched_free(s);
}

Test(alloc, a_tasks_allocations_are_counted_on_its_worker, .timeout = 60)
{
	struct rt_worker_stats d;

	counted_by(two_blocks, 1, &d);
	cr_expect_eq(d.alloc_calls, 2);
	cr_expect_eq(d.alloc_bytes, 200);
	cr_expect_eq(d.frees, 2, "a free of NULL frees nothing");
}

Test(alloc, a_blocking_section_allocates_uncounted, .timeout = 60)
{
	struct rt_worker_stats d;

	counted_by(allocates_while_blocked, 0, &d);
	cr_expect_eq(d.alloc_calls, 0);
	cr_expect_eq(d.alloc_bytes, 0);
	cr_expect_eq(d.frees, 0);
}

Test(alloc, a_failed_allocation_is_not_counted, .timeout = 60, .disabled = RT_UNDER_ASAN || RT_UNDER_TSAN)
{
	struct rt_worker_stats d;

	counted_by(too_big, 1, &d);
	cr_expect_eq(d.alloc_calls, 0);
	cr_expect_eq(d.alloc_bytes, 0);
}

Test(alloc, a_thread_outside_the_pool_is_not_counted, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 1);
	struct rt_worker_stats a, b;

	rt_sched_stats_total(s, &a);
	rt_free(rt_alloc(4096));
	rt_free(rt_calloc(8, 8));
	rt_sched_stats_total(s, &b);
	cr_expect_eq(b.alloc_calls, a.alloc_calls);
	cr_expect_eq(b.alloc_bytes, a.alloc_bytes);
	cr_expect_eq(b.frees, a.frees);
	rt_sched_free(s);
}
