/*
 * The owner/thief ring: single-threaded contracts, index wrap-around, and races
 * between one owner and several thieves in which every item must be taken exactly
 * once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "runtime/deque.h"
#include "tests/runtime/rt_test.h"

#define CAP 256

static void *item(uintptr_t i)
{
	return (void *)(i + 1); /* never NULL */
}

static uintptr_t index_of(void *p)
{
	return (uintptr_t)p - 1;
}

Test(deque, init_rejects_bad_capacity)
{
	struct rt_deque dq;
	void *slots[8];

	cr_expect_eq(rt_deque_init(&dq, slots, 0), -EINVAL);
	cr_expect_eq(rt_deque_init(&dq, slots, 1), -EINVAL);
	cr_expect_eq(rt_deque_init(&dq, slots, 6), -EINVAL);
	cr_expect_eq(rt_deque_init(&dq, slots, 8), 0);
	cr_expect_eq(rt_deque_capacity(&dq), 8);
}

Test(deque, pop_is_fifo_and_push_fails_when_full)
{
	struct rt_deque dq;
	void *slots[8];

	rt_deque_init(&dq, slots, 8);
	cr_expect(rt_deque_empty(&dq));
	cr_expect_null(rt_deque_pop(&dq));
	for (uintptr_t i = 0; i < 8; i++)
		cr_assert_eq(rt_deque_push(&dq, item(i)), 0);
	cr_expect_eq(rt_deque_push(&dq, item(8)), -ENOSPC);
	cr_expect_eq(rt_deque_len(&dq), 8);
	cr_expect_eq(rt_deque_room(&dq), 0);
	for (uintptr_t i = 0; i < 8; i++)
		cr_assert_eq(index_of(rt_deque_pop(&dq)), i);
	cr_expect_null(rt_deque_pop(&dq));
	cr_expect_eq(rt_deque_room(&dq), 8);
}

Test(deque, steal_from_empty_fails)
{
	struct rt_deque a, b;
	void *sa[8], *sb[8];
	uint32_t moved = 99;

	rt_deque_init(&a, sa, 8);
	rt_deque_init(&b, sb, 8);
	cr_expect_null(rt_deque_steal(&a, &b, &moved));
	cr_expect_eq(moved, 0);
}

Test(deque, steal_takes_the_older_half_rounded_up)
{
	struct rt_deque a, b;
	void *sa[16], *sb[16];
	uint32_t moved;
	void *got;

	rt_deque_init(&a, sa, 16);
	rt_deque_init(&b, sb, 16);
	for (uintptr_t i = 0; i < 5; i++)
		rt_deque_push(&a, item(i));
	got = rt_deque_steal(&a, &b, &moved);
	cr_assert_eq(moved, 3);
	/* the thief runs the newest stolen item and queues the others in order */
	cr_expect_eq(index_of(got), 2);
	cr_expect_eq(rt_deque_len(&b), 2);
	cr_expect_eq(index_of(rt_deque_pop(&b)), 0);
	cr_expect_eq(index_of(rt_deque_pop(&b)), 1);
	cr_expect_eq(rt_deque_len(&a), 2);
	cr_expect_eq(index_of(rt_deque_pop(&a)), 3);
	cr_expect_eq(index_of(rt_deque_pop(&a)), 4);
}

Test(deque, steal_of_one_item_takes_it)
{
	struct rt_deque a, b;
	void *sa[4], *sb[4];
	uint32_t moved;

	rt_deque_init(&a, sa, 4);
	rt_deque_init(&b, sb, 4);
	rt_deque_push(&a, item(7));
	cr_expect_eq(index_of(rt_deque_steal(&a, &b, &moved)), 7);
	cr_expect_eq(moved, 1);
	cr_expect(rt_deque_empty(&a));
	cr_expect(rt_deque_empty(&b));
}

Test(deque, steal_refuses_a_thief_queue_more_than_half_full)
{
	struct rt_deque a, b;
	void *sa[8], *sb[8];

	rt_deque_init(&a, sa, 8);
	rt_deque_init(&b, sb, 8);
	for (uintptr_t i = 0; i < 4; i++)
		rt_deque_push(&a, item(i));
	for (uintptr_t i = 0; i < 5; i++)
		rt_deque_push(&b, item(100 + i));
	cr_expect_null(rt_deque_steal(&a, &b, NULL));
	cr_expect_eq(rt_deque_len(&a), 4);
}

Test(deque, take_half_on_full_queue_returns_oldest)
{
	struct rt_deque dq;
	void *slots[8], *out[4];

	rt_deque_init(&dq, slots, 8);
	for (uintptr_t i = 0; i < 7; i++)
		rt_deque_push(&dq, item(i));
	cr_expect_eq(rt_deque_take_half(&dq, out), 0, "not full: nothing to spill");
	rt_deque_push(&dq, item(7));
	cr_assert_eq(rt_deque_take_half(&dq, out), 4);
	for (uintptr_t i = 0; i < 4; i++)
		cr_expect_eq(index_of(out[i]), i);
	cr_expect_eq(rt_deque_len(&dq), 4);
	cr_expect_eq(index_of(rt_deque_pop(&dq)), 4);
}

/* Indices are free-running 32-bit counters: start just below the wrap and go across. */
Test(deque, indices_wrap_around)
{
	struct rt_deque a, b;
	void *sa[8], *sb[8];
	uintptr_t next = 0, expect = 0;
	uint32_t moved;

	rt__deque_init_at(&a, sa, 8, UINT32_MAX - 20);
	rt__deque_init_at(&b, sb, 8, UINT32_MAX - 3);
	for (int round = 0; round < 40; round++) {
		while (rt_deque_push(&a, item(next)) == 0)
			next++;
		cr_assert_eq(rt_deque_len(&a), 8);
		for (int k = 0; k < 3; k++)
			cr_assert_eq(index_of(rt_deque_pop(&a)), expect++);
		/* steal everything left in two rounds, draining b in order each time */
		while (!rt_deque_empty(&a)) {
			uintptr_t first = expect;
			void *got = rt_deque_steal(&a, &b, &moved);

			cr_assert_not_null(got);
			cr_assert_eq(index_of(got), first + moved - 1);
			for (uint32_t k = 0; k + 1 < moved; k++)
				cr_assert_eq(index_of(rt_deque_pop(&b)), first + k);
			expect += moved;
		}
	}
	cr_expect_eq(expect, next);
}

/* ---- races ------------------------------------------------------------------------------ */

#define ITEMS   RT_TEST_N(400000)
#define THIEVES 3

static struct rt_deque owner_q, thief_q[THIEVES];
static void *owner_slots[CAP], *thief_slots[THIEVES][CAP];
static uint8_t taken[ITEMS];
static pthread_barrier_t start;
static int owner_done;

static void pin(unsigned cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	CPU_ZERO(&set);
	CPU_SET(cpu % (unsigned)(n > 0 ? n : 1), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void take(void *p)
{
	/* every item exactly once: a second take shows as a value of 2 */
	__atomic_fetch_add(&taken[index_of(p)], 1, __ATOMIC_RELAXED);
}

static void *thief(void *arg)
{
	uintptr_t k = (uintptr_t)arg;
	void *p;

	pin((unsigned)k + 1);
	pthread_barrier_wait(&start);
	for (;;) {
		int done = __atomic_load_n(&owner_done, __ATOMIC_ACQUIRE);

		p = rt_deque_steal(&owner_q, &thief_q[k], NULL);
		if (p) {
			take(p);
			while ((p = rt_deque_pop(&thief_q[k])))
				take(p);
		} else if (done && rt_deque_empty(&owner_q)) {
			break;
		}
	}
	return NULL;
}

Test(deque, owner_and_thieves_take_every_item_once, .timeout = 60)
{
	pthread_t th[THIEVES];
	uintptr_t next = 0;
	void *p;

	rt_deque_init(&owner_q, owner_slots, CAP);
	for (int k = 0; k < THIEVES; k++)
		rt_deque_init(&thief_q[k], thief_slots[k], CAP);
	pthread_barrier_init(&start, NULL, THIEVES + 1);
	for (uintptr_t k = 0; k < THIEVES; k++)
		pthread_create(&th[k], NULL, thief, (void *)k);
	pin(0);
	pthread_barrier_wait(&start);
	while (next < ITEMS) {
		/* bursts of pushes, then pop a few: the owner and thieves meet at the head */
		for (int b = 0; b < 64 && next < ITEMS; b++) {
			if (rt_deque_push(&owner_q, item(next)) == 0)
				next++;
			else if ((p = rt_deque_pop(&owner_q)))
				take(p);
		}
		for (int b = 0; b < 16 && (p = rt_deque_pop(&owner_q)); b++)
			take(p);
	}
	__atomic_store_n(&owner_done, 1, __ATOMIC_RELEASE);
	while ((p = rt_deque_pop(&owner_q)))
		take(p);
	for (int k = 0; k < THIEVES; k++)
		pthread_join(th[k], NULL);
	for (uintptr_t i = 0; i < ITEMS; i++)
		cr_assert_eq(taken[i], 1, "item %lu taken %u times", (unsigned long)i, taken[i]);
}

/* The overflow path racing thieves: take_half must never hand out an item a thief
 * also took. */
static uint8_t spilled_taken[ITEMS];
static struct rt_deque small_q, small_thief_q;
static void *small_slots[16], *small_thief_slots[16];
static int small_done;

static void *small_thief(void *arg)
{
	void *p;

	pin(1);
	pthread_barrier_wait(&start);
	while (!__atomic_load_n(&small_done, __ATOMIC_ACQUIRE) || !rt_deque_empty(&small_q)) {
		if ((p = rt_deque_steal(&small_q, &small_thief_q, NULL))) {
			__atomic_fetch_add(&spilled_taken[index_of(p)], 1, __ATOMIC_RELAXED);
			while ((p = rt_deque_pop(&small_thief_q)))
				__atomic_fetch_add(&spilled_taken[index_of(p)], 1, __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

Test(deque, take_half_races_a_thief, .timeout = 60)
{
	pthread_t th;
	void *out[8], *p;
	uintptr_t next = 0;

	rt_deque_init(&small_q, small_slots, 16);
	rt_deque_init(&small_thief_q, small_thief_slots, 16);
	pthread_barrier_init(&start, NULL, 2);
	pthread_create(&th, NULL, small_thief, NULL);
	pin(0);
	pthread_barrier_wait(&start);
	while (next < ITEMS) {
		if (rt_deque_push(&small_q, item(next)) == 0) {
			next++;
			continue;
		}
		uint32_t n = rt_deque_take_half(&small_q, out);

		for (uint32_t i = 0; i < n; i++)
			__atomic_fetch_add(&spilled_taken[index_of(out[i])], 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&small_done, 1, __ATOMIC_RELEASE);
	while ((p = rt_deque_pop(&small_q)))
		__atomic_fetch_add(&spilled_taken[index_of(p)], 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	for (uintptr_t i = 0; i < ITEMS; i++)
		cr_assert_eq(spilled_taken[i], 1, "item %lu taken %u times", (unsigned long)i,
			     spilled_taken[i]);
}

/* steal_one against an owner that keeps a small ring full: a slot the thief's CAS has
 * freed is the very next one the owner's push writes, so a thief that read the slot
 * after its CAS would get the new item (lost the old one, and the new one is taken
 * twice). */
#define ONE_ITEMS RT_TEST_N(2000000)

static uint8_t one_taken[ONE_ITEMS];
static struct rt_deque one_q;
static void *one_slots[4];
static int one_done;

static void *one_thief(void *arg)
{
	void *p;

	pin((unsigned)(uintptr_t)arg + 1);
	pthread_barrier_wait(&start);
	while (!__atomic_load_n(&one_done, __ATOMIC_ACQUIRE) || !rt_deque_empty(&one_q)) {
		if ((p = rt_deque_steal_one(&one_q)))
			__atomic_fetch_add(&one_taken[index_of(p)], 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(deque, steal_one_races_an_owner_on_a_full_ring, .timeout = 120)
{
	pthread_t th[2];
	uintptr_t next = 0;
	void *p;

	rt_deque_init(&one_q, one_slots, 4);
	pthread_barrier_init(&start, NULL, 3);
	for (uintptr_t k = 0; k < 2; k++)
		pthread_create(&th[k], NULL, one_thief, (void *)k);
	pin(0);
	pthread_barrier_wait(&start);
	while (next < ONE_ITEMS) {
		if (rt_deque_push(&one_q, item(next)) == 0)
			next++;
		else if ((p = rt_deque_pop(&one_q)))
			__atomic_fetch_add(&one_taken[index_of(p)], 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&one_done, 1, __ATOMIC_RELEASE);
	while ((p = rt_deque_pop(&one_q)))
		__atomic_fetch_add(&one_taken[index_of(p)], 1, __ATOMIC_RELAXED);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	for (uintptr_t i = 0; i < ONE_ITEMS; i++)
		cr_assert_eq(one_taken[i], 1, "item %lu taken %u times", (unsigned long)i,
			     one_taken[i]);
}
