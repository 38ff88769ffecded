/*
 * Stacks walked and stored the same way by every probe: a user stack's frame-pointer
 * walk, and a stack's hash, under which it is stored once. Needs no kernel types (for
 * programs built without vmlinux.h), only the libbpf helpers, included before it.
 */
#ifndef SCHEDLAB_PROBES_COMMON_STACK_BPF_H
#define SCHEDLAB_PROBES_COMMON_STACK_BPF_H

/* The deepest stack the hash reads (PERF_MAX_STACK_DEPTH). */
#define PROBE__STACK_MAX_DEPTH 127

/* A stack as every probe walks and stores it: the number of ips, then the ips, leaf
 * first (each probe's own stack type has this layout). */
struct probe__stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[PROBE__STACK_MAX_DEPTH];
};

/* A 64-bit hash of s->nr and s->ips[0..nr), never 0 (0 names no stack): a
 * multiply-xorshift step per ip, then murmur3's fmix64 finaliser. Each step is a
 * bijection of the state for a given ip and of the ip for a given state, so two stacks
 * of one length that differ in a single frame always hash apart. A few instructions
 * per frame; the constant bound is what the verifier needs. A global function, which
 * the verifier checks once on its own: inlined, the loop's 127 steps were checked
 * again at each call and each state that reached one (4,196 of the on-CPU sampler's
 * 7,390 verified instructions, 2,848 of the off-CPU program's 5,131). s is never NULL;
 * the verifier cannot know that of a global function's argument. */
__noinline __u64 probe__stack_hash(const struct probe__stack *s)
{
	__u64 h;
	__u32 nr;

	if (!s)
		return 1;
	nr = s->nr;
	h = 0x9e3779b97f4a7c15ull ^ nr;
	for (__u32 i = 0; i < PROBE__STACK_MAX_DEPTH; i++) {
		if (i >= nr)
			break;
		h = (h ^ s->ips[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h ? h : 1;
}

/* x86-64's __USER_CS: a 64-bit task's user code segment (__USER32_CS is 0x23). */
#define PROBE__USER_CS 0x33

struct probe__walk {
	__u64 *ips;
	__u64 fp;
	__u32 nr, max;
};

/* One frame of probe__walk_fp(), through bpf_loop(): the verifier checks one frame
 * once, where a loop's every exit would carry a different depth through all the code
 * after it (90,818 instructions verified for the off-CPU program, not 5,075). */
static long probe__walk_frame(__u64 i, void *arg)
{
	struct probe__walk *w = arg;
	struct {
		__u64 next, ret;
	} frame;

	if (i == 0)
		return 0; /* ips[0], the ip, is the caller's */
	if (i >= w->max || i >= PROBE__STACK_MAX_DEPTH)
		return 1;
	if (w->fp < 4096 || (w->fp & 7))
		return 1;
	/* access_ok() first: a non-canonical %rbp fails without a fault */
	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)w->fp))
		return 1;
	w->ips[i] = frame.ret;
	w->nr = i + 1;
	w->fp = frame.next;
	return 0;
}

/* The user stack of the current task from its user ip and %rbp, by frame pointers,
 * into ips[0..max): the number of ips (at least the ip). x86-64, 64-bit code only.
 *
 * The same ips as bpf_get_stack(BPF_F_USER_STACK) gives from the same registers
 * (perf_callchain_user: the ip, then each frame's return address along the saved %rbp
 * chain), but without the kernel's two page faults at the chain's end. Every chain ends
 * in a zero %rbp (_start and clone3's child clear it, and so does our fibers' entry),
 * and the kernel's walk reads the frame at addresses 0 and 8 before it stops: two
 * faults taken and fixed up on every walk, about 5 us an event on a VM whose faults
 * exit to the hypervisor, more than all the rest of the off-CPU probe. Here a frame
 * pointer in the first page, where nothing is mapped, ends the walk unread, and so does
 * one that is not 8-byte aligned (no saved %rbp is; the kernel reads on into garbage).
 * The walk is the same on every kernel: none puts in a frame of its own (since 6.12 the
 * kernel's adds the caller of a uprobe at a function's entry). */
static __always_inline __u32 probe__walk_fp(__u64 ip, __u64 bp, __u64 *ips, const __u32 max)
{
	struct probe__walk w = { .ips = ips, .fp = bp, .nr = 1, .max = max };

	ips[0] = ip;
	bpf_loop(max, probe__walk_frame, &w, 0);
	return w.nr;
}

#endif /* SCHEDLAB_PROBES_COMMON_STACK_BPF_H */
