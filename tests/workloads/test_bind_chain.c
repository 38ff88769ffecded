/*
 * The bind-chain workload: its descriptor, and one op and its check under each
 * interpreter on the real runtime, with every byte the op allocated freed; and each
 * preset's own interpreter (the binds knob) with none chosen.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/workloads/wl_test.h"

struct bc_run {
	struct wl_ctx ctx;
	struct rt_worker_stats before, after;
	uint64_t result;
};

static void bc_init_under(struct bc_run *r, const char *preset, const char *interpreter,
			  const char *depth)
{
	memset(r, 0, sizeof(*r));
	r->ctx = wl_test_ctx("bind-chain", preset, 1);
	if (interpreter)
		wl_test_param(&r->ctx, "interpreter", interpreter);
	if (depth)
		wl_test_param(&r->ctx, "depth", depth);
}

static void bc_init(struct bc_run *r, const char *interpreter, const char *depth)
{
	memset(r, 0, sizeof(*r));
	r->ctx = wl_test_ctx("bind-chain", NULL, 1);
	wl_test_param(&r->ctx, "interpreter", interpreter);
	if (depth)
		wl_test_param(&r->ctx, "depth", depth);
}

static uint64_t bc_op_task(void *arg)
{
	struct bc_run *r = arg;

	rt_sched_stats_total(r->ctx.sched, &r->before);
	r->result = r->ctx.desc->op(&r->ctx);
	rt_sched_stats_total(r->ctx.sched, &r->after);
	return 0;
}

/* One op as the harness runs it (a submitted task), then its check. */
static void op_and_check(const char *interpreter)
{
	struct bc_run r;
	char err[256] = "";

	bc_init(&r, interpreter, NULL);
	cr_expect_eq(wl_int(&r.ctx, "depth"), 10000, "the studies' depth is the default");
	rt_join(rt_submit(r.ctx.sched, bc_op_task, &r));
	cr_expect_eq(r.result, 10000, "%s: %lu", interpreter, (unsigned long)r.result);
	cr_expect(r.ctx.desc->check(&r.ctx, r.result, err, sizeof(err)), "%s", err);
	cr_expect_eq(r.after.alloc_calls - r.before.alloc_calls, r.after.frees - r.before.frees,
		     "%s: every allocation of the op freed", interpreter);
	rt_sched_free(r.ctx.sched);
}

Test(bind_chain, op_and_check_under_the_stack_interpreter, .timeout = 60)
{
	op_and_check("stack");
}

Test(bind_chain, op_and_check_under_the_naive_interpreter, .timeout = 60)
{
	op_and_check("naive");
}

Test(bind_chain, naive_allocates_far_more_than_stack_per_op, .timeout = 60)
{
	struct bc_run stack, naive;

	bc_init(&stack, "stack", "3000");
	rt_join(rt_submit(stack.ctx.sched, bc_op_task, &stack));
	bc_init(&naive, "naive", "3000");
	rt_join(rt_submit(naive.ctx.sched, bc_op_task, &naive));
	cr_expect_eq(stack.result, 3000);
	cr_expect_eq(naive.result, 3000);
	/* the naive run copies n^2/2 pending continuations: 36 MB against a few hundred KB */
	cr_expect_gt(naive.after.alloc_bytes - naive.before.alloc_bytes,
		     10 * (stack.after.alloc_bytes - stack.before.alloc_bytes));
	rt_sched_free(stack.ctx.sched);
	rt_sched_free(naive.ctx.sched);
}

/* The bytes one op of depth allocates under preset with its own interpreter. */
static uint64_t preset_bytes(const char *preset, const char *depth)
{
	struct bc_run r;
	uint64_t bytes;

	bc_init_under(&r, preset, NULL, depth);
	rt_join(rt_submit(r.ctx.sched, bc_op_task, &r));
	cr_expect_eq(r.result, (uint64_t)strtoull(depth, NULL, 10), "%s", preset);
	bytes = r.after.alloc_bytes - r.before.alloc_bytes;
	rt_sched_free(r.ctx.sched);
	return bytes;
}

/* With no -P interpreter each preset runs its own (the binds knob): ce's chain grows
 * linearly with its depth, kyo's quadratically, as the study measured cats-effect's and
 * Kyo's (a ten times longer chain: ~10x and ~100x the bytes). */
Test(bind_chain, each_preset_runs_its_own_chain_of_binds, .timeout = 120)
{
	uint64_t ce_short = preset_bytes("ce", "1000"), ce_long = preset_bytes("ce", "10000");
	uint64_t kyo_short = preset_bytes("kyo", "1000"), kyo_long = preset_bytes("kyo", "10000");

	cr_expect(ce_long > 5 * ce_short && ce_long < 20 * ce_short,
		  "ce: %llu then %llu bytes: not linear", (unsigned long long)ce_short,
		  (unsigned long long)ce_long);
	cr_expect(kyo_long > 50 * kyo_short && kyo_long < 200 * kyo_short,
		  "kyo: %llu then %llu bytes: not quadratic", (unsigned long long)kyo_short,
		  (unsigned long long)kyo_long);
	cr_expect_gt(kyo_long, 100 * ce_long);
}

Test(bind_chain, check_reports_a_wrong_value_and_parameters_are_validated)
{
	struct bc_run r;
	char err[256];
	int i;

	bc_init(&r, "stack", "10");
	cr_expect(r.ctx.desc->check(&r.ctx, 10, err, sizeof(err)));
	cr_expect_not(r.ctx.desc->check(&r.ctx, 9, err, sizeof(err)));
	cr_expect(strstr(err, "9") && strstr(err, "10"), "%s", err);
	cr_expect_not(r.ctx.desc->check(&r.ctx, UINT64_MAX, err, sizeof(err)));
	cr_expect(strstr(err, "failed"), "%s", err);
	i = wl_param_index(r.ctx.desc, "interpreter");
	cr_expect_eq(wl_param_parse(r.ctx.desc, i, "naive", &r.ctx.values[i], err, sizeof(err)), 0);
	cr_expect_eq(wl_choice(&r.ctx, "interpreter"), 1);
	cr_expect_eq(wl_param_parse(r.ctx.desc, i, "fast", &r.ctx.values[i], err, sizeof(err)),
		     -EINVAL);
	cr_expect(strstr(err, "stack,naive,preset"), "%s", err);
	i = wl_param_index(r.ctx.desc, "depth");
	cr_expect_eq(wl_param_parse(r.ctx.desc, i, "0", &r.ctx.values[i], err, sizeof(err)),
		     -EINVAL);
	rt_sched_free(r.ctx.sched);
}
