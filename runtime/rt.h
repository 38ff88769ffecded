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
 * Every runtime thread publishes what it is doing in its phase word (runtime/phase.h),
 * which the on-CPU probe reads at each sample, and every worker keeps always-on counters
 * (struct rt_worker_stats) that explain placement.
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

#include "runtime/phase.h"

struct rt_sched;
struct rt_task;

typedef uint64_t (*rt_fn)(void *arg);

#define RT_MAX_WORKERS 256
#define RT_NO_WORKER   0xffffu

/* ---- configuration ------------------------------------------------------------------ */

/* Where a task goes when it becomes runnable. */
enum rt_place {
	RT_PLACE_LOCAL,    /* the tail of the placing worker's own queue */
	RT_PLACE_LIFO,     /* the placing worker's LIFO slot (Tokio); the old occupant to the tail */
	RT_PLACE_RUNNEXT,  /* the same slot, stealable and sharing the time slice (Go's runnext) */
	RT_PLACE_EXTERNAL, /* the global injection queue */
	RT_PLACE_SCAN,     /* the least loaded of scan_stride workers from a random start (Kyo) */
};

/* Whom a push to a worker's own queue wakes. */
enum rt_notify {
	RT_NOTIFY_NEVER,           /* nobody: the pushing worker runs it eventually (Kyo) */
	RT_NOTIFY_IF_NO_SEARCHERS, /* a parked worker, when none is searching already */
	RT_NOTIFY_ALWAYS,          /* a parked worker, whenever one is parked */
};

enum rt_fallback {
	RT_FALLBACK_RANDOM,   /* any worker at random, available or not (Kyo) */
	RT_FALLBACK_EXTERNAL, /* the global queue */
};

enum rt_steal {
	RT_STEAL_HALF, /* half the victim's queue, rounded up */
	RT_STEAL_ONE,  /* one task (ForkJoinPool's poll) */
};

enum rt_victim {
	RT_VICTIM_RANDOM,   /* every other worker in turn from a random start */
	RT_VICTIM_MAX_LOAD, /* the most loaded of steal_stride sampled workers (Kyo) */
};

/* What a blocking section (rt_blocking_begin .. end) does to its worker. */
enum rt_blocking {
	RT_BLOCK_NONE,       /* nothing: the worker blocks with its queue (detectors may see it) */
	RT_BLOCK_HANDOFF,    /* hand the worker's queue to a cached or new thread at once; the
			      * task goes on on its thread until it next waits (CE, Tokio) */
	RT_BLOCK_RETAKE,     /* a monitor hands the queue off after retake_us, if work waits (Go) */
	RT_BLOCK_DETECT,     /* a monitor samples workers' CPU time; a flat worker is drained (Kyo) */
	RT_BLOCK_COMPENSATE, /* wake or add a spare worker while blocked (ForkJoinPool, Loom) */
	RT_BLOCK_OFFLOAD,    /* move the task to a blocking-pool thread for the section
			      * (Tokio's spawn_blocking, cats-effect's interruptible) */
};

/* What a task's blocking socket call does (rt_socket_section(), rt_socket_send_all(),
 * rt_socket_recv_all()). */
enum rt_sockets {
	RT_SOCKETS_BLOCK, /* it blocks its thread, inside a blocking section, which the
			   * blocking knob handles (cats-effect's IO.blocking around a read,
			   * Kyo, Tokio's block_in_place, platform threads) */
	RT_SOCKETS_PARK,  /* it is tried without blocking and, when it would block, the task
			   * parks on the poller until the socket is ready: its worker runs
			   * other tasks meanwhile and no spare is added (the JDK's virtual-
			   * thread sockets, which unmount onto the read poller; Go's netpoller) */
};

/* How the effect layer (runtime/effect/) keeps a chain of binds it runs: the modelled
 * runtime's own representation, which the bind chain's cost follows. */
enum rt_binds {
	RT_BINDS_STACK, /* a stack of pending continuations, pushed and popped: linear in a
			 * left-associated chain's depth (cats-effect's run loop) */
	RT_BINDS_COPY,  /* the pending continuation copied whole at every bind: quadratic in
			 * time and allocation, as the study measured Kyo's chain (which left
			 * Kyo's own cause open: this is our model of the growth, not Kyo's code) */
};

/* Who waits on a task's file descriptors (rt_io_wait). */
enum rt_poller {
	RT_POLLER_REACTOR, /* one reactor thread per scheduler; it wakes the tasks (Kyo's
			    * selector thread, Loom's read pollers) */
	RT_POLLER_WORKER,  /* each worker's own epoll instance, looked at every
			    * global_interval ticks and waited on when it parks, so that the
			    * kernel wakes the parked worker itself (cats-effect 3.6's poller
			    * per WorkerThread) */
};

/* What a task's spawn makes of its child (scope.c): a task of its own, or a fork of the
 * spawner's scope, whose bookkeeping each fork pays (structured concurrency as libraries
 * on virtual threads add it). */
enum rt_scope {
	RT_SCOPE_NONE,       /* a task of its own: nothing is registered anywhere */
	RT_SCOPE_SUPERVISED, /* a fork registered in the spawner's scope, run under a handler
			      * whose failure cancels its siblings; the scope's end waits for
			      * it (Ox's supervised { fork(...) }) */
	RT_SCOPE_ASYNC,      /* as supervised, and a Future: a promise the join awaits as a
			      * listener, and a member of the scope's cancellation group
			      * (Gears' Async context and Future) */
};

enum rt_scan_start {
	RT_SCAN_RANDOM,      /* a random worker (Kyo) */
	RT_SCAN_ROUND_ROBIN, /* the one after where the placing thread's last scan started */
	RT_SCAN_FIRST,       /* worker 0 */
};

/* The kind of each worker's queue. */
enum rt_queue {
	RT_QUEUE_RING, /* a bounded FIFO ring, stolen from lock-free, plus an inbox for
			* other threads' placements (cats-effect, Tokio, Go) */
	RT_QUEUE_HEAP, /* one unbounded min-heap by the time each task has run, under a lock
			* every placement and steal takes: least-run first, no FIFO order (Kyo) */
};

/* What a full local queue does with its older half. */
enum rt_overflow {
	RT_OVERFLOW_GLOBAL, /* to the global queue (Tokio, Go, cats-effect) */
	RT_OVERFLOW_LOCAL,  /* to the worker's own unbounded inbox: the queue grows (Kyo) */
};

/* How the number of active workers changes while the scheduler runs. */
enum rt_adapt {
	RT_ADAPT_FIXED, /* workers stay as started (compensation aside) */
	RT_ADAPT_KYO,   /* Kyo's concurrency regulator: every 1.5 s, fewer workers when the
			 * monitor's own wake-ups jitter over 0.8 ms, more when under 0.5 ms and
			 * workers are 80% loaded, by steps that grow as k^1.2 */
};

enum rt_stack_mode {
	RT_STACK_DEDICATED, /* a stack per task, kept while it waits */
	RT_STACK_COMPACT,   /* a parked task's used stack is copied to the heap (see fiber.c) */
};

enum rt_executor {
	RT_EXEC_POOL,    /* tasks on a pool of worker threads */
	RT_EXEC_THREADS, /* one OS thread per task (platform threads) */
};

struct rt_config {
	const char *preset;            /* the preset these values came from */
	enum rt_executor executor;
	unsigned workers;              /* core worker threads; 0: one per online CPU */
	unsigned workers_max;          /* workers including compensating spares; 0: workers */
	unsigned workers_min;          /* the fewest active workers adaptation goes to; 0: half */
	enum rt_adapt adapt;
	size_t stack_size;             /* usable bytes per task stack (a guard page is added) */
	enum rt_stack_mode stack_mode;
	enum rt_queue queue;
	unsigned capacity;             /* slots in each worker's queue; a power of two */
	enum rt_place spawn;           /* a task spawned on a worker */
	enum rt_place wake;            /* a task woken on a worker (join, semaphore, channel) */
	enum rt_place submit;          /* a task submitted or woken from outside the pool */
	bool local_requires_available; /* a blocked worker places remotely, not locally (Kyo) */
	unsigned scan_stride;          /* workers a scan examines; 0: all */
	bool scan_stop_idle;           /* a scan stops at the first idle worker */
	enum rt_scan_start scan_start;
	enum rt_fallback scan_fallback;
	unsigned lifo_polls;           /* LIFO-slot runs in a row before it yields to the queue */
	bool lifo_stealable;           /* thieves may take the LIFO slot (last pass, as Go) */
	unsigned global_interval;      /* check the global queue first every this many ticks */
	bool global_adaptive;          /* scale global_interval to 200 us of polls (Tokio) */
	bool global_batch;             /* a worker out of work takes a share of the global queue
	                                * into its own; false: one task at a time */
	enum rt_notify notify;
	unsigned searcher_frac;        /* at most workers / searcher_frac search at once; 0: no cap */
	unsigned search_passes;        /* passes over every queue a searcher makes, at least */
	unsigned search_spin_us;       /* how long it keeps looking after them before it parks */
	unsigned park_spin_us;         /* how long a parking worker spins before it sleeps */
	enum rt_overflow overflow;
	bool idle_steal;               /* parked workers wake to search; false: only targeted wakes */
	enum rt_steal steal;
	enum rt_victim steal_victim;
	unsigned steal_stride;         /* workers sampled by RT_VICTIM_MAX_LOAD; 0: all */
	unsigned steal_min_load;       /* a victim must hold at least this many tasks */
	enum rt_blocking blocking;
	bool blocking_flush;           /* rt_blocking_begin() first calls rt_flush() (Kyo's fix) */
	enum rt_sockets sockets;       /* what a blocking socket call does */
	enum rt_binds binds;           /* how the effect layer keeps a chain of binds */
	enum rt_poller poller;         /* who waits on a task's file descriptors */
	enum rt_scope scope;           /* a spawned task: its own, or a fork of its spawner's scope */
	unsigned retake_us;            /* RT_BLOCK_RETAKE: how long a blocked worker keeps its queue */
	unsigned detect_us;            /* RT_BLOCK_DETECT: the CPU-time sampling interval */
	unsigned detect_samples;       /* flat samples in a row that flag a worker as blocked */
	unsigned time_slice_ms;        /* a task run this long without a switch stalls its worker
	                                * (Kyo): drained, passed over, asked to yield; 0: off */
	unsigned monitor_us;           /* the monitor's tick for the placement metrics */
	unsigned latency_sample;       /* measure schedule latency for 1 placement in this many */
	bool metrics;                  /* always-on counters (off only to measure their cost) */
};

/* The default: the `ce` preset with one worker per online CPU. */
void rt_config_default(struct rt_config *c);
/* Load a named preset into c, every knob. 0, or -ENOENT for an unknown name. */
int rt_config_preset(struct rt_config *c, const char *name);
/* The preset names, NULL-terminated (the default first), and a line on each. */
const char *const *rt_preset_names(void);
const char *rt_preset_describe(const char *name);

/* Knobs by name, for -c name=value: 0, or -EINVAL / -ENOENT with a one-line reason
 * in err that names the valid knobs or values. */
int rt_config_set(struct rt_config *c, const char *name, const char *value, char *err,
		  size_t errlen);
/* Knobs that are each in range yet cannot go together: 0, or -EINVAL with a one-line
 * reason in err that names the knobs and the fix. rt_sched_new() refuses the same. */
int rt_config_check(const struct rt_config *c, char *err, size_t errlen);
/* The knobs, NULL-terminated, what each means, and what it accepts ("local, lifo, ..."
 * or "0..256"). */
const char *const *rt_knob_names(void);
const char *rt_knob_describe(const char *name);
const char *rt_knob_accepts(const char *name);
/* Format knob `name` of c as -c would take it. 0, or -ENOENT. */
int rt_config_get(const struct rt_config *c, const char *name, char *buf, size_t len);

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
/* A point where the calling task may be preempted: it yields if it has run past
 * time_slice_ms since it was last switched in (Kyo's cooperative preemption), and
 * otherwise costs a few loads. The effect interpreter calls it at every step; a
 * long loop in plain C calls it now and then. It is also where a fork whose scope
 * cancelled it stops: it raises an ECANCELED error (see "scopes" below). */
void rt_preempt_point(void);
/* Spawn from inside a task onto some other worker, by a scan that leaves out the
 * caller's (Kyo's scheduleExcludingCurrent); outside a task, as rt_spawn. */
struct rt_task *rt_spawn_elsewhere(rt_fn fn, void *arg);
/* Re-place every task queued on the calling worker through a scan that leaves it out,
 * so that they run elsewhere while the caller goes on (Kyo's flush()). Returns how
 * many moved; 0 outside a worker. */
unsigned rt_flush(void);

/* Run a blocking call (a read on a socket, a sleep) as fn(arg) in a blocking section,
 * and return its result. The section tells the scheduler, which acts by its blocking
 * knob: nothing, hand the worker's queue to another thread, let a monitor retake it,
 * compensate with a spare worker, or move the task to a blocking-pool thread. The task
 * may finish the section on another thread than it began. The way to block: the
 * section is a frame of its own in every sampled stack, and the phase word says
 * RT_PHASE_BLOCK for all of it. Not nestable (an inner section is part of the outer). */
int rt_blocking(int (*fn)(void *arg), void *arg);
/* The same section by hand, for code that cannot pass a function: the phase word says
 * RT_PHASE_BLOCK from begin until end, whatever the stack between them shows. */
void rt_blocking_begin(void);
void rt_blocking_end(void);

/* The running task, or NULL outside a task. */
struct rt_task *rt_current(void);
/* The binds knob of the running task's scheduler (RT_BINDS_STACK outside a task): how the
 * effect layer runs a chain of binds there. */
enum rt_binds rt_binds(void);
/* The calling thread's worker index, or RT_NO_WORKER. */
unsigned rt_worker_index(void);
uint64_t rt_task_id(const struct rt_task *t);

/* ---- allocation ---------------------------------------------------------------------- */

/* The system allocator, counted per worker (calls and bytes: struct rt_worker_stats),
 * so that bytes per op is exact. Tasks allocate through these; calls from threads that
 * drive no worker are not counted. */
void *rt_alloc(size_t bytes);
void *rt_calloc(size_t n, size_t size);
void rt_free(void *p);

/* ---- what the probes read ------------------------------------------------------------ */

/* Offset of the thread-local phase word from the thread pointer: what the on-CPU probe
 * needs to find each thread's phase word (runtime/phase.h). */
int64_t rt_phase_tls_offset(void);

/* Always-on per-worker counters, read between iterations. Times in ns. */
#define RT_LATENCY_BUCKETS 40 /* bucket k: latencies in [2^k, 2^(k+1)) ns; 0 holds < 2 ns */

struct rt_worker_stats {
	uint64_t tasks_run;       /* times a task was switched to */
	uint64_t spawned;         /* tasks created on this worker */
	uint64_t stolen;          /* tasks this worker took from others */
	uint64_t steal_attempts;  /* victims examined */
	uint64_t steals;          /* successful steal operations */
	uint64_t parks;           /* times the worker slept */
	uint64_t noop_wakeups;    /* woken, then found nothing and slept again */
	uint64_t notifies;        /* parked workers this worker woke */
	uint64_t place_local;     /* placements by path, made from this worker: own queue */
	uint64_t place_lifo;      /* the LIFO / runnext slot */
	uint64_t place_external;  /* the global queue */
	uint64_t place_scan;      /* a worker chosen by a scan */
	uint64_t place_fallback;  /* a scan that found nobody available: the fallback */
	uint64_t place_flush;     /* tasks re-placed by rt_flush() or a detector's drain */
	uint64_t place_remote;    /* tasks other threads placed on this worker's inbox */
	uint64_t lifo_runs;       /* tasks run from the LIFO slot */
	uint64_t overflows;       /* pushes that spilled half the queue to the global queue */
	uint64_t global_pops;     /* tasks taken from the global queue */
	uint64_t regret_sum;      /* scans: chosen worker's load minus the least load, summed */
	uint64_t missed_idle;     /* placements made while a parked worker was passed over */
	uint64_t idle_while_queued_ns; /* this worker idle while tasks waited elsewhere */
	uint64_t stranded_ns;     /* this worker blocked while its own queue held tasks */
	uint64_t stranded_task_ns; /* the same, weighted by the number of stranded tasks */
	uint64_t blocking_episodes; /* blocking sections begun on this worker */
	uint64_t blocking_ns;     /* their total length */
	uint64_t handoffs;        /* queues handed to another thread (at once or retaken) */
	uint64_t detector_flags;  /* times the CPU-time detector flagged this worker blocked */
	uint64_t detector_misses; /* blocking sections that ended before any detector saw them */
	uint64_t compensations;   /* spare workers woken or added for a blocked one */
	uint64_t offloads;        /* tasks moved to the blocking pool for a section */
	uint64_t stalls;          /* tasks that ran past time_slice_ms without a switch */
	uint64_t preemptions;     /* stalled tasks that yielded at rt_preempt_point() */
	uint64_t alloc_calls;     /* rt_alloc / rt_calloc calls */
	uint64_t alloc_bytes;     /* bytes they asked for */
	uint64_t frees;           /* rt_free calls */
	uint64_t latency_count;   /* sampled schedule latencies (runnable -> running) */
	uint64_t latency_ns;      /* their sum */
	uint64_t latency_hist[RT_LATENCY_BUCKETS];
};

/* Copy worker i's counters for i < min(n, workers); returns the number copied. */
unsigned rt_sched_stats(struct rt_sched *s, struct rt_worker_stats *out, unsigned n);
/* Sum over workers. */
void rt_sched_stats_total(struct rt_sched *s, struct rt_worker_stats *total);
/* Sum over workers at a tracer's mark: mark(ctx) (NULL: none) fires whatever stands for
 * this read, with no park counted on one side of the pair and traced (rt:park) on the
 * other, so that the parks between two such reads are exactly the rt:park events
 * between their marks. Parks wait meanwhile. One caller at a time, not a worker. */
void rt_sched_stats_edge(struct rt_sched *s, struct rt_worker_stats *total,
			 void (*mark)(void *ctx), void *ctx);
/* Tasks thief took from victim, summed since start: the victim-to-thief matrix. */
uint64_t rt_sched_steals_from(struct rt_sched *s, unsigned thief, unsigned victim);
/* Workers started so far, spares included (>= rt_sched_workers()); OS threads made
 * for blocking hand-offs and for tasks of the threads executor. */
unsigned rt_sched_workers_started(struct rt_sched *s);
uint64_t rt_sched_threads_created(struct rt_sched *s);
/* Workers scans place on now (adaptation changes it), and how often it changed. */
unsigned rt_sched_workers_active(struct rt_sched *s);
uint64_t rt_sched_adaptations(struct rt_sched *s);

/* ---- errors (error.c) ----------------------------------------------------------------- */

/* Two ways to fail, as the studies compare them: return a result value, or raise an error
 * object to the innermost handler. An error object may capture the stack at creation,
 * the C analogue of a Throwable filling its stack trace; the phase word says
 * RT_PHASE_STACKCAP meanwhile.
 *
 * Handlers belong to the code that sets them: a task's to that task (wherever it runs
 * next), a thread's, outside tasks, to that thread. A raise never leaves its task: one
 * with no handler of its own aborts the process, naming the error, even when the task's
 * spawner or joiner has one. */

struct rt_error;

/* A result as a value: ok and a value, or !ok and an error that whoever holds the result
 * owns (rt_error_free() it, or raise it again). */
struct rt_result {
	bool ok;
	uint64_t value;
	struct rt_error *err;
};

/* The most frames an error keeps; deeper stacks keep their innermost frames. */
#define RT_ERROR_MAX_FRAMES 64

/* An error with a code and a message (copied; NULL reads as ""). With trace, capture
 * the stack now, innermost first, starting at the caller (a tail call to here hides the
 * caller, as it does from any unwinder). Counted by rt_alloc(). NULL + errno (ENOMEM). */
struct rt_error *rt_error_new(int code, const char *msg, bool trace);
/* The shared out-of-memory error (code ENOMEM) for when no error can be allocated:
 * rt_raise(NULL) raises it and rt_error_free() leaves it alone. */
struct rt_error *rt_error_oom(void);
void rt_error_free(struct rt_error *e);
int rt_error_code(const struct rt_error *e);
const char *rt_error_message(const struct rt_error *e);
/* The captured return addresses, innermost first; *n is 0 for an error without trace. */
void *const *rt_error_frames(const struct rt_error *e, unsigned *n);

/* Unwind to the innermost handler of the running task (outside tasks: the thread) and
 * hand it e; NULL raises rt_error_oom(). Aborts, naming e, when there is no handler. */
__attribute__((noreturn)) void rt_raise(struct rt_error *e);
/* Raise a new error that captured no stack: rt_raise(rt_error_new(code, msg, false)). */
__attribute__((noreturn)) void rt_raise_notrace(int code, const char *msg);
/* Run fn(arg) under a handler: its value as an ok result, or the error it raised (and
 * did not catch itself) as a failed one. The handler is popped either way; frames
 * between the raise and here are abandoned, not unwound: what they hold is leaked
 * unless it is owned elsewhere. */
struct rt_result rt_try(rt_fn fn, void *arg);
/* r's value, or raise r's error. */
uint64_t rt_result_unwrap(struct rt_result r);

static inline struct rt_result rt_result_ok(uint64_t value)
{
	return (struct rt_result){ .ok = true, .value = value };
}

/* A failed result; NULL (a failed rt_error_new()) becomes rt_error_oom(). */
static inline struct rt_result rt_result_err(struct rt_error *e)
{
	return (struct rt_result){ .ok = false, .err = e ? e : rt_error_oom() };
}

/* ---- scopes: structured concurrency (scope.c) ---------------------------------------- *
 *
 * Under -c scope=supervised (Ox's supervised { fork(...) }) or scope=async (Gears' Async
 * and Future) every task a task spawns (rt_spawn, rt_spawn_elsewhere) is a fork of the
 * spawner's scope, which is made at the spawner's first fork and ends when its body
 * returns: the end waits for every fork still running, so that no fork outlives its
 * scope. A fork's body runs under a handler: a raise that leaves it fails the scope, which
 * keeps the first failure and cancels every other fork; a cancelled fork that has not
 * started ends without running its body, and one that runs raises an ECANCELED error at
 * its next rt_preempt_point(). A join of a fork that failed or was cancelled returns 0.
 *
 * The owner is not cancelled: it learns of a failure from its joins (0) and from
 * rt_scope_failure(). When its body returns, a failure its scope still holds goes on as
 * the owner's own, if the owner is a fork itself (its scope fails in turn, as an
 * exception thrown out of a nested supervised block fails the fork around it); a task
 * that is no fork has nobody to hand it to, and it is freed. Under scope=none (every
 * preset but ox and gears) none of this exists and a spawn registers nothing. */

/* Forks of the calling task's scope that have not ended yet; 0 with no scope. */
unsigned rt_scope_forks(void);
/* The first failure of the calling task's scope so far, or NULL (none yet, or no scope).
 * The scope keeps it until the caller's body returns: not to be freed or raised. */
const struct rt_error *rt_scope_failure(void);

/* ---- waiting: semaphores and latches (sync.c) ----------------------------------------- */

/* Every blocking call below works from a task (the task suspends and its worker runs
 * others) and from a plain thread (the thread blocks on a futex). The structures are
 * the caller's memory, like struct rt_deque; every field is private. */

struct rt__waiter;

/* Private: a FIFO of waiters, each on its own waiter's stack (runtime/internal.h). */
struct rt__wait_list {
	struct rt__waiter *head, *tail;
};

/* A counting semaphore. acquire and release are one atomic instruction each when no one
 * waits. Waiters are served in the order they queue: a release that finds one hands its
 * permit straight to the oldest, and no later acquire can take it first. */
struct rt_sem {
	int64_t count;                  /* private: permits free, minus acquirers waiting */
	uint32_t lock;                  /* private: guards the fields below */
	uint32_t nwaiters;              /* private: waiters in the list (read by tests) */
	uint64_t handoff;               /* private: permits owed to waiters not yet listed */
	struct rt__wait_list waiters;   /* private */
};

/* 0, or -EINVAL when permits exceeds INT64_MAX. */
int rt_sem_init(struct rt_sem *s, uint64_t permits);
/* Take a permit, waiting (FIFO) while none is free. Any thread or task. */
void rt_sem_acquire(struct rt_sem *s);
/* Take a permit if one is free now; never waits and never overtakes a waiter. */
bool rt_sem_try_acquire(struct rt_sem *s);
/* Return a permit: to the oldest waiter if there is one. Any thread or task. */
void rt_sem_release(struct rt_sem *s);
/* Permits free now (a snapshot). */
uint64_t rt_sem_available(const struct rt_sem *s);
/* Nothing may wait on s any more. Frees nothing: the memory is the caller's. */
void rt_sem_destroy(struct rt_sem *s);

/* A one-shot count-down latch: waiters wait until the count reaches zero, and are all
 * released together, in one pass and without any of them taking a lock again. */
struct rt_latch {
	uint64_t count;                 /* private */
	uint32_t lock;                  /* private: guards waiters */
	uint32_t nwaiters;              /* private: waiters in the list (read by tests) */
	struct rt__wait_list waiters;   /* private */
};

/* 0 always (count 0: open from the start). */
int rt_latch_init(struct rt_latch *l, uint64_t count);
/* Count down by one; the step to zero releases every waiter. At zero, does nothing. */
void rt_latch_count_down(struct rt_latch *l);
/* Wait until the count is zero. Any thread or task. */
void rt_latch_wait(struct rt_latch *l);
uint64_t rt_latch_count(const struct rt_latch *l);

/* ---- bounded MPMC channels (chan.c) ---------------------------------------------------- */

/* A bounded multi-producer multi-consumer FIFO of pointers (Vyukov's ring: one sequence
 * number per cell). When neither side must sleep, send and receive take no lock: one
 * CAS on their own counter and two stores to the cell. Each producer's items arrive in
 * the order it sent them. The ring is the caller's memory: each cell is a sequence
 * number and a value, so a channel of capacity `cap` needs RT_CHAN_SLOTS(cap) pointers
 * of storage, not `cap`:
 *
 *	void *slots[RT_CHAN_SLOTS(1024)];
 *	rt_chan_init(&c, slots, 1024);
 *
 * Head and tail sit on their own cache lines, so the struct is 64-byte aligned: embed
 * it, or allocate it with aligned_alloc(). Positions run freely over 2^63 values (the
 * top bit of `tail` says closed): at 10^9 items a second they last three centuries. */
#define RT_CHAN_SLOTS(cap) (2 * (size_t)(cap))

struct rt_chan {
	_Alignas(64) uint64_t tail;     /* private: next position to send, | closed bit */
	uint64_t tail_leased_at;        /* private: tail when the send side was last leased */
	_Alignas(64) uint64_t head;     /* private: next position to receive */
	uint64_t head_leased_at;        /* private: head when the receive side was last leased */
	_Alignas(64) void **slots;      /* private: the cells, read-only after init */
	uint64_t mask;                  /* private: cap - 1, and the sides' lessees */
	uint32_t recv_waiting;          /* private: receivers listed; read by every send */
	uint32_t send_waiting;          /* private: senders listed; read by every receive */
	uint32_t lock;                  /* private: guards the two lists */
	uint8_t backoff[2];             /* private: each side's leases that did not pay */
	struct rt__wait_list recvq;     /* private */
	struct rt__wait_list sendq;     /* private */
};

/* 0, or -EINVAL unless cap is a power of two in [2, 2^31]. slots must hold
 * RT_CHAN_SLOTS(cap) pointers and outlive the channel. */
int rt_chan_init(struct rt_chan *c, void **slots, uint32_t cap);
/* Send v (any value, NULL included), waiting while the channel is full. 0, or -EPIPE
 * when the channel is closed (v was not sent). */
int rt_chan_send(struct rt_chan *c, void *v);
/* Receive into *out, waiting while the channel is empty. 0, or -EPIPE once the channel
 * is closed and every item sent before the close has been received. */
int rt_chan_recv(struct rt_chan *c, void **out);
/* Never wait: false when full (or closed) / empty. */
bool rt_chan_try_send(struct rt_chan *c, void *v);
bool rt_chan_try_recv(struct rt_chan *c, void **out);
/* Refuse further sends and wake every waiter; receivers drain what is left. Any
 * thread; closing twice is harmless. */
void rt_chan_close(struct rt_chan *c);
/* Items queued now (a snapshot, counting sends still in progress). */
uint32_t rt_chan_len(const struct rt_chan *c);

/* ---- timers and the I/O reactor (io.c) -------------------------------------------------- */

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t rt_now_ns(void);
/* Sleep at least ns. A task suspends (its worker runs others) until the scheduler's
 * timer thread wakes it; rt_sleep_ns(0) in a task is a yield. A thread sleeps. */
void rt_sleep_ns(uint64_t ns);
/* Wait until fd is ready for events (EPOLLIN, EPOLLOUT, EPOLLPRI, EPOLLRDHUP; errors
 * and hang-ups always count as ready) or timeout_ns passes (< 0: no timeout; 0: just
 * look). 0 when ready; -ETIMEDOUT; -EINVAL for bad events; -EBADF; -EPERM for a file
 * epoll cannot watch; -EBUSY when another task of the same scheduler (poller=worker: of
 * the same worker) waits on fd now. A task suspends and the reactor thread, or with
 * poller=worker the worker it waited on, wakes it; a thread blocks in poll(2). fd must
 * stay open while a task waits on it. */
int rt_io_wait(int fd, uint32_t events, int64_t timeout_ns);

/* A task's blocking socket calls, as its runtime makes them (the sockets knob). fn(arg)
 * makes them with rt_socket_send_all() and rt_socket_recv_all() on blocking sockets.
 * Under sockets=block it runs in one blocking section (rt_blocking()), which the
 * blocking knob handles; under sockets=park it runs in the task as it is, and each call
 * that would block parks the task on the poller (rt_io_wait()) instead: no section, no
 * spare worker, the worker free meanwhile. Outside a task, fn just runs (and blocks).
 * fn's result. */
int rt_socket_section(int (*fn)(void *arg), void *arg);
/* Send, or receive, all len bytes on the blocking socket fd: in a task whose sockets
 * park (and not in a blocking section), without blocking (MSG_DONTWAIT), parking on the
 * poller for at most timeout_ns (< 0: no limit) each time the socket is not ready; else
 * as blocking calls, which the socket's own SO_SNDTIMEO / SO_RCVTIMEO bound. 0;
 * -ETIMEDOUT; -EPIPE when the peer closed or reset the connection; or -errno. */
int rt_socket_send_all(int fd, const void *buf, size_t len, int64_t timeout_ns);
int rt_socket_recv_all(int fd, void *buf, size_t len, int64_t timeout_ns);

/* ---- the phase word at the calls above ---------------------------------------------- *
 *
 * The calling thread's phase word (runtime/phase.h). Every thread has one, NONE with no
 * worker until it enters runtime code; TLS of the executable (local-exec: the runtime is
 * linked into it), so that its offset from the thread pointer is one constant.
 *
 * The phase functions above (rt_spawn, rt_join, rt_alloc, ...) set their phase on their
 * first statement, but their prologue runs before it, and after a context switch the
 * processor stalls there often enough that samples pile up in those few instructions:
 * the stack already shows the phase function and the word does not say so yet. So each
 * call to one goes through a macro of the function's own name, which sets the kind at
 * the call site, just before the call instruction, and puts the caller's back just after
 * it; the function's own store then changes nothing. (rt_spawn)(...) calls the function
 * itself, and its address is &rt_spawn as ever. The kind byte is re-read and re-stored
 * through %fs each time, so a task that resumed on another thread (after rt_join, say)
 * stores into that thread's word. */
extern __thread uint64_t rt_phase_word __attribute__((tls_model("local-exec")));

/* "iq": the kind is an immediate wherever it folds to a constant, as it does whenever
 * the compiler optimises; at -O0 an inlined function's argument does not, and a byte
 * register carries it instead. */
#define RT__PHASE_ENTER(kind)                                                              \
	({                                                                                 \
		unsigned rt__phase_old_;                                                   \
		__asm__ volatile("movzbl %%fs:rt_phase_word@tpoff, %0\n\t"                   \
				 "movb %1, %%fs:rt_phase_word@tpoff"                          \
				 : "=&r"(rt__phase_old_)                                      \
				 : "iq"((unsigned char)(kind))                                \
				 : "memory");                                                 \
		rt__phase_old_;                                                            \
	})
#define RT__PHASE_LEAVE(old)                                                               \
	__asm__ volatile("movb %b0, %%fs:rt_phase_word@tpoff" : : "q"((unsigned)(old)) : "memory")
/* A call to a phase function of phase kind, with the kind set around it. */
#define RT__PHASE_CALL(kind, call)                                                         \
	({                                                                                 \
		unsigned rt__phase_k_ = RT__PHASE_ENTER(kind);                             \
		__typeof__(call) rt__phase_r_ = (call);                                    \
		RT__PHASE_LEAVE(rt__phase_k_);                                             \
		rt__phase_r_;                                                              \
	})
#define RT__PHASE_CALL_VOID(kind, call)                                                    \
	({                                                                                 \
		unsigned rt__phase_k_ = RT__PHASE_ENTER(kind);                             \
		(call);                                                                    \
		RT__PHASE_LEAVE(rt__phase_k_);                                             \
	})

#define rt_spawn(fn, arg)	   RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt_spawn)(fn, arg))
#define rt_spawn_elsewhere(fn, arg) RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt_spawn_elsewhere)(fn, arg))
#define rt_submit(s, fn, arg)	   RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt_submit)(s, fn, arg))
#define rt_join(t)		   RT__PHASE_CALL(RT_PHASE_SCHED, (rt_join)(t))
#define rt_detach(t)		   RT__PHASE_CALL_VOID(RT_PHASE_SCHED, (rt_detach)(t))
#define rt_yield()		   RT__PHASE_CALL_VOID(RT_PHASE_SCHED, (rt_yield)())
#define rt_flush()		   RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt_flush)())
#define rt_blocking(fn, arg)	   RT__PHASE_CALL(RT_PHASE_BLOCK, (rt_blocking)(fn, arg))
#define rt_alloc(bytes)		   RT__PHASE_CALL(RT_PHASE_ALLOC, (rt_alloc)(bytes))
#define rt_calloc(n, size)	   RT__PHASE_CALL(RT_PHASE_ALLOC, (rt_calloc)(n, size))
#define rt_free(p)		   RT__PHASE_CALL_VOID(RT_PHASE_ALLOC, (rt_free)(p))

#endif /* SCHEDLAB_RT_H */
