/*
 * Differential flame graphs (fg_options.baseline): the profile drawn keeps its widths,
 * each frame is red where its share of the samples grew against the baseline and blue
 * where it shrank, shares taken of each profile's own total, callees included; the
 * tooltip gives both shares and the difference, and the scale is flamegraph.pl's.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "flamegraphs/flamegraph.h"

/* Stacks as "stack count" lines, one per string, NULL-terminated. */
static struct an_folded *folded(const char *const *lines)
{
	struct an_folded *f = an_folded_new();

	cr_assert_not_null(f);
	for (size_t i = 0; lines[i]; i++) {
		char stack[256];
		unsigned long long count;

		cr_assert_eq(sscanf(lines[i], "%255s %llu", stack, &count), 2);
		cr_assert_eq(an_folded_add_stack(f, stack, count), 0);
	}
	return f;
}

static char *render_diff(const struct an_folded *b, const struct an_folded *a)
{
	struct fg_options o;
	char *buf = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&buf, &n);

	cr_assert_not_null(fp);
	fg_options_default(&o);
	o.baseline = a;
	cr_assert_eq(fg_svg_write(b, &o, fp), 0);
	cr_assert_eq(fclose(fp), 0);
	return buf;
}

struct shade {
	unsigned r, g, b;
	char title[256];
};

/* The fill and title of the frame whose title starts with "NAME (". */
static struct shade frame(const char *svg, const char *name)
{
	char key[128];
	const char *p, *fill, *end;
	struct shade s = { 0 };

	snprintf(key, sizeof(key), "<title>%s (", name);
	p = strstr(svg, key);
	cr_assert_not_null(p, "no frame %s", name);
	p += strlen("<title>");
	end = strstr(p, "</title>");
	cr_assert_not_null(end);
	snprintf(s.title, sizeof(s.title), "%.*s", (int)(end - p), p);
	fill = strstr(end, "fill=\"");
	cr_assert_not_null(fill);
	cr_assert_eq(sscanf(fill, "fill=\"rgb(%u,%u,%u)\"", &s.r, &s.g, &s.b), 3, "%.40s", fill);
	return s;
}

/* (a function, as Criterion would read the '%' in a literal as a format) */
static void expect_title(struct shade s, const char *want)
{
	cr_expect_str_eq(s.title, want);
}

static bool is_red(struct shade s)
{
	return s.r == 255 && s.g == s.b && s.g < 255;
}

static bool is_blue(struct shade s)
{
	return s.b == 255 && s.r == s.g && s.r < 255;
}

static bool is_white(struct shade s)
{
	return s.r == 255 && s.g == 255 && s.b == 255;
}

Test(diff, a_frame_that_grew_is_red_and_one_that_shrank_blue)
{
	struct an_folded *a = folded((const char *[]){ "main;grow 10", "main;shrink 90", NULL });
	struct an_folded *b = folded((const char *[]){ "main;grow 50", "main;shrink 50", NULL });
	char *svg = render_diff(b, a);
	struct shade grow = frame(svg, "grow"), shrink = frame(svg, "shrink");

	cr_expect(is_red(grow), "grow: rgb(%u,%u,%u)", grow.r, grow.g, grow.b);
	cr_expect(is_blue(shrink), "shrink: rgb(%u,%u,%u)", shrink.r, shrink.g, shrink.b);
	/* the largest change takes the deepest colour, as in flamegraph.pl */
	cr_expect_eq(grow.g, 0);
	cr_expect_eq(shrink.r, 0);
	cr_expect(is_white(frame(svg, "main")), "main holds all samples in both");
	cr_expect(is_white(frame(svg, "all")));
	free(svg);
	an_folded_free(a);
	an_folded_free(b);
}

Test(diff, shares_are_of_each_profiles_own_total)
{
	/* x: 50 of A's 100 samples (50%), 60 of B's 200 (30%): more samples, a smaller
	 * share, so it shrank; y: 50% -> 70%, grew */
	struct an_folded *a = folded((const char *[]){ "main;x 50", "main;y 50", NULL });
	struct an_folded *b = folded((const char *[]){ "main;x 60", "main;y 140", NULL });
	char *svg = render_diff(b, a);
	struct shade x = frame(svg, "x"), y = frame(svg, "y");

	cr_expect(is_blue(x), "x: rgb(%u,%u,%u)", x.r, x.g, x.b);
	cr_expect(is_red(y), "y: rgb(%u,%u,%u)", y.r, y.g, y.b);
	expect_title(x, "x (60 samples; A 50.00%, -20.00 points, B 30.00%)");
	expect_title(y, "y (140 samples; A 50.00%, +20.00 points, B 70.00%)");
	free(svg);
	an_folded_free(a);
	an_folded_free(b);
}

Test(diff, an_equal_share_is_white_whatever_the_totals)
{
	/* a: 1 of 3 and 2 of 6 samples, b: 2 of 3 and 4 of 6 */
	struct an_folded *a = folded((const char *[]){ "m;a 1", "m;b 2", NULL });
	struct an_folded *b = folded((const char *[]){ "m;a 2", "m;b 4", NULL });
	char *svg = render_diff(b, a);

	cr_expect(is_white(frame(svg, "a")));
	cr_expect(is_white(frame(svg, "b")));
	free(svg);
	an_folded_free(a);
	an_folded_free(b);
}

Test(diff, a_frame_counts_its_callees_and_its_path)
{
	/* leaf grew under f; f's share grew with it (its callees count). g;leaf is a
	 * different frame from f;leaf: new in B, so A's share is 0 */
	struct an_folded *a = folded((const char *[]){ "main;f;leaf 10", "main;other 90", NULL });
	struct an_folded *b = folded((const char *[]){ "main;f;leaf 40", "main;g;leaf 10",
						       "main;other 50", NULL });
	char *svg = render_diff(b, a);
	struct shade f = frame(svg, "f"), g = frame(svg, "g");

	cr_expect(is_red(f), "f: rgb(%u,%u,%u)", f.r, f.g, f.b);
	expect_title(f, "f (40 samples; A 10.00%, +30.00 points, B 40.00%)");
	cr_expect(is_red(g));
	expect_title(g, "g (10 samples; A 0.00%, +10.00 points, B 10.00%)");
	/* a smaller change is paler: flamegraph.pl's 210 * (1 - |d| / max), the largest
	 * change being other's -40 points: 210 * (1 - 10/40) = 157.5 */
	cr_expect_eq(g.g, 157, "g: rgb(%u,%u,%u)", g.r, g.g, g.b);
	cr_expect(is_blue(frame(svg, "other")));
	free(svg);
	an_folded_free(a);
	an_folded_free(b);
}

Test(diff, the_user_kernel_separator_stays_grey)
{
	struct an_folded *a = folded((const char *[]){ "main;-;sys_k 10", "main;u 90", NULL });
	struct an_folded *b = folded((const char *[]){ "main;-;sys_k 50", "main;u 50", NULL });
	char *svg = render_diff(b, a);
	struct shade sep = frame(svg, "-");

	cr_expect(!is_red(sep) && !is_blue(sep) && !is_white(sep), "-: rgb(%u,%u,%u)", sep.r,
		  sep.g, sep.b);
	cr_expect(is_red(frame(svg, "sys_k")));
	free(svg);
	an_folded_free(a);
	an_folded_free(b);
}

Test(diff, without_a_baseline_nothing_changes)
{
	struct an_folded *b = folded((const char *[]){ "main;x 60", "main;y 140", NULL });
	struct fg_options o;
	char *plain = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&plain, &n);

	fg_options_default(&o);
	cr_assert_null(o.baseline);
	cr_assert_eq(fg_svg_write(b, &o, fp), 0);
	fclose(fp);
	cr_expect_not_null(strstr(plain, "<title>x (60 samples, 30.00%)</title>"));
	cr_expect_null(strstr(plain, "points"));
	free(plain);
	an_folded_free(b);
}
