/*
 * error-pipeline: every style and execution gives the sequential replay's outcomes, the
 * same ones for one seed, under every preset; raise captures a backtrace (frames in
 * every error, more bytes per op) where raise-notrace and the values do not; the check
 * names a wrong outcome; and consume_cpu, calibrated, costs time in proportion to its
 * tokens.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

static const char *const styles[] = { "value", "combinator", "raise", "raise-notrace" };
static const char *const execs[] = { "pool", "loop" };

/* Pipelines with little work, n of them per op; fail 0.3 gives many failures of both
 * kinds. */
static struct wl_ctx small_ctx(const char *preset, const char *style, const char *exec,
			       const char *n, const char *fail)
{
	struct wl_ctx ctx = wl_test_ctx("error-pipeline", preset, 2);

	wl_test_param(&ctx, "style", style);
	wl_test_param(&ctx, "exec", exec);
	wl_test_param(&ctx, "n", n);
	wl_test_param(&ctx, "tokens", "2");
	wl_test_param(&ctx, "tf", "2");
	wl_test_param(&ctx, "fail", fail);
	wl_test_param(&ctx, "seed", "7");
	wl_test_setup(&ctx);
	return ctx;
}

static double metric(struct wl_ctx *ctx, const char *name)
{
	struct wl_metric m[WL_MAX_METRICS];
	size_t n = ctx->desc->report(ctx, m, WL_MAX_METRICS);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].name, name))
			return m[i].value;
	cr_assert_fail("no metric %s", name);
	return 0;
}

Test(error_pipeline, outcomes_match_the_replay_and_are_the_same_in_every_style, .timeout = 120)
{
	uint64_t folds[8][3];
	double invalid[8], failed[8];
	int c = 0;

	for (size_t s = 0; s < 4; s++)
		for (size_t e = 0; e < 2; e++, c++) {
			struct wl_ctx ctx = small_ctx("ce", styles[s], execs[e], "100", "0.3");
			char err[512] = "";

			for (int op = 0; op < 3; op++) {
				folds[c][op] = wl_test_op(&ctx);
				cr_assert(ctx.desc->check(&ctx, folds[c][op], err, sizeof(err)),
					  "%s/%s op %d: %s", styles[s], execs[e], op, err);
			}
			invalid[c] = metric(&ctx, "invalid_share");
			failed[c] = metric(&ctx, "failed_share");
			wl_test_finish(&ctx);
		}
	for (c = 1; c < 8; c++) {
		cr_expect_arr_eq(folds[c], folds[0], sizeof(folds[0]),
				 "%s/%s folds differ from value/pool's", styles[c / 2], execs[c % 2]);
		cr_expect_float_eq(invalid[c], invalid[0], 1e-9, "%s/%s", styles[c / 2],
				   execs[c % 2]);
		cr_expect_float_eq(failed[c], failed[0], 1e-9, "%s/%s", styles[c / 2], execs[c % 2]);
	}
	cr_expect_neq(folds[0][0], folds[0][1], "each op has pipelines of its own");
	/* 20% invalid, 30% of the rest failing (24%) over 300 pipelines */
	cr_expect(invalid[0] > 10 && invalid[0] < 30, "invalid %.1f%%", invalid[0]);
	cr_expect(failed[0] > 14 && failed[0] < 34, "failed %.1f%%", failed[0]);
}

Test(error_pipeline, another_seed_gives_other_inputs)
{
	struct wl_ctx a = small_ctx("ce", "value", "loop", "20", "0.3");
	struct wl_ctx b = wl_test_ctx("error-pipeline", "ce", 2);

	wl_test_param(&b, "n", "20");
	wl_test_param(&b, "tokens", "2");
	wl_test_param(&b, "fail", "0.3");
	wl_test_param(&b, "seed", "8");
	wl_test_setup(&b);
	for (int op = 0; op < 5; op++)
		cr_expect_neq(wl_test_op(&a), wl_test_op(&b));
	wl_test_finish(&a);
	wl_test_finish(&b);
}

Test(error_pipeline, every_style_and_exec_checks_under_every_preset, .timeout = 240)
{
	for (const char *const *p = rt_preset_names(); *p; p++)
		for (size_t s = 0; s < 4; s++)
			for (size_t e = 0; e < 2; e++) {
				struct wl_ctx ctx = small_ctx(*p, styles[s], execs[e], "20", "0.3");
				char err[512] = "";

				for (int op = 0; op < 2; op++)
					cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
						  "%s %s/%s op %d: %s", *p, styles[s], execs[e], op,
						  err);
				wl_test_finish(&ctx);
			}
}

static uint64_t alloc_bytes(struct rt_sched *s)
{
	struct rt_worker_stats total;

	rt_sched_stats_total(s, &total);
	return total.alloc_bytes;
}

Test(error_pipeline, raise_captures_a_backtrace_and_the_other_styles_do_not, .timeout = 120)
{
	for (size_t e = 0; e < 2; e++) {
		double frames[4], bytes[4];

		for (size_t s = 0; s < 4; s++) {
			/* fail=1: every pipeline fails, one way or the other */
			struct wl_ctx ctx = small_ctx("ce", styles[s], execs[e], "100", "1");
			char err[512] = "";
			uint64_t before = alloc_bytes(ctx.sched);

			cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
			bytes[s] = (double)(alloc_bytes(ctx.sched) - before) / 100;
			cr_expect_float_eq(metric(&ctx, "invalid_share") +
						   metric(&ctx, "failed_share"),
					   100.0, 1e-9, "%s/%s", styles[s], execs[e]);
			frames[s] = metric(&ctx, "frames_per_error");
			wl_test_finish(&ctx);
		}
		/* a trace holds the raising step, the runtime's or interpreter's frames and the
		 * fiber's entry: a few at least */
		cr_expect_geq(frames[2], 3, "raise/%s: %.1f frames per error", execs[e], frames[2]);
		cr_expect_eq(frames[3], 0, "raise-notrace/%s", execs[e]);
		cr_expect_eq(frames[0], 0, "value/%s", execs[e]);
		cr_expect_eq(frames[1], 0, "combinator/%s", execs[e]);
		/* the frames are stored in the error: 8 bytes each */
		cr_expect_geq(bytes[2], bytes[3] + 8 * 3,
			      "raise/%s %.0f bytes per pipeline, notrace %.0f", execs[e], bytes[2],
			      bytes[3]);
		/* the combinator's closures are allocated per pipeline */
		cr_expect_gt(bytes[1], bytes[0], "combinator/%s %.0f, value %.0f", execs[e],
			     bytes[1], bytes[0]);
	}
}

Test(error_pipeline, check_names_a_wrong_fold)
{
	struct wl_ctx ctx = small_ctx("ce", "value", "pool", "10", "0.3");
	char err[512] = "";
	uint64_t h = wl_test_op(&ctx);

	cr_expect_not(ctx.desc->check(&ctx, h ^ 1, err, sizeof(err)));
	cr_expect(strstr(err, "fold of its 10 outcomes") && strstr(err, "sequential replay"),
		  "%s", err);
	cr_expect_null(strchr(err, '\n'), "one line");
	cr_expect(ctx.desc->check(&ctx, h, err, sizeof(err)), "%s", err);
	wl_test_finish(&ctx);
}

Test(error_pipeline, bad_parameters_are_named_with_what_they_accept)
{
	const struct wl_desc *d = wl_find("error-pipeline");
	char err[256];

	cr_assert_not_null(d);
	cr_expect_eq(wl_test_parse(d, "fail", "1.5", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "error-pipeline: -P fail=1.5: expected a number from 0 to 1");
	cr_expect_eq(wl_test_parse(d, "fail", "-0.1", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "tf", "0", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "error-pipeline: -P tf=0: expected a whole number from 1 to 100000");
	cr_expect_eq(wl_test_parse(d, "style", "exceptions", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "error-pipeline: -P style=exceptions: expected one of "
			      "value,combinator,raise,raise-notrace");
	cr_expect_eq(wl_test_parse(d, "valid", "101", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "fail", "0", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(d, "fail", "1", err, sizeof(err)), 0);
}

/* ---- consume_cpu ------------------------------------------------------------------------ */

static uint64_t thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread, not wall time: another process's load does not count. The
 * fastest of a few rounds, as the calibration does. */
static uint64_t spin_cpu_ns(uint64_t tokens)
{
	uint64_t best = UINT64_MAX;

	for (int r = 0; r < 5; r++) {
		uint64_t t0 = thread_ns(), t;

		consume_cpu(tokens);
		t = thread_ns() - t0;
		best = t < best ? t : best;
	}
	return best;
}

Test(consume_cpu, costs_cpu_time_in_proportion_to_its_tokens, .timeout = 60)
{
	uint64_t small = spin_cpu_ns(1u << 20), large = spin_cpu_ns(8u << 20);
	double per_token = wl__consume_cpu_ns_per_token();

	/* eight times the tokens: between 4 and 16 times the time, so not folded away */
	cr_expect_gt(large, 4 * small, "%llu ns for 8M tokens, %llu for 1M",
		     (unsigned long long)large, (unsigned long long)small);
	cr_expect_lt(large, 16 * small, "%llu ns for 8M tokens, %llu for 1M",
		     (unsigned long long)large, (unsigned long long)small);
	/* at least a cycle a token (a dependent multiply-add), and not a microsecond */
	cr_expect_gt(per_token, 0.1, "%.3f ns/token", per_token);
	cr_expect_lt(per_token, 1000, "%.3f ns/token", per_token);
	cr_expect_eq(consume_cpu(1000), consume_cpu(1000), "the same chain each time");
	cr_expect_neq(consume_cpu(1000), consume_cpu(1001));
}
