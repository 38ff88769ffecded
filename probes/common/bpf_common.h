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
