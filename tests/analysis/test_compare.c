/*
 * Tests of analysis/compare.c: Fieller's interval for a ratio of means against a case
 * worked by hand, the verdict on either side of the noise band and when the interval
 * holds 1, and comparisons of result.json documents: the refusals, a time-per-op unit,
 * parameters that differ, category shares in points and which counters count as
 * differing materially.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

static struct an_summary summary_of(const double *x, size_t n)
{
	struct an_summary s;

	cr_assert_eq(an_summarize(x, n, 0.999, &s), 0);
	return s;
}

/*
 * A = 96, 98, 100, 102, 104: mean 100, variance 10, so var(mean A) = 10/5 = 2.
 * B = 1.2 A: mean 120, variance 14.4, var(mean B) = 2.88.
 * Welch-Satterthwaite at R = 1.2: a = 2.88, b = 1.44 * 2 = 2.88, so
 * df = (a + b)^2 / (a^2/4 + b^2/4) = 8 exactly; t(0.9995, 8) = 5.041305 (tables: 5.041).
 * Fieller: (120 - R 100)^2 = t^2 (2.88 + 2 R^2), i.e.
 * (10000 - 2 t^2) R^2 - 24000 R + (14400 - 2.88 t^2) = 0
 * 9949.17 R^2 - 24000 R + 14326.81 = 0, R = 1.084676 or 1.327586.
 * (The delta method's 1.2 ± t 1.2 sqrt(2e-4 + 2e-4) would be 1.0790 to 1.3210.)
 */
Test(compare, fieller_interval_matches_the_hand_computed_case)
{
	double a[] = { 96, 98, 100, 102, 104 }, b[5];
	struct an_summary sa, sb;
	struct an_ratio r;

	for (int i = 0; i < 5; i++)
		b[i] = 1.2 * a[i];
	sa = summary_of(a, 5);
	sb = summary_of(b, 5);
	cr_assert_eq(an_ratio_fieller(&sb, &sa, 0.999, &r), 0);
	cr_expect(r.bounded);
	cr_expect_float_eq(r.value, 1.2, 1e-12);
	cr_expect_float_eq(r.df, 8.0, 1e-9);
	cr_expect_float_eq(r.lo, 1.084676, 2e-6, "lo %.7f", r.lo);
	cr_expect_float_eq(r.hi, 1.327586, 2e-6, "hi %.7f", r.hi);
	cr_expect_float_eq(r.confidence, 0.999, 0);
}

Test(compare, fieller_is_unbounded_when_the_denominator_may_be_zero)
{
	double a[] = { 1, 2, 100 }, b[] = { 50, 51, 52 };
	struct an_summary sa = summary_of(a, 3), sb = summary_of(b, 3);
	struct an_ratio r;

	cr_assert_eq(an_ratio_fieller(&sb, &sa, 0.999, &r), 0);
	cr_expect_not(r.bounded);
	cr_expect(isnan(r.lo) && isnan(r.hi));
	cr_expect_eq(an_ratio_verdict(&r, AN_COMPARE_NOISE_PCT), AN_VERDICT_CANNOT_TELL);
}

Test(compare, fieller_of_identical_iterations_is_a_point)
{
	double a[] = { 10, 10, 10 }, b[] = { 20, 20, 20, 20 };
	struct an_summary sa = summary_of(a, 3), sb = summary_of(b, 4);
	struct an_ratio r;

	cr_assert_eq(an_ratio_fieller(&sb, &sa, 0.999, &r), 0);
	cr_expect(r.bounded);
	cr_expect_eq(r.lo, 2.0);
	cr_expect_eq(r.hi, 2.0);
	cr_expect_eq(an_ratio_verdict(&r, AN_COMPARE_NOISE_PCT), AN_VERDICT_FASTER);
}

Test(compare, fieller_refuses_what_has_no_interval)
{
	double one[] = { 5 }, two[] = { 4, 6 }, zero[] = { -1, 1 };
	struct an_summary s1 = summary_of(one, 1), s2 = summary_of(two, 2);
	struct an_summary s0 = summary_of(zero, 2);
	struct an_ratio r;

	cr_expect_eq(an_ratio_fieller(&s2, &s1, 0.999, &r), -EINVAL, "n = 1");
	cr_expect_eq(an_ratio_fieller(&s1, &s2, 0.999, &r), -EINVAL, "n = 1");
	cr_expect_eq(an_ratio_fieller(&s2, &s0, 0.999, &r), -EINVAL, "a mean of 0");
	cr_expect_eq(an_ratio_fieller(&s2, &s2, 1.0, &r), -EINVAL, "confidence 1");
}

static struct an_ratio ratio(double value, double lo, double hi)
{
	return (struct an_ratio){ .value = value, .lo = lo, .hi = hi, .bounded = true,
				  .confidence = 0.999 };
}

Test(compare, verdict_needs_the_interval_to_exclude_one_and_the_change_beyond_the_band)
{
	struct an_ratio r;

	/* the band is 5%: either side of it, with intervals that exclude 1 */
	r = ratio(1.06, 1.02, 1.10);
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_FASTER);
	r = ratio(1.04, 1.02, 1.06);
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_NO_CHANGE, "within the band");
	r = ratio(0.94, 0.90, 0.98);
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_SLOWER);
	r = ratio(0.96, 0.94, 0.98);
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_NO_CHANGE, "within the band");
	/* a large change whose interval holds 1 */
	r = ratio(1.5, 0.8, 2.2);
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_NO_CHANGE, "the interval holds 1");
	r = ratio(0.5, 0.2, 1.01);
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_NO_CHANGE, "the interval holds 1");
	r = ratio(1.5, 0.8, 2.2);
	r.bounded = false;
	cr_expect_eq(an_ratio_verdict(&r, 5), AN_VERDICT_CANNOT_TELL, "no interval");
	cr_expect_str_eq(an_verdict_name(AN_VERDICT_FASTER), "faster");
	cr_expect_str_eq(an_verdict_name(AN_VERDICT_SLOWER), "slower");
	cr_expect_str_eq(an_verdict_name(AN_VERDICT_NO_CHANGE), "no change");
	cr_expect_str_eq(an_verdict_name(AN_VERDICT_CANNOT_TELL), "cannot tell");
}

/* ---- comparisons of result.json documents ------------------------------------------ */

struct doc_opts {
	const char *id, *workload, *unit, *params, *samples, *failure, *preset;
	const char *runtime;    /* members of "runtime" after "ops" */
	const char *categories; /* the probe's "categories" members; NULL: no probe */
};

static struct an_result *doc(struct doc_opts o)
{
	char text[4096], err[512] = "";
	struct an_result *r;

	snprintf(text, sizeof(text),
		 "{\"schema\": \"schedlab-result/1\", \"id\": \"%s\", \"workload\": \"%s\","
		 " \"preset\": \"%s\", \"params\": \"%s\", \"unit\": \"%s\", \"workers\": 2, \"forks\": 1,"
		 " \"warmup_iterations\": 1, \"iterations\": 3, \"iteration_seconds\": 0.2,"
		 " \"samples\": [%s], \"failure\": %s%s%s,"
		 " \"runtime\": {\"ops\": 1000%s%s},"
		 " \"per_iteration\": {\"columns\": [\"parks\", \"steals\", \"spawned\"],"
		 " \"rows\": []},"
		 " \"knobs\": {\"spawn\": \"local\"}, \"probes\": [%s%s%s]}",
		 o.id, o.workload ? o.workload : "spawn-join", o.preset ? o.preset : "ce",
		 o.params ? o.params : "n=1000", o.unit ? o.unit : "ops/s",
		 o.samples ? o.samples : "100, 101, 99", o.failure ? "\"" : "",
		 o.failure ? o.failure : "null", o.failure ? "\"" : "", o.runtime ? ", " : "",
		 o.runtime ? o.runtime : "",
		 o.categories ? "{\"name\": \"oncpu\", \"status\": \"attached\","
				" \"categories\": {" : "",
		 o.categories ? o.categories : "", o.categories ? "}}" : "");
	r = an_result_parse(text, strlen(text), o.id, err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	return r;
}

static char *markdown(const struct an_compare *c)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&buf, &n);

	cr_assert_not_null(fp);
	cr_assert_eq(an_compare_markdown(c, fp), 0);
	cr_assert_eq(fclose(fp), 0);
	return buf;
}

/* compare.md of B against A, with the verdict in *verdict (may be NULL). */
static char *compare_md(struct doc_opts oa, struct doc_opts ob, enum an_verdict *verdict,
			double *ratio)
{
	struct an_result *a = doc(oa), *b = doc(ob);
	char err[512] = "", *md;
	struct an_compare *c = an_compare_new(a, b, err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	md = markdown(c);
	if (verdict)
		*verdict = an_compare_verdict(c);
	if (ratio)
		*ratio = an_compare_ratio(c)->value;
	an_compare_free(c);
	an_result_free(a);
	an_result_free(b);
	return md;
}

static void expect_refused(struct an_result *a, struct an_result *b, const char *needle,
			   const char *needle2)
{
	char err[512] = "";

	errno = 0;
	cr_expect_null(an_compare_new(a, b, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	cr_expect_null(strchr(err, '\n'), "one line: %s", err);
	cr_expect_not_null(strstr(err, needle), "'%s' not in: %s", needle, err);
	if (needle2)
		cr_expect_not_null(strstr(err, needle2), "'%s' not in: %s", needle2, err);
	an_result_free(a);
	an_result_free(b);
}

Test(compare, runs_of_two_workloads_are_refused_naming_both)
{
	expect_refused(doc((struct doc_opts){ .id = "runA" }),
		       doc((struct doc_opts){ .id = "runB", .workload = "workers" }), "spawn-join",
		       "workers");
}

Test(compare, a_failed_run_is_refused)
{
	expect_refused(doc((struct doc_opts){ .id = "runA" }),
		       doc((struct doc_opts){ .id = "runB", .samples = " ",
					      .failure = "fork 1 exited with status 1" }),
		       "runB", "fork 1 exited with status 1");
	expect_refused(doc((struct doc_opts){ .id = "runA", .samples = "5" }),
		       doc((struct doc_opts){ .id = "runB" }), "--iterations 2", NULL);
}

Test(compare, different_units_are_refused)
{
	expect_refused(doc((struct doc_opts){ .id = "runA" }),
		       doc((struct doc_opts){ .id = "runB", .unit = "ns/op" }), "ops/s", "ns/op");
	expect_refused(doc((struct doc_opts){ .id = "runA", .unit = "widgets" }),
		       doc((struct doc_opts){ .id = "runB", .unit = "widgets" }), "widgets", NULL);
}

Test(compare, a_time_per_op_is_better_smaller)
{
	/* B takes half the time per op: twice the throughput */
	enum an_verdict v;
	double r;
	char *md = compare_md((struct doc_opts){ .id = "runA", .unit = "ns/op",
						 .samples = "10.0, 10.1, 9.9, 10.0" },
			      (struct doc_opts){ .id = "runB", .unit = "ns/op",
						 .samples = "5.0, 5.05, 4.95, 5.0" },
			      &v, &r);

	cr_expect_float_eq(r, 2.0, 1e-9);
	cr_expect_eq(v, AN_VERDICT_FASTER);
	cr_expect_not_null(strstr(md, "ns/op: lower is better"), "%s", md);
	free(md);
}

Test(compare, slower_throughput_is_slower)
{
	enum an_verdict v;
	double r;
	char *md = compare_md((struct doc_opts){ .id = "runA", .samples = "1000, 1010, 990" },
			      (struct doc_opts){ .id = "runB", .samples = "800, 808, 792" }, &v,
			      &r);

	cr_expect_float_eq(r, 0.8, 1e-9);
	cr_expect_eq(v, AN_VERDICT_SLOWER);
	cr_expect_not_null(strstr(md, "**Verdict: slower**"), "%s", md);
	cr_expect_not_null(strstr(md, "Fieller"), "the method is named: %s", md);
	cr_expect_null(strstr(md, "parameters differ"), "%s", md);
	free(md);
}

/* Kyo against kyo-tuned on blocking TCP, three iterations each: A's scores so spread that
 * its mean is not told apart from 0 at 99.9%, B's 30 times as high. The ratio has no
 * interval: the runs cannot tell, and the report says why and what to run instead, not
 * "no change". */
Test(compare, a_ratio_without_an_interval_cannot_tell)
{
	enum an_verdict v;
	double r;
	char *md = compare_md((struct doc_opts){ .id = "runA", .samples = "2, 40, 4" },
			      (struct doc_opts){ .id = "runB", .samples = "450, 460, 470" }, &v,
			      &r);

	cr_expect_gt(r, 20);
	cr_expect_eq(v, AN_VERDICT_CANNOT_TELL);
	cr_expect_not_null(strstr(md, "**Verdict: cannot tell**"), "%s", md);
	cr_expect_not_null(strstr(md, "A's 3 iterations vary so much"), "%s", md);
	cr_expect_not_null(strstr(md, "`--iterations`"), "what to run: %s", md);
	cr_expect_null(strstr(md, "no change"), "%s", md);
	free(md);
}

Test(compare, different_parameters_are_compared_and_said)
{
	char *md = compare_md((struct doc_opts){ .id = "runA" },
			      (struct doc_opts){ .id = "runB", .params = "n=2000" }, NULL, NULL);

	cr_expect_not_null(strstr(md, "parameters differ** (A n=1000, B n=2000)"), "%s", md);
	free(md);
}

Test(compare, category_shares_side_by_side_in_points)
{
	/* A: 300 of 1000 samples scheduling (30%); B: 100 of 500 (20%): -10 points */
	const char *cats_a = "\"work\": 700, \"scheduling\": 300";
	const char *cats_b = "\"work\": 400, \"scheduling\": 100";
	char *md = compare_md((struct doc_opts){ .id = "runA", .categories = cats_a },
			      (struct doc_opts){ .id = "runB", .categories = cats_b }, NULL, NULL);

	cr_expect_not_null(strstr(md, "| scheduling | 30.0% | 20.0% | -10.0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "| work | 70.0% | 80.0% | +10.0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "A: oncpu attached"), "%s", md);
	free(md);
}

Test(compare, only_counters_that_differ_materially_are_listed)
{
	/* per op: parks 2.0 vs 1.0 (2000 events, listed); steals 0.010 vs 0.005 (10 events
	 * at most: too rare to tell); spawned 1000 vs 1100 (within 1.25x) */
	const char *rt_a = "\"parks\": 2000, \"steals\": 10, \"spawned\": 1000000";
	const char *rt_b = "\"parks\": 1000, \"steals\": 5, \"spawned\": 1100000";
	char *md = compare_md((struct doc_opts){ .id = "runA", .runtime = rt_a },
			      (struct doc_opts){ .id = "runB", .runtime = rt_b }, NULL, NULL);

	cr_expect_not_null(strstr(md, "| parks | 2 | 1 | 0.5 |"), "%s", md);
	cr_expect_null(strstr(md, "| steals |"), "%s", md);
	cr_expect_null(strstr(md, "| spawned |"), "%s", md);
	cr_expect_not_null(strstr(md, "the other 2 are within that"), "%s", md);
	free(md);
}

/* Findings that one run has and the other not: stranded work (half of A's 1.2 s of worker
 * time) vanishes in B, and appears when the runs are swapped. */
Test(compare, findings_that_appear_and_vanish_are_named)
{
	struct doc_opts stranded = { .id = "runA", .runtime = "\"stranded_ns\": 6e8" };
	struct doc_opts clean = { .id = "runB", .runtime = "\"stranded_ns\": 0" };
	char *md = compare_md(stranded, clean, NULL, NULL);

	cr_expect_not_null(strstr(md, "## Findings"), "%s", md);
	cr_expect_not_null(strstr(md, "| stranded-work | 50% |  | vanishes: "), "%s", md);
	free(md);
	stranded.id = "runB";
	clean.id = "runA";
	md = compare_md(clean, stranded, NULL, NULL);
	cr_expect_not_null(strstr(md, "| stranded-work |  | 50% | appears: "), "%s", md);
	free(md);
	md = compare_md(clean, clean, NULL, NULL);
	cr_expect_null(strstr(md, "stranded-work"), "%s", md);
	free(md);
}
