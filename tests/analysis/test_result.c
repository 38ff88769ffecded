/*
 * Tests of analysis/result.c: a result.json read back by path, what a document lacks
 * read as NAN, NULL and 0, and the one-line errors for a folder without result.json,
 * text that is not JSON and JSON that is not a schedlab result.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"

static const char doc[] =
	"{\"schema\": \"schedlab-result/1\", \"workload\": \"spawn-join\", \"score\": 1692.5,"
	" \"n\": 9, \"partial\": false, \"failure\": null,"
	" \"runtime\": {\"parks\": 12, \"stranded_ns\": 869450096},"
	" \"per_worker\": {\"columns\": [\"tasks_run\", \"parks\"], \"rows\": [[132, 1], [66, 3]]},"
	" \"probes\": [{\"name\": \"oncpu\", \"samples\": 22}]}";

static struct an_result *parse(const char *text)
{
	char err[256] = "";
	struct an_result *r = an_result_parse(text, strlen(text), "test.json", err, sizeof(err));

	cr_assert(r, "parse failed: %s", err);
	return r;
}

Test(result, values_are_reached_by_path)
{
	struct an_result *r = parse(doc);

	cr_expect_str_eq(an_result_str(r, "workload"), "spawn-join");
	cr_expect_eq(an_result_num(r, "score"), 1692.5);
	cr_expect_eq(an_result_num(r, "runtime.stranded_ns"), 869450096.0);
	cr_expect_eq(an_result_num(r, "probes.0.samples"), 22.0);
	cr_expect_str_eq(an_result_str(r, "probes.0.name"), "oncpu");
	cr_expect_eq(an_result_num(r, "partial"), 0.0);
	cr_expect_eq(an_result_len(r, "probes"), 1);
	cr_expect_eq(an_result_len(r, "runtime"), 2);
	cr_expect_str_eq(an_result_key(r, "runtime", 1), "stranded_ns");
	cr_expect_null(an_result_key(r, "runtime", 2));
	an_result_free(r);
}

Test(result, what_a_document_lacks_reads_as_nothing)
{
	struct an_result *r = parse(doc);

	cr_expect(isnan(an_result_num(r, "runtime.missing")));
	cr_expect(isnan(an_result_num(r, "workload")), "a string is no number");
	cr_expect(isnan(an_result_num(r, "probes.1.samples")), "past the array's end");
	cr_expect(isnan(an_result_num(r, "probes.x.samples")), "an index must be a number");
	cr_expect(isnan(an_result_num(r, "score.deeper")));
	cr_expect(isnan(an_result_num(r, "runtime..parks")));
	cr_expect_null(an_result_str(r, "failure"), "null is no string");
	cr_expect_eq(an_result_len(r, "score"), 0);
	cr_expect(an_result_has(r, "failure"));
	cr_expect_not(an_result_has(r, "nothing"));
	an_result_free(r);
}

Test(result, table_cells_by_column_name)
{
	struct an_result *r = parse(doc);

	cr_expect_eq(an_result_column(r, "per_worker", "parks"), 1);
	cr_expect_eq(an_result_column(r, "per_worker", "stolen"), -1);
	cr_expect_eq(an_result_cell(r, "per_worker", 1, "tasks_run"), 66.0);
	cr_expect_eq(an_result_cell(r, "per_worker", 0, "parks"), 1.0);
	cr_expect(isnan(an_result_cell(r, "per_worker", 2, "parks")));
	cr_expect(isnan(an_result_cell(r, "per_iteration", 0, "parks")));
	an_result_free(r);
}

Test(result, text_that_is_not_a_result_is_refused_in_one_line)
{
	static const char *const bad[] = {
		"", "{", "{\"schema\": \"schedlab-result/1\",}", "[1, 2]",
		"{\"score\": 3}", "{\"schema\": \"other/1\"}", "nul",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		errno = 0;
		cr_expect_null(an_result_parse(bad[i], strlen(bad[i]), "x.json", err, sizeof(err)),
			       "accepted '%s'", bad[i]);
		cr_expect_eq(errno, EINVAL, "'%s': errno %d", bad[i], errno);
		cr_expect(!strncmp(err, "x.json: ", 8), "'%s': %s", bad[i], err);
		cr_expect_null(strchr(err, '\n'), "'%s': more than one line: %s", bad[i], err);
	}
}

Test(result, a_run_folder_is_read_through_its_result_json)
{
	char dir[] = "/tmp/schedlab-result-XXXXXX", path[128], err[512];
	struct an_result *r;
	FILE *f;

	cr_assert(mkdtemp(dir));
	err[0] = '\0';
	cr_expect_null(an_result_load(dir, err, sizeof(err)));
	cr_expect(strstr(err, "no result.json in this folder"), "%s", err);
	snprintf(path, sizeof(path), "%s/missing", dir);
	cr_expect_null(an_result_load(path, err, sizeof(err)));
	cr_expect_eq(errno, ENOENT);
	cr_expect(strstr(err, "name a run folder"), "%s", err);

	snprintf(path, sizeof(path), "%s/result.json", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(doc, f);
	fclose(f);
	r = an_result_load(dir, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_expect_str_eq(an_result_dir(r), dir);
	cr_expect_str_eq(an_result_source(r), path);
	an_result_free(r);
	r = an_result_load(path, err, sizeof(err));
	cr_assert(r, "%s", err);
	cr_expect_str_eq(an_result_dir(r), dir);
	an_result_free(r);
	unlink(path);
	rmdir(dir);
}
