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
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"

struct an_result {
	json_object *root;
	char source[PATH_MAX]; /* the file it was read from, or what the caller named it */
	char dir[PATH_MAX];    /* the folder holding it; "" when parsed from text */
	int dirfd;             /* that folder, opened once: the files it names are opened
				* in it; -1 when parsed from text */
};

/* ---- what is read is checked once, here -------------------------------------------- */

/* Bytes that would act on a terminal or a reader (C0 controls, DEL, and the C1 controls
 * UTF-8 spells 0xc2 0x80-0x9f) as "\xNN" text: a string read back is printed, drawn and
 * copied into reports, and a run folder is anyone's to write. Valid UTF-8 is otherwise
 * kept (json-c has checked it). NULL when s holds none (nothing to do), else a new
 * string. */
static char *escape_controls(const char *s, size_t len)
{
	size_t extra = 0;
	char *out, *o;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			extra += 3;
		else if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
			 (unsigned char)s[i + 1] <= 0x9f)
			extra += 6, i++;
	}
	if (!extra)
		return NULL;
	out = o = malloc(len + extra + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f) {
			o += sprintf(o, "\\x%02x", c);
		} else if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
			   (unsigned char)s[i + 1] <= 0x9f) {
			o += sprintf(o, "\\xc2\\x%02x", (unsigned char)s[++i]);
		} else {
			*o++ = (char)c;
		}
	}
	*o = '\0';
	return out;
}

/* Walk o (at path): every number finite, every string's controls escaped, no member
 * name with a control. 0, or -EINVAL (-ENOMEM) with the path in err. */
static int check_values(json_object *o, char *path, size_t plen, char *err, size_t errlen)
{
	size_t at = strlen(path);
	int rc = 0;

	switch (json_object_get_type(o)) {
	case json_type_double:
		if (!isfinite(json_object_get_double(o))) {
			snprintf(err, errlen, "\"%s\" is not a finite number", path);
			return -EINVAL;
		}
		return 0;
	case json_type_string: {
		char *esc = escape_controls(json_object_get_string(o),
					    (size_t)json_object_get_string_len(o));

		if (esc) {
			rc = json_object_set_string(o, esc) ? 0 : -ENOMEM;
			free(esc);
		}
		if (rc)
			snprintf(err, errlen, "out of memory");
		return rc;
	}
	case json_type_array:
		for (size_t i = 0; !rc && i < json_object_array_length(o); i++) {
			snprintf(path + at, plen - at, "%s%zu", at ? "." : "", i);
			rc = check_values(json_object_array_get_idx(o, i), path, plen, err, errlen);
		}
		break;
	case json_type_object: {
		json_object_object_foreach(o, key, val) {
			for (const char *k = key; *k; k++) {
				if ((unsigned char)*k < 0x20 || *k == 0x7f) {
					snprintf(err, errlen, "a member name under \"%s\" holds a "
						 "control character", at ? path : "(top)");
					return -EINVAL;
				}
			}
			snprintf(path + at, plen - at, "%s%s", at ? "." : "", key);
			rc = check_values(val, path, plen, err, errlen);
			if (rc)
				break;
		}
		break;
	}
	default:
		break;
	}
	path[at] = '\0';
	return rc;
}

static json_object *member(json_object *o, const char *name)
{
	json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, name, &v))
		return NULL;
	return v;
}

/* A run's name, as 'schedlab run' makes it (<stamp>-<workload>-<preset>[-N]): it names
 * folders, so letters, digits and ._+- only, not first a '.' or '-'. */
static bool run_name_ok(const char *s)
{
	size_t n = 0;

	if (!s || !*s || *s == '.' || *s == '-')
		return false;
	for (; s[n]; n++)
		if (!(isalnum((unsigned char)s[n]) || strchr("._+-", s[n])))
			return false;
	return n <= AN_RUN_NAME_MAX;
}

/* A number at least min, integral when whole; NULL counts as absent (ok unless need). */
static bool number_ok(json_object *v, double min, bool whole)
{
	double d;

	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return false;
	d = json_object_get_double(v);
	return isfinite(d) && d >= min && (!whole || d == floor(d));
}

/* What the commands that read a run rely on, checked before any is used: the run's
 * names, its samples, and every file name the document gives for a file of its folder. */
static int check_run(json_object *root, char *err, size_t errlen)
{
	static const char *const strings[] = { "workload", "preset", "unit" };
	static const char *const counts[] = { "n", "forks", "iterations", "workers",
					      "warmup_iterations" };
	static const char *const figures[] = { "score", "error", "sd", "iteration_seconds" };
	json_object *v, *probes;
	size_t n;

	v = member(root, "id");
	if (!json_object_is_type(v, json_type_string) || !run_name_ok(json_object_get_string(v))) {
		snprintf(err, errlen, "\"id\" is %s: a run's name is letters, digits and ._+- "
			 "(at most %d)", v ? "not a run's name" : "missing", AN_RUN_NAME_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		v = member(root, strings[i]);
		if (!json_object_is_type(v, json_type_string) || !json_object_get_string_len(v)) {
			snprintf(err, errlen, "\"%s\" is %s", strings[i],
				 v ? "not a name" : "missing");
			return -EINVAL;
		}
	}
	v = member(root, "samples");
	if (!json_object_is_type(v, json_type_array)) {
		snprintf(err, errlen, "\"samples\" is %s", v ? "not an array" : "missing");
		return -EINVAL;
	}
	n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		if (!number_ok(json_object_array_get_idx(v, i), 0, false)) {
			snprintf(err, errlen, "\"samples.%zu\" is not a number of at least 0", i);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		v = member(root, counts[i]);
		if (v && !number_ok(v, 0, true)) {
			snprintf(err, errlen, "\"%s\" is not a whole number of at least 0",
				 counts[i]);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++) {
		v = member(root, figures[i]);
		if (v && !number_ok(v, 0, false)) {
			snprintf(err, errlen, "\"%s\" is not a number of at least 0", figures[i]);
			return -EINVAL;
		}
	}
	v = member(root, "partial");
	if (v && !json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errlen, "\"partial\" is not true or false");
		return -EINVAL;
	}
	v = member(root, "failure");
	if (v && !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "\"failure\" is not a string");
		return -EINVAL;
	}
	probes = member(root, "probes");
	if (probes && !json_object_is_type(probes, json_type_array)) {
		snprintf(err, errlen, "\"probes\" is not an array");
		return -EINVAL;
	}
	for (size_t i = 0; probes && i < json_object_array_length(probes); i++) {
		static const char *const names[] = { "folded", "svg" };
		json_object *p = json_object_array_get_idx(probes, i), *files;

		if (!json_object_is_type(p, json_type_object) ||
		    !json_object_is_type(member(p, "name"), json_type_string)) {
			snprintf(err, errlen, "\"probes.%zu\" is not a probe with a name", i);
			return -EINVAL;
		}
		for (size_t k = 0; k < 2; k++) {
			v = member(p, names[k]);
			if (v && !(json_object_is_type(v, json_type_string) &&
				   an_file_name_ok(json_object_get_string(v)))) {
				snprintf(err, errlen, "\"probes.%zu.%s\" is not the name of a file "
					 "in the run's folder", i, names[k]);
				return -EINVAL;
			}
		}
		v = member(member(p, "timeline"), "file");
		if (v && !(json_object_is_type(v, json_type_string) &&
			   an_file_name_ok(json_object_get_string(v)))) {
			snprintf(err, errlen, "\"probes.%zu.timeline.file\" is not the name of a "
				 "file in the run's folder", i);
			return -EINVAL;
		}
		files = member(p, "files");
		if (files && !json_object_is_type(files, json_type_array)) {
			snprintf(err, errlen, "\"probes.%zu.files\" is not an array", i);
			return -EINVAL;
		}
		for (size_t k = 0; files && k < json_object_array_length(files); k++) {
			v = json_object_array_get_idx(files, k);
			if (!(json_object_is_type(v, json_type_string) &&
			      an_file_name_ok(json_object_get_string(v)))) {
				snprintf(err, errlen, "\"probes.%zu.files.%zu\" is not the name of "
					 "a file in the run's folder", i, k);
				return -EINVAL;
			}
		}
	}
	return 0;
}

static struct an_result *parse(const char *text, size_t len, const char *source, bool run,
			       char *err, size_t errlen)
{
	struct json_tokener *tok;
	struct an_result *r;
	json_object *root;
	enum json_tokener_error jerr;
	const char *schema;
	char path[512] = "", why[256];
	int rc;

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
	errno = 0;
	root = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!root || jerr != json_tokener_success) {
		/* json-c names no allocation failure: it fails the parse, with malloc's errno */
		if (errno == ENOMEM) {
			snprintf(err, errlen, "%s: out of memory while reading it", source);
		} else {
			snprintf(err, errlen, "%s: not valid JSON at byte %zu: %s (is it a "
				 "result.json that 'schedlab run' wrote?)", source,
				 json_tokener_get_parse_end(tok),
				 json_tokener_error_desc(jerr == json_tokener_success ?
							 json_tokener_continue : jerr));
			errno = EINVAL;
		}
		rc = errno;
		json_object_put(root);
		json_tokener_free(tok);
		errno = rc;
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
	rc = check_values(root, path, sizeof(path), why, sizeof(why));
	if (!rc && run)
		rc = check_run(root, why, sizeof(why));
	if (rc) {
		snprintf(err, errlen, "%s: %s; it is not a result.json that 'schedlab run' wrote",
			 source, why);
		json_object_put(root);
		errno = -rc;
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
	r->dirfd = -1;
	snprintf(r->source, sizeof(r->source), "%s", source);
	return r;
}

struct an_result *an_result_parse(const char *text, size_t len, const char *source, char *err,
				  size_t errlen)
{
	return parse(text, len, source, false, err, errlen);
}

struct an_result *an_result_parse_in(const char *text, size_t len, const char *dir,
				     const char *source, char *err, size_t errlen)
{
	struct an_result *r = parse(text, len, source, false, err, errlen);
	int fd;

	if (!r)
		return NULL;
	/* a folder that cannot be opened holds none of the files: they read as missing */
	fd = an_dir_open(dir);
	if (fd >= 0) {
		snprintf(r->dir, sizeof(r->dir), "%s", dir);
		r->dirfd = fd;
	}
	return r;
}

/* The whole of fd, at most max bytes, NUL-terminated; NULL + errno (EFBIG: larger). */
static char *read_all(int fd, size_t max, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap), *p;
	ssize_t r;

	while (buf) {
		if (n + 1 == cap) {
			if (cap > max) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			p = realloc(buf, cap * 2);
			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			free(buf);
			errno = e;
			return NULL;
		}
		if (r == 0) {
			buf[n] = '\0';
			*len = n;
			return buf;
		}
		n += (size_t)r;
	}
	free(buf);
	errno = ENOMEM;
	return NULL;
}

struct an_result *an_result_load(const char *path, char *err, size_t errlen)
{
	char file[PATH_MAX + 16], dir[PATH_MAX];
	struct an_result *r;
	const char *name;
	struct stat st;
	int dirfd, fd, saved;
	size_t n;
	char *text;

	/* A folder: its result.json, opened in it without following a link (the folder's
	 * own path may go through links the user named: results/latest). A file: that file
	 * as named, in its folder. */
	if (stat(path, &st)) {
		saved = errno;
		snprintf(err, errlen, "%s: %s (name a run folder, e.g. results/latest)", path,
			 strerror(saved));
		errno = saved;
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		size_t plen = strlen(path);

		while (plen > 1 && path[plen - 1] == '/')
			plen--; /* "run/" is the folder "run": its parent is the one above */
		snprintf(dir, sizeof(dir), "%.*s", (int)plen, path);
		snprintf(file, sizeof(file), "%s/result.json", dir);
		name = "result.json";
	} else {
		const char *slash = strrchr(path, '/');

		snprintf(file, sizeof(file), "%s", path);
		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else
			snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path),
				 path);
		name = slash ? slash + 1 : path;
	}
	dirfd = an_dir_open(dir);
	if (dirfd < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(-dirfd));
		errno = -dirfd;
		return NULL;
	}
	fd = an_open_input(dirfd, name, S_ISDIR(st.st_mode));
	if (fd < 0) {
		saved = -fd;
		if (saved == ENOENT && S_ISDIR(st.st_mode))
			snprintf(err, errlen, "%s: no result.json in this folder (%s): name a run "
				 "folder that 'schedlab run' wrote", path, strerror(saved));
		else
			snprintf(err, errlen, "%s: %s", file, an_file_strerror(saved));
		goto out_close_dir;
	}
	text = read_all(fd, AN_RESULT_MAX_BYTES, &n);
	saved = errno;
	close(fd);
	if (!text) {
		if (saved == EFBIG)
			snprintf(err, errlen, "%s: larger than %d MiB, too large to be a "
				 "result.json", file, AN_RESULT_MAX_BYTES >> 20);
		else
			snprintf(err, errlen, "%s: %s", file, strerror(saved));
		goto out_close_dir;
	}
	r = parse(text, n, file, true, err, errlen);
	saved = errno;
	free(text);
	if (!r)
		goto out_close_dir;
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->dirfd = dirfd;
	return r;

out_close_dir:
	close(dirfd);
	errno = saved;
	return NULL;
}

void an_result_free(struct an_result *r)
{
	if (!r)
		return;
	json_object_put(r->root);
	if (r->dirfd >= 0)
		close(r->dirfd);
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

struct an_folded *an_result_folded(const struct an_result *r, const char *name, char *err,
				   size_t errlen)
{
	char label[PATH_MAX + NAME_MAX + 2];

	snprintf(label, sizeof(label), "%s/%s", r->dir, name ? name : "");
	if (r->dirfd < 0) {
		snprintf(err, errlen, "%s: the result was not read from a folder", label);
		errno = ENOENT;
		return NULL;
	}
	return an_folded_read_at(r->dirfd, name, label, err, errlen);
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
		return json_object_get_double(o); /* finite: checked when read */
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
