/*
 * schedlab suite: run a study's grid and print our figures beside the published ones.
 *
 * The suites, their cells and the studies' figures are data in analysis/suite.c; this
 * runs each cell as a `schedlab run` child of this binary (cli/child.c, as sweep does),
 * its run folder under the suite folder, reads each result.json back, and writes
 * suite.md and suite.json with each cell's run folder linked. Everything is checked
 * before the first cell runs: the suites, the presets asked for, and that every workload
 * a suite needs is registered (a suite that cannot do without one refuses; the others
 * show its cells as not built). Cells that are the same run (the memory tables read
 * three figures from one run) run once. A peer cell runs a program of bench/ beside this
 * binary instead (the epoll TCP client), its samples summarized as a run's are.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "harness/harness.h"
#include "runtime/clock.h"

#define SUITE_MAX_PRESETS 16
#define SUITE_MAX_NAMES	  8

static const char doc[] =
	"Run the grid of a study (docs/studies.md) and print each cell's figure ± error "
	"(n) beside the study's published figure, each row's ratio to its column's reference "
	"row, with the ratio's 99.9% interval, beside the study's ratio, and whether the shape "
	"holds, read off that interval: it holds when the whole interval is where the table's "
	"rule says (a winner: it excludes 1 on the study's side and lies within the table's "
	"band; a tie: it lies within a band around 1 as wide as the study's own interval; a "
	"place between two rows, a distance, a floor), does not hold when the whole of it says "
	"the opposite, and otherwise the run cannot tell. Findings across a suite's columns "
	"and tables (a gap that shrinks, a winner that flips, a growth exponent) are judged "
	"the same way under its tables. "
	"Each cell is a 'schedlab run' with its own folder under the suite folder, linked "
	"from suite.md; suite.json holds the same. "
	"Progress (cell k of N, elapsed, time left) goes to stderr.\n\n"
	"Suites: five-runtimes, kyo-blocking, micro, memory, sequentially, errors, and all "
	"(every suite whose workloads this build has; the others are listed as not run).\v"
	"Examples:\n"
	"  schedlab suite kyo-blocking --quick\n"
	"  schedlab suite five-runtimes --quick --presets ce,kyo\n"
	"  schedlab suite micro memory --probes none\n"
	"  schedlab suite all --quick -o /tmp/suite\n\n"
	"--quick runs each cell with 1 fork, 1 x 0.2 s warm-up and 3 x 0.2 s measured (the "
	"studies: 3 forks, 3 x 1 s + 3 x 1 s), and the table header says so; the memory "
	"tables keep their 3 fresh processes, whose median they report. The other run "
	"options (--forks, --warmup, --iterations, --time, --probes, --freq, --call-graph, "
	"--stack-copy) go to every cell after those, and a table whose figures need an option "
	"(errors' stack-capture share: --probes oncpu) gives it last. Exit status: 0 when "
	"every cell ran, 1 when one failed (its row says why), 2 for bad input, 130 when "
	"interrupted.";

enum {
	OPT_PRESETS = 0x100,
};

static const struct argp_option options[] = {
	{ "presets", OPT_PRESETS, "LIST", 0, "only the rows of these presets, e.g. ce,kyo", 0 },
	{ "out", 'o', "DIR", 0,
	  "the suite folder, created (absent or empty); default results/<stamp>-suite-NAME", 0 },
	{ 0 },
};

struct suite_args {
	const char *names[SUITE_MAX_NAMES];
	size_t nnames;
	const char *presets_arg; /* --presets as given, for messages */
	char *presets_text; /* split in place; owned */
	const char *presets[SUITE_MAX_PRESETS];
	size_t npresets;
	struct cli_pass pass; /* the run options for every cell */
	const char *out;
	int bad;
};

/* One run: a distinct (workload, preset, params, table options); cells share it. */
struct job {
	const struct an_suite_cell *cell;
	const char *run_opts, *run_opts_after; /* the table's, before and after the user's */
	char dir[PATH_MAX];
	bool ran;
	bool interrupted; /* stopped by the interrupt: f and r are its partial run's */
	int status;
	struct cli_run_figures f;
	struct an_result *r;
};

struct suite_run {
	struct suite_args *a;
	const struct an_suite *suites[SUITE_MAX_NAMES * 8];
	struct an_suite_result *res[SUITE_MAX_NAMES * 8];
	size_t nsuites;
	char *skipped[SUITE_MAX_NAMES * 8];
	size_t nskipped;
	struct job *jobs;
	size_t njobs;
	size_t *cell_job; /* per suite-cell, flattened over suites: its job, or SIZE_MAX */
	char dir[PATH_MAX];
	char self[PATH_MAX]; /* this binary: the cells' runs and the peers' server */
	char command[2048];
	char settings[1024];
};

/* ---- arguments ------------------------------------------------------------------------- */

static const char *suite_names(void)
{
	static char buf[256];
	const struct an_suite *const *s = an_suites();
	size_t off = 0;

	for (size_t i = 0; s[i]; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s, ", s[i]->name);
	snprintf(buf + off, sizeof(buf) - off, "and all");
	return buf;
}

static int parse_presets(struct suite_args *a, const char *arg)
{
	struct rt_config c;
	char *p;

	if (a->presets_text)
		return cli_usage_error("--presets is given twice; give one list, e.g. --presets "
				       "ce,kyo");
	a->presets_arg = arg;
	a->presets_text = strdup(arg);
	if (!a->presets_text)
		return cli_usage_error("out of memory");
	for (char *v = a->presets_text;; v = p + 1) {
		p = strchr(v, ',');
		if (p)
			*p = '\0';
		if (!*v)
			return cli_usage_error("--presets '%s': an empty name; expected P1,P2,..., "
					       "e.g. --presets ce,kyo", arg);
		if (rt_config_preset(&c, v))
			return cli_usage_error("--presets: unknown preset '%s'; see 'schedlab list "
					       "--presets' for the names", v);
		if (a->npresets == SUITE_MAX_PRESETS)
			return cli_usage_error("--presets: at most %d presets", SUITE_MAX_PRESETS);
		a->presets[a->npresets++] = v;
		if (!p)
			break;
	}
	return 0;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct suite_args *a = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &a->pass;
		return 0;
	case OPT_PRESETS:
		a->bad = parse_presets(a, arg);
		return a->bad ? EINVAL : 0;
	case 'o':
		a->out = arg;
		return 0;
	case ARGP_KEY_ARG:
		if (strcmp(arg, "all") && !an_suite_find(arg)) {
			a->bad = cli_usage_error("unknown suite '%s'; the suites are %s", arg,
						 suite_names());
			return EINVAL;
		}
		if (a->nnames == SUITE_MAX_NAMES) {
			a->bad = cli_usage_error("at most %d suites at once; 'all' runs every one",
						 SUITE_MAX_NAMES);
			return EINVAL;
		}
		a->names[a->nnames++] = arg;
		return 0;
	case ARGP_KEY_END:
		if (!a->nnames) {
			a->bad = cli_usage_error("suite needs a suite to run, e.g. 'schedlab suite "
						 "kyo-blocking --quick'; the suites are %s",
						 suite_names());
			return EINVAL;
		}
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

/* ---- the grid -------------------------------------------------------------------------- */

static bool preset_wanted(const struct suite_args *a, const char *preset)
{
	if (!a->npresets)
		return true;
	for (size_t i = 0; i < a->npresets; i++)
		if (!strcmp(a->presets[i], preset))
			return true;
	return false;
}

/* Check the cell's run as `run` would: workload, preset, every parameter. */
static int check_cell(const struct an_suite_cell *c)
{
	char err[512], assign[256];
	struct hx_spec s;
	const char *p = c->params;

	if (hx_spec_init(&s, c->workload, c->preset, err, sizeof(err)))
		return cli_usage_error("%s", err);
	while (*p) {
		size_t w = strcspn(p, " ");

		snprintf(assign, sizeof(assign), "%.*s", (int)w, p);
		if (hx_spec_param(&s, assign, err, sizeof(err)))
			return cli_usage_error("%s", err);
		p += w;
		p += *p == ' ';
	}
	return 0;
}

/* The peer program of cell c, beside this binary in bench/ as the Makefile builds it;
 * false when it is not there (path may be NULL). */
static bool peer_path(const struct suite_run *sr, const struct an_suite_cell *c, char *path,
		      size_t len)
{
	char buf[PATH_MAX];
	const char *slash = strrchr(sr->self, '/');

	snprintf(buf, sizeof(buf), "%.*s/bench/%.*s", slash ? (int)(slash - sr->self) : 1,
		 slash ? sr->self : ".", (int)strcspn(c->peer, " "), c->peer);
	if (path)
		snprintf(path, len, "%s", buf);
	return access(buf, X_OK) == 0;
}

static bool suite_added(const struct suite_run *sr, const struct an_suite *s)
{
	for (size_t i = 0; i < sr->nsuites; i++)
		if (sr->suites[i] == s)
			return true;
	return false;
}

/* Add suite s to the run, its cells marked: left out (not among the presets), not built
 * (workload missing), or to run. 0; CLI_EXIT_USAGE (after one line) when explicit and it
 * cannot run; a missing workload of a suite reached through 'all' adds it to skipped. */
static int add_suite(struct suite_run *sr, const struct an_suite *s, bool explicit)
{
	const struct suite_args *a = sr->a;
	size_t n = an_suite_ncells(s), k = 0, wanted = 0;
	struct an_suite_result *res;
	char why[256] = "";

	if (suite_added(sr, s))
		return 0;
	for (size_t t = 0; t < s->ntables; t++)
		for (size_t i = 0; i < s->tables[t].ncells; i++) {
			const struct an_suite_cell *c = &s->tables[t].cells[i];

			if (!preset_wanted(a, c->preset))
				continue;
			wanted++;
			if (!wl_find(c->workload) && s->refuse_missing && !why[0])
				snprintf(why, sizeof(why), "workload %s is not registered in this "
					 "build", c->workload);
		}
	if (!wanted)
		snprintf(why, sizeof(why), "--presets %s leaves none of its rows",
			 a->presets_arg);
	if (why[0]) {
		if (explicit)
			return cli_usage_error("suite %s cannot run: %s%s", s->name, why,
					       wanted ? "; it runs once that workload is built" :
							"; name presets that it has, or none");
		if (asprintf(&sr->skipped[sr->nskipped], "suite %s not run: %s", s->name, why) < 0)
			return cli_usage_error("out of memory");
		sr->nskipped++;
		return 0;
	}
	res = calloc(n, sizeof(*res));
	if (!res)
		return cli_usage_error("out of memory");
	sr->suites[sr->nsuites] = s;
	sr->res[sr->nsuites++] = res;
	for (size_t t = 0; t < s->ntables; t++)
		for (size_t i = 0; i < s->tables[t].ncells; i++, k++) {
			const struct an_suite_cell *c = &s->tables[t].cells[i];
			int err;

			if (!preset_wanted(a, c->preset)) {
				res[k].state = AN_CELL_LEFT_OUT;
			} else if (c->peer && !peer_path(sr, c, NULL, 0)) {
				res[k].state = AN_CELL_NOT_BUILT;
				snprintf(res[k].reason, sizeof(res[k].reason),
					 "the peer bench/%.*s is not built ('make build/bench/%.*s')",
					 (int)strcspn(c->peer, " "), c->peer,
					 (int)strcspn(c->peer, " "), c->peer);
			} else if (!wl_find(c->workload)) {
				res[k].state = AN_CELL_NOT_BUILT;
				snprintf(res[k].reason, sizeof(res[k].reason),
					 "workload %s is not registered", c->workload);
			} else {
				res[k].state = AN_CELL_NOT_RUN;
				err = check_cell(c);
				if (err)
					return err;
			}
		}
	return 0;
}

static bool same_run(const struct job *j, const struct an_suite_cell *c,
		     const struct an_suite_table *t)
{
	return !strcmp(j->cell->workload, c->workload) && !strcmp(j->cell->preset, c->preset) &&
	       !strcmp(j->cell->params, c->params) && !strcmp(j->run_opts, t->run_opts) &&
	       !strcmp(j->run_opts_after, t->run_opts_after) &&
	       !j->cell->peer == !c->peer && (!c->peer || !strcmp(j->cell->peer, c->peer));
}

/* The jobs: one per distinct run of the cells to run, in the suites' order. */
static int make_jobs(struct suite_run *sr)
{
	size_t total = 0, off = 0;

	for (size_t k = 0; k < sr->nsuites; k++)
		total += an_suite_ncells(sr->suites[k]);
	sr->jobs = calloc(total + 1, sizeof(*sr->jobs));
	sr->cell_job = calloc(total + 1, sizeof(*sr->cell_job));
	if (!sr->jobs || !sr->cell_job)
		return cli_usage_error("out of memory");
	for (size_t k = 0; k < sr->nsuites; k++) {
		const struct an_suite *s = sr->suites[k];
		size_t i0 = 0;

		for (size_t t = 0; t < s->ntables; t++) {
			const struct an_suite_table *tb = &s->tables[t];

			for (size_t i = 0; i < tb->ncells; i++) {
				const struct an_suite_cell *c = &tb->cells[i];
				size_t j = 0;

				sr->cell_job[off + i0 + i] = SIZE_MAX;
				if (sr->res[k][i0 + i].state != AN_CELL_NOT_RUN)
					continue;
				while (j < sr->njobs && !same_run(&sr->jobs[j], c, tb))
					j++;
				if (j == sr->njobs) {
					sr->jobs[j].cell = c;
					sr->jobs[j].run_opts = tb->run_opts;
					sr->jobs[j].run_opts_after = tb->run_opts_after;
					sr->njobs++;
				}
				sr->cell_job[off + i0 + i] = j;
			}
			i0 += tb->ncells;
		}
		off += i0;
	}
	return 0;
}

static void job_dir(struct suite_run *sr, size_t j)
{
	struct job *jb = &sr->jobs[j];
	size_t off = (size_t)snprintf(jb->dir, sizeof(jb->dir), "%s/", sr->dir), start = off;

	if (jb->cell->peer)
		off += (size_t)snprintf(jb->dir + off, sizeof(jb->dir) - off, "%02zu-peer-%s", j + 1,
					jb->cell->peer);
	else
		off += (size_t)snprintf(jb->dir + off, sizeof(jb->dir) - off, "%02zu-%s-%s%s%s",
					j + 1, jb->cell->workload, jb->cell->preset,
					jb->cell->params[0] ? "-" : "", jb->cell->params);
	/* the folder name keeps to plain characters */
	for (char *c = jb->dir + start; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.=-_", *c))
			*c = '_';
}

/* ---- running ---------------------------------------------------------------------------- */

static double now_s(void)
{
	return (double)rt_clock_ns() * 1e-9;
}

/* The value of run option flag among those handed on, or def. */
static const char *pass_value(const struct cli_pass *p, const char *flag, const char *def)
{
	for (size_t i = p->n; i-- > 1;)
		if (!strcmp(p->argv[i - 1], flag))
			return p->argv[i];
	return def;
}

/* A peer cell: the program (bench/PROG JOB), as many processes as the cells' forks, each
 * one's samples (a throughput a line on stdout) into DIR.samples, summarized as a run's
 * are. Its server is this binary's (SCHEDLAB_EXE, unless set already). 0, or 130. */
static int run_peer(struct suite_run *sr, struct job *jb)
{
	const struct cli_pass *p = &sr->a->pass;
	const char *quick = p->quick ? "1" : "3";
	char path[PATH_MAX], job[64], samples[PATH_MAX + 16], log[PATH_MAX + 8], line[1024];
	const char *argv[] = { path, job, "--warmup", pass_value(p, "--warmup", p->quick ? "1" : "3"),
			       "--iterations", pass_value(p, "--iterations", "3"), "--time",
			       pass_value(p, "--time", p->quick ? "0.2" : "1"), NULL };
	long forks = 0;
	double x[4096];
	size_t n = 0;
	struct an_summary sum;
	int out_fd, err_fd, st = 0;
	FILE *f;

	peer_path(sr, jb->cell, path, sizeof(path));
	snprintf(job, sizeof(job), "%s", jb->cell->peer + strcspn(jb->cell->peer, " ") + 1);
	cli_parse_long(pass_value(p, "--forks", quick), 1, 1000, &forks);
	snprintf(samples, sizeof(samples), "%s.samples", jb->dir);
	snprintf(log, sizeof(log), "%s.log", jb->dir);
	setenv("SCHEDLAB_EXE", sr->self, 0);
	out_fd = open(samples, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
	err_fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
	jb->ran = true;
	for (long k = 0; k < forks && out_fd >= 0 && err_fd >= 0 && !st; k++)
		st = cli_spawn(argv, out_fd, err_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	if (st == CLI_EXIT_INTERRUPTED || cli_interrupted()) {
		jb->interrupted = true;
		return CLI_EXIT_INTERRUPTED;
	}
	snprintf(jb->f.run, sizeof(jb->f.run), "%s", strrchr(samples, '/') + 1);
	snprintf(jb->f.unit, sizeof(jb->f.unit), "ops/s");
	if (out_fd < 0 || err_fd < 0 || st) {
		jb->f.failed = true;
		cli_last_line(log, line, sizeof(line));
		snprintf(jb->f.reason, sizeof(jb->f.reason), "%s",
			 out_fd < 0 || err_fd < 0 ? strerror(errno) :
			 st < 0 ? strerror(-st) : line[0] ? line : "the peer failed");
		return 0;
	}
	f = an_fopen_input(AT_FDCWD, samples, true);
	while (f && n < sizeof(x) / sizeof(x[0]) && fscanf(f, "%lf", &x[n]) == 1) {
		/* scanf takes "nan" and "inf": a throughput is a finite number of at least 0 */
		if (!isfinite(x[n]) || x[n] < 0) {
			fclose(f);
			jb->f.failed = true;
			snprintf(jb->f.reason, sizeof(jb->f.reason), "the peer gave a sample that "
				 "is not a throughput: %g", x[n]);
			return 0;
		}
		n++;
	}
	if (f)
		fclose(f);
	if (an_summarize(x, n, 0.999, &sum)) {
		jb->f.failed = true;
		snprintf(jb->f.reason, sizeof(jb->f.reason), "the peer gave no samples");
		return 0;
	}
	jb->f.score = sum.mean;
	jb->f.error = sum.ci_half;
	jb->f.n = (double)sum.n;
	return 0;
}

/* Run job j: 0, CLI_EXIT_USAGE (the run refused its options: its one line), or 130. */
static int run_job(struct suite_run *sr, size_t j, const char *self)
{
	struct job *jb = &sr->jobs[j];
	const char *argv[64];
	char assign[16][128], opts[256], after[128], log[PATH_MAX + 8], line[1024];
	size_t n = 0, np = 0;
	const char *p = jb->cell->params;
	char *save = NULL;
	int st;

	if (jb->cell->peer)
		return run_peer(sr, jb);
	argv[n++] = self;
	argv[n++] = "run";
	argv[n++] = jb->cell->workload;
	argv[n++] = "--preset";
	argv[n++] = jb->cell->preset;
	while (*p && np < 16) {
		size_t w = strcspn(p, " ");

		snprintf(assign[np], sizeof(assign[np]), "%.*s", (int)w, p);
		argv[n++] = "-P";
		argv[n++] = assign[np++];
		p += w;
		p += *p == ' ';
	}
	snprintf(opts, sizeof(opts), "%s", jb->run_opts);
	for (char *o = strtok_r(opts, " ", &save); o && n < 40; o = strtok_r(NULL, " ", &save))
		argv[n++] = o;
	for (size_t i = 0; i < sr->a->pass.n; i++)
		argv[n++] = sr->a->pass.argv[i];
	/* what the cell's figure cannot do without, over the user's options */
	snprintf(after, sizeof(after), "%s", jb->run_opts_after);
	save = NULL;
	for (char *o = strtok_r(after, " ", &save); o && n < 60; o = strtok_r(NULL, " ", &save))
		argv[n++] = o;
	argv[n++] = "--json";
	argv[n++] = "--out";
	argv[n++] = jb->dir;
	argv[n] = NULL;

	snprintf(log, sizeof(log), "%s.log", jb->dir);
	st = cli_spawn_logged(argv, log);
	jb->ran = true;
	jb->status = st;
	if (st == CLI_EXIT_USAGE) {
		cli_last_line(log, line, sizeof(line));
		fprintf(stderr, "refused\n%s\n", line[0] ? line : "schedlab: the run refused its "
			"options");
		return CLI_EXIT_USAGE;
	}
	if (st == CLI_EXIT_INTERRUPTED) {
		/* what it measured before the interrupt is in its run folder, marked partial */
		jb->interrupted = true;
		jb->r = cli_run_load(jb->dir, &jb->f);
		return CLI_EXIT_INTERRUPTED;
	}
	if (st < 0) {
		jb->f.failed = true;
		snprintf(jb->f.reason, sizeof(jb->f.reason), "cannot start the run: %s",
			 strerror(-st));
		return 0;
	}
	jb->r = cli_run_load(jb->dir, &jb->f);
	if (st && (!jb->f.failed || jb->f.no_run)) {
		jb->f.failed = true;
		cli_last_line(log, line, sizeof(line));
		snprintf(jb->f.reason, sizeof(jb->f.reason), "%s", line[0] ? line : "run failed");
	}
	return 0;
}

/* The top findings of the job's run, as 'schedlab diagnose' gives them for its folder
 * (none looked for without a run read back: a peer's samples). */
static void cell_findings(const struct job *jb, struct an_suite_result *res)
{
	struct an_finding f[AN_FINDINGS_MAX];
	int n;

	if (!jb->r)
		return;
	n = an_findings(jb->r, f, AN_FINDINGS_MAX);
	if (n < 0)
		return;
	res->findings_known = true;
	for (int j = 0; j < n && res->nfindings < AN_SUITE_FINDINGS; j++) {
		snprintf(res->findings[res->nfindings], sizeof(res->findings[0]), "%s", f[j].id);
		res->finding_share[res->nfindings++] = f[j].share;
	}
}

/* The cell's figure from its job's run. */
static void fill_cell(const struct suite_run *sr, const struct an_suite_cell *c,
		      const struct job *jb, struct an_suite_result *res)
{
	const char *base = sr->dir;
	char path[128];
	double ops, bytes, forks;
	int err;

	if (!jb->ran) {
		res->state = AN_CELL_NOT_RUN;
		return;
	}
	if (jb->f.run[0] && c->peer)
		snprintf(res->link, sizeof(res->link), "%s", jb->f.run);
	else if (jb->f.run[0])
		snprintf(res->link, sizeof(res->link), "%s/%s/report.md",
			 jb->dir + strlen(base) + 1, jb->f.run);
	if (jb->interrupted) {
		res->state = AN_CELL_INTERRUPTED;
		if (jb->r && jb->f.n > 0)
			snprintf(res->reason, sizeof(res->reason), "partial, %.0f measured "
				 "iterations in its run folder", jb->f.n);
		return;
	}
	if (jb->f.failed || (!jb->r && !c->peer)) {
		res->state = AN_CELL_FAILED;
		snprintf(res->reason, sizeof(res->reason), "%s", jb->f.reason);
		return;
	}
	res->state = AN_CELL_OK;
	cell_findings(jb, res);
	forks = jb->r ? an_result_num(jb->r, "forks") : NAN;
	switch (c->metric) {
	case AN_SUITE_SCORE:
		res->value = jb->f.score;
		res->error = jb->f.error;
		res->n = jb->f.n;
		break;
	case AN_SUITE_NS_PER_OP: {
		double per = c->per_op ? c->per_op : 1;

		res->value = 1e9 / (jb->f.score * per);
		/* first order: d(1/s) = ds / s² */
		res->error = 1e9 * jb->f.error / (jb->f.score * jb->f.score * per);
		res->n = jb->f.n;
		break;
	}
	case AN_SUITE_BYTES_PER_OP:
		ops = an_result_num(jb->r, "runtime.ops");
		bytes = an_result_num(jb->r, "runtime.alloc_bytes");
		res->value = ops > 0 && bytes >= 0 ? bytes / ops : NAN;
		res->error = NAN;
		res->n = forks;
		break;
	case AN_SUITE_WL_METRIC:
		snprintf(path, sizeof(path), "workload_metrics.%s.value", c->metric_name);
		res->value = an_result_num(jb->r, path);
		res->error = NAN;
		res->n = forks;
		break;
	case AN_SUITE_CATEGORY_SHARE:
		res->value = NAN;
		err = an_suite_category_share(jb->r, c->metric_name, res);
		if (err) {
			res->state = AN_CELL_FAILED;
			snprintf(res->reason, sizeof(res->reason), "%s",
				 err == -ENOENT ? "the on-CPU probe did not attach (see the run's "
						  "report)" :
						  "the on-CPU probe took no sample");
			return;
		}
		break;
	}
	if (!isfinite(res->value)) {
		res->state = AN_CELL_FAILED;
		snprintf(res->reason, sizeof(res->reason), "the run reported no %s",
			 c->metric == AN_SUITE_WL_METRIC ? c->metric_name : "figure");
	}
}

static void fill_results(struct suite_run *sr)
{
	size_t off = 0;

	for (size_t k = 0; k < sr->nsuites; k++) {
		const struct an_suite *s = sr->suites[k];
		size_t i0 = 0;

		for (size_t t = 0; t < s->ntables; t++) {
			for (size_t i = 0; i < s->tables[t].ncells; i++) {
				size_t j = sr->cell_job[off + i0 + i];

				if (j != SIZE_MAX)
					fill_cell(sr, &s->tables[t].cells[i], &sr->jobs[j],
						  &sr->res[k][i0 + i]);
			}
			i0 += s->tables[t].ncells;
		}
		off += i0;
	}
}

static void progress_line(const struct job *jb)
{
	char score[64], err[64];
	int dec;

	if (jb->f.failed) {
		fprintf(stderr, "failed: %s\n", jb->f.reason);
		return;
	}
	dec = an_score_decimals(jb->f.score, jb->f.error);
	an_format_number(jb->f.score, dec, score, sizeof(score));
	an_format_number(jb->f.error, dec, err, sizeof(err));
	fprintf(stderr, "%s ± %s %s\n", score, isfinite(jb->f.error) ? err : "n/a", jb->f.unit);
}

static void describe_settings(struct suite_run *sr)
{
	const struct suite_args *a = sr->a;
	size_t off;

	off = (size_t)snprintf(sr->settings, sizeof(sr->settings), "%s",
			       a->pass.quick ? "**--quick**: each cell ran 1 fork, 1 × 0.2 s warm-up and "
					  "3 × 0.2 s measured — fewer forks and iterations and "
					  "shorter ones than the studies' 3 forks, 3 × 1 s + 3 × 1 "
					  "s, so the intervals are wider." :
					  "Each cell ran the studies' settings: 3 forks, 3 × 1 s "
					  "warm-up, 3 × 1 s measured.");
	for (size_t k = 0; k < sr->nsuites; k++)
		for (size_t t = 0; t < sr->suites[k]->ntables; t++) {
			const struct an_suite_table *tb = &sr->suites[k]->tables[t];

			if (tb->run_opts[0])
				off += (size_t)snprintf(sr->settings + off, off < sizeof(sr->settings) ?
							sizeof(sr->settings) - off : 0,
							" \"%s\" ran with %s.", tb->title,
							tb->run_opts);
			if (tb->run_opts_after[0])
				off += (size_t)snprintf(sr->settings + off, off < sizeof(sr->settings) ?
							sizeof(sr->settings) - off : 0,
							" \"%s\" ran with %s after the options given "
							"to every cell: its figures need it.", tb->title,
							tb->run_opts_after);
		}
	if (a->pass.n > a->pass.quick) {
		off += (size_t)snprintf(sr->settings + off, sizeof(sr->settings) - off,
					" Run options given to every cell:");
		for (size_t i = 0; i < a->pass.n; i++)
			if (strcmp(a->pass.argv[i], "--quick"))
				off += (size_t)snprintf(sr->settings + off,
							off < sizeof(sr->settings) ?
							sizeof(sr->settings) - off : 0, " %s",
							a->pass.argv[i]);
		if (off < sizeof(sr->settings))
			snprintf(sr->settings + off, sizeof(sr->settings) - off, ".");
	}
	if (a->npresets && off < sizeof(sr->settings))
		snprintf(sr->settings + strlen(sr->settings),
			 sizeof(sr->settings) - strlen(sr->settings), " Rows: --presets %s.",
			 a->presets_arg);
}

static int write_md(void *ctx, FILE *out)
{
	return an_suite_write_md(ctx, out);
}

static int write_json(void *ctx, FILE *out)
{
	return an_suite_write_json(ctx, out);
}

static int write_outputs(struct suite_run *sr, const struct an_suite_report *rep)
{
	static const struct cli_out_file files[] = {
		{ "suite.md", write_md }, { "suite.json", write_json },
	};

	return cli_write_files(sr->dir, files, sizeof(files) / sizeof(files[0]), (void *)rep);
}

int cmd_suite(int argc, char **argv)
{
	static const struct argp_child children[] = { { &cli_pass_argp, 0, NULL, 1 }, { 0 } };
	static const struct argp argp = { options, parse, "NAME...", doc, children, NULL, NULL };
	struct suite_args a = { 0 };
	struct suite_run sr = { .a = &a };
	struct an_suite_report rep = { 0 };
	char label[128];
	size_t failed = 0;
	double t0;
	int status = CLI_EXIT_OK, err;

	if (cli_argp_parse(&argp, "suite", argc, argv, &a)) {
		status = a.bad ? a.bad : a.pass.bad ? a.pass.bad : CLI_EXIT_USAGE;
		goto out_free;
	}
	err = cli_self_path(sr.self, sizeof(sr.self));
	if (err) {
		status = CLI_EXIT_FAIL;
		cli_usage_error("cannot find my own binary to run the cells: %s", strerror(-err));
		goto out_free;
	}
	for (size_t i = 0; i < a.nnames && !status; i++) {
		if (strcmp(a.names[i], "all")) {
			status = add_suite(&sr, an_suite_find(a.names[i]), true);
			continue;
		}
		for (const struct an_suite *const *s = an_suites(); *s && !status; s++)
			status = add_suite(&sr, *s, false);
	}
	if (status)
		goto out_free;
	if (!sr.nsuites) {
		status = cli_usage_error("no suite can run: %s", sr.skipped[0]);
		goto out_free;
	}
	status = make_jobs(&sr);
	if (status)
		goto out_free;
	status = cli_check_run_options(sr.self, a.pass.argv, a.pass.n);
	if (status)
		goto out_free;
	snprintf(label, sizeof(label), "suite-%s", a.nnames == 1 ? a.names[0] : "several");
	status = cli_make_out_dir(a.out, label, sr.dir, sizeof(sr.dir));
	if (status)
		goto out_free;
	cli_describe_command(sr.command, sizeof(sr.command), argc, argv);
	describe_settings(&sr);
	for (size_t j = 0; j < sr.njobs; j++)
		job_dir(&sr, j);

	cli_catch_interrupt();
	fprintf(stderr, "# suite: %zu runs for %zu suite%s, in %s\n", sr.njobs, sr.nsuites,
		sr.nsuites == 1 ? "" : "s", sr.dir);
	for (size_t i = 0; i < sr.nskipped; i++)
		fprintf(stderr, "# %s\n", sr.skipped[i]);
	t0 = now_s();
	for (size_t j = 0; j < sr.njobs && !cli_interrupted(); j++) {
		const struct job *jb = &sr.jobs[j];
		double el = now_s() - t0;

		fprintf(stderr, "[cell %zu of %zu, %.0f s elapsed", j + 1, sr.njobs, el);
		if (j)
			fprintf(stderr, ", about %.0f s left", el / (double)j * (double)(sr.njobs - j));
		if (jb->cell->peer)
			fprintf(stderr, "] bench/%s ... ", jb->cell->peer);
		else
			fprintf(stderr, "] %s --preset %s%s%s ... ", jb->cell->workload,
				jb->cell->preset, jb->cell->params[0] ? " " : "", jb->cell->params);
		status = run_job(&sr, j, sr.self);
		if (status)
			break;
		progress_line(jb);
		failed += jb->f.failed;
	}
	if (status == CLI_EXIT_INTERRUPTED || cli_interrupted()) {
		fputs("interrupted\n", stderr);
		status = CLI_EXIT_INTERRUPTED;
	}
	if (status == CLI_EXIT_USAGE)
		goto out_free;
	fill_results(&sr);
	rep = (struct an_suite_report){ .command = sr.command, .settings = sr.settings,
					.suites = sr.suites, .res = sr.res, .nsuites = sr.nsuites,
					.skipped = (const char *const *)sr.skipped,
					.nskipped = sr.nskipped,
					.interrupted = status == CLI_EXIT_INTERRUPTED };
	printf("%s\n", sr.settings);
	for (size_t k = 0; k < sr.nsuites; k++) {
		const struct an_suite_result *res = sr.res[k];

		printf("\n== %s\n", sr.suites[k]->name);
		for (size_t t = 0; t < sr.suites[k]->ntables; t++) {
			putchar('\n');
			an_suite_print_table(&sr.suites[k]->tables[t], res, stdout);
			res += sr.suites[k]->tables[t].ncells;
		}
		if (sr.suites[k]->nclaims)
			putchar('\n');
		an_suite_print_claims(sr.suites[k], sr.res[k], stdout);
		if (sr.suites[k]->nwhys)
			putchar('\n');
		an_suite_print_whys(sr.suites[k], sr.res[k], stdout);
	}
	for (size_t i = 0; i < sr.nskipped; i++)
		printf("\n%s", sr.skipped[i]);
	if (write_outputs(&sr, &rep) && !status)
		status = CLI_EXIT_FAIL;
	printf("\nResults: %s/suite.md, suite.json; each cell's run under %s/NN-*\n", sr.dir,
	       sr.dir);
	if (failed) {
		fprintf(stderr, "schedlab: %zu of %zu runs failed; the tables say why, each "
			"NN-*.log in the suite folder in full\n", failed, sr.njobs);
		if (!status)
			status = CLI_EXIT_FAIL;
	}
out_free:
	for (size_t j = 0; j < sr.njobs; j++)
		an_result_free(sr.jobs[j].r);
	for (size_t k = 0; k < sr.nsuites; k++)
		free(sr.res[k]);
	for (size_t i = 0; i < sr.nskipped; i++)
		free(sr.skipped[i]);
	free(sr.jobs);
	free(sr.cell_job);
	free(a.presets_text);
	return status;
}
