/*
 * Fibers (runtime/fiber.c and the switch, switch_x86_64.S) through the public API: a
 * switch keeps every callee-saved register across yields, the frame-pointer chain ends
 * at the fiber's entry, a stack overflow hits the guard page, and dedicated stacks'
 * guard pages take no mapping each.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "tests/runtime/rt_test.h"

/* Many live values across yields: the switch must keep every callee-saved register,
 * and the task may resume on another worker. */
static uint64_t yield_keeps_registers(void *arg)
{
	uint64_t seed = (uint64_t)(uintptr_t)arg;
	volatile uint64_t sink;
	uint64_t a = seed, b = seed * 3, c = seed * 5, d = seed * 7, e = seed * 11, f = seed * 13;

	for (int i = 0; i < 2000; i++) {
		a += b;
		b ^= c;
		c += d;
		d ^= e;
		e += f;
		f ^= a;
		rt_yield();
	}
	sink = a;
	(void)sink;
	return a ^ b ^ c ^ d ^ e ^ f;
}

static uint64_t reference_mix(uint64_t seed)
{
	uint64_t a = seed, b = seed * 3, c = seed * 5, d = seed * 7, e = seed * 11, f = seed * 13;

	for (int i = 0; i < 2000; i++) {
		a += b;
		b ^= c;
		c += d;
		d ^= e;
		e += f;
		f ^= a;
	}
	return a ^ b ^ c ^ d ^ e ^ f;
}

Test(fiber, switch_keeps_registers_across_yields, .timeout = 60)
{
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct rt_task *t[8];

	for (uintptr_t i = 0; i < 8; i++)
		t[i] = rt_submit(s, yield_keeps_registers, (void *)(i + 1));
	for (uintptr_t i = 0; i < 8; i++)
		cr_expect_eq(rt_join(t[i]), reference_mix(i + 1));
	rt_sched_free(s);
}

/* Walk the frame-pointer chain from inside a task: it must end (a zero frame pointer)
 * within a few frames, at the fiber's entry, not wander into the worker's stack. */
extern void rt__fiber_start(void);

__attribute__((noinline)) static uint64_t walk_frames(void)
{
	void **fp = __builtin_frame_address(0);
	uint64_t frames = 0;
	void *last_ret = NULL;

	while (fp && frames < 64) {
		last_ret = fp[1];
		fp = (void **)fp[0];
		frames++;
	}
	/* the last return address lies in rt__fiber_start's few instructions */
	if ((char *)last_ret < (char *)rt__fiber_start || (char *)last_ret > (char *)rt__fiber_start + 32)
		return 1000 + frames;
	return frames;
}

static uint64_t frame_task(void *arg)
{
	return walk_frames();
}

Test(fiber, frame_pointer_chain_ends_at_the_fiber_entry)
{
	struct rt_sched *s = rt_test_start(NULL, 1);
	uint64_t frames = rt_join(rt_submit(s, frame_task, NULL));

	/* walk_frames <- (frame_task, unless it tail-calls) <- rt__task_main, then the
	 * fiber's zero frame */
	cr_expect_lt(frames, 1000, "chain ended outside rt__fiber_start after %lu frames",
		     (unsigned long)(frames - 1000));
	cr_expect(frames == 2 || frames == 3, "%lu frames", (unsigned long)frames);
	rt_sched_free(s);
}

/* Bounded only by the stack: 1 GiB of frames is far beyond any task stack. */
__attribute__((noinline)) static uint64_t recurse_deep(uint64_t depth)
{
	volatile char pad[512];

	pad[0] = (char)depth;
	if (depth > (1u << 21))
		return 0;
	return recurse_deep(depth + 1) + pad[0];
}

static uint64_t overflow_task(void *arg)
{
	return recurse_deep(0);
}

#if defined(RT_SANITIZE_ADDRESS)
/* AddressSanitizer takes the SIGSEGV itself, reports the stack overflow (on the fiber's
 * stack, which the switch annotations told it about) and exits 1 */
#define GUARD_PAGE_HIT .exit_code = 1
#else
#define GUARD_PAGE_HIT .signal = SIGSEGV
#endif
Test(fiber, stack_overflow_hits_the_guard_page, GUARD_PAGE_HIT, .timeout = 30)
{
	struct rt_sched *s = rt_test_start(NULL, 1);

	rt_join(rt_submit(s, overflow_task, NULL));
}

/* Guard pages live in the page tables (MADV_GUARD_INSTALL), not in mappings of their
 * own: 40,000 waiting tasks with dedicated stacks, more than vm.max_map_count's
 * default of 65,530 would allow at two mappings a task, take a handful of mappings. */
static struct rt_latch many_gate;

static uint64_t wait_at_gate(void *arg)
{
	rt_latch_wait(&many_gate);
	return 1;
}

static long maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	long n = 0;

	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

Test(fiber, dedicated_stacks_do_not_take_a_mapping_each, .timeout = 120,
     .disabled = RT_UNDER_TSAN)
{
	const long n = RT_TEST_N(40000);
	struct rt_sched *s = rt_test_start(NULL, 2);
	struct rt_task **t = calloc((size_t)n, sizeof(*t));
	long before = maps_count(), during;
	uint64_t sum = 0;

	cr_assert_not_null(t);
	rt_latch_init(&many_gate, 1);
	for (long i = 0; i < n; i++) {
		t[i] = rt_submit(s, wait_at_gate, NULL);
		cr_assert_not_null(t[i], "task %ld: %s", i, strerror(errno));
	}
	during = maps_count();
	rt_latch_count_down(&many_gate);
	for (long i = 0; i < n; i++)
		sum += rt_join(t[i]);
	cr_expect_eq(sum, (uint64_t)n);
	cr_expect_lt(during - before, 1000, "%ld tasks took %ld mappings", n, during - before);
	free(t);
	rt_sched_free(s);
}

