/*
 * The per-thread phase word: what a runtime thread is doing right now.
 *
 * Shared by the runtime (which stores it with plain relaxed writes on every
 * transition) and the BPF on-CPU probe (which reads it at each sample), so it holds
 * only fixed-width integers and macros, and no #include.
 *
 * How the probe finds it: the word is a thread-local variable, rt_phase_word (rt.h),
 * of every thread of the process: NONE with no worker until the thread enters the
 * runtime's code. The process tells the probe that variable's offset from the thread
 * pointer (fs base on x86-64); the probe reads task->thread.fsbase + offset.
 *
 * Layout of the 64-bit word:
 *   bits  0..7   phase (RT_PHASE_*)
 *   bits  8..23  worker index (0xffff: not a worker: a blocking-section thread, the
 *                reactor rt-io, the monitor rt-monitor)
 *   bits 32..63  low 32 bits of the running task's id (0: none)
 *
 * The contract: the word says, at every instruction outside a function's prologue and
 * epilogue, what a leaf-first walk of the thread's stack says. Walking from the leaf
 * toward the root, the first frame that is a *phase function* gives the phase; a stack
 * with none is the task's own work (RUN). The runtime keeps that true by one discipline:
 *   1. A phase function sets its phase at its very first statement and restores the
 *      word it found just before it returns; and every call to one sets the phase at
 *      the call site too, just before the call, and restores it just after (the call
 *      macros in rt.h and internal.h), so that the word is right through the callee's
 *      prologue as well, where samples pile up after a switch. Phase functions are out
 *      of line (RT_PHASE_FN), so each is a frame of its own in every stack, and nothing
 *      else stores the word (but a fiber's entry, rt__fiber_start, which stores RUN):
 *      a static helper a phase function calls inherits its phase, and
 *      a phase function called from another nests (push, then pop). A thread's main
 *      sets the thread's base (SCHED, no task) and rt__drive that of a worker's loop.
 *   2. Stores are relaxed, with no fences: the sampler interrupts the thread on its own
 *      CPU, so program order is all it can observe.
 *   3. Every store goes through %fs, to whichever thread runs the code now, since a
 *      task may resume on another thread. A switch is made only from SCHED code on
 *      both sides: the thread stays SCHED through it and clears the task id when it is
 *      back; the task takes back the word of the operation that switched it out, with
 *      the worker bits of the thread it resumed on, and so do the operations
 *      themselves when they return.
 * The worker bits say which worker the thread drives (0xffff: none, as in a blocking
 * section that handed its worker off). One exception is by design: a blocking section
 * begun with rt_blocking_begin() says BLOCK until rt_blocking_end(), though no phase
 * function is on the stack in between (rt_blocking() is the way without it). The list
 * of phase functions, by phase, is in runtime/internal.h (RT_PHASE_FN).
 *
 * The entry word: RT_PHASE_ENTRY_OFFSET bytes past the phase word, a second thread-local
 * (rt_entry_word), holds the entry function of the task the thread runs (the fn passed to
 * rt_spawn, rt_submit or rt_spawn_elsewhere), 0 when the thread runs none. The two are
 * defined together (sched.c), so the probe finds both from the phase word's one offset,
 * and read the entry word only when it groups samples by task. It follows the task id:
 * the task stores its fn where it stores its id (rt__task_main, and on the task's side
 * of every switch, before the id: the stack is the task's from there), and the thread
 * stores 0 on its side of every switch, before it clears the id. Each side of a switch
 * costs one plain store more; nothing else stores it. Like the task id, it is right at
 * every instruction of the task's code and of the thread's own, but for the few of the
 * switch itself, between the stack pointer's load and that store.
 */
#ifndef SCHEDLAB_RT_PHASE_H
#define SCHEDLAB_RT_PHASE_H

#define RT_PHASE_NONE     0 /* not set: not a runtime thread */
#define RT_PHASE_RUN      1 /* running a task's own code */
#define RT_PHASE_SCHED    2 /* scheduling: picking the next task, switching, searching, stealing */
#define RT_PHASE_SUBMIT   3 /* submitting: spawning, enqueuing, waking a task or a worker */
#define RT_PHASE_PARK     4 /* parking or unparking the worker thread */
#define RT_PHASE_BLOCK    5 /* inside a blocking section */
#define RT_PHASE_ALLOC    6 /* in the runtime's allocator entry points */
#define RT_PHASE_STACKCAP 7 /* capturing a stack trace for an error object */
#define RT_PHASE_COUNT    8

#define RT_PHASE_KIND_MASK   0xffull
#define RT_PHASE_WORKER_MASK 0xffff00ull
#define RT_PHASE_TASK_MASK   0xffffffff00000000ull

#define RT_PHASE_KIND(w)   ((unsigned)((w) & RT_PHASE_KIND_MASK))
#define RT_PHASE_WORKER(w) ((unsigned)(((w) & RT_PHASE_WORKER_MASK) >> 8))
#define RT_PHASE_TASK(w)   ((unsigned)((w) >> 32))
#define RT_PHASE_NO_WORKER 0xffff

/* The word with its task id masked off: phase and worker only (what the probe keys on,
 * since a key per task would make every task's samples a stack of their own). */
#define RT_PHASE_WITHOUT_TASK(w) ((w) & ~RT_PHASE_TASK_MASK)

/* Where the entry word is: this many bytes past the phase word. */
#define RT_PHASE_ENTRY_OFFSET 8

#define RT_PHASE_WORD(kind, worker, task) \
	((((unsigned long long)(task)) << 32) | (((unsigned long long)(worker) & 0xffff) << 8) | \
	 ((unsigned long long)(kind) & 0xff))

#endif /* SCHEDLAB_RT_PHASE_H */
