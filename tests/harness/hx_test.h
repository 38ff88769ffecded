/*
 * Helpers shared by the harness tests: the schedlab binary the forks re-execute, where
 * $SCHEDLAB_BUILD (or build/) has it. Included by each tests/harness/test_*.c that runs
 * forks; everything is static inline.
 */
#ifndef SCHEDLAB_TESTS_HARNESS_HX_TEST_H
#define SCHEDLAB_TESTS_HARNESS_HX_TEST_H

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline const char *schedlab_binary(void)
{
	static char path[PATH_MAX];
	const char *build = getenv("SCHEDLAB_BUILD");

	snprintf(path, sizeof(path), "%s/schedlab", build ? build : "build");
	cr_assert_eq(access(path, X_OK), 0, "%s must be built first (make)", path);
	return path;
}

#endif /* SCHEDLAB_TESTS_HARNESS_HX_TEST_H */
