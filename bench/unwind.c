/*
 * What one DWARF unwind of a sampled user stack costs (analysis/unwind.c). A thread takes
 * a sample of itself as the probe does, and each op unwinds that copy again; an op counts
 * only if it returns the whole stack (OUTERMOST, the same frame count as the first time).
 *   unwind-chain  7 frames: ours, the thread function, start_thread, clone3
 *   unwind-qsort  12 frames: a comparator, glibc's msort_with_tmp x5 and qsort_r (no
 *                 frame pointers), ours, the thread's root
 *   unwind-cold   an_unwind_new() + the qsort unwind + an_unwind_free(): a process's first
 *                 sample, CFI read anew. A sample is unwinds/s; 1e9 / it is ns per unwind.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench/peer.h"

#define STACK_COPY   (16u << 10) /* what the probe copies by default */
#define THREAD_STACK (256u << 10)
#define MAX_FRAMES   64

struct capture {
	pid_t tid;
	uint64_t regs[AN_UNWIND_NREGS];
	size_t stack_len;
	unsigned char stack[STACK_COPY];
};

/* The process-wide state of one run: peer.h's ops take no argument. */
static struct {
	struct capture chain, sort;
	unsigned chain_frames, sort_frames;
	struct an_unwind *u;
} bench;

static volatile int sink;

void bench_unwind_capture(struct capture *c, uintptr_t top);
void bench_unwind_c(struct capture *c, uintptr_t top);
void bench_unwind_b(struct capture *c, uintptr_t top);
void bench_unwind_a(struct capture *c, uintptr_t top);
void bench_unwind_sorter(struct capture *c, uintptr_t top);
int bench_unwind_compare(const void *pa, const void *pb);

/* As the probe records a sample: every general register, %rsp and a %rip here, then
 * the stack from that %rsp up to top, at most STACK_COPY bytes. */
__attribute__((noinline)) void bench_unwind_capture(struct capture *c, uintptr_t top)
{
	uint64_t *r = c->regs;

	__asm__ volatile("movq %%rax, 0(%0)\n\t"
			 "movq %%rdx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rbx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "movq %%r8, 64(%0)\n\t"
			 "movq %%r9, 72(%0)\n\t"
			 "movq %%r10, 80(%0)\n\t"
			 "movq %%r11, 88(%0)\n\t"
			 "movq %%r12, 96(%0)\n\t"
			 "movq %%r13, 104(%0)\n\t"
			 "movq %%r14, 112(%0)\n\t"
			 "movq %%r15, 120(%0)\n\t"
			 "1: leaq 1b(%%rip), %%rax\n\t"
			 "movq %%rax, 128(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	uintptr_t sp = (uintptr_t)r[7];

	c->tid = gettid();
	c->stack_len = top - sp < STACK_COPY ? top - sp : STACK_COPY;
	memcpy(c->stack, (const void *)sp, c->stack_len);
	sink += 1; /* after the copy: the call cannot become a tail jump */
}

__attribute__((noinline)) void bench_unwind_c(struct capture *c, uintptr_t top)
{
	bench_unwind_capture(c, top);
	sink += 2;
}

__attribute__((noinline)) void bench_unwind_b(struct capture *c, uintptr_t top)
{
	bench_unwind_c(c, top);
	sink += 3;
}

__attribute__((noinline)) void bench_unwind_a(struct capture *c, uintptr_t top)
{
	bench_unwind_b(c, top);
	sink += 4;
}

/* qsort() passes no context to its comparator: the capture goes through these. */
static struct capture *sort_capture;
static uintptr_t sort_top;

__attribute__((noinline)) int bench_unwind_compare(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;

	if (sort_capture) {
		bench_unwind_capture(sort_capture, sort_top);
		sort_capture = NULL;
	}
	return (a > b) - (a < b);
}

__attribute__((noinline)) void bench_unwind_sorter(struct capture *c, uintptr_t top)
{
	int v[32];

	for (int i = 0; i < 32; i++)
		v[i] = (i * 7919) % 32;
	sort_capture = c;
	sort_top = top;
	qsort(v, 32, sizeof(v[0]), bench_unwind_compare);
	sink += v[0];
}

struct job_arg {
	void (*fn)(struct capture *c, uintptr_t top);
	struct capture *c;
	uintptr_t top;
};

static void *capture_thread(void *arg)
{
	struct job_arg *j = arg;

	j->fn(j->c, j->top);
	return NULL;
}

/* Run fn on a thread whose stack is allocated here, so that the copy's end is known. */
static int capture_on_thread(void (*fn)(struct capture *, uintptr_t), struct capture *c)
{
	void *stack = mmap(NULL, THREAD_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	struct job_arg j = {.fn = fn, .c = c, .top = (uintptr_t)stack + THREAD_STACK};
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (stack == MAP_FAILED)
		return -errno;
	err = -pthread_attr_init(&attr);
	if (err)
		goto out_unmap;
	err = -pthread_attr_setstack(&attr, stack, THREAD_STACK);
	if (!err)
		err = -pthread_create(&t, &attr, capture_thread, &j);
	if (!err)
		err = -pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
out_unmap:
	munmap(stack, THREAD_STACK);
	return err;
}

static struct an_unwind_sample sample_of(const struct capture *c)
{
	return (struct an_unwind_sample){
	    .tid = c->tid,
	    .regs = c->regs,
	    .stack_addr = c->regs[7],
	    .stack = c->stack,
	    .stack_len = c->stack_len,
	};
}

/* The whole stack, once: how many frames every later unwind must return. */
static int first_unwind(const struct capture *c, unsigned *frames)
{
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind_result r;
	uint64_t ips[MAX_FRAMES];

	*frames = an_unwind_stack(bench.u, &s, ips, MAX_FRAMES, &r);
	if (r.end != AN_UNWIND_OUTERMOST) {
		fprintf(stderr, "unwind: stopped after %u frames: %s: %s\n", *frames,
			an_unwind_end_name(r.end), r.why);
		return -EIO;
	}
	return 0;
}

static int setup(void)
{
	int err = capture_on_thread(bench_unwind_a, &bench.chain);

	if (!err)
		err = capture_on_thread(bench_unwind_sorter, &bench.sort);
	if (err)
		return err;
	bench.u = an_unwind_new(getpid());
	if (!bench.u)
		return -errno;
	err = first_unwind(&bench.chain, &bench.chain_frames);
	if (!err)
		err = first_unwind(&bench.sort, &bench.sort_frames);
	fprintf(stderr, "unwind: chain %u frames, qsort %u frames\n", bench.chain_frames,
		bench.sort_frames);
	return err;
}

static uint64_t unwind_once(struct an_unwind *u, const struct capture *c, unsigned frames)
{
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind_result r;
	uint64_t ips[MAX_FRAMES];

	return an_unwind_stack(u, &s, ips, MAX_FRAMES, &r) == frames &&
	       r.end == AN_UNWIND_OUTERMOST;
}

static uint64_t op_chain(void)
{
	return unwind_once(bench.u, &bench.chain, bench.chain_frames);
}

static uint64_t op_qsort(void)
{
	return unwind_once(bench.u, &bench.sort, bench.sort_frames);
}

static uint64_t op_cold(void)
{
	struct an_unwind *u = an_unwind_new(getpid());
	uint64_t ok = u && unwind_once(u, &bench.sort, bench.sort_frames);

	an_unwind_free(u);
	return ok;
}

static const struct peer_job jobs[] = {
    {.name = "unwind-chain", .op = op_chain, .expect = 1, .units = 1, .setup = setup},
    {.name = "unwind-qsort", .op = op_qsort, .expect = 1, .units = 1, .setup = setup},
    {.name = "unwind-cold", .op = op_cold, .expect = 1, .units = 1, .setup = setup},
};

int main(int argc, char **argv)
{
	int rc = peer_main(argc, argv, jobs, sizeof(jobs) / sizeof(jobs[0]), NULL);

	an_unwind_free(bench.u);
	return rc;
}
