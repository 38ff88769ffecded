/*
 * The runtime's phase word (runtime/phase.h) as the BPF programs read it: a
 * thread-local variable at a known offset from the current thread's thread pointer.
 * One reading for every probe that keys on it, so that they agree on what a thread was
 * doing. BPF-only; include after vmlinux.h and the libbpf headers.
 */
#ifndef SCHEDLAB_PROBES_COMMON_PHASE_BPF_H
#define SCHEDLAB_PROBES_COMMON_PHASE_BPF_H

#include "runtime/phase.h"

/* The current thread's phase word at tls_off from its thread pointer, and, where entry
 * is not NULL, the entry word RT_PHASE_ENTRY_OFFSET past it into *entry; each 0 when
 * the target has none (tls_off 0) or its read faults (the page may be out: no faulting
 * allowed here). Only for the current task: the thread pointer is the one its CPU
 * runs with. */
static __always_inline __u64 probe_read_phase(__s64 tls_off, __u64 *entry)
{
	__u64 tp = 0, word = 0;
	struct task_struct *task;

	if (entry)
		*entry = 0;
	if (!tls_off)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
#if defined(__TARGET_ARCH_x86)
	/* fsbase is saved on every arch_prctl(ARCH_SET_FS) and context switch, and
	 * glibc sets it once per thread, so it is current for a running thread. */
	tp = BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	tp = BPF_CORE_READ(task, thread.uw.tp_value);
#endif
	if (!tp || bpf_probe_read_user(&word, sizeof(word), (void *)(tp + tls_off)))
		return 0;
	/* a read of its own: a word the target lacks costs the entry, never the phase */
	if (entry && bpf_probe_read_user(entry, sizeof(*entry),
					 (void *)(tp + tls_off + RT_PHASE_ENTRY_OFFSET)))
		*entry = 0;
	return word;
}

#endif /* SCHEDLAB_PROBES_COMMON_PHASE_BPF_H */
