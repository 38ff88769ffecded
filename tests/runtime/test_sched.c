/*
 * The scheduler through the public API: spawn/join under 1, 2 and 8 workers, every task
 * run exactly once, detach, external submission from several threads, start/stop
 * cycles, and placements from blocked threads all counted (the fibers' own tests are in
 * test_fiber.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

/* ---- spawn and join ------------------------------------------------------------------ */

static uint64_t leaf(void *arg)
{
	return (uint64_t)(uintptr_t)arg * 3;
}

static uint64_t spawn_join_loop(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg, sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct rt_task *t = rt_spawn(leaf, (void *)(uintptr_t)i);

		if (!t)
			return UINT64_MAX;
		sum += rt_join(t);
	}
	return sum;
}

static void spawn_join_under(unsigned workers)
{
	struct rt_sched *s = rt_test_start(NULL, workers);
	const uint64_t n = RT_TEST_N(20000);

	for (int rep = 0; rep < 5; rep++) {
		struct rt_task *t = rt_submit(s, spawn_join_loop, (void *)(uintptr_t)n);

		cr_assert_not_null(t);
		cr_assert_eq(rt_join(t), 3 * n * (n - 1) / 2);
	}
	struct rt_worker_stats st;

	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.spawned, 5 * n, "spawned %lu", (unsigned long)st.spawned);
	/* every child and every root ran; a parent whose child finished elsewhere before
	 * it joined does not switch out, so no more can be said */
	cr_expect_geq(st.tasks_run, 5 * (n + 1), "tasks_run %lu", (unsigned long)st.tasks_run);
	rt_sched_free(s);
}

Test(sched, spawn_join_1_worker, .timeout = 60)
{
	spawn_join_under(1);
}

Test(sched, spawn_join_2_workers, .timeout = 60)
{
	spawn_join_under(2);
}

Test(sched, spawn_join_8_workers, .timeout = 60)
{
	spawn_join_under(8);
}

/* A tree of tasks: each node spawns two children and joins both. Every node marks its
 * own slot, so a lost or doubled task shows. */
#if defined(RT_SANITIZE_THREAD)
#define TREE_DEPTH 9
#else
#define TREE_DEPTH 14
#endif
static uint8_t tree_seen[1u << (TREE_DEPTH + 1)];

static unsigned tree_depth; /* node ids at or past 2^tree_depth are leaves */

static uint64_t tree_node(void *arg)
{
	uintptr_t id = (uintptr_t)arg; /* heap numbering: children 2i and 2i+1 */
	struct rt_task *l, *r;

	__atomic_fetch_add(&tree_seen[id], 1, __ATOMIC_RELAXED);
	if (id >= (1u << tree_depth))
		return 1;
	l = rt_spawn(tree_node, (void *)(2 * id));
	r = rt_spawn(tree_node, (void *)(2 * id + 1));
	if (!l || !r)
		return 0;
	return rt_join(l) + rt_join(r) + 1;
}

/* Run a tree of the given depth on s; every task must run exactly once. */
static void tree_on(struct rt_sched *s, unsigned depth, const char *what)
{
	uint64_t nodes = (1u << (depth + 1)) - 1;

	tree_depth = depth;
	memset(tree_seen, 0, sizeof(tree_seen));
	cr_assert_eq(rt_join(rt_submit(s, tree_node, (void *)1)), nodes, "%s", what);
	for (uintptr_t i = 1; i <= nodes; i++)
		cr_assert_eq(tree_seen[i], 1, "%s: task %lu ran %u times", what, (unsigned long)i,
			     tree_seen[i]);
}

static void tree_under(unsigned workers)
{
	struct rt_sched *s = rt_test_start(NULL, workers);

	tree_on(s, TREE_DEPTH, "ce");
	rt_sched_free(s);
}

/* Every preset, at 2 and 8 workers: no lost or doubled task. A smaller tree for the
 * threads preset, whose every task is an OS thread. */
Test(sched, every_preset_runs_every_task_once, .timeout = 120)
{
	const char *const *names = rt_preset_names();
	unsigned counts[] = { 2, 8 };

	for (size_t p = 0; names[p]; p++) {
		for (size_t k = 0; k < 2; k++) {
			struct rt_sched *s = rt_test_start(names[p], counts[k]);
			bool threads = rt_sched_config(s)->executor == RT_EXEC_THREADS;
			char what[64];

			snprintf(what, sizeof(what), "%s/%u", names[p], counts[k]);
#if defined(RT_SANITIZE_THREAD)
			/* ThreadSanitizer keeps state per thread and per fiber: smaller trees */
			tree_on(s, threads ? 6 : 9, what);
#else
			tree_on(s, threads ? 9 : 12, what);
#endif
			rt_sched_free(s);
		}
	}
}

Test(sched, task_tree_runs_every_task_once_1_worker, .timeout = 60)
{
	tree_under(1);
}

Test(sched, task_tree_runs_every_task_once_2_workers, .timeout = 60)
{
	tree_under(2);
}

Test(sched, task_tree_runs_every_task_once_8_workers, .timeout = 60)
{
	tree_under(8);
}

/* ---- external submission ------------------------------------------------------------- */

struct submitter {
	struct rt_sched *s;
	uint64_t sum;
};

static void *submit_many(void *arg)
{
	struct submitter *sub = arg;

	for (uintptr_t i = 0; i < RT_TEST_N(2000); i++) {
		struct rt_task *t = rt_submit(sub->s, leaf, (void *)i);

		if (!t)
			break;
		sub->sum += rt_join(t);
	}
	return NULL;
}

Test(sched, concurrent_external_submitters, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct submitter subs[4];
	pthread_t th[4];

	for (int i = 0; i < 4; i++) {
		subs[i] = (struct submitter){ .s = s };
		pthread_create(&th[i], NULL, submit_many, &subs[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		cr_expect_eq(subs[i].sum, 3ull * RT_TEST_N(2000) * (RT_TEST_N(2000) - 1) / 2);
	}
	rt_sched_free(s);
}

Test(sched, spawn_outside_a_task_is_refused)
{
	errno = 0;
	cr_expect_null(rt_spawn(leaf, NULL));
	cr_expect_eq(errno, EPERM);
	cr_expect_null(rt_current());
	cr_expect_eq(rt_worker_index(), RT_NO_WORKER);
}

/* ---- detach ---------------------------------------------------------------------------- */

static uint64_t detached_count;

static uint64_t count_me(void *arg)
{
	__atomic_fetch_add(&detached_count, 1, __ATOMIC_RELAXED);
	return 0;
}

static uint64_t spawn_detached(void *arg)
{
	for (int i = 0; i < 1000; i++) {
		struct rt_task *t = rt_spawn(count_me, NULL);

		if (t)
			rt_detach(t);
		if (i % 7 == 0)
			rt_yield();
	}
	return 0;
}

Test(sched, detached_tasks_run_and_are_freed, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);

	detached_count = 0;
	rt_join(rt_submit(s, spawn_detached, NULL));
	while (__atomic_load_n(&detached_count, __ATOMIC_RELAXED) < 1000)
		sched_yield();
	cr_expect_eq(detached_count, 1000);
	rt_sched_free(s);
}

/* ---- life cycle -------------------------------------------------------------------------- */

Test(sched, start_and_stop_repeatedly, .timeout = 60)
{
	for (int i = 0; i < RT_TEST_N(50); i++) {
		struct rt_sched *s = rt_test_start(NULL, 1 + i % 4);

		if (i % 2)
			cr_assert_eq(rt_join(rt_submit(s, leaf, (void *)5)), 15);
		rt_sched_free(s);
	}
}

Test(sched, bad_configuration_is_refused)
{
	struct rt_config c;

	rt_config_default(&c);
	c.capacity = 100;
	errno = 0;
	cr_expect_null(rt_sched_new(&c));
	cr_expect_eq(errno, EINVAL);
	rt_config_default(&c);
	c.workers = RT_MAX_WORKERS + 1;
	cr_expect_null(rt_sched_new(&c));
	cr_expect_eq(rt_config_preset(&c, "no-such-preset"), -ENOENT);
}

/* Threads blocked off their worker still count their placements on it, beside the
 * worker's new driver: the counters they share are bumped atomically, so none of the
 * placements is lost from them. Each of BLOCKED tasks enters a blocking section, waits
 * until all are in theirs, and submits from there (the section's thread is outside the
 * pool: the submission policy places it, counted on the worker it left). The counters
 * are read while every task is still in its section, before their returns are placed. */
#define BLOCKED 4
#define SUBMITS RT_TEST_N(50000)

static struct rt_sched *counted_sched;
static unsigned in_section, submitted, counted;
static struct rt_worker_stats counted_stats;

static uint64_t nothing(void *arg)
{
	(void)arg;
	return 0;
}

static void wait_for_all(unsigned *n)
{
	while (__atomic_load_n(n, __ATOMIC_SEQ_CST) < BLOCKED)
		sched_yield();
}

static uint64_t submit_while_blocked(void *arg)
{
	(void)arg;
	rt_blocking_begin();
	__atomic_fetch_add(&in_section, 1, __ATOMIC_SEQ_CST);
	wait_for_all(&in_section);
	for (int i = 0; i < SUBMITS; i++)
		rt_detach(rt_submit(counted_sched, nothing, NULL));
	if (__atomic_add_fetch(&submitted, 1, __ATOMIC_SEQ_CST) == BLOCKED) {
		rt_sched_stats_total(counted_sched, &counted_stats);
		__atomic_store_n(&counted, BLOCKED, __ATOMIC_SEQ_CST);
	}
	wait_for_all(&counted);
	rt_blocking_end();
	return 0;
}

/* Every submission placed by scan counts one place_scan; one that goes to the shared
 * queue (by policy, or a scan that found no worker) one place_external. */
static void count_placements_from_blocked_threads(struct rt_sched *s, bool scan)
{
	const struct rt_worker_stats *st = &counted_stats;
	const uint64_t all = (uint64_t)BLOCKED * SUBMITS;
	struct rt_task *t[BLOCKED];

	counted_sched = s;
	in_section = submitted = counted = 0;
	for (int i = 0; i < BLOCKED; i++)
		t[i] = rt_submit(s, submit_while_blocked, NULL);
	for (int i = 0; i < BLOCKED; i++)
		rt_join(t[i]);
	if (scan) {
		cr_expect_eq(st->place_scan, all, "submit=scan: %lu scans counted of %lu",
			     (unsigned long)st->place_scan, (unsigned long)all);
		cr_expect_leq(st->place_external, all);
	} else {
		cr_expect_eq(st->place_external, all, "submit=external: %lu counted of %lu",
			     (unsigned long)st->place_external, (unsigned long)all);
		cr_expect_eq(st->place_scan, 0);
	}
	rt_sched_free(s);
}

Test(sched, placements_from_blocked_threads_are_all_counted, .timeout = 120)
{
	count_placements_from_blocked_threads(
		rt_test_start_with("ce", 2, "blocking", "handoff", "submit", "external", NULL), false);
	count_placements_from_blocked_threads(
		rt_test_start_with("ce", 2, "blocking", "handoff", "submit", "scan", NULL), true);
}
