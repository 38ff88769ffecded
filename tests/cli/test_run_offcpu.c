/*
 * `schedlab run` with the offcpu probe: a blocking-TCP run under kyo spends its workers'
 * time blocked in recv and parked, and result.json and offcpu.folded say so, with the
 * folded total what result.json reports; the probe's options are bad input without it.
 */
#include <stdbool.h>
#include <stdint.h>

#include "probes/probes.h"
#include "tests/cli/cli_run.h"

TestSuite(run_offcpu, .init = setup, .fini = teardown);

/* The number after "key": in json, from the first occurrence of `after`. */
static double json_num(const char *json, const char *after, const char *key)
{
	char pat[64];
	const char *p = strstr(json, after);

	cr_assert_not_null(p, "%s not in result.json", after);
	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(p, pat);
	cr_assert_not_null(p, "%s not in result.json after %s", key, after);
	return strtod(p + strlen(pat), NULL);
}

static uint64_t folded_total(const char *path, const char *root, uint64_t *under_root)
{
	FILE *f = fopen(path, "r");
	char line[16384];
	uint64_t total = 0;

	cr_assert_not_null(f, "%s", path);
	*under_root = 0;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');
		uint64_t n;

		cr_assert_not_null(sp, "a folded line without a count: %s", line);
		n = strtoull(sp + 1, NULL, 10);
		total += n;
		if (!strncmp(line, root, strlen(root)))
			*under_root += n;
	}
	fclose(f);
	return total;
}

/* Run `schedlab ARGV...` (its run folder under in_dir("results")): its result.json, to
 * be freed, with *off at the offcpu probe's part. */
static char *run_offcpu(const char *const *argv, char **off)
{
	char path[1024], *json;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	*off = strstr(json, "\"name\": \"offcpu\"");
	cr_assert_not_null(*off, "%s", json);
	return json;
}

/* The report's top off-CPU stacks are distinct rows: stacks that differ only past the
 * frames a row shows are one row, their time summed. */
static void expect_distinct_top_stacks(const char *md)
{
	const char *at = strstr(md, "Top stacks"), *end;
	char rows[8][512];
	size_t n = 0;

	cr_assert_not_null(at, "no top stacks: %s", md);
	at = strstr(at, "|---|\n");
	cr_assert_not_null(at);
	at += 6;
	while (*at == '|' && n < 8) {
		const char *tick = strchr(at, '`');

		end = strchr(at, '\n');
		cr_assert(tick && end && tick < end, "%s", at);
		snprintf(rows[n], sizeof(rows[n]), "%.*s", (int)(end - tick), tick);
		for (size_t k = 0; k < n; k++)
			cr_expect_str_neq(rows[k], rows[n], "two rows alike: %s", md);
		n++;
		at = end + 1;
	}
	cr_expect_gt(n, 0);
}

Test(run_offcpu, blocking_tcp_under_kyo_shows_blocking_and_parked_time, .timeout = 180)
{
	const char *argv[] = { "run", "tcp-blocking", "--preset", "kyo", "--quick", "--probes",
			       "oncpu,offcpu", "--wakers", "--out", in_dir("results"), NULL };
	char path[1024], *json, *md, *off;
	uint64_t total, blocking;
	double folded_us;

	json = run_offcpu(argv, &off);
	cr_assert_not_null(strstr(off, "\"attached\": true"), "root with BTF: %s", off);
	cr_expect_gt(json_num(off, "\"by_class_us\"", "blocking"), 0, "%s", off);
	cr_expect_gt(json_num(off, "\"by_class_us\"", "parked"), 0, "%s", off);
	cr_expect_gt(json_num(off, "\"intervals\"", "kept"), 0, "%s", off);
	folded_us = json_num(off, "\"name\": \"offcpu\"", "folded_us");
	snprintf(path, sizeof(path), "%s/latest/offcpu.folded", in_dir("results"));
	total = folded_total(path, "[blocking];", &blocking);
	cr_expect_eq((double)total, folded_us, "offcpu.folded's total is result.json's");
	cr_expect_gt(blocking, 0);
	snprintf(path, sizeof(path), "%s/latest/wakers.folded", in_dir("results"));
	cr_expect_eq(access(path, R_OK), 0, "%s", path);
	snprintf(path, sizeof(path), "%s/latest/offcpu.svg", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	/* parked workers in the legend, as the graph draws them, and the totals under the
	 * title */
	cr_expect_not_null(strstr(md, "<g class=\"category\"><title>parked: "), "no parked");
	cr_expect_not_null(strstr(md, "<text id=\"subtitle\""), "no subtitle");
	cr_expect_not_null(strstr(md, " ms off-CPU in "), "the subtitle's totals");
	free(md);
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md);
	cr_expect_not_null(strstr(md, "### Off-CPU"), "%s", md);
	expect_distinct_top_stacks(md);
	free(md);
	free(json);
}

/* offcpu's thread maps hold a record per thread of a fork until the drain: sized for the
 * run's workers as sched's thread map is (4 each and 64 more, at least 256), the wakers
 * map only with --wakers; the stacks and keys, the program's wait sites, for the fork's
 * measured time (0.1 s here: the probe's defaults, the least they get). result.json says
 * which and why, and how many one fork held. */
static void expect_offcpu_maps(const char *workers, bool wakers, unsigned threads)
{
	char knob[32], *json, *off;
	const char *argv[] = { "run", "workers", "-c", knob, "--forks", "1", "--warmup", "0",
			       "--iterations", "1", "--time", "0.1", "--probes", "offcpu",
			       "--out", in_dir("results"), wakers ? "--wakers" : NULL, NULL };

	snprintf(knob, sizeof(knob), "workers=%s", workers);
	json = run_offcpu(argv, &off);
	cr_expect_eq(json_num(off, "\"maps\"", "threads"), threads, "%s", strstr(off, "\"maps\""));
	cr_expect_eq(json_num(off, "\"maps\"", "wakers"), wakers ? threads : 0, "%s",
		     strstr(off, "\"maps\""));
	cr_expect_eq(json_num(off, "\"maps\"", "sized_for_workers"), atoi(workers));
	cr_expect_eq(json_num(off, "\"maps\"", "stacks"), PROBE_OFFCPU_STACK_ENTRIES);
	cr_expect_eq(json_num(off, "\"maps\"", "counts"), PROBE_OFFCPU_COUNT_ENTRIES);
	cr_expect_not_null(strstr(off, "\"stacks_rule\": \"for the fork's measured time: "), "%s",
			   off);
	/* workers waits at a few places: some stacks held, and each named by a key */
	cr_expect_gt(json_num(off, "\"maps\"", "stacks_held_max"), 0, "%s", off);
	cr_expect_geq(json_num(off, "\"maps\"", "counts_held_max"), 1, "%s", off);
	cr_expect_leq(json_num(off, "\"maps\"", "stacks_held_max"), PROBE_OFFCPU_STACK_ENTRIES);
	free(json);
}

/* --offcpu-maps sizes the stacks and keys as given; maps so small fill, and each
 * interval that found no room is counted: the most held is the size, never more. */
Test(run_offcpu, offcpu_maps_sizes_its_stacks_and_keys, .timeout = 120)
{
	char why[256], *json, *off;
	const char *argv[] = { "run", "workers", "--forks", "1", "--warmup", "0", "--iterations",
			       "1", "--time", "0.2", "--probes", "offcpu", "--offcpu-maps", "2,3",
			       "--out", in_dir("results"), NULL };

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("offcpu cannot attach here: %s", why);
	json = run_offcpu(argv, &off);
	cr_expect_eq(json_num(off, "\"maps\"", "stacks"), 2, "%s", off);
	cr_expect_eq(json_num(off, "\"maps\"", "counts"), 3, "%s", off);
	cr_expect_not_null(strstr(off, "\"stacks_rule\": \"given: --offcpu-maps\""), "%s", off);
	cr_expect_eq(json_num(off, "\"maps\"", "stacks_held_max"), 2, "%s", off);
	cr_expect_eq(json_num(off, "\"maps\"", "counts_held_max"), 3, "%s", off);
	cr_expect_gt(json_num(off, "\"lost\"", "counts_map_full"), 0, "%s", off);
	free(json);
}

Test(run_offcpu, its_maps_are_sized_for_the_run, .timeout = 120)
{
	char why[256];

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("offcpu cannot attach here: %s", why);
	expect_offcpu_maps("2", false, 256);
	expect_offcpu_maps("2", true, 256);
	expect_offcpu_maps("64", true, 4 * 64 + 64);
}

Test(run_offcpu, its_options_are_checked)
{
	/* each command line, and the one error line it must give */
	static const struct {
		const char *argv[8];
		const char *error;
	} bad[] = {
		{ { "run", "spawn-join", "--probes", "oncpu,offcpu", "--min-block-us", "0" },
		  "--min-block-us '0'" },
		{ { "run", "spawn-join", "--wakers" }, "--probes oncpu,offcpu" },
		{ { "run", "spawn-join", "--probes", "offcpu", "--offcpu-stacks", "stack" },
		  "--offcpu-stacks 'stack': expected both, user or kernel" },
		{ { "run", "spawn-join", "--offcpu-stacks", "user" },
		  "--offcpu-stacks is an offcpu option" },
		{ { "run", "spawn-join", "--probes", "offcpu", "--offcpu-maps", "4096" },
		  "--offcpu-maps '4096': expected STACKS,COUNTS, from 1 to 262144 and 1 to "
		  "1048576, e.g. --offcpu-maps 4096,16384" },
		{ { "run", "spawn-join", "--probes", "offcpu", "--offcpu-maps", "0,16" },
		  "--offcpu-maps '0,16': expected STACKS,COUNTS" },
		{ { "run", "spawn-join", "--offcpu-maps", "64,128" },
		  "--offcpu-maps is an offcpu option" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(run_schedlab(bad[i].argv), 2, "%s", bad[i].error);
		expect_one_error_line(bad[i].error);
	}
	cr_expect_eq(entries(), 0, "nothing was created");
}
