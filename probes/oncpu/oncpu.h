/*
 * oncpu: the structs that oncpu.bpf.c writes and oncpu.c reads — one definition for
 * both sides, so only fixed-width integers, fixed arrays and explicit padding (no
 * pointers, long, bool or #include). oncpu.c asserts the sizes.
 *
 * A sample of the target is either aggregated under a key (its stacks possibly marked
 * lost) or, when the counts map has no room, counted in counts_full; so the sum of all
 * counts plus counts_full equals samples.
 */
#ifndef SCHEDLAB_PROBES_ONCPU_H
#define SCHEDLAB_PROBES_ONCPU_H

/* PERF_MAX_STACK_DEPTH: a stack-map value holds this many instruction pointers. */
#define ONCPU_MAX_DEPTH 127
#define ONCPU_COMM_LEN	16

/* A stack id that names no stack: none was walked (a user-mode sample has no kernel
 * stack) or the walk failed (then a loss bit says why). */
#define ONCPU_NO_STACK 0xffffffffu

/* Loss bits kept in the key; equal to PROBE_LOST_* in probes.h (asserted in oncpu.c). */
#define ONCPU_LOST_USTACK_COLLISION (1u << 0)
#define ONCPU_LOST_KSTACK_COLLISION (1u << 1)
#define ONCPU_LOST_USTACK_ERROR	    (1u << 2)
#define ONCPU_LOST_KSTACK_ERROR	    (1u << 3)

/* Counts map key; value: __u64 samples. tgid, not tid, so a pool's workers aggregate. */
struct oncpu_key {
	__u32 tgid;		/* as seen from the loader's pid namespace */
	__u32 ustack_id;	/* stack-map id, or ONCPU_NO_STACK */
	__u32 kstack_id;	/* stack-map id, or ONCPU_NO_STACK */
	__u32 lost;		/* ONCPU_LOST_* */
	__u64 phase;		/* the phase word's phase and worker (runtime/phase.h), task
				 * id masked off; 0: none */
	char comm[ONCPU_COMM_LEN]; /* the sampled thread's name */
};

/* Loss counters, one copy per CPU (no atomics in the sampling path), summed and
 * zeroed by the drain. */
struct oncpu_counters {
	__u64 samples;		 /* samples of the target while enabled */
	__u64 counts_full;	 /* samples not aggregated: counts map insert failed */
	__u64 ustack_collisions; /* bpf_get_stackid -EEXIST */
	__u64 kstack_collisions;
	__u64 ustack_errors;	 /* any other negative return */
	__u64 kstack_errors;
};

#endif /* SCHEDLAB_PROBES_ONCPU_H */
