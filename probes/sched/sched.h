/*
 * sched: the structs that sched.bpf.c writes and sched.c reads — one definition for
 * both sides, so only fixed-width integers, fixed arrays and explicit padding (no
 * pointers, long, bool or #include). sched.c asserts the sizes.
 *
 * One entry per thread of the target, keyed by its tid. Every event of a target thread
 * adds one to its kind's count in the per-CPU counters and, unless the thread map had
 * no room for the thread, to what that thread's entry counts: so for each kind, what
 * the entries hold plus what was lost equals what was seen.
 */
#ifndef SCHEDLAB_PROBES_SCHED_H
#define SCHEDLAB_PROBES_SCHED_H

#define SCHED_COMM_LEN 16
/* A thread's name is copied at its first this many switch-outs. */
#define SCHED_COMM_SWITCHES 16
/* Run-queue latency slots: slot i counts waits of [2^i, 2^(i+1)) ns (slot 0 also 0 and
 * 1 ns), the last slot everything from 2^(SCHED_SLOTS-1) ns (34 s) up. */
#define SCHED_SLOTS    36
/* The phase word's worker bits when the thread drives no worker (runtime/phase.h). */
#define SCHED_NO_WORKER 0xffff

/* Event kinds, the index of the per-CPU counters' seen[] and lost[]. */
#define SCHED_EV_SWITCH_OUT 0 /* sched_switch, the target's thread leaves the CPU */
#define SCHED_EV_SWITCH_IN  1 /* sched_switch, the target's thread gets the CPU */
#define SCHED_EV_WAKEUP     2 /* sched_wakeup and sched_wakeup_new */
#define SCHED_EV_MIGRATE    3 /* sched_migrate_task */
#define SCHED_NEV           4

/* Thread map value. Written on the CPU the thread runs on (switch in and out), by the
 * waker's CPU (queued_ns) and by the CPU that moves it (migrations, added atomically). */
struct sched_thread {
	__u64 queued_ns;    /* when it became runnable (woken, or preempted still runnable);
			     * 0: not waiting for a CPU, or unknown (queued before the probe
			     * began) */
	__u64 oncpu_since;  /* when it got the CPU; 0: off the CPU, or on it since before
			     * the probe began */
	__u64 oncpu_ns;     /* time on a CPU as traced: switch-in to switch-out, summed */
	__u64 voluntary;    /* switches out while not runnable (it blocked or slept) */
	__u64 involuntary;  /* switches out while still runnable (preempted, or yielded) */
	__u64 migrations;   /* moves to another CPU */
	__u64 wakeups;
	__u64 runq_ns;      /* sum of the run-queue waits in hist */
	__u64 runq_max_ns;
	__u64 hist[SCHED_SLOTS]; /* run-queue waits: queued_ns to switch-in */
	__u32 worker;       /* worker bits of the phase word at its last switch-out;
			     * SCHED_NO_WORKER: none (or no phase word) */
	__u32 worker_changes; /* switch-outs whose worker differed from the one before */
	char comm[SCHED_COMM_LEN]; /* its name at its first event, then at its first
				    * SCHED_COMM_SWITCHES switch-outs */
	__u64 last_out_ns;  /* its last switch-out; 0: none seen */
	__u64 unseen_ins;   /* switch-outs after a switch-out: the switch-in between never
			     * reached the tracepoint (seen here under load, by perf too) */
	__u64 unseen_ns;    /* the time from the switch-out before each to it: what the
			     * missed interval on the CPU lies within */
	__u64 exec_first;   /* the kernel's count of its time on a CPU
			     * (se.sum_exec_runtime) at its first event */
	__u64 exec_last;    /* that count at its last switch-out (exec_first until one):
			     * exec_last - exec_first is its time on a CPU whether or not
			     * every switch reached the tracepoint */
};

/* Per-CPU counters. */
struct sched_counters {
	__u64 seen[SCHED_NEV]; /* events of the target's threads, by kind */
	__u64 lost[SCHED_NEV]; /* of them, those whose thread found the thread map full */
};

#endif /* SCHEDLAB_PROBES_SCHED_H */
