// SPDX-License-Identifier: GPL-2.0
/*
 * oncpu: perf-event sampler that keeps the threads of one target process.
 *
 * Runs on every sample of every CPU (hardirq or NMI context), so it does the least
 * it can: filter by tgid, walk the kernel stack and (unless in dwarf mode) the user
 * stack by frame pointers into a per-CPU scratch buffer, read the runtime's phase word
 * (and, grouping by task, the entry word beside it), and add one to the count under
 * {tgid, stack hashes, phase, entry, comm}; only a key's first sample stores its
 * stacks in the stacks map. A sample whose user stack the
 * frame-pointer walk cannot give (dwarf mode, or in auto mode a walk that met code
 * built without frame pointers or did not reach its thread's root) goes to user space
 * whole instead: its registers and
 * the top of its user stack, to be unwound there from DWARF CFI. Invariants: every
 * sample of the target while enabled adds one to samples and one to exactly one of a
 * key's count, dwarf_samples or counts_full; a key's stack hashes name stacks in the
 * stacks map; a stack that cannot be walked or stored is kept in the key as a loss bit,
 * never dropped (see probes.h).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "probes/oncpu/oncpu.h"
#include "probes/common/bpf_common.h"

_Static_assert(ONCPU_MAX_DEPTH == PROBE__MAX_DEPTH, "one stack depth for every probe");
_Static_assert(sizeof(struct oncpu_stack) == sizeof(struct probe__stack), "one stack layout");


char LICENSE[] SEC("license") = "GPL";

/* The loader's pid namespace, so that tgids mean what the loader's pids mean even
 * inside a container. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* ONCPU_CG_*, and the user stack bytes a DWARF sample copies (a multiple of 8, at most
 * ONCPU_STACK_MAX). */
const volatile __u32 callgraph = ONCPU_CG_FP;
const volatile __u32 stack_copy = 16384;
/* Group by task: read the entry word beside the phase word into the key (a kind of task
 * has one entry function, so the keys grow by the kinds, not by the tasks). */
const volatile __u32 group_task = 0;

/* Written by the loader through the mmapped .bss: target, phase offset and code ranges
 * first, then enabled (a release store; x86 keeps the order). Zero at load: warm-up
 * samples taken before the first start are never kept. */
__u32 enabled = 0;
__u32 target_tgid = 0;
/* With target_tgid 0, the targets are the processes in the targets map (`schedlab
 * profile`'s), and with follow set every process one of them starts joins them as it
 * forks (oncpu_fork). */
__u32 follow = 0;
__s64 phase_tls_off = 0;
__u32 nranges = 0;
__u32 ranges_tgid = 0; /* the process the ranges are of: another's walks go unchecked */
struct oncpu_range ranges[ONCPU_MAX_RANGES] = {};

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

/* The target processes by tgid (in the loader's pid namespace) when target_tgid is 0;
 * the loader sizes it. The value is unused. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, ONCPU_MAX_TARGETS);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct oncpu_counters);
	__uint(max_entries, 1);
} counters SEC(".maps");

/* DWARF samples for user space; the loader sizes it from the frequency and the CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} dwarf_ring SEC(".maps");

/* Where a DWARF sample is built before it is copied into the ring buffer (whose
 * reservations must be of constant size): a header and up to ONCPU_STACK_MAX bytes of
 * stack, plus the slack a last page-sized read may need, indexed by CPU. A plain array:
 * a per-CPU one cannot hold values this big. */
#define DWARF_SCRATCH (sizeof(struct oncpu_dwarf_sample) + ONCPU_STACK_MAX + ONCPU_STACK_SLACK)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__uint(value_size, DWARF_SCRATCH);
	__uint(max_entries, 1);
} dwarf_scratch SEC(".maps");

/* Where the sample's two stacks are walked before they are hashed and, the first
 * time, stored: 2 KiB, too big for the 512-byte BPF stack. One per CPU is enough: the
 * kernel never nests perf_event programs on a CPU (bpf_overflow_handler() skips a
 * sample while bpf_prog_active is held). */
struct scratch {
	struct oncpu_stack user, kernel;
	__u64 mid; /* range_kind()'s midpoint, passed through memory */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} scratch SEC(".maps");

/* The current thread's phase word, and with group_task its entry word into *entry. */
static __always_inline __u64 read_phase(__u64 *entry)
{
	return probe__read_phase((struct task_struct *)bpf_get_current_task(), phase_tls_off,
				 group_task, entry);
}

static __always_inline __u64 stack_hash(const struct oncpu_stack *s)
{
	return probe__stack_hash((const struct probe__stack *)s);
}

/* Walk the kernel stack into s. 0, or the walk's -errno, or -ENOENT when it found no
 * frame (s->nr is then 0). */
static __always_inline long walk_kernel_stack(struct bpf_perf_event_data *ctx,
					     struct oncpu_stack *s)
{
	long n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), 0);

	s->nr = n > 0 ? n / sizeof(s->ips[0]) : 0;
	if (n <= 0)
		return n ? n : -ENOENT;
	return 0;
}

/* Walk the user stack into s (probe__user_stack(): the kernel's walk without its
 * faults), from the interrupted registers of a sample in user mode or the ones saved
 * on entry to the kernel. 0, or -ENOENT when it found no frame. */
static __always_inline long walk_user_stack(struct bpf_perf_event_data *ctx,
					   struct oncpu_stack *s)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct probe__uregs u;

#if defined(__TARGET_ARCH_x86)
	/* the context is read in whole words: cs through its 8-byte view (FRED keeps
	 * more above the selector) */
	u.cs = ctx->regs.csx & 0xffff;
	if ((u.cs & 3) == 3) {
		u.ip = ctx->regs.ip;
		u.bp = ctx->regs.bp;
	} else {
		u = probe__saved_uregs(task);
	}
#else
	u = probe__saved_uregs(task);
#endif
	s->nr = probe__user_stack(ctx, task, u, s->ips, ONCPU_MAX_DEPTH);
	return s->nr ? 0 : -ENOENT;
}

/* The kind of the code range holding ip (ONCPU_RANGE_*), 0 for none: a binary search
 * over the loader's sorted, disjoint ranges. A global function, so that the verifier
 * checks it once, on its own, rather than inside check_frame() at every state that
 * calls it (the sampler verified 18,515 instructions in 43 ms with it inlined, 3,194
 * in 3 ms so). The midpoint goes through map memory (*mid), whose contents the
 * verifier does not track: an index read back and masked is in bounds whatever lo and
 * hi were, so they need not be tracked exactly, and the search's paths, one per
 * outcome of every step, prune into one (10,091 instructions with lo and hi exact).
 * mid is never NULL; the verifier cannot know that of a global function's argument. */
__noinline __u32 range_kind(__u64 ip, __u64 *mid)
{
	__u32 lo = 0, hi = nranges;

	if (!mid)
		return 0;
	if (hi > ONCPU_MAX_RANGES)
		hi = ONCPU_MAX_RANGES;
	for (int i = 0; i < 8; i++) { /* 2^7 = ONCPU_MAX_RANGES, and one to spare */
		struct oncpu_range *r;
		__u32 m;

		if (lo >= hi)
			break;
		*mid = (lo + hi) / 2;
		m = *(volatile __u64 *)mid;
		r = &ranges[m & (ONCPU_MAX_RANGES - 1)];
		if (ip < r->start)
			hi = m;
		else if (ip >= r->end)
			lo = m + 1;
		else
			return r->kind;
	}
	return 0;
}

struct walk_check {
	struct oncpu_stack *s;
	__u64 *mid;	 /* range_kind()'s */
	__u32 nr;	 /* frames up to and including a root, once one is met */
	__u32 untrusted; /* a frame before the root is in code without frame pointers */
	__u32 rooted;	 /* a root was met */
};

/* One frame of check_walk(), through bpf_loop(), so that the verifier checks the
 * search once rather than once per frame. */
static long check_frame(__u64 i, void *arg)
{
	struct walk_check *w = arg;
	__u64 ip;
	__u32 kind;

	if (i >= w->s->nr || i >= ONCPU_MAX_DEPTH)
		return 1;
	ip = w->s->ips[i];
	/* a return address may be one past the end of its call's function */
	kind = range_kind(i ? ip - 1 : ip, w->mid);
	if (kind == ONCPU_RANGE_ROOT) {
		w->nr = i + 1;
		w->rooted = 1;
		return 1;
	}
	if (kind == ONCPU_RANGE_NOFP) {
		w->untrusted = 1;
		return 1;
	}
	return 0;
}

/* Look a frame-pointer walk's ips up in the target's code ranges: cut it after the
 * first root (what the walk read past the function that began the thread is not the
 * thread's stack), and say whether it cannot be trusted: it went through code built
 * without frame pointers before the root (the frame of the function that called into
 * it is missing, and what follows may be garbage), or it never reached a root (it
 * began in a function's prologue or epilogue, or in code that keeps no frame, and
 * skipped that function's caller). */
static __always_inline bool untrusted_walk(struct scratch *sc, struct oncpu_counters *c)
{
	struct oncpu_stack *s = &sc->user;
	struct walk_check w = { .s = s, .mid = &sc->mid, .nr = s->nr };

	if (!nranges || !s->nr)
		return false;
	bpf_loop(ONCPU_MAX_DEPTH, check_frame, &w, 0);
	if (!w.untrusted && w.nr < s->nr) {
		s->nr = w.nr;
		c->root_cut++;
	}
	return w.untrusted || !w.rooted;
}

/* Copy the sample's user registers, the top of its user stack and its kernel stack
 * into the ring buffer for unwinding in user space. The registers are the ones the
 * kernel saved on entry from user mode (task_pt_regs): the interrupted user state for
 * a sample in user mode, the state at the system call or fault for one in the kernel.
 * The stack is read a page at a time, so a copy stops where the stack's mapping ends
 * instead of failing whole. It starts at the red zone below %rsp where that is mapped:
 * a leaf function keeps live data there, and an epilogue's CFI may place a register
 * there too — after glibc free's `pop %rbp`, at its `ret`, the CFI still says the
 * caller's %rbp is at CFA-16, which is %rsp-8 — so a copy from %rsp up lost the caller of
 * every sample that landed on such a `ret` (perf's copy, from %rsp, loses them). 0 or
 * -errno. */
static __always_inline long emit_dwarf(struct scratch *sc, const struct oncpu_key *key, __u32 tid,
				       __u32 fallback, struct oncpu_counters *c)
{
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 want = stack_copy, got = 0, below = ONCPU_RED_ZONE;
	struct oncpu_dwarf_sample *d;
	struct pt_regs regs;
	__u8 *buf;
	__u64 sp;

	buf = bpf_map_lookup_elem(&dwarf_scratch, &cpu);
	if (!buf)
		return -ENOENT;
	d = (struct oncpu_dwarf_sample *)buf;
	if (bpf_probe_read_kernel(&regs, sizeof(regs),
				  (void *)bpf_task_pt_regs(bpf_get_current_task_btf())))
		return -EFAULT;
	d->regs[0] = regs.ax;
	d->regs[1] = regs.dx;
	d->regs[2] = regs.cx;
	d->regs[3] = regs.bx;
	d->regs[4] = regs.si;
	d->regs[5] = regs.di;
	d->regs[6] = regs.bp;
	d->regs[7] = regs.sp;
	d->regs[8] = regs.r8;
	d->regs[9] = regs.r9;
	d->regs[10] = regs.r10;
	d->regs[11] = regs.r11;
	d->regs[12] = regs.r12;
	d->regs[13] = regs.r13;
	d->regs[14] = regs.r14;
	d->regs[15] = regs.r15;
	d->regs[16] = regs.ip;
	sp = regs.sp - below;
	if (bpf_probe_read_user(d->stack, 8, (void *)sp)) {
		below = 0; /* %rsp at the bottom of its mapping: from %rsp up */
		sp = regs.sp;
	}

	if (want > ONCPU_STACK_MAX)
		want = ONCPU_STACK_MAX;
	for (int i = 0; i < ONCPU_STACK_MAX / 4096 + 1; i++) {
		__u64 addr = sp + got, chunk = 4096 - (addr & 4095);

		if (got >= want)
			break;
		if (chunk > want - got)
			chunk = want - got;
		/* keep the compiler from handing the verifier the unbounded operand of the
		 * min above instead of its bounded result */
		__asm__ volatile("" : "+r"(chunk));
		if (chunk > 4096 || got >= ONCPU_STACK_MAX)
			break; /* never: for the verifier */
		if (bpf_probe_read_user(&d->stack[got], chunk, (void *)addr))
			break;
		got += chunk;
	}
	if (got > ONCPU_STACK_MAX)
		got = ONCPU_STACK_MAX;

	d->tgid = key->tgid;
	d->tid = tid;
	d->phase = key->phase;
	d->entry = key->entry;
	d->lost = key->lost & (ONCPU_LOST_KSTACK_FULL | ONCPU_LOST_KSTACK_ERROR);
	d->stack_len = got;
	d->fallback = fallback;
	d->below_sp = below;
	d->pad = 0;
	d->knr = sc->kernel.nr < ONCPU_MAX_DEPTH ? sc->kernel.nr : ONCPU_MAX_DEPTH;
	__builtin_memcpy(d->comm, key->comm, sizeof(d->comm));
	if (bpf_probe_read_kernel(d->kips, sizeof(d->kips), sc->kernel.ips))
		return -EFAULT;
	d->fpnr = fallback && sc->user.nr < ONCPU_MAX_DEPTH ? sc->user.nr :
		  fallback ? ONCPU_MAX_DEPTH : 0;
	d->pad2 = 0;
	/* only auto mode walked the frame pointers; DWARF mode's scratch holds nothing of
	 * this sample, so it is not copied (fpnr 0 tells user space to ignore fpips) */
	if (fallback && bpf_probe_read_kernel(d->fpips, sizeof(d->fpips), sc->user.ips))
		return -EFAULT;
	if (bpf_ringbuf_output(&dwarf_ring, d, sizeof(*d) + got, 0))
		return -ENOSPC;
	c->stack_bytes += got;
	return 0;
}

/* Store s under *id unless the stacks map has it already; see probe__store_stack(). */
static __always_inline void store_stack(__u64 *id, const struct oncpu_stack *s, __u32 *lost,
					__u32 full_bit, __u32 error_bit)
{
	probe__store_stack(&stacks, id, s, lost, full_bit, error_bit);
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
	bool dwarf = callgraph == ONCPU_CG_DWARF, fallback = false;
	long err;

	if (!enabled)
		return 0;
	c = bpf_map_lookup_elem(&counters, &zero);
	if (!c)
		return 0;
	c->fired++;
	/* Fails for tasks outside the loader's namespace: those are not the target. */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	if (target_tgid ? ns.tgid != target_tgid : !bpf_map_lookup_elem(&targets, &ns.tgid))
		return 0;
	sc = bpf_map_lookup_elem(&scratch, &zero);
	if (!sc)
		return 0;
	c->samples++;

	key.tgid = ns.tgid;
	/* A sample in user mode has no kernel stack, and the walk would only say so: skip
	 * it there (user addresses have the top bit clear on x86-64 and arm64; an unsure
	 * case, such as the vsyscall page, walks and finds nothing, which is no loss). */
	sc->kernel.nr = 0;
	if ((__s64)PT_REGS_IP(&ctx->regs) < 0) {
		err = walk_kernel_stack(ctx, &sc->kernel);
		if (err && err != -ENOENT)
			key.lost |= ONCPU_LOST_KSTACK_ERROR;
	}
	/* phase and worker only: the task id would make every task's samples a key of
	 * their own and fill the map on a spawn-heavy workload; the entry function (0
	 * unless grouping by task) is one per kind of task */
	key.phase = RT_PHASE_WITHOUT_TASK(read_phase(&key.entry));
	bpf_get_current_comm(key.comm, sizeof(key.comm));

	if (!dwarf) {
		/* An empty user walk (a thread whose mm is gone) is a loss like a failed
		 * one; in auto mode either goes to the DWARF unwinder instead. */
		err = walk_user_stack(ctx, &sc->user);
		bool ours = ns.tgid == ranges_tgid;

		if (callgraph == ONCPU_CG_AUTO)
			fallback = err || (ours && untrusted_walk(sc, c));
		else if (!err && ours)
			untrusted_walk(sc, c); /* for the cut at the root */
		if (err && !fallback)
			key.lost |= ONCPU_LOST_USTACK_ERROR;
	}
	if (dwarf || fallback) {
		if (!emit_dwarf(sc, &key, ns.pid, fallback, c)) {
			c->dwarf_samples++;
			return 0;
		}
		/* No room (or, never seen, the saved user registers could not be read):
		 * keep the sample, with the frame-pointer walk's stack in auto mode, and
		 * say so. */
		c->ring_full++;
		key.lost |= ONCPU_LOST_RING;
	}
	key.ustack = sc->user.nr && !dwarf ? stack_hash(&sc->user) : ONCPU_NO_STACK;
	key.kstack = sc->kernel.nr ? stack_hash(&sc->kernel) : ONCPU_NO_STACK;

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

/* The child's tgid as the loader's pid namespace numbers it: its struct pid's entry at
 * the level of that namespace (a child is in its parent's namespace or one below, so
 * the loader's is among its levels when the parent's is); 0 when none is. */
static __always_inline __u32 ns_tgid(struct task_struct *t)
{
	struct pid *pid = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(pid, level);

	for (unsigned int i = 0; i <= ONCPU_MAX_PIDNS_LEVEL; i++) {
		struct upid up;

		if (i > level)
			break;
		if (bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[i]))
			return 0;
		if (BPF_CORE_READ(up.ns, ns.inum) == pidns_ino)
			return up.nr;
	}
	return 0;
}

/* A target forked: a new process (not a thread, which shares its tgid) joins the targets
 * before it first runs (the tracepoint fires before the child is woken). One that finds
 * the map full is counted, never silently left out. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(oncpu_fork, struct task_struct *parent, struct task_struct *child)
{
	struct bpf_pidns_info ns = {};
	struct oncpu_counters *c;
	__u32 zero = 0, tgid;
	__u8 one = 1;
	long err;

	if (!enabled || !follow || target_tgid)
		return 0;
	if (BPF_CORE_READ(child, pid) != BPF_CORE_READ(child, tgid))
		return 0;
	/* the parent is current: the helper numbers it in the loader's namespace */
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	if (!bpf_map_lookup_elem(&targets, &ns.tgid))
		return 0;
	tgid = ns_tgid(child);
	c = bpf_map_lookup_elem(&counters, &zero);
	if (!tgid) {
		if (c)
			c->targets_full++;
		return 0;
	}
	err = bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY);
	if (err && c)
		c->targets_full++;
	else if (c)
		c->followed++;
	return 0;
}
