/*
 * The per-worker phase word: what a runtime thread is doing right now.
 *
 * Shared by the runtime (which stores it with plain relaxed writes on every
 * transition) and the BPF on-CPU probe (which reads it at each sample), so it holds
 * only fixed-width integers and macros, and no #include.
 *
 * How the probe finds it: every runtime thread keeps a thread-local pointer,
 * rt_phase_ptr, to its word (NULL on threads that are not the runtime's). The
 * process tells the probe that variable's offset from the thread pointer (fs base on
 * x86-64); the probe reads task->thread.fsbase + offset, then the word.
 *
 * Layout of the 64-bit word:
 *   bits  0..7   phase (RT_PHASE_*)
 *   bits  8..23  worker index (0xffff: not a worker: a blocking-section thread, the
 *                reactor rt-io, the monitor rt-monitor)
 *   bits 32..63  low 32 bits of the running task's id (0: none)
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

#define RT_PHASE_KIND(w)   ((unsigned)((w) & 0xff))
#define RT_PHASE_WORKER(w) ((unsigned)(((w) >> 8) & 0xffff))
#define RT_PHASE_TASK(w)   ((unsigned)((w) >> 32))
#define RT_PHASE_NO_WORKER 0xffff

#define RT_PHASE_WORD(kind, worker, task) \
	((((unsigned long long)(task)) << 32) | (((unsigned long long)(worker) & 0xffff) << 8) | \
	 ((unsigned long long)(kind) & 0xff))

#endif /* SCHEDLAB_RT_PHASE_H */
