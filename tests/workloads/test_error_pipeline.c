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

#define OPS 300

/* A pipeline with little work; fail 0.3 gives many failures of both kinds. */
static struct wl_ctx small_ctx(const char *preset, const char *style, const char *exec,
			       const char *seed, const char *fail)
{
	struct wl_ctx ctx = wl_test_ctx("error-pipeline", preset, 2);

	wl_test_param(&ctx, "style", style);
	wl_test_param(&ctx, "exec", exec);
	wl_test_param(&ctx, "tokens", "2");
	wl_test_param(&ctx, "tf", "2");
	wl_test_param(&ctx, "fail", fail);
	wl_test_param(&ctx, "seed", seed);
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
	static uint64_t words[8][OPS];
	unsigned outcomes[3] = { 0 };
	int combo = 0;

	for (size_t s = 0; s < 4; s++)
		for (size_t e = 0; e < 2; e++, combo++) {
			struct wl_ctx ctx = small_ctx("ce", styles[s], execs[e], "7", "0.3");
			char err[512] = "";

			for (int i = 0; i < OPS; i++) {
				words[combo][i] = wl_test_op(&ctx);
				cr_assert(ctx.desc->check(&ctx, words[combo][i], err, sizeof(err)),
					  "%s/%s op %d: %s", styles[s], execs[e], i, err);
			}
			wl_test_finish(&ctx);
		}
	for (int c = 1; c < 8; c++)
		cr_expect_arr_eq(words[c], words[0], sizeof(words[0]),
				 "%s/%s differs from value/pool", styles[c / 2], execs[c % 2]);
	for (int i = 0; i < OPS; i++)
		outcomes[words[0][i] & 3]++;
	/* 20% invalid and 30% of the rest failing: each outcome shows many times */
	cr_expect_gt(outcomes[0], OPS / 4, "ok %u", outcomes[0]);
	cr_expect_gt(outcomes[1], OPS / 10, "invalid %u", outcomes[1]);
	cr_expect_gt(outcomes[2], OPS / 10, "failed %u", outcomes[2]);
}

Test(error_pipeline, another_seed_gives_other_inputs)
{
	struct wl_ctx a = small_ctx("ce", "value", "loop", "7", "0.3");
	struct wl_ctx b = small_ctx("ce", "value", "loop", "8", "0.3");
	int differ = 0;

	for (int i = 0; i < 50; i++)
		differ += wl_test_op(&a) != wl_test_op(&b);
	cr_expect_gt(differ, 10, "%d of 50 differ", differ);
	wl_test_finish(&a);
	wl_test_finish(&b);
}

Test(error_pipeline, every_style_and_exec_checks_under_every_preset, .timeout = 240)
{
	for (const char *const *p = rt_preset_names(); *p; p++)
		for (size_t s = 0; s < 4; s++)
			for (size_t e = 0; e < 2; e++) {
				struct wl_ctx ctx = small_ctx(*p, styles[s], execs[e], "7", "0.3");
				char err[512] = "";

				for (int i = 0; i < 20; i++)
					cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
						  "%s %s/%s op %d: %s", *p, styles[s], execs[e], i,
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
			/* fail=1: every op fails, one way or the other */
			struct wl_ctx ctx = small_ctx("ce", styles[s], execs[e], "7", "1");
			char err[512] = "";
			uint64_t before;

			before = alloc_bytes(ctx.sched);
			for (int i = 0; i < 100; i++)
				cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
			bytes[s] = (double)(alloc_bytes(ctx.sched) - before) / 100;
			cr_expect_float_eq(metric(&ctx, "errors_per_op"), 1.0, 1e-9, "%s/%s",
					   styles[s], execs[e]);
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
			      "raise/%s %.0f bytes per op, notrace %.0f", execs[e], bytes[2],
			      bytes[3]);
		/* the combinator's closures are allocated per op */
		cr_expect_gt(bytes[1], bytes[0], "combinator/%s %.0f, value %.0f", execs[e],
			     bytes[1], bytes[0]);
	}
}

Test(error_pipeline, check_names_a_wrong_outcome_and_the_replay)
{
	struct wl_ctx ctx = small_ctx("ce", "value", "pool", "7", "0.3");
	char err[512] = "";
	uint64_t w = wl_test_op(&ctx);
	uint64_t other = (w & ~3ull) | ((w & 3) == 0 ? 2 : 0); /* another outcome */

	cr_expect_not(ctx.desc->check(&ctx, other, err, sizeof(err)));
	cr_expect(strstr(err, "op 0") && strstr(err, "sequential replay gives"), "%s", err);
	cr_expect_null(strchr(err, '\n'), "one line");
	/* the counts now differ from the replay's, so even a right word fails */
	cr_expect_not(ctx.desc->check(&ctx, wl_test_op(&ctx), err, sizeof(err)));
	cr_expect(strstr(err, "so far"), "%s", err);
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
