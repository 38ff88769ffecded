/*
 * Tests of DWARF unwinding (unwind.c) on this very process: a thread on a stack allocated
 * here records its registers (inline asm) and copies the top of its stack, as the probe
 * does; the copy is unwound after the thread is gone and named with an_usyms_name().
 * Covered: our own chain up to glibc's thread root (and _start, in a forked child), frames
 * above qsort (no frame pointers), signal and vDSO frames, copies cut short, garbage
 * registers, libdw's frame-pointer fallback, a repeating frame, the frame limit, code
 * mapped after the snapshot, a file mapped beside its image, a process gone by then, and
 * the frame-pointer walk taken up where an unwind stopped.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/analysis.h"

#define STACK_COPY     (16u << 10) /* what the probe copies by default */
#define STACK_COPY_MAX (64u << 10)
#define THREAD_STACK   (256u << 10)
#define MAX_FRAMES     128

/* One sample: registers in DWARF order and the stack from %rsp up. */
struct capture {
	pid_t tid;
	uint64_t regs[AN_UNWIND_NREGS];
	size_t stack_len;
	unsigned char stack[STACK_COPY_MAX];
};

/* ---- the functions whose frames are looked for ----------------------------------------- */

volatile int an_unwind_sink;

void an_test_unwind_capture(struct capture *c, uintptr_t top, size_t want);
void an_test_unwind_c(struct capture *c, uintptr_t top, size_t want);
void an_test_unwind_b(struct capture *c, uintptr_t top, size_t want);
void an_test_unwind_a(struct capture *c, uintptr_t top, size_t want);
void an_test_unwind_sorter(struct capture *c, uintptr_t top, size_t want);
int an_test_unwind_compare(const void *pa, const void *pb);

/* Record every general register, %rsp and a %rip inside this function, then copy the
 * stack from that %rsp up to top (at most want bytes). The copy runs below the
 * recorded %rsp, so what it records above it (return addresses, saved registers) is
 * what the unwinder will find. */
/* The live stack, as the probe copies it: the callers' frames, AddressSanitizer's
 * redzones between their variables included, read as plain bytes (volatile, so that the
 * loop does not become a checked memcpy). */
__attribute__((no_sanitize("address"))) static void copy_stack(void *dst, const void *src,
							       size_t len)
{
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = src;

	for (size_t i = 0; i < len; i++)
		d[i] = s[i];
}

__attribute__((noinline)) void an_test_unwind_capture(struct capture *c, uintptr_t top, size_t want)
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
	size_t len = top - sp < want ? top - sp : want;

	c->tid = gettid();
	c->stack_len = len;
	copy_stack(c->stack, (const void *)sp, len);
	an_unwind_sink += 1; /* after the copy: the call cannot become a tail jump */
}

__attribute__((noinline)) void an_test_unwind_c(struct capture *c, uintptr_t top, size_t want)
{
	an_test_unwind_capture(c, top, want);
	an_unwind_sink += 2;
}

__attribute__((noinline)) void an_test_unwind_b(struct capture *c, uintptr_t top, size_t want)
{
	an_test_unwind_c(c, top, want);
	an_unwind_sink += 3;
}

__attribute__((noinline)) void an_test_unwind_a(struct capture *c, uintptr_t top, size_t want)
{
	an_test_unwind_b(c, top, want);
	an_unwind_sink += 4;
}

/* qsort() takes no context, so its comparator finds the capture through these; one
 * sort runs at a time (on one thread). */
static struct capture *sort_capture;
static uintptr_t sort_top;
static size_t sort_want;

__attribute__((noinline)) int an_test_unwind_compare(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;

	if (sort_capture) {
		an_test_unwind_capture(sort_capture, sort_top, sort_want);
		sort_capture = NULL;
	}
	an_unwind_sink += 5;
	return (a > b) - (a < b);
}

__attribute__((noinline)) void an_test_unwind_sorter(struct capture *c, uintptr_t top, size_t want)
{
	int v[32];

	for (int i = 0; i < 32; i++)
		v[i] = (i * 7919) % 32;
	sort_capture = c;
	sort_top = top;
	sort_want = want;
	qsort(v, 32, sizeof(v[0]), an_test_unwind_compare);
	an_unwind_sink += v[0];
}

/* The same for a signal handler, run on the thread's own stack by raise(). */
static struct capture *signal_capture;
static uintptr_t signal_top;
static size_t signal_want;

void an_test_unwind_handler(int sig);
void an_test_unwind_raiser(struct capture *c, uintptr_t top, size_t want);

__attribute__((noinline)) void an_test_unwind_handler(int sig)
{
	an_test_unwind_capture(signal_capture, signal_top, signal_want);
	an_unwind_sink += sig;
}

__attribute__((noinline)) void an_test_unwind_raiser(struct capture *c, uintptr_t top, size_t want)
{
	signal_capture = c;
	signal_top = top;
	signal_want = want;
	raise(SIGUSR1); /* delivered to this thread before raise() returns */
	an_unwind_sink += 7;
}

/* ---- running a capture on a thread whose stack we know ------------------------------------ */

struct job {
	void (*fn)(struct capture *c, uintptr_t top, size_t want);
	struct capture *c;
	uintptr_t top;
	size_t want;
};

void *an_test_unwind_thread(void *arg);

__attribute__((noinline)) void *an_test_unwind_thread(void *arg)
{
	struct job *j = arg;

	j->fn(j->c, j->top, j->want);
	an_unwind_sink += 6;
	return NULL;
}

/* Run fn on a new thread with a stack allocated here; the thread is gone on return. */
static struct capture *capture_on_thread(void (*fn)(struct capture *, uintptr_t, size_t),
					 size_t want)
{
	struct capture *c = calloc(1, sizeof(*c));
	void *stack = mmap(NULL, THREAD_STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	pthread_attr_t attr;
	pthread_t t;

	cr_assert_not_null(c);
	cr_assert(stack != MAP_FAILED);
	struct job j = {.fn = fn, .c = c, .top = (uintptr_t)stack + THREAD_STACK, .want = want};
	cr_assert_eq(pthread_attr_init(&attr), 0);
	cr_assert_eq(pthread_attr_setstack(&attr, stack, THREAD_STACK), 0);
	cr_assert_eq(pthread_create(&t, &attr, an_test_unwind_thread, &j), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	pthread_attr_destroy(&attr);
	munmap(stack, THREAD_STACK);
	cr_assert(c->stack_len > 0);
	return c;
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

/* ---- naming frames -------------------------------------------------------------------------- */

struct frames {
	unsigned n;
	uint64_t ips[MAX_FRAMES];
	char names[MAX_FRAMES][96];
	char joined[4096]; /* "name <- name <- ...", for failure messages */
	struct an_unwind_result r;
};

static struct an_usyms *self_usyms(void)
{
	struct an_procmaps *maps = an_procmaps_read(getpid());

	cr_assert_not_null(maps, "an_procmaps_read: %s", strerror(errno));
	struct an_usyms *u = an_usyms_new(NULL, maps);
	cr_assert_not_null(u, "an_usyms_new: %s", strerror(errno));
	return u;
}

/* Unwind s with at most max frames and name them: the first as it is, the others as
 * return addresses minus one. */
static void unwind_named(struct an_unwind *u, const struct an_unwind_sample *s, unsigned max,
			 struct frames *f)
{
	struct an_usyms *us = self_usyms();
	size_t off = 0;

	memset(f, 0, sizeof(*f));
	cr_assert_leq(max, MAX_FRAMES);
	f->n = an_unwind_stack(u, s, f->ips, max, &f->r);
	cr_assert_eq(f->r.nframes, f->n);
	for (unsigned i = 0; i < f->n; i++) {
		an_usyms_name(us, f->ips[i] - (i ? 1 : 0), f->names[i], sizeof(f->names[i]));
		off += (size_t)snprintf(f->joined + off, sizeof(f->joined) - off, "%s%s",
					i ? " <- " : "", f->names[i]);
		if (off >= sizeof(f->joined))
			off = sizeof(f->joined) - 1;
	}
	snprintf(f->joined + off, sizeof(f->joined) - off, " [%s%s%s]",
		 an_unwind_end_name(f->r.end), f->r.why[0] ? ": " : "", f->r.why);
	an_usyms_free(us);
}

static int find_name(const struct frames *f, const char *name)
{
	for (unsigned i = 0; i < f->n; i++)
		if (strcmp(f->names[i], name) == 0)
			return (int)i;
	return -1;
}

static struct an_unwind *self_unwind(void)
{
	struct an_unwind *u = an_unwind_new(getpid());

	cr_assert_not_null(u, "an_unwind_new: %s", strerror(errno));
	return u;
}

/* glibc's thread root as libc6-dbg names it: start_thread, called from clone3. */
static void expect_thread_root(const struct frames *f, unsigned from)
{
	cr_assert_geq(f->n, from + 2, "%s", f->joined);
	cr_expect_str_eq(f->names[f->n - 2], "start_thread", "%s", f->joined);
	cr_expect(strstr(f->names[f->n - 1], "clone3") != NULL, "%s", f->joined);
	cr_expect_eq(f->r.end, AN_UNWIND_OUTERMOST, "%s", f->joined);
	cr_expect_eq(f->r.stop_pc, f->ips[f->n - 1]); /* a return address: stored as it is */
	cr_expect_str_eq(f->r.why, "");
}

/* Every frame found through CFI, none by libdw's frame-pointer fallback. */
static void expect_all_cfi(const struct frames *f)
{
	cr_expect_eq(f->r.fp_frames, 0, "%u frames by frame pointer: %s", f->r.fp_frames,
		     f->joined);
}

/* ---- tests ------------------------------------------------------------------------------- */

Test(unwind, chain_to_thread_root)
{
	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	struct frames *f = malloc(sizeof(*f));

	cr_assert_not_null(f);
	unwind_named(u, &s, MAX_FRAMES, f);
	cr_assert_geq(f->n, 7, "%s", f->joined);
	cr_expect_eq(f->ips[0], c->regs[16]);
	cr_expect_str_eq(f->names[0], "an_test_unwind_capture", "%s", f->joined);
	cr_expect_str_eq(f->names[1], "an_test_unwind_c", "%s", f->joined);
	cr_expect_str_eq(f->names[2], "an_test_unwind_b", "%s", f->joined);
	cr_expect_str_eq(f->names[3], "an_test_unwind_a", "%s", f->joined);
	cr_expect_str_eq(f->names[4], "an_test_unwind_thread", "%s", f->joined);
	cr_expect_eq(f->n, 7, "%s", f->joined);
	expect_thread_root(f, 5);
	expect_all_cfi(f);

	/* The same sample again (cached CFI) comes back the same. */
	uint64_t again[MAX_FRAMES];
	struct an_unwind_result r;
	cr_expect_eq(an_unwind_stack(u, &s, again, MAX_FRAMES, &r), f->n);
	cr_expect_eq(memcmp(again, f->ips, f->n * sizeof(again[0])), 0);
	an_unwind_free(u);
	free(f);
	free(c);
}

/* glibc's qsort and msort are built without frame pointers: a frame-pointer walk from
 * the comparator cannot be trusted past them; the CFI gets through. */
/* Under AddressSanitizer qsort is its interceptor (__interceptor_qsort_r), built into the
 * test binary, not glibc's qsort without frame pointers that this test unwinds through:
 * off there. */
#if defined(RT_SANITIZE_ADDRESS)
#define QSORT_INTERCEPTED 1
#else
#define QSORT_INTERCEPTED 0
#endif
Test(unwind, through_qsort_without_frame_pointers, .disabled = QSORT_INTERCEPTED)
{
	struct capture *c = capture_on_thread(an_test_unwind_sorter, STACK_COPY);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	struct frames *f = malloc(sizeof(*f));

	cr_assert_not_null(f);
	unwind_named(u, &s, MAX_FRAMES, f);
	cr_expect_str_eq(f->names[0], "an_test_unwind_capture", "%s", f->joined);
	cr_expect_str_eq(f->names[1], "an_test_unwind_compare", "%s", f->joined);
	int sorter = find_name(f, "an_test_unwind_sorter");
	cr_assert_geq(sorter, 3, "no sorter above glibc's frames: %s", f->joined);
	for (int i = 2; i < sorter; i++)
		cr_expect(strncmp(f->names[i], "an_test_", 8) != 0, "frame %d: %s", i, f->joined);
	cr_expect(find_name(f, "msort_with_tmp") > 1 || find_name(f, "__qsort_r") > 1 ||
		      find_name(f, "qsort_r") > 1,
		  "no qsort frame: %s", f->joined);
	cr_expect_str_eq(f->names[sorter + 1], "an_test_unwind_thread", "%s", f->joined);
	expect_thread_root(f, (unsigned)sorter + 2);
	expect_all_cfi(f);
	an_unwind_free(u);
	free(f);
	free(c);
}

/* A handler's frames, glibc's signal trampoline (whose CFI finds the interrupted
 * registers in the ucontext on the stack), then the interrupted code. */
Test(unwind, through_a_signal_frame)
{
	struct sigaction sa = {.sa_handler = an_test_unwind_handler}, old;

	cr_assert_eq(sigaction(SIGUSR1, &sa, &old), 0);
	struct capture *c = capture_on_thread(an_test_unwind_raiser, STACK_COPY);
	cr_assert_eq(sigaction(SIGUSR1, &old, NULL), 0);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	struct frames *f = malloc(sizeof(*f));

	cr_assert_not_null(f);
	unwind_named(u, &s, MAX_FRAMES, f);
	cr_expect_str_eq(f->names[1], "an_test_unwind_handler", "%s", f->joined);
	cr_expect_str_eq(f->names[2], "__restore_rt", "%s", f->joined);
	int raiser = find_name(f, "an_test_unwind_raiser");
	cr_assert_gt(raiser, 3, "%s", f->joined);
	cr_expect_geq(find_name(f, "raise"), 3, "%s", f->joined);
	cr_expect_str_eq(f->names[raiser + 1], "an_test_unwind_thread", "%s", f->joined);
	expect_thread_root(f, (unsigned)raiser + 2);
	expect_all_cfi(f);
	an_unwind_free(u);
	free(f);
	free(c);
}

/* Only the first 256 bytes: the frames that fit come back, the same as from the whole
 * copy, and the end says the copy ran out. */
Test(unwind, truncated_copy_ends_at_stack_end)
{
	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	struct frames *full = malloc(sizeof(*full)), *cut = malloc(sizeof(*cut));

	cr_assert(full && cut);
	unwind_named(u, &s, MAX_FRAMES, full);
	s.stack_len = 256;
	unwind_named(u, &s, MAX_FRAMES, cut);
	cr_expect_eq(cut->r.end, AN_UNWIND_STACK_END, "%s", cut->joined);
	cr_expect(strstr(cut->r.why, "outside the copy") != NULL, "%s", cut->r.why);
	cr_assert_geq(cut->n, 2, "%s", cut->joined);
	cr_assert_lt(cut->n, full->n, "%s", cut->joined);
	for (unsigned i = 0; i < cut->n; i++)
		cr_expect_eq(cut->ips[i], full->ips[i], "frame %u: %s", i, cut->joined);
	cr_expect_str_eq(cut->names[1], "an_test_unwind_c", "%s", cut->joined);

	/* No stack at all: the sampled pc alone. */
	s.stack_len = 0;
	s.stack = NULL;
	unwind_named(u, &s, MAX_FRAMES, cut);
	cr_expect_eq(cut->n, 1, "%s", cut->joined);
	cr_expect_eq(cut->ips[0], c->regs[16]);
	cr_expect_eq(cut->r.end, AN_UNWIND_STACK_END, "%s", cut->joined);
	an_unwind_free(u);
	free(full);
	free(cut);
	free(c);
}

/* A function's entry with %rsp outside the copy. libdw reports that unwind as ended
 * cleanly (a return address it cannot read counts as undefined): it must read as
 * STACK_END, not OUTERMOST. */
Test(unwind, unreadable_return_address_is_not_outermost)
{
	uint64_t regs[AN_UNWIND_NREGS] = {0}, word = 0, ips[4];
	struct an_unwind *u = self_unwind();
	struct an_unwind_result r;

	regs[7] = 0x10000;
	regs[16] = (uintptr_t)&an_test_unwind_a;
	struct an_unwind_sample s = {
	    .tid = gettid(), .regs = regs, .stack_addr = 0x20000, .stack = &word, .stack_len = 8};
	cr_expect_eq(an_unwind_stack(u, &s, ips, 4, &r), 1);
	cr_expect_eq(ips[0], regs[16]);
	cr_expect_eq(r.end, AN_UNWIND_STACK_END, "%s: %s", an_unwind_end_name(r.end), r.why);
	cr_expect(strstr(r.why, "0x10000") != NULL, "%s", r.why);
	an_unwind_free(u);
}

Test(unwind, garbage_registers)
{
	uint64_t regs[AN_UNWIND_NREGS] = {0}, stack[64] = {0}, ips[MAX_FRAMES];
	struct an_unwind *u = self_unwind();
	struct an_unwind_result r;
	struct an_unwind_sample s = {.tid = gettid(),
				     .regs = regs,
				     .stack_addr = (uintptr_t)stack,
				     .stack = stack,
				     .stack_len = sizeof(stack)};

	/* pc 0x1, nothing else. */
	regs[16] = 1;
	regs[7] = (uintptr_t)stack;
	cr_expect_eq(an_unwind_stack(u, &s, ips, MAX_FRAMES, &r), 1);
	cr_expect_eq(ips[0], 1);
	cr_expect_eq(r.end, AN_UNWIND_NO_MODULE, "%s: %s", an_unwind_end_name(r.end), r.why);
	cr_expect_eq(r.stop_pc, 1);
	cr_expect_eq(r.fp_frames, 0);
	cr_expect(strstr(r.why, "0x1 ") != NULL, "%s", r.why);

	/* Executable anonymous memory (JIT code): no module either. */
	long page = sysconf(_SC_PAGESIZE);
	char *jit = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(jit != MAP_FAILED);
	struct an_unwind *u2 = self_unwind();
	regs[16] = (uintptr_t)jit + 16;
	cr_expect_eq(an_unwind_stack(u2, &s, ips, MAX_FRAMES, &r), 1);
	cr_expect_eq(r.end, AN_UNWIND_NO_MODULE, "%s: %s", an_unwind_end_name(r.end), r.why);
	an_unwind_free(u2);
	munmap(jit, page);

	/* Random registers and random stack words with code addresses among them: never
	 * a crash, never more than max frames, always the sampled pc first. */
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	const uint64_t code[] = {(uintptr_t)&an_test_unwind_b + 9, (uintptr_t)&qsort + 3,
				 (uintptr_t)&getpid, (uintptr_t)&an_test_unwind_thread + 20};
	for (int iter = 0; iter < 2000; iter++) {
		for (int i = 0; i < AN_UNWIND_NREGS; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			regs[i] = x;
		}
		for (int i = 0; i < 64; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			if (x % 3 == 0)
				stack[i] = code[x % 4] + x % 64; /* maybe a return address */
			else if (x % 3 == 1)
				stack[i] = (uintptr_t)stack + x % 512; /* maybe a saved %rbp */
			else
				stack[i] = x;
		}
		if (iter % 2)
			regs[16] = code[iter % 4];
		if (iter % 3)
			regs[7] = (uintptr_t)stack + (x % 256);
		if (iter % 5 == 0)
			regs[6] = (uintptr_t)stack + (x % 400);
		unsigned max = 1 + iter % 40;
		unsigned n = an_unwind_stack(u, &s, ips, max, &r);
		cr_assert_geq(n, 1);
		cr_assert_leq(n, max);
		cr_assert_eq(ips[0], regs[16]);
		cr_assert_leq((unsigned)r.end, (unsigned)AN_UNWIND_ERROR);
	}
	an_unwind_free(u);
}

/* Where libdw finds no CFI for a pc it tries the frame pointer (backends/x86_64_unwind.c),
 * as perf does: a garbage pc with the capture's own %rbp (our code keeps frame pointers)
 * goes on from the capture's caller. */
Test(unwind, frame_pointer_fallback_past_a_bad_pc)
{
	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	struct frames *f = malloc(sizeof(*f));

	cr_assert_not_null(f);
	c->regs[16] = 0x10;
	unwind_named(u, &s, MAX_FRAMES, f);
	cr_assert_geq(f->n, 2, "%s", f->joined);
	cr_expect_eq(f->ips[0], 0x10);
	cr_expect_str_eq(f->names[1], "an_test_unwind_c", "%s", f->joined);
	cr_expect_str_eq(f->names[3], "an_test_unwind_a", "%s", f->joined);
	cr_expect_str_eq(f->names[4], "an_test_unwind_thread", "%s", f->joined);
	expect_thread_root(f, 5);
	cr_expect_eq(f->r.fp_frames, 1, "%s", f->joined);
	an_unwind_free(u);
	free(f);
	free(c);
}

/* A frame that unwinds to itself stops at once, not at max: glibc's signal trampoline,
 * whose CFI takes the caller's %rsp and %rip from the ucontext on the stack (offsets
 * 160 and 168 in ucontext_t), over a forged ucontext naming the trampoline at that same
 * %rsp. */
Test(unwind, frame_repeating_itself)
{
	struct sigaction sa = {.sa_handler = an_test_unwind_handler}, old, cur;

	cr_assert_eq(sigaction(SIGUSR2, &sa, &old), 0);
	cr_assert_eq(sigaction(SIGUSR2, NULL, &cur), 0);
	cr_assert_eq(sigaction(SIGUSR2, &old, NULL), 0);
	uint64_t restorer = (uintptr_t)cur.sa_restorer;
	cr_assert(restorer != 0, "no sa_restorer");

	uint64_t regs[AN_UNWIND_NREGS] = {0}, stack[64] = {0}, ips[MAX_FRAMES];
	struct an_unwind_result r;
	regs[7] = (uintptr_t)stack;
	regs[16] = restorer;
	stack[160 / 8] = (uintptr_t)stack; /* uc_mcontext.gregs[REG_RSP] */
	stack[168 / 8] = restorer;	   /* uc_mcontext.gregs[REG_RIP] */
	struct an_unwind_sample s = {.tid = gettid(),
				     .regs = regs,
				     .stack_addr = (uintptr_t)stack,
				     .stack = stack,
				     .stack_len = sizeof(stack)};
	struct an_unwind *u = self_unwind();
	cr_expect_eq(an_unwind_stack(u, &s, ips, MAX_FRAMES, &r), 1, "%s", r.why);
	cr_expect_eq(r.end, AN_UNWIND_ERROR, "%s: %s", an_unwind_end_name(r.end), r.why);
	cr_expect(strstr(r.why, "repeats") != NULL, "%s", r.why);
	an_unwind_free(u);
}

/* max is respected, and DEPTH means frames were cut: exactly as many as the stack
 * holds ends OUTERMOST. */
Test(unwind, max_frames)
{
	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	uint64_t full[MAX_FRAMES], ips[MAX_FRAMES];
	struct an_unwind_result r;

	unsigned n = an_unwind_stack(u, &s, full, MAX_FRAMES, &r);
	cr_assert_eq(r.end, AN_UNWIND_OUTERMOST, "%s", r.why);
	cr_assert_geq(n, 4);

	memset(ips, 0xa5, sizeof(ips));
	cr_expect_eq(an_unwind_stack(u, &s, ips, 3, &r), 3);
	cr_expect_eq(r.end, AN_UNWIND_DEPTH);
	cr_expect_eq(r.stop_pc, full[2]);
	cr_expect_eq(memcmp(ips, full, 3 * sizeof(ips[0])), 0);
	cr_expect_eq(ips[3], 0xa5a5a5a5a5a5a5a5ULL, "wrote past max");

	cr_expect_eq(an_unwind_stack(u, &s, ips, n - 1, &r), n - 1);
	cr_expect_eq(r.end, AN_UNWIND_DEPTH);
	cr_expect_eq(an_unwind_stack(u, &s, ips, n, &r), n);
	cr_expect_eq(r.end, AN_UNWIND_OUTERMOST, "%s", r.why);
	cr_expect_eq(an_unwind_stack(u, &s, ips, 0, &r), 0);
	cr_expect_eq(r.end, AN_UNWIND_DEPTH);
	cr_expect_eq(r.stop_pc, 0);
	an_unwind_free(u);
	free(c);
}

/* The vDSO's CFI is read from memory. A sample at the entry of __vdso_clock_gettime,
 * called from the capture point: its one word of frame (the return address) on top of
 * a captured stack. Only its CFI leads back to that return address: the frame-pointer
 * fallback would skip it, to the caller of the capture. */
static void vdso_sample(const struct capture *c, uint64_t fn, uint64_t *regs, unsigned char *stack,
			struct an_unwind_sample *s)
{
	memcpy(regs, c->regs, sizeof(c->regs));
	regs[16] = fn;
	regs[7] = c->regs[7] - 8;
	memcpy(stack, &c->regs[16], 8);
	memcpy(stack + 8, c->stack, c->stack_len);
	*s = (struct an_unwind_sample){.tid = c->tid,
				       .regs = regs,
				       .stack_addr = regs[7],
				       .stack = stack,
				       .stack_len = c->stack_len + 8};
}

static uint64_t vdso_function(void)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);

	cr_assert_not_null(h, "no vDSO: %s", dlerror());
	uint64_t fn = (uintptr_t)dlsym(h, "__vdso_clock_gettime");
	cr_assert(fn != 0, "no __vdso_clock_gettime");
	dlclose(h);
	return fn;
}

static void expect_vdso_chain(const struct frames *f, const struct frames *plain, uint64_t fn)
{
	cr_assert_eq(f->n, plain->n + 1, "%s", f->joined);
	cr_expect_eq(f->ips[0], fn);
	cr_expect(strstr(f->names[0], "clock_gettime") != NULL, "%s", f->joined);
	for (unsigned i = 0; i < plain->n; i++)
		cr_expect_eq(f->ips[i + 1], plain->ips[i], "frame %u: %s", i + 1, f->joined);
	cr_expect_eq(f->r.end, AN_UNWIND_OUTERMOST, "%s", f->joined);
	expect_all_cfi(f);
}

Test(unwind, vdso_frame)
{
	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample s = sample_of(c), vs;
	struct an_unwind *u = self_unwind();
	struct frames *plain = malloc(sizeof(*plain)), *f = malloc(sizeof(*f));
	unsigned char *stack = malloc(STACK_COPY_MAX + 8);
	uint64_t regs[AN_UNWIND_NREGS], fn = vdso_function();

	cr_assert(plain && f && stack);
	unwind_named(u, &s, MAX_FRAMES, plain);
	vdso_sample(c, fn, regs, stack, &vs);
	unwind_named(u, &vs, MAX_FRAMES, f);
	expect_vdso_chain(f, plain, fn);
	an_unwind_free(u);
	free(stack);
	free(plain);
	free(f);
	free(c);
}

/* Code mapped after the snapshot is in no module until a refresh; a file that is not
 * ELF then is a module without CFI. */
Test(unwind, refresh_sees_new_mapping)
{
	uint64_t regs[AN_UNWIND_NREGS] = {0}, stack[8] = {0}, ips[8];
	struct an_unwind *u = self_unwind();
	struct an_unwind_result r;
	long page = sysconf(_SC_PAGESIZE);
	int fd = memfd_create("an_unwind_blob", MFD_CLOEXEC);

	cr_assert_geq(fd, 0, "memfd_create: %s", strerror(errno));
	char *blob = malloc((size_t)page);
	cr_assert_not_null(blob);
	memset(blob, 0xcc, (size_t)page); /* int3: not an ELF header */
	cr_assert_eq(write(fd, blob, (size_t)page), page);
	free(blob);
	char *code = mmap(NULL, (size_t)page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	cr_assert(code != MAP_FAILED, "mmap: %s", strerror(errno));
	close(fd);

	regs[16] = (uintptr_t)code + 64;
	regs[7] = (uintptr_t)stack;
	struct an_unwind_sample s = {.tid = gettid(),
				     .regs = regs,
				     .stack_addr = (uintptr_t)stack,
				     .stack = stack,
				     .stack_len = sizeof(stack)};
	cr_expect_eq(an_unwind_stack(u, &s, ips, 8, &r), 1);
	cr_expect_eq(r.end, AN_UNWIND_NO_MODULE, "%s: %s", an_unwind_end_name(r.end), r.why);
	cr_expect_eq(an_unwind_refresh(u), 0);
	cr_expect_eq(an_unwind_stack(u, &s, ips, 8, &r), 1);
	cr_expect_eq(r.end, AN_UNWIND_NO_CFI, "%s: %s", an_unwind_end_name(r.end), r.why);
	cr_expect(strstr(r.why, "an_unwind_blob") != NULL, "%s", r.why);

	/* Our own code still unwinds after the refresh. */
	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample cs = sample_of(c);
	struct frames *f = malloc(sizeof(*f));
	cr_assert_not_null(f);
	unwind_named(u, &cs, MAX_FRAMES, f);
	cr_expect_str_eq(f->names[3], "an_test_unwind_a", "%s", f->joined);
	expect_thread_root(f, 5);
	free(f);
	free(c);
	munmap(code, (size_t)page);
	an_unwind_free(u);
}

/* The start of this executable's image: its mapping at file offset 0. */
static uintptr_t image_start(void)
{
	uintptr_t addr = (uintptr_t)&an_test_unwind_a, lo, hi, off, start = 0;
	unsigned long ino, want = 0;
	FILE *m = fopen("/proc/self/maps", "re");
	char line[512];

	cr_assert_not_null(m);
	while (fgets(line, sizeof(line), m)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %" SCNxPTR " %*s %lu", &lo, &hi,
			   &off, &ino) == 4 &&
		    addr >= lo && addr < hi)
			want = ino;
	}
	rewind(m);
	while (!start && fgets(line, sizeof(line), m)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %*s %" SCNxPTR " %*s %lu", &lo, &hi,
			   &off, &ino) == 4 &&
		    ino == want && off == 0)
			start = lo;
	}
	fclose(m);
	cr_assert(start != 0, "no image of this executable");
	return start;
}

/* A copy of a library's file mmapped by someone else (libelf maps the files libdw reads
 * as MAP_PRIVATE, offset 0, whole file) right below the library's loaded image: a second
 * mapping at offset 0 that is no part of the image. The image's module must still start
 * at the image, or every CFI lookup in it misses. */
Test(unwind, file_mapped_beside_its_image)
{
	uintptr_t start = image_start();
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	struct stat sb;

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &sb), 0);
	size_t len = ((size_t)sb.st_size + 4095) & ~(size_t)4095;
	void *want = (void *)(start - len);
	void *copy =
	    mmap(want, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
	close(fd);
	cr_assert(copy == want, "could not map below the image at %p: %s", want, strerror(errno));

	struct capture *c = capture_on_thread(an_test_unwind_a, STACK_COPY);
	struct an_unwind_sample s = sample_of(c);
	struct an_unwind *u = self_unwind();
	struct frames *f = malloc(sizeof(*f));
	cr_assert_not_null(f);
	unwind_named(u, &s, MAX_FRAMES, f);
	cr_expect_str_eq(f->names[1], "an_test_unwind_c", "%s", f->joined);
	cr_expect_str_eq(f->names[4], "an_test_unwind_thread", "%s", f->joined);
	cr_expect_eq(f->n, 7, "%s", f->joined);
	expect_thread_root(f, 5);
	expect_all_cfi(f);
	free(f);
	free(c);
	an_unwind_free(u);
	munmap(copy, len);
}

/* The end of the mapping that holds addr, from /proc/self/maps. */
static uintptr_t mapping_end(uintptr_t addr)
{
	FILE *m = fopen("/proc/self/maps", "re");
	char line[512];
	uintptr_t lo, hi, end = 0;

	cr_assert_not_null(m);
	while (!end && fgets(line, sizeof(line), m)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 && addr >= lo &&
		    addr < hi)
			end = hi;
	}
	fclose(m);
	cr_assert(end != 0, "no mapping holds %#" PRIxPTR, addr);
	return end;
}

/* A process that has exited by the time its sample is unwound: a forked child records
 * a vDSO sample on its own stack and sends it; the unwinder, made while the child
 * lived, has all it needs once the child is gone — the vDSO included. */
Test(unwind, process_gone_before_unwinding)
{
	int to_parent[2], to_child[2];

	cr_assert_eq(pipe(to_parent), 0);
	cr_assert_eq(pipe(to_child), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct capture *c = calloc(1, sizeof(*c));
		uintptr_t here = (uintptr_t)__builtin_frame_address(0);
		char go;

		if (!c)
			_exit(1);
		an_test_unwind_a(c, mapping_end(here), STACK_COPY_MAX);
		for (size_t off = 0; off < sizeof(*c);) {
			ssize_t w = write(to_parent[1], (char *)c + off, sizeof(*c) - off);
			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		if (read(to_child[0], &go, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(to_parent[1]);
	close(to_child[0]);
	struct capture *c = calloc(1, sizeof(*c));
	cr_assert_not_null(c);
	for (size_t off = 0; off < sizeof(*c);) {
		ssize_t got = read(to_parent[0], (char *)c + off, sizeof(*c) - off);
		cr_assert_gt(got, 0, "child died");
		off += (size_t)got;
	}
	struct an_unwind *u = an_unwind_new(pid);
	int err = errno;
	cr_assert_eq(write(to_child[1], "x", 1), 1);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert_not_null(u, "an_unwind_new: %s", strerror(err));
	close(to_parent[0]);
	close(to_child[1]);

	/* The child's layout is ours, so our symbolizer names its frames. */
	struct an_unwind_sample s = sample_of(c), vs;
	struct frames *plain = malloc(sizeof(*plain)), *f = malloc(sizeof(*f));
	unsigned char *stack = malloc(STACK_COPY_MAX + 8);
	uint64_t regs[AN_UNWIND_NREGS], fn = vdso_function();
	cr_assert(plain && f && stack);
	unwind_named(u, &s, MAX_FRAMES, plain);
	cr_expect_str_eq(plain->names[3], "an_test_unwind_a", "%s", plain->joined);
	/* The main thread's root: _start, whose CFI marks the return address undefined. */
	cr_assert_gt(plain->n, 6, "%s", plain->joined);
	cr_expect_str_eq(plain->names[plain->n - 1], "_start", "%s", plain->joined);
	cr_expect_eq(find_name(plain, "__libc_start_main"), (int)plain->n - 2, "%s", plain->joined);
	cr_expect_eq(plain->r.end, AN_UNWIND_OUTERMOST, "%s", plain->joined);
	vdso_sample(c, fn, regs, stack, &vs);
	unwind_named(u, &vs, MAX_FRAMES, f);
	expect_vdso_chain(f, plain, fn);
	cr_expect_eq(an_unwind_refresh(u), -ENOENT);
	unwind_named(u, &s, MAX_FRAMES, f);
	cr_expect_eq(f->n, plain->n, "a failed refresh kept the old mappings: %s", f->joined);
	an_unwind_free(u);
	free(stack);
	free(plain);
	free(f);
	free(c);
}

Test(unwind, bad_arguments)
{
	uint64_t ips[4], regs[AN_UNWIND_NREGS] = {0};
	struct an_unwind_result r;

	errno = 0;
	cr_expect_null(an_unwind_new(0));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(an_unwind_new(0x7ffffff0)); /* above any pid_max */
	cr_expect_eq(errno, ENOENT);
	an_unwind_free(NULL);
	cr_expect_eq(an_unwind_refresh(NULL), -EINVAL);

	struct an_unwind *u = self_unwind();
	struct an_unwind_sample s = {.tid = gettid()};
	cr_expect_eq(an_unwind_stack(u, &s, ips, 4, &r), 0, "no registers");
	cr_expect_eq(r.end, AN_UNWIND_ERROR);
	cr_expect_eq(r.nframes, 0);
	cr_expect_eq(an_unwind_stack(NULL, &s, ips, 4, &r), 0);
	cr_expect_eq(an_unwind_stack(u, NULL, ips, 4, NULL), 0);
	s.regs = regs;
	regs[16] = (uintptr_t)&an_test_unwind_b;
	cr_expect_eq(an_unwind_stack(u, &s, ips, 4, NULL), 1, "r may be NULL");
	an_unwind_free(u);

	cr_expect_str_eq(an_unwind_end_name(AN_UNWIND_OUTERMOST), "outermost");
	cr_expect_str_eq(an_unwind_end_name(AN_UNWIND_STACK_END), "stack-end");
	cr_expect_str_eq(an_unwind_end_name(AN_UNWIND_ERROR), "error");
	cr_expect_str_eq(an_unwind_end_name((enum an_unwind_end)99), "?");
}

/* ---- an_unwind_splice_fp: the frame-pointer walk after a stop ----------------------------- */

/* ips[0..n) after a splice of fp[0..nfp) onto got[0..ngot) ending end, at most max. */
static unsigned splice_fp(const uint64_t *got, unsigned ngot, const uint64_t *fp, unsigned nfp,
			  enum an_unwind_end end, unsigned max, uint64_t *ips,
			  struct an_unwind_result *r)
{
	*r = (struct an_unwind_result){ .end = end };
	memcpy(ips, got, ngot * sizeof(*ips));
	return an_unwind_splice_fp(fp, nfp, ips, ngot, max, r);
}

Test(unwind, a_stop_goes_on_along_the_walk_from_the_last_frame)
{
	/* Go's vDSO call: the unwind has the vDSO's frames and nanotime1 (0x465933), the
	 * walk skipped the vDSO's inner frame but went on past nanotime1 */
	const uint64_t got[] = { 0x7f00000007bd, 0x7f0000000c8e, 0x465933 };
	const uint64_t fp[] = { 0x7f00000007bd, 0x465933, 0x43a0e5, 0x440945, 0x463e81 };
	const uint64_t want[] = { 0x7f00000007bd, 0x7f0000000c8e, 0x465933, 0x43a0e5, 0x440945,
				  0x463e81 };
	uint64_t ips[8];
	struct an_unwind_result r;
	unsigned n = splice_fp(got, 3, fp, 5, AN_UNWIND_OUTERMOST, 8, ips, &r);

	cr_assert_eq(n, 6);
	cr_expect_eq(r.fp_spliced, 3);
	cr_expect_arr_eq(ips, want, sizeof(want));
	/* a stack end, a frame without CFI alike */
	cr_expect_eq(splice_fp(got, 3, fp, 5, AN_UNWIND_STACK_END, 8, ips, &r), 6);
	cr_expect_eq(splice_fp(got, 3, fp, 5, AN_UNWIND_NO_CFI, 8, ips, &r), 6);
	/* at most max */
	cr_expect_eq(splice_fp(got, 3, fp, 5, AN_UNWIND_STACK_END, 4, ips, &r), 4);
	cr_expect_eq(r.fp_spliced, 1);
	cr_expect_eq(ips[3], 0x43a0e5);
}

Test(unwind, a_recursive_last_frame_is_matched_as_often_as_it_was_met)
{
	/* the unwind met 0x500 twice; the walk holds it twice before 0x600: one is not
	 * the point to go on from */
	const uint64_t got[] = { 0x100, 0x200, 0x500, 0x500 };
	const uint64_t fp[] = { 0x100, 0x500, 0x500, 0x600, 0x700 };
	uint64_t ips[8];
	struct an_unwind_result r;

	cr_assert_eq(splice_fp(got, 4, fp, 5, AN_UNWIND_STACK_END, 8, ips, &r), 6);
	cr_expect_eq(ips[4], 0x600);
	cr_expect_eq(ips[5], 0x700);
	/* a walk that holds it fewer times than the unwind met it adds nothing */
	cr_expect_eq(splice_fp(got, 4, fp, 2, AN_UNWIND_STACK_END, 8, ips, &r), 4);
	cr_expect_eq(r.fp_spliced, 0);
}

Test(unwind, nothing_is_added_where_the_walk_ends_too_or_the_depth_was_reached)
{
	const uint64_t got[] = { 0x100, 0x200, 0x300 };
	const uint64_t ended[] = { 0x100, 0x300 };     /* a real root: the walk ends there */
	const uint64_t elsewhere[] = { 0x100, 0x800, 0x900 }; /* never meets the last frame */
	const uint64_t on[] = { 0x100, 0x300, 0x400 };
	uint64_t ips[8];
	struct an_unwind_result r;

	cr_expect_eq(splice_fp(got, 3, ended, 2, AN_UNWIND_OUTERMOST, 8, ips, &r), 3);
	cr_expect_eq(splice_fp(got, 3, elsewhere, 3, AN_UNWIND_STACK_END, 8, ips, &r), 3);
	cr_expect_eq(splice_fp(got, 3, on, 3, AN_UNWIND_DEPTH, 8, ips, &r), 3, "cut, not stopped");
	cr_expect_eq(splice_fp(got, 3, NULL, 0, AN_UNWIND_STACK_END, 8, ips, &r), 3);
	cr_expect_eq(r.fp_spliced, 0);
}

Test(unwind, the_sampled_pc_alone_takes_the_walks_callers)
{
	const uint64_t got[] = { 0x465917 };
	const uint64_t fp[] = { 0x465917, 0x439fcb, 0x43cd5b };
	const uint64_t other[] = { 0x123456, 0x439fcb };
	uint64_t ips[8];
	struct an_unwind_result r;

	cr_assert_eq(splice_fp(got, 1, fp, 3, AN_UNWIND_STACK_END, 8, ips, &r), 3);
	cr_expect_eq(ips[1], 0x439fcb);
	cr_expect_eq(ips[2], 0x43cd5b);
	/* another sample's walk (its pc not the one unwound) is not taken */
	cr_expect_eq(splice_fp(got, 1, other, 2, AN_UNWIND_STACK_END, 8, ips, &r), 1);
}
