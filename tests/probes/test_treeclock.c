/*
 * probe__tree_clock (probes/common/treeclock.c): the CPU time of a process and what it
 * starts, against the processes' own clocks. A child of the test is clocked from before
 * it works; it spins in its main thread and in a thread it starts, forks a grandchild
 * that spins and exits, and reports its own process clock and the grandchild's rusage
 * through a pipe before it exits.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probes/common/treeclock.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* where the spin's result goes, so that the compiler keeps the spin */
static volatile uint64_t sink;

/* Spin for ns of this thread's CPU time. */
static void spin(uint64_t ns)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < ns)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

static void *spin_thread(void *arg)
{
	(void)arg;
	spin(100 * 1000000ull);
	return NULL;
}

/* What the child measured of itself: its process clock at the end (its threads', the
 * exited one's too) and its waited-for children's CPU time. */
struct own {
	uint64_t self_ns, children_ns;
};

static void child_main(int go, int report)
{
	struct rusage ru;
	struct own own;
	pthread_t t;
	pid_t g;
	char c;

	if (read(go, &c, 1) != 1)
		_exit(1);
	spin(100 * 1000000ull);
	if (pthread_create(&t, NULL, spin_thread, NULL) || pthread_join(t, NULL))
		_exit(1);
	g = fork();
	if (g < 0)
		_exit(1);
	if (g == 0) {
		spin(150 * 1000000ull);
		_exit(0);
	}
	if (waitpid(g, NULL, 0) != g)
		_exit(1);
	getrusage(RUSAGE_CHILDREN, &ru);
	own.children_ns = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
			  (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
	own.self_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	_exit(write(report, &own, sizeof(own)) == (ssize_t)sizeof(own) ? 0 : 1);
}

/* Clock the child (and with processes its grandchild), let it work, and read the clock
 * once it has exited and been reaped; what the child said of itself in *own. */
static uint64_t clocked_child(bool processes, struct own *own)
{
	struct probe__tree_clock c = { .processes = processes };
	int go[2], report[2], status;
	uint64_t ns = 0;
	pid_t pid;

	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(report), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(go[1]);
		close(report[0]);
		child_main(go[0], report[1]);
	}
	close(go[0]);
	close(report[1]);
	cr_assert_eq(probe__tree_clock_add(&c, pid), 0, "%s", strerror(errno));
	cr_assert_eq(c.n, 1, "one thread before it works");
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(read(report[0], own, sizeof(*own)), (ssize_t)sizeof(*own));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed: %d", status);
	/* read after the reap: the counters kept the exited threads' counts */
	cr_assert_eq(probe__tree_clock_read(&c, &ns), 0);
	probe__tree_clock_close(&c);
	close(go[1]);
	close(report[0]);
	return ns;
}

/* Within 2% and 5 ms: what the child did between its report and its exit, and the
 * clocks' own granularity. */
static bool close_to(uint64_t got, uint64_t want)
{
	uint64_t slack = want / 50 + 5 * 1000000ull;

	return got + slack >= want && got <= want + slack;
}

Test(treeclock, a_process_its_exited_thread_and_its_exited_child_are_clocked)
{
	struct own own;
	uint64_t ns = clocked_child(true, &own);

	cr_expect(own.children_ns >= 150 * 1000000ull, "the grandchild spun %llu ns",
		  (unsigned long long)own.children_ns);
	cr_expect(close_to(ns, own.self_ns + own.children_ns),
		  "clocked %.1f ms; the child's own clock %.1f ms and its child's %.1f ms",
		  ns / 1e6, own.self_ns / 1e6, own.children_ns / 1e6);
}

Test(treeclock, without_processes_a_forked_child_is_left_out)
{
	struct own own;
	uint64_t ns = clocked_child(false, &own);

	/* the thread is the process's own and still counted; the grandchild is not */
	cr_expect(own.self_ns >= 200 * 1000000ull, "the child spun %llu ns",
		  (unsigned long long)own.self_ns);
	cr_expect(close_to(ns, own.self_ns),
		  "clocked %.1f ms; the child's own clock %.1f ms (its child's %.1f ms left out)",
		  ns / 1e6, own.self_ns / 1e6, own.children_ns / 1e6);
}

Test(treeclock, every_thread_of_a_running_process_is_counted)
{
	struct probe__tree_clock c = { 0 };
	pthread_t t[3];
	uint64_t ns;

	/* this process: its main thread and three more, each found by the listing */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, spin_thread, NULL), 0);
	cr_assert_eq(probe__tree_clock_add(&c, getpid()), 0);
	cr_expect_geq(c.n, 4, "%zu threads counted", c.n);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	cr_assert_eq(probe__tree_clock_read(&c, &ns), 0);
	/* the three spun up to 100 ms each, some of it before they were counted */
	cr_expect_gt(ns, 0);
	cr_expect_leq(ns, 3 * 100 * 1000000ull + clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	probe__tree_clock_close(&c);
	cr_expect_eq(c.n, 0);
}

Test(treeclock, a_process_that_is_gone_is_refused)
{
	struct probe__tree_clock c = { 0 };
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect_eq(probe__tree_clock_add(&c, pid), -ESRCH);
	cr_expect_eq(c.n, 0);
	probe__tree_clock_close(&c);
}
