/*
 * Tests of analysis/result.c: a result.json read back by path, what a document lacks
 * read as NAN, NULL and 0, and the one-line errors for a folder without result.json,
 * text that is not JSON and JSON that is not a schedlab result; and what a run folder
 * says checked before it is used: every number finite, every control character escaped,
 * a run's names, samples and file names refused with the field named.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"

static const char doc[] =
	"{\"schema\": \"schedlab-result/1\", \"id\": \"20261207-101010-spawn-join-ce\","
	" \"preset\": \"ce\", \"unit\": \"ops/s\", \"samples\": [1700, 1685],"
	" \"workload\": \"spawn-join\", \"score\": 1692.5,"
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

/* A folder holding result.json of text (or a FIFO when text is NULL), loaded. */
static struct an_result *load_text(const char *text, char *err, size_t errlen)
{
	static char dir[64];
	char path[128];
	struct an_result *r;
	FILE *f;
	int e;

	snprintf(dir, sizeof(dir), "/tmp/schedlab-result-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/result.json", dir);
	if (text) {
		f = fopen(path, "w");
		cr_assert(f);
		fputs(text, f);
		fclose(f);
	} else {
		cr_assert_eq(mkfifo(path, 0600), 0);
	}
	err[0] = '\0';
	alarm(10); /* a blocking open would hang the test, not fail it */
	r = an_result_load(dir, err, errlen);
	e = errno;
	alarm(0);
	unlink(path);
	rmdir(dir);
	errno = e;
	return r;
}

/* doc with one member added at its end: of two members of one name, json-c keeps the
 * last, so it replaces doc's own. */
static const char *with(const char *member)
{
	static char text[2048];

	snprintf(text, sizeof(text), "%.*s, %s}", (int)(strlen(doc) - 1), doc, member);
	return text;
}

Test(result, a_run_document_names_the_field_that_is_wrong)
{
	static const struct {
		const char *member, *says;
	} bad[] = {
		{ "\"id\": \"x/../../escape_t\"", "\"id\" is not a run's name" },
		{ "\"id\": \".hidden\"", "\"id\" is not a run's name" },
		{ "\"id\": 7", "\"id\" is not a run's name" },
		{ "\"workload\": 3", "\"workload\" is not a name" },
		{ "\"unit\": \"\"", "\"unit\" is not a name" },
		{ "\"samples\": {}", "\"samples\" is not an array" },
		{ "\"samples\": [1, null]", "\"samples.1\" is not a number of at least 0" },
		{ "\"samples\": [\"fast\"]", "\"samples.0\" is not a number of at least 0" },
		{ "\"samples\": [1, -5]", "\"samples.1\" is not a number of at least 0" },
		{ "\"n\": 2.5", "\"n\" is not a whole number" },
		{ "\"score\": -1", "\"score\" is not a number of at least 0" },
		{ "\"partial\": \"yes\"", "\"partial\" is not true or false" },
		{ "\"failure\": 3", "\"failure\" is not a string" },
		{ "\"probes\": [{\"name\": \"oncpu\", \"folded\": \"../../secret\"}]",
		  "\"probes.0.folded\" is not the name of a file in the run's folder" },
		{ "\"probes\": [{\"name\": \"oncpu\", \"svg\": \"/etc/passwd\"}]",
		  "\"probes.0.svg\" is not the name of a file" },
		{ "\"probes\": [{\"name\": \"x\"}, "
		  "{\"name\": \"a\", \"files\": [\"ok\", \"a/b\"]}]",
		  "\"probes.1.files.1\" is not the name of a file" },
		{ "\"probes\": [{\"name\": \"r\", \"timeline\": {\"file\": \"..\"}}]",
		  "\"probes.0.timeline.file\" is not the name" },
		{ "\"probes\": [{\"folded\": \"oncpu.folded\"}]", "\"probes.0\" is not a probe" },
	};
	char err[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct an_result *r = load_text(with(bad[i].member), err, sizeof(err));

		cr_expect_null(r, "accepted %s", bad[i].member);
		an_result_free(r);
		cr_expect_eq(errno, EINVAL, "%s: errno %d", bad[i].member, errno);
		cr_expect_not_null(strstr(err, bad[i].says), "%s: %s", bad[i].member, err);
		cr_expect_null(strchr(err, '\n'), "more than one line: %s", err);
	}
	/* the whole document given, the same members accepted */
	{
		const char *m = "\"probes\": [{\"name\": \"oncpu\", \"folded\": \"oncpu.folded\", "
				"\"files\": [\"a.svg\"]}]";
		struct an_result *r = load_text(with(m), err, sizeof(err));

		cr_expect_not_null(r, "%s", err);
		an_result_free(r);
	}
}

Test(result, a_schema_alone_is_no_run)
{
	char err[512];

	cr_expect_null(load_text("{\"schema\": \"schedlab-result/1\"}", err, sizeof(err)));
	cr_expect_not_null(strstr(err, "\"id\" is missing"), "%s", err);
}

Test(result, numbers_that_are_not_finite_are_refused_wherever_they_are)
{
	static const char *const bad[] = {
		"{\"schema\": \"schedlab-result/1\", \"score\": NaN}",
		"{\"schema\": \"schedlab-result/1\", \"runtime\": {\"ops\": Infinity}}",
		"{\"schema\": \"schedlab-result/1\", \"t\": {\"rows\": [[1, -Infinity]]}}",
	};
	static const char *const where[] = { "\"score\"", "\"runtime.ops\"", "\"t.rows.0.1\"" };
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct an_result *r = an_result_parse(bad[i], strlen(bad[i]), "x.json", err,
						      sizeof(err));

		/* json-c may refuse the literal itself; what it takes must not get through */
		cr_expect_null(r, "accepted %s", bad[i]);
		an_result_free(r);
		if (strstr(err, "not valid JSON"))
			continue;
		cr_expect_not_null(strstr(err, where[i]), "%s", err);
		cr_expect_not_null(strstr(err, "not a finite number"), "%s", err);
	}
}

Test(result, control_characters_in_strings_are_escaped_as_text)
{
	static const char text[] =
		"{\"schema\": \"schedlab-result/1\","
		" \"workload\": \"\\u001b]0;PWNED\\u0007\\u001b[2J\","
		" \"preset\": \"ce\\u009b31m\", \"op\": \"caf\\u00e9 · ok\", \"a\": [\"x\\ny\"]}";
	char err[256];
	struct an_result *r = an_result_parse(text, strlen(text), "x.json", err, sizeof(err));

	cr_assert_not_null(r, "%s", err);
	cr_expect_str_eq(an_result_str(r, "workload"), "\\x1b]0;PWNED\\x07\\x1b[2J");
	cr_expect_str_eq(an_result_str(r, "preset"), "ce\\xc2\\x9b31m");
	cr_expect_str_eq(an_result_str(r, "op"), "caf\xc3\xa9 \xc2\xb7 ok", "UTF-8 text is kept");
	cr_expect_str_eq(an_result_str(r, "a.0"), "x\\x0ay");
	an_result_free(r);
}

Test(result, a_result_json_that_is_a_fifo_or_a_link_is_refused_at_once)
{
	char dir[] = "/tmp/schedlab-result-XXXXXX", path[128], real[128], err[512];

	cr_expect_null(load_text(NULL, err, sizeof(err)));
	cr_expect_eq(errno, AN_ENOTREG);
	cr_expect_not_null(strstr(err, "not a regular file"), "%s", err);

	cr_assert(mkdtemp(dir));
	snprintf(real, sizeof(real), "%s/elsewhere.json", dir);
	snprintf(path, sizeof(path), "%s/result.json", dir);
	{
		FILE *f = fopen(real, "w");

		cr_assert(f);
		fputs(doc, f);
		fclose(f);
	}
	cr_assert_eq(symlink("elsewhere.json", path), 0);
	cr_expect_null(an_result_load(dir, err, sizeof(err)), "a run folder's link was followed");
	cr_expect_eq(errno, ELOOP);
	unlink(path);
	unlink(real);
	rmdir(dir);
}
