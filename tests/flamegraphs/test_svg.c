/*
 * Flame graph SVG: golden files (tests/flamegraphs/data/x.folded renders to x.svg byte
 * for byte, with the options `make golden` uses), and structure checked by parsing the
 * frames back: one <g> per merged node wide enough, children inside their parents,
 * titles' counts and percentages, escaping, colours, determinism and atomic writes.
 * Tests run from the repository root.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "flamegraphs/flamegraph.h"

#define DATA_DIR "tests/flamegraphs/data"
#define PLOT_W   1180.0 /* default width 1200 less two 10 px margins */

/* ---- helpers ---------------------------------------------------------------------------- */

static char *render(const struct an_folded *f, const struct fg_options *o, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *fp = open_memstream(&buf, &n);

	cr_assert_not_null(fp);
	cr_assert_eq(fg_svg_write(f, o, fp), 0);
	cr_assert_eq(fclose(fp), 0);
	if (len)
		*len = n;
	return buf;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;

	if (!fp)
		return NULL;
	cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

static size_t count_substr(const char *s, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (const char *p = strstr(s, needle); p; p = strstr(p + k, needle))
		n++;
	return n;
}

struct pframe {
	char name[512];
	uint64_t count;
	double pct, x, w;
	int y;
	char fill[32];
	char label[512];
};

/* Parse every frame line back ("<g><title>NAME (N samples, P%)</title><rect ...>"). */
static struct pframe *parse_frames(const char *svg, size_t *n)
{
	struct pframe *v = NULL;
	size_t cap = 0;
	const char *p = strstr(svg, "<g id=\"frames\">");

	*n = 0;
	cr_assert_not_null(p);
	while ((p = strstr(p, "<g><title>"))) {
		const char *t = p + strlen("<g><title>"), *te = strstr(t, "</title>"), *open;
		struct pframe *f;
		int consumed = 0;

		cr_assert_not_null(te);
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			v = realloc(v, cap * sizeof(*v));
			cr_assert_not_null(v);
		}
		f = &v[(*n)++];
		memset(f, 0, sizeof(*f));
		for (open = te; open > t && strncmp(open, " (", 2); open--)
			;
		cr_assert(open > t, "title without counts");
		cr_assert_lt((size_t)(open - t), sizeof(f->name));
		memcpy(f->name, t, (size_t)(open - t));
		cr_assert_eq(sscanf(open, " (%" SCNu64 " samples, %lf%%)", &f->count, &f->pct), 2,
			     "title of %s", f->name);
		cr_assert_eq(sscanf(te,
				    "</title><rect x=\"%lf\" y=\"%d\" width=\"%lf\" height=\"15\" "
				    "fill=\"%31[^\"]\" rx=\"2\" ry=\"2\"/><text x=\"%*f\" "
				    "y=\"%*f\">%n",
				    &f->x, &f->y, &f->w, f->fill, &consumed),
			     4, "rect of %s", f->name);
		cr_assert_gt(consumed, 0);
		t = te + consumed;
		te = strstr(t, "</text></g>");
		cr_assert_not_null(te);
		cr_assert_lt((size_t)(te - t), sizeof(f->label));
		memcpy(f->label, t, (size_t)(te - t));
		p = te;
	}
	return v;
}

static const struct pframe *find(const struct pframe *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	return NULL;
}

static struct an_folded *folded_of(const char *const *stacks, const uint64_t *counts, size_t n)
{
	struct an_folded *f = an_folded_new();

	cr_assert_not_null(f);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(an_folded_add_stack(f, stacks[i], counts[i]), 0);
	return f;
}

/* A made-up profile with many shapes: n stacks of depth 1..12 from a small vocabulary,
 * counts spread over four orders of magnitude (a fixed LCG, so every run is alike). */
static struct an_folded *synthetic(size_t n)
{
	static const char *words[] = { "main", "rt_worker_loop", "run_task", "poll", "steal",
				       "schedule_[k]", "malloc", "-", "[lost:x]", "memcpy" };
	struct an_folded *f = an_folded_new();
	uint64_t s = 42;
	char stack[512];

	for (size_t i = 0; i < n; i++) {
		size_t depth, len = 0;

		s = s * 6364136223846793005ull + 1442695040888963407ull;
		depth = 1 + (s >> 33) % 12;
		for (size_t d = 0; d < depth; d++) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			len += (size_t)snprintf(stack + len, sizeof(stack) - len, "%s%s",
						d ? ";" : "", words[(s >> 40) % 10]);
		}
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		cr_assert_eq(an_folded_add_stack(f, stack, 1 + (s >> 50) % 10000), 0);
	}
	return f;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The frames flamegraph.pl would draw, counted independently of the writer: one per
 * distinct stack prefix, kept when its samples span at least min_width px, plus "all". */
static size_t expected_frames(const struct an_folded *f, double min_width)
{
	const struct an_folded_line *l;
	size_t n, np = 0, cap = 0, kept = 1;
	char **prefixes = NULL;
	uint64_t *counts, total = an_folded_total(f);

	l = an_folded_lines(f, &n);
	for (size_t i = 0; i < n; i++) {
		for (const char *p = l[i].stack;; p++) {
			if (*p != ';' && *p)
				continue;
			if (np == cap) {
				cap = cap ? cap * 2 : 1024;
				prefixes = realloc(prefixes, cap * sizeof(*prefixes));
				cr_assert_not_null(prefixes);
			}
			/* "prefix\tcount" so that sorting keeps equal prefixes together */
			cr_assert_neq(asprintf(&prefixes[np++], "%.*s\t%" PRIu64,
					       (int)(p - l[i].stack), l[i].stack, l[i].count),
				      -1);
			if (!*p)
				break;
		}
	}
	counts = calloc(np + 1, sizeof(*counts));
	qsort(prefixes, np, sizeof(*prefixes), cmp_str);
	for (size_t i = 0; i < np;) {
		size_t j = i, klen = strcspn(prefixes[i], "\t");
		uint64_t sum = 0;

		while (j < np && strcspn(prefixes[j], "\t") == klen &&
		       !strncmp(prefixes[i], prefixes[j], klen)) {
			sum += strtoull(prefixes[j] + klen + 1, NULL, 10);
			j++;
		}
		if (sum > 0 && (double)sum * PLOT_W / (double)total >= min_width)
			kept++;
		i = j;
	}
	for (size_t i = 0; i < np; i++)
		free(prefixes[i]);
	free(prefixes);
	free(counts);
	return kept;
}

/* ---- golden files ------------------------------------------------------------------------- */

Test(svg, golden_files_match_byte_for_byte)
{
	DIR *d = opendir(DATA_DIR);
	struct dirent *e;
	size_t checked = 0;

	cr_assert_not_null(d, "run the tests from the repository root");
	while ((e = readdir(d))) {
		size_t nl = strlen(e->d_name), want_len, got_len;
		char in[512], out[512], base[256], err[512], *want, *got;
		struct fg_options o;
		struct an_folded *f;

		if (nl <= 7 || strcmp(e->d_name + nl - 7, ".folded"))
			continue;
		snprintf(base, sizeof(base), "%.*s", (int)(nl - 7), e->d_name);
		snprintf(in, sizeof(in), DATA_DIR "/%s", e->d_name);
		snprintf(out, sizeof(out), DATA_DIR "/%s.svg", base);
		f = an_folded_read(in, err, sizeof(err));
		cr_assert_not_null(f, "%s", err);
		fg_options_default(&o);
		o.title = base; /* as `make golden` renders them */
		got = render(f, &o, &got_len);
		want = slurp(out, &want_len);
		cr_assert_not_null(want, "%s is missing; run 'make golden'", out);
		cr_expect(got_len == want_len && !memcmp(got, want, got_len),
			  "%s differs from what %s renders to; if the change is meant, run 'make "
			  "golden' and review the diff",
			  out, in);
		free(got);
		free(want);
		an_folded_free(f);
		checked++;
	}
	closedir(d);
	cr_expect_geq(checked, 3, "golden files found: %zu", checked);
}

/* ---- structure ---------------------------------------------------------------------------- */

Test(svg, document_has_flamegraph_structure)
{
	static const char *stacks[] = { "main;a", "main;b" };
	static const uint64_t counts[] = { 1, 3 };
	struct an_folded *f = folded_of(stacks, counts, 2);
	char *svg = render(f, NULL, NULL);
	const char *script, *script_end;

	cr_expect(!strncmp(svg, "<?xml version=\"1.0\"", 19));
	cr_expect_not_null(strstr(svg, "<svg version=\"1.1\" width=\"1200\""));
	cr_expect_not_null(strstr(svg, "<style type=\"text/css\">"));
	script = strstr(svg, "<script type=\"text/ecmascript\"><![CDATA[");
	cr_assert_not_null(script);
	script_end = strstr(script, "]]></script>");
	cr_assert_not_null(script_end);
	cr_expect_eq(count_substr(svg, "]]>"), 1, "the script closes its CDATA once");
	cr_expect_not_null(
		strstr(svg, "<text id=\"title\" x=\"600.0\" y=\"24\">Flame Graph</text>"));
	cr_expect_null(strstr(svg, "id=\"subtitle\""));
	cr_expect_not_null(strstr(svg, ">Total: 4 samples</text>"));
	cr_expect_not_null(strstr(svg, ">Reset Zoom</text>"));
	cr_expect_not_null(strstr(svg, ">Search</text>"));
	cr_expect_not_null(strstr(svg, "id=\"matched\""));
	cr_expect_eq(count_substr(svg, "<g id=\"frames\">"), 1);
	cr_expect_eq(count_substr(svg, "<g>"), 4); /* all, main, a, b */
	cr_expect_eq(count_substr(svg, "</g>"), 5);
	cr_expect(!strcmp(svg + strlen(svg) - 7, "</svg>\n"));
	free(svg);
	an_folded_free(f);
}

/* A subtitle longer than the image is wide (a differential graph's names both runs, what
 * the colours mean and what the tooltips hold: cut at 1,200 px before) is wrapped at its
 * " · " separators into lines that fit, and the frames start below the last; one that
 * would need more than four lines ends the fourth with "..". */
Test(svg, a_long_subtitle_is_wrapped_to_the_width)
{
	static const char *stacks[] = { "main;work" };
	static const uint64_t counts[] = { 10 };
	struct an_folded *f = folded_of(stacks, counts, 1);
	const char *part = "B 20261207-231140-spawn-join-kyo (12,345 samples, drawn)";
	char sub[1024] = "", *svg, *one;
	struct fg_options o;
	unsigned y_one, y_wrapped;

	for (int i = 0; i < 3; i++)
		snprintf(sub + strlen(sub), sizeof(sub) - strlen(sub), "%s%s", i ? " · " : "",
			 part);
	fg_options_default(&o);
	o.subtitle = "short";
	one = render(f, &o, NULL);
	o.subtitle = sub;
	svg = render(f, &o, NULL);
	cr_expect_eq(count_substr(one, "class=\"subtitle\""), 1);
	/* 1,180 px hold 166 characters of 12 px Verdana: two parts, then the third */
	cr_expect_eq(count_substr(svg, "class=\"subtitle\""), 2, "%s", svg);
	cr_expect_eq(count_substr(svg, part), 3, "every part whole");
	cr_expect_eq(count_substr(svg, ">· "), 0, "no line begins with the separator");
	cr_expect_eq(count_substr(svg, " · </text>"), 0, "nor ends with it");
	/* the frames start a line lower */
	cr_assert_eq(sscanf(strstr(one, "<g id=\"frames\">"), "<g id=\"frames\">\n<g><title>%*[^<]"
			    "</title><rect x=\"%*[0-9.]\" y=\"%u\"", &y_one), 1);
	cr_assert_eq(sscanf(strstr(svg, "<g id=\"frames\">"), "<g id=\"frames\">\n<g><title>%*[^<]"
			    "</title><rect x=\"%*[0-9.]\" y=\"%u\"", &y_wrapped), 1);
	cr_expect_eq(y_wrapped, y_one + 18);
	free(svg);
	/* too long for four lines: cut, and said */
	for (int i = 3; i < 12; i++)
		snprintf(sub + strlen(sub), sizeof(sub) - strlen(sub), " · %s", part);
	svg = render(f, &o, NULL);
	cr_expect_eq(count_substr(svg, "class=\"subtitle\""), 4);
	cr_expect_not_null(strstr(svg, "..</text>"), "%s", svg);
	free(svg);
	free(one);
	an_folded_free(f);
}

Test(svg, titles_subtitles_and_count_names_are_used)
{
	static const char *stacks[] = { "main;work" };
	static const uint64_t counts[] = { 2500 };
	struct an_folded *f = folded_of(stacks, counts, 1);
	struct fg_options o;
	char *svg;

	fg_options_default(&o);
	o.title = "spawn-join <ce>";
	o.subtitle = "on-CPU, 999 Hz & \"cycles\"";
	o.count_name = "us";
	svg = render(f, &o, NULL);
	cr_expect_not_null(strstr(svg, ">spawn-join &lt;ce&gt;</text>"));
	cr_expect_not_null(strstr(svg, "<text id=\"subtitle\" class=\"subtitle\" x=\"600.0\" "
				       "y=\"42\">on-CPU, 999 Hz &amp; &quot;cycles&quot;</text>"));
	cr_expect_not_null(strstr(svg, "<title>work (2500 us, 100.00%)</title>"));
	cr_expect_not_null(strstr(svg, ">Total: 2500 us</text>"));
	free(svg);
	an_folded_free(f);
}

Test(svg, titles_carry_exact_counts_and_percentages)
{
	static const char *stacks[] = { "idle", "main;compute", "main;compute;add",
					"main;compute;multiply", "main;parse;read_input" };
	static const uint64_t counts[] = { 10, 50, 100, 300, 240 };
	struct an_folded *f = folded_of(stacks, counts, 5);
	char *svg = render(f, NULL, NULL);
	size_t n;
	struct pframe *v = parse_frames(svg, &n);
	const struct pframe *p;

	cr_assert_eq(n, 8);
	p = find(v, n, "all");
	cr_assert_not_null(p);
	cr_expect_eq(p->count, 700);
	cr_expect_float_eq(p->pct, 100.0, 1e-9);
	p = find(v, n, "main");
	cr_expect_eq(p->count, 690);
	cr_expect_float_eq(p->pct, 98.57, 1e-9);
	p = find(v, n, "compute");
	cr_expect_eq(p->count, 450); /* its own 50 and its children's 400 */
	cr_expect_float_eq(p->pct, 64.29, 1e-9);
	p = find(v, n, "multiply");
	cr_expect_eq(p->count, 300);
	cr_expect_float_eq(p->pct, 42.86, 1e-9);
	p = find(v, n, "idle");
	cr_expect_eq(p->count, 10);
	cr_expect_float_eq(p->pct, 1.43, 1e-9);
	for (size_t i = 0; i < n; i++)
		cr_expect_float_eq(v[i].w, round(v[i].count * PLOT_W / 700 * 10) / 10, 0.1001,
				   "%s", v[i].name);
	free(v);
	free(svg);
	an_folded_free(f);
}

Test(svg, one_frame_per_merged_node_wide_enough)
{
	struct an_folded *f = synthetic(2000);
	double widths[] = { 0, 0.1, 1, 5 };

	for (size_t k = 0; k < sizeof(widths) / sizeof(widths[0]); k++) {
		struct fg_options o;
		size_t n;
		char *svg;
		struct pframe *v;

		fg_options_default(&o);
		o.min_width = widths[k];
		svg = render(f, &o, NULL);
		v = parse_frames(svg, &n);
		cr_expect_eq(count_substr(svg, "<g>"), expected_frames(f, widths[k]),
			     "min_width %g", widths[k]);
		cr_expect_eq(n, count_substr(svg, "<g>"));
		free(v);
		free(svg);
	}
	an_folded_free(f);
}

/* What is too narrow to draw is counted on the details line: the frames, and the
 * samples under the widest of them (whose callers are drawn). */
Test(svg, frames_left_out_are_counted_with_their_samples)
{
	/* at 1200 px, 1 sample of 100,000 is 0.0118 px: c and d (1 sample each, under b,
	 * which is 2) and b are left out at min_width 0.1; e (3 samples under a) too */
	static const char *const stacks[] = { "a", "a;b;c", "a;b;d", "a;e", "z" };
	static const uint64_t counts[] = { 49995, 1, 1, 3, 50000 };
	struct an_folded *f = folded_of(stacks, counts, 5);
	struct fg_options o;
	char *svg;

	fg_options_default(&o);
	svg = render(f, &o, NULL);
	cr_expect_not_null(strstr(svg, "Total: 100000 samples; 4 frames narrower than 0.1 px "
				       "left out (5 samples, 0.01%, drawn only as their callers)"),
			   "%.400s", strstr(svg, "id=\"details\""));
	free(svg);
	o.min_width = 0;
	svg = render(f, &o, NULL);
	cr_expect_not_null(strstr(svg, ">Total: 100000 samples</text>"), "nothing left out");
	free(svg);
	an_folded_free(f);
}

/* Frames come by depth, then x; every frame but the root sits inside exactly one frame
 * of the row below, and is no wider than it. */
Test(svg, children_lie_within_their_parents)
{
	struct an_folded *f = synthetic(1500);
	char *svg = render(f, NULL, NULL);
	size_t n;
	struct pframe *v = parse_frames(svg, &n);

	cr_assert_gt(n, 100);
	cr_expect_str_eq(v[0].name, "all");
	for (size_t i = 1; i < n; i++) {
		size_t parents = 0;

		cr_expect(v[i].y < v[i - 1].y || (v[i].y == v[i - 1].y && v[i].x >= v[i - 1].x),
			  "frame %zu is out of order", i);
		for (size_t j = 0; j < n; j++) {
			if (v[j].y != v[i].y + 16)
				continue;
			if (v[i].x + 1e-6 >= v[j].x && v[i].x + v[i].w <= v[j].x + v[j].w + 1e-6) {
				parents++;
				cr_expect_leq(v[i].w, v[j].w);
				cr_expect_leq(v[i].count, v[j].count);
			}
		}
		if (v[i].y != v[0].y)
			cr_expect_geq(parents, 1, "%s at x=%g y=%d has no parent", v[i].name,
				      v[i].x, v[i].y);
	}
	free(v);
	free(svg);
	an_folded_free(f);
}

Test(svg, siblings_are_in_byte_order_with_own_samples_first)
{
	static const char *stacks[] = { "main;zeta", "main;Alpha", "main;beta", "main",
					"main;beta gamma" };
	static const uint64_t counts[] = { 1, 1, 1, 1, 1 };
	struct an_folded *f = folded_of(stacks, counts, 5);
	char *svg = render(f, NULL, NULL);
	size_t n;
	struct pframe *v = parse_frames(svg, &n);

	cr_assert_eq(n, 6);
	cr_expect_str_eq(v[2].name, "Alpha");
	cr_expect_str_eq(v[3].name, "beta");
	cr_expect_str_eq(v[4].name, "beta gamma");
	cr_expect_str_eq(v[5].name, "zeta");
	cr_expect_float_eq(v[2].x, 10 + 236.0, 1e-9); /* main's own sample comes first */
	free(v);
	free(svg);
	an_folded_free(f);
}

Test(svg, names_are_escaped)
{
	static const char *stacks[] = { "main;std::vector<int>::push_back",
					"main;operator<<(A&, B const&)", "main;say \"hi\"",
					"main;bad\001ctl", "main;broken\xff\xfe utf8" };
	static const uint64_t counts[] = { 10, 10, 10, 10, 10 };
	struct an_folded *f = folded_of(stacks, counts, 5);
	char *svg = render(f, NULL, NULL);
	const char *frames = strstr(svg, "<g id=\"frames\">");
	size_t n;
	struct pframe *v = parse_frames(svg, &n);

	cr_expect_not_null(find(v, n, "std::vector&lt;int&gt;::push_back"));
	cr_expect_not_null(find(v, n, "operator&lt;&lt;(A&amp;, B const&amp;)"));
	cr_expect_not_null(find(v, n, "say &quot;hi&quot;"));
	cr_expect_not_null(find(v, n, "bad ctl"));
	cr_expect_not_null(find(v, n, "broken\xef\xbf\xbd\xef\xbf\xbd utf8"));
	for (size_t i = 0; i < n; i++) {
		cr_expect_null(strpbrk(v[i].name, "<>\""), "%s", v[i].name);
		cr_expect_null(strpbrk(v[i].label, "<>\""), "%s", v[i].label);
	}
	cr_expect_null(strstr(frames, "<int>"));
	cr_expect_null(strchr(frames, '\x01'));
	free(v);
	free(svg);
	an_folded_free(f);
}

Test(svg, labels_are_cut_to_fit_with_two_dots)
{
	static const char *stacks[] = { "main;a_function_name_far_too_long_for_its_frame",
					"main;fits", "main;rest" };
	static const uint64_t counts[] = { 5, 5, 90 };
	struct an_folded *f = folded_of(stacks, counts, 3);
	char *svg = render(f, NULL, NULL);
	size_t n;
	struct pframe *v = parse_frames(svg, &n);
	const struct pframe *p = find(v, n, "a_function_name_far_too_long_for_its_frame");

	/* 59 px hold floor(59 / 7.08) = 8 characters: 6 of the name and ".." */
	cr_assert_not_null(p);
	cr_expect_float_eq(p->w, 59.0, 1e-9);
	cr_expect_str_eq(p->label, "a_func..");
	cr_expect_str_eq(find(v, n, "fits")->label, "fits");
	free(v);
	free(svg);
	an_folded_free(f);

	/* a frame too narrow for three characters has no label */
	static const char *s2[] = { "main;narrow", "main;wide" };
	static const uint64_t c2[] = { 1, 99 };
	f = folded_of(s2, c2, 2);
	svg = render(f, NULL, NULL);
	v = parse_frames(svg, &n);
	cr_expect_str_eq(find(v, n, "narrow")->label, "");
	free(v);
	free(svg);
	an_folded_free(f);
}

static unsigned rgb_part(const char *fill, int which)
{
	unsigned r, g, b;

	cr_assert_eq(sscanf(fill, "rgb(%u,%u,%u)", &r, &g, &b), 3, "%s", fill);
	return which == 0 ? r : which == 1 ? g : b;
}

Test(svg, colours_follow_the_kind_of_frame)
{
	static const char *stacks[] = { "[scheduling];rt_worker_loop;-;schedule_[k]",
					"[work];work",
					"[submission];rt_spawn",
					"[allocation];malloc",
					"[stack-capture];bt",
					"[parking];-;futex_wait_[k]",
					"[blocking];recv",
					"[kernel];-;ksoftirqd_[k]",
					"[other];main",
					"main;compute;-;do_syscall_64_[k]",
					"[lost:collision]",
					"[truncated];x",
					"[unknown]" };
	static const uint64_t counts[] = { 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10 };
	struct an_folded *f = folded_of(stacks, counts, 13);
	char *svg = render(f, NULL, NULL);
	size_t n;
	struct pframe *v = parse_frames(svg, &n);
	static const char *cats[] = { "[scheduling]", "[work]", "[submission]", "[allocation]",
				      "[stack-capture]", "[parking]", "[blocking]", "[kernel]",
				      "[other]" };
	/* the frames under no category's root: their kind decides */
	static const char *plain[] = { "main", "compute", "do_syscall_64_[k]", "x", "-",
				       "[lost:collision]", "[truncated]", "[unknown]" };

	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		for (size_t j = 0; j < i; j++)
			cr_expect_str_neq(find(v, n, cats[i])->fill, find(v, n, cats[j])->fill,
					  "%s and %s share a colour", cats[i], cats[j]);
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		const struct pframe *pf = NULL;
		const char *name = plain[i], *fill;
		unsigned r, g, b;
		size_t len = strlen(name);

		/* "main" is also [other]'s child: take the root's own */
		for (size_t k = 0; k < n; k++)
			if (!strcmp(v[k].name, name) && (!pf || v[k].y > pf->y))
				pf = &v[k];
		cr_assert_not_null(pf, "%s not drawn", name);
		fill = pf->fill;
		r = rgb_part(fill, 0), g = rgb_part(fill, 1), b = rgb_part(fill, 2);
		if (!strcmp(name, "-") || !strncmp(name, "[lost", 5) ||
		    !strncmp(name, "[truncated", 10) || !strcmp(name, "[unknown]")) {
			cr_expect(r == g && g == b, "%s is not grey: %s", name, fill);
		} else if (len > 4 && !strcmp(name + len - 4, "_[k]")) {
			cr_expect(r >= 230 && g >= 130 && g < 190 && b < 70, "%s is not orange: %s",
				  name, fill);
		} else {
			cr_expect(r >= 205 && g < 230 && b < 55, "%s is not hot: %s", name, fill);
		}
	}
	free(v);
	free(svg);
	an_folded_free(f);
}

/* Where the on-CPU probe's roots are categories, every frame is a shade of its root's
 * colour (within 20 of it on each channel; a kernel frame two thirds of that), the
 * user/kernel separator and lost parts stay grey, and a legend above the frames names
 * each category with its colour and share. */
Test(svg, frames_take_their_category_s_colour_and_a_legend_names_it)
{
	static const char *stacks[] = { "[scheduling];s_thread;s_drive;-;s_schedule_[k]",
					"[work];w_thread;w_task;w_compute",
					"[work];w_thread;w_task;-;w_fault_[k]",
					"[allocation];a_thread;a_malloc",
					"[kernel];k_thread;-;k_softirq_[k]",
					"[other];o_thread;[lost: user stack error]" };
	static const uint64_t counts[] = { 300, 500, 100, 50, 40, 10 };
	static const struct {
		char prefix;
		const char *root;
		unsigned rgb[3];
		const char *legend;
	} want[] = {
		{ 's', "[scheduling]", { 97, 146, 235 }, "scheduling 30.0%" },
		{ 'w', "[work]", { 100, 190, 100 }, "work 60.0%" },
		{ 'a', "[allocation]", { 60, 190, 190 }, "allocation 5.0%" },
		{ 'k', "[kernel]", { 225, 120, 90 }, "kernel 4.0%" },
		{ 'o', "[other]", { 190, 170, 140 }, "other 1.0%" },
	};
	struct an_folded *f = folded_of(stacks, counts, 6);
	char *svg = render(f, NULL, NULL), *legend, *frames, item[256], fill[32];
	size_t n, shaded = 0;
	struct pframe *v = parse_frames(svg, &n);

	for (size_t i = 0; i < n; i++) {
		const char *name = v[i].name;
		size_t len = strlen(name), c;
		bool kernel = len > 4 && !strcmp(name + len - 4, "_[k]");

		if (!strcmp(name, "all"))
			continue;
		if (!strcmp(name, "-") || !strncmp(name, "[lost", 5)) {
			cr_expect(rgb_part(v[i].fill, 0) == rgb_part(v[i].fill, 1) &&
					  rgb_part(v[i].fill, 1) == rgb_part(v[i].fill, 2),
				  "%s is not grey: %s", name, v[i].fill);
			continue;
		}
		for (c = 0; c < sizeof(want) / sizeof(want[0]); c++)
			if (name[0] == want[c].prefix || !strcmp(name, want[c].root))
				break;
		cr_assert_lt(c, sizeof(want) / sizeof(want[0]), "unexpected frame %s", name);
		for (int k = 0; k < 3; k++) {
			int got = (int)rgb_part(v[i].fill, k), base = (int)want[c].rgb[k];
			int lo = base - 20 < 0 ? 0 : base - 20, hi = base + 20 > 255 ? 255 : base + 20;

			if (!strcmp(name, want[c].root))
				lo = hi = base; /* the root itself: exactly the category's */
			if (kernel)
				lo = lo * 2 / 3, hi = hi * 2 / 3;
			cr_expect(got >= lo && got <= hi, "%s under %s: %s, channel %d not in "
				  "[%d, %d]", name, want[c].root, v[i].fill, k, lo, hi);
		}
		shaded += strcmp(name, want[c].root) != 0;
	}
	cr_expect_eq(shaded, 12, "frames under a category root: %zu", shaded);

	/* the legend: before the frames and outside them (search and zoom see frames only),
	 * one entry per category present, in the fixed order, with its root's colour */
	legend = strstr(svg, "<g id=\"legend\">\n");
	frames = strstr(svg, "<g id=\"frames\">\n");
	cr_assert_not_null(legend, "no legend");
	cr_assert_not_null(frames);
	cr_expect_lt(legend, frames);
	cr_expect_not_null(strstr(legend, "</g>\n</g>\n<g id=\"frames\">"));
	cr_expect_eq(count_substr(svg, "<g class=\"category\">"), 5);
	for (size_t c = 0; c < sizeof(want) / sizeof(want[0]); c++) {
		char *at;

		snprintf(fill, sizeof(fill), "rgb(%u,%u,%u)", want[c].rgb[0], want[c].rgb[1],
			 want[c].rgb[2]);
		cr_expect_str_eq(find(v, n, want[c].root)->fill, fill);
		/* its entry: title with the root's count, the swatch, the share */
		snprintf(item, sizeof(item), "<g class=\"category\"><title>%.*s: %" PRIu64
			 " samples, ", (int)strlen(want[c].root) - 2, want[c].root + 1,
			 find(v, n, want[c].root)->count);
		at = strstr(legend, item);
		cr_assert(at && at < frames, "legend has no entry '%s'", item);
		at = strstr(at, "</g>");
		snprintf(item, sizeof(item), "fill=\"%s\"", fill);
		cr_expect(strstr(legend, item) && strstr(strstr(legend, item), "</g>") == at,
			  "%s's swatch is not %s", want[c].root, fill);
		snprintf(item, sizeof(item), ">%s</text></g>", want[c].legend);
		cr_expect(strstr(legend, item) && strstr(legend, item) + strlen(item) - 4 == at,
			  "legend has no '%s'", want[c].legend);
	}
	/* fixed order: scheduling before work before allocation before kernel before other */
	cr_expect_lt(strstr(legend, ">scheduling 30.0%"), strstr(legend, ">work 60.0%"));
	cr_expect_lt(strstr(legend, ">work 60.0%"), strstr(legend, ">allocation 5.0%"));
	cr_expect_lt(strstr(legend, ">allocation 5.0%"), strstr(legend, ">kernel 4.0%"));
	cr_expect_lt(strstr(legend, ">kernel 4.0%"), strstr(legend, ">other 1.0%"));
	free(v);
	free(svg);
	an_folded_free(f);
}

/* A profile without category roots has no legend and no shades; a narrow window wraps
 * the legend into rows, and the frames move down to make room. */
Test(svg, the_legend_is_only_for_categories_and_wraps)
{
	static const char *plain[] = { "main;a", "main;b" };
	static const char *cats[] = { "[scheduling];x", "[submission];x", "[work];x",
				      "[allocation];x", "[stack-capture];x", "[parking];x",
				      "[blocking];x", "[kernel];x", "[other];x" };
	static const uint64_t counts[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	struct an_folded *f = folded_of(plain, counts, 2), *g = folded_of(cats, counts, 9);
	struct fg_options o;
	char *svg = render(f, NULL, NULL), *wide, *narrow;
	size_t nw, nn;
	struct pframe *vw, *vn;
	unsigned hw, hn;

	cr_expect_null(strstr(svg, "id=\"legend\""), "%s", svg);
	free(svg);
	wide = render(g, NULL, NULL);
	fg_options_default(&o);
	o.width = 400;
	narrow = render(g, &o, NULL);
	cr_expect_eq(count_substr(wide, "<g class=\"category\">"), 9);
	cr_expect_eq(count_substr(narrow, "<g class=\"category\">"), 9);
	cr_assert_eq(sscanf(strstr(wide, "<svg "), "<svg version=\"1.1\" width=\"%*u\" "
			    "height=\"%u\"", &hw), 1);
	cr_assert_eq(sscanf(strstr(narrow, "<svg "), "<svg version=\"1.1\" width=\"%*u\" "
			    "height=\"%u\"", &hn), 1);
	/* nine entries take one row at 1,200 px and several at 400 */
	cr_expect_gt(hn, hw, "narrow %u, wide %u", hn, hw);
	cr_expect_eq((hn - hw) % 18, 0, "whole rows: %u and %u", hn, hw);
	vw = parse_frames(wide, &nw);
	vn = parse_frames(narrow, &nn);
	cr_assert_eq(nw, nn);
	/* a frame's distance from the bottom does not change: the legend sits on top */
	cr_expect_eq(hw - (unsigned)find(vw, nw, "all")->y, hn - (unsigned)find(vn, nn, "all")->y);
	free(vw);
	free(vn);
	free(wide);
	free(narrow);
	an_folded_free(f);
	an_folded_free(g);
}

Test(svg, a_name_keeps_its_colour_across_graphs)
{
	static const char *s1[] = { "main;rt_worker_loop;poll" };
	static const char *s2[] = { "other;x;y;z;poll", "other;rt_worker_loop" };
	static const uint64_t c[] = { 3, 7 };
	struct an_folded *a = folded_of(s1, c, 1), *b = folded_of(s2, c, 2);
	char *sa = render(a, NULL, NULL), *sb = render(b, NULL, NULL);
	size_t na, nb;
	struct pframe *va = parse_frames(sa, &na), *vb = parse_frames(sb, &nb);

	cr_expect_str_eq(find(va, na, "poll")->fill, find(vb, nb, "poll")->fill);
	cr_expect_str_eq(find(va, na, "rt_worker_loop")->fill,
			 find(vb, nb, "rt_worker_loop")->fill);
	free(va);
	free(vb);
	free(sa);
	free(sb);
	an_folded_free(a);
	an_folded_free(b);
}

Test(svg, output_is_deterministic)
{
	struct an_folded *a = synthetic(800), *b = an_folded_new();
	const struct an_folded_line *l;
	size_t n, la, lb;
	char *sa, *sb, *sc;

	/* the same multiset added in reverse order */
	l = an_folded_lines(a, &n);
	for (size_t i = n; i-- > 0;)
		cr_assert_eq(an_folded_add_stack(b, l[i].stack, l[i].count), 0);
	sa = render(a, NULL, &la);
	sb = render(a, NULL, NULL);
	sc = render(b, NULL, &lb);
	cr_expect_str_eq(sa, sb);
	cr_expect(la == lb && !memcmp(sa, sc, la));
	free(sa);
	free(sb);
	free(sc);
	an_folded_free(a);
	an_folded_free(b);
}

Test(svg, empty_profile_says_no_samples)
{
	struct an_folded *f = an_folded_new();
	char *svg = render(f, NULL, NULL);

	cr_expect_not_null(strstr(svg, ">No samples</text>"));
	cr_expect_not_null(strstr(svg, "<g id=\"frames\">"));
	cr_expect_eq(count_substr(svg, "<g>"), 0);
	cr_expect(!strcmp(svg + strlen(svg) - 7, "</svg>\n"));
	free(svg);
	cr_assert_eq(an_folded_add_stack(f, "main", 0), 0); /* lines, but no samples */
	svg = render(f, NULL, NULL);
	cr_expect_not_null(strstr(svg, ">No samples</text>"));
	free(svg);
	an_folded_free(f);
}

Test(svg, bad_options_are_refused)
{
	struct an_folded *f = an_folded_new();
	struct fg_options o;
	FILE *fp = fopen("/dev/null", "w");

	fg_options_default(&o);
	cr_expect_eq(o.width, 1200);
	cr_expect_eq(o.frame_height, 16);
	cr_expect_float_eq(o.min_width, 0.1, 1e-12);
	o.width = 10;
	cr_expect_eq(fg_svg_write(f, &o, fp), -EINVAL);
	fg_options_default(&o);
	o.min_width = -1;
	cr_expect_eq(fg_svg_write(f, &o, fp), -EINVAL);
	o.min_width = NAN;
	cr_expect_eq(fg_svg_write(f, &o, fp), -EINVAL);
	fg_options_default(&o);
	o.frame_height = 0;
	cr_expect_eq(fg_svg_write(f, &o, fp), -EINVAL);
	fclose(fp);
	an_folded_free(f);
}

/* Ten thousand distinct frames stay a few megabytes. */
Test(svg, ten_thousand_frames_stay_small, .timeout = 30)
{
	struct an_folded *f = an_folded_new();
	char stack[128];
	size_t len, n;
	struct fg_options o;
	char *svg;

	for (unsigned i = 0; i < 10000; i++) {
		snprintf(stack, sizeof(stack), "main;module_%u;function_number_%u", i / 100, i);
		cr_assert_eq(an_folded_add_stack(f, stack, 1000), 0);
	}
	fg_options_default(&o);
	o.min_width = 0;
	svg = render(f, &o, &len);
	n = count_substr(svg, "<g>");
	cr_expect_eq(n, 1 + 1 + 100 + 10000);
	cr_expect_lt(len, 4u << 20, "%zu bytes", len);
	free(svg);
	an_folded_free(f);
}

static size_t entries_in(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

Test(svg, write_file_is_atomic)
{
	char dir[] = "/tmp/schedlab-svg-XXXXXX", path[64], bad[96], *want, *got;
	static const char *stacks[] = { "main;a" };
	static const uint64_t counts[] = { 1 };
	struct an_folded *f = folded_of(stacks, counts, 1);
	size_t len;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.svg", dir);
	cr_assert_eq(fg_svg_write_file(f, NULL, path), 0);
	cr_assert_eq(fg_svg_write_file(f, NULL, path), 0); /* replaces */
	cr_expect_eq(entries_in(dir), 1, "a temporary file was left behind");
	want = render(f, NULL, NULL);
	got = slurp(path, &len);
	cr_expect_str_eq(got, want);
	snprintf(bad, sizeof(bad), "%s/missing/x.svg", dir);
	cr_expect_eq(fg_svg_write_file(f, NULL, bad), -ENOENT);
	cr_expect_eq(entries_in(dir), 1);
	unlink(path);
	rmdir(dir);
	free(want);
	free(got);
	an_folded_free(f);
}
