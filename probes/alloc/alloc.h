/*
 * alloc: the structs that alloc.bpf.c writes and alloc.c reads — one definition for
 * both sides, so only fixed-width integers, fixed arrays and explicit padding (no
 * pointers, long, bool or #include). alloc.c asserts the sizes.
 *
 * Every call of a probed allocator function by the target adds to its function's
 * exact totals (calls, bytes asked for). Calls that cross a thread's byte countdown are
 * samples: each adds its weight (periods crossed × the sample period) under a key
 * {function, user stack, thread name}, or, when the counts map is full, to
 * counts_full_bytes. So the weights of all keys plus counts_full_bytes equal
 * sampled_bytes, and the samples likewise.
 */
#ifndef SCHEDLAB_PROBES_ALLOC_H
#define SCHEDLAB_PROBES_ALLOC_H

#define ALLOC_MAX_DEPTH 127
#define ALLOC_COMM_LEN	16

/* The probed functions, in the order the loader attaches them. */
#define ALLOC_FN_MALLOC		0
#define ALLOC_FN_CALLOC		1
#define ALLOC_FN_REALLOC	2
#define ALLOC_FN_POSIX_MEMALIGN 3
#define ALLOC_FN_ALIGNED_ALLOC	4
#define ALLOC_NFN		5

/* A stack hash that names no stack (the walk failed, or the stack could not be
 * stored: a loss bit says which). The hash of a real stack is never 0. */
#define ALLOC_NO_STACK 0ull

/* Loss bits kept in the key; equal to PROBE_ALLOC_LOST_* in probes.h. */
#define ALLOC_LOST_STACK_FULL  (1u << 0) /* the stacks map had no room */
#define ALLOC_LOST_STACK_ERROR (1u << 1) /* the walk failed or found no frame */
#define ALLOC_LOST_NO_THREAD   (1u << 2) /* the thread's state could not be allocated:
					  * sampled against a fresh countdown, no stack */

/* Stacks map value, and each thread's walk buffer: nr ips, leaf first. */
struct alloc_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[ALLOC_MAX_DEPTH];
};

/* Counts map key. */
struct alloc_key {
	__u32 fn;			/* ALLOC_FN_* */
	__u32 lost;			/* ALLOC_LOST_* */
	__u64 ustack;			/* stacks-map key (content hash), or ALLOC_NO_STACK */
	char comm[ALLOC_COMM_LEN];	/* the allocating thread's name */
};

/* Counts map value. */
struct alloc_val {
	__u64 samples;
	__u64 bytes;			/* the samples' weights: periods × sample bytes */
};

/* Per-function exact totals and the sampler's own counts, one copy per CPU, summed and
 * zeroed by the drain. */
struct alloc_counters {
	__u64 calls[ALLOC_NFN];
	__u64 bytes[ALLOC_NFN];		/* bytes asked for (calloc: n × size) */
	__u64 realloc_null;		/* realloc(NULL, n): glibc hands it to malloc, whose
					 * probe counts it; not counted as realloc's */
	__u64 overflow;			/* calloc(n, size) whose product overflows: it fails,
					 * no bytes */
	__u64 samples;			/* calls that crossed their thread's countdown */
	__u64 sampled_bytes;		/* their weights */
	__u64 counts_full;		/* samples not aggregated: counts map full */
	__u64 counts_full_bytes;
	__u64 stack_full;		/* aggregated samples with ALLOC_LOST_STACK_FULL */
	__u64 stack_errors;		/* ... with ALLOC_LOST_STACK_ERROR */
	__u64 no_thread;		/* ... with ALLOC_LOST_NO_THREAD */
};

/* Each thread's sampler state (task local storage: one per thread, freed with it). */
struct alloc_thread {
	__u64 left;			/* bytes to the next sample, 1..period */
	__u64 pad;
	struct alloc_stack walk;	/* where a sample's stack is walked */
};

#endif /* SCHEDLAB_PROBES_ALLOC_H */
