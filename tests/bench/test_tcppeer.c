/*
 * bench/tcppeer, the epoll TCP peer of `make bench`, run as bench/run.sh runs it: one
 * measured iteration against schedlab's own server is one sample line and nothing else;
 * against a server that answers an exchange wrongly (tests/helpers/wrong_echo) the peer's
 * check fails the iteration and the program, and it prints no sample.
 */
#include <stdlib.h>

#include "tests/cli/cli_run.h"

TestSuite(tcppeer, .init = setup, .fini = teardown);

static int run_peer(const char *warmup)
{
	const char *args[] = { "tcp-epoll", "--warmup", warmup, "--iterations", "1", "--time",
			       "0.01", NULL };
	char peer[512];

	snprintf(peer, sizeof(peer), "%s/bench/tcppeer", schedlab_build());
	cr_assert_eq(access(peer, X_OK), 0, "%s is not built; run make test", peer);
	return run_program(peer, args);
}

static void use_server(const char *program)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", schedlab_build(), program);
	cr_assert_eq(access(path, X_OK), 0, "%s is not built; run make test", path);
	cr_assert_eq(setenv("SCHEDLAB_EXE", path, 1), 0);
}

Test(tcppeer, one_iteration_against_the_server_is_one_sample, .timeout = 60)
{
	char *end;
	double rate;

	use_server("schedlab");
	cr_assert_eq(run_peer("0"), 0, "%s", err_text);
	cr_expect_str_eq(err_text, "");
	rate = strtod(out_text, &end);
	cr_expect(end != out_text && !strcmp(end, "\n"), "one sample line: '%s'", out_text);
	/* 256 exchanges, each behind a 1 ms sleep, 64 at a time: at most 250 ops/s */
	cr_expect(rate > 0 && rate < 250, "%g ops/s", rate);
}

/* The server's second op (the warm-up's was the first) answers with a wrong tag. */
Test(tcppeer, a_wrong_echo_fails_the_iteration_and_the_program, .timeout = 60)
{
	char spec[600];

	use_server("tests/helpers/wrong_echo");
	snprintf(spec, sizeof(spec), "1 2 %s", in_dir("starts"));
	cr_assert_eq(setenv("WRONG_ECHO", spec, 1), 0);
	cr_expect_eq(run_peer("1"), 1, "%s", err_text);
	cr_expect_str_eq(out_text, "", "no sample from a failed iteration");
	cr_expect_not_null(strstr(err_text, "tcp-epoll: connection "), "%s", err_text);
	cr_expect_not_null(strstr(err_text, ", exchange "), "%s", err_text);
	cr_expect_not_null(strstr(err_text, ": a wrong echo\n"), "%s", err_text);
	cr_expect_not_null(strstr(err_text, "tcppeer tcp-epoll: iteration 2 failed"), "%s",
			   err_text);
}
