/*
 * Shared by flamegraphs/ files only: the script every SVG embeds, and text escaping.
 */
#ifndef SCHEDLAB_FLAMEGRAPHS_INTERNAL_H
#define SCHEDLAB_FLAMEGRAPHS_INTERNAL_H

#include <stdio.h>

/* The interactive part of a flame graph (zoom, search, details), as JavaScript that
 * uses the constants fg_xpad, fg_fontsize and fg_fontwidth, which the writer emits
 * after it (they are read only once the document has loaded). It contains no "]]>",
 * so it can sit in a CDATA section as it is. */
extern const char fg__svg_script[];

/* Write s as XML character data, as svg.c escapes its text (& < > " and control
 * characters). */
void fg__xml_str(FILE *out, const char *s);

#endif /* SCHEDLAB_FLAMEGRAPHS_INTERNAL_H */
