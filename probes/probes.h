/*
 * probes — the kernel-side instruments, loaded with libbpf (CO-RE), and their loaders.
 *
 * oncpu: a perf-event sampler on every online CPU (hardware cycles where the machine
 * has a PMU, else the cpu-clock software event, and it says which) that keeps only the
 * threads of one target process, walks user and kernel stacks, reads the runtime's
 * phase word, and aggregates counts in the kernel. Stacks are stored once each, keyed
 * by a hash of their contents, so distinct stacks never evict or refuse one another.
 * Every sample that cannot be kept whole (a full stacks map, a failed walk, a full
 * counts map, a stack at the depth limit, a full ring buffer) is counted, and comes back
 * as a sample with the loss marked, so that the folded totals still equal the samples
 * taken. Samples whose user stack frame pointers cannot give (--call-graph dwarf, or
 * auto where the walk met code built without them or did not reach its thread's root)
 * come to user space whole instead,
 * registers and top of stack, for DWARF unwinding there.
 *
 * Every constructor fills err with one line that names what failed and how to fix it
 * ("oncpu: not root: run as root or grant CAP_BPF and CAP_PERFMON").
 */
#ifndef SCHEDLAB_PROBES_H
#define SCHEDLAB_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Whether this machine can load BPF programs at all; if not, why (one line). */
bool probe_bpf_available(char *why, size_t len);

/* The fd that holds the kernel's BPF run-time statistics on (how often each program
 * ran, and for how long), shared by every probe of the process and open until it exits,
 * or -errno. Turning them on patches a static key on every CPU: 2.5 to 4 ms here when
 * idle, more when the CPUs are busy, and nothing while they are on already. A caller
 * that times probes' attaches calls it first, so that no probe's attach time holds the
 * measuring instrument's one-time cost. */
int probe_bpf_stats_fd(void);

/* ---- oncpu ---------------------------------------------------------------------------- */

/* How user stacks are walked. */
enum probe_callgraph {
	PROBE_CG_FP,     /* frame pointers, walked in the kernel and aggregated there */
	PROBE_CG_DWARF,  /* every sample's registers and top of stack go to user space, to be
			  * unwound from the objects' DWARF CFI (as perf's --call-graph dwarf) */
	PROBE_CG_AUTO,   /* frame pointers, and DWARF for the samples whose walk met code
			  * built without them (a code range marked PROBE_RANGE_NOFP) or
			  * did not reach a PROBE_RANGE_ROOT */
};

#define PROBE_MAX_DEPTH          127   /* frames a walked stack holds at most */
#define PROBE_STACK_COPY_DEFAULT 16384 /* bytes of user stack a DWARF sample copies */
#define PROBE_STACK_COPY_MAX     65536
#define PROBE_NREGS              17    /* x86-64 DWARF registers 0..16, rip last */
#define PROBE_RED_ZONE           128   /* bytes below %rsp a DWARF sample's copy begins at,
					* where mapped: the x86-64 ABI's red zone */

/* A user-space sample for DWARF unwinding, valid only during the callback. */
struct probe_dwarf_sample {
	uint32_t tgid, tid;
	char comm[16];
	uint64_t phase;          /* as in struct probe_stack */
	uint64_t entry;          /* as in struct probe_stack */
	const uint64_t *regs;    /* PROBE_NREGS, DWARF order: rax rdx rcx rbx rsi rdi rbp rsp
				  * r8..r15 rip */
	const void *stack;       /* the user stack from stack_addr up */
	uint64_t stack_addr;     /* the user address of stack[0]: %rsp, less the red zone
				  * below it where that was mapped */
	uint32_t stack_len;      /* bytes; less than asked where the stack's mapping ends */
	const uint64_t *kstack;  /* leaf first */
	uint32_t nkernel;
	uint32_t lost;           /* PROBE_LOST_KSTACK_* */
	bool fallback;           /* auto mode: the frame-pointer walk could not be trusted */
	const uint64_t *fp_ips;  /* auto mode: that walk, leaf first, from regs' %rbp */
	uint32_t fp_nr;          /* its ips; 0 in DWARF mode */
};

/* Called for each DWARF sample on the probe's reader thread while sampling, and on the
 * caller's thread by probe_oncpu_stop() for what remains; never concurrently. A
 * non-zero return is kept and returned by probe_oncpu_stop(); the samples keep coming. */
typedef int (*probe_dwarf_fn)(const struct probe_dwarf_sample *s, void *ctx);

/* The oncpu maps' sizes where the caller names none. Both are preallocated (the
 * program may run in NMI context, where a map cannot allocate), and making the
 * stacks map is most of the probe's attach time: a caller that knows how many samples
 * a drain can take sizes them to that. */
#define PROBE_ONCPU_STACK_ENTRIES 16384
#define PROBE_ONCPU_COUNT_ENTRIES 40960

struct probe_oncpu_opts {
	unsigned freq;           /* samples per second per CPU; 0: 999 */
	unsigned stack_entries;  /* distinct stacks (user and kernel) kept per drain; 0:
				  * PROBE_ONCPU_STACK_ENTRIES (about 1 KiB of kernel memory
				  * each) */
	unsigned count_entries;  /* aggregated-counts map size; 0: PROBE_ONCPU_COUNT_ENTRIES */
	bool software_only;      /* skip hardware cycles even where a PMU exists */
	enum probe_callgraph callgraph;
	unsigned stack_copy;     /* DWARF: user stack bytes per sample; 0: the default, else
				  * 8 .. PROBE_STACK_COPY_MAX, rounded down to a multiple of 8 */
	unsigned ring_bytes;     /* DWARF: ring buffer size; 0: a quarter second of samples on
				  * every CPU, at least 64 KiB; rounded up to a power of two */
	probe_dwarf_fn dwarf_fn; /* required unless callgraph is PROBE_CG_FP */
	void *dwarf_ctx;
	bool group_task;         /* read each sample's entry word (the running task's entry
				  * function, runtime/phase.h) and keep it apart: one aggregate
				  * per kind of task, in probe_stack.entry */
	int cpu_budget_pct;      /* the most of a CPU sampling may take, measured at open
				  * (about 33 ms of CPU time): above it the open fails with
				  * ERANGE, saying what fits. 0: kernel.perf_cpu_time_max_percent
				  * (25 by default; 90 where it sets no limit); >= 100: none,
				  * the cost still measured. A freq of 1,000 Hz or less is never
				  * refused (its cost is reported) */
};

/* Code ranges of the target, for the frame-pointer walk: sorted by start, disjoint. */
#define PROBE_RANGE_NOFP  1 /* code built without frame pointers: a walk through it is not
			     * to be trusted (auto mode unwinds such samples from DWARF) */
#define PROBE_RANGE_ROOT  2 /* a function that begins a thread's stack (start_thread, a
			     * fiber's entry): a walk ends there, and what lies past it is cut */
#define PROBE_MAX_RANGES  128

struct probe_range {
	uint64_t start, end;     /* [start, end) */
	unsigned kind;           /* PROBE_RANGE_* */
};

struct probe_target {
	pid_t tgid;              /* the process whose threads are sampled */
	int64_t phase_tls_off;   /* offset of the phase word (rt_phase_word) from the thread
				  * pointer, the entry word RT_PHASE_ENTRY_OFFSET past it; 0:
				  * none */
	const struct probe_range *ranges; /* may be NULL; at most PROBE_MAX_RANGES are used */
	unsigned nranges;
	/* Instead of tgid (0): a set of processes, at most PROBE_ONCPU_MAX_TARGETS, whose
	 * CPU time is clocked by a task-clock counter on each of their threads, inherited by
	 * the threads they start; with follow, every process one of them starts joins the
	 * set as it forks (probe_oncpu_targets() lists them) and its clock. */
	const pid_t *tgids;
	unsigned ntgids;
	bool follow;
};
#define PROBE_ONCPU_MAX_TARGETS 4096

struct probe_oncpu;

struct probe_oncpu *probe_oncpu_open(const struct probe_oncpu_opts *o, char *err, size_t errlen);
void probe_oncpu_free(struct probe_oncpu *p);

/* "cycles" or "cpu-clock", and the frequency in use. */
const char *probe_oncpu_event(const struct probe_oncpu *p);
unsigned probe_oncpu_freq(const struct probe_oncpu *p);
/* The share of a CPU (0..1) that sampling at that frequency took when measured at
 * open: the timer interrupts and the program on a CPU that runs a task. */
double probe_oncpu_cost_share(const struct probe_oncpu *p);
/* How long that measurement took at open, wall clock: part of the open's time, and not
 * of loading and attaching. */
uint64_t probe_oncpu_cost_ns(const struct probe_oncpu *p);
/* Why the software event was used ("cycles refused: No such file or directory (no
 * hardware PMU)"), or "" when cycles are in use. */
const char *probe_oncpu_event_note(const struct probe_oncpu *p);

enum probe_callgraph probe_oncpu_callgraph(const struct probe_oncpu *p);
/* Whether samples are kept apart by the running task's entry function (group_task). */
bool probe_oncpu_group_task(const struct probe_oncpu *p);
/* How often the sampling program has run on every CPU since the probe opened, and for
 * how long in all (the kernel's BPF run-time statistics, turned on while the probe is
 * open). 0, or -ENOTSUP where the kernel would not turn them on. */
int probe_oncpu_prog_stats(const struct probe_oncpu *p, uint64_t *runs, uint64_t *ns);
/* DWARF modes: the user stack bytes each sample copies, and the ring buffer's size. */
unsigned probe_oncpu_stack_copy(const struct probe_oncpu *p);
unsigned probe_oncpu_ring_bytes(const struct probe_oncpu *p);
/* The maps' sizes as loaded: distinct stacks, and aggregated counts, per drain. */
unsigned probe_oncpu_stack_entries(const struct probe_oncpu *p);
unsigned probe_oncpu_count_entries(const struct probe_oncpu *p);

/* Start keeping samples of t's threads; stop keeping any. The perf events run only in
 * between (a high frequency costs nothing while stopped), and t's process CPU clock is
 * read at both ends for the samples the frequency owes it. Aggregates persist across
 * start/stop until drained. Stopping hands the DWARF samples still in the ring buffer
 * to dwarf_fn before it returns. 0 or -errno (stop: or the first non-zero return of
 * dwarf_fn since the start). */
int probe_oncpu_start(struct probe_oncpu *p, const struct probe_target *t);
/* The code ranges the walk checks are tgid's from now on (probe_target.ranges: the first
 * process's at the start); another process's walks go unchecked. For a process that
 * exec'd since, say, while sampling. */
void probe_oncpu_set_ranges(struct probe_oncpu *p, pid_t tgid, const struct probe_range *r,
			    unsigned n);
/* The processes of a set started with (probe_target.tgids), those that joined it
 * included, at most max into out (the kernel's map, unordered); how many, or -errno. */
int probe_oncpu_targets(struct probe_oncpu *p, pid_t *out, size_t max);
int probe_oncpu_stop(struct probe_oncpu *p);

/* Loss markers on a sample: which parts of it could not be kept. */
#define PROBE_LOST_USTACK_FULL      (1u << 0) /* a new stack found the stacks map full */
#define PROBE_LOST_KSTACK_FULL      (1u << 1)
#define PROBE_LOST_USTACK_ERROR     (1u << 2) /* the walk failed, or found no user frame */
#define PROBE_LOST_KSTACK_ERROR     (1u << 3)
#define PROBE_LOST_COUNTS_FULL      (1u << 4) /* no room in the counts map: stacks unknown */
#define PROBE_TRUNCATED_USTACK      (1u << 5) /* the walk reached the depth limit */
#define PROBE_TRUNCATED_KSTACK      (1u << 6)
#define PROBE_LOST_RING             (1u << 7) /* wanted DWARF unwinding, but the ring buffer
					       * was full: the user stack is the frame-pointer
					       * walk's (auto) or missing (dwarf) */

struct probe_stack {
	uint32_t tgid;
	char comm[16];           /* the sampled thread's name */
	uint64_t phase;          /* the runtime's phase word (runtime/phase.h) without the task
				  * id, which would split every task's samples apart; 0: none */
	uint64_t entry;          /* group_task: the running task's entry function, an address
				  * in the target; 0: no task ran, or not grouping */
	const uint64_t *ustack;  /* leaf first; ustack[0] is the sampled IP */
	uint32_t nuser;
	const uint64_t *kstack;  /* leaf first */
	uint32_t nkernel;
	uint32_t lost;           /* PROBE_LOST_* / PROBE_TRUNCATED_* */
	uint64_t count;
};

struct probe_oncpu_stats {
	uint64_t samples;          /* samples of the target kept or counted as lost */
	/* samples whose user/kernel stack found the stacks map full; like the errors,
	 * counted only for samples not in counts_full, so each equals the count of the
	 * stacks flagged */
	uint64_t ustack_full;
	uint64_t kstack_full;
	uint64_t ustack_errors;
	uint64_t kstack_errors;
	uint64_t counts_full;      /* samples whose stacks are unknown: counts map full */
	uint64_t truncated;        /* stacks at the depth limit */
	uint64_t dwarf_samples;    /* samples handed to dwarf_fn instead of aggregated */
	uint64_t ring_full;        /* samples that found the ring buffer full (PROBE_LOST_RING) */
	uint64_t stack_bytes;      /* user stack bytes the DWARF samples copied */
	uint64_t root_cut;         /* frame-pointer walks cut at a PROBE_RANGE_ROOT */
	uint64_t fired;            /* samples the kernel delivered while enabled, of any task */
	uint64_t followed;         /* processes that joined a followed set as they started */
	uint64_t targets_full;     /* processes that could not: the set was full */
	uint64_t window_ns;        /* time enabled (CLOCK_MONOTONIC) */
	uint64_t cpu_ns;           /* the targets' CPU time while enabled: their process CPU
				    * clocks (clock_getcpuclockid), read at start and stop */
	uint64_t unclocked;        /* windows whose target's CPU clock could not be read (it
				    * exited first): their CPU time is not in cpu_ns */
	uint64_t expected;         /* samples the frequency owes the targets, cpu_ns × freq;
				    * 0 for cycles, whose frequency is an estimate */
	uint64_t stacks_held_max;  /* the most distinct stacks, and counts, one drain found in */
	uint64_t keys_held_max;    /* the maps: how near their sizes a fork came */
};

typedef int (*probe_stack_fn)(const struct probe_stack *s, void *ctx);

/* Hand every aggregated stack to fn (a non-zero return stops the walk and is
 * returned), add this drain's losses to *stats, and empty the maps. Call it while
 * stopped. 0 or -errno. */
int probe_oncpu_drain(struct probe_oncpu *p, probe_stack_fn fn, void *ctx,
		      struct probe_oncpu_stats *stats);

/* ---- runtime ------------------------------------------------------------------------------ */

/* The runtime's USDT events (provider "rt", runtime/usdt.h), one process at a time: every
 * event in a BPF ring buffer, read by a thread of the loader and handed to a callback as
 * it comes, for exact counts and the worker timeline. An event that finds the ring full
 * is counted, per CPU and per kind, inside or outside the window the harness marks with
 * rt:window around the measured iterations (next to its reads of the runtime's counters),
 * so delivered plus dropped is what the runtime produced. Each event costs a uprobe trap
 * in the traced thread: the probe is opt-in. */
enum probe_rt_kind {
	PROBE_RT_SPAWN,       /* a0 task, a1 spawn path */
	PROBE_RT_ENQUEUE,     /* a0 task, a1 path (enum rt_place); worker: where it went */
	PROBE_RT_RUN_BEGIN,   /* a0 task */
	PROBE_RT_RUN_END,     /* a0 task, a1 what next: 0 done, 1 yield, 2 wait */
	PROBE_RT_STEAL,       /* worker: the thief; a0 the victim, a1 tasks moved */
	PROBE_RT_PLACE,       /* a0 task, worker: from, a1 to, a2 to's load | fallback << 32 */
	PROBE_RT_PARK,
	PROBE_RT_UNPARK,      /* a0 woken to search */
	PROBE_RT_BLOCK_BEGIN, /* a0 task */
	PROBE_RT_BLOCK_END,   /* a0 task, a1 ns blocked */
	PROBE_RT_FLUSH,       /* a0 tasks moved */
	PROBE_RT_WINDOW,      /* a0 1: the counters' window opens, 0: it closes */
	PROBE_RT_NKINDS,
};

/* "spawn", "enqueue", ... as the USDT points are named; "?" past the end. */
const char *probe_rt_kind_name(unsigned kind);

struct probe_rt_event {
	uint64_t ts;      /* CLOCK_MONOTONIC, ns */
	uint32_t tid;
	uint32_t kind;    /* enum probe_rt_kind */
	uint32_t worker;  /* worker index; RT_NO_WORKER (0xffff) outside a worker */
	bool in_window;   /* between the rt:window marks */
	uint64_t a0, a1, a2;
};

/* Called on the probe's reader thread while started, and by probe_runtime_stop() on the
 * caller's for what remains; never concurrently. */
typedef void (*probe_rt_fn)(const struct probe_rt_event *e, void *ctx);

/* The rate the ring buffer is sized for: a uprobe trap takes a microsecond or more
 * (10-25 us on this project's VMs), so a CPU delivers at most about this many events a
 * second; the ring holds the measurement's events at that rate on every CPU, up to
 * PROBE_RT_RING_MS of them, which the reader, emptying it every PROBE_RT_POLL_MS, never
 * lets fill at that rate. */
#define PROBE_RT_RATE    500000
#define PROBE_RT_RING_MS 100
#define PROBE_RT_POLL_MS 5

struct probe_runtime_opts {
	unsigned ring_bytes;  /* 0: sized as above; else rounded up to a power of two, at
			       * least a page */
	double measure_s;     /* the measurement's length, to size the ring; 0: 1 s */
	probe_rt_fn fn;       /* required */
	void *ctx;
	bool hold_reader;     /* the reader takes nothing until the stop, as a reader that
			       * falls behind: the ring fills and events are dropped */
};

struct probe_runtime;

struct probe_runtime *probe_runtime_open(const struct probe_runtime_opts *o, char *err,
					 size_t errlen);
void probe_runtime_free(struct probe_runtime *p);
unsigned probe_runtime_ring_bytes(const struct probe_runtime *p);
/* Possible CPUs: the length of the per-CPU drop counts. */
int probe_runtime_ncpus(const struct probe_runtime *p);

/* Attach every USDT point in pid's executable to pid and start reading; the time the
 * attach took in *attach_ns (may be NULL). 0 or -errno with err filled. */
int probe_runtime_start(struct probe_runtime *p, pid_t pid, uint64_t *attach_ns, char *err,
			size_t errlen);
/* Detach, then hand what remains in the ring to fn. 0 or -errno. */
int probe_runtime_stop(struct probe_runtime *p);
/* Trace nothing more, but leave the uprobes in until probe_runtime_stop(), for a caller
 * that must not take them out while the process lives (harness/runtime.c says why); the
 * events in flight still arrive, and the stop hands them over. */
void probe_runtime_mute(struct probe_runtime *p);

/* Events dropped since the last call, then zeroed: per_cpu[probe_runtime_ncpus()] (may be
 * NULL) and by_kind[kind][in_window] (may be NULL), each added to. 0 or -errno. */
int probe_runtime_drops(struct probe_runtime *p, uint64_t *per_cpu,
			uint64_t by_kind[PROBE_RT_NKINDS][2]);
/* How often the programs ran since the open, and for how long in all (BPF run-time
 * statistics; the uprobe trap that runs them is not in it). -ENOTSUP where the kernel
 * would not turn them on. */
int probe_runtime_prog_stats(const struct probe_runtime *p, uint64_t *runs, uint64_t *ns);
/* ---- sched ---------------------------------------------------------------------------- */

/* sched: scheduler tracepoints (sched_switch, sched_wakeup, sched_wakeup_new,
 * sched_migrate_task) for the threads of one target process, aggregated per thread in
 * the kernel: run-queue latency (woken, or preempted while runnable, until it runs
 * again) as a log2 histogram, voluntary and involuntary switches (as the kernel counts
 * nvcsw and nivcsw), migrations, and time on a CPU. An event whose thread finds the
 * thread map full is counted lost, by kind; what the threads hold plus what was lost
 * equals what was seen. */

#define PROBE_SCHED_SLOTS     36     /* slot i: waits of [2^i, 2^(i+1)) ns; the last, all
				      * from 2^35 ns up */
#define PROBE_SCHED_NO_WORKER 0xffff /* a thread that drove no worker */

enum probe_sched_event {
	PROBE_SCHED_SWITCH_OUT,  /* its thread left a CPU */
	PROBE_SCHED_SWITCH_IN,   /* its thread got a CPU */
	PROBE_SCHED_WAKEUP,      /* sched_wakeup and sched_wakeup_new */
	PROBE_SCHED_MIGRATE,
	PROBE_SCHED_NEVENTS,
};

struct probe_sched_opts {
	unsigned thread_entries; /* threads one window can hold (about 450 bytes of kernel
				  * memory each, preallocated); 0: 1024 */
};

struct probe_sched_thread {
	uint32_t tid;
	uint32_t worker;          /* the worker (phase word) it drove at its last switch-out
				   * that drove one; PROBE_SCHED_NO_WORKER: none */
	uint32_t worker_changes;  /* times that worker changed */
	char comm[16];            /* its name (/proc at the drain; an exited thread's as it
				   * was at its first switch-outs) */
	uint64_t voluntary;       /* switches out not runnable: it blocked or slept */
	uint64_t involuntary;     /* switches out still runnable: preempted, or yielded */
	uint64_t migrations;
	uint64_t wakeups;
	uint64_t oncpu_ns;        /* time on a CPU by the kernel's own count
				   * (se.sum_exec_runtime), from its first event to its last
				   * switch-out, and to the stop for a thread on a CPU then */
	uint64_t traced_ns;       /* the same time as traced: switch-in to switch-out
				   * intervals (and to the stop), summed; differs from oncpu_ns
				   * only by switches that never reached the tracepoint */
	uint64_t runq_count;      /* waits in hist */
	uint64_t runq_ns;         /* their sum */
	uint64_t runq_max_ns;
	uint64_t hist[PROBE_SCHED_SLOTS];
	uint64_t unseen_ins;      /* switch-ins that never reached the tracepoint (a switch-out
				   * followed a switch-out): traced_ns lacks each interval, and
				   * hist the run-queue wait it ended */
	uint64_t unseen_ns;       /* the spans those intervals lie within, summed */
};

struct probe_sched_stats {
	uint64_t seen[PROBE_SCHED_NEVENTS]; /* events of the target's threads, by kind */
	uint64_t lost[PROBE_SCHED_NEVENTS]; /* of them, those whose thread found no room */
	uint64_t threads;                   /* threads handed to fn */
	uint64_t window_ns;                 /* time started */
	uint64_t unseen_ins, unseen_ns;     /* the threads' unseen_ins and unseen_ns, summed */
	uint64_t oncpu_ns, traced_ns;       /* the threads' oncpu_ns and traced_ns, summed */
};

typedef int (*probe_sched_fn)(const struct probe_sched_thread *t, void *ctx);

struct probe_sched;

/* Open, size, load and attach (the programs keep nothing until started). NULL with
 * errno and one line in err. */
struct probe_sched *probe_sched_open(const struct probe_sched_opts *o, char *err,
				     size_t errlen);
void probe_sched_free(struct probe_sched *p);
unsigned probe_sched_thread_entries(const struct probe_sched *p);
/* Keep the events of tgid's threads; the phase word at phase_tls_off (0: none) names
 * the worker each drove. 0 or -errno. */
int probe_sched_start(struct probe_sched *p, pid_t tgid, int64_t phase_tls_off);
int probe_sched_stop(struct probe_sched *p);
/* Hand every thread kept since the last drain to fn (a non-zero return stops the walk
 * and is returned), add the counts to *stats and empty the map. Call it while stopped.
 * 0 or -errno. */
int probe_sched_drain(struct probe_sched *p, probe_sched_fn fn, void *ctx,
		      struct probe_sched_stats *stats);
/* How often its programs have run since it opened, and for how long in all (the
 * kernel's BPF run-time statistics, on while the probe is open). 0 or -ENOTSUP. */
int probe_sched_prog_stats(const struct probe_sched *p, uint64_t *runs, uint64_t *ns);
/* ---- offcpu --------------------------------------------------------------------------- */

/* Off-CPU time of one process's threads, from sched_switch: each interval from a
 * thread's switch-out to its switch-in, kept when it lasts at least min_block_us, and
 * aggregated in the kernel, in nanoseconds, by the user and kernel stack (frame
 * pointers) the thread left the CPU with, its phase word's kind then, and its name; with
 * wakers, by the stacks of the task whose wake-up ended the interval as well (its user
 * stack only when it is in the target). Every switch-out of the target while started is
 * timed, or counted in start_full; every interval that ends is kept, counted under the
 * minimum, or counted with its time in counts_full; a stack that cannot be kept is a
 * loss bit on its key. */
/* The stacks a switch-out walks (both: 0). The kernel's costs most; without it an
 * interval still says whether the thread was preempted. */
#define PROBE_OFFCPU_USER   1u
#define PROBE_OFFCPU_KERNEL 2u

/* offcpu's map sizes where the caller names none; each map is preallocated, and making
 * them is most of the probe's attach time (here about 1.5 ms for every 1,024 stacks, a
 * KiB of kernel memory each, and 0.6 ms for every 4,096 keys). A target that waits at a
 * few places fills a few hundred of each in seconds (harness/offcpu.c sizes them for a
 * run's measured time); the drain says the most a window held (stacks_held_max,
 * keys_held_max), and a window that fills one has its losses counted and drawn. */
#define PROBE_OFFCPU_STACK_ENTRIES  1024
#define PROBE_OFFCPU_COUNT_ENTRIES  4096
#define PROBE_OFFCPU_THREAD_ENTRIES 4096

struct probe_offcpu_opts {
	unsigned min_block_us;   /* the shortest interval kept; 0: 1 */
	bool wakers;             /* keep the waker's stacks too (attaches sched_waking and
				  * sched_wakeup_new) */
	unsigned stacks;         /* PROBE_OFFCPU_USER | PROBE_OFFCPU_KERNEL; 0: both */
	unsigned stack_entries;  /* distinct stacks kept per drain (1 KiB each); 0:
				  * PROBE_OFFCPU_STACK_ENTRIES */
	unsigned count_entries;  /* aggregated keys per drain; 0: PROBE_OFFCPU_COUNT_ENTRIES */
	unsigned thread_entries; /* threads that leave a CPU between a start and the drain:
				  * each keeps its start record until then; 0:
				  * PROBE_OFFCPU_THREAD_ENTRIES */
	unsigned waker_entries;  /* wakers: threads woken between a start and the drain, each
				  * keeping its last waker until then; 0: thread_entries */
};

/* Loss bits of the waker's part (beside PROBE_LOST_* of the wakee's), and of a wake-up
 * that found the wakers map full: the interval it ended has no waker (woken false). */
#define PROBE_LOST_WUSTACK_FULL (1u << 8)
#define PROBE_LOST_WKSTACK_FULL (1u << 9)
#define PROBE_LOST_WAKER_FULL   (1u << 10)

struct probe_offcpu_interval {
	char comm[16];           /* the thread's name */
	unsigned kind;           /* its phase word's kind at the switch-out (RT_PHASE_*) */
	bool preempted;          /* switched out still runnable (involuntary), not asleep */
	const uint64_t *ustack;  /* leaf first: where it left the CPU */
	uint32_t nuser;
	const uint64_t *kstack;
	uint32_t nkernel;
	uint32_t lost;           /* PROBE_LOST_* / PROBE_TRUNCATED_* */
	bool woken;              /* wakers: a wake-up of the target's is known for it (none:
				  * it was preempted, still runnable, or woken before the
				  * window) */
	uint32_t waker_tgid;     /* the kernel's tgid of the waker; 0: an interrupt on idle */
	bool waker_in_target;
	char waker_comm[16];
	const uint64_t *wustack; /* only for a waker in the target */
	uint32_t nwuser;
	const uint64_t *wkstack;
	uint32_t nwkernel;
	uint64_t ns;             /* off-CPU time, summed */
	uint64_t intervals;
};

struct probe_offcpu_stats {
	uint64_t switches;       /* switch-outs of the target while started */
	uint64_t intervals;      /* of them, ended while started */
	uint64_t kept, kept_ns;  /* intervals kept under a key, and their time */
	uint64_t under_min, under_min_ns; /* shorter than min_block_us: counted, not kept */
	uint64_t counts_full, counts_full_ns; /* no room for their key: time only */
	uint64_t start_full;     /* switch-outs with no room for their start: not timed */
	uint64_t unfinished;     /* switch-outs still off CPU at the stop: not timed */
	uint64_t ustack_full, kstack_full;     /* kept intervals whose stack found no room */
	uint64_t ustack_errors, kstack_errors; /* kept intervals whose walk failed */
	uint64_t truncated;      /* kept stacks at the depth limit */
	uint64_t wakeups;        /* wake-ups of target threads (wakers) */
	uint64_t waker_full;     /* of them, with no room to be kept: the interval has none */
	uint64_t waker_lost;     /* kept intervals so left without their waker: each is
				  * marked PROBE_LOST_WAKER_FULL */
	uint64_t fired;          /* sched_switch events of any task while started */
	uint64_t restarts;       /* intervals whose switch-in the kernel did not report,
				  * ended at the thread's next switch-out from its CPU time
				  * (counted in intervals too) */
	uint64_t window_ns;      /* time started */
	uint64_t stacks_held_max; /* the most distinct stacks, and keys, one drain found in */
	uint64_t keys_held_max;   /* the maps: how near their sizes a window came */
};

struct probe_offcpu;

struct probe_offcpu *probe_offcpu_open(const struct probe_offcpu_opts *o, char *err,
				       size_t errlen);
void probe_offcpu_free(struct probe_offcpu *p);
unsigned probe_offcpu_min_block_us(const struct probe_offcpu *p);
bool probe_offcpu_wakers(const struct probe_offcpu *p);
unsigned probe_offcpu_stacks(const struct probe_offcpu *p); /* PROBE_OFFCPU_* as opened */
/* The maps' sizes, as opened (wakers: 0 without them). */
void probe_offcpu_sizes(const struct probe_offcpu *p, unsigned *stacks, unsigned *counts,
			unsigned *threads, unsigned *wakers);
/* How often the sched_switch program has run and for how long in all (the kernel's
 * BPF run-time statistics). 0, or -ENOTSUP where the kernel would not turn them on. */
int probe_offcpu_prog_stats(const struct probe_offcpu *p, uint64_t *runs, uint64_t *ns);

/* Events the kernel did not hand the programs since the open, because one of them was
 * already running on that CPU (the programs' recursion_misses): a switch so missed
 * leaves its interval untimed, or a start record to be overwritten. */
uint64_t probe_offcpu_misses(const struct probe_offcpu *p);

/* Start timing the threads of tgid (phase_tls_off as in struct probe_target); stop. 0 or
 * -errno. */
int probe_offcpu_start(struct probe_offcpu *p, pid_t tgid, int64_t phase_tls_off);
int probe_offcpu_stop(struct probe_offcpu *p);

typedef int (*probe_offcpu_fn)(const struct probe_offcpu_interval *iv, void *ctx);

/* Hand every aggregate to fn (a non-zero return stops the calls and is returned), add
 * this drain's counts to *stats, and empty the maps. Intervals whose key found no room
 * come last, as one aggregate with PROBE_LOST_COUNTS_FULL and no stacks. Call it while
 * stopped. 0 or -errno. */
int probe_offcpu_drain(struct probe_offcpu *p, probe_offcpu_fn fn, void *ctx,
		       struct probe_offcpu_stats *stats);
/* ---- alloc ---------------------------------------------------------------------------- */

/* alloc: uprobes on the C allocator (malloc, calloc, realloc, posix_memalign,
 * aligned_alloc) in the libc a target process maps, attached to that process alone.
 * Every call is counted exactly (calls and bytes asked for, per function); allocation
 * stacks are sampled by bytes, one sample per sample_bytes that a thread asks for
 * (fixed-interval counting from a random phase: unbiased, and each thread's sampled
 * total within one period of its true total), and aggregated in the kernel by
 * {function, user stack, thread name}, weighted in bytes. Every sample that cannot be
 * kept whole comes back marked, so sampled bytes are never lost, only their stacks. */

#define PROBE_ALLOC_SAMPLE_DEFAULT (512u << 10)

enum probe_alloc_fn {
	PROBE_ALLOC_MALLOC,
	PROBE_ALLOC_CALLOC,
	PROBE_ALLOC_REALLOC,
	PROBE_ALLOC_POSIX_MEMALIGN,
	PROBE_ALLOC_ALIGNED_ALLOC,
	PROBE_ALLOC_NFN,         /* also: the function of a sample whose key was lost */
};

/* "malloc", ...; "[unknown]" for PROBE_ALLOC_NFN. */
const char *probe_alloc_fn_name(unsigned fn);

struct probe_alloc_opts {
	uint64_t sample_bytes;   /* bytes between samples; 0: PROBE_ALLOC_SAMPLE_DEFAULT */
	unsigned stack_entries;  /* distinct stacks kept per drain (1 KiB each); 0: 4096 */
	unsigned count_entries;  /* distinct {function, stack, thread} per drain; 0: 4096 */
};

struct probe_alloc;

struct probe_alloc *probe_alloc_open(const struct probe_alloc_opts *o, char *err, size_t errlen);
void probe_alloc_free(struct probe_alloc *p);
uint64_t probe_alloc_sample_bytes(const struct probe_alloc *p);
unsigned probe_alloc_stack_entries(const struct probe_alloc *p);
unsigned probe_alloc_count_entries(const struct probe_alloc *p);

/* Attach to the libc that pid maps (found in /proc/PID/maps) and count its calls;
 * detach and count no more. The uprobes exist only in between: a trap costs nothing
 * while stopped. Start: 0 or -errno with err filled (no libc mapped: -ENOENT; malloc,
 * calloc or realloc not found: -ENOENT; the aligned ones are optional). */
int probe_alloc_start(struct probe_alloc *p, pid_t pid, char *err, size_t errlen);
int probe_alloc_stop(struct probe_alloc *p);
/* Count nothing more, but leave the uprobes in until probe_alloc_stop(), for a caller
 * that must not take them out while the process lives (harness/alloc.c says why); the
 * drain still waits for the stop, which waits for the calls in flight. */
void probe_alloc_mute(struct probe_alloc *p);
/* The libc attached at the last start ("" before), and which functions were found in it
 * (1 << enum probe_alloc_fn). */
const char *probe_alloc_libc(const struct probe_alloc *p);
unsigned probe_alloc_attached(const struct probe_alloc *p);

#define PROBE_ALLOC_LOST_STACK_FULL  (1u << 0) /* the stacks map was full */
#define PROBE_ALLOC_LOST_STACK_ERROR (1u << 1) /* the walk failed or found no frame */
#define PROBE_ALLOC_LOST_NO_THREAD   (1u << 2) /* no per-thread state could be made */
#define PROBE_ALLOC_LOST_COUNTS_FULL (1u << 3) /* the counts map was full: function,
						* thread and stack unknown */
#define PROBE_ALLOC_TRUNCATED        (1u << 4) /* the walk reached the depth limit */

struct probe_alloc_stack {
	unsigned fn;             /* enum probe_alloc_fn */
	char comm[16];
	const uint64_t *ustack;  /* leaf first: ustack[0] is the allocator function */
	uint32_t nuser;
	uint32_t lost;           /* PROBE_ALLOC_LOST_* / PROBE_ALLOC_TRUNCATED */
	uint64_t samples;
	uint64_t bytes;          /* the samples' weights */
};

struct probe_alloc_stats {
	uint64_t calls[PROBE_ALLOC_NFN];
	uint64_t bytes[PROBE_ALLOC_NFN];  /* asked for; calloc: n × size */
	uint64_t realloc_null;   /* realloc(NULL, n), counted by the malloc glibc calls */
	uint64_t overflow;       /* calloc whose n × size overflows (it fails) */
	uint64_t samples;
	uint64_t sampled_bytes;  /* equals the bytes of every record drained */
	uint64_t counts_full, counts_full_bytes;
	uint64_t stack_full;     /* samples whose record has the matching loss bit */
	uint64_t stack_errors;
	uint64_t no_thread;
	uint64_t truncated;
	uint64_t starts;         /* windows (starts) drained */
	uint64_t attach_ns;      /* their attaches, in all */
	bool prog_timed;         /* the kernel timed the program (BPF run-time statistics) */
	uint64_t prog_runs;      /* its runs (every call of every target, in or out of a
				  * window) and their time in the program, trap excluded */
	uint64_t prog_ns;
};

typedef int (*probe_alloc_fn)(const struct probe_alloc_stack *s, void *ctx);

/* Hand every aggregate to fn (a non-zero return stops the calls and is returned), add
 * the drain's totals and losses to *stats, and empty the maps. Call it while stopped.
 * 0 or -errno. */
int probe_alloc_drain(struct probe_alloc *p, probe_alloc_fn fn, void *ctx,
		      struct probe_alloc_stats *stats);

#endif /* SCHEDLAB_PROBES_H */
