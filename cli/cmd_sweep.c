/*
 * schedlab sweep: run a workload over a grid of parameter values, knob values and presets
 * (every combination), then fit how time per op and bytes per op grow with each numeric
 * parameter, and write sweep.md, sweep.json and log-log plots, sweep.svg (time per op)
 * and, where a point allocates, sweep-bytes.svg.
 *
 * Each point is a `schedlab run` of this same binary, a child process with its own run
 * folder under the sweep folder, whose result.json is read back (analysis/result.c).
 * The whole grid is checked before the first point runs, with the checks `run` makes,
 * so a typo in the last value costs nothing. A point that fails is a row that says so,
 * the sweep goes on, and the exit status is 1 at the end.
 *
 * Time per op is 1 / throughput, its error propagated to first order (err / score²):
 * a ratio measured within one run, so other work on the machine slows both sides.
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "flamegraphs/flamegraph.h"
#include "harness/harness.h"

/* The most points a sweep runs: at the default 3 forks × 6 s per point that is most of
 * an hour already; a larger grid is more likely a mistake than a plan. */
#define SWEEP_MAX_POINTS 64
#define SWEEP_MAX_DIMS	 8
#define SWEEP_MAX_VALUES SWEEP_MAX_POINTS

static const char doc[] =
	"Run WORKLOAD at every combination of the values given (-P NAME=V1,V2,... for a "
	"workload parameter, -c KNOB=A,B,... for a runtime knob, --preset P1,P2,...), each "
	"point a 'schedlab run' with its own run folder under the sweep folder. Prints a "
	"table of each point's score ± error (n), time per op (1 / score, with the error "
	"propagated) and bytes per op (the runtime allocator's bytes / ops; n/a when the "
	"workload allocates nothing through it). For each numeric parameter, and each "
	"combination of the other values, it fits ln(time/op) = a + k ln(x) by least squares, "
	"and the same for bytes/op, gives k ± its standard error and a verdict (constant, "
	"logarithmic, linear, n log n, quadratic, cubic, ...), and writes sweep.md, "
	"sweep.json and sweep.svg (a log-log plot of time per op: points with error bars, "
	"the fitted lines, a legend), and sweep-bytes.svg, bytes per op alike, where a point "
	"allocates.\n\n"
	"Examples:\n"
	"  schedlab sweep bind-chain -P depth=1000,2000,5000,10000 --quick\n"
	"  schedlab sweep bind-chain -P depth=1000,10000 -P interpreter=naive,stack\n"
	"  schedlab sweep spawn-join -P n=100,1000,10000 --preset ce,kyo -o /tmp/sj\n"
	"  schedlab sweep workers -c workers=1,2 -P rounds=16,64,256 --probes none\n\n"
	"The run options (--quick, --forks, --warmup, --iterations, --time, --probes, --freq, "
	"--call-graph, --stack-copy) go to every point. A grid has at most 64 points. "
	"Exit status: 0 when every point ran, 1 when one failed (the table says which, its "
	"NN-*.log why), 2 for bad input, 130 when interrupted.";

static const struct argp_option options[] = {
	{ "param", 'P', "NAME=V1,V2,...", 0, "workload parameter values; repeatable", 0 },
	{ "knob", 'c', "KNOB=A,B,...", 0, "runtime knob values over the preset; repeatable", 0 },
	{ "preset", 'p', "P1,P2,...", 0, "runtime presets (default ce)", 0 },
	{ "out", 'o', "DIR", 0,
	  "the sweep folder, created (absent or empty); default results/<stamp>-sweep-WORKLOAD",
	  0 },
	{ 0 },
};

/* One axis of the grid: a parameter, a knob or the preset, and its values. */
struct dim {
	char kind;  /* 'P', 'c', or 'p' for the preset */
	char name[64];
	char *text; /* the value list, split in place; owned */
	const char *values[SWEEP_MAX_VALUES];
	size_t nvalues;
	bool numeric; /* every value a positive number: the fits use it as x */
	double x[SWEEP_MAX_VALUES];
};

struct sweep_args {
	const char *workload;
	struct dim dims[SWEEP_MAX_DIMS];
	size_t ndims;
	struct cli_pass pass; /* the run options for every point */
	const char *out;
	int bad;
};

struct point {
	size_t idx[SWEEP_MAX_DIMS]; /* value index along each dim */
	char dir[PATH_MAX];	    /* its run's --out, inside the sweep folder */
	char label[512];	    /* "depth=10000 interpreter=naive" */
	bool ran, failed;
	bool interrupted; /* stopped by the interrupt: its figures, if any, are partial */
	bool no_run;      /* its run wrote no folder: the log says why */
	char reason[512];
	double score, error, n;
	char unit[32];
	double t_ns, t_err_ns; /* time per op and its error */
	double bytes;	       /* bytes per op; NAN: n/a */
};

/* One fit: a metric against a numeric dim, over the points that share the other values. */
struct fit_row {
	const char *metric; /* "time/op" or "bytes/op" */
	size_t dim;
	char group[512];    /* "interpreter=naive", or "" */
	size_t n;	    /* points fitted */
	struct an_fit fit;
	const char *verdict;
	double x[SWEEP_MAX_VALUES], y[SWEEP_MAX_VALUES], err[SWEEP_MAX_VALUES];
};

struct sweep {
	struct sweep_args *a;
	const char *dir;
	char command[2048];
	struct point *points;
	size_t npoints;
	struct fit_row *fits;
	size_t nfits;
	bool interrupted; /* the sweep was stopped: the points after the one interrupted
			   * were not run */
};

/* ---- arguments ------------------------------------------------------------------------- */

/* "NAME=V1,V2,..." (name NULL: the preset's bare "P1,P2,...") into a new dim. */
static int add_dim(struct sweep_args *a, char kind, const char *opt, const char *arg)
{
	const char *flag = kind == 'P' ? "-P" : kind == 'c' ? "-c" : "--preset";
	const char *what = kind == 'P' ? "NAME=V1,V2,..., e.g. -P depth=1000,3000" :
			   kind == 'c' ? "KNOB=A,B,..., e.g. -c workers=1,2" :
					 "P1,P2,..., e.g. --preset ce,kyo";
	const char *list = arg, *eq = strchr(arg, '=');
	struct dim *d;
	size_t i = 0;
	char *p;

	if (a->ndims == SWEEP_MAX_DIMS)
		return cli_usage_error("at most %d swept dimensions (-P, -c and --preset)",
				       SWEEP_MAX_DIMS);
	d = &a->dims[a->ndims];
	memset(d, 0, sizeof(*d));
	d->kind = kind;
	if (kind == 'p') {
		snprintf(d->name, sizeof(d->name), "preset");
	} else {
		if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(d->name))
			return cli_usage_error("%s '%s': expected %s", flag, arg, what);
		snprintf(d->name, sizeof(d->name), "%.*s", (int)(eq - arg), arg);
		list = eq + 1;
	}
	for (size_t k = 0; k < a->ndims; k++)
		if (a->dims[k].kind == kind && !strcmp(a->dims[k].name, d->name))
			return cli_usage_error("%s %s is given twice; give its values once, in one "
					       "list", opt, d->name);
	if (!*list)
		return cli_usage_error("%s '%s': no values; expected %s", flag, arg, what);
	d->text = strdup(list);
	if (!d->text)
		return cli_usage_error("out of memory");
	a->ndims++;
	for (char *v = d->text;; v = p + 1) {
		p = strchr(v, ',');
		if (p)
			*p = '\0';
		if (!*v)
			return cli_usage_error("%s '%s': value %zu is empty; expected %s", flag, arg,
					       i + 1, what);
		if (i == SWEEP_MAX_VALUES)
			return cli_usage_error("%s '%s': more than %d values", flag, arg,
					       SWEEP_MAX_VALUES);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(d->values[k], v))
				return cli_usage_error("%s '%s': '%s' is given twice", flag, arg, v);
		d->values[i++] = v;
		if (!p)
			break;
	}
	d->nvalues = i;
	return 0;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct sweep_args *a = state->input;

	switch (key) {
	case 'P':
	case 'c':
	case 'p':
		a->bad = add_dim(a, (char)key, key == 'P' ? "-P" : key == 'c' ? "-c" : "--preset",
				 arg);
		return a->bad ? EINVAL : 0;
	case 'o':
		a->out = arg;
		return 0;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->pass;
		return 0;
	case ARGP_KEY_ARG:
		if (a->workload) {
			a->bad = cli_usage_error("sweep takes one workload, not '%s' as well; sweep "
						 "each in turn", arg);
			return EINVAL;
		}
		a->workload = arg;
		return 0;
	case ARGP_KEY_END:
		if (!a->workload) {
			a->bad = cli_usage_error("sweep needs a workload, e.g. 'schedlab sweep "
						 "bind-chain -P depth=1000,10000' (see 'schedlab list')");
			return EINVAL;
		}
		if (!a->ndims) {
			a->bad = cli_usage_error("sweep needs values to sweep: -P NAME=V1,V2,..., "
						 "-c KNOB=A,B,... or --preset P1,P2,...");
			return EINVAL;
		}
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

/* ---- the grid -------------------------------------------------------------------------- */

static size_t grid_size(const struct sweep_args *a, char *dims, size_t len)
{
	size_t n = 1, off = 0;

	for (size_t d = 0; d < a->ndims; d++) {
		n *= a->dims[d].nvalues; /* at most 64^8: no overflow */
		off += (size_t)snprintf(dims + off, off < len ? len - off : 0, "%s%zu", d ? " × " : "",
					a->dims[d].nvalues);
	}
	return n;
}

/* The value indexes of point i, the first dim varying slowest. */
static void point_indexes(const struct sweep_args *a, size_t i, size_t *idx)
{
	for (size_t d = a->ndims; d-- > 0;) {
		idx[d] = i % a->dims[d].nvalues;
		i /= a->dims[d].nvalues;
	}
}

static const char *point_preset(const struct sweep_args *a, const struct point *p)
{
	for (size_t d = 0; d < a->ndims; d++)
		if (a->dims[d].kind == 'p')
			return a->dims[d].values[p->idx[d]];
	return NULL;
}

/* Build the point's spec the way `run` does: every value and the whole configuration is
 * checked, with run's own messages. */
static int check_point(const struct sweep_args *a, const struct point *p, struct hx_spec *s)
{
	char err[512], assign[256];

	if (hx_spec_init(s, a->workload, point_preset(a, p), err, sizeof(err)))
		return cli_usage_error("%s", err);
	for (size_t d = 0; d < a->ndims; d++) {
		const struct dim *dm = &a->dims[d];

		if (dm->kind == 'p')
			continue;
		snprintf(assign, sizeof(assign), "%s=%s", dm->name, dm->values[p->idx[d]]);
		if (dm->kind == 'P' ? hx_spec_param(s, assign, err, sizeof(err)) :
				      hx_spec_knob(s, assign, err, sizeof(err)))
			return cli_usage_error("%s", err);
	}
	if (rt_config_check(&s->rt, err, sizeof(err)))
		return cli_usage_error("%s", err);
	return 0;
}

/* A dim is numeric when each value is a positive number: a WL_INT or WL_REAL
 * parameter's (parsed by the workload), or a knob value that reads as one. */
static void mark_numeric(struct sweep_args *a, const struct hx_spec *s)
{
	for (size_t d = 0; d < a->ndims; d++) {
		struct dim *dm = &a->dims[d];
		int pi = dm->kind == 'P' ? wl_param_index(s->wl, dm->name) : -1;

		dm->numeric = dm->kind == 'c' ||
			      (pi >= 0 && s->wl->params[pi].type != WL_CHOICE);
		for (size_t v = 0; v < dm->nvalues && dm->numeric; v++)
			dm->numeric = cli_parse_double(dm->values[v], 1e-300, 1e300, &dm->x[v]);
	}
}

static void label_point(const struct sweep_args *a, struct point *p, size_t i, const char *dir,
			const char *preset)
{
	size_t off = 0, doff;
	char *name;

	doff = (size_t)snprintf(p->dir, sizeof(p->dir), "%s/%02zu", dir, i + 1);
	name = p->dir + doff;
	for (size_t d = 0; d < a->ndims; d++) {
		const struct dim *dm = &a->dims[d];

		off += (size_t)snprintf(p->label + off, off < sizeof(p->label) ?
					sizeof(p->label) - off : 0, "%s%s%s%s", d ? " " : "",
					dm->kind == 'p' ? "preset " : dm->name,
					dm->kind == 'p' ? "" : "=", dm->values[p->idx[d]]);
		doff += (size_t)snprintf(p->dir + doff, doff < sizeof(p->dir) ? sizeof(p->dir) - doff : 0,
					 "-%s%s%s", dm->kind == 'p' ? "" : dm->name,
					 dm->kind == 'p' ? "" : "=", dm->values[p->idx[d]]);
	}
	if (!point_preset(a, p) && off < sizeof(p->label))
		snprintf(p->label + off, sizeof(p->label) - off, " preset %s", preset);
	/* a value may hold anything a shell passes: keep the folder name to plain characters */
	for (char *c = name; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.=-_", *c))
			*c = '_';
}

/* ---- one point --------------------------------------------------------------------------- */

/* Run `schedlab run` for p; its exit status, or -errno when it could not start. */
static int run_child(const struct sweep_args *a, const char *self, const struct point *p,
		     const char *log)
{
	const char *argv[8 + 2 * SWEEP_MAX_DIMS + CLI_MAX_PASS];
	char assign[SWEEP_MAX_DIMS][256];
	size_t n = 0;

	argv[n++] = self;
	argv[n++] = "run";
	argv[n++] = a->workload;
	for (size_t d = 0; d < a->ndims; d++) {
		const struct dim *dm = &a->dims[d];

		argv[n++] = dm->kind == 'p' ? "--preset" : dm->kind == 'P' ? "-P" : "-c";
		if (dm->kind == 'p') {
			argv[n++] = dm->values[p->idx[d]];
			continue;
		}
		snprintf(assign[d], sizeof(assign[d]), "%s=%s", dm->name, dm->values[p->idx[d]]);
		argv[n++] = assign[d];
	}
	for (size_t i = 0; i < a->pass.n; i++)
		argv[n++] = a->pass.argv[i];
	argv[n++] = "--json";
	argv[n++] = "--out";
	argv[n++] = p->dir;
	argv[n] = NULL;

	return cli_spawn_logged(argv, log);
}

/* Read the point's result.json back: the score, time per op, bytes per op. */
static void read_point(struct point *p)
{
	struct cli_run_figures f;

	an_result_free(cli_run_load(p->dir, &f));
	p->failed = f.failed;
	p->no_run = f.no_run;
	snprintf(p->reason, sizeof(p->reason), "%s", f.reason);
	p->score = f.score;
	p->error = f.error;
	p->n = f.n;
	snprintf(p->unit, sizeof(p->unit), "%s", f.unit);
	p->t_ns = 1e9 / p->score;
	/* first order: d(1/s) = ds / s² */
	p->t_err_ns = 1e9 * p->error / (p->score * p->score);
	p->bytes = f.bytes;
}

static void progress(const struct sweep *sw, size_t i)
{
	const struct point *p = &sw->points[i];
	char score[64], err[64];
	int dec = an_score_decimals(p->score, p->error);

	if (p->failed) {
		fprintf(stderr, "failed: %s\n", p->reason);
		return;
	}
	an_format_number(p->score, dec, score, sizeof(score));
	an_format_number(p->error, dec, err, sizeof(err));
	fprintf(stderr, "%s ± %s %s\n", score, isfinite(p->error) ? err : "n/a", p->unit);
}

/* 0; 2 (bad input: a run option the point refused, passed on as its one line); 130
 * when interrupted (the point itself, or after it). */
static int run_point(struct sweep *sw, size_t i, const char *self)
{
	struct point *p = &sw->points[i];
	char log[PATH_MAX + 16], line[1024];
	int st;

	fprintf(stderr, "[%zu/%zu] %s %s ... ", i + 1, sw->npoints, sw->a->workload, p->label);
	snprintf(log, sizeof(log), "%s.log", p->dir);
	st = run_child(sw->a, self, p, log);
	p->ran = true;
	if (st < 0) {
		p->failed = true;
		snprintf(p->reason, sizeof(p->reason), "cannot start the run: %s", strerror(-st));
	} else if (st == CLI_EXIT_USAGE) {
		cli_last_line(log, line, sizeof(line));
		fprintf(stderr, "refused\n%s\n", line[0] ? line : "schedlab: the run refused its options");
		/* nothing ran: leave no folder behind (rmdir only removes an empty one) */
		unlink(log);
		rmdir(p->dir);
		return CLI_EXIT_USAGE;
	} else if (st == CLI_EXIT_INTERRUPTED) {
		/* what the run measured before the interrupt is in its folder, marked partial */
		read_point(p);
		p->interrupted = true;
		fputs("interrupted\n", stderr);
		return CLI_EXIT_INTERRUPTED;
	} else {
		read_point(p);
		if (st && (!p->failed || p->no_run)) {
			p->failed = true;
			cli_last_line(log, line, sizeof(line));
			snprintf(p->reason, sizeof(p->reason), "%s", line[0] ? line : "run failed");
		}
	}
	progress(sw, i);
	/* a signal to this process alone (not its group) let the point finish: stop here */
	return cli_interrupted() ? CLI_EXIT_INTERRUPTED : 0;
}

/* ---- fits ------------------------------------------------------------------------------- */

/* Whether points i and j agree on every dim but d. */
static bool same_group(const struct sweep *sw, size_t i, size_t j, size_t d)
{
	for (size_t k = 0; k < sw->a->ndims; k++)
		if (k != d && sw->points[i].idx[k] != sw->points[j].idx[k])
			return false;
	return true;
}

static void group_label(const struct sweep *sw, size_t i, size_t d, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < sw->a->ndims; k++) {
		const struct dim *dm = &sw->a->dims[k];

		if (k == d || dm->nvalues < 2)
			continue;
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s=%s",
					off ? " " : "", dm->name, dm->values[sw->points[i].idx[k]]);
	}
}

static void add_fit(struct sweep *sw, size_t first, size_t d, bool bytes)
{
	struct fit_row *f = &sw->fits[sw->nfits++];

	memset(f, 0, sizeof(*f));
	f->metric = bytes ? "bytes/op" : "time/op";
	f->dim = d;
	group_label(sw, first, d, f->group, sizeof(f->group));
	for (size_t j = first; j < sw->npoints; j++) {
		const struct point *p = &sw->points[j];

		if (!same_group(sw, first, j, d) || !p->ran || p->failed || p->interrupted)
			continue;
		if (bytes && !(p->bytes > 0))
			continue;
		f->x[f->n] = sw->a->dims[d].x[p->idx[d]];
		f->y[f->n] = bytes ? p->bytes : p->t_ns;
		f->err[f->n] = bytes ? NAN : p->t_err_ns;
		f->n++;
	}
	if (an_fit_loglog(f->x, f->y, f->n, &f->fit))
		f->fit = (struct an_fit){ .n = f->n, .k = NAN, .a = NAN, .se_k = NAN };
	f->verdict = an_fit_verdict(f->x, f->y, f->n, &f->fit);
}

static int make_fits(struct sweep *sw)
{
	sw->fits = calloc(2 * sw->npoints * sw->a->ndims + 1, sizeof(*sw->fits));
	if (!sw->fits)
		return -ENOMEM;
	for (size_t d = 0; d < sw->a->ndims; d++) {
		if (!sw->a->dims[d].numeric || sw->a->dims[d].nvalues < 2)
			continue;
		for (size_t i = 0; i < sw->npoints; i++) {
			bool seen = false, bytes = false;

			for (size_t j = 0; j < i && !seen; j++)
				seen = same_group(sw, i, j, d);
			if (seen)
				continue;
			add_fit(sw, i, d, false);
			/* bytes/op only where some point of the group allocates */
			for (size_t j = i; j < sw->npoints && !bytes; j++)
				bytes = same_group(sw, i, j, d) && sw->points[j].bytes > 0;
			if (bytes)
				add_fit(sw, i, d, true);
		}
	}
	return 0;
}

/* ---- output ----------------------------------------------------------------------------- */

/* A value and its error in one unit chosen by the value: "241.8 µs ± 2.0 µs". */
static void fmt_scaled(double v, double err, bool bytes, char *buf, size_t len)
{
	static const char *const tunits[] = { "ns", "µs", "ms", "s" };
	static const char *const bunits[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double step = bytes ? 1024 : 1000;
	size_t u = 0, max = bytes ? 4 : 3;

	if (!isfinite(v)) {
		snprintf(buf, len, "n/a");
		return;
	}
	while (u < max && fabs(v) >= step) {
		v /= step;
		err /= step;
		u++;
	}
	if (isfinite(err) && err > 0) {
		/* the error to two figures, the value to as many decimals: "113 ± 920 µs",
		 * never "113.1 ± 9.2e+02 µs" */
		int dec = 1 - (int)floor(log10(err));

		dec = dec < 0 ? 0 : dec > 4 ? 4 : dec;
		snprintf(buf, len, "%.*f ± %.*f %s", dec, v, dec, err, bytes ? bunits[u] : tunits[u]);
	} else {
		snprintf(buf, len, "%.4g %s", v, bytes ? bunits[u] : tunits[u]);
	}
}

static void fmt_score(const struct point *p, char *buf, size_t len)
{
	char score[64], err[64];
	int dec = an_score_decimals(p->score, p->error);

	if (!p->ran) {
		snprintf(buf, len, "not run");
		return;
	}
	if (p->interrupted && (p->failed || !(p->score > 0))) {
		snprintf(buf, len, "interrupted");
		return;
	}
	if (p->failed) {
		snprintf(buf, len, "failed");
		return;
	}
	an_format_number(p->score, dec, score, sizeof(score));
	an_format_number(p->error, dec, err, sizeof(err));
	snprintf(buf, len, "%s%s ± %s (%.0f)", p->interrupted ? "interrupted: " : "", score,
		 isfinite(p->error) ? err : "n/a", p->n);
}

static void fmt_fit(const struct fit_row *f, char *buf, size_t len)
{
	if (!isfinite(f->fit.k) || f->n < 3)
		snprintf(buf, len, "%s (%zu)", AN_FIT_TOO_FEW, f->n);
	else
		snprintf(buf, len, "k = %.2f ± %.2f (%zu points, r² %.3f): %s", f->fit.k,
			 f->fit.se_k, f->n, f->fit.r2, f->verdict);
}

/* Whether some point allocates: a bytes/op fit with points to draw. */
static bool has_bytes(const struct sweep *sw)
{
	for (size_t i = 0; i < sw->nfits; i++)
		if (!strcmp(sw->fits[i].metric, "bytes/op") && sw->fits[i].n)
			return true;
	return false;
}

/* The table, plain (stdout) or as Markdown (sweep.md). */
static void put_table(const struct sweep *sw, FILE *out, bool md)
{
	const struct sweep_args *a = sw->a;
	const char *sep = md ? " | " : "  ";
	char buf[128];

	fputs(md ? "| # | " : "  #  ", out);
	for (size_t d = 0; d < a->ndims; d++)
		fprintf(out, md ? "%s | " : "%-12s  ", a->dims[d].name);
	fprintf(out, md ? "score (n) | time/op | bytes/op |\n" : "%-28s  %-22s  %s\n",
		"score ± error (n)", "time/op", "bytes/op");
	if (md) {
		fputs("|--:|", out);
		for (size_t d = 0; d < a->ndims; d++)
			fputs(a->dims[d].numeric ? "--:|" : "---|", out);
		fputs("--:|--:|--:|\n", out);
	}
	for (size_t i = 0; i < sw->npoints; i++) {
		const struct point *p = &sw->points[i];
		bool ok = p->ran && !p->failed && !p->interrupted;

		fprintf(out, md ? "| %zu | " : "%3zu  ", i + 1);
		for (size_t d = 0; d < a->ndims; d++)
			fprintf(out, md ? "%s | " : "%-12s  ", a->dims[d].values[p->idx[d]]);
		fmt_score(p, buf, sizeof(buf));
		fprintf(out, md ? "%s%s" : "%-28s%s", buf, sep);
		fmt_scaled(ok ? p->t_ns : NAN, p->t_err_ns, false, buf, sizeof(buf));
		fprintf(out, md ? "%s%s" : "%-22s%s", buf, sep);
		fmt_scaled(ok ? p->bytes : NAN, NAN, true, buf, sizeof(buf));
		fprintf(out, md ? "%s |\n" : "%s\n", buf);
	}
}

static void put_fits(const struct sweep *sw, FILE *out, bool md)
{
	char buf[256];

	for (size_t i = 0; i < sw->nfits; i++) {
		const struct fit_row *f = &sw->fits[i];

		fmt_fit(f, buf, sizeof(buf));
		fprintf(out, "%s%s against %s%s%s%s: %s\n", md ? "- " : "  ", f->metric,
			sw->a->dims[f->dim].name, f->group[0] ? " (" : "", f->group,
			f->group[0] ? ")" : "", buf);
	}
	if (!sw->nfits)
		fprintf(out, "%sno numeric parameter was swept over two values or more: nothing to "
			"fit\n", md ? "- " : "  ");
}

static int write_md(void *ctx, FILE *out)
{
	const struct sweep *sw = ctx;

	fprintf(out, "# Sweep: %s\n\n`%s`\n\n", sw->a->workload, sw->command);
	if (sw->interrupted)
		fputs("**Interrupted**: the sweep was stopped; the point it was running kept what "
		      "it had measured (partial, not fitted) and the points after it were not "
		      "run.\n\n", out);
	fputs("Time per op is 1 / score, its error the score's propagated to first order; "
	      "bytes per op is the runtime allocator's bytes over the ops (n/a: nothing "
	      "allocated through it). Scores are means ± the 99.9% confidence half-width over "
	      "n measured iterations.\n\n", out);
	put_table(sw, out, true);
	fputs("\n## Growth\n\nln(y) = a + k ln(x) by least squares; k ± its standard error, and "
	      "the verdict (analysis/fit.c gives the bands).\n\n", out);
	put_fits(sw, out, true);
	fputs("\n![time per op, log-log](sweep.svg)\n", out);
	if (has_bytes(sw))
		fputs("\n![bytes per op, log-log](sweep-bytes.svg)\n", out);
	for (size_t i = 0; i < sw->npoints; i++)
		if (sw->points[i].failed && !sw->points[i].interrupted)
			fprintf(out, "%s- point %zu (%s) failed: %s\n", i ? "" : "\n## Failed points\n\n",
				i + 1, sw->points[i].label, sw->points[i].reason);
	return 0;
}

static void json_key(FILE *out, const char *key, bool *first)
{
	fputs(*first ? "" : ", ", out);
	*first = false;
	an_json_str(out, key);
	fputs(": ", out);
}

static int write_json(void *ctx, FILE *out)
{
	const struct sweep *sw = ctx;
	const struct sweep_args *a = sw->a;

	fputs("{\n  \"schema\": \"schedlab-sweep/1\",\n  \"workload\": ", out);
	an_json_str(out, a->workload);
	fprintf(out, ",\n  \"interrupted\": %s", sw->interrupted ? "true" : "false");
	fputs(",\n  \"command\": ", out);
	an_json_str(out, sw->command);
	fputs(",\n  \"dims\": [", out);
	for (size_t d = 0; d < a->ndims; d++) {
		const struct dim *dm = &a->dims[d];

		fprintf(out, "%s\n    {\"kind\": \"%s\", \"name\": ", d ? "," : "",
			dm->kind == 'P' ? "param" : dm->kind == 'c' ? "knob" : "preset");
		an_json_str(out, dm->name);
		fprintf(out, ", \"numeric\": %s, \"values\": [", dm->numeric ? "true" : "false");
		for (size_t v = 0; v < dm->nvalues; v++) {
			fputs(v ? ", " : "", out);
			an_json_str(out, dm->values[v]);
		}
		fputs("]}", out);
	}
	fputs("\n  ],\n  \"points\": [", out);
	for (size_t i = 0; i < sw->npoints; i++) {
		const struct point *p = &sw->points[i];
		bool first = true, ok = p->ran && !p->failed;

		fprintf(out, "%s\n    {", i ? "," : "");
		json_key(out, "settings", &first);
		fputc('{', out);
		for (size_t d = 0; d < a->ndims; d++) {
			bool f2 = d == 0;

			json_key(out, a->dims[d].name, &f2);
			an_json_str(out, a->dims[d].values[p->idx[d]]);
		}
		fputc('}', out);
		json_key(out, "dir", &first);
		an_json_str(out, strrchr(p->dir, '/') + 1);
		json_key(out, "status", &first);
		an_json_str(out, !p->ran ? "not run" : p->interrupted ? "interrupted" :
			    p->failed ? "failed" : "ok");
		json_key(out, "partial", &first);
		fputs(p->interrupted ? "true" : "false", out);
		json_key(out, "reason", &first);
		an_json_str(out, p->failed ? p->reason : NULL);
		json_key(out, "unit", &first);
		an_json_str(out, p->unit[0] ? p->unit : NULL);
		json_key(out, "score", &first);
		an_json_num(out, ok ? p->score : NAN);
		json_key(out, "error", &first);
		an_json_num(out, ok ? p->error : NAN);
		json_key(out, "n", &first);
		an_json_num(out, ok ? p->n : NAN);
		json_key(out, "time_per_op_ns", &first);
		an_json_num(out, ok ? p->t_ns : NAN);
		json_key(out, "time_per_op_error_ns", &first);
		an_json_num(out, ok ? p->t_err_ns : NAN);
		json_key(out, "bytes_per_op", &first);
		an_json_num(out, ok ? p->bytes : NAN);
		fputc('}', out);
	}
	fputs("\n  ],\n  \"fits\": [", out);
	for (size_t i = 0; i < sw->nfits; i++) {
		const struct fit_row *f = &sw->fits[i];
		bool first = true;

		fprintf(out, "%s\n    {", i ? "," : "");
		json_key(out, "metric", &first);
		an_json_str(out, f->metric);
		json_key(out, "against", &first);
		an_json_str(out, a->dims[f->dim].name);
		json_key(out, "group", &first);
		an_json_str(out, f->group);
		json_key(out, "points", &first);
		fprintf(out, "%zu", f->n);
		json_key(out, "k", &first);
		an_json_num(out, f->fit.k);
		json_key(out, "se_k", &first);
		an_json_num(out, f->fit.se_k);
		json_key(out, "a", &first);
		an_json_num(out, f->fit.a);
		json_key(out, "r2", &first);
		an_json_num(out, f->n >= 2 ? f->fit.r2 : NAN);
		json_key(out, "verdict", &first);
		an_json_str(out, f->verdict);
		fputc('}', out);
	}
	fputs("\n  ]\n}\n", out);
	return 0;
}

/* A plot of metric ("time/op", "bytes/op") against the first numeric dim it was fitted
 * on, a series per group. */
static int write_plot(const struct sweep *sw, const char *metric, FILE *out)
{
	struct fg_plot_series series[SWEEP_MAX_POINTS];
	char notes[SWEEP_MAX_POINTS][256], title[256], xlabel[128];
	bool bytes = !strcmp(metric, "bytes/op");
	struct fg_plot plot = { .title = title, .xlabel = xlabel,
				.ylabel = bytes ? "bytes per op" : "time per op",
				.yunit = bytes ? "B" : "ns", .series = series };
	size_t dim = SIZE_MAX;

	for (size_t i = 0; i < sw->nfits && plot.nseries < SWEEP_MAX_POINTS; i++) {
		const struct fit_row *f = &sw->fits[i];

		if (strcmp(f->metric, metric) || (dim != SIZE_MAX && f->dim != dim) || !f->n)
			continue;
		dim = f->dim;
		if (f->n >= 3 && isfinite(f->fit.k))
			snprintf(notes[plot.nseries], sizeof(notes[0]), "k = %.2f ± %.2f, %s",
				 f->fit.k, f->fit.se_k, f->verdict);
		else
			snprintf(notes[plot.nseries], sizeof(notes[0]), "%s", AN_FIT_TOO_FEW);
		series[plot.nseries] = (struct fg_plot_series){
			.label = f->group[0] ? f->group : sw->a->workload,
			.note = notes[plot.nseries],
			.x = f->x, .y = f->y, .err = f->err, .n = f->n,
			.k = f->n >= 3 ? f->fit.k : NAN, .a = f->n >= 3 ? f->fit.a : NAN,
		};
		plot.nseries++;
	}
	snprintf(title, sizeof(title), "%s: %s%s%s", sw->a->workload,
		 bytes ? "bytes per op" : "time per op", dim == SIZE_MAX ? "" : " against ",
		 dim == SIZE_MAX ? "" : sw->a->dims[dim].name);
	snprintf(xlabel, sizeof(xlabel), "%s", dim == SIZE_MAX ? "" : sw->a->dims[dim].name);
	return fg_plot_write(&plot, out);
}

static int write_svg(void *ctx, FILE *out)
{
	return write_plot(ctx, "time/op", out);
}

static int write_bytes_svg(void *ctx, FILE *out)
{
	return write_plot(ctx, "bytes/op", out);
}

static int write_outputs(struct sweep *sw)
{
	static const struct cli_out_file files[] = {
		{ "sweep.md", write_md }, { "sweep.json", write_json }, { "sweep.svg", write_svg },
		{ "sweep-bytes.svg", write_bytes_svg },
	};
	size_t n = sizeof(files) / sizeof(files[0]);

	/* the bytes plot where some point allocates */
	return cli_write_files(sw->dir, files, has_bytes(sw) ? n : n - 1, sw);
}

/* ---- the command ------------------------------------------------------------------------- */

int cmd_sweep(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cli_pass_argp, 0, NULL, 1 }, { 0 } };
	static const struct argp argp = { options, parse, "WORKLOAD", doc, children, NULL, NULL };
	struct sweep_args a = { 0 };
	struct sweep sw = { .a = &a };
	char dims[256], dir[PATH_MAX], self[PATH_MAX], label[128];
	struct hx_spec spec;
	size_t n, failed = 0;
	int status = CLI_EXIT_OK, err;

	if (cli_argp_parse(&argp, "sweep", argc, argv, &a)) {
		status = a.bad ? a.bad : a.pass.bad ? a.pass.bad : CLI_EXIT_USAGE;
		goto out_free;
	}
	n = grid_size(&a, dims, sizeof(dims));
	if (n > SWEEP_MAX_POINTS) {
		status = cli_usage_error("the grid has %s = %zu points, more than the %d a sweep "
					 "runs; sweep fewer values", dims, n, SWEEP_MAX_POINTS);
		goto out_free;
	}
	sw.points = calloc(n, sizeof(*sw.points));
	if (!sw.points) {
		status = cli_usage_error("out of memory");
		goto out_free;
	}
	sw.npoints = n;
	for (size_t i = 0; i < n; i++) {
		point_indexes(&a, i, sw.points[i].idx);
		status = check_point(&a, &sw.points[i], &spec);
		if (status)
			goto out_free;
		if (i == 0)
			mark_numeric(&a, &spec);
	}
	err = cli_self_path(self, sizeof(self));
	if (err) {
		status = CLI_EXIT_FAIL;
		cli_usage_error("cannot find my own binary to run the points: %s", strerror(-err));
		goto out_free;
	}
	status = cli_check_run_options(self, a.pass.argv, a.pass.n);
	if (status)
		goto out_free;
	snprintf(label, sizeof(label), "sweep-%s", a.workload);
	status = cli_make_out_dir(a.out, label, dir, sizeof(dir));
	if (status)
		goto out_free;
	sw.dir = dir;
	cli_describe_command(sw.command, sizeof(sw.command), argc, argv);
	for (size_t i = 0; i < n; i++)
		label_point(&a, &sw.points[i], i, dir, spec.rt.preset);

	cli_catch_interrupt();
	fprintf(stderr, "# sweep %s: %s = %zu points, in %s\n", a.workload, dims, n, dir);
	for (size_t i = 0; i < n && !cli_interrupted(); i++) {
		status = run_point(&sw, i, self);
		if (status)
			break;
		failed += sw.points[i].failed;
	}
	if (status == CLI_EXIT_USAGE) {
		if (!a.out)
			rmdir(dir);
		goto out_free;
	}
	if (cli_interrupted()) {
		status = CLI_EXIT_INTERRUPTED;
		sw.interrupted = true;
	}
	if (make_fits(&sw)) {
		status = cli_usage_error("out of memory");
		goto out_free;
	}
	printf("\n");
	put_table(&sw, stdout, false);
	printf("\nGrowth (ln y = a + k ln x, k ± standard error):\n");
	put_fits(&sw, stdout, false);
	if (write_outputs(&sw) && !status)
		status = CLI_EXIT_FAIL;
	printf("\nResults: %s/sweep.md, sweep.json, sweep.svg%s; each point's run under %s/NN-*\n",
	       dir, has_bytes(&sw) ? ", sweep-bytes.svg" : "", dir);
	if (failed) {
		fprintf(stderr, "schedlab: %zu of %zu points failed; each one's NN-*.log in the sweep folder says why\n",
			failed, n);
		if (!status)
			status = CLI_EXIT_FAIL;
	}
out_free:
	for (size_t d = 0; d < a.ndims; d++)
		free(a.dims[d].text);
	free(sw.points);
	free(sw.fits);
	return status;
}
