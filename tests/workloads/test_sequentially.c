/*
 * sequentially: each impl serializes per key and loses nothing under every preset; the
 * actors keep each key's issue order; an injected fault (actors: two messages of a key
 * handled out of order; buckets: a bucket let go while its body is inside) fails the
 * check, naming it, and the next op is clean again; and the check's other refusals.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

static const char *const impls[] = { "buckets", "actors", "converted" };

static struct wl_ctx seq_ctx(const char *preset, const char *impl, const char *n,
			     const char *keys)
{
	struct wl_ctx ctx = wl_test_ctx("sequentially", preset, 2);

	wl_test_param(&ctx, "impl", impl);
	wl_test_param(&ctx, "n", n);
	wl_test_param(&ctx, "keys", keys);
	wl_test_setup(&ctx);
	return ctx;
}

Test(sequentially, defaults_are_the_studys)
{
	struct wl_ctx ctx = wl_test_ctx("sequentially", "ce", 2);

	cr_expect_eq(wl_int(&ctx, "n"), 1000);
	cr_expect_eq(wl_choice(&ctx, "impl"), 0, "buckets");
	cr_expect_eq(wl_int(&ctx, "buckets"), 0, "0: 5 x workers");
	wl_test_finish(&ctx);
}

Test(sequentially, every_impl_checks_under_every_preset, .timeout = 240)
{
	for (const char *const *p = rt_preset_names(); *p; p++)
		for (size_t i = 0; i < 3; i++) {
			/* few keys: many operations per key, so serialization is exercised */
			struct wl_ctx ctx = seq_ctx(*p, impls[i], "300", "7");
			char err[512] = "";

			for (int op = 0; op < 3; op++)
				cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
					  "%s %s op %d: %s", *p, impls[i], op, err);
			wl_test_finish(&ctx);
		}
}

Test(sequentially, the_studys_size_checks_with_one_bucket_and_with_many, .timeout = 120)
{
	const char *buckets[] = { "1", "0", "4096" };

	for (size_t i = 0; i < 3; i++)
		for (size_t b = 0; b < 3; b++) {
			struct wl_ctx ctx = wl_test_ctx("sequentially", "ce", 2);
			char err[512] = "";

			wl_test_param(&ctx, "impl", impls[i]);
			wl_test_param(&ctx, "buckets", buckets[b]);
			wl_test_setup(&ctx);
			for (int op = 0; op < 3; op++)
				cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
					  "%s buckets=%s op %d: %s", impls[i], buckets[b], op, err);
			wl_test_finish(&ctx);
		}
}

Test(sequentially, an_injected_fault_fails_the_check_once, .timeout = 120)
{
	const char *why[] = { "not serialized", "order not preserved", "not serialized" };

	for (size_t i = 0; i < 3; i++) {
		struct wl_ctx ctx = seq_ctx("ce", impls[i], "200", "5");
		char err[512] = "";

		cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", impls[i], err);
		wl__sequentially_inject(&ctx);
		cr_expect_not(wl_test_op_check(&ctx, err, sizeof(err)), "%s: the fault went unseen",
			      impls[i]);
		cr_expect(strstr(err, why[i]), "%s: %s", impls[i], err);
		cr_expect_null(strchr(err, '\n'), "one line");
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, after: %s", impls[i], err);
		wl_test_finish(&ctx);
	}
}

Test(sequentially, the_fault_is_caught_on_one_worker_too, .timeout = 60)
{
	for (size_t i = 0; i < 3; i++) {
		struct wl_ctx ctx = wl_test_ctx("sequentially", "kyo", 1);
		char err[512] = "";

		wl_test_param(&ctx, "impl", impls[i]);
		wl_test_param(&ctx, "keys", "3");
		wl_test_param(&ctx, "n", "50");
		wl_test_setup(&ctx);
		wl__sequentially_inject(&ctx);
		cr_expect_not(wl_test_op_check(&ctx, err, sizeof(err)), "%s", impls[i]);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, after: %s", impls[i], err);
		wl_test_finish(&ctx);
	}
}

Test(sequentially, check_refuses_a_wrong_count)
{
	struct wl_ctx ctx = seq_ctx("ce", "buckets", "100", "10");
	char err[512] = "";
	uint64_t r = wl_test_op(&ctx);

	cr_expect_eq(r, 100);
	cr_expect(ctx.desc->check(&ctx, r, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, 99, err, sizeof(err)));
	cr_expect(strstr(err, "99") && strstr(err, "n = 100"), "%s", err);
	wl_test_finish(&ctx);
}

Test(sequentially, bad_parameters_are_named_with_what_they_accept)
{
	const struct wl_desc *d = wl_find("sequentially");
	char err[256];

	cr_assert_not_null(d);
	cr_expect_eq(wl_test_parse(d, "impl", "locks", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "sequentially: -P impl=locks: expected one of "
			      "buckets,actors,converted");
	cr_expect_eq(wl_test_parse(d, "n", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "keys", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "buckets", "-1", err, sizeof(err)), -EINVAL);
}
