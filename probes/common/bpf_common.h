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

/* task's pid and tgid, for a raw tracepoint's task argument (a plain pointer): one
 * kernel read of both, the two fields being adjacent in task_struct as they have been
 * for as long as it has had them, else (a kernel that moved them) a read of each. The
 * offsets are CO-RE constants, so the verifier keeps one branch. */
static __always_inline void probe__pid_tgid(struct task_struct *task, __u32 *pid, __u32 *tgid)
{
	__u32 both[2] = {};

	if (bpf_core_field_offset(struct task_struct, tgid) ==
		    bpf_core_field_offset(struct task_struct, pid) + sizeof(both[0]) &&
	    bpf_core_field_size(struct task_struct, pid) == sizeof(both[0]) &&
	    bpf_core_field_size(struct task_struct, tgid) == sizeof(both[0])) {
		bpf_probe_read_kernel(both, sizeof(both),
				      (char *)task + bpf_core_field_offset(struct task_struct, pid));
	} else {
		both[0] = BPF_CORE_READ(task, pid);
		both[1] = BPF_CORE_READ(task, tgid);
	}
	*pid = both[0];
	*tgid = both[1];
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
 * registers u into ips[0..max) (probe__walk_fp(): the kernel's walk without its page
 * faults): the number of ips, 0 for none. ctx is the program's, for the kernel's walk
 * where this one does not apply: a 32-bit task, and every architecture but x86-64. */
static __always_inline __u32 probe__user_stack(void *ctx, struct task_struct *task,
					       struct probe__uregs u, __u64 *ips, const __u32 max)
{
	long n;

#if defined(__TARGET_ARCH_x86)
	if (BPF_CORE_READ(task, flags) & (PROBE__PF_KTHREAD | PROBE__PF_USER_WORKER))
		return 0; /* no user stack, as the kernel's walk finds */
	if (u.cs == PROBE__USER_CS)
		return probe__walk_fp(u.ip, u.bp, ips, max);
#endif
	(void)task;
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
