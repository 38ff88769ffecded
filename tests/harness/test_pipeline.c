/*
 * The pipeline: one configuration run in-process, as `schedlab run` and the commands
 * after it call it, from the forks to the run folder, its findings and latest; a run
 * that fails is written as failed and leaves latest alone, and a folder that cannot be
 * made is left to the caller to name.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/harness.h"
#include "tests/harness/hx_test.h"

static char out[] = "/tmp/schedlab-pipeline-XXXXXX";
static struct hx_profile prof;
static struct hx_probeset set;

struct emitted {
	size_t n;
	char workload[64];
	size_t nsamples;
	bool failed;
};

static void on_emit(void *ctx, const struct an_run *run)
{
	struct emitted *e = ctx;

	e->n++;
	snprintf(e->workload, sizeof(e->workload), "%s", run->workload);
	e->nsamples = run->nsamples;
	e->failed = run->error != NULL;
}

static void setup(void)
{
	struct hx_probe_config cfg = { 0 };
	char err[256];

	strcpy(out, "/tmp/schedlab-pipeline-XXXXXX");
	cr_assert_not_null(mkdtemp(out));
	/* no probe attached: the pipeline is what is tested, not the probes */
	cr_assert_eq(hx_profile_open(&prof, false, NULL), 0);
	cr_assert_eq(hx_probeset_open(&set, &prof, 0, &cfg, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	hx_probeset_close(&set);
	hx_profile_close(&prof);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", out);
	cr_expect_eq(system(cmd), 0);
}

static void quick_spec(struct hx_spec *s)
{
	char err[512];

	cr_assert_eq(hx_spec_init(s, "spawn-join", NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hx_spec_param(s, "n=100", err, sizeof(err)), 0, "%s", err);
	hx_options_quick(&s->opt);
	s->opt.warmup = 0;
	s->opt.time_s = 0.05;
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

Test(pipeline, writes_the_run_folder_its_findings_and_latest_in_process, .init = setup,
     .fini = teardown, .timeout = 120)
{
	struct emitted e = { 0 };
	struct hx_pipeline o = { .out = out, .self = schedlab_binary(),
				 .command = "schedlab run spawn-join", .emit = on_emit,
				 .emit_ctx = &e };
	struct hx_pipeline_row row;
	struct an_result *r;
	struct hx_spec s;
	char link[PATH_MAX], target[PATH_MAX], err[512];
	ssize_t n;

	quick_spec(&s);
	cr_assert_eq(hx_pipeline_run(&s, &set, &o, &row), 0, "%s", row.error);
	cr_expect(!row.failed && !row.unwritten && !row.removed && !row.dir_error);
	cr_expect_str_eq(row.workload, "spawn-join");
	cr_expect_eq(row.n, 3);
	cr_expect_gt(row.score.mean, 0);
	cr_expect_eq(row.svg[0], '\0', "no oncpu.svg without the probe");
	cr_expect(exists(row.dir, "result.json") && exists(row.dir, "report.md"), "%s", row.dir);
	cr_expect(!exists(row.dir, "oncpu.folded"));
	cr_expect_eq(e.n, 1, "emitted once");
	cr_expect_str_eq(e.workload, "spawn-join");
	cr_expect_eq(e.nsamples, 3);

	snprintf(link, sizeof(link), "%s/latest", out);
	n = readlink(link, target, sizeof(target) - 1);
	cr_assert_gt(n, 0, "latest is a link");
	target[n] = '\0';
	cr_expect_str_eq(target, strrchr(row.dir, '/') + 1);

	r = an_result_load(row.dir, err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	cr_expect_str_eq(an_result_str(r, "command"), "schedlab run spawn-join");
	cr_expect(an_result_has(r, "findings"), "the findings were computed");
	cr_expect_eq(an_result_len(r, "samples"), 3);
	an_result_free(r);
}

Test(pipeline, a_failed_run_is_written_failed_and_latest_stays, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct emitted e = { 0 };
	/* a binary that exits at once, as a crashing fork would */
	struct hx_pipeline o = { .out = out, .self = "/bin/false", .command = "x",
				 .emit = on_emit, .emit_ctx = &e };
	struct hx_probe_config cfg = { 0 };
	struct hx_pipeline_row row;
	struct hx_probeset bare;
	struct an_result *r;
	struct hx_spec s;
	char link[PATH_MAX], err[512];

	/* and a set without the profile: the report says oncpu was not asked for */
	cr_assert_eq(hx_probeset_open(&bare, NULL, 0, &cfg, err, sizeof(err)), 0, "%s", err);
	quick_spec(&s);
	cr_expect_lt(hx_pipeline_run(&s, &bare, &o, &row), 0);
	hx_probeset_close(&bare);
	cr_expect(row.failed && !row.unwritten && !row.dir_error);
	cr_expect(strstr(row.error, "fork 1"), "%s", row.error);
	cr_expect_eq(row.n, 0);
	cr_expect_eq(e.n, 1);
	cr_expect(e.failed, "the run emitted says it failed");
	r = an_result_load(row.dir, err, sizeof(err));
	cr_assert_not_null(r, "a failed run has its result.json: %s", err);
	cr_expect_not_null(an_result_str(r, "failure"));
	cr_expect_str_eq(an_result_str(r, "probes.0.status"),
			 "not attached: disabled (not in --probes)");
	an_result_free(r);
	snprintf(link, sizeof(link), "%s/latest", out);
	cr_expect_eq(access(link, F_OK), -1, "latest is not made for a failed run");
}

Test(pipeline, a_folder_that_cannot_be_made_is_left_to_the_caller, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct emitted e = { 0 };
	char missing[PATH_MAX];
	struct hx_pipeline o = { .out = missing, .self = schedlab_binary(), .command = "x",
				 .emit = on_emit, .emit_ctx = &e };
	struct hx_pipeline_row row;
	struct hx_spec s;

	snprintf(missing, sizeof(missing), "%s/gone", out);
	quick_spec(&s);
	cr_expect_eq(hx_pipeline_run(&s, &set, &o, &row), -ENOENT);
	cr_expect_eq(row.dir_error, -ENOENT);
	cr_expect(row.failed);
	cr_expect_eq(strncmp(row.dir, missing, strlen(missing)), 0, "it names the folder tried: %s",
		     row.dir);
	cr_expect_eq(e.n, 0, "nothing emitted");
	cr_expect_eq(access(missing, F_OK), -1);
}
