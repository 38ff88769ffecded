/*
 * permit: the op and its check under every preset on the real runtime, and what the
 * check says when the permit is not back.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"

Test(permit, op_checks_under_2_workers_and_every_preset, .timeout = 60)
{
	for (const char *const *p = rt_preset_names(); *p; p++) {
		struct wl_ctx ctx = wl_test_ctx("permit", *p, 2);
		char err[256] = "";
		bool ok;

		cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), 1000, "%s", *p);
		cr_expect(ok, "%s: %s", *p, err);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, again: %s", *p, err);
		wl_test_finish(&ctx);
	}
}

/* The op's task holds the permit while a second op would wait: run from a task that
 * keeps it, the check finds it missing. */
static uint64_t take_permit(void *arg)
{
	struct wl_ctx *ctx = arg;

	return ctx->desc->op(ctx) + rt_sem_try_acquire(ctx->state);
}

Test(permit, check_says_when_the_permit_is_not_back, .timeout = 30)
{
	struct wl_ctx ctx = wl_test_ctx("permit", "ce", 2);
	char err[256] = "";
	uint64_t r;

	wl_test_param(&ctx, "n", "10");
	wl_test_setup(&ctx);
	r = rt_join(rt_submit(ctx.sched, take_permit, &ctx));
	cr_expect_eq(r, 11, "10 pairs, then the permit kept");
	cr_expect_not(ctx.desc->check(&ctx, 10, err, sizeof(err)));
	cr_expect(strstr(err, "permit: 10 of 10") && strstr(err, "0 permit(s) free"), "%s", err);
	rt_sem_release(ctx.state);
	cr_expect(ctx.desc->check(&ctx, 10, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, 9, err, sizeof(err)));
	cr_expect_eq(wl_test_parse(ctx.desc, "n", "0", err, sizeof(err)), -EINVAL);
	wl_test_finish(&ctx);
}
