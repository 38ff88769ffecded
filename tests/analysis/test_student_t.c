/*
 * Tests of analysis/student_t.c: Student's t quantiles against published tables and a
 * closed form, their symmetry and limits, and the summary of a sample (mean, sd, the
 * confidence half-width) including inputs that defeat a naive sum of squares.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>

#include "analysis/analysis.h"

/* Student's t quantile for df = 4 in closed form (Hill 1970; see Wikipedia, "Student's
 * t-distribution", quantile function), independent of the implementation under test. */
static double t4_closed_form(double p)
{
	double alpha = 4 * p * (1 - p);
	double q = cos(acos(sqrt(alpha)) / 3) / sqrt(alpha);

	return (p < 0.5 ? -2 : 2) * sqrt(q - 1);
}

Test(stats, t_quantile_matches_tables)
{
	static const struct {
		double p;
		unsigned df;
		double t;
	} table[] = {
	    {0.9995, 8, 5.041},	 {0.9995, 24, 3.745}, {0.975, 1, 12.706},   {0.975, 10, 2.228},
	    {0.9995, 4, 8.610},	 {0.9995, 99, 3.392}, {0.95, 5, 2.015},	    {0.995, 30, 2.750},
	    {0.9995, 2, 31.599}, {0.9995, 3, 12.924}, {0.9995, 1, 636.619}, {0.9, 1000, 1.282},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		double t = an_t_quantile(table[i].p, table[i].df);

		cr_expect(fabs(t - table[i].t) <= 0.001, "t(%g, %u) = %.6f, want %.3f", table[i].p,
			  table[i].df, t, table[i].t);
	}
}

Test(stats, t_quantile_matches_closed_form_for_df4)
{
	static const double ps[] = {1e-12, 1e-6, 0.001, 0.01, 0.1,   0.3,
				    0.45,  0.55, 0.8,	0.95, 0.999, 1 - 1e-9};
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		double want = t4_closed_form(ps[i]), got = an_t_quantile(ps[i], 4);

		cr_expect(fabs(got - want) <= 1e-9 * fabs(want), "t(%g, 4) = %.15g, want %.15g",
			  ps[i], got, want);
	}
}

/* Near the centre with many degrees of freedom the continued fraction converges most
 * slowly. References: mpmath 1.3 at 30 digits, findroot on betainc. */
Test(stats, t_quantile_near_the_centre_for_large_df)
{
	static const struct {
		double p;
		unsigned df;
		double t;
	} ref[] = {
	    {0.6, 10000, 0.253353843446},
	    {0.75, 5000, 0.674538820361},
	    {0.6, 500000, 0.25334723794},
	    {0.55, 999999, 0.125661378767},
	};
	for (size_t i = 0; i < sizeof(ref) / sizeof(ref[0]); i++) {
		double t = an_t_quantile(ref[i].p, ref[i].df);

		cr_expect(fabs(t - ref[i].t) <= 1e-8 * ref[i].t, "t(%g, %u) = %.12f, want %.12f",
			  ref[i].p, ref[i].df, t, ref[i].t);
	}
}

Test(stats, t_quantile_is_antisymmetric_and_monotonic)
{
	static const unsigned dfs[] = {1, 2, 3, 7, 24, 99, 1000, 10000, 2000000};
	static const double ps[] = {1e-9, 0.0005, 0.01, 0.2, 0.4, 0.5, 0.6, 0.8, 0.99, 0.9995};

	for (size_t d = 0; d < sizeof(dfs) / sizeof(dfs[0]); d++) {
		double prev = -INFINITY;

		for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
			/* p and 1 - p both exact in binary, so any asymmetry is the code's. */
			double p = 1 - (1 - ps[i]);
			double t = an_t_quantile(p, dfs[d]);
			double mirror = an_t_quantile(1 - p, dfs[d]);

			cr_expect(fabs(t + mirror) <= 1e-9 * (1 + fabs(t)),
				  "t(%g, %u) = %g but t(1-p) = %g", p, dfs[d], t, mirror);
			cr_expect(t > prev, "t(%g, %u) = %g not above %g", p, dfs[d], t, prev);
			prev = t;
		}
		cr_expect_eq(an_t_quantile(0.5, dfs[d]), 0.0);
	}
	/* More degrees of freedom, thinner tails. */
	cr_expect(an_t_quantile(0.9995, 10) > an_t_quantile(0.9995, 11));
	cr_expect(an_t_quantile(0.9995, 9999) > an_t_quantile(0.9995, 10000));
}

Test(stats, t_quantile_approaches_the_normal)
{
	cr_expect(fabs(an_t_quantile(0.975, 100000) - 1.95998) <= 0.0001, "%.6f",
		  an_t_quantile(0.975, 100000));
	cr_expect(fabs(an_t_quantile(0.9995, 10000) - 3.2915) <= 0.0001, "%.6f",
		  an_t_quantile(0.9995, 10000));
	cr_expect(fabs(an_t_quantile(0.975, 4000000000u) - 1.959964) <= 1e-6, "%.7f",
		  an_t_quantile(0.975, 4000000000u));
	/* The switch to the asymptotic series near 10^6 degrees of freedom is seamless. */
	for (unsigned df = 999990; df <= 1000010; df += 5) {
		double a = an_t_quantile(0.9995, df), b = an_t_quantile(0.9995, df + 1);

		cr_expect(a >= b && a - b < 1e-9, "t(0.9995, %u) = %.12f, next %.12f", df, a, b);
	}
}

Test(stats, t_quantile_extreme_tails_stay_finite)
{
	double t = an_t_quantile(1e-300, 3);

	cr_expect(isfinite(t) && t < -1e99, "t(1e-300, 3) = %g", t);
	cr_expect(isfinite(an_t_quantile(1e-300, 1)));
	/* Cauchy: tan(pi (p - 1/2)), computed the long way round (p - 1/2 keeps ~7 digits). */
	double cauchy = tan(M_PI * (1e-10 - 0.5));
	cr_expect(fabs(an_t_quantile(1e-10, 1) - cauchy) <= 1e-6 * fabs(cauchy), "%g vs %g",
		  an_t_quantile(1e-10, 1), cauchy);
}

Test(stats, t_quantile_rejects_bad_arguments)
{
	cr_expect(isnan(an_t_quantile(0.975, 0)));
	cr_expect(isnan(an_t_quantile(0, 5)));
	cr_expect(isnan(an_t_quantile(1, 5)));
	cr_expect(isnan(an_t_quantile(-0.5, 5)));
	cr_expect(isnan(an_t_quantile(1.5, 5)));
	cr_expect(isnan(an_t_quantile(NAN, 5)));
}

Test(stats, summarize_small_sample)
{
	const double x[] = {2, 4, 4, 4, 5, 5, 7, 9, 3};
	struct an_summary s;

	cr_assert_eq(an_summarize(x, 9, 0.999, &s), 0);
	cr_expect_eq(s.n, 9);
	cr_expect(fabs(s.mean - 43.0 / 9) < 1e-12, "mean %.15g", s.mean);
	/* sum of squared deviations: 241 - 43^2 / 9 */
	double sd = sqrt((241 - 43.0 * 43 / 9) / 8);
	cr_expect(fabs(s.sd - sd) < 1e-12, "sd %.15g want %.15g", s.sd, sd);
	cr_expect_eq(s.min, 2);
	cr_expect_eq(s.max, 9);
	cr_expect_eq(s.confidence, 0.999);
	cr_expect(fabs(s.ci_half - 5.041 * sd / 3) < 0.001 * sd, "ci %.6f", s.ci_half);
}

Test(stats, summarize_confidence_95)
{
	const double x[] = {1, 2, 3, 4, 5};
	struct an_summary s;

	cr_assert_eq(an_summarize(x, 5, 0.95, &s), 0);
	cr_expect_eq(s.mean, 3);
	cr_expect(fabs(s.sd - sqrt(2.5)) < 1e-12);
	/* t(0.975, 4) = 2.776445 */
	cr_expect(fabs(s.ci_half - 2.776445 * sqrt(2.5) / sqrt(5)) < 1e-5, "ci %.8f", s.ci_half);
}

Test(stats, summarize_is_numerically_stable)
{
	/* A naive sum of squares loses every digit of the variance at this offset. */
	double x[] = {4, 7, 13, 16};
	struct an_summary s;

	for (size_t i = 0; i < 4; i++)
		x[i] += 1e9;
	cr_assert_eq(an_summarize(x, 4, 0.999, &s), 0);
	cr_expect(fabs(s.mean - (1e9 + 10)) < 1e-6, "mean %.6f", s.mean);
	cr_expect(fabs(s.sd - sqrt(30)) < 1e-6, "sd %.9f", s.sd);
}

Test(stats, summarize_one_sample_has_no_interval)
{
	const double x[] = {42};
	struct an_summary s;

	cr_assert_eq(an_summarize(x, 1, 0.999, &s), 0);
	cr_expect_eq(s.n, 1);
	cr_expect_eq(s.mean, 42);
	cr_expect_eq(s.min, 42);
	cr_expect_eq(s.max, 42);
	cr_expect(isnan(s.ci_half));
	cr_expect(isnan(s.sd));
}

Test(stats, summarize_rejects_bad_arguments)
{
	const double x[] = {1, 2};
	struct an_summary s;

	cr_expect_eq(an_summarize(x, 0, 0.999, &s), -EINVAL);
	cr_expect_eq(an_summarize(x, 2, 0, &s), -EINVAL);
	cr_expect_eq(an_summarize(x, 2, 1, &s), -EINVAL);
	cr_expect_eq(an_summarize(x, 2, -0.5, &s), -EINVAL);
	cr_expect_eq(an_summarize(x, 2, NAN, &s), -EINVAL);
	cr_expect_eq(an_summarize(NULL, 2, 0.999, &s), -EINVAL);
	cr_expect_eq(an_summarize(x, 2, 0.999, NULL), -EINVAL);
}
