/*
 * Parking (runtime/park.c): workers with nothing to do sleep in the kernel, counted as
 * parks; work placed from a thread outside the pool wakes one of them, which runs it on
 * a worker and parks again.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

static uint64_t which_worker(void *arg)
{
	(void)arg;
	return rt_worker_index();
}

Test(park, idle_workers_sleep_in_the_kernel, .timeout = 120)
{
	struct rt_sched *s = rt_test_start(NULL, 4);
	struct rt_worker_stats st;

	/* each parked once, and every rt-worker thread asleep (S) in /proc */
	rt_test_await_all_parked(s);
	rt_sched_stats_total(s, &st);
	cr_expect_geq(st.parks, 4, "%lu parks", (unsigned long)st.parks);
	cr_expect_eq(st.tasks_run, 0);
	rt_sched_free(s);
}

Test(park, work_from_outside_wakes_a_parked_worker_that_parks_again, .timeout = 120)
{
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct rt_worker_stats before, after;
	uint64_t w;

	rt_test_await_all_parked(s);
	rt_sched_stats_total(s, &before);
	w = rt_join(rt_submit(s, which_worker, NULL));
	cr_expect_lt(w, 2, "ran on worker %lu, not a worker", (unsigned long)w);
	/* both asleep again: the one that ran it parked once more */
	rt_test_await_named_asleep("rt-worker", 2, "the workers park again");
	rt_sched_stats_total(s, &after);
	cr_expect_eq(after.tasks_run - before.tasks_run, 1);
	cr_expect_gt(after.parks, before.parks, "no park after the task");
	rt_sched_free(s);
}
