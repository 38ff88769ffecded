/*
 * permit: 1,000 uncontended acquire/release pairs on one semaphore.
 *
 * The studies' "uncontended permit acquire/release" (Kyo ~5x cats-effect): one task
 * takes and returns the only permit of a semaphore n times, so the op measures the
 * primitive's fast path alone, one atomic instruction each way, with no waiter and no
 * scheduling. The semaphore lives from setup to teardown; the op returns the pairs it
 * completed and the check also finds the permit back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

#define PERMITS 1

static __attribute__((noinline)) void permit_pair(struct rt_sem *sem)
{
	rt_sem_acquire(sem);
	rt_sem_release(sem);
}

static int permit_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct rt_sem *sem = malloc(sizeof(*sem));

	if (!sem) {
		snprintf(err, errlen, "permit: out of memory");
		return -ENOMEM;
	}
	rt_sem_init(sem, PERMITS);
	ctx->state = sem;
	return 0;
}

static uint64_t permit_op(struct wl_ctx *ctx)
{
	long n = wl_int(ctx, "n");
	uint64_t pairs = 0;

	for (long i = 0; i < n; i++, pairs++)
		permit_pair(ctx->state);
	return pairs;
}

static bool permit_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	uint64_t n = (uint64_t)wl_int(ctx, "n"), free_now = rt_sem_available(ctx->state);

	if (result == n && free_now == PERMITS)
		return true;
	snprintf(err, errlen,
		 "permit: %llu of %llu acquire/release pairs done, %llu permit(s) free after "
		 "the op, expected %d",
		 (unsigned long long)result, (unsigned long long)n, (unsigned long long)free_now,
		 PERMITS);
	return false;
}

static void permit_teardown(struct wl_ctx *ctx)
{
	if (ctx->state)
		rt_sem_destroy(ctx->state);
	free(ctx->state);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "1000", 1, 100000000, NULL, "acquire/release pairs per op" },
	{ 0 },
};

const struct wl_desc wl_permit = {
	.name = "permit",
	.summary = "n uncontended acquire/release pairs on one semaphore",
	.unit = "ops/s",
	.params = params,
	.setup = permit_setup,
	.op = permit_op,
	.check = permit_check,
	.teardown = permit_teardown,
};
