/*
 * flamegraphs — folded stacks to a self-contained, interactive SVG.
 *
 * The document has flamegraph.pl's structure: <g id="frames"> holds one <g> per
 * frame with <title>, <rect> and <text>, and embedded script gives click-to-zoom,
 * reset and search with the matched percentage. Output is deterministic: frames in a
 * fixed order (depth, then x), colours from a hash of the name, so golden files work.
 * Under a "[category]" root a frame takes a shade of that category's fixed colour, and
 * a legend above the frames gives each category's colour and share.
 */
#ifndef SCHEDLAB_FLAMEGRAPH_H
#define SCHEDLAB_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "analysis/analysis.h"

struct fg_options {
	const char *title;      /* "Flame Graph" when NULL */
	const char *subtitle;   /* a second line (workload, event, samples); none when NULL */
	const char *count_name; /* "samples" when NULL */
	unsigned width;         /* image width in pixels; 1200 */
	unsigned frame_height;  /* 16 */
	double min_width;       /* frames narrower than this many pixels are left out; 0.1 */
	/* A differential flame graph: the profile drawn (B) keeps its widths, and each frame
	 * is coloured by its share of B's samples minus its share of baseline's (A's), its
	 * callees included: red where larger, blue where smaller, white where equal, the
	 * deepest colour for the largest change (flamegraph.pl's scale). The tooltip gives
	 * both shares and the difference. NULL: the ordinary colours. */
	const struct an_folded *baseline;
};

void fg_options_default(struct fg_options *o);

/* The deepest stack drawn, in frames. At 16 px a level that is over a million pixels of
 * image, past what a viewer can scroll through usefully; the on-CPU probe keeps at most
 * 127 frames a side, so only a hand-made or foreign folded file comes near it. */
#define FG_MAX_DEPTH 65536

/* Render f. An empty profile still renders a valid SVG that says so. 0 or -errno:
 * -E2BIG for a stack deeper than FG_MAX_DEPTH frames. */
int fg_svg_write(const struct an_folded *f, const struct fg_options *o, FILE *out);
/* The same to path, through a temporary file and rename. */
int fg_svg_write_file(const struct an_folded *f, const struct fg_options *o, const char *path);
/* The same as the file name in the folder dirfd (an_write_file_at()). */
int fg_svg_write_at(const struct an_folded *f, const struct fg_options *o, int dirfd,
		    const char *name);
/* The same to a path the user typed (an_write_user_file(): "-", a device, a link). */
int fg_svg_write_user(const struct an_folded *f, const struct fg_options *o, const char *path);

/* A log-log plot (plot.c): series of points with error bars and a fitted power law. */
struct fg_plot_series {
	const char *label;    /* the legend's first line */
	const char *note;     /* its second line (the fit); NULL: none */
	const double *x, *y;  /* positive */
	const double *err;    /* y's error bar, a half-width; NULL, NAN or 0: none */
	size_t n;
	double k, a;          /* the fitted line ln y = a + k ln x; NAN: none drawn */
};

struct fg_plot {
	const char *title, *xlabel, *ylabel;
	/* What y counts, for its ticks and tooltips: "ns" (shown in ns, µs, ms or s) or "B"
	 * (B, kB, MB, GB); NULL: plain numbers. */
	const char *yunit;
	const struct fg_plot_series *series;
	size_t nseries;
};

/* Write p as a self-contained SVG. 0, or -EINVAL for a point that is not positive and
 * finite (a log axis cannot show it), -EIO for a failed write. */
int fg_plot_write(const struct fg_plot *p, FILE *out);

#endif /* SCHEDLAB_FLAMEGRAPH_H */
