/*
 * plot.c — a log-log plot as a self-contained SVG: each series' points with vertical
 * error bars, its fitted power law as a dashed line, and a legend. What `schedlab sweep`
 * draws time per op against a swept size with.
 *
 * Both axes are logarithmic, ticked at 1, 2 and 5 times each power of ten (only at the
 * powers when the range spans more than three decades); a y that counts time or bytes is
 * labelled in the unit its size calls for ("10 s", not "1e+10"). Output is deterministic: series
 * in the order given, colours from a fixed palette by position, numbers printed with a
 * fixed precision, so the same points give the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "flamegraphs/flamegraph.h"
#include "flamegraphs/internal.h"

#define WIDTH	   980
#define HEIGHT	   520
#define LEFT	   90  /* room for the y tick labels and the axis name */
#define RIGHT	   400 /* the legend */
#define TOP	   50
#define BOTTOM	   60
#define PLOT_W	   (WIDTH - LEFT - RIGHT)
#define PLOT_H	   (HEIGHT - TOP - BOTTOM)
#define FONT	   "Verdana, sans-serif"

/* Colour-blind-safe (Okabe-Ito), by series position. */
static const char *const palette[] = { "#0072b2", "#d55e00", "#009e73", "#cc79a7",
				       "#e69f00", "#56b4e9", "#000000", "#f0e442" };

struct axis {
	double lo, hi; /* log10 of the ends */
};

/* The axis over [min, max], widened by a tenth of its span (a quarter decade when the
 * values are all equal) so that no point sits on the frame. */
static struct axis axis_make(double min, double max)
{
	struct axis a = { log10(min), log10(max) };
	double pad = a.hi > a.lo ? (a.hi - a.lo) / 10 : 0.25;

	a.lo -= pad;
	a.hi += pad;
	return a;
}

static double to_px(const struct axis *a, double v, double px_lo, double px_hi)
{
	return px_lo + (log10(v) - a->lo) / (a->hi - a->lo) * (px_hi - px_lo);
}

static double px_x(const struct axis *a, double v)
{
	return to_px(a, v, LEFT, LEFT + PLOT_W);
}

static double px_y(const struct axis *a, double v)
{
	return to_px(a, v, TOP + PLOT_H, TOP);
}

static bool has_err(const struct fg_plot_series *s, size_t i)
{
	return s->err && isfinite(s->err[i]) && s->err[i] > 0;
}

/* v in unit ("ns", "B"; NULL: none) scaled to the largest unit it is at least one of,
 * *scale the divisor: "2 s" for 2e9 ns. */
static const char *unit_of(double v, const char *unit, double *scale)
{
	static const char *const time[] = { "ns", "µs", "ms", "s" };
	static const char *const bytes[] = { "B", "kB", "MB", "GB", "TB" };
	const char *const *names = NULL;
	size_t n = 0, u = 0;

	*scale = 1;
	if (unit && !strcmp(unit, "ns")) {
		names = time;
		n = sizeof(time) / sizeof(time[0]);
	} else if (unit && !strcmp(unit, "B")) {
		names = bytes;
		n = sizeof(bytes) / sizeof(bytes[0]);
	}
	if (!names)
		return NULL;
	/* a hair under a step still shows as the smaller unit's 1000, not as 1e+03 */
	while (u + 1 < n && fabs(v) / *scale >= 999.5) {
		*scale *= 1000;
		u++;
	}
	return names[u];
}

static void put_tick_label(FILE *out, double v, const char *unit)
{
	double scale;
	const char *name = unit_of(v, unit, &scale);
	char buf[32];

	if (name)
		snprintf(buf, sizeof(buf), "%g %s", v / scale, name);
	else if (v >= 1e5 || v < 1e-3)
		snprintf(buf, sizeof(buf), "%.0e", v);
	else
		snprintf(buf, sizeof(buf), "%g", v);
	fg__xml_str(out, buf);
}

/* "y 1.73 ms ± 5.36 ms" in the tooltip: the value and its error in the value's unit. */
static void put_value(FILE *out, double v, double err, bool with_err, const char *unit)
{
	double scale;
	const char *name = unit_of(v, unit, &scale);
	char buf[96];

	if (name && with_err)
		/* an error larger than its value, written whole: "276 µs ± 1744 µs" */
		snprintf(buf, sizeof(buf), err / scale >= 100 ? "%.4g %s ± %.0f %s" :
				 "%.4g %s ± %.3g %s", v / scale, name, err / scale, name);
	else if (name)
		snprintf(buf, sizeof(buf), "%.4g %s", v / scale, name);
	else if (with_err)
		snprintf(buf, sizeof(buf), "%.6g ± %.3g", v, err);
	else
		snprintf(buf, sizeof(buf), "%.6g", v);
	fg__xml_str(out, buf);
}

/* Ticks and grid lines along one axis. */
static void put_ticks(FILE *out, const struct axis *a, bool vertical, const char *unit)
{
	static const double steps[] = { 1, 2, 5 };
	bool sparse = a->hi - a->lo > 3;

	for (int e = (int)floor(a->lo); e <= (int)ceil(a->hi); e++) {
		for (size_t s = 0; s < (sparse ? 1 : 3); s++) {
			double v = steps[s] * pow(10, e), p;

			if (log10(v) < a->lo || log10(v) > a->hi)
				continue;
			if (vertical) {
				p = px_y(a, v);
				fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
					"stroke=\"#ddd\"/>\n<text x=\"%d\" y=\"%.1f\" "
					"text-anchor=\"end\">", LEFT, p, LEFT + PLOT_W, p, LEFT - 6,
					p + 4);
			} else {
				p = px_x(a, v);
				fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
					"stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%d\" "
					"text-anchor=\"middle\">", p, TOP, p, TOP + PLOT_H, p,
					TOP + PLOT_H + 16);
			}
			put_tick_label(out, v, unit);
			fputs("</text>\n", out);
		}
	}
}

static void put_series(FILE *out, const struct fg_plot_series *s, const char *colour,
		       const struct axis *ax, const struct axis *ay, double ymin,
		       const char *yunit)
{
	double x0 = INFINITY, x1 = 0;

	fprintf(out, "<g class=\"series\" stroke=\"%s\" fill=\"%s\">\n", colour, colour);
	for (size_t i = 0; i < s->n; i++) {
		double x = px_x(ax, s->x[i]), y = px_y(ay, s->y[i]);

		x0 = fmin(x0, s->x[i]);
		x1 = fmax(x1, s->x[i]);
		if (has_err(s, i)) {
			double lo = s->y[i] - s->err[i] > ymin ? s->y[i] - s->err[i] : ymin;
			double top = px_y(ay, s->y[i] + s->err[i]), bot = px_y(ay, lo);

			fprintf(out, "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" "
				"fill=\"none\"/>\n", x, top, bot, x - 4, top, x + 4, x - 4, bot,
				x + 4);
		}
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>", x, y);
		fprintf(out, "x %.6g, y ", s->x[i]);
		put_value(out, s->y[i], has_err(s, i) ? s->err[i] : 0, has_err(s, i), yunit);
		fputs("</title></circle>\n", out);
	}
	if (s->n && isfinite(s->k) && isfinite(s->a))
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke-dasharray=\"6 4\" stroke-width=\"1.5\" clip-path=\"url(#area)\"/>\n",
			px_x(ax, x0), px_y(ay, exp(s->a) * pow(x0, s->k)), px_x(ax, x1),
			px_y(ay, exp(s->a) * pow(x1, s->k)));
	fputs("</g>\n", out);
}

static void put_legend(FILE *out, const struct fg_plot *p)
{
	for (size_t i = 0; i < p->nseries; i++) {
		const char *colour = palette[i % (sizeof(palette) / sizeof(palette[0]))];
		double y = TOP + 10 + 36.0 * (double)i;
		int x = LEFT + PLOT_W + 20;

		fprintf(out, "<circle cx=\"%d\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x + 6, y,
			colour);
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-dasharray=\"6 4\"/>\n", x, y + 12, x + 14, y + 12, colour);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\">", x + 22, y + 4);
		fg__xml_str(out, p->series[i].label ? p->series[i].label : "");
		fprintf(out, "</text>\n<text x=\"%d\" y=\"%.1f\" fill=\"#555\">", x + 22, y + 17);
		fg__xml_str(out, p->series[i].note ? p->series[i].note : "");
		fputs("</text>\n", out);
	}
}

int fg_plot_write(const struct fg_plot *p, FILE *out)
{
	double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
	struct axis ax, ay;

	for (size_t i = 0; i < p->nseries; i++) {
		const struct fg_plot_series *s = &p->series[i];

		for (size_t j = 0; j < s->n; j++) {
			if (!(s->x[j] > 0) || !(s->y[j] > 0) || !isfinite(s->x[j]) ||
			    !isfinite(s->y[j]))
				return -EINVAL;
			xmin = fmin(xmin, s->x[j]);
			xmax = fmax(xmax, s->x[j]);
			ymin = fmin(ymin, s->y[j]);
			ymax = fmax(ymax, s->y[j] + (has_err(s, j) ? s->err[j] : 0));
		}
	}
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-family=\"%s\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"24\" "
		"font-size=\"16\" text-anchor=\"middle\">", WIDTH, HEIGHT, WIDTH, HEIGHT, FONT,
		WIDTH / 2);
	fg__xml_str(out, p->title ? p->title : "");
	fputs("</text>\n", out);
	if (xmax > 0) {
		ax = axis_make(xmin, xmax);
		ay = axis_make(ymin, ymax);
		fprintf(out, "<defs><clipPath id=\"area\"><rect x=\"%d\" y=\"%d\" width=\"%d\" "
			"height=\"%d\"/></clipPath></defs>\n<g id=\"grid\" fill=\"#333\">\n", LEFT,
			TOP, PLOT_W, PLOT_H);
		put_ticks(out, &ax, false, NULL);
		put_ticks(out, &ay, true, p->yunit);
		fputs("</g>\n", out);
		for (size_t i = 0; i < p->nseries; i++)
			put_series(out, &p->series[i],
				   palette[i % (sizeof(palette) / sizeof(palette[0]))], &ax, &ay,
				   pow(10, ay.lo), p->yunit);
		put_legend(out, p);
	} else {
		fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no points to plot"
			"</text>\n", LEFT + PLOT_W / 2, TOP + PLOT_H / 2);
	}
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		"stroke=\"#333\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", LEFT, TOP,
		PLOT_W, PLOT_H, LEFT + PLOT_W / 2, HEIGHT - 16);
	fg__xml_str(out, p->xlabel ? p->xlabel : "");
	fprintf(out, "</text>\n<text transform=\"translate(20 %d) rotate(-90)\" "
		"text-anchor=\"middle\">", TOP + PLOT_H / 2);
	fg__xml_str(out, p->ylabel ? p->ylabel : "");
	fputs("</text>\n</svg>\n", out);
	return ferror(out) ? -EIO : 0;
}
