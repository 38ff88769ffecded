/*
 * error-pipeline: n pipelines per op, in one of four error styles and two ways to run.
 *
 * Study 3's pipeline: take an input in [0,100) (from `seed` and the pipeline's number,
 * so any pipeline can be replayed alone); validate it (valid below `valid`); transform
 * it (`tokens` units of consume_cpu); fetch data and call the outside world, which
 * fails with probability `fail`; then record the failure (an invalid input or a failed
 * call) or process the output. Fetch, the outside world and the last step spend tf x tokens each.
 *
 * Styles, which differ only in how a failure travels:
 *   value          each step returns an either word and the next checks it by hand;
 *   combinator     the same steps as closures (a function pointer and what it captured,
 *                  allocated per pipeline) run by a generic flat-map and a fold;
 *   raise          a failing step raises an error object that captured the stack
 *                  (rt_raise: the phase word says STACKCAP while it captures);
 *   raise-notrace  the same raise with an error that captured nothing.
 * Value and combinator failures carry an error object too, made without a trace, so
 * the styles differ by the capture and the jump, not by what they allocate.
 *
 * Execution: `pool` submits each of the five steps as its own task and joins it (a
 * future per step: a failure travels from task to task as a failed result, and the
 * steps after it do nothing); `loop` runs the pipeline as one IO value through the
 * effect interpreter, in the op's task, with one async boundary (a yield) before the
 * outside-world call.
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
enum ep_style { EP_VALUE, EP_COMBINATOR, EP_RAISE, EP_NOTRACE };
enum ep_exec { EP_POOL, EP_LOOP };

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

/* ---- the state, the inputs and the pure part of each step ------------------------------- */

struct ep_state {
	long style, exec;
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

/* One pipeline in flight: what every step of it is handed. */
struct ep_run {
	struct ep_state *st;
	struct ep_input in;
	struct ep_closure *cl; /* combinator: the pipeline's closures */
	struct ep_env {
		struct ep_run *run;
		enum ep_step step;
	} env[EP_STEPS];
};

/* Step s (before EP_FINISH) on v: its work, then its value in *out, or false with the
 * code it fails with. */
static bool ep_work(struct ep_run *run, enum ep_step s, uint64_t v, uint64_t *out, int *code)
{
	const struct ep_state *st = run->st;

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
		consume_cpu(st->step_tokens);
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

/* ---- value: hand-written checks on either words ----------------------------------------- */

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

/* One step of either kind of execution, in the op's style: w is the previous step's
 * either word (raise: a plain value). */
static uint64_t ep_step(struct ep_run *run, enum ep_step s, uint64_t w)
{
	switch (run->st->style) {
	case EP_VALUE:
		return s == EP_FINISH ? ep_value_finish(run, w) : ep_value_step(run, s, w);
	case EP_COMBINATOR:
		if (s == EP_FINISH)
			return either_fold(w, &run->cl[EP_FINISH], &run->cl[EP_FINISH + 1]);
		return either_flat_map(w, &run->cl[s]);
	default: /* the last step is the handler: w is a value, or (pool) a caught error */
		return s == EP_FINISH ? ep_value_finish(run, w) : ep_raise_step(run, s, w);
	}
}

/* ---- pool: a task per step -------------------------------------------------------------- */

struct ep_task {
	struct ep_run *run;
	enum ep_step step;
	uint64_t w; /* the previous step's either word */
};

static uint64_t ep_raise_body(void *arg)
{
	struct ep_task *t = arg;

	return ep_raise_step(t->run, t->step, t->w);
}

static uint64_t ep_pool_task(void *arg)
{
	struct ep_task *t = arg;
	struct rt_result r;

	if (t->run->st->style < EP_RAISE)
		return ep_step(t->run, t->step, t->w);
	/* a failed future hands its error on without running the step, and the last step
	 * is the handler, which records what an earlier step raised */
	if (t->step == EP_FINISH)
		return ep_step(t->run, t->step, t->w);
	if (ep_is_left(t->w))
		return t->w;
	r = rt_try(ep_raise_body, t);
	return r.ok ? r.value : ep_left(r.err);
}

static uint64_t ep_pool(struct ep_run *run)
{
	struct ep_task t = { .run = run, .w = run->in.x };

	for (t.step = EP_VALIDATE; t.step < EP_STEPS; t.step++) {
		struct rt_task *task = rt_spawn(ep_pool_task, &t);

		if (!task) {
			if (ep_is_left(t.w))
				rt_error_free(ep_error(t.w));
			return EP_BROKEN;
		}
		t.w = rt_join(task);
	}
	return t.w;
}

/* ---- loop: one IO value through the interpreter ------------------------------------------ */

static uint64_t ep_fx_step(uint64_t w, void *arg)
{
	struct ep_env *env = arg;

	return ep_step(env->run, env->step, w); /* raise: the interpreter catches it */
}

/* The one async boundary, before the outside world. */
static struct fx_io *ep_fx_outside(uint64_t w, void *arg)
{
	return fx_async(fx_map(fx_pure(w), ep_fx_step, arg));
}

/* The last step. Value and combinator failures are either words, so a failed run here
 * is the interpreter's own (out of memory), or, raising, a step's error: recorded. */
static struct fx_io *ep_fx_finish(struct rt_result r, void *arg)
{
	struct ep_env *env = arg;

	if (r.ok)
		return fx_pure(ep_step(env->run, EP_FINISH, r.value));
	if (env->run->st->style >= EP_RAISE)
		return fx_pure(ep_record_failure(env->run, r.err));
	rt_error_free(r.err);
	return fx_pure(EP_BROKEN);
}

static uint64_t ep_loop(struct ep_run *run)
{
	struct fx_io *io = fx_pure(run->in.x);
	struct rt_result r;

	/* a failed constructor leaves NULL, which the next consumes and fx_run reports */
	io = fx_map(io, ep_fx_step, &run->env[EP_VALIDATE]);
	io = fx_map(io, ep_fx_step, &run->env[EP_TRANSFORM]);
	io = fx_map(io, ep_fx_step, &run->env[EP_FETCH]);
	io = fx_flat_map(io, ep_fx_outside, &run->env[EP_OUTSIDE]);
	io = fx_attempt(io, ep_fx_finish, &run->env[EP_FINISH]);
	r = fx_run(io, FX_STACK);
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
	if (st->style == EP_COMBINATOR && !(run.cl = ep_closures(&run)))
		return EP_BROKEN;
	w = st->exec == EP_POOL ? ep_pool(&run) : ep_loop(&run);
	rt_free(run.cl);
	return w;
}

#define EP_FOLD_START 0xcbf29ce484222325ull

static uint64_t ep_fold(uint64_t h, uint64_t w)
{
	return (h ^ w) * 0x100000001b3ull;
}

/* n pipelines in sequence, each awaited before the next begins; the fold of their words,
 * which are kept for the check. */
static uint64_t error_pipeline_op(struct wl_ctx *ctx)
{
	struct ep_state *st = ctx->state;
	uint64_t h = EP_FOLD_START;

	st->first = st->next;
	for (st->ran = 0; st->ran < st->n;) {
		uint64_t w = ep_pipeline(st, st->next++);

		st->words[st->ran++] = w;
		if (w == EP_BROKEN)
			break;
		h = ep_fold(h, w);
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
	uint64_t h = EP_FOLD_START, got[EP_OUTCOMES] = { 0 }, want[EP_OUTCOMES] = { 0 };
	char got_s[96] = "not run", want_s[96];
	long bad = -1;

	for (long j = 0; j < st->n; j++) {
		uint64_t w = ep_replay(st, st->first + (uint64_t)j);

		want[w & 3]++;
		h = ep_fold(h, w);
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
	st->tokens = (uint64_t)wl_int(ctx, "tokens");
	st->step_tokens = st->tokens * (uint64_t)wl_int(ctx, "tf");
	st->valid = (uint64_t)wl_int(ctx, "valid");
	st->seed = (uint64_t)wl_int(ctx, "seed");
	st->fail = wl_real(ctx, "fail");
	ctx->state = st;
	return 0;
}

/* The spin's calibration; the shares of the outcomes, as the check confirmed them; and
 * what an error carried: frames per recorded error is the backtrace that raise
 * captures and the other styles do not. */
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
	return n;
}

static void error_pipeline_teardown(struct wl_ctx *ctx)
{
	struct ep_state *st = ctx->state;

	if (st)
		free(st->words);
	free(st);
	ctx->state = NULL;
}

static const struct wl_param params[] = {
	/* the order of enum ep_style and enum ep_exec */
	{ "style", WL_CHOICE, "value", 0, 0, "value,combinator,raise,raise-notrace",
	  "how a failure travels: either words checked by hand, closures run by a generic "
	  "flat-map, raised with a backtrace, raised without one" },
	{ "exec", WL_CHOICE, "pool", 0, 0, "pool,loop",
	  "pool: each step a task, joined; loop: one task through the effect interpreter, "
	  "one async boundary" },
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
		   "one error style and one way to run",
	.unit = "ops/s",
	.params = params,
	.setup = error_pipeline_setup,
	.op = error_pipeline_op,
	.check = error_pipeline_check,
	.teardown = error_pipeline_teardown,
	.report = error_pipeline_report,
};
