/*
 * The probe tests' child, tests/probes/helpers/busy: starting it, killing and reaping
 * it on every path out of a test (the suite's .fini), including a failed assertion;
 * and the sampling window every probe test opens on it. Included by each
 * tests/probes/test_oncpu*.c; everything is static.
 */
#ifndef SCHEDLAB_TESTS_PROBES_BUSY_H
#define SCHEDLAB_TESTS_PROBES_BUSY_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

/* A counter of the kernel's page faults taken in thread tid (the tracepoint
 * exceptions:page_fault_kernel): a fault the kernel fixes up, as a read of user memory
 * that is not there is, counts here. */
static __attribute__((unused)) int kernel_faults_counter(pid_t tid)
{
	static const char *const ids[] = {
		"/sys/kernel/tracing/events/exceptions/page_fault_kernel/id",
		"/sys/kernel/debug/tracing/events/exceptions/page_fault_kernel/id",
	};
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(a) };
	FILE *f = NULL;
	int fd;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && !f; i++)
		f = fopen(ids[i], "r");
	/* A fresh machine may have tracefs unmounted (its mount point is empty); the
	 * tests run as root, so mount it where the kernel provides the mount point and
	 * leave it mounted, as perf does. */
	if (!f && !mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		f = fopen(ids[0], "r");
	cr_assert_not_null(f, "no exceptions:page_fault_kernel id: mount tracefs "
			      "(mount -t tracefs nodev /sys/kernel/tracing)");
	cr_assert_eq(fscanf(f, "%llu", &a.config), 1);
	fclose(f);
	fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	cr_assert_geq(fd, 0, "perf_event_open(exceptions:page_fault_kernel): %s", strerror(errno));
	return fd;
}

/* The kernel page faults of every thread pid has now, counted from now on: one counter
 * each in fds[0..n), n returned. */
static __attribute__((unused)) int kernel_faults_counters(pid_t pid, int *fds, int max)
{
	char path[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	cr_assert_not_null(d, "%s: %s", path, strerror(errno));
	while ((e = readdir(d)) && n < max)
		if (e->d_name[0] != '.')
			fds[n++] = kernel_faults_counter((pid_t)atoi(e->d_name));
	closedir(d);
	return n;
}

/* The sum of n counters, closing them. */
static __attribute__((unused)) uint64_t kernel_faults_read(int *fds, int n)
{
	uint64_t sum = 0, v;

	for (int i = 0; i < n; i++) {
		cr_assert_eq(read(fds[i], &v, sizeof(v)), (ssize_t)sizeof(v));
		close(fds[i]);
		sum += v;
	}
	return sum;
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
