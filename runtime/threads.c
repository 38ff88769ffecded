/*
 * The threads executor: one OS thread per task, created when the task is spawned,
 * as platform threads are. The task still runs on its fiber stack, switched to from
 * its own thread; when it waits, that thread sleeps on a futex until a wake of the
 * task (rt__task_thread_ready()) wakes it, so every wait is an OS-level block and every
 * wake a futex wake.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "runtime/internal.h"

/* The thread's wait while its task waits, until rt__task_thread_ready(). */
static RT_PHASE_FN void (task_thread_wait)(struct rt__thread *th)
{
	uint64_t phase = rt__phase_push(RT_PHASE_PARK);

	while (!__atomic_load_n(&th->futex, __ATOMIC_ACQUIRE))
		rt__futex_wait_timeout(&th->futex, 0, NULL);
	rt__phase_pop(phase);
}

/* its callers set its phase at the call, as for every phase function (internal.h) */
#define task_thread_wait(th) RT__PHASE_CALL_VOID(RT_PHASE_PARK, (task_thread_wait)(th))

static RT_PHASE_FN void *task_thread_main(void *arg)
{
	struct rt__thread *th = arg;
	struct rt_task *t = th->own;

	rt__thread_bind(th);
	rt__phase_set(RT_PHASE_WORD(RT_PHASE_SCHED, RT_PHASE_NO_WORKER, 0)); /* the base */
	for (;;) {
		/* cleared before the switch: a wake that comes while the task is still
		 * switching out sets it again, and the wait below returns at once */
		__atomic_store_n(&th->futex, 0, __ATOMIC_RELAXED);
		th->current = t;
		rt__switch_in(th, t);
		th->current = NULL;
		if (th->after.kind == RT_AFTER_DONE)
			break;
		if (th->after.kind == RT_AFTER_YIELD) {
			sched_yield();
			continue;
		}
		if (!th->after.commit(t, th->after.arg))
			continue; /* the wait was already over */
		task_thread_wait(th);
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

RT_PHASE_FN void (rt__task_thread_ready)(struct rt_task *t)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt__thread *th = t->own;

	/* release: what the waker did is visible to the task; pairs with the acquire load
	 * in task_thread_wait() */
	__atomic_store_n(&th->futex, 1, __ATOMIC_RELEASE);
	rt__futex_wake(&th->futex, 1);
	rt__phase_pop(phase);
}
