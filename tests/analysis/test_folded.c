/*
 * Folded stacks: the sanitizing rules that keep names inside flamegraph.pl's grammar,
 * sorting and merging, totals and overflow, writing and reading back, and every way a
 * folded file can be malformed, each with its one-line message.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"

static char dir[] = "/tmp/schedlab-folded-XXXXXX";
static char path[sizeof(dir) + 32];

static void setup(void)
{
	strcpy(dir, "/tmp/schedlab-folded-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.folded", dir);
}

static void teardown(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[sizeof(dir) + 300];

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

TestSuite(folded, .init = setup, .fini = teardown);

static void write_text(const char *text, size_t len)
{
	FILE *fp = fopen(path, "w");

	cr_assert_not_null(fp);
	cr_assert_eq(fwrite(text, 1, len, fp), len);
	cr_assert_eq(fclose(fp), 0);
}

static struct an_folded *read_text(const char *text, char *err, size_t errlen)
{
	write_text(text, strlen(text));
	return an_folded_read(path, err, errlen);
}

static char *to_string(const struct an_folded *f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	cr_assert_not_null(fp);
	cr_assert_eq(an_folded_write(f, fp), 0);
	cr_assert_eq(fclose(fp), 0);
	return buf;
}

static void expect_text(const struct an_folded *f, const char *want)
{
	char *got = to_string(f);

	cr_expect_str_eq(got, want);
	free(got);
}

static size_t count_dir_entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* ---- sanitizing ----------------------------------------------------------------------- */

static void check_sanitize(const char *in, const char *want)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%s", in);
	an_frame_sanitize(buf);
	cr_expect_str_eq(buf, want, "sanitize(\"%s\")", in);
}

Test(folded, sanitize_semicolon_becomes_colon)
{
	check_sanitize("std::map;int", "std::map:int");
	check_sanitize(";;", "::");
}

Test(folded, sanitize_control_characters_become_spaces)
{
	check_sanitize("a\tb\nc\rd\x01" "e\x7f" "f", "a b c d e f");
}

Test(folded, sanitize_trailing_number_keeps_digits_loses_space)
{
	check_sanitize("frame 42", "frame_42");
	check_sanitize("frame 1.5", "frame_1.5");
	check_sanitize("frame 12.", "frame_12.");
	check_sanitize("frame\t42", "frame_42");   /* tab -> space -> '_' */
	check_sanitize("x  42", "x _42");          /* only the space before the number */
	check_sanitize(" 42", "_42");
	check_sanitize("a 1 2", "a 1_2");
}

Test(folded, sanitize_leaves_harmless_names_alone)
{
	check_sanitize("frame42", "frame42");
	check_sanitize("42", "42");
	check_sanitize("frame .5", "frame .5");    /* flamegraph.pl needs a digit before '.' */
	check_sanitize("frame 4x", "frame 4x");
	check_sanitize("operator<< (x)", "operator<< (x)");
	check_sanitize("", "");
	check_sanitize("schedule_[k]", "schedule_[k]");
}

/* ---- adding, merging, sorting ----------------------------------------------------------- */

Test(folded, add_sanitizes_each_frame_and_joins)
{
	struct an_folded *f = an_folded_new();
	const char *frames[] = { "main", "a;b", "", "leaf 42" };
	const struct an_folded_line *l;
	size_t n;

	cr_assert_not_null(f);
	cr_assert_eq(an_folded_add(f, frames, 4, 7), 0);
	l = an_folded_lines(f, &n);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(l[0].stack, "main;a:b;[empty];leaf_42");
	cr_expect_eq(l[0].count, 7);
	an_folded_free(f);
}

Test(folded, add_refuses_no_frames)
{
	struct an_folded *f = an_folded_new();
	const char *frames[] = { "main", NULL };

	cr_expect_eq(an_folded_add(f, frames, 0, 1), -EINVAL);
	cr_expect_eq(an_folded_add(f, frames, 2, 1), -EINVAL);
	cr_expect_eq(an_folded_size(f), 0);
	cr_expect_eq(an_folded_total(f), 0);
	an_folded_free(f);
}

Test(folded, add_stack_takes_the_stack_verbatim)
{
	struct an_folded *f = an_folded_new();
	const struct an_folded_line *l;
	size_t n;

	cr_assert_eq(an_folded_add_stack(f, "a;b c;;d", 3), 0);
	l = an_folded_lines(f, &n);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(l[0].stack, "a;b c;;d");
	an_folded_free(f);
}

Test(folded, add_stack_refuses_empty_and_line_breaks)
{
	struct an_folded *f = an_folded_new();

	cr_expect_eq(an_folded_add_stack(f, "", 1), -EINVAL);
	cr_expect_eq(an_folded_add_stack(f, NULL, 1), -EINVAL);
	cr_expect_eq(an_folded_add_stack(f, "a\nb", 1), -EINVAL);
	cr_expect_eq(an_folded_add_stack(f, "a;b\r", 1), -EINVAL);
	cr_expect_eq(an_folded_size(f), 0);
	an_folded_free(f);
}

Test(folded, duplicates_are_summed)
{
	struct an_folded *f = an_folded_new();
	const char *frames[] = { "main", "work" };

	cr_assert_eq(an_folded_add(f, frames, 2, 3), 0);
	cr_assert_eq(an_folded_add_stack(f, "main;work", 4), 0);
	cr_assert_eq(an_folded_add(f, frames, 1, 5), 0);
	cr_expect_eq(an_folded_size(f), 2);
	cr_expect_eq(an_folded_total(f), 12);
	expect_text(f, "main 5\nmain;work 7\n");
	an_folded_free(f);
}

Test(folded, lines_are_in_strcmp_order)
{
	static const char *stacks[] = { "b;x", "a;b", "a", "A", "a b", "a:x", "a;b;c", "_", "~" };
	size_t ns = sizeof(stacks) / sizeof(stacks[0]), n;
	struct an_folded *f = an_folded_new();
	const struct an_folded_line *l;

	for (size_t i = 0; i < ns; i++)
		cr_assert_eq(an_folded_add_stack(f, stacks[i], i + 1), 0);
	l = an_folded_lines(f, &n);
	cr_assert_eq(n, ns);
	for (size_t i = 1; i < n; i++)
		cr_expect_lt(strcmp(l[i - 1].stack, l[i].stack), 0, "%s before %s", l[i - 1].stack,
			     l[i].stack);
	cr_expect_str_eq(l[0].stack, "A");
	cr_expect_str_eq(l[1].stack, "_");
	cr_expect_str_eq(l[2].stack, "a");
	cr_expect_str_eq(l[3].stack, "a b"); /* ' ' < ':' < ';' */
	cr_expect_str_eq(l[4].stack, "a:x");
	cr_expect_str_eq(l[5].stack, "a;b");
	an_folded_free(f);
}

Test(folded, lines_follow_changes)
{
	struct an_folded *f = an_folded_new();
	const struct an_folded_line *l;
	size_t n;

	cr_assert_eq(an_folded_add_stack(f, "b", 1), 0);
	l = an_folded_lines(f, &n);
	cr_assert_eq(n, 1);
	cr_assert_eq(an_folded_add_stack(f, "a", 2), 0);
	l = an_folded_lines(f, &n);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(l[0].stack, "a");
	cr_assert_eq(an_folded_add_stack(f, "b", 5), 0);
	l = an_folded_lines(f, &n);
	cr_expect_eq(l[1].count, 6);
	an_folded_free(f);
}

Test(folded, empty_set)
{
	struct an_folded *f = an_folded_new();
	size_t n = 99;

	cr_expect_not_null(an_folded_lines(f, &n));
	cr_expect_eq(n, 0);
	cr_expect_eq(an_folded_total(f), 0);
	expect_text(f, "");
	an_folded_free(f);
	an_folded_free(NULL);
}

Test(folded, merge_sums_and_adds)
{
	struct an_folded *a = an_folded_new(), *b = an_folded_new();

	cr_assert_eq(an_folded_add_stack(a, "x;y", 1), 0);
	cr_assert_eq(an_folded_add_stack(a, "x", 2), 0);
	cr_assert_eq(an_folded_add_stack(b, "x;y", 10), 0);
	cr_assert_eq(an_folded_add_stack(b, "z", 20), 0);
	cr_assert_eq(an_folded_merge(a, b), 0);
	expect_text(a, "x 2\nx;y 11\nz 20\n");
	cr_expect_eq(an_folded_total(a), 33);
	cr_expect_eq(an_folded_size(b), 2); /* src untouched */
	cr_expect_eq(an_folded_merge(a, a), -EINVAL);
	an_folded_free(a);
	an_folded_free(b);
}

Test(folded, counts_that_overflow_are_refused)
{
	struct an_folded *a = an_folded_new(), *b = an_folded_new();

	cr_assert_eq(an_folded_add_stack(a, "x", UINT64_MAX - 1), 0);
	cr_expect_eq(an_folded_add_stack(a, "x", 2), -EOVERFLOW);
	cr_expect_eq(an_folded_add_stack(a, "y", 2), -EOVERFLOW); /* the total would wrap */
	cr_expect_eq(an_folded_size(a), 1);
	cr_assert_eq(an_folded_add_stack(a, "y", 1), 0);
	cr_expect_eq(an_folded_total(a), UINT64_MAX);
	cr_assert_eq(an_folded_add_stack(b, "z", 1), 0);
	cr_expect_eq(an_folded_merge(a, b), -EOVERFLOW);
	cr_expect_eq(an_folded_size(a), 2); /* a refused merge changes nothing */
	cr_expect_eq(an_folded_total(a), UINT64_MAX);
	an_folded_free(a);
	an_folded_free(b);
}

/* A million samples over ten thousand stacks: the map keeps this at one probe each. */
Test(folded, many_samples_over_many_stacks, .timeout = 20)
{
	struct an_folded *f = an_folded_new();
	char stack[64];
	size_t n;

	for (unsigned i = 0; i < 1000000; i++) {
		snprintf(stack, sizeof(stack), "main;worker;task_%u", (i * 7919u) % 10000u);
		cr_assert_eq(an_folded_add_stack(f, stack, 1), 0);
	}
	cr_expect_eq(an_folded_size(f), 10000);
	cr_expect_eq(an_folded_total(f), 1000000);
	an_folded_lines(f, &n);
	cr_expect_eq(n, 10000);
	an_folded_free(f);
}

/* ---- writing and reading ---------------------------------------------------------------- */

Test(folded, write_read_round_trip)
{
	struct an_folded *f = an_folded_new(), *g;
	const char *frames[] = { "comm", "main", "tricky;name 12", "schedule_[k]" };
	char err[256], *a, *b;

	cr_assert_eq(an_folded_add(f, frames, 4, 5), 0);
	cr_assert_eq(an_folded_add(f, frames, 2, UINT64_MAX - 5), 0);
	cr_assert_eq(an_folded_write_file(f, path), 0);
	cr_expect_eq(count_dir_entries(), 1, "no temporary file is left beside the output");
	g = an_folded_read(path, err, sizeof(err));
	cr_assert_not_null(g, "%s", err);
	a = to_string(f);
	b = to_string(g);
	cr_expect_str_eq(a, b);
	cr_expect_str_eq(b, "comm;main " "18446744073709551610\n"
			    "comm;main;tricky:name_12;schedule_[k] 5\n");
	cr_expect_eq(an_folded_total(g), UINT64_MAX);
	free(a);
	free(b);
	an_folded_free(f);
	an_folded_free(g);
}

Test(folded, write_file_replaces_atomically_and_reports_errors)
{
	struct an_folded *f = an_folded_new();
	char bad[sizeof(dir) + 32];

	cr_assert_eq(an_folded_add_stack(f, "a", 1), 0);
	write_text("old content\n", 12);
	cr_assert_eq(an_folded_write_file(f, path), 0);
	cr_assert_eq(an_folded_add_stack(f, "b", 1), 0);
	cr_assert_eq(an_folded_write_file(f, path), 0);
	cr_expect_eq(count_dir_entries(), 1);
	snprintf(bad, sizeof(bad), "%s/missing/x.folded", dir);
	cr_expect_eq(an_folded_write_file(f, bad), -ENOENT);
	cr_expect_eq(count_dir_entries(), 1);
	an_folded_free(f);
}

Test(folded, read_tolerates_crlf_blank_lines_tabs_and_no_final_newline)
{
	char err[256];
	struct an_folded *f = read_text("main;a 1\r\n"
					"\r\n"
					"   \n"
					"main;b\t2\n"
					"main;a  3   \n"
					"main;b c 4",
					err, sizeof(err));

	cr_assert_not_null(f, "%s", err);
	expect_text(f, "main;a 4\nmain;b 2\nmain;b c 4\n");
	cr_expect_eq(an_folded_total(f), 10);
	an_folded_free(f);
}

Test(folded, read_accepts_zero_counts_and_empty_files)
{
	char err[256];
	struct an_folded *f = read_text("a 0\n", err, sizeof(err));

	cr_assert_not_null(f, "%s", err);
	cr_expect_eq(an_folded_size(f), 1);
	cr_expect_eq(an_folded_total(f), 0);
	an_folded_free(f);
	f = read_text("", err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	cr_expect_eq(an_folded_size(f), 0);
	an_folded_free(f);
}

static void check_bad(const char *text, size_t len, unsigned line, const char *why)
{
	char err[512], want[512];
	struct an_folded *f;

	write_text(text, len);
	errno = 0;
	f = an_folded_read(path, err, sizeof(err));
	cr_expect_null(f, "accepted: %s", text);
	an_folded_free(f);
	cr_expect_eq(errno, EINVAL);
	snprintf(want, sizeof(want), "%s:%u: %s", path, line, why);
	cr_expect_str_eq(err, want);
	cr_expect_null(strchr(err, '\n'), "one line");
}

#define BAD(text, line, why) check_bad(text, sizeof(text) - 1, line, why)
#define NO_COUNT "no count at the end of the line; each line is 'frame;frame;... COUNT'"

Test(folded, read_refuses_a_line_without_count)
{
	BAD("main;a\n", 1, NO_COUNT);
	BAD("main;a 1\nmain;b x\n", 2, NO_COUNT);
	BAD("a 1\n\nmain;b 3x\n", 3, NO_COUNT);
	BAD("main;a 1e3\n", 1, NO_COUNT);
	BAD("main;a 0x10\n", 1, NO_COUNT);
}

Test(folded, read_refuses_fractional_and_negative_counts)
{
	BAD("main;a 1.5\n", 1, "fractional count '1.5'; counts are whole numbers of samples");
	BAD("main;a 3.\n", 1, "fractional count '3.'; counts are whole numbers of samples");
	BAD("main;a .5\r\n", 1, "fractional count '.5'; counts are whole numbers of samples");
	BAD("main;a -3\n", 1, "negative count '-3'; counts are numbers of samples");
}

Test(folded, read_refuses_differential_files)
{
	static const char why[] = "a second count column; differential folded files are not "
				  "accepted here, give one profile";

	BAD("main;a 3 4\n", 1, why);
	BAD("main;a 1\nmain;b 3.5 4.25\n", 2, why);
	BAD("main;a\t3\t4\n", 1, why);
}

Test(folded, read_refuses_a_count_without_stack)
{
	BAD("5\n", 1, "no stack before the count; each line is 'frame;frame;... COUNT'");
	BAD("a 1\n   7\n", 2, "no stack before the count; each line is 'frame;frame;... COUNT'");
	BAD("word\n", 1, NO_COUNT);
}

Test(folded, read_refuses_counts_beyond_uint64)
{
	char text[128];

	/* the largest count is fine on its own */
	snprintf(text, sizeof(text), "a %" PRIu64 "\n", UINT64_MAX);
	write_text(text, strlen(text));
	struct an_folded *f = an_folded_read(path, NULL, 0);
	cr_assert_not_null(f);
	cr_expect_eq(an_folded_total(f), UINT64_MAX);
	an_folded_free(f);

	BAD("a 18446744073709551616\n", 1,
	    "count '18446744073709551616' is larger than 18446744073709551615");
	BAD("a 99999999999999999999999\n", 1,
	    "count '99999999999999999999999' is larger than 18446744073709551615");
	BAD("a 18446744073709551615\nb 1\n", 2,
	    "the counts add up to more than 18446744073709551615");
	BAD("a 9223372036854775808\na 9223372036854775808\n", 2,
	    "the counts add up to more than 18446744073709551615");
}

Test(folded, read_refuses_nul_bytes)
{
	BAD("a 1\nb\0c 2\n", 2, "a NUL byte in the line; folded files are text");
}

Test(folded, read_names_a_missing_file)
{
	char err[512], want[512];

	snprintf(want, sizeof(want), "%s/none.folded: No such file or directory", dir);
	snprintf(path, sizeof(path), "%s/none.folded", dir);
	errno = 0;
	cr_expect_null(an_folded_read(path, err, sizeof(err)));
	cr_expect_eq(errno, ENOENT);
	cr_expect_str_eq(err, want);
}
