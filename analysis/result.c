/*
 * result.c — a run's result.json read back, for the commands that reason over finished
 * runs (diagnose, compare, sweep) and for the findings a report leads with.
 *
 * Values are reached by a path of member names and array indexes joined by '.':
 * "runtime.stranded_ns", "probes.0.samples", "per_worker.rows.1.3". json-c stays behind
 * this file: what the rest of the project sees is numbers, strings and lengths, with
 * NAN, NULL and 0 for what a document does not hold, so an older or a partial
 * result.json reads as what it has.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"

struct an_result {
	json_object *root;
	char source[PATH_MAX]; /* the file it was read from, or what the caller named it */
	char dir[PATH_MAX];    /* the folder holding it; "" when parsed from text */
};

struct an_result *an_result_parse(const char *text, size_t len, const char *source, char *err,
				  size_t errlen)
{
	struct json_tokener *tok;
	struct an_result *r;
	json_object *root;
	enum json_tokener_error jerr;
	const char *schema;

	if (len > INT_MAX) {
		snprintf(err, errlen, "%s: too large to be a result.json", source);
		errno = EFBIG;
		return NULL;
	}
	tok = json_tokener_new();
	if (!tok) {
		snprintf(err, errlen, "%s: out of memory", source);
		errno = ENOMEM;
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!root || jerr != json_tokener_success) {
		snprintf(err, errlen, "%s: not valid JSON at byte %zu: %s (is it a result.json "
			 "that 'schedlab run' wrote?)", source, json_tokener_get_parse_end(tok),
			 json_tokener_error_desc(jerr == json_tokener_success ?
						 json_tokener_continue : jerr));
		json_object_put(root);
		json_tokener_free(tok);
		errno = EINVAL;
		return NULL;
	}
	json_tokener_free(tok);
	schema = json_object_is_type(root, json_type_object) ?
			 json_object_get_string(json_object_object_get(root, "schema")) : NULL;
	if (!schema || strncmp(schema, "schedlab-result/", 16)) {
		snprintf(err, errlen, "%s: not a schedlab result (no \"schema\": "
			 "\"schedlab-result/N\")", source);
		json_object_put(root);
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		json_object_put(root);
		snprintf(err, errlen, "%s: out of memory", source);
		errno = ENOMEM;
		return NULL;
	}
	r->root = root;
	snprintf(r->source, sizeof(r->source), "%s", source);
	return r;
}

struct an_result *an_result_load(const char *path, char *err, size_t errlen)
{
	char file[PATH_MAX + 16];
	struct an_result *r;
	struct stat st;
	char *text;
	FILE *f;
	size_t n;
	int saved;

	if (stat(path, &st)) {
		saved = errno;
		snprintf(err, errlen, "%s: %s (name a run folder, e.g. results/latest)", path,
			 strerror(saved));
		errno = saved;
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(file, sizeof(file), "%s/result.json", path);
		if (stat(file, &st)) {
			saved = errno;
			snprintf(err, errlen, "%s: no result.json in this folder (%s): name a run "
				 "folder that 'schedlab run' wrote", path, strerror(saved));
			errno = saved;
			return NULL;
		}
	} else {
		snprintf(file, sizeof(file), "%s", path);
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", file);
		errno = EINVAL;
		return NULL;
	}
	if (st.st_size > (64 << 20)) {
		snprintf(err, errlen, "%s: %lld bytes is too large to be a result.json", file,
			 (long long)st.st_size);
		errno = EFBIG;
		return NULL;
	}
	f = fopen(file, "r");
	if (!f) {
		saved = errno;
		snprintf(err, errlen, "%s: %s", file, strerror(saved));
		errno = saved;
		return NULL;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		fclose(f);
		snprintf(err, errlen, "%s: out of memory", file);
		errno = ENOMEM;
		return NULL;
	}
	n = fread(text, 1, (size_t)st.st_size, f);
	saved = ferror(f) ? errno : 0;
	fclose(f);
	if (saved) {
		free(text);
		snprintf(err, errlen, "%s: %s", file, strerror(saved));
		errno = saved;
		return NULL;
	}
	text[n] = '\0';
	r = an_result_parse(text, n, file, err, errlen);
	saved = errno;
	free(text);
	if (!r) {
		errno = saved;
		return NULL;
	}
	if (S_ISDIR(st.st_mode) || !strchr(file, '/')) {
		snprintf(r->dir, sizeof(r->dir), "%s", S_ISDIR(st.st_mode) ? path : ".");
	} else {
		size_t dl = (size_t)(strrchr(file, '/') - file);

		snprintf(r->dir, sizeof(r->dir), "%.*s", (int)(dl ? dl : 1), file);
	}
	return r;
}

void an_result_free(struct an_result *r)
{
	if (!r)
		return;
	json_object_put(r->root);
	free(r);
}

const char *an_result_source(const struct an_result *r)
{
	return r->source;
}

const char *an_result_dir(const struct an_result *r)
{
	return r->dir;
}

/* The value at path, or NULL (a JSON null too: *found says which). A component is a
 * member name, or an index for an array. */
static json_object *find(const struct an_result *r, const char *path, bool *found)
{
	json_object *o = r->root;
	const char *p = path;

	*found = false;
	while (o && *p) {
		const char *dot = strchr(p, '.');
		size_t len = dot ? (size_t)(dot - p) : strlen(p);
		char name[128];

		if (len == 0 || len >= sizeof(name))
			return NULL;
		memcpy(name, p, len);
		name[len] = '\0';
		if (json_object_is_type(o, json_type_array)) {
			char *end;
			unsigned long i = strtoul(name, &end, 10);

			if (*end || i >= json_object_array_length(o))
				return NULL;
			o = json_object_array_get_idx(o, i);
		} else if (json_object_is_type(o, json_type_object)) {
			if (!json_object_object_get_ex(o, name, &o))
				return NULL;
		} else {
			return NULL;
		}
		p += len + (dot ? 1 : 0);
		if (!o) { /* a null member: found when last, and nothing below it */
			*found = !*p;
			return NULL;
		}
	}
	*found = !*p;
	return o;
}

static json_object *lookup(const struct an_result *r, const char *path)
{
	bool found;

	return find(r, path, &found);
}

bool an_result_has(const struct an_result *r, const char *path)
{
	bool found;

	find(r, path, &found);
	return found;
}

double an_result_num(const struct an_result *r, const char *path)
{
	json_object *o = lookup(r, path);

	if (!o)
		return NAN;
	switch (json_object_get_type(o)) {
	case json_type_int:
		return (double)json_object_get_int64(o);
	case json_type_double:
		return json_object_get_double(o);
	case json_type_boolean:
		return json_object_get_boolean(o) ? 1 : 0;
	default:
		return NAN;
	}
}

const char *an_result_str(const struct an_result *r, const char *path)
{
	json_object *o = lookup(r, path);

	return o && json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

size_t an_result_len(const struct an_result *r, const char *path)
{
	json_object *o = lookup(r, path);

	if (o && json_object_is_type(o, json_type_array))
		return json_object_array_length(o);
	if (o && json_object_is_type(o, json_type_object))
		return (size_t)json_object_object_length(o);
	return 0;
}

const char *an_result_key(const struct an_result *r, const char *path, size_t i)
{
	json_object *o = lookup(r, path);
	size_t k = 0;

	if (!o || !json_object_is_type(o, json_type_object))
		return NULL;
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (k++ == i)
			return key;
	}
	return NULL;
}

ssize_t an_result_probe(const struct an_result *r, const char *name)
{
	size_t n = an_result_len(r, "probes");
	char path[64];

	for (size_t i = 0; i < n; i++) {
		const char *s;

		snprintf(path, sizeof(path), "probes.%zu.name", i);
		s = an_result_str(r, path);
		snprintf(path, sizeof(path), "probes.%zu.attached", i);
		if (s && !strcmp(s, name) && an_result_num(r, path) > 0)
			return (ssize_t)i;
	}
	return -1;
}

ssize_t an_result_column(const struct an_result *r, const char *table, const char *column)
{
	char path[256];
	size_t n;

	snprintf(path, sizeof(path), "%s.columns", table);
	n = an_result_len(r, path);
	for (size_t i = 0; i < n; i++) {
		const char *name;

		snprintf(path, sizeof(path), "%s.columns.%zu", table, i);
		name = an_result_str(r, path);
		if (name && !strcmp(name, column))
			return (ssize_t)i;
	}
	return -1;
}

double an_result_cell(const struct an_result *r, const char *table, size_t row,
		      const char *column)
{
	char path[256];
	ssize_t col = an_result_column(r, table, column);

	if (col < 0)
		return NAN;
	snprintf(path, sizeof(path), "%s.rows.%zu.%zd", table, row, col);
	return an_result_num(r, path);
}
