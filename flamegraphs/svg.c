/*
 * svg.c — folded stacks to a self-contained interactive SVG, laid out as flamegraph.pl
 * lays it out.
 *
 * The sorted lines are merged from the root in one pass (a stack of open frames, as
 * flamegraph.pl's flow()), so x-order is the byte order of the lines and a frame's own
 * samples sit left of its children. Geometry is rounded once, to tenths of a pixel
 * from each frame's start and end sample, so a child never pokes out of its parent.
 * Frames are written by depth, then x; colours come from the name alone (a hash, or a
 * fixed colour for kinds and categories) and, in a profile whose roots are categories
 * ("[work]", as the on-CPU probe writes them), from the root a frame sits under: a shade
 * of that category's colour, so each category reads as one hue, named in a legend with
 * its share. Nothing depends on time or on memory addresses, so the same profile always
 * gives the same bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraphs/flamegraph.h"
#include "flamegraphs/internal.h"

#define XPAD        10   /* left and right margins, px */
#define FONT_SIZE   12   /* px */
#define FONT_WIDTH  0.59 /* average glyph width of Verdana, in ems */
#define TITLE_Y     24   /* baseline of the title and of the buttons */
#define SUBTITLE_Y  42
#define TOP_PAD     36   /* above the frames, without a subtitle */
#define SUB_PAD     18   /* added to it by each line of a subtitle */
#define SUB_LINES   4    /* the most lines a subtitle is wrapped into */
#define BOTTOM_PAD  34   /* below the frames: the details line */
#define FRAME_PAD   1    /* gap between rows */
#define MATCH_COLOR "rgb(230,0,230)" /* search hits; no palette below makes it */
#define LEGEND_ROW  18   /* one row of the category legend, under the title */
#define LEGEND_BOX  11   /* its colour swatches, px */

void fg_options_default(struct fg_options *o)
{
	*o = (struct fg_options){
		.title = NULL,
		.subtitle = NULL,
		.count_name = NULL,
		.width = 1200,
		.frame_height = 16,
		.min_width = 0.1,
	};
}

/* ---- the frame tree ----------------------------------------------------------------- */

struct frame {
	const char *name; /* into the folded lines, not NUL-terminated */
	size_t len;
	size_t depth; /* 0: the root "all" */
	uint64_t start, end; /* in samples */
	size_t seq;          /* creation order: a total order among equal starts */
	size_t parent;       /* its index while in creation order; the root's is 0 */
	double base, delta;  /* differential: its share of the baseline, and its share of
			      * this profile less that (0 exactly when they are equal) */
	int cat;             /* the category of the root it sits under; -1: none */
};

struct frames {
	struct frame *v;
	size_t n, cap;
	size_t seq;          /* frames made so far, kept or not */
};

/* Frames too narrow to draw, and the samples under the widest of them. */
struct pruned {
	uint64_t frames, samples;
};

/* What build_frames() decides as each frame closes: whether it is wide enough to draw,
 * and what it adds to the legend and to the count of what was left out. */
struct keep {
	double per_sample, min_width; /* px per sample; the narrowest frame drawn */
	uint64_t *by_category;        /* samples under each category's root */
	struct pruned *pruned;
};

static int frames_push(struct frames *fr, const char *name, size_t len, size_t depth,
		       uint64_t start, int cat)
{
	if (fr->n == fr->cap) {
		size_t cap = fr->cap ? fr->cap * 2 : 256;
		struct frame *v = reallocarray(fr->v, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		fr->v = v;
		fr->cap = cap;
	}
	fr->v[fr->n] = (struct frame){ name, len, depth, start, start, fr->seq++, 0, 0, 0, cat };
	fr->n++;
	return 0;
}

static int category_of(const char *name, size_t len);

/* Close the open frame at open[k] at sample t: a frame narrower than k->min_width px is
 * dropped (it is the last one made: its descendants, narrower still, went before it)
 * and its samples go to its parent's hidden count; a frame drawn adds its own hidden
 * count (its dropped children's samples) to what was left out. */
static void close_frame(struct frames *fr, const struct keep *kp, size_t idx, uint64_t t,
			uint64_t *hidden, uint64_t *parent_hidden)
{
	struct frame *f = &fr->v[idx];
	uint64_t count = t - f->start;

	f->end = t;
	if (f->depth == 1 && f->cat >= 0)
		kp->by_category[f->cat] += count;
	if (!count || (double)count * kp->per_sample < kp->min_width) {
		kp->pruned->frames++;
		*parent_hidden += count;
		fr->n = idx;
	} else {
		kp->pruned->samples += *hidden;
	}
	*hidden = 0;
}

/* Merge the sorted lines into frames. Lines sharing a prefix of frames are adjacent in
 * byte order, so one pass with the path of open frames is enough; a frame too narrow to
 * draw is dropped as it closes, so that only what is drawn is kept. A frame's category
 * is its root's (the open frame at depth 1). */
static int build_frames(const struct an_folded_line *lines, size_t n, uint64_t total,
			const struct keep *kp, struct frames *fr)
{
	size_t *open = NULL, nopen = 0, open_cap = 0;
	uint64_t t = 0, *hidden = NULL, root_hidden = 0;
	int err;

	err = frames_push(fr, "all", 3, 0, 0, -1);
	if (err)
		return err;
	fr->v[0].end = total;
	for (size_t i = 0; i < n; i++) {
		const char *p = lines[i].stack;
		size_t depth = 0;

		for (;;) {
			const char *semi = strchr(p, ';');
			size_t len = semi ? (size_t)(semi - p) : strlen(p);

			if (depth < nopen) {
				struct frame *o = &fr->v[open[depth]];

				if (o->len == len && !memcmp(o->name, p, len))
					goto next_frame;
				/* the path diverges here: close what was open below, deepest
				 * first */
				for (size_t k = nopen; k-- > depth;)
					close_frame(fr, kp, open[k], t, &hidden[k],
						    k ? &hidden[k - 1] : &root_hidden);
				nopen = depth;
			}
			if (nopen == open_cap) {
				size_t cap = open_cap ? open_cap * 2 : 64;
				size_t *v = reallocarray(open, cap, sizeof(*v));
				uint64_t *h = v ? reallocarray(hidden, cap, sizeof(*h)) : NULL;

				if (v)
					open = v;
				if (!h) {
					err = -ENOMEM;
					goto out_free_open;
				}
				hidden = h;
				open_cap = cap;
			}
			err = frames_push(fr, p, len, depth + 1, t,
					  depth ? fr->v[open[0]].cat : category_of(p, len));
			if (err)
				goto out_free_open;
			fr->v[fr->n - 1].parent = depth ? open[depth - 1] : 0;
			hidden[nopen] = 0;
			open[nopen++] = fr->n - 1;
next_frame:
			depth++;
			if (!semi)
				break;
			p = semi + 1;
		}
		/* No frame above depth is left to close: a stack that is a prefix of the
		 * open path sorts before it, never after. */
		t += lines[i].count;
	}
	for (size_t k = nopen; k-- > 0;)
		close_frame(fr, kp, open[k], t, &hidden[k], k ? &hidden[k - 1] : &root_hidden);
	kp->pruned->samples += root_hidden;
	err = 0;
out_free_open:
	free(open);
	free(hidden);
	return err;
}

/* Differential: each frame's share of the baseline, found by its parent's node in the
 * baseline's tree (a parent is made before its children), and the difference. A share
 * is one correctly rounded quotient, so equal shares (1 of 3, 2 of 6) are equal
 * doubles and their difference is 0: white. */
static int diff_frames(struct frames *fr, const struct an_folded *baseline, uint64_t total)
{
	struct fg__tree *t = fg__tree_new(baseline);
	long *node;
	uint64_t btotal;

	if (!t)
		return -errno;
	node = calloc(fr->n, sizeof(*node));
	if (!node) {
		fg__tree_free(t);
		return -ENOMEM;
	}
	btotal = fg__tree_total(t);
	for (size_t i = 1; i < fr->n; i++) {
		struct frame *f = &fr->v[i];
		uint64_t a, b = f->end - f->start;

		node[i] = fg__tree_child(t, node[f->parent], f->name, f->len);
		a = fg__tree_count(t, node[i]);
		f->base = btotal ? (double)a / (double)btotal : 0;
		f->delta = (double)b / (double)total - f->base;
	}
	fr->v[0].base = btotal ? 1 : 0;
	fr->v[0].delta = btotal ? 0 : 1;
	free(node);
	fg__tree_free(t);
	return 0;
}

static int cmp_frame(const void *a, const void *b)
{
	const struct frame *x = a, *y = b;

	if (x->depth != y->depth)
		return (x->depth > y->depth) - (x->depth < y->depth);
	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* ---- text ------------------------------------------------------------------------------ */

/* Decode one UTF-8 character of s[0..len): its length, and *cp (U+FFFD for a byte that
 * does not start a valid, shortest-form character; XML forbids U+FFFE and U+FFFF). */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		*cp = 0xfffd;
		return 1;
	}
	if (len < n)
		goto bad;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			goto bad;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) || v == 0xfffe || v == 0xffff)
		goto bad;
	*cp = v;
	return n;
bad:
	*cp = 0xfffd;
	return 1;
}

static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;
	uint32_t cp;

	for (size_t i = 0; i < len; n++)
		i += utf8_next((const unsigned char *)s + i, len - i, &cp);
	return n;
}

/* Write at most max_chars characters of s[0..len) as XML character data: & < > " are
 * escaped, control characters become spaces and broken UTF-8 becomes U+FFFD, so the
 * document stays well-formed whatever the frame names hold. */
static void put_xml(FILE *out, const char *s, size_t len, size_t max_chars)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0, k = 0; i < len && k < max_chars; k++) {
		size_t n = utf8_next(u + i, len - i, &cp);

		switch (cp) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case 0xfffd:
			fputs("\xef\xbf\xbd", out);
			break;
		default:
			if (cp < 0x20 || cp == 0x7f)
				fputc(' ', out);
			else
				fwrite(u + i, 1, n, out);
		}
		i += n;
	}
}

static void put_str(FILE *out, const char *s)
{
	put_xml(out, s, strlen(s), SIZE_MAX);
}

void fg__xml_str(FILE *out, const char *s)
{
	put_str(out, s);
}

/* The label drawn in a frame w px wide: as many characters as fit, else the start and
 * "..", else nothing (flamegraph.pl's rule, which the script repeats when zooming). */
static void put_label(FILE *out, const char *name, size_t len, double w)
{
	double fit = floor(w / (FONT_SIZE * FONT_WIDTH));
	size_t chars;

	if (fit < 3)
		return;
	chars = utf8_chars(name, len);
	if ((double)chars <= fit) {
		put_xml(out, name, len, SIZE_MAX);
		return;
	}
	put_xml(out, name, len, (size_t)fit - 2);
	fputs("..", out);
}

/* ---- colours ---------------------------------------------------------------------------- */

/* One fixed colour per category, whatever the profile holds, in the legend's order. */
static const struct {
	const char *name;
	unsigned r, g, b;
} category_colors[] = {
	{ "[scheduling]", 97, 146, 235 },    /* blue */
	{ "[submission]", 170, 110, 225 },   /* purple */
	{ "[work]", 100, 190, 100 },         /* green */
	{ "[allocation]", 60, 190, 190 },    /* teal */
	{ "[stack-capture]", 230, 200, 60 }, /* yellow */
	{ "[parking]", 150, 170, 195 },      /* slate */
	{ "[parked]", 150, 170, 195 },       /* off-CPU: an idle worker parked (parking) */
	{ "[blocking]", 225, 100, 150 },     /* pink */
	{ "[kernel]", 225, 120, 90 },        /* coral, beside the kernel frames' orange */
	{ "[other]", 190, 170, 140 },        /* sand: attributed, to none of the above */
};

#define NCATEGORIES (sizeof(category_colors) / sizeof(category_colors[0]))

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && !memcmp(s, prefix, n);
}

static bool is_named(const char *s, size_t len, const char *name)
{
	return len == strlen(name) && !memcmp(s, name, len);
}

/* v in [0, 1) as 16 bits, scaled to [base, base + span). */
static unsigned scale16(uint64_t h, unsigned shift, unsigned base, unsigned span)
{
	return base + (unsigned)((((h >> shift) & 0xffff) * span) >> 16);
}

/* The index of a category root's name in category_colors; -1: not one. */
static int category_of(const char *name, size_t len)
{
	for (size_t i = 0; i < NCATEGORIES; i++)
		if (is_named(name, len, category_colors[i].name))
			return (int)i;
	return -1;
}

static void put_category_rgb(FILE *out, int cat)
{
	fprintf(out, "rgb(%u,%u,%u)", category_colors[cat].r, category_colors[cat].g,
		category_colors[cat].b);
}

/* A shade of category cat's colour for a frame under its root: each channel moved by up
 * to ±20 from the name's hash, so that neighbours differ, and a kernel frame's a third
 * darker, so that the user and kernel halves of a stack stay apart. */
static void put_category_shade(FILE *out, int cat, uint64_t h, bool kernel)
{
	unsigned rgb[3] = { category_colors[cat].r, category_colors[cat].g,
			    category_colors[cat].b };

	for (int i = 0; i < 3; i++) {
		int v = (int)rgb[i] + (int)scale16(h, 16 * (unsigned)i, 0, 41) - 20;

		if (kernel)
			v = v * 2 / 3;
		rgb[i] = v < 0 ? 0 : v > 255 ? 255 : (unsigned)v;
	}
	fprintf(out, "rgb(%u,%u,%u)", rgb[0], rgb[1], rgb[2]);
}

static void put_color(FILE *out, const char *name, size_t len, int cat)
{
	int own = category_of(name, len);
	bool kernel = len >= 4 && !memcmp(name + len - 4, "_[k]", 4);
	uint64_t h;

	if (own >= 0) {
		put_category_rgb(out, own);
		return;
	}
	/* samples we could not attribute: grey, so they never pass for real work */
	if (has_prefix(name, len, "[lost") || has_prefix(name, len, "[truncated") ||
	    has_prefix(name, len, "[unknown]")) {
		fputs("rgb(170,170,170)", out);
		return;
	}
	if (is_named(name, len, "-")) { /* between the user and the kernel stack */
		fputs("rgb(205,205,205)", out);
		return;
	}
	h = an_hash(name, len);
	if (cat >= 0) /* under a category's root: its hue */
		put_category_shade(out, cat, h, kernel);
	else if (kernel) /* kernel: orange */
		fprintf(out, "rgb(%u,%u,%u)", scale16(h, 0, 230, 26), scale16(h, 16, 130, 60),
			scale16(h, 32, 30, 40));
	else /* hot: reds through yellows */
		fprintf(out, "rgb(%u,%u,%u)", scale16(h, 0, 205, 50), scale16(h, 16, 0, 230),
			scale16(h, 32, 0, 55));
}

/* ---- the document ---------------------------------------------------------------------- */

/* A coordinate in tenths of a pixel, written as flamegraph.pl writes them ("%.1f"). */
static void put_tenths(FILE *out, long long v)
{
	fprintf(out, "%lld.%lld", v / 10, v % 10);
}

/* The subtitle cut into lines that fit the image's width (at " · " where it can, else at
 * a space), at most SUB_LINES, the last cut short with ".." if the text goes on: each
 * line's start and length. A width in bytes, which a character of two (·, µ) counts
 * twice: a line may fall short, never over. Returns the number of lines. */
static size_t subtitle_lines(const char *sub, unsigned width, size_t start[SUB_LINES],
			     size_t len[SUB_LINES])
{
	size_t fit = (size_t)((double)(width - 2 * XPAD) / (FONT_SIZE * FONT_WIDTH));
	size_t n = 0, at = 0, total = strlen(sub);

	if (fit < 8)
		fit = 8;
	while (at < total && n < SUB_LINES) {
		size_t cut = total - at;

		if (cut > fit) {
			size_t sep = 0, space = 0;

			for (size_t i = 1; i + 1 < fit; i++) {
				if (!strncmp(sub + at + i, " \xc2\xb7 ", 4))
					sep = i;
				if (sub[at + i] == ' ')
					space = i;
			}
			cut = sep ? sep : space ? space : fit;
		}
		start[n] = at;
		len[n++] = cut;
		at += cut;
		/* the separator that ended the line begins no line */
		if (!strncmp(sub + at, " \xc2\xb7 ", 4))
			at += 4;
		else if (sub[at] == ' ')
			at++;
	}
	if (at < total && n)
		len[n - 1] = (size_t)-1; /* cut short: put_head() says so */
	return n;
}

static void put_head(FILE *out, const struct fg_options *o, const char *count_name,
		     unsigned height, uint64_t total, const struct pruned *pruned)
{
	unsigned w = o->width;

	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
		"\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" onload=\"init()\" "
		"viewBox=\"0 0 %u %u\" xmlns=\"http://www.w3.org/2000/svg\" "
		"xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n",
		w, height, w, height);
	fputs("<defs>\n"
	      "<linearGradient id=\"background\" y1=\"0\" y2=\"1\" x1=\"0\" x2=\"0\">"
	      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
	      "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient>\n"
	      "</defs>\n"
	      "<style type=\"text/css\">\n"
	      "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
	      "#title { text-anchor: middle; font-size: 17px; }\n"
	      ".subtitle, #nosamples { text-anchor: middle; fill: rgb(110,110,110); }\n"
	      "#search, #ignorecase { opacity: 0.1; cursor: pointer; }\n"
	      "#search:hover, #search.show, #ignorecase:hover, #ignorecase.show { opacity: 1; }\n"
	      "#unzoom { cursor: pointer; }\n"
	      "#frames > *:hover { stroke: black; stroke-width: 0.5; cursor: pointer; }\n"
	      ".hide { display: none; }\n"
	      ".parent { opacity: 0.5; }\n"
	      "</style>\n",
	      out);
	fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
	fputs(fg__svg_script, out);
	fprintf(out, "var fg_xpad = %d, fg_fontsize = %d, fg_fontwidth = %.2f;\n]]></script>\n",
		XPAD, FONT_SIZE, FONT_WIDTH);

	fprintf(out,
		"<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#background)\"/>\n",
		w, height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"%d\">", w / 2.0, TITLE_Y);
	put_str(out, o->title ? o->title : "Flame Graph");
	fputs("</text>\n", out);
	if (o->subtitle) {
		size_t start[SUB_LINES], len[SUB_LINES];
		size_t n = subtitle_lines(o->subtitle, w, start, len);

		for (size_t i = 0; i < n; i++) {
			bool cut = len[i] == (size_t)-1;
			size_t l = cut ? strlen(o->subtitle + start[i]) : len[i];

			fprintf(out, "<text%s class=\"subtitle\" x=\"%.1f\" y=\"%u\">",
				i ? "" : " id=\"subtitle\"", w / 2.0,
				SUBTITLE_Y + (unsigned)i * SUB_PAD);
			if (cut) {
				size_t fit = (size_t)((double)(w - 2 * XPAD) /
						      (FONT_SIZE * FONT_WIDTH));

				put_xml(out, o->subtitle + start[i], l, fit > 2 ? fit - 2 : 1);
				fputs("..", out);
			} else {
				put_xml(out, o->subtitle + start[i], l, SIZE_MAX);
			}
			fputs("</text>\n", out);
		}
	}
	/* the details line shows the total until the pointer is over a frame */
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\">Total: %" PRIu64 " ", XPAD,
		height - BOTTOM_PAD / 2 + 4, total);
	put_str(out, count_name);
	if (pruned->frames) {
		fprintf(out, "; %" PRIu64 " frames narrower than %g px left out (%" PRIu64 " ",
			pruned->frames, o->min_width, pruned->samples);
		put_str(out, count_name);
		fprintf(out, ", %.2f%%, drawn only as their callers)",
			(double)pruned->samples * 100.0 / (double)total);
	}
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n",
		XPAD, TITLE_Y);
	fprintf(out, "<text id=\"search\" x=\"%u\" y=\"%d\">Search</text>\n", w - XPAD - 100,
		TITLE_Y);
	fprintf(out, "<text id=\"ignorecase\" x=\"%u\" y=\"%d\">ic</text>\n", w - XPAD - 16,
		TITLE_Y);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n", w - XPAD - 100,
		height - BOTTOM_PAD / 2 + 4);
}

/* The legend: each category the profile has, its colour and its share, in
 * category_colors' order, laid out in rows of the image's width from y (the top of the
 * first row). Draws nothing when out is NULL; returns the rows it takes either way. */
static unsigned put_legend(FILE *out, const uint64_t *counts, uint64_t total, unsigned width,
			   unsigned y, const char *count_name)
{
	double x = XPAD;
	unsigned rows = 0;

	for (size_t i = 0; i < NCATEGORIES; i++) {
		const char *name = category_colors[i].name;
		size_t nlen = strlen(name) - 2; /* without the brackets */
		double pct = (double)counts[i] * 100.0 / (double)total, w;
		char label[64];

		if (!counts[i])
			continue;
		snprintf(label, sizeof(label), "%.*s %.1f%%", (int)nlen, name + 1, pct);
		w = LEGEND_BOX + 4 + (double)strlen(label) * FONT_SIZE * FONT_WIDTH + 14;
		if (!rows || (x > XPAD && x + w > width - XPAD)) {
			rows++;
			x = XPAD;
		}
		if (out) {
			unsigned top = y + (rows - 1) * LEGEND_ROW + 3;

			fprintf(out, "<g class=\"category\"><title>%.*s: %" PRIu64 " ", (int)nlen,
				name + 1, counts[i]);
			put_str(out, count_name);
			fprintf(out, ", %.2f%%</title><rect x=\"%.1f\" y=\"%u\" width=\"%d\" "
				     "height=\"%d\" fill=\"",
				pct, x, top, LEGEND_BOX, LEGEND_BOX);
			put_category_rgb(out, (int)i);
			fprintf(out,
				"\" rx=\"2\" ry=\"2\"/><text x=\"%.1f\" y=\"%u\">%s</text></g>\n",
				x + LEGEND_BOX + 4, top + LEGEND_BOX - 1, label);
		}
		x += w;
	}
	return rows;
}

/* maxdelta > 0: a differential flame graph, coloured by fr->delta on that scale. */
static void put_frame(FILE *out, const struct frame *fr, uint64_t total, const char *count_name,
		      unsigned width, unsigned fh, unsigned height, double maxdelta)
{
	double plot = (double)(width - 2 * XPAD) * 10;
	long long x1 = 10 * XPAD + llround((double)fr->start / (double)total * plot);
	long long x2 = 10 * XPAD + llround((double)fr->end / (double)total * plot);
	unsigned y = height - BOTTOM_PAD - (unsigned)(fr->depth + 1) * fh + FRAME_PAD;
	uint64_t count = fr->end - fr->start;

	fputs("<g><title>", out);
	put_xml(out, fr->name, fr->len, SIZE_MAX);
	fprintf(out, " (%" PRIu64 " ", count);
	put_str(out, count_name);
	/* "NAME (N samples; A a%, +d points, B b%)": it ends as the ordinary title does, with
	 * the share drawn, which the script strips to find the name */
	if (maxdelta > 0)
		fprintf(out, "; A %.2f%%, %+.2f points, B", 100 * fr->base, 100 * fr->delta);
	fprintf(out, "%s%.2f%%)</title><rect x=\"", maxdelta > 0 ? " " : ", ",
		(double)count * 100.0 / (double)total);
	put_tenths(out, x1);
	fprintf(out, "\" y=\"%u\" width=\"", y);
	put_tenths(out, x2 - x1);
	fprintf(out, "\" height=\"%u\" fill=\"", fh - FRAME_PAD);
	if (maxdelta > 0 && !is_named(fr->name, fr->len, "-"))
		fg__diff_color(out, fr->delta, maxdelta);
	else
		put_color(out, fr->name, fr->len, fr->cat);
	fputs("\" rx=\"2\" ry=\"2\"/><text x=\"", out);
	put_tenths(out, x1 + 30);
	fprintf(out, "\" y=\"%.1f\">", y + (fh - FRAME_PAD) / 2.0 + 3);
	put_label(out, fr->name, fr->len, (double)(x2 - x1) / 10);
	fputs("</text></g>\n", out);
}

int fg_svg_write(const struct an_folded *f, const struct fg_options *opts, FILE *out)
{
	const struct an_folded_line *lines;
	struct frames fr = { 0 };
	struct fg_options o;
	const char *count_name;
	unsigned top, height, fh, legend_rows;
	uint64_t by_category[NCATEGORIES] = { 0 };
	struct pruned pruned = { 0 };
	struct keep kp;
	size_t n, kept = 0, max_depth = 0;
	uint64_t total;
	double maxdelta = 0;
	int err;

	if (!f || !out)
		return -EINVAL;
	if (opts)
		o = *opts;
	else
		fg_options_default(&o);
	fh = o.frame_height;
	if (o.width < 2 * XPAD + 100 || o.width > 1000000 || fh < 2 || fh > 1000 ||
	    !(o.min_width >= 0))
		return -EINVAL;
	count_name = o.count_name ? o.count_name : "samples";
	if (o.subtitle) {
		size_t start[SUB_LINES], len[SUB_LINES];

		top = TOP_PAD + (unsigned)subtitle_lines(o.subtitle, o.width, start, len) * SUB_PAD;
	} else {
		top = TOP_PAD;
	}

	total = an_folded_total(f);
	if (total == 0) {
		height = top + 2 * fh + BOTTOM_PAD;
		put_head(out, &o, count_name, height, 0, &pruned);
		fprintf(out, "<text id=\"nosamples\" x=\"%.1f\" y=\"%u\">No samples</text>\n",
			o.width / 2.0, top + fh + 4);
		fputs("<g id=\"frames\">\n</g>\n</svg>\n", out);
		return ferror(out) ? -EIO : 0;
	}

	lines = an_folded_lines(f, &n);
	if (!lines)
		return -errno;
	kp = (struct keep){ (double)(o.width - 2 * XPAD) / (double)total, o.min_width,
			    by_category, &pruned };
	err = build_frames(lines, n, total, &kp, &fr);
	if (!err && o.baseline)
		err = diff_frames(&fr, o.baseline, total);
	if (err)
		goto out_free;
	for (size_t i = 0; i < fr.n; i++) {
		if (fr.v[i].depth > max_depth)
			max_depth = fr.v[i].depth;
		if (o.baseline)
			maxdelta = fmax(maxdelta, fabs(fr.v[i].delta));
	}
	kept = fr.n;
	/* a differential graph is coloured by change, not by category: no legend */
	legend_rows = o.baseline ? 0 : put_legend(NULL, by_category, total, o.width, 0, count_name);
	/* at least one sample's share, as flamegraph.pl's scale starts at one sample */
	if (o.baseline)
		maxdelta = fmax(maxdelta, 1.0 / (double)total);
	qsort(fr.v, kept, sizeof(*fr.v), cmp_frame);
	if (max_depth > FG_MAX_DEPTH || max_depth > (100000000 - top - BOTTOM_PAD) / fh) {
		err = -E2BIG;
		goto out_free;
	}
	height = top + legend_rows * LEGEND_ROW + (unsigned)(max_depth + 1) * fh + BOTTOM_PAD;

	put_head(out, &o, count_name, height, total, &pruned);
	if (legend_rows) {
		fputs("<g id=\"legend\">\n", out);
		put_legend(out, by_category, total, o.width, top, count_name);
		fputs("</g>\n", out);
	}
	fputs("<g id=\"frames\">\n", out);
	for (size_t i = 0; i < kept; i++)
		put_frame(out, &fr.v[i], total, count_name, o.width, fh, height, maxdelta);
	fputs("</g>\n</svg>\n", out);
	err = ferror(out) ? -EIO : 0;
out_free:
	free(fr.v);
	return err;
}

struct svg_job {
	const struct an_folded *f;
	const struct fg_options *o;
};

static int write_svg(void *ctx, FILE *out)
{
	const struct svg_job *job = ctx;

	return fg_svg_write(job->f, job->o, out);
}

int fg_svg_write_file(const struct an_folded *f, const struct fg_options *o, const char *path)
{
	struct svg_job job = { f, o };

	if (!f)
		return -EINVAL;
	return an_write_file_atomic(path, write_svg, &job);
}

int fg_svg_write_at(const struct an_folded *f, const struct fg_options *o, int dirfd,
		    const char *name)
{
	struct svg_job job = { f, o };

	if (!f)
		return -EINVAL;
	return an_write_file_at(dirfd, name, write_svg, &job);
}

int fg_svg_write_user(const struct an_folded *f, const struct fg_options *o, const char *path)
{
	struct svg_job job = { f, o };

	if (!f)
		return -EINVAL;
	return an_write_user_file(path, write_svg, &job);
}
