/*
 * inlines.c — the functions inlined at an address, from an object's DWARF.
 *
 * A compiler that inlines g into f leaves no symbol for g: the symbol table names f for
 * every byte of g's copy. The debug information keeps g as an inlined-subroutine scope
 * inside f, with the address ranges of the copy, nested as deep as the inlining went.
 * The scopes around an address name the inlined calls there, innermost first: each is a
 * frame of its own, which the folded stacks write "g_[i]" (as perf shows them with
 * --inline), between f and whatever g called.
 *
 * The debug information is the object's own .debug_info, else the detached file under
 * /usr/lib/debug/.build-id that Debian's -dbg packages install; symtab.c opens it when it
 * loads the object (so a file replaced later is not read) and hands over the descriptor.
 * Nothing is read until an address is asked about: then an index of the compilation
 * units' address ranges, from each unit's own DIE (GCC writes no .debug_aranges for C by
 * default, which libdw's dwarf_addrdie needs), and per address the unit's scopes, kept.
 * Names are given as the DWARF has them, a linkage name mangled: usyms.c demangles.
 * The file may come from any process's mappings: libdw checks what it reads, and an
 * address the index cannot place simply has no inlined frames.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/sym_internal.h"

#define INL_BUCKETS 1024

struct cu_range {
	uint64_t lo, hi;  /* [lo, hi) */
	Dwarf_Off die;    /* the unit's DIE */
};

/* One address asked about: its names are names[first .. first + n). */
struct inl_entry {
	uint64_t vaddr;
	uint32_t first, n;
	uint32_t next; /* the bucket's next entry, or UINT32_MAX */
};

struct an__inlines {
	int fd;
	Dwarf *dw;      /* NULL until the first question, or when the file is not DWARF */
	bool opened;
	struct cu_range *cus;
	size_t ncus;
	struct inl_entry *entries;
	size_t nentries, cap_entries;
	uint32_t buckets[INL_BUCKETS];
	char **names;    /* each its own allocation */
	size_t nnames, cap_names;
};

struct an__inlines *an__inlines_new(int fd)
{
	struct an__inlines *in = calloc(1, sizeof(*in));

	if (!in)
		return NULL;
	in->fd = fd;
	memset(in->buckets, 0xff, sizeof(in->buckets));
	return in;
}

void an__inlines_free(struct an__inlines *in)
{
	if (!in)
		return;
	if (in->dw)
		dwarf_end(in->dw);
	if (in->fd >= 0)
		close(in->fd);
	for (size_t i = 0; i < in->nnames; i++)
		free(in->names[i]);
	free(in->cus);
	free(in->entries);
	free(in->names);
	free(in);
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct cu_range *a = pa, *b = pb;

	return (a->lo > b->lo) - (a->lo < b->lo);
}

/* Every unit's address ranges, sorted by their start. */
static void index_units(struct an__inlines *in)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	size_t cap = 0;

	while (dwarf_get_units(in->dw, cu, &next, NULL, NULL, &cudie, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t at = 0;

		cu = next;
		while ((at = dwarf_ranges(&cudie, at, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (in->ncus == cap) {
				struct cu_range *r = realloc(in->cus, (cap = cap ? 2 * cap : 64) *
									 sizeof(*r));

				if (!r)
					return; /* what is indexed so far still answers */
				in->cus = r;
			}
			in->cus[in->ncus++] = (struct cu_range){ lo, hi, dwarf_dieoffset(&cudie) };
		}
	}
	if (in->ncus > 1)
		qsort(in->cus, in->ncus, sizeof(*in->cus), range_cmp);
}

static bool ensure_open(struct an__inlines *in)
{
	if (!in->opened) {
		in->opened = true;
		in->dw = dwarf_begin(in->fd, DWARF_C_READ);
		if (in->dw)
			index_units(in);
	}
	return in->dw && in->ncus;
}

/* The unit holding vaddr: the ranges may nest or overlap (a unit's ranges are not
 * others'), so every range that starts at or below it is a candidate, latest first. */
static bool unit_at(struct an__inlines *in, uint64_t vaddr, Dwarf_Die *cudie)
{
	size_t i = an__count_at_or_below(in->cus, in->ncus, sizeof(*in->cus), vaddr);

	while (i-- > 0) {
		if (vaddr < in->cus[i].hi)
			return dwarf_offdie(in->dw, in->cus[i].die, cudie) != NULL;
	}
	return false;
}

/* A scope's name: its linkage name (mangled, as a symbol table has it), else its name,
 * following the abstract origin an inlined copy points to. NULL when it has neither. */
static const char *scope_name(Dwarf_Die *scope)
{
	Dwarf_Attribute a;
	const char *s;

	if ((dwarf_attr_integrate(scope, DW_AT_linkage_name, &a) ||
	     dwarf_attr_integrate(scope, DW_AT_MIPS_linkage_name, &a)) &&
	    (s = dwarf_formstring(&a)))
		return s;
	if (dwarf_attr_integrate(scope, DW_AT_name, &a) && (s = dwarf_formstring(&a)))
		return s;
	return NULL;
}

static int add_name(struct an__inlines *in, const char *name)
{
	char *copy;

	if (in->nnames == in->cap_names) {
		size_t cap = in->cap_names ? 2 * in->cap_names : 256;
		char **n = cap < UINT32_MAX ? realloc(in->names, cap * sizeof(*n)) : NULL;

		if (!n)
			return -ENOMEM;
		in->names = n;
		in->cap_names = cap;
	}
	if (!(copy = strdup(name)))
		return -ENOMEM;
	in->names[in->nnames++] = copy;
	return 0;
}

/* Look vaddr up in the DWARF and keep what it found: its entry, or NULL out of memory. */
static struct inl_entry *learn(struct an__inlines *in, uint64_t vaddr, uint32_t bucket)
{
	struct inl_entry *e;
	Dwarf_Die cudie, *scopes = NULL, *chain = NULL;
	int n = 0;

	if (in->nentries == in->cap_entries) {
		size_t cap = in->cap_entries ? 2 * in->cap_entries : 256;
		struct inl_entry *v;

		if (cap >= UINT32_MAX || !(v = realloc(in->entries, cap * sizeof(*v))))
			return NULL;
		in->entries = v;
		in->cap_entries = cap;
	}
	e = &in->entries[in->nentries];
	*e = (struct inl_entry){ .vaddr = vaddr, .first = (uint32_t)in->nnames };
	/* dwarf_getscopes gives the innermost scope at vaddr, then the scopes a name there
	 * is looked up in, which for an inlined copy are its definition's; the copies it
	 * sits in are the DIEs around it: dwarf_getscopes_die, innermost first, the
	 * function that holds them all ending them */
	if (unit_at(in, vaddr, &cudie) && dwarf_getscopes(&cudie, vaddr, &scopes) > 0)
		n = dwarf_getscopes_die(&scopes[0], &chain);
	for (int i = 0; i < n && e->n < AN_INLINES_MAX; i++) {
		int tag = dwarf_tag(&chain[i]);
		const char *name;

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue; /* a lexical block */
		name = scope_name(&chain[i]);
		if (add_name(in, name ? name : "[inlined]"))
			break;
		e->n++;
	}
	free(chain);
	free(scopes);
	e->next = in->buckets[bucket];
	in->buckets[bucket] = (uint32_t)in->nentries++;
	return e;
}

size_t an__inlines_at(struct an__inlines *in, uint64_t vaddr, const char **names, size_t max)
{
	uint32_t bucket = (uint32_t)((vaddr * 0x9e3779b97f4a7c15ull) >> 54) % INL_BUCKETS;
	struct inl_entry *e = NULL;
	size_t n;

	if (!in || !ensure_open(in))
		return 0;
	for (uint32_t i = in->buckets[bucket]; i != UINT32_MAX; i = in->entries[i].next)
		if (in->entries[i].vaddr == vaddr) {
			e = &in->entries[i];
			break;
		}
	if (!e && !(e = learn(in, vaddr, bucket)))
		return 0;
	n = e->n < max ? e->n : max;
	for (size_t i = 0; i < n; i++)
		names[i] = in->names[e->first + i];
	return n;
}
