/*
 * Placement and stealing: where a runnable task goes, and how idle workers find it.
 *
 * The paths (enum rt_place): the placing worker's own queue; its LIFO slot, whose old
 * occupant moves to the queue (Tokio; Go's runnext is the same slot made stealable);
 * the global injection queue; or a scan that picks the least loaded of scan_stride
 * workers from a random start and puts the task in that worker's inbox, waking it
 * (Kyo). A worker's own queue has one producer, its driver; the inbox is where other
 * threads put tasks for it, under a lock, and both are open to thieves. With queue=heap
 * (Kyo) a worker has one queue instead, a min-heap by the time each task has run, under
 * a spin lock that every placement, pick and steal takes.
 *
 * Every placement is counted by path on the placing worker, and scans also measure
 * their regret: the chosen worker's load minus the least load any worker had, and
 * whether a parked worker was passed over — the numbers that show a scan missing
 * idle workers.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/internal.h"
#include "runtime/usdt.h"

static __thread uint32_t outside_rng = 0x2545f491u; /* threads without a worker */
static __thread unsigned scan_rr; /* RT_SCAN_ROUND_ROBIN: where this thread scans next */

static inline uint32_t next_rand(struct rt__worker *w)
{
	uint32_t *state = w ? &w->rng : &outside_rng, x = *state; /* xorshift32 */

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

static inline unsigned workers_now(struct rt_sched *s)
{
	/* acquire: pairs with the release in rt__worker_add(), so a worker we see is whole */
	return __atomic_load_n(&s->nworkers, __ATOMIC_ACQUIRE);
}

static inline bool heap_mode(const struct rt_sched *s)
{
	return s->cfg.queue == RT_QUEUE_HEAP;
}

/* The workers scans may place on: the active ones (adaptation), all started ones else. */
static inline unsigned workers_active(struct rt_sched *s)
{
	unsigned n = workers_now(s), a = __atomic_load_n(&s->nactive, __ATOMIC_ACQUIRE);

	return a && a < n ? a : n;
}

unsigned rt__load(const struct rt__worker *w)
{
	return rt_deque_len(&w->dq) + __atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED) +
	       (__atomic_load_n(&w->lifo, __ATOMIC_RELAXED) != NULL) +
	       __atomic_load_n(&w->running, __ATOMIC_RELAXED);
}

/* A worker a scan may choose: not blocked, not taken, not flagged by the detector, not
 * stalled by a task past its time slice. */
static inline bool available(const struct rt__worker *w)
{
	return __atomic_load_n(&w->bstate, __ATOMIC_RELAXED) == RT_W_RUNNING &&
	       !__atomic_load_n(&w->flagged, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&w->stalled, __ATOMIC_RELAXED);
}

/* Schedule latency, sampled: one placement in latency_sample per placing thread, by a
 * countdown (a clock read costs more than the rest of a placement). By placement, not
 * by task, so that no one task is measured every time it runs. */
static __thread uint32_t latency_countdown;

static inline void sample_latency(struct rt_sched *s, struct rt_task *t)
{
	if (s->cfg.metrics && !latency_countdown--) {
		latency_countdown = s->cfg.latency_sample - 1;
		t->ready_ns = rt__now_ns();
	}
}

/* ---- the LIFO slot ------------------------------------------------------------------- */

static inline struct rt_task *lifo_swap(struct rt__worker *w, struct rt_task *t)
{
	struct rt_task *old;

	if (w->sched->lifo_shared) /* release: a thief that takes t sees it whole */
		return __atomic_exchange_n(&w->lifo, t, __ATOMIC_ACQ_REL);
	old = __atomic_load_n(&w->lifo, __ATOMIC_RELAXED);
	__atomic_store_n(&w->lifo, t, __ATOMIC_RELAXED);
	return old;
}

/* ---- the global injection queue --------------------------------------------------- */

RT_PHASE_FN void (rt__inject_push)(struct rt_sched *s, struct rt_task *head, struct rt_task *tail,
				 size_t n)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	tail->next = NULL;
	pthread_mutex_lock(&s->inject_lock);
	if (s->inject_tail)
		s->inject_tail->next = head;
	else
		s->inject_head = head;
	s->inject_tail = tail;
	__atomic_store_n(&s->inject_len, s->inject_len + n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->inject_lock);
	rt__phase_pop(phase);
}

static inline bool inject_empty(struct rt_sched *s)
{
	return __atomic_load_n(&s->inject_len, __ATOMIC_RELAXED) == 0;
}

struct rt_task *rt__inject_take(struct rt__worker *w, bool batch)
{
	struct rt_sched *s = w->sched;
	struct rt_task *t, *rest;
	size_t n = 1;

	if (inject_empty(s))
		return NULL;
	pthread_mutex_lock(&s->inject_lock);
	t = s->inject_head;
	if (!t) {
		pthread_mutex_unlock(&s->inject_lock);
		return NULL;
	}
	rest = t->next;
	if (batch && s->cfg.global_batch && !heap_mode(s)) {
		size_t want = s->inject_len / workers_now(s) + 1;
		size_t room = rt_deque_room(&w->dq);

		if (want > room + 1)
			want = room + 1;
		if (want > rt_deque_capacity(&w->dq) / 2)
			want = rt_deque_capacity(&w->dq) / 2;
		for (; n < want && rest; n++) {
			struct rt_task *next = rest->next;

			rt_deque_push(&w->dq, rest); /* cannot fail: room was counted */
			rest = next;
		}
	}
	s->inject_head = rest;
	if (!rest)
		s->inject_tail = NULL;
	__atomic_store_n(&s->inject_len, s->inject_len - n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&s->inject_lock);
	RT_STAT_ADD(w, global_pops, n);
	return t;
}

bool rt__work_pending(struct rt_sched *s)
{
	unsigned n = workers_now(s);

	if (!inject_empty(s))
		return true;
	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *v = s->workers[i];

		if (!rt_deque_empty(&v->dq) || __atomic_load_n(&v->inbox_len, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/* ---- the heap (queue=heap) --------------------------------------------------------------- */

#define HEAP_ARITY 4 /* Kyo's WorkerQueue is 4-ary: shallower than binary */

/* Least run first; among equals, first in first out. (Kyo's heap leaves ties in heap
 * order, which with every new task at runtime 0 is close to last in first out: a
 * spawner that joins its children in order then waits on each in turn.) */
static inline bool heap_before(const struct rt__heap_slot *a, const struct rt__heap_slot *b)
{
	return a->runtime < b->runtime || (a->runtime == b->runtime && a->seq < b->seq);
}

static void heap_lock(struct rt__worker *w)
{
	for (unsigned spins = 0; __atomic_exchange_n(&w->heap_lock, 1, __ATOMIC_ACQUIRE);) {
		while (__atomic_load_n(&w->heap_lock, __ATOMIC_RELAXED)) {
			rt__cpu_relax();
			/* the holder may have lost its CPU: let it have ours */
			if (++spins % 128 == 0)
				sched_yield();
		}
	}
}

static inline void heap_unlock(struct rt__worker *w)
{
	__atomic_store_n(&w->heap_lock, 0, __ATOMIC_RELEASE);
}

static void heap_add_locked(struct rt__worker *w, struct rt_task *t)
{
	uint32_t i = w->inbox_len;
	struct rt__heap_slot slot = { t->runtime, w->heap_seq++, t };

	if (i == w->heap_cap) {
		uint32_t cap = w->heap_cap ? w->heap_cap * 2 : 8; /* Kyo starts at 8 and doubles */
		struct rt__heap_slot *h = realloc(w->heap, cap * sizeof(*h));

		if (!h) {
			fprintf(stderr, "schedlab runtime: out of memory growing a worker's heap "
					"to %u tasks\n", cap);
			abort();
		}
		w->heap = h;
		w->heap_cap = cap;
	}
	while (i) {
		uint32_t parent = (i - 1) / HEAP_ARITY;

		if (!heap_before(&slot, &w->heap[parent]))
			break;
		w->heap[i] = w->heap[parent];
		i = parent;
	}
	w->heap[i] = slot;
	__atomic_store_n(&w->inbox_len, w->inbox_len + 1, __ATOMIC_RELAXED);
}

static struct rt_task *heap_pop_locked(struct rt__worker *w)
{
	uint32_t n = w->inbox_len, i = 0;
	struct rt__heap_slot last;
	struct rt_task *top;

	if (!n)
		return NULL;
	top = w->heap[0].task;
	last = w->heap[--n];
	for (;;) {
		uint32_t c = HEAP_ARITY * i + 1, best = c;

		if (c >= n)
			break;
		for (uint32_t k = c + 1; k < c + HEAP_ARITY && k < n; k++)
			if (heap_before(&w->heap[k], &w->heap[best]))
				best = k;
		if (!heap_before(&w->heap[best], &last))
			break;
		w->heap[i] = w->heap[best];
		i = best;
	}
	if (n)
		w->heap[i] = last;
	__atomic_store_n(&w->inbox_len, n, __ATOMIC_RELAXED);
	return top;
}

static void heap_add(struct rt__worker *w, struct rt_task *t)
{
	heap_lock(w);
	heap_add_locked(w, t);
	heap_unlock(w);
}

/* The least-run task of w's heap, from any thread; NULL: empty. */
static struct rt_task *heap_pop(struct rt__worker *w)
{
	struct rt_task *t;

	if (!__atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED))
		return NULL;
	heap_lock(w);
	t = heap_pop_locked(w);
	heap_unlock(w);
	return t;
}

static inline bool heap_trylock(struct rt__worker *w)
{
	return !__atomic_load_n(&w->heap_lock, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(&w->heap_lock, 1, __ATOMIC_ACQUIRE);
}

/* Kyo's steal (WorkerQueue.stealingBy): v's head and then half of what remains move to
 * w, and the head is returned to run. As there, it fails fast (NULL) unless both locks
 * can be had at once by trylock and w's heap is empty. */
static struct rt_task *heap_steal(struct rt__worker *v, struct rt__worker *w, bool one,
				  uint32_t *moved)
{
	struct rt_task *t;
	uint32_t n;

	*moved = 0;
	if (!__atomic_load_n(&v->inbox_len, __ATOMIC_RELAXED) || !heap_trylock(v))
		return NULL;
	if (!heap_trylock(w)) {
		heap_unlock(v);
		return NULL;
	}
	t = w->inbox_len ? NULL : heap_pop_locked(v);
	n = one || !t ? 0 : v->inbox_len / 2;
	for (uint32_t i = 0; i < n; i++)
		heap_add_locked(w, heap_pop_locked(v));
	heap_unlock(w);
	heap_unlock(v);
	*moved = t ? n + 1 : 0;
	return t;
}

/* ---- inboxes ------------------------------------------------------------------------ */

/* Append the chain head..tail (n tasks, linked through next) to w's inbox. */
static void inbox_append(struct rt__worker *w, struct rt_task *head, struct rt_task *tail,
			 uint32_t n)
{
	tail->next = NULL;
	pthread_mutex_lock(&w->inbox_lock);
	if (w->inbox_tail)
		w->inbox_tail->next = head;
	else
		w->inbox_head = head;
	w->inbox_tail = tail;
	__atomic_store_n(&w->inbox_len, w->inbox_len + n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&w->inbox_lock);
}

RT_PHASE_FN void (rt__inbox_push)(struct rt__worker *w, struct rt_task *t)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	if (heap_mode(w->sched))
		heap_add(w, t);
	else
		inbox_append(w, t, t, 1);
	RT_STAT_ATOMIC_ADD(w, place_remote, 1);
	/* a full barrier between the push and the look at w->parked; pairs with the seq_cst
	 * store in rt__park(): either w sees the task or we see w parked and wake it (the
	 * look is rt__unpark_worker()'s own first one, inline: most pushes find w awake) */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE))
		rt__unpark_worker(w->sched, w);
	rt__phase_pop(phase);
}

/* Take up to max tasks from w's inbox (max 0: as many as fit in dst's queue plus one
 * to return); the rest go into dst's queue. */
static struct rt_task *inbox_take_into(struct rt__worker *w, struct rt__worker *dst,
				       uint32_t max, uint32_t *moved)
{
	struct rt_task *t, *rest;
	uint32_t n = 1, want;

	*moved = 0;
	if (!__atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&w->inbox_lock);
	t = w->inbox_head;
	if (!t) {
		pthread_mutex_unlock(&w->inbox_lock);
		return NULL;
	}
	want = rt_deque_room(&dst->dq) + 1;
	if (max && want > max)
		want = max;
	rest = t->next;
	for (; n < want && rest; n++) {
		struct rt_task *next = rest->next;

		rt_deque_push(&dst->dq, rest);
		rest = next;
	}
	w->inbox_head = rest;
	if (!rest)
		w->inbox_tail = NULL;
	__atomic_store_n(&w->inbox_len, w->inbox_len - n, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&w->inbox_lock);
	*moved = n;
	return t;
}

/* Owner: move up to the queue's room from the inbox into the queue; the first task. */
static struct rt_task *rt__inbox_take(struct rt__worker *w)
{
	uint32_t moved;

	if (heap_mode(w->sched))
		return heap_pop(w);

	/* compact mode: one at a time, since what moves into the queue may be stolen, and
	 * an inbox holds tasks bound to this worker's stack */
	return inbox_take_into(w, w, w->sched->cfg.stack_mode == RT_STACK_COMPACT ? 1 : 0, &moved);
}

/* ---- placing ---------------------------------------------------------------------------- */

/* Push t on w's own queue; a full queue spills its older half and t to the global
 * queue, as Tokio and Go do, or to its own inbox, where the queue grows, as Kyo's does. */
static void local_push(struct rt__worker *w, struct rt_task *t)
{
	struct rt_sched *s = w->sched;

	if (heap_mode(s)) {
		heap_add(w, t);
		return;
	}
	while (rt_deque_push(&w->dq, t)) {
		uint32_t n = rt_deque_take_half(&w->dq, w->spill);

		if (n) {
			for (uint32_t i = 0; i + 1 < n; i++)
				((struct rt_task *)w->spill[i])->next = w->spill[i + 1];
			((struct rt_task *)w->spill[n - 1])->next = t;
			RT_STAT_INC(w, overflows);
			if (s->cfg.overflow == RT_OVERFLOW_LOCAL) {
				inbox_append(w, w->spill[0], t, n + 1);
				return;
			}
			rt__inject_push(s, w->spill[0], t, n + 1);
			rt__notify_parked(s, w);
			return;
		}
		rt__cpu_relax(); /* a thief is copying out of our queue; it frees slots soon */
	}
}

/* After a push to w's own queue: wake someone by the notify knob, or count that a
 * parked worker was passed over. */
static void after_local_push(struct rt_sched *s, struct rt__worker *w)
{
	if (s->cfg.notify != RT_NOTIFY_NEVER) {
		/* the check inline: most pushes wake nobody, and call nothing */
		if (rt__notify_wanted(s, __atomic_load_n(&s->idle_state, __ATOMIC_RELAXED)))
			rt__notify_local(s, w);
	} else if (s->cfg.metrics &&
		   IDLE_UNPARKED_OF(s) < __atomic_load_n(&s->nworkers, __ATOMIC_RELAXED)) {
		RT_STAT_ATOMIC_ADD(w, missed_idle, 1); /* parked, nobody wakes it; shared, as below */
	}
}

struct rt__worker *rt__scan(struct rt_sched *s, struct rt__worker *from,
			    struct rt__worker *exclude, bool own, bool *fallback)
{
	struct rt__worker *rng = own ? from : NULL;
	unsigned n = workers_active(s), stride = s->cfg.scan_stride, start, best_load = ~0u;
	struct rt__worker *best = NULL;
	unsigned i;

	*fallback = false;
	if (!n)
		return NULL;
	if (!stride || stride > n)
		stride = n;
	/* from's generator is its driver's alone: a thread blocked off from scans with
	 * its own */
	start = s->cfg.scan_start == RT_SCAN_RANDOM	 ? next_rand(rng) % n
		: s->cfg.scan_start == RT_SCAN_ROUND_ROBIN ? scan_rr++ % n
							   : 0;
	for (i = 0; i < stride; i++) {
		struct rt__worker *v = s->workers[(start + i) % n];
		unsigned load;

		if (v == exclude || !available(v))
			continue;
		load = rt__load(v);
		if (load < best_load) {
			best = v;
			best_load = load;
			if (!load && s->cfg.scan_stop_idle) {
				i++;
				break;
			}
		}
	}
	if (from && s->cfg.metrics) {
		/* regret: against the least load any available worker had; and whether a
		 * parked worker sat outside the window we looked at */
		unsigned least = ~0u;
		bool idle_missed = false;

		for (unsigned k = 0; k < n; k++) {
			struct rt__worker *v = s->workers[k];
			bool inside = (k + n - start) % n < i;

			if (v == exclude || !available(v))
				continue;
			if (rt__load(v) < least)
				least = rt__load(v);
			if (!inside && __atomic_load_n(&v->parked, __ATOMIC_RELAXED) && best_load)
				idle_missed = true;
		}
		/* from may be a worker the calling thread is blocked off: shared counters */
		if (best && best_load != ~0u && least != ~0u && best_load > least)
			RT_STAT_ATOMIC_ADD(from, regret_sum, best_load - least);
		if (idle_missed)
			RT_STAT_ATOMIC_ADD(from, missed_idle, 1);
	}
	if (best)
		return best;
	*fallback = true;
	if (s->cfg.scan_fallback == RT_FALLBACK_EXTERNAL)
		return NULL;
	/* Kyo's fallback ignores availability: the task may land on a blocked worker */
	best = s->workers[next_rand(rng) % n];
	if (best == exclude && n > 1)
		best = s->workers[(best->index + 1) % n];
	return best == exclude ? NULL : best;
}

/* rt__place()'s body, which SUBMIT callers call as it is (internal.h). */
void rt__place_submitting(struct rt_sched *s, struct rt__thread *th, struct rt_task *t,
			  enum rt_place how)
{
	struct rt__worker *w = th && !th->blocking && th->w && th->w->sched == s ? th->w : NULL;
	struct rt__worker *counter = w;
	bool fallback;

	sample_latency(s, t);
	if (t->home) {
		/* compact mode: a task that has run lives on its home's stack; it goes home,
		 * to the inbox, where no thief takes it */
		rt__inbox_push(t->home, t);
		return;
	}
	if (!w) {
		how = s->cfg.submit;
		/* a thread blocked off its worker still counts on it */
		counter = th && th->block_w && th->block_w->sched == s ? th->block_w : NULL;
	} else if (s->cfg.local_requires_available && !available(w) &&
		   (how == RT_PLACE_LOCAL || how == RT_PLACE_LIFO || how == RT_PLACE_RUNNEXT)) {
		how = RT_PLACE_SCAN;
	}

	switch (how) {
	case RT_PLACE_LOCAL:
		local_push(w, t);
		RT_STAT_INC(w, place_local);
		RT_USDT(enqueue, t->id, w->index, (int)how);
		after_local_push(s, w);
		return;
	case RT_PLACE_LIFO:
	case RT_PLACE_RUNNEXT: {
		struct rt_task *old = lifo_swap(w, t);

		RT_STAT_INC(w, place_lifo);
		RT_USDT(enqueue, t->id, w->index, (int)how);
		if (old) {
			/* only a push to the queue notifies: the slot is ours to run next */
			local_push(w, old);
			after_local_push(s, w);
		}
		return;
	}
	case RT_PLACE_SCAN: {
		struct rt__worker *v = rt__scan(s, counter, NULL, counter == w, &fallback);

		if (counter)
			RT_STAT_ATOMIC_ADD(counter, place_scan, 1);
		if (fallback && counter)
			RT_STAT_ATOMIC_ADD(counter, place_fallback, 1);
		RT_USDT(place, t->id, counter ? counter->index : RT_NO_WORKER,
			v ? v->index : RT_NO_WORKER, v ? rt__load(v) : 0, (int)fallback);
		RT_USDT(enqueue, t->id, v ? v->index : RT_NO_WORKER, (int)how);
		if (v == w && w) {
			local_push(w, t);
			return;
		}
		if (v) {
			rt__inbox_push(v, t);
			return;
		}
		break; /* no worker: the global queue */
	}
	case RT_PLACE_EXTERNAL:
		break;
	}
	rt__inject_push(s, t, t, 1);
	if (counter)
		RT_STAT_ATOMIC_ADD(counter, place_external, 1);
	RT_USDT(enqueue, t->id, RT_NO_WORKER, (int)RT_PLACE_EXTERNAL);
	rt__notify_parked(s, w);
	/* a pool whose idle workers wait for work placed on them (Kyo) still needs someone
	 * to see the global queue: wake one if every worker is parked */
	if (!s->cfg.idle_steal && s->cfg.notify == RT_NOTIFY_NEVER &&
	    IDLE_UNPARKED_OF(s) < workers_now(s))
		for (unsigned i = 0; i < workers_now(s); i++)
			if (rt__unpark_worker(s, s->workers[i]))
				break;
}

RT_PHASE_FN void (rt__place)(struct rt_sched *s, struct rt__thread *th, struct rt_task *t,
			   enum rt_place how)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);

	rt__place_submitting(s, th, t, how);
	rt__phase_pop(phase);
}

RT_PHASE_FN unsigned (rt__drain)(struct rt__worker *w, struct rt__worker *counter)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt_sched *s = w->sched;
	struct rt_task *t;
	unsigned moved = 0;
	bool fallback;

	/* the owner empties its LIFO slot, queue and inbox; each task goes through a scan
	 * that leaves this worker out, and wakes the worker it lands on */
	for (;;) {
		struct rt__worker *v;

		t = lifo_swap(w, NULL);
		if (!t)
			t = rt_deque_pop(&w->dq);
		if (!t && heap_mode(s))
			t = heap_pop(w);
		else if (!t && s->cfg.stack_mode != RT_STACK_COMPACT) {
			uint32_t n;

			t = inbox_take_into(w, w, 1, &n);
		}
		if (!t)
			break;
		sample_latency(s, t);
		v = rt__scan(s, counter, w, counter == w, &fallback);
		if (v) {
			rt__inbox_push(v, t);
		} else {
			rt__inject_push(s, t, t, 1);
			rt__notify_parked(s, counter);
		}
		moved++;
	}
	if (counter)
		RT_STAT_ATOMIC_ADD(counter, place_flush, moved);
	RT_USDT(flush, w->index, moved);
	rt__phase_pop(phase);
	return moved;
}

RT_PHASE_FN unsigned (rt__drain_remote)(struct rt__worker *w)
{
	uint64_t phase = rt__phase_push(RT_PHASE_SUBMIT);
	struct rt_sched *s = w->sched;
	unsigned moved = 0;
	bool fallback;

	/* a thief's view of w: one task at a time from the head, then the inbox */
	for (;;) {
		struct rt_task *t = __atomic_exchange_n(&w->lifo, NULL, __ATOMIC_ACQ_REL);
		struct rt__worker *v;

		if (!t)
			t = rt_deque_steal_one(&w->dq);
		if (!t && heap_mode(s) && s->cfg.stack_mode != RT_STACK_COMPACT)
			t = heap_pop(w);
		else if (!t && s->cfg.stack_mode != RT_STACK_COMPACT &&
			 __atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED)) {
			pthread_mutex_lock(&w->inbox_lock);
			t = w->inbox_head;
			if (t) {
				w->inbox_head = t->next;
				if (!w->inbox_head)
					w->inbox_tail = NULL;
				__atomic_store_n(&w->inbox_len, w->inbox_len - 1, __ATOMIC_RELAXED);
			}
			pthread_mutex_unlock(&w->inbox_lock);
		}
		if (!t)
			break;
		sample_latency(s, t);
		v = rt__scan(s, NULL, w, false, &fallback);
		if (v) {
			rt__inbox_push(v, t);
		} else {
			rt__inject_push(s, t, t, 1);
			rt__notify_parked(s, NULL);
		}
		moved++;
	}
	RT_STAT_ATOMIC_ADD(w, place_flush, moved);
	rt__phase_pop(phase);
	return moved;
}

/* ---- taking work ------------------------------------------------------------------------ */

struct rt_task *rt__next_task(struct rt__worker *w)
{
	struct rt_sched *s = w->sched;
	struct rt_task *t;

	/* the LIFO slot first, but not forever: after lifo_polls runs in a row its task
	 * goes to the back of the queue (Tokio's starvation guard) */
	if (__atomic_load_n(&w->lifo, __ATOMIC_RELAXED)) {
		t = lifo_swap(w, NULL);
		if (t) {
			if (w->lifo_streak < s->cfg.lifo_polls) {
				w->lifo_streak++;
				RT_STAT_INC(w, lifo_runs);
				return t;
			}
			local_push(w, t);
		}
	}
	w->lifo_streak = 0;
	/* a countdown, not a modulo: no division on every pick */
	if (!w->tick || !--w->tick) {
		w->tick = w->global_interval;
		if (s->cfg.global_adaptive)
			rt__adapt_interval(w);
		/* poller=worker: the worker's own waits, with the global queue (cats-effect
		 * polls in the same state); their tasks join this queue */
		if (w->poll_waits) {
			struct rt__waiter *wake = NULL;

			if (rt__poller_wait(w, false, &wake))
				rt__wake_all(wake);
		}
		if ((t = rt__inject_take(w, false)))
			return t;
	}
	if ((t = rt_deque_pop(&w->dq)))
		return t;
	if ((t = rt__inbox_take(w)))
		return t;
	return rt__inject_take(w, true);
}

/* Take from victim v into thief w: its queue (half or one), then its inbox. */
static struct rt_task *rob(struct rt__worker *w, struct rt__worker *v, bool last_pass)
{
	struct rt_sched *s = w->sched;
	struct rt_task *t;
	uint32_t moved = 0;

	RT_STAT_INC(w, steal_attempts);
	if (s->cfg.steal == RT_STEAL_ONE) {
		t = rt_deque_steal_one(&v->dq);
		moved = t != NULL;
	} else {
		t = rt_deque_steal(&v->dq, &w->dq, &moved);
	}
	/* compact mode: inboxes hold tasks bound to their worker's stack */
	if (!t && heap_mode(s) && s->cfg.stack_mode != RT_STACK_COMPACT)
		t = heap_steal(v, w, s->cfg.steal == RT_STEAL_ONE, &moved);
	else if (!t && s->cfg.stack_mode != RT_STACK_COMPACT)
		t = inbox_take_into(v, w, s->cfg.steal == RT_STEAL_ONE ? 1 :
					  (__atomic_load_n(&v->inbox_len, __ATOMIC_RELAXED) + 1) / 2,
				    &moved);
	if (!t && last_pass && s->cfg.lifo_stealable &&
	    __atomic_load_n(&v->lifo, __ATOMIC_RELAXED)) {
		/* Go backs off 3 us first, so that a runnext about to run is not taken
		 * from under its owner */
		uint64_t until = rt__now_ns() + 3000;

		while (rt__now_ns() < until)
			rt__cpu_relax();
		t = __atomic_exchange_n(&v->lifo, NULL, __ATOMIC_ACQ_REL);
		moved = t != NULL;
	}
	if (t) {
		RT_STAT_INC(w, steals);
		RT_STAT_ADD(w, stolen, moved);
		RT_USDT(steal, w->index, v->index, moved);
		if (s->cfg.metrics)
			__atomic_store_n(&w->steals_from[v->index],
					 __atomic_load_n(&w->steals_from[v->index], __ATOMIC_RELAXED) +
						 moved,
					 __ATOMIC_RELAXED);
	}
	return t;
}

struct rt_task *rt__steal(struct rt__worker *w, bool last_pass)
{
	struct rt_sched *s = w->sched;
	unsigned n = workers_now(s), start = next_rand(w) % n;

	if (s->cfg.steal_victim == RT_VICTIM_MAX_LOAD) {
		unsigned stride = s->cfg.steal_stride && s->cfg.steal_stride < n ? s->cfg.steal_stride : n;
		struct rt__worker *best = NULL;
		unsigned best_load = 0;

		for (unsigned i = 0; i < stride; i++) {
			struct rt__worker *v = s->workers[(start + i) % n];
			unsigned load = v == w ? 0 : rt__load(v);

			if (load > best_load) {
				best = v;
				best_load = load;
			}
		}
		if (!best || best_load < s->cfg.steal_min_load)
			return NULL;
		return rob(w, best, last_pass);
	}
	for (unsigned i = 0; i < n; i++) {
		struct rt__worker *v = s->workers[(start + i) % n];
		struct rt_task *t;

		if (v == w)
			continue;
		if ((t = rob(w, v, last_pass)))
			return t;
	}
	return NULL;
}
