/*
 * `schedlab run` on the studies' error-pipeline and sequentially workloads, as a user
 * runs it: a bad style, impl, failure probability or work factor is one line naming the
 * input and what it accepts, exit status 2, nothing created; a quick run passes its
 * check after every op and reports the spin's calibration and the errors' traces.
 */
#include "tests/cli/cli_run.h"

TestSuite(run_study_workloads_cli, .init = setup, .fini = teardown);

static int run_p(const char *workload, const char *param)
{
	const char *argv[] = { "run", workload, "-P", param, "--out", in_dir("r"), NULL };

	return run_schedlab(argv);
}

Test(run_study_workloads_cli, bad_parameters_are_one_line_and_exit_2)
{
	static const char *const cases[][3] = {
		{ "error-pipeline", "fail=1.5", "expected a number from 0 to 1" },
		{ "error-pipeline", "fail=-0.5", "expected a number from 0 to 1" },
		{ "error-pipeline", "tf=0", "expected a whole number from 1 to 100000" },
		{ "error-pipeline", "style=exceptions", "value,combinator,raise,raise-notrace" },
		{ "error-pipeline", "exec=threads", "pool,loop" },
		{ "sequentially", "impl=locks", "buckets,actors,converted" },
		{ "sequentially", "n=0", "expected a whole number from 1 to 1000000" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(run_p(cases[i][0], cases[i][1]), 2, "%s -P %s", cases[i][0],
			     cases[i][1]);
		expect_one_error_line(cases[i][1]);
		expect_one_error_line(cases[i][2]);
	}
	cr_expect_eq(entries(), 0, "nothing was created");
}

Test(run_study_workloads_cli, a_quick_raise_run_reports_calibration_and_traces, .timeout = 120)
{
	const char *argv[] = { "run", "error-pipeline", "--quick", "--time", "0.05", "--probes",
			       "none", "-P", "style=raise", "-P", "exec=loop", "--out",
			       in_dir("results"), NULL };
	char path[1024], *md;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	cr_expect_not_null(strstr(md, "| consume_cpu |"), "%s", md);
	cr_expect_not_null(strstr(md, "ns/token"), "%s", md);
	cr_expect_not_null(strstr(md, "| frames_per_error |"), "%s", md);
	free(md);
}

Test(run_study_workloads_cli, a_quick_sequentially_run_passes_its_check, .timeout = 120)
{
	const char *argv[] = { "run", "sequentially", "--quick", "--time", "0.05", "--probes",
			       "none", "-P", "impl=actors", "--out", in_dir("results"), NULL };

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	cr_expect_null(strstr(err_text, "failed"), "%s", err_text);
}
