/* /proc/PID/maps text (analysis/procmaps.c): an_procmaps_parse() of arbitrary bytes. */
#include "analysis/sym_internal.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_string(data, size);
	struct an_procmaps *m = an_procmaps_parse(text, 0);

	if (m) {
		/* sorted and not overlapping, as sym_internal.h promises */
		for (size_t i = 0; i < m->n; i++) {
			if (m->maps[i].start >= m->maps[i].end ||
			    (i && m->maps[i - 1].end > m->maps[i].start))
				abort();
			if (an__procmaps_find(m, m->maps[i].start) != (ptrdiff_t)i)
				abort();
		}
		an_procmaps_free(m);
	}
	free(text);
	return 0;
}
