/*
 * stream-par: the output, in order, against a sequential map computed here, under every
 * preset, with and without CPU work; windows of one and wider than the stream; a task
 * per element; what the check says about a wrong or missing output.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

/* The sequential stream: element i mapped by the workers' arithmetic, folded in order,
 * elements a and b swapped (a == b: none). */
static uint64_t sequential_fold(long n, uint64_t rounds, long a, long b)
{
	uint64_t acc = WL__FOLD_SEED;

	for (long i = 0; i < n; i++) {
		long at = i == a ? b : i == b ? a : i;

		acc = wl__fold(acc, wl_workers_mix((uint64_t)at, 1, rounds));
	}
	return acc;
}

Test(stream_par, output_in_order_under_every_preset_with_and_without_cpu_work, .timeout = 300)
{
	static const char *const rounds[] = { "0", "64" };

	for (size_t r = 0; r < 2; r++) {
		uint64_t want = sequential_fold(10000, r ? 64 : 0, 0, 0);

		for (const char *const *p = rt_preset_names(); *p; p++) {
			struct wl_ctx ctx = wl_test_ctx("stream-par", *p, 2);
			char err[512] = "";
			bool ok;

			cr_expect_eq(wl_int(&ctx, "n"), 10000, "the studies' size is the default");
			cr_expect_eq(wl_int(&ctx, "par"), 8);
			wl_test_param(&ctx, "rounds", rounds[r]);
			cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), want,
				     "%s rounds=%s", *p, rounds[r]);
			cr_expect(ok, "%s rounds=%s: %s", *p, rounds[r], err);
			wl_test_finish(&ctx);
		}
	}
}

Test(stream_par, a_window_of_one_and_one_wider_than_the_stream, .timeout = 120)
{
	static const char *const shapes[][2] = { { "500", "1" }, { "5", "64" }, { "1", "8" },
						 { "1000", "1024" } };
	const char *presets[] = { "ce", "kyo", "go" };

	for (size_t i = 0; i < 3; i++)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			struct wl_ctx ctx = wl_test_ctx("stream-par", presets[i], 2);
			char err[512] = "";
			bool ok;

			wl_test_param(&ctx, "n", shapes[s][0]);
			wl_test_param(&ctx, "par", shapes[s][1]);
			wl_test_param(&ctx, "rounds", "3");
			cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)),
				     sequential_fold(wl_int(&ctx, "n"), 3, 0, 0), "%s n=%s par=%s",
				     presets[i], shapes[s][0], shapes[s][1]);
			cr_expect(ok, "%s: %s", presets[i], err);
			wl_test_finish(&ctx);
		}
}

/* Each element's map is a task of its own: n spawns (and as many runs) per op. */
Test(stream_par, every_element_is_mapped_by_a_task_of_its_own, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("stream-par", "ce", 2);
	struct rt_worker_stats before, after;
	char err[512] = "";

	wl_test_param(&ctx, "n", "2000");
	wl_test_setup(&ctx);
	rt_sched_stats_total(ctx.sched, &before);
	cr_expect(ctx.desc->check(&ctx, wl_test_op(&ctx), err, sizeof(err)), "%s", err);
	rt_sched_stats_total(ctx.sched, &after);
	cr_expect_eq(after.spawned - before.spawned, 2000);
	cr_expect_geq(after.tasks_run - before.tasks_run, 2000);
	wl_test_finish(&ctx);
}

Test(stream_par, check_catches_a_reordered_fold_and_a_stream_not_run, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("stream-par", "ce", 2);
	char err[512] = "";
	uint64_t right;

	cr_expect_eq(wl_test_parse(ctx.desc, "par", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "rounds", "-1", err, sizeof(err)), -EINVAL);
	wl_test_param(&ctx, "n", "100");
	wl_test_setup(&ctx);
	cr_expect_not(ctx.desc->check(&ctx, sequential_fold(100, 0, 0, 0), err, sizeof(err)),
		      "no op has run");
	cr_expect_str_eq(err, "stream-par: 0 of 100 elements emitted");
	right = wl_test_op(&ctx);
	cr_expect_eq(right, sequential_fold(100, 0, 0, 0));
	cr_expect(ctx.desc->check(&ctx, right, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, sequential_fold(100, 0, 3, 4), err, sizeof(err)));
	cr_expect(strstr(err, "the fold is") && strstr(err, "sequential fold"), "%s", err);
	wl_test_finish(&ctx);
}
