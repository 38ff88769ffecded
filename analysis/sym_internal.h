/*
 * Internals shared by the symbolization files of analysis/ (symtab.c, ksyms.c,
 * procmaps.c, usyms.c) and by nothing else: the parsed form of a /proc/PID/maps
 * snapshot, the ways to load an ELF symbol table that take something other than a
 * path, and the rule that picks one name among aliases at one address.
 */
#ifndef SCHEDLAB_ANALYSIS_SYM_INTERNAL_H
#define SCHEDLAB_ANALYSIS_SYM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/analysis.h"

/* One executable mapping. path is "" for an anonymous mapping, "[vdso]" and the like
 * for the kernel's pseudo mappings, and has any " (deleted)" suffix removed. */
struct an__map {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;	     /* file offset of start */
	uint64_t dev, ino;   /* as /proc/PID/maps prints them; 0, 0 when not a file */
	char *path;
	bool deleted;
};

/* Executable mappings only, sorted by start, not overlapping. */
struct an_procmaps {
	pid_t pid; /* 0: not known, so /proc/PID/map_files cannot be used */
	size_t n;
	struct an__map *maps;
};

/* The index of the mapping holding addr, or -1. O(log n). */
ptrdiff_t an__procmaps_find(const struct an_procmaps *m, uint64_t addr);

/* an_symtab_load() for an open file (the caller keeps fd), or for an ELF image in
 * memory (copied; the vDSO). NULL + errno. */
struct an_symtab *an__symtab_load_fd(int fd);
struct an_symtab *an__symtab_load_mem(const void *image, size_t size);

/* The functions inlined at an address of one object, from its DWARF (inlines.c). new
 * takes over fd, an open file with .debug_info (NULL out of memory); at names the inlined
 * calls around vaddr, innermost first, at most max of them, pointers valid until the next
 * call; 0 where the DWARF names none or cannot be read. */
struct an__inlines;
struct an__inlines *an__inlines_new(int fd);
size_t an__inlines_at(struct an__inlines *in, uint64_t vaddr, const char **names, size_t max);
void an__inlines_free(struct an__inlines *in);

/* an_symtab's inlined calls at vaddr (an__inlines_at()); 0 for a file without DWARF. */
size_t an__symtab_inlines(struct an_symtab *st, uint64_t vaddr, const char **names, size_t max);

/* Order two aliases of one address, best first: rank (lower is better: a global before
 * a weak before a local name), then any name before glibc's "__GI_" ones, then fewer
 * leading underscores, then strcmp, so that the name chosen never depends on the order
 * of a file. <0 when a is better. */
int an__alias_cmp(int rank_a, const char *a, int rank_b, const char *b);

/* Append name[0..len) and a NUL to a growing pool of names (first capacity `initial`);
 * its offset in *off. 0, -ENOMEM, or -EOVERFLOW past 4 GiB (offsets are 32-bit). */
int an__names_add(char **names, size_t *used, size_t *cap, size_t initial, const char *name,
		  size_t len, uint32_t *off);

/* The number of entries whose address is at or below addr, in an array of n entries of
 * `stride` bytes sorted by address, each beginning with its uint64_t address (both
 * symbol tables' entries do): the entry that may hold addr is the one before. */
static inline size_t an__count_at_or_below(const void *entries, size_t n, size_t stride,
					   uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint64_t *at = (const uint64_t *)((const char *)entries + mid * stride);

		if (*at <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif /* SCHEDLAB_ANALYSIS_SYM_INTERNAL_H */
