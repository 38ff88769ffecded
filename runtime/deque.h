/*
 * rt_deque — a worker's bounded run queue: one owner, any number of thieves.
 *
 * The owner pushes at the tail and pops from the head (FIFO); a thief takes half of
 * what is queued, from the head, into its own queue. This is the ring Tokio and
 * cats-effect use: `head` packs two 32-bit indices, `steal` (where an in-progress
 * steal began) and `real` (the next slot to take); they differ only while a thief is
 * copying, and then no other thief may start and the owner may not reuse those slots.
 * `tail` is written by the owner alone. Indices run freely and wrap; every
 * comparison is an unsigned difference. Capacity is a power of two, checked in init.
 *
 * Memory is the caller's: rt_deque_init(dq, slots, cap).
 */
#ifndef SCHEDLAB_RT_DEQUE_H
#define SCHEDLAB_RT_DEQUE_H

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>

struct rt_deque {
	alignas(64) uint64_t head; /* (steal << 32) | real; CAS by owner and thieves */
	alignas(64) uint32_t tail; /* written by the owner only */
	uint32_t mask;
	void **slots;
};

/* 0, or -EINVAL when cap is not a power of two in [2, 2^30]. */
int rt_deque_init(struct rt_deque *dq, void **slots, uint32_t cap);
/* For tests of wrap-around: start every index at `start`. */
void rt__deque_init_at(struct rt_deque *dq, void **slots, uint32_t cap, uint32_t start);

/* Owner. 0, or -ENOSPC when full. */
int rt_deque_push(struct rt_deque *dq, void *item);
/* Owner. The oldest item, or NULL when empty. */
void *rt_deque_pop(struct rt_deque *dq);
/* Owner, on a full queue: claim the oldest half and copy it to out[0 .. cap/2).
 * Returns how many were taken (cap/2), or 0 when a thief is mid-steal (retry the
 * push: the thief is about to free slots) or the queue is not full. */
uint32_t rt_deque_take_half(struct rt_deque *dq, void **out);

/* Thief (the owner of dst): move half of src's items (rounded up) into dst and return
 * one of them to run now; NULL when src is empty, another thief is mid-steal, or dst
 * has no room. *moved (may be NULL) receives the number of items taken, the returned
 * one included. */
void *rt_deque_steal(struct rt_deque *src, struct rt_deque *dst, uint32_t *moved);

/* Thief: take the single oldest item (ForkJoinPool's poll), or NULL. */
void *rt_deque_steal_one(struct rt_deque *src);

/* Any thread: items queued now (a snapshot; exact only for the owner). */
uint32_t rt_deque_len(const struct rt_deque *dq);
static inline bool rt_deque_empty(const struct rt_deque *dq)
{
	return rt_deque_len(dq) == 0;
}
uint32_t rt_deque_capacity(const struct rt_deque *dq);
/* Owner: free slots. */
uint32_t rt_deque_room(const struct rt_deque *dq);

#endif /* SCHEDLAB_RT_DEQUE_H */
