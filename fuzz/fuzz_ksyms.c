/* /proc/kallsyms text (analysis/ksyms.c): an_ksyms_load() of arbitrary bytes, then
 * lookups around the first address of each line. */
#include "analysis/analysis.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof(path));
	struct an_ksyms *k = an_ksyms_load(path);
	uint64_t off;

	close(fd);
	if (!k)
		return 0;
	an_ksyms_lookup(k, 0, &off);
	an_ksyms_lookup(k, UINT64_MAX, &off);
	for (size_t i = 0; i + 16 <= size; i += 16) {
		uint64_t a;

		memcpy(&a, data + i, sizeof(a));
		an_ksyms_lookup(k, a, &off);
	}
	an_ksyms_free(k);
	return 0;
}
