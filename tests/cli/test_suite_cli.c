/*
 * `schedlab suite`, run as a user runs it: an unknown suite or preset, a preset list that
 * leaves a suite no rows, a suite whose workload this build lacks, a bad run option and
 * an output folder in use are each one line, exit 2 and nothing made; a real suite run
 * (kyo-blocking's ce and kyo rows, blocking and non-blocking, and the epoll peer's, short)
 * writes suite.md and suite.json with each cell's run folder linked and there, the shape
 * column and the progress lines (the peer's row says not built where bench/tcppeer is
 * not); a row whose workload is not registered says so instead of giving a figure; and
 * the errors suite's stack-capture cells run the on-CPU probe over a user's --probes none,
 * the other cells without it, with the findings across its tables judged in both files.
 *
 * The run's figures are not judged here (a 0.05 s iteration on a busy machine is
 * noise): the suite's tables do that; the writer's text is tested against a golden file
 * in tests/analysis/test_suite.c.
 */
#include <json-c/json.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "workloads/workload.h"
#include "tests/cli/cli_run.h"

TestSuite(suite_cli, .init = setup, .fini = teardown);

static int suite(const char *const *args)
{
	return run_schedlab_out("suite", args);
}

#define REFUSED(must, ...) expect_refused_out("suite", (const char *const[]){ __VA_ARGS__, NULL }, must)

Test(suite_cli, unknown_suites_presets_and_options_are_bad_input)
{
	REFUSED("unknown suite 'five'; the suites are five-runtimes, kyo-blocking", "five");
	REFUSED("unknown suite 'nope'", "kyo-blocking", "nope");
	REFUSED("unknown preset 'kyoo'", "kyo-blocking", "--presets", "ce,kyoo");
	REFUSED("an empty name", "kyo-blocking", "--presets", "ce,,kyo");
	REFUSED("--presets is given twice", "kyo-blocking", "--presets", "ce", "--presets", "kyo");
	REFUSED("needs a suite to run", "--quick");
	/* the run options are checked by run, which names them */
	REFUSED("--time 'soon'", "kyo-blocking", "--time", "soon");
	REFUSED("--forks '0'", "kyo-blocking", "--forks", "0");
	REFUSED("--probes 'bogus'", "kyo-blocking", "--probes", "bogus");
}

Test(suite_cli, a_suite_that_cannot_run_is_refused_naming_why)
{
	/* sequentially's rows are all ce */
	REFUSED("suite sequentially cannot run: --presets kyo leaves none of its rows",
		"sequentially", "--presets", "kyo");
	/* a suite that needs a workload this build lacks says which; once it is built, it
	 * runs (and is not run here) */
	if (!wl_find("error-pipeline"))
		REFUSED("suite errors cannot run: workload error-pipeline is not registered",
			"errors");
	if (!wl_find("sequentially"))
		REFUSED("workload sequentially is not registered", "sequentially", "kyo-blocking");
}

Test(suite_cli, an_output_folder_in_use_is_refused_and_left_alone)
{
	const char *args[] = { "kyo-blocking", NULL };

	cr_assert_eq(mkdir(in_dir("s"), 0755), 0);
	write_file(in_dir("s/mine"), "keep");
	cr_expect_eq(suite(args), 2);
	expect_one_error_line("not an empty folder");
	cr_expect_eq(access(in_dir("s/mine"), F_OK), 0);
}

Test(suite_cli, help_names_the_suites_and_what_quick_does)
{
	const char *argv[] = { "suite", "--help", NULL };

	cr_expect_eq(run_schedlab(argv), 0);
	cr_expect_not_null(strstr(out_text, "Suites: five-runtimes, kyo-blocking, micro, memory,"),
			   "%s", out_text);
	cr_expect_not_null(strstr(out_text, "schedlab suite kyo-blocking --quick"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "1 fork, 1 x 0.2 s warm-up"), "%s", out_text);
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
	return v;
}

static const char *get_str(json_object *o, const char *key)
{
	return json_object_get_string(get(o, key));
}

Test(suite_cli, a_real_run_writes_both_files_with_every_cell_linked, .timeout = 120)
{
	const char *args[] = { "kyo-blocking", "--quick", "--presets", "ce,kyo", "--time", "0.05",
			       "--probes", "none", NULL };
	json_object *j, *cells;
	char *md, path[1024], line[128];
	bool peer_built;
	int runs;

	snprintf(path, sizeof(path), "%s/bench/tcppeer", schedlab_build());
	peer_built = access(path, X_OK) == 0;
	/* blocking TCP's ce and kyo (and the peer's); non-blocking TCP's ce and kyo at 8 and
	 * at 64 connections */
	runs = (peer_built ? 3 : 2) + 4;
	cr_assert_eq(suite(args), 0, "%s", err_text);
	/* progress: cell k of N, elapsed, and from the second on, the time left */
	snprintf(line, sizeof(line), "[cell 1 of %d, 0 s elapsed] tcp-blocking --preset ce", runs);
	cr_expect_not_null(strstr(err_text, line), "%s", err_text);
	snprintf(line, sizeof(line), "[cell 2 of %d, ", runs);
	cr_expect_not_null(strstr(err_text, line), "%s", err_text);
	cr_expect_not_null(strstr(err_text, "s left] tcp-blocking --preset kyo ..."), "%s",
			   err_text);
	/* the terminal table */
	cr_expect_not_null(strstr(out_text, "Blocking TCP on Kyo (ops/s)"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "**--quick**"), "%s", out_text);

	md = slurp(in_dir("s/suite.md"), NULL);
	cr_assert_not_null(md, "suite.md written");
	cr_expect_not_null(strstr(md, "`schedlab suite kyo-blocking --quick --presets ce,kyo"),
			   "%s", md);
	cr_expect_not_null(strstr(md, "**--quick**: each cell ran 1 fork"), "%s", md);
	cr_expect_not_null(strstr(md, "Rows: --presets ce,kyo."), "every preset asked for: %s", md);
	cr_expect_not_null(strstr(md, "| ours ± error (n) | study | ours ÷ ref | study ÷ ref | "
				      "shape | top findings | run folder |"), "%s", md);
	cr_expect_not_null(strstr(md, "| blocking TCP | cats-effect default | `tcp-blocking "
				      "--preset ce` |"), "%s", md);
	cr_expect_not_null(strstr(md, "| 149.00 ± 2.93 | 1× | 1× | reference | "), "%s", md);
	/* each cell with a figure carries its run's top findings, 'none' when none crossed */
	cr_expect_null(strstr(md, "| reference | — |"), "the reference's findings: %s", md);
	/* the study's explanations, Kyo default's stranded work among them */
	cr_expect_not_null(strstr(md, "### Why"), "%s", md);
	cr_expect_not_null(strstr(md, "| blocking TCP, Kyo default | stranded-work |"), "%s", md);
	cr_expect_not_null(strstr(md, "| 4.96 ± 0.02 |"), "the study's Kyo figure: %s", md);
	cr_expect_null(strstr(md, "kyo-flush"), "a row left out by --presets: %s", md);

	j = json_object_from_file(in_dir("s/suite.json"));
	cr_assert_not_null(j, "suite.json parses");
	cr_expect_str_eq(get_str(j, "schema"), "schedlab-suite/1");
	cells = get(json_object_array_get_idx(get(json_object_array_get_idx(get(j, "suites"), 0),
						  "tables"), 0), "cells");
	/* ce, kyo, and the epoll peer's row (a ce row): run where bench/tcppeer is built */
	cr_assert_eq(json_object_array_length(cells), 3);
	if (!peer_built) {
		json_object *peer = json_object_array_get_idx(cells, 2);

		cr_expect_str_eq(get_str(peer, "status"), "not built");
		cr_expect_str_eq(get_str(peer, "reason"), "the peer bench/tcppeer is not built "
				 "('make build/bench/tcppeer')");
		json_object_array_del_idx(cells, 2, 1);
	}
	for (size_t i = 0; i < json_object_array_length(cells); i++) {
		json_object *c = json_object_array_get_idx(cells, i);
		const char *run = get_str(c, "run");
		struct stat st;

		cr_expect_str_eq(get_str(c, "status"), "ok", "cell %zu: %s", i,
				 json_object_get_string(get(c, "reason")));
		cr_expect_gt(json_object_get_double(get(c, "value")), 0);
		cr_assert_not_null(run, "cell %zu has its run folder", i);
		/* linked from suite.md, and there */
		cr_expect_not_null(strstr(md, run), "%s linked from suite.md", run);
		snprintf(path, sizeof(path), "%s/s/%s", dir, run);
		cr_expect_eq(stat(path, &st), 0, "%s exists", path);
		if (i == 2) /* the peer's samples, one a line */
			continue;
		*strrchr(path, '/') = '\0';
		cr_expect_eq(access(strcat(path, "/result.json"), R_OK), 0, "%s", path);
	}
	cr_expect_str_eq(get_str(json_object_array_get_idx(cells, 0), "shape"), "reference");
	/* judged by its rule, or too wide to tell after 0.05 s iterations: never n/a */
	cr_expect(strstr(get_str(json_object_array_get_idx(cells, 1), "shape"), "hold") ||
			  strstr(get_str(json_object_array_get_idx(cells, 1), "shape"),
				 "cannot tell: "),
		  "kyo's row is judged: %s",
		  get_str(json_object_array_get_idx(cells, 1), "shape"));
	cr_expect_str_eq(get_str(json_object_array_get_idx(cells, 1), "rule"), "winner");
	json_object_put(j);
	free(md);
}

/* A row whose workload this build does not have: no figure, and the table says so; with
 * every workload built, no row says it. */
Test(suite_cli, a_row_whose_workload_is_missing_says_not_built, .timeout = 120)
{
	const char *args[] = { "micro", "--quick", "--presets", "ce", "--time", "0.05",
			       "--probes", "none", NULL };
	const struct an_suite *micro = an_suite_find("micro");
	const char *missing = NULL;
	char *md, line[256];

	cr_assert_not_null(micro);
	for (size_t i = 0; i < micro->tables[0].ncells && !missing; i++)
		if (!wl_find(micro->tables[0].cells[i].workload))
			missing = micro->tables[0].cells[i].workload;
	cr_assert_eq(suite(args), 0, "%s", err_text);
	md = slurp(in_dir("s/suite.md"), NULL);
	cr_assert_not_null(md);
	if (missing) {
		snprintf(line, sizeof(line), "| not built: workload %s is not registered | ",
			 missing);
		cr_expect_not_null(strstr(md, line), "%s", md);
		line[strlen(line) - 3] = '\0';
		cr_expect_not_null(strstr(out_text, line + 2), "%s", out_text);
	} else {
		cr_expect_null(strstr(md, "not built"), "%s", md);
	}
	/* the rows that exist ran */
	cr_expect_not_null(strstr(md, "| uncontended permit acquire/release | cats-effect | "
				      "`permit --preset ce -P encoding=ce` |"), "%s", md);
	cr_expect_null(strstr(md, "failed"), "%s", md);
	free(md);
}

/* The run folder of a suite.json cell, as a path under the test's folder. */
static void cell_run_dir(json_object *cell, char *path, size_t len)
{
	const char *run = get_str(cell, "run");

	cr_assert_not_null(run);
	snprintf(path, len, "%s/s/%s", dir, run);
	*strrchr(path, '/') = '\0'; /* report.md's folder */
}

/* Whether the run of a suite.json cell had the on-CPU probe attached. */
static bool ran_oncpu(json_object *cell)
{
	char path[1024], err[512];
	struct an_result *r;
	bool on;

	cell_run_dir(cell, path, sizeof(path));
	r = an_result_load(path, err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	on = an_result_probe(r, "oncpu") >= 0;
	an_result_free(r);
	return on;
}

Test(suite_cli, errors_runs_its_stack_capture_cells_under_the_oncpu_probe, .timeout = 300)
{
	const char *args[] = { "errors", "--quick", "--time", "0.05", "--probes", "none", NULL };
	json_object *j, *tables, *share, *claims;
	char *md;

	if (!wl_find("error-pipeline"))
		cr_skip_test("error-pipeline is not registered in this build");
	cr_assert_eq(suite(args), 0, "%s", err_text);
	md = slurp(in_dir("s/suite.md"), NULL);
	cr_assert_not_null(md);
	cr_expect_not_null(strstr(md, "\"Error handling, stack capture under the on-CPU probe "
				      "(tf=2)\" ran with --probes oncpu after the options given to "
				      "every cell"), "%s", md);
	cr_expect_not_null(strstr(md, "### Across columns and tables"), "%s", md);
	cr_expect_not_null(strstr(md, " findings across columns and tables that could be judged "
				      "hold."), "%s", md);
	cr_expect_not_null(strstr(out_text, "Across columns and tables (ratios with their 99.9% "
					   "intervals)"), "%s", out_text);

	j = json_object_from_file(in_dir("s/suite.json"));
	cr_assert_not_null(j, "suite.json parses");
	tables = get(json_object_array_get_idx(get(j, "suites"), 0), "tables");
	cr_assert_eq(json_object_array_length(tables), 7);
	/* the user's --probes none holds for the timed cells */
	cr_expect(!ran_oncpu(json_object_array_get_idx(get(json_object_array_get_idx(tables, 0),
							       "cells"), 0)),
		  "a timed cell ran without the on-CPU probe");
	/* the share cells ran with it, and each has a share and its samples */
	share = get(json_object_array_get_idx(tables, 3), "cells");
	cr_assert_eq(json_object_array_length(share), 4);
	for (size_t i = 0; i < 4; i++) {
		json_object *c = json_object_array_get_idx(share, i);
		double v = json_object_get_double(get(c, "value"));

		cr_expect_str_eq(get_str(c, "status"), "ok", "share %zu: %s", i,
				 json_object_get_string(get(c, "reason")));
		cr_expect(v >= 0 && v <= 100, "share %zu: %g", i, v);
		cr_expect_gt(json_object_get_double(get(c, "n")), 0, "share %zu: samples", i);
		cr_expect(ran_oncpu(c), "share %zu ran under the on-CPU probe", i);
	}
	/* every finding is there, and judged or saying why not */
	claims = get(json_object_array_get_idx(get(j, "suites"), 0), "claims");
	cr_assert_eq(json_object_array_length(claims), 14);
	for (size_t i = 0; i < 14; i++) {
		const char *shape = get_str(json_object_array_get_idx(claims, i), "shape");

		cr_assert_not_null(shape);
		cr_expect(strstr(shape, "hold") || strstr(shape, "cannot tell"), "finding %zu: %s",
			  i, shape);
	}
	json_object_put(j);
	free(md);
}
