/*
 * stream-par: 10,000 elements mapped with parallelism 8, the output in input order.
 *
 * The studies' "parallel stream batches" (Kyo ~1.93x cats-effect, ~1.11x with a little
 * CPU work in the map). As fs2's parEvalMap(8) does it, each element's map runs as a
 * task of its own, at most `par` at once, and results are emitted in input order: the
 * op keeps a window of the last `par` tasks spawned, and before spawning one more it
 * joins the oldest and emits its result. So the op costs a spawn and a join per
 * element, and how much the maps overlap depends on whether the scheduler hands the
 * new tasks to other workers.
 *
 * The map of element i is the `workers` arithmetic of value i with `rounds` rounds
 * (wl_workers_mix): rounds=0 is the plain construction, rounds=64 the "little CPU
 * work" variant. The output goes to an array; the op returns its fold (wl__fold). The
 * check compares the array, element by element, and the fold with a sequential map
 * computed at setup, so a result out of place is named by its position.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rt.h"
#include "workloads/internal.h"
#include "workloads/workload.h"

#define MAX_PAR 1024

struct stream_par {
	long n, par;
	uint64_t rounds;
	uint64_t *out;       /* the op's output, in emission order */
	uint64_t *expected;  /* the sequential map */
	uint64_t reference;  /* its fold */
	long emitted;        /* by the last op */
	/* the window: slot k is reused only after its task has been joined, so each task's
	 * argument lives as long as the task (here, not on the op's stack, which is small) */
	struct rt_task *window[MAX_PAR];
	struct stream_par_elem {
		uint64_t index, rounds;
	} elems[MAX_PAR];
};

static uint64_t stream_par_map(void *arg)
{
	const struct stream_par_elem *e = arg;

	return wl_workers_mix(e->index, 1, e->rounds);
}

static int stream_par_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct stream_par *sp = calloc(1, sizeof(*sp));
	long n = wl_int(ctx, "n");

	if (!sp || !(sp->out = calloc((size_t)n, sizeof(uint64_t))) ||
	    !(sp->expected = calloc((size_t)n, sizeof(uint64_t)))) {
		if (sp)
			free(sp->out);
		free(sp);
		snprintf(err, errlen, "stream-par: out of memory for %ld elements", n);
		return -ENOMEM;
	}
	sp->n = n;
	sp->par = wl_int(ctx, "par");
	sp->rounds = (uint64_t)wl_int(ctx, "rounds");
	sp->reference = WL__FOLD_SEED;
	for (long i = 0; i < n; i++) {
		sp->expected[i] = wl_workers_mix((uint64_t)i, 1, sp->rounds);
		sp->reference = wl__fold(sp->reference, sp->expected[i]);
	}
	ctx->state = sp;
	return 0;
}

static uint64_t stream_par_op(struct wl_ctx *ctx)
{
	struct stream_par *sp = ctx->state;
	uint64_t acc = WL__FOLD_SEED;
	long spawned = 0, emitted = 0, par = sp->par;

	for (long i = 0; i < sp->n; i++) {
		long k = i % par;

		if (i >= par) { /* the window is full: emit its oldest */
			sp->out[emitted] = rt_join(sp->window[k]);
			acc = wl__fold(acc, sp->out[emitted++]);
		}
		sp->elems[k] = (struct stream_par_elem){ (uint64_t)i, sp->rounds };
		sp->window[k] = rt_spawn(stream_par_map, &sp->elems[k]);
		if (!sp->window[k])
			break; /* the elements not mapped are missing: the check names them */
		spawned++;
	}
	for (; emitted < spawned; emitted++) {
		sp->out[emitted] = rt_join(sp->window[emitted % par]);
		acc = wl__fold(acc, sp->out[emitted]);
	}
	sp->emitted = emitted;
	return acc;
}

static bool stream_par_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	const struct stream_par *sp = ctx->state;
	long i;

	if (sp->emitted != sp->n) {
		snprintf(err, errlen, "stream-par: %ld of %ld elements emitted", sp->emitted,
			 sp->n);
		return false;
	}
	for (i = 0; i < sp->n && sp->out[i] == sp->expected[i]; i++)
		;
	if (i < sp->n) {
		snprintf(err, errlen,
			 "stream-par: output element %ld is %llu, expected %llu (the sequential "
			 "map of element %ld)",
			 i, (unsigned long long)sp->out[i], (unsigned long long)sp->expected[i], i);
		return false;
	}
	if (result == sp->reference)
		return true;
	snprintf(err, errlen, "stream-par: the fold is %llu, expected %llu (the sequential fold)",
		 (unsigned long long)result, (unsigned long long)sp->reference);
	return false;
}

static void stream_par_teardown(struct wl_ctx *ctx)
{
	struct stream_par *sp = ctx->state;

	if (sp) {
		free(sp->out);
		free(sp->expected);
	}
	free(sp);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "10000", 1, 100000000, NULL, "elements mapped per op" },
	{ "par", WL_INT, "8", 1, MAX_PAR, NULL, "maps running at once, at most" },
	{ "rounds", WL_INT, "0", 0, 1000000, NULL,
	  "arithmetic rounds of the workers' mix per element (64: a little CPU work)" },
	{ 0 },
};

const struct wl_desc wl_stream_par = {
	.name = "stream-par",
	.summary = "n elements mapped by a task each, par at once, emitted in input order",
	.unit = "ops/s",
	.params = params,
	.setup = stream_par_setup,
	.op = stream_par_op,
	.check = stream_par_check,
	.teardown = stream_par_teardown,
};
