/*
 * fx — IO values built as data, and two interpreters that run them.
 *
 * A value describes a computation and does nothing until it is run: fx_pure(v) yields
 * v; fx_delay(fn, env) calls fn(env) each time it is run (a suspended side effect);
 * fx_map and fx_flat_map (bind) go on with a value's result; fx_attempt catches a
 * failure into a result value; fx_raise fails; fx_async yields to the scheduler before
 * it goes on (an async boundary). Values are uint64_t.
 *
 * Two interpreters, chosen per run (enum fx_interp):
 *   FX_STACK  a run loop with an explicit continuation stack: time and allocation are
 *             linear in the depth of a left-associated chain of binds;
 *   FX_NAIVE  the same loop, but it copies its whole pending continuation list on every
 *             push, a fresh allocation per cell: quadratic time, allocations and bytes
 *             on a left-associated chain — the pathology one study found in Kyo.
 * Both give the same results, side effects and errors.
 *
 * Errors. A run fails when it meets fx_raise, or when a callback (thunk, map function,
 * bind or attempt continuation) calls rt_raise(): the interpreter catches that, drops
 * the pending continuations up to the innermost fx_attempt and hands it the error.
 * A failed run returns the error; nothing is raised out of fx_run().
 *
 * Ownership. Values are reference counted and immutable while anyone else holds
 * them (the interpreter may take apart a value only it holds).
 *   - Every constructor returns a new value with one reference, owned by the caller,
 *     or NULL + errno (ENOMEM).
 *   - A constructor taking a value consumes one reference to it, even when it fails,
 *     and fails when given NULL: so nested constructors need no checks in between,
 *     and a NULL reaching fx_run() makes the run fail with ENOMEM.
 *   - fx_ref() adds a reference (to share a value, or to run it more than once);
 *     fx_free() drops one. Counts are atomic: a value may be shared between tasks.
 *   - fx_run() consumes its value. A bind or attempt continuation returns a new
 *     reference, consumed by the interpreter (NULL fails the run with ENOMEM).
 *   - env pointers are borrowed: they must outlive every run of the value. Strings
 *     given to fx_raise() are not copied: pass one that lives as long (a literal).
 *   - Every byte a run allocates (through rt_alloc, so counted per worker) is freed by
 *     the time fx_run() returns, except the error it returns.
 *
 * Threads: fx_run() works in a task and, without async boundaries that yield, in any
 * thread (rt_yield() does nothing outside a task).
 */
#ifndef SCHEDLAB_FX_EFFECT_H
#define SCHEDLAB_FX_EFFECT_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/rt.h"

struct fx_io;

/* A suspended computation: called each time its fx_delay value runs. */
typedef uint64_t (*fx_thunk)(void *env);
/* x -> a new value. */
typedef uint64_t (*fx_map_fn)(uint64_t x, void *env);
/* x -> the IO to run next (a new reference; NULL: out of memory). */
typedef struct fx_io *(*fx_bind_fn)(uint64_t x, void *env);
/* The outcome of the attempted IO -> the IO to run next. r.err, when !r.ok, belongs to
 * the continuation: free it, or raise it again with rt_raise(). */
typedef struct fx_io *(*fx_attempt_fn)(struct rt_result r, void *env);

/* In the order of the bind-chain workload's `interpreter` choices. */
enum fx_interp {
	FX_STACK,
	FX_NAIVE,
	FX_RUNTIME, /* the running scheduler's own (its binds knob: stack or copy) */
};

struct fx_io *fx_pure(uint64_t value);
struct fx_io *fx_delay(fx_thunk fn, void *env);
struct fx_io *fx_map(struct fx_io *io, fx_map_fn f, void *env);
struct fx_io *fx_flat_map(struct fx_io *io, fx_bind_fn k, void *env);
/* Run io; hand its outcome, success or failure, to k. */
struct fx_io *fx_attempt(struct fx_io *io, fx_attempt_fn k, void *env);
/* Fail with a new error each run: rt_error_new(code, msg, trace) at that moment, so a
 * trace shows the interpreter's stack. */
struct fx_io *fx_raise(int code, const char *msg, bool trace);
/* Yield to the scheduler (rt_yield()), then run io. */
struct fx_io *fx_async(struct fx_io *io);

/* Another reference to io (NULL stays NULL). */
struct fx_io *fx_ref(struct fx_io *io);
/* Drop one reference; the value goes with the last. NULL does nothing. */
void fx_free(struct fx_io *io);

/* Run io (consumed) with the chosen interpreter: its value, or the error it failed with
 * (owned by the caller). */
struct rt_result fx_run(struct fx_io *io, enum fx_interp how);

#endif /* SCHEDLAB_FX_EFFECT_H */
