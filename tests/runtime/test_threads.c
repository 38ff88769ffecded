/*
 * The threads executor (runtime/threads.c): each task on an OS thread of its own, made
 * when it is spawned; a task that waits puts that thread to sleep in the kernel until
 * the wake, which then runs the task on it again.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

struct waiter {
	struct rt_latch go;
	pid_t tid_before, tid_after; /* the thread the task ran on, before and after */
};

static uint64_t wait_for_go(void *arg)
{
	struct waiter *w = arg;

	__atomic_store_n(&w->tid_before, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	rt_latch_wait(&w->go);
	w->tid_after = (pid_t)syscall(SYS_gettid);
	return 7;
}

static bool tid_known(void *arg)
{
	return __atomic_load_n(&((struct waiter *)arg)->tid_before, __ATOMIC_ACQUIRE) != 0;
}

Test(threads, a_waiting_task_sleeps_on_its_own_thread, .timeout = 120)
{
	struct rt_sched *s = rt_test_start("threads", 0);
	struct waiter w = { 0 };
	struct rt_task *t;

	rt_latch_init(&w.go, 1);
	t = rt_submit(s, wait_for_go, &w);
	cr_assert_not_null(t);
	cr_assert(rt_test_until(tid_known, &w), "the task never ran");
	cr_expect_neq(w.tid_before, (pid_t)syscall(SYS_gettid), "it ran on the test's thread");
	/* waiting, its thread is asleep in the kernel, not spinning */
	rt_test_await_asleep(w.tid_before, "the waiting task's thread");
	rt_latch_count_down(&w.go);
	cr_expect_eq(rt_join(t), 7);
	cr_expect_eq(w.tid_after, w.tid_before, "woken on another thread");
	cr_expect_eq(rt_sched_threads_created(s), 1);
	rt_sched_free(s);
}
