/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF programs share (included by probes/<name>/<name>.bpf.c only, after
 * vmlinux.h and the libbpf headers): reading the runtime's phase word from a thread's
 * TLS, and storing a walked stack under its hash (probes/common/stack.bpf.h, which
 * needs no kernel types, for programs built without vmlinux.h). Pointer-free and
 * map-free, so that each program keeps its own maps.
 */
#ifndef SCHEDLAB_PROBES_COMMON_BPF_COMMON_H
#define SCHEDLAB_PROBES_COMMON_BPF_COMMON_H

#include "probes/common/stack.bpf.h"
#include "runtime/phase.h"

/* The errnos the helpers return, negated (no libc headers in a BPF object). */
#define ENOENT 2
#define E2BIG  7
#define ENOMEM 12
#define EFAULT 14
#define EEXIST 17
#define ENOSPC 28

/* PERF_MAX_STACK_DEPTH: the most instruction pointers a walked stack holds. */
#define PROBE__MAX_DEPTH PROBE__STACK_MAX_DEPTH

/* The phase word (runtime/phase.h) of task, a thread-local variable at tls_off from
 * its thread pointer, and with want_entry the entry word after it into *entry; each 0
 * when the target has none (tls_off 0) or the read faults (the page may be out: no
 * faulting allowed here). The read is of the user memory of the current task, so task
 * must be current. */
static __always_inline __u64 probe__read_phase(struct task_struct *task, __s64 tls_off,
					       bool want_entry, __u64 *entry)
{
	__u64 tp = 0, word = 0;

	*entry = 0;
	if (!tls_off)
		return 0;
#if defined(__TARGET_ARCH_x86)
	/* fsbase is saved on every arch_prctl(ARCH_SET_FS) and context switch, and
	 * glibc sets it once per thread, so it is current for a running thread (and for
	 * one switching out: the switch saves it only after the sched_switch event). */
	tp = BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	tp = BPF_CORE_READ(task, thread.uw.tp_value);
#endif
	if (!tp || bpf_probe_read_user(&word, sizeof(word), (void *)(tp + tls_off)))
		return 0;
	/* a read of its own: a word the target lacks costs the entry, never the phase */
	if (want_entry &&
	    bpf_probe_read_user(entry, sizeof(*entry),
				(void *)(tp + tls_off + RT_PHASE_ENTRY_OFFSET)))
		*entry = 0;
	return word;
}

/* task->flags of a task with no user stack to walk (include/linux/sched.h). */
#define PROBE__PF_USER_WORKER 0x00004000
#define PROBE__PF_KTHREAD     0x00200000

/* The user registers a frame-pointer walk starts from. */
struct probe__uregs {
	__u64 ip, bp, cs;
};

/* task's user registers as the kernel saved them on entry from user mode
 * (task_pt_regs): for a task in the kernel, its state at the system call, fault or
 * interrupt. */
static __always_inline struct probe__uregs probe__saved_uregs(struct task_struct *task)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	struct probe__uregs u = {};

#if defined(__TARGET_ARCH_x86)
	u.ip = BPF_CORE_READ(regs, ip);
	u.bp = BPF_CORE_READ(regs, bp);
	u.cs = BPF_CORE_READ(regs, cs);
#else
	(void)regs;
#endif
	return u;
}

/* The user stack of the current task (task), walked by frame pointers from its user
 * registers u into ips[0..max): the number of ips, 0 for none. ctx is the program's,
 * for the kernel's walk where this one does not apply.
 *
 * The same ips as bpf_get_stack(BPF_F_USER_STACK) gives, from the same walk
 * (perf_callchain_user: the ip, then each frame's return address along the saved %rbp
 * chain), but without the kernel's two page faults at the chain's end. Every chain
 * ends in a zero %rbp (_start and clone3's child clear it, and so does our fibers'
 * entry), and the kernel's walk reads the frame at addresses 0 and 8 before it stops:
 * two faults taken and fixed up on every walk, about 5 us an event on a VM whose
 * faults exit to the hypervisor, more than all the rest of the off-CPU probe. Here a
 * frame pointer in the first page, where nothing is mapped, ends the walk unread, and
 * so does one that is not 8-byte aligned (no saved %rbp is; the kernel reads on into
 * garbage). A 32-bit task, and every architecture but x86-64, is walked by the
 * kernel. */
struct probe__walk {
	__u64 *ips;
	__u64 fp;
	__u32 nr, max;
};

/* One frame of probe__user_stack()'s walk, through bpf_loop(): the verifier checks one
 * frame once, where a loop's every exit would carry a different depth through all the
 * code after it (90,000 instructions verified for the off-CPU program, not 3,000). */
static long probe__walk_frame(__u64 i, void *arg)
{
	struct probe__walk *w = arg;
	struct {
		__u64 next, ret;
	} frame;

	if (i == 0 || i >= w->max || i >= PROBE__STACK_MAX_DEPTH)
		return i == 0 ? 0 : 1; /* ips[0], the ip, is the caller's */
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

static __always_inline __u32 probe__user_stack(void *ctx, struct task_struct *task,
					       struct probe__uregs u, __u64 *ips, const __u32 max)
{
	struct probe__walk w = { .ips = ips, .fp = u.bp, .nr = 1, .max = max };
	long n;

#if defined(__TARGET_ARCH_x86)
	if (BPF_CORE_READ(task, flags) & (PROBE__PF_KTHREAD | PROBE__PF_USER_WORKER))
		return 0; /* no user stack, as the kernel's walk finds */
	if (u.cs == 0x33) { /* __USER_CS; __USER32_CS is 0x23 */
		ips[0] = u.ip;
		bpf_loop(max, probe__walk_frame, &w, 0);
		return w.nr;
	}
#endif
	(void)task;
	(void)w;
	n = bpf_get_stack(ctx, ips, max * sizeof(ips[0]), BPF_F_USER_STACK);
	return n > 0 ? (__u64)n / sizeof(ips[0]) : 0;
}

/* Store the stack s under *id in the stacks map unless it has it already. If it
 * cannot (-E2BIG or -ENOMEM: no room), *id becomes the hash of no stack and full_bit,
 * or error_bit for another failure, is set in *lost: the caller keeps what it counts,
 * marked, rather than dropping it. */
static __always_inline void probe__store_stack(void *stacks, __u64 *id, const void *s,
					       __u32 *lost, __u32 full_bit, __u32 error_bit)
{
	long err;

	if (!*id || bpf_map_lookup_elem(stacks, id))
		return;
	err = bpf_map_update_elem(stacks, id, s, BPF_NOEXIST);
	/* -EEXIST: another CPU stored the same stack since our lookup. */
	if (!err || err == -EEXIST)
		return;
	*id = 0;
	*lost |= err == -E2BIG || err == -ENOMEM ? full_bit : error_bit;
}

#endif /* SCHEDLAB_PROBES_COMMON_BPF_COMMON_H */
