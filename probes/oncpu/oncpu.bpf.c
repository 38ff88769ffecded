// SPDX-License-Identifier: GPL-2.0
/*
 * oncpu: perf-event sampler that keeps the threads of one target process.
 *
 * Runs on every sample of every CPU (hardirq or NMI context), so it does the least
 * it can: filter by tgid, copy the user and kernel stacks into a per-CPU scratch
 * buffer and hash their contents, read the runtime's phase word, and add one to the
 * count under {tgid, stack hashes, phase, comm}; only a key's first sample stores its
 * stacks in the stacks map. Invariants: every sample of the target while enabled adds
 * one to samples and one either to a key's count or to counts_full; a key's stack
 * hashes name stacks in the stacks map; a stack that cannot be walked or stored is
 * kept in the key as a loss bit, never dropped (see probes.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "probes/oncpu/oncpu.h"

#define ENOENT 2
#define E2BIG  7
#define ENOMEM 12
#define EEXIST 17

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

/* Stacks keyed by a 64-bit hash of their contents, user and kernel alike (their ips
 * never overlap), written only by a counts key's first sample. Unlike a
 * BPF_MAP_TYPE_STACK_TRACE, whose stack id is a bucket that two stacks can want
 * (-EEXIST; bcc #3389, bpftrace #2962: at 16,384 buckets a few hundred stacks already
 * lost a few percent of a run), this holds max_entries distinct stacks whatever their
 * hashes, and the only loss is a full map. An existing key is taken as the same stack:
 * two of a run's n distinct stacks share a hash with probability about n^2 / 2^65,
 * 7e-12 for a full map of 16,384 and 3e-8 for a million. Preallocated (the default): a
 * perf_event program may run in NMI context. The loader sets the size (stack_entries,
 * 16,384 by default: about 17 MiB, what the stack-trace map of that size took). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct oncpu_stack);
	__uint(max_entries, 16384);
} stacks SEC(".maps");

/* Preallocated, like stacks. */
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

/* Where the sample's two stacks are walked before they are hashed and, the first
 * time, stored: 2 KiB, too big for the 512-byte BPF stack. One per CPU is enough: the
 * kernel never nests perf_event programs on a CPU (bpf_overflow_handler() skips a
 * sample while bpf_prog_active is held). */
struct scratch {
	struct oncpu_stack user, kernel;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} scratch SEC(".maps");

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

/* A 64-bit hash of s->nr and s->ips[0..nr), never ONCPU_NO_STACK: a multiply-xorshift
 * step per ip, then murmur3's fmix64 finaliser. Each step is a bijection of the state
 * for a given ip and of the ip for a given state, so two stacks of one length that
 * differ in a single frame always hash apart. A few instructions per frame; the
 * constant bound is what the verifier needs. */
static __always_inline __u64 stack_hash(const struct oncpu_stack *s)
{
	__u64 h = 0x9e3779b97f4a7c15ull ^ s->nr;
	__u32 nr = s->nr;

	for (__u32 i = 0; i < ONCPU_MAX_DEPTH; i++) {
		if (i >= nr)
			break;
		h = (h ^ s->ips[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h ? h : 1;
}

/* Walk one stack (flags: BPF_F_USER_STACK, or 0 for the kernel's) into s. Its hash,
 * or ONCPU_NO_STACK with *err set: the walk's -errno, or -ENOENT when it found no
 * frame. */
static __always_inline __u64 walk_stack(struct bpf_perf_event_data *ctx, struct oncpu_stack *s,
					__u64 flags, long *err)
{
	long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), flags);

	if (n <= 0) {
		*err = n ? n : -ENOENT;
		return ONCPU_NO_STACK;
	}
	*err = 0;
	s->nr = n / sizeof(s->ips[0]);
	return stack_hash(s);
}

/* Store s under *id unless the stacks map has it already. If it cannot (-E2BIG: no
 * room), the key names no stack and a loss bit says why. */
static __always_inline void store_stack(__u64 *id, const struct oncpu_stack *s, __u32 *lost,
					__u32 full_bit, __u32 error_bit)
{
	long err;

	if (*id == ONCPU_NO_STACK || bpf_map_lookup_elem(&stacks, id))
		return;
	err = bpf_map_update_elem(&stacks, id, s, BPF_NOEXIST);
	/* -EEXIST: another CPU stored the same stack since our lookup. */
	if (!err || err == -EEXIST)
		return;
	*id = ONCPU_NO_STACK;
	*lost |= err == -E2BIG || err == -ENOMEM ? full_bit : error_bit;
}

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	struct bpf_pidns_info ns = {};
	struct oncpu_counters *c;
	struct oncpu_key key = {};
	struct scratch *sc;
	__u64 zero64 = 0, *val;
	__u32 zero = 0;
	long err;

	if (!enabled)
		return 0;
	/* Fails for tasks outside the loader's namespace: those are not the target. */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	if (ns.tgid != target_tgid)
		return 0;
	c = bpf_map_lookup_elem(&counters, &zero);
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!c || !sc)
		return 0;
	c->samples++;

	key.tgid = ns.tgid;
	/* An empty user walk (a thread whose mm is gone) is a loss like a failed one. */
	key.ustack = walk_stack(ctx, &sc->user, BPF_F_USER_STACK, &err);
	if (err)
		key.lost |= ONCPU_LOST_USTACK_ERROR;
	/* A sample in user mode has no kernel stack, and the walk would only say so: skip
	 * it there (user addresses have the top bit clear on x86-64 and arm64; an unsure
	 * case, such as the vsyscall page, walks and finds nothing, which is no loss). */
	if ((__s64)PT_REGS_IP(&ctx->regs) < 0) {
		key.kstack = walk_stack(ctx, &sc->kernel, 0, &err);
		if (err && err != -ENOENT)
			key.lost |= ONCPU_LOST_KSTACK_ERROR;
	}
	/* phase and worker only: the task id (the high half) would make every task's
	 * samples a key of their own and fill the map on a spawn-heavy workload */
	key.phase = read_phase() & 0xffffffffull;
	bpf_get_current_comm(key.comm, sizeof(key.comm));

	/* The common case, a key seen before, costs one lookup: its stacks were stored
	 * when it was first inserted, and only the drain removes either. */
	val = bpf_map_lookup_elem(&counts, &key);
	if (!val) {
		/* A new key: store its stacks first, so that every key names stored
		 * stacks; one that finds no room turns the key into one that says so. */
		store_stack(&key.ustack, &sc->user, &key.lost, ONCPU_LOST_USTACK_FULL,
			    ONCPU_LOST_USTACK_ERROR);
		store_stack(&key.kstack, &sc->kernel, &key.lost, ONCPU_LOST_KSTACK_FULL,
			    ONCPU_LOST_KSTACK_ERROR);
		err = bpf_map_update_elem(&counts, &key, &zero64, BPF_NOEXIST);
		/* -EEXIST: another CPU inserted the same key since our lookup, or the key
		 * that says a stack was lost is there already. */
		if (!err || err == -EEXIST)
			val = bpf_map_lookup_elem(&counts, &key);
	}
	if (!val) {
		/* -E2BIG (full), or -EBUSY (the map's bucket lock is held on this CPU by
		 * the context this NMI interrupted): the sample's stacks are unknown, and
		 * it counts here alone. */
		c->counts_full++;
		return 0;
	}
	__sync_fetch_and_add(val, 1);
	/* Lost parts are counted only for kept samples, so that each counter equals the
	 * drained count of the keys with its bit. */
	if (key.lost & ONCPU_LOST_USTACK_FULL)
		c->ustack_full++;
	if (key.lost & ONCPU_LOST_KSTACK_FULL)
		c->kstack_full++;
	if (key.lost & ONCPU_LOST_USTACK_ERROR)
		c->ustack_errors++;
	if (key.lost & ONCPU_LOST_KSTACK_ERROR)
		c->kstack_errors++;
	return 0;
}
