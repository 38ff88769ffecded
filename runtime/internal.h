/*
 * Internals shared by the runtime's files only: the task, thread, worker and
 * scheduler structures, and the functions one file calls in another (rt__ prefix).
 *
 * Threads and workers are apart on purpose. A worker is a queue with its counters
 * and its place in the parking protocol; a thread (struct rt__thread) is an OS thread
 * that runs tasks, and drives at most one worker at a time. They part when a
 * blocking section hands the worker's queue to another thread: the blocked thread
 * keeps running its task, in place, with no worker, while the other drives the queue.
 */
#ifndef SCHEDLAB_RT_INTERNAL_H
#define SCHEDLAB_RT_INTERNAL_H

#include <linux/futex.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#include "runtime/clock.h"
#include "runtime/deque.h"
#include "runtime/phase.h"
#include "runtime/rt.h"

#define RT_CACHELINE 64

/* Task state bits; the join protocol is in sched.c. */
#define RT_TASK_DONE     1u /* the task's function returned */
#define RT_TASK_WAITING  2u /* a joiner is suspended or blocked on it */
#define RT_TASK_DETACHED 4u /* nobody will join: free it when done */

/* Someone waiting: a suspended task, or a thread blocked on a futex. Lives on the
 * waiter's own stack for the duration of the wait; primitives link it into their
 * wait lists through next/prev and may carry a value in data. */
struct rt__waiter {
	struct rt_task *task; /* NULL: a thread; wake it through futex */
	uint32_t futex;
	struct rt__waiter *next, *prev;
	void *data;
	uint64_t value;
};

struct rt__thread;

/* Bytes in a task for the record of its current wait (see rt__park_area()). */
#define RT_PARK_BYTES 192

struct rt_task {
	void *sp;                  /* saved stack pointer while switched out */
	rt_fn fn;
	void *arg;
	uint64_t result;
	struct rt_task *next;      /* intrusive link: global queue, inboxes, free lists */
	uint32_t state;            /* RT_TASK_* */
	struct rt__waiter *waiter; /* valid once RT_TASK_WAITING is set */
	uint64_t id;
	uint64_t ready_ns;         /* when it became runnable, for sampled latency; 0: not sampled */
	uint64_t runtime;          /* queue=heap: ms run so far on the coarse clock, the heap's key */
	struct rt_sched *sched;
	struct rt__thread *own;    /* the threads executor: the OS thread that runs only this task */
	void *map;                 /* the mapping holding the guard page, stack and this struct;
				    * NULL in compact mode, where the struct is malloc'd */
	size_t map_len;
	/* compact mode: the worker whose shared stack it runs on once started, and its used
	 * stack while it is switched out */
	struct rt__worker *home;
	void *saved;
	uint32_t saved_len, saved_cap;
	void *err_top;             /* the innermost error handler (error.c); NULL: none */
	/* scopes (scope.c), all NULL under scope=none: the scope its own forks belong to,
	 * made at its first fork; its record in its spawner's scope while it runs as a fork
	 * (the fork's own to touch); and under scope=async its Future, which a join awaits */
	struct rt__scope *scope;
	struct rt__fork *fork;
	struct rt__promise *promise;
	void *tsan_fiber;          /* ThreadSanitizer's handle for this fiber (SANITIZE=thread) */
	void *asan_fake;           /* AddressSanitizer's fake stack while switched out */
	/* the record of the one wait the task is in: waiters, timer nodes — whatever
	 * other threads touch while it waits, which must not be on its stack */
	alignas(16) unsigned char park[RT_PARK_BYTES];
};

/* What a task asked its thread to do when it switched out. */
enum rt__after_kind {
	RT_AFTER_DONE,
	RT_AFTER_YIELD,
	RT_AFTER_SUSPEND,
};

struct rt__after {
	enum rt__after_kind kind;
	/* RT_AFTER_SUSPEND: run on the thread's stack once the task is fully switched out;
	 * false means the wait is already over and the task runs again at once. */
	bool (*commit)(struct rt_task *self, void *arg);
	void *arg;
};

/* An OS thread that runs tasks: a worker thread, a spare that took over a worker, a
 * thread blocked in a section after handing its worker off, or a task's own thread
 * (the threads executor). Thread-local: only its thread touches it, except futex. */
struct rt__thread {
	struct rt_sched *sched;
	struct rt__worker *w;      /* the worker driven now; NULL: none */
	void *sched_sp;            /* the thread's own context while a task runs */
	struct rt_task *current;
	struct rt__after after;
	uint64_t *phase;           /* its thread's phase word (rt_phase_word), for readers on
				    * other threads; set by the thread itself */
	bool blocking;             /* inside rt_blocking_begin .. end */
	uint64_t block_start_ns;
	struct rt__worker *block_w; /* the worker it had when the section began */
	uint64_t block_phase;      /* the phase word the section began in, for its end */
	struct rt_task *own;       /* the threads executor: the one task it runs */
	bool offload;              /* a blocking-pool thread (RT_BLOCK_OFFLOAD) */
	uint32_t futex;            /* a spare: 1 once handed a worker; a task's own: ready */
	struct rt__thread *next;   /* the spare list */
	pthread_t pthread;
	clockid_t cpu_clock;       /* this thread's CPU-time clock, for the detector */
	void *tsan_fiber;          /* ThreadSanitizer's handle for the thread's own context */
	void *asan_fake;           /* AddressSanitizer's fake stack while a task runs */
	const void *stack_lo;      /* the thread's own stack, for AddressSanitizer */
	size_t stack_len;
};

/* The blocking state of a worker, CASed by its thread and the monitor. */
#define RT_W_RUNNING  0u /* driven by a thread that runs tasks or looks for them */
#define RT_W_BLOCKING 1u /* its thread is in a blocking section and still owns it */
#define RT_W_TAKEN    2u /* handed to another thread while its old thread blocks */

struct rt__worker {
	struct rt_deque dq; /* head and tail on their own cache lines */

	/* owner-only state (the thread driving the worker) */
	alignas(RT_CACHELINE) struct rt_sched *sched;
	unsigned index;
	struct rt_task *lifo;      /* the LIFO / runnext slot; CASed by thieves if stealable */
	unsigned lifo_streak;      /* LIFO runs in a row */
	uint32_t tick;             /* counts down to the next global-queue check */
	uint32_t rng;
	uint64_t id_seq;           /* task ids handed out here */
	bool searching;
	struct rt_task *free_tasks; /* a small cache of finished tasks with their stacks */
	unsigned nfree;
	void **spill;              /* scratch for an overflowing queue: capacity / 2 */
	void *shared_map;          /* compact mode: the stack every task of this worker runs on */
	size_t shared_len;
	char *shared_top;
	unsigned global_interval;  /* current; adapts when global_adaptive */
	uint64_t poll_ewma_ns;     /* global_adaptive: mean task poll time */
	uint64_t interval_mark_ns; /* global_adaptive: when the global queue was last checked */
	struct rt__poller *poller; /* poller=worker: its epoll and timers, made at first use */
	uint32_t poll_waits;       /* poller=worker: tasks waiting on it; rt__poll_waits_add() */

	/* seen by other threads */
	alignas(RT_CACHELINE) struct rt__thread *thread; /* who drives it now */
	clockid_t driver_clock;    /* that thread's CPU-time clock (0 until it starts) */
	uint32_t bstate;           /* RT_W_*: what the scheduler knows of a blocking section */
	uint32_t in_section;       /* its thread is in a blocking section (for the metrics only) */
	uint64_t bstart_ns;        /* when its thread entered the blocking section */
	uint32_t running;          /* 1 while a task runs on it (for the detector and loads) */
	uint64_t run_tick;         /* tasks switched in so far: the monitor's view of progress */
	uint64_t preempt_tick;     /* time slice: the run_tick of the run asked to yield */
	bool stalled;              /* time slice: its task overran; scans pass it over */
	uint64_t slice_tick;       /* monitor: run_tick when it last saw it change */
	uint64_t slice_from_ns;    /* monitor: and when */
	uint64_t cpu_seen_ns;      /* detector: the driving thread's CPU time at the last sample */
	unsigned flat_samples;     /* detector: samples in a row with no CPU time used */
	bool flagged;              /* detector: thinks it blocked; scans pass it over */
	bool section_flagged;      /* the detector flagged it during the current section */

	/* tasks other threads placed here (scans, flushes, drains): owner drains, thieves
	 * may take from it too */
	alignas(RT_CACHELINE) pthread_mutex_t inbox_lock;
	struct rt_task *inbox_head, *inbox_tail;
	uint32_t inbox_len;        /* read without the lock as a hint; queue=heap: its size */
	/* queue=heap: the worker's one queue, a 4-ary min-heap by runtime under a spin lock
	 * (as Kyo's), which takes the inbox's place (and its length) */
	uint32_t heap_lock;
	struct rt__heap_slot {
		/* the task's runtime when it went in, then the order it went in: compared
		 * without touching the task */
		uint64_t runtime, seq;
		struct rt_task *task;
	} *heap;
	uint32_t heap_cap;
	uint64_t heap_seq;

	alignas(RT_CACHELINE) uint32_t futex; /* 0: parked or about to; 1: woken */
	bool parked;               /* on the sleepers list (under idle_lock) */
	uint32_t counting_park;    /* between its park's count and rt:park event (stats.c) */
	uint32_t in_poll;          /* poller=worker: parking in epoll, so woken by poll_evfd */
	int poll_evfd;             /* poller=worker: the eventfd that wakes it there */

	alignas(RT_CACHELINE) struct rt_worker_stats stats;
	uint64_t *steals_from;     /* per victim; RT_MAX_WORKERS entries */
};

/* Kyo's concurrency regulator (adapt.c): the monitor's wake-up lateness, recent first. */
struct rt__regulator {
	uint64_t window[200];
	unsigned n, pos;
	uint64_t last_ns; /* when it last regulated */
	int streak;       /* steps in a row: > 0 up, < 0 down */
};

struct rt_sched {
	struct rt_config cfg;
	bool lifo_shared;          /* rt__lifo_shared(&cfg), read on every LIFO placement */
	unsigned ncore;            /* core workers */
	unsigned nmax;             /* workers that may exist, spares included */
	unsigned nworkers;         /* workers started; grows by compensation (acquire/release) */
	unsigned nactive;          /* workers scans place on: the first nactive (adaptation) */
	struct rt__regulator regulator;
	uint64_t adaptations;      /* changes to nactive */
	unsigned max_searchers;
	struct rt__worker **workers; /* nmax slots */
	size_t page;

	/* the global injection queue */
	alignas(RT_CACHELINE) pthread_mutex_t inject_lock;
	struct rt_task *inject_head, *inject_tail;
	size_t inject_len; /* read without the lock as a hint */

	/* idle workers: (unparked << 16) | searching, and the parked ones */
	alignas(RT_CACHELINE) uint32_t idle_state;
	pthread_mutex_t idle_lock;
	unsigned *sleepers;
	unsigned nsleepers;
	bool shutdown;
	uint32_t stats_edge;       /* rt_sched_stats_edge() holds parks' counts back */

	/* threads that lost their worker to a hand-off, and spares waiting for one */
	alignas(RT_CACHELINE) pthread_mutex_t spare_lock;
	struct rt__thread *spares;
	unsigned nthreads_live;    /* spare, worker and blocked threads alive */
	pthread_cond_t threads_gone;
	uint64_t threads_created;
	uint32_t blocking_now;     /* threads inside a blocking section */
	/* the blocking pool (RT_BLOCK_OFFLOAD): tasks waiting for a thread, and its threads */
	struct rt_task *offload_head, *offload_tail;
	unsigned offload_len, offload_idle, offload_threads;
	pthread_cond_t offload_cv;

	/* the monitor: idle and stranded time, the CPU-time detector, retakes */
	pthread_t monitor;
	bool monitor_started;
	uint32_t monitor_futex;
	uint64_t *monitor_phase;   /* the monitor thread's phase word, for tests */
	uint64_t coarse_ms;        /* queue=heap: the monitor's clock, ms, updated every tick */

	/* timers and the I/O reactor (io.c), started on first use */
	struct rt__io *io;
	pthread_mutex_t io_lock;

	/* finished tasks no worker's cache had room for */
	alignas(RT_CACHELINE) pthread_mutex_t pool_lock;
	struct rt_task *pool;
	unsigned npool;
	uint64_t next_id;
};

/* The idle word: (unparked << 16) | searching. */
#define IDLE_SEARCH_ONE    1u
#define IDLE_UNPARK_ONE    (1u << 16)
#define IDLE_SEARCHING(st) ((st) & 0xffffu)
#define IDLE_UNPARKED(st)  ((st) >> 16)
#define IDLE_UNPARKED_OF(s) IDLE_UNPARKED(__atomic_load_n(&(s)->idle_state, __ATOMIC_RELAXED))

/* The notify knob's rule on idle state st: a parked worker should be woken to search
 * (unless one searches already, where the rule allows that). Inline, so that a push
 * that needs no wake-up calls nothing: rt__notify_parked() and rt__notify_local() do
 * the waking. */
static inline bool rt__notify_wanted(struct rt_sched *s, uint32_t st)
{
	bool any_searcher_ok = s->cfg.notify == RT_NOTIFY_ALWAYS;

	return (any_searcher_ok || !IDLE_SEARCHING(st)) &&
	       IDLE_UNPARKED(st) < __atomic_load_n(&s->nworkers, __ATOMIC_RELAXED);
}

/* ---- switch_x86_64.S ---- */
void rt__switch(void **save_sp, void *load_sp);
void rt__fiber_start(void);

/* ThreadSanitizer follows memory accesses per thread; fibers move between threads and
 * threads between fibers, so every switch tells it which context runs next (and the
 * switch itself orders what happened before it with what comes after). */
#if defined(RT_SANITIZE_THREAD)
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#define RT_TSAN_SWITCH(fiber) __tsan_switch_to_fiber((fiber), 0)
#define RT_TSAN_CREATE()      __tsan_create_fiber(0)
#define RT_TSAN_DESTROY(f)    __tsan_destroy_fiber(f)
#define RT_TSAN_CURRENT()     __tsan_get_current_fiber()
#else
#define RT_TSAN_SWITCH(fiber) ((void)0)
#define RT_TSAN_CREATE()      NULL
#define RT_TSAN_DESTROY(f)    ((void)(f))
#define RT_TSAN_CURRENT()     NULL
#endif

/* AddressSanitizer keeps one stack per thread: a switch names the stack it goes to
 * (start) and, once there, says it has arrived (finish), so that its reports and its
 * stack-overflow check follow the fiber. RT_ASAN_ARRIVE with a thread records the stack
 * that was left, the thread's own, for the switches back. */
#if defined(RT_SANITIZE_ADDRESS)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define RT_ASAN_LEAVE(fake, lo, len) __sanitizer_start_switch_fiber((fake), (lo), (len))
#define RT_ASAN_ARRIVE(fake, lo, len) __sanitizer_finish_switch_fiber((fake), (lo), (len))
#define RT_ASAN_UNPOISON(p, n)  ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define RT_ASAN_LEAVE(fake, lo, len)  ((void)0)
#define RT_ASAN_ARRIVE(fake, lo, len) ((void)0)
#define RT_ASAN_UNPOISON(p, n)  ((void)0)
#endif
void rt__task_stack(const struct rt_task *t, const void **lo, size_t *len);

/* ---- the phase word (runtime/phase.h) ---- */

/* A phase function (the contract is in runtime/phase.h): out of line, so that it is a
 * frame of its own in every stack the on-CPU probe samples (and, under GCC, noclone:
 * its constant-propagation clones would carry another name). The phase functions, by
 * phase, as symbolized stacks name them:
 *   RUN       rt__task_main (a fiber's first run; a resumed task gets its word back
 *             from the operation that switched it out)
 *   SCHED     rt__drive; the thread mains worker_thread_main, offload_thread_main,
 *             task_thread_main, monitor_main, io_main (each thread's base); in a task:
 *             rt_join, rt_yield, rt_detach, rt__wait, rt__suspend, rt__task_exit
 *   SUBMIT    rt_spawn, rt_spawn_elsewhere, rt_submit, rt_flush, rt__place, rt__ready,
 *             rt__wake, rt__wake_all, rt__notify_parked, rt__notify_local,
 *             rt__unpark_worker, rt__wake_one_parked, rt__inbox_push, rt__inject_push,
 *             rt__drain, rt__drain_remote, rt__task_thread_ready, rt__handoff
 *   PARK      rt__park, spare_wait, offload_wait, monitor_sleep, io_epoll_wait,
 *             task_thread_wait
 *   BLOCK     rt_blocking, rt_blocking_begin, rt_blocking_end (and, by exception, the
 *             code between these two: a section begun by hand leaves BLOCK set)
 *   ALLOC     rt_alloc, rt_calloc, rt_free
 *   STACKCAP  glibc's backtrace (__backtrace), which error.c calls in that phase
 * Anything else inherits the phase of the nearest phase function below it, and a phase
 * function calling another of its own phase may call its body instead (rt_join waits
 * through rt__wait's, rt__wake readies through rt__ready's, rt_spawn and rt__ready
 * place through rt__place_submitting()): the word is the same either way. */
#if defined(__clang__)
#define RT_PHASE_FN __attribute__((noinline))
#else
#define RT_PHASE_FN __attribute__((noinline, noclone))
#endif
/* The helpers below, inlined even into cold code (clang takes a noreturn function for
 * cold): they are a few instructions on every transition. */
#define RT_PHASE_INLINE __attribute__((always_inline))

/* The calling thread's phase word is rt_phase_word (rt.h): thread-local, so that a
 * transition is one byte stored through %fs, with no pointer to follow and none to check,
 * and a task that resumed on another thread stores into that thread's word by the same
 * instruction. Every access goes through inline asm on %fs, for the reason rt__thread()
 * reads its pointer so: a compiler may keep a TLS address across the switch, which would
 * be the old thread's. */

/* Where the calling thread's word is, for whoever reads it from elsewhere (tests; the
 * probe finds it by rt_phase_tls_offset()). */
static inline RT_PHASE_INLINE uint64_t *rt__phase_word(void)
{
	char *tp;

	/* %fs:0 holds the thread pointer itself (the TCB's self pointer) */
	__asm__ volatile("movq %%fs:0, %0" : "=r"(tp) : : "memory");
	return (uint64_t *)(tp + rt_phase_tls_offset());
}

/* The stores are relaxed with no fence: the probe samples the thread in an interrupt
 * on its own CPU, which sees the thread's stores in program order. Each transition
 * stores only the field it changes, and reads no more than the kind: no
 * read-modify-write of the whole word, and so fewer instructions before the store (the
 * window where the stack already shows a phase function and the word does not yet), and
 * no load wider than a store still in flight, which the store buffer cannot forward.
 * The fields (little-endian): the kind is byte 0, the worker bytes 1..2, the task id
 * bytes 4..7. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "the phase word's fields are stored at byte offsets of a little-endian word");

/* Enter phase `kind`: the kind is set, the worker and task bits stay. Returns the kind
 * found, for rt__phase_pop(). */
static inline RT_PHASE_INLINE uint64_t rt__phase_push(unsigned kind)
{
	return RT__PHASE_ENTER(kind);
}

/* Leave a phase: put back the kind found on entry, on whichever thread the caller is
 * now. An operation that switched its task out may resume on another thread; the store
 * is the same, since the worker bits are that thread's and rt__switch_out() has put the
 * task id back. */
static inline RT_PHASE_INLINE void rt__phase_pop(uint64_t old)
{
	RT__PHASE_LEAVE(old);
}

/* Set the task id, and with it whether a task runs: the task's own on its way in
 * (rt__task_main(), rt__switch_out()), 0 when the thread is back in its own context. */
static inline RT_PHASE_INLINE void rt__phase_set_task(uint64_t id)
{
	__asm__ volatile("movl %k0, %%fs:rt_phase_word@tpoff+4" : : "r"((uint32_t)id) : "memory");
}

/* The entry word (phase.h), beside the phase word; stored here only. */
extern __thread uint64_t rt_entry_word __attribute__((tls_model("local-exec")));

/* Set the entry word: the task's fn on its way in, next to its id, and 0 on the thread's
 * side of a switch. One plain store. */
static inline RT_PHASE_INLINE void rt__phase_set_entry(rt_fn fn)
{
	__asm__ volatile("movq %0, %%fs:rt_entry_word@tpoff"
			 :
			 : "er"((uint64_t)(uintptr_t)fn)
			 : "memory");
}

/* Set the whole word: the base of rt__drive (SCHED on its worker, no task) and of a
 * thread main (SCHED, no worker, no task). Returns the word it replaced, for
 * rt__phase_unset() to put back whole. */
static inline RT_PHASE_INLINE uint64_t rt__phase_set(uint64_t word)
{
	uint64_t old;

	__asm__ volatile("movq %%fs:rt_phase_word@tpoff, %0\n\t"
			 "movq %1, %%fs:rt_phase_word@tpoff"
			 : "=&r"(old)
			 : "r"(word)
			 : "memory");
	return old;
}

static inline RT_PHASE_INLINE void rt__phase_unset(uint64_t old)
{
	__asm__ volatile("movq %0, %%fs:rt_phase_word@tpoff" : : "r"(old) : "memory");
}

/* The worker bits say which worker the thread drives: updated where the calling thread
 * gains or loses one outside rt__drive (a blocking section's hand-off). */
static inline RT_PHASE_INLINE void rt__phase_set_worker(unsigned index)
{
	__asm__ volatile("movw %w0, %%fs:rt_phase_word@tpoff+1"
			 :
			 : "r"((uint16_t)index)
			 : "memory");
}

/* From a thread's own context into task t, and from task t back to its thread. Both
 * sides switch in SCHED code, so the kind is SCHED throughout: the thread stays SCHED
 * through the switch (the task sets its own word when it resumes) and, back, clears
 * the entry word and the task id; the task, resumed on whichever thread, puts its entry
 * and id back, and the SCHED operation that switched it out then restores its caller's
 * kind (rt__phase_pop). */
static inline void rt__switch_in(struct rt__thread *th, struct rt_task *t)
{
#if defined(RT_SANITIZE_ADDRESS)
	const void *lo;
	size_t len;

	rt__task_stack(t, &lo, &len);
	RT_ASAN_LEAVE(&th->asan_fake, lo, len);
#endif
	RT_TSAN_SWITCH(t->tsan_fiber);
	rt__switch(&th->sched_sp, t->sp);
	RT_ASAN_ARRIVE(th->asan_fake, NULL, NULL);
	rt__phase_set_entry(NULL);
	rt__phase_set_task(0);
}

static inline void rt__switch_out(struct rt__thread *th, struct rt_task *t)
{
	RT_TSAN_SWITCH(th->tsan_fiber);
	/* a finished task's fake stack goes with it (NULL) */
	RT_ASAN_LEAVE(th->after.kind == RT_AFTER_DONE ? NULL : &t->asan_fake, th->stack_lo,
		      th->stack_len);
	rt__switch(&t->sp, th->sched_sp);
	RT_ASAN_ARRIVE(t->asan_fake, NULL, NULL);
	rt__phase_set_entry(t->fn);
	rt__phase_set_task(t->id);
}

/* ---- fiber.c: tasks and their stacks ---- */
/* Compact mode: map w's shared stack; lay out t's first frame on it; copy a switched-out
 * task's used stack to the heap and back. 0 or -ENOMEM. */
int rt__shared_stack_map(struct rt_sched *s, struct rt__worker *w);
void rt__shared_stack_unmap(struct rt__worker *w);
void rt__compact_first_run(struct rt__worker *w, struct rt_task *t);
int rt__compact_save(struct rt_task *t);
void rt__compact_restore(struct rt_task *t);
struct rt_task *rt__task_new(struct rt_sched *s, struct rt__worker *w, rt_fn fn, void *arg);
void rt__task_put(struct rt_sched *s, struct rt__worker *w, struct rt_task *t);
void rt__task_cache_drain(struct rt_sched *s, struct rt__worker *w);
void rt__task_pool_free(struct rt_sched *s);

/* ---- scope.c: structured concurrency (the scope knob) ---- */
/* Make child, just made by the running task self's spawn and not yet placed, a fork of
 * self's scope (made now if self has none): its record and, under scope=async, its
 * promise and group membership. 0 or -ENOMEM (child is then no fork). */
int rt__fork_add(struct rt_task *self, struct rt_task *child);
/* Undo rt__fork_add() for a child that will never run (its thread could not start). */
void rt__fork_drop(struct rt_task *child);
/* A fork's life, on its own stack: its body under a handler (none if it was cancelled
 * before it began), the end of its own scope, its failure to its spawner's scope, and
 * its end there; sets t->result (0 when it failed or was cancelled). */
void rt__fork_run(struct rt_task *t);
/* At rt_preempt_point() in a fork (t->fork set): raise ECANCELED if it was cancelled. */
void rt__fork_check(struct rt_task *t);
/* The end of t's own scope once its body has returned: wait until no fork runs, free the
 * scope. The failure it held (the caller's now), or NULL. */
struct rt_error *rt__scope_exit(struct rt_task *t);
/* scope=async: await a fork's promise as a listener (a join), and drop the handle's
 * reference; the fork's result. rt__promise_drop() drops it without waiting (a detach). */
uint64_t rt__promise_await(struct rt__promise *p);
void rt__promise_drop(struct rt__promise *p);
/* For tests: t waits at its scope's exit for forks still running. Only while one of
 * t's forks is known not to have ended (the scope is freed once none runs). */
bool rt__scope_exiting(const struct rt_task *t);

/* ---- io.c: timers and the reactor ---- */
/* Stop the timer/reactor thread, if it was started: rt_sched_free() calls it once the
 * workers have stopped (a worker may still be in a wait commit until then). */
void rt__io_stop(struct rt_sched *s);
/* The reactor thread's phase word (0: no reactor yet), and the thread itself (false: no
 * reactor yet); for tests. */
uint64_t rt__io_phase(const struct rt_sched *s);
bool rt__io_thread(const struct rt_sched *s, pthread_t *thread);

/* ---- sched.c: the run loop and task operations ---- */
extern __thread struct rt__thread *rt__tls_thread __attribute__((tls_model("local-exec")));

/* The calling thread's runtime context, read fresh on every call: a task can move
 * between threads across a switch, and a compiler that kept the thread-local's value
 * or address from before the switch would read another thread's. A volatile asm with
 * a memory clobber is one %fs-relative load that is never merged with another or
 * moved across the switch. (local-exec: the runtime is linked into the executable.) */
static inline struct rt__thread *rt__thread(void)
{
	struct rt__thread *th;

	__asm__ volatile("movq %%fs:rt__tls_thread@tpoff, %0" : "=r"(th) : : "memory");
	return th;
}
/* The worker whose queue the calling thread may push to: NULL outside the pool and
 * inside a blocking section (where the worker may already belong to another thread). */
struct rt__worker *rt__self(void);
/* Suspend the running task; commit runs on the thread once it is switched out. */
void rt__suspend(bool (*commit)(struct rt_task *self, void *arg), void *arg);
/* A task's function returned (t->fn, called from rt__task_main): switch out for good. */
__attribute__((noreturn)) void rt__task_exit(struct rt_task *t);
/* A task's function returned: wake its joiner or free it. Its stack is not in use. */
void rt__task_finished(struct rt__thread *th, struct rt_task *t);
/* Make a suspended task runnable again, from any thread, by the wake policy. */
void rt__ready(struct rt_task *t);
/* The worker loop of a thread that drives a worker; returns when it no longer does
 * (its worker was handed off during a blocking section) or at shutdown. */
void rt__drive(struct rt__thread *th);
/* Enter the run loop for a thread: sets the thread-local context. */
void rt__thread_bind(struct rt__thread *th);
/* Tokio's adaptive global-queue interval, called at each global-queue check. */
void rt__adapt_interval(struct rt__worker *w);
/* A worker, not yet driven by any thread. NULL + errno. */
struct rt__worker *rt__worker_new(struct rt_sched *s, unsigned index);
/* The runtime's one clock (clock.h), inline for the hot paths that read it. */
static inline uint64_t rt__now_ns(void)
{
	return rt_clock_ns();
}
/* futex(2) on a private word: wait while *addr == val (with a relative timeout, or
 * none), wake up to n. By the syscall instruction itself, not libc's syscall(): Debian's
 * libc has no frame pointers, and a sample taken in the kernel would lose our caller's
 * frame. And inlined into the caller: as a function of its own it was a leaf of ten
 * instructions, three of them (the two that build its frame, the return after the one
 * that pops it) where a frame-pointer walk skips its caller, so a quarter of the samples
 * taken in it in user mode lost the phase function that names the wait (rt__park's
 * parking read as rt__drive's scheduling). */
static inline __attribute__((always_inline)) long rt__futex(uint32_t *addr, int op,
							  uint32_t val,
							  const struct timespec *timeout)
{
	register long r10 __asm__("r10") = (long)timeout;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_futex), "D"(addr), "S"((long)op), "d"((long)val), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

static inline __attribute__((always_inline)) long
rt__futex_wait_timeout(uint32_t *addr, uint32_t val, const struct timespec *timeout)
{
	return rt__futex(addr, FUTEX_WAIT_PRIVATE, val, timeout);
}

static inline __attribute__((always_inline)) long rt__futex_wait(uint32_t *addr, uint32_t val)
{
	return rt__futex(addr, FUTEX_WAIT_PRIVATE, val, NULL);
}

static inline __attribute__((always_inline)) long rt__futex_wake(uint32_t *addr, int n)
{
	return rt__futex(addr, FUTEX_WAKE_PRIVATE, (uint32_t)n, NULL);
}

/* Waiting, the same way from a task and from a plain thread. rt__wait() prepares w
 * (task = the running task or NULL) and calls commit(w, arg): from a task, on the
 * thread's stack once the task is switched out; from a thread, at once. commit
 * returns true when it registered w (the caller then sleeps until rt__wake(w)) and
 * false when the condition already holds (the caller goes on at once). Whoever calls
 * rt__wake(w) must be done with w first: the waiter may return and reuse its stack
 * as soon as it is woken. */
void rt__wait(struct rt__waiter *w, bool (*commit)(struct rt__waiter *w, void *arg), void *arg);
void rt__wake(struct rt__waiter *w);

/* Where a wait's record goes: anything another thread reads or links while a task
 * waits (its waiter, a timer node) must not be on the task's stack, which the compact
 * stack mode copies to the heap while the task is parked. In a task this returns its
 * park area (size <= RT_PARK_BYTES; one wait at a time); on a plain thread, NULL, and
 * the record stays on the thread's stack. Usage:
 *   struct rt__waiter local, *w = rt__park_area(sizeof(*w)) ?: &local; */
void *rt__park_area(size_t size);

/* ---- io.c: poller=worker ---- */
/* Look at w's poller (on w's thread), waiting with block until a wait ends or its
 * eventfd is written; add the waits that ended to *wake. The number that ended. */
unsigned rt__poller_wait(struct rt__worker *w, bool block, struct rt__waiter **wake);
/* At the worker's end. */
void rt__poller_free(struct rt__worker *w);

/* ---- park.c: the park/notify protocol ---- */
/* Park w's thread until notified. false: shutdown. */
bool rt__park(struct rt__worker *w);
/* Wake a parked worker to search, by the notify knob's rule (from: for counters):
 * after a push to a shared queue, and (cheaper, no barrier) after one to the caller's
 * own queue. */
void rt__notify_parked(struct rt_sched *s, struct rt__worker *from);
void rt__notify_local(struct rt_sched *s, struct rt__worker *from);
/* Wake w itself if it is parked (work was placed on it). true if it was parked. */
bool rt__unpark_worker(struct rt_sched *s, struct rt__worker *w);
/* Wake some parked worker to search, whatever the notify knob says. */
bool rt__wake_one_parked(struct rt_sched *s);
/* Wake w's thread whatever its state (shutdown). */
void rt__unpark(struct rt__worker *w);
/* Owner: count w as searching, if fewer than the cap are; false if it may not search. */
bool rt__enter_searching(struct rt__worker *w);
/* Owner: w stops searching; the last searcher to find work wakes another. */
void rt__leave_searching(struct rt__worker *w);

/* ---- place.c: placement and stealing ---- */
/* Make t runnable from thread th (may be NULL: from outside) by `how`. */
void rt__place(struct rt_sched *s, struct rt__thread *th, struct rt_task *t, enum rt_place how);
/* The same for a caller that is a SUBMIT phase function itself (spawning, waking): it
 * leaves the phase word alone, one transition and one call fewer on those paths. */
void rt__place_submitting(struct rt_sched *s, struct rt__thread *th, struct rt_task *t,
			  enum rt_place how);
/* Push onto w's inbox from any thread, and wake w if it is parked. */
void rt__inbox_push(struct rt__worker *w, struct rt_task *t);
/* The worker a scan picks, leaving out `exclude` (may be NULL); counts on `from`. `own`:
 * the calling thread drives from, and draws from its generator; else (a thread blocked
 * off from, or none) the thread draws from its own. */
struct rt__worker *rt__scan(struct rt_sched *s, struct rt__worker *from,
			    struct rt__worker *exclude, bool own, bool *fallback);
/* A worker's load: queued tasks, plus one while a task runs on it. */
unsigned rt__load(const struct rt__worker *w);
/* Owner: the next task from the LIFO slot, the queue, the inbox or the global queue. */
struct rt_task *rt__next_task(struct rt__worker *w);
/* Whether the owner must exchange its LIFO slot atomically: when another thread may take
 * from it. Go's thieves do (lifo_stealable); so does the monitor's drain of a worker,
 * run by Kyo's blocking detector and by the time slice, under any preset. Otherwise the
 * owner's relaxed load and store suffice, which other threads read only as a hint of
 * load. */
static inline bool rt__lifo_shared(const struct rt_config *c)
{
	return c->lifo_stealable || c->blocking == RT_BLOCK_DETECT || c->time_slice_ms;
}

/* Owner: nothing is queued for w anywhere it would look next (its LIFO slot, queue,
 * inbox, the global queue). */
static inline bool rt__idle_here(const struct rt__worker *w)
{
	return !__atomic_load_n(&w->lifo, __ATOMIC_RELAXED) && rt_deque_empty(&w->dq) &&
	       !__atomic_load_n(&w->inbox_len, __ATOMIC_RELAXED) &&
	       !__atomic_load_n(&w->sched->inject_len, __ATOMIC_RELAXED);
}

/* Steal for w; NULL when nothing was found. last_pass allows the LIFO slot (Go). */
struct rt_task *rt__steal(struct rt__worker *w, bool last_pass);
/* Take one task from the global queue, and with batch (where global_batch allows) a fair
 * share more into w's queue. */
struct rt_task *rt__inject_take(struct rt__worker *w, bool batch);
void rt__inject_push(struct rt_sched *s, struct rt_task *head, struct rt_task *tail, size_t n);
bool rt__work_pending(struct rt_sched *s);
/* Re-place every task queued on w (owner) by a scan that leaves w out. */
unsigned rt__drain(struct rt__worker *w, struct rt__worker *counter);
/* The same from another thread (the detector), taking as a thief does. */
unsigned rt__drain_remote(struct rt__worker *w);

/* ---- blocking.c: blocking sections, spare threads, the monitor ---- */
int rt__monitor_start(struct rt_sched *s);
void rt__monitor_stop(struct rt_sched *s);
/* Give w to a spare thread (cached or new). 0 or -errno. */
int rt__handoff(struct rt_sched *s, struct rt__worker *w);
/* Wait until every thread the runtime made has exited (at shutdown). */
void rt__threads_join(struct rt_sched *s);
/* Start a detached thread running fn(th), counted for rt__threads_join(); th->sched set.
 * stack_size 0: the default. 0 or -errno. rt__thread_exit() ends one. */
int rt__thread_start(struct rt__thread *th, void *(*fn)(void *), size_t stack_size);
void rt__thread_exit(struct rt__thread *th);
/* Add a worker beyond the core ones (compensation). NULL when at workers_max. */
struct rt__worker *rt__worker_add(struct rt_sched *s);

/* ---- adapt.c: Kyo's regulator ---- */
/* The change in active workers for this period's jitter and load (streak: steps in a
 * row, kept between calls). Pure, for tests. */
int rt__regulate_step(int *streak, double jitter_ns, double load_avg);
/* One monitor tick, `late_ns` after it meant to wake. */
void rt__adapt_tick(struct rt_sched *s, uint64_t now, uint64_t late_ns);

/* ---- threads.c: one OS thread per task ---- */
int rt__task_thread_start(struct rt_sched *s, struct rt_task *t);
void rt__task_thread_ready(struct rt_task *t);

/* poller=worker: the count of tasks waiting on w's poller. Only w's driver writes it
 * and reads it plainly; the store is atomic (a plain mov on x86-64) because the tests
 * read it from another thread to know when every wait has joined a poller. */
static inline void rt__poll_waits_add(struct rt__worker *w, int n)
{
	__atomic_store_n(&w->poll_waits, w->poll_waits + (uint32_t)n, __ATOMIC_RELAXED);
}

/* ---- stats ---- */
void rt__latency_record(struct rt__worker *w, struct rt_task *t);
/* Count a park of w and fire rt:park, both on one side of any rt_sched_stats_edge(). */
void rt__count_park(struct rt__worker *w);

/* Counters: written by one thread at a time (the worker's, or the monitor for its own
 * fields), read by anyone. */
#define RT_STAT_ADD(w, field, n)                                                               \
	do {                                                                                   \
		if ((w)->sched->cfg.metrics)                                                   \
			__atomic_store_n(&(w)->stats.field,                                    \
					 __atomic_load_n(&(w)->stats.field, __ATOMIC_RELAXED) + (n),   \
					 __ATOMIC_RELAXED);                                            \
	} while (0)
#define RT_STAT_INC(w, field) RT_STAT_ADD(w, field, 1)
/* For fields two threads may bump (a blocked thread and the worker's new driver). */
#define RT_STAT_ATOMIC_ADD(w, field, n)                                                        \
	do {                                                                                   \
		if ((w)->sched->cfg.metrics)                                                   \
			__atomic_fetch_add(&(w)->stats.field, (n), __ATOMIC_RELAXED);          \
	} while (0)

/* ==== Added for sync.c, chan.c and io.c (the waiting primitives) ======================
 * Kept apart from the scheduler's declarations above; nothing above depends on them. */

/* ---- sync.c: the wait-list lock and futex calls ---- */

/* A futex lock of one word (0 free, 1 held, 2 held with sleepers) for the primitives'
 * wait lists. Only slow paths take it, for a few instructions, and never across a
 * wait: a commit callback takes and releases it before returning. */
void rt__lock_slow(uint32_t *l);
void rt__unlock_slow(uint32_t *l);

static inline void rt__lock(uint32_t *l)
{
	uint32_t free_ = 0;

	/* acquire: pairs with the release in rt__unlock() */
	if (!__atomic_compare_exchange_n(l, &free_, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		rt__lock_slow(l);
}

static inline void rt__unlock(uint32_t *l)
{
	/* release: pairs with the acquire in rt__lock(); 2 means someone sleeps on l */
	if (__atomic_exchange_n(l, 0, __ATOMIC_RELEASE) == 2)
		rt__unlock_slow(l);
}

/* The one spin-wait hint in the tree (the runtime's spins and the tests'): tells the
 * CPU we are in a spin loop, so it yields to the sibling hyperthread and leaves the loop
 * without a memory-order mis-speculation. */
static inline void rt__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* FIFO wait lists through rt__waiter's next/prev; callers hold the list's lock. */
static inline void rt__wlist_push(struct rt__wait_list *l, struct rt__waiter *w)
{
	w->next = NULL;
	w->prev = l->tail;
	if (l->tail)
		l->tail->next = w;
	else
		l->head = w;
	l->tail = w;
}

static inline struct rt__waiter *rt__wlist_pop(struct rt__wait_list *l)
{
	struct rt__waiter *w = l->head;

	if (w) {
		l->head = w->next;
		if (l->head)
			l->head->prev = NULL;
		else
			l->tail = NULL;
	}
	return w;
}

static inline void rt__wlist_remove(struct rt__wait_list *l, struct rt__waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		l->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		l->tail = w->prev;
}

/* Wake every waiter of a list already unlinked from its primitive: read each next
 * pointer before the wake, since a woken waiter's stack may be reused at once. */
void rt__wake_all(struct rt__waiter *head);

/* ---- chan.c ---- */
/* For tests of wrap-around: start both positions at `start`. */
int rt__chan_init_at(struct rt_chan *c, void **slots, uint32_t cap, uint64_t start);
/* The token of the thread one side of c is leased to (0: none); for tests. */
uint32_t rt__chan_lessee(const struct rt_chan *c, bool recv);
/* How many times over the streak one side needs before its next lease; for tests. */
unsigned rt__chan_backoff(const struct rt_chan *c, bool recv);


/* ---- the runtime's own calls to its phase functions ---- */
/* As rt.h does for the public ones: each call sets the callee's phase at the call site,
 * so that the word is right through the callee's prologue, and puts the caller's back
 * after it. Declared above; (name)(...) calls a function itself. */
#define rt__wake(w) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__wake)(w))
#define rt__wake_all(head) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__wake_all)(head))
#define rt__ready(t) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__ready)(t))
#define rt__place(s, th, t, how) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__place)(s, th, t, how))
#define rt__park(w) RT__PHASE_CALL(RT_PHASE_PARK, (rt__park)(w))
#define rt__notify_parked(s, from) \
	RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__notify_parked)(s, from))
#define rt__notify_local(s, from) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__notify_local)(s, from))
#define rt__unpark_worker(s, w) RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt__unpark_worker)(s, w))
#define rt__wake_one_parked(s) RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt__wake_one_parked)(s))
#define rt__inbox_push(w, t) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__inbox_push)(w, t))
#define rt__inject_push(s, head, tail, n) \
	RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__inject_push)(s, head, tail, n))
#define rt__drain(w, counter) RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt__drain)(w, counter))
#define rt__drain_remote(w) RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt__drain_remote)(w))
#define rt__wait(w, commit, arg) RT__PHASE_CALL_VOID(RT_PHASE_SCHED, (rt__wait)(w, commit, arg))
#define rt__suspend(commit, arg) RT__PHASE_CALL_VOID(RT_PHASE_SCHED, (rt__suspend)(commit, arg))
#define rt__task_exit(t) RT__PHASE_CALL_VOID(RT_PHASE_SCHED, (rt__task_exit)(t))
#define rt__handoff(s, w) RT__PHASE_CALL(RT_PHASE_SUBMIT, (rt__handoff)(s, w))
#define rt__task_thread_ready(t) RT__PHASE_CALL_VOID(RT_PHASE_SUBMIT, (rt__task_thread_ready)(t))

#endif /* SCHEDLAB_RT_INTERNAL_H */
