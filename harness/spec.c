/*
 * A benchmark's specification: the harness options, the workload and preset by name,
 * its parameters and knobs parsed from the user's `name=value` text, and the argument
 * vector that hands all of it to a fork. Everything here is checked before a fork starts,
 * so a misspelt name fails at once with the valid names listed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

/* The studies' settings: 3 forks, 3 x 1 s warm-up, 3 x 1 s measured. */
static void hx_options_default(struct hx_options *o)
{
	o->forks = 3;
	o->warmup = 3;
	o->iterations = 3;
	o->time_s = 1.0;
}

void hx_options_quick(struct hx_options *o)
{
	o->forks = 1;
	o->warmup = 1;
	o->iterations = 3;
	o->time_s = 0.2;
}

/* ---- the spec ------------------------------------------------------------------------ */

static void names_of_workloads(char *buf, size_t len)
{
	const struct wl_desc *const *all = wl_all();
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; all[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", all[i]->name);
}

static void names_of_presets(char *buf, size_t len)
{
	const char *const *names = rt_preset_names();
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; names[i] && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
}

int hx_spec_init(struct hx_spec *s, const char *workload, const char *preset, char *err,
		 size_t errlen)
{
	char names[512];

	memset(s, 0, sizeof(*s));
	s->wl = wl_find(workload);
	if (!s->wl) {
		names_of_workloads(names, sizeof(names));
		snprintf(err, errlen, "unknown workload '%s'; the workloads are %s", workload, names);
		return -ENOENT;
	}
	if (rt_config_preset(&s->rt, preset ? preset : "ce")) {
		names_of_presets(names, sizeof(names));
		snprintf(err, errlen, "unknown preset '%s'; the presets are %s", preset, names);
		return -ENOENT;
	}
	wl_params_default(s->wl, s->values);
	hx_options_default(&s->opt);
	return 0;
}

int hx_spec_param(struct hx_spec *s, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	char name[64], list[512];
	size_t off = 0;
	int i;

	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(name)) {
		snprintf(err, errlen, "-P %s: expected name=value, e.g. -P %s=%s", assignment,
			 s->wl->params[0].name ? s->wl->params[0].name : "n",
			 s->wl->params[0].name ? s->wl->params[0].def : "1");
		return -EINVAL;
	}
	memcpy(name, assignment, (size_t)(eq - assignment));
	name[eq - assignment] = '\0';
	i = wl_param_index(s->wl, name);
	if (i < 0) {
		list[0] = '\0';
		for (int k = 0; s->wl->params[k].name; k++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
						k ? ", " : "", s->wl->params[k].name);
		snprintf(err, errlen, "%s has no parameter '%s'; its parameters are %s", s->wl->name,
			 name, off ? list : "(none)");
		return -EINVAL;
	}
	if (wl_param_parse(s->wl, i, eq + 1, &s->values[i], err, errlen))
		return -EINVAL;
	return 0;
}

int hx_spec_events(struct hx_spec *s, const char *list, char *err, size_t errlen)
{
	char why[512];
	int n;

	if (!*list) {
		s->events[0] = '\0';
		return 0;
	}
	if (strlen(list) >= sizeof(s->events)) {
		snprintf(err, errlen, "--events: the list is longer than %zu characters",
			 sizeof(s->events) - 1);
		return -EINVAL;
	}
	n = probe_counters_parse(list, NULL, why, sizeof(why));
	/* where libpfm4 does not start, the names cannot be checked, nor counted: the run
	 * goes on and its report says why there are no counts */
	if (n == -ENODEV)
		n = probe_counters_split(list, NULL, why, sizeof(why));
	if (n < 0) {
		snprintf(err, errlen, "--events: %s", why);
		return n;
	}
	snprintf(s->events, sizeof(s->events), "%s", list);
	return 0;
}

int hx_spec_knob(struct hx_spec *s, const char *assignment, char *err, size_t errlen)
{
	const char *eq = strchr(assignment, '=');
	char name[64];
	int ret;

	if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(name)) {
		snprintf(err, errlen, "-c %s: expected knob=value, e.g. -c workers=4 (see 'schedlab "
			 "list --knobs')", assignment);
		return -EINVAL;
	}
	if (s->nknobs == HX_MAX_ASSIGN || strlen(assignment) >= sizeof(s->knobs[0])) {
		snprintf(err, errlen, "-c %s: too many or too long knob settings", assignment);
		return -EINVAL;
	}
	memcpy(name, assignment, (size_t)(eq - assignment));
	name[eq - assignment] = '\0';
	ret = rt_config_set(&s->rt, name, eq + 1, err, errlen);
	if (ret)
		return ret;
	strcpy(s->knobs[s->nknobs++], assignment);
	return 0;
}

void hx_spec_params_text(const struct hx_spec *s, char *buf, size_t len)
{
	size_t off = 0;
	char v[64];

	buf[0] = '\0';
	for (int i = 0; s->wl->params[i].name && off < len; i++) {
		wl_param_format(s->wl, i, &s->values[i], v, sizeof(v));
		off += (size_t)snprintf(buf + off, len - off, "%s%s=%s", i ? " " : "",
					s->wl->params[i].name, v);
	}
}

/* ---- the fork's argument vector ---------------------------------------------------------- */

static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

int hx_fork_argv(const struct hx_spec *spec, int fd, char ***argv_out)
{
	size_t cap = 16 + WL_MAX_PARAMS + HX_MAX_ASSIGN, n = 0;
	char **argv = calloc(cap, sizeof(*argv));
	char v[64];

	if (!argv)
		return -ENOMEM;
#define PUSH(expr)                                       \
	do {                                             \
		if (!(argv[n++] = (expr)))               \
			goto out_nomem;                  \
	} while (0)
	PUSH(strdup("schedlab"));
	PUSH(strdup("__fork"));
	PUSH(xasprintf("--fd=%d", fd));
	PUSH(xasprintf("--preset=%s", spec->rt.preset));
	PUSH(xasprintf("--warmup=%u", spec->opt.warmup));
	PUSH(xasprintf("--iterations=%u", spec->opt.iterations));
	/* %.17g: the fork must time exactly what the controller was asked for */
	PUSH(xasprintf("--time=%.17g", spec->opt.time_s));
	for (int i = 0; spec->wl->params[i].name; i++) {
		wl_param_format(spec->wl, i, &spec->values[i], v, sizeof(v));
		PUSH(xasprintf("-P%s=%s", spec->wl->params[i].name, v));
	}
	for (unsigned i = 0; i < spec->nknobs; i++)
		PUSH(xasprintf("-c%s", spec->knobs[i]));
	if (spec->events[0])
		PUSH(xasprintf("--events=%s", spec->events));
	PUSH(strdup(spec->wl->name));
#undef PUSH
	argv[n] = NULL;
	*argv_out = argv;
	return 0;

out_nomem:
	hx_fork_argv_free(argv);
	return -ENOMEM;
}

void hx_fork_argv_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}
