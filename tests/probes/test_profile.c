/*
 * The losses of a real profile, as the harness keeps it (harness/profile.c) around
 * tests/helpers/busy spinning 200 frames down, deeper than a walk keeps: each cut stack
 * is drawn as a [truncated] frame and counted as drawn, whether the frame-pointer walk
 * in the kernel cut it or the DWARF unwinder in user space did, and the folded total
 * stays the samples taken.
 */
#include <criterion/criterion.h>

#include "analysis/analysis.h"
#include "tests/probes/windows.h"

TestSuite(profile, .fini = reap_kids, .timeout = 120);

#define WANT_SAMPLES 100

static bool enough_samples(const struct hx_profile *p)
{
	return p->stats.samples >= WANT_SAMPLES;
}

static void samples_seen(const struct hx_profile *p, char *buf, size_t len)
{
	snprintf(buf, len, "%llu samples", (unsigned long long)p->stats.samples);
}

/* The [truncated] frames of f, each by its line's count. */
static uint64_t truncated_frames(const struct an_folded *f)
{
	const struct an_folded_line *l;
	uint64_t n = 0;
	size_t nl;

	l = an_folded_lines(f, &nl);
	for (size_t i = 0; i < nl; i++)
		for (const char *at = l[i].stack; (at = strstr(at, "[truncated]")); at++)
			n += l[i].count;
	return n;
}

static void expect_truncated_as_drawn(enum probe_callgraph cg)
{
	struct probe_oncpu_opts o = { .freq = 999, .callgraph = cg };
	struct hx_profile p;

	profile_busy(&p, &o, "deep", "busy-deep", 200, enough_samples, samples_seen);
	cr_assert_eq(p.error, 0, "profile: %s", strerror(-p.error));
	/* nearly all of the spin's time is 200 frames down */
	cr_expect_gt(p.truncated, p.stats.samples / 2, "%s: %llu of %llu samples cut",
		     hx_callgraph_name(cg), (unsigned long long)p.truncated,
		     (unsigned long long)p.stats.samples);
	cr_expect_eq(truncated_frames(p.folded), p.truncated, "%s: counted as drawn",
		     hx_callgraph_name(cg));
	cr_expect_eq(an_folded_total(p.folded), p.stats.samples, "%s: folded total",
		     hx_callgraph_name(cg));
	hx_profile_close(&p);
}

Test(profile, stacks_the_kernel_walk_cut_are_counted_as_drawn)
{
	expect_truncated_as_drawn(PROBE_CG_FP);
}

Test(profile, stacks_the_dwarf_unwinder_cut_are_counted_as_drawn)
{
	expect_truncated_as_drawn(PROBE_CG_DWARF);
}
