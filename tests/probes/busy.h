/*
 * The probe tests' child, tests/probes/helpers/busy: starting it, killing and reaping
 * it on every path out of a test (the suite's .fini), including a failed assertion;
 * and the sampling window every probe test opens on it. Included by each
 * tests/probes/test_oncpu*.c; everything is static.
 */
#ifndef SCHEDLAB_TESTS_PROBES_BUSY_H
#define SCHEDLAB_TESTS_PROBES_BUSY_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probes/probes.h"
#include "runtime/phase.h"

/* busy's hot threads publish RT_PHASE_WORD(RT_PHASE_RUN, 3, 42); the probe keeps the
 * phase and the worker, not the task id */
#define BUSY_PHASE_KEPT RT_PHASE_WORD(RT_PHASE_RUN, 3, 0)

/* Children of the current test. */
static pid_t kids[4];
static int nkids;

static __attribute__((unused)) void reap_kids(void)
{
	for (int i = 0; i < nkids; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	nkids = 0;
}

static __attribute__((unused)) void need_bpf(void)
{
	char why[256];

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
}

static __attribute__((unused)) void busy_path(char *buf, size_t len)
{
	const char *build = getenv("SCHEDLAB_BUILD");

	snprintf(buf, len, "%s/tests/helpers/busy", build ? build : "build");
}

static __attribute__((unused)) void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Start `busy SECS THREADS MODE NAME` and wait for its first line, which it prints once
 * every thread spins: the phase word's TLS offset. */
static __attribute__((unused)) pid_t spawn_busy(const char *secs, const char *threads,
						const char *mode, const char *name,
						int64_t *tls_off)
{
	char path[PATH_MAX], line[64];
	int fds[2];
	FILE *f;
	pid_t pid;

	busy_path(path, sizeof(path));
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], STDOUT_FILENO);
		execl(path, "busy", secs, threads, mode, name, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	kids[nkids++] = pid;
	close(fds[1]);
	f = fdopen(fds[0], "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(line, sizeof(line), f), "%s printed nothing", path);
	fclose(f);
	if (tls_off)
		*tls_off = strtoll(line, NULL, 10);
	return pid;
}

/* Run fn in a child dropped to nobody (so without any capability), and read what it
 * wrote to the fd it is given into msg: a probe's open there must fail, saying how to
 * fix it. */
static __attribute__((unused)) void as_nobody(void (*fn)(int fd), char *msg, size_t len)
{
	int fds[2], status;
	ssize_t n;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(2);
		fn(fds[1]);
		_exit(0);
	}
	kids[nkids++] = pid;
	close(fds[1]);
	n = read(fds[0], msg, len - 1);
	close(fds[0]);
	cr_assert_gt(n, 0);
	msg[n] = '\0';
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	nkids--;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* One sampling window: start on t, ms milliseconds, stop, and drain into fn(ctx) and
 * *st (which the drain adds to). */
static __attribute__((unused)) void sample_window(struct probe_oncpu *p,
						  const struct probe_target *t, long ms,
						  probe_stack_fn fn, void *ctx,
						  struct probe_oncpu_stats *st)
{
	cr_assert_eq(probe_oncpu_start(p, t), 0);
	sleep_ms(ms);
	cr_assert_eq(probe_oncpu_stop(p), 0);
	cr_assert_eq(probe_oncpu_drain(p, fn, ctx, st), 0);
}

#endif /* SCHEDLAB_TESTS_PROBES_BUSY_H */
