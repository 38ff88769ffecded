/*
 * Scopes (runtime/scope.c), under ox (scope=supervised) and gears (scope=async): a fork is
 * registered in its spawner's scope while it runs; the owner's body returning waits for a
 * fork still running; a raise in one fork fails the scope, whose failure the owner sees,
 * and cancels a sibling that has not started (it never runs its body) and one that runs
 * (it stops at its next rt_preempt_point()); a failure under a nested scope goes up to the
 * one around it; and scope=none allocates nothing, while each fork of supervised allocates
 * and one of async more. Every wait here is for a condition: a fork that must not finish
 * waits on a latch the test opens, or holds its worker until it is cancelled.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

static const char *const scoped[] = { "ox", "gears" };

#define NSCOPED (sizeof(scoped) / sizeof(scoped[0]))

/* ---- registration ------------------------------------------------------------------ */

#define NFORKS 8

struct reg {
	struct rt_latch go;     /* opened by the test once it has read the count */
	uint32_t spawned;       /* the owner counted its forks */
	unsigned before, during, after;
};

static uint64_t wait_go(void *arg)
{
	struct reg *r = arg;

	rt_latch_wait(&r->go);
	return 1;
}

static uint64_t spawn_and_count(void *arg)
{
	struct reg *r = arg;
	struct rt_task *t[NFORKS];
	uint64_t sum = 0;

	r->before = rt_scope_forks();
	for (int i = 0; i < NFORKS; i++)
		t[i] = rt_spawn(wait_go, r);
	/* none can end before the test opens the latch, which it does after this flag */
	r->during = rt_scope_forks();
	__atomic_store_n(&r->spawned, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NFORKS; i++)
		sum += t[i] ? rt_join(t[i]) : 0;
	r->after = rt_scope_forks();
	return sum;
}

Test(scope, forks_are_registered_while_they_run_and_unregistered_at_their_end)
{
	for (size_t p = 0; p < NSCOPED; p++) {
		struct rt_sched *s = rt_test_start(scoped[p], 2);
		struct reg r = { 0 };
		struct rt_task *owner;

		rt_latch_init(&r.go, 1);
		owner = rt_submit(s, spawn_and_count, &r);
		rt_test_await_u32(&r.spawned, 1, "the owner spawned its forks");
		rt_latch_count_down(&r.go);
		cr_expect_eq(rt_join(owner), NFORKS, "%s: every fork returned", scoped[p]);
		cr_expect_eq(r.before, 0, "%s: no scope before the first fork", scoped[p]);
		cr_expect_eq(r.during, NFORKS, "%s: %u running forks counted", scoped[p], r.during);
		cr_expect_eq(r.after, 0, "%s: %u still counted once joined", scoped[p], r.after);
		rt_sched_free(s);
	}
}

/* ---- the owner's exit waits ----------------------------------------------------------- */

struct held {
	struct rt_latch release;
	struct rt_task *owner;
	uint32_t body_returned;  /* the owner's body is about to return */
	uint32_t fork_done;      /* the fork got past the latch */
	uint32_t watcher_done;   /* the watcher's join of the owner returned */
	uint32_t fork_done_at_join; /* fork_done as the watcher's join returned */
};

static uint64_t held_fork(void *arg)
{
	struct held *h = arg;

	rt_latch_wait(&h->release);
	__atomic_store_n(&h->fork_done, 1, __ATOMIC_RELEASE);
	return 0;
}

static uint64_t owner_leaves_a_fork(void *arg)
{
	struct held *h = arg;
	struct rt_task *t = rt_spawn(held_fork, h);

	if (t) /* else the watcher sees the owner done with no fork held, and the test fails */
		rt_detach(t);
	__atomic_store_n(&h->body_returned, 1, __ATOMIC_RELEASE);
	return 42;
}

static uint64_t watch_owner(void *arg)
{
	struct held *h = arg;
	uint64_t r = rt_join(h->owner);

	h->fork_done_at_join = __atomic_load_n(&h->fork_done, __ATOMIC_ACQUIRE);
	__atomic_store_n(&h->watcher_done, 1, __ATOMIC_RELEASE);
	return r;
}

Test(scope, the_owners_body_returning_waits_for_a_fork_still_running)
{
	for (size_t p = 0; p < NSCOPED; p++) {
		struct rt_sched *s = rt_test_start(scoped[p], 2);
		struct held h = { 0 };
		struct rt_task *watcher;
		uint64_t until = rt_now_ns() + 30 * 1000000000ull;

		rt_latch_init(&h.release, 1);
		h.owner = rt_submit(s, owner_leaves_a_fork, &h);
		watcher = rt_submit(s, watch_owner, &h);
		rt_test_await_u32(&h.body_returned, 1, "the owner's body returned");
		/* either the owner waits at its scope's exit, as it must, or the watcher's join
		 * of it returned, which must not happen before the release */
		while (!rt__scope_exiting(h.owner) &&
		       !__atomic_load_n(&h.watcher_done, __ATOMIC_ACQUIRE) && rt_now_ns() < until)
			usleep(100);
		cr_expect_not(__atomic_load_n(&h.watcher_done, __ATOMIC_ACQUIRE),
			      "%s: the owner completed while its fork was held", scoped[p]);
		cr_expect(rt__scope_exiting(h.owner), "%s: the owner waits at its scope's exit",
			  scoped[p]);
		cr_expect_not(__atomic_load_n(&h.fork_done, __ATOMIC_ACQUIRE));
		rt_latch_count_down(&h.release);
		cr_expect_eq(rt_join(watcher), 42, "%s: the owner's result", scoped[p]);
		cr_expect(h.fork_done_at_join, "%s: the owner completed before its fork ended",
			  scoped[p]);
		rt_sched_free(s);
	}
}

/* ---- failure and cancellation ---------------------------------------------------------- */

struct fail {
	uint32_t c_started;      /* the running sibling holds its worker */
	uint32_t b_ran, c_ran_out; /* a cancelled fork's body ran, or ran to its end */
	uint64_t c_points;       /* preemption points the running sibling passed */
	unsigned forks_after;
	int failure_code;
	char failure_msg[64];
};

#define FAIL_CODE 42

/* Holds its worker (no yield: loom's preemption points never yield, having no time
 * slice) until its scope cancels it at a preemption point; a bound only so that a runtime
 * that never cancels fails the test rather than hangs it. */
static uint64_t running_sibling(void *arg)
{
	struct fail *f = arg;
	uint64_t until = rt_now_ns() + 30 * 1000000000ull;

	__atomic_store_n(&f->c_started, 1, __ATOMIC_RELEASE);
	while (rt_now_ns() < until) {
		rt_preempt_point();
		__atomic_store_n(&f->c_points, f->c_points + 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&f->c_ran_out, 1, __ATOMIC_RELEASE);
	return 7;
}

static uint64_t queued_sibling(void *arg)
{
	struct fail *f = arg;

	__atomic_store_n(&f->b_ran, 1, __ATOMIC_RELEASE);
	return 5;
}

static uint64_t failing_fork(void *arg)
{
	rt_raise_notrace(FAIL_CODE, "fork a failed");
}

/* Two workers: the running sibling holds one, the owner the other. The failing fork and
 * the queued sibling go on the external queue in that order, and the owner's worker takes
 * them in that order once the owner waits: the failure comes before the queued sibling
 * can start, and its worker is held all the while by the running one. */
static uint64_t fail_one(void *arg)
{
	struct fail *f = arg;
	struct rt_task *a, *b, *c = rt_spawn(running_sibling, f);
	uint64_t until = rt_now_ns() + 30 * 1000000000ull, sum;
	const struct rt_error *e;

	while (!__atomic_load_n(&f->c_started, __ATOMIC_ACQUIRE) && rt_now_ns() < until)
		sched_yield();
	a = rt_spawn(failing_fork, f);
	b = rt_spawn(queued_sibling, f);
	sum = rt_join(a) + rt_join(b) + rt_join(c);
	f->forks_after = rt_scope_forks();
	e = rt_scope_failure();
	f->failure_code = e ? rt_error_code(e) : -1;
	if (e)
		snprintf(f->failure_msg, sizeof(f->failure_msg), "%s", rt_error_message(e));
	return sum;
}

Test(scope, a_raise_fails_the_scope_and_cancels_queued_and_running_siblings, .timeout = 90)
{
	for (size_t p = 0; p < NSCOPED; p++) {
		struct rt_sched *s = rt_test_start(scoped[p], 2);
		struct fail f = { 0 };

		cr_expect_eq(rt_join(rt_submit(s, fail_one, &f)), 0,
			     "%s: joins of failed and cancelled forks return 0", scoped[p]);
		cr_expect_eq(f.failure_code, FAIL_CODE, "%s: the owner sees the failure (%d)",
			     scoped[p], f.failure_code);
		cr_expect_str_eq(f.failure_msg, "fork a failed");
		cr_expect_not(f.b_ran, "%s: the sibling that had not started never ran", scoped[p]);
		cr_expect_gt(f.c_points, 0, "%s: the running sibling was running", scoped[p]);
		cr_expect_not(f.c_ran_out, "%s: the running sibling stopped at a preemption point",
			      scoped[p]);
		cr_expect_eq(f.forks_after, 0);
		rt_sched_free(s);
	}
}

/* A fork whose own fork fails fails in turn: its result is 0 and the failure goes up to
 * the scope around it, as an exception out of a nested supervised block. */
static uint64_t nested_owner(void *arg)
{
	struct rt_task *t = rt_spawn(failing_fork, arg);

	rt_join(t);
	return 9; /* a value its failed scope overrides */
}

static uint64_t outer_owner(void *arg)
{
	int *code = arg;
	uint64_t r = rt_join(rt_spawn(nested_owner, NULL));
	const struct rt_error *e = rt_scope_failure();

	*code = e ? rt_error_code(e) : -1;
	return r;
}

Test(scope, a_failure_in_a_nested_scope_fails_the_fork_that_holds_it)
{
	for (size_t p = 0; p < NSCOPED; p++) {
		struct rt_sched *s = rt_test_start(scoped[p], 2);
		int code = 0;

		cr_expect_eq(rt_join(rt_submit(s, outer_owner, &code)), 0, "%s", scoped[p]);
		cr_expect_eq(code, FAIL_CODE, "%s: the outer scope holds the inner failure (%d)",
			     scoped[p], code);
		rt_sched_free(s);
	}
}

/* ---- what a scope allocates ------------------------------------------------------------- */

#define NSPAWN 100

static uint64_t spawn_join_n(void *arg)
{
	uint64_t sum = 0;

	for (uintptr_t i = 0; i < NSPAWN; i++) {
		struct rt_task *t = rt_spawn(queued_sibling, arg);

		sum += t ? rt_join(t) : 0;
	}
	return sum;
}

/* Bytes the runtime's allocator counted over one root task of NSPAWN spawn/joins. */
static uint64_t bytes_of_spawn_join(const char *preset, const char *scope)
{
	struct rt_sched *s = rt_test_start_with(preset, 2, "scope", scope, NULL);
	struct rt_worker_stats before, after;
	struct fail f = { 0 };

	rt_sched_stats_total(s, &before);
	cr_assert_eq(rt_join(rt_submit(s, spawn_join_n, &f)), 5 * NSPAWN, "%s, scope=%s", preset,
		     scope);
	rt_sched_stats_total(s, &after);
	rt_sched_free(s);
	return after.alloc_bytes - before.alloc_bytes;
}

Test(scope, none_allocates_nothing_and_a_gears_fork_more_than_an_ox_fork)
{
	uint64_t ce = bytes_of_spawn_join("ce", "none"), none = bytes_of_spawn_join("loom", "none");
	uint64_t supervised = bytes_of_spawn_join("loom", "supervised");
	uint64_t async = bytes_of_spawn_join("loom", "async");

	cr_expect_eq(ce, 0, "ce: a spawn/join allocates nothing (%lu bytes)", (unsigned long)ce);
	cr_expect_eq(none, 0, "loom: a spawn/join allocates nothing (%lu bytes)",
		     (unsigned long)none);
	cr_expect_geq(supervised, NSPAWN * sizeof(void *), "supervised: a record per fork (%lu)",
		      (unsigned long)supervised);
	cr_expect_gt(async, supervised, "async: and a promise per fork (%lu against %lu)",
		     (unsigned long)async, (unsigned long)supervised);
	cr_log_info("bytes per spawn/join: ce %.1f, loom %.1f, ox %.1f, gears %.1f",
		    (double)ce / NSPAWN, (double)none / NSPAWN, (double)supervised / NSPAWN,
		    (double)async / NSPAWN);
}
