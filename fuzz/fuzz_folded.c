/* Folded-stack files (analysis/folded.c): an_folded_read() of arbitrary bytes, then the
 * sorted lines and a write of what was read, which must not fail on anything it accepted. */
#include "analysis/analysis.h"
#include "fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[256];
	int fd = fuzz_file(data, size, path, sizeof(path));
	struct an_folded *f = an_folded_read(path, err, sizeof(err));
	FILE *out;

	close(fd);
	if (!f)
		return 0;
	an_folded_lines(f, &(size_t){ 0 });
	out = fopen("/dev/null", "w");
	if (!out || an_folded_write(f, out))
		abort();
	fclose(out);
	an_folded_free(f);
	return 0;
}
