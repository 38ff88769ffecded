/*
 * The probe set: --probes lists, and probes beside oncpu driven in order around a
 * fork's measured iterations, with their attach time, status and files reported; and the
 * chain that puts the profile before them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"

Test(probes_parse, names_all_and_none)
{
	unsigned mask = 99;
	char err[256], text[128];

	cr_assert_eq(hx_probes_parse("oncpu", &mask, err, sizeof(err)), 0);
	cr_assert_eq(mask, 1u << HX_PROBE_ONCPU);
	cr_assert_eq(hx_probes_parse("none", &mask, err, sizeof(err)), 0);
	cr_assert_eq(mask, 0);
	hx_probes_text(mask, text, sizeof(text));
	cr_assert_str_eq(text, "none");
	cr_assert_eq(hx_probes_parse("all", &mask, err, sizeof(err)), 0);
	cr_assert(mask & (1u << HX_PROBE_ONCPU));
	for (const struct hx_probe_ops *const *o = hx_probe_ops_all(); *o; o++)
		cr_assert(mask & (1u << (*o)->id), "all leaves out %s", (*o)->name);
	hx_probes_text(1u << HX_PROBE_ONCPU, text, sizeof(text));
	cr_assert_str_eq(text, "oncpu");
	/* the text parses back to the same mask */
	hx_probes_text(mask, text, sizeof(text));
	unsigned again = 0;
	cr_assert_eq(hx_probes_parse(text, &again, err, sizeof(err)), 0, "%s: %s", text, err);
	cr_assert_eq(again, mask);
}

Test(probes_parse, a_bad_list_is_named_with_the_choices)
{
	unsigned mask = 7;
	char err[256];

	cr_assert_eq(hx_probes_parse("oncpu,bogus", &mask, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "'bogus'") && strstr(err, "oncpu"), "%s", err);
	cr_assert_eq(mask, 7, "a refused list changes nothing");
	cr_assert_eq(hx_probes_parse("", &mask, err, sizeof(err)), -EINVAL);
	cr_assert_eq(hx_probes_parse("oncpu,,none", &mask, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "separated by commas"), "%s", err);
	for (int id = 0; id < HX_NPROBES; id++) {
		const struct hx_probe_ops *const *o = hx_probe_ops_all();

		while (*o && (int)(*o)->id != id)
			o++;
		/* oncpu and counters are not driven through the ops */
		if (id == HX_PROBE_ONCPU || id == HX_PROBE_COUNTERS || *o)
			continue;
		cr_assert_eq(hx_probes_parse(hx_probe_name(id), &mask, err, sizeof(err)), -EINVAL);
		cr_assert(strstr(err, "not built"), "%s", err);
	}
}

/* A probe that records the calls it gets, in one log shared by two of them. */
struct fake {
	char tag;
	int fail_open, fail_end;
	char *log;
};

static char fake_log[64];
static struct fake fakes[2] = { { 'a', 0, 0, fake_log }, { 'b', 0, 0, fake_log } };
static int next_fake;

static void note(struct fake *f, char what)
{
	size_t n = strlen(f->log);

	f->log[n] = what;
	f->log[n + 1] = f->tag;
	f->log[n + 2] = '\0';
}

static int fake_open(void **state, const struct hx_probe_config *cfg, char *why, size_t len)
{
	struct fake *f = &fakes[next_fake++];

	cr_assert_eq(cfg->forks, 3);
	if (f->fail_open) {
		snprintf(why, len, "fake %c: refused (fix it)", f->tag);
		return f->fail_open;
	}
	*state = f;
	return 0;
}

static int fake_begin(void *state, pid_t pid, int64_t off)
{
	(void)pid, (void)off;
	note(state, 'B');
	return 0;
}

static int fake_end(void *state, pid_t pid)
{
	struct fake *f = state;

	(void)pid;
	note(f, 'E');
	return f->fail_end;
}

static int fake_gone(void *state, pid_t pid)
{
	(void)pid;
	note(state, 'G');
	return 0;
}

static void fake_json(FILE *out, const void *data)
{
	fprintf(out, ", \"tag\": \"%c\"", ((const struct fake *)data)->tag);
}

static int fake_finish(void *state, const char *dir, struct an_probe_part *part)
{
	struct fake *f = state;

	cr_assert_str_eq(dir, "/nowhere");
	note(f, 'F');
	part->summary = "fine";
	part->files[0] = "fake.folded";
	part->json = fake_json;
	part->data = f;
	return 0;
}

static const struct hx_probe_ops fake_ops = {
	.id = HX_PROBE_OFFCPU, .name = "fake", .summary = "records its calls",
	.open = fake_open, .begin = fake_begin, .end = fake_end, .gone = fake_gone,
	.finish = fake_finish,
};

Test(probeset, probes_begin_in_order_end_in_reverse_and_report_their_state)
{
	struct hx_probe_config cfg = { .forks = 3 };
	struct hx_probeset s;
	struct hx_hooks h;
	char err[256];

	fake_log[0] = '\0';
	next_fake = 0;
	fakes[1].fail_end = -EIO;
	cr_assert_eq(hx_probeset_open(&s, NULL, 0, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(s.n, 0);
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), 0);
	cr_assert_str_eq(s.probes[0].status, "attached");
	cr_assert_gt(s.probes[0].attach_ns, 0, "the attach time is measured");
	hx_probeset_hooks(&s, &h);
	cr_assert_eq(h.measure_begin(h.ctx, 1, 0), 0);
	cr_assert_eq(h.measure_end(h.ctx, 1), 0, "a probe's failure is its own, not the fork's");
	cr_assert_str_eq(fake_log, "BaBbEbEa");
	cr_assert_eq(hx_probeset_finish(&s, "/nowhere"), -EIO);
	cr_assert_str_eq(fake_log, "BaBbEbEaFa", "a probe whose end failed is not finished");
	cr_assert(s.parts[0].attached && !strcmp(s.parts[0].summary, "fine"));
	cr_assert_str_eq(s.parts[0].files[0], "fake.folded");
	cr_assert(strstr(s.parts[1].status, "collection failed") && !s.parts[1].json,
		  "%s", s.parts[1].status);
	hx_probeset_reset(&s);
	cr_assert_eq(s.probes[1].error, 0, "a reset forgets the failure");
	hx_probeset_close(&s);
}

/* Told the fork is gone after their ends, in reverse as at the end, so that a probe takes
 * its uprobes out only once the fork was reaped (hx_hooks.fork_gone); under --overhead
 * only for the forks that had the probes. */
Test(probeset, probes_hear_the_fork_is_gone_after_their_end_in_reverse)
{
	struct hx_probe_config cfg = { .forks = 3 };
	struct hx_alternate alt;
	struct hx_hooks h, outer;
	struct hx_probeset s;
	char err[256];

	fake_log[0] = '\0';
	next_fake = 0;
	cr_assert_eq(hx_probeset_open(&s, NULL, 0, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), 0);
	hx_probeset_hooks(&s, &h);
	cr_assert_not_null(h.fork_gone);
	cr_assert_eq(h.measure_begin(h.ctx, 1, 0), 0);
	cr_assert_eq(h.measure_end(h.ctx, 1), 0);
	cr_assert_eq(h.fork_gone(h.ctx, 1), 0);
	cr_assert_str_eq(fake_log, "BaBbEbEaGbGa");
	fake_log[0] = '\0';
	hx_alternate_hooks(&alt, &h, &outer);
	for (int fork = 0; fork < 2; fork++) {
		cr_assert_eq(outer.measure_begin(outer.ctx, 100 + fork, 0), 0);
		cr_assert_eq(outer.measure_end(outer.ctx, 100 + fork), 0);
		cr_assert_eq(outer.fork_gone(outer.ctx, 100 + fork), 0);
	}
	cr_assert_str_eq(fake_log, "BaBbEbEaGbGa", "fork 2 alone is probed");
	hx_probeset_close(&s);
}

Test(probeset, a_probe_that_cannot_attach_says_why_and_bad_input_stops_the_run)
{
	struct hx_probe_config cfg = { .forks = 3 };
	struct hx_probeset s;
	char err[256] = "";

	next_fake = 0;
	fakes[0].fail_open = -EPERM;
	fakes[1].fail_open = -EINVAL;
	cr_assert_eq(hx_probeset_open(&s, NULL, 0, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), 0);
	cr_assert_str_eq(s.probes[0].status, "not attached: fake a: refused (fix it)");
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "fake b: refused (fix it)");
	cr_assert_eq(s.n, 1, "a probe refused as bad input is not kept");
	cr_assert_eq(hx_probeset_finish(&s, "/nowhere"), 0);
	cr_assert(!s.parts[0].attached);
	hx_probeset_close(&s);
	fakes[0].fail_open = fakes[1].fail_open = 0;
}

Test(overhead, every_other_fork_is_probed_and_the_split_keeps_the_probed_ones)
{
	struct hx_probe_config cfg = { .forks = 3 };
	double samples[] = { 1, 2, 3, 10, 11, 12, 4, 5, 6, 13, 14, 15, 7 };
	struct rt_worker_stats iter[13];
	double counts[13 * PROBE_COUNTERS_MAX];
	struct hx_result res = { .samples = samples, .nsamples = 13, .iter_rt = iter,
				 .iter_counters = counts };
	struct hx_alternate alt;
	struct hx_probeset s;
	struct an_summary off;
	struct hx_hooks inner, h;
	char err[256];

	for (int i = 0; i < 13; i++) {
		iter[i].tasks_run = (uint64_t)samples[i];
		for (int e = 0; e < PROBE_COUNTERS_MAX; e++)
			counts[i * PROBE_COUNTERS_MAX + e] = samples[i] * 100 + e;
	}
	fake_log[0] = '\0';
	next_fake = 0;
	cr_assert_eq(hx_probeset_open(&s, NULL, 0, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &fake_ops, &cfg, err, sizeof(err)), 0);
	hx_probeset_hooks(&s, &inner);
	hx_alternate_hooks(&alt, &inner, &h);
	for (int fork = 0; fork < 4; fork++) {
		/* what the controller asks before it starts the fork, the same answer */
		cr_assert_not_null(h.probed);
		cr_assert_eq(h.probed(h.ctx, fork + 1), fork % 2 == 1, "fork %d", fork + 1);
		cr_assert_eq(h.measure_begin(h.ctx, 100 + fork, 0), 0);
		cr_assert_eq(h.measure_end(h.ctx, 100 + fork), 0);
	}
	cr_assert_str_eq(fake_log, "BaEaBaEa", "forks 1 and 3 alone are probed");
	hx_probeset_close(&s);

	/* three iterations a fork; the fifth fork (unprobed) was interrupted after one */
	cr_assert_eq(hx_result_split_alternate(&res, 3, &off), 0);
	cr_assert_eq(res.nsamples, 6);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(samples[i], 10 + i, "%d: %g", i, samples[i]);
		cr_assert_eq(iter[i].tasks_run, (uint64_t)samples[i]);
		for (int e = 0; e < PROBE_COUNTERS_MAX; e++)
			cr_assert_eq(counts[i * PROBE_COUNTERS_MAX + e], samples[i] * 100 + e,
				     "%d, event %d", i, e);
	}
	cr_assert_eq(res.summary.n, 6);
	cr_assert_float_eq(res.summary.mean, 12.5, 1e-12);
	cr_assert_eq(off.n, 7);
	cr_assert_float_eq(off.mean, 4, 1e-12);

	struct hx_result one = { .samples = samples, .nsamples = 4 };
	cr_assert_eq(hx_result_split_alternate(&one, 3, &off), -EINVAL,
		     "one probed iteration is too few");
}

static uint64_t result_ops;

static void fake_result(void *state, const struct hx_result *res)
{
	(void)state;
	result_ops += res->ops;
}

Test(probeset, the_result_reaches_the_attached_probes_that_take_it)
{
	struct hx_probe_ops with_result = fake_ops;
	struct hx_probe_config cfg = { .forks = 3 };
	struct hx_result res = { .ops = 42 };
	struct hx_probeset s;
	char err[256] = "";

	with_result.observe = fake_result;
	next_fake = 0;
	fakes[0].fail_open = -EPERM; /* not attached: not given the result */
	result_ops = 0;
	cr_assert_eq(hx_probeset_open(&s, NULL, 0, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &with_result, &cfg, err, sizeof(err)), 0);
	cr_assert_eq(hx_probeset_add(&s, &with_result, &cfg, err, sizeof(err)), 0);
	hx_probeset_observe(&s, &res);
	cr_assert_eq(result_ops, 42, "once, to the one attached probe that takes it");
	hx_probeset_close(&s);
	fakes[0].fail_open = 0;
}

/* ---- hooks around hooks -------------------------------------------------------------------- */

struct chained {
	char name;
	int fail_begin, fail_end, fail_gone;
	char *log;
};

static void log_call(struct chained *c, char what)
{
	size_t n = strlen(c->log);

	c->log[n] = what;
	c->log[n + 1] = c->name;
	c->log[n + 2] = '\0';
}

static int chained_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	(void)pid;
	(void)tls_off;
	log_call(ctx, 'B');
	return ((struct chained *)ctx)->fail_begin;
}

static int chained_end(void *ctx, pid_t pid)
{
	(void)pid;
	log_call(ctx, 'E');
	return ((struct chained *)ctx)->fail_end;
}

static int chained_gone(void *ctx, pid_t pid)
{
	(void)pid;
	log_call(ctx, 'G');
	return ((struct chained *)ctx)->fail_gone;
}

static struct hx_hooks chained_hooks(struct chained *c)
{
	return (struct hx_hooks){ .ctx = c, .measure_begin = chained_begin,
				  .measure_end = chained_end, .fork_gone = chained_gone };
}

/* The pipeline's order around a fork: the profile (first) begins first and ends last;
 * a failure of its begin stops there; its failure wins over the probes'. */
Test(probeset, a_chain_begins_first_first_and_ends_it_last)
{
	char log[64] = "";
	struct chained a = { .name = 'p', .log = log }, b = { .name = 's', .log = log };
	struct hx_hooks ha = chained_hooks(&a), hb = chained_hooks(&b), h;
	struct hx_chain chain;

	hx_hooks_chain(&chain, &ha, &hb, &h);
	cr_assert_null(h.probed, "every fork is probed");
	cr_assert_eq(h.measure_begin(h.ctx, 1, 0), 0);
	cr_assert_eq(h.measure_end(h.ctx, 1), 0);
	cr_assert_eq(h.fork_gone(h.ctx, 1), 0);
	cr_expect_str_eq(log, "BpBsEsEpGsGp");

	log[0] = '\0';
	a.fail_begin = -EPERM;
	cr_expect_eq(h.measure_begin(h.ctx, 2, 0), -EPERM);
	cr_expect_str_eq(log, "Bp", "the second began after the first failed");

	log[0] = '\0';
	a.fail_end = -EIO;
	b.fail_end = -ENOSPC;
	cr_expect_eq(h.measure_end(h.ctx, 2), -EIO, "the first's failure first");
	a.fail_end = 0;
	cr_expect_eq(h.measure_end(h.ctx, 2), -ENOSPC, "then the second's");
	b.fail_gone = -EBADF;
	cr_expect_eq(h.fork_gone(h.ctx, 2), -EBADF);
	cr_expect_str_eq(log, "EsEpEsEpGsGp");

	/* a side without a hook is passed over */
	hb.fork_gone = NULL;
	hb.measure_begin = NULL;
	a.fail_begin = 0;
	hx_hooks_chain(&chain, &ha, &hb, &h);
	log[0] = '\0';
	cr_expect_eq(h.measure_begin(h.ctx, 3, 0), 0);
	cr_expect_eq(h.fork_gone(h.ctx, 3), 0);
	cr_expect_str_eq(log, "BpGp");
}
