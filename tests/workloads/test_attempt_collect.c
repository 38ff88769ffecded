/*
 * attempt-collect: the successes' count and sum against a seeded replay computed here,
 * under every preset; no failures, all failures, other seeds; each failure a raised
 * error of its own; what the parameters and the check refuse.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

struct replay {
	long ok;
	uint64_t sum;
};

/* Attempt i fails when the seed's draw i is below fail; a success is worth i + 1. */
static struct replay replay(long n, double fail, uint64_t seed)
{
	struct replay r = { 0 };

	for (long i = 0; i < n; i++)
		if (!(wl__draw_unit(seed, (uint64_t)i) < fail)) {
			r.ok++;
			r.sum += (uint64_t)i + 1;
		}
	return r;
}

Test(attempt_collect, successes_match_the_seeded_replay_under_every_preset, .timeout = 120)
{
	struct replay want = replay(1000, 0.1, 1);

	cr_expect(want.ok > 850 && want.ok < 950, "about 10%% of 1,000 fail: %ld succeed",
		  want.ok);
	for (const char *const *p = rt_preset_names(); *p; p++) {
		struct wl_ctx ctx = wl_test_ctx("attempt-collect", *p, 2);
		char err[512] = "";
		bool ok;

		cr_expect_eq(wl_int(&ctx, "n"), 1000, "the studies' size is the default");
		cr_expect_eq(wl_real(&ctx, "fail"), 0.1);
		cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), want.sum, "%s", *p);
		cr_expect(ok, "%s: %s", *p, err);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, again: %s", *p, err);
		wl_test_finish(&ctx);
	}
}

/* No failures, every attempt failing, and other seeds: each failure is an error object
 * allocated by its raise (so the allocations count them) and freed by the collector. */
Test(attempt_collect, each_failure_is_one_raised_error_for_any_share_and_seed, .timeout = 120)
{
	static const char *const cases[][2] = {
		{ "0", "1" }, { "1", "1" }, { "0.5", "7" }, { "0.1", "12345" }, { "0.1", "0" },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct wl_ctx ctx = wl_test_ctx("attempt-collect", "ce", 2);
		struct rt_worker_stats before, after;
		double fail = strtod(cases[c][0], NULL);
		struct replay want = replay(1000, fail, strtoull(cases[c][1], NULL, 10));
		char err[512] = "";
		uint64_t r;

		wl_test_param(&ctx, "fail", cases[c][0]);
		wl_test_param(&ctx, "seed", cases[c][1]);
		wl_test_setup(&ctx);
		rt_sched_stats_total(ctx.sched, &before);
		r = wl_test_op(&ctx);
		rt_sched_stats_total(ctx.sched, &after);
		cr_expect_eq(r, want.sum, "fail=%s seed=%s", cases[c][0], cases[c][1]);
		cr_expect(ctx.desc->check(&ctx, r, err, sizeof(err)), "fail=%s seed=%s: %s",
			  cases[c][0], cases[c][1], err);
		cr_expect_eq(after.alloc_calls - before.alloc_calls, (uint64_t)(1000 - want.ok),
			     "fail=%s seed=%s: one error allocated per failure", cases[c][0],
			     cases[c][1]);
		cr_expect_eq(after.frees - before.frees, (uint64_t)(1000 - want.ok));
		if (fail == 0)
			cr_expect_eq(r, 500500);
		if (fail == 1)
			cr_expect_eq(r, 0);
		wl_test_finish(&ctx);
	}
	cr_expect_neq(replay(1000, 0.1, 1).sum, replay(1000, 0.1, 2).sum,
		      "another seed draws other failures");
}

Test(attempt_collect, a_share_outside_0_1_is_refused_and_check_catches_a_wrong_sum,
     .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("attempt-collect", "ce", 2);
	struct replay want = replay(100, 0.1, 1);
	char err[512] = "", want_text[128];
	uint64_t right;

	cr_expect_eq(wl_test_parse(ctx.desc, "fail", "1.5", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "attempt-collect: -P fail=1.5: expected a number from 0 to 1");
	cr_expect_eq(wl_test_parse(ctx.desc, "fail", "-0.1", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "fail", "nan", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "seed", "-1", err, sizeof(err)), -EINVAL);
	wl_test_param(&ctx, "n", "100");
	wl_test_setup(&ctx);
	cr_expect_not(ctx.desc->check(&ctx, want.sum, err, sizeof(err)), "no op has run");
	right = wl_test_op(&ctx);
	cr_expect_eq(right, want.sum);
	cr_expect(ctx.desc->check(&ctx, right, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, right + 1, err, sizeof(err)));
	snprintf(want_text, sizeof(want_text), "expected %ld summing to %llu", want.ok,
		 (unsigned long long)want.sum);
	cr_expect(strstr(err, want_text), "%s", err);
	wl_test_finish(&ctx);
}
