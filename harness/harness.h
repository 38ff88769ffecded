/*
 * harness — runs one benchmark the way JMH does, and profiles it.
 *
 * A benchmark is a workload, its parameters and a runtime configuration (a preset
 * plus knob overrides): a struct hx_spec, built from the same text the user typed.
 * Each fork is a fresh process (the binary re-executes itself as `schedlab __fork`);
 * it runs the warm-up iterations, tells the controller it is about to measure and
 * waits for the go-ahead (so the probes start exactly then and warm-up samples are
 * never kept), runs the measured iterations of fixed time, reports each iteration's
 * throughput and the runtime's counters, and stays alive until the controller has
 * read its memory map and drained the probes. The score is the mean over every
 * measured iteration of every fork, with the 99.9% Student-t half-width. One run from
 * spec to run folder (probes, profile, reports, findings, latest) is hx_pipeline_run(),
 * for `schedlab run` and any command that runs a benchmark in-process.
 */
#ifndef SCHEDLAB_HARNESS_H
#define SCHEDLAB_HARNESS_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "probes/counters/counters.h"
#include "probes/probes.h"
#include "runtime/phase.h"
#include "runtime/rt.h"
#include "workloads/workload.h"

struct hx_options {
	unsigned forks;      /* fresh processes */
	unsigned warmup;     /* warm-up iterations per fork, discarded */
	unsigned iterations; /* measured iterations per fork */
	double time_s;       /* length of each iteration */
};

/* For tests and a first look: 1 fork, 1 x 0.2 s warm-up, 3 x 0.2 s measured. */
void hx_options_quick(struct hx_options *o);

#define HX_MAX_ASSIGN 32

struct hx_spec {
	const struct wl_desc *wl;
	union wl_value values[WL_MAX_PARAMS];
	struct rt_config rt;
	char knobs[HX_MAX_ASSIGN][96]; /* the -c overrides, as typed ("name=value") */
	unsigned nknobs;
	struct hx_options opt;
	char events[PROBE_COUNTERS_LIST_LEN]; /* the counters' libpfm4 events, comma-separated,
					       * as checked by probe_counters_parse(); "": no
					       * counters */
};

/* Start a spec: workload by name, preset by name (NULL: the default), default
 * parameters and options. 0, or -EINVAL / -ENOENT with a one-line reason in err that
 * names the input and what would be accepted. */
int hx_spec_init(struct hx_spec *s, const char *workload, const char *preset, char *err,
		 size_t errlen);
/* Apply "-P name=value". 0 or -EINVAL with the reason in err. */
int hx_spec_param(struct hx_spec *s, const char *assignment, char *err, size_t errlen);
/* Count the events of list (probe_counters_parse()) in each fork; "" counts none. 0 or
 * -EINVAL / -ENOENT with the reason in err. */
int hx_spec_events(struct hx_spec *s, const char *list, char *err, size_t errlen);
/* Apply "-c knob=value" over the preset. 0 or -EINVAL / -ENOENT with the reason. */
int hx_spec_knob(struct hx_spec *s, const char *assignment, char *err, size_t errlen);
/* The parameters as "name=value name=value" (every parameter, defaults included). */
void hx_spec_params_text(const struct hx_spec *s, char *buf, size_t len);

/* What the controller does around a fork's measured iterations (the probes). */
struct hx_hooks {
	void *ctx;
	/* the fork is about to measure; it waits until this returns */
	int (*measure_begin)(void *ctx, pid_t pid, int64_t phase_tls_off);
	/* measurement is over; the fork lives until this returns */
	int (*measure_end)(void *ctx, pid_t pid);
	/* Whether fork k (1 for the first) runs with the probes; NULL: every fork does. A
	 * fork without them opens none of the counters' events and gives the result its
	 * throughput samples alone (samples, iter_rt), so that the result's runtime
	 * counters, ops, workers and counters are those of the probed forks. */
	bool (*probed)(void *ctx, unsigned k);
	/* The fork has exited and been reaped, however it ended, after a measure_begin: what
	 * was attached to it may go now, and a uprobe may go only now. Taking a uprobe out
	 * writes the original instruction back into each live process that holds it, which
	 * a task with SIGKILL pending cannot do (uprobe_unregister_nosync() ->
	 * register_for_each_vma() -> remove_breakpoint() -> uprobe_write_opcode():
	 * get_user_pages_remote() returns -EINTR), and the kernel then leaves the uprobe
	 * behind for good ("uprobe: schedlab:PID failed to unregister, leaking uprobe"). So
	 * a controller killed while it closed its links to a living fork leaked them; with
	 * the fork reaped first no process holds a breakpoint, and there is nothing to write.
	 * (Killed at another moment, the controller's links are closed at its exit, where the
	 * signal has been taken and the writes succeed; only a kill that lands inside an
	 * attach, a fraction of a millisecond a fork, can still leak.) NULL: nothing to
	 * release. */
	int (*fork_gone)(void *ctx, pid_t pid);
};

/* One counter over the measured iterations of every fork. Each fork counts its own
 * threads (probes/counters: inherited events opened before the runtime starts), read at
 * the boundaries of each measured iteration, so the counts cover exactly the iterations
 * whose ops are counted. */
struct hx_counter {
	char name[PROBE_COUNTER_NAME_LEN];
	bool counted;            /* in every fork; else note says why not */
	char note[PROBE_COUNTER_NOTE_LEN]; /* why not counted, or a limit ("user space only") */
	double total;            /* the scaled counts summed over the iterations */
	uint64_t ops;            /* the ops of the iterations in total */
	struct probe_counter_value sum; /* raw counts and times, summed */
	size_t unscaled;         /* iterations in which it never ran while enabled: no count,
				  * left out of total and ops */
};

struct hx_result {
	double *samples;   /* throughput of each measured iteration, all forks, in order */
	size_t nsamples;
	struct an_summary summary;
	unsigned workers;  /* core worker threads the runtime started */
	unsigned workers_started; /* the most workers a fork ever had, spares included */
	unsigned workers_active;  /* the most workers active at a fork's end (adaptation) */
	uint64_t adaptations;     /* changes to the active workers, summed over forks */
	uint64_t threads_created; /* OS threads made, summed over forks */
	struct rt_worker_stats rt; /* summed over the measured iterations of all forks */
	struct rt_worker_stats *iter_rt; /* each measured iteration's counters, as samples */
	struct rt_worker_stats *per_worker; /* by worker index, summed over forks */
	uint64_t *steals;  /* per_worker x per_worker: steals[thief * nper + victim] */
	unsigned nper;     /* workers in per_worker */
	uint64_t ops;      /* operations in the measured iterations */
	struct wl_metric wl_metrics[WL_MAX_METRICS]; /* the workload's own figures: medians */
	size_t nwl_metrics;
	double *wl_per_fork; /* [metric * forks + fork]: each fork's figure, for the median */
	unsigned ncounters;       /* the spec's events, in its order */
	struct hx_counter counters[PROBE_COUNTERS_MAX];
	double *iter_counters;    /* [sample * PROBE_COUNTERS_MAX + event]: each measured
				   * iteration's scaled count per op; NAN where not counted */
	uint64_t counters_attach_ns; /* the longest a fork took to open the events (libpfm4's
				      * encoding and perf_event_open of every group); 0: none
				      * opened */
	char error[512];   /* why the run failed, when hx_run() returns non-zero */
};

/* Run every fork of spec. progress (may be NULL) gets a line per iteration. self is
 * the path of the schedlab binary to re-execute. 0, or -errno with res->error set;
 * a hook's failure is reported the same way. After hx_interrupt() it stops the fork
 * in flight (measure_end first, then killed, reaped, fork_gone) and returns -EINTR
 * with the iterations measured so far in res, summarized, and res->error saying where
 * it stopped: "interrupted by SIGINT during fork 2 of 3 (4 of 9 measured iterations)".
 * SIGINT and SIGTERM are blocked while it runs, except while it waits for a fork. */
int hx_run(const struct hx_spec *spec, const char *self, const struct hx_hooks *hooks,
	   struct hx_result *res, FILE *progress);
void hx_result_free(struct hx_result *res);
/* Ask hx_run() to stop; for a SIGINT or SIGTERM handler (async-signal-safe). The first
 * signal is the one reported. hx_interrupted() returns it, or 0. */
void hx_interrupt(int sig);
int hx_interrupted(void);

/* The fork's side: run spec and talk to the controller over fd. Returns the exit
 * status for the process. */
int hx_fork_main(const struct hx_spec *spec, int fd);
/* The argument vector that makes `schedlab __fork` rebuild spec (after "__fork"). */
int hx_fork_argv(const struct hx_spec *spec, int fd, char ***argv_out);
void hx_fork_argv_free(char **argv);

/* The runtime's counters as named columns (the latency histogram left out): the names,
 * and one row of values for a struct rt_worker_stats. */
const char *const *hx_stat_columns(size_t *n);
void hx_stat_row(const struct rt_worker_stats *st, double *out);
/* The q-quantile of the sampled schedule latency, in ns (a bucket's upper edge);
 * NAN when none was sampled. */
double hx_latency_quantile(const struct rt_worker_stats *st, double q);

/* ---- profiling a benchmark -------------------------------------------------------------- */

/* The on-CPU probe around a benchmark's forks: started when a fork begins measuring,
 * drained (and the fork's stacks symbolized while it lives) when it ends, folded
 * into one profile over all forks. A probe that cannot attach is not an error: the
 * benchmark runs anyway, and status says why there is no profile.
 *
 * Each sample is classified twice: by the phase word it was taken with, and by the
 * stack rules over its own frames; on the runtime's threads the first gives it its
 * category (the folded root frame) and the comparison is kept in agreement, on other
 * threads (phase NONE) the rules do, "other" where no rule names a frame. Stacks are
 * cut at their thread's root and judged: whether they reached it, and where they broke. */
struct hx__live;
struct hx__proc;

/* The buffers a probe's reason for not attaching is written into, and its status,
 * "attached" or "not attached: <reason and fix>": room for a refused program's line from
 * the verifier and the path of its saved log (probes/common/env.c). */
#define HX_WHY_LEN    448
#define HX_STATUS_LEN (HX_WHY_LEN + 32)

struct hx_profile {
	struct probe_oncpu *oncpu;
	bool attached;
	char status[HX_STATUS_LEN];  /* "attached" or "not attached: <reason>" */
	int open_error;              /* why not attached: probe_oncpu_open's -errno (-ERANGE:
				      * the frequency costs more than the kernel's budget) */
	enum probe_callgraph callgraph;
	struct an_symcache *symcache;
	struct an_ksyms *ksyms;      /* NULL when /proc/kallsyms could not be read */
	bool ksyms_tried;            /* read before the first fork measures, not at attach */
	struct an_rules *rules;      /* the stack rules (analysis/categories.rules) */
	const char *rules_source;    /* a --rules file they came from; NULL: built in */
	struct an_folded *folded;    /* [category];comm;[task: ENTRY];user frames;-;kernel
				      * frames_[k] (the task frame only when the probe groups
				      * by task, probe_oncpu_group_task()) */
	struct probe_oncpu_stats stats;
	uint64_t phase_samples[RT_PHASE_COUNT];
	struct an_stack_quality quality;
	struct an_agreement agreement;
	struct an_attribution attribution; /* which method gave each sample its category */
	uint64_t truncated;          /* stacks cut at the walk's depth, user and kernel apart:
				      * the [truncated] frames of folded, by their counts */
	uint64_t unwind_ns;          /* time spent unwinding DWARF samples */
	uint64_t prog_runs, prog_ns; /* the sampling program's cost in the kernel */
	char unwind_error[160];      /* why a fork had no DWARF unwinder; "" if none */
	struct an_stack_break all_breaks[64]; /* where stacks broke; quality has the top */
	size_t nall_breaks;
	uint64_t breaks_overflow;
	struct hx__live *live;       /* the fork being measured; in hx_profile_target(), the
				      * first process (its code ranges, the program's cost) */
	struct an_object *objects;   /* the files whose symbols named the samples, with their
				      * build ids, at most HX_MAX_OBJECTS; objects_over: more */
	size_t nobjects, objects_over;
	bool any_process;            /* in hx_profile_target() */
	struct hx__proc *procs;      /* there, each process seen: its mappings and unwinder */
	size_t nprocs, procs_cap;
	pthread_mutex_t procs_lock;  /* procs, between the reader thread and the main one */
	int error;                   /* the first failure while collecting, -errno */
	uint64_t attach_ns;          /* probe_oncpu_open: open, load, attach (without
				      * measuring a sample's cost, cost_ns) */
	uint64_t cost_ns;            /* measuring a sample's cost, at open */
};

#define HX_MAX_OBJECTS 256

/* Open the probe (want_oncpu false: record "not attached: disabled"). o->dwarf_fn is
 * the profile's own; any given is ignored. 0, -ENOMEM, or -EINVAL when the built-in
 * stack rules do not parse: an unavailable probe is recorded in status, not returned. */
int hx_profile_open(struct hx_profile *p, bool want_oncpu, const struct probe_oncpu_opts *o);
/* Classify by rules (an_rules_load() of the file source) instead of the built-in ones;
 * p owns them from here. */
void hx_profile_use_rules(struct hx_profile *p, struct an_rules *rules, const char *source);
/* Hooks for hx_run() that drive p. */
void hx_profile_hooks(struct hx_profile *p, struct hx_hooks *h);
/* Forget the collected profile before the next benchmark; the probe stays loaded. */
int hx_profile_reset(struct hx_profile *p);
void hx_profile_close(struct hx_profile *p);

/* What `schedlab profile` samples: processes that run already (every thread of each), or
 * a command it starts; either way the processes they start join them as they fork. */
struct hx_target {
	const pid_t *pids;       /* running processes... */
	size_t npids;
	char *const *argv;       /* ...or a command to start (argv[0] looked up in PATH) */
	double duration_s;       /* stop after this long; 0: when the command exits, or with
				  * pids when every one has exited (or at hx_interrupt()) */
	bool no_follow;          /* the processes they start are not sampled */
	FILE *log;               /* a line when the profile starts and why it ended; NULL: none */
};

/* How a profile of processes went. */
struct hx_target_result {
	pid_t pid;               /* the command's process; 0 with pids */
	int wait_status;         /* its wait status once it exited; -1 while it had not */
	bool interrupted;        /* ended by hx_interrupt() */
	bool timed_out;          /* ended by duration_s */
	bool stopped;            /* the command still ran at the end, and was stopped */
	size_t processes;        /* processes sampled: the targets and those they started */
	size_t unnamed;          /* of them, those gone before their mappings could be read:
				  * their frames read [unknown]+0xADDR */
	double seconds;          /* how long the probe sampled */
	char error[512];         /* why it could not start, or where collecting failed */
};

/* Sample t's processes with the open, attached profile p (hx_profile_open()) until they
 * exit, duration_s ends or hx_interrupt() is called, then fold what was sampled into
 * p->folded, each process's frames named from its own mappings (read as it appears, again
 * every half second while it lives, and at the end; a process that exits keeps the last
 * read). In DWARF and auto modes, user stacks the frame-pointer walk cannot give are
 * unwound with each process's own unwinder, made at its first such sample; the code
 * ranges the walk checks are the first process's (the command's once it has exec'd).
 * A command still running at the end is stopped (SIGTERM, SIGKILL 2 s later). 0, a
 * profile that was
 * interrupted or timed out included; -ESRCH: a pid is no process, -EPERM: one may not be
 * traced, -ENOENT/-EACCES/...: the command could not be started (error says which, and
 * nothing was sampled); else the collection's -errno, with what was sampled folded. */
int hx_profile_target(struct hx_profile *p, const struct hx_target *t,
		      struct hx_target_result *r);
/* Frames as the folded files name them (harness/profile.c), for every probe that
 * folds stacks: a kernel frame "NAME_[k]" ("[k]+0xADDR_[k]" where unknown); a thread's
 * name with spaces as '_'; user frames from leaf-first ips, named leaf first into
 * names[0..max) and cut after the function that began the thread (start_thread, a
 * fiber's entry, ...), each function preceded by the calls inlined at the address,
 * "NAME_[i]". hx_user_frames returns how many; *rooted: a root ended them, *garbage: one
 * is in no code, *past_root: the walk went on past the root. leaf_in_syscall: the leaf
 * is where a system call returns to, one past the instruction the thread is in, and is
 * named as the return addresses above it are (the instruction after a system call may
 * begin another inlined call). hx_syscall_entry: whether a kernel stack whose root-most
 * frame is named root (as hx_kernel_frame names it) entered the kernel by a system call
 * (not an interrupt or a fault, whose user address is the instruction interrupted). */
#define HX_FRAME_LEN 256
void hx_kernel_frame(const struct an_ksyms *k, uint64_t addr, char *buf, size_t len);
void hx_comm_frame(const char *comm, char *buf, size_t len);
unsigned hx_user_frames(struct an_usyms *u, const uint64_t *ips, unsigned nips,
			bool leaf_in_syscall, char (*names)[HX_FRAME_LEN], unsigned max,
			bool *rooted, bool *garbage, bool *past_root);
bool hx_syscall_entry(const char *root);

/* ---- the probe set ------------------------------------------------------------------ */

/* The probes a run can use, as --probes names them: oncpu (the profile above) and the
 * ones beside it, each driven through struct hx_probe_ops around the same measured
 * iterations. */
enum hx_probe_id {
	HX_PROBE_ONCPU,
	HX_PROBE_OFFCPU,
	HX_PROBE_SCHED,
	HX_PROBE_RUNTIME,
	HX_PROBE_ALLOC,
	HX_PROBE_COUNTERS,
	HX_NPROBES,
};

/* What the probes beside oncpu are given when they open; each reads its own fields. */
struct hx_probe_config {
	unsigned min_block_us;   /* offcpu: the shortest off-CPU interval kept; 0: 1 */
	bool wakers;             /* offcpu: the waker's stack as well */
	unsigned offcpu_stacks;  /* offcpu: PROBE_OFFCPU_USER | _KERNEL, the stacks a switch-out
				  * walks; 0: both */
	unsigned offcpu_stack_entries, offcpu_count_entries; /* offcpu: distinct stacks and
				  * keys a fork keeps; 0: the probe's defaults */
	uint64_t alloc_sample;   /* alloc: bytes between samples; 0: 512 KiB */
	const char *events;      /* counters: libpfm4 event names, comma-separated; NULL:
				  * the default set */
	double measure_s;        /* one fork's measured time (iterations × time), to size
				  * what the kernel side must hold */
	unsigned forks;
	unsigned timeline_events; /* runtime: events per fork kept for timeline.json; 0: the
				   * default (HX_TIMELINE_EVENTS) */
	unsigned ring_bytes;     /* runtime: its ring buffer; 0: sized from measure_s */
	unsigned threads;        /* the workers one fork runs at most, to size the maps that
				  * hold a fork's threads (hx_thread_entries()); 0: 1 */
};

/* The threads a fork's measured iterations can show a probe, for the maps that keep one
 * entry per thread until the drain (sched's threads, offcpu's start and waker records):
 * four per worker (spares the blocking hand-off starts, the blocking pool) and
 * HX_THREADS_EXTRA more (the main thread, monitor, reactor, a workload's own), at least
 * HX_THREADS_MIN and at most HX_THREADS_MAX (a map of preallocated entries, a few
 * hundred bytes each). cfg->threads 0 counts as 1. */
#define HX_THREADS_PER_WORKER 4
#define HX_THREADS_EXTRA      64
#define HX_THREADS_MIN	      256
#define HX_THREADS_MAX	      65536
unsigned hx_thread_entries(const struct hx_probe_config *cfg);

/* runtime: a timeline event is about 100 bytes of JSON, so 3 forks stay near 30 MB. */
#define HX_TIMELINE_EVENTS 100000

/* A probe beside oncpu. begin and end run in the controller as each fork begins and ends
 * its measured iterations (the fork waits for both); finish writes what was collected
 * over every fork into the run folder and describes it, once per benchmark. */
struct hx_probe_ops {
	enum hx_probe_id id;
	const char *name;        /* as --probes takes it */
	const char *summary;     /* one line for `schedlab list --probes` */
	bool opt_in;             /* never on by default: each of its events costs a trap */
	/* Whether it can attach here; if not, why and the fix, one line. NULL: as
	 * probe_bpf_available(). */
	bool (*available)(char *why, size_t len);
	/* Open, load, attach. 0, or -errno with one line in why ("not root: run as root or
	 * grant CAP_BPF and CAP_PERFMON"): a probe that cannot attach is not the run's
	 * failure, the report says why. -EINVAL: the configuration is bad input (why names
	 * the option and the fix), and the run does not start. */
	int (*open)(void **state, const struct hx_probe_config *cfg, char *why, size_t len);
	int (*begin)(void *state, pid_t pid, int64_t phase_tls_off);
	int (*end)(void *state, pid_t pid);
	/* After end, once the fork has exited (hx_hooks.fork_gone): a probe with uprobes
	 * takes them out here, not in end. NULL: nothing to do. */
	int (*gone)(void *state, pid_t pid);
	/* Forget what was collected, before the next benchmark. */
	int (*reset)(void *state);
	/* Write the probe's files into dir and describe them in part (its strings and data
	 * stay valid until the next reset). 0 or -errno. */
	int (*finish)(void *state, const char *dir, struct an_probe_part *part);
	void (*close)(void *state);
	/* The benchmark's result, before finish, for a probe that sets its figures beside the
	 * runtime's counters (res->rt). NULL: not needed. */
	void (*observe)(void *state, const struct hx_result *res);
};

/* The probes beside oncpu (harness/<name>.c). */
extern const struct hx_probe_ops hx_offcpu_ops;
/* hx_offcpu_ops' open with the probe's own options (its map sizes, say), for the state
 * the other ops take. */
int hx_offcpu_open(void **state, const struct probe_offcpu_opts *o, char *why, size_t len);
/* The stacks and keys offcpu's maps hold for a fork of cfg->measure_s seconds (with
 * cfg->wakers, whose stacks are the most varied), where --offcpu-maps names none:
 * HX_OFFCPU_STACKS_PER_S a second, twice that with wakers, at most
 * HX_OFFCPU_STACK_ENTRIES_MAX; two keys a stack; at least the probe's defaults. */
#define HX_OFFCPU_STACKS_PER_S	    256
#define HX_OFFCPU_STACK_ENTRIES_MAX 65536
void hx_offcpu_maps_for_run(const struct hx_probe_config *cfg, unsigned *stacks,
			    unsigned *keys);
/* --offcpu-stacks: "both", "user" or "kernel" to PROBE_OFFCPU_* (0, or -EINVAL), and
 * back (0 is "both"). */
int hx_offcpu_stacks_parse(const char *arg, unsigned *stacks);
const char *hx_offcpu_stacks_name(unsigned stacks);

/* alloc (harness/alloc.c), and its open with the probe's own map sizes given, for the
 * tests that force its losses; ops.open sizes them from the configuration. */
extern const struct hx_probe_ops hx_alloc_ops;
int hx_alloc_open_sized(void **state, const struct hx_probe_config *cfg,
			const struct probe_alloc_opts *o, char *why, size_t len);

/* The probes beside oncpu that are built, NULL-terminated, in enum order. */
const struct hx_probe_ops *const *hx_probe_ops_all(void);
/* runtime (harness/runtime.c): the runtime's USDT events, exact counts set beside the
 * runtime's counters, and timeline.json. */
extern const struct hx_probe_ops hx_runtime_probe;
extern const struct hx_probe_ops hx_sched_ops;
/* sched: the q-quantile (0..1) of a run-queue latency histogram (PROBE_SCHED_SLOTS
 * log2 buckets of ns) as the top of the bucket holding it, at most max_ns; NAN when it
 * is empty. */
double hx_sched_quantile_ns(const uint64_t *hist, uint64_t max_ns, double q);
const char *hx_probe_name(enum hx_probe_id id);
/* why, a probe's reason for not attaching, past a leading "NAME: " (the probe's name,
 * which the line that shows the reason gives already). */
const char *hx_probe_reason(const char *name, const char *why);
/* Parse a --probes list ("oncpu,offcpu", "all", "none") into a mask of 1 << id. 0, or
 * -EINVAL with one line in err naming the word and what the probes are; a probe that
 * is not built is refused too, saying so. */
int hx_probes_parse(const char *list, unsigned *mask, char *err, size_t errlen);
/* The mask as a --probes list ("oncpu,sched"; "none"). */
void hx_probes_text(unsigned mask, char *buf, size_t len);

struct hx_probeset_entry {
	const struct hx_probe_ops *ops;
	void *state;             /* NULL: not attached */
	char status[HX_STATUS_LEN]; /* "attached", or "not attached: <reason>" */
	uint64_t attach_ns;
	int error;               /* the first failure of begin or end, -errno */
};

/* The probes beside oncpu, driven together, and the profile (oncpu) they go with, which
 * its caller drives (hx_profile_hooks(), hx_profile_reset()). */
struct hx_probeset {
	struct hx_profile *oncpu;  /* NULL: oncpu not asked for; carried, never driven here */
	struct hx_probeset_entry probes[HX_NPROBES];
	size_t n;
	struct an_probe_part parts[HX_NPROBES];
};

/* Open the probes of mask other than oncpu (prof is the opened profile, or NULL). 0, or
 * -EINVAL with one line in err when a probe's configuration is bad input; a probe that
 * cannot attach is recorded in its status. */
int hx_probeset_open(struct hx_probeset *s, struct hx_profile *prof, unsigned mask,
		     const struct hx_probe_config *cfg, char *err, size_t errlen);
/* Open one more probe into s (hx_probeset_open() does this for each built one asked
 * for). 0, -EINVAL as above, -ENOSPC when s is full. */
int hx_probeset_add(struct hx_probeset *s, const struct hx_probe_ops *ops,
		    const struct hx_probe_config *cfg, char *err, size_t errlen);
/* Hooks for hx_run() that drive every attached probe (not the profile): begun in order,
 * ended in reverse, and told in reverse when the fork is gone (their gone). A probe's
 * failure is kept as its own error, never the fork's: their end returns 0. */
void hx_probeset_hooks(struct hx_probeset *s, struct hx_hooks *h);
/* Forget what every attached probe collected (not the profile's). The first error. */
int hx_probeset_reset(struct hx_probeset *s);

/* Hooks h that run first's, then then's around a fork: begin first then then (a failure of
 * first's begin stops there), end and gone in reverse, returning first's failure, else
 * then's. The pipeline chains the profile (first) and the probe set. */
struct hx_chain {
	struct hx_hooks first, then;
};
void hx_hooks_chain(struct hx_chain *c, const struct hx_hooks *first, const struct hx_hooks *then,
		    struct hx_hooks *h);
/* Hand the benchmark's result to every attached probe that asks for it (observe). */
void hx_probeset_observe(struct hx_probeset *s, const struct hx_result *res);
/* Each probe's finish, into dir; s->parts[0..n) describe them afterwards (a probe that
 * is not attached, or whose finish failed, only by its status). The first error. */
int hx_probeset_finish(struct hx_probeset *s, const char *dir);
void hx_probeset_close(struct hx_probeset *s);

/* --overhead: the probes on every other fork only, the first fork without them, so that
 * the forks with and without are measured interleaved and share whatever the machine
 * does meanwhile. Hooks for hx_run() that hand inner the forks with probes and tell it
 * which forks those are (hx_hooks.probed), so that a fork without them counts no events
 * either. */
struct hx_alternate {
	struct hx_hooks inner;
	unsigned fork;           /* forks begun so far */
	bool probed;             /* the fork being measured has the probes */
};
void hx_alternate_hooks(struct hx_alternate *a, const struct hx_hooks *inner, struct hx_hooks *h);
/* After such a run of `iterations` per fork: keep in res the iterations of the forks with
 * probes (samples, iter_rt, iter_counters, summary; hx_run() kept the runtime's counters,
 * ops, workers and counters from those forks alone), and summarize those without into
 * *off. 0, or -EINVAL when fewer than two iterations of either kind were measured. */
int hx_result_split_alternate(struct hx_result *res, unsigned iterations, struct an_summary *off);

/* ---- one run, end to end (harness/pipeline.c) ------------------------------------------ */

/* What running one configuration needs beyond its spec and the opened probe set. */
struct hx_pipeline {
	const char *out;         /* where run folders go: a folder the caller made and checked */
	const char *self;        /* the schedlab binary, re-executed for each fork */
	const char *command;     /* the command line that reproduces the run, for result.json */
	unsigned probes;         /* the probes asked for (1 << enum hx_probe_id), as --overhead's
				  * report names them */
	bool overhead;           /* the probes on every other fork only (struct hx_alternate) */
	const char *oncpu_maps_sized; /* how the oncpu maps were sized, for the report; NULL:
				       * not said */
	FILE *log;               /* the forks' progress and a line ("schedlab: ...") for each
				  * trouble and for how the run ended; NULL: silent */
	/* The finished run, as result.json holds it, before its memory goes (--json prints
	 * it), whether or not its files could be written. NULL: not wanted. */
	void (*emit)(void *ctx, const struct an_run *run);
	void *emit_ctx;
};

/* What came of one run, for the caller to print. */
struct hx_pipeline_row {
	const char *workload, *preset, *unit; /* the spec's */
	struct an_summary score;
	size_t n;                /* measured iterations in the score; 0 for a failed run */
	char dir[PATH_MAX];      /* the run folder, or, with dir_error, the one that could not
				  * be made; "" when it never came to that */
	char svg[PATH_MAX + 32]; /* its oncpu.svg; "" when none was written */
	int dir_error;           /* -errno: the run folder could not be made, nothing was written */
	bool failed;             /* the run failed, or a file of it could not be written */
	bool partial;            /* stopped by hx_interrupt(): error says where */
	bool unwritten;          /* a file of the run folder could not be written */
	bool removed;            /* and nothing was, so the folder was removed */
	struct wl_metric wl[WL_MAX_METRICS]; /* the workload's own figures */
	size_t nwl;
	struct an_finding top;   /* its first finding; top.id is "" when it has none */
	char error[512];         /* why it failed or stopped (hx_result.error); "" otherwise */
};

/* Run spec under set (opened, its probes attached or not; without set->oncpu the report
 * says oncpu was not asked for) and write its run folder out/<stamp>-<workload>-<preset>[-N]
 * in o->out, stamped with the start and made only once there is something to write:
 * oncpu.folded and oncpu.svg, the other probes' files, report.md and result.json last (a
 * file that cannot be written makes the run failed there, in result.json); the findings,
 * computed on the run in memory; out/latest pointed at it when it is complete and holds
 * measured data; the folder removed again when nothing of the run could be written. An
 * interrupted run (hx_interrupt()) is written as partial. Every trouble is said on o->log
 * as it happens, except a run folder that cannot be made (row->dir_error, row->dir naming
 * it), which is the caller's to say. Returns 0 when the run succeeded and all of it was
 * written (a partial run too); else -errno, the run's own failure first, with row saying
 * what happened. */
int hx_pipeline_run(const struct hx_spec *s, struct hx_probeset *set, const struct hx_pipeline *o,
		    struct hx_pipeline_row *row);

/* Profile t's processes (hx_profile_target()) with set's on-CPU probe and write their run
 * folder out/<stamp>-<name>-profile[-N] as hx_pipeline_run() writes a run's: oncpu.folded
 * and oncpu.svg, report.md, result.json (preset "profile", unit "samples", no iterations;
 * params the command line or the pids), the findings, latest when it holds samples. A
 * profile that an interrupt stopped before its command exited or its duration ended is
 * partial; one of running processes without a duration ends with the interrupt whole.
 * *tres says how it went. Returns 0 or -errno as hx_pipeline_run(); a pid that is no
 * process or a command that could not start returns its -errno before anything is made,
 * row->error saying why. */
int hx_pipeline_profile(const struct hx_target *t, const char *name, struct hx_probeset *set,
			const struct hx_pipeline *o, struct hx_pipeline_row *row,
			struct hx_target_result *tres);

/* "fp", "dwarf" or "auto"; and back (-1: not a mode). */
const char *hx_callgraph_name(enum probe_callgraph cg);
int hx_callgraph_parse(const char *name);

#endif /* SCHEDLAB_HARNESS_H */
