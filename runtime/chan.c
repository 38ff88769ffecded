/*
 * Bounded MPMC channels: Dmitry Vyukov's bounded queue, plus wait lists for the sides
 * that must sleep.
 *
 * The ring is the caller's: cap cells of { seq, value }. Cell i is free for the producer
 * at position p (p mod cap == i) when seq == p, and full for the consumer at p when
 * seq == p + 1; the consumer frees it for the next lap with seq = p + cap. Producers
 * claim positions with a CAS on `tail`, consumers with a CAS on `head`. The top bit of
 * `tail` is the closed flag: once set, every claim fails, so a send either completed
 * before the close or returns -EPIPE, and the items left are exactly those below tail.
 * Sleeping and waking follow a "check again after registering" protocol whose barriers
 * are the claims themselves (chan_commit()): the fast path adds no fence.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "runtime/internal.h"

#define CHAN_CLOSED (1ull << 63)
#define CHAN_POS    (~CHAN_CLOSED)

/* Waiting without sleeping (chan_backoff()). A sleep and its wake-up cost 10-20 us here
 * (a futex, often a parked worker to rouse), while a side running on another worker
 * frees a cell within nanoseconds; so a side that finds the ring full or empty first
 * lets its own worker's other tasks run once (the other side may be one of them), then
 * spins for up to CHAN_SPIN_ROUNDS rounds of at most CHAN_SLIP_PAUSES pauses (~30 ns
 * each on the EPYC this was tuned on), and only then sleeps.
 *
 * While spinning it waits for CHAN_SLIP items (or free cells) rather than one: a
 * consumer that takes each item the moment it lands reads the cache line the producer
 * is still writing, and the line then crosses between the two cores for every item.
 * Letting the producer run a few lines ahead keeps them on different lines (measured
 * on 2 workers: 40 -> 75-80 M items/s). A slow producer costs the consumer at most one
 * round of pauses, ~1 us, before it takes what there is. */
#define CHAN_SPIN_ROUNDS 16
#define CHAN_SLIP_PAUSES 32
#define CHAN_SLIP        32

struct chan_cell {
	uint64_t seq;
	void *val;
};

_Static_assert(sizeof(struct chan_cell) == 2 * sizeof(void *), "RT_CHAN_SLOTS assumes this");

static inline struct chan_cell *chan_cells(const struct rt_chan *c)
{
	return (struct chan_cell *)c->slots;
}

int rt__chan_init_at(struct rt_chan *c, void **slots, uint32_t cap, uint64_t start)
{
	struct chan_cell *cells = (struct chan_cell *)slots;

	if (cap < 2 || (cap & (cap - 1)) || cap > (1u << 31) || (start & CHAN_CLOSED))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->slots = slots;
	c->mask = cap - 1;
	c->head = c->tail = start;
	/* cell i is free for the first position at or after start that maps to it */
	for (uint64_t p = start; p < start + cap; p++) {
		cells[p & c->mask].seq = p;
		cells[p & c->mask].val = NULL;
	}
	return 0;
}

int rt_chan_init(struct rt_chan *c, void **slots, uint32_t cap)
{
	return rt__chan_init_at(c, slots, cap, 0);
}

/* 0, -EAGAIN (full, or the consumer a lap behind has not finished with the cell), or
 * -EPIPE (closed). */
static int chan_push(struct rt_chan *c, void *v)
{
	struct chan_cell *cells = chan_cells(c);
	uint64_t pos = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);

	for (;;) {
		struct chan_cell *cell;
		int64_t dif;

		if (pos & CHAN_CLOSED)
			return -EPIPE;
		cell = &cells[pos & c->mask];
		/* acquire: pairs with the release store in chan_pop(), so the consumer's read of
		 * the old value is done before we overwrite it */
		dif = (int64_t)(__atomic_load_n(&cell->seq, __ATOMIC_ACQUIRE) - pos);
		if (dif == 0) {
			/* seq_cst: the claim is the sender's half of the sleep protocol, paired
			 * with a receiver's registration in chan_commit(); a failed CAS reloads
			 * pos, closed bit included */
			if (__atomic_compare_exchange_n(&c->tail, &pos, pos + 1, true,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				cell->val = v;
				/* release: publishes val; pairs with the acquire load in chan_pop() */
				__atomic_store_n(&cell->seq, pos + 1, __ATOMIC_RELEASE);
				return 0;
			}
		} else if (dif < 0) {
			return -EAGAIN;
		} else {
			pos = __atomic_load_n(&c->tail, __ATOMIC_RELAXED); /* another sender won */
		}
	}
}

/* 0, or -EAGAIN (empty, or its producer has claimed the cell but not yet published). */
static int chan_pop(struct rt_chan *c, void **out)
{
	struct chan_cell *cells = chan_cells(c);
	uint64_t pos = __atomic_load_n(&c->head, __ATOMIC_RELAXED);

	for (;;) {
		struct chan_cell *cell = &cells[pos & c->mask];
		/* acquire: pairs with the release store in chan_push(), so val is the item */
		int64_t dif = (int64_t)(__atomic_load_n(&cell->seq, __ATOMIC_ACQUIRE) - (pos + 1));

		if (dif == 0) {
			/* seq_cst: the receiver's half of the protocol against sleeping senders,
			 * paired with a sender's registration in chan_commit() */
			if (__atomic_compare_exchange_n(&c->head, &pos, pos + 1, true,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				*out = cell->val;
				/* release: our read of val happens before the next lap's producer
				 * writes; pairs with the acquire load in chan_push() */
				__atomic_store_n(&cell->seq, pos + c->mask + 1, __ATOMIC_RELEASE);
				return 0;
			}
		} else if (dif < 0) {
			return -EAGAIN;
		} else {
			pos = __atomic_load_n(&c->head, __ATOMIC_RELAXED); /* another receiver won */
		}
	}
}

/* Wake the oldest waiter of q, if any. Called after a push or a pop whose seq_cst CAS
 * came before the caller's seq_cst load of *waiting that returned nonzero. */
static void chan_wake_one(struct rt_chan *c, struct rt__wait_list *q, uint32_t *waiting)
{
	struct rt__waiter *w;

	rt__lock(&c->lock);
	w = rt__wlist_pop(q);
	if (w)
		__atomic_store_n(waiting, *waiting - 1, __ATOMIC_RELAXED);
	rt__unlock(&c->lock);
	if (w)
		rt__wake(w); /* unlinked under the lock: nobody else touches w */
}

static inline void chan_sent(struct rt_chan *c)
{
	/* seq_cst: after the seq_cst claim in chan_push(); pairs with recv_commit() */
	if (__atomic_load_n(&c->recv_waiting, __ATOMIC_SEQ_CST))
		chan_wake_one(c, &c->recvq, &c->recv_waiting);
}

static inline void chan_received(struct rt_chan *c)
{
	/* seq_cst: after the seq_cst claim in chan_pop(); pairs with send_commit() */
	if (__atomic_load_n(&c->send_waiting, __ATOMIC_SEQ_CST))
		chan_wake_one(c, &c->sendq, &c->send_waiting);
}

/* A waiter's commit: list w, then look again. w->value says whether it was listed, so
 * the caller can tell a declined wait (spin on) from a wake-up.
 *
 * Why no wake-up is lost: a receiver lists itself and increments recv_waiting, then
 * loads head and tail, all seq_cst, and sleeps only if they are equal. A sender claims
 * with a seq_cst CAS on tail and, after publishing, loads recv_waiting (seq_cst). In the
 * single total order of these operations either the claim comes first, and the
 * receiver's load of tail sees it and it does not sleep, or the registration comes
 * first, and the sender's load sees it and wakes a receiver. Senders against a full ring
 * are the mirror image, with head for tail. On x86 the CAS is the full barrier. A claim
 * seen here whose item is not yet published makes us decline too: its sender may have
 * loaded recv_waiting before we registered. */
static bool chan_commit(struct rt_chan *c, struct rt__waiter *w, bool recv)
{
	struct rt__wait_list *q = recv ? &c->recvq : &c->sendq;
	uint32_t *waiting = recv ? &c->recv_waiting : &c->send_waiting;
	uint64_t head, tail;
	bool sleep;

	rt__lock(&c->lock);
	rt__wlist_push(q, w);
	/* seq_cst: our registration precedes the loads below in the total order; pairs
	 * with the seq_cst claim + load of *waiting in chan_sent() / chan_received() */
	__atomic_fetch_add(waiting, 1, __ATOMIC_SEQ_CST);
	if (recv) {
		/* head before tail: tail >= head always, so equal values mean the ring was
		 * empty when tail was loaded, and any later claim will see us */
		head = __atomic_load_n(&c->head, __ATOMIC_SEQ_CST);
		tail = __atomic_load_n(&c->tail, __ATOMIC_SEQ_CST);
		sleep = !(tail & CHAN_CLOSED) && tail == head;
	} else {
		/* tail before head: a difference of cap means the ring was full when head was
		 * loaded, and any later consumer claim will see us; it may be negative when
		 * items came and went between the loads */
		tail = __atomic_load_n(&c->tail, __ATOMIC_SEQ_CST);
		head = __atomic_load_n(&c->head, __ATOMIC_SEQ_CST);
		sleep = !(tail & CHAN_CLOSED) && (int64_t)(tail - head) > (int64_t)c->mask;
	}
	if (!sleep) {
		rt__wlist_remove(q, w);
		__atomic_store_n(waiting, *waiting - 1, __ATOMIC_RELAXED);
	}
	w->value = sleep;
	rt__unlock(&c->lock);
	return sleep;
}

static bool send_commit(struct rt__waiter *w, void *arg)
{
	return chan_commit(arg, w, false);
}

static bool recv_commit(struct rt__waiter *w, void *arg)
{
	return chan_commit(arg, w, true);
}

/* Has the other side moved CHAN_SLIP cells ahead of our next position (at most half the
 * ring)? A relaxed peek: the operation that follows does the real, ordered check. */
static bool chan_slipped(const struct rt_chan *c, bool recv)
{
	uint64_t slip = c->mask + 1 < 2 * CHAN_SLIP ? (c->mask + 1) / 2 : CHAN_SLIP;
	uint64_t pos = recv ? __atomic_load_n(&c->head, __ATOMIC_RELAXED)
			    : __atomic_load_n(&c->tail, __ATOMIC_RELAXED) & CHAN_POS;
	uint64_t seq = __atomic_load_n(&chan_cells(c)[(pos + slip - 1) & c->mask].seq,
				       __ATOMIC_RELAXED);

	/* the cell slip - 1 ahead is full (recv) or free for this lap (send) */
	return (int64_t)(seq - (pos + slip - 1)) >= (recv ? 1 : 0);
}

/* One failed attempt's worth of waiting (see CHAN_SPIN_ROUNDS). A declined sleep means
 * the other side is between its claim and its publish: try again, and give the CPU
 * away now and then in case that side's thread was preempted. */
static void chan_backoff(struct rt_chan *c, unsigned *round, bool recv)
{
	struct rt__waiter local, *w;

	if (*round < CHAN_SPIN_ROUNDS) {
		if ((*round)++ == 0 && rt_current()) {
			rt_yield();
			return;
		}
		for (unsigned i = 0; i < CHAN_SLIP_PAUSES && !chan_slipped(c, recv); i++)
			rt__cpu_relax();
		return;
	}
	w = rt__park_area(sizeof(*w)) ?: &local;
	w->value = 0;
	rt__wait(w, recv ? recv_commit : send_commit, c);
	if (!w->value && ++*round % 16 == 0)
		sched_yield();
}

int rt_chan_send(struct rt_chan *c, void *v)
{
	unsigned round = 0;

	for (;;) {
		int err = chan_push(c, v);

		if (!err) {
			chan_sent(c);
			return 0;
		}
		if (err == -EPIPE)
			return err;
		chan_backoff(c, &round, false);
	}
}

int rt_chan_recv(struct rt_chan *c, void **out)
{
	unsigned round = 0;

	for (;;) {
		uint64_t tail;

		if (!chan_pop(c, out)) {
			chan_received(c);
			return 0;
		}
		/* closed and drained: tail no longer moves, and every position below it has
		 * been claimed by a receiver. acquire: pairs with the seq_cst RMWs on tail
		 * and head */
		tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		if ((tail & CHAN_CLOSED) &&
		    (tail & CHAN_POS) == __atomic_load_n(&c->head, __ATOMIC_ACQUIRE))
			return -EPIPE;
		chan_backoff(c, &round, true);
	}
}

bool rt_chan_try_send(struct rt_chan *c, void *v)
{
	if (chan_push(c, v))
		return false;
	chan_sent(c);
	return true;
}

bool rt_chan_try_recv(struct rt_chan *c, void **out)
{
	if (chan_pop(c, out))
		return false;
	chan_received(c);
	return true;
}

void rt_chan_close(struct rt_chan *c)
{
	struct rt__waiter *recv, *send;

	/* seq_cst: a commit that comes after this in the total order sees the bit and
	 * declines to sleep; one that came before is on a list we take below */
	__atomic_fetch_or(&c->tail, CHAN_CLOSED, __ATOMIC_SEQ_CST);
	rt__lock(&c->lock);
	recv = c->recvq.head;
	send = c->sendq.head;
	c->recvq.head = c->recvq.tail = NULL;
	c->sendq.head = c->sendq.tail = NULL;
	__atomic_store_n(&c->recv_waiting, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->send_waiting, 0, __ATOMIC_RELAXED);
	rt__unlock(&c->lock);
	rt__wake_all(recv);
	rt__wake_all(send);
}

uint32_t rt_chan_len(const struct rt_chan *c)
{
	/* head first: tail only grows, so the difference is never negative */
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE) & CHAN_POS;
	uint64_t n = tail - head;

	return n > c->mask + 1 ? (uint32_t)(c->mask + 1) : (uint32_t)n;
}
