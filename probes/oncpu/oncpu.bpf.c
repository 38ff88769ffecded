// SPDX-License-Identifier: GPL-2.0
/*
 * oncpu: perf-event sampler that keeps the threads of one target process.
 *
 * Runs on every sample of every CPU (hardirq or NMI context), so it does the least
 * it can: filter by tgid, walk user and kernel stacks into the stack map, read the
 * runtime's phase word, and add one to the count under {tgid, stacks, phase, comm}.
 * Invariant: every sample of the target while enabled adds one to samples and one
 * either to a key's count or to counts_full; a failed stack walk is kept in the key
 * as a loss bit, never dropped (see probes.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "probes/oncpu/oncpu.h"

#define EEXIST 17
#define EFAULT 14

char LICENSE[] SEC("license") = "GPL";

/* The loader's pid namespace, so that tgids mean what the loader's pids mean even
 * inside a container. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* Written by the loader through the mmapped .bss: target and phase offset first, then
 * enabled (a release store; x86 keeps the order). Zero at load: warm-up samples taken
 * before the first start are never kept. */
__u32 enabled = 0;
__u32 target_tgid = 0;
__s64 phase_tls_off = 0;

/* Sizes are set by the loader before load; value = ONCPU_MAX_DEPTH ips. No
 * BPF_F_REUSE_STACKID: a hash collision must fail (-EEXIST), not hand back an older
 * stack under the new one's id. */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, ONCPU_MAX_DEPTH * sizeof(__u64));
	__uint(max_entries, 16384);
} stacks SEC(".maps");

/* Preallocated (the default): a perf_event program may run in NMI context. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct oncpu_key);
	__type(value, __u64);
	__uint(max_entries, 40960);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct oncpu_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* The word rt_phase_ptr points at (runtime/phase.h), found from the thread pointer;
 * 0 when the thread has none or either read faults (the page may be out: no faulting
 * allowed here). */
static __always_inline __u64 read_phase(void)
{
	__u64 tp = 0, ptr = 0, word = 0;
	struct task_struct *task;

	if (!phase_tls_off)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
#if defined(__TARGET_ARCH_x86)
	/* fsbase is saved on every arch_prctl(ARCH_SET_FS) and context switch, and
	 * glibc sets it once per thread, so it is current for a running thread. */
	tp = BPF_CORE_READ(task, thread.fsbase);
#elif defined(__TARGET_ARCH_arm64)
	tp = BPF_CORE_READ(task, thread.uw.tp_value);
#endif
	if (!tp)
		return 0;
	if (bpf_probe_read_user(&ptr, sizeof(ptr), (void *)(tp + phase_tls_off)) || !ptr)
		return 0;
	if (bpf_probe_read_user(&word, sizeof(word), (void *)ptr))
		return 0;
	return word;
}

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	struct bpf_pidns_info ns = {};
	struct oncpu_counters *c;
	struct oncpu_key key = {};
	__u32 zero = 0;
	__u64 one = 1, *val;
	long id;
	int err;

	if (!enabled)
		return 0;
	/* Fails for tasks outside the loader's namespace: those are not the target. */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	if (ns.tgid != target_tgid)
		return 0;
	c = bpf_map_lookup_elem(&counters, &zero);
	if (!c)
		return 0;
	c->samples++;

	key.tgid = ns.tgid;
	id = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
	if (id >= 0) {
		key.ustack_id = id;
	} else {
		key.ustack_id = ONCPU_NO_STACK;
		if (id == -EEXIST) {
			key.lost |= ONCPU_LOST_USTACK_COLLISION;
			c->ustack_collisions++;
		} else {
			key.lost |= ONCPU_LOST_USTACK_ERROR;
			c->ustack_errors++;
		}
	}
	id = bpf_get_stackid(ctx, &stacks, 0);
	if (id >= 0) {
		key.kstack_id = id;
	} else {
		key.kstack_id = ONCPU_NO_STACK;
		/* __bpf_get_stackid() answers -EFAULT for an empty callchain: the sample
		 * hit user mode, where there is no kernel stack to lose. */
		if (id == -EEXIST) {
			key.lost |= ONCPU_LOST_KSTACK_COLLISION;
			c->kstack_collisions++;
		} else if (id != -EFAULT) {
			key.lost |= ONCPU_LOST_KSTACK_ERROR;
			c->kstack_errors++;
		}
	}
	/* phase and worker only: the task id (the high half) would make every task's
	 * samples a key of their own and fill the map on a spawn-heavy workload */
	key.phase = read_phase() & 0xffffffffull;
	bpf_get_current_comm(key.comm, sizeof(key.comm));

	val = bpf_map_lookup_elem(&counts, &key);
	if (val) {
		__sync_fetch_and_add(val, 1);
		return 0;
	}
	err = bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST);
	if (err == -EEXIST) {
		/* Another CPU inserted the same key between our lookup and update. */
		val = bpf_map_lookup_elem(&counts, &key);
		if (val) {
			__sync_fetch_and_add(val, 1);
			return 0;
		}
	}
	/* -E2BIG (full), or -EBUSY (the map's bucket lock is held on this CPU by the
	 * context this NMI interrupted): either way the sample's stacks are lost. */
	if (err)
		c->counts_full++;
	return 0;
}
