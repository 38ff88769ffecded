/*
 * schedlab run: run workloads on the runtime under the probes, each workload under each
 * preset through the harness's pipeline (harness/pipeline.c: the forks, the run folder
 * results/<run-id>/ with result.json, report.md, oncpu.folded and oncpu.svg, the findings,
 * results/latest), and print a table in the studies' form. What is here is the command:
 * its options, the checks before anything runs, the table, --baseline, the exit status.
 *
 * Everything the user typed is validated before the first fork starts, so a typo in
 * the second workload's parameter does not cost the first workload's minute.
 *
 * SIGINT or SIGTERM stops the fork in flight (harness/controller.c) and writes what was
 * measured, marked "partial" in result.json, then exits 130; a second signal also stops
 * the writing (analysis/files.c removes the temporary file) and latest stays as it was.
 */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "harness/harness.h"

#define MAX_WORKLOADS 32
#define MAX_PRESETS 16
#define MAX_PARAMS    64

static const char doc[] =
	"Run each WORKLOAD on the task runtime under the probes: fresh processes (forks) run "
	"warm-up iterations, then measured iterations of fixed time; the score is the mean "
	"throughput ± the 99.9% confidence-interval half-width (Student's t, n - 1 degrees of "
	"freedom) over every measured iteration. The on-CPU probe samples the forks only while "
	"they measure, and each run gets result.json, report.md, oncpu.folded and an "
	"interactive oncpu.svg in results/<run-id>/ (results/latest is the newest).\n\n"
	"Every sample's category (the root frame of oncpu.folded) comes from the runtime's "
	"phase word on its threads, and from the stack rules (analysis/categories.rules) on "
	"any other thread; report.md checks the phase word against each sample's own stack. "
	"User stacks are walked by frame pointers, and in the default --call-graph auto a "
	"sample whose walk met code built without them (Debian's glibc) or did not reach its "
	"thread's root is unwound from DWARF instead, as 'perf record --call-graph dwarf' "
	"does; report.md says how many stacks reached their thread's root, where the others "
	"broke, and what the unwinding cost.\n\n"
	"--probes runtime (opt-in) traces every USDT event of the runtime in the forks, each a "
	"uprobe trap that slows the benchmark a great deal (report.md says what an event "
	"cost): exact counts by kind, checked against the runtime's own counters, and the "
	"first --timeline-events of each fork as timeline.json.\v"
	"--probes counters counts performance events through libpfm4 over all of each fork's "
	"threads, read at the ends of every measured iteration: per op in report.md and "
	"result.json (\"counters\"), scaled where the PMU multiplexed them, with the share of "
	"time each ran; an event this machine cannot count is n/a with the reason, never 0.\n\n"
	"Examples:\n"
	"  schedlab run tcp-blocking spawn-join --preset ce,kyo,kyo-flush,kyo-tuned --warmup 2\n"
	"                                            the default job ('make run')\n"
	"  schedlab run spawn-join --quick           a first look in about two seconds\n"
	"  schedlab run workers -P rounds=256 --freq 499\n"
	"  schedlab run spawn-join --preset kyo -c workers=4\n"
	"  schedlab run spawn-join --probes none --json\n"
	"  schedlab run workers --probes oncpu,counters --events perf::task-clock,cycles\n"
	"  schedlab run bind-chain -P interpreter=naive --call-graph dwarf --stack-copy 32768\n"
	"  schedlab run workers --group task         a frame per kind of task under its thread\n"
	"  schedlab run spawn-join --quick --probes runtime\n"
	"                                            every runtime event: exact counts and\n"
	"                                            timeline.json (chrome://tracing, Perfetto)\n"
	"  schedlab run spawn-join --forks 5 --iterations 5 --time 2 --out /tmp/runs\n"
	"  schedlab run spawn-join --preset kyo --baseline results/latest\n"
	"  schedlab run bind-chain --probes oncpu,alloc --alloc-sample 64K\n"
	"                                            allocation stacks in alloc.svg\n\n"
	"With --json, stdout is one JSON document: one workload's result.json as an object, "
	"several runs' as an array of them, in the order given (each workload under each "
	"preset in turn).\n\n"
	"SIGINT or SIGTERM stops the run: what was measured so far is written, with "
	"\"partial\": true and the reason in result.json, and the exit status is 130; a second "
	"signal stops the writing too.\n\n"
	"Workloads, their parameters and the presets: 'schedlab list'. Exit status: 0 when "
	"every run succeeded, 1 when one failed (its result.json says why), 2 for bad input, "
	"130 when interrupted.";

enum {
	OPT_FORKS = 0x100,
	OPT_WARMUP,
	OPT_ITERATIONS,
	OPT_TIME,
	OPT_QUICK,
	OPT_FREQ,
	OPT_PROBES,
	OPT_JSON,
	OPT_CALL_GRAPH,
	OPT_STACK_COPY,
	OPT_BASELINE,
	OPT_OVERHEAD,
	OPT_GROUP,
	OPT_TIMELINE_EVENTS,
	OPT_MIN_BLOCK,
	OPT_WAKERS,
	OPT_OFFCPU_STACKS,
	OPT_ALLOC_SAMPLE,
	OPT_EVENTS,
	OPT_ONCPU_MAPS,
	OPT_OFFCPU_MAPS,
	OPT_RULES,
};

static const struct argp_option options[] = {
	{ "preset", 'p', "NAME[,NAME...]", 0,
	  "runtime preset (default ce; see 'schedlab list --presets'); several, comma-separated, "
	  "run every workload under each",
	  0 },
	{ "param", 'P', "NAME=VALUE", 0, "a workload parameter; repeatable (e.g. -P n=1000)", 0 },
	{ "knob", 'c', "KNOB=VALUE", 0,
	  "a runtime knob over the preset; repeatable (e.g. -c workers=4; see 'schedlab list "
	  "--knobs')",
	  0 },
	{ "forks", OPT_FORKS, "N", 0, "fresh processes per workload (default 3)", 1 },
	{ "warmup", OPT_WARMUP, "N", 0, "warm-up iterations per fork, discarded (default 3)", 1 },
	{ "iterations", OPT_ITERATIONS, "N", 0, "measured iterations per fork (default 3)", 1 },
	{ "time", OPT_TIME, "SECONDS", 0, "length of each iteration (default 1)", 1 },
	{ "quick", OPT_QUICK, NULL, 0, "1 fork, 1 x 0.2 s warm-up, 3 x 0.2 s measured", 1 },
	{ "probes", OPT_PROBES, "LIST", 0,
	  "the probes, separated by commas: oncpu (the default), offcpu, sched, runtime, alloc, "
	  "counters, all or none; `schedlab list --probes` says which can attach here", 2 },
	{ "events", OPT_EVENTS, "LIST", 0,
	  "the counters' libpfm4 events, comma-separated (default " PROBE_COUNTERS_DEFAULT
	  "; any name 'schedlab list --events' shows); an event this machine cannot count is "
	  "reported n/a with the reason",
	  2 },
	{ "freq", OPT_FREQ, "HZ", 0,
	  "on-CPU samples per second per CPU (default 999); a rate above 1000 whose sampling "
	  "would take more of a CPU than kernel.perf_cpu_time_max_percent (measured as the "
	  "probe opens) is refused",
	  2 },
	{ "call-graph", OPT_CALL_GRAPH, "MODE", 0,
	  "how user stacks are walked: fp (frame pointers), dwarf (every sample's stack copied "
	  "and unwound from DWARF CFI, as perf does), auto (default: frame pointers, DWARF where "
	  "the walk meets code built without them or does not reach its thread's root)",
	  2 },
	{ "stack-copy", OPT_STACK_COPY, "BYTES", 0,
	  "user stack a DWARF sample copies, from its stack pointer up (default 16384; 64 to "
	  "65536, a multiple of 8)",
	  2 },
	{ "oncpu-maps", OPT_ONCPU_MAPS, "STACKS,COUNTS", 0,
	  "the on-CPU probe's maps: distinct stacks and aggregated counts a fork keeps (1 to "
	  "262144 and 1 to 1048576; about 1 KiB of kernel memory a stack). By default the counts "
	  "are sized for the samples a fork's measured iterations can take, the stacks (which "
	  "repeat) for a quarter of them; a fork that fills them has its losses counted and "
	  "drawn, and report.md names the sizes",
	  2 },
	{ "rules", OPT_RULES, "FILE", 0,
	  "classify the on-CPU samples by FILE's stack rules instead of the built-in ones "
	  "('schedlab list --rules' prints those, to start from)",
	  2 },
	{ "offcpu-maps", OPT_OFFCPU_MAPS, "STACKS,COUNTS", 0,
	  "offcpu: its maps of distinct stacks and of keys (a stack pair, phase, thread name "
	  "and waker) a fork keeps (1 to 262144 and 1 to 1048576; about 1 KiB of kernel memory "
	  "a stack). By default they are sized for the fork's measured time: 256 stacks a "
	  "second, twice that with --wakers, two keys a stack, at least 1024 and 4096. "
	  "report.md says how many a fork held; one that fills them has its losses counted "
	  "and drawn",
	  2 },
	{ "group", OPT_GROUP, "BY", 0,
	  "what oncpu.folded keeps apart under each thread: thread (default), or task (the "
	  "running task's entry function, what was passed to rt_spawn, as a [task: NAME] frame)",
	  2 },
	{ "timeline-events", OPT_TIMELINE_EVENTS, "N", 0,
	  "runtime probe: the first N events of each fork drawn in timeline.json (default "
	  "100000, about 10 MB a fork; 1 to 100000000); later ones are counted, not drawn",
	  2 },
	{ "alloc-sample", OPT_ALLOC_SAMPLE, "BYTES", 0,
	  "alloc probe: one allocation stack sampled per BYTES a thread asks for (default "
	  "512K; a whole number, K, M or G for KiB, MiB, GiB; 1 to 1G)",
	  2 },
	{ "out", 'o', "DIR", 0, "where run folders go (default results)", 3 },
	{ "min-block-us", OPT_MIN_BLOCK, "US", 0,
	  "offcpu: keep off-CPU intervals of at least US microseconds (default 1); shorter "
	  "ones are counted, not kept", 2 },
	{ "wakers", OPT_WAKERS, NULL, 0,
	  "offcpu: also keep the stack of whoever woke each blocked thread, in wakers.folded "
	  "(attaches sched_wakeup too)", 2 },
	{ "offcpu-stacks", OPT_OFFCPU_STACKS, "WHICH", 0,
	  "offcpu: the stacks each switch-out (and with --wakers, each wake-up) walks: both "
	  "(default), user or kernel. The "
	  "kernel's walk is most of the probe's cost a switch; without it a preempted interval "
	  "still ends in [preempted]", 2 },
	{ "json", OPT_JSON, NULL, 0,
	  "print result.json on stdout instead of the table (an array of them for several "
	  "workloads)",
	  3 },
	{ "overhead", OPT_OVERHEAD, NULL, 0,
	  "measure what the probes cost: twice the forks, every other one (the first) without "
	  "the probes; the score and profiles are the probed forks', and the report gives with / "
	  "without as a ratio with its 99.9% interval", 2 },
	{ "baseline", OPT_BASELINE, "RUN", 0,
	  "afterwards, compare the new run with RUN, a run folder of the same workload "
	  "('schedlab compare RUN NEW'): printed, and written into the new run's folder as "
	  "compare.md, compare.json and diff.svg",
	  3 },
	{ 0 },
};

struct run_args {
	const char *workloads[MAX_WORKLOADS];
	size_t nworkloads;
	char *presets[MAX_PRESETS]; /* into preset_list */
	size_t npresets;
	char preset_list[256];
	const char *params[MAX_PARAMS];
	size_t nparams;
	const char *knobs[HX_MAX_ASSIGN];
	size_t nknobs;
	long forks, warmup, iterations; /* -1: not given */
	double time_s;                  /* < 0: not given */
	bool quick, json, oncpu;        /* oncpu: probes has HX_PROBE_ONCPU */
	bool counters;                  /* probes has HX_PROBE_COUNTERS */
	unsigned probes;                /* 1 << enum hx_probe_id */
	const char *events;             /* --events; NULL: the default list */
	long freq, stack_copy;
	long timeline_events;           /* 0: the default */
	int callgraph;
	bool group_task;                /* --group task */
	bool overhead;                  /* --overhead */
	long min_block_us;              /* offcpu: 0: not given */
	bool wakers;                    /* offcpu: --wakers */
	unsigned offcpu_stacks;         /* offcpu: PROBE_OFFCPU_*; 0: not given (both) */
	uint64_t alloc_sample;          /* --alloc-sample; 0: the probe's default */
	long oncpu_stacks, oncpu_counts; /* --oncpu-maps; 0: sized for the run */
	long offcpu_stacks_n, offcpu_counts_n; /* --offcpu-maps; 0: sized for the run */
	char oncpu_maps_sized[160];     /* how they were sized, for result.json */
	const char *out;
	const char *baseline; /* a run folder to compare each new run with; NULL: none */
	const char *rules;    /* --rules FILE; NULL: the built-in rules */
	int bad;
};

/* --oncpu-maps and --offcpu-maps at most: 256 MiB of kernel memory in stacks, and four
 * counts (keys) a stack */
#define MAPS_STACKS_MAX 262144
#define MAPS_COUNTS_MAX 1048576

/* "4096", "512K", "1M", "1G" (powers of 1024) into 1 .. 1 GiB bytes. */
static bool parse_bytes(const char *arg, uint64_t *out)
{
	static const char units[] = "KMG";
	char num[32];
	size_t n = strlen(arg);
	long v, shift = 0;
	const char *u;

	if (!n || n >= sizeof(num))
		return false;
	memcpy(num, arg, n + 1);
	if ((u = strchr(units, num[n - 1])) && *u) {
		shift = 10 * (u - units + 1);
		num[n - 1] = '\0';
	}
	if (!cli_parse_long(num, 1, 1l << 30, &v) || (v << shift) > (1l << 30))
		return false;
	*out = (uint64_t)v << shift;
	return true;
}

/* --oncpu-maps or --offcpu-maps STACKS,COUNTS into *stacks and *counts; false when
 * either is not a number in its range. */
static bool parse_maps(const char *arg, long *stacks, long *counts)
{
	const char *comma = strchr(arg, ',');
	char num[32];

	if (!comma || (size_t)(comma - arg) >= sizeof(num))
		return false;
	snprintf(num, sizeof(num), "%.*s", (int)(comma - arg), arg);
	return cli_parse_long(num, 1, MAPS_STACKS_MAX, stacks) &&
	       cli_parse_long(comma + 1, 1, MAPS_COUNTS_MAX, counts);
}

/* A bad --oncpu-maps or --offcpu-maps (opt) value: the one-line error, kept in a. */
static error_t maps_error(struct run_args *a, const char *opt, const char *arg,
			  const char *example)
{
	a->bad = cli_usage_error("--%s '%s': expected STACKS,COUNTS, from 1 to %d and 1 to %d, "
				 "e.g. --%s %s", opt, arg, MAPS_STACKS_MAX, MAPS_COUNTS_MAX, opt,
				 example);
	return EINVAL;
}

/* --preset NAME[,NAME...] into a->presets (pointing into a->preset_list). */
static error_t parse_presets(struct run_args *a, const char *arg)
{
	if (strlen(arg) >= sizeof(a->preset_list)) {
		a->bad = cli_usage_error("--preset '%.40s...': too long", arg);
		return EINVAL;
	}
	strcpy(a->preset_list, arg);
	a->npresets = 0;
	for (char *tok, *save = NULL, *str = a->preset_list;
	     (tok = strtok_r(str, ",", &save)); str = NULL) {
		if (a->npresets == MAX_PRESETS) {
			a->bad = cli_usage_error("--preset: at most %d presets", MAX_PRESETS);
			return EINVAL;
		}
		a->presets[a->npresets++] = tok;
	}
	if (!a->npresets || arg[0] == ',' || arg[strlen(arg) - 1] == ',' ||
	    strstr(arg, ",,")) {
		a->bad = cli_usage_error("--preset '%s': expected NAME or NAME,NAME,... "
					 "(see 'schedlab list --presets')", arg);
		return EINVAL;
	}
	return 0;
}

/* The options of the probes (which, how they sample, their maps and filters), or
 * ARGP_ERR_UNKNOWN for any other key. */
static error_t parse_probe_option(struct run_args *a, int key, char *arg)
{
	switch (key) {
	case OPT_FREQ:
		a->bad = cli_parse_freq(arg, &a->freq);
		return a->bad ? EINVAL : 0;
	case OPT_CALL_GRAPH:
		a->bad = cli_parse_call_graph(arg, &a->callgraph);
		return a->bad ? EINVAL : 0;
	case OPT_STACK_COPY:
		if (!cli_parse_long(arg, 64, PROBE_STACK_COPY_MAX, &a->stack_copy) ||
		    a->stack_copy % 8) {
			a->bad = cli_usage_error("--stack-copy '%s': expected bytes from 64 to %d, a "
						 "multiple of 8, e.g. --stack-copy 16384",
						 arg, PROBE_STACK_COPY_MAX);
			return EINVAL;
		}
		return 0;
	case OPT_GROUP:
		if (strcmp(arg, "thread") && strcmp(arg, "task")) {
			a->bad = cli_usage_error("--group '%s': the groupings are thread and task",
						 arg);
			return EINVAL;
		}
		a->group_task = !strcmp(arg, "task");
		return 0;
	case OPT_TIMELINE_EVENTS:
		if (!cli_parse_long(arg, 1, 100000000, &a->timeline_events)) {
			a->bad = cli_usage_error("--timeline-events '%s': expected events per fork "
						 "from 1 to 100000000, e.g. --timeline-events 100000",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_EVENTS:
		a->events = arg;
		return 0;
	case OPT_RULES:
		a->rules = arg;
		return 0;
	case OPT_ONCPU_MAPS:
		if (!parse_maps(arg, &a->oncpu_stacks, &a->oncpu_counts))
			return maps_error(a, "oncpu-maps", arg, "16384,40960");
		return 0;
	case OPT_OFFCPU_MAPS:
		if (!parse_maps(arg, &a->offcpu_stacks_n, &a->offcpu_counts_n))
			return maps_error(a, "offcpu-maps", arg, "4096,16384");
		return 0;
	case OPT_ALLOC_SAMPLE:
		if (!parse_bytes(arg, &a->alloc_sample)) {
			a->bad = cli_usage_error("--alloc-sample '%s': expected bytes from 1 to 1G, a "
						 "whole number with an optional K, M or G (KiB, MiB, "
						 "GiB), e.g. --alloc-sample 512K",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_MIN_BLOCK:
		if (!cli_parse_long(arg, 1, 60000000, &a->min_block_us)) {
			a->bad = cli_usage_error("--min-block-us '%s': expected microseconds from 1 "
						 "to 60000000, e.g. --min-block-us 10",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_WAKERS:
		a->wakers = true;
		return 0;
	case OPT_OFFCPU_STACKS:
		if (hx_offcpu_stacks_parse(arg, &a->offcpu_stacks)) {
			a->bad = cli_usage_error("--offcpu-stacks '%s': expected both, user or "
						 "kernel, e.g. --offcpu-stacks user",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_PROBES: {
		char why[256];

		if (hx_probes_parse(arg, &a->probes, why, sizeof(why))) {
			a->bad = cli_usage_error("%s", why);
			return EINVAL;
		}
		a->oncpu = a->probes & (1u << HX_PROBE_ONCPU);
		a->counters = a->probes & (1u << HX_PROBE_COUNTERS);
		return 0;
	}
	}
	return ARGP_ERR_UNKNOWN;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct run_args *a = state->input;

	switch (key) {
	case 'p':
		return parse_presets(a, arg);
	case 'P':
		if (a->nparams == MAX_PARAMS) {
			a->bad = cli_usage_error("at most %d -P assignments", MAX_PARAMS);
			return EINVAL;
		}
		a->params[a->nparams++] = arg;
		return 0;
	case 'c':
		if (a->nknobs == HX_MAX_ASSIGN) {
			a->bad = cli_usage_error("at most %d -c settings", HX_MAX_ASSIGN);
			return EINVAL;
		}
		a->knobs[a->nknobs++] = arg;
		return 0;
	case OPT_FORKS:
		if (!cli_parse_long(arg, 1, 1000, &a->forks)) {
			a->bad = cli_usage_error("--forks '%s': expected a whole number from 1 to 1000",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_WARMUP:
		if (!cli_parse_long(arg, 0, 1000, &a->warmup)) {
			a->bad = cli_usage_error("--warmup '%s': expected a whole number from 0 to 1000",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_ITERATIONS:
		if (!cli_parse_long(arg, 1, 100000, &a->iterations)) {
			a->bad = cli_usage_error(
				"--iterations '%s': expected a whole number from 1 to 100000", arg);
			return EINVAL;
		}
		return 0;
	case OPT_TIME:
		if (!cli_parse_double(arg, 0.001, 3600, &a->time_s)) {
			a->bad = cli_usage_error("--time '%s': expected seconds from 0.001 to 3600, "
						 "e.g. --time 0.5",
						 arg);
			return EINVAL;
		}
		return 0;
	case OPT_QUICK:
		a->quick = true;
		return 0;
	case 'o':
		a->bad = cli_parse_out(arg, &a->out);
		return a->bad ? EINVAL : 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case OPT_OVERHEAD:
		a->overhead = true;
		return 0;
	case OPT_BASELINE:
		a->baseline = arg;
		return 0;
	case ARGP_KEY_ARG:
		if (a->nworkloads == MAX_WORKLOADS) {
			a->bad = cli_usage_error("at most %d workloads in one run", MAX_WORKLOADS);
			return EINVAL;
		}
		a->workloads[a->nworkloads++] = arg;
		return 0;
	case ARGP_KEY_END:
		if (a->events && !a->counters) {
			a->bad = cli_usage_error("--events %s: the counters probe is off; add it, "
						 "e.g. --probes oncpu,counters",
						 a->events);
			return EINVAL;
		}
		if (!a->nworkloads) {
			a->bad = cli_usage_error("run needs a workload, e.g. 'schedlab run spawn-join' "
						 "(see 'schedlab list')");
			return EINVAL;
		}
		return 0;
	}
	return parse_probe_option(a, key, arg);
}

/* What one measured iteration keeps until the reports are written: its score, its
 * runtime counters (hx_result.iter_rt) and their row of per-iteration cells. The product
 * forks × iterations is capped so that this storage stays within MEASURED_CAP_MIB. */
#define MEASURED_CAP_MIB 256

static uint64_t max_measured(void)
{
	size_t ncols;

	hx_stat_columns(&ncols);
	return (uint64_t)MEASURED_CAP_MIB * 1024 * 1024 /
	       (sizeof(double) + sizeof(struct rt_worker_stats) + ncols * sizeof(double) +
		2 * PROBE_COUNTERS_MAX * sizeof(double));
}

/* Every workload under every preset, workload by workload. */
static size_t spec_count(const struct run_args *a)
{
	return a->nworkloads * (a->npresets ? a->npresets : 1);
}

/* Build and check every spec before anything runs. A -P applies to each workload
 * that has the parameter, and must fit at least one. */
static int make_specs(const struct run_args *a, struct hx_spec *specs)
{
	size_t nspecs = spec_count(a);
	char err[512];

	for (size_t w = 0; w < nspecs; w++) {
		struct hx_spec *s = &specs[w];
		size_t np = a->npresets ? a->npresets : 1;
		const char *preset = a->npresets ? a->presets[w % np] : NULL;

		if (hx_spec_init(s, a->workloads[w / np], preset, err, sizeof(err)))
			return cli_usage_error("%s", err);
		if (a->quick)
			hx_options_quick(&s->opt);
		if (a->forks >= 0)
			s->opt.forks = (unsigned)a->forks;
		if (a->warmup >= 0)
			s->opt.warmup = (unsigned)a->warmup;
		if (a->iterations >= 0)
			s->opt.iterations = (unsigned)a->iterations;
		if (a->time_s > 0)
			s->opt.time_s = a->time_s;
		if ((uint64_t)s->opt.forks * s->opt.iterations > max_measured())
			return cli_usage_error("--forks %u × --iterations %u: %llu measured iterations "
					       "exceed the limit of %llu (%d MiB of per-iteration "
					       "results); lower --forks or --iterations",
					       s->opt.forks, s->opt.iterations,
					       (unsigned long long)s->opt.forks * s->opt.iterations,
					       (unsigned long long)max_measured(), MEASURED_CAP_MIB);
		for (size_t k = 0; k < a->nknobs; k++)
			if (hx_spec_knob(s, a->knobs[k], err, sizeof(err)))
				return cli_usage_error("%s", err);
		if (rt_config_check(&s->rt, err, sizeof(err)))
			return cli_usage_error("%s", err);
		if (a->counters &&
		    hx_spec_events(s, a->events ? a->events : PROBE_COUNTERS_DEFAULT, err, sizeof(err)))
			return cli_usage_error("%s", err);
	}
	for (size_t p = 0; p < a->nparams; p++) {
		const char *eq = strchr(a->params[p], '=');
		size_t len = eq ? (size_t)(eq - a->params[p]) : 0;
		bool used = false;

		for (size_t w = 0; w < nspecs && len; w++) {
			char name[64];

			if (len >= sizeof(name))
				break;
			memcpy(name, a->params[p], len);
			name[len] = '\0';
			if (wl_param_index(specs[w].wl, name) < 0)
				continue;
			if (hx_spec_param(&specs[w], a->params[p], err, sizeof(err)))
				return cli_usage_error("%s", err);
			used = true;
		}
		if (!used) {
			/* let the first workload explain what it accepts */
			hx_spec_param(&specs[0], a->params[p], err, sizeof(err));
			return cli_usage_error("%s", err);
		}
	}
	return 0;
}

/* ---- the results folder ---------------------------------------------------------------- */

/* ---- one run ------------------------------------------------------------------------- */

/* The command line that reproduces the run of s, for its result.json. */
static void reproduce_command(const struct hx_spec *s, const struct run_args *a, char *buf,
			      size_t len)
{
	char params[512];
	char probes[128];
	size_t off;

	hx_probes_text(a->probes, probes, sizeof(probes));
	off = (size_t)snprintf(buf, len,
			       "schedlab run %s --preset %s --forks %u --warmup %u --iterations %u "
			       "--time %g --probes %s",
			       s->wl->name, s->rt.preset, s->opt.forks, s->opt.warmup,
			       s->opt.iterations, s->opt.time_s, probes);
	if (s->events[0] && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --events %s", s->events);
	if (a->oncpu && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --freq %ld --call-graph %s", a->freq,
					hx_callgraph_name(a->callgraph));
	if (a->oncpu && a->callgraph != PROBE_CG_FP && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --stack-copy %ld", a->stack_copy);
	if (a->oncpu && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --group %s",
					a->group_task ? "task" : "thread");
	if (a->oncpu && a->oncpu_stacks && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --oncpu-maps %ld,%ld",
					a->oncpu_stacks, a->oncpu_counts);
	if (a->overhead && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --overhead");
	if ((a->probes & (1u << HX_PROBE_OFFCPU)) && a->min_block_us && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --min-block-us %ld", a->min_block_us);
	if ((a->probes & (1u << HX_PROBE_OFFCPU)) && a->wakers && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --wakers");
	if ((a->probes & (1u << HX_PROBE_OFFCPU)) && a->offcpu_stacks_n && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --offcpu-maps %ld,%ld",
					a->offcpu_stacks_n, a->offcpu_counts_n);
	if ((a->probes & (1u << HX_PROBE_OFFCPU)) && a->offcpu_stacks && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --offcpu-stacks %s",
					hx_offcpu_stacks_name(a->offcpu_stacks));
	if ((a->probes & (1u << HX_PROBE_RUNTIME)) && a->timeline_events && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --timeline-events %ld",
					a->timeline_events);
	if ((a->probes & (1u << HX_PROBE_ALLOC)) && a->alloc_sample && off < len)
		off += (size_t)snprintf(buf + off, len - off, " --alloc-sample %llu",
					(unsigned long long)a->alloc_sample);
	for (unsigned k = 0; k < s->nknobs && off < len; k++)
		off += (size_t)snprintf(buf + off, len - off, " -c %s", s->knobs[k]);
	hx_spec_params_text(s, params, sizeof(params));
	for (char *p = strtok(params, " "); p && off < len; p = strtok(NULL, " "))
		off += (size_t)snprintf(buf + off, len - off, " -P %s", p);
}

/* --json: several workloads make one array; the separator goes before each document. */
struct json_out {
	bool array;
	size_t printed;
};

static void print_json(void *ctx, const struct an_run *run)
{
	struct json_out *j = ctx;

	if (j->array)
		fputs(j->printed ? ",\n" : "[\n", stdout);
	an_report_json(run, stdout);
	j->printed++;
	fflush(stdout);
}

/* One workload under one preset, through the harness's pipeline (harness/pipeline.c),
 * which says on stderr what it does; a run folder that cannot be made is said here,
 * against --out. The exit status. */
static int run_spec(const struct hx_spec *s, const struct run_args *a, struct hx_probeset *set,
		    const char *self, struct hx_pipeline_row *row, struct json_out *json)
{
	char params[512], command[1024];
	struct hx_pipeline o = {
		.out = a->out,
		.self = self,
		.command = command,
		.probes = a->probes,
		.overhead = a->overhead,
		.oncpu_maps_sized = a->oncpu_maps_sized,
		.log = stderr,
		.emit = a->json ? print_json : NULL,
		.emit_ctx = json,
	};
	int err;

	hx_spec_params_text(s, params, sizeof(params));
	reproduce_command(s, a, command, sizeof(command));
	fprintf(stderr, "# %s · preset %s%s · %s · %u fork%s × (%u warm-up + %u measured) × %g s\n",
		s->wl->name, s->rt.preset, s->nknobs ? " (with -c)" : "", params, s->opt.forks,
		s->opt.forks == 1 ? "" : "s", s->opt.warmup, s->opt.iterations, s->opt.time_s);
	err = hx_pipeline_run(s, set, &o, row);
	if (row->dir_error) {
		int st = cli_folder_error(a->out, row->dir, row->dir_error);

		fprintf(stderr, "schedlab: %s: nothing of the run was written\n", s->wl->name);
		return st;
	}
	return err ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* "report.md, oncpu.svg, ...": what of a run folder a reader opens (its .md and .svg
 * files, report.md first), into buf; "" when the folder holds none or cannot be read. */
static void folder_files(const char *dir, char *buf, size_t len)
{
	struct dirent **names;
	size_t used = 0;
	int n = scandir(dir, &names, NULL, alphasort);
	bool report = false;

	buf[0] = '\0';
	for (int i = 0; i < n; i++)
		report |= !strcmp(names[i]->d_name, "report.md");
	if (report)
		used = (size_t)snprintf(buf, len, "report.md");
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name, *dot = strrchr(name, '.');

		if (dot && (!strcmp(dot, ".md") || !strcmp(dot, ".svg")) &&
		    strcmp(name, "report.md") && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
						 name);
		free(names[i]);
	}
	if (n > 0)
		free(names);
}

static void print_table(const struct hx_pipeline_row *rows, size_t n)
{
	/* a line between the progress lines and the table where both are on a terminal;
	 * none at the top of what a pipe reads */
	if (isatty(STDOUT_FILENO) && isatty(STDERR_FILENO))
		putchar('\n');
	printf("%-16s %-10s %14s   %-12s %-7s %4s\n", "Benchmark", "Preset", "Score", "Error",
	       "Units", "n");
	for (size_t i = 0; i < n; i++) {
		const struct hx_pipeline_row *r = &rows[i];
		int dec = an_score_decimals(r->score.mean, r->score.ci_half);
		char score[64], err[64];

		if (r->failed) {
			printf("%-16s %-10s %14s   %-12s %-7s %4s\n", r->workload, r->preset, "failed",
			       "", r->unit, "-");
			continue;
		}
		an_format_number(r->score.mean, dec, score, sizeof(score));
		if (r->n > 1)
			an_format_number(r->score.ci_half, dec, err, sizeof(err));
		else
			snprintf(err, sizeof(err), "n/a");
		printf("%-16s %-10s %14s ± %-12s %-7s %4zu\n", r->workload, r->preset, score, err,
		       r->unit, r->n);
	}
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < rows[i].nwl; k++)
			printf("%s%-16s %-10s %s: %.1f %s\n", i || k ? "" : "\n", rows[i].workload,
			       rows[i].preset, rows[i].wl[k].name, rows[i].wl[k].value,
			       rows[i].wl[k].unit);
	for (size_t i = 0, shown = 0; i < n; i++) {
		const struct an_finding *f = &rows[i].top;
		char share[16] = "";

		if (rows[i].failed || !f->id[0])
			continue;
		if (!shown++)
			printf("\nTop findings ('schedlab diagnose RUN_FOLDER' gives the evidence and "
			       "what to try):\n");
		if (!isnan(f->share))
			snprintf(share, sizeof(share), "%3.0f%%", 100 * f->share);
		printf("  %-16s %-10s %4s  %s: %s\n", rows[i].workload, rows[i].preset, share,
		       f->id, f->claim);
	}
	printf("\nResults:\n");
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].dir[0] || rows[i].dir_error)
			printf("  %-16s %-10s (no run folder)\n", rows[i].workload, rows[i].preset);
		else if (rows[i].removed)
			printf("  %-16s %-10s %s (not written, removed)\n", rows[i].workload,
			       rows[i].preset, rows[i].dir);
		else if (rows[i].unwritten)
			printf("  %-16s %-10s %s (not written)\n", rows[i].workload, rows[i].preset,
			       rows[i].dir);
		else {
			char files[512];

			folder_files(rows[i].dir, files, sizeof(files));
			printf("  %-16s %-10s %s/%s%s%s\n", rows[i].workload, rows[i].preset,
			       rows[i].dir, files[0] ? " (" : "", files, files[0] ? ")" : "");
		}
	}
}

/* The first signal stops the forks (hx_run() then returns what was measured), a second
 * one the writing as well. */
static void on_signal(int sig)
{
	if (hx_interrupted())
		an_files_interrupt();
	hx_interrupt(sig);
}

#define ONCPU_STACKS_SHARE 0.25 /* of the samples, the stacks map's size (below) */

/* The size of an oncpu map for a fork's drain after measure_s seconds of measured
 * iterations: the counts hold a key per sample at most, and a fork takes at most freq
 * samples a second on each CPU, with a quarter more for iterations that overrun their
 * time, so that map cannot fill. The stacks repeat: one fork held at most 143 to 507
 * distinct stacks in 3 s at 999 Hz here (workers, spawn-join, bind-chain, tcp-blocking,
 * sequentially, error-pipeline), 2 to 7% of what it could take; making the preallocated
 * map is most of the probe's attach time (1.5 ms a 1,024 stacks), so it is sized for a
 * quarter of the samples, room several times over. At least 1,024 and at most the probe's
 * default max each. A fork that fills one anyway has its losses counted and drawn and
 * the maps' sizes stated in report.md, with --oncpu-maps to size them. */
static unsigned oncpu_entries(long freq, double measure_s, double share, unsigned max)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	double want = share * 1.25 * (double)freq * (double)(cpus > 0 ? cpus : 1) * measure_s;

	if (want < 1024)
		return 1024 < max ? 1024 : max;
	return want < max ? (unsigned)want : max;
}

/* What the probes are opened with, for every spec at once: the longest measurement, the
 * most forks and workers (the maps that must hold a fork's stacks and threads), and the
 * oncpu maps sized for them unless --oncpu-maps gave their sizes. */
static void configure_probes(struct run_args *a, const struct hx_spec *specs, size_t nspecs,
			     struct probe_oncpu_opts *po, struct hx_probe_config *pc)
{
	for (size_t i = 0; i < nspecs; i++) {
		double m = specs[i].opt.iterations * specs[i].opt.time_s;
		unsigned w = specs[i].rt.workers_max ? specs[i].rt.workers_max : specs[i].rt.workers;

		if (m > pc->measure_s)
			pc->measure_s = m;
		if (specs[i].opt.forks > pc->forks)
			pc->forks = specs[i].opt.forks;
		if (!w)
			w = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
		if (w > pc->threads)
			pc->threads = w;
	}
	po->freq = (unsigned)a->freq;
	if (a->oncpu_stacks) {
		po->stack_entries = (unsigned)a->oncpu_stacks;
		po->count_entries = (unsigned)a->oncpu_counts;
		snprintf(a->oncpu_maps_sized, sizeof(a->oncpu_maps_sized), "given: --oncpu-maps");
	} else {
		po->stack_entries = oncpu_entries(a->freq, pc->measure_s, ONCPU_STACKS_SHARE,
						  PROBE_ONCPU_STACK_ENTRIES);
		po->count_entries =
			oncpu_entries(a->freq, pc->measure_s, 1, PROBE_ONCPU_COUNT_ENTRIES);
		snprintf(a->oncpu_maps_sized, sizeof(a->oncpu_maps_sized),
			 "for the run: counts 1.25 x %ld Hz x %ld CPUs x %g s measured, stacks a "
			 "quarter of that; at least 1024, at most %d and %d",
			 a->freq, sysconf(_SC_NPROCESSORS_ONLN), pc->measure_s,
			 PROBE_ONCPU_STACK_ENTRIES, PROBE_ONCPU_COUNT_ENTRIES);
	}
	po->callgraph = (enum probe_callgraph)a->callgraph;
	po->stack_copy = (unsigned)a->stack_copy;
	po->group_task = a->group_task;
	pc->timeline_events = (unsigned)a->timeline_events;
	pc->min_block_us = (unsigned)a->min_block_us;
	pc->wakers = a->wakers;
	pc->offcpu_stacks = a->offcpu_stacks;
	pc->offcpu_stack_entries = (unsigned)a->offcpu_stacks_n;
	pc->offcpu_count_entries = (unsigned)a->offcpu_counts_n;
	pc->alloc_sample = a->alloc_sample;
}

/* --baseline: each new run that succeeded against the baseline, printed (with --json,
 * stdout holds the results alone: the comparison goes to its files) and written into the
 * run's folder. Whether any comparison failed. */
static bool compare_baselines(const struct run_args *a, const struct hx_pipeline_row *rows,
			      size_t nspecs)
{
	bool failed = false;

	for (size_t i = 0; i < nspecs && !hx_interrupted(); i++) {
		if (rows[i].failed || !rows[i].dir[0])
			continue;
		if (!a->json)
			printf("\n");
		if (cli_compare_write(a->baseline, rows[i].dir, rows[i].dir,
				      a->json ? CLI_COMPARE_NOTHING : CLI_COMPARE_MD))
			failed = true;
	}
	return failed;
}

int cmd_run(int argc, char **argv)
{
	static const struct argp argp = { options, parse, "WORKLOAD...", doc, NULL, NULL, NULL };
	struct run_args a = {
		.forks = -1, .warmup = -1, .iterations = -1, .time_s = -1,
		.oncpu = true, .probes = 1u << HX_PROBE_ONCPU, .freq = 999, .out = "results",
		.callgraph = PROBE_CG_AUTO, .stack_copy = PROBE_STACK_COPY_DEFAULT,
	};
	struct probe_oncpu_opts po = { 0 };
	struct hx_spec *specs = NULL;
	struct hx_pipeline_row *rows = NULL;
	struct hx_profile prof;
	struct hx_probeset set;
	struct hx_probe_config pc = { 0 };
	char why[HX_WHY_LEN];
	char self[PATH_MAX];
	struct sigaction sa = { .sa_handler = on_signal };
	struct json_out json = { 0 };
	size_t nspecs;
	ssize_t len;
	int status = CLI_EXIT_OK, err;

	if (cli_argp_parse(&argp, "run", argc, argv, &a))
		return a.bad ? a.bad : CLI_EXIT_USAGE;
	if (a.oncpu_stacks && !a.oncpu)
		return cli_usage_error("--oncpu-maps is an oncpu option: add oncpu to --probes");
	if (a.rules && !a.oncpu)
		return cli_usage_error("--rules is an oncpu option: add oncpu to --probes");
	if ((a.min_block_us || a.wakers || a.offcpu_stacks || a.offcpu_stacks_n) &&
	    !(a.probes & (1u << HX_PROBE_OFFCPU)))
		return cli_usage_error("%s is an offcpu option: add --probes oncpu,offcpu",
				       a.wakers		 ? "--wakers"
				       : a.offcpu_stacks	 ? "--offcpu-stacks"
				       : a.offcpu_stacks_n ? "--offcpu-maps"
							 : "--min-block-us");

	nspecs = spec_count(&a);
	json.array = nspecs > 1;
	specs = calloc(nspecs, sizeof(*specs));
	rows = calloc(nspecs, sizeof(*rows));
	if (!specs || !rows) {
		cli_usage_error("out of memory");
		status = CLI_EXIT_FAIL;
		goto out_free;
	}
	status = make_specs(&a, specs);
	for (size_t i = 0; !status && a.baseline && i < nspecs; i++)
		status = cli_compare_check_baseline(a.baseline, specs[i].wl->name);
	if (status)
		goto out_free;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0) {
		status = CLI_EXIT_FAIL;
		cli_usage_error("cannot find my own binary to re-execute: %s", strerror(errno));
		goto out_free;
	}
	self[len] = '\0';

	configure_probes(&a, specs, nspecs, &po, &pc);
	err = hx_profile_open(&prof, a.oncpu, &po);
	if (err) {
		/* the built-in rules that do not parse have said why */
		status = CLI_EXIT_FAIL;
		if (err == -ENOMEM)
			cli_usage_error("out of memory");
		goto out_free;
	}
	if (a.rules && (status = cli_use_rules(&prof, a.rules)))
		goto out_close_profile;
	if (a.oncpu && prof.open_error == -ERANGE) {
		/* a frequency this machine cannot afford: the user's to lower */
		status = cli_usage_error("--freq %ld: %s", a.freq,
					 prof.status + strlen("not attached: "));
		goto out_close_profile;
	}
	err = cli_mkdir_p(a.out);
	/* the run folders are made once there is something to write: find out now, not
	 * after the forks, that nothing can be */
	if (!err && access(a.out, W_OK))
		err = -errno;
	if (err) {
		status = cli_folder_error(a.out, a.out, err);
		goto out_close_profile;
	}
	if (a.oncpu && !prof.attached)
		fprintf(stderr, "schedlab: oncpu: %s; the benchmarks run without it\n", prof.status);
	if (hx_probeset_open(&set, &prof, a.probes, &pc, why, sizeof(why))) {
		status = cli_usage_error("%s", why);
		goto out_close_profile;
	}
	for (size_t i = 0; i < set.n; i++) {
		if (!set.probes[i].state)
			fprintf(stderr, "schedlab: %s: %s; the benchmarks run without it\n",
				set.probes[i].ops->name, set.probes[i].status);
		else if (set.probes[i].ops->opt_in)
			fprintf(stderr, "schedlab: %s traps on each of its events: the score under "
				"it is not the benchmark's speed (--overhead measures the cost)\n",
				set.probes[i].ops->name);
	}

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	for (size_t i = 0; i < nspecs && !hx_interrupted(); i++) {
		int st = run_spec(&specs[i], &a, &set, self, &rows[i], &json);

		if (st == CLI_EXIT_USAGE) {
			status = st;
			break;
		}
		if (st)
			status = st;
	}
	if (a.json && nspecs > 1)
		fputs(json.printed ? "]\n" : "[]\n", stdout);
	if (!a.json && status != CLI_EXIT_USAGE)
		print_table(rows, nspecs);
	if (a.baseline && compare_baselines(&a, rows, nspecs) && status == CLI_EXIT_OK)
		status = CLI_EXIT_FAIL;
	if (hx_interrupted() && status != CLI_EXIT_USAGE)
		status = CLI_EXIT_INTERRUPTED;
	hx_probeset_close(&set);
out_close_profile:
	hx_profile_close(&prof);
out_free:
	free(specs);
	free(rows);
	return status;
}
