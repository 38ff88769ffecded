/*
 * The controller (harness/controller.c): whole runs of the real binary (forks
 * re-executing schedlab) with hooks that see the fork alive around its measured
 * iterations, every iteration and its counters reported, a fork without the probes, the
 * protocol's limits; and the forks when one of them dies: a fork never outlives a
 * controller killed with SIGKILL, and the hooks let go of a fork only once it has been
 * reaped (the order in which the kernel can take a uprobe out, hx_hooks.fork_gone).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "tests/harness/hx_test.h"

#define DEADLINE_S 20 /* a bound on the wait, not the condition it waits for */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Whether pid still runs: a dead process that its new parent has not reaped yet is a
 * zombie, and runs nothing. */
static bool running(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state && state != 'Z';
}

static void spawn_join_spec(struct hx_spec *s)
{
	char err[512];

	cr_assert_eq(hx_spec_init(s, "spawn-join", NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hx_spec_param(s, "n=100", err, sizeof(err)), 0, "%s", err);
}

/* spawn-join in short forks: forks of warmup and iterations of time_s seconds each. */
static void short_spec(struct hx_spec *s, unsigned forks, unsigned warmup, unsigned iterations,
		       double time_s)
{
	spawn_join_spec(s);
	s->opt.forks = forks;
	s->opt.warmup = warmup;
	s->opt.iterations = iterations;
	s->opt.time_s = time_s;
}

/* spawn-join counting events, in forks short forks of two 50 ms iterations each. */
static void counted_spec(struct hx_spec *s, const char *events, unsigned forks)
{
	char err[512];

	short_spec(s, forks, 1, 2, 0.05);
	cr_assert_eq(hx_spec_events(s, events, err, sizeof(err)), 0, "%s", err);
}

/* Hands the fork's pid to the test over the pipe whose write end is ctx. */
static int tell_pid(void *ctx, pid_t pid, int64_t tls_off)
{
	int fd = *(int *)ctx;

	(void)tls_off;
	return write(fd, &pid, sizeof(pid)) == sizeof(pid) ? 0 : -EIO;
}

/* Whether pid's main thread waits in system call nr (/proc/PID/task/PID/syscall). */
static bool waits_in(pid_t pid, long nr)
{
	char path[96];
	long got = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fscanf(f, "%ld", &got) != 1)
		got = -1;
	fclose(f);
	return got == nr;
}

/* A controller in a child of the test, SIGKILLed while its fork measures an iteration
 * of a minute: the fork dies at once, not when its iteration is over (it would notice
 * the controller gone only at its next message). */
Test(run, a_fork_dies_with_its_controller_killed_by_sigkill, .timeout = 90)
{
	const char *bin = schedlab_binary();
	pid_t controller, fork_pid = 0;
	int p[2], status;
	struct hx_spec s;
	double t0;

	spawn_join_spec(&s);
	s.opt.forks = 1;
	s.opt.warmup = 0;
	s.opt.iterations = 1;
	s.opt.time_s = 60;
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	controller = fork();
	cr_assert_geq(controller, 0);
	if (controller == 0) {
		struct hx_hooks hooks = { .ctx = &p[1], .measure_begin = tell_pid };
		struct hx_result res;

		close(p[0]);
		hx_run(&s, bin, &hooks, &res, NULL);
		_exit(0); /* not reached in time: the test kills this process first */
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &fork_pid, sizeof(fork_pid)), sizeof(fork_pid),
		     "the controller started a fork");
	close(p[0]);
	/* back in ppoll() after the hook, the controller has sent the fork its go-ahead */
	t0 = now_s();
	while (!waits_in(controller, SYS_ppoll) && now_s() - t0 < DEADLINE_S)
		usleep(1000);
	cr_expect(waits_in(controller, SYS_ppoll), "the controller waits for the fork");
	cr_expect(running(fork_pid), "fork %d measures", (int)fork_pid);
	cr_assert_eq(kill(controller, SIGKILL), 0);
	cr_assert_eq(waitpid(controller, &status, 0), controller);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	t0 = now_s();
	while (running(fork_pid) && now_s() - t0 < DEADLINE_S)
		usleep(10000);
	if (running(fork_pid)) {
		kill(fork_pid, SIGKILL);
		cr_assert_fail("fork %d still measured %d s after its controller was killed",
			       (int)fork_pid, DEADLINE_S);
	}
}

struct order {
	int begins, ends, gones;
	pid_t pid;
	bool gone_after_end; /* each fork_gone came after its measure_end */
	bool reaped;         /* each fork_gone found no process left, not even a zombie */
};

static int order_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct order *o = ctx;

	(void)tls_off;
	o->begins++;
	o->pid = pid;
	return 0;
}

static int order_end(void *ctx, pid_t pid)
{
	struct order *o = ctx;

	(void)pid;
	o->ends++;
	return 0;
}

static int order_gone(void *ctx, pid_t pid)
{
	struct order *o = ctx;

	o->gones++;
	o->gone_after_end &= pid == o->pid && o->ends == o->gones;
	o->reaped &= kill(pid, 0) == -1 && errno == ESRCH;
	return 0;
}

Test(run, the_hooks_let_go_of_a_fork_only_once_it_is_reaped, .timeout = 120)
{
	struct order o = { .gone_after_end = true, .reaped = true };
	struct hx_hooks hooks = { .ctx = &o, .measure_begin = order_begin,
				  .measure_end = order_end, .fork_gone = order_gone };
	struct hx_result res;
	struct hx_spec s;

	spawn_join_spec(&s);
	s.opt.forks = 2;
	s.opt.warmup = 0;
	s.opt.iterations = 1;
	s.opt.time_s = 0.05;
	cr_assert_eq(hx_run(&s, schedlab_binary(), &hooks, &res, NULL), 0, "%s", res.error);
	cr_expect_eq(o.begins, 2);
	cr_expect_eq(o.gones, 2, "once for each fork");
	cr_expect(o.gone_after_end, "after the fork's measure_end, for the same fork");
	cr_expect(o.reaped, "the fork was reaped before fork_gone");
	hx_result_free(&res);
}

/* A fork that fails its begin is let go of too: whatever a probe attached before the
 * failure comes out, once the fork is reaped. */
static int refuse(void *ctx, pid_t pid, int64_t tls_off)
{
	order_begin(ctx, pid, tls_off);
	return -EPERM;
}

Test(run, a_fork_whose_begin_failed_is_let_go_of_once_reaped, .timeout = 60)
{
	struct order o = { .gone_after_end = true, .reaped = true };
	struct hx_hooks hooks = { .ctx = &o, .measure_begin = refuse, .fork_gone = order_gone };
	struct hx_result res;
	struct hx_spec s;

	spawn_join_spec(&s);
	hx_options_quick(&s.opt);
	s.opt.time_s = 0.02;
	cr_expect_neq(hx_run(&s, schedlab_binary(), &hooks, &res, NULL), 0);
	cr_expect_eq(o.gones, 1);
	cr_expect(o.reaped, "the fork was reaped before fork_gone");
	hx_result_free(&res);
}

/* ---- whole runs, and what each fork reports ----------------------------------------------------------------------- */

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

	short_spec(&s, 2, 1, 3, 0.05);
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

static int refuse_plainly(void *ctx, pid_t pid, int64_t tls_off)
{
	return -EPERM;
}

Test(run, a_failing_hook_fails_the_run_and_kills_the_fork, .timeout = 60)
{
	struct hx_hooks hooks = { NULL, refuse_plainly, NULL, NULL, NULL };
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

	counted_spec(&s, "perf::task-clock,cycles,perf::context-switches", 2);
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

	counted_spec(&s, "perf::task-clock,perf::context-switches", 4);
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
	char dir[] = "/tmp/schedlab-harness.XXXXXX", path[PATH_MAX];
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

	short_spec(&s, 1, 0, 2, 0.02);
	cr_expect_eq(hx_run(&s, path, NULL, &res, NULL), -EPROTO, "%s", res.error);
	cr_expect(strstr(res.error, "fork 1") && strstr(res.error, "protocol"), "%s", res.error);
	cr_expect(strstr(res.error, "3 measured iterations, 2 asked for"), "%s", res.error);
	cr_expect_leq(res.nsamples, 2, "%zu samples kept in room for 2", res.nsamples);
	hx_result_free(&res);
	unlink(path);
	rmdir(dir);
}
