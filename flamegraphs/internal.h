/*
 * Shared by flamegraphs/ files only: the script every SVG embeds.
 */
#ifndef SCHEDLAB_FLAMEGRAPHS_INTERNAL_H
#define SCHEDLAB_FLAMEGRAPHS_INTERNAL_H

/* The interactive part of a flame graph (zoom, search, details), as JavaScript that
 * uses the constants fg_xpad, fg_fontsize and fg_fontwidth, which the writer emits
 * after it (they are read only once the document has loaded). It contains no "]]>",
 * so it can sit in a CDATA section as it is. */
extern const char fg__svg_script[];

#endif /* SCHEDLAB_FLAMEGRAPHS_INTERNAL_H */
