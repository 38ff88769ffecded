/*
 * The harness: specs built from what a user types, the fork's argument vector, and
 * whole runs of the real binary (forks re-executing schedlab) with hooks that see the
 * fork alive around its measured iterations.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/harness.h"
#include "tests/harness/hx_test.h"

Test(spec, unknown_workload_and_preset_are_named_with_the_choices)
{
	struct hx_spec s;
	char err[512];

	cr_expect_eq(hx_spec_init(&s, "spawn-jion", NULL, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "'spawn-jion'") && strstr(err, "spawn-join"), "%s", err);
	cr_expect_eq(hx_spec_init(&s, "spawn-join", "kyoo", err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "'kyoo'") && strstr(err, "ce"), "%s", err);
	cr_expect_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	cr_expect_str_eq(s.rt.preset, "ce");
	cr_expect_eq(s.opt.forks, 3);
	cr_expect_eq(s.opt.warmup, 3);
	cr_expect_eq(s.opt.iterations, 3);
	cr_expect_eq(s.opt.time_s, 1.0);
}

Test(spec, parameters_are_checked_by_name_and_value)
{
	struct hx_spec s;
	char err[512], text[256];

	cr_assert_eq(hx_spec_init(&s, "workers", "ce", err, sizeof(err)), 0);
	cr_expect_eq(hx_spec_param(&s, "rounds=128", err, sizeof(err)), 0);
	cr_expect_eq(hx_spec_param(&s, "round=128", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "'round'") && strstr(err, "rounds"), "%s", err);
	cr_expect_eq(hx_spec_param(&s, "rounds", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "name=value"), "%s", err);
	cr_expect_eq(hx_spec_param(&s, "rounds=-1", err, sizeof(err)), -EINVAL);
	hx_spec_params_text(&s, text, sizeof(text));
	cr_expect_str_eq(text, "workers=8 values=4096 rounds=128");
}

Test(spec, fork_argv_carries_every_setting)
{
	struct hx_spec s;
	char err[512], **argv;
	bool saw_param = false, saw_time = false;

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	cr_assert_eq(hx_spec_param(&s, "n=77", err, sizeof(err)), 0);
	s.opt.time_s = 0.125;
	cr_assert_eq(hx_fork_argv(&s, 9, &argv), 0);
	cr_expect_str_eq(argv[1], "__fork");
	for (size_t i = 0; argv[i]; i++) {
		saw_param |= !strcmp(argv[i], "-Pn=77");
		saw_time |= !strcmp(argv[i], "--time=0.125");
		if (!argv[i + 1])
			cr_expect_str_eq(argv[i], "spawn-join");
	}
	cr_expect(saw_param);
	cr_expect(saw_time);
	hx_fork_argv_free(argv);
}

/* ---- whole runs ----------------------------------------------------------------------- */

struct seen {
	int begins, ends;
	pid_t pid;
	bool alive_at_end;
	int64_t tls_off;
};

static int on_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct seen *s = ctx;

	s->begins++;
	s->pid = pid;
	s->tls_off = tls_off;
	return 0;
}

static int on_end(void *ctx, pid_t pid)
{
	struct seen *s = ctx;
	char path[64];

	s->ends++;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	s->alive_at_end = pid == s->pid && access(path, R_OK) == 0 && kill(pid, 0) == 0;
	return 0;
}

Test(run, forks_measure_and_report_every_iteration, .timeout = 120)
{
	struct seen seen = { 0 };
	struct hx_hooks hooks = { &seen, on_begin, on_end, NULL, NULL };
	struct hx_result res;
	struct hx_spec s;
	char err[512];

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	hx_spec_param(&s, "n=100", err, sizeof(err));
	s.opt.forks = 2;
	s.opt.warmup = 1;
	s.opt.iterations = 3;
	s.opt.time_s = 0.05;
	cr_assert_eq(hx_run(&s, schedlab_binary(), &hooks, &res, NULL), 0, "%s", res.error);
	cr_expect_eq(res.nsamples, 6);
	for (size_t i = 0; i < res.nsamples; i++)
		cr_expect_gt(res.samples[i], 0);
	cr_expect_eq(res.summary.n, 6);
	cr_expect_gt(res.summary.ci_half, 0);
	cr_expect_gt(res.ops, 0);
	cr_expect_geq(res.rt.spawned, res.ops * 100, "100 spawns per op were counted");
	cr_expect_eq(seen.begins, 2);
	cr_expect_eq(seen.ends, 2);
	cr_expect(seen.alive_at_end, "the fork lives until measure_end returns");
	cr_expect_neq(seen.tls_off, 0);
	cr_expect_gt(res.workers, 0);
	hx_result_free(&res);
}

static int refuse(void *ctx, pid_t pid, int64_t tls_off)
{
	return -EPERM;
}

Test(run, a_failing_hook_fails_the_run_and_kills_the_fork, .timeout = 60)
{
	struct hx_hooks hooks = { NULL, refuse, NULL, NULL, NULL };
	struct hx_result res;
	struct hx_spec s;
	char err[512];

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	hx_options_quick(&s.opt);
	s.opt.time_s = 0.02;
	cr_expect_neq(hx_run(&s, schedlab_binary(), &hooks, &res, NULL), 0);
	cr_expect(strstr(res.error, "fork 1") && strstr(res.error, "probes"), "%s", res.error);
	hx_result_free(&res);
}

Test(run, a_fork_that_dies_early_is_reported, .timeout = 60)
{
	struct hx_result res;
	struct hx_spec s;
	char err[512];

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	hx_options_quick(&s.opt);
	/* a binary that exits at once, as a crashing fork would before its first word */
	cr_expect_neq(hx_run(&s, "/bin/false", NULL, &res, NULL), 0);
	cr_expect(strstr(res.error, "fork 1") && strstr(res.error, "status 1"), "%s", res.error);
	hx_result_free(&res);
}

Test(run, nothing_to_measure_is_refused)
{
	struct hx_result res;
	struct hx_spec s;
	char err[512];

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	s.opt.iterations = 0;
	cr_expect_eq(hx_run(&s, schedlab_binary(), NULL, &res, NULL), -EINVAL);
	hx_result_free(&res);
}

/* The counters travel from each fork with every measured iteration: each iteration's
 * count, per op, for what was counted; n/a with the fork's reason for what was not. */
Test(run, every_measured_iteration_brings_its_counters, .timeout = 120)
{
	struct hx_result res;
	struct hx_spec s;
	char err[512];
	bool pmu;

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	hx_spec_param(&s, "n=100", err, sizeof(err));
	cr_assert_eq(hx_spec_events(&s, "perf::task-clock,cycles,perf::context-switches", err,
				    sizeof(err)),
		     0, "%s", err);
	s.opt.forks = 2;
	s.opt.warmup = 1;
	s.opt.iterations = 2;
	s.opt.time_s = 0.05;
	cr_assert_eq(hx_run(&s, schedlab_binary(), NULL, &res, NULL), 0, "%s", res.error);
	cr_assert_eq(res.ncounters, 3);
	cr_expect_str_eq(res.counters[0].name, "perf::task-clock");
	cr_expect(res.counters[0].counted, "%s", res.counters[0].note);
	cr_expect_gt(res.counters[0].total, 0);
	cr_expect_eq(res.counters[0].sum.running, res.counters[0].sum.enabled);
	for (size_t i = 0; i < res.nsamples; i++) {
		cr_expect_gt(res.iter_counters[i * PROBE_COUNTERS_MAX + 0], 0, "iteration %zu", i);
		cr_expect(!isnan(res.iter_counters[i * PROBE_COUNTERS_MAX + 2]), "iteration %zu", i);
	}
	pmu = res.counters[1].counted;
	if (pmu) {
		cr_expect_gt(res.counters[1].total, 0);
	} else {
		cr_expect_gt(strlen(res.counters[1].note), 0, "not counted, and why");
		for (size_t i = 0; i < res.nsamples; i++)
			cr_expect(isnan(res.iter_counters[i * PROBE_COUNTERS_MAX + 1]),
				  "not counted is no number, not 0");
	}
	hx_result_free(&res);

	/* a list the controller checked is refused by no fork; an unknown name never
	 * reaches one */
	cr_expect_eq(hx_spec_events(&s, "perf::task-clockz", err, sizeof(err)), -ENOENT);
	cr_expect(!strncmp(err, "--events: ", 10), "%s", err);
}

/* Forks 2 and 4 have the probes (as --overhead's alternation does); each fork, when it
 * begins measuring, has its perf_event descriptors counted from /proc. */
struct alt_seen {
	int fds[8]; /* by fork, in order */
	int forks;
};

static bool even_forks(void *ctx, unsigned k)
{
	(void)ctx;
	return k % 2 == 0;
}

static int perf_fds(pid_t pid)
{
	char dir[64], path[600], target[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = '\0';
		n += !strcmp(target, "anon_inode:[perf_event]");
	}
	closedir(d);
	return n;
}

static int count_fds(void *ctx, pid_t pid, int64_t tls_off)
{
	struct alt_seen *s = ctx;

	(void)tls_off;
	cr_assert_lt(s->forks, 8);
	s->fds[s->forks++] = perf_fds(pid);
	return 0;
}

/* A fork run without the probes counts nothing: it opens no perf event, and of it the
 * result keeps the throughput alone, so the counters, the runtime's counters and the ops
 * are the probed forks'. Their counters' open time comes back as the attach time. */
Test(run, a_fork_without_the_probes_opens_no_counters_and_gives_only_its_throughput,
     .timeout = 120)
{
	struct alt_seen seen = { 0 };
	struct hx_hooks hooks = { .ctx = &seen, .measure_begin = count_fds, .probed = even_forks };
	struct an_summary off;
	uint64_t spawned_on = 0, spawned_off = 0;
	struct hx_result res;
	struct hx_spec s;
	char err[512];

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	hx_spec_param(&s, "n=100", err, sizeof(err));
	cr_assert_eq(hx_spec_events(&s, "perf::task-clock,perf::context-switches", err,
				    sizeof(err)),
		     0, "%s", err);
	s.opt.forks = 4;
	s.opt.warmup = 1;
	s.opt.iterations = 2;
	s.opt.time_s = 0.05;
	cr_assert_eq(hx_run(&s, schedlab_binary(), &hooks, &res, NULL), 0, "%s", res.error);
	cr_assert_eq(seen.forks, 4);
	cr_expect_eq(seen.fds[0], 0, "fork 1, without the probes, opened %d", seen.fds[0]);
	cr_expect_eq(seen.fds[2], 0, "fork 3, without the probes, opened %d", seen.fds[2]);
	cr_expect_eq(seen.fds[1], 2, "fork 2 opened one event each");
	cr_expect_eq(seen.fds[3], 2, "fork 4 opened one event each");
	cr_expect_gt(res.counters_attach_ns, 0);

	cr_assert_eq(res.nsamples, 8, "every fork's throughput");
	for (size_t i = 0; i < res.nsamples; i++) {
		double tc = res.iter_counters[i * PROBE_COUNTERS_MAX];
		bool on = (i / 2) % 2 == 1;

		cr_expect(on ? tc > 0 : isnan(tc), "iteration %zu: %g", i, tc);
		if (on)
			spawned_on += res.iter_rt[i].spawned;
		else
			spawned_off += res.iter_rt[i].spawned;
	}
	/* no op runs between iterations: the window's spawns are its iterations' */
	cr_expect_gt(spawned_off, 0);
	cr_expect_eq(res.rt.spawned, spawned_on, "the probed forks' spawns alone");
	cr_expect_eq(res.counters[0].ops, res.ops, "counts and ops of the same forks");
	cr_expect(res.counters[0].counted, "%s", res.counters[0].note);

	cr_assert_eq(hx_result_split_alternate(&res, 2, &off), 0);
	cr_assert_eq(res.nsamples, 4);
	cr_expect_eq(off.n, 4);
	for (size_t i = 0; i < res.nsamples; i++)
		cr_expect_gt(res.iter_counters[i * PROBE_COUNTERS_MAX], 0,
			     "the probed iterations' counts follow their samples: %zu", i);
	hx_result_free(&res);
}

/* A fork that sends one measured iteration more than it was asked for breaks the
 * protocol: the controller fails it, saying so, and keeps no more samples than it has
 * room for. The fork is the real one, told by a wrapper to measure one iteration more
 * than the controller asked. */
Test(run, a_fork_that_sends_one_iteration_too_many_fails_with_a_protocol_error, .timeout = 60)
{
	char dir[] = "/tmp/schedlab-harness.XXXXXX", path[PATH_MAX], err[512];
	struct hx_result res;
	struct hx_spec s;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/schedlab", dir);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	fprintf(f,
		"#!/bin/bash\n"
		"args=()\n"
		"for a in \"$@\"; do\n"
		"\tcase $a in --iterations=*) a=--iterations=$((${a#--iterations=} + 1)) ;; esac\n"
		"\targs+=(\"$a\")\n"
		"done\n"
		"exec '%s' \"${args[@]}\"\n",
		schedlab_binary());
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(path, 0700), 0);

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	hx_spec_param(&s, "n=100", err, sizeof(err));
	s.opt.forks = 1;
	s.opt.warmup = 0;
	s.opt.iterations = 2;
	s.opt.time_s = 0.02;
	cr_expect_eq(hx_run(&s, path, NULL, &res, NULL), -EPROTO, "%s", res.error);
	cr_expect(strstr(res.error, "fork 1") && strstr(res.error, "protocol"), "%s", res.error);
	cr_expect(strstr(res.error, "3 measured iterations, 2 asked for"), "%s", res.error);
	cr_expect_leq(res.nsamples, 2, "%zu samples kept in room for 2", res.nsamples);
	hx_result_free(&res);
	unlink(path);
	rmdir(dir);
}
