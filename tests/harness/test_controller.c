/*
 * The controller and its forks when one of them dies: a fork never outlives a controller
 * killed with SIGKILL, and the hooks let go of a fork only once it has been reaped (the
 * order in which the kernel can take a uprobe out, harness.h's hx_hooks.fork_gone).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
