/*
 * Numbers, units and JSON values as every report writes them: the floor below the
 * writers in analysis/ (report.c, compare.c, counter_report.c, findings.c, suite.c) and
 * those of harness/ and cli/, which call it and which it never calls.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"

void an_format_number(double v, int decimals, char *buf, size_t len)
{
	char digits[64];
	size_t off = 0;
	int start, intlen, i;

	if (!len)
		return;
	if (!isfinite(v)) {
		snprintf(buf, len, "%s", isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
		return;
	}
	snprintf(digits, sizeof(digits), "%.*f", decimals, v);
	start = digits[0] == '-';
	intlen = (int)strcspn(digits + start, ".");
	for (i = 0; digits[i] && off + 1 < len; i++) {
		int pos = i - start; /* position within the integer part */

		if (pos > 0 && pos < intlen && (intlen - pos) % 3 == 0 && off + 2 < len)
			buf[off++] = ',';
		buf[off++] = digits[i];
	}
	buf[off] = '\0';
}

int an_score_decimals(double score, double error)
{
	if (fabs(score) >= 1000)
		return 0;
	if (isfinite(error) && error > 0 && error < 0.005)
		return 3;
	return 2;
}

/* ---- JSON ------------------------------------------------------------------------------ */

void an_json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* JSON has no NaN or infinity: they become null. */
void an_json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.17g", v);
	else
		fputs("null", out);
}

/* ---- units -------------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

int an_unit_higher_is_better(const char *unit)
{
	if (!unit)
		return -1;
	if (ends_with(unit, "/s"))
		return 1;
	if (ends_with(unit, "/op"))
		return 0;
	return -1;
}
