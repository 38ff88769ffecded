/*
 * `schedlab diagnose`, run as a user runs it: bad input (no such folder, a folder
 * without result.json, text that is not JSON) is one line and exit status 2 with nothing
 * on stdout; a run folder's findings print ranked, as text or JSON; and real runs of
 * tcp-blocking: under kyo the top finding is stranded work, and blocking sections that
 * are never handed off (ce with -c blocking=none) get it too.
 */
#include "analysis/analysis.h"
#include "tests/cli/cli_run.h"

TestSuite(diagnose_cli, .init = setup, .fini = teardown);

static int diagnose1(const char *a1)
{
	const char *argv[] = { "diagnose", a1, NULL };

	return run_schedlab(argv);
}

/* A run folder holding one result.json of text. */
static const char *folder_with(const char *name, const char *text)
{
	static char path[512];
	char file[600];

	snprintf(path, sizeof(path), "%s", in_dir(name));
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(file, sizeof(file), "%s/result.json", path);
	write_file(file, text);
	return path;
}

static const char blocked[] =
	"{\"schema\": \"schedlab-result/1\", \"id\": \"20261207-1-tcp-blocking-kyo\", "
	"\"unit\": \"ops/s\", \"samples\": [3.5, 3.7, 3.6], "
	"\"workload\": \"tcp-blocking\", \"preset\": \"kyo\", "
	"\"workers\": 2, \"forks\": 1, \"iterations\": 3, \"iteration_seconds\": 0.2, "
	"\"runtime\": {\"stranded_ns\": 946000000, \"blocking_episodes\": 1280, "
	"\"detector_misses\": 1280}, \"knobs\": {\"blocking\": \"detect\"}}";

Test(diagnose_cli, no_run_is_bad_input)
{
	const char *argv[] = { "diagnose", NULL };

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("needs a run folder");
	cr_expect_str_eq(out_text, "");
}

Test(diagnose_cli, a_missing_folder_is_named)
{
	cr_expect_eq(diagnose1(in_dir("nosuch")), 2);
	expect_one_error_line("nosuch");
	cr_expect_str_eq(out_text, "");
}

Test(diagnose_cli, a_folder_without_result_json_is_bad_input)
{
	cr_assert_eq(mkdir(in_dir("empty"), 0755), 0);
	cr_expect_eq(diagnose1(in_dir("empty")), 2);
	expect_one_error_line("no result.json in this folder");
	cr_expect_str_eq(out_text, "");
}

Test(diagnose_cli, malformed_json_is_bad_input_naming_the_file)
{
	const char *run = folder_with("bad", "{\"schema\": \"schedlab-result/1\", \"runtime\": {");

	cr_expect_eq(diagnose1(run), 2);
	expect_one_error_line("result.json: not valid JSON");
	cr_expect_str_eq(out_text, "");
}

Test(diagnose_cli, json_that_is_no_result_is_bad_input)
{
	const char *run = folder_with("other", "{\"name\": \"x\"}");

	cr_expect_eq(diagnose1(run), 2);
	expect_one_error_line("not a schedlab result");
}

Test(diagnose_cli, one_bad_run_prints_nothing_of_the_good_ones)
{
	char good[512];
	const char *argv[4];

	snprintf(good, sizeof(good), "%s", folder_with("good", blocked));
	argv[0] = "diagnose";
	argv[1] = good;
	argv[2] = in_dir("nosuch");
	argv[3] = NULL;
	cr_expect_eq(run_schedlab(argv), 2);
	cr_expect_str_eq(out_text, "");
	expect_one_error_line("nosuch");
}

Test(diagnose_cli, help_shows_usage_and_examples)
{
	cr_expect_eq(diagnose1("--help"), 0);
	cr_expect_not_null(strstr(out_text, "USAGE: schedlab diagnose RUN..."), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "schedlab diagnose results/latest"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "--json"), "%s", out_text);
}

Test(diagnose_cli, findings_print_ranked_with_evidence_and_action)
{
	const char *run = folder_with("run", blocked);

	cr_expect_eq(diagnose1(run), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, "tcp-blocking · preset kyo"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, " 1.  79%  Blocked workers held queued tasks"), "%s",
			   out_text);
	cr_expect_not_null(strstr(out_text, "[stranded-work]"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "    evidence: stranded_ns 946 ms of 1.20 s worker "
					    "time"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "    try: "), "%s", out_text);
	cr_expect_str_eq(err_text, "");
}

Test(diagnose_cli, no_finding_is_said)
{
	const char *run = folder_with("quiet", "{\"schema\": \"schedlab-result/1\", "
					       "\"id\": \"q\", \"workload\": \"permit\", "
					       "\"preset\": \"ce\", \"unit\": \"ops/s\", "
					       "\"samples\": [10, 11]}");

	cr_expect_eq(diagnose1(run), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, "No finding crossed its threshold."), "%s", out_text);
	cr_expect_not_null(strstr(out_text, AN_FINDINGS_NOT_EXAMINED), "%s", out_text);
}

/* A document that only says it is a result is no run to diagnose: "No finding" would be
 * a verdict on nothing. */
Test(diagnose_cli, a_schema_alone_is_bad_input_naming_what_is_missing)
{
	const char *run = folder_with("bare", "{\"schema\": \"schedlab-result/1\"}");

	cr_expect_eq(diagnose1(run), 2);
	expect_one_error_line("\"id\" is missing");
	cr_expect_str_eq(out_text, "");
}

/* A run that failed is diagnosed, its failure said first, and the status is 1. */
Test(diagnose_cli, a_failed_run_says_so_and_exits_1)
{
	const char *run = folder_with("failed", "{\"schema\": \"schedlab-result/1\", \"id\": "
						"\"f\", \"workload\": \"permit\", \"preset\": "
						"\"ce\", \"unit\": \"ops/s\", \"samples\": [], "
						"\"failure\": \"cannot write oncpu.svg: No space "
						"left on device\"}");

	cr_expect_eq(diagnose1(run), 1);
	cr_expect_not_null(strstr(out_text, "The run failed: cannot write oncpu.svg: No space "
					    "left on device."), "%s", out_text);
}

/* What a run folder says is printed as text: its escapes never reach the terminal. */
Test(diagnose_cli, escapes_in_a_run_folder_are_printed_as_text)
{
	const char *run = folder_with("esc", "{\"schema\": \"schedlab-result/1\", \"id\": "
					     "\"e\", \"workload\": \"\\u001b]0;PWNED\\u0007\", "
					     "\"preset\": \"ce\\u009b2J\", \"unit\": \"ops/s\", "
					     "\"samples\": [1, 2]}");

	cr_expect_eq(diagnose1(run), 0, "%s", err_text);
	cr_expect_null(strchr(out_text, 0x1b), "%s", out_text);
	cr_expect_null(strchr(out_text, 0x07), "%s", out_text);
	cr_expect_null(strstr(out_text, "\xc2\x9b"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "\\x1b]0;PWNED\\x07 · preset ce\\xc2\\x9b2J"), "%s",
			   out_text);
}

Test(diagnose_cli, json_holds_the_findings_of_each_run)
{
	char one[512], path[sizeof(out_text) + 64], err[256];
	struct an_result *r;

	snprintf(one, sizeof(one), "%s", folder_with("a", blocked));
	cr_assert_eq(run_schedlab((const char *[]){ "diagnose", one, "--json", NULL }), 0, "%s",
		     err_text);
	/* an_result wants a schema: read the object as a member of one */
	snprintf(path, sizeof(path), "{\"schema\": \"schedlab-result/1\", \"d\": %s}", out_text);
	r = an_result_parse(path, strlen(path), "stdout", err, sizeof(err));
	cr_assert_not_null(r, "%s: %s", err, out_text);
	cr_expect_str_eq(an_result_str(r, "d.run"), one);
	cr_expect_str_eq(an_result_str(r, "d.findings.0.id"), "stranded-work");
	cr_expect_float_eq(an_result_num(r, "d.findings.0.share"), 946e6 / 1.2e9, 1e-9);
	cr_expect_not_null(an_result_str(r, "d.findings.0.action"));
	an_result_free(r);

	cr_assert_eq(run_schedlab((const char *[]){ "diagnose", one, "--json", one, NULL }), 0);
	cr_expect_eq(out_text[0], '[', "%s", out_text);
}

/* ---- real runs --------------------------------------------------------------------------- */

/* `schedlab run tcp-blocking --quick -P conns=8 --preset P [-c KNOB]` into the scratch
 * folder; its result.json read back. */
static struct an_result *tcp_blocking(const char *preset, const char *knob)
{
	const char *argv[16];
	size_t n = 0;
	char err[512];
	struct an_result *r;

	argv[n++] = "run";
	argv[n++] = "tcp-blocking";
	argv[n++] = "--quick";
	argv[n++] = "-P";
	argv[n++] = "conns=8";
	argv[n++] = "--preset";
	argv[n++] = preset;
	if (knob) {
		argv[n++] = "-c";
		argv[n++] = knob;
	}
	argv[n++] = "--out";
	argv[n++] = in_dir("results");
	argv[n] = NULL;
	cr_assert_eq(run_schedlab(argv), 0, "%s", err_text);
	r = an_result_load(in_dir("results/latest"), err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	return r;
}

static bool has_finding(const struct an_result *r, const char *id)
{
	char path[64];

	for (size_t i = 0; i < an_result_len(r, "findings"); i++) {
		snprintf(path, sizeof(path), "findings.%zu.id", i);
		if (an_result_str(r, path) && !strcmp(an_result_str(r, path), id))
			return true;
	}
	return false;
}

Test(diagnose_cli, kyo_on_blocking_tcp_is_stranded_work_first, .timeout = 120)
{
	struct an_result *r = tcp_blocking("kyo", NULL);
	char report[600];
	char *md;

	cr_expect_str_eq(an_result_str(r, "findings.0.id"), "stranded-work",
			 "top finding %s: %s", an_result_str(r, "findings.0.id"),
			 an_result_str(r, "findings.0.claim"));
	/* report.md leads with the same */
	snprintf(report, sizeof(report), "%s/report.md", an_result_dir(r));
	md = slurp(report, NULL);
	cr_assert_not_null(md);
	cr_expect_not_null(strstr(md, "## Findings\n\n1. **Blocked workers held queued tasks"),
			   "%s", md);
	free(md);
	/* and diagnose reads the folder to the same top finding */
	cr_expect_eq(diagnose1(an_result_dir(r)), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, " 1. "), "%s", out_text);
	cr_expect_not_null(strstr(strstr(out_text, " 1. "), "[stranded-work]"), "%s", out_text);
	an_result_free(r);
}

Test(diagnose_cli, blocking_never_handed_off_is_stranded_work, .timeout = 120)
{
	struct an_result *r = tcp_blocking("ce", "blocking=none");

	cr_expect(has_finding(r, "stranded-work"), "findings: %s, ...",
		  an_result_str(r, "findings.0.id"));
	an_result_free(r);
}
