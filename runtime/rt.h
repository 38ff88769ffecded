/*
 * rt — the task runtime that schedlab's workloads run on.
 *
 * M:N: tasks are stackful fibers (an mmap'd stack with a guard page each) run by N
 * worker threads. Each worker owns a bounded work-stealing queue; a global injection
 * queue takes tasks submitted from outside the pool and a full queue's overflow; idle
 * workers search (steal half of a victim's queue) and then park on a futex. Where a
 * new or woken task goes, who is woken and how blocking is handled are knobs of
 * struct rt_config, and named presets set them the way real runtimes do.
 *
 * Every worker publishes what it is doing in its phase word (runtime/phase.h), which
 * the on-CPU probe reads at each sample, and keeps always-on counters (struct
 * rt_worker_stats) that explain placement.
 *
 * Threads: rt_spawn, rt_yield and rt_current are for code running in a task;
 * rt_submit and rt_join work from any thread (from a task, join suspends the task;
 * elsewhere it blocks the thread).
 */
#ifndef SCHEDLAB_RT_H
#define SCHEDLAB_RT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rt_sched;
struct rt_task;

typedef uint64_t (*rt_fn)(void *arg);

#define RT_MAX_WORKERS 256
#define RT_NO_WORKER   0xffffu

/* ---- configuration ------------------------------------------------------------------ */

/* Where rt_spawn puts a new task. */
enum rt_spawn_target {
	RT_SPAWN_LOCAL,    /* the tail of the spawning worker's queue */
	RT_SPAWN_EXTERNAL, /* the global injection queue */
};

/* Whom a push to a worker's own queue wakes. */
enum rt_notify {
	RT_NOTIFY_NEVER,           /* nobody: the pushing worker runs it eventually */
	RT_NOTIFY_IF_NO_SEARCHERS, /* a parked worker, when none is searching already */
};

struct rt_config {
	const char *preset;        /* the preset these values came from */
	unsigned workers;          /* worker threads; 0: one per online CPU */
	size_t stack_size;         /* usable bytes per task stack (a guard page is added) */
	unsigned local_capacity;   /* slots in each worker's queue; a power of two */
	unsigned global_interval;  /* check the global queue first every this many ticks */
	unsigned searcher_frac;    /* at most workers / searcher_frac search at once; 0: no cap */
	unsigned search_spin_us;   /* how long a searcher keeps looking before it parks */
	enum rt_spawn_target spawn;
	enum rt_notify notify;
	bool idle_steal;           /* idle workers look for work in other workers' queues */
	bool metrics;              /* always-on counters (off only to measure their cost) */
};

/* The default: the `ce` preset with one worker per online CPU. */
void rt_config_default(struct rt_config *c);
/* Load a named preset into c. 0, or -ENOENT for an unknown name. */
int rt_config_preset(struct rt_config *c, const char *name);
/* The preset names, NULL-terminated, and a one-line description of each. */
const char *const *rt_preset_names(void);
const char *rt_preset_describe(const char *name);

/* ---- the scheduler ------------------------------------------------------------------ */

/* Start the workers. NULL + errno (EINVAL for a bad configuration). */
struct rt_sched *rt_sched_new(const struct rt_config *c);
/* Stop the workers and release everything. Every task must have finished. */
void rt_sched_free(struct rt_sched *s);
unsigned rt_sched_workers(const struct rt_sched *s);
const struct rt_config *rt_sched_config(const struct rt_sched *s);

/* ---- tasks -------------------------------------------------------------------------- */

/* Spawn a task from inside a task, placed by the configured policy. NULL + errno
 * (ENOMEM when no stack can be mapped). */
struct rt_task *rt_spawn(rt_fn fn, void *arg);
/* Submit a task from any thread through the global queue. NULL + errno. */
struct rt_task *rt_submit(struct rt_sched *s, rt_fn fn, void *arg);
/* Wait for t to finish and return its result; t is released. Exactly one join (or
 * one detach) per task. */
uint64_t rt_join(struct rt_task *t);
/* Release t without waiting; it is freed when it finishes. */
void rt_detach(struct rt_task *t);
/* Let other tasks run: the caller goes to the back of its worker's queue. */
void rt_yield(void);

/* The running task, or NULL outside a task. */
struct rt_task *rt_current(void);
/* The calling thread's worker index, or RT_NO_WORKER. */
unsigned rt_worker_index(void);
uint64_t rt_task_id(const struct rt_task *t);

/* ---- allocation ---------------------------------------------------------------------- */

/* The system allocator, counted per worker (calls and bytes: struct rt_worker_stats),
 * so that bytes per op is exact. Tasks allocate through these. */
void *rt_alloc(size_t bytes);
void *rt_calloc(size_t n, size_t size);
void rt_free(void *p);
/* What threads that are no worker allocated, process-wide. */
void rt_alloc_outside(uint64_t *calls, uint64_t *bytes);

/* ---- what the probes read ------------------------------------------------------------ */

/* Offset of the thread-local phase pointer from the thread pointer: what the on-CPU
 * probe needs to find each runtime thread's phase word (runtime/phase.h). */
int64_t rt_phase_tls_offset(void);

/* Always-on per-worker counters, read between iterations. */
struct rt_worker_stats {
	uint64_t tasks_run;       /* times a task was switched to */
	uint64_t spawned;         /* tasks created on this worker */
	uint64_t stolen;          /* tasks this worker took from others */
	uint64_t steal_attempts;  /* victims examined */
	uint64_t steals;          /* successful steal operations */
	uint64_t parks;           /* times the worker slept */
	uint64_t noop_wakeups;    /* woken, then found nothing and slept again */
	uint64_t notifies;        /* parked workers this worker woke */
	uint64_t place_local;     /* tasks placed on this worker's own queue */
	uint64_t place_external;  /* tasks placed on the global queue from this worker */
	uint64_t overflows;       /* pushes that spilled half the queue to the global queue */
	uint64_t global_pops;     /* tasks taken from the global queue */
	uint64_t alloc_calls;     /* rt_alloc / rt_calloc calls */
	uint64_t alloc_bytes;     /* bytes they asked for */
	uint64_t frees;           /* rt_free calls */
};

/* Copy worker i's counters for i < min(n, workers); returns the number copied. */
unsigned rt_sched_stats(struct rt_sched *s, struct rt_worker_stats *out, unsigned n);
/* Sum over workers. */
void rt_sched_stats_total(struct rt_sched *s, struct rt_worker_stats *total);

#endif /* SCHEDLAB_RT_H */
