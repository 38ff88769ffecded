/*
 * Timers and the reactor through the public API: sleeps that never end early, from
 * tasks and threads; an earlier timer registered while the reactor sleeps toward a
 * later one; a task woken by a pipe another task writes; timeouts; many descriptors at
 * once; a timer and an event racing for one wait (each wait ends exactly once); argument
 * errors; the reactor's life: never started, started then freed, many times over; and
 * socket calls that block their worker in a section or park the task (the sockets knob).
 * Sleep bounds are lower bounds, plus one generous upper bound (the reactor's kick).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "runtime/phase.h"
#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

#define MS 1000000ull

/* Failures seen inside tasks, where an assertion must not unwind: counted there,
 * asserted by the test's thread. */
static uint32_t failures;

#define CHECK(cond)                                                                           \
	do {                                                                                   \
		if (!(cond))                                                                   \
			__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                    \
	} while (0)

static void make_pipe(int fd[2])
{
	cr_assert_eq(pipe2(fd, O_NONBLOCK | O_CLOEXEC), 0, "pipe2: %s", strerror(errno));
}

/* ---- the clock and thread sleeps --------------------------------------------------------- */

Test(timer, clock_is_monotonic)
{
	uint64_t a = rt_now_ns(), b = rt_now_ns();

	cr_expect_gt(a, 0);
	cr_expect_geq(b, a);
}

Test(timer, thread_sleep_never_ends_early)
{
	for (uint64_t ns = 0; ns <= 3 * MS; ns += MS / 2) {
		uint64_t t0 = rt_now_ns();

		rt_sleep_ns(ns);
		cr_expect_geq(rt_now_ns() - t0, ns);
	}
}

/* ---- task sleeps ----------------------------------------------------------------------------- */

#define SLEEPERS 500

static uint64_t sleep_task(void *arg)
{
	uint64_t ns = (uint64_t)(uintptr_t)arg, t0 = rt_now_ns(), slept;

	rt_sleep_ns(ns);
	slept = rt_now_ns() - t0;
	CHECK(slept >= ns);
	return slept >= ns ? 1 : 0;
}

/* Many tasks sleeping random short times, registered in random order: all wake, none
 * early. */
static void sleepers_run(struct rt_sched *s, const char *what)
{
	struct rt_task *t[SLEEPERS];
	uint32_t seed = 12345;
	uint64_t woke = 0;

	failures = 0;
	for (int i = 0; i < SLEEPERS; i++) {
		seed = seed * 1103515245 + 12345;
		/* 0 to 20 ms in 10 us steps; ties included */
		t[i] = rt_submit(s, sleep_task, (void *)(uintptr_t)((seed >> 8) % 2000 * 10000));
		cr_assert_not_null(t[i], "%s", what);
	}
	for (int i = 0; i < SLEEPERS; i++)
		woke += rt_join(t[i]);
	cr_expect_eq(woke, SLEEPERS, "%s: %lu woke on time", what, (unsigned long)woke);
	cr_expect_eq(failures, 0, "%s: early wake-ups", what);
}

Test(timer, many_tasks_sleep_random_times_and_none_wakes_early, .timeout = 120)
{
	rt_test_each_config(sleepers_run);
}

static uint64_t sleep_zero_task(void *arg)
{
	for (int i = 0; i < 100; i++)
		rt_sleep_ns(0); /* a yield */
	return 7;
}

Test(timer, zero_sleep_in_a_task_returns, .timeout = 30)
{
	struct rt_sched *s = rt_test_start("ce", 2);

	cr_expect_eq(rt_join(rt_submit(s, sleep_zero_task, NULL)), 7);
	rt_sched_free(s);
}

/* A task waits on a pipe with a 10 s timeout, so the reactor sleeps toward a deadline
 * 10 s away; a 20 ms sleep registered after it must fire in time (the eventfd kick),
 * then the pipe releases the first task. */
struct early {
	int fd[2];
	uint32_t waiting; /* atomic: the long wait is (about to be) registered */
};

static struct early *early_arg;

static uint64_t long_wait_task(void *arg)
{
	__atomic_store_n(&early_arg->waiting, 1, __ATOMIC_RELEASE);
	return (uint64_t)(int64_t)rt_io_wait(early_arg->fd[0], EPOLLIN, 10000 * (int64_t)MS);
}

static uint64_t short_sleep_task(void *arg)
{
	uint64_t t0 = rt_now_ns();

	rt_sleep_ns(20 * MS);
	return rt_now_ns() - t0;
}

static void earlier_timer_run(struct rt_sched *s, const char *what)
{
	struct early e = { 0 };
	struct rt_task *lw, *sl;
	uint64_t slept;
	char c = 'x';

	make_pipe(e.fd);
	early_arg = &e;
	cr_expect_not(rt_test_epoll_sleeper(5000 * MS),
		      "%s: a long sleep in epoll before the long wait", what);
	cr_assert_not_null(lw = rt_submit(s, long_wait_task, NULL));
	while (!__atomic_load_n(&e.waiting, __ATOMIC_ACQUIRE))
		usleep(100);
	/* the reactor (or the worker's poller) sleeps toward the 10 s deadline: the earlier
	 * timer must wake it */
	rt_test_await_epoll_sleep(5000 * MS, what);
	cr_assert_not_null(sl = rt_submit(s, short_sleep_task, NULL));
	slept = rt_join(sl);
	cr_expect_geq(slept, 20 * MS, "%s: early", what);
	cr_expect_lt(slept, 200 * MS, "%s: the earlier timer fired after %lu ms", what,
		     (unsigned long)(slept / MS));
	cr_assert_eq(write(e.fd[1], &c, 1), 1);
	cr_expect_eq((int64_t)rt_join(lw), 0, "%s: the pipe wait", what);
	close(e.fd[0]);
	close(e.fd[1]);
}

Test(timer, earlier_timer_fires_while_the_reactor_sleeps_on_a_later_one, .timeout = 120)
{
	rt_test_each_config(earlier_timer_run);
}

/* ---- the reactor: readiness ------------------------------------------------------------------ */

struct pingpong {
	int fd[2];
	uint32_t parked; /* atomic */
	char got;
};

static struct pingpong *pp_arg;

static uint64_t reader_task(void *arg)
{
	char c;
	ssize_t n = read(pp_arg->fd[0], &c, 1);
	int err;

	CHECK(n < 0 && errno == EAGAIN); /* nothing yet */
	__atomic_store_n(&pp_arg->parked, 1, __ATOMIC_RELEASE);
	err = rt_io_wait(pp_arg->fd[0], EPOLLIN, -1);
	CHECK(err == 0);
	CHECK(read(pp_arg->fd[0], &c, 1) == 1);
	pp_arg->got = c;
	return (uint64_t)(int64_t)err;
}

static uint64_t writer_task(void *arg)
{
	char c = 'k';

	while (!__atomic_load_n(&pp_arg->parked, __ATOMIC_ACQUIRE))
		rt_sleep_ns(100000);
	rt_sleep_ns(2 * MS); /* the reader is most likely suspended in rt_io_wait by now */
	CHECK(write(pp_arg->fd[1], &c, 1) == 1);
	return 0;
}

static void pingpong_run(struct rt_sched *s, const char *what)
{
	struct pingpong p = { 0 };
	struct rt_task *r, *w;

	make_pipe(p.fd);
	pp_arg = &p;
	failures = 0;
	cr_assert_not_null(r = rt_submit(s, reader_task, NULL));
	cr_assert_not_null(w = rt_submit(s, writer_task, NULL));
	rt_join(w);
	cr_expect_eq((int64_t)rt_join(r), 0, "%s", what);
	cr_expect_eq(p.got, 'k', "%s", what);
	cr_expect_eq(failures, 0, "%s", what);
	close(p.fd[0]);
	close(p.fd[1]);
}

Test(reactor, task_waits_for_a_pipe_another_task_writes, .timeout = 120)
{
	rt_test_each_config(pingpong_run);
}

static uint64_t timeout_task(void *arg)
{
	int fd = (int)(uintptr_t)arg;
	uint64_t t0 = rt_now_ns();
	int err = rt_io_wait(fd, EPOLLIN, 10 * (int64_t)MS);

	CHECK(rt_now_ns() - t0 >= 10 * MS);
	return (uint64_t)(int64_t)err;
}

static void timeout_run(struct rt_sched *s, const char *what)
{
	int fd[2];

	make_pipe(fd);
	failures = 0;
	cr_expect_eq((int64_t)rt_join(rt_submit(s, timeout_task, (void *)(uintptr_t)fd[0])),
		     -ETIMEDOUT, "%s", what);
	cr_expect_eq(failures, 0, "%s: timed out early", what);
	/* and the same descriptor can be waited on again after a timeout */
	cr_expect_eq((int64_t)rt_join(rt_submit(s, timeout_task, (void *)(uintptr_t)fd[0])),
		     -ETIMEDOUT, "%s", what);
	close(fd[0]);
	close(fd[1]);
}

Test(reactor, wait_times_out, .timeout = 120)
{
	rt_test_each_config(timeout_run);
}

static uint64_t writable_task(void *arg)
{
	return (uint64_t)(int64_t)rt_io_wait((int)(uintptr_t)arg, EPOLLOUT, 10000 * (int64_t)MS);
}

Test(reactor, writable_socket_is_ready_at_once, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 2);
	int sv[2];
	uint64_t t0 = rt_now_ns();

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	cr_expect_eq((int64_t)rt_join(rt_submit(s, writable_task, (void *)(uintptr_t)sv[0])), 0);
	cr_expect_lt(rt_now_ns() - t0, 5000 * MS, "waited for the timeout");
	close(sv[0]);
	close(sv[1]);
	rt_sched_free(s);
}

/* 64 socket pairs, a task parked on each; written in a scrambled order. Each reader gets
 * its own byte. */
#define NFDS 64

struct many {
	int sv[NFDS][2];
	uint32_t parked; /* atomic */
};

static struct many *many_arg;

static uint64_t many_reader(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	unsigned char c = 0;
	int err;

	__atomic_fetch_add(&many_arg->parked, 1, __ATOMIC_RELEASE);
	err = rt_io_wait(many_arg->sv[i][0], EPOLLIN, 30000 * (int64_t)MS);
	CHECK(err == 0);
	CHECK(read(many_arg->sv[i][0], &c, 1) == 1);
	return c;
}

static void many_run(struct rt_sched *s, const char *what)
{
	struct many m = { 0 };
	struct rt_task *t[NFDS];

	many_arg = &m;
	failures = 0;
	for (unsigned i = 0; i < NFDS; i++)
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, m.sv[i]), 0);
	for (uintptr_t i = 0; i < NFDS; i++)
		cr_assert_not_null(t[i] = rt_submit(s, many_reader, (void *)i));
	while (__atomic_load_n(&m.parked, __ATOMIC_ACQUIRE) < NFDS)
		usleep(100);
	for (unsigned k = 0; k < NFDS; k++) {
		unsigned i = (k * 37) % NFDS; /* 37 is coprime to 64: every pair once */
		unsigned char c = (unsigned char)(i + 1);

		cr_assert_eq(write(m.sv[i][1], &c, 1), 1);
	}
	for (unsigned i = 0; i < NFDS; i++)
		cr_expect_eq(rt_join(t[i]), i + 1, "%s: reader %u", what, i);
	cr_expect_eq(failures, 0, "%s", what);
	for (unsigned i = 0; i < NFDS; i++) {
		close(m.sv[i][0]);
		close(m.sv[i][1]);
	}
}

Test(reactor, many_descriptors_at_once, .timeout = 120)
{
	rt_test_each_config(many_run);
}

/* A timer and an event race for each wait: 2,000 waits with timeouts of 0-200 us on
 * pipes written at about the same moment. Each wait must end exactly once, with 0 or
 * -ETIMEDOUT (a second wake-up of the task would run it twice and corrupt the run). */
#define RACES RT_TEST_N(2000)

struct race {
	int fd[2];
	uint32_t ok, timedout; /* atomic */
};

static struct race *race_arg;

static uint64_t race_waiter(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	struct race *r = &race_arg[i % 8];
	int err = rt_io_wait(r->fd[0], EPOLLIN, (int64_t)(i % 20) * 10000);
	char c;

	if (err == 0) {
		__atomic_fetch_add(&r->ok, 1, __ATOMIC_RELAXED);
		while (read(r->fd[0], &c, 1) == 1) {
		}
	} else {
		CHECK(err == -ETIMEDOUT);
		__atomic_fetch_add(&r->timedout, 1, __ATOMIC_RELAXED);
	}
	return 1;
}

static uint64_t race_driver(void *arg)
{
	unsigned base = (unsigned)(uintptr_t)arg;
	uint64_t done = 0;

	/* one waiter per pipe at a time: a second would get -EBUSY by design */
	for (unsigned i = base; i < RACES; i += 8) {
		struct rt_task *t = rt_spawn(race_waiter, (void *)(uintptr_t)i);
		char c = 'r';

		if (!t)
			return 0;
		if (i % 3)
			rt_sleep_ns((i % 7) * 20000);
		CHECK(write(race_arg[base].fd[1], &c, 1) == 1);
		done += rt_join(t);
	}
	return done;
}

static void race_run(struct rt_sched *s, const char *what)
{
	struct race r[8] = { 0 };
	struct rt_task *d[8];
	uint64_t done = 0, ok = 0, timedout = 0;

	race_arg = r;
	failures = 0;
	for (int i = 0; i < 8; i++)
		make_pipe(r[i].fd);
	for (uintptr_t i = 0; i < 8; i++)
		cr_assert_not_null(d[i] = rt_submit(s, race_driver, (void *)i));
	for (int i = 0; i < 8; i++)
		done += rt_join(d[i]);
	for (int i = 0; i < 8; i++) {
		ok += r[i].ok;
		timedout += r[i].timedout;
		close(r[i].fd[0]);
		close(r[i].fd[1]);
	}
	cr_expect_eq(done, RACES, "%s", what);
	cr_expect_eq(ok + timedout, RACES, "%s: %lu ready + %lu timed out", what,
		     (unsigned long)ok, (unsigned long)timedout);
	cr_expect_eq(failures, 0, "%s", what);
}

Test(reactor, timer_and_event_racing_end_each_wait_once, .timeout = 120)
{
	rt_test_each_config(race_run);
}

/* The timer heap under arbitrary removals: 300 tasks each wait on their own pipe,
 * registered in scrambled order; this thread writes to every other pipe at scattered
 * moments. The written ones have long timeouts (10-20 s, which no write comes near, on
 * however loaded a machine), so their events pull nodes out of the middle of the heap,
 * while the short deadlines (1-30 ms) of the others pop from its top. Every wait must
 * end, each written one by its event and each other one by its timeout, never early. */
#define HEAP_WAITS 300

struct heap_wait {
	int fd[2];
	int64_t timeout;
	int result;
	uint64_t took;
};

static struct heap_wait *heap_arg;

static uint64_t heap_waiter(void *arg)
{
	struct heap_wait *h = &heap_arg[(uintptr_t)arg];
	uint64_t t0 = rt_now_ns();

	h->result = rt_io_wait(h->fd[0], EPOLLIN, h->timeout);
	h->took = rt_now_ns() - t0;
	return 1;
}

static void heap_run(struct rt_sched *s, const char *what)
{
	struct heap_wait *h = calloc(HEAP_WAITS, sizeof(*h));
	struct rt_task *t[HEAP_WAITS];
	uint32_t seed = 777;
	uint64_t done = 0;
	unsigned ok = 0, timedout = 0;

	cr_assert_not_null(h);
	heap_arg = h;
	for (unsigned i = 0; i < HEAP_WAITS; i++) {
		make_pipe(h[i].fd);
		seed = seed * 1103515245 + 12345;
		if (i % 2 == 0)
			h[i].timeout = (int64_t)(10000 + (seed >> 8) % 10000) * (int64_t)MS;
		else
			h[i].timeout = (int64_t)(1 + (seed >> 8) % 30) * (int64_t)MS;
		h[i].result = 1;
	}
	for (unsigned k = 0; k < HEAP_WAITS; k++) {
		uintptr_t i = (k * 101) % HEAP_WAITS; /* 101 is coprime to 300 */

		cr_assert_not_null(t[i] = rt_submit(s, heap_waiter, (void *)i), "%s", what);
	}
	for (unsigned i = 0; i < HEAP_WAITS; i += 2) {
		char c = 'h';

		if (i % 10 == 0)
			usleep(500);
		cr_assert_eq(write(h[i].fd[1], &c, 1), 1);
	}
	for (unsigned i = 0; i < HEAP_WAITS; i++)
		done += rt_join(t[i]);
	cr_expect_eq(done, HEAP_WAITS, "%s", what);
	for (unsigned i = 0; i < HEAP_WAITS; i++) {
		if (h[i].result == 0) {
			ok++;
			cr_expect(i % 2 == 0, "%s: wait %u ready on a pipe nobody wrote", what, i);
		} else {
			timedout++;
			cr_expect(i % 2 == 1, "%s: written pipe %u timed out", what, i);
			cr_expect_eq(h[i].result, -ETIMEDOUT, "%s: wait %u", what, i);
			cr_expect_geq(h[i].took, (uint64_t)h[i].timeout, "%s: wait %u early", what,
				      i);
		}
		close(h[i].fd[0]);
		close(h[i].fd[1]);
	}
	cr_expect_eq(ok, HEAP_WAITS / 2, "%s: %u ready, %u timed out", what, ok, timedout);
	cr_expect_eq(timedout, HEAP_WAITS / 2, "%s: %u ready, %u timed out", what, ok, timedout);
	free(h);
}

Test(reactor, timer_heap_survives_removals_from_the_middle, .timeout = 120)
{
	rt_test_each_config(heap_run);
}

/* ---- errors and the thread path ---------------------------------------------------------------- */

static uint64_t bad_args_task(void *arg)
{
	int *fd = arg;

	CHECK(rt_io_wait(-1, EPOLLIN, -1) == -EBADF);
	CHECK(rt_io_wait(fd[0], 0, -1) == -EINVAL);
	CHECK(rt_io_wait(fd[0], EPOLLET, -1) == -EINVAL);
	CHECK(rt_io_wait(1000000, EPOLLIN, 10 * (int64_t)MS) == -EBADF);
	CHECK(rt_io_wait(fd[0], EPOLLIN, 0) == -ETIMEDOUT); /* just look */
	CHECK(rt_io_wait(fd[1], EPOLLOUT, 0) == 0);
	return 0;
}

Test(reactor, bad_arguments_are_refused, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 2);
	int fd[2];

	make_pipe(fd);
	failures = 0;
	rt_join(rt_submit(s, bad_args_task, fd));
	cr_expect_eq(failures, 0);
	/* from a thread */
	cr_expect_eq(rt_io_wait(-1, EPOLLIN, -1), -EBADF);
	cr_expect_eq(rt_io_wait(fd[0], 0, -1), -EINVAL);
	cr_expect_eq(rt_io_wait(1000000, EPOLLIN, 0), -EBADF);
	close(fd[0]);
	close(fd[1]);
	rt_sched_free(s);
}

/* Two tasks wait on one descriptor: whichever registers second is refused at once, the
 * other waits until the descriptor is readable. Each says how it ended, in order. */
static int busy_fd[2];
static int64_t busy_ret[2];
static uint32_t busy_claimed, busy_done;

static uint64_t busy_waiter(void *arg)
{
	int64_t ret = rt_io_wait(busy_fd[0], EPOLLIN, 30000 * (int64_t)MS);

	busy_ret[__atomic_fetch_add(&busy_claimed, 1, __ATOMIC_RELAXED)] = ret;
	/* release: the result is written before it is counted as done */
	__atomic_fetch_add(&busy_done, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Under the reactor, whatever workers the two run on; under poller=worker, on one
 * worker (each worker's poller holds its own registrations). */
static void second_waiter_refused(struct rt_sched *s)
{
	struct rt_task *a, *b;
	char c = 'b';

	busy_claimed = busy_done = 0;
	make_pipe(busy_fd);
	cr_assert_not_null(a = rt_submit(s, busy_waiter, NULL));
	cr_assert_not_null(b = rt_submit(s, busy_waiter, NULL));
	rt_test_await_u32(&busy_done, 1, "one of the two waiters refused");
	cr_expect_eq(busy_ret[0], -EBUSY, "the first to end got %lld", (long long)busy_ret[0]);
	cr_assert_eq(write(busy_fd[1], &c, 1), 1);
	rt_join(a);
	rt_join(b);
	cr_expect_eq(busy_done, 2);
	cr_expect_eq(busy_ret[1], 0, "the waiter got %lld", (long long)busy_ret[1]);
	close(busy_fd[0]);
	close(busy_fd[1]);
	rt_sched_free(s);
}

Test(reactor, second_waiter_on_one_descriptor_is_refused, .timeout = 60)
{
	second_waiter_refused(rt_test_start_with("ce", 2, "poller", "reactor", NULL));
	second_waiter_refused(rt_test_start_with("ce", 1, "poller", "worker", NULL));
}

/* ---- poller=worker -------------------------------------------------------------------------- */

static uint64_t pipe_waiter(void *arg)
{
	const int *fd = arg;

	return (uint64_t)(int64_t)rt_io_wait(fd[0], EPOLLIN, fd[1] < 0 ? -1 : 30000 * (int64_t)MS);
}

static uint32_t poll_waits(const struct rt_sched *s)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < rt_sched_workers(s); i++)
		n += __atomic_load_n(&s->workers[i]->poll_waits, __ATOMIC_RELAXED);
	return n;
}

/* Tasks wait on pipes, untimed and timed, while every worker parks; this thread writes
 * them. Under poller=worker the parked workers are woken by the kernel in their own
 * epoll and no reactor thread ever starts; under poller=reactor its thread does the
 * waiting. Each wait ends once, ready, and the workers' waits are all gone after. */
static void parked_workers_woken(const char *poller, unsigned workers)
{
	struct rt_sched *s = rt_test_start_with("ce", workers, "poller", poller, NULL);
	bool worker = !strcmp(poller, "worker");
	int fds[4][2], arg[4][2];
	struct rt_task *t[4];
	pthread_t reactor;

	for (int i = 0; i < 4; i++) {
		make_pipe(fds[i]);
		arg[i][0] = fds[i][0];
		arg[i][1] = i % 2 ? 0 : -1; /* odd: with a timeout */
		cr_assert_not_null(t[i] = rt_submit(s, pipe_waiter, arg[i]));
	}
	if (worker) {
		uint64_t until = rt_now_ns() + 30000 * MS;

		while (poll_waits(s) != 4 && rt_now_ns() < until)
			usleep(100);
		cr_assert_eq(poll_waits(s), 4, "%s/%u: the waits on the workers' pollers",
			     poller, workers);
	}
	/* every worker parks (nothing else to run): the writes must wake what sleeps */
	rt_test_await_named_asleep("rt-worker", workers, "the workers park");
	for (int i = 0; i < 4; i++) {
		char c = 'w';

		cr_assert_eq(write(fds[i][1], &c, 1), 1);
		cr_expect_eq((int64_t)rt_join(t[i]), 0, "%s/%u: wait %d", poller, workers, i);
	}
	cr_expect_eq(rt__io_thread(s, &reactor), !worker, "%s/%u: a reactor thread %s",
		     poller, workers, worker ? "started" : "never started");
	cr_expect_eq(poll_waits(s), 0, "%s/%u: waits left on the workers", poller, workers);
	rt_sched_free(s);
	for (int i = 0; i < 4; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
}

Test(poller, parked_workers_are_woken_by_their_own_epoll, .timeout = 120)
{
	parked_workers_woken("worker", 1);
	parked_workers_woken("worker", 2);
	parked_workers_woken("reactor", 2);
}

Test(poller, worker_needs_a_fixed_pool)
{
	struct rt_config c;
	char err[256];

	cr_assert_eq(rt_config_preset(&c, "ce"), 0);
	cr_expect_eq(c.poller, RT_POLLER_WORKER, "cats-effect: a poller per worker");
	cr_expect_eq(rt_config_check(&c, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rt_config_preset(&c, "kyo"), 0);
	cr_expect_eq(c.poller, RT_POLLER_REACTOR);
	cr_assert_eq(rt_config_set(&c, "poller", "worker", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(rt_config_check(&c, err, sizeof(err)), -EINVAL);
	cr_expect_not_null(strstr(err, "poller=worker with adapt=kyo"), "%s", err);
	cr_assert_eq(rt_config_preset(&c, "threads"), 0);
	cr_assert_eq(rt_config_set(&c, "poller", "worker", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(rt_config_check(&c, err, sizeof(err)), -EINVAL);
	cr_expect_not_null(strstr(err, "use poller=reactor"), "%s", err);
}

struct thread_wait {
	int fd[2];
	int err;
	pid_t tid;      /* the waiter's, once running is set */
	uint32_t running; /* atomic */
};

static void *thread_waiter(void *arg)
{
	struct thread_wait *tw = arg;

	tw->tid = gettid();
	__atomic_store_n(&tw->running, 1, __ATOMIC_RELEASE);
	tw->err = rt_io_wait(tw->fd[0], EPOLLIN, 10000 * (int64_t)MS);
	return NULL;
}

Test(reactor, thread_waits_with_poll, .timeout = 60)
{
	struct thread_wait tw = { .err = 1 };
	uint64_t t0;
	pthread_t th;
	char c = 't';

	make_pipe(tw.fd);
	t0 = rt_now_ns();
	cr_expect_eq(rt_io_wait(tw.fd[0], EPOLLIN, 5 * (int64_t)MS), -ETIMEDOUT);
	cr_expect_geq(rt_now_ns() - t0, 5 * MS);
	pthread_create(&th, NULL, thread_waiter, &tw);
	/* the write finds the thread asleep in its wait, where nothing else puts it */
	rt_test_await_u32(&tw.running, 1, "the thread starts");
	rt_test_await_asleep(tw.tid, "the thread waits in poll");
	cr_assert_eq(write(tw.fd[1], &c, 1), 1);
	pthread_join(th, NULL);
	cr_expect_eq(tw.err, 0);
	close(tw.fd[0]);
	close(tw.fd[1]);
}

/* ---- the reactor's life --------------------------------------------------------------------- */

static bool no_runtime_threads(void *left)
{
	unsigned asleep;

	*(unsigned *)left = rt_test_named_threads("rt-worker", 'S', &asleep) +
			    rt_test_named_threads("rt-monitor", 'S', &asleep);
	return !*(unsigned *)left;
}

/* Freed, a scheduler leaves no thread behind (detached, a worker's thread ends just after
 * it says so: the test waits for it), and one that never waited started no reactor. */
Test(reactor, scheduler_that_never_used_it_stops_cleanly, .timeout = 60)
{
	for (int i = 0; i < 20; i++) {
		struct rt_sched *s = rt_test_start("ce", 1 + i % 3);
		pthread_t reactor;
		unsigned left;

		cr_expect_not(rt__io_thread(s, &reactor), "round %d: a reactor started", i);
		rt_sched_free(s);
		cr_expect(rt_test_until(no_runtime_threads, &left),
			  "round %d: %u threads outlived their scheduler by 30 s", i, left);
	}
}

static uint64_t nap_task(void *arg)
{
	rt_sleep_ns((uint64_t)(uintptr_t)arg);
	return 1;
}

static uint64_t parked_on_pipe(void *arg)
{
	return (uint64_t)(int64_t)rt_io_wait((int)(uintptr_t)arg, EPOLLIN, -1);
}

/* Start the reactor (a timer, then a descriptor), finish every task, free: repeatedly. */
static void restart_run(struct rt_sched *s, const char *what)
{
	for (int i = 0; i < 10; i++) {
		struct rt_sched *t = rt_test_start(rt_sched_config(s)->preset, rt_sched_workers(s));
		int fd[2];
		char c = 'z';
		struct rt_task *p;

		make_pipe(fd);
		cr_assert_eq(rt_join(rt_submit(t, nap_task, (void *)(uintptr_t)(100000 * i))), 1,
			     "%s", what);
		cr_expect_not(rt_test_epoll_watches(&fd[0]), "%s: watched before the wait", what);
		cr_assert_not_null(p = rt_submit(t, parked_on_pipe, (void *)(uintptr_t)fd[0]));
		/* the wait is registered: the write wakes it */
		rt_test_await_epoll_watch(fd[0], what);
		cr_assert_eq(write(fd[1], &c, 1), 1);
		cr_expect_eq((int64_t)rt_join(p), 0, "%s", what);
		rt_sched_free(t);
		close(fd[0]);
		close(fd[1]);
	}
}

Test(reactor, scheduler_freed_after_the_reactor_ran, .timeout = 120)
{
	rt_test_each_config(restart_run);
}

/* ---- the helper threads' phase words ----------------------------------------------------- */

static uint64_t sleep_200ms_task(void *arg)
{
	(void)arg;
	rt_sleep_ns(200 * MS);
	return 0;
}

/* Wait up to 1 s for a phase word to show a kind. */
static uint64_t await_phase(uint64_t (*read)(const struct rt_sched *), const struct rt_sched *s,
			    unsigned kind)
{
	uint64_t word = 0;

	for (int i = 0; i < 10000 && RT_PHASE_KIND(word = read(s)) != kind; i++)
		usleep(100);
	return word;
}

static uint64_t monitor_phase(const struct rt_sched *s)
{
	uint64_t *p = __atomic_load_n(&s->monitor_phase, __ATOMIC_ACQUIRE);

	return p ? __atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}

/* The reactor and the monitor run no tasks, yet their CPU time is the runtime's: each
 * publishes a phase word (parked while it waits), not a worker's. */
Test(reactor, reactor_and_monitor_publish_phase_words, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("ce", 1); /* metrics on: the monitor runs */
	struct rt_task *t;
	uint64_t word;

	cr_expect_eq(rt__io_phase(s), 0, "no reactor before the first wait");
	t = rt_submit(s, sleep_200ms_task, NULL);
	word = await_phase(rt__io_phase, s, RT_PHASE_PARK);
	cr_expect_eq(RT_PHASE_KIND(word), RT_PHASE_PARK, "reactor in epoll: %#llx",
		     (unsigned long long)word);
	cr_expect_eq(RT_PHASE_WORKER(word), RT_PHASE_NO_WORKER);
	word = await_phase(monitor_phase, s, RT_PHASE_PARK);
	cr_expect_eq(RT_PHASE_KIND(word), RT_PHASE_PARK, "monitor between ticks: %#llx",
		     (unsigned long long)word);
	cr_expect_eq(RT_PHASE_WORKER(word), RT_PHASE_NO_WORKER);
	rt_join(t);
	rt_sched_free(s);
}

/* ---- sockets: block or park (the sockets knob) -------------------------------------------- */

struct sock_call {
	int fd;
	char buf[4];
	int64_t timeout_ns;
	int result;
};

static int sock_recv(void *arg)
{
	struct sock_call *c = arg;

	return rt_socket_recv_all(c->fd, c->buf, sizeof(c->buf), c->timeout_ns);
}

static uint64_t sock_reader(void *arg)
{
	struct sock_call *c = arg;

	c->result = rt_socket_section(sock_recv, c);
	return 0;
}

static uint64_t sock_writer(void *arg)
{
	int fd = (int)(uintptr_t)arg;

	CHECK(rt_socket_send_all(fd, "ping", 4, -1) == 0);
	return 0;
}

/* One worker, a reader waiting on a socket pair and a writer queued behind it: the
 * writer runs only if the reader's wait freed the worker (parked) or a spare took the
 * queue (a compensated blocking section). */
static void reader_then_writer(const char *preset, const char *sockets,
			       struct rt_worker_stats *st, unsigned *started, struct sock_call *c)
{
	struct rt_sched *s = rt_test_start_with(preset, 1, "sockets", sockets, NULL);
	struct rt_task *r, *w;
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	*c = (struct sock_call){ .fd = sv[0], .timeout_ns = 30000 * (int64_t)MS };
	failures = 0;
	cr_assert_not_null(r = rt_submit(s, sock_reader, c));
	cr_assert_not_null(w = rt_submit(s, sock_writer, (void *)(uintptr_t)sv[1]));
	rt_join(w);
	rt_join(r);
	cr_expect_eq(failures, 0);
	rt_sched_stats_total(s, st);
	*started = rt_sched_workers_started(s);
	rt_sched_free(s);
	close(sv[0]);
	close(sv[1]);
}

/* The JDK's virtual thread blocked on a socket unmounts and parks on the poller: no
 * blocking section, no spare, the one carrier runs the writer meanwhile. */
Test(sockets, a_parked_call_frees_its_worker_and_adds_no_spare, .timeout = 60)
{
	struct rt_worker_stats st;
	struct sock_call c;
	unsigned started;

	reader_then_writer("loom", "park", &st, &started, &c);
	cr_expect_eq(c.result, 0, "%s", strerror(-c.result));
	cr_expect_eq(memcmp(c.buf, "ping", 4), 0);
	cr_expect_eq(st.blocking_episodes, 0, "a parked socket call is no blocking section");
	cr_expect_eq(st.compensations, 0);
	cr_expect_eq(started, 1, "%u workers started for one carrier", started);
}

/* The same call where sockets block: a blocking section, which loom compensates with a
 * spare worker that takes the writer. */
Test(sockets, a_blocking_call_is_a_blocking_section, .timeout = 60)
{
	struct rt_worker_stats st;
	struct sock_call c;
	unsigned started;

	reader_then_writer("loom", "block", &st, &started, &c);
	cr_expect_eq(c.result, 0, "%s", strerror(-c.result));
	cr_expect_eq(st.blocking_episodes, 1);
	cr_expect_geq(st.compensations, 1, "no spare for the blocked carrier");
	cr_expect_geq(started, 2);
}

static uint64_t sock_timeout_task(void *arg)
{
	struct sock_call *c = arg;

	c->result = rt_socket_section(sock_recv, c);
	return 0;
}

/* A parked call gives up at its timeout, and says when the peer is gone. */
Test(sockets, a_parked_call_times_out_and_sees_the_peer_close, .timeout = 60)
{
	struct rt_sched *s = rt_test_start("loom", 1);
	struct sock_call c;
	uint64_t t0;
	int sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	c = (struct sock_call){ .fd = sv[0], .timeout_ns = 20 * (int64_t)MS };
	t0 = rt_now_ns();
	rt_join(rt_submit(s, sock_timeout_task, &c));
	cr_expect_eq(c.result, -ETIMEDOUT);
	cr_expect_geq(rt_now_ns() - t0, 20 * MS, "gave up early");
	close(sv[1]);
	c.timeout_ns = 30000 * (int64_t)MS;
	rt_join(rt_submit(s, sock_timeout_task, &c));
	cr_expect_eq(c.result, -EPIPE);
	rt_sched_free(s);
	close(sv[0]);
}
