/*
 * error-pipeline: n pipelines per op, in one of five error styles and three ways to run.
 *
 * Study 3's pipeline: take an input in [0,100) (from `seed` and the pipeline's number,
 * so any pipeline can be replayed alone); validate it (valid below `valid`); transform
 * it (`tokens` units of consume_cpu); fetch data and call the outside world, which
 * fails with probability `fail`; then record the failure (an invalid input or a failed
 * call) or process the output. Fetch, the outside world and the last step spend tf x tokens each.
 *
 * Styles differ in how a failure travels and in how many steps their program has:
 *   value          each step returns an either word and the next checks it by hand;
 *   combinator     an either transformer (EitherT): the steps as closures (a function
 *                  pointer and what it captured, allocated per pipeline) run by a generic
 *                  flat-map and a fold, composed the way EitherT composes them, which
 *                  adds steps of its own (its binds, lift, yield and fold);
 *   raise          a failing step raises an error object that captured the stack
 *                  (rt_raise: the phase word says STACKCAP while it captures);
 *   raise-notrace  the same raise with an error that captured nothing;
 *   typed          a typed error channel (ZIO.fail with a value): a failing step returns
 *                  a failed IO carrying an error made without a trace, which the run loop
 *                  carries past the steps after it to the fold: no jump, no capture.
 * Every failure carries an error object, made without a trace except by raise, so the
 * styles differ by their steps, the capture and the jump, not by what an error holds.
 *
 * A style's program is a list of links, each one callback of the effect that runs it
 * (programs[] says why each style has the links it has): value and typed 5, combinator
 * 10 (3 for an invalid input, whose Left skips the binds nested after validate), raise
 * and raise-notrace 6. Execution decides what a link costs:
 *   pool  futures on a thread pool: each link is a Future callback, a task of its own,
 *         submitted (rt_spawn) by the task that completed the link before it, as a
 *         promise dispatches its callbacks when it completes; the op's task awaits the
 *         last, as the study's harness awaited each pipeline. A pipeline makes as many
 *         submissions as its program has links, so the transformer's extra links cost a
 *         placement, a wake-up and a switch each (the runtime's spawned counter, and the
 *         submit phase of the on-CPU profile);
 *   loop  an IO run loop (cats-effect): the program is one IO value, a node per link,
 *         run by the effect interpreter in the op's task with one async boundary
 *         (fx_async, a yield) before the outside world. No link is a submission: the
 *         transformer's extra links are nodes of the run loop;
 *   zio   ZIO 1.x: the same run loop with no async boundary, the outside world inside
 *         `blocking`: a blocking section (rt_blocking), which the runtime's blocking
 *         knob handles; ZIO's own, a shift to its blocking executor and back (two hops a
 *         pipeline), is -c blocking=offload.
 *
 * A pipeline's outcome word holds the outcome in the low two bits, above them the
 * processed output or the error's code. An op runs n pipelines one after another (the
 * study awaited each; n of them make the harness's own submission of the op a small
 * part of its time) and returns the fold of their words. The check replays the op's
 * inputs sequentially (no runtime, no spinning) and compares every word, the outcome
 * counts and the fold, so for one seed every style and execution gives the same words.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/effect/effect.h"
#include "workloads/internal.h"

/* The order of the `style` and `exec` choices. */
enum ep_style { EP_VALUE, EP_COMBINATOR, EP_RAISE, EP_NOTRACE, EP_TYPED, EP_STYLES };
enum ep_exec { EP_POOL, EP_LOOP, EP_ZIO };

enum ep_outcome { EP_OK, EP_INVALID, EP_FAILED, EP_OUTCOMES };

static const char *const outcome_names[EP_OUTCOMES] = { "ok", "invalid", "failed" };

/* The steps, in order; EP_FINISH records the failure or processes the output. */
enum ep_step { EP_VALIDATE, EP_TRANSFORM, EP_FETCH, EP_OUTSIDE, EP_FINISH, EP_STEPS };

#define EP_INVALID_CODE EINVAL
#define EP_FAILED_CODE	EIO
#define EP_BROKEN	UINT64_MAX /* a pipeline's steps could not run (no stack, no memory) */

/* ---- either words: a value below 2^63, or an error object with the top bit set --------- */

#define EP_LEFT	      (1ull << 63)
#define EP_VALUE_MASK ((1ull << 61) - 1) /* room for the outcome bits above any value */

static inline bool ep_is_left(uint64_t w)
{
	return w & EP_LEFT;
}

static inline uint64_t ep_left(struct rt_error *e)
{
	return (uint64_t)(uintptr_t)(e ? e : rt_error_oom()) | EP_LEFT;
}

static inline struct rt_error *ep_error(uint64_t w)
{
	return (struct rt_error *)(uintptr_t)(w & ~EP_LEFT);
}

/* ---- the programs ------------------------------------------------------------------------ */

/* A link: one callback of the effect that runs the pipeline (pool: a Future's, a task;
 * loop and zio: a node of the IO value). */
enum ep_link_kind {
	EP_STAGE,   /* one of the steps validate .. outside, as the style writes it */
	EP_BIND,    /* EitherT.flatMap's own callback, F.flatMap(value)(fold): a Right goes
		     * on into the generators nested in it, a Left skips them to the fold */
	EP_LIFT,    /* EitherT.liftF: F.map(fa)(Right(_)), over a step that cannot fail */
	EP_YIELD,   /* EitherT.map: F.map(value)(_.map(f)), a for-comprehension's yield */
	EP_FOLD,    /* record the failure or process the output */
	EP_OUTPUT,  /* raise: map(onOutput), which a failure passes */
	EP_RECOVER, /* raise: recover(onFailure), which a success passes */
};

#define EP_MAX_LINKS 10

struct ep_program {
	unsigned n;
	struct ep_link {
		enum ep_link_kind kind;
		enum ep_step step; /* EP_STAGE */
	} link[EP_MAX_LINKS];
};

#define STAGE(s) { EP_STAGE, s }
#define LINK(k)	 { k, EP_FINISH }

/*
 * Each style's program, as the study's Scala composes it, one link per callback.
 *
 * value, Future[Either] (IO[Either]) matched by hand, a stage on the one before:
 *	Future(validate(x)).map(_.flatMap(transform)).map(_.flatMap(fetch))
 *		.map(_.flatMap(outside)).map(_.fold(onFailure, onOutput))
 * five callbacks, each run whatever the Either holds: one per stage.
 *
 * combinator, EitherT[Future, E, A] in a for-comprehension over the same steps, each a
 * Future of its own: for { v <- EitherT(validate(x)); t <- EitherT.liftF(transform(v));
 * d <- EitherT(fetch(t)); o <- EitherT(outside(d)) } yield o, then .fold(onFailure,
 * onOutput). cats' EitherT.flatMap(f) is F.flatMap(value)(fold: Left -> F.pure(Left),
 * Right -> f(b).value): a callback of its own (bind) before the step's (stage); liftF is
 * F.map(fa)(Right(_)) (lift); the last generator desugars to EitherT.map, F.map(value)
 * (_.map(f)) (yield); and EitherT.fold is F.map(value)(_.fold(...)) (fold). So
 * 1 + 3 + 2 + 3 + 1 = 10 callbacks for a pipeline that reaches the outside world, twice
 * the hand-written either's. The binds nest (A.flatMap(a => B.flatMap(...))): a Left at
 * validate skips everything nested in its bind, 3 callbacks in all.
 *
 * raise, Future[A] (IO[A]) whose steps throw:
 *	Future(validate(x)).map(transform).map(fetch).map(outside).map(onOutput)
 *		.recover { case e => onFailure(e) }
 * six callbacks: a failed future passes the maps after it without applying them, and
 * recover passes a success, but each callback still runs, a submission each (a Future's
 * callback registered before it completes is dispatched either way). In a run loop a
 * raise unwinds past the nodes after it to the recover instead.
 *
 * typed, ZIO[Any, E, A]: validate(x).flatMap(transform).flatMap(fetch).flatMap(outside)
 * .foldM(onFailure, onOutput): five. Futures have no typed channel: there it is a future
 * failed with the value, without a throw, passing the callbacks after it as value's
 * Left does.
 */
static const struct ep_program programs[EP_STYLES] = {
	[EP_VALUE] = { 5, { STAGE(EP_VALIDATE), STAGE(EP_TRANSFORM), STAGE(EP_FETCH),
			    STAGE(EP_OUTSIDE), LINK(EP_FOLD) } },
	[EP_COMBINATOR] = { 10, { STAGE(EP_VALIDATE), LINK(EP_BIND), STAGE(EP_TRANSFORM),
				  LINK(EP_LIFT), LINK(EP_BIND), STAGE(EP_FETCH), LINK(EP_BIND),
				  STAGE(EP_OUTSIDE), LINK(EP_YIELD), LINK(EP_FOLD) } },
	[EP_RAISE] = { 6, { STAGE(EP_VALIDATE), STAGE(EP_TRANSFORM), STAGE(EP_FETCH),
			    STAGE(EP_OUTSIDE), LINK(EP_OUTPUT), LINK(EP_RECOVER) } },
	[EP_NOTRACE] = { 6, { STAGE(EP_VALIDATE), STAGE(EP_TRANSFORM), STAGE(EP_FETCH),
			      STAGE(EP_OUTSIDE), LINK(EP_OUTPUT), LINK(EP_RECOVER) } },
	[EP_TYPED] = { 5, { STAGE(EP_VALIDATE), STAGE(EP_TRANSFORM), STAGE(EP_FETCH),
			    STAGE(EP_OUTSIDE), LINK(EP_FOLD) } },
};

#undef STAGE
#undef LINK

/* ---- the state, the inputs and the pure part of each step ------------------------------- */

struct ep_state {
	long style, exec;
	const struct ep_program *prog;
	uint64_t tokens, step_tokens; /* tokens; tf x tokens */
	uint64_t valid, seed;
	double fail;
	long n;                       /* pipelines per op */
	uint64_t next;                /* the number of the next pipeline */
	uint64_t first;               /* the last op's first pipeline */
	long ran;                     /* pipelines it ran */
	uint64_t *words;              /* their outcome words, n */
	uint64_t counts[EP_OUTCOMES]; /* outcomes of every op the check passed */
	uint64_t errors, frames;      /* errors the last step recorded, frames they captured */
	uint64_t pipelines;           /* pipelines run */
	uint64_t submitted;           /* the futures they submitted (pool) */
	struct rt_sem done;           /* pool: a permit when a pipeline's last future is done */
};

struct ep_input {
	uint64_t x;
	bool fails; /* the outside world fails for this op */
};

/* Op k's input: a counter-based draw, so the replay needs no sequence of calls. */
static struct ep_input ep_input(const struct ep_state *st, uint64_t k)
{
	uint64_t a = wl__splitmix64(st->seed ^ wl__splitmix64(k)), b = wl__splitmix64(a);

	return (struct ep_input){ .x = (a >> 32) % 100,
				  .fails = (double)(b >> 11) * 0x1p-53 < st->fail };
}

static uint64_t ep_transformed(uint64_t x)
{
	return (x * 0x9e3779b1ull + 1) & EP_VALUE_MASK;
}

static uint64_t ep_fetched(uint64_t v)
{
	return (v ^ (v >> 7) ^ 0x5bd1e995ull) & EP_VALUE_MASK;
}

static uint64_t ep_processed(uint64_t v)
{
	return (v * 31 + 7) & EP_VALUE_MASK;
}

static uint64_t ep_word(enum ep_outcome o, uint64_t above)
{
	return above << 2 | o;
}

/* What op k must return: the pipeline without a runtime and without work. */
static uint64_t ep_replay(const struct ep_state *st, uint64_t k)
{
	struct ep_input in = ep_input(st, k);

	if (in.x >= st->valid)
		return ep_word(EP_INVALID, EP_INVALID_CODE);
	if (in.fails)
		return ep_word(EP_FAILED, EP_FAILED_CODE);
	return ep_word(EP_OK, ep_processed(ep_fetched(ep_transformed(in.x))));
}

struct ep_closure;

/* One pipeline in flight: what every step and link of it is handed. */
struct ep_run {
	struct ep_state *st;
	struct ep_input in;
	struct ep_closure *cl; /* combinator: the pipeline's closures */
	struct ep_env {
		struct ep_run *run;
		enum ep_step step;
	} env[EP_STEPS];
	struct ep_lenv {
		struct ep_run *run;
		unsigned link;
	} lenv[EP_MAX_LINKS];
	/* pool: the future chain, handed on by each link's task to the next one's through
	 * rt_spawn (which publishes it), and by the last to the op through st->done */
	unsigned link;      /* the link the next task runs */
	uint64_t w;         /* its input: the either word the link before handed on */
	unsigned submitted; /* futures submitted so far */
};

/* The outside world's call, which exec=zio makes inside `blocking`. */
static int ep_outside_call(void *arg)
{
	const struct ep_state *st = arg;

	consume_cpu(st->step_tokens);
	return 0;
}

/* Step s (before EP_FINISH) on v: its work, then its value in *out, or false with the
 * code it fails with. */
static bool ep_work(struct ep_run *run, enum ep_step s, uint64_t v, uint64_t *out, int *code)
{
	struct ep_state *st = run->st;

	switch (s) {
	case EP_VALIDATE:
		*out = v;
		*code = EP_INVALID_CODE;
		return v < st->valid;
	case EP_TRANSFORM:
		consume_cpu(st->tokens);
		*out = ep_transformed(v);
		return true;
	case EP_FETCH:
		consume_cpu(st->step_tokens);
		*out = ep_fetched(v);
		return true;
	case EP_OUTSIDE:
		/* ZIO's blocking { outside(d) }: the call in a blocking section; its failure is
		 * a value that goes back with the fiber, raised or returned after the section */
		if (st->exec == EP_ZIO)
			rt_blocking(ep_outside_call, st);
		else
			ep_outside_call(st);
		*out = v;
		*code = EP_FAILED_CODE;
		return !run->in.fails;
	default:
		abort(); /* EP_FINISH is not a step that can fail */
	}
}

static const char *ep_message(int code)
{
	return code == EP_INVALID_CODE ? "input not below the validity threshold"
				       : "the outside world failed";
}

/* The last step's two branches; each consumes what it is given. */
static uint64_t ep_record_failure(struct ep_run *run, struct rt_error *e)
{
	struct ep_state *st = run->st;
	int code = rt_error_code(e);
	unsigned frames;

	consume_cpu(st->step_tokens);
	rt_error_frames(e, &frames);
	st->errors++;
	st->frames += frames;
	rt_error_free(e);
	if (code == EP_INVALID_CODE)
		return ep_word(EP_INVALID, (uint64_t)code);
	return ep_word(EP_FAILED, (uint64_t)code);
}

static uint64_t ep_process_output(struct ep_run *run, uint64_t v)
{
	consume_cpu(run->st->step_tokens);
	return ep_word(EP_OK, ep_processed(v));
}

/* ---- value and typed: hand-written checks on either words ------------------------------- */

static uint64_t ep_value_step(struct ep_run *run, enum ep_step s, uint64_t w)
{
	uint64_t out;
	int code;

	if (ep_is_left(w))
		return w;
	if (!ep_work(run, s, w, &out, &code))
		return ep_left(rt_error_new(code, ep_message(code), false));
	return out;
}

static uint64_t ep_value_finish(struct ep_run *run, uint64_t w)
{
	if (ep_is_left(w))
		return ep_record_failure(run, ep_error(w));
	return ep_process_output(run, w);
}

/* ---- combinator: closures, a generic flat-map and a fold ---------------------------------- */

struct ep_closure {
	uint64_t (*fn)(uint64_t w, void *env); /* value -> either word */
	void *env;
};

static uint64_t either_flat_map(uint64_t w, const struct ep_closure *k)
{
	return ep_is_left(w) ? w : k->fn(w, k->env);
}

static uint64_t either_fold(uint64_t w, const struct ep_closure *on_left,
			    const struct ep_closure *on_right)
{
	if (ep_is_left(w))
		return on_left->fn(w & ~EP_LEFT, on_left->env);
	return on_right->fn(w, on_right->env);
}

static uint64_t ep_closure_step(uint64_t v, void *arg)
{
	struct ep_env *env = arg;
	uint64_t out;
	int code;

	if (!ep_work(env->run, env->step, v, &out, &code))
		return ep_left(rt_error_new(code, ep_message(code), false));
	return out;
}

static uint64_t ep_closure_failure(uint64_t e, void *arg)
{
	return ep_record_failure(((struct ep_env *)arg)->run, (struct rt_error *)(uintptr_t)e);
}

static uint64_t ep_closure_output(uint64_t v, void *arg)
{
	return ep_process_output(((struct ep_env *)arg)->run, v);
}

/* The pipeline's closures: one per step before the last, then the fold's two branches. */
#define EP_CLOSURES (EP_FINISH + 2)

static struct ep_closure *ep_closures(struct ep_run *run)
{
	struct ep_closure *c = rt_alloc(EP_CLOSURES * sizeof(*c));

	if (!c)
		return NULL;
	for (int s = EP_VALIDATE; s < EP_FINISH; s++)
		c[s] = (struct ep_closure){ ep_closure_step, &run->env[s] };
	c[EP_FINISH] = (struct ep_closure){ ep_closure_failure, &run->env[EP_FINISH] };
	c[EP_FINISH + 1] = (struct ep_closure){ ep_closure_output, &run->env[EP_FINISH] };
	return c;
}

/* ---- raise: plain values, failures raised ----------------------------------------------- */

/* Not inlined: the raising frame is what a trace starts from. */
static __attribute__((noinline)) uint64_t ep_raise_step(struct ep_run *run, enum ep_step s,
							 uint64_t v)
{
	uint64_t out;
	int code;

	if (!ep_work(run, s, v, &out, &code)) {
		if (run->st->style == EP_RAISE)
			rt_raise(rt_error_new(code, ep_message(code), true));
		rt_raise_notrace(code, ep_message(code));
	}
	return out;
}

/* ---- a link on an either word -------------------------------------------------------------- */

/* Link i of the style's program on w, the word the link before handed on: the word it
 * hands on. A raising stage raises (in a pool task its caller catches it, as a Future
 * catches what its callback throws); under a run loop typed stages, folds and recovers
 * are the interpreter's (ep_fx_links()), and w is never Left in a raise style. */
static uint64_t ep_link_word(struct ep_run *run, unsigned i, uint64_t w)
{
	const struct ep_link *l = &run->st->prog->link[i];

	switch (l->kind) {
	case EP_STAGE:
		switch (run->st->style) {
		case EP_COMBINATOR:
			return either_flat_map(w, &run->cl[l->step]);
		case EP_RAISE:
		case EP_NOTRACE:
			return ep_is_left(w) ? w : ep_raise_step(run, l->step, w);
		default:
			return ep_value_step(run, l->step, w);
		}
	case EP_BIND: /* the fold inside it chooses the next link (ep_next_link()) */
	case EP_LIFT: /* Right(_) and _.map(identity): a word is its own Right */
	case EP_YIELD:
		return w;
	case EP_FOLD:
		if (run->st->style == EP_COMBINATOR)
			return either_fold(w, &run->cl[EP_FINISH], &run->cl[EP_FINISH + 1]);
		return ep_value_finish(run, w);
	case EP_OUTPUT:
		return ep_is_left(w) ? w : ep_process_output(run, w);
	case EP_RECOVER:
		return ep_is_left(w) ? ep_record_failure(run, ep_error(w)) : w;
	}
	abort();
}

/* The link after link i, which handed on w: the next, except that a bind's Left skips
 * the generators nested in it, to the fold. n when there is none. */
static unsigned ep_next_link(const struct ep_program *p, unsigned i, uint64_t w)
{
	if (p->link[i].kind == EP_BIND && ep_is_left(w))
		return p->n - 1;
	return i + 1;
}

/* ---- pool: a future per link ------------------------------------------------------------- */

static uint64_t ep_raise_body(void *arg)
{
	struct ep_run *run = arg;

	return ep_link_word(run, run->link, run->w);
}

/* Link run->link's callback, a task of its own: it runs the link on the word the link
 * before handed on, then submits the next link's callback or, the last, completes the
 * pipeline's future, which the op awaits. */
static uint64_t ep_future(void *arg)
{
	struct ep_run *run = arg;
	struct ep_state *st = run->st;
	unsigned i = run->link;
	uint64_t w = run->w;
	bool raises = st->style == EP_RAISE || st->style == EP_NOTRACE;
	struct rt_task *next;

	if (raises && st->prog->link[i].kind == EP_STAGE && !ep_is_left(w)) {
		/* what the callback throws fails its future (a Left word), and a failed
		 * future's callbacks pass it on */
		struct rt_result r = rt_try(ep_raise_body, run);

		w = r.ok ? r.value : ep_left(r.err);
	} else {
		w = ep_link_word(run, i, w);
	}
	run->w = w;
	run->link = ep_next_link(st->prog, i, w);
	if (run->link < st->prog->n) {
		/* the next callback, submitted by the task that completed the future it
		 * waits on; from the spawn on, run is the next task's, not ours */
		run->submitted++;
		next = rt_spawn(ep_future, run);
		if (next) {
			rt_detach(next);
			return 0;
		}
		run->submitted--;
		if (ep_is_left(w))
			rt_error_free(ep_error(w));
		run->w = EP_BROKEN;
	}
	/* the pipeline's future completed: the op's await wakes with run->w; the release
	 * publishes it (pairs with the acquire in rt_sem_acquire() in ep_pool()) */
	rt_sem_release(&st->done);
	return 0;
}

static uint64_t ep_pool(struct ep_run *run)
{
	struct ep_state *st = run->st;
	struct rt_task *first;

	run->link = 0;
	run->w = run->in.x;
	run->submitted = 1;
	first = rt_spawn(ep_future, run); /* Future(validate(x)) */
	if (!first)
		return EP_BROKEN;
	rt_detach(first);
	/* Await.result: a permit in st, not a latch in run, because the last task's
	 * release may still touch the semaphore after it has woken us */
	rt_sem_acquire(&st->done);
	st->submitted += run->submitted;
	return run->w;
}

/* ---- loop and zio: one IO value through the interpreter ---------------------------------- */

static struct fx_io *ep_fx_links(struct ep_run *run, struct fx_io *io, unsigned from,
				 unsigned to);

/* A link that maps the word: value's, combinator's and raise's stages, lift, yield,
 * output, and value's and combinator's fold. A raise in it is the interpreter's to
 * catch: the nodes after it are skipped to the recover. */
static uint64_t ep_fx_map(uint64_t w, void *arg)
{
	struct ep_lenv *env = arg;

	return ep_link_word(env->run, env->link, w);
}

/* typed's stage: ZIO.succeed(out), or ZIO.fail(e) with e an error value made without a
 * trace, which fails the run through the interpreter's error channel (no rt_raise, no
 * jump) and skips the nodes after it to the fold. */
static struct fx_io *ep_fx_typed(uint64_t v, void *arg)
{
	struct ep_lenv *env = arg;
	struct ep_run *run = env->run;
	uint64_t out;
	int code;

	if (!ep_work(run, run->st->prog->link[env->link].step, v, &out, &code))
		return fx_raise(code, ep_message(code), false);
	return fx_pure(out);
}

/* Stage link i over io as the style writes a step: a map of the word, or, typed, a bind
 * to a succeeded or failed IO. */
static struct fx_io *ep_fx_stage(struct ep_run *run, struct fx_io *io, unsigned i)
{
	if (run->st->style == EP_TYPED)
		return fx_flat_map(io, ep_fx_typed, &run->lenv[i]);
	return fx_map(io, ep_fx_map, &run->lenv[i]);
}

/* loop: the one async boundary, before the outside world (IO.shift, then the stage). */
static struct fx_io *ep_fx_boundary(uint64_t w, void *arg)
{
	struct ep_lenv *env = arg;

	return fx_async(ep_fx_stage(env->run, fx_pure(w), env->link));
}

/* combinator: EitherT.flatMap's fold. A Left ends the bind (the fold after it gets
 * it); a Right goes on into the generators nested in the bind, built now, as the
 * for-comprehension's closure builds them when it is called. */
static struct fx_io *ep_fx_bind(uint64_t w, void *arg)
{
	struct ep_lenv *env = arg;

	if (ep_is_left(w))
		return fx_pure(w);
	return ep_fx_links(env->run, fx_pure(w), env->link + 1, env->run->st->prog->n - 1);
}

/* typed's fold (foldM) and raise's recover: the outcome of what ran before, a success
 * or the failure the run carried or caught. */
static struct fx_io *ep_fx_outcome(struct rt_result r, void *arg)
{
	struct ep_lenv *env = arg;
	struct ep_run *run = env->run;

	if (!r.ok)
		return fx_pure(ep_record_failure(run, r.err));
	if (run->st->prog->link[env->link].kind == EP_FOLD)
		return fx_pure(ep_process_output(run, r.value));
	return fx_pure(r.value); /* recover passes a success */
}

/* Links [from, to) of the program over io, a node each. A bind's node builds the links
 * nested in it when it runs, so its builder goes on at the fold. A failed constructor
 * leaves NULL, which the next consumes and fx_run() reports. */
static struct fx_io *ep_fx_links(struct ep_run *run, struct fx_io *io, unsigned from,
				 unsigned to)
{
	const struct ep_program *p = run->st->prog;

	for (unsigned i = from; i < to; i++) {
		const struct ep_link *l = &p->link[i];
		void *env = &run->lenv[i];

		switch (l->kind) {
		case EP_STAGE:
			if (l->step == EP_OUTSIDE && run->st->exec == EP_LOOP)
				io = fx_flat_map(io, ep_fx_boundary, env);
			else
				io = ep_fx_stage(run, io, i);
			break;
		case EP_BIND:
			io = fx_flat_map(io, ep_fx_bind, env);
			i = p->n - 2; /* on at the fold, if it is ours to build */
			break;
		case EP_FOLD:
			if (run->st->style == EP_TYPED)
				io = fx_attempt(io, ep_fx_outcome, env);
			else
				io = fx_map(io, ep_fx_map, env);
			break;
		case EP_RECOVER:
			io = fx_attempt(io, ep_fx_outcome, env);
			break;
		case EP_LIFT:
		case EP_YIELD:
		case EP_OUTPUT:
			io = fx_map(io, ep_fx_map, env);
			break;
		}
	}
	return io;
}

static uint64_t ep_loop(struct ep_run *run)
{
	struct fx_io *io = ep_fx_links(run, fx_pure(run->in.x), 0, run->st->prog->n);
	struct rt_result r = fx_run(io, FX_STACK);

	/* every style's failures end in its fold or its recover: a failed run is the
	 * interpreter's own (out of memory) */
	if (!r.ok) {
		rt_error_free(r.err);
		return EP_BROKEN;
	}
	return r.value;
}

/* ---- the descriptor ------------------------------------------------------------------------ */

/* Pipeline k, alone: its outcome word. */
static uint64_t ep_pipeline(struct ep_state *st, uint64_t k)
{
	struct ep_run run = { .st = st, .in = ep_input(st, k) };
	uint64_t w;

	for (int s = 0; s < EP_STEPS; s++)
		run.env[s] = (struct ep_env){ &run, (enum ep_step)s };
	for (unsigned i = 0; i < st->prog->n; i++)
		run.lenv[i] = (struct ep_lenv){ &run, i };
	if (st->style == EP_COMBINATOR && !(run.cl = ep_closures(&run)))
		return EP_BROKEN;
	w = st->exec == EP_POOL ? ep_pool(&run) : ep_loop(&run);
	rt_free(run.cl);
	st->pipelines++;
	return w;
}

/* n pipelines in sequence, each awaited before the next begins; the fold of their words,
 * which are kept for the check. */
static uint64_t error_pipeline_op(struct wl_ctx *ctx)
{
	struct ep_state *st = ctx->state;
	uint64_t h = WL__FOLD_SEED;

	st->first = st->next;
	for (st->ran = 0; st->ran < st->n;) {
		uint64_t w = ep_pipeline(st, st->next++);

		st->words[st->ran++] = w;
		if (w == EP_BROKEN)
			break;
		h = wl__fold(h, w);
	}
	return h;
}

static void ep_describe(char *buf, size_t len, uint64_t w)
{
	if (w == EP_BROKEN)
		snprintf(buf, len, "no outcome (its steps could not run: out of stacks or memory)");
	else if ((w & 3) == EP_OK)
		snprintf(buf, len, "ok with output %llu", (unsigned long long)(w >> 2));
	else if ((w & 3) < EP_OUTCOMES)
		snprintf(buf, len, "%s (error code %llu)", outcome_names[w & 3],
			 (unsigned long long)(w >> 2));
	else
		snprintf(buf, len, "the word %#llx, no outcome", (unsigned long long)w);
}

/* Replay the op's pipelines without the runtime and compare word by word, then the
 * outcome counts and the op's fold. */
static bool error_pipeline_check(struct wl_ctx *ctx, uint64_t result, char *err, size_t errlen)
{
	struct ep_state *st = ctx->state;
	uint64_t h = WL__FOLD_SEED, got[EP_OUTCOMES] = { 0 }, want[EP_OUTCOMES] = { 0 };
	char got_s[96] = "not run", want_s[96];
	long bad = -1;

	for (long j = 0; j < st->n; j++) {
		uint64_t w = ep_replay(st, st->first + (uint64_t)j);

		want[w & 3]++;
		h = wl__fold(h, w);
		if (j < st->ran && st->words[j] != EP_BROKEN && (st->words[j] & 3) < EP_OUTCOMES)
			got[st->words[j] & 3]++;
		if (bad < 0 && (j >= st->ran || st->words[j] != w))
			bad = j;
	}
	if (bad < 0 && result == h) {
		for (int o = 0; o < EP_OUTCOMES; o++)
			st->counts[o] += got[o];
		return true;
	}
	if (bad < 0) {
		snprintf(err, errlen,
			 "error-pipeline: the op's fold of its %ld outcomes is %#llx, the "
			 "sequential replay's %#llx",
			 st->n, (unsigned long long)result, (unsigned long long)h);
		return false;
	}
	if (bad < st->ran)
		ep_describe(got_s, sizeof(got_s), st->words[bad]);
	ep_describe(want_s, sizeof(want_s), ep_replay(st, st->first + (uint64_t)bad));
	snprintf(err, errlen,
		 "error-pipeline: pipeline %ld of the op (input %llu): %s, the sequential replay "
		 "gives %s; outcomes ok/invalid/failed %llu/%llu/%llu, replayed %llu/%llu/%llu",
		 bad, (unsigned long long)ep_input(st, st->first + (uint64_t)bad).x, got_s, want_s,
		 (unsigned long long)got[EP_OK], (unsigned long long)got[EP_INVALID],
		 (unsigned long long)got[EP_FAILED], (unsigned long long)want[EP_OK],
		 (unsigned long long)want[EP_INVALID], (unsigned long long)want[EP_FAILED]);
	return false;
}

static int error_pipeline_setup(struct wl_ctx *ctx, char *err, size_t errlen)
{
	struct ep_state *st = calloc(1, sizeof(*st));

	if (!st) {
		snprintf(err, errlen, "error-pipeline: out of memory");
		return -ENOMEM;
	}
	st->n = wl_int(ctx, "n");
	st->words = calloc((size_t)st->n, sizeof(*st->words));
	if (!st->words) {
		free(st);
		snprintf(err, errlen, "error-pipeline: out of memory for n=%ld", wl_int(ctx, "n"));
		return -ENOMEM;
	}
	st->style = wl_choice(ctx, "style");
	st->exec = wl_choice(ctx, "exec");
	st->prog = &programs[st->style];
	rt_sem_init(&st->done, 0);
	st->tokens = (uint64_t)wl_int(ctx, "tokens");
	st->step_tokens = st->tokens * (uint64_t)wl_int(ctx, "tf");
	st->valid = (uint64_t)wl_int(ctx, "valid");
	st->seed = (uint64_t)wl_int(ctx, "seed");
	st->fail = wl_real(ctx, "fail");
	ctx->state = st;
	return 0;
}

/* The spin's calibration; the shares of the outcomes, as the check confirmed them; what
 * an error carried: frames per recorded error is the backtrace that raise captures and
 * the other styles do not; and the futures a pipeline submitted (pool: its links). */
static size_t error_pipeline_report(struct wl_ctx *ctx, struct wl_metric *out, size_t max)
{
	const struct ep_state *st = ctx->state;
	double all = (double)(st->counts[EP_OK] + st->counts[EP_INVALID] + st->counts[EP_FAILED]);
	size_t n = 0;

	wl__consume_cpu_metric(out, &n, max);
	wl_metric_add(out, &n, max, "invalid_share", "%",
		      all ? 100.0 * (double)st->counts[EP_INVALID] / all : 0);
	wl_metric_add(out, &n, max, "failed_share", "%",
		      all ? 100.0 * (double)st->counts[EP_FAILED] / all : 0);
	wl_metric_add(out, &n, max, "frames_per_error", "frames",
		      st->errors ? (double)st->frames / (double)st->errors : 0);
	wl_metric_add(out, &n, max, "submissions_per_pipeline", "tasks",
		      st->pipelines ? (double)st->submitted / (double)st->pipelines : 0);
	return n;
}

static void error_pipeline_teardown(struct wl_ctx *ctx)
{
	struct ep_state *st = ctx->state;

	if (st) {
		rt_sem_destroy(&st->done);
		free(st->words);
	}
	free(st);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	/* the order of enum ep_style and enum ep_exec */
	{ "style", WL_CHOICE, "value", 0, 0, "value,combinator,raise,raise-notrace,typed",
	  "how a failure travels: either words checked by hand, an either transformer's "
	  "closures and extra steps, raised with a backtrace, raised without one, a typed "
	  "error channel (a failed IO carrying a value)" },
	{ "exec", WL_CHOICE, "pool", 0, 0, "pool,loop,zio",
	  "pool: a future per step, each a task submitted by the one before; loop: one IO "
	  "value through the effect interpreter, one async boundary; zio: the same run loop, "
	  "the outside world inside a blocking section (-c blocking=offload: ZIO's two hops)" },
	{ "n", WL_INT, "1000", 1, 1000000, NULL,
	  "pipelines per op, in sequence (the study's ns/op is per pipeline: 1e9 / (ops/s x n))" },
	{ "tf", WL_INT, "2", 1, 100000, NULL,
	  "work factor: fetch, the outside world and the last step spend tf x tokens each" },
	{ "tokens", WL_INT, "10", 0, 1000000, NULL, "units of consume_cpu the transform spends" },
	{ "fail", WL_REAL, "0.1", 0, 1, NULL, "probability that the outside world fails" },
	{ "valid", WL_INT, "80", 0, 100, NULL,
	  "validity threshold: an input in [0,100) below it is valid" },
	{ "seed", WL_INT, "1", 0, 4294967295.0, NULL, "seed of the inputs and failures" },
	{ 0 },
};

const struct wl_desc wl_error_pipeline = {
	.name = "error-pipeline",
	.summary = "n pipelines in sequence, each validating, transforming, fetching, calling "
		   "the outside world, then recording the failure or processing the output, in "
		   "one error style and one way to run (futures, an IO run loop, ZIO)",
	.unit = "ops/s",
	.params = params,
	.setup = error_pipeline_setup,
	.op = error_pipeline_op,
	.check = error_pipeline_check,
	.teardown = error_pipeline_teardown,
	.report = error_pipeline_report,
};
