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
 * measured iteration of every fork, with the 99.9% Student-t half-width.
 */
#ifndef SCHEDLAB_HARNESS_H
#define SCHEDLAB_HARNESS_H

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

/* The studies' settings: 3 forks, 3 x 1 s warm-up, 3 x 1 s measured. */
void hx_options_default(struct hx_options *o);
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
	char error[512];   /* why the run failed, when hx_run() returns non-zero */
};

/* Run every fork of spec. progress (may be NULL) gets a line per iteration. self is
 * the path of the schedlab binary to re-execute. 0, or -errno with res->error set;
 * a hook's failure is reported the same way. After hx_interrupt() it stops the fork
 * in flight (the probes drained first, then killed and reaped) and returns -EINTR
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

struct hx_profile {
	struct probe_oncpu *oncpu;
	bool attached;
	char status[320];            /* "attached" or "not attached: <reason>" */
	int open_error;              /* why not attached: probe_oncpu_open's -errno (-ERANGE:
				      * the frequency costs more than the kernel's budget) */
	enum probe_callgraph callgraph;
	struct an_symcache *symcache;
	struct an_ksyms *ksyms;      /* NULL when /proc/kallsyms could not be read */
	struct an_rules *rules;      /* the stack rules (analysis/categories.rules) */
	struct an_folded *folded;    /* [category];comm;[task: ENTRY];user frames;-;kernel
				      * frames_[k] (the task frame only when the probe groups
				      * by task, probe_oncpu_group_task()) */
	struct probe_oncpu_stats stats;
	uint64_t phase_samples[RT_PHASE_COUNT];
	struct an_stack_quality quality;
	struct an_agreement agreement;
	struct an_attribution attribution; /* which method gave each sample its category */
	uint64_t unwind_ns;          /* time spent unwinding DWARF samples */
	uint64_t prog_runs, prog_ns; /* the sampling program's cost in the kernel */
	char unwind_error[160];      /* why a fork had no DWARF unwinder; "" if none */
	struct an_stack_break all_breaks[64]; /* where stacks broke; quality has the top */
	size_t nall_breaks;
	uint64_t breaks_overflow;
	struct hx__live *live;       /* the fork being measured */
	int error;                   /* the first failure while collecting, -errno */
};

/* Open the probe (want_oncpu false: record "not attached: disabled"). o->dwarf_fn is
 * the profile's own; any given is ignored. 0, -ENOMEM, or -EINVAL when the built-in
 * stack rules do not parse: an unavailable probe is recorded in status, not returned. */
int hx_profile_open(struct hx_profile *p, bool want_oncpu, const struct probe_oncpu_opts *o);
/* Hooks for hx_run() that drive p. */
void hx_profile_hooks(struct hx_profile *p, struct hx_hooks *h);
/* Forget the collected profile before the next benchmark; the probe stays loaded. */
int hx_profile_reset(struct hx_profile *p);
void hx_profile_close(struct hx_profile *p);
/* "fp", "dwarf" or "auto"; and back (-1: not a mode). */
const char *hx_callgraph_name(enum probe_callgraph cg);
int hx_callgraph_parse(const char *name);

#endif /* SCHEDLAB_HARNESS_H */
