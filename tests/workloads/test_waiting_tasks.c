/*
 * waiting-tasks: the op and its check under several presets on the real runtime (all
 * tasks waiting at once, every payload freed), the memory figures report gives, and
 * what setup and check refuse.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/workloads/wl_test.h"

static const char *const presets[] = { "ce", "tokio", "go", "kyo", "loom", "global" };

Test(waiting_tasks, op_checks_and_frees_every_payload_under_2_workers, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		struct wl_ctx ctx = wl_test_ctx("waiting-tasks", presets[i], 2);
		struct rt_worker_stats before, after;
		char err[512] = "";

		wl_test_param(&ctx, "tasks", "3000");
		wl_test_setup(&ctx);
		rt_sched_stats_total(ctx.sched, &before);
		for (int k = 0; k < 2; k++)
			cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s, op %d: %s",
				  presets[i], k + 1, err);
		rt_sched_stats_total(ctx.sched, &after);
		cr_expect_eq(after.alloc_bytes - before.alloc_bytes, 2 * 3000 * 1024,
			     "%s: a payload per task and op", presets[i]);
		cr_expect_eq(after.alloc_calls - before.alloc_calls, after.frees - before.frees,
			     "%s: every payload freed", presets[i]);
		wl_test_finish(&ctx);
	}
}

Test(waiting_tasks, an_odd_payload_checks_too, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("waiting-tasks", "ce", 2);
	char err[512] = "";

	wl_test_param(&ctx, "tasks", "777");
	wl_test_param(&ctx, "payload", "13");
	wl_test_setup(&ctx);
	cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
	wl_test_finish(&ctx);
}

static const struct wl_metric *find_metric(const struct wl_metric *m, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].name, name))
			return &m[i];
	cr_assert_fail("no metric %s", name);
	return NULL;
}

/* live_heap is glibc's mallinfo2(); under AddressSanitizer malloc is ASan's allocator,
 * which glibc's figures do not see: off there. */
#if defined(RT_SANITIZE_ADDRESS)
#define GLIBC_MALLOC 0
#else
#define GLIBC_MALLOC 1
#endif

Test(waiting_tasks, report_measures_memory_while_every_task_waits, .timeout = 120,
     .disabled = !GLIBC_MALLOC)
{
	struct wl_ctx ctx = wl_test_ctx("waiting-tasks", "ce", 2);
	struct wl_metric m[WL_MAX_METRICS];
	const double payload_mib = 20000 * 1024 / (1024.0 * 1024.0);
	size_t n;

	cr_assert_not_null(ctx.desc->report);
	wl_test_param(&ctx, "tasks", "20000");
	wl_test_setup(&ctx);
	n = ctx.desc->report(&ctx, m, WL_MAX_METRICS);
	cr_assert_geq(n, 6, "the figures");
	for (size_t i = 0; i < n; i++)
		cr_log_info("%s = %.2f %s", m[i].name, m[i].value, m[i].unit);
	/* the payloads, exactly, through rt_alloc; malloc holds them and more */
	cr_expect_float_eq(find_metric(m, n, "payload_heap")->value, payload_mib, 1e-9);
	cr_expect_geq(find_metric(m, n, "live_heap")->value, payload_mib);
	cr_expect_str_eq(find_metric(m, n, "live_heap")->unit, "MiB");
	/* dedicated stacks: each waiting task has touched at least a page of its own */
	cr_expect_geq(find_metric(m, n, "rss")->value, payload_mib + 20000 * 4.0 / 1024);
	cr_expect_geq(find_metric(m, n, "rss_per_task")->value, 4.0 + 1.0);
	cr_expect_lt(find_metric(m, n, "rss_per_task")->value, 64.0 + 8.0);
	cr_expect_gt(find_metric(m, n, "pss")->value, 0);
	cr_expect_leq(find_metric(m, n, "pss")->value, find_metric(m, n, "rss")->value + 1e-9);
	cr_expect_eq(find_metric(m, n, "compact_stacks")->value, 0);
	/* the measuring pass leaves the workload as it found it: ops still check */
	{
		char err[512] = "";

		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
	}
	cr_expect_eq(ctx.desc->report(&ctx, m, 2), 2, "no more than asked for");
	wl_test_finish(&ctx);
}

Test(waiting_tasks, check_names_a_wrong_sum_and_parameters_have_bounds, .timeout = 60)
{
	struct wl_ctx ctx = wl_test_ctx("waiting-tasks", "ce", 2);
	char err[512] = "";
	uint64_t r;

	cr_expect_eq(wl_int(&ctx, "tasks"), 100000, "the studies' size is the default");
	cr_expect_eq(wl_int(&ctx, "payload"), 1024);
	wl_test_param(&ctx, "tasks", "100");
	wl_test_setup(&ctx);
	r = wl_test_op(&ctx);
	cr_expect(ctx.desc->check(&ctx, r, err, sizeof(err)), "%s", err);
	cr_expect_not(ctx.desc->check(&ctx, r + 1, err, sizeof(err)));
	cr_expect(strstr(err, "waiting-tasks: the checksums sum to"), "%s", err);
	cr_expect_eq(wl_test_parse(ctx.desc, "tasks", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(ctx.desc, "payload", "0", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "payload=0") && strstr(err, "1 to 65536"), "%s", err);
	wl_test_finish(&ctx);
}
