/*
 * Internals shared by the runtime's files only: the task, worker and scheduler
 * structures, and the few functions one file calls in another (rt__ prefix).
 */
#ifndef SCHEDLAB_RT_INTERNAL_H
#define SCHEDLAB_RT_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/deque.h"
#include "runtime/phase.h"
#include "runtime/rt.h"

#define RT_CACHELINE 64

/* Task state bits; the join protocol is in sched.c. */
#define RT_TASK_DONE     1u /* the task's function returned */
#define RT_TASK_WAITING  2u /* a joiner is suspended or blocked on it */
#define RT_TASK_DETACHED 4u /* nobody will join: free it when done */

/* Someone waiting: a suspended task, or a thread blocked on a futex. Lives on the
 * waiter's own stack for the duration of the wait; primitives link it into their
 * wait lists through next/prev and may carry a value in data. */
struct rt__waiter {
	struct rt_task *task; /* NULL: a thread; wake it through futex */
	uint32_t futex;
	struct rt__waiter *next, *prev;
	void *data;
	uint64_t value;
};

struct rt_task {
	void *sp;                  /* saved stack pointer while switched out */
	rt_fn fn;
	void *arg;
	uint64_t result;
	struct rt_task *next;      /* intrusive link: global queue, free lists */
	uint32_t state;            /* RT_TASK_* */
	struct rt__waiter *waiter; /* valid once RT_TASK_WAITING is set */
	uint64_t id;
	struct rt_sched *sched;
	void *map;                 /* the mapping holding the guard page, stack and this struct */
	size_t map_len;
	void *err_top;             /* the innermost error handler (error.c); NULL: none */
};

/* What a task asked its worker to do when it switched out. */
enum rt__after_kind {
	RT_AFTER_DONE,
	RT_AFTER_YIELD,
	RT_AFTER_SUSPEND,
};

struct rt__after {
	enum rt__after_kind kind;
	/* RT_AFTER_SUSPEND: run on the worker's stack once the task is fully switched out;
	 * false means the wait is already over and the task runs again at once. */
	bool (*commit)(struct rt_task *self, void *arg);
	void *arg;
};

struct rt__worker {
	struct rt_deque dq; /* head and tail on their own cache lines */

	/* owner-only state */
	alignas(RT_CACHELINE) struct rt_sched *sched;
	unsigned index;
	void *sched_sp;            /* the worker's own context while a task runs */
	struct rt_task *current;
	struct rt__after after;
	uint32_t tick;
	uint32_t rng;
	uint64_t id_seq;            /* task ids handed out here */
	bool searching;
	struct rt_task *free_tasks; /* a small cache of finished tasks with their stacks */
	unsigned nfree;
	void **spill;               /* scratch for an overflowing queue: capacity / 2 */
	uint64_t phase;             /* the phase word (runtime/phase.h); read by the probe */

	alignas(RT_CACHELINE) uint32_t futex; /* 0: parked or about to; 1: woken */
	pthread_t thread;

	alignas(RT_CACHELINE) struct rt_worker_stats stats;
};

struct rt_sched {
	struct rt_config cfg;
	unsigned nworkers;
	unsigned max_searchers;
	struct rt__worker **workers;
	size_t page;

	/* the global injection queue */
	alignas(RT_CACHELINE) pthread_mutex_t inject_lock;
	struct rt_task *inject_head, *inject_tail;
	size_t inject_len; /* read without the lock as a hint */

	/* idle workers: (unparked << 16) | searching, and the parked ones */
	alignas(RT_CACHELINE) uint32_t idle_state;
	pthread_mutex_t idle_lock;
	unsigned *sleepers;
	unsigned nsleepers;
	bool shutdown;

	/* timers and the I/O reactor (io.c), started on first use */
	struct rt__io *io;
	pthread_mutex_t io_lock;

	/* finished tasks no worker's cache had room for */
	alignas(RT_CACHELINE) pthread_mutex_t pool_lock;
	struct rt_task *pool;
	unsigned npool;
	uint64_t next_id;
};

/* ---- switch_x86_64.S ---- */
void rt__switch(void **save_sp, void *load_sp);
void rt__fiber_start(void);

/* ---- fiber.c: tasks and their stacks ---- */
struct rt_task *rt__task_new(struct rt_sched *s, struct rt__worker *w, rt_fn fn, void *arg);
void rt__task_put(struct rt_sched *s, struct rt__worker *w, struct rt_task *t);
void rt__task_cache_drain(struct rt_sched *s, struct rt__worker *w);
void rt__task_pool_free(struct rt_sched *s);

/* ---- io.c: timers and the reactor ---- */
/* Stop the timer/reactor thread, if it was started. Called first by rt_sched_free(). */
void rt__io_stop(struct rt_sched *s);

/* ---- sched.c ---- */
/* The calling thread's worker, read fresh on every call: a task can move between
 * threads across a switch, so a cached thread-local address would be stale. */
struct rt__worker *rt__self(void);
/* Suspend the running task; commit runs on the worker once it is switched out. */
void rt__suspend(bool (*commit)(struct rt_task *self, void *arg), void *arg);
/* Make a suspended task runnable again, from any thread. */
void rt__ready(struct rt_task *t);

/* Waiting, the same way from a task and from a plain thread. rt__wait() prepares w
 * (task = the running task or NULL) and calls commit(w, arg): from a task, on the
 * worker's stack once the task is switched out; from a thread, at once. commit
 * returns true when it registered w (the caller then sleeps until rt__wake(w)) and
 * false when the condition already holds (the caller goes on at once). Whoever calls
 * rt__wake(w) must be done with w first: the waiter may return and reuse its stack
 * as soon as it is woken. */
void rt__wait(struct rt__waiter *w, bool (*commit)(struct rt__waiter *w, void *arg), void *arg);
void rt__wake(struct rt__waiter *w);

/* Counters: written by the owning worker only, read by anyone. */
#define RT_STAT_ADD(w, field, n)                                                               \
	do {                                                                                   \
		if ((w)->sched->cfg.metrics)                                                   \
			__atomic_store_n(&(w)->stats.field,                                    \
					 __atomic_load_n(&(w)->stats.field, __ATOMIC_RELAXED) + (n),   \
					 __ATOMIC_RELAXED);                                            \
	} while (0)
#define RT_STAT_INC(w, field) RT_STAT_ADD(w, field, 1)

/* Publish what the worker does now: a plain store, read by the sampler. */
static inline void rt__phase(struct rt__worker *w, unsigned kind, uint64_t task_id)
{
	__atomic_store_n(&w->phase, RT_PHASE_WORD(kind, w->index, task_id), __ATOMIC_RELAXED);
}

#endif /* SCHEDLAB_RT_INTERNAL_H */
