/*
 * The sched probe's figures in the probe set that need no kernel: percentiles from its
 * log2 run-queue histograms, as the report states them (the top of the bucket holding
 * the rank, at most the largest wait).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "harness/harness.h"
#include "probes/probes.h"

Test(sched_quantile, the_top_of_the_bucket_holding_the_rank)
{
	uint64_t h[PROBE_SCHED_SLOTS] = { 0 };

	/* 98 waits in [4096, 8192) ns, 2 in [2^20, 2^21) */
	h[12] = 98;
	h[20] = 2;
	cr_expect_float_eq(hx_sched_quantile_ns(h, 3000000, 0.50), 8192, 1e-9);
	/* rank 98 of 100 is still in the low bucket, rank 99 is not */
	cr_expect_float_eq(hx_sched_quantile_ns(h, 3000000, 0.98), 8192, 1e-9);
	cr_expect_float_eq(hx_sched_quantile_ns(h, 3000000, 0.99), 2097152, 1e-9);
	/* never above the largest wait */
	cr_expect_float_eq(hx_sched_quantile_ns(h, 1500000, 0.99), 1500000, 1e-9);
	cr_expect_float_eq(hx_sched_quantile_ns(h, 1500000, 1.0), 1500000, 1e-9);
	/* the smallest rank is the first wait */
	cr_expect_float_eq(hx_sched_quantile_ns(h, 3000000, 0.0), 8192, 1e-9);
}

Test(sched_quantile, an_empty_histogram_has_none_and_the_last_bucket_is_open)
{
	uint64_t h[PROBE_SCHED_SLOTS] = { 0 };

	cr_expect(isnan(hx_sched_quantile_ns(h, 0, 0.5)));
	h[PROBE_SCHED_SLOTS - 1] = 3;
	cr_expect_float_eq(hx_sched_quantile_ns(h, 90000000000ull, 0.5), 9e10, 1e-9);
}

Test(sched_quantile, sched_is_a_built_probe)
{
	unsigned mask = 0;
	char err[256];

	cr_assert_eq(hx_probes_parse("sched", &mask, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(mask, 1u << HX_PROBE_SCHED);
	cr_expect_str_eq(hx_sched_ops.name, "sched");
	cr_expect_eq(hx_sched_ops.id, HX_PROBE_SCHED);
	cr_expect(!hx_sched_ops.opt_in);
}
