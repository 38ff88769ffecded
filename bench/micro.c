/*
 * Micro-benchmarks for `make bench`: the runtime's task switch and semaphore, called
 * through the API from inside a task, beside their floors written by hand or taken
 * from glibc. Every job counts inner operations (round trips, acquire+release pairs),
 * BATCH per op; a sample is inner operations per second (bench/peer.h).
 *
 *   switch-asm       two contexts ping-pong through a minimal hand-written x86-64 switch
 *                    (push the six callee-saved registers, swap %rsp, pop, ret); a round
 *                    trip is A -> B -> A: two switches
 *   switch-rt-yield  one task alone on a one-worker scheduler calls rt_yield(); a round
 *                    trip is task -> worker loop (requeue on its own queue, pop it
 *                    again) -> task: two switches, the same count as switch-asm
 *   switch-rt-pingpong  two tasks on that one worker alternate by rt_yield(); a round
 *                    trip is A -> B -> A: two yields, four switches (every switch goes
 *                    through the worker's own context)
 *   permit-rt        rt_sem_acquire + rt_sem_release, uncontended, in a task
 *   permit-glibc     sem_wait + sem_post, uncontended, on a plain thread
 *
 * The runtime jobs run a whole iteration inside one task of a `ce` scheduler with one
 * worker (so that no second worker is woken to steal the yielding task), metrics on,
 * as the runtime ships.
 */
#include <errno.h>
#include <semaphore.h>
#include <stdint.h>

#include "bench/peer.h"
#include "runtime/rt.h"

#define BATCH 1000

/* ---- a minimal context switch, written here so that no runtime code is involved ---- */

void bench_switch(void **save_sp, void *load_sp);

__asm__(".text\n"
	".p2align 4\n"
	".type bench_switch, @function\n"
	"bench_switch:\n"
	"	pushq %rbp\n"
	"	pushq %rbx\n"
	"	pushq %r12\n"
	"	pushq %r13\n"
	"	pushq %r14\n"
	"	pushq %r15\n"
	"	movq %rsp, (%rdi)\n"
	"	movq %rsi, %rsp\n"
	"	popq %r15\n"
	"	popq %r14\n"
	"	popq %r13\n"
	"	popq %r12\n"
	"	popq %rbx\n"
	"	popq %rbp\n"
	"	ret\n"
	".size bench_switch, .-bench_switch\n");

/* The two contexts of switch-asm: process-wide because context B's entry takes no
 * argument, and there is only ever one pair. */
static struct {
	void *a_sp, *b_sp;
	uint64_t b_count;
	_Alignas(16) uint64_t b_stack[16384 / 8];
} pp;

static __attribute__((noreturn)) void pp_b_main(void)
{
	for (;;) {
		pp.b_count++;
		bench_switch(&pp.b_sp, pp.a_sp);
	}
}

static int pp_setup(void)
{
	/* B's first frame: what bench_switch pops, then pp_b_main as the return address
	 * and a zero fake return address above it, so that %rsp is 8 mod 16 at B's entry
	 * as after a call */
	uint64_t *top = &pp.b_stack[sizeof(pp.b_stack) / 8] - 2;

	top[1] = 0;
	top[0] = (uint64_t)(uintptr_t)pp_b_main;
	for (int i = 1; i <= 6; i++)
		top[-i] = 0; /* %rbp (0 ends frame walks), %rbx, %r12..%r15 */
	pp.b_sp = &top[-6];
	return 0;
}

static uint64_t switch_asm(void)
{
	uint64_t before = pp.b_count;

	for (int i = 0; i < BATCH; i++)
		bench_switch(&pp.a_sp, pp.b_sp);
	return pp.b_count - before;
}

/* ---- the runtime ---------------------------------------------------------------------- */

static uint64_t switch_rt_yield(void)
{
	for (int i = 0; i < BATCH; i++)
		rt_yield();
	return BATCH;
}

static uint64_t yielder(void *arg)
{
	for (long i = 0; i < (long)(uintptr_t)arg; i++)
		rt_yield();
	return (uint64_t)(uintptr_t)arg;
}

static uint64_t switch_rt_pingpong(void)
{
	struct rt_task *b = rt_spawn(yielder, (void *)(uintptr_t)BATCH);

	if (!b)
		return 0;
	for (int i = 0; i < BATCH; i++)
		rt_yield();
	return rt_join(b);
}

/* One semaphore per program run, touched by one task at a time. */
static struct rt_sem permit;
static sem_t permit_glibc;

static int permit_rt_setup(void)
{
	return rt_sem_init(&permit, 1);
}

static uint64_t permit_rt(void)
{
	for (int i = 0; i < BATCH; i++) {
		rt_sem_acquire(&permit);
		rt_sem_release(&permit);
	}
	return rt_sem_available(&permit) == 1 ? BATCH : 0;
}

static int permit_glibc_setup(void)
{
	return sem_init(&permit_glibc, 0, 1) ? -errno : 0;
}

static uint64_t permit_glibc_op(void)
{
	int v;

	for (int i = 0; i < BATCH; i++) {
		sem_wait(&permit_glibc);
		sem_post(&permit_glibc);
	}
	return !sem_getvalue(&permit_glibc, &v) && v == 1 ? BATCH : 0;
}

enum { ON_THREAD, IN_TASK }; /* where a job's iterations run */

static const struct peer_job jobs[] = {
	{ "switch-asm", switch_asm, BATCH, BATCH, pp_setup, ON_THREAD },
	{ "switch-rt-yield", switch_rt_yield, BATCH, BATCH, NULL, IN_TASK },
	{ "switch-rt-pingpong", switch_rt_pingpong, BATCH, BATCH, NULL, IN_TASK },
	{ "permit-rt", permit_rt, BATCH, BATCH, permit_rt_setup, IN_TASK },
	{ "permit-glibc", permit_glibc_op, BATCH, BATCH, permit_glibc_setup, ON_THREAD },
};

/* ---- running an iteration inside a task ------------------------------------------------ */

struct in_task {
	const struct peer_job *job;
	double time_s, rate;
	int err;
};

static uint64_t iteration_task(void *arg)
{
	struct in_task *it = arg;

	it->err = peer_iterate(it->job, it->time_s, &it->rate);
	return 0;
}

/* The scheduler the runtime jobs share: made on first use, kept until exit. */
static struct rt_sched *sched;

static int iterate(const struct peer_job *job, double time_s, double *rate)
{
	struct in_task it = { job, time_s, 0, 0 };
	struct rt_config c;
	struct rt_task *t;

	if (job->tag != IN_TASK)
		return peer_iterate(job, time_s, rate);
	if (!sched) {
		rt_config_default(&c);
		c.workers = 1;
		sched = rt_sched_new(&c);
		if (!sched)
			return -errno;
	}
	t = rt_submit(sched, iteration_task, &it);
	if (!t)
		return -errno;
	rt_join(t);
	*rate = it.rate;
	return it.err;
}

int main(int argc, char **argv)
{
	return peer_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), iterate);
}
