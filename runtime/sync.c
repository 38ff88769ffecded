/*
 * Semaphores and latches, and the futex lock that guards the wait lists of every
 * waiting primitive in the runtime (sync.c, chan.c, io.c).
 *
 * Each primitive keeps its state in one atomic word that the uncontended paths touch
 * with a single read-modify-write. The lock, and the FIFO of struct rt__waiter (each
 * on its waiter's own stack), are taken only by someone who must sleep or must wake a
 * sleeper. Sleeping goes through rt__wait()/rt__wake(), so one code path serves a task
 * (it suspends) and a thread (it blocks on a futex). The invariant every commit
 * callback keeps: it decides to sleep only under the lock, after looking at the state
 * word once more, and a waker changes the state word before it takes the lock, so a
 * wake-up is never lost between the look and the sleep.
 */
#include <errno.h>
#include <string.h>

#include "runtime/internal.h"

/* ---- the wait-list lock ------------------------------------------------------------------ */

/* Drepper's three-state mutex ("Futexes are tricky", mutex3). Holders keep the lock
 * for a handful of instructions, so spin briefly before sleeping; a holder preempted
 * by the host is what the futex is for. */
void rt__lock_slow(uint32_t *l)
{
	for (int i = 0; i < 100; i++) {
		uint32_t free_ = 0;

		rt__cpu_relax();
		if (__atomic_load_n(l, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(l, &free_, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
	}
	/* 2: held with sleepers, so the holder's rt__unlock() calls FUTEX_WAKE. Having slept
	 * once we cannot know whether others sleep too, so we take it as 2 as well.
	 * acquire: pairs with the release exchange in rt__unlock() */
	while (__atomic_exchange_n(l, 2, __ATOMIC_ACQUIRE) != 0)
		rt__futex_wait(l, 2);
}

void rt__unlock_slow(uint32_t *l)
{
	rt__futex_wake(l, 1);
}

RT_PHASE_FN void (rt__wake_all)(struct rt__waiter *w)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	while (w) {
		struct rt__waiter *next = w->next;

		rt__wake(w);
		w = next;
	}
	rt__phase_pop(phase);
}

/* ---- semaphore ----------------------------------------------------------------------
 *
 * count = permits free - acquirers that decided to wait. acquire is one fetch_sub: a
 * result above zero means a permit was ours. release is one fetch_add: a result at or
 * above zero means nobody waits. Otherwise the releaser owes its permit to a waiter.
 *
 * Policy: direct hand-off, strict FIFO. The owed permit never goes back into count, so
 * an acquire arriving meanwhile sees count <= 0 and queues behind the waiters instead of
 * taking it (no barging, so no waiter starves; and a task holding the permit resumes with
 * it, it does not wake up only to compete for it again). The price is that under heavy
 * contention every release waits for a waiter to be scheduled before the permit is used
 * again (a convoy); a barging semaphore such as glibc's keeps more throughput there but
 * lets a newcomer overtake a sleeper indefinitely. The workloads use permits to bound
 * concurrency, where fairness and a restored count are what is checked.
 *
 * The waiter that fetch_sub told to wait may not be in the list yet when the releaser
 * takes the lock: the releaser then leaves the permit in `handoff`, and the waiter's
 * commit, which looks at `handoff` under the same lock before listing itself, takes it
 * and does not sleep. handoff > 0 only while the list is empty.
 */

int rt_sem_init(struct rt_sem *s, uint64_t permits)
{
	if (permits > INT64_MAX)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->count = (int64_t)permits;
	return 0;
}

static bool sem_commit(struct rt__waiter *w, void *arg)
{
	struct rt_sem *s = arg;
	bool sleep = true;

	rt__lock(&s->lock);
	if (s->handoff) {
		s->handoff--; /* a permit released before we got here: ours */
		sleep = false;
	} else {
		rt__wlist_push(&s->waiters, w);
		__atomic_store_n(&s->nwaiters, s->nwaiters + 1, __ATOMIC_RELAXED);
	}
	rt__unlock(&s->lock);
	return sleep;
}

void rt_sem_acquire(struct rt_sem *s)
{
	struct rt__waiter local, *w;

	/* acquire: pairs with the release fetch_add in rt_sem_release(), so what the last
	 * holder did is visible to us */
	if (__atomic_fetch_sub(&s->count, 1, __ATOMIC_ACQUIRE) > 0)
		return;
	/* woken (or finding handoff) means the permit was handed to us; the releaser's
	 * unlock or rt__wake() orders its writes before our return */
	w = rt__park_area(sizeof(*w)) ?: &local;
	rt__wait(w, sem_commit, s);
}

bool rt_sem_try_acquire(struct rt_sem *s)
{
	int64_t c = __atomic_load_n(&s->count, __ATOMIC_RELAXED);

	/* count > 0 implies nobody waits, so this never overtakes a waiter; acquire on
	 * success pairs with the release in rt_sem_release() */
	while (c > 0)
		if (__atomic_compare_exchange_n(&s->count, &c, c - 1, true, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return true;
	return false;
}

void rt_sem_release(struct rt_sem *s)
{
	struct rt__waiter *w;

	/* release: pairs with the acquire fetch_sub in rt_sem_acquire() */
	if (__atomic_fetch_add(&s->count, 1, __ATOMIC_RELEASE) >= 0)
		return;
	rt__lock(&s->lock);
	w = rt__wlist_pop(&s->waiters);
	if (w)
		__atomic_store_n(&s->nwaiters, s->nwaiters - 1, __ATOMIC_RELAXED);
	else
		s->handoff++; /* its waiter is on its way to sem_commit() */
	rt__unlock(&s->lock);
	if (w)
		rt__wake(w); /* w left the list under the lock: nobody else touches it */
}

uint64_t rt_sem_available(const struct rt_sem *s)
{
	int64_t c = __atomic_load_n(&s->count, __ATOMIC_RELAXED);

	return c > 0 ? (uint64_t)c : 0;
}

void rt_sem_destroy(struct rt_sem *s)
{
	/* the memory is the caller's; poison the count so that a use after destroy waits
	 * forever where a debugger can see it instead of handing out permits */
	s->count = INT64_MIN / 2;
}

/* ---- latch ----------------------------------------------------------------------------
 *
 * The count steps down by CAS and never below zero. The step to zero takes the lock
 * once, unlinks the whole list and wakes every waiter outside the lock, so 100,000
 * waiters cost one pass and the woken take no lock at all: no convoy. A waiter's commit
 * looks at the count under the lock, so it either sees zero or is listed before the
 * opener takes the list.
 */

int rt_latch_init(struct rt_latch *l, uint64_t count)
{
	memset(l, 0, sizeof(*l));
	l->count = count;
	return 0;
}

void rt_latch_count_down(struct rt_latch *l)
{
	uint64_t c = __atomic_load_n(&l->count, __ATOMIC_RELAXED);
	struct rt__waiter *head;

	do {
		if (c == 0)
			return;
		/* acq_rel: release publishes what this counter did before it; acquire carries
		 * what earlier counters published on to the one that opens the latch, whose
		 * wakes (and the acquire load in rt_latch_wait()) pass it to the waiters */
	} while (!__atomic_compare_exchange_n(&l->count, &c, c - 1, true, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	if (c != 1)
		return;
	rt__lock(&l->lock);
	head = l->waiters.head;
	l->waiters.head = l->waiters.tail = NULL;
	__atomic_store_n(&l->nwaiters, 0, __ATOMIC_RELAXED);
	rt__unlock(&l->lock);
	rt__wake_all(head);
}

static bool latch_commit(struct rt__waiter *w, void *arg)
{
	struct rt_latch *l = arg;
	bool sleep;

	rt__lock(&l->lock);
	/* the opener's CAS precedes its lock, so under the lock we see zero or it sees us */
	sleep = __atomic_load_n(&l->count, __ATOMIC_ACQUIRE) != 0;
	if (sleep) {
		rt__wlist_push(&l->waiters, w);
		__atomic_store_n(&l->nwaiters, l->nwaiters + 1, __ATOMIC_RELAXED);
	}
	rt__unlock(&l->lock);
	return sleep;
}

void rt_latch_wait(struct rt_latch *l)
{
	struct rt__waiter local, *w;

	/* acquire: pairs with the acq_rel CAS in rt_latch_count_down() */
	if (__atomic_load_n(&l->count, __ATOMIC_ACQUIRE) == 0)
		return;
	w = rt__park_area(sizeof(*w)) ?: &local;
	rt__wait(w, latch_commit, l);
}

uint64_t rt_latch_count(const struct rt_latch *l)
{
	return __atomic_load_n(&l->count, __ATOMIC_ACQUIRE);
}
