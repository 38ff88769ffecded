/*
 * compare.c — two finished runs of one workload side by side, as a benchmark user
 * compares two commits: is B faster than A, by how much, how sure, and where did the
 * time move.
 *
 * The throughput ratio B / A gets Fieller's interval from each run's measured
 * iterations (result.json "samples"), and a verdict only when that interval excludes 1
 * and the change is beyond AN_COMPARE_NOISE_PCT. Everything else is descriptive and says
 * how much chance alone could move it: category shares and per-function self shares with
 * the 99.9% half-width that the two profiles' sample counts allow, runtime counters per
 * op only where they differ materially (AN_COMPARE_COUNTER_*). Runs are read through
 * analysis/result.c alone; nothing here knows JSON syntax but the writer of compare.json.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

/* The functions listed in the report, at most. */
#define TOP_FUNCTIONS 12

/* ---- statistics ---------------------------------------------------------------------- */

int an_ratio_fieller(const struct an_summary *num, const struct an_summary *den,
		     double confidence, struct an_ratio *out)
{
	double qn, qd, r, a, b, df, t, g, root;

	if (!num || !den || !out || num->n < 2 || den->n < 2 || den->mean == 0 ||
	    !(confidence > 0 && confidence < 1))
		return -EINVAL;
	qn = num->sd * num->sd / (double)num->n; /* variance of each mean */
	qd = den->sd * den->sd / (double)den->n;
	r = num->mean / den->mean;
	*out = (struct an_ratio){ .value = r, .confidence = confidence, .bounded = true };
	/* Welch-Satterthwaite for mean(num) - R mean(den), whose variance is qn + R^2 qd */
	a = qn;
	b = r * r * qd;
	if (a + b == 0) { /* every iteration alike in both runs: nothing to be unsure of */
		out->df = (double)(num->n + den->n - 2);
		out->lo = out->hi = r;
		return 0;
	}
	df = (a + b) * (a + b) / (a * a / (double)(num->n - 1) + b * b / (double)(den->n - 1));
	out->df = df;
	/* an_t_quantile() takes whole degrees of freedom; fewer give a wider interval. The
	 * epsilon keeps an exact df (8 from 7.9999999...) from losing one to rounding. */
	t = an_t_quantile(1 - (1 - confidence) / 2, (unsigned)floor(df + 1e-9));
	g = t * t * qd / (den->mean * den->mean);
	if (g >= 1) { /* den's interval holds 0: the ratio is unbounded */
		out->bounded = false;
		out->lo = out->hi = NAN;
		return 0;
	}
	root = t / fabs(den->mean) * sqrt(qn * (1 - g) + r * r * qd);
	out->lo = (r - root) / (1 - g);
	out->hi = (r + root) / (1 - g);
	return 0;
}

enum an_verdict an_ratio_verdict(const struct an_ratio *r, double noise_pct)
{
	double band = noise_pct / 100;

	if (!r->bounded)
		return AN_VERDICT_CANNOT_TELL;
	if (r->lo > 1 && r->value > 1 + band)
		return AN_VERDICT_FASTER;
	if (r->hi < 1 && r->value < 1 - band)
		return AN_VERDICT_SLOWER;
	return AN_VERDICT_NO_CHANGE;
}

const char *an_verdict_name(enum an_verdict v)
{
	switch (v) {
	case AN_VERDICT_FASTER:
		return "faster";
	case AN_VERDICT_SLOWER:
		return "slower";
	case AN_VERDICT_CANNOT_TELL:
		return "cannot tell";
	default:
		return "no change";
	}
}

/* ---- the comparison ------------------------------------------------------------------- */

struct side {
	const struct an_result *r;
	const char *id, *preset, *params, *unit, *overrides;
	struct an_summary score;
	int probe;                 /* index of the oncpu probe in "probes"; -1: none */
	struct an_folded *folded;  /* its oncpu.folded; NULL: none */
	char why_no_folded[PATH_MAX + 256];
	uint64_t samples;          /* in folded */
	double cats[AN_CAT_COUNT]; /* samples by category; NAN: not in result.json */
	double cat_total;
	struct an_folded *leaves;  /* samples by leaf frame: each function's own time */
};

struct counter_row {
	const char *name; /* owned by a's result */
	double a, b;      /* per op */
	bool material;
};

struct func_row {
	const char *name; /* owned by a side's leaves */
	uint64_t a, b;
	double delta, half; /* in points */
};

struct an_compare {
	struct side a, b;
	bool profiles;     /* one side is a profile of a program (`schedlab profile`): where
			    * the time went is compared, and no throughput */
	bool higher_better;
	struct an_ratio ratio;
	enum an_verdict verdict;
	struct counter_row *counters;
	size_t ncounters, nmaterial;
	struct func_row *funcs;
	size_t nfuncs;
	const char *flame; /* the differential flame graph written, or NULL */
	/* each run's findings (an_findings), for those that appear, vanish or stay */
	struct an_finding fa[AN_FINDINGS_MAX], fb[AN_FINDINGS_MAX];
	size_t nfa, nfb;
	struct finding_row { /* B's findings in its ranking, then those only A had */
		const struct an_finding *a, *b; /* NULL: not in that run */
		const char *change;             /* "appears", "vanishes", "in both" */
	} rows[2 * AN_FINDINGS_MAX];
	size_t nrows;
};

static const char *run_id(const struct an_result *r)
{
	const char *id = an_result_str(r, "id");
	const char *dir = an_result_dir(r), *slash;

	if (id)
		return id;
	slash = strrchr(dir, '/');
	return slash && slash[1] ? slash + 1 : *dir ? dir : an_result_source(r);
}

/* A profile of a program: samples, no iterations. */
static bool is_profile(const struct an_result *r)
{
	const char *kind = an_result_str(r, "kind");

	return kind && !strcmp(kind, "profile");
}

int an_compare_check(const struct an_result *r, char *err, size_t errlen)
{
	const char *failure = an_result_str(r, "failure");
	const char *unit = an_result_str(r, "unit");
	size_t n = an_result_len(r, "samples");

	if (is_profile(r)) {
		if (failure) {
			snprintf(err, errlen, "%s: the profile failed (%s): compare profiles that "
				 "were written whole", an_result_dir(r)[0] ? an_result_dir(r) :
				 run_id(r), failure);
			return -EINVAL;
		}
		return 0;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: the run has no measured iterations%s%s%s: compare runs "
			 "that finished", an_result_dir(r)[0] ? an_result_dir(r) : run_id(r),
			 failure ? " (it failed: " : "", failure ? failure : "",
			 failure ? ")" : "");
		return -EINVAL;
	}
	if (n < 2) {
		snprintf(err, errlen, "%s: one measured iteration gives no confidence interval: "
			 "rerun with --iterations 2 or more", an_result_dir(r)[0] ?
			 an_result_dir(r) : run_id(r));
		return -EINVAL;
	}
	if (an_unit_higher_is_better(unit) < 0) {
		snprintf(err, errlen, "%s: unit '%s' is neither a rate (X/s) nor a time per "
			 "operation (X/op), so which way is better is unknown",
			 an_result_dir(r)[0] ? an_result_dir(r) : run_id(r), unit ? unit : "");
		return -EINVAL;
	}
	return 0;
}

static int find_probe(const struct an_result *r, const char *name)
{
	size_t n = an_result_len(r, "probes");
	char path[64];

	for (size_t i = 0; i < n && i < 1000; i++) {
		const char *p;

		snprintf(path, sizeof(path), "probes.%zu.name", i);
		p = an_result_str(r, path);
		if (p && !strcmp(p, name))
			return (int)i;
	}
	return -1;
}

static const char *probe_str(const struct side *s, const char *field)
{
	char path[128];

	if (s->probe < 0)
		return NULL;
	snprintf(path, sizeof(path), "probes.%d.%s", s->probe, field);
	return an_result_str(s->r, path);
}

static double probe_num(const struct side *s, const char *field)
{
	char path[128];

	if (s->probe < 0)
		return NAN;
	snprintf(path, sizeof(path), "probes.%d.%s", s->probe, field);
	return an_result_num(s->r, path);
}

/* The run's oncpu.folded, and each function's own samples from its leaf frames. */
static int load_profile(struct side *s)
{
	const struct an_folded_line *lines;
	const char *name = probe_str(s, "folded");
	char err[PATH_MAX + 128];
	size_t n;

	if (s->probe < 0) {
		snprintf(s->why_no_folded, sizeof(s->why_no_folded), "ran without the on-CPU "
			 "probe");
		return 0;
	}
	if (!name) {
		const char *status = probe_str(s, "status");

		snprintf(s->why_no_folded, sizeof(s->why_no_folded), "wrote no profile "
			 "(oncpu: %s)", status ? status : "no status");
		return 0;
	}
	s->folded = an_result_folded(s->r, name, err, sizeof(err));
	if (!s->folded) {
		snprintf(s->why_no_folded, sizeof(s->why_no_folded), "has a profile that cannot "
			 "be read: %s", err);
		return errno == ENOMEM ? -ENOMEM : 0;
	}
	s->samples = an_folded_total(s->folded);
	s->leaves = an_folded_new();
	if (!s->leaves)
		return -ENOMEM;
	lines = an_folded_lines(s->folded, &n);
	if (!lines && n)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *leaf = strrchr(lines[i].stack, ';');
		int err2 = an_folded_add_stack(s->leaves, leaf ? leaf + 1 : lines[i].stack,
					       lines[i].count);

		if (err2)
			return err2;
	}
	return 0;
}

static int side_init(struct side *s, const struct an_result *r)
{
	size_t n = an_result_len(r, "samples");
	double *x;
	char path[64];
	int err;

	s->r = r;
	s->id = run_id(r);
	s->preset = an_result_str(r, "preset");
	s->params = an_result_str(r, "params");
	s->unit = an_result_str(r, "unit");
	s->overrides = an_result_str(r, "overrides");
	if (n) {
		x = calloc(n, sizeof(*x));
		if (!x)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "samples.%zu", i);
			x[i] = an_result_num(r, path);
		}
		err = an_summarize(x, n, 0.999, &s->score);
		free(x);
		if (err)
			return err;
	} else {
		/* a profile: no score */
		s->score = (struct an_summary){ .mean = NAN, .sd = NAN, .min = NAN, .max = NAN,
						.ci_half = NAN };
	}
	s->probe = find_probe(r, "oncpu");
	s->cat_total = 0;
	for (unsigned c = 0; c < AN_CAT_COUNT; c++) {
		char field[64];

		snprintf(field, sizeof(field), "categories.%s", an_category_name(c));
		s->cats[c] = probe_num(s, field);
		if (isfinite(s->cats[c]))
			s->cat_total += s->cats[c];
	}
	return load_profile(s);
}

static void side_free(struct side *s)
{
	an_folded_free(s->folded);
	an_folded_free(s->leaves);
}

static double per_op(const struct an_result *r, const char *name)
{
	char path[160];
	double ops = an_result_num(r, "runtime.ops");

	snprintf(path, sizeof(path), "runtime.%s", name);
	return ops > 0 ? an_result_num(r, path) / ops : NAN;
}

/* The counters are the per-iteration table's columns: every one a count over the
 * measurement (tasks, parks, nanoseconds...), which divides by ops. */
static int make_counters(struct an_compare *c)
{
	const struct an_result *ra = c->a.r, *rb = c->b.r;
	size_t n = an_result_len(ra, "per_iteration.columns");
	double ops_a = an_result_num(ra, "runtime.ops"), ops_b = an_result_num(rb, "runtime.ops");

	c->counters = calloc(n + 1, sizeof(*c->counters));
	if (!c->counters)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct counter_row *row = &c->counters[c->ncounters];
		char path[64];
		double lo, hi, events;

		snprintf(path, sizeof(path), "per_iteration.columns.%zu", i);
		row->name = an_result_str(ra, path);
		if (!row->name || strlen(row->name) > 100)
			continue;
		row->a = per_op(ra, row->name);
		row->b = per_op(rb, row->name);
		if (!isfinite(row->a) || !isfinite(row->b))
			continue;
		c->ncounters++;
		lo = fmin(row->a, row->b);
		hi = fmax(row->a, row->b);
		events = fmax(row->a * ops_a, row->b * ops_b);
		row->material = events >= AN_COMPARE_COUNTER_MIN_EVENTS &&
				(lo <= 0 || hi / lo >= AN_COMPARE_COUNTER_RATIO);
		c->nmaterial += row->material;
	}
	return 0;
}

/* The half-width, in points, of the 99.9% interval of a difference between two shares
 * of na and nb samples. */
static double share_half(double pa, uint64_t na, double pb, uint64_t nb)
{
	double v = 0;

	if (na)
		v += pa * (1 - pa) / (double)na;
	if (nb)
		v += pb * (1 - pb) / (double)nb;
	return 100 * AN_Z_999 * sqrt(v);
}

/* A category's share of each run's categorized samples (0 where the run has none). */
static void cat_shares(const struct an_compare *c, unsigned cat, double *pa, double *pb)
{
	double ca = c->a.cats[cat], cb = c->b.cats[cat];

	*pa = isfinite(ca) && c->a.cat_total > 0 ? ca / c->a.cat_total : 0;
	*pb = isfinite(cb) && c->b.cat_total > 0 ? cb / c->b.cat_total : 0;
}

static double cat_half(const struct an_compare *c, double pa, double pb)
{
	return share_half(pa, (uint64_t)c->a.cat_total, pb, (uint64_t)c->b.cat_total);
}

static int cmp_func(const void *x, const void *y)
{
	const struct func_row *p = x, *q = y;
	double dp = fabs(p->delta), dq = fabs(q->delta);

	if (dp != dq)
		return (dp < dq) - (dp > dq);
	return strcmp(p->name, q->name);
}

/* Functions by their own samples in each profile (leaf frames), merged by name; kept
 * where the change is beyond what sampling alone gives, largest change first. */
static int make_functions(struct an_compare *c)
{
	const struct an_folded_line *la, *lb;
	size_t na, nb, i = 0, j = 0;
	uint64_t ta = c->a.samples, tb = c->b.samples;

	if (!c->a.leaves || !c->b.leaves || !ta || !tb)
		return 0;
	la = an_folded_lines(c->a.leaves, &na);
	lb = an_folded_lines(c->b.leaves, &nb);
	if ((!la && na) || (!lb && nb))
		return -ENOMEM;
	c->funcs = calloc(na + nb + 1, sizeof(*c->funcs));
	if (!c->funcs)
		return -ENOMEM;
	while (i < na || j < nb) {
		int o = i == na ? 1 : j == nb ? -1 : strcmp(la[i].stack, lb[j].stack);
		struct func_row row = { .name = o <= 0 ? la[i].stack : lb[j].stack };
		double pa, pb;

		if (o <= 0)
			row.a = la[i++].count;
		if (o >= 0)
			row.b = lb[j++].count;
		pa = (double)row.a / (double)ta;
		pb = (double)row.b / (double)tb;
		row.delta = 100 * (pb - pa);
		row.half = share_half(pa, ta, pb, tb);
		if (fabs(row.delta) > row.half)
			c->funcs[c->nfuncs++] = row;
	}
	qsort(c->funcs, c->nfuncs, sizeof(*c->funcs), cmp_func);
	return 0;
}

/* The finding called id among n, or NULL. */
static const struct an_finding *finding(const struct an_finding *v, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].id, id))
			return &v[i];
	return NULL;
}

static int make_findings(struct an_compare *c)
{
	int na = an_findings(c->a.r, c->fa, AN_FINDINGS_MAX);
	int nb = na < 0 ? na : an_findings(c->b.r, c->fb, AN_FINDINGS_MAX);

	if (na < 0 || nb < 0)
		return na < 0 ? na : nb;
	c->nfa = (size_t)na < AN_FINDINGS_MAX ? (size_t)na : AN_FINDINGS_MAX;
	c->nfb = (size_t)nb < AN_FINDINGS_MAX ? (size_t)nb : AN_FINDINGS_MAX;
	for (size_t i = 0; i < c->nfb; i++) {
		const struct an_finding *fa = finding(c->fa, c->nfa, c->fb[i].id);

		c->rows[c->nrows++] = (struct finding_row){ fa, &c->fb[i],
							    fa ? "in both" : "appears" };
	}
	for (size_t i = 0; i < c->nfa; i++)
		if (!finding(c->fb, c->nfb, c->fa[i].id))
			c->rows[c->nrows++] = (struct finding_row){ &c->fa[i], NULL, "vanishes" };
	return 0;
}

struct an_compare *an_compare_new(const struct an_result *a, const struct an_result *b,
				  char *err, size_t errlen)
{
	const char *wa = an_result_str(a, "workload"), *wb = an_result_str(b, "workload");
	struct an_compare *c;
	int e;

	bool profiles = is_profile(a) || is_profile(b);

	if (an_compare_check(a, err, errlen) || an_compare_check(b, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	/* a profile against anything (a program against the preset named after its runtime,
	 * say) compares where the time went: no workload or unit need agree */
	if (!profiles && (!wa || !wb || strcmp(wa, wb))) {
		snprintf(err, errlen, "%s is a run of %s and %s a run of %s: compare two runs of "
			 "one workload", run_id(a), wa ? wa : "(no workload)", run_id(b),
			 wb ? wb : "(no workload)");
		errno = EINVAL;
		return NULL;
	}
	if (!profiles && strcmp(an_result_str(a, "unit"), an_result_str(b, "unit"))) {
		snprintf(err, errlen, "%s measures %s and %s measures %s: compare runs scored in "
			 "one unit", run_id(a), an_result_str(a, "unit"), run_id(b),
			 an_result_str(b, "unit"));
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_nomem;
	c->profiles = profiles;
	e = side_init(&c->a, a);
	if (!e)
		e = side_init(&c->b, b);
	if (!e)
		e = make_counters(c);
	if (!e)
		e = make_functions(c);
	if (!e)
		e = make_findings(c);
	if (e)
		goto out_free;
	if (profiles) {
		c->ratio = (struct an_ratio){ .value = NAN, .lo = NAN, .hi = NAN, .df = NAN };
		c->verdict = AN_VERDICT_NO_CHANGE;
		return c;
	}
	c->higher_better = an_unit_higher_is_better(c->a.unit) == 1;
	/* throughput B / A: for a time per op, A's time over B's */
	if (c->higher_better)
		e = an_ratio_fieller(&c->b.score, &c->a.score, 0.999, &c->ratio);
	else
		e = an_ratio_fieller(&c->a.score, &c->b.score, 0.999, &c->ratio);
	if (e) {
		snprintf(err, errlen, "%s: a mean score of 0 has no ratio", c->higher_better ?
			 c->a.id : c->b.id);
		an_compare_free(c);
		errno = EINVAL;
		return NULL;
	}
	c->verdict = an_ratio_verdict(&c->ratio, AN_COMPARE_NOISE_PCT);
	return c;
out_free:
	an_compare_free(c);
out_nomem:
	snprintf(err, errlen, "out of memory comparing %s and %s", run_id(a), run_id(b));
	errno = ENOMEM;
	return NULL;
}

void an_compare_free(struct an_compare *c)
{
	if (!c)
		return;
	side_free(&c->a);
	side_free(&c->b);
	free(c->counters);
	free(c->funcs);
	free(c);
}

const struct an_ratio *an_compare_ratio(const struct an_compare *c)
{
	return &c->ratio;
}

enum an_verdict an_compare_verdict(const struct an_compare *c)
{
	return c->verdict;
}

const struct an_folded *an_compare_folded(const struct an_compare *c, char which)
{
	return which == 'a' ? c->a.folded : which == 'b' ? c->b.folded : NULL;
}

void an_compare_set_flame(struct an_compare *c, const char *name)
{
	c->flame = name;
}

/* ---- what differs besides the configuration ------------------------------------------- */

static bool str_differ(const char *x, const char *y)
{
	return (x == NULL) != (y == NULL) || (x && strcmp(x, y));
}

static bool params_differ(const struct an_compare *c)
{
	return str_differ(c->a.params, c->b.params);
}

static void measurement(const struct an_result *r, char *buf, size_t len)
{
	double forks = an_result_num(r, "forks"), warm = an_result_num(r, "warmup_iterations");
	double it = an_result_num(r, "iterations"), t = an_result_num(r, "iteration_seconds");

	snprintf(buf, len, "%g fork%s × (%g warm-up + %g measured) × %g s", forks,
		 forks == 1 ? "" : "s", warm, it, t);
}

/* ---- compare.md ------------------------------------------------------------------------ */

/* A per-op figure: grouped digits from 1,000, three significant ones below. */
static void fmt_value(double v, char *buf, size_t len)
{
	if (fabs(v) >= 1000)
		an_format_number(v, 0, buf, len);
	else if (v == 0)
		snprintf(buf, len, "0");
	else
		snprintf(buf, len, "%.3g", v);
}

static void md_run_row(FILE *out, const char *label, const struct side *s)
{
	int dec = an_score_decimals(s->score.mean, s->score.ci_half);
	char score[64], half[64];

	if (!s->score.n) {
		/* a profile: its samples instead */
		an_format_number(probe_num(s, "samples"), 0, score, sizeof(score));
		fprintf(out, "| %s | %s | %s | `%s` | %s samples | - |\n", label, s->id,
			s->preset ? s->preset : "?", s->params && *s->params ? s->params : "-",
			score);
		return;
	}
	an_format_number(s->score.mean, dec, score, sizeof(score));
	an_format_number(s->score.ci_half, dec, half, sizeof(half));
	fprintf(out, "| %s | %s | %s | %s | %s ± %s %s | %zu |\n", label, s->id,
		s->preset ? s->preset : "?", s->params && *s->params ? s->params : "-", score,
		half, s->unit, s->score.n);
}

static void md_header(FILE *out, const struct an_compare *c)
{
	const struct an_result *a = c->a.r, *b = c->b.r;
	size_t nk = an_result_len(a, "knobs"), shown = 0;
	char ma[128], mb[128];

	if (c->profiles)
		fprintf(out, "# %s against %s: where the time went\n\n",
			an_result_str(b, "workload"), an_result_str(a, "workload"));
	else
		fprintf(out, "# %s: B against A\n\n", an_result_str(a, "workload"));
	fputs("| | run | preset | parameters | score ± 99.9% | n |\n"
	      "|---|---|---|---|---:|---:|\n", out);
	md_run_row(out, "A", &c->a);
	md_run_row(out, "B", &c->b);
	fputc('\n', out);

	for (size_t i = 0; i < nk; i++) {
		const char *k = an_result_key(a, "knobs", i), *va, *vb;
		char path[160];

		if (!k || strlen(k) > 100)
			continue;
		snprintf(path, sizeof(path), "knobs.%s", k);
		va = an_result_str(a, path);
		vb = an_result_str(b, path);
		if (!str_differ(va, vb))
			continue;
		fprintf(out, "%s%s %s → %s", shown++ ? ", " : "Knobs that differ (A → B): ", k,
			va ? va : "(none)", vb ? vb : "(none)");
	}
	if (shown)
		fputs(".\n", out);
	else if (!c->profiles)
		fputs("The runtime's knobs are the same in both runs.\n", out);
	if (params_differ(c))
		fprintf(out, "\n**The workload's parameters differ** (A %s, B %s): the runs "
			"measured different work, so the ratio compares more than the "
			"configuration.\n", c->a.params ? c->a.params : "-",
			c->b.params ? c->b.params : "-");
	measurement(a, ma, sizeof(ma));
	measurement(b, mb, sizeof(mb));
	if (strcmp(ma, mb))
		fprintf(out, "\nThe measurement differs: A %s, B %s.\n", ma, mb);
	if (str_differ(an_result_str(a, "host"), an_result_str(b, "host")))
		fprintf(out, "\nThe hosts differ: A %s, B %s.\n", an_result_str(a, "host"),
			an_result_str(b, "host"));
	for (int k = 0; k < 2; k++) {
		const struct side *s = k ? &c->b : &c->a;

		if (an_result_num(s->r, "partial") == 1)
			fprintf(out, "\n%s stopped early (%s): its score is from the iterations "
				"measured until then.\n", k ? "B" : "A",
				an_result_str(s->r, "partial_reason") ?
					an_result_str(s->r, "partial_reason") : "partial");
	}
	fputc('\n', out);
}

static void md_throughput(FILE *out, const struct an_compare *c)
{
	const struct an_ratio *r = &c->ratio;
	double change = 100 * (r->value - 1);

	fprintf(out, "## Throughput\n\n");
	if (c->profiles) {
		fprintf(out, "Not compared: %s a profile of a program, which measures no "
			"throughput; the categories and functions below compare where each "
			"spent its CPU time, as shares of its own samples.\n\n",
			is_profile(c->a.r) && is_profile(c->b.r) ? "both are" :
			is_profile(c->a.r) ? "A is" : "B is");
		return;
	}
	fprintf(out, "B / A = %.3f", r->value);
	if (r->bounded)
		fprintf(out, ", 99.9%% CI %.3f to %.3f", r->lo, r->hi);
	else /* the denominator: A's score, or B's for a time per op */
		fprintf(out, " with no 99.9%% interval, %s's mean score being not told apart "
			"from 0", c->higher_better ? "A" : "B");
	fprintf(out, " (Fieller's theorem; Welch–Satterthwaite df %.1f, t at %u). %s: %s is "
		"better%s.\n\n", r->df, (unsigned)floor(r->df + 1e-9), c->a.unit,
		c->higher_better ? "higher" : "lower",
		c->higher_better ? "" : ", so this is A's time per op over B's");
	fprintf(out, "**Verdict: %s**", an_verdict_name(c->verdict));
	if (c->verdict == AN_VERDICT_CANNOT_TELL)
		fprintf(out, ": the ratio, %.3f, has no 99.9%% interval: %s's %zu iterations "
			"vary so much that its mean is not told apart from 0, so even a ratio this "
			"large may be chance. Run %s again with more of them (`--iterations`, "
			"`--forks`), or longer ones (`--time`), until its interval excludes 0.\n\n",
			r->value, c->higher_better ? "A" : "B",
			(c->higher_better ? &c->a : &c->b)->score.n, c->higher_better ? "A" : "B");
	else if (c->verdict != AN_VERDICT_NO_CHANGE)
		fprintf(out, ": B's throughput is %.1f%% %s than A's; the interval excludes 1 and "
			"the change is beyond the ±%g%% noise band.\n\n", fabs(change),
			change > 0 ? "higher" : "lower", AN_COMPARE_NOISE_PCT);
	else if (r->lo <= 1 && r->hi >= 1)
		fprintf(out, ": the interval includes 1 (the change, %+.1f%%, may be chance).\n\n",
			change);
	else
		fprintf(out, ": the interval excludes 1, but the change, %+.1f%%, is within the "
			"±%g%% noise band that separate runs on this kind of machine differ by.\n\n",
			change, AN_COMPARE_NOISE_PCT);
}

static void md_probe_line(FILE *out, const char *label, const struct side *s)
{
	const char *status = probe_str(s, "status"), *event = probe_str(s, "event");
	double samples = probe_num(s, "samples"), freq = probe_num(s, "frequency_hz");
	char nbuf[64];

	if (s->probe < 0) {
		fprintf(out, "- %s: no on-CPU probe in this run\n", label);
		return;
	}
	an_format_number(samples, 0, nbuf, sizeof(nbuf));
	fprintf(out, "- %s: oncpu %s", label, status ? status : "(no status)");
	if (isfinite(samples))
		fprintf(out, ", %s samples", nbuf);
	if (event)
		fprintf(out, " (%s, %g Hz)", event, freq);
	fputc('\n', out);
}

static void md_categories(FILE *out, const struct an_compare *c)
{
	const struct side *a = &c->a, *b = &c->b;

	fputs("## On-CPU time by category\n\n", out);
	md_probe_line(out, "A", a);
	md_probe_line(out, "B", b);
	fputc('\n', out);
	if (!(a->cat_total > 0) || !(b->cat_total > 0)) {
		fputs("No category shares to compare: a run has no on-CPU samples.\n\n", out);
		return;
	}
	fputs("| category | A | B | Δ points | chance ± |\n|---|---:|---:|---:|---:|\n", out);
	for (unsigned k = 0; k < AN_CAT_COUNT; k++) {
		double pa, pb;

		cat_shares(c, k, &pa, &pb);
		if (pa == 0 && pb == 0)
			continue;
		fprintf(out, "| %s | %.1f%% | %.1f%% | %+.1f | %.1f |\n", an_category_name(k),
			100 * pa, 100 * pb, 100 * (pb - pa), cat_half(c, pa, pb));
	}
	fputs("\nShares of each run's own samples; \"chance ±\" is the 99.9% half-width that "
	      "sampling alone gives a difference of two such shares.\n\n", out);
}

static void md_counters(FILE *out, const struct an_compare *c)
{
	if (c->profiles)
		return; /* a program's runtime keeps no counters of ours */
	fputs("## Runtime counters per op\n\n", out);
	if (!c->nmaterial) {
		fprintf(out, "None of the %zu counters differs materially (by %g× or more, with "
			"at least %d events).\n\n", c->ncounters, AN_COMPARE_COUNTER_RATIO,
			AN_COMPARE_COUNTER_MIN_EVENTS);
		return;
	}
	fputs("| counter | A per op | B per op | B / A |\n|---|---:|---:|---:|\n", out);
	for (size_t i = 0; i < c->ncounters; i++) {
		const struct counter_row *r = &c->counters[i];
		char va[64], vb[64], ratio[64];

		if (!r->material)
			continue;
		fmt_value(r->a, va, sizeof(va));
		fmt_value(r->b, vb, sizeof(vb));
		if (r->a > 0)
			snprintf(ratio, sizeof(ratio), "%.3g", r->b / r->a);
		else
			snprintf(ratio, sizeof(ratio), "A none");
		fprintf(out, "| %s | %s | %s | %s |\n", r->name, va, vb, ratio);
	}
	fprintf(out, "\nThe %zu counters that differ by %g× or more with at least %d events; "
		"the other %zu are within that or too rare to tell.\n\n", c->nmaterial,
		AN_COMPARE_COUNTER_RATIO, AN_COMPARE_COUNTER_MIN_EVENTS,
		c->ncounters - c->nmaterial);
}

/* A frame name as code in a table cell: a '|' would end the cell and a '`' the code. */
static void md_code(FILE *out, const char *name)
{
	fputc('`', out);
	for (const char *p = name; *p; p++) {
		if (*p == '|')
			fputs("\\|", out);
		else
			fputc(*p == '`' ? '\'' : *p, out);
	}
	fputc('`', out);
}

static void md_functions(FILE *out, const struct an_compare *c)
{
	fputs("## Functions whose own share changed most\n\n", out);
	if (!c->a.folded || !c->b.folded) {
		fprintf(out, "No profiles to compare: %s %s.\n\n", c->a.folded ? "B" : "A",
			c->a.folded ? c->b.why_no_folded : c->a.why_no_folded);
		return;
	}
	if (!c->nfuncs) {
		fprintf(out, "No function's own share (the samples where it is the leaf) changed "
			"beyond what sampling %" PRIu64 " and %" PRIu64 " samples gives by "
			"chance at 99.9%%.\n\n", c->a.samples, c->b.samples);
		return;
	}
	fputs("| function | A | B | Δ points | chance ± |\n|---|---:|---:|---:|---:|\n", out);
	for (size_t i = 0; i < c->nfuncs && i < TOP_FUNCTIONS; i++) {
		const struct func_row *f = &c->funcs[i];

		fputs("| ", out);
		md_code(out, f->name);
		fprintf(out, " | %.1f%% | %.1f%% | %+.1f | %.1f |\n",
			100.0 * (double)f->a / (double)c->a.samples,
			100.0 * (double)f->b / (double)c->b.samples, f->delta, f->half);
	}
	fprintf(out, "\nOwn samples (the function is the stack's leaf) as shares of each "
		"profile (%" PRIu64 " and %" PRIu64 " samples); %zu function%s changed beyond "
		"chance at 99.9%%%s.\n\n", c->a.samples, c->b.samples, c->nfuncs,
		c->nfuncs == 1 ? "" : "s", c->nfuncs > TOP_FUNCTIONS ? ", the largest shown" : "");
}

static void md_share(FILE *out, double share)
{
	if (isnan(share))
		fputs("—", out);
	else
		fprintf(out, "%.0f%%", 100 * share);
}

/* Findings that appear in B, vanish from A, and stay, with the share each explains. */
static void md_findings(FILE *out, const struct an_compare *c)
{
	fputs("## Findings\n\n", out);
	if (!c->nfa && !c->nfb) {
		fputs("Neither run has a finding that crossed its threshold.\n\n", out);
		return;
	}
	fputs("| finding | A | B | |\n|---|---:|---:|---|\n", out);
	for (size_t i = 0; i < c->nrows; i++) {
		const struct finding_row *r = &c->rows[i];
		const struct an_finding *f = r->b ? r->b : r->a;

		fprintf(out, "| %s | ", f->id);
		if (r->a)
			md_share(out, r->a->share);
		fputs(" | ", out);
		if (r->b)
			md_share(out, r->b->share);
		fprintf(out, " | %s: %s |\n", r->change, f->claim);
	}
	fprintf(out, "\nEach run's findings (`schedlab diagnose` gives their evidence), by the "
		"share of its measured time each explains (— where it is not a share of time): "
		"%zu in A, %zu in B.\n\n", c->nfa, c->nfb);
}

static void md_flame(FILE *out, const struct an_compare *c)
{
	fputs("## Differential flame graph\n\n", out);
	if (c->flame)
		fprintf(out, "%s: B's stacks at B's widths. A frame is red where it holds a larger "
			"share of B's samples than of A's (its callees included), blue where a "
			"smaller one, white where the same; the deepest colour is the largest "
			"change. Its tooltip gives both shares and the difference.\n", c->flame);
	else if (!c->a.folded || !c->b.folded)
		fprintf(out, "None: %s %s.\n", c->a.folded ? "B" : "A",
			c->a.folded ? c->b.why_no_folded : c->a.why_no_folded);
	else
		fputs("None was written.\n", out);
}

int an_compare_markdown(const struct an_compare *c, FILE *out)
{
	if (!c || !out)
		return -EINVAL;
	md_header(out, c);
	md_throughput(out, c);
	md_categories(out, c);
	md_counters(out, c);
	md_findings(out, c);
	md_functions(out, c);
	md_flame(out, c);
	return ferror(out) ? -EIO : 0;
}

/* ---- compare.json ---------------------------------------------------------------------- */

/* One member, "key": value, after sep ("{", ", " ...). */
static void jstr(FILE *out, const char *sep, const char *key, const char *v)
{
	fprintf(out, "%s\"%s\": ", sep, key);
	an_json_str(out, v);
}

static void jnum(FILE *out, const char *sep, const char *key, double v)
{
	fprintf(out, "%s\"%s\": ", sep, key);
	an_json_num(out, v);
}

static void json_side(FILE *out, const struct side *s)
{
	jstr(out, "{", "id", s->id);
	jstr(out, ", ", "dir", an_result_dir(s->r));
	jstr(out, ", ", "preset", s->preset);
	jstr(out, ", ", "params", s->params);
	jstr(out, ", ", "overrides", s->overrides);
	jnum(out, ", ", "score", s->score.mean);
	jnum(out, ", ", "error", s->score.ci_half);
	jnum(out, ", ", "n", (double)s->score.n);
	jstr(out, ", ", "probe", s->probe >= 0 ? probe_str(s, "status") : NULL);
	jnum(out, ", ", "samples", s->probe >= 0 ? probe_num(s, "samples") : NAN);
	jstr(out, ", ", "folded", s->folded ? probe_str(s, "folded") : NULL);
	fputs("}", out);
}

/* Between the elements of an array, one per line. */
static const char *next_elem(size_t i)
{
	return i ? ",\n    {" : "\n    {";
}

int an_compare_json(const struct an_compare *c, FILE *out)
{
	const struct an_ratio *r;
	size_t k = 0;

	if (!c || !out)
		return -EINVAL;
	r = &c->ratio;
	fputs("{\n  \"schema\": \"schedlab-compare/1\"", out);
	jstr(out, ",\n  ", "workload", an_result_str(c->a.r, "workload"));
	jstr(out, ",\n  ", "unit", c->a.unit);
	fprintf(out, ",\n  \"higher_is_better\": %s,\n  \"params_differ\": %s,\n  \"a\": ",
		c->higher_better ? "true" : "false", params_differ(c) ? "true" : "false");
	json_side(out, &c->a);
	fputs(",\n  \"b\": ", out);
	json_side(out, &c->b);
	fputs(",\n  \"throughput\": {\"method\": \"fieller\", \"df_method\": "
	      "\"welch-satterthwaite\"", out);
	jnum(out, ", ", "ratio", r->value);
	jnum(out, ", ", "lo", r->lo);
	jnum(out, ", ", "hi", r->hi);
	jnum(out, ", ", "df", r->df);
	jnum(out, ", ", "confidence", r->confidence);
	fprintf(out, ", \"bounded\": %s", r->bounded ? "true" : "false");
	jnum(out, ", ", "noise_pct", AN_COMPARE_NOISE_PCT);
	jstr(out, ", ", "verdict", c->profiles ? NULL : an_verdict_name(c->verdict));
	fputs("},\n  \"categories\": [", out);
	for (unsigned cat = 0; cat < AN_CAT_COUNT && c->a.cat_total > 0 && c->b.cat_total > 0;
	     cat++) {
		double pa, pb;

		cat_shares(c, cat, &pa, &pb);
		jstr(out, next_elem(k++), "name", an_category_name(cat));
		jnum(out, ", ", "a_share", pa);
		jnum(out, ", ", "b_share", pb);
		jnum(out, ", ", "delta_points", 100 * (pb - pa));
		jnum(out, ", ", "chance_points", cat_half(c, pa, pb));
		fputs("}", out);
	}
	fputs(k ? "\n  ],\n  \"counters\": [" : "],\n  \"counters\": [", out);
	for (k = 0; k < c->ncounters; k++) {
		const struct counter_row *row = &c->counters[k];

		jstr(out, next_elem(k), "name", row->name);
		jnum(out, ", ", "a_per_op", row->a);
		jnum(out, ", ", "b_per_op", row->b);
		jnum(out, ", ", "ratio", row->a > 0 ? row->b / row->a : NAN);
		fprintf(out, ", \"material\": %s}", row->material ? "true" : "false");
	}
	fputs(k ? "\n  ],\n  \"functions\": [" : "],\n  \"functions\": [", out);
	for (k = 0; k < c->nfuncs; k++) {
		const struct func_row *f = &c->funcs[k];

		jstr(out, next_elem(k), "name", f->name);
		jnum(out, ", ", "a_samples", (double)f->a);
		jnum(out, ", ", "b_samples", (double)f->b);
		jnum(out, ", ", "delta_points", f->delta);
		jnum(out, ", ", "chance_points", f->half);
		fputs("}", out);
	}
	fputs(k ? "\n  ]" : "]", out);
	fputs(",\n  \"findings\": [", out);
	for (k = 0; k < c->nrows; k++) {
		const struct finding_row *r = &c->rows[k];
		const struct an_finding *f = r->b ? r->b : r->a;

		jstr(out, next_elem(k), "id", f->id);
		jstr(out, ", ", "change", r->change);
		jnum(out, ", ", "a_share", r->a ? r->a->share : NAN);
		jnum(out, ", ", "b_share", r->b ? r->b->share : NAN);
		jstr(out, ", ", "claim", f->claim);
		fputs("}", out);
	}
	fputs(k ? "\n  ]" : "]", out);
	jstr(out, ",\n  ", "flame", c->flame);
	fputs("\n}\n", out);
	return ferror(out) ? -EIO : 0;
}
