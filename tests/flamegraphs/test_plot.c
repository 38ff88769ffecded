/*
 * The log-log plot (flamegraphs/plot.c) that `schedlab sweep` draws: a y that counts
 * time or bytes is ticked and its tooltips written in the unit its size calls for ("10 s",
 * not "1e+10"; "17.31 ms ± 53.6 ms", not "1.73066e+07 ± 5.36e+07"), a plain y as
 * before, and a point a log axis cannot show is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraphs/flamegraph.h"

/* The plot of one series of n points, y in yunit, as a string to be freed. */
static char *plot(const double *x, const double *y, const double *err, size_t n,
		  const char *yunit, int *ret)
{
	struct fg_plot_series s = { .label = "naive", .note = "k = 2.00 ± 0.01, quadratic",
				    .x = x, .y = y, .err = err, .n = n, .k = NAN, .a = NAN };
	struct fg_plot p = { .title = "bind-chain", .xlabel = "depth", .ylabel = "time per op",
			     .yunit = yunit, .series = &s, .nseries = 1 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	cr_assert_not_null(out);
	*ret = fg_plot_write(&p, out);
	cr_assert_eq(fclose(out), 0);
	return buf;
}

Test(plot, a_time_axis_is_ticked_in_its_units)
{
	static const double x[] = { 1000, 2000, 5000, 10000 };
	static const double y[] = { 1.73066e7, 7e7, 4.4e8, 1.7e9 };
	static const double err[] = { 5.36e7, 1e6, 2e7, 1e8 };
	int ret;
	char *svg = plot(x, y, err, 4, "ns", &ret);

	cr_assert_eq(ret, 0);
	cr_expect_null(strstr(svg, "e+"), "a number in exponent form: %s", svg);
	cr_expect_not_null(strstr(svg, ">100 ms</text>"), "%s", svg);
	cr_expect_not_null(strstr(svg, ">1 s</text>"), "%s", svg);
	/* a point's value and error in the value's unit */
	cr_expect_not_null(strstr(svg, "<title>x 1000, y 17.31 ms ± 53.6 ms</title>"), "%s", svg);
	cr_expect_not_null(strstr(svg, "<title>x 10000, y 1.7 s ± 0.1 s</title>"), "%s", svg);
	free(svg);
}

Test(plot, a_bytes_axis_is_ticked_in_its_units)
{
	static const double x[] = { 1000, 10000 };
	static const double y[] = { 1500, 1.6e8 };
	int ret;
	char *svg = plot(x, y, NULL, 2, "B", &ret);

	cr_assert_eq(ret, 0);
	cr_expect_null(strstr(svg, "e+"), "%s", svg);
	cr_expect_not_null(strstr(svg, ">10 kB</text>"), "%s", svg);
	cr_expect_not_null(strstr(svg, ">100 MB</text>"), "%s", svg);
	cr_expect_not_null(strstr(svg, "<title>x 1000, y 1.5 kB</title>"), "%s", svg);
	free(svg);
}

Test(plot, a_plain_axis_keeps_its_numbers)
{
	static const double x[] = { 1, 10 };
	static const double y[] = { 2, 20 };
	int ret;
	char *svg = plot(x, y, NULL, 2, NULL, &ret);

	cr_assert_eq(ret, 0);
	cr_expect_not_null(strstr(svg, ">10</text>"), "%s", svg);
	cr_expect_not_null(strstr(svg, "<title>x 10, y 20</title>"), "%s", svg);
	free(svg);
}

Test(plot, a_point_a_log_axis_cannot_show_is_refused)
{
	static const double x[] = { 1, 10 };
	static const double y[] = { 0, 20 };
	int ret;
	char *svg = plot(x, y, NULL, 2, "ns", &ret);

	cr_expect_eq(ret, -EINVAL);
	free(svg);
}

Test(plot, an_error_larger_than_its_value_is_written_whole)
{
	static const double x[] = { 1000, 3000 };
	static const double y[] = { 122300, 275700 };
	static const double err[] = { 359000, 1744000 };
	int ret;
	char *svg = plot(x, y, err, 2, "ns", &ret);

	cr_assert_eq(ret, 0);
	cr_expect_null(strstr(svg, "e+"), "%s", svg);
	cr_expect_not_null(strstr(svg, "<title>x 3000, y 275.7 µs ± 1744 µs</title>"), "%s", svg);
	free(svg);
}
