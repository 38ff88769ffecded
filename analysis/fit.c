/*
 * fit.c — growth exponents: how a cost (time per op, bytes per op) grows with a size.
 *
 * The exponent is the slope k of ordinary least squares on log-log, ln y = a + k ln x,
 * with its standard error from the residuals (n - 2 degrees of freedom). The verdict
 * reads k against one table of bands (below); where a band's cost could also be a power
 * times a logarithm (log n, n log n, n² log n), whose log-log slope is the power plus
 * 1/ln x and so lies inside the band, the points are refitted as y / x^p = c + b ln x
 * and the logarithm is named only when that model fits better than the power law.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>

#include "analysis/analysis.h"

/* Ordinary least squares of v on u: v = a + k u. rss is the residual sum of squares;
 * se_* are NAN with fewer than three points. -EINVAL when every u is the same. */
static int ols(const double *u, const double *v, size_t n, struct an_fit *out)
{
	double mu = 0, mv = 0, suu = 0, suv = 0, svv = 0, rss = 0, s2;

	for (size_t i = 0; i < n; i++) {
		mu += u[i];
		mv += v[i];
	}
	mu /= (double)n;
	mv /= (double)n;
	for (size_t i = 0; i < n; i++) {
		suu += (u[i] - mu) * (u[i] - mu);
		suv += (u[i] - mu) * (v[i] - mv);
		svv += (v[i] - mv) * (v[i] - mv);
	}
	if (!(suu > 1e-12 * (1 + mu * mu)))
		return -EINVAL;
	out->n = n;
	out->k = suv / suu;
	out->a = mv - out->k * mu;
	for (size_t i = 0; i < n; i++) {
		double r = v[i] - (out->a + out->k * u[i]);

		rss += r * r;
	}
	out->rss = rss;
	out->r2 = svv > 0 ? 1 - rss / svv : 1;
	if (n < 3) {
		out->se_k = out->se_a = NAN;
		return 0;
	}
	s2 = rss / (double)(n - 2);
	out->se_k = sqrt(s2 / suu);
	out->se_a = sqrt(s2 * (1.0 / (double)n + mu * mu / suu));
	return 0;
}

int an_fit_loglog(const double *x, const double *y, size_t n, struct an_fit *out)
{
	double lx[AN_FIT_MAX_POINTS], ly[AN_FIT_MAX_POINTS];

	if (n < 2 || n > AN_FIT_MAX_POINTS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!(x[i] > 0) || !(y[i] > 0) || !isfinite(x[i]) || !isfinite(y[i]))
			return -EINVAL;
		lx[i] = log(x[i]);
		ly[i] = log(y[i]);
	}
	return ols(lx, ly, n, out);
}

/* The verdicts, by the band k falls in. power: the log-factor test divides y by x^power
 * and fits c + b ln x; -1: no test. with_log: the verdict when that model wins. */
static const struct band {
	double lo, hi; /* k in [lo, hi) */
	int power;
	const char *plain, *with_log;
} bands[] = {
	/* falling cost: a fixed overhead spread over more work, or a cache warming up */
	{ -INFINITY, -0.2, -1, "decreasing", NULL },
	/* within 0.2 of flat: noise on this machine moves k by about 0.1 over a decade. ln x
	 * has slope 1/ln x here, 0.1-0.15 for x of 10^3-10^4, so the test may name it */
	{ -0.2, 0.2, 0, "constant", "logarithmic" },
	/* ln x over small sizes (x of 2-30: slope 0.3-0.5) lands here too */
	{ 0.2, 0.8, 0, "sublinear", "logarithmic" },
	/* n log n has slope 1 + 1/ln x, 1.1-1.15 on the usual ranges: inside this band, so
	 * only the residuals tell it from linear */
	{ 0.8, 1.2, 1, "linear", "n log n" },
	/* n log n over small sizes (1 + 1/ln x up to 1.5 for x below 10) */
	{ 1.2, 1.8, 1, "between linear and quadratic", "n log n" },
	{ 1.8, 2.2, 2, "quadratic", "n² log n" },
	{ 2.2, 2.8, 2, "between quadratic and cubic", "n² log n" },
	{ 2.8, 3.2, 3, "cubic", NULL },
	{ 3.2, INFINITY, -1, "faster than cubic", NULL },
};

/* Whether y = x^p (c + b ln x) with b > 0 fits the points better, in ln y, than the
 * power law f: b must be more than twice its standard error from 0, and the model's
 * residual sum of squares below f's (both have two parameters). */
static bool log_factor_fits(const double *x, const double *y, size_t n, int p,
			    const struct an_fit *f)
{
	double u[AN_FIT_MAX_POINTS], z[AN_FIT_MAX_POINTS], rss = 0;
	struct an_fit g;

	if (n < 3)
		return false;
	for (size_t i = 0; i < n; i++) {
		u[i] = log(x[i]);
		z[i] = y[i] / pow(x[i], p);
	}
	if (ols(u, z, n, &g) || !(g.k > 0) || !(g.k > 2 * g.se_k))
		return false;
	for (size_t i = 0; i < n; i++) {
		double m = g.a + g.k * u[i], r;

		if (!(m > 0))
			return false;
		r = log(z[i]) - log(m);
		rss += r * r;
	}
	/* an exact power law leaves rounding in f->rss: a tie is the power law's */
	return rss < f->rss && f->rss - rss > 1e-12 * (1 + f->rss);
}

const char *an_fit_verdict(const double *x, const double *y, size_t n, const struct an_fit *f)
{
	if (n < 3 || !f || f->n < 3 || !isfinite(f->k))
		return AN_FIT_TOO_FEW;
	for (size_t i = 0; i < sizeof(bands) / sizeof(bands[0]); i++) {
		const struct band *b = &bands[i];

		if (f->k < b->lo || f->k >= b->hi)
			continue;
		if (b->power >= 0 && b->with_log && log_factor_fits(x, y, n, b->power, f))
			return b->with_log;
		return b->plain;
	}
	return AN_FIT_TOO_FEW; /* unreachable: the bands cover the line */
}
