/*
 * The scheduler: runtime threads and their run loop, searching (parking is park.c), and the
 * task operations built on them (spawn, submit, join, yield, suspend, wait).
 *
 * A thread that drives a worker looks for its next task (rt__next_task, place.c: the LIFO
 * slot, the global queue every global_interval ticks, its own queue, its inbox, a
 * batch from the global queue), then, if idle workers may steal and fewer than
 * workers/searcher_frac are searching already, searches other workers' queues for
 * search_passes passes and then up to search_spin_us more, and then parks (park.c:
 * Tokio's protocol, whose last searcher re-checks every queue before it sleeps).
 *
 * A task switches back to its thread's own context (never straight to another task);
 * what it wants done then (finish, requeue, or commit a wait) is in th->after, and
 * runs once the task's stack is no longer in use, so a waker can never resume a task
 * that is still switching out. After every switch the thread re-reads its worker: a
 * blocking section may have handed it to another thread meanwhile.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "runtime/usdt.h"

/* The calling thread's runtime context; read through rt__thread() only. */
__thread struct rt__thread *rt__tls_thread __attribute__((tls_model("local-exec")));

/* Every thread's phase word (rt.h): NONE with no worker until the thread enters the
 * runtime's code; the probe reads it at rt_phase_tls_offset() from the thread pointer.
 * Then its entry word (phase.h), 0: no task. Defined here in assembly, side by side,
 * because C does not say where it lays two thread-locals, and the probe finds the entry
 * word RT_PHASE_ENTRY_OFFSET past the phase word. */
_Static_assert(RT_PHASE_WORD(RT_PHASE_NONE, RT_PHASE_NO_WORKER, 0) == 0xffff00 &&
		       RT_PHASE_ENTRY_OFFSET == 8,
	       "the initial words below");
__asm__(".pushsection .tdata,\"awT\",@progbits\n\t"
	".p2align 4\n\t"
	".globl rt_phase_word\n\t"
	".type rt_phase_word, @object\n\t"
	".size rt_phase_word, 8\n"
	"rt_phase_word:\n\t"
	".quad 0xffff00\n\t"
	".globl rt_entry_word\n\t"
	".type rt_entry_word, @object\n\t"
	".size rt_entry_word, 8\n"
	"rt_entry_word:\n\t"
	".quad 0\n\t"
	".popsection");

struct rt__worker *rt__self(void)
{
	struct rt__thread *th = rt__thread();

	return th && !th->blocking ? th->w : NULL;
}

/* Where the thread's own stack is, for AddressSanitizer's switches back to it. */
static void thread_stack(struct rt__thread *th)
{
#if defined(RT_SANITIZE_ADDRESS)
	pthread_attr_t attr;
	void *lo;
	size_t len;

	if (pthread_getattr_np(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &lo, &len)) {
		th->stack_lo = lo;
		th->stack_len = len;
	}
	pthread_attr_destroy(&attr);
#endif
}

void rt__thread_bind(struct rt__thread *th)
{
	rt__tls_thread = th;
	if (th) {
		/* for readers on other threads (tests): where this thread's word is */
		__atomic_store_n(&th->phase, rt__phase_word(), __ATOMIC_RELEASE);
		th->tsan_fiber = RT_TSAN_CURRENT();
		thread_stack(th);
	}
	if (th && pthread_getcpuclockid(pthread_self(), &th->cpu_clock))
		th->cpu_clock = CLOCK_THREAD_CPUTIME_ID;
}

int64_t rt_phase_tls_offset(void)
{
	int64_t off;

	/* the link-time offset of the word from the thread pointer (local-exec) */
	__asm__("movq $rt_phase_word@tpoff, %0" : "=r"(off));
	return off;
}

/* ---- finding work --------------------------------------------------------------------- */

/* Look in other workers' queues and the global queue for up to search_spin_us. Where
 * idle workers do not steal (Kyo), a worker whose queue ran dry takes one look. */
static struct rt_task *search(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	uint64_t deadline = 0;

	if (__atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE) < 2)
		return NULL;
	if (!s->cfg.idle_steal)
		return rt__steal(w, false);
	if (!rt__enter_searching(w))
		return NULL;
	for (unsigned round = 0;; round++) {
		/* Go takes runnext slots only on the last of its four passes */
		struct rt_task *t = rt__steal(w, (round & 3) == 3);

		if (t || (t = rt__inject_take(w, true)))
			return t;
		if (__atomic_load_n(&s->shutdown, __ATOMIC_RELAXED))
			return NULL;
		if (round + 1 >= s->cfg.search_passes) {
			uint64_t now;

			if (!s->cfg.search_spin_us)
				return NULL;
			now = rt__now_ns();
			if (!deadline)
				deadline = now + (uint64_t)s->cfg.search_spin_us * 1000;
			else if (now >= deadline)
				return NULL;
		}
		for (int i = 0; i < 32; i++)
			rt__cpu_relax();
	}
}

/* ---- running tasks ------------------------------------------------------------------ */

void rt__task_finished(struct rt__thread *th, struct rt_task *t)
{
	/* release: the result is visible to whoever sees DONE; acquire: the joiner's
	 * waiter pointer is visible once we see WAITING */
	uint32_t old = __atomic_fetch_or(&t->state, RT_TASK_DONE, __ATOMIC_ACQ_REL);

	if (old & RT_TASK_WAITING)
		rt__wake(t->waiter); /* the joiner frees t once woken: t is not touched after */
	else if (old & RT_TASK_DETACHED)
		rt__task_put(t->sched, th->w, t);
}

/* Tokio's adaptive global-queue interval: about 200 us of polls between checks of the
 * global queue. Measured once per interval (as Tokio measures once per batch): the
 * mean poll is the time since the last check over the ticks since. */
void rt__adapt_interval(struct rt__worker *w)
{
	uint64_t now = rt__now_ns(), poll_ns, interval;

	if (w->interval_mark_ns) {
		poll_ns = (now - w->interval_mark_ns) / w->global_interval;
		w->poll_ewma_ns = w->poll_ewma_ns ? (w->poll_ewma_ns * 7 + poll_ns) / 8 : poll_ns;
		interval = w->poll_ewma_ns ? 200000 / w->poll_ewma_ns : 127;
		w->global_interval = interval < 2 ? 2 : interval > 127 ? 127 : (unsigned)interval;
	}
	w->interval_mark_ns = now;
}

/* Where a yielded task goes. A worker puts it back on its own queue, as cats-effect's
 * cede and Tokio's yield_now do; where wake-ups go to the shared queue (a plain
 * thread-pool executor, whose workers own no queue) it is submitted there again. Off a
 * worker it goes where a submission does. */
static enum rt_place yield_place(const struct rt_sched *s, const struct rt__worker *w)
{
	if (!w)
		return s->cfg.submit;
	return s->cfg.wake == RT_PLACE_EXTERNAL ? RT_PLACE_EXTERNAL : RT_PLACE_LOCAL;
}

static void run_task(struct rt__thread *th, struct rt_task *t)
{
	struct rt_sched *s = th->sched;

	for (;;) {
		struct rt__worker *w = th->w;
		uint64_t start_ms = 0;
		bool heap;

		th->current = t;
		if (w) {
			__atomic_store_n(&w->running, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&w->run_tick, w->run_tick + 1, __ATOMIC_RELAXED);
			RT_STAT_INC(w, tasks_run);
			if (t->ready_ns)
				rt__latency_record(w, t);
			if (w->shared_map) {
				if (!t->home)
					rt__compact_first_run(w, t);
				else if (t->saved_len)
					rt__compact_restore(t);
			}
		}
		/* the word stays SCHED through the switch: the task sets its own */
		RT_USDT(run_begin, t->id, w ? w->index : RT_NO_WORKER);
		/* queue=heap's key: time run, on the monitor's coarse clock as Kyo counts it
		 * on its InternalClock; a load, not a clock read, each side of the run */
		heap = s->cfg.queue == RT_QUEUE_HEAP;
		if (heap)
			start_ms = __atomic_load_n(&s->coarse_ms, __ATOMIC_RELAXED);
		rt__switch_in(th, t);
		if (heap)
			t->runtime += __atomic_load_n(&s->coarse_ms, __ATOMIC_RELAXED) - start_ms;
		th->current = NULL;
		RT_USDT(run_end, t->id, th->w ? th->w->index : RT_NO_WORKER, (int)th->after.kind);
		/* re-read: a blocking section may have handed the worker to another thread */
		w = th->w;
		if (w)
			__atomic_store_n(&w->running, 0, __ATOMIC_RELAXED);
		/* compact mode: keep what it used of the shared stack before anyone else runs */
		if (t->home && th->after.kind != RT_AFTER_DONE && rt__compact_save(t)) {
			fprintf(stderr, "schedlab runtime: out of memory saving a parked task's stack\n");
			abort();
		}

		switch (th->after.kind) {
		case RT_AFTER_DONE:
			rt__task_finished(th, t);
			return;
		case RT_AFTER_YIELD:
			/* nothing else to run here: run it again at once, with no queue
			 * operations (cats-effect's cede bypass) */
			if (w && rt__idle_here(w))
				break;
			rt__place(s, th, t, yield_place(s, w));
			return;
		case RT_AFTER_SUSPEND:
			if (th->after.commit(t, th->after.arg))
				return;
			break; /* the wait was already over: run it again */
		}
	}
}

/* The body of every fiber, entered from rt__fiber_start on the task's own stack, which
 * has set the word to RUN already: the task's own work begins there, on the worker that
 * switched to it. */
RT_PHASE_FN __attribute__((noreturn, used)) void rt__task_main(struct rt_task *t)
{
	RT_ASAN_ARRIVE(NULL, NULL, NULL);
	rt__phase_set_entry(t->fn);
	rt__phase_set_task(t->id);
	if (t->fork) {
		rt__fork_run(t); /* the body under its scope's handler, then the fork's end */
	} else {
		t->result = t->fn(t->arg);
		/* a task that forked and is no fork: its scope ends with its body, and a
		 * failure it still holds has nobody to go to (rt.h, "scopes") */
		if (t->scope)
			rt_error_free(rt__scope_exit(t));
	}
	rt__task_exit(t);
}

RT_PHASE_FN __attribute__((noreturn)) void (rt__task_exit)(struct rt_task *t)
{
	struct rt__thread *th;

	/* never popped: the thread that switches back sets its own word */
	(void)rt__phase_push(RT_PHASE_SCHED);
	th = rt__thread();
	th->after.kind = RT_AFTER_DONE;
	rt__switch_out(th, t);
	__builtin_unreachable();
}

RT_PHASE_FN void rt__drive(struct rt__thread *th)
{
	/* the thread's own context: scheduling, on its worker, no task */
	uint64_t phase = rt__phase_set(RT_PHASE_WORD(RT_PHASE_SCHED, th->w->index, 0));
	bool woken = false;

	while (th->w) {
		struct rt__worker *w = th->w;
		struct rt_task *t = rt__next_task(w);

		if (!t)
			t = search(w);
		if (!t) {
			if (woken)
				RT_STAT_INC(w, noop_wakeups);
			if (!rt__park(w))
				break;
			woken = true;
			continue;
		}
		woken = false;
		if (w->searching)
			rt__leave_searching(w);
		run_task(th, t);
	}
	rt__phase_unset(phase);
}

/* ---- the task API ------------------------------------------------------------------- */

/* The bodies of rt__suspend(), rt__wait() and rt__ready() are inlined into the phase
 * functions of the same phase that call them (rt_join, rt__wake): a phase function
 * called from one of its own phase would only store the word it found. */

static inline void suspend(bool (*commit)(struct rt_task *self, void *arg), void *arg)
{
	struct rt__thread *th = rt__thread();
	struct rt_task *t = th->current;

	th->after.kind = RT_AFTER_SUSPEND;
	th->after.commit = commit;
	th->after.arg = arg;
	rt__switch_out(th, t);
	/* resumed, perhaps on another thread */
}

RT_PHASE_FN void (rt__suspend)(bool (*commit)(struct rt_task *self, void *arg), void *arg)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SCHED);

	suspend(commit, arg);
	rt__phase_pop(phase);
}

static inline void ready(struct rt_task *t)
{
	struct rt__thread *th;

	if (t->own) {
		rt__task_thread_ready(t);
		return;
	}
	th = rt__thread();
	if (th)
		rt__place_submitting(t->sched, th, t, t->sched->cfg.wake);
	else
		rt__place_submitting(t->sched, NULL, t, t->sched->cfg.submit);
}

RT_PHASE_FN void (rt__ready)(struct rt_task *t)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	ready(t);
	rt__phase_pop(phase);
}

/* rt_spawn and rt_spawn_elsewhere, in their SUBMIT phase. One copy, out of line: its
 * rt:spawn probe point is one site in the binary, as tracers expect. */
static __attribute__((noinline)) struct rt_task *spawn_placed(rt_fn fn, void *arg, bool elsewhere)
{
	struct rt__thread *th = rt__thread();
	struct rt__worker *w;
	struct rt_sched *s;
	struct rt_task *t;

	if (!th || !th->current) {
		errno = EPERM; /* outside a task: use rt_submit() */
		return NULL;
	}
	s = th->sched;
	w = th->blocking ? NULL : th->w; /* as rt__self() */
	if (s->cfg.executor == RT_EXEC_THREADS) {
		t = rt__task_new(s, NULL, fn, arg);
		if (t && s->cfg.scope != RT_SCOPE_NONE && rt__fork_add(th->current, t)) {
			rt__task_put(s, NULL, t);
			errno = ENOMEM;
			return NULL;
		}
		if (t && rt__task_thread_start(s, t)) {
			if (t->fork)
				rt__fork_drop(t);
			rt__task_put(s, NULL, t);
			errno = EAGAIN;
			return NULL;
		}
		return t;
	}
	t = rt__task_new(s, w, fn, arg);
	/* under a scope the child is a fork of the spawner's, registered before it can run */
	if (t && s->cfg.scope != RT_SCOPE_NONE && rt__fork_add(th->current, t)) {
		rt__task_put(s, w, t);
		errno = ENOMEM;
		return NULL;
	}
	if (t) {
		if (w)
			RT_STAT_INC(w, spawned);
		RT_USDT(spawn, t->id, w ? w->index : RT_NO_WORKER, (int)s->cfg.spawn);
		if (elsewhere && w) {
			bool fallback;
			struct rt__worker *v = rt__scan(s, w, w, true, &fallback);

			if (v && v != w)
				rt__inbox_push(v, t);
			else
				rt__place_submitting(s, th, t, RT_PLACE_EXTERNAL);
		} else {
			rt__place_submitting(s, th, t, s->cfg.spawn);
		}
	}
	return t;
}

RT_PHASE_FN struct rt_task *(rt_spawn)(rt_fn fn, void *arg)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt_task *t = spawn_placed(fn, arg, false);

	rt__phase_pop(phase);
	return t;
}

RT_PHASE_FN struct rt_task *(rt_spawn_elsewhere)(rt_fn fn, void *arg)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt_task *t = spawn_placed(fn, arg, true);

	rt__phase_pop(phase);
	return t;
}

static struct rt_task *submit(struct rt_sched *s, rt_fn fn, void *arg)
{
	struct rt__thread *th = rt__thread();
	struct rt__worker *w = th && th->sched == s ? rt__self() : NULL;
	struct rt_task *t = rt__task_new(s, w, fn, arg);

	if (!t)
		return NULL;
	if (s->cfg.executor == RT_EXEC_THREADS) {
		if (rt__task_thread_start(s, t)) {
			rt__task_put(s, NULL, t);
			errno = EAGAIN;
			return NULL;
		}
		return t;
	}
	rt__place_submitting(s, th && th->sched == s ? th : NULL, t, s->cfg.submit);
	return t;
}

/* A phase function on a runtime thread only: elsewhere there is no word to set. */
RT_PHASE_FN struct rt_task *(rt_submit)(struct rt_sched *s, rt_fn fn, void *arg)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt_task *t = submit(s, fn, arg);

	rt__phase_pop(phase);
	return t;
}

/* rt__suspend's commit for rt__wait: the waiter rides in arg. */
struct wait_commit {
	struct rt__waiter *w;
	bool (*commit)(struct rt__waiter *w, void *arg);
	void *arg;
};

static bool wait_commit(struct rt_task *self, void *arg)
{
	struct wait_commit *c = arg;

	return c->commit(c->w, c->arg);
}

static inline void wait_on(struct rt__waiter *w,
			   bool (*commit)(struct rt__waiter *w, void *arg), void *arg)
{
	struct rt__thread *th = rt__thread();

	/* inside a blocking section the thread blocks, as the section says it will */
	w->task = th && !th->blocking ? th->current : NULL;
	w->futex = 0;
	w->next = w->prev = NULL;
	if (w->task) {
		struct wait_commit c = { w, commit, arg };

		suspend(wait_commit, &c);
		return;
	}
	if (!commit(w, arg))
		return;
	while (!__atomic_load_n(&w->futex, __ATOMIC_ACQUIRE))
		rt__futex_wait_timeout(&w->futex, 0, NULL);
}

RT_PHASE_FN void (rt__wait)(struct rt__waiter *w, bool (*commit)(struct rt__waiter *w, void *arg),
			  void *arg)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SCHED);

	wait_on(w, commit, arg);
	rt__phase_pop(phase);
}

RT_PHASE_FN void (rt__wake)(struct rt__waiter *w)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt_task *t = w->task; /* read first: w may be gone once woken */

	if (t) {
		ready(t);
	} else {
		/* release: what the waker did before is visible to the woken thread; the
		 * futex call after the store may touch a word whose owner already returned,
		 * which at worst wakes nobody */
		__atomic_store_n(&w->futex, 1, __ATOMIC_RELEASE);
		rt__futex_wake(&w->futex, 1);
	}
	rt__phase_pop(phase);
}

void *rt__park_area(size_t size)
{
	struct rt__thread *th = rt__thread();

	if (!th || !th->current || th->blocking)
		return NULL;
	return size <= RT_PARK_BYTES ? th->current->park : NULL;
}

static bool join_commit(struct rt__waiter *w, void *arg)
{
	struct rt_task *t = arg;
	uint32_t expected = 0;

	t->waiter = w;
	/* fails only if t finished meanwhile: then we go on at once; release publishes
	 * t->waiter to task_finished(), which reads it after seeing WAITING */
	return __atomic_compare_exchange_n(&t->state, &expected, RT_TASK_WAITING, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

enum rt_binds rt_binds(void)
{
	struct rt_task *t = rt_current();

	return t ? t->sched->cfg.binds : RT_BINDS_STACK;
}

RT_PHASE_FN uint64_t (rt_join)(struct rt_task *t)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SCHED), result;

	if (t->promise) {
		/* scope=async: the fork is a Future, and the join awaits its promise (Gears'
		 * await); the task itself is let go as a detach lets it go */
		result = rt__promise_await(t->promise);
		if (__atomic_fetch_or(&t->state, RT_TASK_DETACHED, __ATOMIC_ACQ_REL) & RT_TASK_DONE)
			rt__task_put(t->sched, rt__self(), t);
		rt__phase_pop(phase);
		return result;
	}
	if (!(__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) & RT_TASK_DONE)) {
		struct rt__waiter local, *w = rt__park_area(sizeof(*w)) ?: &local;

		wait_on(w, join_commit, t);
	}
	/* the acquire above, or the hand-off that woke us, orders the result */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	result = t->result;
	rt__task_put(t->sched, rt__self(), t);
	rt__phase_pop(phase);
	return result;
}

RT_PHASE_FN void (rt_detach)(struct rt_task *t)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SCHED);
	uint32_t old;

	if (t->promise)
		rt__promise_drop(t->promise); /* scope=async: nobody will await the Future */
	old = __atomic_fetch_or(&t->state, RT_TASK_DETACHED, __ATOMIC_ACQ_REL);
	if (old & RT_TASK_DONE)
		rt__task_put(t->sched, rt__self(), t);
	rt__phase_pop(phase);
}

RT_PHASE_FN void (rt_yield)(void)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SCHED);
	struct rt__thread *th = rt__thread();
	struct rt_task *t = th && !th->blocking ? th->current : NULL;

	if (t && t->own) {
		sched_yield(); /* a task with its own thread yields the CPU */
	} else if (t) {
		th->after.kind = RT_AFTER_YIELD;
		rt__switch_out(th, t);
	}
	rt__phase_pop(phase);
}

void rt_preempt_point(void)
{
	struct rt__thread *th = rt__thread();
	struct rt__worker *w = th && !th->blocking ? th->w : NULL; /* as rt__self() */

	/* a fork stops here once its scope cancelled it */
	if (th && th->current && th->current->fork)
		rt__fork_check(th->current);

	/* the monitor names the run it wants gone by its tick: a flag left over from an
	 * earlier run that never reached a preemption point does not apply to this one */
	if (!w || __atomic_load_n(&w->preempt_tick, __ATOMIC_RELAXED) != w->run_tick)
		return;
	__atomic_store_n(&w->preempt_tick, 0, __ATOMIC_RELAXED);
	RT_STAT_INC(w, preemptions);
	rt_yield();
}

RT_PHASE_FN unsigned (rt_flush)(void)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt__worker *w = rt__self();
	unsigned moved = w ? rt__drain(w, w) : 0;

	rt__phase_pop(phase);
	return moved;
}

struct rt_task *rt_current(void)
{
	struct rt__thread *th = rt__thread();

	return th ? th->current : NULL;
}

unsigned rt_worker_index(void)
{
	struct rt__thread *th = rt__thread();

	return th && th->w ? th->w->index : RT_NO_WORKER;
}

uint64_t rt_task_id(const struct rt_task *t)
{
	return t->id;
}

/* ---- the scheduler's life ------------------------------------------------------------ */

static void worker_free(struct rt_sched *s, struct rt__worker *w)
{
	rt__task_cache_drain(s, w);
	rt__poller_free(w);
	pthread_mutex_destroy(&w->inbox_lock);
	free(w->heap);
	free(w->dq.slots);
	free(w->spill);
	free(w->steals_from);
	rt__shared_stack_unmap(w);
	free(w);
}

struct rt__worker *rt__worker_new(struct rt_sched *s, unsigned index)
{
	struct rt__worker *w;
	void **slots = calloc(s->cfg.capacity, sizeof(*slots));
	void **spill = calloc(s->cfg.capacity / 2, sizeof(*spill));
	uint64_t *from = calloc(RT_MAX_WORKERS, sizeof(*from));

	if (!slots || !spill || !from || posix_memalign((void **)&w, RT_CACHELINE, sizeof(*w))) {
		free(slots);
		free(spill);
		free(from);
		errno = ENOMEM;
		return NULL;
	}
	memset(w, 0, sizeof(*w));
	rt_deque_init(&w->dq, slots, s->cfg.capacity);
	pthread_mutex_init(&w->inbox_lock, NULL);
	w->spill = spill;
	w->steals_from = from;
	w->sched = s;
	w->index = index;
	w->rng = 0x9e3779b9u * (index + 1);
	w->global_interval = s->cfg.global_interval;
	if (s->cfg.stack_mode == RT_STACK_COMPACT && rt__shared_stack_map(s, w)) {
		pthread_mutex_destroy(&w->inbox_lock);
		free(slots);
		free(spill);
		free(from);
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

struct rt_sched *rt_sched_new(const struct rt_config *c)
{
	unsigned ncore = c->workers, nmax;
	struct rt_sched *s;
	int err;

	if (!ncore) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		ncore = cpus > 0 ? (unsigned)cpus : 1;
	}
	nmax = c->workers_max > ncore ? c->workers_max : ncore;
	if (c->executor == RT_EXEC_THREADS)
		ncore = nmax = 0;
	/* the one copy of the rules of which knobs go together; rt_config_check() words
	 * the reason for the CLI */
	err = rt_config_check(c, NULL, 0);
	if (err) {
		errno = -err;
		return NULL;
	}

	if (posix_memalign((void **)&s, RT_CACHELINE, sizeof(*s))) {
		errno = ENOMEM;
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->cfg = *c;
	s->lifo_shared = rt__lifo_shared(c);
	s->cfg.workers = ncore;
	s->cfg.workers_max = nmax;
	s->ncore = ncore;
	s->nmax = nmax;
	s->max_searchers = c->searcher_frac ? (ncore + c->searcher_frac - 1) / c->searcher_frac : 0;
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_init(&s->inject_lock, NULL);
	pthread_mutex_init(&s->idle_lock, NULL);
	pthread_mutex_init(&s->pool_lock, NULL);
	pthread_mutex_init(&s->io_lock, NULL);
	pthread_mutex_init(&s->spare_lock, NULL);
	pthread_cond_init(&s->threads_gone, NULL);
	pthread_cond_init(&s->offload_cv, NULL);

	s->workers = calloc(nmax ? nmax : 1, sizeof(*s->workers));
	s->sleepers = calloc(nmax ? nmax : 1, sizeof(*s->sleepers));
	if (!s->workers || !s->sleepers) {
		err = ENOMEM;
		goto out_free;
	}
	for (unsigned i = 0; i < ncore; i++) {
		s->workers[i] = rt__worker_new(s, i);
		if (!s->workers[i]) {
			err = ENOMEM;
			goto out_free;
		}
	}
	/* every core worker counts as unparked from the start; each parks on its own */
	s->idle_state = ncore * IDLE_UNPARK_ONE;
	s->nworkers = ncore;
	s->nactive = ncore;
	for (unsigned i = 0; i < ncore; i++) {
		err = -rt__handoff(s, s->workers[i]);
		if (err)
			goto out_stop;
	}
	/* the monitor keeps the idle and stranded times, runs Kyo's detector, regulator,
	 * coarse clock and time slice and Go's retake; with none of those, there is nothing
	 * for it to do */
	if (c->executor == RT_EXEC_POOL &&
	    (c->metrics || c->blocking == RT_BLOCK_DETECT || c->blocking == RT_BLOCK_RETAKE ||
	     c->adapt == RT_ADAPT_KYO || c->queue == RT_QUEUE_HEAP || c->time_slice_ms)) {
		err = -rt__monitor_start(s);
		if (err)
			goto out_stop;
	}
	return s;

out_stop:
	rt_sched_free(s);
	errno = err;
	return NULL;
out_free:
	for (unsigned i = 0; i < nmax; i++)
		if (s->workers && s->workers[i])
			worker_free(s, s->workers[i]);
	free(s->workers);
	free(s->sleepers);
	free(s);
	errno = err;
	return NULL;
}

void rt_sched_free(struct rt_sched *s)
{
	unsigned n;

	if (!s)
		return;
	/* The workers go first: one may still be in a task's wait commit (registering a
	 * timer with the reactor, say) after that wait ended elsewhere and its task was
	 * joined; the reactor and the monitor stop only once no worker can touch them. */
	pthread_mutex_lock(&s->idle_lock);
	__atomic_store_n(&s->shutdown, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < s->nsleepers; i++) {
		__atomic_store_n(&s->workers[s->sleepers[i]]->parked, false, __ATOMIC_RELAXED);
		rt__unpark(s->workers[s->sleepers[i]]);
	}
	s->nsleepers = 0;
	pthread_mutex_unlock(&s->idle_lock);
	rt__threads_join(s);
	rt__io_stop(s);
	rt__monitor_stop(s);

	n = __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++)
		worker_free(s, s->workers[i]);
	rt__task_pool_free(s);
	pthread_mutex_destroy(&s->inject_lock);
	pthread_mutex_destroy(&s->idle_lock);
	pthread_mutex_destroy(&s->pool_lock);
	pthread_mutex_destroy(&s->io_lock);
	pthread_mutex_destroy(&s->spare_lock);
	pthread_cond_destroy(&s->threads_gone);
	pthread_cond_destroy(&s->offload_cv);
	free(s->workers);
	free(s->sleepers);
	free(s);
}

unsigned rt_sched_workers(const struct rt_sched *s)
{
	return s->ncore;
}

unsigned rt_sched_workers_started(struct rt_sched *s)
{
	return __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE);
}

uint64_t rt_sched_threads_created(struct rt_sched *s)
{
	return __atomic_load_n(&s->threads_created, __ATOMIC_RELAXED);
}

unsigned rt_sched_workers_active(struct rt_sched *s)
{
	return __atomic_load_n(&s->nactive, __ATOMIC_ACQUIRE);
}

uint64_t rt_sched_adaptations(struct rt_sched *s)
{
	return __atomic_load_n(&s->adaptations, __ATOMIC_RELAXED);
}

const struct rt_config *rt_sched_config(const struct rt_sched *s)
{
	return &s->cfg;
}
