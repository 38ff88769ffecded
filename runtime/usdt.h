/*
 * USDT probe points of the runtime (provider "rt"), for tracers that want every event
 * rather than the counters: spawn, enqueue, run_begin, run_end, steal, place, park,
 * unpark, block_begin, block_end, flush; and window, which the benchmark harness fires
 * around the measured iterations so that a tracer can count exactly what the runtime's
 * counters count.
 *
 * Each has a semaphore (sys/sdt.h's _SDT_HAS_SEMAPHORES): a tracer that attaches
 * increments it, and until one does the probe costs a load and a never-taken branch,
 * with its arguments not even computed. Arguments are integers: task ids, worker
 * indices (RT_NO_WORKER outside a worker), counts and enum rt_place paths.
 */
#ifndef SCHEDLAB_RT_USDT_H
#define SCHEDLAB_RT_USDT_H

#define _SDT_HAS_SEMAPHORES 1
#define SDT_USE_VARIADIC    1
#include <sys/sdt.h>

#define RT_USDT_SEMAPHORE(name) extern unsigned short rt_##name##_semaphore

RT_USDT_SEMAPHORE(spawn);       /* (task, worker, path) */
RT_USDT_SEMAPHORE(enqueue);     /* (task, worker it went to or RT_NO_WORKER, path) */
RT_USDT_SEMAPHORE(run_begin);   /* (task, worker) */
RT_USDT_SEMAPHORE(run_end);     /* (task, worker, what next: 0 done, 1 yield, 2 wait) */
RT_USDT_SEMAPHORE(steal);       /* (thief, victim, tasks) */
RT_USDT_SEMAPHORE(place);       /* (task, from, to, to's load, fallback taken) */
RT_USDT_SEMAPHORE(park);        /* (worker) */
RT_USDT_SEMAPHORE(unpark);      /* (worker, woken to search) */
RT_USDT_SEMAPHORE(block_begin); /* (worker, task) */
RT_USDT_SEMAPHORE(block_end);   /* (worker, task, ns) */
RT_USDT_SEMAPHORE(flush);       /* (worker, tasks moved) */
RT_USDT_SEMAPHORE(window);      /* (1: the counters' window opens, 0: it closes) */

#define RT_USDT(name, ...)                                                         \
	do {                                                                       \
		if (__builtin_expect(rt_##name##_semaphore, 0))                    \
			STAP_PROBEV(rt, name, __VA_ARGS__);                        \
	} while (0)

#endif /* SCHEDLAB_RT_USDT_H */
