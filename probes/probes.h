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

/* A user-space sample for DWARF unwinding, valid only during the callback. */
struct probe_dwarf_sample {
	uint32_t tgid, tid;
	char comm[16];
	uint64_t phase;          /* as in struct probe_stack */
	uint64_t entry;          /* as in struct probe_stack */
	const uint64_t *regs;    /* PROBE_NREGS, DWARF order: rax rdx rcx rbx rsi rdi rbp rsp
				  * r8..r15 rip */
	const void *stack;       /* the user stack from regs[7] (%rsp) up */
	uint32_t stack_len;      /* bytes; less than asked where the stack's mapping ends */
	const uint64_t *kstack;  /* leaf first */
	uint32_t nkernel;
	uint32_t lost;           /* PROBE_LOST_KSTACK_* */
	bool fallback;           /* auto mode: the frame-pointer walk could not be trusted */
};

/* Called for each DWARF sample on the probe's reader thread while sampling, and on the
 * caller's thread by probe_oncpu_stop() for what remains; never concurrently. A
 * non-zero return is kept and returned by probe_oncpu_stop(); the samples keep coming. */
typedef int (*probe_dwarf_fn)(const struct probe_dwarf_sample *s, void *ctx);

struct probe_oncpu_opts {
	unsigned freq;           /* samples per second per CPU; 0: 999 */
	unsigned stack_entries;  /* distinct stacks (user and kernel) kept per drain; 0: 16384
				  * (about 1 KiB of kernel memory each, preallocated) */
	unsigned count_entries;  /* aggregated-counts map size; 0: 40960 */
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
};

struct probe_oncpu;

struct probe_oncpu *probe_oncpu_open(const struct probe_oncpu_opts *o, char *err, size_t errlen);
void probe_oncpu_free(struct probe_oncpu *p);

/* "cycles" or "cpu-clock", and the frequency in use. */
const char *probe_oncpu_event(const struct probe_oncpu *p);
unsigned probe_oncpu_freq(const struct probe_oncpu *p);
/* The share of a CPU (0..1) that sampling at that frequency took when measured at
 * open: the timer interrupts and the program on a CPU that runs a task. */
double probe_oncpu_cost_share(const struct probe_oncpu *p);
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

/* Start keeping samples of t's threads; stop keeping any. The perf events run only in
 * between (a high frequency costs nothing while stopped), and t's process CPU clock is
 * read at both ends for the samples the frequency owes it. Aggregates persist across
 * start/stop until drained. Stopping hands the DWARF samples still in the ring buffer
 * to dwarf_fn before it returns. 0 or -errno (stop: or the first non-zero return of
 * dwarf_fn since the start). */
int probe_oncpu_start(struct probe_oncpu *p, const struct probe_target *t);
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
	uint64_t window_ns;        /* time enabled (CLOCK_MONOTONIC) */
	uint64_t cpu_ns;           /* the targets' CPU time while enabled: their process CPU
				    * clocks (clock_getcpuclockid), read at start and stop */
	uint64_t unclocked;        /* windows whose target's CPU clock could not be read (it
				    * exited first): their CPU time is not in cpu_ns */
	uint64_t expected;         /* samples the frequency owes the targets, cpu_ns × freq;
				    * 0 for cycles, whose frequency is an estimate */
};

typedef int (*probe_stack_fn)(const struct probe_stack *s, void *ctx);

/* Hand every aggregated stack to fn (a non-zero return stops the walk and is
 * returned), add this drain's losses to *stats, and empty the maps. Call it while
 * stopped. 0 or -errno. */
int probe_oncpu_drain(struct probe_oncpu *p, probe_stack_fn fn, void *ctx,
		      struct probe_oncpu_stats *stats);

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
