/*
 * `schedlab run --probes alloc` on a malloc-heavy workload (bind-chain, naive
 * interpreter): alloc.folded and alloc.svg in the run folder, the folded total equal to
 * the sampled bytes in result.json, the probe's bytes at least the runtime's own
 * accounting (whose rt_alloc calls go through malloc), both in report.md, and the
 * sample period in the command that reproduces the run.
 */
#include <stdint.h>

#include "analysis/analysis.h"
#include "tests/cli/cli_run.h"
#include "tests/probes/busy.h"

TestSuite(alloc_run, .init = setup, .fini = teardown);

/* Under AddressSanitizer the schedlab binary allocates through the sanitizer's own
 * allocator, which never calls libc's malloc: the probe's uprobes see none of it (the
 * probe tests' helper programs, built without sanitizers, still test the probe there). */
#if defined(RT_SANITIZE_ADDRESS)
#define ALLOC_RUN_OFF 1
#else
#define ALLOC_RUN_OFF 0
#endif

Test(alloc_run, a_run_writes_allocation_stacks_beside_the_accounting, .timeout = 120,
     .disabled = ALLOC_RUN_OFF)
{
	const char *argv[] = { "run", "bind-chain", "-P", "interpreter=naive", "-P", "depth=500",
			       "--quick", "--probes", "alloc", "--alloc-sample", "64K", "--out",
			       in_dir("r"), NULL };
	char path[1024], why[256], *json, *md, *part;
	struct an_folded *f;
	uint64_t sampled, bytes, rt_bytes;

	need_bpf();
	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("r"));
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	part = strstr(json, "{\"name\": \"alloc\", \"attached\": true");
	cr_assert_not_null(part, "%s", json);
	cr_expect_not_null(strstr(json, " --alloc-sample 65536"), "the command: %s", json);
	sampled = json_u64(part, NULL, "sampled_bytes");
	/* the totals follow the per-function figures */
	bytes = json_u64(part, "\"calloc_overflow\": ", "bytes");
	rt_bytes = json_u64(part, "\"runtime_accounting\"", "bytes");
	cr_expect_gt(rt_bytes, 0);
	cr_expect_geq(bytes, rt_bytes, "probe %llu bytes < accounting %llu",
		      (unsigned long long)bytes, (unsigned long long)rt_bytes);

	snprintf(path, sizeof(path), "%s/latest/alloc.folded", in_dir("r"));
	f = an_folded_read(path, why, sizeof(why));
	cr_assert_not_null(f, "%s", why);
	cr_expect_eq(an_folded_total(f), sampled);
	snprintf(path, sizeof(path), "%s/latest/alloc.svg", in_dir("r"));
	cr_expect_eq(access(path, R_OK), 0, "%s", path);

	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("r"));
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	cr_expect_not_null(strstr(md, "### Allocation (alloc)"), "%s", md);
	cr_expect_not_null(strstr(md, "| the runtime's accounting (rt_alloc, rt_calloc) |"), "%s",
			   md);
	an_folded_free(f);
	free(md);
	free(json);
}
