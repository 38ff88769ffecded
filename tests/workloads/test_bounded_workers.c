/*
 * bounded-workers: the sum against the sequential sum of the same arithmetic, under every
 * preset, with and without CPU work; one worker, more workers than items, a queue of two;
 * what setup and check refuse.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"

Test(bounded_workers, sum_matches_the_sequential_sum_under_every_preset, .timeout = 300)
{
	static const char *const rounds[] = { "0", "64" };

	for (size_t r = 0; r < 2; r++) {
		uint64_t want = wl_workers_mix(0, 10000, r ? 64 : 0);

		for (const char *const *p = rt_preset_names(); *p; p++) {
			struct wl_ctx ctx = wl_test_ctx("bounded-workers", *p, 2);
			char err[512] = "";
			bool ok;

			cr_expect_eq(wl_int(&ctx, "n"), 10000, "the studies' size is the default");
			cr_expect_eq(wl_int(&ctx, "workers"), 8);
			wl_test_param(&ctx, "rounds", rounds[r]);
			cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), want,
				     "%s rounds=%s", *p, rounds[r]);
			cr_expect(ok, "%s rounds=%s: %s", *p, rounds[r], err);
			cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, again: %s", *p, err);
			wl_test_finish(&ctx);
		}
	}
}

Test(bounded_workers, one_worker_more_workers_than_items_and_a_queue_of_two, .timeout = 120)
{
	static const char *const shapes[][3] = {
		{ "1000", "1", "2" }, { "3", "8", "1024" }, { "1000", "64", "2" }, { "1", "1", "2" },
	};
	const char *presets[] = { "ce", "kyo", "loom" };

	for (size_t i = 0; i < 3; i++)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			struct wl_ctx ctx = wl_test_ctx("bounded-workers", presets[i], 2);
			char err[512] = "";
			bool ok;

			wl_test_param(&ctx, "n", shapes[s][0]);
			wl_test_param(&ctx, "workers", shapes[s][1]);
			wl_test_param(&ctx, "cap", shapes[s][2]);
			wl_test_param(&ctx, "rounds", "5");
			cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)),
				     wl_workers_mix(0, (uint64_t)wl_int(&ctx, "n"), 5),
				     "%s n=%s workers=%s cap=%s", presets[i], shapes[s][0],
				     shapes[s][1], shapes[s][2]);
			cr_expect(ok, "%s: %s", presets[i], err);
			wl_test_finish(&ctx);
		}
}

Test(bounded_workers, check_catches_a_wrong_sum_and_a_capacity_not_a_power_of_two_is_refused, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("bounded-workers", "ce", 2);
	char err[512] = "";
	uint64_t right;

	cr_expect_eq(wl_test_parse(ctx.desc, "cap", "100", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "bounded-workers: -P cap=100: expected a power of two from 2 "
			      "to 1048576");
	cr_expect_eq(wl_test_parse(ctx.desc, "workers", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "workers", "257", err, sizeof(err)), -EINVAL);
	wl_test_param(&ctx, "cap", "64");
	wl_test_param(&ctx, "n", "100");
	wl_test_setup(&ctx);
	cr_expect_not(ctx.desc->check(&ctx, wl_workers_mix(0, 100, 0), err, sizeof(err)),
		      "no op has run: nothing was received");
	right = wl_test_op(&ctx);
	cr_expect_eq(right, 5050, "with no rounds, item i is worth i + 1");
	cr_expect(ctx.desc->check(&ctx, right, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, right - 1, err, sizeof(err)));
	cr_expect(strstr(err, "5049") && strstr(err, "5050") &&
			  strstr(err, "100 of 100 items sent, 100 received by 8 of 8 workers"),
		  "%s", err);
	wl_test_finish(&ctx);
}
