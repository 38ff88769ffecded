/*
 * Compact stacks: a parked task keeps only the bytes its stack used. Tasks still keep
 * their registers and frames across switches, stay on their home worker once started
 * (their frames live at its stack's addresses), lose or double nothing, and 20,000
 * parked tasks cost a fraction of what dedicated stacks cost.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

static struct rt_sched *start(enum rt_stack_mode mode, unsigned workers)
{
	struct rt_config c;
	struct rt_sched *s;

	rt_config_default(&c);
	c.stack_mode = mode;
	c.workers = workers;
	s = rt_sched_new(&c);
	cr_assert_not_null(s, "%s", strerror(errno));
	return s;
}

/* Many live values and a check of the worker across yields. */
static uint64_t yields_at_home(void *arg)
{
	uint64_t a = (uintptr_t)arg, b = a * 3, c = a * 5, d = a * 7;
	volatile char pad[700]; /* a stack worth copying */
	unsigned home;

	memset((char *)pad, (int)a, sizeof(pad));
	rt_yield();
	home = rt_worker_index();
	for (int i = 0; i < 500; i++) {
		a += b;
		b ^= c;
		c += d;
		d ^= a;
		rt_yield();
		if (rt_worker_index() != home)
			return UINT64_MAX; /* moved off its stack's worker */
	}
	for (size_t i = 0; i < sizeof(pad); i++)
		if (pad[i] != (char)(uintptr_t)arg)
			return UINT64_MAX - 1; /* its stack came back wrong */
	return a ^ b ^ c ^ d;
}

static uint64_t reference(uint64_t seed)
{
	uint64_t a = seed, b = a * 3, c = a * 5, d = a * 7;

	for (int i = 0; i < 500; i++) {
		a += b;
		b ^= c;
		c += d;
		d ^= a;
	}
	return a ^ b ^ c ^ d;
}

Test(compact, tasks_keep_their_stacks_and_stay_home, .timeout = 60)
{
	struct rt_sched *s = start(RT_STACK_COMPACT, 2);
	struct rt_task *t[16];

	for (uintptr_t i = 0; i < 16; i++)
		t[i] = rt_submit(s, yields_at_home, (void *)(i + 1));
	for (uintptr_t i = 0; i < 16; i++)
		cr_expect_eq(rt_join(t[i]), reference(i + 1), "task %lu", (unsigned long)i);
	rt_sched_free(s);
}

static uint8_t seen[1 << 12];

static uint64_t node(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	struct rt_task *l, *r;

	__atomic_fetch_add(&seen[id], 1, __ATOMIC_RELAXED);
	if (id >= (1u << 11))
		return 1;
	l = rt_spawn(node, (void *)(2 * id));
	r = rt_spawn(node, (void *)(2 * id + 1));
	return rt_join(l) + rt_join(r) + 1;
}

Test(compact, a_task_tree_runs_every_task_once_on_2_and_8_workers, .timeout = 60)
{
	unsigned counts[] = { 2, 8 };

	for (int k = 0; k < 2; k++) {
		struct rt_sched *s = start(RT_STACK_COMPACT, counts[k]);

		memset(seen, 0, sizeof(seen));
		cr_assert_eq(rt_join(rt_submit(s, node, (void *)1)), (1u << 12) - 1);
		for (unsigned i = 1; i < (1u << 12); i++)
			cr_assert_eq(seen[i], 1, "task %u ran %u times", i, seen[i]);
		rt_sched_free(s);
	}
}

/* ---- memory ------------------------------------------------------------------------ */

#define PARKED 20000

static struct rt_latch gate;

static uint64_t park_on_gate(void *arg)
{
	rt_latch_wait(&gate);
	return 1;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* RSS growth, in bytes per task, of PARKED tasks all waiting on one latch. */
static double parked_cost(enum rt_stack_mode mode)
{
	struct rt_sched *s = start(mode, 2);
	struct rt_task **t = calloc(PARKED, sizeof(*t));
	long before, after;
	uint64_t sum = 0;

	cr_assert_not_null(t);
	rt_latch_init(&gate, 1);
	before = rss_kib();
	for (int i = 0; i < PARKED; i++)
		t[i] = rt_submit(s, park_on_gate, NULL);
	/* wait until every task has run up to the latch */
	{
		struct rt_worker_stats st;

		do {
			struct timespec ts = { 0, 10000000 };

			nanosleep(&ts, NULL);
			rt_sched_stats_total(s, &st);
		} while (st.tasks_run < PARKED);
	}
	after = rss_kib();
	rt_latch_count_down(&gate);
	for (int i = 0; i < PARKED; i++)
		sum += rt_join(t[i]);
	cr_expect_eq(sum, PARKED);
	free(t);
	rt_sched_free(s);
	return (double)(after - before) * 1024.0 / PARKED;
}

Test(compact, parked_tasks_cost_a_fraction_of_dedicated_stacks, .timeout = 120,
     .disabled = RT_UNDER_TSAN)
{
	double dedicated = parked_cost(RT_STACK_DEDICATED);
	double compact = parked_cost(RT_STACK_COMPACT);

	cr_log_info("bytes per parked task: dedicated %.0f, compact %.0f", dedicated, compact);
	/* a dedicated stack holds at least one touched 4 KiB page per task */
	cr_expect_gt(dedicated, 4000);
	cr_expect_lt(compact, dedicated / 4, "compact %.0f vs dedicated %.0f bytes per task",
		     compact, dedicated);
}

/* ---- the primitives, whose wait records must not live on a copied-away stack ---- */

static struct rt_sem one_permit;
static uint64_t inside, max_inside, total;

static uint64_t critical(void *arg)
{
	for (int i = 0; i < 200; i++) {
		rt_sem_acquire(&one_permit);
		uint64_t now = ++inside; /* under the permit: plain accesses are fine */

		if (now > max_inside)
			max_inside = now;
		total++;
		rt_sleep_ns(i % 50 ? 0 : 100000); /* sometimes park on a timer, holding it */
		inside--;
		rt_sem_release(&one_permit);
	}
	return 0;
}

Test(compact, semaphore_and_timers_keep_mutual_exclusion, .timeout = 60)
{
	struct rt_sched *s = start(RT_STACK_COMPACT, 2);
	struct rt_task *t[16];

	rt_sem_init(&one_permit, 1);
	inside = max_inside = total = 0;
	for (int i = 0; i < 16; i++)
		t[i] = rt_submit(s, critical, NULL);
	for (int i = 0; i < 16; i++)
		rt_join(t[i]);
	cr_expect_eq(max_inside, 1);
	cr_expect_eq(total, 16 * 200);
	cr_expect_eq(rt_sem_available(&one_permit), 1);
	rt_sched_free(s);
}

#define ITEMS 20000
static struct rt_chan ch;
static void *ch_slots[RT_CHAN_SLOTS(16)];

static uint64_t producer(void *arg)
{
	for (uintptr_t i = 1; i <= ITEMS; i++)
		rt_chan_send(&ch, (void *)i);
	return 0;
}

static uint64_t consumer(void *arg)
{
	uint64_t sum = 0, last = 0;
	void *v;

	for (int i = 0; i < ITEMS; i++) {
		rt_chan_recv(&ch, &v);
		if ((uintptr_t)v <= last)
			return 0; /* out of order */
		last = (uintptr_t)v;
		sum += last;
	}
	return sum;
}

Test(compact, a_tiny_channel_between_two_tasks, .timeout = 60)
{
	struct rt_sched *s = start(RT_STACK_COMPACT, 2);
	struct rt_task *p, *c;

	cr_assert_eq(rt_chan_init(&ch, ch_slots, 16), 0);
	c = rt_submit(s, consumer, NULL);
	p = rt_submit(s, producer, NULL);
	rt_join(p);
	cr_expect_eq(rt_join(c), (uint64_t)ITEMS * (ITEMS + 1) / 2);
	rt_sched_free(s);
}
