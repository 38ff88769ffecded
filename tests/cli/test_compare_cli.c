/*
 * `schedlab compare RUN_A RUN_B` and `schedlab run --baseline RUN`, run as a user runs
 * them: bad input (a missing run, a folder without result.json, a failed run, runs of
 * two workloads or in two units) is one line naming it with exit status 2 and nothing
 * written; good input writes compare.md (what is printed), compare.json and diff.svg;
 * and two real quick runs compare end to end, checked for structure, not for which
 * one is faster.
 */
#include "analysis/analysis.h"
#include "tests/cli/cli_run.h"

#include <limits.h>

TestSuite(compare_cli, .init = setup, .fini = teardown);

static int run_compare(const char *const *args)
{
	const char *argv[32] = { "compare" };
	size_t n = 1;

	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return run_schedlab(argv);
}

struct fake_run {
	const char *name, *workload, *unit, *params, *samples, *failure, *folded;
};

/* A run folder in the scratch folder, as 'schedlab run' writes one: result.json, and
 * oncpu.folded when the run has a profile. */
static const char *fake_run(struct fake_run r)
{
	const char *path = in_dir(r.name);
	char file[600], json[4096];

	cr_assert_eq(mkdir(path, 0755), 0, "%s", path);
	snprintf(json, sizeof(json),
		 "{\"schema\": \"schedlab-result/1\", \"id\": \"%s\", \"workload\": \"%s\","
		 " \"preset\": \"ce\", \"params\": \"%s\", \"unit\": \"%s\", \"forks\": 1,"
		 " \"warmup_iterations\": 1, \"iterations\": 3, \"iteration_seconds\": 0.2,"
		 " \"samples\": [%s], \"failure\": %s%s%s,"
		 " \"runtime\": {\"ops\": 100, \"parks\": 50},"
		 " \"per_iteration\": {\"columns\": [\"parks\"], \"rows\": []}, \"knobs\": {},"
		 " \"probes\": [{\"name\": \"oncpu\", \"attached\": true, \"status\": \"attached\","
		 " \"samples\": 100, \"categories\": {\"work\": 60, \"scheduling\": 40}%s]}",
		 r.name, r.workload ? r.workload : "spawn-join", r.params ? r.params : "n=1000",
		 r.unit ? r.unit : "ops/s", r.samples ? r.samples : "100, 102, 98",
		 r.failure ? "\"" : "", r.failure ? r.failure : "null", r.failure ? "\"" : "",
		 r.folded ? ", \"folded\": \"oncpu.folded\"}" : "}");
	snprintf(file, sizeof(file), "%s/result.json", path);
	write_file(file, json);
	if (r.folded) {
		snprintf(file, sizeof(file), "%s/oncpu.folded", path);
		write_file(file, r.folded);
	}
	return path;
}

/* Exit 2, one line naming what is wrong, and no compare folder made. */
static void expect_refused(const char *a, const char *b, const char *needle,
			   const char *needle2)
{
	const char *args[] = { a, b, NULL };
	size_t before = entries();

	cr_expect_eq(run_compare(args), 2, "stdout: %s", out_text);
	expect_one_error_line(needle);
	if (needle2)
		cr_expect_not_null(strstr(err_text, needle2), "'%s' not in: %s", needle2,
				   err_text);
	cr_expect_str_eq(out_text, "");
	cr_expect_eq(entries(), before, "something was written");
}

/* ---- bad input ------------------------------------------------------------------------ */

Test(compare_cli, a_missing_run_folder_is_named)
{
	const char *b = fake_run((struct fake_run){ .name = "b" });

	expect_refused(in_dir("nope"), b, "nope", "No such file");
}

Test(compare_cli, a_folder_without_result_json_is_named)
{
	const char *b = fake_run((struct fake_run){ .name = "b" });

	cr_assert_eq(mkdir(in_dir("empty"), 0755), 0);
	expect_refused(in_dir("empty"), b, "empty", "no result.json");
}

Test(compare_cli, runs_of_two_workloads_are_refused_naming_both)
{
	const char *a = fake_run((struct fake_run){ .name = "a" });
	const char *b = fake_run((struct fake_run){ .name = "b", .workload = "workers" });

	expect_refused(a, b, "spawn-join", "workers");
}

Test(compare_cli, a_failed_run_is_refused)
{
	const char *a = fake_run((struct fake_run){ .name = "a" });
	const char *b = fake_run((struct fake_run){ .name = "failed", .samples = "",
						    .failure = "fork 1 was killed" });

	expect_refused(a, b, "failed", "fork 1 was killed");
}

Test(compare_cli, different_units_are_refused)
{
	const char *a = fake_run((struct fake_run){ .name = "a" });
	const char *b = fake_run((struct fake_run){ .name = "b", .unit = "ns/op" });

	expect_refused(a, b, "ops/s", "ns/op");
}

Test(compare_cli, two_runs_are_needed)
{
	const char *a = fake_run((struct fake_run){ .name = "a" });
	const char *one[] = { a, NULL }, *three[] = { a, a, a, NULL };

	cr_expect_eq(run_compare(one), 2);
	expect_one_error_line("two run folders");
	cr_expect_eq(run_compare(three), 2);
	expect_one_error_line("third");
}

Test(compare_cli, an_output_that_is_not_a_folder_is_refused)
{
	const char *a = fake_run((struct fake_run){ .name = "a" });
	const char *b = fake_run((struct fake_run){ .name = "b" });
	const char *args[] = { a, b, "-o", in_dir("file"), NULL };

	write_file(in_dir("file"), "mine\n");
	cr_expect_eq(run_compare(args), 2);
	expect_one_error_line("not a folder");
	cr_expect_eq(entries(), 3);
}

/* ---- good input ------------------------------------------------------------------------ */

/* compare.json, checked to be JSON and read by path, inside a result.json wrapper so
 * that the project's one reader takes it. */
static struct an_result *read_compare_json(const char *path)
{
	size_t len;
	char *text = slurp(path, &len), *wrapped, err[512] = "";
	struct an_result *r;

	cr_assert_not_null(text, "%s", path);
	cr_assert(asprintf(&wrapped, "{\"schema\": \"schedlab-result/0\", \"c\": %s}", text) > 0);
	r = an_result_parse(wrapped, strlen(wrapped), path, err, sizeof(err));
	cr_assert_not_null(r, "compare.json is not JSON: %s", err);
	free(text);
	free(wrapped);
	return r;
}

Test(compare_cli, writes_compare_md_json_and_diff_svg_beside_b)
{
	const char *a = fake_run((struct fake_run){ .name = "a",
						    .folded = "main;grow 10\nmain;shrink 90\n" });
	const char *b = fake_run((struct fake_run){ .name = "b", .samples = "150, 153, 147",
						    .folded = "main;grow 50\nmain;shrink 50\n" });
	const char *args[] = { a, b, NULL };
	char path[700], *md, *svg;
	struct an_result *j;

	cr_assert_eq(run_compare(args), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/compare-a-vs-b/compare.md", dir);
	md = slurp(path, NULL);
	cr_assert_not_null(md, "no %s; stderr: %s", path, err_text);
	cr_expect_str_eq(md, out_text, "compare.md is what was printed");
	cr_expect_not_null(strstr(md, "**Verdict: faster**"), "%s", md);
	cr_expect_not_null(strstr(md, "| `grow` | 10.0% | 50.0% | +40.0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "diff.svg: B's stacks"), "%s", md);

	snprintf(path, sizeof(path), "%s/compare-a-vs-b/compare.json", dir);
	j = read_compare_json(path);
	cr_expect_str_eq(an_result_str(j, "c.schema"), "schedlab-compare/1");
	cr_expect_str_eq(an_result_str(j, "c.throughput.verdict"), "faster");
	cr_expect_float_eq(an_result_num(j, "c.throughput.ratio"), 1.5, 1e-9);
	cr_expect_str_eq(an_result_str(j, "c.throughput.method"), "fieller");
	cr_expect_str_eq(an_result_str(j, "c.flame"), "diff.svg");
	cr_expect_str_eq(an_result_str(j, "c.a.id"), "a");
	an_result_free(j);

	snprintf(path, sizeof(path), "%s/compare-a-vs-b/diff.svg", dir);
	svg = slurp(path, NULL);
	cr_assert_not_null(svg);
	cr_expect_not_null(strstr(svg, "<title>grow (50 samples; A 10.00%, +40.00 points, "
				       "B 50.00%)</title>"));
	cr_expect_not_null(strstr(svg, "fill=\"rgb(255,0,0)\""), "the largest growth is red");
	cr_expect_not_null(strstr(svg, "fill=\"rgb(0,0,255)\""), "the largest fall is blue");
	free(md);
	free(svg);
}

Test(compare_cli, different_parameters_are_compared_and_the_header_says_so)
{
	const char *a = fake_run((struct fake_run){ .name = "a" });
	const char *b = fake_run((struct fake_run){ .name = "b", .params = "n=2000" });
	const char *args[] = { a, b, "-o", in_dir("out"), NULL };
	struct stat st;

	cr_assert_eq(run_compare(args), 0, "stderr: %s", err_text);
	cr_expect_not_null(strstr(out_text, "parameters differ** (A n=1000, B n=2000)"), "%s",
			   out_text);
	cr_expect_not_null(strstr(out_text, "None: A wrote no profile (oncpu: attached)"), "%s",
			   out_text);
	cr_expect_eq(stat(in_dir("out/compare.md"), &st), 0);
	cr_expect_neq(stat(in_dir("out/diff.svg"), &st), 0, "no profiles, no diff.svg");
}

Test(compare_cli, run_baseline_of_another_workload_is_refused_before_running)
{
	const char *base = fake_run((struct fake_run){ .name = "base", .workload = "workers" });
	const char *argv[] = { "run", "spawn-join", "--quick", "--probes", "none", "--baseline",
			       base, "-o", in_dir("runs"), NULL };
	struct stat st;

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("workers");
	cr_expect_not_null(strstr(err_text, "spawn-join"), "%s", err_text);
	cr_expect_neq(stat(in_dir("runs"), &st), 0, "nothing ran");
}

Test(compare_cli, run_baseline_that_is_no_run_is_refused_before_running)
{
	const char *argv[] = { "run", "spawn-join", "--quick", "--probes", "none", "--baseline",
			       in_dir("nope"), "-o", in_dir("runs"), NULL };
	struct stat st;

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("nope");
	cr_expect_neq(stat(in_dir("runs"), &st), 0, "nothing ran");
}

/* ---- two real runs ---------------------------------------------------------------------- */

/* The folder of the newest run in runs/. */
static const char *latest_run(void)
{
	static char bufs[2][PATH_MAX];
	static int next;
	char link[600], id[256], *b = bufs[next++ % 2];
	ssize_t n;

	snprintf(link, sizeof(link), "%s/runs/latest", dir);
	n = readlink(link, id, sizeof(id) - 1);
	cr_assert_gt(n, 0, "no %s", link);
	id[n] = '\0';
	snprintf(b, PATH_MAX, "%s/runs/%s", dir, id);
	return b;
}

Test(compare_cli, two_quick_runs_compare_end_to_end, .timeout = 180)
{
	const char *ce_argv[] = { "run", "spawn-join", "--quick", "--time", "0.1", "-o",
				  in_dir("runs"), NULL };
	const char *ce, *kyo;
	char path[PATH_MAX + 32], *in_run, *in_cmp;
	struct an_result *j;
	const char *verdict;
	struct stat st;

	cr_assert_eq(run_schedlab(ce_argv), 0, "stderr: %s", err_text);
	ce = latest_run();
	{
		const char *kyo_argv[] = { "run", "spawn-join", "--quick", "--time", "0.1",
					   "--preset", "kyo", "--baseline", ce, "-o",
					   in_dir("runs"), NULL };

		cr_assert_eq(run_schedlab(kyo_argv), 0, "stderr: %s", err_text);
	}
	kyo = latest_run();
	cr_assert_str_neq(ce, kyo);
	/* run --baseline printed the comparison after the table and wrote it in its folder */
	cr_expect_not_null(strstr(out_text, "## Throughput"), "%s", out_text);
	snprintf(path, sizeof(path), "%s/compare.md", kyo);
	in_run = slurp(path, NULL);
	cr_assert_not_null(in_run, "no %s", path);
	snprintf(path, sizeof(path), "%s/diff.svg", kyo);
	cr_expect_eq(stat(path, &st), 0, "no %s", path);

	{
		const char *args[] = { ce, kyo, "-o", in_dir("cmp"), NULL };

		cr_assert_eq(run_compare(args), 0, "stderr: %s", err_text);
	}
	in_cmp = slurp(in_dir("cmp/compare.md"), NULL);
	cr_assert_not_null(in_cmp);
	cr_expect_str_eq(in_cmp, in_run, "run --baseline and compare say the same");
	cr_expect_not_null(strstr(in_cmp, "| A | "), "%s", in_cmp);
	cr_expect_not_null(strstr(in_cmp, "Knobs that differ (A → B): "), "%s", in_cmp);
	cr_expect_not_null(strstr(in_cmp, "B / A = "), "%s", in_cmp);
	cr_expect_not_null(strstr(in_cmp, "| category | A | B | Δ points |"), "%s", in_cmp);
	cr_expect_not_null(strstr(in_cmp, "## Runtime counters per op"), "%s", in_cmp);
	cr_expect_not_null(strstr(in_cmp, "- A: oncpu "), "%s", in_cmp);
	cr_expect_not_null(strstr(in_cmp, "- B: oncpu "), "%s", in_cmp);

	j = read_compare_json(in_dir("cmp/compare.json"));
	verdict = an_result_str(j, "c.throughput.verdict");
	cr_assert_not_null(verdict);
	cr_expect(!strcmp(verdict, "faster") || !strcmp(verdict, "slower") ||
			  !strcmp(verdict, "no change") || !strcmp(verdict, "cannot tell"),
		  "verdict %s", verdict);
	cr_expect_gt(an_result_num(j, "c.throughput.ratio"), 0);
	cr_expect_str_eq(an_result_str(j, "c.a.preset"), "ce");
	cr_expect_str_eq(an_result_str(j, "c.b.preset"), "kyo");
	cr_expect_gt(an_result_len(j, "c.counters"), 10);
	cr_expect_eq(an_result_num(j, "c.params_differ"), 0);
	an_result_free(j);
	free(in_run);
	free(in_cmp);
}

Test(compare_cli, a_function_name_cannot_break_the_table)
{
	const char *a = fake_run((struct fake_run){ .name = "a",
						    .folded = "main;operator| 10\nmain;x 90\n" });
	const char *b = fake_run((struct fake_run){ .name = "b",
						    .folded = "main;operator| 60\nmain;x 40\n" });
	const char *args[] = { a, b, NULL };

	cr_assert_eq(run_compare(args), 0, "stderr: %s", err_text);
	cr_expect_not_null(strstr(out_text, "| `operator\\|` | 10.0% | 60.0% | +50.0 |"), "%s",
			   out_text);
}
