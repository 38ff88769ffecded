/*
 * The runtime's counters beside a tracer's marks (runtime/stats.c): while
 * rt_sched_stats_edge() reads the counters and fires its mark, no park is counted, so
 * that a park's count and its rt:park event fall on one side of the pair. Workers park
 * and wake all through the test (a task submitted every few hundred microseconds); the
 * mark holds the edge a while and reads the parks twice.
 */
#include "tests/runtime/rt_test.h"

struct churn {
	struct rt_sched *s;
	uint32_t stop;
	uint32_t done;
};

static uint64_t nothing(void *arg)
{
	(void)arg;
	return 0;
}

/* Work that comes and goes: each task wakes a worker, which parks again after it. */
static void *churn_main(void *arg)
{
	struct churn *c = arg;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		rt_join(rt_submit(c->s, nothing, NULL));
		usleep(200);
	}
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t parks(struct rt_sched *s)
{
	struct rt_worker_stats st;

	rt_sched_stats_total(s, &st);
	return st.parks;
}

/* Wait until more than n parks are counted; fail after 30 s on the clock. */
static uint64_t await_parks_over(struct rt_sched *s, uint64_t n)
{
	uint64_t until = rt_now_ns() + 30 * 1000000000ull, p;

	while ((p = parks(s)) <= n && rt_now_ns() < until)
		usleep(100);
	cr_assert_gt(p, n, "workers stopped parking: %llu parks", (unsigned long long)p);
	return p;
}

struct hold {
	struct rt_sched *s;
	uint64_t first, last;
};

/* The mark: parks read, then again once the workers would have parked several times. */
static void hold_mark(void *arg)
{
	struct hold *h = arg;

	h->first = parks(h->s);
	usleep(20 * 1000);
	h->last = parks(h->s);
}

Test(stats, no_park_is_counted_while_the_counters_are_read_at_a_mark, .timeout = 120)
{
	struct churn c = { .s = rt_test_start("ce", 2) };
	struct rt_worker_stats at;
	struct hold h = { .s = c.s };
	pthread_t churner;
	uint64_t before;

	cr_assert_eq(pthread_create(&churner, NULL, churn_main, &c), 0);
	before = await_parks_over(c.s, 10);
	rt_sched_stats_edge(c.s, &at, hold_mark, &h);
	cr_expect_eq(h.first, at.parks, "the mark sees the counts read");
	cr_expect_eq(h.last, h.first, "%llu parks counted while the mark held the edge",
		     (unsigned long long)(h.last - h.first));
	cr_expect_geq(at.parks, before);
	/* and parking goes on after it */
	await_parks_over(c.s, h.last);
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	pthread_join(churner, NULL);
	rt_sched_free(c.s);
}

/* With no mark, the edge is a plain read of the totals. */
Test(stats, an_edge_without_a_mark_reads_the_totals)
{
	struct rt_sched *s = rt_test_start("ce", 2);
	struct rt_worker_stats at, total;

	rt_join(rt_submit(s, nothing, NULL));
	rt_sched_stats_edge(s, &at, NULL, NULL);
	rt_sched_stats_total(s, &total);
	cr_expect_eq(at.tasks_run, total.tasks_run);
	cr_expect_eq(at.tasks_run, 1);
	rt_sched_free(s);
}
