// SPDX-License-Identifier: GPL-2.0
/*
 * offcpu: off-CPU time of one target process's threads, from sched_switch, with the
 * user and kernel stack each thread left the CPU with, and (wakers) the stacks of
 * whoever woke it, from sched_waking and sched_wakeup_new.
 *
 * sched_switch runs on every context switch of the machine, so a switch of no target
 * thread costs a flag, two tgids (current's from a helper, next's one kernel read) and
 * two compares. A target thread switching out walks both its stacks, stores each once
 * in the stacks map (keyed by a hash of its contents, as oncpu's are), reads its phase
 * word and leaves a start record under its tid; switching back in, it adds the interval
 * to the count of its key, or counts it under the minimum. Invariants: every interval
 * that ends while enabled adds one to intervals and to exactly one of kept, under_min
 * or counts_full, with its time in the matching _ns counter; kept intervals' time is
 * the sum of the counts map's ns; a key's stack hashes name stacks in the stacks map,
 * or are 0 with a loss bit.
 *
 * Raw tracepoints, not BTF ones: libbpf resolves a BTF tracepoint in the kernel's whole
 * BTF, which it parses at every load, where a raw one needs only the few types the
 * CO-RE reads name (probes/common/core_btf.c). Their arguments are plain pointers, read
 * with BPF_CORE_READ; prev is current, whose BTF pointer the user-stack walk takes.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "probes/offcpu/offcpu.h"
#include "probes/common/bpf_common.h"

_Static_assert(OFFCPU_MAX_DEPTH == PROBE__MAX_DEPTH, "one stack depth for every probe");
_Static_assert(sizeof(struct offcpu_stack) == sizeof(struct probe__stack), "one stack layout");

char LICENSE[] SEC("license") = "GPL";

/* The loader's pid namespace, so that the target's tgid means what the loader's pids
 * mean even inside a container. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;
/* Intervals shorter than this are counted, not kept. */
const volatile __u64 min_block_ns = 1000;
/* Keep the waker's stacks: the wake-up programs are loaded only then. */
const volatile __u32 wakers = 0;
/* Which stacks a switch-out (and with wakers, a wake-up) walks. The kernel's is most of
 * a switch-out's cost (an ORC unwind through the scheduler and the syscall); without it
 * the switch says whether it was involuntary, which the kernel stack would have shown. */
const volatile __u32 user_stacks = 1;
const volatile __u32 kernel_stacks = 1;

/* Written by the loader through the mmapped .bss: the target and its phase offset,
 * target_ktgid cleared, then enabled (a release store; x86 keeps the order). */
__u32 enabled = 0;
__u32 target_tgid = 0;
__s64 phase_tls_off = 0;
/* The target's tgid as the kernel's task_struct holds it (the init namespace's),
 * learnt from the first target thread to switch out while enabled: the next task of a
 * switch and the wakee of a wake-up are not current, so the namespace helper cannot
 * name their tgid. Every interval begins with a switch-out, so it is known before any
 * switch-in or wake-up can matter. */
__u32 target_ktgid = 0;

/* Sized by the loader: distinct stacks, keys, and threads off CPU at once. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct offcpu_stack);
	__uint(max_entries, 4096);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct offcpu_key);
	__type(value, struct offcpu_value);
	__uint(max_entries, 16384);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_start);
	__uint(max_entries, 4096);
} starts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_waker);
	__uint(max_entries, 4096);
} woken SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct offcpu_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* Where a switch's (slot 0) or a wake-up's (slot 1) two stacks are walked: 2 KiB, too
 * big for the BPF stack. Both run with interrupts off (under the run queue's lock, and
 * the wakee's pi_lock), so neither interrupts itself on a CPU; two slots in case one
 * ever nests in the other. */
struct scratch {
	struct offcpu_stack user, kernel;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 2);
} scratch SEC(".maps");

/* A thread's record in starts or woken, keyed by its tid: written in place once it
 * exists, so that the steady state takes no bucket lock. Only the thread's own
 * switches and wake-ups touch it, and the scheduler orders those, so the plain stores
 * do not race; the insert of a thread's first record is the only update. 0 with *old
 * the record to write over, or 0 with *old NULL when rec was inserted, or the insert's
 * -errno (-E2BIG: full). */
static __always_inline long put_record(void *map, __u32 tid, const void *rec, void **old)
{
	void *v = bpf_map_lookup_elem(map, &tid);

	*old = v;
	if (v)
		return 0;
	return bpf_map_update_elem(map, &tid, rec, BPF_NOEXIST);
}

/* Walk the current task's (task's) user stack, by frame pointers from its saved user
 * registers, or with user false its kernel stack, into s, hash it into *id and store
 * it; a walk that fails or finds nothing sets error_bit. */
static __always_inline void take_stack(void *ctx, struct task_struct *task, bool user,
				       struct offcpu_stack *s, __u64 *id, __u32 *lost,
				       __u32 full_bit, __u32 error_bit)
{
	if (user) {
		s->nr = probe__user_stack(ctx, task, probe__saved_uregs(task), s->ips,
					  OFFCPU_MAX_DEPTH);
	} else {
		long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), 0);

		s->nr = n > 0 ? n / sizeof(s->ips[0]) : 0;
	}
	*id = OFFCPU_NO_STACK;
	if (!s->nr) {
		*lost |= error_bit;
		return;
	}
	*id = probe__stack_hash((const struct probe__stack *)s);
	probe__store_stack(&stacks, id, s, lost, full_bit, error_bit);
}

/* The target's kernel tgid, learnt from current (prev, of kernel tgid cur_tgid) if it
 * is the target; 0 while unknown. */
static __always_inline __u32 target(__u32 cur_tgid)
{
	struct bpf_pidns_info ns = {};
	__u32 k = target_ktgid;

	if (k)
		return k;
	/* Fails for tasks outside the loader's namespace: those are not the target. */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)) ||
	    ns.tgid != target_tgid)
		return 0;
	k = cur_tgid;
	target_ktgid = k;
	return k;
}

/* End st's interval, delta long: add it to the count of its key (with the waker that
 * ended it), or count it under the minimum or with no room. */
static __always_inline void end_interval(struct offcpu_start *st, __u32 tid, __u64 delta,
					 struct offcpu_counters *c)
{
	struct offcpu_value zero = {}, *val;
	struct offcpu_key key;
	struct offcpu_waker *w;

	__builtin_memcpy(&key, &st->key, sizeof(key));
	st->ts = 0; /* consumed */
	c->intervals++;
	if (wakers) {
		w = bpf_map_lookup_elem(&woken, &tid);
		if (w && w->comm[0]) {
			__builtin_memcpy(&key.waker, w, sizeof(key.waker));
			w->comm[0] = 0;
		}
	}
	if (delta < min_block_ns) {
		c->under_min++;
		c->under_min_ns += delta;
		return;
	}
	val = bpf_map_lookup_elem(&counts, &key);
	if (!val) {
		long err = bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);

		/* -EEXIST: another CPU inserted the same key since our lookup */
		if (!err || err == -EEXIST)
			val = bpf_map_lookup_elem(&counts, &key);
	}
	if (!val) {
		c->counts_full++;
		c->counts_full_ns += delta;
		return;
	}
	__sync_fetch_and_add(&val->ns, delta);
	__sync_fetch_and_add(&val->intervals, 1);
	c->kept++;
	c->kept_ns += delta;
	if (key.lost & OFFCPU_LOST_USTACK_FULL)
		c->ustack_full++;
	if (key.lost & OFFCPU_LOST_KSTACK_FULL)
		c->kstack_full++;
	if (key.lost & OFFCPU_LOST_USTACK_ERROR)
		c->ustack_errors++;
	if (key.lost & OFFCPU_LOST_KSTACK_ERROR)
		c->kstack_errors++;
	if (key.waker.lost & OFFCPU_LOST_WAKER_FULL)
		c->waker_lost++;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       unsigned int prev_state, struct offcpu_counters *c)
{
	struct offcpu_start st = {};
	struct scratch *sc;
	struct offcpu_start *old;
	__u32 slot = 0, tid = (__u32)bpf_get_current_pid_tgid();
	__u64 entry, phase;

	sc = bpf_map_lookup_elem(&scratch, &slot);
	if (!sc)
		return;
	c->switches++;
	/* sum_exec_runtime is up to date here: __schedule() has put prev (update_curr())
	 * before it fires the tracepoint */
	st.exec_ns = prev->se.sum_exec_runtime;
	old = bpf_map_lookup_elem(&starts, &tid);
	/* Its last interval never saw its switch-in: this kernel fires no sched_switch for
	 * some tasks' switches out (perf misses the same ones), so the thread that follows
	 * them runs unreported. It has run since for the CPU time it gained, and was off
	 * CPU for the rest; the wake-up that ended the interval, if any, is still kept. */
	if (old && old->ts) {
		__u64 wall = bpf_ktime_get_ns() - old->ts, ran = st.exec_ns - old->exec_ns;

		c->restarts++;
		end_interval(old, tid, wall > ran ? wall - ran : 0, c);
	}
	/* a wake-up seen before this switch-out woke the thread from an earlier wait, or
	 * found it still running: it is not what ends the interval that starts here */
	if (wakers) {
		struct offcpu_waker *w = bpf_map_lookup_elem(&woken, &tid);

		if (w)
			w->comm[0] = 0; /* none */
	}
	if (kernel_stacks)
		take_stack(ctx, prev, false, &sc->kernel, &st.key.kstack, &st.key.lost,
			   OFFCPU_LOST_KSTACK_FULL, OFFCPU_LOST_KSTACK_ERROR);
	if (user_stacks)
		take_stack(ctx, prev, true, &sc->user, &st.key.ustack, &st.key.lost,
			   OFFCPU_LOST_USTACK_FULL, OFFCPU_LOST_USTACK_ERROR);
	/* __schedule(): voluntary only when not preempted and no longer runnable, as the
	 * sched probe counts it */
	st.key.preempted = preempt || !prev_state;
	phase = probe__read_phase(prev, phase_tls_off, false, &entry);
	st.key.kind = RT_PHASE_KIND(phase) < RT_PHASE_COUNT ? RT_PHASE_KIND(phase) : 0;
	bpf_get_current_comm(st.key.comm, sizeof(st.key.comm));
	/* last, so that the interval excludes the walks */
	st.ts = bpf_ktime_get_ns();
	if (old) {
		__builtin_memcpy(old, &st, sizeof(st));
		return;
	}
	/* only this thread inserts its record: the one failure is -E2BIG, full */
	if (bpf_map_update_elem(&starts, &tid, &st, BPF_NOEXIST))
		c->start_full++;
}

static __always_inline void switch_in(__u32 tid, struct offcpu_counters *c)
{
	struct offcpu_start *st = bpf_map_lookup_elem(&starts, &tid);

	if (!st || !st->ts)
		return; /* off CPU since before the window: not timed */
	end_interval(st, tid, bpf_ktime_get_ns() - st->ts, c);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u32 zero = 0, k, cur_tgid = bpf_get_current_pid_tgid() >> 32, next_tid, next_tgid;
	struct offcpu_counters *c;

	if (!enabled)
		return 0;
	c = bpf_map_lookup_elem(&counters, &zero);
	if (!c)
		return 0;
	c->fired++;
	k = target(cur_tgid);
	if (!k)
		return 0;
	if (cur_tgid == k)
		switch_out(ctx, bpf_get_current_task_btf(), preempt, prev_state, c);
	probe__pid_tgid(next, &next_tid, &next_tgid);
	if (next_tgid == k)
		switch_in(next_tid, c);
	return 0;
}

/* A target thread woken: keep the waker's stacks (current's) under its tid until it
 * runs. The user stack only of a waker in the target; an interrupt's wake-up (a timer
 * on an idle CPU, say) has the interrupted task as current and the interrupt's kernel
 * stack, which names the real cause. */
static __always_inline int on_wakeup(void *ctx, struct task_struct *p)
{
	struct offcpu_waker w = {}, *old;
	struct offcpu_counters *c;
	struct task_struct *cur;
	struct scratch *sc;
	__u32 zero = 0, slot = 1, tid, tgid, k;

	if (!enabled || !wakers)
		return 0;
	k = target_ktgid;
	if (!k)
		return 0;
	probe__pid_tgid(p, &tid, &tgid);
	if (tgid != k)
		return 0;
	c = bpf_map_lookup_elem(&counters, &zero);
	sc = bpf_map_lookup_elem(&scratch, &slot);
	if (!c || !sc)
		return 0;
	c->wakeups++;
	cur = bpf_get_current_task_btf();
	w.tgid = cur->tgid;
	bpf_get_current_comm(w.comm, sizeof(w.comm));
	if (kernel_stacks)
		take_stack(ctx, cur, false, &sc->kernel, &w.kstack, &w.lost,
			   OFFCPU_LOST_WKSTACK_FULL, 0);
	if (user_stacks && w.tgid == k)
		take_stack(ctx, cur, true, &sc->user, &w.ustack, &w.lost, OFFCPU_LOST_WUSTACK_FULL,
			   0);
	/* a comm is never empty, so w.comm[0] says the record holds a wake-up */
	if (!w.comm[0])
		w.comm[0] = '?';
	if (put_record(&woken, tid, &w, (void **)&old)) {
		struct offcpu_start *st = bpf_map_lookup_elem(&starts, &tid);

		c->waker_full++;
		/* the interval this wake-up ends has no waker to show: its key says it was
		 * lost (a later wake-up that finds room replaces the mark at the switch-in) */
		if (st && st->ts)
			st->key.waker.lost = OFFCPU_LOST_WAKER_FULL;
	} else if (old) {
		__builtin_memcpy(old, &w, sizeof(w));
	}
	return 0;
}

/* sched_waking, not sched_wakeup: a wake-up of a thread on another CPU is queued to
 * that CPU (ttwu_queue_wakelist), and sched_wakeup fires there, in the IPI, with
 * whatever ran as current; sched_waking fires in the waker, as try_to_wake_up begins. */
SEC("raw_tp/sched_waking")
int BPF_PROG(offcpu_wakeup, struct task_struct *p)
{
	return on_wakeup(ctx, p);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(offcpu_wakeup_new, struct task_struct *p)
{
	return on_wakeup(ctx, p);
}
