/*
 * categories.c — the categories on-CPU time is attributed to, and the stack rules that
 * give a sample its category from its own frames.
 *
 * On the runtime's threads the phase word says the category exactly (runtime/phase.h);
 * the rules are the second, independent method, checked against it on every run, and
 * the only one for threads that are not the runtime's. A rules file is plain text: one
 * rule a line, "CATEGORY NAME...", where a NAME is a function's name, a pattern in which
 * '*' stands for any run of characters ("rt_*", "*ForkJoinPool*"), or a name after '=',
 * which counts only as the user stack's leaf (for a trampoline whose own few
 * instructions are the runtime's but whose callees are not); '#' starts a comment. A
 * line "[all threads]" or "[other threads]" says where the rules after it apply: on
 * every thread (the default), or only on threads that are not the runtime's (libc, the
 * kernel, a JVM: code that on the runtime's threads runs inside some phase function,
 * which is what the phase word reports there). A sample's frames are read from the leaf
 * toward the root, kernel frames first, and the first frame some rule names decides; an
 * exact name before any pattern, patterns in file order. So a rule for a function covers
 * everything it calls that no rule names, which is exactly how the phase functions nest.
 * The built-in rules are analysis/categories.rules, compiled in (rules_builtin.S), so
 * that the binary needs no file beside it.
 */
#include <errno.h>
#include <fcntl.h>
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
	char *name; /* without the '=' of a leaf rule; a pattern keeps its '*' */
	size_t len;
	unsigned cat;
	unsigned line;
	bool leaf;   /* applies to the user stack's leaf frame only */
	bool others; /* applies only on threads that are not the runtime's */
};

struct an_rules {
	struct rule *exact; /* sorted by name, for bsearch */
	size_t nexact;
	struct rule *pattern; /* in file order: the first that matches wins */
	size_t npattern;
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
	for (size_t i = 0; i < r->npattern; i++)
		free(r->pattern[i].name);
	free(r->exact);
	free(r->pattern);
	free(r);
}

static int add_rule(struct rule **v, size_t *n, const struct rule *proto, const char *name,
		    size_t len)
{
	struct rule *p = realloc(*v, (*n + 1) * sizeof(**v));

	if (!p)
		return -ENOMEM;
	*v = p;
	p[*n] = *proto;
	p[*n].name = strndup(name, len);
	p[*n].len = len;
	if (!p[*n].name)
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* A "[...]" line in p[0..len) (comment and trailing blanks already cut): which threads
 * the rules after it apply to. 0, or -EINVAL with the reason in err. */
static int parse_section(const char *p, size_t len, const char *source, unsigned line,
			 bool *others, char *err, size_t errlen)
{
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
		len--;
	if (len == 13 && !memcmp(p, "[all threads]", 13)) {
		*others = false;
		return 0;
	}
	if (len == 15 && !memcmp(p, "[other threads]", 15)) {
		*others = true;
		return 0;
	}
	snprintf(err, errlen,
		 "%s:%u: unknown section '%.*s' (write [all threads] or [other threads] alone "
		 "on the line)",
		 source, line, (int)(len < 40 ? len : 40), p);
	return -EINVAL;
}

struct an_rules *an_rules_parse(const char *text, size_t size, const char *source, char *err,
				size_t errlen)
{
	struct an_rules *r = calloc(1, sizeof(*r));
	const char *p = text, *end = text + size;
	unsigned line = 0;
	bool others = false;
	int ret = 0;

	if (!r) {
		snprintf(err, errlen, "%s: out of memory", source);
		errno = ENOMEM;
		return NULL;
	}
	while (p < end && !ret) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *q, *w;
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
		for (w = p; w < q && (*w == ' ' || *w == '\t'); w++)
			;
		if (w < q && *w == '[') {
			ret = parse_section(w, (size_t)(q - w), source, line, &others, err, errlen);
			p = eol + 1;
			continue;
		}
		for (; w < q && !ret;) {
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
			} else {
				struct rule proto = { .cat = (unsigned)c, .line = line,
						      .others = others };
				bool leaf = w[0] == '=';
				const char *star = memchr(w, '*', len);
				size_t stars = 0;

				for (size_t i = 0; i < len; i++)
					stars += w[i] == '*';
				if ((leaf && len == 1) || stars == len) {
					snprintf(err, errlen,
						 "%s:%u: '%.*s' alone names no function (write "
						 "a name, '=name' or a pattern such as 'rt_*')",
						 source, line, (int)(len < 40 ? len : 40), w);
					ret = -EINVAL;
				} else if (leaf && star) {
					snprintf(err, errlen,
						 "%s:%u: '%.*s': a leaf rule ('=') names one "
						 "function, not a pattern ('*')",
						 source, line, (int)(len < 40 ? len : 40), w);
					ret = -EINVAL;
				} else if (star) {
					ret = add_rule(&r->pattern, &r->npattern, &proto, w, len);
				} else {
					proto.leaf = leaf;
					ret = add_rule(&r->exact, &r->nexact, &proto, w + leaf,
						       len - leaf);
				}
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
	for (size_t i = 0; i < r->npattern; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(r->pattern[i].name, r->pattern[j].name))
				continue;
			snprintf(err, errlen, "%s:%u: '%s' already has a rule (line %u; keep one)",
				 source, r->pattern[i].line, r->pattern[i].name,
				 r->pattern[j].line);
			an_rules_free(r);
			errno = EINVAL;
			return NULL;
		}
	}
	if (r->nexact) /* qsort's base may not be NULL, even for no elements */
		qsort(r->exact, r->nexact, sizeof(*r->exact), rule_cmp);
	for (size_t i = 1; i < r->nexact; i++) {
		const struct rule *a = &r->exact[i - 1], *b = &r->exact[i];

		if (strcmp(a->name, b->name))
			continue;
		snprintf(err, errlen, "%s:%u: '%s' already has a rule (line %u; keep one)", source,
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

const char *an_rules_builtin_text(size_t *len)
{
	*len = (size_t)(an__rules_text_end - an__rules_text);
	return an__rules_text;
}

struct an_rules *an_rules_load(const char *path, char *err, size_t errlen)
{
	struct an_rules *r;
	char *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f = an_fopen_input(AT_FDCWD, path, false);
	int e;

	if (!f) {
		e = errno;
		snprintf(err, errlen, "%s: %s", path, an_file_strerror(e));
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
	return r ? r->nexact + r->npattern : 0;
}

/* Whether s matches pat[0..plen), where '*' stands for any run of characters: the
 * classic greedy walk that backs up to the last '*' on a mismatch, linear in practice. */
static bool glob_match(const char *pat, size_t plen, const char *s)
{
	size_t p = 0, star = SIZE_MAX;
	const char *resume = NULL;

	while (*s) {
		if (p < plen && pat[p] == '*') {
			star = p++;
			resume = s;
		} else if (p < plen && pat[p] == *s) {
			p++;
			s++;
		} else if (star != SIZE_MAX) {
			p = star + 1;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}

/* The compiler's clones of a function carry its name and a suffix ("_int_free.part.0",
 * "finish_task_switch.isra.0_[k]"): the name of the function they were cloned from,
 * into buf, or NULL when frame is no such clone. */
static const char *clone_of(const char *frame, char *buf, size_t len)
{
	static const char *const parts[] = { "isra", "constprop", "part", "cold", "lto_priv",
					     "llvm", NULL };
	size_t n = strlen(frame), end = n;
	const char *dot = strchr(frame, '.'), *p;
	bool kernel = n >= 4 && !strcmp(frame + n - 4, "_[k]");

	if (kernel)
		end -= 4;
	if (!dot || dot == frame || (size_t)(dot - frame) + 6 > len)
		return NULL;
	for (p = dot; p < frame + end;) {
		const char *q = p + 1, *e = memchr(q, '.', (size_t)(frame + end - q));
		size_t w, k;

		if (!e)
			e = frame + end;
		w = (size_t)(e - q);
		if (!w)
			return NULL;
		if (strspn(q, "0123456789") < w) {
			for (k = 0; parts[k]; k++)
				if (strlen(parts[k]) == w && !memcmp(q, parts[k], w))
					break;
			if (!parts[k])
				return NULL;
		}
		p = e;
	}
	snprintf(buf, len, "%.*s%s", (int)(dot - frame), frame, kernel ? "_[k]" : "");
	return buf;
}

static const struct rule *exact_rule(const struct an_rules *r, const char *name)
{
	struct rule key = { .name = (char *)name };

	/* bsearch's base may not be NULL, even for no elements */
	return r->nexact ? bsearch(&key, r->exact, r->nexact, sizeof(*r->exact), rule_cmp) : NULL;
}

static bool has_suffix(const char *name, const char *suffix)
{
	size_t len = strlen(name), n = strlen(suffix);

	return len >= n && !strcmp(name + len - n, suffix);
}

/* A rule names a function whether the compiler called it or inlined it: an inlined
 * frame ("tcache_get_[i]") is matched by its function's name. */
static int rule_of(const struct an_rules *r, const char *frame, bool user_leaf, bool runtime)
{
	char base[256], plain[256];
	const char *cloned;
	const struct rule *hit;

	if (has_suffix(frame, "_[i]") && strlen(frame) - 4 < sizeof(plain)) {
		snprintf(plain, sizeof(plain), "%.*s", (int)(strlen(frame) - 4), frame);
		frame = plain;
	}
	hit = exact_rule(r, frame);

	if (!hit && (cloned = clone_of(frame, base, sizeof(base))))
		hit = exact_rule(r, cloned);
	if (hit && (!hit->leaf || user_leaf) && !(hit->others && runtime))
		return (int)hit->cat;
	for (size_t i = 0; i < r->npattern; i++) {
		const struct rule *pr = &r->pattern[i];

		if (!(pr->others && runtime) && glob_match(pr->name, pr->len, frame))
			return (int)pr->cat;
	}
	return -1;
}

/* The user leaf, for rules that hold only there, is the innermost function that was
 * called, with every call inlined into it at the sample's address. A kernel frame whose
 * rule says "kernel" (the scheduler, a futex, a sleep) is the kernel's time only when
 * no user frame under it names a category: a futex wait under Go's futexsleep is the
 * thread parking, as the phase word has it for the runtime's own threads. */
int an_rules_classify(const struct an_rules *r, const char *const *leaf_first, size_t n,
		      bool runtime)
{
	bool seen_user = false;
	int kernel = -1;

	for (size_t i = 0; r && i < n; i++) {
		bool user = !has_suffix(leaf_first[i], "_[k]");
		int c = rule_of(r, leaf_first[i], user && !seen_user, runtime);

		seen_user |= user && !has_suffix(leaf_first[i], "_[i]");
		if (c == AN_CAT_KERNEL && !user) {
			if (kernel < 0)
				kernel = c;
			continue;
		}
		if (c >= 0)
			return c;
	}
	return kernel;
}
