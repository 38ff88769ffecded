/*
 * Each preset's defining behaviour, checked through the counters and through what
 * tasks observe, so that a preset that stops behaving like its runtime fails here:
 * kyo wakes nobody on a local push, its idle workers never steal and its detector
 * misses 1 ms blocks; rt_flush() re-places a worker's queue; tokio's LIFO slot shows
 * in the placement counters; loom spawns to the external queue; threads runs an OS
 * thread per task; ox and gears run spawn-join as loom does, and pay a record per fork.
 * What each preset's blocking knob does to a blocked worker is in test_blocking.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"
#include "tests/workloads/wl_test.h"

static struct rt_sched *start(const char *preset, unsigned workers)
{
	return rt_test_start_with(preset, workers, NULL);
}

/* Kyo without its CPU-time detector and its time slice, for tests about placement: on a
 * loaded machine a preempted worker's thread also uses no CPU, and the detector drains
 * its queue, as Kyo's would; and a fan of spawns that outlasts the 10 ms slice (under
 * ThreadSanitizer, or with both CPUs busy) has its worker drained to the other one. */
static struct rt_sched *start_kyo_undetected(unsigned workers)
{
	return rt_test_start_with("kyo", workers, "blocking", "none", "time_slice_ms", "0", NULL);
}

/* ---- placement ---------------------------------------------------------------------- */

static uint64_t where(void *arg)
{
	return rt_worker_index();
}

#define FAN 200

/* Spawn FAN children without yielding in between, join them; each returns the worker
 * it ran on. Returns a bitmask of the workers seen. */
static uint64_t fan_where(void *arg)
{
	struct rt_task *t[FAN];
	uint64_t seen = 0;

	for (int i = 0; i < FAN; i++)
		t[i] = rt_spawn(where, NULL);
	for (int i = 0; i < FAN; i++)
		seen |= 1ull << rt_join(t[i]);
	return seen;
}

Test(presets, kyo_wakes_nobody_on_a_local_push_and_idle_workers_never_steal)
{
	struct rt_sched *s = start_kyo_undetected(2);
	struct rt_worker_stats st;
	uint64_t seen;

	rt_test_await_all_parked(s);
	seen = rt_join(rt_submit(s, fan_where, NULL));
	rt_sched_stats_total(s, &st);
	cr_expect(seen == 1 || seen == 2, "every child ran on the spawner's worker (mask %lx)",
		  (unsigned long)seen);
	cr_expect_eq(st.notifies, 0, "nobody was woken");
	cr_expect_eq(st.stolen, 0, "the parked worker never stole");
	cr_expect_geq(st.place_local, FAN);
	cr_expect_gt(st.missed_idle, 0, "placements passed over a parked worker");
	rt_sched_free(s);
}

/* The workers children have run on, as a mask. A child stays on its worker until a child
 * has run on the other one too (or 10 s have passed, which fails the test): the spawner's
 * worker stays busy for as long as the sibling takes to be woken and steal, however long
 * a loaded machine keeps it off a CPU, so the test waits for a condition, not a time. */
static uint64_t ran_on;

static uint64_t busy_where(void *arg)
{
	uint64_t until = rt_now_ns() + 10 * 1000000000ull;
	unsigned w = rt_worker_index();

	__atomic_or_fetch(&ran_on, 1ull << w, __ATOMIC_RELAXED);
	while (__atomic_load_n(&ran_on, __ATOMIC_RELAXED) != 3 && rt_now_ns() < until)
		;
	return w;
}

static uint64_t fan_busy(void *arg)
{
	struct rt_task *t[FAN];
	uint64_t seen = 0;

	__atomic_store_n(&ran_on, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < FAN; i++)
		t[i] = rt_spawn(busy_where, NULL);
	for (int i = 0; i < FAN; i++)
		seen |= 1ull << rt_join(t[i]);
	return seen;
}

Test(presets, ce_wakes_a_sibling_that_steals)
{
	struct rt_sched *s = start("ce", 2);
	struct rt_worker_stats st;
	uint64_t seen;

	rt_test_await_all_parked(s);
	seen = rt_join(rt_submit(s, fan_busy, NULL));
	rt_sched_stats_total(s, &st);
	/* woken by a notify or already searching, the sibling takes a share */
	cr_expect_eq(seen, 3, "children ran on both workers (mask %lx)", (unsigned long)seen);
	cr_expect_gt(st.stolen, 0);
	rt_sched_free(s);
}

/* 100 children spawned and joined in turn; how many came back. */
static uint64_t spawn_join_100(void *arg)
{
	uint64_t joined = 0;

	for (uintptr_t i = 0; i < 100; i++) {
		struct rt_task *t = rt_spawn(where, NULL);

		if (t) {
			rt_join(t);
			joined++;
		}
	}
	return joined;
}

Test(presets, tokio_lifo_slot_shows_in_the_placement_counters)
{
	struct rt_sched *s = start("tokio", 2);
	struct rt_worker_stats st;

	rt_join(rt_submit(s, spawn_join_100, NULL));
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.spawned, 100);
	cr_expect_geq(st.place_lifo, 100, "every spawn took the LIFO slot (%lu)",
		      (unsigned long)st.place_lifo);
	cr_expect_gt(st.lifo_runs, 0);
	rt_sched_free(s);
}

Test(presets, loom_spawns_to_the_external_queue)
{
	struct rt_sched *s = start("loom", 2);
	struct rt_worker_stats st;

	rt_join(rt_submit(s, spawn_join_100, NULL));
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.spawned, 100);
	cr_expect_geq(st.place_external, 100, "%lu", (unsigned long)st.place_external);
	cr_expect_eq(st.place_lifo, 0);
	rt_sched_free(s);
}

Test(presets, global_uses_one_shared_queue_and_never_steals)
{
	struct rt_sched *s = start("global", 2);
	struct rt_worker_stats st;

	for (int i = 0; i < 10; i++)
		rt_join(rt_submit(s, fan_where, NULL));
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.stolen, 0);
	cr_expect_eq(st.place_local, 0);
	cr_expect_geq(st.place_external, 10 * FAN);
	rt_sched_free(s);
}

Test(presets, threads_runs_one_os_thread_per_task)
{
	struct rt_sched *s = start("threads", 0);

	cr_expect_eq(rt_join(rt_submit(s, spawn_join_100, NULL)), 100);
	cr_expect_eq(rt_sched_threads_created(s), 101, "the root and its 100 children");
	rt_sched_free(s);
}

/* Children spawned and then flushed run elsewhere. */
static uint64_t spawn_then_flush(void *arg)
{
	unsigned self = rt_worker_index(), moved;
	struct rt_task *t[10];
	uint64_t elsewhere = 0;

	for (int i = 0; i < 10; i++)
		t[i] = rt_spawn(where, NULL);
	moved = rt_flush();
	for (int i = 0; i < 10; i++)
		elsewhere += rt_join(t[i]) != self;
	return moved * 100 + elsewhere;
}

Test(presets, flush_replaces_the_queue_on_other_workers)
{
	/* no stealing at all (a victim must hold 1,000 tasks), so that only the flush
	 * moves tasks: a woken worker would otherwise steal from the queue while it drains,
	 * and steal back afterwards, as Kyo's does */
	struct rt_sched *s = rt_test_start_with("kyo", 2, "blocking", "none", "steal_min_load", "1000", NULL);
	struct rt_worker_stats st;
	uint64_t v;

	rt_test_await_all_parked(s);
	v = rt_join(rt_submit(s, spawn_then_flush, NULL));
	cr_expect_eq(v / 100, 10, "moved %lu", (unsigned long)(v / 100));
	cr_expect_eq(v % 100, 10, "ran elsewhere: %lu", (unsigned long)(v % 100));
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.place_flush, 10);
	cr_expect_eq(st.stolen, 0);
	rt_sched_free(s);
}

/* Children spawned elsewhere run on another worker than their spawner's. */
static uint64_t spawn_elsewhere_10(void *arg)
{
	unsigned self = rt_worker_index();
	struct rt_task *t[10];
	uint64_t elsewhere = 0;

	for (int i = 0; i < 10; i++)
		t[i] = rt_spawn_elsewhere(where, NULL);
	for (int i = 0; i < 10; i++)
		elsewhere += t[i] && rt_join(t[i]) != self;
	return elsewhere;
}

Test(presets, spawn_elsewhere_leaves_the_current_worker_out)
{
	/* no stealing, so that nothing can come back to the spawner's worker */
	struct rt_sched *s = rt_test_start_with("kyo", 2, "blocking", "none", "steal_min_load", "1000", NULL);
	struct rt_worker_stats st;

	rt_test_await_all_parked(s);
	cr_expect_eq(rt_join(rt_submit(s, spawn_elsewhere_10, NULL)), 10);
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.spawned, 10);
	cr_expect_geq(st.place_remote, 11, "the root and the 10 children went to an inbox");
	rt_sched_free(s);
}

/* ---- every preset ---------------------------------------------------------------------- */

Test(presets, every_preset_starts_runs_and_stops)
{
	const char *const *names = rt_preset_names();

	for (size_t i = 0; names[i]; i++) {
		struct rt_sched *s = start(names[i], 0);

		cr_expect_eq(rt_join(rt_submit(s, spawn_join_100, NULL)), 100, "%s", names[i]);
		rt_sched_free(s);
	}
}

/* ox and gears are loom with a scope per spawner (runtime/scope.c): the spawn-join
 * workload, each child a fork of the op's scope, sums its children as under loom, and
 * each fork is seen by the allocation counters, which loom's spawns never are. */
Test(presets, ox_and_gears_pass_spawn_join_with_a_record_per_fork, .timeout = 60)
{
	static const char *const names[] = { "loom", "ox", "gears" };
	uint64_t bytes[3];

	for (size_t i = 0; i < 3; i++) {
		struct wl_ctx ctx = wl_test_ctx("spawn-join", names[i], 2);
		struct rt_worker_stats before, after;
		char err[256];
		bool ok;

		rt_sched_stats_total(ctx.sched, &before);
		cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), 500500, "%s", names[i]);
		cr_expect(ok, "%s: %s", names[i], err);
		rt_sched_stats_total(ctx.sched, &after);
		bytes[i] = after.alloc_bytes - before.alloc_bytes;
		wl_test_finish(&ctx);
	}
	cr_expect_eq(bytes[0], 0, "loom allocates nothing per spawn (%lu)",
		     (unsigned long)bytes[0]);
	cr_expect_geq(bytes[1], 1000, "ox: a record per fork (%lu)", (unsigned long)bytes[1]);
	cr_expect_gt(bytes[2], bytes[1], "gears: more than ox (%lu)", (unsigned long)bytes[2]);
}

/* global: a yielded task is submitted to the shared queue again, as a thread-pool
 * executor re-submits it; its worker's own ring stays unused. One worker and two
 * tasks, the second queued before the first yields, so every yield is a placement. */
static int yield_go;

static uint64_t yield_ten(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&yield_go, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int i = 0; i < 10; i++)
		rt_yield();
	return 0;
}

Test(presets, global_puts_a_yielded_task_on_the_shared_queue)
{
	struct rt_sched *s = start("global", 1);
	struct rt_task *a = rt_submit(s, yield_ten, NULL), *b = rt_submit(s, yield_ten, NULL);
	struct rt_worker_stats st;

	__atomic_store_n(&yield_go, 1, __ATOMIC_RELEASE);
	rt_join(a);
	rt_join(b);
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.place_local, 0, "yields went to the worker's ring (%lu)",
		     (unsigned long)st.place_local);
	cr_expect_geq(st.place_external, 10, "at least a's yields went to the shared queue (%lu)",
		      (unsigned long)st.place_external);
	rt_sched_free(s);
}

/* kyo: a worker whose queue runs dry looks at its siblings once before it goes idle
 * (Kyo's worker releases its thread when its queue and a steal attempt both come up
 * empty). A parent fills its worker's queue and holds the worker; a task submitted
 * from outside lands on the idle sibling, which then steals from the parent's queue.
 * The parent holds until a child has run on another worker: with both CPUs busy the
 * sibling can be preempted between the outside task and its steal, and a parent that
 * let go at once would run every child itself first. */
static int dry_done, fill_ready, stolen_ran;
static unsigned fill_worker;

static uint64_t dry_mark(void *arg)
{
	(void)arg;
	__atomic_store_n(&dry_done, 1, __ATOMIC_RELEASE);
	return rt_worker_index();
}

static uint64_t where_marked(void *arg)
{
	unsigned w = rt_worker_index();

	(void)arg;
	if (w != fill_worker)
		__atomic_store_n(&stolen_ran, 1, __ATOMIC_RELEASE);
	return w;
}

static uint64_t fill_and_hold(void *arg)
{
	struct rt_task *t[FAN];
	uint64_t seen = 0, give_up = rt_now_ns() + 20 * 1000000000ull;

	(void)arg;
	fill_worker = rt_worker_index();
	for (int i = 0; i < FAN; i++)
		t[i] = rt_spawn(where_marked, NULL);
	__atomic_store_n(&fill_ready, 1, __ATOMIC_RELEASE);
	/* a bound only so that a runtime that never steals fails the test, not hangs it */
	while ((!__atomic_load_n(&dry_done, __ATOMIC_ACQUIRE) ||
		!__atomic_load_n(&stolen_ran, __ATOMIC_ACQUIRE)) && rt_now_ns() < give_up)
		sched_yield();
	for (int i = 0; i < FAN; i++)
		seen |= 1ull << rt_join(t[i]);
	return seen;
}

Test(presets, kyo_worker_steals_once_as_its_queue_runs_dry, .timeout = 60)
{
	struct rt_sched *s = start_kyo_undetected(2);
	struct rt_worker_stats st;
	struct rt_task *parent, *dry;
	uint64_t seen, dry_on;

	rt_test_await_all_parked(s);
	parent = rt_submit(s, fill_and_hold, NULL);
	rt_test_await_u32((const uint32_t *)&fill_ready, 1, "the parent filled its queue");
	dry = rt_submit(s, dry_mark, NULL);
	seen = rt_join(parent);
	dry_on = rt_join(dry);
	rt_sched_stats_total(s, &st);
	cr_expect_gt(st.stolen, 0, "the sibling stole from the parent's queue");
	cr_expect_neq(seen & (1ull << dry_on), 0, "a child ran on the sibling %lu (mask %lx)",
		      (unsigned long)dry_on, (unsigned long)seen);
	rt_sched_free(s);
}
