/*
 * Scopes: structured concurrency as Ox and Gears build it on JDK virtual threads (the
 * scope knob). Under scope=supervised or scope=async every task a task spawns is a fork
 * of the spawner's scope, made at its first fork and held by it; when the spawner's body
 * returns, the scope's exit waits for every fork still running, then frees the scope.
 *
 * supervised, Ox's supervised { fork(...) }: each fork gets a record (rt_alloc'd, as each
 * of Ox's forks is added to its scope's ThreadHerd, a concurrent set of the scope's
 * threads) linked into the scope's list of running forks under the scope's lock, runs its
 * body under a handler (rt_try), and unlinks itself when it ends. A raise that leaves a
 * body fails the scope: the first failure is kept (Ox's supervisor), and every fork on
 * the list is cancelled, as the herd's shutdown interrupts each of its threads.
 *
 * async, Gears' Async context and Future: as supervised, and each fork is also a Future,
 * a promise (rt_alloc'd) whose completion runs its listeners, which a join awaits by
 * listing itself as one (Gears' await adds a listener under the future's lock); a fork's
 * cancellation link is its membership in the context's completion group, linked and
 * unlinked under the group's lock (Cancellable.link, unlink), and a failure cancels the
 * group's members.
 *
 * Per fork, then: Ox pays one allocation, two lock round trips (link, unlink), two atomic
 * adds on the count and a handler over a plain Loom task; Gears pays another allocation,
 * three or four more lock round trips (group link and unlink, the completion, the await
 * when it must wait) and two reference counts. Nothing stands in for a cost: each is the
 * work its mechanism does.
 *
 * The records are the modelled library's allocations, not the scheduler's: they go through
 * rt_alloc, so a run's bytes per op counts them as a JVM harness counts Ox's and Gears'.
 *
 * Invariant: a fork's last touch of its scope is the release decrement of `running`; the
 * owner frees the scope only after it has seen `running` at zero (an acquire), and a fork
 * that takes it to zero reads the owner's waiter only when the owner set the waiting bit,
 * that is, while the owner is suspended until that very wake.
 */
#include <errno.h>

#include "runtime/internal.h"

/* A fork's record in its spawner's scope, from its spawn to its end. */
struct rt__fork {
	struct rt__fork *next, *prev;   /* the scope's running forks, under scope->lock */
	struct rt__fork *gnext, *gprev; /* async: the group's members, under group.lock */
	struct rt__scope *scope;
	uint32_t cancelled;             /* set once by a failing sibling; read by the fork */
};

/* A Future's completion (async). */
struct rt__promise {
	uint32_t lock;                  /* guards done's change and the listeners */
	uint32_t refs;                  /* the fork's and its handle's (join or detach) */
	uint32_t done;                  /* set with release once value is written */
	uint64_t value;
	struct rt__wait_list listeners; /* waiters (joins) to wake at completion */
};

/* Bit 0 of running: the owner waits at the exit, its waiter in exit_waiter. */
#define EXIT_WAITING 1u
#define ONE_FORK     2u

struct rt__scope {
	uint32_t lock;                  /* guards forks, and failure's first store */
	enum rt_scope mode;
	struct rt__fork *forks;         /* running forks, newest first */
	uint64_t running;               /* forks not yet ended, times ONE_FORK, | EXIT_WAITING */
	struct rt_error *failure;       /* the first failure; written once under lock */
	struct rt__waiter *exit_waiter; /* the owner, while EXIT_WAITING is set */
	struct {                        /* async: the context's completion group */
		uint32_t lock;
		uint32_t cancelled;     /* under lock: members that join later start cancelled */
		struct rt__fork *members;
	} group;
};

static struct rt__scope *scope_new(enum rt_scope mode)
{
	struct rt__scope *sc = rt_calloc(1, sizeof(*sc));

	if (sc)
		sc->mode = mode;
	return sc;
}

/* ---- cancellation ------------------------------------------------------------------ */

/* Cancel every running fork of sc but `except`: supervised walks the scope's list, async
 * the group's members (a member joining later starts cancelled). sc->lock is held for the
 * supervised walk, and the caller passes `locked` when it holds it already. */
static void cancel_forks(struct rt__scope *sc, const struct rt__fork *except, bool locked)
{
	struct rt__fork *f;

	if (sc->mode == RT_SCOPE_ASYNC) {
		rt__lock(&sc->group.lock);
		sc->group.cancelled = 1;
		for (f = sc->group.members; f; f = f->gnext)
			if (f != except)
				__atomic_store_n(&f->cancelled, 1, __ATOMIC_RELAXED);
		rt__unlock(&sc->group.lock);
		return;
	}
	if (!locked)
		rt__lock(&sc->lock);
	for (f = sc->forks; f; f = f->next)
		if (f != except)
			__atomic_store_n(&f->cancelled, 1, __ATOMIC_RELAXED);
	if (!locked)
		rt__unlock(&sc->lock);
}

/* Fork f of sc failed with err (now sc's): the first failure is kept and the other forks
 * are cancelled; a later one is dropped, as Ox keeps only the first (the rest would go
 * on it as suppressed exceptions) and every fork is cancelled already. */
static void scope_fail(struct rt__scope *sc, const struct rt__fork *f, struct rt_error *err)
{
	bool first;

	rt__lock(&sc->lock);
	first = !sc->failure;
	if (first) {
		/* release: pairs with the acquire in rt_scope_failure() */
		__atomic_store_n(&sc->failure, err, __ATOMIC_RELEASE);
		if (sc->mode == RT_SCOPE_SUPERVISED)
			cancel_forks(sc, f, true);
	}
	rt__unlock(&sc->lock);
	if (!first)
		rt_error_free(err);
	else if (sc->mode == RT_SCOPE_ASYNC)
		cancel_forks(sc, f, false);
}

void rt__fork_check(struct rt_task *t)
{
	/* the flag stays set: a body that catches the error stops at the next point again */
	if (__atomic_load_n(&t->fork->cancelled, __ATOMIC_RELAXED))
		rt_raise(rt_error_new(ECANCELED, "cancelled: a fork of its scope failed", false));
}

/* ---- promises (async) -------------------------------------------------------------- */

static void promise_put(struct rt__promise *p)
{
	/* acq_rel: the last one out sees everything the other did with p */
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
		rt_free(p);
}

/* Complete p with value and run its listeners, then drop the fork's reference. */
static void promise_complete(struct rt__promise *p, uint64_t value)
{
	struct rt__waiter *head;

	rt__lock(&p->lock);
	p->value = value;
	/* release: pairs with the acquire in rt__promise_await()'s look without the lock */
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	head = p->listeners.head;
	p->listeners.head = p->listeners.tail = NULL;
	rt__unlock(&p->lock);
	if (head)
		rt__wake_all(head);
	promise_put(p);
}

/* rt__wait's commit: list the join as a listener, unless p completed meanwhile. */
static bool await_commit(struct rt__waiter *w, void *arg)
{
	struct rt__promise *p = arg;
	bool wait;

	rt__lock(&p->lock);
	wait = !p->done;
	if (wait)
		rt__wlist_push(&p->listeners, w);
	rt__unlock(&p->lock);
	return wait;
}

uint64_t rt__promise_await(struct rt__promise *p)
{
	uint64_t value;

	if (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
		struct rt__waiter local, *w = rt__park_area(sizeof(*w)) ?: &local;

		rt__wait(w, await_commit, p);
	}
	/* the acquire above, or the wake that ended the wait, orders the value */
	value = p->value;
	promise_put(p);
	return value;
}

void rt__promise_drop(struct rt__promise *p)
{
	promise_put(p);
}

/* ---- forks ------------------------------------------------------------------------- */

int rt__fork_add(struct rt_task *self, struct rt_task *child)
{
	enum rt_scope mode = self->sched->cfg.scope;
	struct rt__scope *sc = self->scope;
	struct rt__promise *p = NULL;
	struct rt__fork *f;

	if (!sc) {
		sc = scope_new(mode);
		if (!sc)
			return -ENOMEM;
		self->scope = sc;
	}
	f = rt_alloc(sizeof(*f));
	if (!f)
		return -ENOMEM;
	if (mode == RT_SCOPE_ASYNC) {
		p = rt_calloc(1, sizeof(*p));
		if (!p) {
			rt_free(f);
			return -ENOMEM;
		}
		p->refs = 2;
	}
	f->scope = sc;
	f->gnext = f->gprev = NULL;
	/* counted before it can run: only the owner adds, and only the owner waits for 0 */
	__atomic_fetch_add(&sc->running, ONE_FORK, __ATOMIC_RELAXED);
	rt__lock(&sc->lock);
	/* a fork spawned into a scope that failed starts cancelled (supervised; under async
	 * the group says) */
	f->cancelled = mode == RT_SCOPE_SUPERVISED && sc->failure;
	f->prev = NULL;
	f->next = sc->forks;
	if (f->next)
		f->next->prev = f;
	sc->forks = f;
	rt__unlock(&sc->lock);
	if (p) {
		rt__lock(&sc->group.lock);
		f->cancelled = sc->group.cancelled;
		f->gnext = sc->group.members;
		if (f->gnext)
			f->gnext->gprev = f;
		sc->group.members = f;
		rt__unlock(&sc->group.lock);
	}
	child->fork = f;
	child->promise = p;
	return 0;
}

/* Take f off sc's list (and group) and free it: everything of the fork's end but the
 * decrement of running, which the caller makes as its last touch of sc. */
static void fork_leave(struct rt__scope *sc, struct rt__fork *f)
{
	if (sc->mode == RT_SCOPE_ASYNC) {
		rt__lock(&sc->group.lock);
		if (f->gprev)
			f->gprev->gnext = f->gnext;
		else
			sc->group.members = f->gnext;
		if (f->gnext)
			f->gnext->gprev = f->gprev;
		rt__unlock(&sc->group.lock);
	}
	rt__lock(&sc->lock);
	if (f->prev)
		f->prev->next = f->next;
	else
		sc->forks = f->next;
	if (f->next)
		f->next->prev = f->prev;
	rt__unlock(&sc->lock);
	rt_free(f);
}

void rt__fork_drop(struct rt_task *child)
{
	struct rt__scope *sc = child->fork->scope;

	fork_leave(sc, child->fork);
	__atomic_fetch_sub(&sc->running, ONE_FORK, __ATOMIC_RELEASE);
	rt_free(child->promise);
	child->fork = NULL;
	child->promise = NULL;
}

void rt__fork_run(struct rt_task *t)
{
	struct rt__fork *f = t->fork;
	struct rt__scope *sc = f->scope;
	struct rt__promise *p = t->promise;
	struct rt_error *err = NULL, *inner;
	uint64_t value = 0, old;

	/* cancelled before it began: it never runs (a fork of a scope already shut down) */
	if (!__atomic_load_n(&f->cancelled, __ATOMIC_RELAXED)) {
		struct rt_result r = rt_try(t->fn, t->arg);

		if (r.ok)
			value = r.value;
		else
			err = r.err;
	}
	if (t->scope) {
		/* its own forks end first; a body that raised shuts its scope down first, as an
		 * exception out of a supervised block does */
		if (err)
			cancel_forks(t->scope, NULL, false);
		inner = rt__scope_exit(t);
		if (inner && err)
			rt_error_free(inner);
		else if (inner)
			err = inner;
	}
	if (err)
		scope_fail(sc, f, err);
	t->result = err ? 0 : value;

	fork_leave(sc, f);
	t->fork = NULL;
	/* the last touch of sc (the file's invariant): release pairs with the owner's acquire
	 * at its exit, so that it sees the failure and the list as this fork left them */
	old = __atomic_fetch_sub(&sc->running, ONE_FORK, __ATOMIC_ACQ_REL);
	if (old == (ONE_FORK | EXIT_WAITING))
		rt__wake(sc->exit_waiter);
	if (p)
		promise_complete(p, t->result);
}

/* ---- the scope's exit -------------------------------------------------------------- */

/* rt__wait's commit at the exit: wait, unless the last fork ended meanwhile. */
static bool exit_commit(struct rt__waiter *w, void *arg)
{
	struct rt__scope *sc = arg;
	uint64_t cur = __atomic_load_n(&sc->running, __ATOMIC_ACQUIRE);

	sc->exit_waiter = w;
	/* release: publishes exit_waiter to the fork whose decrement finds the bit */
	do {
		if (!cur)
			return false;
	} while (!__atomic_compare_exchange_n(&sc->running, &cur, cur | EXIT_WAITING, false,
					      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
	return true;
}

struct rt_error *rt__scope_exit(struct rt_task *t)
{
	struct rt__scope *sc = t->scope;
	struct rt_error *failure;

	/* acquire: pairs with each fork's release decrement */
	if (__atomic_load_n(&sc->running, __ATOMIC_ACQUIRE)) {
		struct rt__waiter local, *w = rt__park_area(sizeof(*w)) ?: &local;

		rt__wait(w, exit_commit, sc);
	}
	failure = sc->failure;
	t->scope = NULL;
	rt_free(sc);
	return failure;
}

bool rt__scope_exiting(const struct rt_task *t)
{
	const struct rt__scope *sc = t->scope;

	return sc && (__atomic_load_n(&sc->running, __ATOMIC_ACQUIRE) & EXIT_WAITING);
}

/* ---- the owner's view ---------------------------------------------------------------- */

unsigned rt_scope_forks(void)
{
	struct rt_task *t = rt_current();

	if (!t || !t->scope)
		return 0;
	return (unsigned)(__atomic_load_n(&t->scope->running, __ATOMIC_RELAXED) / ONE_FORK);
}

const struct rt_error *rt_scope_failure(void)
{
	struct rt_task *t = rt_current();

	if (!t || !t->scope)
		return NULL;
	return __atomic_load_n(&t->scope->failure, __ATOMIC_ACQUIRE);
}
