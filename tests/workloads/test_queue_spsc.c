/*
 * queue-spsc: the op and its check under every preset on the real runtime, a tiny
 * channel that makes the two tasks wait on each other all the time, the library queues
 * built as effects, and what setup and check refuse.
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

/* The library queues as effects, under three presets: with the default capacity, and
 * with a capacity of two, where every few items one side waits for the other (waiting
 * is counted per op; the runtime's channel reports none of its own). Ops run until a
 * wait has been counted: whether two tasks meet at all depends on where they run. */
Test(queue_spsc, every_encoding_checks_and_counts_its_waits, .timeout = 120)
{
	static const char *const encodings[] = { "direct", "ce", "kyo" };
	static const char *const presets[] = { "ce", "kyo", "tokio" };
	struct wl_metric m[4];
	char err[256] = "";

	for (size_t e = 0; e < 3; e++) {
		for (size_t p = 0; p < 3; p++) {
			for (int tiny = 0; tiny < 2; tiny++) {
				struct wl_ctx ctx = wl_test_ctx("queue-spsc", presets[p], 2);
				size_t nm;
				bool ok;
				int ops = 1;

				wl_test_param(&ctx, "encoding", encodings[e]);
				if (tiny)
					wl_test_param(&ctx, "cap", "2");
				cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), 50005000,
					     "%s, %s", encodings[e], presets[p]);
				cr_expect(ok, "%s, %s, cap %s: %s", encodings[e], presets[p],
					  tiny ? "2" : "1024", err);
				nm = ctx.desc->report(&ctx, m, 4);
				if (e == 0) {
					cr_expect_eq(nm, 0, "direct reports no waits");
				} else if (tiny) {
					cr_assert_eq(nm, 1);
					cr_expect_str_eq(m[0].name, "waits_per_op");
					for (; ops < 100 && m[0].value == 0; ops++) {
						cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
							  "%s", err);
						ctx.desc->report(&ctx, m, 4);
					}
					cr_expect_gt(m[0].value, 0, "%s, %s: no wait in %d ops",
						     encodings[e], presets[p], ops);
				}
				wl_test_finish(&ctx);
			}
		}
	}
	cr_expect_eq(wl_test_parse(wl_find("queue-spsc"), "encoding", "zio", err, sizeof(err)),
		     -EINVAL);
}
