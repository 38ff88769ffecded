/* ELF symbol tables of corrupted binaries (analysis/symtab.c): an__symtab_load_mem() of
 * arbitrary bytes, then lookups and a find of every name the lookups give. */
#include "analysis/sym_internal.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct an_symtab *st = an__symtab_load_mem(data, size);
	uint64_t off, va, len;

	if (!st)
		return 0;
	for (size_t i = 0; i + 8 <= size; i += 64) {
		uint64_t a;
		const char *name;

		memcpy(&a, data + i, sizeof(a));
		name = an_symtab_lookup(st, a, &off);
		if (name)
			an_symtab_find(st, name, &va, &len);
	}
	an_symtab_free(st);
	return 0;
}
