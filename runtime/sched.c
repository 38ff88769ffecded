/*
 * The scheduler: worker threads, their run loop, placement, searching and parking,
 * and the task operations built on them (spawn, submit, join, yield, suspend).
 *
 * A worker looks for its next task in this order: every global_interval ticks the
 * global queue first (fairness for external submissions); its own queue; a batch
 * from the global queue; then, if idle workers may steal and fewer than
 * workers/searcher_frac are already searching, it searches other workers' queues for
 * up to search_spin_us before it parks. Parking follows Tokio's protocol: one atomic
 * word counts unparked and searching workers; a push wakes a parked worker only when
 * nobody is searching (RT_NOTIFY_IF_NO_SEARCHERS), a searcher that finds work wakes
 * the next one if it was the last, and the last searcher to park re-checks every
 * queue, so work is never left with every worker asleep.
 *
 * A task switches back to its worker's own context (never straight to another task);
 * what it wants done then (finish, requeue, or commit a wait) is in w->after, and runs
 * once the task's stack is no longer in use, so a waker can never resume a task that
 * is still switching out.
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "runtime/internal.h"

#define IDLE_SEARCH_ONE    1u
#define IDLE_UNPARK_ONE    (1u << 16)
#define IDLE_SEARCHING(st) ((st) & 0xffffu)
#define IDLE_UNPARKED(st)  ((st) >> 16)

static __thread struct rt__worker *tls_worker;

/* The probe finds each runtime thread's phase word through this pointer; it must be
 * initial-exec TLS of the executable so that its offset from the thread pointer is
 * one constant for every thread. */
__thread uint64_t *rt_phase_ptr __attribute__((tls_model("initial-exec"), used));

/* noipa (GCC): not even the knowledge that it only reads memory may leave this
 * function; clang has no such analysis across noinline. */
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noipa))
#endif
struct rt__worker *rt__self(void)
{
	return tls_worker;
}

int64_t rt_phase_tls_offset(void)
{
	char *tp;

	/* %fs:0 holds the thread pointer itself (the TCB's self pointer) */
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return (char *)&rt_phase_ptr - tp;
}

/* futex(2) by the syscall instruction itself, not libc's syscall(): Debian's libc has
 * no frame pointers, and a sample taken in the kernel would lose our caller's frame. */
static long futex_op(uint32_t *addr, int op, uint32_t val)
{
	register long r10 __asm__("r10") = 0; /* no timeout */
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_futex), "D"(addr), "S"((long)op), "d"((long)val), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static void futex_wait(uint32_t *addr, uint32_t val)
{
	futex_op(addr, FUTEX_WAIT_PRIVATE, val);
}

static void futex_wake(uint32_t *addr)
{
	futex_op(addr, FUTEX_WAKE_PRIVATE, 1);
}

static inline void cpu_relax(void)
{
	__builtin_ia32_pause();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint32_t next_rand(struct rt__worker *w)
{
	uint32_t x = w->rng; /* xorshift32 */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return w->rng = x;
}

/* ---- the global injection queue --------------------------------------------------- */

static void inject_push_list(struct rt_sched *s, struct rt_task *head, struct rt_task *tail,
			     size_t n)
{
	tail->next = NULL;
	pthread_mutex_lock(&s->inject_lock);
	if (s->inject_tail)
		s->inject_tail->next = head;
	else
		s->inject_head = head;
	s->inject_tail = tail;
	__atomic_store_n(&s->inject_len, s->inject_len + n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->inject_lock);
}

static inline bool inject_empty(struct rt_sched *s)
{
	return __atomic_load_n(&s->inject_len, __ATOMIC_RELAXED) == 0;
}

/* Take one task, and when batch is set move up to a fair share more into w's queue. */
static struct rt_task *inject_take(struct rt__worker *w, bool batch)
{
	struct rt_sched *s = w->sched;
	struct rt_task *t;
	size_t n = 1;

	if (inject_empty(s))
		return NULL;
	pthread_mutex_lock(&s->inject_lock);
	t = s->inject_head;
	if (!t) {
		pthread_mutex_unlock(&s->inject_lock);
		return NULL;
	}
	if (batch) {
		size_t want = s->inject_len / s->nworkers + 1;
		size_t room = rt_deque_room(&w->dq);

		if (want > room + 1)
			want = room + 1;
		if (want > rt_deque_capacity(&w->dq) / 2)
			want = rt_deque_capacity(&w->dq) / 2;
		for (struct rt_task *u = t->next; n < want && u; n++) {
			struct rt_task *next = u->next;

			rt_deque_push(&w->dq, u); /* cannot fail: room was counted */
			u = next;
		}
	}
	/* the n taken are t and the n - 1 after it */
	{
		struct rt_task *rest = t;

		for (size_t i = 0; i < n; i++)
			rest = rest->next;
		s->inject_head = rest;
		if (!rest)
			s->inject_tail = NULL;
	}
	__atomic_store_n(&s->inject_len, s->inject_len - n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->inject_lock);
	RT_STAT_ADD(w, global_pops, n);
	return t;
}

/* ---- waking and parking ----------------------------------------------------------- */

static void unpark(struct rt__worker *w)
{
	/* the store pairs with the load in park()'s wait loop; FUTEX_WAKE after it */
	__atomic_store_n(&w->futex, 1, __ATOMIC_RELEASE);
	futex_wake(&w->futex);
}

/* Wake a parked worker to come and search, if nobody is searching already. The
 * read-modify-write is a full barrier: it orders our earlier push before the read of
 * the idle state, and pairs with the one in park(). */
static void notify_parked(struct rt_sched *s, struct rt__worker *from)
{
	uint32_t st = __atomic_fetch_add(&s->idle_state, 0, __ATOMIC_SEQ_CST);
	struct rt__worker *v;

	if (IDLE_SEARCHING(st) || IDLE_UNPARKED(st) >= s->nworkers)
		return;
	pthread_mutex_lock(&s->idle_lock);
	st = __atomic_load_n(&s->idle_state, __ATOMIC_SEQ_CST);
	if (IDLE_SEARCHING(st) || IDLE_UNPARKED(st) >= s->nworkers || !s->nsleepers) {
		pthread_mutex_unlock(&s->idle_lock);
		return;
	}
	v = s->workers[s->sleepers[--s->nsleepers]];
	/* the woken worker starts out searching */
	__atomic_fetch_add(&s->idle_state, IDLE_UNPARK_ONE | IDLE_SEARCH_ONE, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&s->idle_lock);
	if (from)
		RT_STAT_INC(from, notifies);
	unpark(v);
}

static bool enter_searching(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	uint32_t st;

	if (w->searching)
		return true;
	st = __atomic_load_n(&s->idle_state, __ATOMIC_SEQ_CST);
	if (s->max_searchers && IDLE_SEARCHING(st) >= s->max_searchers)
		return false;
	__atomic_fetch_add(&s->idle_state, IDLE_SEARCH_ONE, __ATOMIC_SEQ_CST);
	w->searching = true;
	return true;
}

/* Found work while searching: if we were the last searcher, wake another to take
 * over, so that queued work keeps a searcher. */
static void leave_searching(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	uint32_t prev = __atomic_fetch_sub(&s->idle_state, IDLE_SEARCH_ONE, __ATOMIC_SEQ_CST);

	w->searching = false;
	if (IDLE_SEARCHING(prev) == 1)
		notify_parked(s, w);
}

static bool work_pending(struct rt_sched *s)
{
	if (!inject_empty(s))
		return true;
	for (unsigned i = 0; i < s->nworkers; i++)
		if (!rt_deque_empty(&s->workers[i]->dq))
			return true;
	return false;
}

/* Sleep until notified. false: the scheduler is shutting down. */
static bool park(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	bool last_searcher = false;
	uint32_t prev;

	pthread_mutex_lock(&s->idle_lock);
	if (s->shutdown) {
		pthread_mutex_unlock(&s->idle_lock);
		return false;
	}
	prev = __atomic_fetch_sub(&s->idle_state,
				  IDLE_UNPARK_ONE | (w->searching ? IDLE_SEARCH_ONE : 0),
				  __ATOMIC_SEQ_CST);
	last_searcher = w->searching && IDLE_SEARCHING(prev) == 1;
	w->searching = false;
	__atomic_store_n(&w->futex, 0, __ATOMIC_RELAXED);
	s->sleepers[s->nsleepers++] = w->index;
	pthread_mutex_unlock(&s->idle_lock);

	/* a push that saw a searcher (us) woke nobody: look once more before sleeping */
	if (last_searcher && work_pending(s))
		notify_parked(s, w);

	rt__phase(w, RT_PHASE_PARK, 0);
	RT_STAT_INC(w, parks);
	while (__atomic_load_n(&w->futex, __ATOMIC_ACQUIRE) == 0)
		futex_wait(&w->futex, 0);
	rt__phase(w, RT_PHASE_SCHED, 0);
	if (__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE))
		return false;
	w->searching = true; /* notify_parked() counted us as searching */
	return true;
}

/* ---- placement ---------------------------------------------------------------------- */

/* Push t on w's own queue; a full queue spills its older half and t to the global
 * queue, as Tokio and Go do. */
static void local_push(struct rt__worker *w, struct rt_task *t)
{
	struct rt_sched *s = w->sched;

	while (rt_deque_push(&w->dq, t)) {
		uint32_t n = rt_deque_take_half(&w->dq, w->spill);

		if (n) {
			for (uint32_t i = 0; i + 1 < n; i++)
				((struct rt_task *)w->spill[i])->next = w->spill[i + 1];
			((struct rt_task *)w->spill[n - 1])->next = t;
			inject_push_list(s, w->spill[0], t, n + 1);
			RT_STAT_INC(w, overflows);
			RT_STAT_INC(w, place_external);
			return;
		}
		cpu_relax(); /* a thief is copying out of our queue; it frees slots soon */
	}
	RT_STAT_INC(w, place_local);
}

/* Make t runnable from worker w (NULL: from outside the pool) by the spawn policy. */
static void place(struct rt_sched *s, struct rt__worker *w, struct rt_task *t, bool spawn)
{
	if (w && w->sched == s && !(spawn && s->cfg.spawn == RT_SPAWN_EXTERNAL)) {
		local_push(w, t);
		if (s->cfg.notify == RT_NOTIFY_IF_NO_SEARCHERS)
			notify_parked(s, w);
		return;
	}
	inject_push_list(s, t, t, 1);
	if (w && w->sched == s)
		RT_STAT_INC(w, place_external);
	notify_parked(s, w && w->sched == s ? w : NULL);
}

void rt__ready(struct rt_task *t)
{
	struct rt__worker *w = rt__self();
	uint64_t phase = 0;

	if (w) {
		phase = w->phase;
		rt__phase(w, RT_PHASE_SUBMIT, RT_PHASE_TASK(phase));
	}
	place(t->sched, w, t, false);
	if (w)
		__atomic_store_n(&w->phase, phase, __ATOMIC_RELAXED);
}

/* ---- finding work ------------------------------------------------------------------- */

static struct rt_task *next_task(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	struct rt_task *t;

	if (++w->tick % s->cfg.global_interval == 0 && (t = inject_take(w, false)))
		return t;
	if ((t = rt_deque_pop(&w->dq)))
		return t;
	return inject_take(w, true);
}

static struct rt_task *steal_work(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	unsigned n = s->nworkers, start = next_rand(w) % n;

	for (unsigned i = 0; i < n; i++) {
		unsigned v = start + i < n ? start + i : start + i - n;
		struct rt_task *t;
		uint32_t moved;

		if (v == w->index)
			continue;
		RT_STAT_INC(w, steal_attempts);
		t = rt_deque_steal(&s->workers[v]->dq, &w->dq, &moved);
		if (t) {
			RT_STAT_INC(w, steals);
			RT_STAT_ADD(w, stolen, moved);
			return t;
		}
	}
	return NULL;
}

/* Look in other workers' queues and the global queue for up to search_spin_us. */
static struct rt_task *search(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	uint64_t deadline = 0;

	if (!s->cfg.idle_steal || s->nworkers < 2 || !enter_searching(w))
		return NULL;
	for (unsigned round = 0;; round++) {
		struct rt_task *t = steal_work(w);

		if (t || (t = inject_take(w, true)))
			return t;
		if (__atomic_load_n(&s->shutdown, __ATOMIC_RELAXED))
			return NULL;
		if ((round & 7) == 0) {
			uint64_t now = now_ns();

			if (!deadline)
				deadline = now + (uint64_t)s->cfg.search_spin_us * 1000;
			else if (now >= deadline)
				return NULL;
		}
		for (int i = 0; i < 32; i++)
			cpu_relax();
	}
}

/* ---- running tasks ------------------------------------------------------------------ */

static void task_finished(struct rt__worker *w, struct rt_task *t)
{
	/* release: the result is visible to whoever sees DONE; acquire: the joiner's
	 * waiter pointer is visible once we see WAITING */
	uint32_t old = __atomic_fetch_or(&t->state, RT_TASK_DONE, __ATOMIC_ACQ_REL);

	if (old & RT_TASK_WAITING) {
		rt__wake(t->waiter); /* the joiner frees t once woken: t is not touched after */
	} else if (old & RT_TASK_DETACHED) {
		rt__task_put(w->sched, w, t);
	}
}

static void run_task(struct rt__worker *w, struct rt_task *t)
{
	for (;;) {
		w->current = t;
		RT_STAT_INC(w, tasks_run);
		rt__phase(w, RT_PHASE_RUN, t->id);
		rt__switch(&w->sched_sp, t->sp);
		rt__phase(w, RT_PHASE_SCHED, 0);
		w->current = NULL;

		switch (w->after.kind) {
		case RT_AFTER_DONE:
			task_finished(w, t);
			return;
		case RT_AFTER_YIELD:
			place(w->sched, w, t, false);
			return;
		case RT_AFTER_SUSPEND:
			if (w->after.commit(t, w->after.arg))
				return;
			break; /* the wait was already over: run it again */
		}
	}
}

/* The body of every fiber, entered from rt__fiber_start on the task's own stack. */
__attribute__((noreturn, used)) void rt__task_main(struct rt_task *t)
{
	struct rt__worker *w;

	t->result = t->fn(t->arg);
	w = rt__self();
	w->after.kind = RT_AFTER_DONE;
	rt__switch(&t->sp, w->sched_sp);
	__builtin_unreachable();
}

static void *worker_main(void *arg)
{
	struct rt__worker *w = arg;
	bool woken = false;
	char name[16];

	tls_worker = w;
	rt_phase_ptr = &w->phase;
	snprintf(name, sizeof(name), "rt-worker");
	pthread_setname_np(pthread_self(), name);
	rt__phase(w, RT_PHASE_SCHED, 0);

	for (;;) {
		struct rt_task *t = next_task(w);

		if (!t)
			t = search(w);
		if (!t) {
			if (woken)
				RT_STAT_INC(w, noop_wakeups);
			if (!park(w))
				break;
			woken = true;
			continue;
		}
		woken = false;
		if (w->searching)
			leave_searching(w);
		run_task(w, t);
	}

	rt__phase(w, RT_PHASE_NONE, 0);
	rt_phase_ptr = NULL;
	tls_worker = NULL;
	return NULL;
}

/* ---- the task API ------------------------------------------------------------------- */

void rt__suspend(bool (*commit)(struct rt_task *self, void *arg), void *arg)
{
	struct rt__worker *w = rt__self();
	struct rt_task *t = w->current;

	w->after.kind = RT_AFTER_SUSPEND;
	w->after.commit = commit;
	w->after.arg = arg;
	rt__switch(&t->sp, w->sched_sp);
	/* resumed, perhaps on another worker */
}

struct rt_task *rt_spawn(rt_fn fn, void *arg)
{
	struct rt__worker *w = rt__self();
	struct rt_task *t;
	uint64_t phase;

	if (!w || !w->current) {
		errno = EPERM; /* outside a task: use rt_submit() */
		return NULL;
	}
	phase = w->phase;
	rt__phase(w, RT_PHASE_SUBMIT, RT_PHASE_TASK(phase));
	t = rt__task_new(w->sched, w, fn, arg);
	if (t) {
		RT_STAT_INC(w, spawned);
		place(w->sched, w, t, true);
	}
	__atomic_store_n(&w->phase, phase, __ATOMIC_RELAXED);
	return t;
}

struct rt_task *rt_submit(struct rt_sched *s, rt_fn fn, void *arg)
{
	struct rt__worker *w = rt__self();
	struct rt_task *t = rt__task_new(s, w && w->sched == s ? w : NULL, fn, arg);

	if (!t)
		return NULL;
	inject_push_list(s, t, t, 1);
	notify_parked(s, w && w->sched == s ? w : NULL);
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

void rt__wait(struct rt__waiter *w, bool (*commit)(struct rt__waiter *w, void *arg), void *arg)
{
	struct rt__worker *self = rt__self();

	w->task = self ? self->current : NULL;
	w->futex = 0;
	w->next = w->prev = NULL;
	if (w->task) {
		struct wait_commit c = { w, commit, arg };

		rt__suspend(wait_commit, &c);
		return;
	}
	if (!commit(w, arg))
		return;
	while (!__atomic_load_n(&w->futex, __ATOMIC_ACQUIRE))
		futex_wait(&w->futex, 0);
}

void rt__wake(struct rt__waiter *w)
{
	struct rt_task *t = w->task; /* read first: w may be gone once woken */

	if (t) {
		rt__ready(t);
		return;
	}
	/* release: what the waker did before is visible to the woken thread; the futex
	 * call after the store may touch a word whose owner already returned, which at
	 * worst wakes nobody */
	__atomic_store_n(&w->futex, 1, __ATOMIC_RELEASE);
	futex_wake(&w->futex);
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

uint64_t rt_join(struct rt_task *t)
{
	uint64_t result;

	if (!(__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) & RT_TASK_DONE)) {
		struct rt__waiter w;

		rt__wait(&w, join_commit, t);
	}
	/* the acquire above, or the hand-off that woke us, orders the result */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	result = t->result;
	rt__task_put(t->sched, rt__self(), t);
	return result;
}

void rt_detach(struct rt_task *t)
{
	uint32_t old = __atomic_fetch_or(&t->state, RT_TASK_DETACHED, __ATOMIC_ACQ_REL);

	if (old & RT_TASK_DONE)
		rt__task_put(t->sched, rt__self(), t);
}

void rt_yield(void)
{
	struct rt__worker *w = rt__self();
	struct rt_task *t = w ? w->current : NULL;

	if (!t)
		return;
	w->after.kind = RT_AFTER_YIELD;
	rt__switch(&t->sp, w->sched_sp);
}

struct rt_task *rt_current(void)
{
	struct rt__worker *w = rt__self();

	return w ? w->current : NULL;
}

unsigned rt_worker_index(void)
{
	struct rt__worker *w = rt__self();

	return w ? w->index : RT_NO_WORKER;
}

uint64_t rt_task_id(const struct rt_task *t)
{
	return t->id;
}

/* ---- the scheduler's life ------------------------------------------------------------ */

static void workers_free(struct rt_sched *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *w = s->workers[i];

		rt__task_cache_drain(s, w);
		free(w->dq.slots);
		free(w->spill);
		free(w);
	}
}

struct rt_sched *rt_sched_new(const struct rt_config *c)
{
	struct rt_sched *s;
	unsigned n = c->workers, started = 0;
	int err = 0;

	if (!n) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);

		n = cpus > 0 ? (unsigned)cpus : 1;
	}
	if (n > RT_MAX_WORKERS || c->stack_size < 16384 || c->local_capacity < 2 ||
	    (c->local_capacity & (c->local_capacity - 1)) || !c->global_interval) {
		errno = EINVAL;
		return NULL;
	}

	if (posix_memalign((void **)&s, RT_CACHELINE, sizeof(*s))) {
		errno = ENOMEM;
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->cfg = *c;
	s->cfg.workers = n;
	s->nworkers = n;
	s->max_searchers = c->searcher_frac ? (n + c->searcher_frac - 1) / c->searcher_frac : 0;
	s->page = (size_t)sysconf(_SC_PAGESIZE);
	s->idle_state = n * IDLE_UNPARK_ONE;
	pthread_mutex_init(&s->inject_lock, NULL);
	pthread_mutex_init(&s->idle_lock, NULL);
	pthread_mutex_init(&s->pool_lock, NULL);
	pthread_mutex_init(&s->io_lock, NULL);

	s->workers = calloc(n, sizeof(*s->workers));
	s->sleepers = calloc(n, sizeof(*s->sleepers));
	if (!s->workers || !s->sleepers) {
		err = ENOMEM;
		goto out_free_sched;
	}
	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *w;
		void **slots = calloc(c->local_capacity, sizeof(*slots));
		void **spill = calloc(c->local_capacity / 2, sizeof(*spill));

		if (!slots || !spill || posix_memalign((void **)&w, RT_CACHELINE, sizeof(*w))) {
			free(slots);
			free(spill);
			workers_free(s, i);
			err = ENOMEM;
			goto out_free_sched;
		}
		memset(w, 0, sizeof(*w));
		rt_deque_init(&w->dq, slots, c->local_capacity);
		w->spill = spill;
		w->sched = s;
		w->index = i;
		w->rng = 0x9e3779b9u * (i + 1);
		s->workers[i] = w;
	}
	for (; started < n; started++) {
		err = pthread_create(&s->workers[started]->thread, NULL, worker_main,
				     s->workers[started]);
		if (err)
			goto out_stop;
	}
	return s;

out_stop:
	pthread_mutex_lock(&s->idle_lock);
	__atomic_store_n(&s->shutdown, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->idle_lock);
	for (unsigned i = 0; i < started; i++) {
		/* a worker that had not parked yet will see shutdown when it tries */
		unpark(s->workers[i]);
		pthread_join(s->workers[i]->thread, NULL);
	}
	workers_free(s, n);
out_free_sched:
	free(s->workers);
	free(s->sleepers);
	free(s);
	errno = err;
	return NULL;
}

void rt_sched_free(struct rt_sched *s)
{
	if (!s)
		return;
	rt__io_stop(s);
	pthread_mutex_lock(&s->idle_lock);
	__atomic_store_n(&s->shutdown, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < s->nsleepers; i++)
		unpark(s->workers[s->sleepers[i]]);
	s->nsleepers = 0;
	pthread_mutex_unlock(&s->idle_lock);
	for (unsigned i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i]->thread, NULL);
	workers_free(s, s->nworkers);
	rt__task_pool_free(s);
	pthread_mutex_destroy(&s->inject_lock);
	pthread_mutex_destroy(&s->idle_lock);
	pthread_mutex_destroy(&s->pool_lock);
	pthread_mutex_destroy(&s->io_lock);
	free(s->workers);
	free(s->sleepers);
	free(s);
}

unsigned rt_sched_workers(const struct rt_sched *s)
{
	return s->nworkers;
}

const struct rt_config *rt_sched_config(const struct rt_sched *s)
{
	return &s->cfg;
}

static void stats_copy(const struct rt__worker *w, struct rt_worker_stats *out)
{
	const uint64_t *src = (const uint64_t *)&w->stats;
	uint64_t *dst = (uint64_t *)out;

	for (size_t k = 0; k < sizeof(*out) / sizeof(uint64_t); k++)
		dst[k] = __atomic_load_n(&src[k], __ATOMIC_RELAXED);
}

unsigned rt_sched_stats(struct rt_sched *s, struct rt_worker_stats *out, unsigned n)
{
	unsigned i;

	for (i = 0; i < n && i < s->nworkers; i++)
		stats_copy(s->workers[i], &out[i]);
	return i;
}

void rt_sched_stats_total(struct rt_sched *s, struct rt_worker_stats *total)
{
	memset(total, 0, sizeof(*total));
	for (unsigned i = 0; i < s->nworkers; i++) {
		struct rt_worker_stats one;
		const uint64_t *src = (const uint64_t *)&one;
		uint64_t *dst = (uint64_t *)total;

		stats_copy(s->workers[i], &one);
		for (size_t k = 0; k < sizeof(one) / sizeof(uint64_t); k++)
			dst[k] += src[k];
	}
}
