/*
 * Errors (runtime/error.c): results as values, raising and catching in tasks and in
 * threads, nested handlers and rethrow, unwinding several frames, handlers that stay
 * with their task across yields on 2 workers and never reach another task, stack
 * traces that name the raising function and end at the fiber's entry, and the STACKCAP
 * phase while a trace is captured.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "runtime/phase.h"
#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

/* Run fn(arg) as one task on a fresh scheduler of `workers` workers. */
static uint64_t in_task(unsigned workers, rt_fn fn, void *arg)
{
	struct rt_sched *s = rt_test_start(NULL, workers);
	uint64_t r = rt_join(rt_submit(s, fn, arg));

	rt_sched_free(s);
	return r;
}

/* ---- raise and catch ------------------------------------------------------------------ */

static uint64_t raise_code(void *arg)
{
	rt_raise(rt_error_new((int)(uintptr_t)arg, "boom", false));
}

static uint64_t return_arg(void *arg)
{
	return (uint64_t)(uintptr_t)arg;
}

/* The checks of raise_and_catch, as a task body (0: all held) and from a thread. */
static uint64_t raise_and_catch(void *unused)
{
	struct rt_result r = rt_try(raise_code, (void *)42);
	uint64_t bad = 0;

	bad |= r.ok || !r.err;
	if (r.err) {
		bad |= (rt_error_code(r.err) != 42) << 1;
		bad |= (strcmp(rt_error_message(r.err), "boom") != 0) << 2;
		rt_error_free(r.err);
	}
	r = rt_try(return_arg, (void *)7);
	bad |= (!r.ok || r.value != 7 || r.err) << 3;
	return bad;
}

Test(error, raise_and_catch_in_a_thread)
{
	cr_expect_eq(raise_and_catch(NULL), 0);
}

Test(error, raise_and_catch_in_a_task)
{
	cr_expect_eq(in_task(1, raise_and_catch, NULL), 0);
}

/* ---- nesting and rethrow -------------------------------------------------------------- */

struct nest {
	int inner_code; /* what the inner handler caught */
	struct rt_error *inner_err;
	bool after_inner; /* the outer body went on after the inner try */
};

static uint64_t inner_then_raise(void *arg)
{
	struct nest *n = arg;
	struct rt_result r = rt_try(raise_code, (void *)1);

	n->inner_code = r.ok ? -1 : rt_error_code(r.err);
	rt_error_free(r.err);
	n->after_inner = true;
	rt_raise(rt_error_new(2, "outer", false)); /* the inner handler is gone: goes out */
}

static uint64_t nested_handlers(void *unused)
{
	struct nest n = { 0 };
	struct rt_result r = rt_try(inner_then_raise, &n);

	if (n.inner_code != 1 || !n.after_inner || r.ok || rt_error_code(r.err) != 2)
		return 1;
	rt_error_free(r.err);
	return 0;
}

Test(error, nested_handlers_catch_innermost_first)
{
	cr_expect_eq(nested_handlers(NULL), 0);
	cr_expect_eq(in_task(1, nested_handlers, NULL), 0);
}

static uint64_t catch_and_rethrow(void *arg)
{
	struct nest *n = arg;
	struct rt_result r = rt_try(raise_code, (void *)9);

	n->inner_err = r.err;
	rt_raise(r.err); /* the same object, to the next handler out */
}

static uint64_t rethrow(void *unused)
{
	struct nest n = { 0 };
	struct rt_result r = rt_try(catch_and_rethrow, &n);
	uint64_t bad = r.ok || r.err != n.inner_err || rt_error_code(r.err) != 9;

	rt_error_free(r.err);
	return bad;
}

Test(error, rethrow_reaches_the_next_handler_with_the_same_object)
{
	cr_expect_eq(rethrow(NULL), 0);
	cr_expect_eq(in_task(1, rethrow, NULL), 0);
}

static uint64_t unwrap_ok_then_err(void *unused)
{
	uint64_t v = rt_result_unwrap(rt_result_ok(5));

	rt_result_unwrap(rt_result_err(rt_error_new((int)v, "unwrapped", false)));
	return 0; /* not reached */
}

Test(error, unwrap_returns_a_value_or_raises_the_error)
{
	struct rt_result r = rt_try(unwrap_ok_then_err, NULL);

	cr_assert_not(r.ok);
	cr_expect_eq(rt_error_code(r.err), 5);
	cr_expect_str_eq(rt_error_message(r.err), "unwrapped");
	rt_error_free(r.err);
}

static uint64_t raise_null(void *unused)
{
	rt_raise(NULL);
}

Test(error, raising_null_raises_the_shared_out_of_memory_error)
{
	struct rt_result r = rt_try(raise_null, NULL);

	cr_assert_not(r.ok);
	cr_expect_eq(r.err, rt_error_oom());
	cr_expect_eq(rt_error_code(r.err), ENOMEM);
	rt_error_free(r.err); /* leaves the shared one alone */
	cr_expect_eq(rt_error_code(rt_error_oom()), ENOMEM);
	cr_expect_eq(rt_result_err(NULL).err, rt_error_oom());
	rt_error_free(NULL);
}

static uint64_t raise_notrace(void *unused)
{
	rt_raise_notrace(11, NULL);
}

Test(error, raise_notrace_carries_code_and_no_frames)
{
	struct rt_result r = rt_try(raise_notrace, NULL);
	unsigned n = 99;

	cr_assert_not(r.ok);
	cr_expect_eq(rt_error_code(r.err), 11);
	cr_expect_str_eq(rt_error_message(r.err), "");
	rt_error_frames(r.err, &n);
	cr_expect_eq(n, 0);
	rt_error_free(r.err);
}

/* ---- unwinding several frames ---------------------------------------------------------- */

static int frames_entered;

__attribute__((noinline)) static uint64_t descend(uint64_t depth)
{
	volatile char pad[64]; /* real frames, not a loop */

	pad[0] = (char)depth;
	if (frames_entered++ && depth == 0)
		rt_raise(rt_error_new(77, "bottom", false));
	if (depth == 0)
		return 0; /* only on the first frame: depth 0 from the start */
	return descend(depth - 1) + (uint64_t)pad[0];
}

static uint64_t descend_task(void *arg)
{
	return descend((uint64_t)(uintptr_t)arg);
}

static uint64_t unwind_then_continue(void *unused)
{
	uint64_t keep = 0x1234; /* a live local of the frame that set the handler */
	struct rt_result r;

	frames_entered = 0;
	r = rt_try(descend_task, (void *)20);
	if (r.ok || rt_error_code(r.err) != 77 || frames_entered != 21 || keep != 0x1234)
		return 1;
	rt_error_free(r.err);
	/* the chain is back to empty: a second try works the same */
	r = rt_try(descend_task, (void *)3);
	if (r.ok || rt_error_code(r.err) != 77)
		return 2;
	rt_error_free(r.err);
	return 0;
}

Test(error, a_raise_unwinds_several_frames_to_the_handler)
{
	cr_expect_eq(unwind_then_continue(NULL), 0);
	cr_expect_eq(in_task(2, unwind_then_continue, NULL), 0);
}

/* ---- handlers stay with their task ------------------------------------------------------ */

#define ISOLATE_TASKS 16

static int migrated; /* tasks that raised on another worker than the one they set up on */

static uint64_t yield_until_moved_then_raise(void *arg)
{
	uintptr_t code = (uintptr_t)arg;
	unsigned first = rt_worker_index();

	/* other tasks set and pop their own handlers on the same workers meanwhile */
	for (int i = 0; i < 20000 && rt_worker_index() == first; i++)
		rt_yield();
	for (int i = 0; i < 5; i++)
		rt_yield();
	if (rt_worker_index() != first)
		__atomic_fetch_add(&migrated, 1, __ATOMIC_RELAXED);
	rt_raise(rt_error_new((int)code, "mine", false));
}

static uint64_t isolated_task(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	struct rt_result outer, inner;

	outer = rt_try(raise_code, (void *)(1000 + id)); /* a handler set and popped at once */
	if (outer.ok || rt_error_code(outer.err) != (int)(1000 + id))
		return 1;
	rt_error_free(outer.err);
	inner = rt_try(yield_until_moved_then_raise, (void *)id);
	if (inner.ok || rt_error_code(inner.err) != (int)id)
		return 2;
	rt_error_free(inner.err);
	return 0;
}

Test(error, handlers_stay_with_their_task_across_yields_on_2_workers, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct rt_task *t[ISOLATE_TASKS];

	migrated = 0;
	for (uintptr_t i = 0; i < ISOLATE_TASKS; i++)
		t[i] = rt_submit(s, isolated_task, (void *)i);
	for (uintptr_t i = 0; i < ISOLATE_TASKS; i++)
		cr_expect_eq(rt_join(t[i]), 0, "task %lu caught another's error", (unsigned long)i);
	/* at least one task raised on another worker than the one that set its handler */
	cr_expect_gt(migrated, 0, "no task moved between workers: the test proved less");
	rt_sched_free(s);
}

static void *thread_catches_its_own(void *arg)
{
	uintptr_t id = (uintptr_t)arg;

	for (int i = 0; i < 2000; i++) {
		struct rt_result r = rt_try(raise_code, (void *)(id * 10000 + (uintptr_t)i));

		if (r.ok || rt_error_code(r.err) != (int)(id * 10000 + (uintptr_t)i))
			return (void *)1;
		rt_error_free(r.err);
	}
	return NULL;
}

Test(error, threads_catch_their_own_errors_concurrently)
{
	pthread_t th[4];
	void *bad;

	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_catches_its_own, (void *)(i + 1));
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], &bad);
		cr_expect_null(bad);
	}
}

/* A child task's raise never reaches its parent's handler: it has none of its own, so
 * the process aborts, naming the error. */
static uint64_t spawn_raiser(void *unused)
{
	return rt_join(rt_spawn(raise_code, (void *)3));
}

static uint64_t parent_with_handler(void *unused)
{
	struct rt_result r = rt_try(spawn_raiser, NULL);

	return r.ok; /* not reached */
}

Test(error, a_child_raise_does_not_reach_the_parents_handler, .signal = SIGABRT)
{
	in_task(2, parent_with_handler, NULL);
}

Test(error, a_raise_without_handler_aborts_in_a_thread, .signal = SIGABRT)
{
	raise_code((void *)1);
}

/* ---- stack traces ------------------------------------------------------------------------ */

/* The phase word, found as the on-CPU probe finds it: the thread pointer plus the
 * offset of the thread-local word. */
static uint64_t read_phase(void)
{
	char *tp;

	/* as the probe reads it: the thread's word at its offset from the thread pointer */
	__asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
	return __atomic_load_n((uint64_t *)(tp + rt_phase_tls_offset()), __ATOMIC_RELAXED);
}

/* Interposes glibc's backtrace() for this test binary: notes the phase word the
 * capture runs under, then fills buf exactly as glibc would for its caller (this
 * function's own frame left out). */
static uint64_t phase_in_backtrace;

int backtrace(void **buf, int size)
{
	static int (*real)(void **, int);
	void *frames[RT_ERROR_MAX_FRAMES + 2];
	int n;

	if (!real)
		real = (int (*)(void **, int))dlsym(RTLD_NEXT, "backtrace");
	phase_in_backtrace = read_phase();
	if (size > RT_ERROR_MAX_FRAMES + 1)
		size = RT_ERROR_MAX_FRAMES + 1;
	n = real(frames, size + 1);
	if (n <= 1)
		return 0;
	memcpy(buf, frames + 1, (size_t)(n - 1) * sizeof(void *));
	return n - 1;
}

struct trace_seen {
	struct rt_error *err;
	uint64_t phase_before, phase_after;
};

/* Non-static, so that it has a symbol of its own to be named by. */
__attribute__((noinline)) void test_error_raiser(struct trace_seen *seen)
{
	seen->phase_before = read_phase();
	seen->err = rt_error_new(5, "traced", true);
	seen->phase_after = read_phase(); /* after the call: it is not a tail call */
}

__attribute__((noinline)) uint64_t test_error_raiser_caller(void *arg)
{
	test_error_raiser(arg);
	__asm__ volatile("" ::: "memory"); /* keep this frame: no tail call */
	return 0;
}

static void name_of(struct an_usyms *u, void *ret, char *buf, size_t len)
{
	/* a return address minus one lies in the call, inside the calling function */
	an_usyms_name(u, (uint64_t)(uintptr_t)ret - 1, buf, len);
}

static struct an_usyms *self_symbols(struct an_symcache **cache)
{
	struct an_procmaps *maps = an_procmaps_read(getpid());
	struct an_usyms *u;

	cr_assert_not_null(maps, "an_procmaps_read: %s", strerror(errno));
	*cache = an_symcache_new();
	cr_assert_not_null(*cache);
	u = an_usyms_new(*cache, maps);
	cr_assert_not_null(u, "an_usyms_new: %s", strerror(errno));
	return u;
}

Test(error, trace_in_a_task_names_the_raiser_and_ends_at_the_fiber_entry)
{
	struct trace_seen seen = { 0 };
	struct an_symcache *cache;
	struct an_usyms *u;
	void *const *frames;
	unsigned n;
	char name[256];

	in_task(1, test_error_raiser_caller, &seen);
	cr_assert_not_null(seen.err);
	frames = rt_error_frames(seen.err, &n);
	/* raiser <- caller <- rt__task_main <- rt__fiber_start, and nothing further */
	cr_assert_geq(n, 3, "%u frames", n);
	cr_expect_leq(n, 5, "%u frames: the unwind went past the fiber's entry", n);
	u = self_symbols(&cache);
	name_of(u, frames[0], name, sizeof(name));
	cr_expect_str_eq(name, "test_error_raiser");
	name_of(u, frames[1], name, sizeof(name));
	cr_expect_str_eq(name, "test_error_raiser_caller");
	name_of(u, frames[n - 1], name, sizeof(name));
	cr_expect_str_eq(name, "rt__fiber_start", "the last frame is %s", name);
	an_usyms_free(u);
	an_symcache_free(cache);
	rt_error_free(seen.err);
}

Test(error, trace_in_a_thread_names_the_raiser)
{
	struct trace_seen seen = { 0 };
	struct an_symcache *cache;
	struct an_usyms *u;
	void *const *frames;
	unsigned n;
	char name[256];

	test_error_raiser_caller(&seen);
	cr_assert_not_null(seen.err);
	frames = rt_error_frames(seen.err, &n);
	cr_assert_geq(n, 2);
	u = self_symbols(&cache);
	name_of(u, frames[0], name, sizeof(name));
	cr_expect_str_eq(name, "test_error_raiser");
	name_of(u, frames[1], name, sizeof(name));
	cr_expect_str_eq(name, "test_error_raiser_caller");
	an_usyms_free(u);
	an_symcache_free(cache);
	rt_error_free(seen.err);
	/* a thread that is not the runtime's says none, and no worker, until it enters the
	 * runtime's code: its capture is a capture all the same */
	cr_expect_eq(seen.phase_before, RT_PHASE_WORD(RT_PHASE_NONE, RT_PHASE_NO_WORKER, 0));
	cr_expect_eq(phase_in_backtrace, RT_PHASE_WORD(RT_PHASE_STACKCAP, RT_PHASE_NO_WORKER, 0));
	cr_expect_eq(seen.phase_after, seen.phase_before);
}

__attribute__((noinline)) static uint64_t deep_then_trace(uint64_t depth)
{
	volatile char pad[32];
	uint64_t n;

	pad[0] = 1;
	if (depth) {
		n = deep_then_trace(depth - 1);
	} else {
		struct rt_error *e = rt_error_new(1, "deep", true);
		unsigned frames;

		rt_error_frames(e, &frames);
		rt_error_free(e);
		n = frames;
	}
	return n + (uint64_t)pad[0] - 1;
}

static uint64_t deep_task(void *arg)
{
	return deep_then_trace(200);
}

Test(error, a_deep_stack_keeps_the_innermost_frames)
{
	cr_expect_eq(in_task(1, deep_task, NULL), RT_ERROR_MAX_FRAMES);
}

static uint64_t no_trace_task(void *arg)
{
	struct rt_error *e = rt_error_new(3, "plain", false);
	unsigned n = 99;

	rt_error_frames(e, &n);
	rt_error_free(e);
	return n + (phase_in_backtrace != 0) * 1000;
}

Test(error, no_trace_unless_asked)
{
	phase_in_backtrace = 0;
	cr_expect_eq(in_task(1, no_trace_task, NULL), 0);
}

struct counted {
	struct trace_seen seen;
	struct rt_worker_stats before, after;
	struct rt_sched *s;
};

static uint64_t counted_raiser(void *arg)
{
	struct counted *c = arg;

	rt_sched_stats_total(c->s, &c->before);
	test_error_raiser(&c->seen);
	rt_sched_stats_total(c->s, &c->after);
	return 0;
}

Test(error, capture_runs_in_the_stackcap_phase_and_is_counted)
{
	struct counted c = { .s = rt_test_start(NULL, 1) };

	rt_join(rt_submit(c.s, counted_raiser, &c));
	rt_sched_free(c.s);
	cr_assert_not_null(c.seen.err);
	cr_expect_eq(RT_PHASE_KIND(phase_in_backtrace), RT_PHASE_STACKCAP, "phase %u",
		     RT_PHASE_KIND(phase_in_backtrace));
	cr_expect_eq(RT_PHASE_WORKER(phase_in_backtrace), 0);
	/* the task stays named while the worker captures its stack */
	cr_expect_eq(RT_PHASE_TASK(phase_in_backtrace), RT_PHASE_TASK(c.seen.phase_before));
	cr_expect_neq(RT_PHASE_TASK(phase_in_backtrace), 0);
	cr_expect_eq(RT_PHASE_KIND(c.seen.phase_before), RT_PHASE_RUN);
	cr_expect_eq(c.seen.phase_after, c.seen.phase_before, "the phase is restored");
	/* one counted allocation, holding at least the frames */
	cr_expect_eq(c.after.alloc_calls - c.before.alloc_calls, 1);
	cr_expect_geq(c.after.alloc_bytes - c.before.alloc_bytes, 3 * sizeof(void *));
	rt_error_free(c.seen.err);
}
