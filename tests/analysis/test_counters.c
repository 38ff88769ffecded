/*
 * The counters in the reports: an event not counted is n/a with its reason in JSON,
 * Markdown and the summary, never a 0; counted ones are per op with their running share,
 * and a multiplexed one is said to be an estimate.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

static const double iters[2] = { 10.0, 12.0 };

static const struct an_counter events[] = {
	{ .name = "cycles", .note = "no hardware PMU (perf_event_open: No such file or directory)" },
	{ .name = "perf::task-clock", .counted = true, .note = "", .total = 2200, .per_op = 11,
	  .running_share = 1, .raw = 2200, .per_iteration = iters, .niterations = 2 },
	{ .name = "instructions",
	  .note = "no hardware PMU (perf_event_open: No such file or directory)" },
	{ .name = "skl::l2_rqsts:miss", .counted = true, .note = "", .total = 400, .per_op = 2,
	  .running_share = 0.5, .raw = 200, .per_iteration = iters, .niterations = 2,
	  .uncounted = 1 },
};

static const struct an_counters set = { events, 4 };

static char *render(void (*fn)(FILE *, const void *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	fn(f, &set);
	fclose(f);
	return buf;
}

Test(counters_report, json_has_na_with_the_reason_and_nulls)
{
	char *members = render(an_counters_json), *doc;
	json_object *j, *ev, *cyc, *tc;

	/* members, each after ", ", as a probe's part writes them */
	cr_assert(!strncmp(members, ", ", 2), "%s", members);
	cr_assert(asprintf(&doc, "{\"name\": \"counters\"%s}", members) > 0);
	j = json_tokener_parse(doc);
	cr_assert_not_null(j, "%s", doc);
	ev = json_object_object_get(j, "events");
	cr_assert_eq(json_object_array_length(ev), 4);
	cyc = json_object_array_get_idx(ev, 0);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(cyc, "na")),
			 "n/a: no hardware PMU (perf_event_open: No such file or directory)");
	cr_expect(json_object_is_type(json_object_object_get(cyc, "per_op"), json_type_null));
	cr_expect(json_object_is_type(json_object_object_get(cyc, "total"), json_type_null));
	tc = json_object_array_get_idx(ev, 1);
	cr_expect_float_eq(json_object_get_double(json_object_object_get(tc, "per_op")), 11.0,
			   1e-12);
	cr_expect_eq(json_object_array_length(json_object_object_get(tc, "per_iteration")), 2);
	cr_expect(json_object_is_type(json_object_object_get(tc, "na"), json_type_null));
	cr_expect_eq(json_object_get_int(json_object_object_get(json_object_array_get_idx(ev, 3),
							       "iterations_uncounted")),
		     1);
	json_object_put(j);
	free(doc);
	free(members);
}

Test(counters_report, markdown_says_na_and_marks_the_estimates)
{
	char *md = render(an_counters_md);

	cr_expect_not_null(strstr(md, "### Counters"), "%s", md);
	cr_expect_not_null(strstr(md, "| cycles | n/a: no hardware PMU"), "%s", md);
	cr_expect_not_null(strstr(md, "| perf::task-clock | 11 | 2,200 | 100.0% |"), "%s", md);
	cr_expect_not_null(strstr(md, "| skl::l2_rqsts:miss | 2 | 400 | 50.0% |"), "%s", md);
	cr_expect_not_null(strstr(md, "multiplexed"), "a scaled count is an estimate: %s", md);
	cr_expect_not_null(strstr(md, "skl::l2_rqsts:miss never got onto the PMU in 1 of 2"),
			   "an iteration without a count is said: %s", md);
	free(md);
}

Test(counters_report, summary_puts_one_reason_once)
{
	char buf[1024];

	an_counters_summary(&set, buf, sizeof(buf));
	cr_expect_not_null(strstr(buf, "2 of 4 events counted"), "%s", buf);
	cr_expect_not_null(strstr(buf, "not counted: cycles, instructions: no hardware PMU"), "%s",
			   buf);
	cr_expect_null(strstr(strstr(buf, "no hardware PMU") + 1, "no hardware PMU"), "%s", buf);
}
