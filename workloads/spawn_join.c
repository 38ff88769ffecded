/*
 * spawn-join: spawn a child task and join it, 1,000 times in sequence.
 *
 * The studies' "spawn/join" benchmark: it measures the cost of creating a task,
 * placing it, switching to it and waking its joiner, and so tells apart schedulers
 * that wake a sibling worker on every spawn from those that keep the child local.
 * Child i returns i + 1; the op returns the sum, n(n+1)/2.
 */
#include <stdio.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

static uint64_t spawn_join_child(void *arg)
{
	return (uint64_t)(uintptr_t)arg + 1;
}

static uint64_t spawn_join_op(struct wl_ctx *ctx)
{
	long n = wl_int(ctx, "n");
	uint64_t sum = 0;

	for (long i = 0; i < n; i++) {
		struct rt_task *t = rt_spawn(spawn_join_child, (void *)(uintptr_t)i);

		if (!t)
			return 0; /* out of stacks: the check reports it */
		sum += rt_join(t);
	}
	return sum;
}

static bool spawn_join_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	uint64_t n = (uint64_t)wl_int(ctx, "n"), want = n * (n + 1) / 2;

	if (result == want)
		return true;
	snprintf(err, errlen, "spawn-join: children's results sum to %llu, expected %llu",
		 (unsigned long long)result, (unsigned long long)want);
	return false;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "1000", 1, 100000000, NULL, "children spawned and joined in sequence per op" },
	{ 0 },
};

const struct wl_desc wl_spawn_join = {
	.name = "spawn-join",
	.summary = "spawn a child task and join it, n times in sequence",
	.unit = "ops/s",
	.params = params,
	.op = spawn_join_op,
	.check = spawn_join_check,
};
