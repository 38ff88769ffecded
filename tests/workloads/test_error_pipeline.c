/*
 * error-pipeline: every style and execution gives the sequential replay's outcomes, the
 * same ones for one seed, under every preset; the mechanism: on futures (exec=pool) each
 * link of a style's program is a task submitted to the pool, so the transformer submits
 * twice the hand-written either's, while a run loop (loop, zio) submits none, loop
 * re-schedules once a pipeline at its async boundary and zio makes its blocking hops;
 * raise captures a backtrace (frames in every error, more bytes per op) where
 * raise-notrace, the values and the typed channel do not; the error-ratio sweep's
 * parameters give its shares; the check names a wrong outcome; and consume_cpu,
 * calibrated, costs time in proportion to its tokens.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

#define NSTYLES 5
#define NEXECS	3

static const char *const styles[NSTYLES] = { "value", "combinator", "raise", "raise-notrace",
					      "typed" };
static const char *const execs[NEXECS] = { "pool", "loop", "zio" };

static void small_params(struct wl_ctx *ctx, const char *style, const char *exec, const char *n,
			 const char *fail)
{
	wl_test_param(ctx, "style", style);
	wl_test_param(ctx, "exec", exec);
	wl_test_param(ctx, "n", n);
	wl_test_param(ctx, "tokens", "2");
	wl_test_param(ctx, "tf", "2");
	wl_test_param(ctx, "fail", fail);
	wl_test_param(ctx, "seed", "7");
}

/* Pipelines with little work, n of them per op; fail 0.3 gives many failures of both
 * kinds. */
static struct wl_ctx small_ctx(const char *preset, const char *style, const char *exec,
			       const char *n, const char *fail)
{
	struct wl_ctx ctx = wl_test_ctx("error-pipeline", preset, 2);

	small_params(&ctx, style, exec, n, fail);
	wl_test_setup(&ctx);
	return ctx;
}

/* The same on 2 workers of ce with the blocking knob at `blocking`: offload is ZIO's
 * blocking executor, a shift there and back. Parameters are set after, then setup. */
static struct wl_ctx blocking_ctx(const char *blocking)
{
	struct wl_ctx ctx = { 0 };
	struct rt_config c;
	char err[256];

	ctx.desc = wl_find("error-pipeline");
	cr_assert_not_null(ctx.desc);
	wl_params_default(ctx.desc, ctx.values);
	cr_assert_eq(rt_config_preset(&c, "ce"), 0);
	c.workers = 2;
	cr_assert_eq(rt_config_set(&c, "blocking", blocking, err, sizeof(err)), 0, "%s", err);
	ctx.sched = rt_sched_new(&c);
	cr_assert_not_null(ctx.sched, "rt_sched_new: %s", strerror(errno));
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

static struct rt_worker_stats totals(struct rt_sched *s)
{
	struct rt_worker_stats total;

	rt_sched_stats_total(s, &total);
	return total;
}

Test(error_pipeline, outcomes_match_the_replay_and_are_the_same_in_every_style, .timeout = 180)
{
	uint64_t folds[NSTYLES * NEXECS][3];
	double invalid[NSTYLES * NEXECS], failed[NSTYLES * NEXECS];
	int c = 0;

	for (size_t s = 0; s < NSTYLES; s++)
		for (size_t e = 0; e < NEXECS; e++, c++) {
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
	for (c = 1; c < NSTYLES * NEXECS; c++) {
		const char *s = styles[c / NEXECS], *e = execs[c % NEXECS];

		cr_expect_arr_eq(folds[c], folds[0], sizeof(folds[0]),
				 "%s/%s folds differ from value/pool's", s, e);
		cr_expect_float_eq(invalid[c], invalid[0], 1e-9, "%s/%s", s, e);
		cr_expect_float_eq(failed[c], failed[0], 1e-9, "%s/%s", s, e);
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

Test(error_pipeline, every_style_and_exec_checks_under_every_preset, .timeout = 300)
{
	for (const char *const *p = rt_preset_names(); *p; p++)
		for (size_t s = 0; s < NSTYLES; s++)
			for (size_t e = 0; e < NEXECS; e++) {
				struct wl_ctx ctx = small_ctx(*p, styles[s], execs[e], "20", "0.3");
				char err[512] = "";

				for (int op = 0; op < 2; op++)
					cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
						  "%s %s/%s op %d: %s", *p, styles[s], execs[e], op,
						  err);
				wl_test_finish(&ctx);
			}
}

/* ---- the mechanism: submissions per pipeline -------------------------------------------- */

/* One op of n pipelines that all end one way, on ctx (parameters set, not yet set up):
 * the runtime's counters over it, checked. */
static struct rt_worker_stats one_op(struct wl_ctx *ctx, const char *valid, const char *fail,
				     const char *what)
{
	struct rt_worker_stats before, after, d;
	char err[512] = "";

	wl_test_param(ctx, "valid", valid);
	wl_test_param(ctx, "fail", fail);
	wl_test_setup(ctx);
	before = totals(ctx->sched);
	cr_assert(wl_test_op_check(ctx, err, sizeof(err)), "%s: %s", what, err);
	after = totals(ctx->sched);
	d.spawned = after.spawned - before.spawned;
	d.tasks_run = after.tasks_run - before.tasks_run;
	d.offloads = after.offloads - before.offloads;
	d.blocking_episodes = after.blocking_episodes - before.blocking_episodes;
	return d;
}

/* The three ways a pipeline ends: every input valid and no call failing, every input
 * invalid, every call failing. */
static const struct {
	const char *name, *valid, *fail;
} endings[] = {
	{ "ok", "100", "0" },
	{ "invalid", "0", "0" },
	{ "failed", "100", "1" },
};

Test(error_pipeline, futures_submit_a_task_per_link_and_the_transformer_twice_the_either,
     .timeout = 120)
{
	/* the links of each style's program (error_pipeline.c, programs[]) by ending: a Left
	 * at validate skips the transformer's nested binds (validate, bind, fold) */
	static const unsigned links[NSTYLES][3] = {
		{ 5, 5, 5 }, { 10, 3, 10 }, { 6, 6, 6 }, { 6, 6, 6 }, { 5, 5, 5 },
	};
	const long n = 50;
	uint64_t spawned[NSTYLES][3];

	for (size_t s = 0; s < NSTYLES; s++)
		for (size_t k = 0; k < 3; k++) {
			struct wl_ctx ctx = wl_test_ctx("error-pipeline", "ce", 2);
			struct rt_worker_stats d;
			char what[96];

			snprintf(what, sizeof(what), "%s/pool, all %s", styles[s], endings[k].name);
			small_params(&ctx, styles[s], "pool", "50", "0");
			d = one_op(&ctx, endings[k].valid, endings[k].fail, what);
			spawned[s][k] = d.spawned;
			/* every submission is a real spawn, counted where it was made (the op
			 * itself came from outside the pool, which no worker counts) */
			cr_expect_eq(d.spawned, n * links[s][k], "%s: %llu tasks for %ld pipelines",
				     what, (unsigned long long)d.spawned, n);
			cr_expect_float_eq(metric(&ctx, "submissions_per_pipeline"), links[s][k],
					   1e-9, "%s", what);
			wl_test_finish(&ctx);
		}
	/* the study's mechanism: the transformer's extra map/flatMap steps are submissions */
	cr_expect_geq(spawned[1][0], 2 * spawned[0][0], "transformer %llu, either %llu",
		      (unsigned long long)spawned[1][0], (unsigned long long)spawned[0][0]);
	cr_expect_gt(spawned[2][0], spawned[0][0], "exceptions' recover is a callback of its own");
}

Test(error_pipeline, run_loops_submit_nothing_and_loop_reschedules_once_a_pipeline,
     .timeout = 120)
{
	const long n = 50;

	for (size_t s = 0; s < NSTYLES; s++)
		for (size_t k = 0; k < 3; k++) {
			struct wl_ctx ctx = wl_test_ctx("error-pipeline", "ce", 2);
			struct rt_worker_stats d;
			char what[96];

			snprintf(what, sizeof(what), "%s/loop, all %s", styles[s], endings[k].name);
			small_params(&ctx, styles[s], "loop", "50", "0");
			d = one_op(&ctx, endings[k].valid, endings[k].fail, what);
			cr_expect_eq(d.spawned, 0, "%s: %llu tasks spawned", what,
				     (unsigned long long)d.spawned);
			/* the op's first run, then once again after each async boundary that
			 * a pipeline reaches: every one of the hand-written either's, which
			 * runs each stage whatever it holds, and the others' unless validate
			 * failed (a raise, a failed IO, a bind's Left skip the boundary). The
			 * transformer's extra steps are nodes of the run loop, not switches */
			cr_expect_eq(d.tasks_run, 1 + (k == 1 && s != 0 ? 0 : n),
				     "%s: the op's task ran %llu times", what,
				     (unsigned long long)d.tasks_run);
			cr_expect_eq(d.blocking_episodes, 0, "%s", what);
			cr_expect_eq(metric(&ctx, "submissions_per_pipeline"), 0, "%s", what);
			wl_test_finish(&ctx);
		}
}

Test(error_pipeline, zio_shifts_to_the_blocking_pool_and_back_once_a_pipeline, .timeout = 120)
{
	const long n = 50;

	for (size_t s = 0; s < NSTYLES; s++)
		for (size_t k = 0; k < 3; k++) {
			struct wl_ctx ctx = blocking_ctx("offload");
			struct rt_worker_stats d;
			char what[96];

			snprintf(what, sizeof(what), "%s/zio, all %s", styles[s], endings[k].name);
			small_params(&ctx, styles[s], "zio", "50", "0");
			d = one_op(&ctx, endings[k].valid, endings[k].fail, what);
			cr_expect_eq(d.spawned, 0, "%s: %llu tasks spawned", what,
				     (unsigned long long)d.spawned);
			/* a hop to the blocking pool for each call of the outside world, which
			 * an invalid input never reaches... */
			cr_expect_eq(d.offloads, k == 1 ? 0 : n, "%s: %llu offloads", what,
				     (unsigned long long)d.offloads);
			/* ...and one back, a run on a worker again; no async boundary */
			cr_expect_eq(d.tasks_run, 1 + (k == 1 ? 0 : n),
				     "%s: the op's task ran %llu times", what,
				     (unsigned long long)d.tasks_run);
			wl_test_finish(&ctx);
		}
}

/* ---- errors: traces and bytes -------------------------------------------------------------- */

Test(error_pipeline, raise_captures_a_backtrace_and_the_other_styles_do_not, .timeout = 180)
{
	for (size_t e = 0; e < NEXECS; e++) {
		double frames[NSTYLES], bytes[NSTYLES];

		for (size_t s = 0; s < NSTYLES; s++) {
			/* fail=1: every pipeline fails, one way or the other. zio on ZIO's
			 * blocking pool: after a hand-off (ce's) the op's task would go on on a
			 * thread without a worker, whose allocations no worker counts */
			struct wl_ctx ctx = e == 2 ? blocking_ctx("offload")
						   : wl_test_ctx("error-pipeline", "ce", 2);
			char err[512] = "";
			uint64_t before;

			small_params(&ctx, styles[s], execs[e], "100", "1");
			wl_test_setup(&ctx);
			before = totals(ctx.sched).alloc_bytes;

			cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
			bytes[s] = (double)(totals(ctx.sched).alloc_bytes - before) / 100;
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
		/* the typed channel carries a value: nothing captured */
		cr_expect_eq(frames[4], 0, "typed/%s", execs[e]);
		/* the frames are stored in the error: 8 bytes each */
		cr_expect_geq(bytes[2], bytes[3] + 8 * 3,
			      "raise/%s %.0f bytes per pipeline, notrace %.0f", execs[e], bytes[2],
			      bytes[3]);
		/* the combinator's closures are allocated per pipeline */
		cr_expect_gt(bytes[1], bytes[0], "combinator/%s %.0f, value %.0f", execs[e],
			     bytes[1], bytes[0]);
	}
}

/* ---- parameters and the check ------------------------------------------------------------- */

/* The study's error-ratio sweep, (failures, invalid): `fail` is the outside world's
 * failure rate, `valid` the threshold below which an input in [0,100) is valid. */
Test(error_pipeline, the_error_ratio_sweep_cells_give_their_shares, .timeout = 60)
{
	static const struct {
		const char *fail, *valid;
		double failures, invalid;
	} cells[] = {
		{ "0.1", "80", 0.10, 0.20 },
		{ "0.25", "70", 0.25, 0.30 },
		{ "0.45", "70", 0.45, 0.30 },
		{ "0.45", "50", 0.45, 0.50 },
	};

	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		struct wl_ctx ctx = wl_test_ctx("error-pipeline", "ce", 2);
		double invalid, failed, n = 4000;
		char err[512] = "";

		small_params(&ctx, "value", "loop", "4000", cells[i].fail);
		wl_test_param(&ctx, "valid", cells[i].valid);
		wl_test_setup(&ctx);
		cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
		invalid = metric(&ctx, "invalid_share") / 100;
		failed = metric(&ctx, "failed_share") / 100;
		/* 5 standard deviations of a binomial share of 4,000 draws */
		cr_expect(fabs(invalid - cells[i].invalid) <
				  5 * sqrt(cells[i].invalid * (1 - cells[i].invalid) / n),
			  "fail=%s valid=%s: %.3f invalid", cells[i].fail, cells[i].valid, invalid);
		/* the failures are the valid inputs' share that the outside world fails */
		cr_expect(fabs(failed / (1 - invalid) - cells[i].failures) <
				  5 * sqrt(cells[i].failures * (1 - cells[i].failures) /
					   ((1 - cells[i].invalid) * n)),
			  "fail=%s valid=%s: %.3f of the valid failed", cells[i].fail,
			  cells[i].valid, failed / (1 - invalid));
		wl_test_finish(&ctx);
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
			      "value,combinator,raise,raise-notrace,typed");
	cr_expect_eq(wl_test_parse(d, "exec", "fibers", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "error-pipeline: -P exec=fibers: expected one of pool,loop,zio");
	cr_expect_eq(wl_test_parse(d, "valid", "101", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "fail", "0", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(d, "fail", "1", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(d, "style", "typed", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(d, "exec", "zio", err, sizeof(err)), 0);
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
