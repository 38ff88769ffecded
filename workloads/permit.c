/*
 * permit: 1,000 uncontended acquire/release pairs on a semaphore of one permit (by
 * default; `tasks` and `permits` make it contended).
 *
 * The studies' "uncontended permit acquire/release" (Kyo ~5x cats-effect): one task
 * takes and returns the only permit n times, so the op measures the primitive's fast
 * path alone, with no waiter and no scheduling. The study ran it as each library writes
 * it, a loop of effects in one fiber (kyo-bench's SemaphoreBench):
 *
 *	cats-effect  s.acquire.flatMap(_ => s.release).flatMap(_ => loop(s, i + 1))
 *	Kyo          s.run(()).flatMap(_ => loop(s, i + 1))
 *
 * so the gap it found is in how the two libraries build the primitive, not in their
 * schedulers. `encoding` chooses which is measured:
 *
 *   direct  the runtime's rt_sem from a C loop: one atomic instruction each way.
 *   ce      cats-effect's Semaphore (std/Semaphore.scala) as IO values run by the
 *           effect interpreter: every acquire makes a Deferred and a Request, then
 *           replaces the immutable State {permits, waiting} behind a Ref with a new one
 *           and runs the action the update chose (nothing, or wait on the Deferred);
 *           every release replaces the State again and completes the oldest waiter's
 *           Deferred. About a dozen interpreter steps and allocations a pair.
 *   kyo     Kyo's Meter (kyo/Meter.scala) the same way: one CAS on an atomic count
 *           (>= 0 permits free, < 0 waiters) to enter, the body under an ensure that
 *           releases with one more CAS; a waiter queues a promise and the release that
 *           finds a waiter completes the oldest. Four steps a pair.
 *
 * Both encodings are whole semaphores (waiters park their task on a latch, served
 * oldest first) and run on the stack interpreter; neither models cancellation (the
 * uncancelable mask, poll and the cleanup on cancel in cats-effect's, interruption in
 * Kyo's), which fx does not have, nor Kyo's reentrancy check, so cats-effect's is if
 * anything cheaper here than on the JVM. Bytes per op show the allocations.
 *
 * `tasks` above 1 makes it contended, for the runtime and both encodings alike: the op
 * spawns that many tasks, n pairs each, and each holds its permit across a yield, so
 * that others queue behind it (a yield on a worker with nothing else to run goes on at
 * once, so tasks placed apart need not meet). `permits` sizes the semaphore. The report
 * gives the acquires that waited per op.
 *
 * The semaphore lives from setup to teardown; the op returns the pairs it completed
 * and the check finds the permits back and never more holders at once than permits.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/effect/effect.h"
#include "runtime/rt.h"
#include "workloads/gate.h"
#include "workloads/workload.h"

#define PERMIT_FAILED UINT64_MAX

/* In the order of `encoding`'s choices. */
enum permit_encoding {
	PERMIT_DIRECT,
	PERMIT_CE,
	PERMIT_KYO,
};

/* ---- encoding=ce: cats-effect's Semaphore ------------------------------------------------ */

/* Invariant, as cats-effect's: no waiter, or no permit free. */
struct ce_state {
	uint64_t permits;
	struct wl_waiter *head, *tail; /* waiting, oldest first */
};

/* Ref[F, State]. cats-effect retries a CAS on an AtomicReference and leaves the state it
 * replaced to the collector. Without a collector, nothing tells a CAS loop when no
 * reader holds the old state any more, so the update is made under a lock instead
 * (uncontended, one atomic instruction to take and one to give back, as the CAS was)
 * and the old state is freed at once. The states are still immutable: each update
 * makes a new one. */
struct ce_sem {
	uint64_t waits; /* atomic: acquires that queued */
	pthread_mutex_t lock;
	struct ce_state *state;
	struct fx_io *unit; /* F.unit, one value shared as on the JVM */
};

/* The update's decision, handed to the IO that runs it: a new reference. */
static uint64_t io_word(struct fx_io *io)
{
	return (uint64_t)(uintptr_t)io;
}

static struct fx_io *ce_flatten(uint64_t action, void *env)
{
	return (struct fx_io *)(uintptr_t)action;
}

/* newRequest: F.deferred[Unit].map(Request(0, _)) */
static uint64_t ce_deferred(void *env)
{
	struct wl_gate *g = wl_gate_new(1);

	if (!g)
		rt_raise(rt_error_oom());
	return (uint64_t)(uintptr_t)g;
}

static uint64_t ce_request(uint64_t gate, void *env)
{
	struct wl_waiter *w = rt_alloc(sizeof(*w));

	if (!w) {
		wl_gate_unref((struct wl_gate *)(uintptr_t)gate);
		rt_raise(rt_error_oom());
	}
	w->gate = (struct wl_gate *)(uintptr_t)gate;
	w->next = NULL;
	return (uint64_t)(uintptr_t)w;
}

struct ce_acquiring {
	struct ce_sem *sem;
	struct wl_waiter *req;
};

/* state.modify { State(permits, waiting) => ... }: take a permit, or queue the request
 * and wait on its Deferred. */
static uint64_t ce_acquire_update(void *env)
{
	struct ce_acquiring *a = env;
	struct ce_sem *sem = a->sem;
	struct wl_waiter *req = a->req;
	struct ce_state *next = rt_alloc(sizeof(*next)), *old;
	struct wl_gate *gate = req->gate; /* once queued, req is the release's to free */
	bool wait;

	rt_free(a);
	if (!next) {
		wl_gate_unref(req->gate);
		rt_free(req);
		rt_raise(rt_error_oom());
	}
	pthread_mutex_lock(&sem->lock);
	old = sem->state;
	*next = *old;
	wait = old->head || old->permits == 0;
	if (wait) {
		req->gate->refs = 2; /* the waiter's and the queue's; no one else sees it yet */
		if (next->tail)
			next->tail->next = req;
		else
			next->head = req;
		next->tail = req;
	} else {
		next->permits--;
	}
	sem->state = next;
	pthread_mutex_unlock(&sem->lock);
	rt_free(old);
	if (!wait) {
		wl_gate_unref(req->gate);
		rt_free(req);
		return io_word(fx_ref(sem->unit));
	}
	__atomic_fetch_add(&sem->waits, 1, __ATOMIC_RELAXED);
	/* NULL (out of memory) fails the run; the queued request is still served */
	return io_word(fx_delay(wl_gate_wait, gate));
}

static struct fx_io *ce_acquire_with(uint64_t req, void *env)
{
	struct ce_acquiring *a = rt_alloc(sizeof(*a));

	if (!a) {
		struct wl_waiter *w = (struct wl_waiter *)(uintptr_t)req;

		wl_gate_unref(w->gate);
		rt_free(w);
		return NULL;
	}
	a->sem = env;
	a->req = (struct wl_waiter *)(uintptr_t)req;
	return fx_flat_map(fx_delay(ce_acquire_update, a), ce_flatten, NULL);
}

/* acquire = acquireN(1): newRequest.flatMap { req => state.modify { ... }.flatten } */
static struct fx_io *ce_acquire(struct ce_sem *sem)
{
	return fx_flat_map(fx_map(fx_delay(ce_deferred, NULL), ce_request, NULL), ce_acquire_with,
			   sem);
}

static uint64_t ce_wake(void *env)
{
	struct wl_waiter *w = env;

	wl_gate_complete(w->gate, 0);
	rt_free(w);
	return 0;
}

/* state.flatModify { ... }: a permit more, or the oldest request served. */
static uint64_t ce_release_update(void *env)
{
	struct ce_sem *sem = env;
	struct ce_state *next = rt_alloc(sizeof(*next)), *old;
	struct wl_waiter *served;
	struct fx_io *wake;

	if (!next)
		rt_raise(rt_error_oom());
	pthread_mutex_lock(&sem->lock);
	old = sem->state;
	*next = *old;
	served = next->head;
	if (served) {
		next->head = served->next;
		if (!next->head)
			next->tail = NULL;
	} else {
		next->permits++;
	}
	sem->state = next;
	pthread_mutex_unlock(&sem->lock);
	rt_free(old);
	if (!served)
		return io_word(fx_ref(sem->unit));
	wake = fx_delay(ce_wake, served);
	if (!wake) /* the waiter is owed its permit all the same */
		ce_wake(served);
	return io_word(wake ? wake : fx_ref(sem->unit));
}

/* release = releaseN(1) */
static struct fx_io *ce_release(struct ce_sem *sem)
{
	return fx_flat_map(fx_delay(ce_release_update, sem), ce_flatten, NULL);
}

static int ce_init(struct ce_sem *sem, uint64_t permits)
{
	sem->state = rt_calloc(1, sizeof(*sem->state));
	sem->unit = fx_pure(0);
	if (!sem->state || !sem->unit) {
		rt_free(sem->state);
		fx_free(sem->unit);
		sem->state = NULL;
		sem->unit = NULL;
		return -ENOMEM;
	}
	sem->state->permits = permits;
	pthread_mutex_init(&sem->lock, NULL);
	return 0;
}

static void ce_destroy(struct ce_sem *sem)
{
	if (sem->state)
		pthread_mutex_destroy(&sem->lock);
	rt_free(sem->state);
	fx_free(sem->unit);
}

/* ---- encoding=kyo: Kyo's Meter ----------------------------------------------------------- */

struct kyo_meter {
	int64_t state;  /* atomic: >= 0 permits free, < 0 the waiters' count, negated */
	int64_t permits;
	uint64_t waits; /* atomic: runs that queued */
	/* the waiters' promises, oldest first; only a meter with waiters touches them */
	struct wl_waiters waiting;
	struct fx_io *unit;
	struct fx_io *body; /* what run() runs under the permit: here, unit */
};

/* A queued waiter and its promise, one reference for each side; NULL when out of memory. */
static struct wl_waiter *kyo_waiter_new(void)
{
	struct wl_waiter *w = rt_alloc(sizeof(*w));

	if (w && !(w->gate = wl_gate_new(2))) {
		rt_free(w);
		w = NULL;
	}
	return w;
}

/* run's loop: take a permit with one CAS, or count ourselves a waiter and queue a
 * promise. The promise, or 0 with the permit taken. */
static uint64_t kyo_enter(void *env)
{
	struct kyo_meter *m = env;
	int64_t st = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	struct wl_waiter *w = NULL;
	struct wl_gate *gate;

	for (;;) {
		/* once counted as a waiter we must queue (a release that sees the count polls
		 * until we do), so the waiter is made before the CAS that counts us */
		if (st <= 0 && !w && !(w = kyo_waiter_new()))
			rt_raise(rt_error_oom());
		if (__atomic_compare_exchange_n(&m->state, &st, st - 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			break;
	}
	if (st > 0) {
		if (w) {
			rt_free(w->gate);
			rt_free(w);
		}
		return 0;
	}
	gate = w->gate; /* once queued, w is the release's to free */
	__atomic_fetch_add(&m->waits, 1, __ATOMIC_RELAXED);
	wl_waiters_append(&m->waiting, w);
	return (uint64_t)(uintptr_t)gate;
}

/* pollWaiter: the oldest waiter, polling until the one the count promised is queued */
static struct wl_waiter *kyo_poll_waiter(struct kyo_meter *m)
{
	for (unsigned spins = 0;; spins++) {
		struct wl_waiter *w = wl_waiters_take(&m->waiting);

		if (w)
			return w;
		if (spins > 64)
			sched_yield(); /* its thread is between the CAS and the queue */
	}
}

/* release: a permit back with one CAS, handed to the oldest waiter when there is one.
 * False when every permit is already free. */
static bool kyo_release(struct kyo_meter *m)
{
	int64_t st = __atomic_load_n(&m->state, __ATOMIC_RELAXED);
	struct wl_waiter *w;

	do {
		if (st >= m->permits)
			return false;
	} while (!__atomic_compare_exchange_n(&m->state, &st, st + 1, false, __ATOMIC_RELEASE,
					      __ATOMIC_RELAXED));
	if (st < 0) {
		w = kyo_poll_waiter(m);
		wl_gate_complete(w->gate, 0);
		rt_free(w);
	}
	return true;
}

/* dispatch: Sync.ensure(release())(v) */
static struct fx_io *kyo_released(struct rt_result r, void *env)
{
	struct kyo_meter *m = env;

	kyo_release(m);
	if (!r.ok)
		rt_raise(r.err);
	return r.value ? fx_pure(r.value) : fx_ref(m->unit);
}

static struct fx_io *kyo_dispatch(uint64_t x, void *env)
{
	struct kyo_meter *m = env;

	return fx_attempt(fx_ref(m->body), kyo_released, m);
}

static struct fx_io *kyo_entered(uint64_t gate, void *env)
{
	if (!gate)
		return kyo_dispatch(0, env);
	/* p.safe.use(_ => v): wait for the permit a release hands over */
	return fx_flat_map(fx_delay(wl_gate_wait, (void *)(uintptr_t)gate), kyo_dispatch, env);
}

/* meter.run(v) */
static struct fx_io *kyo_run(struct kyo_meter *m)
{
	return fx_flat_map(fx_delay(kyo_enter, m), kyo_entered, m);
}

/* body: what run() runs under the permit (consumed) */
static int kyo_init(struct kyo_meter *m, int64_t permits, struct fx_io *body)
{
	m->state = m->permits = permits;
	m->unit = fx_pure(0);
	m->body = body;
	if (!m->unit || !m->body) {
		fx_free(m->unit);
		fx_free(m->body);
		m->unit = m->body = NULL;
		return -ENOMEM;
	}
	wl_waiters_init(&m->waiting);
	return 0;
}

static void kyo_destroy(struct kyo_meter *m)
{
	if (m->unit)
		pthread_mutex_destroy(&m->waiting.lock);
	fx_free(m->body);
	fx_free(m->unit);
}

/* ---- the workload ------------------------------------------------------------------------ */

struct permit {
	struct rt_sem sem; /* first: the tests take ctx->state for it */
	struct ce_sem ce;
	struct kyo_meter kyo;
	enum permit_encoding encoding;
	uint64_t n, tasks, permits;
	uint64_t waits;   /* atomic: direct's acquires that waited */
	uint64_t holders; /* atomic, tasks > 1: tasks holding a permit now */
	uint64_t most;    /* atomic, tasks > 1: the most that held one at once */
	uint64_t ops;     /* ops run, for the report */
};

/* One task's loop. */
struct permit_run {
	struct permit *p;
	uint64_t pairs;
};

/* With tasks > 1, the body under the permit: count the holders (the check fails when
 * they ever exceed the permits) and yield while holding, so that other tasks queue. */
static uint64_t permit_hold(void *env)
{
	struct permit *p = env;
	uint64_t now = __atomic_add_fetch(&p->holders, 1, __ATOMIC_RELAXED);
	uint64_t most = __atomic_load_n(&p->most, __ATOMIC_RELAXED);

	while (now > most && !__atomic_compare_exchange_n(&p->most, &most, now, true,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	rt_yield();
	__atomic_sub_fetch(&p->holders, 1, __ATOMIC_RELAXED);
	return 0;
}

static __attribute__((noinline)) void permit_pair(struct permit *p)
{
	if (!rt_sem_try_acquire(&p->sem)) {
		__atomic_fetch_add(&p->waits, 1, __ATOMIC_RELAXED);
		rt_sem_acquire(&p->sem);
	}
	if (p->tasks > 1)
		permit_hold(p);
	rt_sem_release(&p->sem);
}

/* cats-effect: s.acquire.flatMap(_ => s.release).flatMap(_ => loop(s, i + 1)), with
 * the body between acquire and release when there is one */
static struct fx_io *ce_then_release(uint64_t x, void *env)
{
	return ce_release(env);
}

static uint64_t ce_hold(uint64_t x, void *env)
{
	return permit_hold(env);
}

static struct fx_io *ce_loop(uint64_t x, void *env)
{
	struct permit_run *run = env;
	struct permit *p = run->p;
	struct fx_io *held;

	if (run->pairs == p->n)
		return fx_pure(run->pairs);
	run->pairs++;
	held = ce_acquire(&p->ce);
	if (p->tasks > 1)
		held = fx_map(held, ce_hold, p);
	return fx_flat_map(fx_flat_map(held, ce_then_release, &p->ce), ce_loop, run);
}

/* Kyo: s.run(()).flatMap(_ => loop(s, i + 1)) */
static struct fx_io *kyo_loop(uint64_t x, void *env)
{
	struct permit_run *run = env;
	struct permit *p = run->p;

	if (run->pairs == p->n)
		return fx_pure(run->pairs);
	run->pairs++;
	return fx_flat_map(kyo_run(&p->kyo), kyo_loop, run);
}

/* One task's n pairs: the pairs done, or PERMIT_FAILED. */
static uint64_t permit_loop(void *arg)
{
	struct permit_run run = { .p = arg };
	struct permit *p = run.p;
	struct rt_result r;

	if (p->encoding == PERMIT_DIRECT) {
		for (; run.pairs < p->n; run.pairs++)
			permit_pair(p);
		return run.pairs;
	}
	r = fx_run(p->encoding == PERMIT_CE ? ce_loop(0, &run) : kyo_loop(0, &run), FX_STACK);
	if (!r.ok) {
		rt_error_free(r.err);
		return PERMIT_FAILED;
	}
	return r.value;
}

static int permit_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct permit *p = calloc(1, sizeof(*p));

	if (p) {
		p->encoding = (enum permit_encoding)wl_choice(ctx, "encoding");
		p->n = (uint64_t)wl_int(ctx, "n");
		p->tasks = (uint64_t)wl_int(ctx, "tasks");
		p->permits = (uint64_t)wl_int(ctx, "permits");
	}
	if (!p || ce_init(&p->ce, p->permits) ||
	    kyo_init(&p->kyo, (int64_t)p->permits,
		     p->tasks > 1 ? fx_delay(permit_hold, p) : fx_pure(0))) {
		if (p) {
			ce_destroy(&p->ce);
			kyo_destroy(&p->kyo);
		}
		free(p);
		snprintf(err, errlen, "permit: out of memory");
		return -ENOMEM;
	}
	rt_sem_init(&p->sem, p->permits);
	ctx->state = p;
	return 0;
}

static uint64_t permit_op(struct wl_ctx *ctx)
{
	struct permit *p = ctx->state;
	struct rt_task *t[1024];
	uint64_t total = 0, spawned;

	p->ops++;
	if (p->tasks == 1)
		return permit_loop(p);
	for (spawned = 0; spawned < p->tasks; spawned++)
		if (!(t[spawned] = rt_spawn(permit_loop, p)))
			break;
	for (uint64_t i = 0; i < spawned; i++) {
		uint64_t r = rt_join(t[i]);

		if (r == PERMIT_FAILED || total == PERMIT_FAILED)
			total = PERMIT_FAILED;
		else
			total += r;
	}
	return spawned < p->tasks ? PERMIT_FAILED : total;
}

/* Permits free now, in the encoding's own semaphore. */
static uint64_t permit_available(const struct permit *p)
{
	int64_t st;

	switch (p->encoding) {
	case PERMIT_CE:
		return p->ce.state->permits;
	case PERMIT_KYO:
		st = __atomic_load_n(&p->kyo.state, __ATOMIC_RELAXED);
		return st > 0 ? (uint64_t)st : 0;
	default:
		return rt_sem_available(&p->sem);
	}
}

static bool permit_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	struct permit *p = ctx->state;
	uint64_t want = p->n * p->tasks, free_now = permit_available(p);
	uint64_t most = __atomic_load_n(&p->most, __ATOMIC_RELAXED);

	if (result == want && free_now == p->permits && most <= p->permits)
		return true;
	if (result == PERMIT_FAILED)
		snprintf(err, errlen,
			 "permit: the op failed to run (out of memory, or no stack for a task)");
	else if (most > p->permits)
		snprintf(err, errlen, "permit: %llu tasks held a permit at once, of %llu permit(s)",
			 (unsigned long long)most, (unsigned long long)p->permits);
	else
		snprintf(err, errlen,
			 "permit: %llu of %llu acquire/release pairs done, %llu permit(s) free "
			 "after the op, expected %llu",
			 (unsigned long long)result, (unsigned long long)want,
			 (unsigned long long)free_now, (unsigned long long)p->permits);
	return false;
}

static size_t permit_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	struct permit *p = ctx->state;
	uint64_t waits = p->waits + p->ce.waits + p->kyo.waits;
	size_t n = 0;

	wl_metric_add(out, &n, max, "waits_per_op", "acquires",
		      p->ops ? (double)waits / (double)p->ops : 0);
	return n;
}

static void permit_teardown(struct wl_ctx *ctx)
{
	struct permit *p = ctx->state;

	if (p) {
		rt_sem_destroy(&p->sem);
		ce_destroy(&p->ce);
		kyo_destroy(&p->kyo);
	}
	free(p);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	{ "n", WL_INT, "1000", 1, 100000000, NULL, "acquire/release pairs per op" },
	{ "encoding", WL_CHOICE, "direct", 0, 0, "direct,ce,kyo",
	  "the semaphore: the runtime's, from a C loop (direct), or cats-effect's Semaphore "
	  "(ce) or Kyo's Meter (kyo) as each library builds it, run as effects" },
	{ "tasks", WL_INT, "1", 1, 1024, NULL,
	  "tasks taking the permits at once, n pairs each; above 1 each holds its permit "
	  "across a yield, so others queue" },
	{ "permits", WL_INT, "1", 1, 1024, NULL, "permits of the semaphore" },
	{ 0 },
};

const struct wl_desc wl_permit = {
	.name = "permit",
	.summary = "n acquire/release pairs on a semaphore: the runtime's, cats-effect's or Kyo's",
	.unit = "ops/s",
	.params = params,
	.setup = permit_setup,
	.op = permit_op,
	.check = permit_check,
	.teardown = permit_teardown,
	.report = permit_report,
};
