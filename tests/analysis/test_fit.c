/*
 * Growth fits: the exponent of exact power laws, its standard error against a hand
 * computation, its behaviour under noise, and the verdict table's bands and its
 * logarithm test.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "analysis/analysis.h"

static const double sizes[] = { 1000, 3000, 10000, 30000 };

static void power_law(double k, double c, double *y)
{
	for (size_t i = 0; i < 4; i++)
		y[i] = c * pow(sizes[i], k);
}

static void expect_exponent(double k)
{
	double y[4];
	struct an_fit f;

	power_law(k, 3.5e-7, y);
	cr_assert_eq(an_fit_loglog(sizes, y, 4, &f), 0);
	cr_expect_eq(f.n, 4);
	cr_expect_float_eq(f.k, k, 1e-9, "k = %g, fitted %.12g", k, f.k);
	cr_expect_float_eq(f.a, log(3.5e-7), 1e-9);
	cr_expect_lt(f.se_k, 1e-6, "an exact power law has no error: %g", f.se_k);
	cr_expect_float_eq(f.r2, 1, 1e-9);
}

Test(fit, exact_power_laws_give_their_exponent)
{
	expect_exponent(1);
	expect_exponent(2);
	expect_exponent(0.5);
}

/* x = 1, 2, 4, 8 gives ln x = 0, L, 2L, 3L (L = ln 2): mean 1.5L, Sxx = 5L². ln y = ln x
 * + e with e = +d, -d, -d, +d, which is orthogonal to both 1 and ln x, so the fit is
 * k = 1, a = 0 exactly, rss = 4d², s² = rss / (n - 2) = 2d², se_k = sqrt(s² / Sxx) =
 * d sqrt(2/5) / L = 0.0912440 for d = 0.1, and se_a = sqrt(s² (1/n + mean² / Sxx)) =
 * sqrt(0.02 × (0.25 + 0.45)) = 0.1183216. */
Test(fit, standard_errors_match_the_hand_computation)
{
	const double x[] = { 1, 2, 4, 8 }, d = 0.1;
	double y[4];
	struct an_fit f;

	for (size_t i = 0; i < 4; i++)
		y[i] = x[i] * exp(i == 0 || i == 3 ? d : -d);
	cr_assert_eq(an_fit_loglog(x, y, 4, &f), 0);
	cr_expect_float_eq(f.k, 1, 1e-12);
	cr_expect_float_eq(f.a, 0, 1e-12);
	cr_expect_float_eq(f.rss, 4 * d * d, 1e-12);
	cr_expect_float_eq(f.se_k, 0.0912440, 1e-6, "se_k %.7f", f.se_k);
	cr_expect_float_eq(f.se_a, 0.1183216, 1e-6, "se_a %.7f", f.se_a);
}

/* Multiplicative noise of up to ±10% (a fixed sequence, so the test is the same every
 * time) over 12 sizes: the exponent stays within three standard errors of the truth,
 * and the error is neither zero nor large. */
Test(fit, noise_moves_the_exponent_within_its_error)
{
	double x[12], y[12];
	uint32_t s = 12345;
	struct an_fit f;

	for (size_t i = 0; i < 12; i++) {
		s = s * 1103515245u + 12345u;
		x[i] = 1000 * pow(10, (double)i / 8);
		y[i] = 2e-9 * x[i] * x[i] * (1 + 0.2 * ((double)(s >> 8) / (1 << 24) - 0.5));
	}
	cr_assert_eq(an_fit_loglog(x, y, 12, &f), 0);
	cr_expect_gt(f.se_k, 0.001);
	cr_expect_lt(f.se_k, 0.1);
	cr_expect_lt(fabs(f.k - 2), 3 * f.se_k, "k %.4f ± %.4f", f.k, f.se_k);
	cr_expect_str_eq(an_fit_verdict(x, y, 12, &f), "quadratic");
}

Test(fit, bad_points_are_refused)
{
	const double x[] = { 1, 2, 3 }, same[] = { 5, 5, 5 }, y[] = { 1, 2, 3 };
	const double zero[] = { 1, 0, 3 }, nan_y[] = { 1, NAN, 3 };
	struct an_fit f;

	cr_expect_eq(an_fit_loglog(x, y, 1, &f), -EINVAL);
	cr_expect_eq(an_fit_loglog(same, y, 3, &f), -EINVAL, "every x the same");
	cr_expect_eq(an_fit_loglog(x, zero, 3, &f), -EINVAL);
	cr_expect_eq(an_fit_loglog(zero, y, 3, &f), -EINVAL);
	cr_expect_eq(an_fit_loglog(x, nan_y, 3, &f), -EINVAL);
	cr_expect_eq(an_fit_loglog(x, y, AN_FIT_MAX_POINTS + 1, &f), -EINVAL);
}

Test(fit, two_points_have_an_exponent_but_no_error_and_no_verdict)
{
	const double x[] = { 10, 100 }, y[] = { 1, 100 };
	struct an_fit f;

	cr_assert_eq(an_fit_loglog(x, y, 2, &f), 0);
	cr_expect_float_eq(f.k, 2, 1e-12);
	cr_expect(isnan(f.se_k));
	cr_expect_str_eq(an_fit_verdict(x, y, 2, &f), AN_FIT_TOO_FEW);
	cr_expect_str_eq(an_fit_verdict(x, y, 2, NULL), AN_FIT_TOO_FEW);
}

static const char *verdict_of(double k)
{
	double y[4];
	struct an_fit f;

	power_law(k, 1e-6, y);
	cr_assert_eq(an_fit_loglog(sizes, y, 4, &f), 0);
	return an_fit_verdict(sizes, y, 4, &f);
}

Test(fit, verdict_bands_by_exponent)
{
	cr_expect_str_eq(verdict_of(-0.5), "decreasing");
	cr_expect_str_eq(verdict_of(0), "constant");
	cr_expect_str_eq(verdict_of(0.19), "constant");
	cr_expect_str_eq(verdict_of(0.5), "sublinear");
	cr_expect_str_eq(verdict_of(1), "linear");
	cr_expect_str_eq(verdict_of(0.85), "linear");
	cr_expect_str_eq(verdict_of(1.5), "between linear and quadratic");
	cr_expect_str_eq(verdict_of(2), "quadratic");
	cr_expect_str_eq(verdict_of(2.15), "quadratic");
	cr_expect_str_eq(verdict_of(2.5), "between quadratic and cubic");
	cr_expect_str_eq(verdict_of(3), "cubic");
	cr_expect_str_eq(verdict_of(4), "faster than cubic");
}

/* Costs with a logarithm: their log-log slope sits inside a power's band, and the
 * refit as power × (c + b ln x) names them. */
Test(fit, verdict_names_the_logarithm_where_it_fits_better)
{
	const char *want[] = { "logarithmic", "n log n", "n² log n" };
	double y[4];
	struct an_fit f;

	for (int p = 0; p <= 2; p++) {
		for (size_t i = 0; i < 4; i++)
			y[i] = pow(sizes[i], p) * (2 + log(sizes[i]));
		cr_assert_eq(an_fit_loglog(sizes, y, 4, &f), 0);
		cr_expect_str_eq(an_fit_verdict(sizes, y, 4, &f), want[p], "power %d: k %.3f", p,
				 f.k);
	}
}

/* A fixed cost per op plus a linear one (what a real op has) is not n log n: the
 * refit's logarithm falls, so the power law stands. */
Test(fit, fixed_overhead_plus_linear_stays_linear)
{
	double y[4];
	struct an_fit f;

	for (size_t i = 0; i < 4; i++)
		y[i] = 20000 + 70 * sizes[i];
	cr_assert_eq(an_fit_loglog(sizes, y, 4, &f), 0);
	cr_expect_str_eq(an_fit_verdict(sizes, y, 4, &f), "linear", "k %.3f", f.k);
}
