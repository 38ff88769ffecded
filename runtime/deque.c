/*
 * The bounded owner/thief ring described in deque.h.
 *
 * Invariants, with real <= tail and steal <= real (as unsigned differences):
 *  - slots [real, tail) hold queued items; [steal, real) are being copied by a thief;
 *  - the owner writes a slot only when tail - steal < capacity, so it never overwrites
 *    a slot a thief is still copying;
 *  - an item is taken by whoever moves `real` past it with a successful CAS on head.
 * Orderings: the owner publishes a slot with a release store of tail; readers of tail
 * acquire it before reading slots. A CAS on head orders the claim of a slot.
 */
#include <errno.h>
#include <stddef.h>

#include "runtime/deque.h"

static inline uint32_t head_steal(uint64_t h)
{
	return (uint32_t)(h >> 32);
}

static inline uint32_t head_real(uint64_t h)
{
	return (uint32_t)h;
}

static inline uint64_t head_pack(uint32_t steal, uint32_t real)
{
	return ((uint64_t)steal << 32) | real;
}

/* Slots are touched through relaxed atomics: the happens-before comes from head and
 * tail, but a thief may read a slot the owner wrote in an earlier lap. */
static inline void slot_put(struct rt_deque *dq, uint32_t i, void *item)
{
	__atomic_store_n(&dq->slots[i & dq->mask], item, __ATOMIC_RELAXED);
}

static inline void *slot_get(const struct rt_deque *dq, uint32_t i)
{
	return __atomic_load_n(&dq->slots[i & dq->mask], __ATOMIC_RELAXED);
}

void rt__deque_init_at(struct rt_deque *dq, void **slots, uint32_t cap, uint32_t start)
{
	dq->head = head_pack(start, start);
	dq->tail = start;
	dq->mask = cap - 1;
	dq->slots = slots;
}

int rt_deque_init(struct rt_deque *dq, void **slots, uint32_t cap)
{
	if (cap < 2 || cap > (1u << 30) || (cap & (cap - 1)))
		return -EINVAL;
	rt__deque_init_at(dq, slots, cap, 0);
	return 0;
}

uint32_t rt_deque_capacity(const struct rt_deque *dq)
{
	return dq->mask + 1;
}

int rt_deque_push(struct rt_deque *dq, void *item)
{
	uint32_t tail = dq->tail; /* ours alone */
	/* acquire: pairs with the release CAS that ends a steal, so the thief's reads of
	 * the slots it copied happen before we reuse them */
	uint32_t steal = head_steal(__atomic_load_n(&dq->head, __ATOMIC_ACQUIRE));

	if (tail - steal > dq->mask)
		return -ENOSPC;
	slot_put(dq, tail, item);
	/* publish the slot before the tail; pairs with the acquire loads of tail in
	 * rt_deque_pop() and rt_deque_steal() */
	__atomic_store_n(&dq->tail, tail + 1, __ATOMIC_RELEASE);
	return 0;
}

/* Take the oldest item: the owner's pop and a thief's steal_one. Only the owner may
 * read tail plainly. Both read the slot before the CAS: when the CAS moves steal too,
 * the slot is free the moment it succeeds, and on a full ring the owner's next push
 * may overwrite it. A read that loses the CAS is thrown away; one that wins read the
 * item the CAS claimed, because the owner writes that slot only once steal has passed
 * it, which the winning CAS has not yet published. */
static inline void *take_head(struct rt_deque *dq, bool owner)
{
	uint64_t head = __atomic_load_n(&dq->head, __ATOMIC_ACQUIRE);

	for (;;) {
		uint32_t steal = head_steal(head), real = head_real(head);
		/* acquire for a thief: pairs with the release store in rt_deque_push() */
		uint32_t tail = owner ? dq->tail : __atomic_load_n(&dq->tail, __ATOMIC_ACQUIRE);
		uint64_t next;
		void *item;

		if (real == tail || tail - real > dq->mask + 1)
			return NULL;
		item = slot_get(dq, real);
		/* no steal in progress: both indices move; else only ours */
		next = steal == real ? head_pack(real + 1, real + 1) : head_pack(steal, real + 1);
		/* acq_rel: the release half pairs with the acquire load of head in
		 * rt_deque_push(), so our read of the slot happens before its reuse */
		if (__atomic_compare_exchange_n(&dq->head, &head, next, true, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return item;
	}
}

void *rt_deque_pop(struct rt_deque *dq)
{
	return take_head(dq, true);
}

void *rt_deque_steal_one(struct rt_deque *src)
{
	return take_head(src, false);
}

uint32_t rt_deque_take_half(struct rt_deque *dq, void **out)
{
	uint32_t half = (dq->mask + 1) / 2;
	uint64_t head = __atomic_load_n(&dq->head, __ATOMIC_ACQUIRE);
	uint32_t real = head_real(head);

	if (head_steal(head) != real || dq->tail - real <= dq->mask)
		return 0;
	/* claim first, then copy: once head has moved past them no thief can take
	 * these slots, and only we (the owner) write slots */
	if (!__atomic_compare_exchange_n(&dq->head, &head, head_pack(real + half, real + half),
					 false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return 0;
	for (uint32_t i = 0; i < half; i++)
		out[i] = slot_get(dq, real + i);
	return half;
}

void *rt_deque_steal(struct rt_deque *src, struct rt_deque *dst, uint32_t *moved)
{
	uint32_t dst_tail = dst->tail; /* the thief owns dst */
	uint32_t dst_steal = head_steal(__atomic_load_n(&dst->head, __ATOMIC_ACQUIRE));
	uint64_t head, next;
	uint32_t first, n;
	void *ret;

	if (moved)
		*moved = 0;
	/* leave room: take at most half of src, and only into a queue at most half full */
	if (dst_tail - dst_steal > dst->mask / 2)
		return NULL;

	head = __atomic_load_n(&src->head, __ATOMIC_ACQUIRE);
	for (;;) {
		uint32_t steal = head_steal(head), real = head_real(head);
		/* acquire: pairs with the release store in rt_deque_push(), so the slots
		 * below tail are visible */
		uint32_t tail = __atomic_load_n(&src->tail, __ATOMIC_ACQUIRE);

		if (steal != real)
			return NULL; /* another thief is copying */
		n = tail - real;
		n -= n / 2;
		if (n == 0 || n > src->mask + 1)
			return NULL; /* empty, or a torn snapshot of a queue that moved on */
		if (n > dst->mask / 2 + 1)
			n = dst->mask / 2 + 1;
		next = head_pack(steal, real + n);
		if (__atomic_compare_exchange_n(&src->head, &head, next, true, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
	}

	first = head_real(head);
	for (uint32_t i = 0; i < n; i++)
		slot_put(dst, dst_tail + i, slot_get(src, first + i));

	/* done copying: let steal catch up with real, which the owner may have moved on */
	head = next;
	for (;;) {
		uint32_t real = head_real(head);

		if (__atomic_compare_exchange_n(&src->head, &head, head_pack(real, real), true,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}

	if (moved)
		*moved = n;
	/* run the newest stolen item now; publish the rest */
	ret = slot_get(dst, dst_tail + n - 1);
	if (n > 1)
		__atomic_store_n(&dst->tail, dst_tail + n - 1, __ATOMIC_RELEASE);
	return ret;
}

uint32_t rt_deque_len(const struct rt_deque *dq)
{
	uint64_t head = __atomic_load_n(&dq->head, __ATOMIC_ACQUIRE);
	uint32_t tail = __atomic_load_n(&dq->tail, __ATOMIC_ACQUIRE);
	uint32_t n = tail - head_real(head);

	/* a reader racing the owner can see real beyond an older tail */
	return n > dq->mask + 1 ? 0 : n;
}

uint32_t rt_deque_room(const struct rt_deque *dq)
{
	uint32_t steal = head_steal(__atomic_load_n(&dq->head, __ATOMIC_ACQUIRE));

	return dq->mask + 1 - (dq->tail - steal);
}
