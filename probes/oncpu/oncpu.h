/*
 * oncpu: the structs that oncpu.bpf.c writes and oncpu.c reads — one definition for
 * both sides, so only fixed-width integers, fixed arrays and explicit padding (no
 * pointers, long, bool or #include). oncpu.c asserts the sizes.
 *
 * A sample of the target is either aggregated under a key (its stacks possibly marked
 * lost) or, when the counts map has no room, counted in counts_full; so the sum of all
 * counts plus counts_full equals samples. Stacks are stored once each in a hash map
 * keyed by a 64-bit hash of their contents, and a key names them by that hash.
 */
#ifndef SCHEDLAB_PROBES_ONCPU_H
#define SCHEDLAB_PROBES_ONCPU_H

/* PERF_MAX_STACK_DEPTH: a stored stack holds at most this many instruction pointers. */
#define ONCPU_MAX_DEPTH 127
#define ONCPU_COMM_LEN	16

/* A stack hash that names no stack: none was walked (a user-mode sample has no kernel
 * stack) or it could not be kept (then a loss bit says why). The hash of a real stack
 * is never 0. */
#define ONCPU_NO_STACK 0ull

/* Loss bits kept in the key; equal to PROBE_LOST_* in probes.h (asserted in oncpu.c). */
#define ONCPU_LOST_USTACK_FULL	(1u << 0)
#define ONCPU_LOST_KSTACK_FULL	(1u << 1)
#define ONCPU_LOST_USTACK_ERROR (1u << 2)
#define ONCPU_LOST_KSTACK_ERROR (1u << 3)

/* Stacks map value, and the per-CPU scratch a stack is walked into: the number of ips,
 * then the ips, leaf first (ips[0] is the sampled IP). Entries past nr are zero. */
struct oncpu_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[ONCPU_MAX_DEPTH];
};

/* Counts map key; value: __u64 samples. tgid, not tid, so a pool's workers aggregate. */
struct oncpu_key {
	__u32 tgid;		/* as seen from the loader's pid namespace */
	__u32 lost;		/* ONCPU_LOST_* */
	__u64 ustack;		/* stacks-map key (content hash), or ONCPU_NO_STACK */
	__u64 kstack;		/* stacks-map key (content hash), or ONCPU_NO_STACK */
	__u64 phase;		/* the phase word's phase and worker (runtime/phase.h), task
				 * id masked off; 0: none */
	char comm[ONCPU_COMM_LEN]; /* the sampled thread's name */
};

/* Loss counters, one copy per CPU (no atomics in the sampling path), summed and
 * zeroed by the drain. The *_full and *_errors count aggregated samples whose key has
 * the matching loss bit; a sample in counts_full counts nowhere else. */
struct oncpu_counters {
	__u64 samples;		/* samples of the target while enabled */
	__u64 counts_full;	/* samples not aggregated: counts map insert failed */
	__u64 ustack_full;	/* a new stack found no room in the stacks map */
	__u64 kstack_full;
	__u64 ustack_errors;	/* the walk failed (or, for a user stack, found nothing),
				 * or the stack's insert failed otherwise than full */
	__u64 kstack_errors;
};

#endif /* SCHEDLAB_PROBES_ONCPU_H */
