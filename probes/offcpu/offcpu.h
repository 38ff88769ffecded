/*
 * offcpu: the structs that offcpu.bpf.c writes and offcpu.c reads — one definition for
 * both sides, so only fixed-width integers, fixed arrays and explicit padding (no
 * pointers, long, bool or #include). offcpu.c asserts the sizes.
 *
 * A target thread switching out is timed from that moment: its stacks (stored once
 * each, keyed by a hash of their contents, as oncpu stores them), its phase word's kind
 * and its name go into a start record under its tid. When it switches back in, the
 * interval is added, in nanoseconds, to the count under that key (with the waker's
 * stacks, when wakers are asked for, from the wake-up that ended it), or counted as
 * under the minimum. Every interval measured is either kept under a key (its stacks
 * possibly marked lost), under the minimum, or counted with its time in counts_full;
 * a switch-out that finds no room for its start record is counted in start_full, its
 * interval unmeasured.
 */
#ifndef SCHEDLAB_PROBES_OFFCPU_H
#define SCHEDLAB_PROBES_OFFCPU_H

#define OFFCPU_MAX_DEPTH 127
#define OFFCPU_COMM_LEN	 16
#define OFFCPU_NO_STACK	 0ull

/* Loss bits kept in the key; equal to PROBE_LOST_* in probes.h (asserted in offcpu.c). */
#define OFFCPU_LOST_USTACK_FULL	 (1u << 0)
#define OFFCPU_LOST_KSTACK_FULL	 (1u << 1)
#define OFFCPU_LOST_USTACK_ERROR (1u << 2)
#define OFFCPU_LOST_KSTACK_ERROR (1u << 3)
/* The same for the waker's stacks, and (in the waker's lost) a wake-up that found no
 * room to be kept, set in the sleeping thread's start record by the wake-up. */
#define OFFCPU_LOST_WUSTACK_FULL (1u << 8)
#define OFFCPU_LOST_WKSTACK_FULL (1u << 9)
#define OFFCPU_LOST_WAKER_FULL	 (1u << 10)

/* Stacks map value and the per-CPU scratch a stack is walked into, leaf first. */
struct offcpu_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[OFFCPU_MAX_DEPTH];
};

/* Who woke a thread: kept under the wakee's tid until it runs. */
struct offcpu_waker {
	__u64 ustack;		/* stacks-map keys, or OFFCPU_NO_STACK; the user stack only
				 * for a waker in the target (another process's addresses
				 * mean nothing in the target's mappings) */
	__u64 kstack;
	__u32 tgid;		/* the waker's tgid (the kernel's), 0 for an interrupt on an
				 * idle CPU */
	__u32 lost;		/* OFFCPU_LOST_W* */
	char comm[OFFCPU_COMM_LEN];
};

/* Counts map key; value: struct offcpu_value. */
struct offcpu_key {
	__u32 kind;		/* the phase word's kind at the switch-out (RT_PHASE_*) */
	__u32 lost;		/* OFFCPU_LOST_* */
	__u64 ustack;		/* stacks-map keys (content hashes), or OFFCPU_NO_STACK */
	__u64 kstack;
	char comm[OFFCPU_COMM_LEN];
	struct offcpu_waker waker; /* all zero without wakers */
	__u32 preempted;	/* 1: switched out still runnable (preempted, or made to
				 * yield on its way back to user space), 0: it slept */
	__u32 pad;
};

struct offcpu_value {
	__u64 ns;		/* off-CPU time, summed */
	__u64 intervals;
};

/* A thread off CPU since ts, under its tid; exec_ns its CPU time then (the scheduler's
 * sum_exec_runtime), which times the interval when its switch-in goes unreported. */
struct offcpu_start {
	__u64 ts;
	__u64 exec_ns;
	struct offcpu_key key;	/* its waker still zero */
};

/* Counters, one copy per CPU, summed and zeroed by the drain. */
struct offcpu_counters {
	__u64 switches;		/* target threads switched out while enabled */
	__u64 intervals;	/* target threads switched back in after a timed switch-out */
	__u64 kept;		/* intervals added under a key */
	__u64 kept_ns;
	__u64 under_min;	/* intervals shorter than the minimum: counted, not kept */
	__u64 under_min_ns;
	__u64 counts_full;	/* intervals whose key found no room: their time here */
	__u64 counts_full_ns;
	__u64 start_full;	/* switch-outs that found no room for their start record */
	__u64 ustack_full;	/* kept intervals whose user stack found the stacks map full */
	__u64 kstack_full;
	__u64 ustack_errors;	/* kept intervals whose user stack walk failed or found none */
	__u64 kstack_errors;
	__u64 wakeups;		/* wake-ups of target threads while enabled (wakers only) */
	__u64 waker_full;	/* of them, found no room in the wakers map */
	__u64 fired;		/* sched_switch runs while enabled, of any task */
	__u64 restarts;		/* intervals whose switch-in the kernel never reported (this
				 * kernel skips sched_switch for some tasks' switches out):
				 * the next switch-out found the start record still there and
				 * ended the interval from the thread's CPU time; they are
				 * counted in intervals too */
	__u64 waker_lost;	/* kept intervals whose wake-up found no room in the wakers
				 * map (OFFCPU_LOST_WAKER_FULL in the key's waker) */
};

#endif /* SCHEDLAB_PROBES_OFFCPU_H */
