/*
 * Placement (runtime/place.c): a spawn inside a task goes to its worker's own queue, one
 * from a thread outside the pool to the global queue, and a fan-out wider than the
 * 256-slot local queue spills half of it there and still runs every task once. Each
 * preset's own paths (the LIFO slot, the scan, the external queue) are in
 * test_presets.c.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

static uint64_t leaf(void *arg)
{
	return (uint64_t)(uintptr_t)arg * 3;
}

/* Spawn ten children and join them. */
static uint64_t ten_children(void *arg)
{
	struct rt_task *t[10];
	uint64_t sum = 0;

	(void)arg;
	for (int i = 0; i < 10; i++)
		t[i] = rt_spawn(leaf, (void *)(uintptr_t)i);
	for (int i = 0; i < 10; i++)
		sum += t[i] ? rt_join(t[i]) : 0;
	return sum;
}

Test(place, a_spawn_in_a_task_goes_to_its_workers_own_queue, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 1);
	struct rt_worker_stats a, b;

	rt_sched_stats_total(s, &a);
	cr_assert_eq(rt_join(rt_submit(s, ten_children, NULL)), 3 * 45);
	rt_sched_stats_total(s, &b);
	cr_expect_eq(b.spawned - a.spawned, 10);
	/* the ten, and the parent each time a child it waits for wakes it: no more */
	cr_expect(b.place_local - a.place_local >= 10 && b.place_local - a.place_local <= 20,
		  "%lu local placements", (unsigned long)(b.place_local - a.place_local));
	cr_expect_eq(b.place_external - a.place_external, 0);
	rt_sched_free(s);
}

Test(place, a_submission_from_outside_goes_to_the_global_queue, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 2);
	struct rt_worker_stats a, b;

	rt_sched_stats_total(s, &a);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(rt_join(rt_submit(s, leaf, (void *)(uintptr_t)1)), 3);
	rt_sched_stats_total(s, &b);
	cr_expect_eq(b.place_local - a.place_local, 0);
	cr_expect_eq(b.global_pops - a.global_pops, 5, "%lu taken from the global queue",
		     (unsigned long)(b.global_pops - a.global_pops));
	rt_sched_free(s);
}

/* A wide fan-out overflows the 256-slot local queue into the global queue. */
static uint64_t fan_out(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg;
	struct rt_task **t = malloc(n * sizeof(*t));
	uint64_t sum = 0;

	if (!t)
		return 0;
	for (size_t i = 0; i < n; i++)
		t[i] = rt_spawn(leaf, (void *)(uintptr_t)i);
	for (size_t i = 0; i < n; i++)
		sum += t[i] ? rt_join(t[i]) : 0;
	free(t);
	return sum;
}

Test(place, fan_out_beyond_the_local_queue_spills_and_completes, .timeout = 60)
{
	const uint64_t n = RT_TEST_N(5000);

	for (unsigned workers = 1; workers <= 2; workers++) {
		struct rt_sched *s = rt_test_start(NULL, workers);
		struct rt_worker_stats st;

		cr_assert_eq(rt_join(rt_submit(s, fan_out, (void *)(uintptr_t)n)),
			     3 * n * (n - 1) / 2);
		rt_sched_stats_total(s, &st);
		/* alone, nobody steals: 5,000 spawns in a row must overflow 256 slots */
		if (workers == 1) {
			cr_expect_gt(st.overflows, 0);
			cr_expect_gt(st.global_pops, 0);
		}
		rt_sched_free(s);
	}
}

