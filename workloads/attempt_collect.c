/*
 * attempt-collect: 1,000 attempts run in parallel, 10% of them fail, the successes are
 * collected.
 *
 * The studies' "parallel attempts, collect successes" (Kyo and cats-effect within each
 * other's intervals): a parTraverse of attempts, each turned into a result value, then
 * the successes kept in order. The op spawns all n attempts at once, each a task that
 * runs its body under rt_try: the body raises an error (no stack trace: the construction
 * measures the fan-out and the collection, not a trace's capture) or returns its value,
 * index + 1. The op joins them in order and collects the successes' values into a list;
 * the failures' errors are freed.
 *
 * Which attempts fail is drawn from `seed` by index (wl__draw_unit(seed, i) < fail), so
 * the outcome does not depend on the order the tasks run. The check compares the count
 * and the sum of the successes, and the count of failures, with setup's sequential
 * replay of the same draws.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/internal.h"
#include "workloads/workload.h"

#define ATTEMPT_FAILED 1 /* the code of an attempt's error */

struct attempt {
	uint64_t index;
	bool fails;
	struct rt_result result;
};

struct attempt_collect {
	long n;
	struct attempt *attempts;
	struct rt_task **tasks;
	uint64_t *collected;         /* the successes' values, in attempt order */
	long want_ok;                /* the sequential replay: successes */
	uint64_t want_sum;           /* and the sum of their values */
	long spawned, ok, failed;    /* by the last op */
	long foreign;                /* failures with an error other than an attempt's */
};

static uint64_t attempt_body(void *arg)
{
	const struct attempt *a = arg;

	if (a->fails)
		rt_raise_notrace(ATTEMPT_FAILED, "attempt failed");
	return a->index + 1;
}

static uint64_t attempt_task(void *arg)
{
	struct attempt *a = arg;

	a->result = rt_try(attempt_body, a);
	return 0;
}

static int attempt_collect_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct attempt_collect *ac = calloc(1, sizeof(*ac));
	long n = wl_int(ctx, "n");
	uint64_t seed = (uint64_t)wl_int(ctx, "seed");
	double fail = wl_real(ctx, "fail");

	if (!ac || !(ac->attempts = calloc((size_t)n, sizeof(*ac->attempts))) ||
	    !(ac->tasks = calloc((size_t)n, sizeof(*ac->tasks))) ||
	    !(ac->collected = calloc((size_t)n, sizeof(*ac->collected)))) {
		if (ac) {
			free(ac->attempts);
			free(ac->tasks);
		}
		free(ac);
		snprintf(err, errlen, "attempt-collect: out of memory for %ld attempts", n);
		return -ENOMEM;
	}
	ac->n = n;
	for (long i = 0; i < n; i++) {
		ac->attempts[i].index = (uint64_t)i;
		ac->attempts[i].fails = wl__draw_unit(seed, (uint64_t)i) < fail;
		if (!ac->attempts[i].fails) {
			ac->want_ok++;
			ac->want_sum += (uint64_t)i + 1;
		}
	}
	ctx->state = ac;
	return 0;
}

static uint64_t attempt_collect_op(struct wl_ctx *ctx)
{
	struct attempt_collect *ac = ctx->state;
	uint64_t sum = 0;

	ac->ok = ac->failed = ac->foreign = 0;
	for (ac->spawned = 0; ac->spawned < ac->n; ac->spawned++) {
		struct attempt *a = &ac->attempts[ac->spawned];

		a->result = (struct rt_result){ 0 };
		ac->tasks[ac->spawned] = rt_spawn(attempt_task, a);
		if (!ac->tasks[ac->spawned])
			break; /* the attempts not spawned are missing: the check names them */
	}
	for (long i = 0; i < ac->spawned; i++) {
		struct rt_result *r = &ac->attempts[i].result;

		rt_join(ac->tasks[i]);
		if (r->ok) {
			ac->collected[ac->ok++] = r->value;
			continue;
		}
		ac->failed++;
		ac->foreign += rt_error_code(r->err) != ATTEMPT_FAILED;
		rt_error_free(r->err);
	}
	for (long k = 0; k < ac->ok; k++)
		sum += ac->collected[k];
	return sum;
}

static bool attempt_collect_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct attempt_collect *ac = ctx->state;

	if (result == ac->want_sum && ac->ok == ac->want_ok && ac->failed == ac->n - ac->want_ok &&
	    !ac->foreign)
		return true;
	snprintf(err, errlen,
		 "attempt-collect: %ld successes summing to %llu and %ld failures (%ld of them "
		 "not an attempt's error) of %ld attempts run, expected %ld summing to %llu and "
		 "%ld failures of %ld (the seeded replay)",
		 ac->ok, (unsigned long long)result, ac->failed, ac->foreign, ac->spawned,
		 ac->want_ok, (unsigned long long)ac->want_sum, ac->n - ac->want_ok, ac->n);
	return false;
}

static void attempt_collect_teardown(struct wl_ctx *ctx)
{
	struct attempt_collect *ac = ctx->state;

	if (ac) {
		free(ac->attempts);
		free(ac->tasks);
		free(ac->collected);
	}
	free(ac);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "1000", 1, 10000000, NULL, "attempts run in parallel per op" },
	{ "fail", WL_REAL, "0.1", 0, 1, NULL, "the share of attempts that fail, from 0 to 1" },
	{ "seed", WL_INT, "1", 0, 4294967295.0, NULL, "seeds the draw of which attempts fail" },
	{ 0 },
};

const struct wl_desc wl_attempt_collect = {
	.name = "attempt-collect",
	.summary = "n attempts spawned at once, a seeded share fail raising an error, the "
		   "successes collected in order",
	.unit = "ops/s",
	.params = params,
	.setup = attempt_collect_setup,
	.op = attempt_collect_op,
	.check = attempt_collect_check,
	.teardown = attempt_collect_teardown,
};
