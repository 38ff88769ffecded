/*
 * `schedlab run --alloc-sample`: a value that is not a byte count from 1 to 1 GiB is bad
 * input (one line, exit 2, nothing run).
 */
#include "tests/cli/cli_run.h"

TestSuite(run_alloc, .init = setup, .fini = teardown);

Test(run_alloc, a_bad_sample_period_is_bad_input)
{
	static const char *const bad[] = { "", "0", "-1", "2G", "1T", "12KB", "K", "0.5M",
					   "1073741825" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { "run", "spawn-join", "--probes", "alloc", "--alloc-sample",
				       bad[i], "--out", in_dir("r"), NULL };

		cr_expect_eq(run_schedlab(argv), 2, "--alloc-sample '%s'", bad[i]);
		expect_one_error_line("--alloc-sample");
	}
	cr_expect_eq(entries(), 0, "nothing was created");
}
