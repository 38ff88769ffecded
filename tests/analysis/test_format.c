/*
 * Numbers, units and JSON values as the reports write them (analysis/format.c).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

static char *json_of(void (*put)(FILE *, const void *), const void *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	put(f, v);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

static void put_str(FILE *f, const void *v)
{
	an_json_str(f, v);
}

static void put_num(FILE *f, const void *v)
{
	an_json_num(f, *(const double *)v);
}

Test(format, numbers_group_thousands_and_keep_their_sign)
{
	char buf[64];

	an_format_number(1234567.891, 2, buf, sizeof(buf));
	cr_expect_str_eq(buf, "1,234,567.89");
	an_format_number(-1234.5, 0, buf, sizeof(buf));
	cr_expect_str_eq(buf, "-1,234", "no comma after the sign: %s", buf);
	an_format_number(999, 0, buf, sizeof(buf));
	cr_expect_str_eq(buf, "999");
	an_format_number(0.004, 3, buf, sizeof(buf));
	cr_expect_str_eq(buf, "0.004");
	an_format_number(NAN, 2, buf, sizeof(buf));
	cr_expect_str_eq(buf, "NaN");
	an_format_number(-INFINITY, 2, buf, sizeof(buf));
	cr_expect_str_eq(buf, "-inf");
	/* a short buffer is cut, never overrun, and stays a string */
	an_format_number(1234567.0, 0, buf, 6);
	cr_expect_eq(strlen(buf), 5, "%s", buf);
	cr_expect_str_eq(buf, "1,234");
}

Test(format, decimals_follow_the_scores_size_and_error)
{
	cr_expect_eq(an_score_decimals(3060, 92), 0);
	cr_expect_eq(an_score_decimals(-1500, 1), 0);
	cr_expect_eq(an_score_decimals(4.95, 0.03), 2);
	cr_expect_eq(an_score_decimals(4.95, 0.004), 3, "an error that would show as 0.00");
	cr_expect_eq(an_score_decimals(4.95, NAN), 2);
	cr_expect_eq(an_score_decimals(4.95, 0), 2);
}

Test(format, json_strings_are_escaped_and_null_is_null)
{
	char *s = json_of(put_str, "a\"b\\c\nd\te\x01");

	cr_expect_str_eq(s, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
	free(s);
	s = json_of(put_str, NULL);
	cr_expect_str_eq(s, "null");
	free(s);
}

Test(format, json_numbers_round_trip_and_non_finite_ones_are_null)
{
	double v = 0.1 + 0.2, nan = NAN, inf = INFINITY;
	char *s = json_of(put_num, &v);

	cr_expect_eq(strtod(s, NULL), v, "%s does not read back as the same double", s);
	free(s);
	s = json_of(put_num, &nan);
	cr_expect_str_eq(s, "null");
	free(s);
	s = json_of(put_num, &inf);
	cr_expect_str_eq(s, "null");
	free(s);
}

Test(format, units_say_which_way_is_better)
{
	cr_expect_eq(an_unit_higher_is_better("ops/s"), 1);
	cr_expect_eq(an_unit_higher_is_better("MiB/s"), 1);
	cr_expect_eq(an_unit_higher_is_better("ns/op"), 0);
	cr_expect_eq(an_unit_higher_is_better("us/op"), 0);
	cr_expect_eq(an_unit_higher_is_better("widgets"), -1);
	cr_expect_eq(an_unit_higher_is_better("/s"), -1);
	cr_expect_eq(an_unit_higher_is_better(NULL), -1);
}
