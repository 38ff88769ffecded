/*
 * ksyms.c — kernel symbols from /proc/kallsyms, for naming kernel stack frames.
 *
 * Only text symbols are kept (t, T, w, W; module symbols are the same letters with a
 * "\t[module]" suffix, which is dropped from the name). The table is sorted by address
 * with one entry per address — among aliases the rule of an__alias_cmp() picks the
 * name — so a lookup is one binary search for the last symbol at or below the address.
 * Addresses that read as 0 (kptr_restrict, or a reader without CAP_SYSLOG) are skipped:
 * a table made only of those has no entries, and every lookup answers NULL.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sym_internal.h"

struct an__ksym {
	uint64_t addr;
	uint32_t name; /* offset into an_ksyms.names */
	uint8_t rank;  /* an__alias_cmp() rank: T, W, t, w */
};
_Static_assert(offsetof(struct an__ksym, addr) == 0,
	       "an__count_at_or_below() reads the address first");

struct an_ksyms {
	struct an__ksym *syms;
	size_t n;
	char *names;
};

/* Building state: the arena grows while the file is read. */
struct ksyms_builder {
	struct an__ksym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

static int type_rank(char type)
{
	switch (type) {
	case 'T':
		return 0;
	case 'W':
		return 1;
	case 't':
		return 2;
	case 'w':
		return 3;
	default:
		return -1;
	}
}

static int builder_add(struct ksyms_builder *b, uint64_t addr, int rank, const char *name,
		       size_t len)
{
	uint32_t off;
	int err;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		struct an__ksym *s = realloc(b->syms, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		b->syms = s;
		b->cap = cap;
	}
	err = an__names_add(&b->names, &b->names_len, &b->names_cap, 65536, name, len, &off);
	if (err)
		return err;
	b->syms[b->n++] = (struct an__ksym){
	    .addr = addr,
	    .name = off,
	    .rank = (uint8_t)rank,
	};
	return 0;
}

/* One line: "ADDR TYPE NAME[\t[MODULE]]". Returns 0 (kept or skipped) or -errno. */
static int parse_line(struct ksyms_builder *b, const char *line)
{
	char *end;
	uint64_t addr = strtoull(line, &end, 16);

	if (end == line || (*end != ' ' && *end != '\t'))
		return 0; /* not a symbol line; kallsyms has none, be lenient with fixtures */
	while (*end == ' ' || *end == '\t')
		end++;
	int rank = type_rank(*end);
	if (rank < 0 || (end[1] != ' ' && end[1] != '\t'))
		return 0;
	const char *name = end + 2;
	while (*name == ' ' || *name == '\t')
		name++;
	size_t len = strcspn(name, " \t\r\n");
	if (len == 0 || addr == 0)
		return 0;
	return builder_add(b, addr, rank, name, len);
}

/* Address order; aliases best first. qsort_r carries the arena, so no global is needed. */
static int ksym_cmp_r(const void *pa, const void *pb, void *names)
{
	const struct an__ksym *a = pa, *b = pb;
	const char *n = names;

	if (a->addr != b->addr)
		return (a->addr > b->addr) - (a->addr < b->addr);
	return an__alias_cmp(a->rank, n + a->name, b->rank, n + b->name);
}

struct an_ksyms *an_ksyms_load(const char *path)
{
	struct ksyms_builder b = {0};
	struct an_ksyms *k = NULL;
	char *line = NULL;
	size_t line_cap = 0;
	int err;

	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");
	if (!f)
		return NULL; /* errno from fopen */

	errno = 0;
	while (getline(&line, &line_cap, f) >= 0) {
		err = parse_line(&b, line);
		if (err)
			goto out_free;
	}
	if (ferror(f)) {
		err = errno ? -errno : -EIO;
		goto out_free;
	}

	k = calloc(1, sizeof(*k));
	if (!k) {
		err = -ENOMEM;
		goto out_free;
	}
	if (b.n > 1)
		qsort_r(b.syms, b.n, sizeof(*b.syms), ksym_cmp_r, b.names);
	/* Keep the best name of each address: the first after sorting. */
	size_t n = 0;
	for (size_t i = 0; i < b.n; i++) {
		if (n > 0 && b.syms[n - 1].addr == b.syms[i].addr)
			continue;
		b.syms[n++] = b.syms[i];
	}
	k->syms = b.syms;
	k->n = n;
	k->names = b.names;
	free(line);
	fclose(f);
	return k;

out_free:
	free(line);
	free(b.syms);
	free(b.names);
	fclose(f);
	errno = -err;
	return NULL;
}

const char *an_ksyms_lookup(const struct an_ksyms *k, uint64_t addr, uint64_t *offset)
{
	if (!k || k->n == 0)
		return NULL;
	size_t lo = an__count_at_or_below(k->syms, k->n, sizeof(k->syms[0]), addr);

	if (lo == 0)
		return NULL;
	const struct an__ksym *s = &k->syms[lo - 1];
	if (offset)
		*offset = addr - s->addr;
	return k->names + s->name;
}

void an_ksyms_free(struct an_ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}
