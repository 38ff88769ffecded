/*
 * Helpers shared by the workload tests: a workload's context on a real runtime under a
 * preset, parameters set from text as a user types them, one op run as the harness
 * runs it (a task submitted from outside the pool) and checked, and the counts the leak
 * checks compare (open descriptors, child processes). Included by each
 * tests/workloads/test_*.c; everything is static inline, so a file uses what it needs.
 */
#ifndef SCHEDLAB_TESTS_WORKLOADS_WL_TEST_H
#define SCHEDLAB_TESTS_WORKLOADS_WL_TEST_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "workloads/workload.h"

/* Workload `name` with default parameters on a runtime under `preset` (NULL: the
 * default); workers 0 keeps the preset's count. */
static inline struct wl_ctx wl_test_ctx(const char *name, const char *preset, unsigned workers)
{
	struct wl_ctx ctx = { 0 };
	struct rt_config c;

	ctx.desc = wl_find(name);
	cr_assert_not_null(ctx.desc, "workload %s", name);
	wl_params_default(ctx.desc, ctx.values);
	if (preset)
		cr_assert_eq(rt_config_preset(&c, preset), 0, "preset %s", preset);
	else
		rt_config_default(&c);
	if (workers)
		c.workers = workers;
	ctx.sched = rt_sched_new(&c);
	cr_assert_not_null(ctx.sched, "rt_sched_new(%s): %s", preset ? preset : "default",
			   strerror(errno));
	return ctx;
}

static inline void wl_test_param(struct wl_ctx *ctx, const char *name, const char *text)
{
	char err[256];
	int i = wl_param_index(ctx->desc, name);

	cr_assert_geq(i, 0, "%s has %s", ctx->desc->name, name);
	cr_assert_eq(wl_param_parse(ctx->desc, i, text, &ctx->values[i], err, sizeof(err)), 0, "%s",
		     err);
}

/* 0, or -EINVAL with the reason in err: what -P name=text does. */
static inline int wl_test_parse(const struct wl_desc *d, const char *name, const char *text,
				char *err, size_t errlen)
{
	union wl_value v;
	int i = wl_param_index(d, name);

	cr_assert_geq(i, 0, "%s has %s", d->name, name);
	return wl_param_parse(d, i, text, &v, err, errlen);
}

static inline void wl_test_setup(struct wl_ctx *ctx)
{
	char err[512] = "";

	if (ctx->desc->setup)
		cr_assert_eq(ctx->desc->setup(ctx, err, sizeof(err)), 0, "%s", err);
}

static inline uint64_t wl_test_op_task(void *arg)
{
	struct wl_ctx *ctx = arg;

	return ctx->desc->op(ctx);
}

/* One op, as the harness runs it: a task submitted from outside the pool, joined. */
static inline uint64_t wl_test_op(struct wl_ctx *ctx)
{
	struct rt_task *t = rt_submit(ctx->sched, wl_test_op_task, ctx);

	cr_assert_not_null(t, "rt_submit: %s", strerror(errno));
	return rt_join(t);
}

/* One op and its check; false with the check's reason in err. */
static inline bool wl_test_op_check(struct wl_ctx *ctx, char *err, size_t errlen)
{
	return ctx->desc->check(ctx, wl_test_op(ctx), err, errlen);
}

/* Set up, run one op, check it; the op's result. */
static inline uint64_t wl_test_run_op(struct wl_ctx *ctx, bool *ok, char *err, size_t errlen)
{
	uint64_t r;

	wl_test_setup(ctx);
	r = wl_test_op(ctx);
	*ok = ctx->desc->check(ctx, r, err, errlen);
	return r;
}

static inline void wl_test_finish(struct wl_ctx *ctx)
{
	if (ctx->desc->teardown)
		ctx->desc->teardown(ctx);
	rt_sched_free(ctx->sched);
}

/* ---- leaks ------------------------------------------------------------------------------ */

static inline int wl_test_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d, "/proc/self/fd: %s", strerror(errno));
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/* The live children of this process (any of its threads may have started one): their
 * pids in out[0..max), the count. */
static inline int wl_test_children(pid_t *out, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		char path[300];
		FILE *f;
		long pid;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/children", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue; /* the thread exited meanwhile */
		while (fscanf(f, "%ld", &pid) == 1)
			if (n < max)
				out[n++] = (pid_t)pid;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* The schedlab binary: the tcp workloads start their server from it, and a test
 * binary is no schedlab. */
static inline const char *wl_test_schedlab(void)
{
	static char path[PATH_MAX];
	const char *build = getenv("SCHEDLAB_BUILD");

	snprintf(path, sizeof(path), "%s/schedlab", build ? build : "build");
	cr_assert_eq(access(path, X_OK), 0, "%s must be built first (make)", path);
	return path;
}

static inline void wl_test_use_schedlab(void)
{
	cr_assert_eq(setenv("SCHEDLAB_EXE", wl_test_schedlab(), 1), 0);
}

#endif /* SCHEDLAB_TESTS_WORKLOADS_WL_TEST_H */
