/*
 * The park/notify protocol, Tokio's: one atomic word (idle_state) counts unparked and
 * searching workers. A push wakes a parked worker by the notify knob's rule; a searcher
 * that finds work wakes the next one if it was the last; the last searcher to park
 * re-checks every queue, so work is never left with every worker asleep. Work placed on
 * one worker by another thread wakes that worker itself. The placement code (place.c)
 * and the run loop (sched.c) call in here. Beyond the clock and futex helpers of
 * internal.h this file calls rt__work_pending() (place.c), the last searcher's look at
 * every queue; rt__poller_wait() (io.c), where a worker with its own poller parks in
 * epoll; and rt__count_park() (stats.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "runtime/usdt.h"

/* ---- waking and parking ----------------------------------------------------------- */

void rt__unpark(struct rt__worker *w)
{
	if (w->sched->cfg.poller == RT_POLLER_WORKER) {
		/* Dekker against poll_park(): our store of futex, then our load of in_poll,
		 * against its store of in_poll, then its load of futex. Either it sees the
		 * word and does not sleep, or we see it in epoll and write its eventfd. A
		 * stale in_poll costs a spurious wake-up at most: it loops on futex. */
		__atomic_store_n(&w->futex, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&w->in_poll, __ATOMIC_SEQ_CST)) {
			uint64_t one = 1;
			ssize_t r = write(w->poll_evfd, &one, sizeof(one));

			(void)r; /* a full counter (EAGAIN) still wakes it */
			return;
		}
		rt__futex_wake(&w->futex, 1);
		return;
	}
	/* the store pairs with the acquire load in rt__park()'s wait loop */
	__atomic_store_n(&w->futex, 1, __ATOMIC_RELEASE);
	rt__futex_wake(&w->futex, 1);
}

/* Under idle_lock: take w off the sleepers list and count it unparked (and searching). */
static void sleeper_remove(struct rt_sched *s, struct rt__worker *w, bool searching)
{
	for (unsigned i = 0; i < s->nsleepers; i++) {
		if (s->sleepers[i] == w->index) {
			s->sleepers[i] = s->sleepers[--s->nsleepers];
			break;
		}
	}
	__atomic_store_n(&w->parked, false, __ATOMIC_RELAXED);
	w->searching = searching;
	__atomic_fetch_add(&s->idle_state, IDLE_UNPARK_ONE | (searching ? IDLE_SEARCH_ONE : 0),
			   __ATOMIC_SEQ_CST);
}

static void notify_slow(struct rt_sched *s, struct rt__worker *from);

/* Wake a parked worker to come and search, by the notify knob's rule. After a push to
 * the global queue (shared) the read-modify-write is a full barrier: it orders the push
 * before the read of the idle state and pairs with the one in rt__park(), so that the
 * work is never left with everyone asleep. After a push to the caller's own queue a
 * plain load is enough, as in Go's wakep(): if it misses a worker that is just
 * parking, the caller still runs the task itself; only parallelism is lost. */
static inline void notify_check(struct rt_sched *s, struct rt__worker *from, uint32_t st)
{
	if (rt__notify_wanted(s, st))
		notify_slow(s, from);
}

RT_PHASE_FN void (rt__notify_parked)(struct rt_sched *s, struct rt__worker *from)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	notify_check(s, from, __atomic_fetch_add(&s->idle_state, 0, __ATOMIC_SEQ_CST));
	rt__phase_pop(phase);
}

RT_PHASE_FN void (rt__notify_local)(struct rt_sched *s, struct rt__worker *from)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	notify_check(s, from, __atomic_load_n(&s->idle_state, __ATOMIC_RELAXED));
	rt__phase_pop(phase);
}

static void notify_slow(struct rt_sched *s, struct rt__worker *from)
{
	bool any_searcher_ok = s->cfg.notify == RT_NOTIFY_ALWAYS;
	struct rt__worker *v;
	uint32_t st;

	pthread_mutex_lock(&s->idle_lock);
	st = __atomic_load_n(&s->idle_state, __ATOMIC_SEQ_CST);
	if ((!any_searcher_ok && IDLE_SEARCHING(st)) || !s->nsleepers) {
		pthread_mutex_unlock(&s->idle_lock);
		return;
	}
	v = s->workers[s->sleepers[s->nsleepers - 1]];
	sleeper_remove(s, v, s->cfg.idle_steal);
	pthread_mutex_unlock(&s->idle_lock);
	if (from)
		RT_STAT_INC(from, notifies);
	rt__unpark(v);
}

RT_PHASE_FN bool (rt__unpark_worker)(struct rt_sched *s, struct rt__worker *w)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	bool woke = false;

	if (!__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE))
		goto out;
	pthread_mutex_lock(&s->idle_lock);
	if (!__atomic_load_n(&w->parked, __ATOMIC_RELAXED)) {
		pthread_mutex_unlock(&s->idle_lock);
		goto out;
	}
	/* it has work of its own waiting: not a searcher */
	sleeper_remove(s, w, false);
	pthread_mutex_unlock(&s->idle_lock);
	rt__unpark(w);
	woke = true;
out:
	rt__phase_pop(phase);
	return woke;
}

RT_PHASE_FN bool (rt__wake_one_parked)(struct rt_sched *s)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt__worker *v = NULL;

	pthread_mutex_lock(&s->idle_lock);
	if (s->nsleepers) {
		v = s->workers[s->sleepers[s->nsleepers - 1]];
		sleeper_remove(s, v, true);
	}
	pthread_mutex_unlock(&s->idle_lock);
	if (v)
		rt__unpark(v);
	rt__phase_pop(phase);
	return v != NULL;
}

bool rt__enter_searching(struct rt__worker *w)
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
void rt__leave_searching(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	uint32_t prev = __atomic_fetch_sub(&s->idle_state, IDLE_SEARCH_ONE, __ATOMIC_SEQ_CST);

	w->searching = false;
	if (IDLE_SEARCHING(prev) == 1 && s->cfg.idle_steal)
		rt__notify_parked(s, w);
}

/* poller=worker with tasks waiting on w's poller: sleep in its epoll, which an event or
 * a timer of those waits ends as well as a waker's eventfd write. Waits that end take
 * the worker off the sleepers list itself, as work placed on it would, unless a waker
 * already has: then it waits on, in epoll, for that waker's word. Their tasks are woken
 * once it is off the list, so that they are placed on a worker that runs. */
static void poll_park(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	struct rt__waiter *wake = NULL;

	__atomic_store_n(&w->in_poll, 1, __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&w->futex, __ATOMIC_SEQ_CST)) {
		if (!rt__poller_wait(w, true, &wake))
			continue;
		pthread_mutex_lock(&s->idle_lock);
		if (__atomic_load_n(&w->parked, __ATOMIC_RELAXED)) {
			sleeper_remove(s, w, false);
			pthread_mutex_unlock(&s->idle_lock);
			break;
		}
		pthread_mutex_unlock(&s->idle_lock);
	}
	__atomic_store_n(&w->in_poll, 0, __ATOMIC_RELAXED);
	rt__wake_all(wake);
}

/* Parking, all of it: the sleepers-list protocol as much as the wait. */
static bool park(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	bool last_searcher;
	uint32_t prev;

	pthread_mutex_lock(&s->idle_lock);
	if (__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE)) {
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
	/* seq_cst: a full barrier between saying we park and the look below; pairs with
	 * the fence in rt__inbox_push() and the read-modify-write in rt__notify_parked() */
	__atomic_store_n(&w->parked, true, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&s->idle_lock);
	/* Dekker: our store of parked above, then our loads of the queues below, against
	 * a pusher's store to a queue, then its load of parked. A seq_cst store followed
	 * by relaxed loads orders them on x86 only; the fence orders them everywhere and
	 * pairs with the fence in rt__inbox_push() and the read-modify-write in
	 * rt__notify_parked(). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);

	/* Look once more before sleeping. A push to the global queue or to our inbox
	 * either saw us parked (and wakes us) or is seen here; then we take ourselves
	 * off the list, unless its waker already did. A push that saw a searcher (us)
	 * woke nobody: as the last searcher we look at every queue and wake another. */
	if (!rt_deque_empty(&w->dq) || __atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&s->inject_len, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&s->idle_lock);
		if (__atomic_load_n(&w->parked, __ATOMIC_RELAXED)) {
			sleeper_remove(s, w, false);
			pthread_mutex_unlock(&s->idle_lock);
			return true;
		}
		pthread_mutex_unlock(&s->idle_lock); /* a waker is on its way: wait for it */
	} else if (last_searcher && rt__work_pending(s)) {
		rt__notify_parked(s, w);
	}

	rt__count_park(w);
	if (s->cfg.park_spin_us) {
		/* spin a while first: a wake-up that comes soon costs no futex round trip */
		uint64_t until = rt__now_ns() + (uint64_t)s->cfg.park_spin_us * 1000;

		for (unsigned i = 0; !__atomic_load_n(&w->futex, __ATOMIC_ACQUIRE); i++) {
			rt__cpu_relax();
			if ((i & 63) == 63 && rt__now_ns() >= until)
				break;
		}
	}
	if (w->poll_waits)
		poll_park(w);
	else
		while (__atomic_load_n(&w->futex, __ATOMIC_ACQUIRE) == 0)
			rt__futex_wait_timeout(&w->futex, 0, NULL);
	RT_USDT(unpark, w->index, (int)w->searching);
	return !__atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE);
}

RT_PHASE_FN bool (rt__park)(struct rt__worker *w)
{
	uint64_t phase = rt__phase_push(RT_PHASE_PARK);
	bool more = park(w);

	rt__phase_pop(phase);
	return more;
}

