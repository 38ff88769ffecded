/*
 * Bounded MPMC channels: Dmitry Vyukov's bounded queue, a fence-free path for a side that
 * one thread uses alone, and wait lists for the sides that must sleep.
 *
 * The ring is the caller's: cap cells of { seq, value }. Cell i is free for the producer
 * at position p (p mod cap == i) when seq == p, and full for the consumer at p when
 * seq == p + 1; the consumer frees it for the next lap with seq = p + cap. Producers
 * claim positions with a CAS on `tail`, consumers with a CAS on `head`. The top bit of
 * `tail` is the closed flag: once set, every claim fails, so a send either completed
 * before the close or returns -EPIPE, and the items left are exactly those below tail.
 *
 * Leases. A CAS is a full barrier: it waits for the cell stores before it to leave the
 * store buffer, and when the other side's core holds that cell's line, that is a
 * cache-line transfer per item (the queue-spsc workload across two cores here: 35-50 M
 * items/s with the CAS, 60-75 M without). So a side that one thread has used alone for a while
 * (CHAN_CLAIM_STREAK claims in a row) is leased to that thread: it sets CHAN_LEASED in
 * its counter and its token in `mask`, and from then on claims with plain stores. Any
 * other thread that wants the side first revokes the lease (chan_revoke()), which waits
 * until the lessee is out of its critical section; the two meet through an asymmetric
 * fence (membarrier(2)), paid by the revoker, never by the lessee. Sleeping and waking
 * follow a "check again after registering" protocol whose barriers are the claims
 * (chan_commit()); a waiter facing a leased side pays the asymmetric fence for it.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/internal.h"

#define CHAN_CLOSED (1ull << 63) /* in tail: no more sends */
#define CHAN_LEASED (1ull << 62) /* in tail or head: that side is leased */
#define CHAN_POS    (CHAN_LEASED - 1)

/* mask holds cap - 1 in its low 32 bits and the lessees' tokens above them (0: none).
 * Tokens change only under c->lock; everyone reads them with the mask. */
#define CHAN_TOKEN_BITS 16
#define CHAN_TOKEN_MAX  ((1u << CHAN_TOKEN_BITS) - 1)

static inline unsigned chan_token_shift(bool recv)
{
	return recv ? 32 + CHAN_TOKEN_BITS : 32;
}

static inline uint32_t chan_lessee(uint64_t mask, bool recv)
{
	return (uint32_t)(mask >> chan_token_shift(recv)) & CHAN_TOKEN_MAX;
}

/* Waiting without sleeping (chan_backoff()). A sleep and its wake-up cost 10-20 us here
 * (a futex, often a parked worker to rouse), while a side running on another worker
 * frees a cell within nanoseconds. So a side that finds the ring full or empty lets the
 * other tasks queued on its worker run (the other side may be one of them); when none
 * is queued it spins for up to CHAN_SPIN_ROUNDS rounds of at most CHAN_SLIP_PAUSES
 * pauses (~30 ns each on the EPYCs of this project), and only then sleeps.
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

/* Claims in a row, at consecutive positions, by one thread before it leases the side: a
 * second sender (receiver) interleaving resets the count, so a side that two threads
 * claim from by turns stays on CAS and never pays for revocations. */
#define CHAN_CLAIM_STREAK 64

/* Threads that take turns on a side in bursts longer than the streak would pay a
 * revocation, a membarrier(2) of tens of microseconds here, at every turn: the two
 * workers receiving from bounded-workers' queue under ce spent 37% of their samples in
 * it, for leases of about 100 claims each. A lease that carried CHAN_LEASE_PAYS claims
 * or more paid for its revocation: queue-spsc's, some 2,000 claims each (a revocation
 * an op, as its two tasks change threads), ran 3% slower when a threshold of 2,048 backed
 * them off. Each revocation of a lease that did not pay doubles the streak that leases
 * the side again, up to CHAN_CLAIM_STREAK << CHAN_BACKOFF_MAX (a million claims); one
 * that did starts the count again. So a side taken by turns in short bursts soon stays
 * on CAS, one taken in long bursts keeps its leases, and one that a thread comes to use
 * alone is leased again, later. Biased locking's revocation threshold, per side. */
#define CHAN_LEASE_PAYS  512
#define CHAN_BACKOFF_MAX 14

/* chan_push()/chan_pop(): the side is leased to another thread; revoke and retry. */
#define CHAN_ELSEWHERE 1

struct chan_cell {
	uint64_t seq;
	void *val;
};

_Static_assert(sizeof(struct chan_cell) == 2 * sizeof(void *), "RT_CHAN_SLOTS assumes this");

static inline struct chan_cell *chan_cells(const struct rt_chan *c)
{
	return (struct chan_cell *)c->slots;
}

static inline uint64_t chan_mask(const struct rt_chan *c)
{
	return __atomic_load_n(&c->mask, __ATOMIC_RELAXED);
}

/* ---- threads and their tokens ------------------------------------------------------ */

/* What a thread keeps about its channel use. Tokens name threads, not tasks: a task may
 * run on another thread after any switch, but a thread runs one critical section at a
 * time, so a token held by one thread is never in two at once. */
struct chan_run {
	const struct rt_chan *c;
	uint64_t next; /* the position after its last claim on c */
	uint32_t streak;
};

struct chan_thread {
	uint32_t token; /* 1 + its chan_busy slot; 0: none yet, or none to be had */
	struct chan_run run[2]; /* its claims in a row, [recv] */
};

static __thread struct chan_thread chan_tls __attribute__((tls_model("local-exec"), used));

/* The calling thread's record, and its token alone (the fast paths' one load), read
 * fresh on every call (see rt__thread(): a task can change threads across a switch,
 * and a compiler may keep a thread-local's address from before it). */
static inline struct chan_thread *chan_self(void)
{
	struct chan_thread *me;

	__asm__ volatile("movq %%fs:0, %0\n\tleaq chan_tls@tpoff(%0), %0" : "=r"(me) : : "memory");
	return me;
}

static inline uint32_t chan_self_token(void)
{
	uint32_t token;

	_Static_assert(__builtin_offsetof(struct chan_thread, token) == 0, "read at chan_tls");
	__asm__ volatile("movl %%fs:chan_tls@tpoff, %0" : "=r"(token) : : "memory");
	return token;
}

/* Where each token's thread says it is inside a leased critical section on a channel:
 * written by that thread only, read by revokers. Its own cache line per token. */
struct chan_busy {
	alignas(RT_CACHELINE) const struct rt_chan *c;
};

#define CHAN_MAX_THREADS 1024

/* Tokens are process-wide by nature: they name threads, and any thread may use any
 * channel. A token goes back to the pool when its thread exits. */
static struct {
	pthread_once_t once;
	bool leases; /* membarrier(2) works here; without it no side is ever leased */
	pthread_key_t key; /* its destructor returns a thread's token */
	pthread_mutex_t lock;
	uint32_t next; /* tokens handed out so far */
	uint32_t nfree;
	uint32_t free[CHAN_MAX_THREADS];
	struct chan_busy busy[CHAN_MAX_THREADS];
} chan_threads = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

_Static_assert(CHAN_MAX_THREADS <= CHAN_TOKEN_MAX, "tokens fit their field");

static void chan_thread_exit(void *arg)
{
	uint32_t token = (uint32_t)(uintptr_t)arg;

	pthread_mutex_lock(&chan_threads.lock);
	chan_threads.free[chan_threads.nfree++] = token;
	pthread_mutex_unlock(&chan_threads.lock);
}

static void chan_threads_init(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	/* the expedited private barrier must be registered once per process before use;
	 * where the kernel lacks it (or it is filtered), sides just stay on CAS */
	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0))
		return;
	if (pthread_key_create(&chan_threads.key, chan_thread_exit))
		return;
	chan_threads.leases = true;
}

/* The calling thread's token, handed out on first use; 0 when leases are off or all
 * CHAN_MAX_THREADS tokens are held by live threads. */
static uint32_t chan_token(struct chan_thread *me)
{
	uint32_t token = 0;

	if (me->token)
		return me->token;
	pthread_once(&chan_threads.once, chan_threads_init);
	if (!chan_threads.leases)
		return 0;
	pthread_mutex_lock(&chan_threads.lock);
	if (chan_threads.nfree)
		token = chan_threads.free[--chan_threads.nfree];
	else if (chan_threads.next < CHAN_MAX_THREADS)
		token = ++chan_threads.next;
	pthread_mutex_unlock(&chan_threads.lock);
	if (token && pthread_setspecific(chan_threads.key, (void *)(uintptr_t)token)) {
		chan_thread_exit((void *)(uintptr_t)token);
		token = 0;
	}
	me->token = token;
	return token;
}

/* A full barrier on every thread of the process that is running now; one that is not
 * passes through one when it is switched back in. The heavy half of the asymmetric
 * pairs below; the light half is a compiler barrier. */
static void chan_heavy_fence(void)
{
	/* registered in chan_threads_init() before any lease existed: cannot fail */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) {
		perror("schedlab runtime: membarrier");
		abort();
	}
}

/* ---- leasing a side (under c->lock) ------------------------------------------------ */

/* Lease one side of c to token: CHAN_LEASED first, so that a CAS claim in flight fails
 * (it expects the counter without the bit), then the token. Not when closed or leased. */
static void chan_claim(struct rt_chan *c, bool recv, uint32_t token)
{
	uint64_t *ctr = recv ? &c->head : &c->tail;
	uint64_t mask = chan_mask(c), v = __atomic_load_n(ctr, __ATOMIC_RELAXED);

	if (chan_lessee(mask, recv))
		return;
	do {
		if (v & (CHAN_CLOSED | CHAN_LEASED))
			return;
	} while (!__atomic_compare_exchange_n(ctr, &v, v | CHAN_LEASED, true, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	/* beside the counter, on its line: read only by chan_revoke(), under the lock */
	*(recv ? &c->head_leased_at : &c->tail_leased_at) = v & CHAN_POS;
	/* the lessee is this thread; other readers only compare the token with theirs */
	__atomic_store_n(&c->mask, mask | ((uint64_t)token << chan_token_shift(recv)),
			 __ATOMIC_SEQ_CST);
}

/* End the lease on one side of c, if any: take the token away, make sure the lessee is
 * not inside a critical section that began before it could see that, then clear the
 * bit, after which CAS claims succeed again. The claims made under the lease; 0 when
 * there was none. */
static uint64_t chan_revoke(struct rt_chan *c, bool recv)
{
	uint64_t *ctr = recv ? &c->head : &c->tail;
	uint64_t mask = chan_mask(c);
	uint32_t token = chan_lessee(mask, recv);
	const struct rt_chan **busy;

	if (!token)
		return 0;
	busy = &chan_threads.busy[token - 1].c;
	__atomic_store_n(&c->mask, mask & ~((uint64_t)CHAN_TOKEN_MAX << chan_token_shift(recv)),
			 __ATOMIC_SEQ_CST);
	/* The lessee stores busy = c, then loads the mask (chan_leased()). With a full
	 * barrier on both sides, either it sees its token gone and stays out, or we see it
	 * inside below and wait. This is our barrier and, by IPI, its. */
	chan_heavy_fence();
	/* acquire: pairs with the release that ends its critical section, so its last
	 * counter store is visible before we clear the bit */
	while (__atomic_load_n(busy, __ATOMIC_ACQUIRE) == c)
		sched_yield(); /* a few instructions, unless its thread was preempted there */
	/* | 1: a lease under which no claim was made is still one revoked (0: none was) */
	return ((__atomic_fetch_and(ctr, ~CHAN_LEASED, __ATOMIC_SEQ_CST) & CHAN_POS) -
		(recv ? c->head_leased_at : c->tail_leased_at)) | 1;
}

/* Another thread holds the side we want: revoke its lease, and back the side's next
 * lease off if this one did not pay (CHAN_LEASE_PAYS). */
static void chan_unlease(struct rt_chan *c, bool recv)
{
	uint64_t claims;
	unsigned n;

	rt__lock(&c->lock);
	claims = chan_revoke(c, recv);
	n = c->backoff[recv];
	if (claims >= CHAN_LEASE_PAYS)
		n = 0;
	else if (claims && n < CHAN_BACKOFF_MAX)
		n++;
	/* read without the lock by chan_claimed() */
	__atomic_store_n(&c->backoff[recv], n, __ATOMIC_RELAXED);
	rt__unlock(&c->lock);
}

/* The streak that leases this side of c now. */
static inline uint32_t chan_streak_needed(const struct rt_chan *c, bool recv)
{
	unsigned n = __atomic_load_n(&c->backoff[recv], __ATOMIC_RELAXED);

	return CHAN_CLAIM_STREAK << n;
}

/* After a CAS claim of pos: count claims in a row, and lease the side at the streak. */
static void chan_claimed(struct rt_chan *c, struct chan_thread *me, bool recv, uint64_t pos)
{
	struct chan_run *run = &me->run[recv];
	uint32_t token;

	if (run->c != c || run->next != pos)
		run->streak = 0;
	run->c = c;
	run->next = pos + 1;
	/* the back-off is read only once the plain streak is reached */
	if (++run->streak < CHAN_CLAIM_STREAK || run->streak < chan_streak_needed(c, recv))
		return;
	run->streak = 0;
	token = chan_token(me);
	if (!token)
		return;
	rt__lock(&c->lock);
	chan_claim(c, recv, token);
	rt__unlock(&c->lock);
}

int rt__chan_init_at(struct rt_chan *c, void **slots, uint32_t cap, uint64_t start)
{
	struct chan_cell *cells = (struct chan_cell *)slots;
	uint64_t mask = cap - 1;

	if (cap < 2 || (cap & (cap - 1)) || cap > (1u << 31) || (start & ~CHAN_POS))
		return -EINVAL;
	memset(c, 0, sizeof(*c));
	c->slots = slots;
	c->mask = mask;
	c->head = c->tail = start;
	/* cell i is free for the first position at or after start that maps to it */
	for (uint64_t p = start; p < start + cap; p++) {
		cells[p & mask].seq = p;
		cells[p & mask].val = NULL;
	}
	return 0;
}

uint32_t rt__chan_lessee(const struct rt_chan *c, bool recv)
{
	return chan_lessee(chan_mask(c), recv);
}

unsigned rt__chan_backoff(const struct rt_chan *c, bool recv)
{
	return __atomic_load_n(&c->backoff[recv], __ATOMIC_RELAXED);
}

int rt_chan_init(struct rt_chan *c, void **slots, uint32_t cap)
{
	return rt__chan_init_at(c, slots, cap, 0);
}

/* ---- claiming cells ------------------------------------------------------------------ */

/* The lessee's claim of one cell on its side (recv: receive, taking *val; else send,
 * storing *val) with plain stores, no read-modify-write. 0, -EAGAIN (full, or empty),
 * or CHAN_ELSEWHERE when the lease was revoked. */
static inline __attribute__((always_inline)) int chan_leased(struct rt_chan *c, uint32_t token,
							     bool recv, void **val)
{
	const struct rt_chan **busy = &chan_threads.busy[token - 1].c;
	uint64_t *ctr = recv ? &c->head : &c->tail;
	struct chan_cell *cell;
	uint64_t mask, pos;
	int err = 0;

	/* say we are inside, then check we still hold the lease: the light half of the
	 * pair with the heavy fence in chan_revoke() */
	__atomic_store_n(busy, c, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	mask = chan_mask(c);
	if (chan_lessee(mask, recv) != token) {
		__atomic_store_n(busy, NULL, __ATOMIC_RELAXED);
		return CHAN_ELSEWHERE;
	}
	/* only we store to this side's counter now */
	pos = __atomic_load_n(ctr, __ATOMIC_RELAXED) & CHAN_POS;
	cell = &chan_cells(c)[pos & (uint32_t)mask];
	/* acquire: pairs with the other side's release store of seq, so that a receiver
	 * sees the item, and a sender overwrites a value only once it has been read */
	if (__atomic_load_n(&cell->seq, __ATOMIC_ACQUIRE) == pos + recv) {
		if (recv)
			*val = cell->val;
		else
			cell->val = *val;
		/* release: publishes the item, or our read of it, to the other side */
		__atomic_store_n(&cell->seq, recv ? pos + (uint32_t)mask + 1 : pos + 1,
				 __ATOMIC_RELEASE);
		/* release: a waiter that sees the counter move sees the cell (chan_commit()) */
		__atomic_store_n(ctr, (pos + 1) | CHAN_LEASED, __ATOMIC_RELEASE);
	} else {
		err = -EAGAIN;
	}
	/* release: our counter store comes before a revoker's acquire load sees us out */
	__atomic_store_n(busy, NULL, __ATOMIC_RELEASE);
	return err;
}

/* chan_push() by CAS, for a side that is not leased to us. */
static __attribute__((noinline)) int chan_push_cas(struct rt_chan *c, void *v)
{
	struct chan_thread *me = chan_self();
	uint64_t mask = chan_mask(c), pos = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);

	for (;;) {
		struct chan_cell *cell;
		int64_t dif;

		if (pos & CHAN_CLOSED)
			return -EPIPE;
		if (pos & CHAN_LEASED)
			return CHAN_ELSEWHERE;
		cell = &chan_cells(c)[pos & (uint32_t)mask];
		/* acquire: pairs with the release store in chan_pop*(), so the consumer's read
		 * of the old value is done before we overwrite it */
		dif = (int64_t)(__atomic_load_n(&cell->seq, __ATOMIC_ACQUIRE) - pos);
		if (dif == 0) {
			/* seq_cst: the claim is the sender's half of the sleep protocol, paired
			 * with a receiver's registration in chan_commit(); a failed CAS reloads
			 * pos, closed and leased bits included */
			if (__atomic_compare_exchange_n(&c->tail, &pos, pos + 1, true,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				cell->val = v;
				/* release: publishes val; pairs with the acquire load in chan_pop*() */
				__atomic_store_n(&cell->seq, pos + 1, __ATOMIC_RELEASE);
				chan_claimed(c, me, false, pos);
				return 0;
			}
		} else if (dif < 0) {
			return -EAGAIN;
		} else {
			pos = __atomic_load_n(&c->tail, __ATOMIC_RELAXED); /* another sender won */
		}
	}
}

/* 0, -EAGAIN (full, or the consumer a lap behind has not finished with the cell),
 * -EPIPE (closed), or CHAN_ELSEWHERE (leased to another thread). */
static inline __attribute__((always_inline)) int chan_push(struct rt_chan *c, void *v)
{
	uint32_t token = chan_self_token();

	if (token && chan_lessee(chan_mask(c), false) == token) {
		int err = chan_leased(c, token, false, &v);

		if (err != CHAN_ELSEWHERE)
			return err;
	}
	return chan_push_cas(c, v);
}

/* chan_pop() by CAS, for a side that is not leased to us. */
static __attribute__((noinline)) int chan_pop_cas(struct rt_chan *c, void **out)
{
	struct chan_thread *me = chan_self();
	uint64_t mask = chan_mask(c), pos = __atomic_load_n(&c->head, __ATOMIC_RELAXED);

	for (;;) {
		struct chan_cell *cell;
		int64_t dif;

		if (pos & CHAN_LEASED)
			return CHAN_ELSEWHERE;
		cell = &chan_cells(c)[pos & (uint32_t)mask];
		/* acquire: pairs with the release store in chan_push*(), so val is the item */
		dif = (int64_t)(__atomic_load_n(&cell->seq, __ATOMIC_ACQUIRE) - (pos + 1));
		if (dif == 0) {
			/* seq_cst: the receiver's half of the protocol against sleeping senders,
			 * paired with a sender's registration in chan_commit() */
			if (__atomic_compare_exchange_n(&c->head, &pos, pos + 1, true,
							__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				*out = cell->val;
				/* release: our read of val happens before the next lap's producer
				 * writes; pairs with the acquire load in chan_push*() */
				__atomic_store_n(&cell->seq, pos + (uint32_t)mask + 1, __ATOMIC_RELEASE);
				chan_claimed(c, me, true, pos);
				return 0;
			}
		} else if (dif < 0) {
			return -EAGAIN;
		} else {
			pos = __atomic_load_n(&c->head, __ATOMIC_RELAXED); /* another receiver won */
		}
	}
}

/* 0, -EAGAIN (empty, or its producer has claimed the cell but not yet published), or
 * CHAN_ELSEWHERE (leased to another thread). */
static inline __attribute__((always_inline)) int chan_pop(struct rt_chan *c, void **out)
{
	uint32_t token = chan_self_token();

	if (token && chan_lessee(chan_mask(c), true) == token) {
		int err = chan_leased(c, token, true, out);

		if (err != CHAN_ELSEWHERE)
			return err;
	}
	return chan_pop_cas(c, out);
}

/* ---- sleeping and waking ------------------------------------------------------------- */

/* Wake the oldest waiter of q, if any. Called after a push or a pop that came before the
 * caller's load of *waiting that returned nonzero (see chan_commit() for the order). */
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
	/* After the seq_cst claim in chan_push(), or a lessee's plain stores: then the
	 * compiler must keep them before this load, and the waiter's heavy fence does the
	 * rest. Pairs with recv_commit() */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->recv_waiting, __ATOMIC_SEQ_CST))
		chan_wake_one(c, &c->recvq, &c->recv_waiting);
}

static inline void chan_received(struct rt_chan *c)
{
	/* after the claim in chan_pop*(), as in chan_sent(); pairs with send_commit() */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
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
 * are the mirror image, with head for tail. On x86 the CAS is the full barrier. A
 * lessee claims with plain stores and no barrier, so against a leased side the waiter
 * runs the heavy fence between its registration and its loads: either the lessee's
 * stores are visible to the loads, or its load of the counter comes after the barrier
 * and sees us. (Leases change only under the lock we hold.) A claim seen here whose
 * item is not yet published makes us decline too: its sender may have loaded
 * recv_waiting before we registered. */
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
	if (chan_lessee(chan_mask(c), !recv))
		chan_heavy_fence(); /* pairs with the lessee's plain claim + load of *waiting */
	if (recv) {
		/* head before tail: tail >= head always, so equal values mean the ring was
		 * empty when tail was loaded, and any later claim will see us */
		head = __atomic_load_n(&c->head, __ATOMIC_SEQ_CST) & CHAN_POS;
		tail = __atomic_load_n(&c->tail, __ATOMIC_SEQ_CST);
		sleep = !(tail & CHAN_CLOSED) && (tail & CHAN_POS) == head;
	} else {
		/* tail before head: a difference of cap means the ring was full when head was
		 * loaded, and any later consumer claim will see us; it may be negative when
		 * items came and went between the loads */
		tail = __atomic_load_n(&c->tail, __ATOMIC_SEQ_CST);
		head = __atomic_load_n(&c->head, __ATOMIC_SEQ_CST) & CHAN_POS;
		sleep = !(tail & CHAN_CLOSED) &&
			(int64_t)((tail & CHAN_POS) - head) > (int64_t)(uint32_t)chan_mask(c);
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
	uint64_t mask = (uint32_t)chan_mask(c);
	uint64_t slip = mask + 1 < 2 * CHAN_SLIP ? (mask + 1) / 2 : CHAN_SLIP;
	uint64_t pos = (recv ? __atomic_load_n(&c->head, __ATOMIC_RELAXED)
			     : __atomic_load_n(&c->tail, __ATOMIC_RELAXED)) & CHAN_POS;
	uint64_t seq = __atomic_load_n(&chan_cells(c)[(pos + slip - 1) & mask].seq,
				       __ATOMIC_RELAXED);

	/* the cell slip - 1 ahead is full (recv) or free for this lap (send) */
	return (int64_t)(seq - (pos + slip - 1)) >= (recv ? 1 : 0);
}

/* Would a waiter's commit sleep now? chan_commit()'s test, unordered: a cheap look
 * before suspending, which costs a switch and the lock even when it is declined. */
static bool chan_blocked(const struct rt_chan *c, bool recv)
{
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_RELAXED) & CHAN_POS;
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);

	if (tail & CHAN_CLOSED)
		return false;
	tail &= CHAN_POS;
	return recv ? tail == head : (int64_t)(tail - head) > (int64_t)(uint32_t)chan_mask(c);
}

/* One failed attempt's worth of waiting (see CHAN_SPIN_ROUNDS). */
static void chan_backoff(struct rt_chan *c, unsigned *round, bool recv)
{
	struct rt__waiter local, *w;
	struct rt__worker *self;

	if (*round < CHAN_SPIN_ROUNDS) {
		(*round)++;
		/* a task queued here may be the other side: let it run. With none queued a
		 * yield would come straight back (the cede bypass), for nothing */
		if (rt_current() && (self = rt__self()) && !rt__idle_here(self)) {
			rt_yield();
			return;
		}
		for (unsigned i = 0; i < CHAN_SLIP_PAUSES && !chan_slipped(c, recv); i++)
			rt__cpu_relax();
		return;
	}
	if (!chan_blocked(c, recv)) {
		/* the other side is between its claim and its publish: spin on, and give the
		 * CPU away now and then in case its thread was preempted there */
		if (++*round % 16 == 0)
			sched_yield();
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

/* ---- the API --------------------------------------------------------------------------- */

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
		if (err == CHAN_ELSEWHERE)
			chan_unlease(c, false);
		else
			chan_backoff(c, &round, false);
	}
}

int rt_chan_recv(struct rt_chan *c, void **out)
{
	unsigned round = 0;

	for (;;) {
		uint64_t tail;
		int err = chan_pop(c, out);

		if (!err) {
			chan_received(c);
			return 0;
		}
		if (err == CHAN_ELSEWHERE) {
			chan_unlease(c, true);
			continue;
		}
		/* closed and drained: tail no longer moves, and every position below it has
		 * been claimed by a receiver. acquire: pairs with the seq_cst RMWs on tail
		 * and head, and the lessees' release stores */
		tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
		if ((tail & CHAN_CLOSED) &&
		    (tail & CHAN_POS) == (__atomic_load_n(&c->head, __ATOMIC_ACQUIRE) & CHAN_POS))
			return -EPIPE;
		chan_backoff(c, &round, true);
	}
}

bool rt_chan_try_send(struct rt_chan *c, void *v)
{
	int err;

	while ((err = chan_push(c, v)) == CHAN_ELSEWHERE)
		chan_unlease(c, false);
	if (err)
		return false;
	chan_sent(c);
	return true;
}

bool rt_chan_try_recv(struct rt_chan *c, void **out)
{
	int err;

	while ((err = chan_pop(c, out)) == CHAN_ELSEWHERE)
		chan_unlease(c, true);
	if (err)
		return false;
	chan_received(c);
	return true;
}

void rt_chan_close(struct rt_chan *c)
{
	struct rt__waiter *recv, *send;

	rt__lock(&c->lock);
	/* a lessee's plain store of tail would drop the bit: end the lease first */
	chan_revoke(c, false);
	/* seq_cst, and under the lock: a commit after this sees the bit and declines to
	 * sleep; one before is on a list we take below */
	__atomic_fetch_or(&c->tail, CHAN_CLOSED, __ATOMIC_SEQ_CST);
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
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_ACQUIRE) & CHAN_POS;
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE) & CHAN_POS;
	uint64_t n = tail - head, cap = (uint64_t)(uint32_t)chan_mask(c) + 1;

	return n > cap ? (uint32_t)cap : (uint32_t)n;
}
