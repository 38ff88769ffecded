// SPDX-License-Identifier: GPL-2.0
/*
 * alloc: uprobes on the C allocator's entry points (malloc, calloc, realloc,
 * posix_memalign, aligned_alloc) in the libc the target maps, for the target's threads.
 *
 * Every call adds to its function's exact totals. Allocation stacks are sampled by
 * bytes, by fixed-interval counting with a random phase: each thread keeps a countdown
 * of bytes to its next sample, started at a uniformly random point of the period P.
 * A call of n bytes that reaches the countdown is a sample of weight k × P, k the
 * periods it crossed (1 + (n - left) / P), and the countdown restarts where the call's
 * bytes leave it. With the random phase every byte a thread asks for is a sample point
 * with probability 1/P, so a call's expected weight is exactly its n bytes (the
 * estimator is unbiased for every stack, large calls included: they cross more
 * periods), and a thread's total weight differs from its true total by less than P,
 * whatever the sizes; tcmalloc draws exponential intervals instead, which also makes
 * each byte's chance independent of its neighbours, at the cost of a random total.
 *
 * The stack is walked by frame pointers at the allocator's first instruction, before
 * it has pushed anything: %rbp still holds the caller's frame and the caller's return
 * address is on top of the stack. The walk gives the allocator's ip, then follows
 * %rbp, and walk_entry() puts the return address in as the second frame; so the walk
 * needs frame pointers only in the callers (our code has them), never in glibc, and
 * needs no DWARF. Invariants: see alloc.h.
 */
/* No vmlinux.h: this program reads no kernel struct, only the user registers a uprobe
 * hands it, whose layout is the uapi's; with vmlinux.h every pt_regs access would be a
 * CO-RE relocation, and libbpf would parse the kernel's BTF to resolve them (about
 * 150 ms of the open here, three times the probe's attach budget). */
#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "probes/alloc/alloc.h"
#include "probes/common/stack.bpf.h"

_Static_assert(sizeof(struct alloc_stack) == sizeof(struct probe__stack), "one stack layout");

#define E2BIG  7
#define ENOMEM 12
#define EEXIST 17

char LICENSE[] SEC("license") = "GPL";

/* The loader's pid namespace, so that tgids mean what the loader's pids mean. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
/* Bytes between samples: the period P. */
const volatile __u64 period = 512 * 1024;

/* Written by the loader through the mmapped .bss: target first, then enabled. */
__u32 enabled = 0;
__u32 target_tgid = 0;

/* Stacks keyed by a hash of their contents (as oncpu's: a hash map holds max_entries
 * distinct stacks whatever their hashes; a stack-trace map's buckets collide). Not
 * preallocated, nor the counts: a uprobe's program runs in process context, where the
 * kernel may allocate, and preallocating thousands of 1 KiB stacks took tens of
 * milliseconds of the open here (60 ms for 10,240 on a busy VM). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct alloc_stack);
	__uint(max_entries, 4096);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct alloc_key);
	__type(value, struct alloc_val);
	__uint(max_entries, 4096);
} counts SEC(".maps");

/* Per CPU, but updated with atomic adds: a uprobe's program runs with migration, not
 * preemption, disabled, so two threads' calls can interleave on one CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct alloc_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* Each thread's countdown and walk buffer: per thread, so that no other thread's
 * call (preempting this one on its CPU) can touch them, and never full. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct alloc_thread);
} threads SEC(".maps");

/* A fresh thread's countdown: a uniformly random point of the period. */
static __always_inline __u64 first_left(void)
{
	__u64 r = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32();

	return 1 + r % period;
}

/* Store the walked stack under *id unless the map has it; if it cannot, the key names
 * no stack and a loss bit says why. */
static __always_inline void store_stack(__u64 *id, const struct alloc_stack *s, __u32 *lost)
{
	long err;

	if (bpf_map_lookup_elem(&stacks, id))
		return;
	err = bpf_map_update_elem(&stacks, id, s, BPF_NOEXIST);
	if (!err || err == -EEXIST)
		return;
	*id = ALLOC_NO_STACK;
	*lost |= err == -E2BIG || err == -ENOMEM ? ALLOC_LOST_STACK_FULL : ALLOC_LOST_STACK_ERROR;
}

/* Walk the user stack at an allocator's first instruction into s. The frame-pointer
 * walk reads the allocator's ip and then follows %rbp, which still holds the caller's
 * frame: it gives the caller's caller next, skipping the caller itself, whose return
 * address is on top of the stack; so that is read here, and put in as the second frame.
 * On x86-64 the walk is probe__walk_fp(), which puts in nothing of its own; elsewhere
 * it is the kernel's, which since 6.12 puts the caller in itself for a uprobe on an
 * instruction that begins a frame (push %rbp, endbr64), not on the first instruction
 * of a libc built without frame pointers: there it is put in unless the kernel did. */
/* ips[1..nr] down to ips[0..nr), the stack's nr frames. */
static __always_inline void shift_down(struct alloc_stack *s, __u32 nr)
{
	for (__u32 i = 0; i < ALLOC_MAX_DEPTH - 1; i++) {
		__u64 ip;

		if (i >= nr)
			break;
		ip = s->ips[i + 1];
		/* keeps clang from making the loop a memmove, which BPF has not */
		__asm__ volatile("" : "+r"(ip));
		s->ips[i] = ip;
	}
	s->nr = nr;
}

struct shift {
	struct alloc_stack *s;
	__u32 nr;
};

/* One step of shift_up(), through bpf_loop() so that the verifier checks it once:
 * ips[k] to ips[k + 1], k from nr - 1 down to 1. */
static long shift_step(__u64 i, void *arg)
{
	struct shift *sh = arg;
	__u64 nr = sh->nr, k; /* 64-bit: no zero-extended copy for the verifier to lose */

	if (nr > ALLOC_MAX_DEPTH - 1 || i + 1 >= nr)
		return 1;
	k = nr - 1 - i;
	if (k < 1 || k > ALLOC_MAX_DEPTH - 2)
		return 1;
	/* both indexes from the k just bounded, not recomputed from nr and i */
	__asm__ volatile("" : "+r"(k));
	sh->s->ips[k + 1] = sh->s->ips[k];
	return 0;
}

/* ips[1..nr) up to ips[2..nr], making room for one frame at ips[1]; nr < ALLOC_MAX_DEPTH. */
static __always_inline void shift_up(struct alloc_stack *s, __u32 nr)
{
	struct shift sh = { s, nr };

	bpf_loop(ALLOC_MAX_DEPTH, shift_step, &sh, 0);
}

static __always_inline void walk_entry(struct pt_regs *ctx, struct alloc_stack *s)
{
	__u64 ret = 0, sp = PT_REGS_SP(ctx);
	long n;
	__u32 nr;

	s->nr = 0;
#if defined(__TARGET_ARCH_x86)
	if (ctx->cs == PROBE__USER_CS) {
		/* ips[0..nr), with room for the caller's frame to be put in */
		nr = probe__walk_fp(PT_REGS_IP(ctx), PT_REGS_FP(ctx), s->ips, ALLOC_MAX_DEPTH - 1);
		if (nr > ALLOC_MAX_DEPTH - 1)
			return; /* never: for the verifier */
		s->nr = nr;
		if (bpf_probe_read_user(&ret, sizeof(ret), (void *)sp) || !ret)
			return; /* no return address to read: the walk as it is */
		shift_up(s, nr);
		s->ips[1] = ret;
		s->nr = nr + 1;
		return;
	}
#endif
	/* The kernel's walk, into ips[1..]: room for the caller's frame at ips[1] once
	 * ips[0] is moved down */
	n = bpf_get_stack(ctx, &s->ips[1], sizeof(s->ips) - sizeof(s->ips[0]), BPF_F_USER_STACK);
	nr = n > 0 ? n / sizeof(s->ips[0]) : 0;
	if (!nr || nr > ALLOC_MAX_DEPTH - 1)
		return;
	if (bpf_probe_read_user(&ret, sizeof(ret), (void *)sp) || !ret) {
		/* no return address to read: the walk as it is, one frame down */
		shift_down(s, nr);
		return;
	}
	if (nr >= 2 && s->ips[2] == ret) {
		/* the kernel put it in: ips[1..nr] is the stack, moved down by one */
		shift_down(s, nr);
		return;
	}
	s->ips[0] = s->ips[1];
	s->ips[1] = ret;
	s->nr = nr + 1;
}

/* Aggregate one sample of weight bytes under {fn, stack, comm}. */
static __always_inline void take_sample(struct pt_regs *ctx, struct alloc_counters *c,
					struct alloc_thread *t, __u32 fn, __u64 weight)
{
	struct alloc_key key = { .fn = fn };
	struct alloc_val zero = {}, *val;
	long err;

	__sync_fetch_and_add(&c->samples, 1);
	__sync_fetch_and_add(&c->sampled_bytes, weight);
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (!t) {
		key.lost = ALLOC_LOST_NO_THREAD;
	} else {
		walk_entry(ctx, &t->walk);
		if (t->walk.nr) {
			key.ustack = probe__stack_hash((const struct probe__stack *)&t->walk);
			store_stack(&key.ustack, &t->walk, &key.lost);
		} else {
			key.lost = ALLOC_LOST_STACK_ERROR;
		}
	}
	val = bpf_map_lookup_elem(&counts, &key);
	if (!val) {
		err = bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);
		if (!err || err == -EEXIST)
			val = bpf_map_lookup_elem(&counts, &key);
	}
	if (!val) {
		__sync_fetch_and_add(&c->counts_full, 1);
		__sync_fetch_and_add(&c->counts_full_bytes, weight);
		return;
	}
	__sync_fetch_and_add(&val->samples, 1);
	__sync_fetch_and_add(&val->bytes, weight);
	if (key.lost & ALLOC_LOST_STACK_FULL)
		__sync_fetch_and_add(&c->stack_full, 1);
	if (key.lost & ALLOC_LOST_STACK_ERROR)
		__sync_fetch_and_add(&c->stack_errors, 1);
	if (key.lost & ALLOC_LOST_NO_THREAD)
		__sync_fetch_and_add(&c->no_thread, 1);
}

/* This CPU's counters when the calling thread is the target's while enabled, else
 * NULL. (The uprobes are attached for the target's pid alone; the check also keeps
 * out what runs before the first start and in children it forks.) */
static __always_inline struct alloc_counters *target_counters(void)
{
	struct bpf_pidns_info ns = {};
	__u32 zero = 0;

	if (!enabled)
		return NULL;
	/* fails for tasks outside the loader's namespace: those are not the target */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) ||
	    ns.tgid != target_tgid)
		return NULL;
	return bpf_map_lookup_elem(&counters, &zero);
}

/* One call of fn asking for bytes: count it, and sample it if it reaches the thread's
 * countdown. */
static __always_inline int on_alloc(struct pt_regs *ctx, __u32 fn, __u64 bytes)
{
	struct alloc_counters *c = target_counters();
	struct alloc_thread *t;
	__u64 left, crossed;

	if (!c)
		return 0;
	/* checked where it indexes: clang may widen a checked copy and lose the bound */
	__asm__ volatile("" : "+r"(fn));
	if (fn >= ALLOC_NFN)
		return 0;
	__sync_fetch_and_add(&c->calls[fn], 1);
	__sync_fetch_and_add(&c->bytes[fn], bytes);

	t = bpf_task_storage_get(&threads, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	/* a new thread's storage is zeroed: its countdown starts at a random phase */
	left = t ? t->left : 0;
	if (!left)
		left = first_left();
	if (bytes < left) {
		if (t)
			t->left = left - bytes;
		return 0;
	}
	crossed = 1 + (bytes - left) / period;
	if (t)
		t->left = period - (bytes - left) % period;
	take_sample(ctx, c, t, fn, crossed * period);
	return 0;
}

/* calloc(n, size): n × size, or UINT64_MAX when the product overflows (the call fails). */
static __always_inline __u64 calloc_bytes(__u64 n, __u64 size)
{
	__u64 most = size ? ~0ull / size : ~0ull;

	/* No 128-bit multiply in BPF: a division says whether n × size fits. The barrier
	 * keeps clang from turning the test back into an overflowing multiply. */
	__asm__ volatile("" : "+r"(most));
	return n > most ? ~0ull : n * size;
}

/* One program for every function, told which by the attach cookie (ALLOC_FN_*), so the
 * verifier checks it once, not once per function: the open's cost. */
SEC("uprobe")
int alloc_entry(struct pt_regs *ctx)
{
	__u32 fn = (__u32)bpf_get_attach_cookie(ctx);
	/* read at fixed offsets of ctx before choosing: clang would otherwise compute the
	 * offset, and the verifier allows no modified ctx pointer */
	__u64 a1 = PT_REGS_PARM1(ctx), a2 = PT_REGS_PARM2(ctx), a3 = PT_REGS_PARM3(ctx);
	struct alloc_counters *c;
	__u64 bytes;

	__asm__ volatile("" : "+r"(a1), "+r"(a2), "+r"(a3));

	switch (fn) {
	case ALLOC_FN_MALLOC:
		bytes = a1;
		break;
	case ALLOC_FN_CALLOC:
		bytes = calloc_bytes(a1, a2);
		if (bytes == ~0ull) {
			c = target_counters();
			if (c)
				__sync_fetch_and_add(&c->overflow, 1);
			return 0;
		}
		break;
	case ALLOC_FN_REALLOC:
		if (!a1) {
			/* glibc's realloc(NULL, n) calls malloc (__libc_malloc, malloc's own
			 * address), whose probe counts and samples it: once is enough */
			c = target_counters();
			if (c)
				__sync_fetch_and_add(&c->realloc_null, 1);
			return 0;
		}
		bytes = a2;
		break;
	case ALLOC_FN_POSIX_MEMALIGN: /* (memptr, alignment, size) */
		bytes = a3;
		break;
	case ALLOC_FN_ALIGNED_ALLOC: /* (alignment, size) */
		bytes = a2;
		break;
	default:
		return 0;
	}
	return on_alloc(ctx, fn, bytes);
}
