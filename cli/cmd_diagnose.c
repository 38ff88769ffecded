/*
 * schedlab diagnose — why a finished run was slow: each run folder's findings
 * (analysis/findings.c), ranked by the share of the measured time they explain, each
 * with its claim, the evidence and its source, and what to try.
 *
 * Every folder is read before anything is printed, so bad input (no result.json, text
 * that is not one) is one line on stderr and exit status 2, with nothing on stdout.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli/cli.h"

#define MAX_RUNS 64

static const char doc[] =
	"Print the findings of each RUN (a run folder that 'schedlab run' wrote, or its "
	"result.json): what made the configuration slow, ranked by the share of the measured "
	"time each explains (worker time = workers × forks × iterations × iteration seconds, "
	"or the on-CPU samples for what only the probe sees), with the evidence and what to "
	"try. A finding is made only when its evidence crosses a stated threshold "
	"(analysis/findings.c); findings that are no share of time (the measurement's own "
	"spread, imbalance) follow, by how far they crossed theirs.\n"
	"\n"
	"USAGE: schedlab diagnose RUN... [--json]\n"
	"\n"
	"EXAMPLES:\n"
	"    schedlab diagnose results/latest\n"
	"    schedlab run tcp-blocking --preset kyo --quick && schedlab diagnose results/latest\n"
	"    schedlab diagnose results/*-tcp-blocking-kyo results/*-tcp-blocking-ce\n"
	"    schedlab diagnose results/latest --json | jq '.findings[0].id'\n"
	"\v"
	"With --json, stdout is one JSON document: for one RUN an object {run, workload, "
	"preset, failure, partial, findings: [{id, share, claim, evidence, action}]}, for "
	"several an array of them, in the order given. Exit status: 0 printed, 1 printed for "
	"a run that failed (its failure is said first), 2 bad input (not a run folder, or a "
	"result.json that 'schedlab run' did not write).";

enum { OPT_JSON = 0x100 };

static const struct argp_option options[] = {
	{ "json", OPT_JSON, NULL, 0, "print the findings as JSON", 0 },
	{ 0 },
};

struct diagnose_args {
	const char *runs[MAX_RUNS];
	size_t nruns;
	bool json;
	int bad;
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct diagnose_args *a = state->input;

	switch (key) {
	case OPT_JSON:
		a->json = true;
		return 0;
	case ARGP_KEY_ARG:
		if (a->nruns == MAX_RUNS) {
			a->bad = cli_usage_error("at most %d runs at once", MAX_RUNS);
			return EINVAL;
		}
		a->runs[a->nruns++] = arg;
		return 0;
	case ARGP_KEY_END:
		if (!a->nruns) {
			a->bad = cli_usage_error("diagnose needs a run folder, e.g. 'schedlab "
						 "diagnose results/latest'");
			return EINVAL;
		}
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

struct diagnosis {
	struct an_result *result;
	struct an_finding findings[AN_FINDINGS_MAX];
	size_t n;
};

static void print_text(const char *run, const struct diagnosis *d)
{
	const char *wl = an_result_str(d->result, "workload");
	const char *preset = an_result_str(d->result, "preset");
	const char *over = an_result_str(d->result, "overrides");
	char line[256];

	const char *failure = an_result_str(d->result, "failure");
	const char *partial = an_result_str(d->result, "partial_reason");

	const char *kind = an_result_str(d->result, "kind");

	if (kind && !strcmp(kind, "profile"))
		printf("%s: %s · profile (%s)\n", run, wl ? wl : "?",
		       an_result_str(d->result, "ended") ? an_result_str(d->result, "ended") : "?");
	else
		printf("%s: %s · preset %s%s%s\n", run, wl ? wl : "?", preset ? preset : "?",
		       over && *over ? " " : "", over && *over ? over : "");
	if (failure)
		printf("  The run failed: %s. The findings below are of what it measured.\n",
		       failure);
	else if (an_result_num(d->result, "partial") > 0)
		printf("  The run was stopped early (%s): the findings are of its partial "
		       "measurements.\n", partial ? partial : "partial");
	if (!d->n)
		printf("  No finding crossed its threshold.\n");
	for (size_t i = 0; i < d->n; i++) {
		const struct an_finding *f = &d->findings[i];

		if (isnan(f->share))
			printf("%2zu. %s [%s]\n", i + 1, f->claim, f->id);
		else
			printf("%2zu. %3.0f%%  %s [%s]\n", i + 1, 100 * f->share, f->claim, f->id);
		printf("    evidence: %s\n    try: %s\n", f->evidence, f->action);
	}
	an_findings_not_examined(an_result_probe_attached(d->result, "sched"),
				 an_result_probe_attached(d->result, "offcpu"), line, sizeof(line));
	if (*line)
		printf("  %s\n", line);
}

static void print_json(const char *run, const struct diagnosis *d)
{
	fputs("{\"run\": ", stdout);
	an_json_str(stdout, run);
	fputs(", \"workload\": ", stdout);
	an_json_str(stdout, an_result_str(d->result, "workload"));
	fputs(", \"preset\": ", stdout);
	an_json_str(stdout, an_result_str(d->result, "preset"));
	fputs(", \"failure\": ", stdout);
	an_json_str(stdout, an_result_str(d->result, "failure"));
	fprintf(stdout, ", \"partial\": %s",
		an_result_num(d->result, "partial") > 0 ? "true" : "false");
	fputs(", \"findings\": ", stdout);
	an_findings_json(d->findings, d->n, stdout);
	fputs("}", stdout);
}

int cmd_diagnose(int argc, char **argv)
{
	static const struct argp argp = { options, parse, "RUN...", doc, NULL, NULL, NULL };
	struct diagnose_args a = { 0 };
	struct diagnosis *d;
	char err[PATH_MAX + 256];
	int status = CLI_EXIT_OK, n;
	size_t loaded = 0;

	if (cli_argp_parse(&argp, "diagnose", argc, argv, &a))
		return a.bad ? a.bad : CLI_EXIT_USAGE;
	d = calloc(a.nruns, sizeof(*d));
	if (!d)
		return cli_usage_error("out of memory");
	for (; loaded < a.nruns; loaded++) {
		d[loaded].result = an_result_load(a.runs[loaded], err, sizeof(err));
		if (!d[loaded].result) {
			status = cli_usage_error("%s", err);
			goto out_free;
		}
		n = an_findings(d[loaded].result, d[loaded].findings, AN_FINDINGS_MAX);
		if (n < 0) {
			status = cli_usage_error("%s: findings: %s", a.runs[loaded], strerror(-n));
			loaded++;
			goto out_free;
		}
		d[loaded].n = (size_t)n < AN_FINDINGS_MAX ? (size_t)n : AN_FINDINGS_MAX;
	}
	if (a.json && a.nruns > 1)
		fputs("[", stdout);
	for (size_t i = 0; i < a.nruns; i++) {
		if (a.json) {
			fputs(i ? ",\n" : "", stdout);
			print_json(a.runs[i], &d[i]);
		} else {
			if (i)
				putchar('\n');
			print_text(a.runs[i], &d[i]);
		}
	}
	if (a.json)
		fputs(a.nruns > 1 ? "]\n" : "\n", stdout);
	if (fflush(stdout) || ferror(stdout))
		status = CLI_EXIT_FAIL;
	/* a failed run's findings are given, but the diagnosis is of a failure: exit 1 */
	for (size_t i = 0; i < a.nruns && status == CLI_EXIT_OK; i++)
		if (an_result_str(d[i].result, "failure"))
			status = CLI_EXIT_FAIL;
out_free:
	for (size_t i = 0; i < loaded; i++)
		an_result_free(d[i].result);
	free(d);
	return status;
}
