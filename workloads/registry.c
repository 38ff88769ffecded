/*
 * The list of workloads and the typed parameters they share.
 *
 * The table is explicit (no constructor tricks): the workloads live in a static
 * library, and an object nothing refers to would be left out of the link.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workloads/workload.h"

extern const struct wl_desc wl_attempt_collect;
extern const struct wl_desc wl_bind_chain;
extern const struct wl_desc wl_bounded_workers;
extern const struct wl_desc wl_error_pipeline;
extern const struct wl_desc wl_permit;
extern const struct wl_desc wl_queue_spsc;
extern const struct wl_desc wl_sequentially;
extern const struct wl_desc wl_spawn_join;
extern const struct wl_desc wl_stream_par;
extern const struct wl_desc wl_stream_queue;
extern const struct wl_desc wl_tcp_blocking;
extern const struct wl_desc wl_tcp_callback;
extern const struct wl_desc wl_waiting_tasks;
extern const struct wl_desc wl_workers;

static const struct wl_desc *const all[] = {
	&wl_workers,
	&wl_spawn_join,
	&wl_tcp_blocking,
	&wl_tcp_callback,
	&wl_waiting_tasks,
	&wl_permit,
	&wl_queue_spsc,
	&wl_stream_queue,
	&wl_stream_par,
	&wl_bounded_workers,
	&wl_attempt_collect,
	&wl_bind_chain,
	&wl_error_pipeline,
	&wl_sequentially,
	NULL,
};

const struct wl_desc *const *wl_all(void)
{
	return all;
}

const struct wl_desc *wl_find(const char *name)
{
	for (size_t i = 0; all[i]; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

int wl_param_index(const struct wl_desc *d, const char *name)
{
	for (int i = 0; d->params && d->params[i].name; i++)
		if (!strcmp(d->params[i].name, name))
			return i;
	return -1;
}

/* The index of the word of a comma-separated list that equals text, or -1; with
 * text NULL, the start of word `index` (NULL past the end). */
static long choice_find(const char *choices, const char *text, long index, const char **word,
			size_t *wlen)
{
	long k = 0;

	for (const char *p = choices; p && *p; k++) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (text ? n == strlen(text) && !strncmp(p, text, n) : k == index) {
			if (word) {
				*word = p;
				*wlen = n;
			}
			return k;
		}
		p = end ? end + 1 : NULL;
	}
	return -1;
}

int wl_param_parse(const struct wl_desc *d, int i, const char *text, union wl_value *out,
		   char *err, size_t errlen)
{
	const struct wl_param *p = &d->params[i];
	char *end;

	errno = 0;
	switch (p->type) {
	case WL_INT:
	case WL_POW2: {
		long v = strtol(text, &end, 10);
		/* strtol also takes leading spaces and '+' */
		bool digits = (text[0] >= '0' && text[0] <= '9') ||
			      (text[0] == '-' && text[1] >= '0' && text[1] <= '9');

		if (!digits || *end || errno || v < p->min || v > p->max ||
		    (p->type == WL_POW2 && (v & (v - 1)))) {
			snprintf(err, errlen, "%s: -P %s=%s: expected a %s from %.0f to %.0f",
				 d->name, p->name, text,
				 p->type == WL_POW2 ? "power of two" : "whole number", p->min,
				 p->max);
			return -EINVAL;
		}
		out->i = v;
		return 0;
	}
	case WL_REAL: {
		double v = strtod(text, &end);
		/* a decimal fraction: strtod also takes spaces, '+', hex and "inf" */
		bool decimal = *text && strspn(text, "0123456789.-eE+") == strlen(text) &&
			       text[0] != '+' && text[0] != 'e' && text[0] != 'E';

		if (!decimal || *end || errno || !isfinite(v) || v < p->min || v > p->max) {
			snprintf(err, errlen, "%s: -P %s=%s: expected a number from %g to %g", d->name,
				 p->name, text, p->min, p->max);
			return -EINVAL;
		}
		out->r = v;
		return 0;
	}
	case WL_CHOICE: {
		long k = *text ? choice_find(p->choices, text, 0, NULL, NULL) : -1;

		if (k < 0) {
			snprintf(err, errlen, "%s: -P %s=%s: expected one of %s", d->name, p->name,
				 text, p->choices);
			return -EINVAL;
		}
		out->i = k;
		return 0;
	}
	}
	snprintf(err, errlen, "%s: parameter %s has no type", d->name, p->name);
	return -EINVAL;
}

void wl_params_default(const struct wl_desc *d, union wl_value *values)
{
	char err[256];

	for (int i = 0; d->params && d->params[i].name; i++)
		if (wl_param_parse(d, i, d->params[i].def, &values[i], err, sizeof(err)))
			abort(); /* a descriptor whose default is out of its own bounds */
}

void wl_param_format(const struct wl_desc *d, int i, const union wl_value *v, char *buf,
		     size_t len)
{
	const struct wl_param *p = &d->params[i];

	switch (p->type) {
	case WL_INT:
	case WL_POW2:
		snprintf(buf, len, "%ld", v->i);
		break;
	case WL_REAL:
		snprintf(buf, len, "%g", v->r);
		break;
	case WL_CHOICE: {
		const char *word = "?";
		size_t n = 1;

		choice_find(p->choices, NULL, v->i, &word, &n);
		snprintf(buf, len, "%.*s", (int)n, word);
		break;
	}
	}
}

static int index_or_die(const struct wl_ctx *ctx, const char *name)
{
	int i = wl_param_index(ctx->desc, name);

	if (i < 0)
		abort(); /* a workload asking for a parameter it does not declare */
	return i;
}

long wl_int(const struct wl_ctx *ctx, const char *name)
{
	return ctx->values[index_or_die(ctx, name)].i;
}

double wl_real(const struct wl_ctx *ctx, const char *name)
{
	return ctx->values[index_or_die(ctx, name)].r;
}

long wl_choice(const struct wl_ctx *ctx, const char *name)
{
	return ctx->values[index_or_die(ctx, name)].i;
}

void wl_metric_add(struct wl_metric *out, size_t *n, size_t max, const char *name,
		   const char *unit, double value)
{
	if (*n == max)
		return;
	snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
	snprintf(out[*n].unit, sizeof(out[*n].unit), "%s", unit);
	out[*n].value = value;
	(*n)++;
}
