/*
 * Kyo's concurrency regulator: the step rule on its own, then whole periods fed to a
 * scheduler with made-up lateness, so that the outcome does not hang on how loaded the
 * test machine is. The scheduler itself runs adapt=fixed, so its monitor never feeds
 * the regulator behind the test's back.
 */
#include <criterion/criterion.h>
#include <stdint.h>

#include "runtime/internal.h"
#include "tests/runtime/rt_test.h"

Test(adapt, jitter_over_the_high_mark_shrinks_by_growing_steps)
{
	int streak = 0;

	cr_expect_eq(rt__regulate_step(&streak, 2e6, 1.0), -1);
	cr_expect_eq(rt__regulate_step(&streak, 2e6, 1.0), -2, "2^1.2 rounds to 2");
	cr_expect_eq(rt__regulate_step(&streak, 2e6, 1.0), -4, "3^1.2 rounds to 4");
	cr_expect_eq(streak, -3);
}

Test(adapt, low_jitter_grows_only_when_workers_are_loaded)
{
	int streak = 0;

	cr_expect_eq(rt__regulate_step(&streak, 1e5, 0.5), 0, "80%% load is the bar");
	cr_expect_eq(rt__regulate_step(&streak, 1e5, 0.8), 1);
	cr_expect_eq(rt__regulate_step(&streak, 1e5, 3.0), 2);
}

Test(adapt, between_the_marks_nothing_changes_and_the_streak_ends)
{
	int streak = 0;

	rt__regulate_step(&streak, 2e6, 1.0);
	rt__regulate_step(&streak, 2e6, 1.0);
	cr_expect_eq(rt__regulate_step(&streak, 6e5, 5.0), 0, "0.6 ms: neither side");
	cr_expect_eq(streak, 0);
	cr_expect_eq(rt__regulate_step(&streak, 2e6, 1.0), -1, "a new streak starts at 1");
}

Test(adapt, a_turn_starts_over)
{
	int streak = 0;

	rt__regulate_step(&streak, 2e6, 1.0);
	rt__regulate_step(&streak, 2e6, 1.0);
	cr_expect_eq(rt__regulate_step(&streak, 1e5, 1.0), 1);
	cr_expect_eq(streak, 1);
}

/* One regulation period of monitor wake-ups, 10 ms apart, each late by late(i). */
static void feed_period(struct rt_sched *s, uint64_t *now, uint64_t (*late)(unsigned))
{
	for (unsigned i = 0; i < 151; i++) {
		rt__adapt_tick(s, *now, late(i));
		*now += 10000000;
	}
	*now -= 10000000; /* the last tick of one period is the first of the next */
}

static uint64_t steady(unsigned i)
{
	(void)i;
	return 20000; /* 20 us every time: no jitter */
}

static uint64_t jittery(unsigned i)
{
	return i & 1 ? 3000000 : 0; /* a 1.5 ms standard deviation */
}

struct spin {
	uint32_t started, release;
};

static uint64_t spin_until_released(void *arg)
{
	struct spin *sp = arg;

	__atomic_fetch_add(&sp->started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&sp->release, __ATOMIC_ACQUIRE))
		sched_yield();
	return 0;
}

static uint64_t nothing(void *arg)
{
	(void)arg;
	return 0;
}

Test(adapt, the_regulator_adds_workers_under_load_and_removes_them_under_jitter)
{
	struct rt_sched *s = rt_test_start_with("kyo", 2, "adapt", "fixed", "blocking", "none",
						"workers_min", "1", "workers_max", "4", NULL);
	struct rt_worker_stats before[4], after[4];
	uint64_t now = 1000000000000ull;
	struct spin sp = { 0, 0 };
	struct rt_task *busy[2];

	cr_assert_eq(rt_sched_workers_active(s), 2);
	/* both workers busy: a loaded, quiet machine gets one more worker, started now */
	for (int i = 0; i < 2; i++)
		busy[i] = rt_submit(s, spin_until_released, &sp);
	rt_test_await_u32(&sp.started, 2, "both workers running a task");
	feed_period(s, &now, steady);
	cr_expect_eq(rt_sched_workers_active(s), 3);
	cr_expect_eq(rt_sched_workers_started(s), 3, "the third worker was started for it");
	/* two busy out of three is 67%: under the bar, so no change */
	feed_period(s, &now, steady);
	cr_expect_eq(rt_sched_workers_active(s), 3);
	__atomic_store_n(&sp.release, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		rt_join(busy[i]);

	/* jitter: one fewer, then two fewer, which workers_min stops at 1 */
	feed_period(s, &now, jittery);
	cr_expect_eq(rt_sched_workers_active(s), 2);
	feed_period(s, &now, jittery);
	cr_expect_eq(rt_sched_workers_active(s), 1);
	cr_expect_eq(rt_sched_adaptations(s), 3);

	/* scans place only on the active worker now */
	cr_assert_eq(rt_sched_stats(s, before, 4), 3);
	for (int i = 0; i < 20; i++)
		rt_join(rt_submit(s, nothing, NULL));
	rt_sched_stats(s, after, 4);
	cr_expect_eq(after[0].place_remote - before[0].place_remote, 20);
	cr_expect_eq(after[1].place_remote, before[1].place_remote);
	cr_expect_eq(after[2].place_remote, before[2].place_remote);
	rt_sched_free(s);
}
