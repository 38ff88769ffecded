/*
 * Tests of analysis/suite.c: the suite.md writer against a golden file (a synthetic
 * suite whose cells cover every outcome: the reference, a shape that holds, the other
 * winner, a ratio outside the band, a tie, no study figure, not built, failed, a row
 * left out, a reference left out), suite.json read back, the shape rules at their
 * edges, and the suites' own definitions (one reference per column, the studies'
 * figures where the tables put them).
 *
 * SCHEDLAB_GOLDEN=1 rewrites tests/analysis/data/suite.md from the writer (make golden).
 */
#include <criterion/criterion.h>
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

static const struct an_suite_table tables[] = {
	{ "Synthetic", "a made-up study", "ops/s", 2, "within 2× and the same winner", "",
	  cells, sizeof(cells) / sizeof(cells[0]) },
};

static const struct an_suite suite = { "synthetic", "every outcome of a cell", false, tables,
				       1 };

static void results(struct an_suite_result *r)
{
	static const double value[] = { 1000, 120, 1200, 300, 1050, 400, 0, 0, 0, 0, 500 };

	memset(r, 0, sizeof(*r) * 11);
	for (size_t i = 0; i < 11; i++) {
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
}

static char *render(bool json)
{
	struct an_suite_result r[11], *res[1] = { r };
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
	json_object_put(j);
	free(text);
}

Test(suite, shape_bands_ties_and_winners_at_their_edges)
{
	struct an_suite_result r[11];
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
	const struct an_suite_table t = { "Place", "a made-up study", "ops/s", 2, "why", "",
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
	cr_expect(c->published > fmin(b->published, ref->published) &&
			  c->published < fmax(b->published, ref->published),
		  "%s: the study's %g is not between %s's %g and %s's %g", tb->title,
		  c->published, b->row, b->published, ref->row, ref->published);
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
