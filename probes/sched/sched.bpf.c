// SPDX-License-Identifier: GPL-2.0
/*
 * sched: scheduler events of one target process's threads, aggregated per thread in
 * the kernel: run-queue latency (from a wake-up, or from a switch-out that left the
 * thread runnable, to its next switch-in) as a log2 histogram, voluntary and
 * involuntary switches, migrations, and time on a CPU. That time is the kernel's own
 * count (se.sum_exec_runtime, read at the thread's first event and at each switch-out,
 * as the thread's CPU clock reads it); the switch-in to switch-out intervals are summed
 * beside it as a check, since now and then a switch never reaches the tracepoint.
 *
 * Runs on every context switch, wake-up and migration of the machine, so a task that
 * is not the target's costs a flag test, its tgid (current's from a helper, another's
 * one kernel read, with its pid) and a compare. Switches are classified as the kernel's own
 * nvcsw/nivcsw counts are (__schedule()): voluntary when the thread left the CPU not
 * preempted and not runnable, involuntary otherwise. Invariant: every event of a target
 * thread adds one to its kind in seen[] and either lands in the thread's entry or adds
 * one to lost[] (the thread map was full), never both, never neither.
 *
 * Raw tracepoints, not BTF ones: libbpf resolves a BTF tracepoint in the kernel's whole
 * BTF, which it parses at every load, where a raw one needs only the few types the
 * CO-RE reads name (probes/common/core_btf.c). Their arguments are plain pointers, read
 * with BPF_CORE_READ; sched_switch's prev is current, whose BTF pointer reads directly.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "probes/sched/sched.h"
#include "probes/common/bpf_common.h"


char LICENSE[] SEC("license") = "GPL";

/* Written by the loader through the mmapped .bss: target and phase offset first, then
 * enabled (a release store; x86 keeps the order). */
__u32 enabled = 0;
__u32 target_tgid = 0;
__s64 phase_tls_off = 0;

/* What a new thread's entry starts as (a global, so the update's value is not a
 * 400-byte copy on the BPF stack). Never written. */
struct sched_thread fresh = { .worker = SCHED_NO_WORKER };

/* Preallocated; the loader sizes it from the threads a fork may run. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sched_thread);
	__uint(max_entries, 1024);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct sched_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* The target thread t's (of thread id tid) entry, made on its first event; NULL when
 * the map has no room for it, and the event is counted lost. */
static __always_inline struct sched_thread *thread_of(struct task_struct *t, __u32 tid,
						      __u32 kind, struct sched_counters *c)
{
	struct sched_thread *v;
	long err;

	c->seen[kind & (SCHED_NEV - 1)]++;
	v = bpf_map_lookup_elem(&threads, &tid);
	if (v)
		return v;
	err = bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST);
	/* -EEXIST: another CPU made it since our lookup */
	if (!err || err == -EEXIST)
		v = bpf_map_lookup_elem(&threads, &tid);
	if (!v) {
		c->lost[kind & (SCHED_NEV - 1)]++;
		return NULL;
	}
	if (!err) {
		BPF_CORE_READ_STR_INTO(&v->comm, t, comm);
		/* off a CPU (switch-in, wake-up, migration) the count is at rest; at a
		 * switch-out the scheduler has just brought it up to date */
		v->exec_first = v->exec_last = BPF_CORE_READ(t, se.sum_exec_runtime);
	}
	return v;
}

static __always_inline struct sched_counters *counters_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&counters, &zero);
}

/* floor(log2(v)) for v > 0, else 0 */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0, s;

	s = (v > 0xffffffffull) << 5; v >>= s; r |= s;
	s = (v > 0xffff) << 4; v >>= s; r |= s;
	s = (v > 0xff) << 3; v >>= s; r |= s;
	s = (v > 0xf) << 2; v >>= s; r |= s;
	s = (v > 0x3) << 1; v >>= s; r |= s;
	r |= (v >> 1);
	return r;
}

/* prev is current, as bpf_get_current_task_btf() gives it: its fields load directly. */
static __always_inline void switch_out(struct sched_counters *c, struct task_struct *prev,
				       __u32 tid, bool preempt, unsigned int prev_state,
				       __u64 now)
{
	struct sched_thread *v;
	__u64 word, entry;
	__u32 worker;

	if (!(v = thread_of(prev, tid, SCHED_EV_SWITCH_OUT, c)))
		return;
	if (v->oncpu_since) {
		v->oncpu_ns += now - v->oncpu_since;
		v->oncpu_since = 0;
	} else if (v->last_out_ns) {
		/* out, then out again: it came back to a CPU unseen in between. (None seen
		 * before: it was on a CPU when the window began, not a loss.) */
		v->unseen_ins++;
		v->unseen_ns += now - v->last_out_ns;
	}
	v->last_out_ns = now;
	/* __schedule() has charged prev its time up to now (put_prev_task, or the
	 * dequeue of a thread that blocks) before it traces the switch */
	v->exec_last = prev->se.sum_exec_runtime;
	/* __schedule(): a switch is voluntary only when not preempted and the thread's
	 * state is not TASK_RUNNING (0); otherwise the thread stays on the run queue, and
	 * its wait for the CPU starts now */
	if (!preempt && prev_state) {
		v->voluntary++;
		v->queued_ns = 0;
	} else {
		v->involuntary++;
		v->queued_ns = now;
	}
	/* prev is current here: its phase word says which worker it drove */
	word = probe__read_phase(prev, phase_tls_off, false, &entry);
	worker = word ? RT_PHASE_WORKER(word) : SCHED_NO_WORKER;
	if (worker != SCHED_NO_WORKER && worker != v->worker) {
		if (v->worker != SCHED_NO_WORKER)
			v->worker_changes++;
		v->worker = worker;
	}
	/* a thread names itself as it starts (pthread_setname_np), before its first few
	 * waits; the loader reads a live thread's name from /proc at the drain, so only an
	 * exited thread's name comes from here, and the copy is not paid on every switch */
	if (v->voluntary + v->involuntary <= SCHED_COMM_SWITCHES)
		bpf_get_current_comm(v->comm, sizeof(v->comm));
}

static __always_inline void switch_in(struct sched_counters *c, struct task_struct *next,
				      __u32 tid, __u64 now)
{
	struct sched_thread *v;

	if (!(v = thread_of(next, tid, SCHED_EV_SWITCH_IN, c)))
		return;
	if (v->queued_ns && now > v->queued_ns) {
		__u64 d = now - v->queued_ns;
		__u32 slot = log2_u64(d);

		if (slot >= SCHED_SLOTS)
			slot = SCHED_SLOTS - 1;
		v->hist[slot]++;
		v->runq_ns += d;
		if (d > v->runq_max_ns)
			v->runq_max_ns = d;
	}
	v->queued_ns = 0;
	v->oncpu_since = now;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 tgid = target_tgid, prev_tgid, next_tid, next_tgid;
	struct sched_counters *c;
	__u64 now, id;

	if (!enabled)
		return 0;
	id = bpf_get_current_pid_tgid(); /* prev is current */
	prev_tgid = id >> 32;
	probe__pid_tgid(next, &next_tid, &next_tgid);
	if ((prev_tgid != tgid && next_tgid != tgid) || !(c = counters_here()))
		return 0;
	now = bpf_ktime_get_ns();
	if (prev_tgid == tgid)
		switch_out(c, bpf_get_current_task_btf(), (__u32)id, preempt, prev_state, now);
	if (next_tgid == tgid)
		switch_in(c, next, next_tid, now);
	return 0;
}

static __always_inline void wakeup(struct task_struct *p)
{
	struct sched_counters *c;
	struct sched_thread *v;
	__u32 tid, tgid;

	if (!enabled)
		return;
	probe__pid_tgid(p, &tid, &tgid);
	if (tgid != target_tgid || !(c = counters_here()))
		return;
	if (!(v = thread_of(p, tid, SCHED_EV_WAKEUP, c)))
		return;
	v->wakeups++;
	/* a thread still on its CPU (woken before it got to sleep) is not queued, and one
	 * already queued (preempted) keeps the earlier time */
	if (!v->queued_ns && !v->oncpu_since)
		v->queued_ns = bpf_ktime_get_ns();
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup, struct task_struct *p)
{
	wakeup(p);
	return 0;
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new, struct task_struct *p)
{
	wakeup(p);
	return 0;
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(sched_migrate_task, struct task_struct *p, int dest_cpu)
{
	struct sched_counters *c;
	struct sched_thread *v;
	__u32 tid, tgid;

	if (!enabled)
		return 0;
	probe__pid_tgid(p, &tid, &tgid);
	if (tgid != target_tgid || !(c = counters_here()))
		return 0;
	/* set_task_cpu() traces only real moves; the moving CPU is not the thread's own,
	 * hence the atomic add */
	if ((v = thread_of(p, tid, SCHED_EV_MIGRATE, c)))
		__sync_fetch_and_add(&v->migrations, 1);
	return 0;
}
