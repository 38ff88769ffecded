/*
 * Knobs that no preset's test covers on its own: the blocking pool (blocking=offload),
 * where a full queue overflows to, where a placement scan starts, and spinning before
 * a park. Each is checked by what it changes in the counters or in what tasks see.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "tests/runtime/rt_test.h"

/* ---- blocking=offload ------------------------------------------------------------------ */

struct offload_probe {
	pid_t before, inside, after; /* thread ids: pthread_self() is const to the compiler,
				      * which does not know a fiber can change threads */
	uint32_t child_ran;
	int ran_during; /* the child ran while the parent was in its section */
};

static uint64_t mark_child(void *arg)
{
	struct offload_probe *p = arg;

	__atomic_store_n(&p->child_ran, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Queue a child on this worker, then block until it has run (or 5 s). */
static uint64_t section_with_child(void *arg)
{
	struct offload_probe *p = arg;
	struct rt_task *child = rt_spawn(mark_child, p);

	p->before = gettid();
	rt_blocking_begin();
	p->inside = gettid();
	for (int i = 0; i < 5000 && !__atomic_load_n(&p->child_ran, __ATOMIC_ACQUIRE); i++)
		rt_test_sleep_ns(1ull * 1000000);
	p->ran_during = __atomic_load_n(&p->child_ran, __ATOMIC_ACQUIRE);
	rt_blocking_end();
	p->after = gettid();
	rt_join(child);
	return 0;
}

Test(knobs, offload_runs_the_section_on_a_pool_thread_and_the_worker_runs_on)
{
	struct rt_sched *s = rt_test_start_with("ce", 1, "blocking", "offload", NULL);
	struct offload_probe p = { 0 };
	struct rt_worker_stats st;

	rt_join(rt_submit(s, section_with_child, &p));
	rt_sched_stats_total(s, &st);
	cr_expect(p.ran_during, "the worker ran the queued child during the section");
	cr_expect_neq(p.before, p.inside, "the section ran on another thread");
	cr_expect_eq(p.before, p.after, "and came back to the worker's thread");
	cr_expect_eq(st.offloads, 1);
	cr_expect_eq(st.blocking_episodes, 1);
	cr_expect_eq(st.handoffs, 0, "the worker kept its thread");
	rt_sched_free(s);
}

Test(knobs, offload_in_compact_mode_blocks_in_place)
{
	/* a task on a worker's shared stack cannot move to another thread */
	struct rt_sched *s = rt_test_start_with("ce", 1, "blocking", "offload", "stack_mode",
						"compact", NULL);
	struct offload_probe p = { 0 };
	struct rt_worker_stats st;

	/* the child cannot run while the only worker blocks: count it as run already, so
	 * that the section ends at once */
	p.child_ran = 1;
	rt_join(rt_submit(s, section_with_child, &p));
	rt_sched_stats_total(s, &st);
	cr_expect_eq(p.before, p.inside, "the section stayed on the worker's thread");
	cr_expect_eq(st.offloads, 0);
	rt_sched_free(s);
}

struct overlap {
	uint32_t inside, most;
};

static uint64_t overlapping_section(void *arg)
{
	struct overlap *o = arg;
	uint32_t now;

	rt_blocking_begin();
	now = __atomic_add_fetch(&o->inside, 1, __ATOMIC_ACQ_REL);
	for (uint32_t m = __atomic_load_n(&o->most, __ATOMIC_RELAXED);
	     now > m && !__atomic_compare_exchange_n(&o->most, &m, now, false, __ATOMIC_RELAXED,
						     __ATOMIC_RELAXED);)
		;
	rt_test_sleep_ns(50ull * 1000000);
	__atomic_sub_fetch(&o->inside, 1, __ATOMIC_ACQ_REL);
	rt_blocking_end();
	return 0;
}

Test(knobs, offloaded_sections_of_one_worker_run_side_by_side)
{
	struct rt_sched *s = rt_test_start_with("ce", 1, "blocking", "offload", NULL);
	struct overlap o = { 0, 0 };
	struct rt_task *t[8];
	struct rt_worker_stats st;

	for (int i = 0; i < 8; i++)
		t[i] = rt_submit(s, overlapping_section, &o);
	for (int i = 0; i < 8; i++)
		rt_join(t[i]);
	rt_sched_stats_total(s, &st);
	cr_expect_eq(st.offloads, 8);
	cr_expect_geq(o.most, 2, "one worker, yet sections overlapped on pool threads");
	cr_expect_geq(rt_sched_threads_created(s), 1 + o.most);
	rt_sched_free(s);
}

/* ---- overflow ---------------------------------------------------------------------------- */

static uint64_t leaf(void *arg)
{
	(void)arg;
	return 1;
}

/* Spawn 64 children (*arg, an rt_fn) onto this worker's queue without yielding, then
 * join them. */
static uint64_t flood(void *arg)
{
	rt_fn child = *(rt_fn *)arg;
	struct rt_task *t[64];
	uint64_t sum = 0;

	for (int i = 0; i < 64; i++)
		t[i] = rt_spawn(child, NULL);
	for (int i = 0; i < 64; i++)
		sum += rt_join(t[i]);
	return sum;
}

static void flood_with(const char *overflow, struct rt_worker_stats *st)
{
	struct rt_sched *s = rt_test_start_with("ce", 1, "capacity", "4", "overflow", overflow,
						NULL);

	/* 64 children onto a 4-slot ring */
	cr_expect_eq(rt_join(rt_submit(s, flood, &(rt_fn){ leaf })), 64, "overflow=%s", overflow);
	rt_sched_stats_total(s, st);
	rt_sched_free(s);
}

Test(knobs, overflow_global_spills_to_the_global_queue)
{
	struct rt_worker_stats st;

	flood_with("global", &st);
	cr_expect_gt(st.overflows, 0);
	cr_expect_gt(st.global_pops, 1, "the spilled tasks came back from the global queue");
}

Test(knobs, overflow_local_keeps_the_spill_on_the_worker)
{
	struct rt_worker_stats st;

	flood_with("local", &st);
	cr_expect_gt(st.overflows, 0);
	cr_expect_eq(st.global_pops, 1, "only the submitted root came through the global queue");
}

/* ---- scan_start -------------------------------------------------------------------------- */

/* Submit n tasks one after another through a scan of 4 idle workers; out: how many
 * each worker received. */
static void scan_from(const char *start, unsigned n, uint64_t *got)
{
	struct rt_sched *s = rt_test_start_with("kyo", 4, "blocking", "none", "adapt", "fixed",
						"scan_start", start, NULL);
	struct rt_worker_stats st[4];

	for (unsigned i = 0; i < n; i++)
		rt_join(rt_submit(s, leaf, NULL));
	cr_assert_eq(rt_sched_stats(s, st, 4), 4);
	for (int i = 0; i < 4; i++)
		got[i] = st[i].place_remote;
	rt_sched_free(s);
}

Test(knobs, scan_start_first_lands_every_task_on_worker_0)
{
	uint64_t got[4];

	scan_from("first", 8, got);
	cr_expect_eq(got[0], 8);
	cr_expect_eq(got[1] + got[2] + got[3], 0);
}

Test(knobs, scan_start_round_robin_deals_the_tasks_out)
{
	uint64_t got[4];

	scan_from("round-robin", 8, got);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(got[i], 2, "worker %d", i);
}

/* ---- park_spin_us ------------------------------------------------------------------------ */

/* How many of 20 looks, 5 ms apart, find the one worker, idle since its task ended,
 * on a CPU or waiting for one (R) rather than asleep. The worker's thread state is the
 * kernel's, so other work on the CPUs cannot change it: a spinner preempted is still
 * runnable, a sleeper still asleep. */
static int idle_worker_running(const char *spin_us)
{
	struct rt_sched *s = rt_test_start_with("ce", 1, "metrics", "false", "park_spin_us",
						spin_us, NULL);
	int running = 0;

	/* the worker parks after the task, and spins (if it does) for a second from then;
	 * the looks fall well inside it */
	rt_join(rt_submit(s, leaf, NULL));
	rt_test_sleep_ns(20ull * 1000000);
	for (int i = 0; i < 20; i++) {
		unsigned on_cpu;

		cr_assert_eq(rt_test_named_threads("rt-worker", 'R', &on_cpu), 1,
			     "not one thread named rt-worker");
		running += on_cpu;
		rt_test_sleep_ns(5ull * 1000000);
	}
	rt_sched_free(s);
	return running;
}

Test(knobs, park_spin_keeps_an_idle_worker_on_the_cpu)
{
	/* a spinning worker stays runnable while idle; a parked one sleeps. (Its CPU time
	 * over a window, which this test once read, is what a busy machine takes away.) */
	int spinning = idle_worker_running("1000000"), sleeping = idle_worker_running("0");

	/* one look each way is allowed: a parked worker's timed wait ends now and then, and
	 * a look can land in it */
	cr_expect_geq(spinning, 19, "the spinning worker was runnable in %d of 20 looks",
		      spinning);
	cr_expect_leq(sleeping, 1, "the parked worker was runnable in %d of 20 looks", sleeping);
}

/* ---- queue=heap -------------------------------------------------------------------------- */

/* Who ran each step, in order: 'H' for the hog, 'l' for the light task. */
struct race {
	char order[16];
	uint32_t n;
};

static void step(struct race *r, char who)
{
	uint32_t i = __atomic_fetch_add(&r->n, 1, __ATOMIC_RELAXED);

	if (i < sizeof(r->order) - 1)
		r->order[i] = who;
}

/* Burns 50 ms of CPU (50 ticks of the coarse clock), then yields twice. */
static uint64_t hog(void *arg)
{
	step(arg, 'H');
	rt_test_spin_ns(50000000);
	rt_yield();
	step(arg, 'H');
	rt_yield();
	step(arg, 'H');
	return 0;
}

/* Runs for nothing, four times. */
static uint64_t light(void *arg)
{
	for (int i = 0; i < 4; i++) {
		step(arg, 'l');
		rt_yield();
	}
	return 0;
}

/* Spawn the hog, then the light task, onto this worker's queue; wait for both. */
static uint64_t hog_then_light(void *arg)
{
	struct rt_task *h = rt_spawn(hog, arg), *l = rt_spawn(light, arg);

	rt_join(h);
	rt_join(l);
	return 0;
}

static void hog_and_light(const char *queue, struct race *r)
{
	struct rt_sched *s = rt_test_start_with("ce", 1, "queue", queue, "monitor_us", "1000",
						NULL);

	rt_join(rt_submit(s, hog_then_light, r));
	rt_sched_free(s);
}

Test(knobs, queue_heap_runs_the_least_run_task_first)
{
	struct race heap = { 0 }, ring = { 0 };

	/* the hog starts first (it went in first); once it yields with 50 ms run, the light
	 * task's every step comes before the hog's next. A FIFO ring alternates instead */
	hog_and_light("heap", &heap);
	cr_expect_str_eq(heap.order, "HllllHH");
	hog_and_light("ring", &ring);
	cr_expect_str_eq(ring.order, "HlHlHll");
}

/* Children spawned onto worker 0 that take 2 ms each: the idle worker 1 can only get
 * some of them by stealing from 0's heap. */
static uint64_t busy_2ms(void *arg)
{
	(void)arg;
	rt_test_spin_ns(2000000);
	return 1;
}

Test(knobs, queue_heap_is_stolen_from_and_never_overflows)
{
	/* capacity sizes rings only: a heap grows, as Kyo's does */
	struct rt_sched *s = rt_test_start_with("ce", 2, "queue", "heap", "capacity", "4",
						NULL);
	struct rt_worker_stats st[2];

	cr_expect_eq(rt_join(rt_submit(s, flood, &(rt_fn){ busy_2ms })), 64, "every child ran once");
	cr_assert_eq(rt_sched_stats(s, st, 2), 2);
	cr_expect_gt(st[0].stolen + st[1].stolen, 0, "the idle worker stole from the heap");
	cr_expect_gt(st[0].tasks_run, 0);
	cr_expect_gt(st[1].tasks_run, 0);
	cr_expect_eq(st[0].overflows + st[1].overflows, 0);
	rt_sched_free(s);
}

/* ---- search_passes ------------------------------------------------------------------------- */

/* Steal attempts by two workers with nothing to steal: each search makes search_passes
 * passes over the one other worker, then parks at once (search_spin_us=0). */
static uint64_t attempts_with(const char *passes)
{
	struct rt_sched *s = rt_test_start_with("ce", 2, "search_passes", passes,
						"search_spin_us", "0", NULL);
	struct rt_worker_stats st;

	for (int i = 0; i < 20; i++) {
		rt_join(rt_submit(s, leaf, NULL));
		rt_test_sleep_ns(1ull * 1000000);
	}
	rt_sched_stats_total(s, &st);
	rt_sched_free(s);
	return st.steal_attempts;
}

Test(knobs, search_passes_sets_how_long_a_searcher_looks)
{
	uint64_t one = attempts_with("1"), four = attempts_with("4");

	cr_expect_gt(one, 0, "idle workers searched");
	cr_expect_geq(four, 2 * one, "4 passes: %lu attempts, 1 pass: %lu", (unsigned long)four,
		      (unsigned long)one);
}

/* ---- time_slice_ms ----------------------------------------------------------------------- */

struct overrun {
	uint32_t children_done;  /* children finished so far */
	uint32_t done_in_time;   /* of them, while the hog still spun */
	uint32_t hog_spinning;
};

static uint64_t child_of_hog(void *arg)
{
	struct overrun *o = arg;

	if (__atomic_load_n(&o->hog_spinning, __ATOMIC_ACQUIRE))
		__atomic_fetch_add(&o->done_in_time, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&o->children_done, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Queue 8 children on this worker (Kyo: no one is woken, idle workers do not steal),
 * then spin 300 ms of CPU, passing preemption points, then join them. */
static uint64_t hog_over_children(void *arg)
{
	struct overrun *o = arg;
	struct rt_task *t[8];
	uint64_t until;

	__atomic_store_n(&o->hog_spinning, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 8; i++)
		t[i] = rt_spawn(child_of_hog, o);
	until = rt_now_ns() + 300000000;
	while (rt_now_ns() < until)
		rt_preempt_point();
	__atomic_store_n(&o->hog_spinning, 0, __ATOMIC_RELEASE);
	for (int i = 0; i < 8; i++)
		rt_join(t[i]);
	return 0;
}

static void overrun_with(const char *slice_ms, struct overrun *o, struct rt_worker_stats *st)
{
	/* Only the time slice may move the children: no detector (a hog whose thread the OS
	 * preempts looks blocked to it) and no steals (a worker starting late on a busy
	 * machine takes one look at the others' queues, as Kyo's do when theirs run dry) */
	struct rt_sched *s = rt_test_start_with("kyo", 2, "adapt", "fixed", "blocking", "none",
						"steal_min_load", "1000", "time_slice_ms", slice_ms,
						NULL);

	rt_join(rt_submit(s, hog_over_children, o));
	rt_sched_stats_total(s, st);
	rt_sched_free(s);
}

Test(knobs, time_slice_drains_a_stalled_worker_and_preempts_its_task, .timeout = 60)
{
	struct overrun on = { 0 }, off = { 0 };
	struct rt_worker_stats st_on, st_off;

	overrun_with("10", &on, &st_on);
	cr_expect_eq(on.children_done, 8);
	cr_expect_eq(on.done_in_time, 8, "the stall moved the queue to the idle worker");
	cr_expect_geq(st_on.stalls, 1);
	cr_expect_geq(st_on.preemptions, 1, "the hog yielded at a preemption point");
	/* the drain takes what is queued on the stall's edge: all 8 children, or fewer
	 * where the machine held the hog's thread off its CPU for the slice between two of
	 * its spawns, and those spawned after the edge pass the stalled worker over (8 was
	 * not reached once in 29 runs of make test under two busy loops) */
	cr_expect_geq(st_on.place_flush, 1, "its queue was drained: %llu moved, %llu stalls",
		      (unsigned long long)st_on.place_flush, (unsigned long long)st_on.stalls);

	overrun_with("0", &off, &st_off);
	cr_expect_eq(off.children_done, 8);
	cr_expect_eq(off.done_in_time, 0, "without a slice the children wait out the hog");
	cr_expect_eq(st_off.stalls + st_off.preemptions, 0);
}

/* ---- global_batch ------------------------------------------------------------------------ */

static uint32_t gate_running, gate_open;

/* Holds the one worker until the test has queued everything behind it. */
static uint64_t gate(void *arg)
{
	(void)arg;
	__atomic_store_n(&gate_running, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE))
		sched_yield();
	return 0;
}

/* What the worker holds in its own queue when the first task behind the gate runs. */
static uint64_t local_queue_len(void *arg)
{
	(void)arg;
	return rt_deque_len(&rt__self()->dq);
}

static uint64_t queued_locally(const char *batch)
{
	/* the periodic look at the global queue takes one task: put it out of the way */
	struct rt_sched *s = rt_test_start_with("ce", 1, "global_batch", batch,
						"global_interval", "1000000", NULL);
	struct rt_task *g, *first, *t[32];
	uint64_t n;

	__atomic_store_n(&gate_running, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&gate_open, 0, __ATOMIC_RELAXED);
	g = rt_submit(s, gate, NULL);
	/* the gate was taken alone: everything else waits in the global queue */
	rt_test_await_u32(&gate_running, 1, "the gate runs");
	first = rt_submit(s, local_queue_len, NULL);
	for (int i = 0; i < 32; i++)
		t[i] = rt_submit(s, leaf, NULL);
	__atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
	rt_join(g);
	n = rt_join(first);
	for (int i = 0; i < 32; i++)
		rt_join(t[i]);
	rt_sched_free(s);
	return n;
}

Test(knobs, global_batch_off_takes_one_task_at_a_time)
{
	/* 33 tasks wait in the global queue behind the gate: a batch moves a share of them
	 * into the worker's own queue along with the one it runs; without, none move */
	cr_expect_eq(queued_locally("false"), 0);
	cr_expect_gt(queued_locally("true"), 0);
}

/* The monitor's drain exchanges a worker's LIFO slot from its own thread, so wherever it
 * runs the owner must exchange the slot too, or one task is placed twice. */
Test(knobs, lifo_slot_is_shared_wherever_the_monitor_drains_it)
{
	struct rt_config c;
	char err[256];

	cr_assert_eq(rt_config_preset(&c, "tokio"), 0);
	cr_expect_not(rt__lifo_shared(&c), "tokio alone keeps its slot unshared");
	cr_assert_eq(rt_config_set(&c, "time_slice_ms", "1", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rt_config_check(&c, err, sizeof(err)), 0, "%s", err);
	cr_expect(rt__lifo_shared(&c), "tokio with a time slice: the stall drain takes the slot");
	cr_assert_eq(rt_config_preset(&c, "kyo"), 0);
	cr_expect(rt__lifo_shared(&c), "kyo: the slice and the detector drain the slot");
}
