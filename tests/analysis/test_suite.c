/*
 * Tests of analysis/suite.c: the suite.md writer against a golden file (a synthetic
 * suite whose cells cover every outcome: the reference, a shape that holds, the other
 * winner, a ratio outside the band, a tie, no study figure, not built, failed, a row
 * left out, a reference left out, a row by its place, a row against another, a floor;
 * and findings across columns and tables), suite.json read back, the shape rules and the
 * findings at their edges, a category's share read from result.json, and the suites' own
 * definitions (one reference per column, the studies' figures where the tables put them,
 * every finding's cells there).
 *
 * SCHEDLAB_GOLDEN=1 rewrites tests/analysis/data/suite.md from the writer (make golden).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define CELL(col, rowname, pre, pub, err, ref)                                              \
	{ .column = col, .row = rowname, .workload = "spawn-join", .preset = pre,             \
	  .params = "n=100", .metric = AN_SUITE_SCORE, .published = pub,                       \
	  .published_err = err, .study_ratio = NAN, .reference = ref }

/* A cell judged by a rule of its own: the designators given (.between = "x", ...). */
#define RULED(col, rowname, pre, pub, ...)                                                   \
	{ .column = col, .row = rowname, .workload = "spawn-join", .preset = pre,             \
	  .params = "n=100", .metric = AN_SUITE_SCORE, .published = pub,                       \
	  .published_err = NAN, .study_ratio = NAN, __VA_ARGS__ }

static const struct an_suite_cell cells[] = {
	CELL("a", "reference", "ce", 100, 2, true),
	CELL("a", "holds", "kyo", 10, 0.5, false),
	CELL("a", "other winner", "loom", 50, 1, false),
	CELL("a", "outside the band", "tokio", 90, 3, false),
	CELL("a", "tie", "go", 101, 2, false),
	CELL("a", "no study figure", "global", NAN, NAN, false),
	CELL("a", "not built", "threads", 80, 1, false),
	CELL("a", "failed", "kyo-flush", 80, 1, false),
	CELL("a", "left out", "kyo-tuned", 80, 1, false),
	CELL("b | piped", "reference left out", "ce", 100, 2, true),
	CELL("b | piped", "row of b", "kyo", 200, 2, false),
};

/* A chain in each of two columns (fast ≥ middle ≥ slow, in ns/op: the middle by its
 * place, the slow row against the middle, and a row of ours alone nearer fast than slow
 * is), and a floor. */
#define CHAIN(col, fast, middle, slow)                                                       \
	RULED(col, "fast", "ce", fast, .reference = true),                                    \
	RULED(col, "middle", "kyo", middle, .between = "slow"),                               \
	RULED(col, "slow", "loom", slow, .against = "middle"),                                \
	RULED(col, "near fast", "tokio", NAN, .nearer = "slow")

static const struct an_suite_cell chain_cells[] = {
	CHAIN("tf=2", 100, 150, 200),
	CHAIN("tf=200", 1000, 1010, 1020),
};

static const struct an_suite_cell floor_cells[] = {
	RULED("share", "base", "ce", NAN, .reference = true),
	{ .column = "share", .row = "several times", .workload = "spawn-join", .preset = "kyo",
	  .params = "n=100", .metric = AN_SUITE_CATEGORY_SHARE, .metric_name = "stack-capture",
	  .published = 25, .published_err = NAN, .study_ratio = NAN, .at_least = 3 },
};

static const struct an_suite_table tables[] = {
	{ "Synthetic", "a made-up study", "ops/s", 2, "within 2× and the same winner", "", "",
	  cells, sizeof(cells) / sizeof(cells[0]) },
	{ "Chains", "a made-up study", "ns/op", 2, "fast ≥ middle ≥ slow", "", "", chain_cells,
	  sizeof(chain_cells) / sizeof(chain_cells[0]) },
	{ "Floor", "a made-up study", "% of samples", 3, "at least 3× the base", "",
	  "--probes oncpu", floor_cells, sizeof(floor_cells) / sizeof(floor_cells[0]) },
};

#define AT(tb, col, rowname) { .table = tb, .column = col, .row = rowname }

static const struct an_suite_claim claims[] = {
	{ .text = "the gap slow ÷ fast smaller at tf=200", .kind = AN_CLAIM_SHRINKS,
	  .a = AT(1, "tf=2", "slow"), .b = AT(1, "tf=2", "fast"), .to_column = "tf=200" },
	{ .text = "fast ahead of slow", .kind = AN_CLAIM_AHEAD, .a = AT(1, "tf=2", "fast"),
	  .b = AT(1, "tf=2", "slow") },
	{ .text = "holds ahead of | the reference", .kind = AN_CLAIM_AHEAD,
	  .a = AT(0, "a", "holds"), .b = AT(0, "a", "reference") },
	{ .text = "a failed row ahead", .kind = AN_CLAIM_AHEAD, .a = AT(0, "a", "failed"),
	  .b = AT(0, "a", "reference") },
	{ .text = "a row left out ahead", .kind = AN_CLAIM_AHEAD, .a = AT(0, "a", "left out"),
	  .b = AT(0, "a", "reference") },
};

static const struct an_suite suite = { "synthetic", "every outcome of a cell", false, tables,
				       3, claims, sizeof(claims) / sizeof(claims[0]) };

#define NRES 21 /* the cells of the three tables */

static void results(struct an_suite_result *r)
{
	static const double value[NRES] = { 1000, 120, 1200, 300, 1050, 400, 0, 0, 0, 0, 500,
					    100, 140, 280, 90, 1100, 1120, 1140, 1150, 0, 20 };

	memset(r, 0, sizeof(*r) * NRES);
	for (size_t i = 0; i < NRES; i++) {
		r[i].state = AN_CELL_OK;
		r[i].value = value[i];
		r[i].error = value[i] / 100;
		r[i].n = 9;
		snprintf(r[i].link, sizeof(r[i].link), "%02zu-spawn-join/run/report.md", i + 1);
	}
	r[4].error = NAN; /* no interval: the figure alone */
	r[6].state = AN_CELL_NOT_BUILT;
	snprintf(r[6].reason, sizeof(r[6].reason), "workload spawn-join is not registered");
	r[6].link[0] = '\0';
	r[7].state = AN_CELL_FAILED;
	snprintf(r[7].reason, sizeof(r[7].reason), "check failed | in fork 1");
	r[8].state = AN_CELL_LEFT_OUT;
	r[9].state = AN_CELL_LEFT_OUT;
	r[19].error = 0; /* a share of 0: no sample in the category */
}

static char *render(bool json)
{
	struct an_suite_result r[NRES], *res[1] = { r };
	const struct an_suite *suites[1] = { &suite };
	const char *skipped[1] = { "suite errors not run: workload error-pipeline is not "
				   "registered in this build" };
	struct an_suite_report rep = { .command = "schedlab suite synthetic --quick",
				       .settings = "**--quick**: fewer iterations.",
				       .suites = suites, .res = res, .nsuites = 1,
				       .skipped = skipped, .nskipped = 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	results(r);
	cr_assert_eq(json ? an_suite_write_json(&rep, f) : an_suite_write_md(&rep, f), 0);
	fclose(f);
	return buf;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;

	cr_assert_not_null(f, "%s", path);
	n = getdelim(&buf, &len, '\0', f);
	fclose(f);
	cr_assert_geq(n, 0, "%s", path);
	return buf;
}

Test(suite, markdown_matches_the_golden_file)
{
	char file[PATH_MAX], path[PATH_MAX + 32];
	char *got = render(false), *want;

	snprintf(file, sizeof(file), "%s", __FILE__);
	snprintf(path, sizeof(path), "%s/data/suite.md", dirname(file));
	if (getenv("SCHEDLAB_GOLDEN")) {
		FILE *f = fopen(path, "we");

		cr_assert_not_null(f, "%s", path);
		fputs(got, f);
		fclose(f);
	}
	want = read_text(path);
	cr_expect_str_eq(got, want, "suite.md differs from %s; SCHEDLAB_GOLDEN=1 rewrites it",
			 path);
	free(got);
	free(want);
}

/* The value at a path of member names and array indexes joined by '.'; NULL if none. */
static struct json_object *at(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(k));
		else if (!json_object_object_get_ex(o, k, &o))
			o = NULL;
	}
	return o;
}

static const char *str_at(struct json_object *o, const char *path)
{
	o = at(o, path);
	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

Test(suite, json_reads_back_with_each_cell_and_its_shape)
{
	char *text = render(true);
	struct json_object *j = json_tokener_parse(text), *c;

	cr_assert_not_null(j, "suite.json parses: %s", text);
	cr_expect_str_eq(str_at(j, "schema"), "schedlab-suite/1");
	c = at(j, "suites.0.tables.0.cells");
	cr_assert_not_null(c);
	cr_expect_eq(json_object_array_length(c), 9, "two rows left out");
	cr_expect_str_eq(str_at(c, "0.shape"), "reference");
	cr_expect_str_eq(str_at(c, "1.shape"), "holds");
	cr_expect_float_eq(json_object_get_double(at(c, "1.ratio")), 0.12, 1e-12);
	cr_expect_float_eq(json_object_get_double(at(c, "1.study_ratio")), 0.1, 1e-12);
	cr_expect_eq(json_object_get_boolean(at(c, "2.holds")), 0);
	cr_expect(json_object_is_type(at(c, "5.holds"), json_type_null), "not judged: null");
	cr_expect_str_eq(str_at(c, "6.status"), "not built");
	cr_expect(json_object_is_type(at(c, "6.value"), json_type_null), "no figure");
	cr_expect_str_eq(str_at(c, "7.reason"), "check failed | in fork 1");
	cr_expect_str_eq(str_at(c, "1.run"), "02-spawn-join/run/report.md");
	cr_expect_str_eq(str_at(j, "not_run.0"),
			 "suite errors not run: workload error-pipeline is not registered in "
			 "this build");
	/* the row a ratio is to, where it is not the reference */
	cr_expect(json_object_is_type(at(c, "1.against"), json_type_null));
	cr_expect_str_eq(str_at(j, "suites.0.tables.1.cells.2.against"), "middle");
	/* the findings, but the one whose row is left out */
	c = at(j, "suites.0.claims");
	cr_assert_not_null(c);
	cr_expect_eq(json_object_array_length(c), 4);
	cr_expect_str_eq(str_at(c, "0.claim"), "the gap slow ÷ fast smaller at tf=200");
	cr_expect_str_eq(str_at(c, "0.kind"), "shrinks");
	cr_expect_eq(json_object_array_length(at(c, "0.ours")), 2);
	cr_expect_float_eq(json_object_get_double(at(c, "0.ours.1")), 1140.0 / 1100, 1e-12);
	cr_expect_float_eq(json_object_get_double(at(c, "0.study.0")), 2, 1e-12);
	cr_expect_eq(json_object_get_boolean(at(c, "0.holds")), 1);
	cr_expect_str_eq(str_at(c, "1.kind"), "ahead");
	cr_expect_eq(json_object_array_length(at(c, "1.ours")), 1);
	cr_expect_str_eq(str_at(c, "2.shape"), "does not hold: the other winner");
	cr_expect(json_object_is_type(at(c, "3.holds"), json_type_null), "no figure: null");
	json_object_put(j);
	free(text);
}

Test(suite, shape_bands_ties_and_winners_at_their_edges)
{
	struct an_suite_result r[NRES];
	struct an_suite_shape sh;

	results(r);
	an_suite_shape(&tables[0], r, 1, &sh);
	cr_expect_eq(sh.holds, 1, "0.12 against 0.1: %s", sh.text);
	/* an interval wider than half its mean is said to be noisy */
	r[1].error = 61;
	an_suite_shape(&tables[0], r, 1, &sh);
	cr_expect_str_eq(sh.text, "holds (noisy: an interval wider than half its mean)");
	r[1].error = 1;
	/* the band is 2×: 0.2 (2× the study's 0.1) holds, 0.21 does not */
	r[1].value = 200;
	an_suite_shape(&tables[0], r, 1, &sh);
	cr_expect_eq(sh.holds, 1, "%s", sh.text);
	r[1].value = 210;
	an_suite_shape(&tables[0], r, 1, &sh);
	cr_expect_eq(sh.holds, 0, "%s", sh.text);
	cr_expect_not_null(strstr(sh.text, "outside 2×"), "%s", sh.text);
	/* a study ratio within 10% of 1 is a tie: ours holds within 25% of 1 */
	r[4].value = 1250;
	an_suite_shape(&tables[0], r, 4, &sh);
	cr_expect_eq(sh.holds, 1, "%s", sh.text);
	r[4].value = 1260;
	an_suite_shape(&tables[0], r, 4, &sh);
	cr_expect_eq(sh.holds, 0, "%s", sh.text);
	cr_expect_str_eq(sh.text, "does not hold: the study found a tie, here tie wins");
	/* outside the band, but with intervals that overlap ours names no winner either */
	r[4].error = 1260 - 1000 - 10;
	an_suite_shape(&tables[0], r, 4, &sh);
	cr_expect_eq(sh.holds, 1, "%s", sh.text);
	cr_expect_str_eq(sh.text, "holds (a tie, as in the study: our two intervals overlap)");
	r[4].error = 249;
	an_suite_shape(&tables[0], r, 4, &sh);
	cr_expect_eq(sh.holds, 0, "%s", sh.text);
	r[4].error = NAN;
	/* in a table of times, the row with the larger figure is the slower one */
	{
		struct an_suite_table times = tables[0];

		times.unit = "ns/op";
		an_suite_shape(&times, r, 4, &sh);
		cr_expect_str_eq(sh.text, "does not hold: the study found a tie, here reference "
					  "wins");
	}
	/* the other side of 1 is the other winner, whatever the band */
	an_suite_shape(&tables[0], r, 2, &sh);
	cr_expect_eq(sh.holds, 0);
	cr_expect_str_eq(sh.text, "does not hold: the other winner");
	/* unless our intervals overlap: then the run cannot tell who wins */
	r[2].error = r[2].value - r[0].value - r[0].error;
	an_suite_shape(&tables[0], r, 2, &sh);
	cr_expect_eq(sh.holds, -1, "%s", sh.text);
	cr_expect_str_eq(sh.text, "cannot tell: our two intervals overlap (the study: reference "
				  "ahead)");
	r[2].error *= 0.99;
	an_suite_shape(&tables[0], r, 2, &sh);
	cr_expect_eq(sh.holds, 0, "%s", sh.text);
	r[2].error = 12;
	/* nothing to judge without a figure on either side */
	an_suite_shape(&tables[0], r, 5, &sh);
	cr_expect_eq(sh.holds, -1, "%s", sh.text);
	an_suite_shape(&tables[0], r, 7, &sh);
	cr_expect_eq(sh.holds, -1, "%s", sh.text);
	an_suite_shape(&tables[0], r, 10, &sh);
	cr_expect_eq(sh.holds, -1, "%s", sh.text);
	cr_expect_str_eq(sh.text, "n/a: reference row left out");
}

/* A cell judged by its place: between a row and the reference, whatever the ratio. */
Test(suite, a_row_between_two_holds_by_its_place_not_its_ratio)
{
	static const struct an_suite_cell place[] = {
		CELL("a", "reference", "ce", 150, 3, true),
		CELL("a", "slow", "kyo", 5, 0.1, false),
		{ .column = "a", .row = "fixed in part", .workload = "spawn-join",
		  .preset = "kyo-flush", .params = "", .metric = AN_SUITE_SCORE, .published = 80,
		  .published_err = 25, .study_ratio = NAN, .between = "slow" },
	};
	const struct an_suite_table t = { "Place", "a made-up study", "ops/s", 2, "why", "", "",
					  place, 3 };
	struct an_suite_result r[3] = {
		{ .state = AN_CELL_OK, .value = 160, .error = 5, .n = 9 },
		{ .state = AN_CELL_OK, .value = 4, .error = 0.2, .n = 9 },
		{ .state = AN_CELL_OK, .value = 8, .error = 0.5, .n = 9 },
	};
	struct an_suite_shape sh;

	/* 0.05 of the reference against the study's 0.53: far outside the band of 2, yet
	 * between the two rows as in the study */
	an_suite_shape(&t, r, 2, &sh);
	cr_expect_eq(sh.holds, 1, "%s", sh.text);
	cr_expect_str_eq(sh.text, "holds (between slow and reference, as in the study)");
	cr_expect_float_eq(sh.ratio, 0.05, 1e-9);
	/* at or past either end it does not */
	r[2].value = 3.9;
	an_suite_shape(&t, r, 2, &sh);
	cr_expect_eq(sh.holds, 0, "%s", sh.text);
	cr_expect_str_eq(sh.text, "does not hold: not between slow and reference");
	r[2].value = 170;
	an_suite_shape(&t, r, 2, &sh);
	cr_expect_eq(sh.holds, 0, "%s", sh.text);
	/* between by the means, but an interval reaching an end names no place */
	r[2].value = 4.5;
	an_suite_shape(&t, r, 2, &sh);
	cr_expect_eq(sh.holds, -1, "%s", sh.text);
	cr_expect_str_eq(sh.text, "cannot tell: its interval overlaps slow's");
	/* no figure for the row it is placed against: nothing to judge */
	r[2].value = 8;
	r[1].state = AN_CELL_FAILED;
	an_suite_shape(&t, r, 2, &sh);
	cr_expect_eq(sh.holds, -1, "%s", sh.text);
	cr_expect_str_eq(sh.text, "n/a: no figure for slow");
}

/* Cell i of t judged: it holds as expected (1, 0, -1; any: ANY) and says text (NULL: any). */
#define ANY (-2)
static struct an_suite_shape shape(const struct an_suite_table *t,
				   const struct an_suite_result *r, size_t i, int holds,
				   const char *text)
{
	struct an_suite_shape sh;

	an_suite_shape(t, r, i, &sh);
	if (holds != ANY)
		cr_expect_eq(sh.holds, holds, "%s, %s: %s", t->title, t->cells[i].row, sh.text);
	if (text)
		cr_expect_str_eq(sh.text, text, "%s, %s", t->title, t->cells[i].row);
	return sh;
}

#define OK(v, e) { .state = AN_CELL_OK, .value = v, .error = e, .n = 3 }

/* A row of ours alone (no study figure) judged by its distance from the base: the
 * exceptions without a trace nearer the hand-written either than the exceptions that
 * fill one, on either side. */
Test(suite, a_row_nearer_the_base_than_another_holds_on_either_side)
{
	static const struct an_suite_cell near[] = {
		RULED("c", "either", "ce", 6443, .reference = true),
		RULED("c", "exceptions", "kyo", 8482),
		RULED("c", "no trace", "loom", NAN, .nearer = "exceptions"),
	};
	const struct an_suite_table t = { "Nearer", "a made-up study", "ns/op", 2, "why", "", "",
					  near, 3 };
	struct an_suite_result r[3] = { OK(500, 5), OK(700, 7), OK(550, 5) };
	struct an_suite_shape sh;

	sh = shape(&t, r, 2, 1, "holds (nearer either than exceptions is)");
	cr_expect_float_eq(sh.ratio, 1.1, 1e-9);
	cr_expect(isnan(sh.study_ratio), "no study figure, no study ratio");
	/* faster than the base is nearer it too */
	r[2].value = 480;
	shape(&t, r, 2, 1, NULL);
	/* near the exceptions: an interval that reaches them cannot tell; one that does not
	 * holds on this side of them and not on the other */
	r[2].value = 690;
	shape(&t, r, 2, -1, "cannot tell: its interval reaches exceptions's distance from either");
	r[2].error = 2.9;
	shape(&t, r, 2, 1, NULL);
	r[2].value = 710;
	shape(&t, r, 2, 0, "does not hold: as far from either as exceptions, or farther");
	/* the other side: the bound is 300 ± 17 (the exceptions' mirror through the base) */
	r[2].error = 5;
	r[2].value = 290;
	shape(&t, r, 2, -1, NULL);
	r[2].value = 270;
	shape(&t, r, 2, 0, NULL);
	r[2].value = 330;
	shape(&t, r, 2, 1, NULL);
	/* exact figures: as far as the exceptions, either way, does not hold; nearer does */
	r[0].error = r[1].error = r[2].error = NAN;
	r[2].value = 700;
	shape(&t, r, 2, 0, NULL);
	r[2].value = 300;
	shape(&t, r, 2, 0, NULL);
	r[2].value = 699.9;
	shape(&t, r, 2, 1, NULL);
	/* no figure for the exceptions, or for its own run: nothing to judge */
	r[1].state = AN_CELL_FAILED;
	shape(&t, r, 2, -1, "n/a: no figure for exceptions");
	r[1].state = AN_CELL_OK;
	r[2].state = AN_CELL_FAILED;
	shape(&t, r, 2, -1, "n/a: no figure");
}

/* A chain, buckets ≥ actors ≥ converted (ops/s): the actors by their place, the
 * converted buckets by their ratio to the actors instead of the reference. */
Test(suite, a_row_against_another_is_judged_by_its_ratio_to_that_row)
{
	static const struct an_suite_cell chain[] = {
		RULED("c", "buckets", "ce", 2058.68, .reference = true),
		RULED("c", "actors", "kyo", 1434.05, .between = "converted"),
		RULED("c", "converted", "loom", 1213.68, .against = "actors"),
	};
	const struct an_suite_table t = { "Chain", "a made-up study", "ops/s", 2, "why", "", "",
					  chain, 3 };
	struct an_suite_result r[3] = { OK(20000, NAN), OK(10000, NAN), OK(8000, NAN) };
	struct an_suite_shape sh;

	sh = shape(&t, r, 1, 1, "holds (between converted and buckets, as in the study)");
	cr_expect_float_eq(sh.ratio, 0.5, 1e-12); /* the actors' ratio is to the buckets */
	sh = shape(&t, r, 2, 1, "holds (against actors)");
	cr_expect_float_eq(sh.ratio, 0.8, 1e-12);
	cr_expect_float_eq(sh.study_ratio, 1213.68 / 1434.05, 1e-12);
	/* the band is the table's, around the study's ratio to the actors: 0.8463 / 2 */
	r[2].value = 4232;
	shape(&t, r, 2, 1, NULL);
	r[2].value = 4231;
	shape(&t, r, 2, 0, "does not hold: 0.5× the study's ratio, outside 2× (against actors)");
	/* converted ahead of the actors: the other winner, and the actors no longer between */
	r[2].value = 11000;
	shape(&t, r, 2, 0, "does not hold: the other winner (against actors)");
	shape(&t, r, 1, 0, "does not hold: not between converted and buckets");
	/* ahead by the means only, the two intervals overlapping: no winner */
	r[1].error = 600;
	r[2].error = 500;
	shape(&t, r, 2, -1, "cannot tell: our two intervals overlap (the study: actors ahead) "
			    "(against actors)");
	/* no figure for the row it is against, or that row left out */
	r[1].state = AN_CELL_FAILED;
	shape(&t, r, 2, -1, "n/a: no figure for actors");
	r[1].state = AN_CELL_LEFT_OUT;
	shape(&t, r, 2, -1, "n/a: actors left out");
}

/* A share at least 3× its base's (the exceptions' stack capture against the exceptions
 * without a trace), whatever the study's ratio. */
Test(suite, a_floor_holds_at_three_times_the_base_and_not_under)
{
	const struct an_suite_table *t = &tables[2];
	struct an_suite_result f[2] = { OK(2, NAN), OK(6, NAN) };
	struct an_suite_shape sh;

	/* exact figures, no intervals: 3× holds, just under does not */
	sh = shape(t, f, 1, 1, "holds (at least 3× base's)");
	cr_expect_float_eq(sh.ratio, 3, 1e-12);
	cr_expect(isnan(sh.study_ratio), "the base has no study figure");
	f[1].value = 5.99;
	shape(t, f, 1, 0, "does not hold: under 3× base's");
	/* intervals: the base's is scaled with it (6 ± 1.5); ours reaching it cannot tell */
	f[0].error = 0.5;
	f[1] = (struct an_suite_result)OK(8, 0.6);
	shape(t, f, 1, -1, "cannot tell: its interval overlaps 3× base's");
	f[1].error = 0.4;
	shape(t, f, 1, 1, NULL);
	f[1].value = 4;
	shape(t, f, 1, 0, NULL);
	/* a base near 0 has a wide interval: only ours can make the verdict noisy */
	f[0] = (struct an_suite_result)OK(0.1, 0.3);
	f[1] = (struct an_suite_result)OK(20, 2);
	shape(t, f, 1, 1, "holds (at least 3× base's)");
	f[1].error = 11;
	shape(t, f, 1, 1, "holds (at least 3× base's) (noisy: an interval wider than half its "
			  "mean)");
	/* a base of 0: any share of ours is infinitely many times it */
	f[0] = (struct an_suite_result)OK(0, 0);
	f[1] = (struct an_suite_result)OK(5, 1);
	sh = shape(t, f, 1, 1, NULL);
	cr_expect(isinf(sh.ratio) && sh.ratio > 0, "%g", sh.ratio);
	/* none of ours in the category: under any floor, even a base of 0 */
	f[1] = (struct an_suite_result)OK(0, 0);
	sh = shape(t, f, 1, 0, NULL);
	cr_expect(isnan(sh.ratio), "0 ÷ 0 is no ratio");
	/* no figure for the base */
	f[0].state = AN_CELL_FAILED;
	shape(t, f, 1, -1, "n/a: no reference figure");
}

static void claim(const struct an_suite_result *r, size_t k, int holds, const char *text)
{
	struct an_suite_verdict v;

	cr_assert_eq(an_suite_claim(&suite, r, k, &v), 0, "claim %zu", k);
	cr_expect_eq(v.holds, holds, "claim %zu: %s", k, v.text);
	if (text)
		cr_expect_str_eq(v.text, text, "claim %zu", k);
}

/* The findings across columns and tables: who is ahead, and a gap that shrinks. */
Test(suite, findings_across_columns_and_tables_at_their_edges)
{
	struct an_suite_result r[NRES];
	struct an_suite_verdict v;

	results(r);
	/* ahead in ns/op is the lower figure, in ops/s the higher */
	claim(r, 1, 1, "holds");
	claim(r, 2, 0, "does not hold: the other winner");
	r[1].value = 1100;
	r[1].error = 11;
	claim(r, 2, 1, "holds");
	/* behind, and behind by the means with the two intervals overlapping */
	r[11].value = 290;
	r[11].error = 2.9;
	claim(r, 1, 0, "does not hold: the other winner");
	r[11].value = 282;
	claim(r, 1, -1, "cannot tell: the two intervals overlap");
	r[11].value = 100;
	r[11].error = 1;
	/* the gap, slow ÷ fast - 1: 1.8 at tf=2; at tf=200 without intervals */
	for (size_t i = 11; i < 19; i++)
		r[i].error = NAN;
	claim(r, 0, 1, "holds");
	cr_assert_eq(an_suite_claim(&suite, r, 0, &v), 0);
	cr_expect_float_eq(v.ours[0], 2.8, 1e-12);
	cr_expect_float_eq(v.ours[1], 1140.0 / 1100, 1e-12);
	cr_expect_float_eq(v.study[0], 2, 1e-12);
	cr_expect_float_eq(v.study[1], 1.02, 1e-12);
	r[17].value = 2.8 * 1100; /* the same gap: it does not shrink */
	claim(r, 0, 0, "does not hold: the gap does not shrink");
	r[17].value = 2.79 * 1100;
	claim(r, 0, 1, "holds");
	/* the distance from 1, either way: 0.3 is a gap of 0.7 */
	r[17].value = 0.3 * 1100;
	claim(r, 0, 1, "holds");
	r[17].value = 1.19 * 1100;
	claim(r, 0, 1, "holds");
	/* each ratio's interval is its two relative half-widths added: 1% each side */
	for (size_t i = 11; i < 19; i++)
		r[i].error = r[i].value / 100;
	r[17].value = 2.75 * 1100;
	r[17].error = r[17].value / 100;
	claim(r, 0, -1, "cannot tell: the two gaps' intervals overlap");
	r[17].value = 2.6 * 1100;
	r[17].error = r[17].value / 100;
	claim(r, 0, 1, "holds");
	/* a noisy cell says so */
	r[17].error = r[17].value;
	claim(r, 0, -1, NULL);
	cr_assert_eq(an_suite_claim(&suite, r, 0, &v), 0);
	cr_expect_not_null(strstr(v.text, "(noisy: an interval wider than half its mean)"), "%s",
			   v.text);
	/* a cell without a figure, and one left out: not judged, and not shown */
	claim(r, 3, -1, "n/a: no figure for failed, a");
	cr_expect_eq(an_suite_claim(&suite, r, 4, &v), -ENOENT);
	{
		static const struct an_suite_claim nowhere[] = {
			{ .text = "no such row", .kind = AN_CLAIM_AHEAD,
			  .a = AT(1, "tf=2", "nope"), .b = AT(1, "tf=2", "fast") },
			{ .text = "no such table", .kind = AN_CLAIM_AHEAD,
			  .a = AT(3, "tf=2", "fast"), .b = AT(1, "tf=2", "fast") },
			{ .text = "no such column", .kind = AN_CLAIM_SHRINKS,
			  .a = AT(1, "tf=2", "slow"), .b = AT(1, "tf=2", "fast"),
			  .to_column = "tf=5" },
		};
		struct an_suite s = suite;

		s.claims = nowhere;
		s.nclaims = 3;
		for (size_t k = 0; k < 3; k++)
			cr_expect_eq(an_suite_claim(&s, r, k, &v), -ENOENT, "%s", nowhere[k].text);
	}
}

/* A run's result.json with an on-CPU probe of these categories (a JSON object's members);
 * attached or not, after another probe. */
static struct an_result *with_oncpu(const char *cats, bool attached)
{
	char text[2048], err[256] = "";
	struct an_result *r;

	snprintf(text, sizeof(text),
		 "{\"schema\": \"schedlab-result/1\", \"probes\": [{\"name\": \"sched\", "
		 "\"attached\": true, \"categories\": {\"stack-capture\": 50}}, {\"name\": "
		 "\"oncpu\", \"attached\": %s, \"samples\": 900, \"categories\": {%s}}]}",
		 attached ? "true" : "false", cats);
	r = an_result_parse(text, strlen(text), "result.json", err, sizeof(err));
	cr_assert_not_null(r, "%s\n%s", err, text);
	return r;
}

Test(suite, a_category_share_is_read_from_the_oncpu_probe)
{
	struct an_suite_result out = { 0 };
	struct an_result *r;
	double p = 0.25;

	r = with_oncpu("\"work\": 600, \"stack-capture\": 225, \"allocation\": 75, "
		       "\"kernel\": 0", true);
	cr_assert_eq(an_suite_category_share(r, "stack-capture", &out), 0);
	cr_expect_float_eq(out.value, 25, 1e-9);
	cr_expect_float_eq(out.error, 100 * AN_Z_999 * sqrt(p * (1 - p) / 900), 1e-9);
	cr_expect_float_eq(out.n, 900, 1e-9);
	/* a category with no sample: 0, and an interval of 0 by the normal approximation */
	cr_assert_eq(an_suite_category_share(r, "kernel", &out), 0);
	cr_expect_float_eq(out.value, 0, 1e-12);
	cr_expect_float_eq(out.error, 0, 1e-12);
	an_result_free(r);
	/* an on-CPU probe that did not attach, or that took no sample */
	r = with_oncpu("\"stack-capture\": 1", false);
	cr_expect_eq(an_suite_category_share(r, "stack-capture", &out), -ENOENT);
	an_result_free(r);
	r = with_oncpu("\"work\": 0, \"stack-capture\": 0", true);
	cr_expect_eq(an_suite_category_share(r, "stack-capture", &out), -ENODATA);
	an_result_free(r);
}

static const struct an_suite_cell *find_cell(const struct an_suite *s, const char *column,
					     const char *preset)
{
	for (size_t t = 0; t < s->ntables; t++)
		for (size_t i = 0; i < s->tables[t].ncells; i++)
			if (!strcmp(s->tables[t].cells[i].column, column) &&
			    !strcmp(s->tables[t].cells[i].preset, preset))
				return &s->tables[t].cells[i];
	return NULL;
}

/* A row judged by its place names a row of its column, and the study's figures put
 * it between that row and the reference. */
static void between_in_the_study(const struct an_suite_table *tb, size_t i)
{
	const struct an_suite_cell *c = &tb->cells[i], *b = NULL, *ref = NULL;

	for (size_t k = 0; k < tb->ncells; k++) {
		if (strcmp(tb->cells[k].column, c->column))
			continue;
		if (!strcmp(tb->cells[k].row, c->between))
			b = &tb->cells[k];
		if (tb->cells[k].reference)
			ref = &tb->cells[k];
	}
	cr_assert_not_null(b, "%s: %s is between %s, no row of its column", tb->title, c->row,
			   c->between);
	cr_assert_not_null(ref);
	cr_expect(isfinite(b->published) && isfinite(ref->published),
		  "%s: %s is placed between two rows the study gives figures for", tb->title,
		  c->row);
	if (isnan(c->published)) /* a row of ours alone: its place is the runtime's claim */
		return;
	cr_expect(c->published > fmin(b->published, ref->published) &&
			  c->published < fmax(b->published, ref->published),
		  "%s: the study's %g is not between %s's %g and %s's %g", tb->title,
		  c->published, b->row, b->published, ref->row, ref->published);
}

/* A row against another names a row of its column, which is not itself against one. */
static void against_in_its_column(const struct an_suite_table *tb, size_t i)
{
	const struct an_suite_cell *c = &tb->cells[i];

	for (size_t k = 0; k < tb->ncells; k++)
		if (k != i && !strcmp(tb->cells[k].column, c->column) &&
		    !strcmp(tb->cells[k].row, c->against)) {
			cr_expect(!c->reference && !c->between, "%s: %s", tb->title, c->row);
			return;
		}
	cr_expect_fail("%s: %s is against %s, no row of its column", tb->title, c->row,
		       c->against);
}

/* A row nearer its base than another names a row of its column that the study, like
 * the base, gives a figure for. */
static void nearer_than_a_row_of_the_study(const struct an_suite_table *tb, size_t i)
{
	const struct an_suite_cell *c = &tb->cells[i];
	size_t k = 0;

	while (k < tb->ncells &&
	       (strcmp(tb->cells[k].column, c->column) || strcmp(tb->cells[k].row, c->nearer)))
		k++;
	cr_assert_lt(k, tb->ncells, "%s: %s is nearer than %s, no row of its column",
		     tb->title, c->row, c->nearer);
	cr_expect(isfinite(tb->cells[k].published) && !c->between && !c->against,
		  "%s: %s", tb->title, c->row);
}

/* A category's share names a category, and its table runs the on-CPU probe whatever the
 * user's options. */
static void share_of_a_category(const struct an_suite_table *tb, size_t i)
{
	const char *name = tb->cells[i].metric_name;
	unsigned c = 0;

	while (c < AN_CAT_COUNT && strcmp(an_category_name(c), name))
		c++;
	cr_expect_lt(c, AN_CAT_COUNT, "%s: no category %s", tb->title, name);
	cr_expect_not_null(strstr(tb->run_opts_after, "--probes oncpu"), "%s", tb->title);
}

Test(suite, every_column_has_one_reference_and_the_studies_figures_are_in_place)
{
	const struct an_suite *const *all = an_suites();
	const struct an_suite *s;
	size_t n = 0;

	for (; all[n]; n++) {
		for (size_t t = 0; t < all[n]->ntables; t++) {
			const struct an_suite_table *tb = &all[n]->tables[t];

			cr_expect_gt(tb->band, 1, "%s", tb->title);
			cr_expect(tb->band_why && tb->band_why[0], "%s: the band says why",
				  tb->title);
			for (size_t i = 0; i < tb->ncells; i++) {
				size_t refs = 0;

				for (size_t k = 0; k < tb->ncells; k++)
					refs += tb->cells[k].reference &&
						!strcmp(tb->cells[k].column, tb->cells[i].column);
				cr_expect_eq(refs, 1, "%s, column %s", tb->title,
					     tb->cells[i].column);
				if (tb->cells[i].between)
					between_in_the_study(tb, i);
				if (tb->cells[i].against)
					against_in_its_column(tb, i);
				if (tb->cells[i].nearer)
					nearer_than_a_row_of_the_study(tb, i);
				if (tb->cells[i].metric == AN_SUITE_CATEGORY_SHARE)
					share_of_a_category(tb, i);
			}
		}
		cr_expect_eq(an_suite_find(all[n]->name), all[n]);
	}
	cr_expect_eq(n, 6, "five-runtimes, kyo-blocking, micro, memory, sequentially, errors");
	cr_expect_null(an_suite_find("all"), "all is the command's, not a suite");

	s = an_suite_find("five-runtimes");
	cr_assert_not_null(s);
	cr_expect_float_eq(find_cell(s, "blocking TCP", "kyo")->published, 4.95, 1e-9);
	cr_expect_float_eq(find_cell(s, "8 workers", "ce")->published, 3060, 1e-9);
	cr_expect(isnan(find_cell(s, "spawn/join", "go")->published), "go: an extra row");
	s = an_suite_find("kyo-blocking");
	cr_expect_float_eq(find_cell(s, "blocking TCP", "kyo-flush")->published_err, 25.62, 1e-9);
	cr_expect_str_eq(find_cell(s, "blocking TCP", "kyo-flush")->between, "Kyo default");
	s = an_suite_find("micro");
	cr_expect_float_eq(find_cell(s, "uncontended permit acquire/release", "kyo")->study_ratio,
			   5.02, 1e-9);
	s = an_suite_find("sequentially");
	cr_expect(s->refuse_missing, "refuses without its workload");
	cr_expect_str_eq(s->tables[0].cells[1].params, "impl=actors");
	s = an_suite_find("errors");
	cr_expect_str_eq(s->tables[0].cells[0].params, "style=combinator exec=pool tf=2 n=1000");
	cr_expect_float_eq(s->tables[1].cells[1].published, 4791, 1e-9);
}

/* Every finding's cells are in its suite, and where the study gives their figures, the
 * study found what the finding says. */
Test(suite, every_finding_names_cells_of_its_suite_and_agrees_with_the_study)
{
	const struct an_suite *const *all = an_suites();
	size_t nclaims = 0;

	for (size_t n = 0; all[n]; n++) {
		const struct an_suite *s = all[n];
		size_t ncells = an_suite_ncells(s);
		struct an_suite_result *r = calloc(ncells, sizeof(*r));

		cr_assert_not_null(r);
		for (size_t i = 0; i < ncells; i++)
			r[i] = (struct an_suite_result){ .state = AN_CELL_OK, .value = 1 };
		for (size_t k = 0; k < s->nclaims; k++, nclaims++) {
			const struct an_suite_claim *cl = &s->claims[k];
			struct an_suite_verdict v;

			cr_assert_eq(an_suite_claim(s, r, k, &v), 0, "%s: %s", s->name, cl->text);
			if (cl->kind == AN_CLAIM_AHEAD && isfinite(v.study[0]))
				cr_expect(an_unit_higher_is_better(s->tables[cl->a.table].unit) ?
						  v.study[0] > 1 : v.study[0] < 1,
					  "%s: the study's %g", cl->text, v.study[0]);
			if (cl->kind == AN_CLAIM_SHRINKS)
				cr_expect_lt(fabs(v.study[1] - 1), fabs(v.study[0] - 1),
					     "%s: the study's %g and %g", cl->text, v.study[0],
					     v.study[1]);
		}
		free(r);
	}
	cr_expect_eq(nclaims, 10, "errors: two gaps that shrink, eight loops ahead");
}

/* What study 2 and study 3 find, judged where the tables say: the chain of study 2, the
 * exceptions without a trace by their distance from the hand-written either, stack
 * capture's share by a floor. */
Test(suite, the_studies_orders_and_shares_are_judged_where_they_are_found)
{
	const struct an_suite *s = an_suite_find("sequentially");
	const struct an_suite_table *tb;

	cr_assert_not_null(s);
	tb = &s->tables[0];
	cr_expect(tb->cells[0].reference && !strcmp(tb->cells[0].params, "impl=buckets"));
	cr_expect_str_eq(tb->cells[1].between, tb->cells[2].row, "the actors between");
	cr_expect_str_eq(tb->cells[2].against, tb->cells[1].row, "converted against the actors");
	cr_expect_str_eq(tb->cells[2].params, "impl=converted");

	s = an_suite_find("errors");
	cr_assert_not_null(s);
	cr_assert_eq(s->ntables, 4);
	for (size_t t = 0; t < 2; t++) {
		tb = &s->tables[t];
		for (size_t i = 0; i < tb->ncells; i++)
			if (strstr(tb->cells[i].params, "style=raise-notrace"))
				cr_expect_str_eq(tb->cells[i].nearer, "exceptions", "%s, %s",
						 tb->title, tb->cells[i].column);
	}
	tb = &s->tables[3];
	cr_expect_str_eq(tb->run_opts_after, "--probes oncpu");
	for (size_t i = 0; i < tb->ncells; i++) {
		const struct an_suite_cell *c = &tb->cells[i];

		cr_expect_eq(c->metric, AN_SUITE_CATEGORY_SHARE);
		if (strstr(c->params, "style=raise-notrace"))
			cr_expect(c->reference, "%s: the base", c->column);
		else
			cr_expect(strstr(c->params, "style=raise ") && c->at_least == 3,
				  "%s: %s at least 3×", c->column, c->params);
	}
	cr_expect_float_eq(find_cell(s, "exec=loop, tf=2", "ce")->published, 25, 1e-9);
}
