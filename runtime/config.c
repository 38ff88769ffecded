/*
 * Configurations: every scheduling decision the modelled runtimes make differently is
 * a knob, and a preset is a complete vector of knob values (reference/runtimes.md,
 * section b, lists each runtime's). rt_config_preset() overwrites every knob, so
 * -c overrides after a preset never depend on what was set before.
 *
 * The knob table below drives parsing (-c name=value), printing (schedlab list
 * --presets shows each preset's whole vector) and the error messages, which name the
 * valid knobs and values.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/rt.h"

/* ---- presets ------------------------------------------------------------------------- */

/* cats-effect 3's work-stealing pool: spawn to the local ring (256) and wake a parked
 * sibling when none is searching; at most half the workers search, each stealing
 * half a queue; the external queue first every 64 ticks; IO.blocking hands the
 * worker's queue to a cached or new thread and runs the call in place, and the fiber
 * goes on there until it next waits; a fiber waiting on a socket is registered with its
 * worker's own poller (3.6's integrated runtime), which the worker looks at with the
 * external queue and parks in. */
static void preset_ce(struct rt_config *c)
{
	c->executor = RT_EXEC_POOL;
	c->workers = 0;
	c->workers_max = 0;
	c->workers_min = 0;
	c->adapt = RT_ADAPT_FIXED;
	c->stack_size = 64 * 1024;
	c->stack_mode = RT_STACK_DEDICATED;
	c->queue = RT_QUEUE_RING;
	c->capacity = 256;
	c->spawn = RT_PLACE_LOCAL;
	c->wake = RT_PLACE_LOCAL;
	c->submit = RT_PLACE_EXTERNAL;
	c->local_requires_available = false;
	c->scan_stride = 0;
	c->scan_stop_idle = true;
	c->scan_start = RT_SCAN_RANDOM;
	c->scan_fallback = RT_FALLBACK_EXTERNAL;
	c->lifo_polls = 3;
	c->lifo_stealable = false;
	c->global_interval = 64;
	c->global_adaptive = false;
	c->global_batch = true;
	c->notify = RT_NOTIFY_IF_NO_SEARCHERS;
	c->searcher_frac = 2;
	c->search_passes = 1;
	c->search_spin_us = 0; /* then park: none of the modelled runtimes spins on a clock */
	c->park_spin_us = 0;
	c->overflow = RT_OVERFLOW_GLOBAL;
	c->idle_steal = true;
	c->steal = RT_STEAL_HALF;
	c->steal_victim = RT_VICTIM_RANDOM;
	c->steal_stride = 0;
	c->steal_min_load = 1;
	c->blocking = RT_BLOCK_HANDOFF;
	c->blocking_flush = false;
	c->sockets = RT_SOCKETS_BLOCK; /* IO.blocking around a blocking socket's read */
	c->binds = RT_BINDS_STACK;     /* the IO run loop's stack of continuations */
	c->poller = RT_POLLER_WORKER;
	c->scope = RT_SCOPE_NONE; /* a fiber is a task of its own; nothing registers it */
	c->retake_us = 20;
	c->detect_us = 2000;
	c->detect_samples = 2;
	c->time_slice_ms = 0;
	c->monitor_us = 1000;
	c->latency_sample = 256;
	c->metrics = true;
}

/* Tokio's multi-thread scheduler: as cats-effect, but a spawned or woken task takes
 * the LIFO slot (not stealable, at most 3 runs in a row), which notifies nobody; the
 * global-queue interval adapts to 200 us of polls; block_in_place hands the core off. A
 * socket read is no block: tokio::net's TcpStream returns WouldBlock and the task parks
 * on the reactor until it is readable (the Tokio 1.24 peer, bench/tokio, does this;
 * this preset blocked the worker in a handed-off section, as block_in_place around a
 * std::net read would, until bench/models.sh set the two side by side). */
static void preset_tokio(struct rt_config *c)
{
	preset_ce(c);
	c->spawn = RT_PLACE_LIFO;
	c->wake = RT_PLACE_LIFO;
	c->global_interval = 61;
	c->global_adaptive = true;
	c->poller = RT_POLLER_REACTOR; /* one I/O driver, not one per worker */
	c->sockets = RT_SOCKETS_PARK;
}

/* Go's G/M/P: a new or readied goroutine takes runnext (stealable on the last of four
 * passes), the global queue every 61 ticks, spinning Ms capped at half; a blocked M
 * keeps its P until sysmon retakes it after 20 us if work is waiting. A goroutine's
 * socket read is not such a block: net.Conn parks the goroutine on the netpoller. */
static void preset_go(struct rt_config *c)
{
	preset_ce(c);
	c->spawn = RT_PLACE_RUNNEXT;
	c->wake = RT_PLACE_RUNNEXT;
	c->lifo_polls = UINT_MAX;
	c->lifo_stealable = true;
	c->global_interval = 61;
	c->search_passes = 4; /* findRunnable's four stealWork passes, runnext on the last */
	c->blocking = RT_BLOCK_RETAKE;
	c->retake_us = 20;
	c->sockets = RT_SOCKETS_PARK;
	c->poller = RT_POLLER_REACTOR; /* the netpoller is the scheduler's, not a P's */
}

/* Kyo's scheduler: spawn and wake to the caller's queue with no wake-up; submissions
 * from outside go to the least loaded of `cores` workers from a random start (stop at
 * an idle one, else any worker at random); idle workers never steal (a worker steals
 * once when its queue runs dry, from the most loaded of 8 x cores sampled workers);
 * blocking is only seen by sampling workers' CPU time every 2 ms, twice. */
static void preset_kyo(struct rt_config *c)
{
	preset_ce(c);
	c->queue = RT_QUEUE_HEAP;        /* least run first, unbounded, spin-locked */
	c->overflow = RT_OVERFLOW_LOCAL; /* (for queue=ring) Kyo's queues grow; no global queue */
	c->workers_min = 0;              /* half the cores */
	c->workers_max = RT_MAX_WORKERS; /* Kyo: 100 x cores, capped */
	c->adapt = RT_ADAPT_KYO;
	c->spawn = RT_PLACE_LOCAL;
	c->wake = RT_PLACE_LOCAL;
	c->submit = RT_PLACE_SCAN;
	c->local_requires_available = true;
	c->scan_stride = 0; /* = cores: the scan covers the workers there are */
	c->scan_stop_idle = true;
	c->scan_fallback = RT_FALLBACK_RANDOM;
	c->notify = RT_NOTIFY_NEVER;
	c->idle_steal = false;
	c->steal_victim = RT_VICTIM_MAX_LOAD;
	c->steal_stride = 0;
	c->steal_min_load = 2;
	c->blocking = RT_BLOCK_DETECT;
	c->detect_us = 2000;
	c->detect_samples = 2;
	c->time_slice_ms = 10; /* timeSliceMs: a stalled worker is drained and preempted */
	/* the study measured Kyo's chain of binds growing quadratically in time and bytes */
	c->binds = RT_BINDS_COPY;
	c->poller = RT_POLLER_REACTOR; /* kyo-net's selector threads */
}

/* The studied partial fix: flush the worker's queue before each blocking call. */
static void preset_kyo_flush(struct rt_config *c)
{
	preset_kyo(c);
	c->blocking_flush = true;
}

/* The studied full fix: flush, and 64 workers that a 64-wide scan always sees. */
static void preset_kyo_tuned(struct rt_config *c)
{
	preset_kyo_flush(c);
	c->workers = 64;
	c->workers_min = 64;
	c->workers_max = 64;
	c->scan_stride = 64;
}

/* Virtual threads on a ForkJoinPool: start() submits to the external queue, unpark
 * pushes to the carrier's queue, thieves take one task at a time. A virtual thread
 * blocked on a socket unmounts and parks on the read poller (its carrier runs others,
 * none is added); a carrier blocked in the kernel otherwise (file I/O, pinning,
 * Object.wait) is compensated by a spare, up to 256. */
static void preset_loom(struct rt_config *c)
{
	preset_ce(c);
	c->spawn = RT_PLACE_EXTERNAL;
	c->wake = RT_PLACE_LOCAL;
	c->notify = RT_NOTIFY_ALWAYS;
	c->searcher_frac = 0;
	c->steal = RT_STEAL_ONE;
	c->blocking = RT_BLOCK_COMPENSATE;
	c->workers_max = 256;
	c->sockets = RT_SOCKETS_PARK;
	c->poller = RT_POLLER_REACTOR; /* the JDK's read-poller threads */
}

/* Ox on virtual threads: loom's scheduler, and every fork is one of a supervised scope:
 * registered in the scope's set of running forks, run under a handler whose failure
 * cancels its siblings, unregistered at its end, and waited for by the scope's exit. */
static void preset_ox(struct rt_config *c)
{
	preset_loom(c);
	c->scope = RT_SCOPE_SUPERVISED;
}

/* Gears on virtual threads: loom's scheduler, and every fork is a Future of an Async
 * context: registered as under ox, and also a promise a join awaits as a listener, and a
 * member of the context's completion group, through which it is cancelled. */
static void preset_gears(struct rt_config *c)
{
	preset_loom(c);
	c->scope = RT_SCOPE_ASYNC;
}

/* A plain thread-pool executor: one shared locked queue, no per-worker queues, no
 * stealing; a yielded task is submitted to the shared queue again, and a blocking call
 * simply holds its thread. */
static void preset_global(struct rt_config *c)
{
	preset_ce(c);
	c->spawn = RT_PLACE_EXTERNAL;
	c->wake = RT_PLACE_EXTERNAL;
	c->submit = RT_PLACE_EXTERNAL;
	c->global_interval = 1;
	c->global_batch = false; /* a pool's workers take one task at a time */
	c->notify = RT_NOTIFY_ALWAYS;
	c->idle_steal = false;
	c->blocking = RT_BLOCK_NONE;
	c->poller = RT_POLLER_REACTOR;
}

/* Platform threads: one OS thread per task, created at spawn. */
static void preset_threads(struct rt_config *c)
{
	preset_ce(c);
	c->executor = RT_EXEC_THREADS;
	c->blocking = RT_BLOCK_NONE;
	c->poller = RT_POLLER_REACTOR;
	c->stack_size = 256 * 1024;
}

struct preset {
	const char *name;
	const char *describe;
	void (*apply)(struct rt_config *c);
};

static const struct preset presets[] = {
	{ "ce", "cats-effect's work-stealing pool: local ring, wake a sibling if none searches, "
		"blocking hands the queue off",
	  preset_ce },
	{ "tokio", "Tokio multi-thread: as ce plus a LIFO slot (not stealable, 3 runs per tick), "
		   "adaptive global interval, sockets park on the reactor",
	  preset_tokio },
	{ "go", "Go's G/M/P: runnext slot, global queue every 61 ticks, sockets park on the "
		"netpoller, sysmon retakes a worker blocked otherwise after 20 us",
	  preset_go },
	{ "kyo", "Kyo: spawn local with no wake-up, scan placement, a worker steals once as its "
		 "queue runs dry, blocking seen only by 2 ms x 2 CPU-time samples",
	  preset_kyo },
	{ "kyo-flush", "kyo, with rt_flush() before each blocking call (the studied partial fix)",
	  preset_kyo_flush },
	{ "kyo-tuned", "kyo-flush with 64 workers and a 64-wide scan (the studied full fix)",
	  preset_kyo_tuned },
	{ "loom", "virtual threads on a ForkJoinPool: spawn to the external queue, sockets park "
		  "on the poller, other blocking compensated by spare workers",
	  preset_loom },
	{ "ox", "Ox's supervised scopes on loom: each fork registered in its scope, run under a "
		"handler whose failure cancels its siblings, waited for at the scope's end",
	  preset_ox },
	{ "gears", "Gears' Async and Future on loom: each fork as under ox, and a promise its join "
		   "awaits as a listener and a member of the scope's cancellation group",
	  preset_gears },
	{ "global", "a plain thread-pool executor: one shared locked queue, no stealing",
	  preset_global },
	{ "threads", "platform threads: one OS thread per task", preset_threads },
};

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

static const char *const preset_names[] = {
	"ce", "tokio", "go", "kyo", "kyo-flush", "kyo-tuned", "loom", "ox", "gears", "global",
	"threads", NULL,
};

_Static_assert(sizeof(preset_names) / sizeof(preset_names[0]) == NPRESETS + 1,
	       "every preset is listed by name");

void rt_config_default(struct rt_config *c)
{
	rt_config_preset(c, "ce");
}

int rt_config_preset(struct rt_config *c, const char *name)
{
	for (size_t i = 0; i < NPRESETS; i++) {
		if (!strcmp(presets[i].name, name)) {
			memset(c, 0, sizeof(*c));
			presets[i].apply(c);
			c->preset = presets[i].name;
			return 0;
		}
	}
	return -ENOENT;
}

const char *const *rt_preset_names(void)
{
	return preset_names;
}

const char *rt_preset_describe(const char *name)
{
	for (size_t i = 0; i < NPRESETS; i++)
		if (!strcmp(presets[i].name, name))
			return presets[i].describe;
	return NULL;
}

/* ---- knobs ----------------------------------------------------------------------------- */

enum knob_kind { K_UINT, K_SIZE, K_BOOL, K_ENUM };

struct knob {
	const char *name;
	enum knob_kind kind;
	size_t offset;
	unsigned long min, max;  /* K_UINT, K_SIZE */
	const char *const *words; /* K_ENUM: the value names, in enum order */
	const char *accepts;
	const char *help;
};

static const char *const place_words[] = { "local", "lifo", "runnext", "external", "scan", NULL };
static const char *const notify_words[] = { "never", "if-no-searchers", "always", NULL };
static const char *const fallback_words[] = { "random", "external", NULL };
static const char *const steal_words[] = { "half", "one", NULL };
static const char *const victim_words[] = { "random", "max-load", NULL };
static const char *const blocking_words[] = { "none",       "handoff", "retake", "detect",
					      "compensate", "offload", NULL };
static const char *const scan_start_words[] = { "random", "round-robin", "first", NULL };
static const char *const queue_words[] = { "ring", "heap", NULL };
static const char *const overflow_words[] = { "global", "local", NULL };
static const char *const adapt_words[] = { "fixed", "kyo", NULL };
static const char *const stack_words[] = { "dedicated", "compact", NULL };
static const char *const executor_words[] = { "pool", "threads", NULL };
static const char *const poller_words[] = { "reactor", "worker", NULL };
static const char *const sockets_words[] = { "block", "park", NULL };
static const char *const binds_words[] = { "stack", "copy", NULL };
static const char *const scope_words[] = { "none", "supervised", "async", NULL };

#define OFF(field) offsetof(struct rt_config, field)
#define PLACES     "local, lifo, runnext, external, scan"

static const struct knob knobs[] = {
	{ "executor", K_ENUM, OFF(executor), 0, 0, executor_words, "pool, threads",
	  "tasks on a pool of workers, or one OS thread per task" },
	{ "workers", K_UINT, OFF(workers), 0, RT_MAX_WORKERS, NULL, "0..256",
	  "core worker threads; 0: one per online CPU" },
	{ "workers_max", K_UINT, OFF(workers_max), 0, RT_MAX_WORKERS, NULL, "0..256",
	  "workers including compensating spares and adaptation; 0: as workers" },
	{ "workers_min", K_UINT, OFF(workers_min), 0, RT_MAX_WORKERS, NULL, "0..256",
	  "the fewest active workers adaptation goes down to; 0: half of workers" },
	{ "adapt", K_ENUM, OFF(adapt), 0, 0, adapt_words, "fixed, kyo",
	  "how the number of active workers changes: not at all, or Kyo's regulator" },
	{ "stack_size", K_SIZE, OFF(stack_size), 16384, 64ul << 20, NULL, "16384..67108864",
	  "usable bytes of each task's stack" },
	{ "stack_mode", K_ENUM, OFF(stack_mode), 0, 0, stack_words, "dedicated, compact",
	  "a stack per task, or parked tasks' stacks copied out to the heap" },
	{ "queue", K_ENUM, OFF(queue), 0, 0, queue_words, "ring, heap",
	  "each worker's queue: a FIFO ring plus an inbox, or a locked heap, least-run first" },
	{ "capacity", K_UINT, OFF(capacity), 2, 1u << 20, NULL, "2..1048576, a power of two",
	  "slots in each worker's ring (queue=ring; a heap grows)" },
	{ "overflow", K_ENUM, OFF(overflow), 0, 0, overflow_words, "global, local",
	  "where a full ring's older half goes: the global queue, or the worker's own inbox" },
	{ "spawn", K_ENUM, OFF(spawn), 0, 0, place_words, PLACES,
	  "where a task spawned on a worker goes" },
	{ "wake", K_ENUM, OFF(wake), 0, 0, place_words, PLACES,
	  "where a task woken on a worker goes" },
	{ "submit", K_ENUM, OFF(submit), 0, 0, place_words, "external, scan",
	  "where a task submitted or woken from outside the pool goes" },
	{ "local_requires_available", K_BOOL, OFF(local_requires_available), 0, 0, NULL,
	  "true, false", "a worker inside a blocking section places by scan, not locally" },
	{ "scan_stride", K_UINT, OFF(scan_stride), 0, RT_MAX_WORKERS, NULL, "0..256",
	  "workers a placement scan examines; 0: all" },
	{ "scan_stop_idle", K_BOOL, OFF(scan_stop_idle), 0, 0, NULL, "true, false",
	  "a scan stops at the first idle worker" },
	{ "scan_start", K_ENUM, OFF(scan_start), 0, 0, scan_start_words,
	  "random, round-robin, first", "where a placement scan starts" },
	{ "scan_fallback", K_ENUM, OFF(scan_fallback), 0, 0, fallback_words, "random, external",
	  "where a scan that found no available worker places" },
	{ "lifo_polls", K_UINT, OFF(lifo_polls), 1, UINT_MAX, NULL, "1..4294967295",
	  "LIFO-slot runs in a row before the slot yields to the queue" },
	{ "lifo_stealable", K_BOOL, OFF(lifo_stealable), 0, 0, NULL, "true, false",
	  "thieves may take the LIFO/runnext slot on their last pass" },
	{ "global_interval", K_UINT, OFF(global_interval), 1, 1000000, NULL, "1..1000000",
	  "check the global queue first every this many ticks" },
	{ "global_adaptive", K_BOOL, OFF(global_adaptive), 0, 0, NULL, "true, false",
	  "scale the global interval to 200 us of task polls" },
	{ "global_batch", K_BOOL, OFF(global_batch), 0, 0, NULL, "true, false",
	  "a worker out of work takes a share of the global queue into its own, or one task" },
	{ "notify", K_ENUM, OFF(notify), 0, 0, notify_words, "never, if-no-searchers, always",
	  "whom a push to a worker's own queue wakes" },
	{ "searcher_frac", K_UINT, OFF(searcher_frac), 0, RT_MAX_WORKERS, NULL, "0..256",
	  "at most workers/N search at once; 0: no cap" },
	{ "search_passes", K_UINT, OFF(search_passes), 1, 64, NULL, "1..64",
	  "passes over every queue a searcher makes before it may park (Go: 4)" },
	{ "search_spin_us", K_UINT, OFF(search_spin_us), 0, 1000000, NULL, "0..1000000",
	  "how long a searcher keeps looking after its passes; 0: it parks then" },
	{ "park_spin_us", K_UINT, OFF(park_spin_us), 0, 1000000, NULL, "0..1000000",
	  "how long a parking worker spins on its wake-up word before it sleeps" },
	{ "idle_steal", K_BOOL, OFF(idle_steal), 0, 0, NULL, "true, false",
	  "parked workers are woken to search; false: only by work placed on them" },
	{ "steal", K_ENUM, OFF(steal), 0, 0, steal_words, "half, one", "how much a thief takes" },
	{ "steal_victim", K_ENUM, OFF(steal_victim), 0, 0, victim_words, "random, max-load",
	  "whom a thief robs" },
	{ "steal_stride", K_UINT, OFF(steal_stride), 0, RT_MAX_WORKERS, NULL, "0..256",
	  "workers sampled by a max-load thief; 0: all" },
	{ "steal_min_load", K_UINT, OFF(steal_min_load), 1, 1u << 20, NULL, "1..1048576",
	  "a victim must hold at least this many tasks" },
	{ "blocking", K_ENUM, OFF(blocking), 0, 0, blocking_words,
	  "none, handoff, retake, detect, compensate, offload", "what a blocking section does" },
	{ "blocking_flush", K_BOOL, OFF(blocking_flush), 0, 0, NULL, "true, false",
	  "rt_blocking_begin() first re-places the worker's queue (rt_flush)" },
	{ "sockets", K_ENUM, OFF(sockets), 0, 0, sockets_words, "block, park",
	  "what a task's blocking socket call does: block its thread in a blocking section, "
	  "or park the task on the poller until the socket is ready" },
	{ "binds", K_ENUM, OFF(binds), 0, 0, binds_words, "stack, copy",
	  "how the effect layer keeps a chain of binds: a continuation stack (linear), or the "
	  "continuation copied at every bind (quadratic: the study's Kyo)" },
	{ "poller", K_ENUM, OFF(poller), 0, 0, poller_words, "reactor, worker",
	  "who waits on a task's file descriptors: the reactor thread, or each worker's own "
	  "epoll, waited on when it parks" },
	{ "scope", K_ENUM, OFF(scope), 0, 0, scope_words, "none, supervised, async",
	  "what a task a task spawns is: a task of its own, or a fork of the spawner's scope, "
	  "registered, supervised and waited for (Ox), and also a promise and a group member "
	  "(Gears)" },
	{ "retake_us", K_UINT, OFF(retake_us), 1, 10000000, NULL, "1..10000000",
	  "retake: how long a blocked worker keeps its queue" },
	{ "detect_us", K_UINT, OFF(detect_us), 10, 10000000, NULL, "10..10000000",
	  "detect: the CPU-time sampling interval" },
	{ "detect_samples", K_UINT, OFF(detect_samples), 1, 1000, NULL, "1..1000",
	  "detect: flat samples in a row that flag a worker blocked" },
	{ "time_slice_ms", K_UINT, OFF(time_slice_ms), 0, 1000000, NULL, "0..1000000",
	  "a task run this long unswitched stalls its worker: drained, passed over, preempted; 0: off" },
	{ "monitor_us", K_UINT, OFF(monitor_us), 10, 10000000, NULL, "10..10000000",
	  "the monitor's tick for idle/stranded time" },
	{ "latency_sample", K_UINT, OFF(latency_sample), 1, 1u << 20, NULL,
	  "1..1048576", "measure schedule latency for one placement in this many" },
	{ "metrics", K_BOOL, OFF(metrics), 0, 0, NULL, "true, false",
	  "always-on counters (off only to measure their cost)" },
};

#define NKNOBS (sizeof(knobs) / sizeof(knobs[0]))

static const char *knob_name_list[NKNOBS + 1];

const char *const *rt_knob_names(void)
{
	/* filled on first use; the table never changes */
	if (!knob_name_list[0])
		for (size_t i = 0; i < NKNOBS; i++)
			knob_name_list[i] = knobs[i].name;
	return knob_name_list;
}

static const struct knob *knob_find(const char *name)
{
	for (size_t i = 0; i < NKNOBS; i++)
		if (!strcmp(knobs[i].name, name))
			return &knobs[i];
	return NULL;
}

const char *rt_knob_describe(const char *name)
{
	const struct knob *k = knob_find(name);

	return k ? k->help : NULL;
}

const char *rt_knob_accepts(const char *name)
{
	const struct knob *k = knob_find(name);

	return k ? k->accepts : NULL;
}

int rt_config_check(const struct rt_config *c, char *err, size_t errlen)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned ncore = c->workers ? c->workers : cpus > 0 ? (unsigned)cpus : 1;
	unsigned nmax = c->workers_max > ncore ? c->workers_max : ncore;

	if (c->executor == RT_EXEC_POOL && nmax > RT_MAX_WORKERS) {
		snprintf(err, errlen, "workers=%u: this machine's CPUs make %u workers, over the "
			 "%u the runtime has room for; set -c workers=%u or fewer", c->workers,
			 ncore, RT_MAX_WORKERS, RT_MAX_WORKERS);
		return -EINVAL;
	}
	if (c->executor == RT_EXEC_POOL && c->workers_min > nmax) {
		snprintf(err, errlen, "workers_min=%u is over the %u workers there may be; lower "
			 "it, or raise workers_max to at least %u", c->workers_min, nmax,
			 c->workers_min);
		return -EINVAL;
	}
	if (c->executor == RT_EXEC_POOL && c->workers && c->workers_max &&
	    c->workers_max < c->workers) {
		snprintf(err, errlen, "workers_max=%u is under workers=%u: the pool never shrinks "
			 "below its core workers; raise workers_max to at least %u, or 0 for no "
			 "spares", c->workers_max, c->workers, c->workers);
		return -EINVAL;
	}
	if (c->executor == RT_EXEC_THREADS && c->queue == RT_QUEUE_HEAP) {
		snprintf(err, errlen, "queue=heap with executor=threads: each task has its own OS "
			 "thread and no worker queues it; use queue=ring or executor=pool");
		return -EINVAL;
	}
	if (c->stack_size < 16384 || c->capacity < 2 || (c->capacity & (c->capacity - 1))) {
		snprintf(err, errlen, "stack_size=%zu, capacity=%u: stack_size must be at least "
			 "16384 and capacity a power of two of at least 2", (size_t)c->stack_size,
			 c->capacity);
		return -EINVAL;
	}
	if (!c->global_interval || !c->lifo_polls || !c->detect_samples || !c->monitor_us ||
	    !c->latency_sample || !c->steal_min_load) {
		snprintf(err, errlen, "global_interval, lifo_polls, detect_samples, monitor_us, "
			 "latency_sample and steal_min_load must each be at least 1");
		return -EINVAL;
	}
	if (c->poller == RT_POLLER_WORKER &&
	    (c->executor != RT_EXEC_POOL || c->adapt != RT_ADAPT_FIXED)) {
		snprintf(err, errlen, "poller=worker with %s: a task's wait is its worker's to "
			 "end, and %s; use poller=reactor",
			 c->executor != RT_EXEC_POOL ? "executor=threads" : "adapt=kyo",
			 c->executor != RT_EXEC_POOL ? "threads have no worker"
						     : "the regulator stops workers");
		return -EINVAL;
	}
	if (c->queue == RT_QUEUE_HEAP && c->stack_mode == RT_STACK_COMPACT) {
		snprintf(err, errlen, "queue=heap with stack_mode=compact: the heap holds started "
			 "tasks, which compact stacks bind to their worker, among new ones that "
			 "others may steal; use stack_mode=dedicated or queue=ring");
		return -EINVAL;
	}
	return 0;
}

int rt_config_set(struct rt_config *c, const char *name, const char *value, char *err,
		  size_t errlen)
{
	const struct knob *k = knob_find(name);
	char *field = (char *)c, *end;
	unsigned long v;

	if (!k) {
		size_t off = (size_t)snprintf(err, errlen, "unknown knob '%s'; the knobs are", name);

		for (size_t i = 0; i < NKNOBS && off < errlen; i++)
			off += (size_t)snprintf(err + off, errlen - off, "%s %s", i ? "," : "",
						knobs[i].name);
		return -ENOENT;
	}
	field += k->offset;
	switch (k->kind) {
	case K_BOOL:
		if (!strcmp(value, "true") || !strcmp(value, "1") || !strcmp(value, "on")) {
			*(bool *)field = true;
			return 0;
		}
		if (!strcmp(value, "false") || !strcmp(value, "0") || !strcmp(value, "off")) {
			*(bool *)field = false;
			return 0;
		}
		break;
	case K_ENUM:
		for (int i = 0; k->words[i]; i++) {
			if (!strcmp(k->words[i], value)) {
				/* submit takes only the two places that make sense off a worker */
				if (k->offset == OFF(submit) && i != RT_PLACE_EXTERNAL &&
				    i != RT_PLACE_SCAN)
					break;
				*(int *)field = i;
				return 0;
			}
		}
		break;
	case K_UINT:
	case K_SIZE:
		errno = 0;
		v = strtoul(value, &end, 10);
		/* digits only: strtoul also takes spaces, '+' and '-' */
		if (!(*value >= '0' && *value <= '9') || *end || errno || v < k->min || v > k->max)
			break;
		if (!strcmp(name, "capacity") && (v & (v - 1)))
			break;
		if (k->kind == K_SIZE)
			*(size_t *)field = v;
		else
			*(unsigned *)field = (unsigned)v;
		return 0;
	}
	snprintf(err, errlen, "-c %s=%s: %s takes %s", name, value, name, k->accepts);
	return -EINVAL;
}

int rt_config_get(const struct rt_config *c, const char *name, char *buf, size_t len)
{
	const struct knob *k = knob_find(name);
	const char *field = (const char *)c;

	if (!k)
		return -ENOENT;
	field += k->offset;
	switch (k->kind) {
	case K_BOOL:
		snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false");
		break;
	case K_ENUM:
		snprintf(buf, len, "%s", k->words[*(const int *)field]);
		break;
	case K_UINT:
		snprintf(buf, len, "%u", *(const unsigned *)field);
		break;
	case K_SIZE:
		snprintf(buf, len, "%zu", *(const size_t *)field);
		break;
	}
	return 0;
}
