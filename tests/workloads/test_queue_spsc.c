/*
 * queue-spsc: the op and its check under every preset on the real runtime, a tiny
 * channel that makes the two tasks wait on each other all the time, and what setup
 * and check refuse.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"

Test(queue_spsc, op_checks_under_2_workers_and_every_preset, .timeout = 60)
{
	for (const char *const *p = rt_preset_names(); *p; p++) {
		struct wl_ctx ctx = wl_test_ctx("queue-spsc", *p, 2);
		char err[256] = "";
		bool ok;

		cr_expect_eq(wl_int(&ctx, "n"), 10000, "the studies' size is the default");
		cr_expect_eq(wl_int(&ctx, "cap"), 1024);
		cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), 50005000, "%s", *p);
		cr_expect(ok, "%s: %s", *p, err);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, again: %s", *p, err);
		wl_test_finish(&ctx);
	}
}

Test(queue_spsc, a_channel_of_two_makes_them_take_turns, .timeout = 60)
{
	const char *presets[] = { "ce", "kyo", "tokio" };

	for (size_t i = 0; i < 3; i++) {
		struct wl_ctx ctx = wl_test_ctx("queue-spsc", presets[i], 2);
		char err[256] = "";
		bool ok;

		wl_test_param(&ctx, "cap", "2");
		wl_test_run_op(&ctx, &ok, err, sizeof(err));
		cr_expect(ok, "%s: %s", presets[i], err);
		wl_test_finish(&ctx);
	}
}

Test(queue_spsc, a_capacity_not_a_power_of_two_is_bad_input_and_check_a_wrong_sum)
{
	struct wl_ctx ctx = wl_test_ctx("queue-spsc", "ce", 2);
	char err[256] = "";

	cr_expect_eq(wl_test_parse(ctx.desc, "cap", "1000", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "queue-spsc: -P cap=1000: expected a power of two from 2 "
			      "to 1048576");
	cr_expect_eq(wl_test_parse(ctx.desc, "cap", "1", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "n", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "n", "1000", err, sizeof(err)), 0,
		     "only a capacity must be a power of two");
	wl_test_param(&ctx, "n", "100");
	wl_test_setup(&ctx);
	cr_expect(ctx.desc->check(&ctx, 5050, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, 5049, err, sizeof(err)));
	cr_expect(strstr(err, "5049") && strstr(err, "5050"), "%s", err);
	wl_test_finish(&ctx);
}
