/*
 * A stand-in for <criterion/criterion.h> in the ThreadSanitizer build (make test
 * SANITIZE=thread) of the runtime tests.
 *
 * Criterion cannot start under TSan (its sandbox's shared arena is refused by TSan's
 * memory layout: Snaipe/Criterion#274), so this header gives the same test files the
 * subset of Criterion they use, and tests/tsan/runner.c runs them one after another in
 * one process. A failed cr_assert on the runner's thread ends that test; on any other
 * thread (inside a task) it ends the run, as Criterion would end the test's process.
 * Tests that expect a signal (.signal) are about crashes, not races, and are left to
 * the normal build.
 */
#ifndef SCHEDLAB_TSAN_CRITERION_H
#define SCHEDLAB_TSAN_CRITERION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct shim_test {
	const char *suite, *name;
	void (*fn)(void);
	double timeout;
	int signal;
	int exit_code;
	bool disabled;
	void (*init)(void);
	void (*fini)(void);
	const char *description;
	struct shim_test *next;
};

void shim_register(struct shim_test *t);
void shim_fail(const char *file, int line, bool fatal, const char *expr, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
__attribute__((noreturn)) void shim_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* (the parameters are not named suite and name: those are also the fields) */
#define Test(s_, n_, ...)                                                                \
	static void shim_##s_##_##n_(void);                                              \
	static struct shim_test shim_desc_##s_##_##n_ = {                                \
		.suite = #s_, .name = #n_, .fn = shim_##s_##_##n_, ##__VA_ARGS__         \
	};                                                                               \
	__attribute__((constructor)) static void shim_reg_##s_##_##n_(void)               \
	{                                                                                \
		shim_register(&shim_desc_##s_##_##n_);                                   \
	}                                                                                \
	static void shim_##s_##_##n_(void)

#define TestSuite(...) struct shim_unused_suite

#define SHIM_CHECK(fatal, cond, expr, ...)                                               \
	do {                                                                             \
		if (!(cond))                                                             \
			shim_fail(__FILE__, __LINE__, fatal, expr, "" __VA_ARGS__);      \
	} while (0)

#define cr_assert(c, ...)            SHIM_CHECK(true, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...)            SHIM_CHECK(false, (c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...)        SHIM_CHECK(true, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_expect_not(c, ...)        SHIM_CHECK(false, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_assert_fail(...)          shim_fail(__FILE__, __LINE__, true, "fail", "" __VA_ARGS__)

#define SHIM_CMP(fatal, a, op, b, ...) SHIM_CHECK(fatal, (a) op (b), #a " " #op " " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...)  SHIM_CMP(true, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) SHIM_CMP(true, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...)  SHIM_CMP(true, a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) SHIM_CMP(true, a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...)  SHIM_CMP(true, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) SHIM_CMP(true, a, >=, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...)  SHIM_CMP(false, a, ==, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) SHIM_CMP(false, a, !=, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...)  SHIM_CMP(false, a, <, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) SHIM_CMP(false, a, <=, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...)  SHIM_CMP(false, a, >, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) SHIM_CMP(false, a, >=, b, __VA_ARGS__)

#define cr_assert_null(p, ...)     SHIM_CHECK(true, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) SHIM_CHECK(true, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_null(p, ...)     SHIM_CHECK(false, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) SHIM_CHECK(false, (p) != NULL, #p " != NULL", __VA_ARGS__)

#define cr_assert_str_eq(a, b, ...)  SHIM_CHECK(true, !strcmp((a), (b)), #a " == " #b, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) SHIM_CHECK(true, strcmp((a), (b)), #a " != " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...)  SHIM_CHECK(false, !strcmp((a), (b)), #a " == " #b, __VA_ARGS__)
#define cr_expect_str_neq(a, b, ...) SHIM_CHECK(false, strcmp((a), (b)), #a " != " #b, __VA_ARGS__)

#define cr_skip_test(...) shim_skip("" __VA_ARGS__)
#define cr_log_info(...)  shim_log(__VA_ARGS__)
#define cr_log_warn(...)  shim_log(__VA_ARGS__)
#define cr_log_error(...) shim_log(__VA_ARGS__)

#endif /* SCHEDLAB_TSAN_CRITERION_H */
