/*
 * folded.c — the folded-stack multiset: "root;...;leaf COUNT" lines, exactly as
 * flamegraph.pl reads them.
 *
 * Stacks live in an open-addressing hash map keyed by the joined stack string, so
 * adding a million samples over ten thousand distinct stacks costs one hash and one
 * probe each. The sorted view (strcmp order, the order written) is built lazily and
 * dropped on every change. Invariant: the sum of all counts fits in a uint64_t, so
 * every count and an_folded_total() are exact; an add that would break it is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define FOLDED_MIN_CAP 64 /* slots; always a power of two */

struct folded_entry {
	char *stack; /* NULL: empty slot */
	size_t len;
	uint64_t hash;
	uint64_t count;
};

struct an_folded {
	struct folded_entry *slots;
	size_t cap;  /* power of two */
	size_t used; /* distinct stacks */
	uint64_t total;
	/* The sorted view, rebuilt by an_folded_lines() when stale. It is a cache, so
	 * it is filled through a const pointer; readers on several threads must not
	 * call an_folded_lines() at the same time. */
	struct an_folded_line *lines;
	bool lines_valid;
};

/* FNV-1a, then a 64-bit finalizer so that the low bits mix well: the folded table's slot
 * index, the flame graph's colours. */
uint64_t an_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* ---- sanitizing ------------------------------------------------------------------ */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Where a trailing number as flamegraph.pl's count pattern takes it (\d+(\.\d*)?)
 * starts in s[0..len), or len when s does not end in one. */
static size_t trailing_number(const char *s, size_t len)
{
	size_t i = len, int_end;

	while (i > 0 && is_digit(s[i - 1]))
		i--;
	if (i > 0 && s[i - 1] == '.') {
		/* "12.5" or "12.": the digits after the dot are optional, those before are not */
		int_end = i - 1;
		i = int_end;
		while (i > 0 && is_digit(s[i - 1]))
			i--;
		if (i == int_end)
			return len; /* ".5": no integer part, so no number here */
		return i;
	}
	return i;
}

void an_frame_sanitize(char *name)
{
	size_t len, num;

	for (char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == ';')
			*p = ':';
		else if (c < 0x20 || c == 0x7f)
			*p = ' ';
	}
	/* "frame 42" would read as a second count column: keep the number, lose the space */
	len = strlen(name);
	num = trailing_number(name, len);
	if (num < len && num > 0 && name[num - 1] == ' ')
		name[num - 1] = '_';
}

/* ---- the map ---------------------------------------------------------------------- */

struct an_folded *an_folded_new(void)
{
	struct an_folded *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->slots = calloc(FOLDED_MIN_CAP, sizeof(*f->slots));
	if (!f->slots) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->cap = FOLDED_MIN_CAP;
	return f;
}

void an_folded_free(struct an_folded *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->cap; i++)
		free(f->slots[i].stack);
	free(f->slots);
	free(f->lines);
	free(f);
}

static struct folded_entry *find_slot(struct folded_entry *slots, size_t cap, const char *stack,
				      size_t len, uint64_t hash)
{
	size_t mask = cap - 1;

	for (size_t i = hash & mask;; i = (i + 1) & mask) {
		struct folded_entry *e = &slots[i];

		if (!e->stack)
			return e;
		if (e->hash == hash && e->len == len && !memcmp(e->stack, stack, len))
			return e;
	}
}

/* Make room for `more` new stacks at a load factor of at most one half. */
static int reserve(struct an_folded *f, size_t more)
{
	struct folded_entry *slots;
	size_t cap = f->cap;

	if (more > SIZE_MAX / 4 - f->used)
		return -ENOMEM;
	while ((f->used + more) * 2 > cap)
		cap *= 2;
	if (cap == f->cap)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap; i++) {
		struct folded_entry *e = &f->slots[i];

		if (e->stack)
			*find_slot(slots, cap, e->stack, e->len, e->hash) = *e;
	}
	free(f->slots);
	f->slots = slots;
	f->cap = cap;
	return 0;
}

/* Add count to stack[0..len), copying the string when it is new. */
static int add_joined(struct an_folded *f, const char *stack, size_t len, uint64_t count)
{
	uint64_t hash = an_hash(stack, len);
	struct folded_entry *e;
	int err;

	if (count > UINT64_MAX - f->total)
		return -EOVERFLOW;
	e = find_slot(f->slots, f->cap, stack, len, hash);
	if (!e->stack) {
		err = reserve(f, 1);
		if (err)
			return err;
		e = find_slot(f->slots, f->cap, stack, len, hash);
		e->stack = malloc(len + 1);
		if (!e->stack)
			return -ENOMEM;
		memcpy(e->stack, stack, len);
		e->stack[len] = '\0';
		e->len = len;
		e->hash = hash;
		e->count = 0;
		f->used++;
	}
	/* no overflow: count <= UINT64_MAX - total and e->count <= total */
	e->count += count;
	f->total += count;
	f->lines_valid = false;
	return 0;
}

int an_folded_add(struct an_folded *f, const char *const *frames, size_t nframes, uint64_t count)
{
	static const char empty[] = "[empty]";
	size_t len = 0, pos = 0;
	char *buf;
	int err;

	if (!f || !frames || nframes == 0)
		return -EINVAL;
	for (size_t i = 0; i < nframes; i++) {
		size_t n;

		if (!frames[i])
			return -EINVAL;
		n = frames[i][0] ? strlen(frames[i]) : sizeof(empty) - 1;
		if (n > SIZE_MAX / 2 - len)
			return -ENOMEM;
		len += n + 1; /* the name and its ';' (the last one becomes the NUL) */
	}
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < nframes; i++) {
		const char *name = frames[i][0] ? frames[i] : empty;
		size_t n = strlen(name);

		memcpy(buf + pos, name, n);
		buf[pos + n] = '\0';
		an_frame_sanitize(buf + pos); /* one name at a time: its ';' are not separators */
		pos += n;
		buf[pos++] = ';';
	}
	buf[pos - 1] = '\0';
	err = add_joined(f, buf, pos - 1, count);
	free(buf);
	return err;
}

int an_folded_add_stack(struct an_folded *f, const char *stack, uint64_t count)
{
	if (!f || !stack || !*stack)
		return -EINVAL;
	/* a line break would split the line; a '\r' at the end would be read back as CRLF */
	if (strpbrk(stack, "\n\r"))
		return -EINVAL;
	return add_joined(f, stack, strlen(stack), count);
}

int an_folded_merge(struct an_folded *dst, const struct an_folded *src)
{
	char **copies;
	size_t ncopies = 0, fresh = 0;
	int err;

	if (!dst || !src)
		return -EINVAL;
	if (dst == src)
		return -EINVAL;
	if (src->total > UINT64_MAX - dst->total)
		return -EOVERFLOW;
	/* All allocations first, so that a failure leaves dst as it was. */
	for (size_t i = 0; i < src->cap; i++) {
		const struct folded_entry *e = &src->slots[i];

		if (e->stack && !find_slot(dst->slots, dst->cap, e->stack, e->len, e->hash)->stack)
			fresh++;
	}
	err = reserve(dst, fresh);
	if (err)
		return err;
	copies = calloc(fresh ? fresh : 1, sizeof(*copies));
	if (!copies)
		return -ENOMEM;
	for (size_t i = 0; i < src->cap; i++) {
		const struct folded_entry *e = &src->slots[i];

		if (!e->stack || find_slot(dst->slots, dst->cap, e->stack, e->len, e->hash)->stack)
			continue;
		copies[ncopies] = strdup(e->stack);
		if (!copies[ncopies]) {
			err = -ENOMEM;
			goto out_free_copies;
		}
		ncopies++;
	}
	ncopies = 0;
	for (size_t i = 0; i < src->cap; i++) {
		const struct folded_entry *e = &src->slots[i];
		struct folded_entry *d;

		if (!e->stack)
			continue;
		d = find_slot(dst->slots, dst->cap, e->stack, e->len, e->hash);
		if (!d->stack) {
			d->stack = copies[ncopies++];
			d->len = e->len;
			d->hash = e->hash;
			d->count = 0;
			dst->used++;
		}
		d->count += e->count;
	}
	dst->total += src->total;
	dst->lines_valid = false;
	free(copies);
	return 0;

out_free_copies:
	for (size_t i = 0; i < ncopies; i++)
		free(copies[i]);
	free(copies);
	return err;
}

uint64_t an_folded_total(const struct an_folded *f)
{
	return f ? f->total : 0;
}

size_t an_folded_size(const struct an_folded *f)
{
	return f ? f->used : 0;
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct an_folded_line *)a)->stack,
		      ((const struct an_folded_line *)b)->stack);
}

/* NULL with errno = ENOMEM when the view cannot be built; an empty f gives a valid
 * pointer and *n = 0. */
const struct an_folded_line *an_folded_lines(const struct an_folded *cf, size_t *n)
{
	struct an_folded *f = (struct an_folded *)cf; /* the view is a cache; see struct */
	struct an_folded_line *lines;
	size_t k = 0;

	*n = 0;
	if (!f) {
		errno = EINVAL;
		return NULL;
	}
	if (f->lines_valid) {
		*n = f->used;
		return f->lines;
	}
	lines = realloc(f->lines, (f->used ? f->used : 1) * sizeof(*lines));
	if (!lines) {
		errno = ENOMEM;
		return NULL;
	}
	f->lines = lines;
	for (size_t i = 0; i < f->cap; i++)
		if (f->slots[i].stack)
			lines[k++] = (struct an_folded_line){ .stack = f->slots[i].stack,
							      .count = f->slots[i].count };
	qsort(lines, k, sizeof(*lines), cmp_line);
	f->lines_valid = true;
	*n = k;
	return lines;
}

/* ---- writing ------------------------------------------------------------------------ */

int an_folded_write(const struct an_folded *f, FILE *out)
{
	const struct an_folded_line *lines;
	size_t n;

	if (!f || !out)
		return -EINVAL;
	lines = an_folded_lines(f, &n);
	if (!lines)
		return -errno;
	for (size_t i = 0; i < n; i++)
		if (fprintf(out, "%s %" PRIu64 "\n", lines[i].stack, lines[i].count) < 0)
			return errno ? -errno : -EIO;
	return ferror(out) ? -EIO : 0;
}

static int write_folded(void *ctx, FILE *out)
{
	return an_folded_write(ctx, out);
}

int an_folded_write_file(const struct an_folded *f, const char *path)
{
	if (!f)
		return -EINVAL;
	return an_write_file_atomic(path, write_folded, (void *)f);
}

/* ---- reading ------------------------------------------------------------------------ */

#define FOLDED_GRAMMAR "each line is 'frame;frame;... COUNT'"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

enum count_kind { COUNT_OK, COUNT_NONE, COUNT_NEGATIVE, COUNT_FRACTION, COUNT_TOO_BIG };

/* Classify the last token of a line: a whole number of samples, or why it is not one. */
static enum count_kind parse_count(const char *t, uint64_t *out)
{
	size_t len = strlen(t), digits = 0, dots = 0;
	bool negative = t[0] == '-';
	uint64_t v = 0;

	for (size_t i = negative; i < len; i++) {
		if (is_digit(t[i]))
			digits++;
		else if (t[i] == '.')
			dots++;
		else
			return COUNT_NONE;
	}
	if (digits == 0 || dots > 1)
		return COUNT_NONE;
	if (negative)
		return COUNT_NEGATIVE;
	if (dots)
		return COUNT_FRACTION;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(t[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return COUNT_TOO_BIG;
		v = v * 10 + d;
	}
	*out = v;
	return COUNT_OK;
}

/* Parse one line (no line terminator) into f. On a bad line: -EINVAL and why[] says why. */
static int read_line(struct an_folded *f, char *line, size_t len, char *why, size_t whylen)
{
	size_t end = len, tok, stack_end, num;
	enum count_kind kind;
	uint64_t count = 0;
	const char *t;
	int err;

	if (strlen(line) != len) {
		snprintf(why, whylen, "a NUL byte in the line; folded files are text");
		return -EINVAL;
	}
	/* the count is the last blank-separated token; blanks after it are tolerated */
	while (end > 0 && is_blank(line[end - 1]))
		end--;
	line[end] = '\0';
	tok = end;
	while (tok > 0 && !is_blank(line[tok - 1]))
		tok--;
	stack_end = tok;
	while (stack_end > 0 && is_blank(line[stack_end - 1]))
		stack_end--;
	t = line + tok;

	kind = parse_count(t, &count);
	if (stack_end == 0) {
		if (kind == COUNT_NONE)
			snprintf(why, whylen, "no count at the end of the line; " FOLDED_GRAMMAR);
		else
			snprintf(why, whylen, "no stack before the count; " FOLDED_GRAMMAR);
		return -EINVAL;
	}
	/* flamegraph.pl reads "stack N M" as a differential profile (before, after) */
	num = trailing_number(line, stack_end);
	if (kind != COUNT_NONE && num < stack_end && num > 0 && is_blank(line[num - 1])) {
		snprintf(why, whylen,
			 "a second count column; differential folded files are not accepted here, "
			 "give one profile");
		return -EINVAL;
	}
	switch (kind) {
	case COUNT_OK:
		break;
	case COUNT_NONE:
		snprintf(why, whylen, "no count at the end of the line; " FOLDED_GRAMMAR);
		return -EINVAL;
	case COUNT_NEGATIVE:
		snprintf(why, whylen, "negative count '%s'; counts are numbers of samples", t);
		return -EINVAL;
	case COUNT_FRACTION:
		snprintf(why, whylen, "fractional count '%s'; counts are whole numbers of samples",
			 t);
		return -EINVAL;
	case COUNT_TOO_BIG:
		snprintf(why, whylen, "count '%s' is larger than %" PRIu64, t, UINT64_MAX);
		return -EINVAL;
	}
	line[stack_end] = '\0';
	err = add_joined(f, line, stack_end, count);
	if (err == -EOVERFLOW) {
		snprintf(why, whylen, "the counts add up to more than %" PRIu64, UINT64_MAX);
		return -EINVAL;
	}
	if (err)
		snprintf(why, whylen, "%s", strerror(-err));
	return err;
}

#define LINE_TOO_LONG (-2)

/* getline() that stops at AN_FOLDED_MAX_LINE bytes: a file with no newline (/dev/zero)
 * must not grow the buffer without bound. The line's length with its newline, -1 at end
 * of file (or on an error, in ferror()), LINE_TOO_LONG past the cap. */
static ssize_t read_line_capped(FILE *in, char **line, size_t *cap)
{
	size_t n = 0;
	int c;

	for (;;) {
		c = getc_unlocked(in);
		if (c == EOF)
			break;
		if (n + 2 > *cap) {
			size_t ncap = *cap ? *cap * 2 : 256;
			char *p;

			if (n >= AN_FOLDED_MAX_LINE)
				return LINE_TOO_LONG;
			if (ncap > AN_FOLDED_MAX_LINE + 2)
				ncap = AN_FOLDED_MAX_LINE + 2;
			p = realloc(*line, ncap);
			if (!p)
				return -1;
			*line = p;
			*cap = ncap;
		}
		(*line)[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (n == 0 && c == EOF)
		return -1;
	(*line)[n] = '\0';
	return (ssize_t)n;
}

/* Read from in (closed here), naming path in messages. */
static struct an_folded *read_stream(FILE *in, const char *path, char *err, size_t errlen)
{
	struct an_folded *f = NULL;
	char *line = NULL, why[256];
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int e = 0;

	f = an_folded_new();
	if (!f) {
		e = ENOMEM;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		goto out_close;
	}
	errno = 0;
	while ((len = read_line_capped(in, &line, &cap)) != -1) {
		size_t n = (size_t)len;
		bool blank = true;
		int r;

		lineno++;
		if (an_files_interrupted()) {
			e = EINTR;
			snprintf(err, errlen, "%s:%zu: interrupted", path, lineno);
			goto out_free;
		}
		if (len == LINE_TOO_LONG) {
			e = E2BIG;
			snprintf(err, errlen, "%s:%zu: line longer than %d bytes, the most a folded "
				 "stack line may hold; is this a folded file?",
				 path, lineno, AN_FOLDED_MAX_LINE);
			goto out_free;
		}
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n > 0 && line[n - 1] == '\r')
			line[--n] = '\0';
		for (size_t i = 0; i < n && blank; i++)
			blank = is_blank(line[i]);
		if (blank)
			continue;
		r = read_line(f, line, n, why, sizeof(why));
		if (r) {
			e = -r;
			snprintf(err, errlen, "%s:%zu: %s", path, lineno, why);
			goto out_free;
		}
		errno = 0;
	}
	if (ferror(in) || errno) {
		e = errno ? errno : EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		goto out_free;
	}
	free(line);
	fclose(in);
	return f;

out_free:
	an_folded_free(f);
	f = NULL;
out_close:
	free(line);
	fclose(in);
	errno = e;
	return f;
}

/* Open name in dirfd (AT_FDCWD: a path) as an input, or say why not. */
static struct an_folded *read_at(int dirfd, const char *name, bool nofollow, const char *label,
				 char *err, size_t errlen)
{
	char unused[320];
	FILE *in;
	int e;

	if (!err || errlen == 0) {
		err = unused; /* the caller wants no message; build it somewhere all the same */
		errlen = sizeof(unused);
	}
	err[0] = '\0';
	if (!name) {
		snprintf(err, errlen, "no folded file given");
		errno = EINVAL;
		return NULL;
	}
	in = an_fopen_input(dirfd, name, nofollow);
	if (!in) {
		e = errno;
		snprintf(err, errlen, "%s: %s", label, an_file_strerror(e));
		errno = e;
		return NULL;
	}
	return read_stream(in, label, err, errlen);
}

struct an_folded *an_folded_read(const char *path, char *err, size_t errlen)
{
	return read_at(AT_FDCWD, path, false, path, err, errlen);
}

struct an_folded *an_folded_read_at(int dirfd, const char *name, const char *label, char *err,
				    size_t errlen)
{
	if (!an_file_name_ok(name)) {
		snprintf(err, errlen, "%s: not a file name of its folder", label);
		errno = EINVAL;
		return NULL;
	}
	return read_at(dirfd, name, true, label, err, errlen);
}
