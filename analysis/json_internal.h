/*
 * Shared by analysis/ files only: how the reports write JSON, so that result.json and
 * compare.json escape strings and write numbers alike (report.c holds the writers).
 */
#ifndef SCHEDLAB_ANALYSIS_JSON_INTERNAL_H
#define SCHEDLAB_ANALYSIS_JSON_INTERNAL_H

#include <stdio.h>

/* A JSON string, escaped; null for NULL. */
void an__json_str(FILE *out, const char *s);
/* A number with every digit kept; null for NaN and infinities, which JSON lacks. */
void an__json_num(FILE *out, double v);

#endif /* SCHEDLAB_ANALYSIS_JSON_INTERNAL_H */
