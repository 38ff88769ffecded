/*
 * Blocking sections, the threads that drive workers, and the monitor.
 *
 * Every thread that drives a worker runs worker_thread_main(): it drives its worker until a
 * blocking section hands the worker to another thread, then waits as a spare until it
 * is handed one itself (or its keep-alive runs out). The blocking knob decides what a
 * section does:
 *   none        the worker stays blocked with its queue (the runtime does not know);
 *   handoff     at once, the queue goes to a spare thread and the call runs in place
 *               (cats-effect's IO.blocking, Tokio's block_in_place);
 *   retake      the monitor takes the queue for a spare thread once the section has
 *               lasted retake_us and work is waiting, or 10 ms (Go's sysmon);
 *   detect      the runtime does not know either; the monitor samples each busy
 *               worker's CPU time every detect_us, and a worker flat for
 *               detect_samples samples is flagged blocked and drained (Kyo);
 *   compensate  a parked worker is woken, or a new one added up to workers_max, to
 *               keep the parallelism while the section lasts (ForkJoinPool);
 *   offload     the task moves to a thread of a separate blocking pool for the
 *               section and comes back through the submit path; the worker keeps
 *               its thread and its queue (Tokio's spawn_blocking, cats-effect's
 *               interruptible).
 * A section that ends on a thread that no longer has a worker: after a handoff the task
 * goes on there until it next waits or yields (cats-effect's fiber keeps its run loop on
 * the blocker thread), then the thread becomes a spare; otherwise (retaken) the task
 * moves back to the pool through the submit path at once.
 *
 * The monitor also keeps two integrals the placement findings rest on: each worker's
 * time idle while tasks waited elsewhere, and time blocked while its own queue held
 * tasks (stranded work), sampled every monitor_us; runs Kyo's concurrency regulator
 * (adapt.c); and keeps the coarse millisecond clock that queue=heap orders tasks by.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/internal.h"
#include "runtime/usdt.h"

#define SPARE_KEEPALIVE_S 10       /* an idle spare or blocking-pool thread exits after this */
#define OFFLOAD_MAX       512      /* blocking-pool threads at most (Tokio's default) */
#define RETAKE_ANYWAY_NS  10000000 /* Go retakes even with no work waiting after 10 ms */

/* ---- threads -------------------------------------------------------------------------- */

/* Wait as a spare until handed a worker. false: shutdown or keep-alive over; exit. */
static RT_PHASE_FN bool (spare_wait)(struct rt__thread *th)
{
	uint64_t phase = rt__phase_push(RT_PHASE_PARK);
	struct rt_sched *s = th->sched;
	struct timespec ts = { .tv_sec = SPARE_KEEPALIVE_S };
	bool handed = false;

	pthread_mutex_lock(&s->spare_lock);
	if (__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&s->spare_lock);
		goto out;
	}
	__atomic_store_n(&th->futex, 0, __ATOMIC_RELAXED);
	th->next = s->spares;
	s->spares = th;
	pthread_mutex_unlock(&s->spare_lock);

	while (!__atomic_load_n(&th->futex, __ATOMIC_ACQUIRE)) {
		rt__futex_wait_timeout(&th->futex, 0, &ts);
		if (__atomic_load_n(&th->futex, __ATOMIC_ACQUIRE))
			break;
		pthread_mutex_lock(&s->spare_lock);
		for (struct rt__thread **p = &s->spares; *p; p = &(*p)->next) {
			if (*p == th) {
				/* nobody took us: leave the list and exit */
				*p = th->next;
				pthread_mutex_unlock(&s->spare_lock);
				goto out;
			}
		}
		/* taken meanwhile: the futex store is on its way */
		pthread_mutex_unlock(&s->spare_lock);
	}
	handed = th->w != NULL; /* NULL: woken for shutdown */
out:
	rt__phase_pop(phase);
	return handed;
}

/* its callers set its phase at the call, as for every phase function (internal.h) */
#define spare_wait(th) RT__PHASE_CALL(RT_PHASE_PARK, (spare_wait)(th))

static RT_PHASE_FN void *worker_thread_main(void *arg)
{
	struct rt__thread *th = arg;

	rt__thread_bind(th);
	/* the base: scheduling, on no worker until rt__drive says which */
	rt__phase_set(RT_PHASE_WORD(RT_PHASE_SCHED, RT_PHASE_NO_WORKER, 0));
	pthread_setname_np(pthread_self(), "rt-worker");
	for (;;) {
		if (th->w) {
			__atomic_store_n(&th->w->driver_clock, th->cpu_clock, __ATOMIC_RELAXED);
			rt__drive(th);
			if (th->w)
				break; /* shutdown */
			continue;  /* lost the worker in a blocking section */
		}
		if (!spare_wait(th))
			break;
	}
	rt__thread_exit(th);
	return NULL;
}

int rt__thread_start(struct rt__thread *th, void *(*fn)(void *), size_t stack_size)
{
	struct rt_sched *s = th->sched;
	pthread_attr_t attr;
	pthread_t tid;
	int err;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (stack_size)
		pthread_attr_setstacksize(&attr, stack_size);
	/* counted under the lock that rt__threads_join() waits on */
	pthread_mutex_lock(&s->spare_lock);
	err = pthread_create(&tid, &attr, fn, th);
	if (!err) {
		s->nthreads_live++;
		__atomic_store_n(&s->threads_created, s->threads_created + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&s->spare_lock);
	pthread_attr_destroy(&attr);
	return -err;
}

void rt__thread_exit(struct rt__thread *th)
{
	struct rt_sched *s = th->sched;

	pthread_mutex_lock(&s->spare_lock);
	s->nthreads_live--;
	pthread_cond_broadcast(&s->threads_gone);
	pthread_mutex_unlock(&s->spare_lock);
	/* the phase word is th's: unbound before it goes */
	rt__thread_bind(NULL);
	free(th);
}

static int handoff(struct rt_sched *s, struct rt__worker *w)
{
	struct rt__thread *th;
	int err;

	/* nothing runs on w until its new thread picks a task */
	__atomic_store_n(&w->running, 0, __ATOMIC_RELAXED);
	pthread_mutex_lock(&s->spare_lock);
	th = s->spares;
	if (th) {
		s->spares = th->next;
		pthread_mutex_unlock(&s->spare_lock);
		th->w = w;
		__atomic_store_n(&w->thread, th, __ATOMIC_RELEASE);
		/* release: the worker's state written by its last driver is visible to the
		 * new one; pairs with the acquire load in spare_wait() */
		__atomic_store_n(&th->futex, 1, __ATOMIC_RELEASE);
		rt__futex_wake(&th->futex, 1);
		return 0;
	}
	pthread_mutex_unlock(&s->spare_lock);
	th = calloc(1, sizeof(*th));
	if (!th)
		return -ENOMEM;
	th->sched = s;
	th->w = w;
	__atomic_store_n(&w->thread, th, __ATOMIC_RELEASE);
	err = rt__thread_start(th, worker_thread_main, 0);
	if (err)
		free(th);
	return err;
}

RT_PHASE_FN int (rt__handoff)(struct rt_sched *s, struct rt__worker *w)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	int err = handoff(s, w);

	rt__phase_pop(phase);
	return err;
}

void rt__threads_join(struct rt_sched *s)
{
	pthread_mutex_lock(&s->spare_lock);
	/* wake every spare; each sees no worker and shutdown, and exits */
	for (struct rt__thread *th = s->spares; th; th = th->next) {
		__atomic_store_n(&th->futex, 1, __ATOMIC_RELEASE);
		rt__futex_wake(&th->futex, 1);
	}
	s->spares = NULL;
	pthread_cond_broadcast(&s->offload_cv); /* blocking-pool threads see shutdown */
	while (s->nthreads_live)
		pthread_cond_wait(&s->threads_gone, &s->spare_lock);
	pthread_mutex_unlock(&s->spare_lock);
}

struct rt__worker *rt__worker_add(struct rt_sched *s)
{
	struct rt__worker *w = NULL;
	unsigned n;

	pthread_mutex_lock(&s->spare_lock);
	n = __atomic_load_n(&s->nworkers, __ATOMIC_RELAXED);
	if (n < s->nmax && !__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE) &&
	    (w = rt__worker_new(s, n))) {
		s->workers[n] = w;
		__atomic_fetch_add(&s->idle_state, IDLE_UNPARK_ONE, __ATOMIC_SEQ_CST);
		/* release: pairs with the acquire loads of nworkers; w is whole first */
		__atomic_store_n(&s->nworkers, n + 1, __ATOMIC_RELEASE);
		if (__atomic_load_n(&s->nactive, __ATOMIC_RELAXED) < n + 1)
			__atomic_store_n(&s->nactive, n + 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->spare_lock);
	if (w && rt__handoff(s, w))
		return NULL; /* counted as unparked but never runs: harmless, it holds nothing */
	return w;
}

/* ---- the blocking pool (offload) ------------------------------------------------------------ */

/* A blocking-pool thread's idle wait, under spare_lock: until a task is queued, the
 * keep-alive runs out or the scheduler shuts down. */
static RT_PHASE_FN void (offload_wait)(struct rt_sched *s, const struct timespec *until)
{
	uint64_t phase = rt__phase_push(RT_PHASE_PARK);

	while (!s->offload_head && !__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE)) {
		int rc;

		s->offload_idle++;
		rc = pthread_cond_timedwait(&s->offload_cv, &s->spare_lock, until);
		s->offload_idle--;
		if (rc == ETIMEDOUT)
			break;
	}
	rt__phase_pop(phase);
}

/* its callers set its phase at the call, as for every phase function (internal.h) */
#define offload_wait(s, until) RT__PHASE_CALL_VOID(RT_PHASE_PARK, (offload_wait)(s, until))

/* The next task for a blocking-pool thread; NULL: keep-alive over or shutdown, and the
 * thread is no longer counted. */
static struct rt_task *offload_take(struct rt_sched *s)
{
	struct rt_task *t;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += SPARE_KEEPALIVE_S;
	pthread_mutex_lock(&s->spare_lock);
	offload_wait(s, &until);
	t = s->offload_head;
	if (t) {
		s->offload_head = t->next;
		if (!s->offload_head)
			s->offload_tail = NULL;
		s->offload_len--;
	} else {
		s->offload_threads--;
	}
	pthread_mutex_unlock(&s->spare_lock);
	return t;
}

/* Run t on a blocking-pool thread until it leaves: its section ends and it goes back to
 * the workers (rt_blocking_end), or it finishes inside the section. */
static void offload_run(struct rt__thread *th, struct rt_task *t)
{
	struct rt_sched *s = th->sched;

	for (;;) {
		th->current = t;
		rt__switch_in(th, t);
		th->current = NULL;
		switch (th->after.kind) {
		case RT_AFTER_DONE:
			rt__task_finished(th, t);
			return;
		case RT_AFTER_YIELD:
			rt__place(s, th, t, s->cfg.submit);
			return;
		case RT_AFTER_SUSPEND:
			if (th->after.commit(t, th->after.arg))
				return;
			break; /* the wait was already over: run it again */
		}
	}
}

static RT_PHASE_FN void *offload_thread_main(void *arg)
{
	struct rt__thread *th = arg;
	struct rt_task *t;

	rt__thread_bind(th);
	rt__phase_set(RT_PHASE_WORD(RT_PHASE_SCHED, RT_PHASE_NO_WORKER, 0)); /* the base */
	pthread_setname_np(pthread_self(), "rt-blocking");
	while ((t = offload_take(th->sched)))
		offload_run(th, t);
	rt__thread_exit(th);
	return NULL;
}

/* rt__suspend's commit for a section that moves its task to the blocking pool: queue it
 * and wake an idle pool thread, or start one. false: no thread could be started and
 * none is left to take it; the task stays on its worker and blocks in place. */
static bool offload_commit(struct rt_task *self, void *arg)
{
	struct rt_sched *s = self->sched;
	struct rt__thread *th;
	bool start;

	(void)arg;
	self->next = NULL;
	pthread_mutex_lock(&s->spare_lock);
	if (s->offload_tail)
		s->offload_tail->next = self;
	else
		s->offload_head = self;
	s->offload_tail = self;
	/* a woken thread takes one task: start another when more wait than sleep */
	start = ++s->offload_len > s->offload_idle && s->offload_threads < OFFLOAD_MAX;
	if (start)
		s->offload_threads++;
	else
		pthread_cond_signal(&s->offload_cv);
	pthread_mutex_unlock(&s->spare_lock);
	if (!start)
		return true; /* an idle thread is on its way, or a busy one will come to it */

	th = calloc(1, sizeof(*th));
	if (th) {
		th->sched = s;
		th->offload = true;
		if (!rt__thread_start(th, offload_thread_main, 0))
			return true;
		free(th);
	}
	pthread_mutex_lock(&s->spare_lock);
	if (--s->offload_threads) {
		pthread_mutex_unlock(&s->spare_lock);
		return true; /* a pool thread will come to it */
	}
	/* no pool thread exists to take it: take it back */
	for (struct rt_task **p = &s->offload_head, *prev = NULL; *p; prev = *p, p = &(*p)->next) {
		if (*p == self) {
			*p = self->next;
			if (s->offload_tail == self)
				s->offload_tail = prev;
			s->offload_len--;
			break;
		}
	}
	pthread_mutex_unlock(&s->spare_lock);
	return false;
}

/* ---- blocking sections ------------------------------------------------------------------- */

static void wake_monitor(struct rt_sched *s)
{
	__atomic_store_n(&s->monitor_futex, 1, __ATOMIC_RELEASE);
	rt__futex_wake(&s->monitor_futex, 1);
}

/* Keep the parallelism while w's thread blocks: wake a parked worker to come and
 * search (it will find w's queue), else add one. */
static void compensate(struct rt_sched *s, struct rt__worker *w)
{
	if (rt__wake_one_parked(s) || rt__worker_add(s))
		RT_STAT_ATOMIC_ADD(w, compensations, 1);
}

/* The section's own work (a hand-off, compensation, the move to the blocking pool) is
 * blocking too, and the word stays BLOCK when it returns: the section has begun. */
RT_PHASE_FN void rt_blocking_begin(void)
{
	uint64_t phase = rt__phase_push(RT_PHASE_BLOCK);
	struct rt__thread *th = rt__thread();
	struct rt_sched *s;
	struct rt__worker *w;
	uint64_t now;

	if (!th || !th->current || th->blocking) {
		rt__phase_pop(phase); /* no section begins (or one already has) */
		return;
	}
	s = th->sched;
	w = th->w;
	if (w && s->cfg.blocking_flush)
		rt__drain(w, w);
	if (w && s->cfg.blocking == RT_BLOCK_OFFLOAD && s->cfg.stack_mode != RT_STACK_COMPACT) {
		rt__suspend(offload_commit, NULL);
		th = rt__thread();
		if (th->offload) {
			/* on a blocking-pool thread now; w runs other tasks meanwhile */
			RT_STAT_ATOMIC_ADD(w, blocking_episodes, 1);
			RT_STAT_ATOMIC_ADD(w, offloads, 1);
			w = NULL;
		} else {
			w = th->w; /* no pool thread to be had: block in place */
		}
	}
	now = rt__now_ns();
	th->blocking = true;
	th->block_start_ns = now;
	th->block_w = w;
	th->block_phase = phase; /* on the thread the section runs on, which it never leaves */
	__atomic_fetch_add(&s->blocking_now, 1, __ATOMIC_RELAXED);
	RT_USDT(block_begin, w ? w->index : RT_NO_WORKER, th->current->id);
	if (!w)
		return;
	RT_STAT_ATOMIC_ADD(w, blocking_episodes, 1);
	__atomic_store_n(&w->section_flagged, false, __ATOMIC_RELAXED);
	__atomic_store_n(&w->bstart_ns, now, __ATOMIC_RELAXED);
	__atomic_store_n(&w->in_section, 1, __ATOMIC_RELEASE);
	/* compact mode: the task runs on its worker's shared stack, which cannot be handed
	 * to another thread while this one still runs on it; the section blocks in place */
	switch (s->cfg.stack_mode == RT_STACK_COMPACT ? RT_BLOCK_NONE : s->cfg.blocking) {
	case RT_BLOCK_HANDOFF:
		__atomic_store_n(&w->bstate, RT_W_TAKEN, __ATOMIC_RELEASE);
		th->w = NULL;
		rt__phase_set_worker(RT_PHASE_NO_WORKER);
		if (rt__handoff(s, w)) {
			/* no thread to take it: keep it and block with it */
			th->w = w;
			rt__phase_set_worker(w->index);
			__atomic_store_n(&w->bstate, RT_W_RUNNING, __ATOMIC_RELEASE);
		} else {
			RT_STAT_ATOMIC_ADD(w, handoffs, 1);
		}
		break;
	case RT_BLOCK_RETAKE:
		__atomic_store_n(&w->bstate, RT_W_BLOCKING, __ATOMIC_RELEASE);
		wake_monitor(s); /* so that it ticks at retake_us while we block */
		break;
	case RT_BLOCK_COMPENSATE:
		__atomic_store_n(&w->bstate, RT_W_BLOCKING, __ATOMIC_RELEASE);
		compensate(s, w);
		break;
	case RT_BLOCK_NONE:
	case RT_BLOCK_DETECT:
	case RT_BLOCK_OFFLOAD: /* here only when the pool had no thread for it */
		break; /* the runtime does not know; only a detector may find out */
	}
}

/* rt__suspend's commit for a task whose thread lost its worker: back to the pool. */
static bool back_to_pool(struct rt_task *self, void *arg)
{
	struct rt__thread *th = rt__thread();

	rt__place(self->sched, th, self, self->sched->cfg.submit);
	return true;
}

/* Ends the section in BLOCK (giving the task back to the pool is the section's work),
 * then restores the word the section began in, on whichever thread the task is now. */
RT_PHASE_FN void rt_blocking_end(void)
{
	uint64_t phase = rt__phase_push(RT_PHASE_BLOCK);
	struct rt__thread *th = rt__thread();
	struct rt_sched *s;
	struct rt__worker *w;
	uint64_t dt;

	if (!th || !th->blocking) {
		rt__phase_pop(phase); /* no section to end */
		return;
	}
	phase = th->block_phase; /* what the end restores: the word the section began in */
	s = th->sched;
	w = th->block_w;
	dt = rt__now_ns() - th->block_start_ns;
	__atomic_fetch_sub(&s->blocking_now, 1, __ATOMIC_RELAXED);
	RT_USDT(block_end, w ? w->index : RT_NO_WORKER, th->current->id, dt);
	if (w) {
		RT_STAT_ATOMIC_ADD(w, blocking_ns, dt);
		if (s->cfg.blocking == RT_BLOCK_DETECT &&
		    !__atomic_load_n(&w->section_flagged, __ATOMIC_RELAXED))
			RT_STAT_ATOMIC_ADD(w, detector_misses, 1);
		__atomic_store_n(&w->in_section, 0, __ATOMIC_RELEASE);
	}
	if (!w && th->offload) {
		/* on a blocking-pool thread: back to the workers */
		th->blocking = false;
		rt__suspend(back_to_pool, NULL);
		goto out;
	}
	if (!w) {
		/* began with no worker (a task with its own thread): nothing to give back */
		th->blocking = false;
		goto out;
	}
	if (th->w) {
		uint32_t expect = RT_W_BLOCKING;

		if ((s->cfg.blocking != RT_BLOCK_RETAKE && s->cfg.blocking != RT_BLOCK_COMPENSATE) ||
		    s->cfg.stack_mode == RT_STACK_COMPACT) {
			th->blocking = false;
			th->block_w = NULL;
			goto out;
		}
		/* Go's exitsyscall fast path: keep the worker unless the monitor took it */
		if (__atomic_compare_exchange_n(&w->bstate, &expect, RT_W_RUNNING, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			th->blocking = false;
			th->block_w = NULL;
			goto out;
		}
		th->w = NULL; /* retaken: it belongs to another thread now */
		rt__phase_set_worker(RT_PHASE_NO_WORKER);
	}
	/* Handed off (cats-effect's IO.blocking, Tokio's block_in_place): the task goes on
	 * here, on a thread that is no worker's now, as a cats-effect fiber goes on with its
	 * run loop on the blocker thread, until it next waits or yields. Meanwhile what it
	 * places goes where an outside thread's does, a section it begins blocks in place,
	 * and once it waits the thread becomes a spare (rt__drive finds no worker). */
	if (s->cfg.blocking == RT_BLOCK_HANDOFF) {
		th->blocking = false;
		th->block_w = NULL;
		goto out;
	}
	/* no worker any more (retaken, as Go's exitsyscall finds its P gone): go back to the
	 * pool, and this thread becomes a spare */
	th->blocking = false;
	rt__suspend(back_to_pool, NULL);
	th = rt__thread(); /* resumed on some worker's thread */
	th->block_w = NULL;
out:
	rt__phase_pop(phase);
}

RT_PHASE_FN int (rt_blocking)(int (*fn)(void *arg), void *arg)
{
	uint64_t phase = rt__phase_push(RT_PHASE_BLOCK);
	int ret;

	rt_blocking_begin();
	ret = fn(arg);
	rt_blocking_end();
	rt__phase_pop(phase);
	return ret;
}

/* ---- the monitor --------------------------------------------------------------------------- */

static unsigned queued(const struct rt__worker *w)
{
	return rt_deque_len(&w->dq) + __atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED) +
	       (__atomic_load_n(&w->lifo, __ATOMIC_RELAXED) != NULL);
}

/* Idle-while-queued and stranded time over the last dt ns. */
static void account(struct rt_sched *s, unsigned n, uint64_t dt)
{
	uint64_t total = __atomic_load_n(&s->inject_len, __ATOMIC_RELAXED);
	unsigned q[RT_MAX_WORKERS];

	for (unsigned i = 0; i < n; i++)
		total += q[i] = queued(s->workers[i]);
	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *w = s->workers[i];

		if (__atomic_load_n(&w->parked, __ATOMIC_RELAXED) && total > q[i])
			RT_STAT_ATOMIC_ADD(w, idle_while_queued_ns, dt);
		if (q[i] && __atomic_load_n(&w->in_section, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&w->bstate, __ATOMIC_RELAXED) != RT_W_TAKEN) {
			RT_STAT_ATOMIC_ADD(w, stranded_ns, dt);
			RT_STAT_ATOMIC_ADD(w, stranded_task_ns, dt * q[i]);
		}
	}
}

/* Kyo's BlockingMonitor: a busy worker whose thread used no CPU time for
 * detect_samples samples in a row is flagged blocked and drained. */
static void detect(struct rt_sched *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *w = s->workers[i];
		clockid_t clock = __atomic_load_n(&w->driver_clock, __ATOMIC_RELAXED);
		struct timespec ts;
		uint64_t cpu;

		if (!__atomic_load_n(&w->running, __ATOMIC_RELAXED) || !clock ||
		    clock_gettime(clock, &ts)) {
			w->flat_samples = 0;
			__atomic_store_n(&w->flagged, false, __ATOMIC_RELAXED);
			continue;
		}
		cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		if (cpu != w->cpu_seen_ns) {
			w->cpu_seen_ns = cpu;
			w->flat_samples = 0;
			__atomic_store_n(&w->flagged, false, __ATOMIC_RELAXED);
			continue;
		}
		if (++w->flat_samples < s->cfg.detect_samples)
			continue;
		if (!__atomic_load_n(&w->flagged, __ATOMIC_RELAXED)) {
			__atomic_store_n(&w->flagged, true, __ATOMIC_RELAXED);
			__atomic_store_n(&w->section_flagged, true, __ATOMIC_RELAXED);
			RT_STAT_ATOMIC_ADD(w, detector_flags, 1);
		}
		/* drained on the edge and again while tasks keep arriving */
		if (queued(w))
			rt__drain_remote(w);
	}
}

/* Kyo's time slice (checkAvailability and cycleWorkers): a worker whose task has run
 * time_slice_ms without a switch is stalled. On that edge its queue is drained and the
 * task asked to yield at its next rt_preempt_point(); until the task switches out,
 * scans and the local fast path pass the worker over. Progress is the worker's
 * run_tick, as Go's sysmon watches schedtick: no clock is read on the run path. */
static void stall_check(struct rt_sched *s, unsigned n, uint64_t now)
{
	uint64_t slice = (uint64_t)s->cfg.time_slice_ms * 1000000;

	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *w = s->workers[i];
		uint64_t tick = __atomic_load_n(&w->run_tick, __ATOMIC_RELAXED);

		if (!__atomic_load_n(&w->running, __ATOMIC_RELAXED) || tick != w->slice_tick) {
			w->slice_tick = tick;
			w->slice_from_ns = now;
			if (w->stalled)
				__atomic_store_n(&w->stalled, false, __ATOMIC_RELAXED);
			continue;
		}
		if (w->stalled || now - w->slice_from_ns < slice)
			continue;
		__atomic_store_n(&w->stalled, true, __ATOMIC_RELAXED);
		RT_STAT_ATOMIC_ADD(w, stalls, 1);
		/* drain before asking the task to yield: it would otherwise go back into its
		 * queue and its worker pick from what is being drained */
		if (queued(w))
			rt__drain_remote(w);
		__atomic_store_n(&w->preempt_tick, tick, __ATOMIC_RELAXED);
	}
}

/* Go's retake: a worker blocked longer than retake_us with work waiting, or longer
 * than 10 ms, goes to a spare thread. */
static bool retake(struct rt_sched *s, unsigned n, uint64_t now)
{
	bool blocked = false;

	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *w = s->workers[i];
		uint32_t expect = RT_W_BLOCKING;
		uint64_t since;

		if (__atomic_load_n(&w->bstate, __ATOMIC_ACQUIRE) != RT_W_BLOCKING)
			continue;
		blocked = true;
		since = now - __atomic_load_n(&w->bstart_ns, __ATOMIC_RELAXED);
		if (since < (uint64_t)s->cfg.retake_us * 1000 ||
		    (!queued(w) && since < RETAKE_ANYWAY_NS))
			continue;
		if (__atomic_compare_exchange_n(&w->bstate, &expect, RT_W_TAKEN, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			if (rt__handoff(s, w))
				__atomic_store_n(&w->bstate, RT_W_BLOCKING, __ATOMIC_RELEASE);
			else
				RT_STAT_ATOMIC_ADD(w, handoffs, 1);
		}
	}
	return blocked;
}

/* The monitor's wait between ticks (or until a section wakes it for a retake). */
static RT_PHASE_FN void (monitor_sleep)(struct rt_sched *s, const struct timespec *ts)
{
	uint64_t phase = rt__phase_push(RT_PHASE_PARK);

	rt__futex_wait_timeout(&s->monitor_futex, 0, ts);
	rt__phase_pop(phase);
}

/* its callers set its phase at the call, as for every phase function (internal.h) */
#define monitor_sleep(s, ts) RT__PHASE_CALL_VOID(RT_PHASE_PARK, (monitor_sleep)(s, ts))

static RT_PHASE_FN void *monitor_main(void *arg)
{
	struct rt_sched *s = arg;
	uint64_t last, last_detect;
	bool retaking = false;

	/* its ticks' work is scheduling (the base), its waits between them parking */
	rt__phase_set(RT_PHASE_WORD(RT_PHASE_SCHED, RT_PHASE_NO_WORKER, 0));
	__atomic_store_n(&s->monitor_phase, rt__phase_word(), __ATOMIC_RELEASE);
	pthread_setname_np(pthread_self(), "rt-monitor");
	last = last_detect = rt__now_ns();
	while (!__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE)) {
		unsigned tick_us = s->cfg.monitor_us, n;
		struct timespec ts;
		uint64_t now, slept_from;

		if (s->cfg.blocking == RT_BLOCK_DETECT && s->cfg.detect_us < tick_us)
			tick_us = s->cfg.detect_us;
		if (retaking && s->cfg.retake_us < tick_us)
			tick_us = s->cfg.retake_us;
		ts.tv_sec = tick_us / 1000000;
		ts.tv_nsec = (long)(tick_us % 1000000) * 1000;
		slept_from = rt__now_ns();
		monitor_sleep(s, &ts);
		__atomic_store_n(&s->monitor_futex, 0, __ATOMIC_RELAXED);

		now = rt__now_ns();
		__atomic_store_n(&s->coarse_ms, now / 1000000, __ATOMIC_RELAXED);
		n = __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE);
		if (s->cfg.metrics)
			account(s, n, now - last);
		/* Kyo's probe is the monitor's own lateness: how long past its tick it woke
		 * (a wake-up before the tick, for a retake, says nothing about it) */
		if (s->cfg.adapt == RT_ADAPT_KYO && now - slept_from >= (uint64_t)tick_us * 1000)
			rt__adapt_tick(s, now, now - slept_from - (uint64_t)tick_us * 1000);
		last = now;
		if (s->cfg.blocking == RT_BLOCK_DETECT &&
		    now - last_detect >= (uint64_t)s->cfg.detect_us * 1000) {
			detect(s, n);
			last_detect = now;
		}
		if (s->cfg.time_slice_ms)
			stall_check(s, n, now);
		if (s->cfg.blocking == RT_BLOCK_RETAKE)
			retaking = retake(s, n, now) ||
				   __atomic_load_n(&s->blocking_now, __ATOMIC_RELAXED);
	}
	/* the word goes with the thread */
	__atomic_store_n(&s->monitor_phase, NULL, __ATOMIC_RELEASE);
	return NULL;
}

int rt__monitor_start(struct rt_sched *s)
{
	int err;

	/* set before any task runs, so that no run spans the clock's first step from 0 */
	__atomic_store_n(&s->coarse_ms, rt__now_ns() / 1000000, __ATOMIC_RELAXED);
	err = pthread_create(&s->monitor, NULL, monitor_main, s);

	if (err)
		return -err;
	s->monitor_started = true;
	return 0;
}

void rt__monitor_stop(struct rt_sched *s)
{
	if (!s->monitor_started)
		return;
	__atomic_store_n(&s->shutdown, true, __ATOMIC_RELEASE);
	wake_monitor(s);
	pthread_join(s->monitor, NULL);
	s->monitor_started = false;
}
