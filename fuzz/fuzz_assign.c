/* -c knob=value and -P name=value (harness/harness.c, runtime/config.c, the workloads'
 * parameters in workloads/registry.c): every line of the input is applied as a knob and
 * as a parameter of the workload the first byte picks; a refusal must say why. */
#include "harness/harness.h"
#include "fuzz/fuzz.h"
#include "workloads/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct wl_desc *const *all = wl_all();
	size_t nwl = 0;
	struct hx_spec s;
	char err[512], *text, *line, *save = NULL;

	while (all[nwl])
		nwl++;
	if (!size || !nwl)
		return 0;
	if (hx_spec_init(&s, all[data[0] % nwl]->name, NULL, err, sizeof(err)))
		abort();
	text = fuzz_string(data + 1, size - 1);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		err[0] = '\0';
		if (hx_spec_knob(&s, line, err, sizeof(err)) && !err[0])
			abort();
		err[0] = '\0';
		if (hx_spec_param(&s, line, err, sizeof(err)) && !err[0])
			abort();
	}
	free(text);
	return 0;
}
