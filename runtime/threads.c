/*
 * The threads executor: one OS thread per task, created when the task is spawned,
 * as platform threads are. The task still runs on its fiber stack, switched to from
 * its own thread; when it waits, that thread sleeps on a futex until rt__ready()
 * wakes it, so every wait is an OS-level block and every wake a futex wake.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "runtime/internal.h"

static void *task_thread_main(void *arg)
{
	struct rt__thread *th = arg;
	struct rt_task *t = th->own;

	rt__thread_bind(th);
	for (;;) {
		/* cleared before the switch: a wake that comes while the task is still
		 * switching out sets it again, and the wait below returns at once */
		__atomic_store_n(&th->futex, 0, __ATOMIC_RELAXED);
		th->current = t;
		rt__phase(th, RT_PHASE_RUN, t->id);
		rt__switch_in(th, t);
		th->current = NULL;
		rt__phase(th, RT_PHASE_SCHED, 0);
		if (th->after.kind == RT_AFTER_DONE)
			break;
		if (th->after.kind == RT_AFTER_YIELD) {
			sched_yield();
			continue;
		}
		if (!th->after.commit(t, th->after.arg))
			continue; /* the wait was already over */
		rt__phase(th, RT_PHASE_PARK, 0);
		while (!__atomic_load_n(&th->futex, __ATOMIC_ACQUIRE))
			rt__futex_wait_timeout(&th->futex, 0, NULL);
	}
	rt__task_finished(th, t);
	rt__thread_exit(th);
	return NULL;
}

int rt__task_thread_start(struct rt_sched *s, struct rt_task *t)
{
	struct rt__thread *th = calloc(1, sizeof(*th));
	int err;

	if (!th)
		return -ENOMEM;
	th->sched = s;
	th->own = t;
	t->own = th;
	/* the task runs on its fiber stack: the thread itself needs little */
	err = rt__thread_start(th, task_thread_main, 64 * 1024);
	if (err) {
		t->own = NULL;
		free(th);
		return -err;
	}
	return 0;
}

void rt__task_thread_ready(struct rt_task *t)
{
	struct rt__thread *th = t->own;

	/* release: what the waker did is visible to the task; pairs with the acquire load
	 * in task_thread_main()'s wait loop */
	__atomic_store_n(&th->futex, 1, __ATOMIC_RELEASE);
	rt__futex_wake(&th->futex, 1);
}
