/*
 * The effect layer (runtime/effect/): each constructor, the map and bind laws on small
 * cases, errors raised by fx_raise and by callbacks and caught by fx_attempt, async
 * boundaries on a 2-worker scheduler, the two interpreters against a reference
 * evaluator on random programs, and allocation: every run frees what it allocated,
 * the stack interpreter's bytes grow linearly with a chain's depth and the naive one's
 * quadratically (counted bytes, not time); and a run past its time slice is preempted
 * between steps.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "runtime/effect/effect.h"
#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

static const enum fx_interp interps[] = { FX_STACK, FX_NAIVE };
static const char *const interp_names[] = { "stack", "naive" };

/* Run io (consumed) and expect value v. */
static void expect_value(struct fx_io *io, enum fx_interp how, uint64_t v)
{
	struct rt_result r = fx_run(io, how);

	cr_expect(r.ok, "%s: failed with %d (%s)", interp_names[how],
		  r.ok ? 0 : rt_error_code(r.err), r.ok ? "" : rt_error_message(r.err));
	if (r.ok)
		cr_expect_eq(r.value, v, "%s: %lu, expected %lu", interp_names[how],
			     (unsigned long)r.value, (unsigned long)v);
	else
		rt_error_free(r.err);
}

/* Run io (consumed), expect a failure with code; the error's frame count. */
static unsigned expect_error(struct fx_io *io, enum fx_interp how, int code)
{
	struct rt_result r = fx_run(io, how);
	unsigned n = 0;

	cr_assert_not(r.ok, "%s: succeeded with %lu", interp_names[how], (unsigned long)r.value);
	cr_expect_eq(rt_error_code(r.err), code, "%s: code %d, expected %d", interp_names[how],
		     rt_error_code(r.err), code);
	rt_error_frames(r.err, &n);
	rt_error_free(r.err);
	return n;
}

/* ---- callbacks ------------------------------------------------------------------------ */

static int effects; /* delay thunks run */

static uint64_t thunk(void *env)
{
	effects++;
	return (uint64_t)(uintptr_t)env;
}

static uint64_t succ(void *env)
{
	return (uint64_t)(uintptr_t)env + 1;
}

static uint64_t add(uint64_t x, void *env)
{
	return x + (uint64_t)(uintptr_t)env;
}

static uint64_t times3(uint64_t x, void *env)
{
	return x * 3;
}

static uint64_t plus_one(uint64_t x, void *env)
{
	return x + 1;
}

static uint64_t times3_plus_one(uint64_t x, void *env)
{
	return x * 3 + 1;
}

static uint64_t identity(uint64_t x, void *env)
{
	return x;
}

static struct fx_io *pure_k(uint64_t x, void *env)
{
	return fx_pure(x);
}

static struct fx_io *delay_succ_k(uint64_t x, void *env)
{
	return fx_delay(succ, (void *)(uintptr_t)x);
}

static struct fx_io *double_k(uint64_t x, void *env)
{
	return fx_pure(2 * x);
}

static struct fx_io *then_double_k(uint64_t x, void *env)
{
	return fx_flat_map(delay_succ_k(x, NULL), double_k, NULL);
}

static uint64_t raise_in_map(uint64_t x, void *env)
{
	rt_raise(rt_error_new((int)(uintptr_t)env, "from a map function", false));
}

static int maps_after_raise; /* calls of a map that a failure must skip */

static uint64_t count_map(uint64_t x, void *env)
{
	maps_after_raise++;
	return x;
}

/* ok: value + 1000; failure: code + 2000 */
static struct fx_io *recover_k(struct rt_result r, void *env)
{
	uint64_t v = r.ok ? r.value + 1000 : (uint64_t)rt_error_code(r.err) + 2000;

	if (!r.ok)
		rt_error_free(r.err);
	return fx_pure(v);
}

static struct fx_io *rethrow_k(struct rt_result r, void *env)
{
	if (!r.ok)
		rt_raise(r.err);
	return fx_pure(r.value);
}

/* ---- constructors ---------------------------------------------------------------------- */

Test(effect, pure_and_delay)
{
	for (int i = 0; i < 2; i++) {
		struct fx_io *d;

		expect_value(fx_pure(42), interps[i], 42);
		effects = 0;
		d = fx_delay(thunk, (void *)7);
		cr_expect_eq(effects, 0, "building a delay runs nothing");
		fx_ref(d);
		expect_value(d, interps[i], 7);
		cr_expect_eq(effects, 1);
		expect_value(d, interps[i], 7); /* a value runs again, side effect and all */
		cr_expect_eq(effects, 2);
	}
}

Test(effect, map_and_flat_map)
{
	for (int i = 0; i < 2; i++) {
		enum fx_interp how = interps[i];

		expect_value(fx_map(fx_pure(4), times3, NULL), how, 12);
		expect_value(fx_map(fx_map(fx_pure(4), times3, NULL), plus_one, NULL), how, 13);
		expect_value(fx_flat_map(fx_pure(4), delay_succ_k, NULL), how, 5);
		expect_value(fx_flat_map(fx_delay(succ, (void *)1), then_double_k, NULL), how, 6);
	}
}

Test(effect, raise_fails_the_run_with_its_code)
{
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(expect_error(fx_raise(12, "no", false), interps[i], 12), 0);
		/* traced: the interpreter's own stack, captured at the raise */
		cr_expect_gt(expect_error(fx_raise(13, "yes", true), interps[i], 13), 0);
		maps_after_raise = 0;
		expect_error(fx_flat_map(fx_map(fx_raise(14, "x", false), count_map, NULL),
					 delay_succ_k, NULL),
			     interps[i], 14);
		cr_expect_eq(maps_after_raise, 0, "a failure skips maps and binds");
	}
}

Test(effect, attempt_hands_over_success_or_failure)
{
	for (int i = 0; i < 2; i++) {
		expect_value(fx_attempt(fx_pure(5), recover_k, NULL), interps[i], 1005);
		expect_value(fx_attempt(fx_raise(6, "x", false), recover_k, NULL), interps[i],
			     2006);
		/* an attempt that raises again reaches the next attempt out */
		expect_value(fx_attempt(fx_attempt(fx_raise(7, "x", false), rethrow_k, NULL),
					recover_k, NULL),
			     interps[i], 2007);
		expect_error(fx_attempt(fx_raise(8, "x", false), rethrow_k, NULL), interps[i], 8);
	}
}

Test(effect, attempt_catches_a_raise_from_a_callback_inside_a_chain)
{
	for (int i = 0; i < 2; i++) {
		struct fx_io *io = fx_delay(succ, (void *)0); /* 1 */

		io = fx_flat_map(io, delay_succ_k, NULL);     /* 2 */
		io = fx_map(io, raise_in_map, (void *)31);    /* raises 31 */
		io = fx_map(io, count_map, NULL);             /* skipped */
		io = fx_flat_map(io, delay_succ_k, NULL);     /* skipped */
		io = fx_attempt(io, recover_k, NULL);         /* 2031 */
		io = fx_flat_map(io, delay_succ_k, NULL);     /* 2032: the chain goes on */
		maps_after_raise = 0;
		expect_value(io, interps[i], 2032);
		cr_expect_eq(maps_after_raise, 0);
		/* with no attempt, the callback's error is the run's */
		expect_error(fx_map(fx_pure(1), raise_in_map, (void *)32), interps[i], 32);
	}
}

Test(effect, null_from_a_failed_constructor_fails_the_run)
{
	struct rt_result r;

	errno = 0;
	cr_expect_null(fx_map(NULL, times3, NULL));
	cr_expect_eq(errno, ENOMEM);
	cr_expect_null(fx_async(NULL));
	r = fx_run(NULL, FX_STACK);
	cr_assert_not(r.ok);
	cr_expect_eq(rt_error_code(r.err), ENOMEM);
	r = fx_run(fx_pure(1), (enum fx_interp)7);
	cr_assert_not(r.ok);
	cr_expect_eq(rt_error_code(r.err), EINVAL);
	rt_error_free(r.err);
	fx_free(NULL);
	cr_expect_null(fx_ref(NULL));
}

/* ---- laws ------------------------------------------------------------------------------ */

/* The small programs the laws are checked on; m(i) builds a fresh one. */
static struct fx_io *m(int i)
{
	switch (i) {
	case 0:
		return fx_pure(3);
	case 1:
		return fx_delay(succ, (void *)10);
	case 2:
		return fx_flat_map(fx_pure(2), delay_succ_k, NULL);
	default:
		return fx_async(fx_map(fx_pure(5), times3, NULL));
	}
}

static uint64_t value_of(struct fx_io *io, enum fx_interp how)
{
	struct rt_result r = fx_run(io, how);

	cr_assert(r.ok);
	return r.value;
}

Test(effect, functor_laws)
{
	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < 4; i++) {
			uint64_t plain = value_of(m(i), interps[h]);

			cr_expect_eq(value_of(fx_map(m(i), identity, NULL), interps[h]), plain);
			cr_expect_eq(value_of(fx_map(fx_map(m(i), times3, NULL), plus_one, NULL),
					      interps[h]),
				     value_of(fx_map(m(i), times3_plus_one, NULL), interps[h]));
		}
	}
}

Test(effect, monad_laws)
{
	for (int h = 0; h < 2; h++) {
		enum fx_interp how = interps[h];

		for (uint64_t a = 0; a < 4; a++) /* left identity: pure(a) >>= k == k(a) */
			cr_expect_eq(value_of(fx_flat_map(fx_pure(a), delay_succ_k, NULL), how),
				     value_of(delay_succ_k(a, NULL), how));
		for (int i = 0; i < 4; i++) {
			uint64_t plain = value_of(m(i), how);

			/* right identity: m >>= pure == m */
			cr_expect_eq(value_of(fx_flat_map(m(i), pure_k, NULL), how), plain);
			/* associativity: (m >>= f) >>= g == m >>= (x -> f(x) >>= g) */
			cr_expect_eq(value_of(fx_flat_map(fx_flat_map(m(i), delay_succ_k, NULL),
							  double_k, NULL),
					      how),
				     value_of(fx_flat_map(m(i), then_double_k, NULL), how));
			/* map is bind and pure */
			cr_expect_eq(value_of(fx_map(m(i), add, (void *)9), how), plain + 9);
		}
	}
}

/* ---- async boundaries --------------------------------------------------------------------- */

#define ASYNC_DEPTH 300
#define ASYNC_EVERY 10

static struct fx_io *maybe_async_k(uint64_t x, void *env)
{
	struct fx_io *next = fx_delay(succ, (void *)(uintptr_t)x);

	return x % ASYNC_EVERY == 0 ? fx_async(next) : next;
}

static uint64_t async_chain(void *arg)
{
	struct fx_io *io = fx_async(fx_pure(0));
	struct rt_result r;

	for (int i = 0; i < ASYNC_DEPTH; i++)
		io = fx_flat_map(io, maybe_async_k, NULL);
	r = fx_run(io, (enum fx_interp)(uintptr_t)arg);
	if (!r.ok) {
		rt_error_free(r.err);
		return UINT64_MAX;
	}
	return r.value;
}

Test(effect, async_boundaries_yield_on_a_2_worker_scheduler, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct rt_worker_stats before, after;
	struct rt_task *t[8];

	rt_sched_stats_total(s, &before);
	for (uintptr_t i = 0; i < 8; i++)
		t[i] = rt_submit(s, async_chain, (void *)(i % 2));
	for (int i = 0; i < 8; i++)
		cr_expect_eq(rt_join(t[i]), ASYNC_DEPTH, "task %d", i);
	rt_sched_stats_total(s, &after);
	/* every boundary switched its task out and back in */
	cr_expect_geq(after.tasks_run - before.tasks_run,
		      8 * (1 + ASYNC_DEPTH / ASYNC_EVERY), "tasks run %lu",
		      (unsigned long)(after.tasks_run - before.tasks_run));
	cr_expect_eq(after.alloc_calls - before.alloc_calls, after.frees - before.frees,
		     "every allocation freed");
	rt_sched_free(s);
}

/* One value shared by tasks that run it at the same time (atomic reference counts). */
static uint64_t run_shared(void *arg)
{
	uint64_t sum = 0;

	for (int i = 0; i < 50; i++) {
		struct rt_result r = fx_run(fx_ref(arg), (enum fx_interp)(i % 2));

		if (!r.ok)
			return UINT64_MAX;
		sum += r.value;
	}
	return sum;
}

Test(effect, a_shared_value_runs_in_several_tasks_at_once, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct rt_worker_stats before, after;
	struct rt_task *t[8];
	struct fx_io *io = fx_async(fx_pure(0));

	for (int i = 0; i < 100; i++)
		io = fx_flat_map(io, maybe_async_k, NULL);
	rt_sched_stats_total(s, &before);
	for (int i = 0; i < 8; i++)
		t[i] = rt_submit(s, run_shared, io);
	for (int i = 0; i < 8; i++)
		cr_expect_eq(rt_join(t[i]), 50 * 100);
	rt_sched_stats_total(s, &after);
	/* the tasks allocated only what they freed: the shared value was never taken apart */
	cr_expect_eq(after.alloc_calls - before.alloc_calls, after.frees - before.frees);
	expect_value(io, FX_STACK, 100);
	rt_sched_free(s);
}

/* ---- random programs: both interpreters against a reference evaluator -------------------- */

enum pkind { P_PURE, P_DELAY, P_MAP, P_MAP_RAISE, P_BIND, P_ATTEMPT, P_RAISE, P_ASYNC, P_KINDS };

struct prog {
	enum pkind kind;
	uint64_t v;
	const struct prog *a;    /* what it goes on from */
	const struct prog *body; /* P_BIND: what its continuation runs */
};

struct outcome {
	bool ok;
	uint64_t value;
	int code;
};

#define POOL 8192
static struct prog pool[POOL];
static size_t pool_used;
static uint64_t rng;

static uint64_t next_rand(void)
{
	rng ^= rng << 13; /* xorshift64 */
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const struct prog *gen(int depth)
{
	struct prog *p = &pool[pool_used++];

	cr_assert_lt(pool_used, POOL);
	p->kind = depth ? (enum pkind)(next_rand() % P_KINDS) : (enum pkind)(next_rand() % 2);
	p->v = next_rand() % 1000;
	p->a = p->body = NULL;
	switch (p->kind) {
	case P_PURE:
	case P_DELAY:
	case P_RAISE:
		break;
	case P_BIND:
		p->body = gen(depth - 1);
		/* fall through */
	default:
		p->a = gen(depth - 1);
	}
	return p;
}

/* ATTEMPT's continuation, by v % 3: raise the same error again, recover to a value,
 * or fail with a new code. */
static struct outcome reference(const struct prog *p)
{
	struct outcome o, b;

	switch (p->kind) {
	case P_PURE:
		return (struct outcome){ true, p->v, 0 };
	case P_DELAY:
		effects++;
		return (struct outcome){ true, p->v, 0 };
	case P_RAISE:
		return (struct outcome){ false, 0, (int)p->v };
	case P_ASYNC:
		return reference(p->a);
	case P_MAP:
		o = reference(p->a);
		o.value = o.value * 3 + p->v;
		return o;
	case P_MAP_RAISE:
		o = reference(p->a);
		if (o.ok && o.value % 2)
			return (struct outcome){ false, 0, (int)p->v };
		o.value /= 2;
		return o;
	case P_BIND:
		o = reference(p->a);
		if (!o.ok)
			return o;
		b = reference(p->body);
		b.value += o.value;
		return b;
	case P_ATTEMPT:
		o = reference(p->a);
		if (o.ok)
			return (struct outcome){ true, o.value + 1, 0 };
		if (p->v % 3 == 0)
			return o;
		if (p->v % 3 == 1)
			return (struct outcome){ true, (uint64_t)o.code + 100000, 0 };
		return (struct outcome){ false, 0, o.code + 1 };
	case P_KINDS:
		break;
	}
	cr_assert_fail("kind %d", p->kind);
	return (struct outcome){ 0 };
}

static struct fx_io *build(const struct prog *p);

static uint64_t prog_thunk(void *env)
{
	effects++;
	return ((const struct prog *)env)->v;
}

static uint64_t prog_map(uint64_t x, void *env)
{
	return x * 3 + ((const struct prog *)env)->v;
}

static uint64_t prog_map_raise(uint64_t x, void *env)
{
	if (x % 2)
		rt_raise(rt_error_new((int)((const struct prog *)env)->v, "odd", false));
	return x / 2;
}

static struct fx_io *prog_bind(uint64_t x, void *env)
{
	return fx_map(build(((const struct prog *)env)->body), add, (void *)(uintptr_t)x);
}

static struct fx_io *prog_attempt(struct rt_result r, void *env)
{
	const struct prog *p = env;
	int code;

	if (r.ok)
		return fx_pure(r.value + 1);
	if (p->v % 3 == 0)
		rt_raise(r.err);
	code = rt_error_code(r.err);
	rt_error_free(r.err);
	if (p->v % 3 == 1)
		return fx_pure((uint64_t)code + 100000);
	return fx_raise(code + 1, "again", false);
}

static struct fx_io *build(const struct prog *p)
{
	void *env = (void *)p;

	switch (p->kind) {
	case P_PURE:
		return fx_pure(p->v);
	case P_DELAY:
		return fx_delay(prog_thunk, env);
	case P_RAISE:
		return fx_raise((int)p->v, "random", false);
	case P_ASYNC:
		return fx_async(build(p->a));
	case P_MAP:
		return fx_map(build(p->a), prog_map, env);
	case P_MAP_RAISE:
		return fx_map(build(p->a), prog_map_raise, env);
	case P_BIND:
		return fx_flat_map(build(p->a), prog_bind, env);
	case P_ATTEMPT:
		return fx_attempt(build(p->a), prog_attempt, env);
	case P_KINDS:
		break;
	}
	return NULL;
}

/* 0 when the run matches the reference, else a code naming what differed */
static uint64_t compare(struct fx_io *io, enum fx_interp how, struct outcome want, int want_fx)
{
	struct rt_result r;

	effects = 0;
	r = fx_run(io, how);
	if (effects != want_fx)
		return 1;
	if (r.ok != want.ok)
		return 2;
	if (r.ok)
		return r.value == want.value ? 0 : 3;
	if (rt_error_code(r.err) != want.code)
		return 4;
	rt_error_free(r.err);
	return 0;
}

#define PROGRAMS 600

static uint64_t random_programs(void *arg)
{
	struct rt_sched *s = arg;
	struct rt_worker_stats before, after;
	int failures = 0;

	rt_sched_stats_total(s, &before);
	rng = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < PROGRAMS; i++) {
		const struct prog *p;
		struct outcome want;
		struct fx_io *shared;
		int want_fx;
		uint64_t bad;

		pool_used = 0;
		p = gen(1 + i % 7);
		effects = 0;
		want = reference(p);
		want_fx = effects;

		/* a shared value (not taken apart), then the same value held alone, then fresh */
		shared = fx_ref(build(p));
		bad = compare(shared, FX_STACK, want, want_fx);
		bad = bad * 10 + compare(shared, FX_NAIVE, want, want_fx);
		bad = bad * 10 + compare(build(p), FX_NAIVE, want, want_fx);
		bad = bad * 10 + compare(build(p), FX_STACK, want, want_fx);
		if (bad) {
			cr_log_error("program %d (depth %d, %zu nodes): mismatch %04lu (digits: "
				     "shared stack, shared naive, fresh naive, fresh stack)",
				     i, 1 + i % 7, pool_used, (unsigned long)bad);
			failures++;
		}
	}
	rt_sched_stats_total(s, &after);
	if (after.alloc_calls - before.alloc_calls != after.frees - before.frees)
		failures += 1000;
	return (uint64_t)failures;
}

Test(effect, both_interpreters_agree_with_the_reference_on_random_programs, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);

	cr_expect_eq(rt_join(rt_submit(s, random_programs, s)), 0,
		     "mismatches (1000 or more: allocations not freed)");
	rt_sched_free(s);
}

/* ---- allocation ----------------------------------------------------------------------------- */

struct chain_cost {
	struct rt_sched *s;
	enum fx_interp how;
	long depth;
	uint64_t value, bytes, calls, frees;
};

/* The bind-chain workload's chain: delay(0) then depth binds, each k(i) = delay(i + 1). */
static uint64_t chain_cost_task(void *arg)
{
	struct chain_cost *c = arg;
	struct rt_worker_stats before, after;
	struct fx_io *io;
	struct rt_result r;

	rt_sched_stats_total(c->s, &before);
	io = fx_delay(thunk, NULL); /* 0 */
	for (long i = 0; i < c->depth; i++)
		io = fx_flat_map(io, delay_succ_k, NULL);
	r = fx_run(io, c->how);
	rt_sched_stats_total(c->s, &after);
	c->value = r.ok ? r.value : UINT64_MAX;
	if (!r.ok)
		rt_error_free(r.err);
	c->bytes = after.alloc_bytes - before.alloc_bytes;
	c->calls = after.alloc_calls - before.alloc_calls;
	c->frees = after.frees - before.frees;
	return 0;
}

static struct chain_cost chain_cost(struct rt_sched *s, enum fx_interp how, long depth)
{
	struct chain_cost c = { .s = s, .how = how, .depth = depth };

	rt_join(rt_submit(s, chain_cost_task, &c));
	cr_expect_eq(c.value, (uint64_t)depth, "%s, depth %ld: value %lu", interp_names[how], depth,
		     (unsigned long)c.value);
	cr_expect_eq(c.calls, c.frees, "%s, depth %ld: %lu allocations, %lu frees",
		     interp_names[how], depth, (unsigned long)c.calls, (unsigned long)c.frees);
	return c;
}

Test(effect, stack_interpreter_bytes_grow_linearly_with_depth, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 1);
	struct chain_cost a = chain_cost(s, FX_STACK, 1000), b = chain_cost(s, FX_STACK, 2000);
	double ratio = (double)b.bytes / (double)a.bytes;

	cr_expect_lt(ratio, 2.5, "bytes(2000) / bytes(1000) = %lu / %lu = %.2f",
		     (unsigned long)b.bytes, (unsigned long)a.bytes, ratio);
	cr_expect_gt(ratio, 1.5, "%.2f: does the chain allocate at all?", ratio);
	rt_sched_free(s);
}

Test(effect, naive_interpreter_bytes_grow_quadratically_with_depth, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 1);
	struct chain_cost a = chain_cost(s, FX_NAIVE, 1000), b = chain_cost(s, FX_NAIVE, 2000);
	double ratio = (double)b.bytes / (double)a.bytes;

	cr_expect_gt(ratio, 3.5, "bytes(2000) / bytes(1000) = %lu / %lu = %.2f",
		     (unsigned long)b.bytes, (unsigned long)a.bytes, ratio);
	/* the pending list alone: 8 * n^2 / 2 bytes */
	cr_expect_geq(b.bytes, 8ull * 2000 * 2000 / 2);
	rt_sched_free(s);
}

Test(effect, a_chain_of_depth_100000_runs_and_frees_everything, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 1);

	chain_cost(s, FX_STACK, 100000); /* iterative: no recursion as deep as the chain */
	rt_sched_free(s);
}

struct unrun {
	struct rt_sched *s;
	uint64_t calls, frees;
};

static uint64_t free_unrun(void *arg)
{
	struct unrun *u = arg;
	struct rt_worker_stats before, after;
	struct fx_io *io;

	rt_sched_stats_total(u->s, &before);
	io = fx_pure(0);
	for (int i = 0; i < 200000; i++)
		io = fx_map(io, plus_one, NULL);
	fx_free(io); /* a list, freed in a loop: a recursion would overflow the task's stack */
	rt_sched_stats_total(u->s, &after);
	u->calls = after.alloc_calls - before.alloc_calls;
	u->frees = after.frees - before.frees;
	return 0;
}

Test(effect, freeing_a_deep_value_that_never_ran, .timeout = 60)
{
	struct unrun u = { .s = rt_test_start(NULL, 1) };

	rt_join(rt_submit(u.s, free_unrun, &u));
	cr_expect_geq(u.calls, 200001, "%lu allocations for 200,001 values",
		      (unsigned long)u.calls);
	cr_expect_eq(u.calls, u.frees, "%lu allocations, %lu frees", (unsigned long)u.calls,
		     (unsigned long)u.frees);
	rt_sched_free(u.s);
}

/* ---- preemption -------------------------------------------------------------------------- */

static uint64_t spin_15ms(void *env)
{
	(void)env;
	rt_test_spin_ns(15000000);
	return 1;
}

/* The run goes on, 15 ms a step, until the monitor has seen a step outlast the slice and
 * the interpreter has yielded at the next step: how soon the monitor gets a CPU depends
 * on the machine's load, so the test waits for the preemption, not for a step count. */
struct long_run {
	struct rt_sched *s;
	uint64_t deadline_ns;
};

static uint64_t preemptions_of(struct rt_sched *s)
{
	struct rt_worker_stats st;

	rt_sched_stats_total(s, &st);
	return st.preemptions;
}

static struct fx_io *then_spin(uint64_t x, void *env)
{
	struct long_run *run = env;

	if (preemptions_of(run->s) > 0 || rt_now_ns() > run->deadline_ns)
		return fx_pure(x);
	return fx_flat_map(fx_map(fx_delay(spin_15ms, NULL), add, (void *)(uintptr_t)x),
			   then_spin, run);
}

struct long_run_arg {
	struct long_run run;
	enum fx_interp how;
};

static uint64_t long_steps(void *arg)
{
	struct long_run_arg *a = arg;
	struct rt_result r = fx_run(fx_flat_map(fx_delay(spin_15ms, NULL), then_spin, &a->run),
				    a->how);

	return r.ok ? r.value : UINT64_MAX;
}

Test(effect, a_long_run_is_preempted_between_steps, .timeout = 120)
{
	for (int i = 0; i < 2; i++) {
		struct rt_sched *s = rt_test_start_with("ce", 1, "time_slice_ms", "10", NULL);
		/* a deadline that only a run never preempted reaches */
		struct long_run_arg a = { { s, rt_now_ns() + 40ull * 1000000000 }, interps[i] };
		uint64_t steps = rt_join(rt_submit(s, long_steps, &a));

		cr_expect(steps >= 1 && steps != UINT64_MAX, "%s: %lu steps", interp_names[i],
			  (unsigned long)steps);
		cr_expect_geq(preemptions_of(s), 1, "%s: %lu preemptions in %lu steps",
			      interp_names[i], (unsigned long)preemptions_of(s),
			      (unsigned long)steps);
		rt_sched_free(s);
	}
}
