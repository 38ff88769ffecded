/*
 * The on-CPU probe's part of report.md and result.json: how the stacks were walked and
 * what that cost, how many reached their thread's root and where the others broke
 * (with the object and the reason: a module without unwind tables is named, not
 * hidden), and the phase word against the stacks, category by category.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

static char *render(int (*fn)(const struct an_run *, FILE *), const struct an_run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	cr_assert_not_null(out);
	cr_assert_eq(fn(r, out), 0);
	cr_assert_eq(fclose(out), 0);
	return buf;
}

/* A run with nothing but the probe's figures. */
static struct an_run run_with(const struct an_probe_summary *p)
{
	static const double samples[] = { 10, 12, 11 };

	return (struct an_run){
		.id = "id", .workload = "spawn-join", .op = "op", .preset = "ce", .unit = "ops/s",
		.params = "n=1", .command = "schedlab run spawn-join", .started = "now",
		.host = "host", .forks = 1, .warmup = 1, .iterations = 3, .time_s = 0.2,
		.workers = 2, .samples = samples, .nsamples = 3,
		.score = { .n = 3, .mean = 11, .ci_half = 1 },
		.probes = p, .nprobes = 1,
	};
}

static struct an_stack_quality quality(void)
{
	struct an_stack_quality q = {
		.with_user = 1000, .rooted = 990, .runtime = 900, .runtime_rooted = 893,
		.fp = 700, .dwarf = 300, .fallback = 300, .garbage = 3, .nbreaks = 2,
		.breaks_other = 1,
	};

	snprintf(q.breaks[0].object, sizeof(q.breaks[0].object), "libnocfi.so");
	snprintf(q.breaks[0].why, sizeof(q.breaks[0].why), "dwarf: no-cfi");
	q.breaks[0].count = 7;
	snprintf(q.breaks[1].object, sizeof(q.breaks[1].object), "[unknown]");
	snprintf(q.breaks[1].why, sizeof(q.breaks[1].why), "frame-pointer walk");
	q.breaks[1].count = 2;
	return q;
}

static struct an_agreement agreement(void)
{
	struct an_agreement a = { .samples = 2000, .same = 1990 };

	a.by_phase[AN_CAT_WORK] = 1000;
	a.by_stack[AN_CAT_WORK] = 1010;
	a.by_phase[AN_CAT_SCHED] = 600;
	a.by_stack[AN_CAT_SCHED] = 560;
	a.by_phase[AN_CAT_SUBMIT] = 400;
	a.by_stack[AN_CAT_SUBMIT] = 430;
	return a;
}

static struct an_probe_summary probe(const struct an_stack_quality *q,
				     const struct an_agreement *a)
{
	return (struct an_probe_summary){
		.name = "oncpu", .attached = true, .status = "attached", .event = "cpu-clock",
		.event_note = "", .freq = 999, .samples = 2000, .callgraph = "auto",
		.stack_copy = 16384, .ring_bytes = 1 << 24, .stack_bytes = 300 * 8192,
		.stack_entries = 16384, .count_entries = 40960,
		.stacks_held_max = 845, .counts_held_max = 1200,
		.unwind_ns = 300 * 9000, .prog_runs = 4000, .prog_ns = 4000 * 5000,
		.quality = q, .agreement = a, .nrules = 45,
		.phase_samples = { [1] = 1000, [2] = 600, [3] = 400 },
	};
}

Test(report, markdown_names_where_stacks_broke_and_why)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *md = render(an_report_markdown, &r);

	cr_expect_not_null(strstr(md, "99.0% of the user stacks reach their thread's root"), "%s",
			   md);
	cr_expect_not_null(strstr(md, "99.2% on the runtime's threads"), "%s", md);
	cr_expect_not_null(strstr(md, "10 broke: libnocfi.so (dwarf: no-cfi) 7, [unknown] "
				      "(frame-pointer walk) 2, elsewhere 1"),
			   "%s", md);
	cr_expect_not_null(strstr(md, "3 with a frame in no code"), "%s", md);
	cr_expect_not_null(strstr(md, "300 samples unwound from DWARF, 16.0 KiB"), "%s", md);
	cr_expect_not_null(strstr(md, "(8.0 KiB on average), 9.0 µs unwinding each"), "%s", md);
	cr_expect_not_null(strstr(md, "for 5.0 µs each: 10.0 µs in the kernel per sample kept"),
			   "%s", md);
	free(md);
}

Test(report, markdown_sets_the_phase_word_against_the_stacks)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *md = render(an_report_markdown, &r);

	/* scheduling: 30.0% against 28.0%, the largest gap */
	cr_expect_not_null(strstr(md, "every category within 2.0 points (the largest gap: "
				      "scheduling)"),
			   "%s", md);
	cr_expect_not_null(strstr(md, "99.5% of the samples in the same category"), "%s", md);
	cr_expect_not_null(strstr(md, "| scheduling | 30.0% | 28.0% | 2.0 |"), "%s", md);
	cr_expect_not_null(strstr(md, "| submission | 20.0% | 21.5% | 1.5 |"), "%s", md);
	cr_expect_null(strstr(md, "few samples"), "2,000 samples are not few: %s", md);
	free(md);

	a.samples = 200;
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "(few samples: one is 0.5 points)"), "%s", md);
	free(md);
}

Test(report, json_carries_the_stacks_and_the_agreement)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *js = render(an_report_json, &r);

	cr_expect_not_null(strstr(js, "\"call_graph\": \"auto\""), "%s", js);
	cr_expect_not_null(strstr(js, "\"broken\": [{\"object\": \"libnocfi.so\", \"walk\": "
				      "\"dwarf: no-cfi\", \"samples\": 7}"),
			   "%s", js);
	cr_expect_not_null(strstr(js, "\"broken_elsewhere\": 1"), "%s", js);
	cr_expect_not_null(strstr(js, "\"largest_gap_category\": \"scheduling\""), "%s", js);
	cr_expect_not_null(strstr(js, "\"by_stack\": {\"other\": 0, \"work\": 1010"), "%s", js);
	cr_expect_not_null(strstr(js, "\"program\": {\"runs\": 4000, \"ns\": 20000000}"), "%s", js);
	cr_expect_not_null(strstr(js, "\"maps\": {\"stack_entries\": 16384, \"count_entries\": "
				      "40960, \"stacks_held_max\": 845, \"counts_held_max\": 1200}"),
			   "%s", js);
	free(js);
}

/* A full map is a loss the user can act on only knowing its size: the line says it. */
Test(report, markdown_gives_the_map_sizes_where_a_map_filled)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *md = render(an_report_markdown, &r);

	cr_expect_null(strstr(md, "the maps hold"), "nothing filled: %s", md);
	free(md);
	p.counts_full = 3;
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "3 with the counts map full"), "%s", md);
	cr_expect_not_null(strstr(md, "; the maps hold 16384 distinct stacks and 40960 counts a "
				      "fork"), "%s", md);
	free(md);
}

Test(report, frame_pointer_mode_says_so_and_shows_no_dwarf_costs)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *md;

	q.dwarf = q.fallback = 0;
	p.callgraph = "fp";
	p.stack_bytes = p.unwind_ns = 0;
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "- Stacks: frame pointers (--call-graph fp)."), "%s", md);
	cr_expect_null(strstr(md, "unwinding each"), "%s", md);
	cr_expect_null(strstr(md, "not available"), "%s", md);
	free(md);
}

/* A fork whose DWARF samples could not be unwound at all: the run goes on, and both files
 * say why. */
Test(report, a_missing_unwinder_is_named_with_its_reason)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *md, *js;

	p.unwind_error = "libdw could not attach to pid 42: No such process";
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "DWARF unwinding was not available for some samples (shown "
				      "as [lost: no DWARF unwinder]): libdw could not attach to "
				      "pid 42: No such process."),
			   "%s", md);
	free(md);
	js = render(an_report_json, &r);
	cr_expect_not_null(strstr(js, "\"unwinder_error\": \"libdw could not attach to pid 42: "
				      "No such process\""),
			   "%s", js);
	free(js);
	p.unwind_error = NULL;
	js = render(an_report_json, &r);
	cr_expect_not_null(strstr(js, "\"unwinder_error\": null"), "%s", js);
	free(js);
}

Test(report, sampling_shortfall_beyond_the_tolerance_is_named)
{
	struct an_probe_summary p = { .freq = 999, .expected = 100000, .taken = 58000,
				      .cpu_ns = 100100100100ull, .cost_pct = 82 };
	char text[400];

	cr_expect_float_eq(an_sampling_short_pct(100000, 58000), 42.0, 1e-9);
	cr_expect_float_eq(an_sampling_short_pct(0, 5), 0.0, 1e-9);
	cr_expect_float_eq(an_sampling_short_pct(100, 120), 0.0, 1e-9);
	cr_expect_eq(an_sampling_shortfall(&p, text, sizeof(text)), AN_SHORT_THROTTLED);
	cr_expect_str_eq(text, "expected 100,000 samples (the forks' 100.10 s of CPU time × 999 "
			       "Hz), taken 58,000, short by 42.0%: the kernel throttled sampling "
			       "or could not deliver it at this frequency (sampling took 82% of a "
			       "CPU)");
	/* the same shortfall where sampling is cheap: the timers lapsed in idle */
	p.cost_pct = 3;
	cr_expect_eq(an_sampling_shortfall(&p, text, sizeof(text)), AN_SHORT_IDLE);
	cr_expect_str_eq(text, "expected 100,000 samples (the forks' 100.10 s of CPU time × 999 "
			       "Hz), taken 58,000, short by 42.0%, not throttled (sampling took 3% "
			       "of a CPU): a CPU's timer lapses while it idles, so a burst that "
			       "begins after idle and ends within a period is not sampled");
	p.taken = 80000;
	cr_expect_eq(an_sampling_shortfall(&p, text, sizeof(text)), AN_SHORT_NONE, "%s", text);
	cr_expect_str_eq(text, "expected 100,000 samples (the forks' 100.10 s of CPU time × 999 "
			       "Hz), taken 80,000");
	p.expected = 0;
	cr_expect_eq(an_sampling_shortfall(&p, text, sizeof(text)), AN_SHORT_NONE);
	cr_expect_str_eq(text, "", "nothing owed (cycles): nothing said");
}

/* Few samples vary by chance: 33 owed and 21 taken (36% short) is within four standard
 * deviations, and no shortfall is named for it. */
Test(report, a_few_samples_short_by_chance_are_no_shortfall)
{
	struct an_probe_summary p = { .freq = 999, .expected = 33, .taken = 21,
				      .cpu_ns = 33388199, .cost_pct = 82 };
	char text[400];

	cr_expect_float_eq(an_sampling_tolerance_pct(33), 400.0 / sqrt(33.0), 1e-9);
	cr_expect_float_eq(an_sampling_tolerance_pct(100000), AN_SAMPLING_TOLERANCE_PCT, 1e-9);
	cr_expect_eq(an_sampling_shortfall(&p, text, sizeof(text)), AN_SHORT_NONE, "%s", text);
	cr_expect_str_eq(text, "expected 33 samples (the forks' 33 ms of CPU time × 999 Hz), "
			       "taken 21");
	p.taken = 2;
	cr_expect_eq(an_sampling_shortfall(&p, text, sizeof(text)), AN_SHORT_THROTTLED, "%s",
		     text);
}

Test(report, a_throttled_run_never_says_nothing_lost)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r;
	char *md, *json;

	p.expected = 100000;
	p.taken = 58000;
	p.cpu_ns = 100100100100ull;
	p.window_ns = 60000000000ull;
	p.cost_pct = 82;
	r = run_with(&p);
	md = render(an_report_markdown, &r);
	json = render(an_report_json, &r);
	cr_expect_not_null(strstr(md, "(the forks' 100.10 s of CPU time × 999 Hz), taken 58,000, "
				      "short by 42.0%: the kernel throttled sampling"),
			   "%s", md);
	cr_expect_null(strstr(md, "nothing lost"), "%s", md);
	cr_expect_not_null(strstr(json, "\"sampling\": {\"expected\": 100000, \"taken\": 58000, "
					"\"cpu_ns\": 100100100100, \"window_ns\": 60000000000, "
					"\"cost_pct\": 82.0, \"short_pct\": 42.00, "
					"\"tolerance_pct\": 25.0, \"throttled\": true, "
					"\"shortfall\": \"throttled\"}"),
			   "%s", json);
	free(md);
	free(json);
	p.taken = 99000;
	r = run_with(&p);
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "expected 100,000 samples (the forks' 100.10 s of CPU time "
				      "× 999 Hz), taken 99,000; nothing lost"),
			   "%s", md);
	cr_expect_null(strstr(md, "throttled"), "%s", md);
	free(md);
}

/* A category whose share by the stacks is off its share by the phase word by more than
 * AN_AGREEMENT_MAX_GAP points is named, in report.md and result.json; at the threshold or
 * under it nothing is. */
static void render_gap(struct an_agreement *a, uint64_t sched_by_stack, char **md, char **js)
{
	struct an_stack_quality q = quality();
	struct an_probe_summary p = probe(&q, a);
	struct an_run r = run_with(&p);

	/* what the stacks do not give scheduling goes half to work, half to submission, so
	 * that scheduling has the largest gap; the total stays 2,000 */
	a->by_phase[AN_CAT_WORK] = 1000;
	a->by_phase[AN_CAT_SCHED] = 600;
	a->by_phase[AN_CAT_SUBMIT] = 400;
	a->by_stack[AN_CAT_SCHED] = sched_by_stack;
	a->by_stack[AN_CAT_WORK] = 1000 + (600 - sched_by_stack) / 2;
	a->by_stack[AN_CAT_SUBMIT] = 400 + (600 - sched_by_stack) / 2;
	*md = render(an_report_markdown, &r);
	*js = render(an_report_json, &r);
}

Test(report, a_disagreement_above_five_points_is_named)
{
	struct an_agreement a = agreement();
	char *md, *js;

	/* 600 against 480 of 2,000: 6.0 points */
	render_gap(&a, 480, &md, &js);
	cr_expect_not_null(strstr(md, "**Disagreement: scheduling is 30.0% by the phase word but "
				      "24.0% by the stacks, 6.0 points apart (more than 5)**"),
			   "%s", md);
	cr_expect_not_null(strstr(js, "\"disagreement\": {\"category\": \"scheduling\", "
				      "\"points\": 6}, \"threshold_points\": 5.0"),
			   "%s", js);
	free(md);
	free(js);

	/* 4.0 points, and exactly 5.0: within the threshold */
	render_gap(&a, 520, &md, &js);
	cr_expect_null(strstr(md, "Disagreement"), "%s", md);
	cr_expect_not_null(strstr(md, "every category within 4.0 points (the largest gap: "
				      "scheduling)"),
			   "%s", md);
	cr_expect_not_null(strstr(js, "\"disagreement\": null"), "%s", js);
	free(md);
	free(js);
	render_gap(&a, 500, &md, &js);
	cr_expect_null(strstr(md, "Disagreement"), "%s", md);
	cr_expect_not_null(strstr(js, "\"disagreement\": null"), "%s", js);
	free(md);
	free(js);
}

/* Every sample in the category table, by the method that gave it its category: the
 * phase word on the runtime's threads, the rules (kernel included) on the others. */
Test(report, the_category_table_counts_every_thread_and_names_the_method)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_attribution at = { .by_phase = 1500, .by_rules = 500, .no_rule = 120 };
	struct an_probe_summary p = probe(&q, &a);
	struct an_run r = run_with(&p);
	char *md, *js;

	at.by_category[AN_CAT_WORK] = 1000;
	at.by_category[AN_CAT_SCHED] = 500;
	at.by_category[AN_CAT_KERNEL] = 250;
	at.by_category[AN_CAT_ALLOC] = 130;
	at.by_category[AN_CAT_OTHER] = 120;
	p.attribution = &at;
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "| other | 120 | 6.0% |\n  | work | 1,000 | 50.0% |\n"
				      "  | scheduling | 500 | 25.0% |\n"
				      "  | allocation | 130 | 6.5% |\n"
				      "  | kernel | 250 | 12.5% |\n"),
			   "%s", md);
	cr_expect_not_null(strstr(md, "Attributed by the phase word: 1,500 samples (the "
				      "runtime's threads); by the stack rules: 500 samples "
				      "(threads without a phase word, such as the harness "
				      "thread), 120 of them named by no rule and counted as "
				      "other."),
			   "%s", md);
	js = render(an_report_json, &r);
	cr_expect_not_null(strstr(js, "\"categories\": {\"other\": 120, \"work\": 1000, "
				      "\"scheduling\": 500, \"submission\": 0, \"parking\": 0, "
				      "\"blocking\": 0, \"allocation\": 130, \"stack-capture\": 0, "
				      "\"kernel\": 250}, \"attribution\": {\"phase_word\": 1500, "
				      "\"stack_rules\": 500, \"no_rule\": 120}"),
			   "%s", js);
	free(md);
	free(js);

	/* a summary without the attribution keeps the phases' table */
	p.attribution = NULL;
	js = render(an_report_json, &r);
	cr_expect_not_null(strstr(js, "\"categories\": {\"other\": 0, \"work\": 1000, "
				      "\"scheduling\": 600"),
			   "%s", js);
	cr_expect_not_null(strstr(js, "\"attribution\": null"), "%s", js);
	free(js);
}

static void part_json(FILE *out, const void *data)
{
	fprintf(out, ", \"intervals\": %d", *(const int *)data);
}

static void part_md(FILE *out, const void *data)
{
	fprintf(out, "### Off-CPU\n\n%d intervals\n", *(const int *)data);
}

Test(report, other_probes_follow_oncpu_with_status_attach_time_and_their_own_figures)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	static const int intervals = 42;
	struct an_probe_part parts[2] = {
		{ .name = "offcpu", .attached = true, .status = "attached", .attach_ns = 12300000,
		  .summary = "1 s off-CPU", .files = { "offcpu.folded", "offcpu.svg" },
		  .json = part_json, .md = part_md, .data = &intervals },
		{ .name = "sched", .status = "not attached: not root (run as root)",
		  .json = part_json, .md = part_md, .data = &intervals },
	};
	struct an_run r = run_with(&p);
	struct an_result *res;
	char *js, *md, err[256];

	p.attach_ns = 4500000;
	p.cost_ns = 31000000;
	r.parts = parts;
	r.nparts = 2;
	js = render(an_report_json, &r);
	res = an_result_parse(js, strlen(js), "memory", err, sizeof(err));
	cr_assert_not_null(res, "%s\n%s", err, js);
	cr_expect_str_eq(an_result_str(res, "probes.0.name"), "oncpu");
	cr_expect_eq(an_result_num(res, "probes.0.attach_ns"), 4500000);
	cr_expect_str_eq(an_result_str(res, "probes.1.name"), "offcpu");
	cr_expect_eq(an_result_num(res, "probes.1.attach_ns"), 12300000);
	cr_expect_eq(an_result_num(res, "probes.1.intervals"), 42);
	cr_expect_str_eq(an_result_str(res, "probes.1.files.1"), "offcpu.svg");
	cr_expect_str_eq(an_result_str(res, "probes.2.status"),
			 "not attached: not root (run as root)");
	cr_expect(!an_result_has(res, "probes.2.intervals"), "a probe not attached has no figures");
	an_result_free(res);
	free(js);

	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, "- **oncpu**: cpu-clock, 999 Hz; attached in 4.5 ms and 31 ms measuring what a "
				      "sample costs;"), "%s", md);
	cr_expect_not_null(strstr(md, "- **offcpu**: attached in 12.3 ms; 1 s off-CPU → "
				      "[offcpu.folded](offcpu.folded), [offcpu.svg](offcpu.svg)\n"),
			   "%s", md);
	cr_expect_not_null(strstr(md, "- **sched**: not attached: not root (run as root)\n"), "%s", md);
	cr_expect_not_null(strstr(md, "### Off-CPU\n\n42 intervals\n"), "%s", md);
	free(md);
}

/* The header counts the worker threads the run was configured with and, where the
 * runtime started more (spares, a regulator), those too: not "2 worker threads" of a run
 * that had 9. */
Test(report, the_header_says_how_many_workers_the_runtime_started)
{
	struct an_stack_quality q = quality();
	struct an_agreement a = agreement();
	struct an_probe_summary p = probe(&q, &a);
	static const struct an_kv started[] = { { "workers_started", 9 } };
	struct an_run r = run_with(&p);
	char *md = render(an_report_markdown, &r);

	cr_expect_not_null(strstr(md, "1 fork × (1 warm-up + 3 measured iterations) × 0.2 s, 2 "
				      "worker threads. "), "%s", md);
	free(md);
	r.metrics = started;
	r.nmetrics = 1;
	md = render(an_report_markdown, &r);
	cr_expect_not_null(strstr(md, ", 2 worker threads at the start, 9 with those the runtime "
				      "started later. "), "%s", md);
	free(md);
}
