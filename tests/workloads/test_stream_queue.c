/*
 * stream-queue: the op against a sequential fold computed here, under every preset, with
 * chunks and queues small and large; one allocation per chunk; what setup and check
 * refuse, a reordered stream included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

/* The stream's elements 0..n-1, mapped (x + 1) and folded in order, with elements a and
 * b swapped (a == b: none). */
static uint64_t sequential_fold(long n, long a, long b)
{
	uint64_t acc = WL__FOLD_SEED;

	for (long i = 0; i < n; i++) {
		long at = i == a ? b : i == b ? a : i;

		acc = wl__fold(acc, (uint64_t)at + 1);
	}
	return acc;
}

Test(stream_queue, op_folds_like_the_sequential_stream_under_every_preset, .timeout = 120)
{
	uint64_t want = sequential_fold(10000, 0, 0);

	for (const char *const *p = rt_preset_names(); *p; p++) {
		struct wl_ctx ctx = wl_test_ctx("stream-queue", *p, 2);
		char err[512] = "";
		bool ok;

		cr_expect_eq(wl_int(&ctx, "n"), 10000, "the studies' size is the default");
		cr_expect_eq(wl_int(&ctx, "chunk"), 128);
		cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), want, "%s", *p);
		cr_expect(ok, "%s: %s", *p, err);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, again: %s", *p, err);
		wl_test_finish(&ctx);
	}
}

/* A short last chunk, a chunk longer than the stream, and a queue of two chunks that
 * makes the producer wait for the consumer at every other chunk. */
Test(stream_queue, uneven_chunks_and_a_queue_of_two_keep_the_order, .timeout = 120)
{
	static const char *const shapes[][3] = {
		{ "1000", "7", "2" }, { "1000", "4096", "16" }, { "1", "1", "2" }, { "999", "1", "2" },
	};
	const char *presets[] = { "ce", "kyo", "tokio" };

	for (size_t i = 0; i < 3; i++)
		for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
			struct wl_ctx ctx = wl_test_ctx("stream-queue", presets[i], 2);
			char err[512] = "";
			bool ok;

			wl_test_param(&ctx, "n", shapes[s][0]);
			wl_test_param(&ctx, "chunk", shapes[s][1]);
			wl_test_param(&ctx, "cap", shapes[s][2]);
			cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)),
				     sequential_fold(wl_int(&ctx, "n"), 0, 0), "%s n=%s chunk=%s",
				     presets[i], shapes[s][0], shapes[s][1]);
			cr_expect(ok, "%s: %s", presets[i], err);
			wl_test_finish(&ctx);
		}
}

/* Each chunk is one counted allocation, freed by the consumer: ceil(n / chunk) of each
 * per op, and the bytes of the elements they carry. */
Test(stream_queue, each_chunk_is_one_allocation_freed_by_the_consumer, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("stream-queue", "ce", 2);
	struct rt_worker_stats before, after;
	char err[512] = "";

	wl_test_setup(&ctx);
	rt_sched_stats_total(ctx.sched, &before);
	cr_expect(ctx.desc->check(&ctx, wl_test_op(&ctx), err, sizeof(err)), "%s", err);
	rt_sched_stats_total(ctx.sched, &after);
	cr_expect_eq(after.alloc_calls - before.alloc_calls, 79, "10,000 / 128, rounded up");
	cr_expect_eq(after.frees - before.frees, 79);
	cr_expect_geq(after.alloc_bytes - before.alloc_bytes, 10000 * sizeof(uint64_t));
	wl_test_finish(&ctx);
}

Test(stream_queue, check_catches_a_wrong_or_reordered_fold_and_a_capacity_not_a_power_of_two_is_refused)
{
	struct wl_ctx ctx = wl_test_ctx("stream-queue", "ce", 2);
	char err[512] = "";
	uint64_t right, swapped = sequential_fold(100, 10, 11);

	cr_expect_eq(wl_test_parse(ctx.desc, "cap", "12", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "stream-queue: -P cap=12: expected a power of two from 2 "
			      "to 1048576");
	cr_expect_eq(wl_test_parse(ctx.desc, "chunk", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "chunk", "100", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(ctx.desc, "n", "0", err, sizeof(err)), -EINVAL);
	wl_test_param(&ctx, "n", "100");
	wl_test_setup(&ctx);
	right = wl_test_op(&ctx);
	cr_expect_eq(right, sequential_fold(100, 0, 0));
	cr_expect(ctx.desc->check(&ctx, right, err, sizeof(err)), "%s", err);
	cr_expect_neq(swapped, right, "the fold sees the order");
	cr_expect_not(ctx.desc->check(&ctx, swapped, err, sizeof(err)));
	cr_expect(strstr(err, "expected") && strstr(err, "100 of 100 elements emitted, 100 folded"),
		  "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, right + 1, err, sizeof(err)));
	wl_test_finish(&ctx);
}
