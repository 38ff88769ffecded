/*
 * runtime probe: the record runtime.bpf.c puts in the ring buffer for each USDT event of
 * the runtime, and the kinds — one definition for both sides, so only fixed-width
 * integers and explicit padding (no pointers, long, bool or #include). runtime.c asserts
 * the size, and that the kinds are probes.h's.
 *
 * An event that finds the ring buffer full is counted in the per-CPU drops array at
 * kind * 2 + in_window, so that what the runtime produced equals what was delivered plus
 * what was dropped, kind by kind, inside and outside the counters' window.
 */
#ifndef SCHEDLAB_PROBES_RUNTIME_H
#define SCHEDLAB_PROBES_RUNTIME_H

/* One per USDT point of the runtime's provider "rt" (runtime/usdt.h). */
#define RUNTIME_EV_SPAWN       0 /* a0 task, a1 spawn path */
#define RUNTIME_EV_ENQUEUE     1 /* a0 task, a1 path; worker: where it went */
#define RUNTIME_EV_RUN_BEGIN   2 /* a0 task */
#define RUNTIME_EV_RUN_END     3 /* a0 task, a1 what next: 0 done, 1 yield, 2 wait */
#define RUNTIME_EV_STEAL       4 /* worker the thief, a0 victim, a1 tasks moved */
#define RUNTIME_EV_PLACE       5 /* a0 task, worker from, a1 to, a2 to's load | fallback << 32 */
#define RUNTIME_EV_PARK	       6
#define RUNTIME_EV_UNPARK      7 /* a0 woken to search */
#define RUNTIME_EV_BLOCK_BEGIN 8 /* a0 task */
#define RUNTIME_EV_BLOCK_END   9 /* a0 task, a1 ns blocked */
#define RUNTIME_EV_FLUSH       10 /* a0 tasks moved */
#define RUNTIME_EV_WINDOW      11 /* a0 1: the counters' window opens, 0: it closes */
#define RUNTIME_NKINDS	       12

#define RUNTIME_IN_WINDOW 1 /* flags: between the window marks */

struct runtime_event {
	__u64 ts;	/* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 tid;	/* the thread, as seen from the loader's pid namespace */
	__u16 kind;	/* RUNTIME_EV_* */
	__u16 flags;	/* RUNTIME_IN_WINDOW */
	__u32 worker;	/* worker index, 0xffff outside a worker (RT_NO_WORKER) */
	__u32 pad;
	__u64 a0, a1, a2;
};

#endif /* SCHEDLAB_PROBES_RUNTIME_H */
