/*
 * bind-chain: build and run a left-associated chain of `depth` suspended binds.
 *
 * The studies' "left-associated suspended binds, depth 10,000" (cats-effect's
 * foldLeft(IO(0))((acc, _) => acc.flatMap(i => IO(i + 1)))): the chain is built as
 * flat_map(flat_map(... delay(0) ..., k), k) with k(i) = delay(i + 1), so every step is
 * a suspended side effect, and run by the preset's own interpreter (the binds knob), or
 * the one -P interpreter names. With a continuation stack (`stack`: ce and most presets)
 * time and bytes per op grow linearly with depth; copying the continuation at every bind
 * (`naive`: kyo's binds=copy) they grow quadratically, as Kyo's did in the study, which
 * left Kyo's own cause open: the copy is our mechanism for the growth it measured (a
 * sweep over depth shows the exponent). The op returns the chain's value, depth.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>

#include "runtime/effect/effect.h"
#include "workloads/workload.h"

#define BIND_CHAIN_FAILED UINT64_MAX

static uint64_t zero(void *env)
{
	return 0;
}

static uint64_t succ(void *env)
{
	return (uint64_t)(uintptr_t)env + 1;
}

static struct fx_io *step(uint64_t i, void *env)
{
	return fx_delay(succ, (void *)(uintptr_t)i);
}

static uint64_t bind_chain_op(struct wl_ctx *ctx)
{
	long depth = wl_int(ctx, "depth");
	struct fx_io *io = fx_delay(zero, NULL);
	struct rt_result r;

	/* a failed constructor leaves NULL, which the next consumes and fx_run reports */
	for (long i = 0; i < depth; i++)
		io = fx_flat_map(io, step, NULL);
	r = fx_run(io, (enum fx_interp)wl_choice(ctx, "interpreter"));
	if (!r.ok) {
		rt_error_free(r.err);
		return BIND_CHAIN_FAILED;
	}
	return r.value;
}

static bool bind_chain_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	uint64_t depth = (uint64_t)wl_int(ctx, "depth");

	if (result == depth)
		return true;
	if (result == BIND_CHAIN_FAILED)
		snprintf(err, errlen, "bind-chain: the chain failed to run (out of memory?)");
	else
		snprintf(err, errlen, "bind-chain: the chain returned %llu, expected depth %llu",
			 (unsigned long long)result, (unsigned long long)depth);
	return false;
}

/* glibc gives a freed chunk's memory back as soon as the top of its arena exceeds
 * M_TRIM_THRESHOLD (128 KiB), with madvise(MADV_DONTNEED) in a worker's arena, and maps
 * chunks above M_MMAP_THRESHOLD (128 KiB, raised only after the first such free) with
 * mmap. The naive interpreter frees its previous continuation array on every bind, so
 * at depths of 3,000-16,000 each bind paid a madvise, its TLB shootdown and the page
 * faults after it: 140 ms per op at depth 10,000 against 6 ms with trimming off, and a
 * time that followed the other CPU's load rather than the copying. Both thresholds are
 * fixed high in this workload's forks (each fork runs one workload), so that time per
 * op measures the interpreter's copying, as the bytes per op do. */
#define BIND_CHAIN_MMAP_THRESHOLD (32 << 20) /* glibc's largest: HEAP_MAX_SIZE / 2 */
#define BIND_CHAIN_TRIM_THRESHOLD (64 << 20)

static int bind_chain_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
#if defined(RT_SANITIZE_ADDRESS)
	/* AddressSanitizer's allocator replaces glibc's and takes no mallopt (it returns 0):
	 * it has neither threshold, and its own policy is what a sanitizer build runs */
	return 0;
#endif
	if (!mallopt(M_MMAP_THRESHOLD, BIND_CHAIN_MMAP_THRESHOLD) ||
	    !mallopt(M_TRIM_THRESHOLD, BIND_CHAIN_TRIM_THRESHOLD)) {
		snprintf(err, errlen, "bind-chain: mallopt refused the allocator thresholds");
		return -EINVAL;
	}
	return 0;
}

static const struct wl_param params[] = {
	{ "depth", WL_INT, "10000", 1, 10000000, NULL, "binds in the left-associated chain" },
	/* the order of enum fx_interp */
	{ "interpreter", WL_CHOICE, "preset", 0, 0, "stack,naive,preset",
	  "preset: the preset's own (its binds knob: ce and the others a continuation stack, "
	  "kyo copies it at every bind); stack: a continuation stack (linear); naive: copies "
	  "it on every bind (quadratic)" },
	{ 0 },
};

const struct wl_desc wl_bind_chain = {
	.name = "bind-chain",
	.summary = "build and run a left-associated chain of depth suspended binds with the "
		   "preset's interpreter (binds=stack: a continuation stack, linear; binds=copy, "
		   "kyo: the continuation copied at every bind, quadratic, our model of the "
		   "growth the study measured in Kyo, whose cause it left open)",
	.unit = "ops/s",
	.params = params,
	.setup = bind_chain_setup,
	.op = bind_chain_op,
	.check = bind_chain_check,
};
