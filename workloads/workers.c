/*
 * workers: 4,096 values x 64 arithmetic rounds, split over 8 worker tasks, joined.
 *
 * The studies' "8 workers" benchmark: CPU-bound tasks with no communication, so it
 * shows how evenly a scheduler spreads a fork of equal tasks over its threads. The
 * arithmetic is fixed so that peers in other languages do the same work: value i
 * starts at x = i + 1 and each round r does x = x * 6364136223846793005 +
 * 1442695040888963407 + r; x ^= x >> 31 (64-bit, wrapping). The op returns the
 * wrapping sum of all values, checked against a sequential reference computed at
 * setup (16452561075408646571 for the defaults).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

struct workers_state {
	uint64_t reference;
	long workers, values, rounds;
};

struct slice {
	uint64_t first, count, rounds;
};

/* Not inlined: the flame graph should show the tasks' own work by name. */
__attribute__((noinline)) uint64_t wl_workers_mix(uint64_t first, uint64_t count, uint64_t rounds)
{
	uint64_t sum = 0;

	for (uint64_t i = first; i < first + count; i++) {
		uint64_t x = i + 1;

		for (uint64_t r = 0; r < rounds; r++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull + r;
			x ^= x >> 31;
		}
		sum += x;
	}
	return sum;
}

static uint64_t workers_task(void *arg)
{
	const struct slice *s = arg;

	return wl_workers_mix(s->first, s->count, s->rounds);
}

static int workers_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct workers_state *st = malloc(sizeof(*st));

	if (!st) {
		snprintf(err, errlen, "workers: out of memory");
		return -ENOMEM;
	}
	st->workers = wl_int(ctx, "workers");
	st->values = wl_int(ctx, "values");
	st->rounds = wl_int(ctx, "rounds");
	st->reference = wl_workers_mix(0, (uint64_t)st->values, (uint64_t)st->rounds);
	ctx->state = st;
	return 0;
}

static uint64_t workers_op(struct wl_ctx *ctx)
{
	const struct workers_state *st = ctx->state;
	struct slice slices[256];
	struct rt_task *tasks[256];
	uint64_t per = (uint64_t)st->values / (uint64_t)st->workers;
	uint64_t extra = (uint64_t)st->values % (uint64_t)st->workers, first = 0, sum = 0;
	long spawned = 0;

	for (long k = 0; k < st->workers; k++) {
		slices[k].first = first;
		slices[k].count = per + ((uint64_t)k < extra);
		slices[k].rounds = (uint64_t)st->rounds;
		first += slices[k].count;
		tasks[k] = rt_spawn(workers_task, &slices[k]);
		if (!tasks[k])
			break;
		spawned++;
	}
	for (long k = 0; k < spawned; k++)
		sum += rt_join(tasks[k]);
	/* a failed spawn leaves values unsummed: the check reports it */
	return sum;
}

static bool workers_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct workers_state *st = ctx->state;

	if (result == st->reference)
		return true;
	snprintf(err, errlen, "workers: checksum %llu, expected %llu (the sequential reference)",
		 (unsigned long long)result, (unsigned long long)st->reference);
	return false;
}

static void workers_teardown(struct wl_ctx *ctx)
{
	free(ctx->state);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "workers", WL_INT, "8", 1, 256, NULL, "worker tasks the values are split over" },
	{ "values", WL_INT, "4096", 1, 100000000, NULL, "values computed per op" },
	{ "rounds", WL_INT, "64", 0, 1000000, NULL, "arithmetic rounds per value" },
	{ 0 },
};

const struct wl_desc wl_workers = {
	.name = "workers",
	.summary = "values x rounds of arithmetic split over worker tasks, joined",
	.unit = "ops/s",
	.params = params,
	.setup = workers_setup,
	.op = workers_op,
	.check = workers_check,
	.teardown = workers_teardown,
};
