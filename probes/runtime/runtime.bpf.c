/*
 * runtime: one program per USDT point of the runtime (provider "rt", runtime/usdt.h),
 * attached to one process at a time. Each event becomes a struct runtime_event in the
 * ring buffer, for exact counts and the worker timeline in user space; an event that
 * finds the ring full is counted per CPU and per kind instead, so nothing is lost
 * without a trace.
 *
 * The harness fires rt:window around the measured iterations, next to its reads of the
 * runtime's counters: each event carries whether it came between the two marks, so the
 * counts can be set beside the counters exactly.
 */
/* No kernel struct is read, so no vmlinux.h: the UAPI pt_regs is all USDT argument
 * fetching needs, and without CO-RE relocations libbpf need not parse the kernel's BTF
 * at load, which is most of an open's time on a busy machine (10-170 ms measured). */
#include <linux/bpf.h>
#include <linux/types.h>
#include <asm/ptrace.h>
#include <stdbool.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "probes/runtime/runtime.h"

char LICENSE[] SEC("license") = "GPL";

/* The loader's pid namespace, so that tids mean what the loader's pids mean. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* Set by the loader before each attach; in_window by rt:window (one process at a time). */
__u32 target_tgid = 0;
__u32 in_window = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22); /* sized by the loader */
} events SEC(".maps");

/* Events that found the ring buffer full, per CPU, at kind * 2 + in_window. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RUNTIME_NKINDS * 2);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline int emit(__u16 kind, __u64 worker, __u64 a0, __u64 a1, __u64 a2)
{
	struct bpf_pidns_info ns = {};
	struct runtime_event *e;
	__u32 win = in_window, key;
	__u64 *d;

	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	if (ns.tgid != target_tgid)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		key = (__u32)kind * 2 + (win ? 1 : 0);
		d = bpf_map_lookup_elem(&drops, &key);
		if (d)
			*d += 1; /* per CPU: no other writer */
		return 0;
	}
	e->ts = bpf_ktime_get_ns();
	e->tid = ns.pid;
	e->kind = kind;
	e->flags = win ? RUNTIME_IN_WINDOW : 0;
	e->worker = (__u32)worker;
	e->pad = 0;
	e->a0 = a0;
	e->a1 = a1;
	e->a2 = a2;
	/* no wake-up: the reader polls on a timer, so an event never costs a wake-up of
	 * another thread (an IPI or a context switch on a busy CPU) */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("usdt")
int BPF_USDT(rt_spawn, long task, long worker, long path)
{
	return emit(RUNTIME_EV_SPAWN, worker, task, path, 0);
}

SEC("usdt")
int BPF_USDT(rt_enqueue, long task, long worker, long path)
{
	return emit(RUNTIME_EV_ENQUEUE, worker, task, path, 0);
}

SEC("usdt")
int BPF_USDT(rt_run_begin, long task, long worker)
{
	return emit(RUNTIME_EV_RUN_BEGIN, worker, task, 0, 0);
}

SEC("usdt")
int BPF_USDT(rt_run_end, long task, long worker, long next)
{
	return emit(RUNTIME_EV_RUN_END, worker, task, next, 0);
}

SEC("usdt")
int BPF_USDT(rt_steal, long thief, long victim, long moved)
{
	return emit(RUNTIME_EV_STEAL, thief, victim, moved, 0);
}

SEC("usdt")
int BPF_USDT(rt_place, long task, long from, long to, long load, long fallback)
{
	return emit(RUNTIME_EV_PLACE, from, task, to,
		    ((__u64)(__u32)load) | ((__u64)(fallback ? 1 : 0) << 32));
}

SEC("usdt")
int BPF_USDT(rt_park, long worker)
{
	return emit(RUNTIME_EV_PARK, worker, 0, 0, 0);
}

SEC("usdt")
int BPF_USDT(rt_unpark, long worker, long searching)
{
	return emit(RUNTIME_EV_UNPARK, worker, searching, 0, 0);
}

SEC("usdt")
int BPF_USDT(rt_block_begin, long worker, long task)
{
	return emit(RUNTIME_EV_BLOCK_BEGIN, worker, task, 0, 0);
}

SEC("usdt")
int BPF_USDT(rt_block_end, long worker, long task, long ns)
{
	return emit(RUNTIME_EV_BLOCK_END, worker, task, ns, 0);
}

SEC("usdt")
int BPF_USDT(rt_flush, long worker, long moved)
{
	return emit(RUNTIME_EV_FLUSH, worker, moved, 0, 0);
}

/* The mark itself goes in the ring as the window's edge, recorded on the window's inside:
 * opening, after the flag is set; closing, before it is cleared. */
SEC("usdt")
int BPF_USDT(rt_window, long open)
{
	if (open)
		in_window = 1;
	emit(RUNTIME_EV_WINDOW, 0xffff, open, 0, 0);
	if (!open)
		in_window = 0;
	return 0;
}
