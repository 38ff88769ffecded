/*
 * categories.c — the categories on-CPU time is attributed to, and the stack rules that
 * give a sample its category from its own frames.
 *
 * On the runtime's threads the phase word says the category exactly (runtime/phase.h);
 * the rules are the second, independent method, checked against it on every run, and
 * the only one for threads that are not the runtime's. A rules file is plain text: one
 * rule a line, "CATEGORY NAME...", where a NAME is a function's name, a prefix ending in
 * '*', or a name after '=', which counts only as the user stack's leaf (for a
 * trampoline whose own few instructions are the runtime's but whose callees are not);
 * '#' starts a comment. A sample's frames are read from the leaf toward the root,
 * kernel frames first, and the first frame some rule names decides; so a rule for a
 * function covers everything it calls that no rule names, which is exactly how the
 * phase functions nest. The built-in rules are analysis/categories.rules, compiled in
 * (rules_builtin.S), so that the binary needs no file beside it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "runtime/phase.h"

static const char *const names[AN_CAT_COUNT] = {
	[AN_CAT_OTHER] = "other",
	[AN_CAT_WORK] = "work",
	[AN_CAT_SCHED] = "scheduling",
	[AN_CAT_SUBMIT] = "submission",
	[AN_CAT_PARK] = "parking",
	[AN_CAT_BLOCK] = "blocking",
	[AN_CAT_ALLOC] = "allocation",
	[AN_CAT_STACKCAP] = "stack-capture",
	[AN_CAT_KERNEL] = "kernel",
};

_Static_assert(AN_CAT_WORK == RT_PHASE_RUN && AN_CAT_SCHED == RT_PHASE_SCHED &&
		       AN_CAT_SUBMIT == RT_PHASE_SUBMIT && AN_CAT_PARK == RT_PHASE_PARK &&
		       AN_CAT_BLOCK == RT_PHASE_BLOCK && AN_CAT_ALLOC == RT_PHASE_ALLOC &&
		       AN_CAT_STACKCAP == RT_PHASE_STACKCAP && AN_CAT_OTHER == RT_PHASE_NONE,
	       "a phase is the category of the same number");

const char *an_category_name(unsigned cat)
{
	return cat < AN_CAT_COUNT ? names[cat] : "other";
}

int an_category_parse(const char *name)
{
	for (unsigned i = 0; i < AN_CAT_COUNT; i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -1;
}

unsigned an_phase_category(unsigned phase)
{
	return phase < RT_PHASE_COUNT ? phase : AN_CAT_OTHER;
}

struct rule {
	char *name; /* without the '*' of a prefix or the '=' of a leaf rule */
	size_t len;
	unsigned cat;
	unsigned line;
	bool leaf;  /* applies to the user stack's leaf frame only */
};

struct an_rules {
	struct rule *exact; /* sorted by name, for bsearch */
	size_t nexact;
	struct rule *prefix; /* in file order: the first that matches wins */
	size_t nprefix;
};

static int rule_cmp(const void *pa, const void *pb)
{
	const struct rule *a = pa, *b = pb;

	return strcmp(a->name, b->name);
}

void an_rules_free(struct an_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nexact; i++)
		free(r->exact[i].name);
	for (size_t i = 0; i < r->nprefix; i++)
		free(r->prefix[i].name);
	free(r->exact);
	free(r->prefix);
	free(r);
}

static int add_rule(struct rule **v, size_t *n, const char *name, size_t len, unsigned cat,
		    unsigned line, bool leaf)
{
	struct rule *p = realloc(*v, (*n + 1) * sizeof(**v));

	if (!p)
		return -ENOMEM;
	*v = p;
	p[*n] = (struct rule){
		.name = strndup(name, len), .len = len, .cat = cat, .line = line, .leaf = leaf
	};
	if (!p[*n].name)
		return -ENOMEM;
	(*n)++;
	return 0;
}

struct an_rules *an_rules_parse(const char *text, size_t size, const char *source, char *err,
				size_t errlen)
{
	struct an_rules *r = calloc(1, sizeof(*r));
	const char *p = text, *end = text + size;
	unsigned line = 0;
	int ret = 0;

	if (!r) {
		snprintf(err, errlen, "%s: out of memory", source);
		errno = ENOMEM;
		return NULL;
	}
	while (p < end && !ret) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q;
		char cat[32];
		size_t len;
		int c = -1;
		bool any = false;

		if (!eol)
			eol = end;
		line++;
		q = memchr(p, '#', (size_t)(eol - p));
		if (!q)
			q = eol;
		for (const char *w = p; w < q && !ret;) {
			while (w < q && (*w == ' ' || *w == '\t' || *w == '\r'))
				w++;
			len = 0;
			while (w + len < q && w[len] != ' ' && w[len] != '\t' && w[len] != '\r')
				len++;
			if (!len)
				break;
			if (c < 0) {
				if (len < sizeof(cat)) {
					memcpy(cat, w, len);
					cat[len] = '\0';
					c = an_category_parse(cat);
				}
				if (c < 0) {
					snprintf(err, errlen,
						 "%s:%u: unknown category '%.*s' (the categories: "
						 "work, scheduling, submission, parking, blocking, "
						 "allocation, stack-capture, kernel, other)",
						 source, line, (int)(len < 40 ? len : 40), w);
					ret = -EINVAL;
				}
			} else if ((w[0] == '=' || w[len - 1] == '*') && len == 1) {
				snprintf(err, errlen, "%s:%u: '%c' alone names no function", source,
					 line, w[0]);
				ret = -EINVAL;
			} else if (w[0] == '=' && w[len - 1] == '*') {
				snprintf(err, errlen,
					 "%s:%u: '%.*s': a leaf rule ('=') names one function, not a "
					 "prefix ('*')",
					 source, line, (int)(len < 40 ? len : 40), w);
				ret = -EINVAL;
			} else if (w[len - 1] == '*') {
				ret = add_rule(&r->prefix, &r->nprefix, w, len - 1, (unsigned)c, line,
					       false);
				any = true;
			} else if (w[0] == '=') {
				ret = add_rule(&r->exact, &r->nexact, w + 1, len - 1, (unsigned)c, line,
					       true);
				any = true;
			} else {
				ret = add_rule(&r->exact, &r->nexact, w, len, (unsigned)c, line,
					       false);
				any = true;
			}
			w += len;
		}
		if (!ret && c >= 0 && !any) {
			snprintf(err, errlen, "%s:%u: '%s' names no function (write CATEGORY NAME...)",
				 source, line, cat);
			ret = -EINVAL;
		}
		if (ret == -ENOMEM)
			snprintf(err, errlen, "%s: out of memory", source);
		p = eol + 1;
	}
	if (ret) {
		an_rules_free(r);
		errno = -ret;
		return NULL;
	}
	if (r->nexact) /* qsort's base may not be NULL, even for no elements */
		qsort(r->exact, r->nexact, sizeof(*r->exact), rule_cmp);
	for (size_t i = 1; i < r->nexact; i++) {
		const struct rule *a = &r->exact[i - 1], *b = &r->exact[i];

		if (strcmp(a->name, b->name))
			continue;
		snprintf(err, errlen, "%s:%u: '%s' already has a rule (line %u)", source,
			 a->line > b->line ? a->line : b->line, a->name,
			 a->line > b->line ? b->line : a->line);
		an_rules_free(r);
		errno = EINVAL;
		return NULL;
	}
	return r;
}

/* analysis/categories.rules, from rules_builtin.S */
extern const char an__rules_text[], an__rules_text_end[];

struct an_rules *an_rules_builtin(char *err, size_t errlen)
{
	return an_rules_parse(an__rules_text, (size_t)(an__rules_text_end - an__rules_text),
			      "analysis/categories.rules (built in)", err, errlen);
}

struct an_rules *an_rules_load(const char *path, char *err, size_t errlen)
{
	struct an_rules *r;
	char *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f = fopen(path, "r");
	int e;

	if (!f) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	for (;;) {
		size_t n;

		if (len == cap) {
			char *p;

			/* room for one byte past the limit, so that a file of exactly 16
			 * MiB reads to its end and only a larger one fills the buffer */
			if (cap > (16u << 20)) {
				snprintf(err, errlen, "%s: larger than 16 MiB: not a rules file", path);
				free(text);
				fclose(f);
				errno = EFBIG;
				return NULL;
			}
			cap = cap ? cap * 2 : 8192;
			if (cap > (16u << 20))
				cap = (16u << 20) + 1;
			p = realloc(text, cap);
			if (!p) {
				snprintf(err, errlen, "%s: out of memory", path);
				free(text);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			text = p;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		e = errno ? errno : EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		free(text);
		fclose(f);
		errno = e;
		return NULL;
	}
	fclose(f);
	r = an_rules_parse(text, len, path, err, errlen);
	e = errno;
	free(text);
	errno = e;
	return r;
}

size_t an_rules_count(const struct an_rules *r)
{
	return r ? r->nexact + r->nprefix : 0;
}

static int rule_of(const struct an_rules *r, const char *frame, bool user_leaf)
{
	struct rule key = { .name = (char *)frame };
	/* bsearch's base may not be NULL, even for no elements */
	const struct rule *hit = r->nexact ? bsearch(&key, r->exact, r->nexact, sizeof(*r->exact),
						     rule_cmp)
					   : NULL;

	if (hit && (!hit->leaf || user_leaf))
		return (int)hit->cat;
	for (size_t i = 0; i < r->nprefix; i++)
		if (!strncmp(frame, r->prefix[i].name, r->prefix[i].len))
			return (int)r->prefix[i].cat;
	return -1;
}

static bool kernel_frame(const char *name)
{
	size_t len = strlen(name);

	return len >= 4 && !strcmp(name + len - 4, "_[k]");
}

int an_rules_classify(const struct an_rules *r, const char *const *leaf_first, size_t n)
{
	bool seen_user = false;

	for (size_t i = 0; r && i < n; i++) {
		bool user = !kernel_frame(leaf_first[i]);
		int c = rule_of(r, leaf_first[i], user && !seen_user);

		seen_user |= user;
		if (c >= 0)
			return c;
	}
	return -1;
}
