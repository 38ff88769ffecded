/*
 * Shared by flamegraphs/ files only: the script every SVG embeds, text escaping, and the
 * baseline profile's frame tree that a differential flame graph looks each frame up in.
 */
#ifndef SCHEDLAB_FLAMEGRAPHS_INTERNAL_H
#define SCHEDLAB_FLAMEGRAPHS_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/analysis.h"

/* The interactive part of a flame graph (zoom, search, details), as JavaScript that
 * uses the constants fg_xpad, fg_fontsize and fg_fontwidth, which the writer emits
 * after it (they are read only once the document has loaded). It contains no "]]>",
 * so it can sit in a CDATA section as it is. */
extern const char fg__svg_script[];

/* A profile's frames merged from the root, as a flame graph draws them: each node a
 * frame under its parent, with the samples of every stack through it. Node 0 is the
 * root, holding every sample. Names point into the profile's lines: the profile must
 * outlive the tree and stay unchanged. */
struct fg__tree;

struct fg__tree *fg__tree_new(const struct an_folded *f); /* NULL + errno */
void fg__tree_free(struct fg__tree *t);
/* The child of node called name[0..len), or -1 (node -1 too: no such path). */
long fg__tree_child(const struct fg__tree *t, long node, const char *name, size_t len);
uint64_t fg__tree_count(const struct fg__tree *t, long node); /* 0 for node -1 */
uint64_t fg__tree_total(const struct fg__tree *t);

/* The fill of a frame in a differential flame graph, as flamegraph.pl's color_scale()
 * shades it: delta > 0 red, < 0 blue, 0 white, paler as |delta| falls below max. */
void fg__diff_color(FILE *out, double delta, double max);
/* Write s as XML character data, as svg.c escapes its text (& < > " and control
 * characters). */
void fg__xml_str(FILE *out, const char *s);

#endif /* SCHEDLAB_FLAMEGRAPHS_INTERNAL_H */
