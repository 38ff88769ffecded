/*
 * The workload registry, typed parameters, and each workload's op and check on the
 * real runtime.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"

Test(registry, every_workload_is_found_by_its_name_and_has_valid_defaults)
{
	const struct wl_desc *const *all = wl_all();
	union wl_value v[WL_MAX_PARAMS];

	cr_assert_not_null(all[0]);
	for (size_t i = 0; all[i]; i++) {
		cr_expect_eq(wl_find(all[i]->name), all[i]);
		cr_expect_not_null(all[i]->op);
		cr_expect_not_null(all[i]->check);
		cr_expect_str_eq(all[i]->unit, "ops/s");
		for (size_t k = i + 1; all[k]; k++)
			cr_expect_str_neq(all[i]->name, all[k]->name);
		wl_params_default(all[i], v); /* aborts on a default outside its bounds */
	}
	cr_expect_null(wl_find("no-such-workload"));
	cr_expect_not_null(wl_find("spawn-join"));
	cr_expect_not_null(wl_find("workers"));
}

Test(registry, parameters_are_parsed_and_bad_values_named)
{
	const struct wl_desc *d = wl_find("workers");
	int i = wl_param_index(d, "workers");
	union wl_value v;
	char err[256], buf[64];

	cr_assert_geq(i, 0);
	cr_expect_eq(wl_param_index(d, "nope"), -1);
	cr_expect_eq(wl_param_parse(d, i, "16", &v, err, sizeof(err)), 0);
	cr_expect_eq(v.i, 16);
	wl_param_format(d, i, &v, buf, sizeof(buf));
	cr_expect_str_eq(buf, "16");
	cr_expect_eq(wl_param_parse(d, i, "0", &v, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "workers=0") && strstr(err, "1 to 256"), "%s", err);
	cr_expect_eq(wl_param_parse(d, i, "8x", &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_param_parse(d, i, "", &v, err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_param_parse(d, i, "99999999999999999999", &v, err, sizeof(err)), -EINVAL);
	cr_expect_null(strchr(err, '\n'), "one line");
}

Test(spawn_join, sums_its_children_under_1_2_and_8_workers, .timeout = 60)
{
	unsigned counts[] = { 1, 2, 8 };

	for (size_t k = 0; k < 3; k++) {
		struct wl_ctx ctx = wl_test_ctx("spawn-join", NULL, counts[k]);
		char err[256];
		bool ok;

		cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), 500500);
		cr_expect(ok, "%s", err);
		wl_test_finish(&ctx);
	}
}

Test(spawn_join, check_reports_a_wrong_sum)
{
	struct wl_ctx ctx = wl_test_ctx("spawn-join", NULL, 1);
	char err[256];

	wl_test_param(&ctx, "n", "10");
	cr_expect(ctx.desc->check(&ctx, 55, err, sizeof(err)));
	cr_expect_not(ctx.desc->check(&ctx, 54, err, sizeof(err)));
	cr_expect(strstr(err, "54") && strstr(err, "55"), "%s", err);
	wl_test_finish(&ctx);
}

Test(workers, default_checksum_is_the_published_one, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("workers", NULL, 2);
	char err[256];
	bool ok;

	cr_expect_eq(wl_test_run_op(&ctx, &ok, err, sizeof(err)), 16452561075408646571ull);
	cr_expect(ok, "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, 1, err, sizeof(err)));
	wl_test_finish(&ctx);
}

Test(workers, uneven_split_matches_the_sequential_reference, .timeout = 60)
{
	unsigned counts[] = { 1, 2, 8 };

	for (size_t k = 0; k < 3; k++) {
		struct wl_ctx ctx = wl_test_ctx("workers", NULL, counts[k]);
		char err[256];
		bool ok;

		wl_test_param(&ctx, "values", "1000");
		wl_test_param(&ctx, "workers", "7");
		wl_test_param(&ctx, "rounds", "3");
		wl_test_run_op(&ctx, &ok, err, sizeof(err));
		cr_expect(ok, "%s", err);
		wl_test_finish(&ctx);
	}
}
