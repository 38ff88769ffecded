/*
 * The runtime probe against spawn-join run by the harness: its exact counts of the
 * runtime's USDT events equal the runtime's own counters for spawn, run, steal and park
 * over the measured iterations; timeline.json parses as Chrome trace events with spans
 * on every worker; a timeline cut at its cap says how much; and a ring buffer one page
 * long behind a reader that takes nothing until the end drops events, counted so that
 * delivered plus dropped is what the runtime's counters say was produced.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/harness.h"
#include "probes/probes.h"

static const char *schedlab_binary(void)
{
	static char path[PATH_MAX];
	const char *build = getenv("SCHEDLAB_BUILD");

	snprintf(path, sizeof(path), "%s/schedlab", build ? build : "build");
	cr_assert_eq(access(path, X_OK), 0, "%s must be built first (make)", path);
	return path;
}

static void need_bpf(void)
{
	char why[256];

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
}

/* spawn-join, one fork, two short measured iterations: thousands of spawns and joins
 * even with every event trapped */
static void small_spec(struct hx_spec *s)
{
	char err[512];

	cr_assert_eq(hx_spec_init(s, "spawn-join", NULL, err, sizeof(err)), 0, "%s", err);
	s->opt.forks = 1;
	s->opt.warmup = 1;
	s->opt.iterations = 2;
	s->opt.time_s = 0.15;
}

static char *temp_dir(void)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/schedlab-rtprobe-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static void remove_dir(const char *dir)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/timeline.json", dir);
	unlink(path);
	rmdir(dir);
}

/* The part's result.json members, read back as one JSON object. */
static json_object *part_json(const struct an_probe_part *part)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_object *o;

	cr_assert_not_null(f);
	fputs("{\"name\": \"runtime\"", f);
	part->json(f, part->data);
	fputs("}", f);
	fclose(f);
	o = json_tokener_parse(buf);
	cr_assert_not_null(o, "not JSON: %s", buf);
	free(buf);
	return o;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\"", key);
	return v;
}

static int64_t num(json_object *o, const char *key)
{
	return json_object_get_int64(get(o, key));
}

/* Run spec under the runtime probe alone, with the timeline's cap; the probe set is
 * left finished into dir for the caller to look at, then closed by it. */
static void run_probed(struct hx_spec *spec, unsigned cap, unsigned ring_bytes,
		       struct hx_probeset *set, struct hx_result *res, const char *dir)
{
	struct hx_probe_config cfg = { .measure_s = spec->opt.iterations * spec->opt.time_s,
				       .forks = spec->opt.forks, .timeline_events = cap,
				       .ring_bytes = ring_bytes };
	struct hx_hooks hooks;
	char err[512];

	cr_assert_eq(hx_probeset_open(set, NULL, 1u << HX_PROBE_RUNTIME, &cfg, err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(set->n, 1);
	cr_assert_not_null(set->probes[0].state, "%s", set->probes[0].status);
	hx_probeset_hooks(set, &hooks);
	cr_assert_eq(hx_run(spec, schedlab_binary(), &hooks, res, NULL), 0, "%s", res->error);
	hx_probeset_observe(set, res);
	cr_assert_eq(hx_probeset_finish(set, dir), 0, "%s", set->probes[0].status);
}

/* Each check of the part is an agreement with nothing dropped; returns the count of
 * spawns it saw. */
static int64_t expect_agreement(json_object *o, const struct hx_result *res)
{
	json_object *checks = get(o, "check");
	int64_t spawned = -1;

	cr_assert_eq(num(get(o, "lost"), "ring_buffer"), 0, "nothing is dropped at this rate");
	cr_assert_eq(json_object_array_length(checks), 5);
	for (size_t i = 0; i < json_object_array_length(checks); i++) {
		json_object *c = json_object_array_get_idx(checks, i);
		const char *name = json_object_get_string(get(c, "counter"));

		/* parks too, though workers park just as the counters are read: a park's
		 * count and event are one step beside the read (rt_sched_stats_edge) */
		cr_expect(json_object_get_boolean(get(c, "agree")),
			  "%s: %lld events, runtime %lld", name, (long long)num(c, "events"),
			  (long long)num(c, "runtime"));
		cr_expect_eq(num(c, "events"), num(c, "runtime"), "%s", name);
		if (!strcmp(name, "spawned")) {
			spawned = num(c, "events");
			cr_expect_eq((uint64_t)spawned, res->rt.spawned);
		}
		if (!strcmp(name, "parks"))
			cr_expect_eq((uint64_t)num(c, "runtime"), res->rt.parks);
	}
	return spawned;
}

/* A span, in ns, on one thread. */
struct span {
	int64_t tid, from, to;
};

static int by_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	if (x->from != y->from)
		return (x->from > y->from) - (x->from < y->from);
	return (x->to < y->to) - (x->to > y->to); /* the enclosing one first */
}

/* Spans on one thread nest (as complete events must, for the viewers to stack them): a
 * span that starts inside another ends inside it. */
static void expect_nested(struct span *sp, size_t n)
{
	int64_t open[64];
	size_t depth = 0;

	qsort(sp, n, sizeof(*sp), by_start);
	for (size_t i = 0; i < n; i++) {
		if (i && sp[i].tid != sp[i - 1].tid)
			depth = 0;
		while (depth && open[depth - 1] <= sp[i].from)
			depth--;
		cr_expect(!depth || sp[i].to <= open[depth - 1],
			  "tid %lld: a span [%lld, %lld] ns crosses the end of its parent at %lld",
			  (long long)sp[i].tid, (long long)sp[i].from, (long long)sp[i].to,
			  (long long)open[depth - 1]);
		cr_assert_lt(depth, 64);
		open[depth++] = sp[i].to;
	}
}

Test(runtime_probe, counts_equal_the_runtimes_counters_and_the_timeline_has_every_worker,
     .timeout = 120)
{
	struct hx_probeset set;
	struct hx_result res;
	struct hx_spec spec;
	char *dir = temp_dir(), path[128];
	json_object *o, *tl, *evs;
	bool named[RT_MAX_WORKERS] = { false }, ran[RT_MAX_WORKERS] = { false };
	int64_t spawned;
	size_t spans = 0, instants = 0;
	struct span *sp;
	int fork_pid = -1;

	need_bpf();
	small_spec(&spec);
	/* The default cap (HX_TIMELINE_EVENTS) holds this run only where a uprobe trap is
	 * slow: about 195,000 events came in 0.45 s on a machine whose traps take ~2 us.
	 * Ten million is more than a trap of any speed leaves room for. */
	run_probed(&spec, 10000000, 0, &set, &res, dir);
	o = part_json(&set.parts[0]);
	spawned = expect_agreement(o, &res);
	/* spawn-join: n spawns an op */
	cr_expect_eq((uint64_t)spawned, res.ops * 1000, "%lld spawns in %llu ops",
		     (long long)spawned, (unsigned long long)res.ops);
	cr_expect_gt(spawned, 0);
	cr_expect_eq(num(get(o, "events"), "window"), 2, "one window, opened and closed");
	cr_expect_eq(json_object_array_length(get(get(o, "lost"), "per_cpu")),
		     (size_t)libbpf_num_possible_cpus());
	cr_expect_eq(num(get(o, "timeline"), "events_cut"), 0, "%lld events cut of %lld records",
		     (long long)num(get(o, "timeline"), "events_cut"),
		     (long long)num(get(o, "timeline"), "records"));

	snprintf(path, sizeof(path), "%s/timeline.json", dir);
	tl = json_object_from_file(path);
	cr_assert_not_null(tl, "%s does not parse", path);
	evs = get(tl, "traceEvents");
	cr_assert_gt(json_object_array_length(evs), 0);
	sp = calloc(json_object_array_length(evs), sizeof(*sp));
	cr_assert_not_null(sp);
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		json_object *e = json_object_array_get_idx(evs, i), *args;
		const char *ph = json_object_get_string(get(e, "ph"));
		const char *name = json_object_get_string(get(e, "name"));
		unsigned w;

		if (fork_pid < 0)
			fork_pid = (int)num(e, "pid");
		cr_expect_eq(num(e, "pid"), fork_pid, "one fork: one pid");
		if (!strcmp(ph, "M") && !strcmp(name, "thread_name") &&
		    sscanf(json_object_get_string(get(get(e, "args"), "name")), "worker %u", &w) == 1 &&
		    w < RT_MAX_WORKERS)
			named[w] = true;
		if (!strcmp(ph, "X")) {
			sp[spans].tid = num(e, "tid");
			sp[spans].from = llround(json_object_get_double(get(e, "ts")) * 1000);
			sp[spans].to = sp[spans].from +
				       llround(json_object_get_double(get(e, "dur")) * 1000);
			spans++;
			cr_expect_geq(json_object_get_double(get(e, "dur")), 0);
			cr_expect_geq(json_object_get_double(get(e, "ts")), 0);
			args = get(e, "args");
			/* one name for every task's run, the task an arg: a viewer groups them */
			cr_expect(strncmp(name, "task ", 5), "a slice named by its task: %s", name);
			if (!strcmp(name, "task") && json_object_object_get_ex(args, "worker", NULL) &&
			    json_object_get_type(get(args, "worker")) == json_type_int &&
			    num(args, "worker") < RT_MAX_WORKERS)
				ran[num(args, "worker")] = true;
		}
		if (!strcmp(ph, "i")) {
			instants++;
			cr_expect(strncmp(name, "steal from", 10), "a steal named by its victim");
			/* a path is a word, as the knobs spell it */
			if (json_object_object_get_ex(get(e, "args"), "path", NULL))
				cr_expect_eq(json_object_get_type(get(get(e, "args"), "path")),
					     json_type_string, "path %s",
					     json_object_get_string(get(get(e, "args"), "path")));
		}
	}
	cr_expect_gt(spans, 0);
	expect_nested(sp, spans);
	free(sp);
	cr_expect_gt(instants, 0, "spawns and steals are instants");
	cr_assert_gt(res.workers, 0);
	for (unsigned w = 0; w < res.workers; w++) {
		cr_expect(named[w], "worker %u has no thread_name", w);
		cr_expect(ran[w], "worker %u ran no task in the timeline", w);
	}
	json_object_put(tl);
	json_object_put(o);
	hx_probeset_close(&set);
	hx_result_free(&res);
	remove_dir(dir);
}

/* --overhead: forks without the probe interleaved with forks with it. The probe's counts
 * are set beside the probed forks' counters alone, and its events per op over their ops:
 * an unprobed fork's spawns counted with them would be hundreds of times more. */
Test(runtime_probe, under_overhead_the_counts_are_the_probed_forks, .timeout = 120)
{
	struct hx_probe_config cfg = { .timeline_events = 10000000 };
	struct hx_alternate alt;
	struct hx_hooks inner, hooks;
	struct hx_probeset set;
	struct an_summary off;
	struct hx_result res;
	struct hx_spec spec;
	char *dir = temp_dir(), err[512];
	json_object *o;
	int64_t spawned;

	need_bpf();
	small_spec(&spec);
	spec.opt.forks = 2;
	cfg.measure_s = spec.opt.iterations * spec.opt.time_s;
	cfg.forks = spec.opt.forks;
	cr_assert_eq(hx_probeset_open(&set, NULL, 1u << HX_PROBE_RUNTIME, &cfg, err, sizeof(err)),
		     0, "%s", err);
	cr_assert_not_null(set.probes[0].state, "%s", set.probes[0].status);
	hx_probeset_hooks(&set, &inner);
	hx_alternate_hooks(&alt, &inner, &hooks);
	cr_assert_eq(hx_run(&spec, schedlab_binary(), &hooks, &res, NULL), 0, "%s", res.error);
	cr_assert_eq(hx_result_split_alternate(&res, spec.opt.iterations, &off), 0);
	hx_probeset_observe(&set, &res);
	cr_assert_eq(hx_probeset_finish(&set, dir), 0, "%s", set.probes[0].status);
	o = part_json(&set.parts[0]);
	spawned = expect_agreement(o, &res);
	cr_expect_eq((uint64_t)spawned, res.ops * 1000, "%lld spawns in %llu ops",
		     (long long)spawned, (unsigned long long)res.ops);
	cr_expect_eq(num(get(o, "events"), "window"), 2, "one probed fork, one window");
	cr_expect_gt(off.mean, res.summary.mean, "the fork without traps is the faster");
	json_object_put(o);
	hx_probeset_close(&set);
	hx_result_free(&res);
	remove_dir(dir);
}

Test(runtime_probe, a_timeline_cut_at_its_cap_says_how_much_and_the_counts_stay_exact,
     .timeout = 120)
{
	struct hx_probeset set;
	struct hx_result res;
	struct hx_spec spec;
	char *dir = temp_dir(), path[128];
	json_object *o, *tl, *evs, *t;
	int64_t cut = -1, delivered;
	bool marked = false;

	need_bpf();
	small_spec(&spec);
	run_probed(&spec, 500, 0, &set, &res, dir);
	o = part_json(&set.parts[0]);
	expect_agreement(o, &res);
	t = get(o, "timeline");
	delivered = num(o, "delivered");
	cr_expect_eq(num(t, "cap_per_fork"), 500);
	cr_expect_gt(num(o, "window_ns"), 0, "the window's marks are counted past the cap");
	cr_expect_eq(num(t, "events_cut"), delivered - 500, "%lld delivered",
		     (long long)delivered);
	cr_expect(strstr(set.parts[0].summary, "cut"), "%s", set.parts[0].summary);

	snprintf(path, sizeof(path), "%s/timeline.json", dir);
	tl = json_object_from_file(path);
	cr_assert_not_null(tl, "%s does not parse", path);
	evs = get(tl, "traceEvents");
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		json_object *e = json_object_array_get_idx(evs, i);

		if (!strcmp(json_object_get_string(get(e, "name")), "[truncated]")) {
			marked = true;
			cut = num(get(e, "args"), "events");
		}
	}
	cr_expect(marked, "no [truncated] event in the timeline");
	cr_expect_eq(cut, delivered - 500);
	json_object_put(tl);
	json_object_put(o);
	hx_probeset_close(&set);
	hx_result_free(&res);
	remove_dir(dir);
}

/* ---- forced drops ------------------------------------------------------------------------- */

struct tally {
	struct probe_runtime *p;
	uint64_t window[PROBE_RT_NKINDS];    /* delivered inside the window */
	uint64_t on_worker[PROBE_RT_NKINDS]; /* of those, from a worker */
	uint64_t all;
	uint64_t dropped[PROBE_RT_NKINDS][2];
	uint64_t *per_cpu;
	int starts, stops;
};

static void count(const struct probe_rt_event *e, void *ctx)
{
	struct tally *t = ctx;

	t->all++;
	if (e->kind < PROBE_RT_NKINDS && e->in_window) {
		t->window[e->kind]++;
		t->on_worker[e->kind] += e->worker != RT_NO_WORKER;
	}
}

static int tally_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct tally *t = ctx;
	char err[256];
	int r;

	(void)tls_off;
	r = probe_runtime_start(t->p, pid, NULL, err, sizeof(err));
	cr_assert_eq(r, 0, "%s", err);
	t->starts++;
	return r;
}

static int tally_end(void *ctx, pid_t pid)
{
	struct tally *t = ctx;

	(void)pid;
	t->stops++;
	cr_assert_eq(probe_runtime_stop(t->p), 0);
	return probe_runtime_drops(t->p, t->per_cpu, t->dropped);
}

Test(runtime_probe, a_full_ring_drops_what_the_counters_say_was_not_delivered, .timeout = 120)
{
	struct probe_runtime_opts o = { .ring_bytes = 4096, .hold_reader = true, .fn = count };
	struct tally t = { 0 };
	struct hx_hooks hooks = { .ctx = &t, .measure_begin = tally_begin, .measure_end = tally_end };
	struct hx_result res;
	struct hx_spec spec;
	uint64_t cpu_sum = 0, kind_sum = 0, parks_seen;
	char err[256];
	int ncpus;

	need_bpf();
	small_spec(&spec);
	o.ctx = &t;
	t.p = probe_runtime_open(&o, err, sizeof(err));
	cr_assert_not_null(t.p, "%s", err);
	cr_assert_eq(probe_runtime_ring_bytes(t.p), 4096, "one page, as asked");
	ncpus = probe_runtime_ncpus(t.p);
	t.per_cpu = calloc(ncpus, sizeof(*t.per_cpu));
	cr_assert_not_null(t.per_cpu);
	cr_assert_eq(hx_run(&spec, schedlab_binary(), &hooks, &res, NULL), 0, "%s", res.error);
	cr_assert_eq(t.starts, 1);
	cr_assert_eq(t.stops, 1);
	/* a page holds 73 records: what is past them was dropped, and counted */
	cr_expect_leq(t.all, 4096 / 56);
	cr_expect_gt(t.dropped[PROBE_RT_SPAWN][1], 0, "spawns dropped in the window");
	/* what the runtime produced = delivered + dropped, kind by kind (spawn-join spawns
	 * and parks only on workers) */
	cr_expect_eq(res.rt.spawned, t.on_worker[PROBE_RT_SPAWN] + t.dropped[PROBE_RT_SPAWN][1],
		     "spawned %llu, delivered %llu, dropped %llu",
		     (unsigned long long)res.rt.spawned,
		     (unsigned long long)t.on_worker[PROBE_RT_SPAWN],
		     (unsigned long long)t.dropped[PROBE_RT_SPAWN][1]);
	cr_expect_eq(res.rt.tasks_run,
		     t.on_worker[PROBE_RT_RUN_BEGIN] + t.dropped[PROBE_RT_RUN_BEGIN][1]);
	cr_expect_eq(res.rt.steals, t.window[PROBE_RT_STEAL] + t.dropped[PROBE_RT_STEAL][1]);
	/* Parks happen as the window closes, the last op's workers going idle while the
	 * harness reads the counters; a park's count and event are one step beside the
	 * read, so they agree exactly too. */
	parks_seen = t.window[PROBE_RT_PARK] + t.dropped[PROBE_RT_PARK][1];
	cr_expect_eq(parks_seen, res.rt.parks, "parks: %llu counted, %llu events",
		     (unsigned long long)res.rt.parks, (unsigned long long)parks_seen);
	/* the per-CPU counts and the per-kind ones are the same drops */
	for (int c = 0; c < ncpus; c++)
		cpu_sum += t.per_cpu[c];
	for (unsigned k = 0; k < PROBE_RT_NKINDS; k++)
		kind_sum += t.dropped[k][0] + t.dropped[k][1];
	cr_expect_eq(cpu_sum, kind_sum);
	cr_expect_gt(cpu_sum, 0);
	/* read and zeroed: a second read finds none */
	memset(t.per_cpu, 0, ncpus * sizeof(*t.per_cpu));
	cr_expect_eq(probe_runtime_drops(t.p, t.per_cpu, NULL), 0);
	for (int c = 0; c < ncpus; c++)
		cr_expect_eq(t.per_cpu[c], 0);
	free(t.per_cpu);
	probe_runtime_free(t.p);
	hx_result_free(&res);
}

/* The same drops as the run's report shows them: a one-page ring that the reader empties
 * every few milliseconds while thousands of events a second arrive. Runs until one has
 * dropped events (the first, in practice). */
Test(runtime_probe, drops_are_in_result_json_report_md_and_the_timeline, .timeout = 300)
{
	struct hx_probeset set;
	struct hx_result res;
	struct hx_spec spec;
	char *dir = temp_dir(), path[128], *md = NULL;
	json_object *o = NULL, *lost, *checks, *tl, *evs;
	int64_t dropped = 0, sum = 0, marked = -1;
	size_t mdlen = 0;
	FILE *f;

	need_bpf();
	small_spec(&spec);
	for (int tries = 0; tries < 10 && !dropped; tries++) {
		if (o) {
			json_object_put(o);
			hx_probeset_close(&set);
			hx_result_free(&res);
		}
		run_probed(&spec, 0, 4096, &set, &res, dir);
		o = part_json(&set.parts[0]);
		dropped = num(get(o, "lost"), "ring_buffer");
	}
	cr_assert_gt(dropped, 0, "a one-page ring never filled");
	cr_expect_eq(num(o, "ring_bytes"), 4096);
	lost = get(o, "lost");
	for (size_t c = 0; c < json_object_array_length(get(lost, "per_cpu")); c++)
		sum += json_object_get_int64(json_object_array_get_idx(get(lost, "per_cpu"), c));
	cr_expect_eq(sum, dropped, "the per-CPU counts are the drops");
	sum = 0;
	json_object_object_foreach(get(lost, "by_kind"), kind, v)
	{
		(void)kind;
		sum += num(v, "window") + num(v, "outside");
	}
	cr_expect_eq(sum, dropped, "the per-kind counts are the drops");
	/* produced = delivered + dropped, and a check with drops of its kind does not agree
	 * or disagree */
	checks = get(o, "check");
	for (size_t i = 0; i < json_object_array_length(checks); i++) {
		json_object *c = json_object_array_get_idx(checks, i);
		const char *name = json_object_get_string(get(c, "counter"));

		if (strcmp(name, "stolen"))
			cr_expect_eq(num(c, "events") + num(c, "dropped"), num(c, "runtime"), "%s",
				     name);
		if (num(c, "dropped"))
			cr_expect(json_object_is_type(get(c, "agree"), json_type_null), "%s", name);
		else
			cr_expect(json_object_get_boolean(get(c, "agree")), "%s", name);
	}
	cr_expect(strstr(set.parts[0].summary, "dropped"), "%s", set.parts[0].summary);

	f = open_memstream(&md, &mdlen);
	cr_assert_not_null(f);
	set.parts[0].md(f, set.parts[0].data);
	fclose(f);
	cr_expect(strstr(md, "events dropped** (ring buffer full)"), "%s", md);
	cr_expect(strstr(md, "not comparable"), "%s", md);
	free(md);

	snprintf(path, sizeof(path), "%s/timeline.json", dir);
	tl = json_object_from_file(path);
	cr_assert_not_null(tl, "%s does not parse", path);
	evs = get(tl, "traceEvents");
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		json_object *e = json_object_array_get_idx(evs, i);

		if (!strcmp(json_object_get_string(get(e, "name")), "[lost: ring buffer]"))
			marked = num(get(e, "args"), "events");
	}
	cr_expect_eq(marked, dropped, "the timeline marks the drops");
	json_object_put(tl);
	json_object_put(o);
	hx_probeset_close(&set);
	hx_result_free(&res);
	remove_dir(dir);
}
