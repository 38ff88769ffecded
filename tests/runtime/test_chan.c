/*
 * Bounded MPMC channels through the public API: capacity checks, FIFO order, NULL
 * values, positions crossing 2^32, close semantics (receivers drain, then -EPIPE; sends
 * after a close fail), blocking on a full or empty channel from tasks and from threads,
 * and producers racing consumers under 2 and 8 workers and every preset, where each
 * consumer checks every producer's sequence numbers arrive in order and every item is
 * received exactly once. Leases: a side one thread uses alone is leased to it, another
 * thread revokes the lease without losing or reordering an item, a side two threads
 * take by turns in short bursts stops being leased (in long ones it keeps its leases),
 * and close ends a lease.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/internal.h"
#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

/* Failures seen inside tasks and helper threads, where an assertion must not unwind
 * (a task runs on its own stack): counted there, asserted by the test's thread. */
static uint32_t failures;

#define CHECK(cond)                                                                           \
	do {                                                                                   \
		if (!(cond))                                                                   \
			__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);                    \
	} while (0)

/* ---- single-threaded contracts ---------------------------------------------------------- */

Test(chan, init_rejects_bad_capacity)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(8)];

	cr_expect_eq(rt_chan_init(&c, slots, 0), -EINVAL);
	cr_expect_eq(rt_chan_init(&c, slots, 1), -EINVAL);
	cr_expect_eq(rt_chan_init(&c, slots, 6), -EINVAL);
	cr_expect_eq(rt_chan_init(&c, slots, 3), -EINVAL);
	cr_expect_eq(rt_chan_init(&c, slots, 8), 0);
	cr_expect_eq(rt_chan_len(&c), 0);
}

Test(chan, try_send_fills_to_capacity_and_try_recv_is_fifo)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(8)], *v;

	cr_assert_eq(rt_chan_init(&c, slots, 8), 0);
	cr_expect_not(rt_chan_try_recv(&c, &v));
	for (uintptr_t i = 0; i < 8; i++)
		cr_assert(rt_chan_try_send(&c, (void *)(i + 100)));
	cr_expect_not(rt_chan_try_send(&c, (void *)1));
	cr_expect_eq(rt_chan_len(&c), 8);
	for (uintptr_t i = 0; i < 8; i++) {
		cr_assert(rt_chan_try_recv(&c, &v));
		cr_expect_eq((uintptr_t)v, i + 100);
	}
	cr_expect_not(rt_chan_try_recv(&c, &v));
	cr_expect_eq(rt_chan_len(&c), 0);
}

Test(chan, null_and_zero_are_values)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(2)], *v = (void *)1;

	cr_assert_eq(rt_chan_init(&c, slots, 2), 0);
	cr_assert_eq(rt_chan_send(&c, NULL), 0);
	cr_assert_eq(rt_chan_recv(&c, &v), 0);
	cr_expect_null(v);
}

/* Blocking calls from a plain thread when they need not block. */
Test(chan, send_and_recv_from_a_thread_without_waiting)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(4)], *v;

	cr_assert_eq(rt_chan_init(&c, slots, 4), 0);
	for (uintptr_t lap = 0; lap < 1000; lap++) {
		for (uintptr_t i = 0; i < 4; i++)
			cr_assert_eq(rt_chan_send(&c, (void *)(lap * 4 + i)), 0);
		for (uintptr_t i = 0; i < 4; i++) {
			cr_assert_eq(rt_chan_recv(&c, &v), 0);
			cr_assert_eq((uintptr_t)v, lap * 4 + i);
		}
	}
}

/* Positions are 64-bit: crossing 2^32 (where a 32-bit index would wrap) changes nothing. */
Test(chan, positions_cross_two_to_the_32)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(4)], *v;
	uint64_t start = (1ull << 32) - 6;

	cr_assert_eq(rt__chan_init_at(&c, slots, 4, start), 0);
	for (uintptr_t i = 0; i < 64; i++) {
		cr_assert(rt_chan_try_send(&c, (void *)i));
		if (i % 3 == 2) {
			cr_assert(rt_chan_try_send(&c, (void *)(i + 1000)));
			cr_assert(rt_chan_try_recv(&c, &v));
			cr_assert_eq((uintptr_t)v, i);
			cr_assert(rt_chan_try_recv(&c, &v));
			cr_assert_eq((uintptr_t)v, i + 1000);
		} else {
			cr_assert(rt_chan_try_recv(&c, &v));
			cr_assert_eq((uintptr_t)v, i);
		}
		cr_assert_eq(rt_chan_len(&c), 0);
	}
	for (uintptr_t i = 0; i < 4; i++)
		cr_assert(rt_chan_try_send(&c, (void *)i));
	cr_expect_not(rt_chan_try_send(&c, NULL));
	cr_expect_eq(rt_chan_len(&c), 4);
	cr_expect_eq(rt__chan_init_at(&c, slots, 4, 1ull << 63), -EINVAL, "the closed bit");
}

Test(chan, close_drains_then_reports_epipe)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(4)], *v;

	cr_assert_eq(rt_chan_init(&c, slots, 4), 0);
	cr_assert_eq(rt_chan_send(&c, (void *)1), 0);
	cr_assert_eq(rt_chan_send(&c, (void *)2), 0);
	rt_chan_close(&c);
	cr_expect_eq(rt_chan_send(&c, (void *)3), -EPIPE);
	cr_expect_not(rt_chan_try_send(&c, (void *)3));
	cr_expect_eq(rt_chan_len(&c), 2);
	cr_assert_eq(rt_chan_recv(&c, &v), 0);
	cr_expect_eq((uintptr_t)v, 1);
	cr_assert(rt_chan_try_recv(&c, &v));
	cr_expect_eq((uintptr_t)v, 2);
	cr_expect_eq(rt_chan_recv(&c, &v), -EPIPE);
	cr_expect_eq(rt_chan_recv(&c, &v), -EPIPE, "and again");
	cr_expect_not(rt_chan_try_recv(&c, &v));
	rt_chan_close(&c); /* twice: harmless */
	cr_expect_eq(rt_chan_recv(&c, &v), -EPIPE);
}

/* ---- leases: a side one thread uses alone claims without a CAS --------------------------- */

/* Leases need membarrier(2)'s private expedited command; without it sides stay on CAS. */
static void need_membarrier(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		cr_skip_test("membarrier(2) has no private expedited command here, so no side "
			     "is ever leased");
}

/* Fill and drain the ring lap by lap from this thread: both sides end up leased to it,
 * and order, counts and fullness are what they were on CAS. */
static void laps(struct rt_chan *c, uintptr_t from, uintptr_t to)
{
	void *v;

	for (uintptr_t i = from; i < to; i += 4) {
		for (uintptr_t j = i; j < i + 4; j++)
			cr_assert(rt_chan_try_send(c, (void *)j));
		cr_assert_not(rt_chan_try_send(c, NULL), "full at %lu", (unsigned long)i);
		for (uintptr_t j = i; j < i + 4; j++) {
			cr_assert(rt_chan_try_recv(c, &v));
			cr_assert_eq((uintptr_t)v, j);
		}
		cr_assert_not(rt_chan_try_recv(c, &v));
	}
}

Test(chan, a_side_one_thread_uses_alone_is_leased_to_it)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(4)];

	need_membarrier();
	cr_assert_eq(rt_chan_init(&c, slots, 4), 0);
	cr_expect_eq(rt__chan_lessee(&c, false), 0);
	laps(&c, 0, 400);
	cr_expect_neq(rt__chan_lessee(&c, false), 0, "the send side is leased after a streak");
	cr_expect_neq(rt__chan_lessee(&c, true), 0, "so is the receive side");
	cr_expect_eq(rt__chan_lessee(&c, false), rt__chan_lessee(&c, true), "to one thread");
	laps(&c, 400, 800); /* and it goes on working leased */
	cr_expect_eq(rt_chan_len(&c), 0);
}

struct lease_job {
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(1024)];
	uint32_t token; /* the helper's, once its sends have leased the side to it */
};

static void *lease_send_thread(void *arg)
{
	struct lease_job *j = arg;

	for (uintptr_t i = 200; i < 400; i++)
		CHECK(rt_chan_send(&j->c, (void *)i) == 0);
	j->token = rt__chan_lessee(&j->c, false);
	return NULL;
}

/* A second thread takes the side over: the lease is revoked (the helper's first send
 * would otherwise wait forever), every item arrives once and in order, and the side
 * ends up leased to the helper. */
Test(chan, another_thread_revokes_a_lease)
{
	struct lease_job *j = calloc(1, sizeof(*j));
	pthread_t t;
	uint32_t mine;
	void *v;

	need_membarrier();
	failures = 0;
	cr_assert_eq(rt_chan_init(&j->c, j->slots, 1024), 0);
	for (uintptr_t i = 0; i < 200; i++)
		cr_assert_eq(rt_chan_send(&j->c, (void *)i), 0);
	mine = rt__chan_lessee(&j->c, false);
	cr_assert_neq(mine, 0);
	cr_assert_eq(pthread_create(&t, NULL, lease_send_thread, j), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_expect_eq(failures, 0);
	cr_expect_neq(j->token, 0, "the helper's streak leased the side to it");
	cr_expect_neq(j->token, mine, "after revoking ours");
	for (uintptr_t i = 0; i < 400; i++) {
		cr_assert_eq(rt_chan_recv(&j->c, &v), 0);
		cr_assert_eq((uintptr_t)v, i);
	}
	cr_expect_eq(rt_chan_len(&j->c), 0);
	free(j);
}

/* Two threads that take turns on the receive side, `turns` bursts of `burst` items, then
 * the test's thread takes `tail` more alone. Each thread records whether the side was
 * leased at the end of its burst. */
#define TURNS_MAX 20

struct turn_job {
	struct rt_chan c;
	uint32_t turns, burst, tail;
	uint32_t turn;  /* whose burst it is: turn % 2 */
	uintptr_t next; /* the item the next receive must return */
	uint32_t leased_at_end[TURNS_MAX];
	void *slots[];
};

struct turn_arg {
	struct turn_job *j;
	uint32_t me;
};

static void *turn_thread(void *arg)
{
	struct turn_arg *a = arg;
	struct turn_job *j = a->j;
	void *v;

	for (uint32_t t = a->me; t < j->turns; t += 2) {
		/* acquire: the other thread's receives and its store of next come first */
		while (__atomic_load_n(&j->turn, __ATOMIC_ACQUIRE) != t)
			sched_yield();
		for (uint32_t i = 0; i < j->burst; i++) {
			CHECK(rt_chan_recv(&j->c, &v) == 0);
			CHECK((uintptr_t)v == j->next);
			j->next++;
		}
		j->leased_at_end[t] = rt__chan_lessee(&j->c, true);
		__atomic_store_n(&j->turn, t + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static struct turn_job *take_turns(uint32_t turns, uint32_t burst, uint32_t tail)
{
	uint32_t items = turns * burst + tail, cap = 2;
	struct turn_job *j;
	struct turn_arg args[2];
	pthread_t t[2];
	void *v;

	while (cap < items)
		cap *= 2;
	/* aligned_alloc: a size that is a multiple of the alignment */
	j = aligned_alloc(64, (sizeof(*j) + RT_CHAN_SLOTS(cap) * sizeof(void *) + 63) & ~(size_t)63);
	cr_assert_not_null(j);
	*j = (struct turn_job){ .turns = turns, .burst = burst, .tail = tail };
	failures = 0;
	cr_assert_eq(rt_chan_init(&j->c, j->slots, cap), 0);
	for (uintptr_t i = 0; i < items; i++)
		cr_assert_eq(rt_chan_send(&j->c, (void *)i), 0);
	for (uint32_t k = 0; k < 2; k++) {
		args[k] = (struct turn_arg){ j, k };
		cr_assert_eq(pthread_create(&t[k], NULL, turn_thread, &args[k]), 0);
	}
	for (uint32_t k = 0; k < 2; k++)
		cr_assert_eq(pthread_join(t[k], NULL), 0);
	cr_expect_eq(failures, 0, "every item once, in order");
	cr_expect_neq(j->leased_at_end[0], 0, "the first turn leases the side");
	for (uintptr_t i = j->next; i < items; i++) {
		cr_assert_eq(rt_chan_recv(&j->c, &v), 0);
		cr_assert_eq((uintptr_t)v, i);
	}
	return j;
}

/* Bursts of 200, over the streak of 64: without a back-off every turn leased the side
 * and the next revoked it (a membarrier each) for 136 claims. Each revocation of a lease
 * that short (under 512) doubles the streak the side needs, so the bursts lease it at
 * 64 and 128, never at 256: it stays on CAS. A thread that then takes it alone for 300
 * claims gets the lease again. */
Test(chan, a_side_taken_by_turns_in_short_bursts_stops_being_leased)
{
	struct turn_job *j;

	need_membarrier();
	j = take_turns(20, 200, 300);
	cr_expect_eq(rt__chan_backoff(&j->c, true), 2, "twice 136 claims leased");
	cr_expect_neq(j->leased_at_end[1], 0, "the second turn's streak of 128 leased it");
	for (uint32_t k = 2; k < j->turns; k++)
		cr_expect_eq(j->leased_at_end[k], 0, "turn %u leased the side again", k);
	cr_expect_neq(rt__chan_lessee(&j->c, true), 0, "used alone for 300 claims, it is leased");
	free(j);
}

/* Bursts of 6,000: each lease carries 5,936 claims, over the 512 that pay for its
 * revocation, so no turn backs the side off and every turn leases it. */
Test(chan, a_side_taken_by_turns_in_long_bursts_keeps_its_leases)
{
	struct turn_job *j;

	need_membarrier();
	j = take_turns(6, 6000, 0);
	cr_expect_eq(rt__chan_backoff(&j->c, true), 0);
	for (uint32_t k = 0; k < j->turns; k++)
		cr_expect_neq(j->leased_at_end[k], 0, "turn %u did not lease the side", k);
	free(j);
}

/* Closing a leased channel ends the lease and keeps the closed bit: a lessee's next
 * send fails, and receivers drain what was sent before the close. */
Test(chan, close_ends_a_lease)
{
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(256)], *v;

	need_membarrier();
	cr_assert_eq(rt_chan_init(&c, slots, 256), 0);
	for (uintptr_t i = 0; i < 200; i++)
		cr_assert_eq(rt_chan_send(&c, (void *)i), 0);
	cr_assert_neq(rt__chan_lessee(&c, false), 0);
	rt_chan_close(&c);
	cr_expect_eq(rt__chan_lessee(&c, false), 0);
	cr_expect_eq(rt_chan_send(&c, (void *)200), -EPIPE);
	cr_expect_not(rt_chan_try_send(&c, (void *)200));
	for (uintptr_t i = 0; i < 200; i++) {
		cr_assert_eq(rt_chan_recv(&c, &v), 0);
		cr_assert_eq((uintptr_t)v, i);
	}
	cr_expect_eq(rt_chan_recv(&c, &v), -EPIPE);
}

/* ---- blocking: tasks and threads on both sides --------------------------------------------- */

#define PINGS RT_TEST_N(10000)

struct pipe_job {
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(2)];
	uint64_t sum; /* the receiver's */
	uint64_t n;
};

static struct pipe_job *pipe_arg;

static void pipe_send_all(void)
{
	for (uint64_t i = 1; i <= pipe_arg->n; i++) {
		/* pause now and then, long enough for the receiver to park on the empty ring */
		if (i % 211 == 0)
			rt_sleep_ns(20000);
		CHECK(rt_chan_send(&pipe_arg->c, (void *)(uintptr_t)i) == 0);
	}
	rt_chan_close(&pipe_arg->c);
}

static void pipe_recv_all(void)
{
	uint64_t expect = 1;
	void *v;
	int err;

	while (!(err = rt_chan_recv(&pipe_arg->c, &v))) {
		CHECK((uint64_t)(uintptr_t)v == expect);
		/* and here for the sender to park on the full one */
		if (expect % 97 == 0)
			rt_sleep_ns(20000);
		expect++;
		pipe_arg->sum += (uintptr_t)v;
	}
	CHECK(err == -EPIPE);
}

static uint64_t pipe_send_task(void *arg)
{
	pipe_send_all();
	return 0;
}

static uint64_t pipe_recv_task(void *arg)
{
	pipe_recv_all();
	return 0;
}

static void *pipe_send_thread(void *arg)
{
	pipe_send_all();
	return NULL;
}

static void *pipe_recv_thread(void *arg)
{
	pipe_recv_all();
	return NULL;
}

/* A capacity-2 channel forces both sides to wait over and over. */
static void pipe_run(struct rt_sched *s, const char *what, bool send_task, bool recv_task)
{
	struct pipe_job j = { .n = PINGS };
	struct rt_task *st = NULL, *rtk = NULL;
	pthread_t sth, rth;

	cr_assert_eq(rt_chan_init(&j.c, j.slots, 2), 0);
	pipe_arg = &j;
	failures = 0;
	if (recv_task)
		cr_assert_not_null(rtk = rt_submit(s, pipe_recv_task, NULL));
	else
		cr_assert_eq(pthread_create(&rth, NULL, pipe_recv_thread, NULL), 0);
	if (send_task)
		cr_assert_not_null(st = rt_submit(s, pipe_send_task, NULL));
	else
		cr_assert_eq(pthread_create(&sth, NULL, pipe_send_thread, NULL), 0);
	if (send_task)
		rt_join(st);
	else
		pthread_join(sth, NULL);
	if (recv_task)
		rt_join(rtk);
	else
		pthread_join(rth, NULL);
	cr_expect_eq(failures, 0, "%s: %u failed checks", what, failures);
	cr_expect_eq(j.sum, (uint64_t)PINGS * (PINGS + 1) / 2, "%s", what);
	cr_expect_eq(j.c.recv_waiting + j.c.send_waiting, 0, "%s: waiters left", what);
}

static void pipe_task_task(struct rt_sched *s, const char *what)
{
	pipe_run(s, what, true, true);
}

static void pipe_thread_task(struct rt_sched *s, const char *what)
{
	pipe_run(s, what, false, true);
}

static void pipe_task_thread(struct rt_sched *s, const char *what)
{
	pipe_run(s, what, true, false);
}

Test(chan, task_to_task_through_a_tiny_channel, .timeout = 120)
{
	rt_test_each_config(pipe_task_task);
}

Test(chan, thread_to_task_through_a_tiny_channel, .timeout = 120)
{
	rt_test_each_config(pipe_thread_task);
}

Test(chan, task_to_thread_through_a_tiny_channel, .timeout = 120)
{
	rt_test_each_config(pipe_task_thread);
}

Test(chan, thread_to_thread_without_a_scheduler, .timeout = 60)
{
	struct pipe_job j = { .n = PINGS };
	pthread_t sth, rth;

	cr_assert_eq(rt_chan_init(&j.c, j.slots, 2), 0);
	pipe_arg = &j;
	failures = 0;
	pthread_create(&rth, NULL, pipe_recv_thread, NULL);
	pthread_create(&sth, NULL, pipe_send_thread, NULL);
	pthread_join(sth, NULL);
	pthread_join(rth, NULL);
	cr_expect_eq(failures, 0);
	cr_expect_eq(j.sum, (uint64_t)PINGS * (PINGS + 1) / 2);
}

/* A receiver parked on an empty channel (a task and a thread), and a sender parked on a
 * full one, are all woken by the close. */
struct close_job {
	struct rt_chan c;
	void *slots[RT_CHAN_SLOTS(2)];
	struct rt_chan full;
	void *full_slots[RT_CHAN_SLOTS(2)];
};

static struct close_job *close_arg;

static uint64_t recv_until_closed(void *arg)
{
	void *v;

	return (uint64_t)-rt_chan_recv(&close_arg->c, &v);
}

static uint64_t send_to_full(void *arg)
{
	return (uint64_t)-rt_chan_send(&close_arg->full, arg);
}

static void *recv_until_closed_thread(void *arg)
{
	*(uint64_t *)arg = recv_until_closed(NULL);
	return NULL;
}

static void close_run(struct rt_sched *s, const char *what)
{
	struct close_job j;
	struct rt_task *r, *w;
	uint64_t thread_result = 0;
	pthread_t th;

	cr_assert_eq(rt_chan_init(&j.c, j.slots, 2), 0);
	cr_assert_eq(rt_chan_init(&j.full, j.full_slots, 2), 0);
	cr_assert(rt_chan_try_send(&j.full, (void *)1));
	cr_assert(rt_chan_try_send(&j.full, (void *)2));
	close_arg = &j;
	cr_assert_not_null(r = rt_submit(s, recv_until_closed, NULL));
	cr_assert_not_null(w = rt_submit(s, send_to_full, (void *)3));
	pthread_create(&th, NULL, recv_until_closed_thread, &thread_result);
	rt_test_await_u32(&j.c.recv_waiting, 2, what);
	rt_test_await_u32(&j.full.send_waiting, 1, what);
	rt_chan_close(&j.c);
	rt_chan_close(&j.full);
	cr_expect_eq(rt_join(r), EPIPE, "%s: parked receiver", what);
	cr_expect_eq(rt_join(w), EPIPE, "%s: parked sender", what);
	pthread_join(th, NULL);
	cr_expect_eq(thread_result, EPIPE, "%s: parked thread", what);
	cr_expect_eq(rt_chan_len(&j.full), 2, "%s: the refused send left no item", what);
}

Test(chan, close_wakes_parked_senders_and_receivers, .timeout = 120)
{
	rt_test_each_config(close_run);
}

/* ---- producers racing consumers --------------------------------------------------------------
 * Items are (producer << 32 | seq + 1). Every consumer checks that each producer's items
 * reach it in increasing order, and marks each item in a table: it must be seen once. */

#define MP_PRODUCERS   6
#define MP_CONSUMERS   4
#define MP_THREADS     2 /* of the producers, and of the consumers, these are threads */
#define MP_PER_PRODUCER 6000

struct mpmc {
	struct rt_chan c;
	void **slots;
	struct rt_latch start;
	uint32_t producers_left; /* atomic: the last producer closes the channel */
	uint8_t seen[MP_PRODUCERS][MP_PER_PRODUCER];
	uint32_t dup;          /* atomic */
	uint32_t disorder;     /* atomic */
	uint32_t received;     /* atomic */
};

static struct mpmc *mp_arg;

static void mp_produce(unsigned id)
{
	struct mpmc *m = mp_arg;

	rt_latch_wait(&m->start);
	for (uint64_t i = 0; i < MP_PER_PRODUCER; i++) {
		void *v = (void *)(uintptr_t)(((uint64_t)id << 32) | (i + 1));

		/* now and then the non-waiting path, which must wake sleepers too */
		if (i % 5 == 0 && rt_chan_try_send(&m->c, v))
			continue;
		CHECK(rt_chan_send(&m->c, v) == 0);
	}
	if (__atomic_sub_fetch(&m->producers_left, 1, __ATOMIC_ACQ_REL) == 0)
		rt_chan_close(&m->c);
}

static void mp_consume(void)
{
	struct mpmc *m = mp_arg;
	uint64_t last[MP_PRODUCERS] = { 0 };
	void *v;

	rt_latch_wait(&m->start);
	for (;;) {
		uint64_t item, p, seq;

		if (!rt_chan_try_recv(&m->c, &v) && rt_chan_recv(&m->c, &v))
			break;
		item = (uintptr_t)v;
		p = item >> 32;
		seq = item & 0xffffffffu;
		if (p >= MP_PRODUCERS || seq < 1 || seq > MP_PER_PRODUCER) {
			CHECK(false); /* an item nobody sent */
			continue;
		}
		if (seq <= last[p])
			__atomic_fetch_add(&m->disorder, 1, __ATOMIC_RELAXED);
		last[p] = seq;
		if (__atomic_fetch_add(&m->seen[p][seq - 1], 1, __ATOMIC_RELAXED))
			__atomic_fetch_add(&m->dup, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&m->received, 1, __ATOMIC_RELAXED);
	}
}

static uint64_t mp_producer_task(void *arg)
{
	mp_produce((unsigned)(uintptr_t)arg);
	return 0;
}

static uint64_t mp_consumer_task(void *arg)
{
	mp_consume();
	return 0;
}

static void *mp_producer_thread(void *arg)
{
	rt_test_pin((unsigned)(uintptr_t)arg);
	mp_produce((unsigned)(uintptr_t)arg);
	return NULL;
}

static void *mp_consumer_thread(void *arg)
{
	rt_test_pin((unsigned)(uintptr_t)arg);
	mp_consume();
	return NULL;
}

static void mpmc_run(struct rt_sched *s, const char *what, uint32_t cap)
{
	/* struct rt_chan is cache-line aligned: calloc's 16 bytes would not do */
	struct mpmc *m = aligned_alloc(64, (sizeof(*m) + 63) & ~(size_t)63);
	struct rt_task *pt[MP_PRODUCERS] = { 0 }, *ct[MP_CONSUMERS] = { 0 };
	pthread_t pth[MP_PRODUCERS], cth[MP_CONSUMERS];

	cr_assert_not_null(m);
	memset(m, 0, sizeof(*m));
	cr_assert_not_null(m->slots = calloc(RT_CHAN_SLOTS(cap), sizeof(void *)));
	cr_assert_eq(rt_chan_init(&m->c, m->slots, cap), 0);
	rt_latch_init(&m->start, 1);
	m->producers_left = MP_PRODUCERS;
	mp_arg = m;
	failures = 0;
	for (uintptr_t i = 0; i < MP_CONSUMERS; i++) {
		if (i < MP_THREADS)
			cr_assert_eq(pthread_create(&cth[i], NULL, mp_consumer_thread, (void *)i), 0);
		else
			cr_assert_not_null(ct[i] = rt_submit(s, mp_consumer_task, NULL));
	}
	for (uintptr_t i = 0; i < MP_PRODUCERS; i++) {
		if (i < MP_THREADS)
			cr_assert_eq(pthread_create(&pth[i], NULL, mp_producer_thread, (void *)i), 0);
		else
			cr_assert_not_null(pt[i] = rt_submit(s, mp_producer_task, (void *)i));
	}
	rt_latch_count_down(&m->start);
	for (unsigned i = 0; i < MP_PRODUCERS; i++) {
		if (i < MP_THREADS)
			pthread_join(pth[i], NULL);
		else
			rt_join(pt[i]);
	}
	for (unsigned i = 0; i < MP_CONSUMERS; i++) {
		if (i < MP_THREADS)
			pthread_join(cth[i], NULL);
		else
			rt_join(ct[i]);
	}
	cr_expect_eq(failures, 0, "%s cap %u: %u failed checks", what, cap, failures);
	cr_expect_eq(m->received, MP_PRODUCERS * MP_PER_PRODUCER, "%s cap %u: received", what,
		     cap);
	cr_expect_eq(m->dup, 0, "%s cap %u: duplicates", what, cap);
	cr_expect_eq(m->disorder, 0, "%s cap %u: a producer's items out of order", what, cap);
	for (unsigned p = 0; p < MP_PRODUCERS; p++)
		for (unsigned i = 0; i < MP_PER_PRODUCER; i++)
			cr_assert_eq(m->seen[p][i], 1, "%s cap %u: item %u of producer %u seen %u times",
				     what, cap, i, p, m->seen[p][i]);
	cr_expect_eq(rt_chan_len(&m->c), 0, "%s", what);
	free(m->slots);
	free(m);
}

static void mpmc_small(struct rt_sched *s, const char *what)
{
	mpmc_run(s, what, 4);
}

static void mpmc_large(struct rt_sched *s, const char *what)
{
	mpmc_run(s, what, 1024);
}

Test(chan, producers_and_consumers_small_ring_every_item_once_in_order, .timeout = 180)
{
	rt_test_each_config(mpmc_small);
}

Test(chan, producers_and_consumers_large_ring_every_item_once_in_order, .timeout = 180)
{
	rt_test_each_config(mpmc_large);
}
