/*
 * sequentially: each impl, in the form the study ran it and in both forms, serializes per
 * key and loses nothing (the study's forms under every preset, both forms under ce, kyo
 * and loom); the actors and every sequence keep each key's issue order; a sequence runs
 * one body at a time, the buckets' in the op's own task with no task spawned; the actors
 * meet a new key, and make an actor, at nearly every operation, counted in bytes per op;
 * an injected fault (where order is promised, a key's first operation issued after its
 * second; else a bucket let go while its body is inside) fails the check, naming it, and
 * the next op is clean again; and the check's other refusals.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "tests/workloads/wl_test.h"
#include "workloads/internal.h"

static const char *const impls[] = { "buckets", "actors", "converted" };
static const char *const forms[] = { "sequence", "concurrent" };

static struct wl_ctx seq_ctx(const char *preset, const char *impl, const char *form,
			     const char *n, const char *keys)
{
	struct wl_ctx ctx = wl_test_ctx("sequentially", preset, 2);

	wl_test_param(&ctx, "impl", impl);
	wl_test_param(&ctx, "form", form);
	wl_test_param(&ctx, "n", n);
	wl_test_param(&ctx, "keys", keys);
	wl_test_setup(&ctx);
	return ctx;
}

static double metric(struct wl_ctx *ctx, const char *name)
{
	struct wl_metric m[WL_MAX_METRICS];
	size_t n = ctx->desc->report(ctx, m, WL_MAX_METRICS);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].name, name))
			return m[i].value;
	cr_assert_fail("no metric %s", name);
	return 0;
}

Test(sequentially, defaults_are_the_studys)
{
	struct wl_ctx ctx = wl_test_ctx("sequentially", "ce", 2);

	cr_expect_eq(wl_int(&ctx, "n"), 1000);
	cr_expect_eq(wl_choice(&ctx, "impl"), 0, "buckets");
	cr_expect_eq(wl_choice(&ctx, "form"), 0, "study");
	cr_expect_eq(wl_int(&ctx, "buckets"), 0, "0: 5 x workers");
	cr_expect_eq(wl_int(&ctx, "keys"), 4294967296L, "random keys: nearly all new");
	wl_test_finish(&ctx);
}

Test(sequentially, every_impl_checks_under_every_preset, .timeout = 240)
{
	for (const char *const *p = rt_preset_names(); *p; p++)
		for (size_t i = 0; i < 3; i++) {
			/* few keys: many operations per key, so serialization is exercised */
			struct wl_ctx ctx = seq_ctx(*p, impls[i], "study", "300", "7");
			char err[512] = "";

			for (int op = 0; op < 3; op++)
				cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
					  "%s %s op %d: %s", *p, impls[i], op, err);
			wl_test_finish(&ctx);
		}
}

Test(sequentially, every_impl_checks_in_both_forms_under_ce_kyo_and_loom, .timeout = 240)
{
	static const char *const presets[] = { "ce", "kyo", "loom" };

	for (size_t p = 0; p < 3; p++)
		for (size_t i = 0; i < 3; i++)
			for (size_t f = 0; f < 2; f++) {
				struct wl_ctx ctx = seq_ctx(presets[p], impls[i], forms[f], "300",
							    "7");
				char err[512] = "";

				for (int op = 0; op < 3; op++)
					cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
						  "%s %s form=%s op %d: %s", presets[p], impls[i],
						  forms[f], op, err);
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

/* The buckets' sequence is the study's operations.sequence.unsafeRunSync(): one fiber, one
 * body at a time. Its check refuses a body outside the op's task; here the bodies' own
 * count says one at a time, and the runtime's spawn count says no task was made for them.
 * The concurrent form spawns a task per operation. */
Test(sequentially, the_buckets_sequence_runs_one_body_at_a_time_in_the_ops_task, .timeout = 60)
{
	static const char *const presets[] = { "ce", "kyo", "loom" };

	for (size_t p = 0; p < 3; p++)
		for (size_t f = 0; f < 2; f++) {
			struct wl_ctx ctx = seq_ctx(presets[p], "buckets", forms[f], "1000", "7");
			struct rt_worker_stats before, after;
			char err[512] = "";

			rt_sched_stats_total(ctx.sched, &before);
			for (int op = 0; op < 3; op++)
				cr_assert(wl_test_op_check(&ctx, err, sizeof(err)),
					  "%s form=%s: %s", presets[p], forms[f], err);
			rt_sched_stats_total(ctx.sched, &after);
			if (f == 0) {
				cr_expect_eq(metric(&ctx, "inside_max"), 1, "%s", presets[p]);
				/* the harness's op task, submitted from outside, is all */
				cr_expect_leq(after.spawned - before.spawned, 3, "%s: %llu spawned",
					      presets[p],
					      (unsigned long long)(after.spawned - before.spawned));
			} else {
				cr_expect_geq(after.spawned - before.spawned, 3000, "%s",
					      presets[p]);
			}
			wl_test_finish(&ctx);
		}
}

Test(sequentially, every_sequence_runs_one_body_at_a_time, .timeout = 60)
{
	for (size_t i = 0; i < 3; i++) {
		struct wl_ctx ctx = seq_ctx("ce", impls[i], "sequence", "500", "7");
		char err[512] = "";

		for (int op = 0; op < 2; op++)
			cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", impls[i],
				  err);
		cr_expect_eq(metric(&ctx, "inside_max"), 1, "%s", impls[i]);
		wl_test_finish(&ctx);
	}
}

/* With the study's random keys nearly every operation meets a key new to its op and makes
 * an actor for it, and that actor is counted in bytes per op: against keys=1 (one actor an
 * op), at least the other 999 actors' worth more. */
Test(sequentially, the_actors_make_an_actor_at_nearly_every_operation, .timeout = 60)
{
	const char *keys[] = { "4294967296", "1" };
	uint64_t bytes[2];

	for (size_t k = 0; k < 2; k++) {
		struct wl_ctx ctx = wl_test_ctx("sequentially", "ce", 2);
		struct rt_worker_stats before, after;
		char err[512] = "";

		wl_test_param(&ctx, "impl", "actors");
		wl_test_param(&ctx, "keys", keys[k]);
		wl_test_setup(&ctx);
		rt_sched_stats_total(ctx.sched, &before);
		for (int op = 0; op < 4; op++)
			cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "keys=%s: %s", keys[k],
				  err);
		rt_sched_stats_total(ctx.sched, &after);
		bytes[k] = (after.alloc_bytes - before.alloc_bytes) / 4;
		if (k == 0)
			cr_expect_geq(metric(&ctx, "actors_per_op"), 995, "%g",
				      metric(&ctx, "actors_per_op"));
		else
			cr_expect_eq(metric(&ctx, "actors_per_op"), 1);
		wl_test_finish(&ctx);
	}
	cr_expect_geq(bytes[0], bytes[1] + 999 * 2 * sizeof(void *), "%llu against %llu B/op",
		      (unsigned long long)bytes[0], (unsigned long long)bytes[1]);
}

/* Where the impl and form promise each key's order (actors; every sequence), the fault
 * issues a key's first operation after its second; where they promise only serialization
 * (buckets and converted, concurrent), a bucket lets go while its body is inside. */
static const char *fault_of(size_t impl, size_t form)
{
	return impl == 1 || form == 0 ? "order not preserved" : "not serialized";
}

Test(sequentially, an_injected_fault_fails_the_check_once, .timeout = 120)
{
	for (size_t i = 0; i < 3; i++)
		for (size_t f = 0; f < 2; f++) {
			struct wl_ctx ctx = seq_ctx("ce", impls[i], forms[f], "200", "5");
			char err[512] = "";

			cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s %s: %s", impls[i],
				  forms[f], err);
			wl__sequentially_inject(&ctx);
			cr_expect_not(wl_test_op_check(&ctx, err, sizeof(err)),
				      "%s %s: the fault went unseen", impls[i], forms[f]);
			cr_expect(strstr(err, fault_of(i, f)), "%s %s: %s", impls[i], forms[f],
				  err);
			cr_expect_null(strchr(err, '\n'), "one line");
			cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s %s, after: %s",
				  impls[i], forms[f], err);
			wl_test_finish(&ctx);
		}
}

Test(sequentially, the_fault_is_caught_on_one_worker_too, .timeout = 60)
{
	for (size_t i = 0; i < 3; i++)
		for (size_t f = 0; f < 2; f++) {
			struct wl_ctx ctx = wl_test_ctx("sequentially", "kyo", 1);
			char err[512] = "";

			wl_test_param(&ctx, "impl", impls[i]);
			wl_test_param(&ctx, "form", forms[f]);
			wl_test_param(&ctx, "keys", "3");
			wl_test_param(&ctx, "n", "50");
			wl_test_setup(&ctx);
			wl__sequentially_inject(&ctx);
			cr_expect_not(wl_test_op_check(&ctx, err, sizeof(err)), "%s %s", impls[i],
				      forms[f]);
			cr_expect(strstr(err, fault_of(i, f)), "%s %s: %s", impls[i], forms[f],
				  err);
			cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s %s, after: %s",
				  impls[i], forms[f], err);
			wl_test_finish(&ctx);
		}
}

Test(sequentially, check_refuses_a_wrong_count)
{
	struct wl_ctx ctx = seq_ctx("ce", "buckets", "study", "100", "10");
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
	cr_expect_eq(wl_test_parse(d, "form", "parallel", err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "sequentially: -P form=parallel: expected one of "
			      "study,sequence,concurrent");
	cr_expect_eq(wl_test_parse(d, "n", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "keys", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "buckets", "-1", err, sizeof(err)), -EINVAL);
}
