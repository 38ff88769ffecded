/*
 * oncpu: the structs that oncpu.bpf.c writes and oncpu.c reads — one definition for
 * both sides, so only fixed-width integers, fixed arrays and explicit padding (no
 * pointers, long, bool or #include). oncpu.c asserts the sizes.
 *
 * A sample of the target is either aggregated under a key (its stacks possibly marked
 * lost), or sent whole to user space through the ring buffer for DWARF unwinding, or,
 * when neither has room, counted in counts_full; so the sum of all counts plus
 * dwarf_samples plus counts_full equals samples. Stacks are stored once each in a hash
 * map keyed by a 64-bit hash of their contents, and a key names them by that hash.
 */
#ifndef SCHEDLAB_PROBES_ONCPU_H
#define SCHEDLAB_PROBES_ONCPU_H

/* PERF_MAX_STACK_DEPTH: a stored stack holds at most this many instruction pointers. */
#define ONCPU_MAX_DEPTH 127
#define ONCPU_COMM_LEN	16
/* The most processes one profile follows (the targets map), and the deepest pid
 * namespace nesting searched for the loader's number of a new process. */
#define ONCPU_MAX_TARGETS 4096
#define ONCPU_MAX_PIDNS_LEVEL 8

/* A stack hash that names no stack: none was walked (a user-mode sample has no kernel
 * stack) or it could not be kept (then a loss bit says why). The hash of a real stack
 * is never 0. */
#define ONCPU_NO_STACK 0ull

/* Loss bits kept in the key; equal to PROBE_LOST_* in probes.h (asserted in oncpu.c). */
#define ONCPU_LOST_USTACK_FULL	(1u << 0)
#define ONCPU_LOST_KSTACK_FULL	(1u << 1)
#define ONCPU_LOST_USTACK_ERROR (1u << 2)
#define ONCPU_LOST_KSTACK_ERROR (1u << 3)
/* The sample wanted DWARF unwinding but the ring buffer had no room: its user stack is
 * the frame-pointer walk's (auto), or none (dwarf). */
#define ONCPU_LOST_RING		(1u << 7)

/* How user stacks are walked (the loader's --call-graph). */
#define ONCPU_CG_FP    0 /* frame pointers, in the kernel */
#define ONCPU_CG_DWARF 1 /* every sample's registers and stack copy to user space */
#define ONCPU_CG_AUTO  2 /* frame pointers, DWARF where the walk met code without them or
			  * reached no root */

/* x86-64 DWARF registers 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then rip. */
#define ONCPU_NREGS	    17
/* The most user stack one DWARF sample copies (perf's limit is 65,528), and the slack a
 * last page-sized copy may need past it in the scratch buffer. */
#define ONCPU_STACK_MAX	    65536
#define ONCPU_STACK_SLACK   4096

/* Code ranges of the target that the frame-pointer walk looks its ips up in. */
#define ONCPU_MAX_RANGES    128
#define ONCPU_RANGE_NOFP    1 /* an object built without frame pointers: a walk through it
			       * is not to be trusted */
#define ONCPU_RANGE_ROOT    2 /* a function that begins a thread's stack: the walk ends */

struct oncpu_range {
	__u64 start, end; /* [start, end), sorted by start, disjoint */
	__u32 kind;	  /* ONCPU_RANGE_* */
	__u32 pad;
};

/* Stacks map value, and the per-CPU scratch a stack is walked into: the number of ips,
 * then the ips, leaf first (ips[0] is the sampled IP). Entries past nr are not part of it. */
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
	__u64 entry;		/* grouping by task: the running task's entry function (the
				 * entry word, runtime/phase.h), one key per kind of task; 0:
				 * no task, or not grouping */
	char comm[ONCPU_COMM_LEN]; /* the sampled thread's name */
};

/* A ring-buffer record: one sample whose user stack user space unwinds from a copy of
 * its registers and of the stack above its %rsp (stack_len bytes follow the header). */
/* The x86-64 ABI's red zone: the 128 bytes below %rsp, which a leaf function may use
 * without moving %rsp and which signal delivery preserves. */
#define ONCPU_RED_ZONE 128

struct oncpu_dwarf_sample {
	__u32 tgid;
	__u32 tid;
	__u64 phase;		  /* as in oncpu_key */
	__u64 entry;		  /* as in oncpu_key */
	__u32 lost;		  /* ONCPU_LOST_KSTACK_* */
	__u32 stack_len;	  /* bytes of stack copied from regs[7] - below_sp up */
	__u32 knr;		  /* kernel ips in kips */
	__u32 fallback;		  /* 1: auto mode, the frame-pointer walk was not trusted */
	__u32 below_sp;		  /* bytes of the copy below regs[7]: ONCPU_RED_ZONE or 0 */
	__u32 pad;
	char comm[ONCPU_COMM_LEN];
	__u64 regs[ONCPU_NREGS];
	__u64 kips[ONCPU_MAX_DEPTH]; /* the kernel stack, leaf first */
	__u32 fpnr;		  /* auto mode: ips in fpips; 0 in DWARF mode, which walks none */
	__u32 pad2;
	/* auto mode: the frame-pointer walk that was not trusted, leaf first, from regs'
	 * %rbp: where the unwinder stops short (code that switched stacks, as Go's does
	 * for a vDSO call, beyond the copy) its callers may go on from it */
	__u64 fpips[ONCPU_MAX_DEPTH];
	__u8 stack[];
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
	__u64 dwarf_samples;	/* samples sent to the ring buffer */
	__u64 ring_full;	/* samples that wanted the ring buffer and found no room */
	__u64 stack_bytes;	/* user stack bytes copied into the ring buffer */
	__u64 root_cut;		/* frame-pointer walks cut at a root: what they read past
				 * the function that began the thread was not its stack */
	__u64 fired;		/* program runs while enabled, of any task: the samples the
				 * kernel delivered, to compare with the frequency asked */
	__u64 followed;		/* processes a target started that joined the targets */
	__u64 targets_full;	/* ...and those that could not: the targets map was full (or
				 * the child had no number in the loader's namespace) */
};

#endif /* SCHEDLAB_PROBES_ONCPU_H */
