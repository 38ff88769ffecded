/*
 * student_t.c — Student's t quantiles and the summary of one sample (mean, sd, min, max
 * and the half-width of the two-sided confidence interval, as JMH reports a score).
 *
 * The quantile is computed, not looked up. The upper tail of Student's t is
 *   P(T > t) = I_x(df/2, 1/2) / 2,  x = df / (df + t^2),
 * a regularized incomplete beta function, evaluated here by its continued fraction
 * (modified Lentz) and inverted by Newton's method inside a bracket that bisection
 * shrinks whenever a Newton step would leave it. Every step keeps x and 1 - x each to
 * full precision, so neither a large t nor a large df cancels digits away. Above
 * AN_T_ASYMPTOTIC_DF degrees of freedom the log-gamma differences in the prefactor start
 * to lose digits (their error grows like df log df), while the Cornish-Fisher series
 * around the normal quantile is exact to double precision there.
 */
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>

#include "analysis/analysis.h"

/* Past this the series' first omitted term, O(z^11 / df^5), is far below DBL_EPSILON. */
#define AN_T_ASYMPTOTIC_DF 1000000u
/* With b = 1/2 the fraction converges in tens of terms; the bound only ends a NaN. */
#define AN_CF_MAX_TERMS	  1000
#define AN_CF_EPS	  1e-16
#define AN_CF_TINY	  1e-300
#define AN_SOLVE_MAX_ITER 400

/* One step of modified Lentz with coefficient aa: the factor it multiplies the fraction by. */
static double lentz_step(double *c, double *d, double aa)
{
	*d = 1 + aa * *d;
	if (fabs(*d) < AN_CF_TINY)
		*d = AN_CF_TINY;
	*c = 1 + aa / *c;
	if (fabs(*c) < AN_CF_TINY)
		*c = AN_CF_TINY;
	*d = 1 / *d;
	return *d * *c;
}

/* The continued fraction of I_x(a, b) (Numerical Recipes §6.4, modified Lentz); it
 * converges quickly for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap;

	if (fabs(d) < AN_CF_TINY)
		d = AN_CF_TINY;
	d = 1 / d;
	double h = d;
	for (int m = 1; m <= AN_CF_MAX_TERMS; m++) {
		double m2 = 2.0 * m;
		double aa = m * (b - m) * x / ((qam + m2) * (a + m2));

		h *= lentz_step(&c, &d, aa);
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		double del = lentz_step(&c, &d, aa);

		h *= del;
		if (fabs(del - 1) < AN_CF_EPS)
			break;
	}
	return h;
}

/* lgamma without glibc's signgam, a global it would race on between threads. */
static double log_gamma(double x)
{
	int sign;

	return lgamma_r(x, &sign);
}

/* log(x) where xc = 1 - x is known exactly: log1p keeps the digits when x is near 1. */
static double log_of(double x, double xc)
{
	return x > 0.5 ? log1p(-xc) : log(x);
}

/* The regularized incomplete beta function I_x(a, b), given x and xc = 1 - x. */
static double inc_beta(double a, double b, double x, double xc)
{
	if (x <= 0)
		return 0;
	if (xc <= 0)
		return 1;
	double front = exp(log_gamma(a + b) - log_gamma(a) - log_gamma(b) + a * log_of(x, xc) +
			   b * log_of(xc, x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, xc) / b;
}

/* P(T > t) for t >= 0. x and 1 - x are formed from r = t / sqrt(df) without
 * subtraction and without overflow, however large t is. */
static double t_upper_tail(double t, double df)
{
	double r = t / sqrt(df), x, xc;

	if (r > 1) {
		double s2 = (1 / r) * (1 / r);
		x = s2 / (1 + s2);
		xc = 1 / (1 + s2);
	} else {
		double r2 = r * r;
		x = 1 / (1 + r2);
		xc = r2 / (1 + r2);
	}
	return 0.5 * inc_beta(df / 2, 0.5, x, xc);
}

static double t_density(double t, double df)
{
	double r = fabs(t) / sqrt(df);
	double l1p = r > 1 ? 2 * log(r) + log1p(1 / (r * r)) : log1p(r * r);

	return exp(log_gamma((df + 1) / 2) - log_gamma(df / 2) - 0.5 * log(df * M_PI) -
		   (df + 1) / 2 * l1p);
}

static double normal_upper_tail(double z, double unused)
{
	return 0.5 * erfc(z / M_SQRT2);
}

static double normal_density(double z, double unused)
{
	return exp(-0.5 * z * z) / sqrt(2 * M_PI);
}

/* The t >= 0 with tail(t) = q, for 0 < q < 1/2; tail decreasing, density = -tail'.
 * The bracket [lo, hi] always holds the root: doubling finds it, then each Newton step
 * that would leave it is replaced by bisection. On t >= 0 the tail is convex, so Newton
 * from either side converges once inside. */
static double solve_upper_tail(double q, double df, double (*tail)(double, double),
			       double (*density)(double, double))
{
	double lo = 0, hi = 1;

	while (tail(hi, df) > q) {
		lo = hi;
		hi *= 2;
		if (isinf(hi))
			return INFINITY;
	}
	double t = 0.5 * (lo + hi);
	for (int i = 0; i < AN_SOLVE_MAX_ITER; i++) {
		double f = tail(t, df) - q;

		if (f == 0)
			return t;
		if (f > 0)
			lo = t;
		else
			hi = t;
		double next = t + f / density(t, df);
		if (!(next > lo && next < hi))
			next = 0.5 * (lo + hi);
		if (fabs(next - t) <= 4 * DBL_EPSILON * next || hi - lo <= 4 * DBL_EPSILON * hi)
			return next;
		t = next;
	}
	return t;
}

/* Cornish-Fisher expansion of t's quantile in powers of 1/df around the normal z
 * (Abramowitz & Stegun 26.7.5). */
static double t_from_normal(double z, double df)
{
	double z2 = z * z;
	double g1 = z * (z2 + 1) / 4;
	double g2 = z * ((5 * z2 + 16) * z2 + 3) / 96;
	double g3 = z * (((3 * z2 + 19) * z2 + 17) * z2 - 15) / 384;
	double g4 = z * ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) / 92160;

	return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df;
}

double an_t_quantile(double p, unsigned df)
{
	if (df == 0 || !(p > 0 && p < 1))
		return NAN;
	if (p == 0.5)
		return 0;

	/* q is the upper tail of |t|; 1 - p is exact for p >= 1/2 (Sterbenz). */
	double sign = p > 0.5 ? 1 : -1;
	double q = p > 0.5 ? 1 - p : p;
	double t;

	if (df == 1) {
		t = 1 / tan(M_PI * q); /* Cauchy */
	} else if (df == 2) {
		t = (1 - 2 * q) / sqrt(2 * q * (1 - q));
	} else if (df > AN_T_ASYMPTOTIC_DF) {
		double z = solve_upper_tail(q, 0, normal_upper_tail, normal_density);
		t = t_from_normal(z, df);
	} else {
		t = solve_upper_tail(q, df, t_upper_tail, t_density);
	}
	return sign * t;
}

int an_summarize(const double *x, size_t n, double confidence, struct an_summary *out)
{
	if (!x || !out || n == 0 || !(confidence > 0 && confidence < 1))
		return -EINVAL;

	/* Welford: the mean and the sum of squared deviations in one stable pass. */
	double mean = 0, m2 = 0, min = x[0], max = x[0];
	for (size_t i = 0; i < n; i++) {
		double delta = x[i] - mean;

		mean += delta / (double)(i + 1);
		m2 += delta * (x[i] - mean);
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
	}

	out->n = n;
	out->mean = mean;
	out->min = min;
	out->max = max;
	out->confidence = confidence;
	if (n < 2) {
		/* One sample has no spread to estimate: 0/0, not 0. */
		out->sd = NAN;
		out->ci_half = NAN;
		return 0;
	}
	out->sd = sqrt(m2 / (double)(n - 1));
	unsigned df = n - 1 > UINT_MAX ? UINT_MAX : (unsigned)(n - 1);
	out->ci_half = an_t_quantile((1 + confidence) / 2, df) * out->sd / sqrt((double)n);
	return 0;
}

/* P(F > f) = I_x(d2/2, d1/2), x = d2 / (d2 + d1 f): the same incomplete beta function. */
double an_f_upper_tail(double f, unsigned d1, unsigned d2)
{
	double a, b;

	if (!d1 || !d2 || isnan(f))
		return NAN;
	if (f <= 0)
		return 1;
	if (isinf(f))
		return 0;
	a = (double)d2;
	b = (double)d1 * f;
	return inc_beta(a / 2, (double)d1 / 2, a / (a + b), b / (a + b));
}
