/*
 * schedlab run: run workloads on the runtime under the probes, then write each run's
 * result.json, report.md, oncpu.folded and oncpu.svg into results/<run-id>/, point
 * results/latest at the newest, and print a table in the studies' form.
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
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "flamegraphs/flamegraph.h"
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
	"time each ran; an event this machine cannot count is n/a with the reason, never 0.\v"
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
	int bad;
};

#define MAX_SAMPLE_RATE_PATH "/proc/sys/kernel/perf_event_max_sample_rate"
/* --oncpu-maps and --offcpu-maps at most: 256 MiB of kernel memory in stacks, and four
 * counts (keys) a stack */
#define MAPS_STACKS_MAX 262144
#define MAPS_COUNTS_MAX 1048576

/* The kernel's sampling ceiling, which it also lowers by itself when samples take too
 * long (perf_cpu_time_max_percent): a --freq above it is throttled, not delivered.
 * 0 when the file cannot be read, and then only the fixed range applies. */
static long kernel_max_sample_rate(void)
{
	FILE *f = fopen(MAX_SAMPLE_RATE_PATH, "re");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v < 0)
		v = 0;
	fclose(f);
	return v;
}

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

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct run_args *a = state->input;

	switch (key) {
	case 'p':
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
	case OPT_FREQ: {
		long max_rate = kernel_max_sample_rate();

		if (!cli_parse_long(arg, 1, 100000, &a->freq)) {
			a->bad = cli_usage_error("--freq '%s': expected samples per second from 1 to "
						 "100000, e.g. --freq 999",
						 arg);
			return EINVAL;
		}
		if (max_rate > 0 && a->freq > max_rate) {
			a->bad = cli_usage_error("--freq '%s': above " MAX_SAMPLE_RATE_PATH " (%ld), "
						 "the most samples per second the kernel delivers; "
						 "choose at most --freq %ld or raise the sysctl",
						 arg, max_rate, max_rate);
			return EINVAL;
		}
		return 0;
	}
	case OPT_CALL_GRAPH: {
		int cg = hx_callgraph_parse(arg);

		if (cg < 0) {
			a->bad = cli_usage_error("--call-graph '%s': the modes are fp, dwarf and auto",
						 arg);
			return EINVAL;
		}
		a->callgraph = cg;
		return 0;
	}
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
	case 'o':
		if (!*arg) {
			a->bad = cli_usage_error("--out needs a folder, e.g. --out results");
			return EINVAL;
		}
		a->out = arg;
		return 0;
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
	return ARGP_ERR_UNKNOWN;
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

/* ---- files ------------------------------------------------------------------------------ */

static int write_json(void *ctx, FILE *out)
{
	return an_report_json(ctx, out);
}

static int write_markdown(void *ctx, FILE *out)
{
	return an_report_markdown(ctx, out);
}

static int write_report(const char *dir, const char *name, int (*fn)(void *ctx, FILE *out),
			const struct an_run *r)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return an_write_file_atomic(path, fn, (void *)r);
}

static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return -errno;
	/* something that is there already must be a folder (or a link to one) */
	if (stat(buf, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* A folder that cannot be made, named with the reason: the user's --out when it runs
 * through or onto what is not a folder, a link, or is too long (exit 2); a full,
 * read-only file system is the machine's (exit 1): cli_exit_for()'s table. */
static int folder_error(const char *out, const char *path, int err)
{
	if (cli_exit_for(err) == CLI_EXIT_USAGE) {
		cli_usage_error("--out %s: cannot create %s: %s (choose a folder with --out)", out,
				path, strerror(-err));
		return CLI_EXIT_USAGE;
	}
	cli_usage_error("cannot create %s: %s", path, strerror(-err));
	return cli_exit_for(err);
}

/* The files of a run folder; a write leaves NAME.tmpXXXXXX only if it was stopped
 * past its own cleanup. */
static const char *const run_files[] = { "result.json", "report.md", "oncpu.folded",
					 "oncpu.svg", "offcpu.folded", "offcpu.svg",
					 "wakers.folded", NULL };

static bool is_our_temporary(const char *name)
{
	for (size_t i = 0; run_files[i]; i++) {
		size_t n = strlen(run_files[i]);

		if (!strncmp(name, run_files[i], n) && !strncmp(name + n, ".tmp", 4) &&
		    strlen(name + n + 4) == 6)
			return true;
	}
	return false;
}

/* After a failed write, remove the run folder if nothing of the run is in it: empty,
 * or holding only our temporaries (regular files, lstat'ed). Anything else keeps it,
 * untouched. Whether it went. */
static bool remove_unwritten_dir(const char *dir)
{
	char temps[8][NAME_MAX + 1];
	size_t ntemps = 0;
	struct dirent *e;
	bool other = false;
	DIR *d = opendir(dir);

	if (!d)
		return false;
	while (!other && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!is_our_temporary(e->d_name) || ntemps == 8 ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode)) {
			other = true;
			break;
		}
		snprintf(temps[ntemps++], sizeof(temps[0]), "%s", e->d_name);
	}
	for (size_t i = 0; !other && i < ntemps; i++)
		if (unlinkat(dirfd(d), temps[i], 0) && errno != ENOENT)
			other = true;
	closedir(d);
	/* rmdir removes only an empty folder: whatever appeared meanwhile stays */
	return !other && !rmdir(dir);
}

/* A new folder out/<stamp>-<workload>-<preset>[-N], stamped with the run's start; its
 * name goes to id. Made only when the run has something to write, so that a run killed
 * before then (SIGKILL cannot be caught) leaves no empty folder. */
static int make_run_dir(const char *out, const struct hx_spec *s, time_t start, char *id,
			size_t idlen, char *dir, size_t dirlen)
{
	struct tm tm;
	char stamp[32];

	gmtime_r(&start, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (int n = 1; n < 1000; n++) {
		if (n == 1)
			snprintf(id, idlen, "%s-%s-%s", stamp, s->wl->name, s->rt.preset);
		else
			snprintf(id, idlen, "%s-%s-%s-%d", stamp, s->wl->name, s->rt.preset, n);
		snprintf(dir, dirlen, "%s/%s", out, id);
		if (!mkdir(dir, 0777))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Point out/latest at id: a new link under a temporary name, renamed over the old. Only
 * a symlink or nothing is replaced: anything else at out/latest is the user's, and is
 * refused (-EEXIST) rather than renamed over. The temporary name is random, made by
 * symlink() itself (which never replaces or follows what is there), so that nobody
 * writing in a shared results folder can prepare it. */
static int update_latest(const char *out, const char *id)
{
	char tmp[PATH_MAX], link[PATH_MAX];
	struct stat st;
	int err = -EEXIST;

	snprintf(link, sizeof(link), "%s/latest", out);
	if (lstat(link, &st) == 0 && !S_ISLNK(st.st_mode))
		return -EEXIST;
	for (int tries = 0; tries < 100 && err == -EEXIST; tries++) {
		uint64_t r;

		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
			r = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^
			    ((uint64_t)tries << 50);
		snprintf(tmp, sizeof(tmp), "%s/.latest.%016" PRIx64, out, r);
		err = symlink(id, tmp) ? -errno : 0;
	}
	if (err)
		return err;
	if (rename(tmp, link)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

/* ---- one run ------------------------------------------------------------------------- */

struct run_row {
	const char *workload, *preset, *unit;
	struct an_summary score;
	size_t n;
	char dir[PATH_MAX];
	char svg[PATH_MAX + 32];
	bool failed;
	bool unwritten; /* a file of the run folder could not be written */
	bool removed;   /* and nothing was, so the folder was removed */
	struct wl_metric wl[WL_MAX_METRICS]; /* the workload's own figures, to print */
	size_t nwl;
	struct an_finding top; /* its first finding; top.id is "" when it has none */
};

static void describe_host(char *buf, size_t len)
{
	struct utsname u;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (uname(&u))
		snprintf(buf, len, "unknown host, %ld CPUs", cpus);
	else
		snprintf(buf, len, "%s %s %s, %ld CPUs", u.sysname, u.release, u.machine, cpus);
}

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

/* What the run report needs from a result that is not already in it: the knob vector,
 * counters as tables. Owned here, freed by report_parts_free(). */
struct report_parts {
	struct an_sv knobs[64];
	char knob_values[64][48];
	size_t nknobs;
	char overrides[HX_MAX_ASSIGN * 100];
	struct an_kv metrics[64];
	size_t nmetrics;
	struct an_kv wl[WL_MAX_METRICS];
	const char *wl_units[WL_MAX_METRICS];
	double *iter_cells, *worker_cells;
	struct an_counter counter[PROBE_COUNTERS_MAX];
	struct an_counters counters;
	double *counter_iters;  /* [event * nsamples + iteration]: per op */
	char counters_status[160];
	char counters_summary[1024];
};

/* The counters for the reports, and the probe's status: attached when any event could be
 * counted. */
static int counters_make(struct report_parts *p, const struct hx_spec *s,
			 const struct hx_result *res)
{
	unsigned counted = 0;

	if (!s->events[0])
		return 0;
	p->counter_iters = calloc((size_t)res->ncounters * res->nsamples + 1, sizeof(double));
	if (!p->counter_iters)
		return -ENOMEM;
	for (unsigned i = 0; i < res->ncounters; i++) {
		const struct hx_counter *h = &res->counters[i];
		struct an_counter *c = &p->counter[i];

		for (size_t k = 0; k < res->nsamples; k++)
			p->counter_iters[i * res->nsamples + k] =
				res->iter_counters[k * PROBE_COUNTERS_MAX + i];
		*c = (struct an_counter){
			.name = h->name,
			.counted = h->counted,
			.note = h->note,
			.total = h->total,
			.per_op = h->ops ? h->total / (double)h->ops : NAN,
			.uncounted = h->unscaled,
			.running_share = h->sum.enabled ? (double)h->sum.running /
								  (double)h->sum.enabled
							: 1,
			.raw = h->sum.value,
			.per_iteration = &p->counter_iters[i * res->nsamples],
			.niterations = res->nsamples,
		};
		counted += h->counted;
	}
	p->counters = (struct an_counters){ p->counter, res->ncounters };
	if (counted)
		snprintf(p->counters_status, sizeof(p->counters_status), "attached");
	else
		snprintf(p->counters_status, sizeof(p->counters_status),
			 "not attached: none of the %u events could be counted here",
			 res->ncounters);
	an_counters_summary(&p->counters, p->counters_summary, sizeof(p->counters_summary));
	return 0;
}

static int report_parts_make(struct report_parts *p, const struct hx_spec *s,
			     const struct hx_result *res)
{
	const char *const *knobs = rt_knob_names(), *const *cols;
	size_t ncols, off = 0;
	double total[64];

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; knobs[i] && i < 64; i++) {
		rt_config_get(&s->rt, knobs[i], p->knob_values[i], sizeof(p->knob_values[i]));
		p->knobs[i] = (struct an_sv){ knobs[i], p->knob_values[i] };
		p->nknobs++;
	}
	for (unsigned k = 0; k < s->nknobs; k++)
		off += (size_t)snprintf(p->overrides + off, sizeof(p->overrides) - off, "%s-c %s",
					k ? " " : "", s->knobs[k]);

	cols = hx_stat_columns(&ncols);
	hx_stat_row(&res->rt, total);
	p->metrics[p->nmetrics++] = (struct an_kv){ "ops", (double)res->ops };
	for (size_t c = 0; c < ncols && p->nmetrics < 56; c++)
		p->metrics[p->nmetrics++] = (struct an_kv){ cols[c], total[c] };
	if (res->ops) {
		p->metrics[p->nmetrics++] =
			(struct an_kv){ "bytes_per_op", (double)res->rt.alloc_bytes / (double)res->ops };
		p->metrics[p->nmetrics++] =
			(struct an_kv){ "spawned_per_op", (double)res->rt.spawned / (double)res->ops };
	}
	p->metrics[p->nmetrics++] =
		(struct an_kv){ "latency_p50_ns", hx_latency_quantile(&res->rt, 0.5) };
	p->metrics[p->nmetrics++] =
		(struct an_kv){ "latency_p99_ns", hx_latency_quantile(&res->rt, 0.99) };
	p->metrics[p->nmetrics++] =
		(struct an_kv){ "workers_started", (double)res->workers_started };
	p->metrics[p->nmetrics++] =
		(struct an_kv){ "workers_active", (double)res->workers_active };
	p->metrics[p->nmetrics++] = (struct an_kv){ "adaptations", (double)res->adaptations };
	p->metrics[p->nmetrics++] =
		(struct an_kv){ "threads_created", (double)res->threads_created };

	for (size_t i = 0; i < res->nwl_metrics; i++) {
		p->wl[i] = (struct an_kv){ res->wl_metrics[i].name, res->wl_metrics[i].value };
		p->wl_units[i] = res->wl_metrics[i].unit;
	}
	p->iter_cells = calloc(res->nsamples * ncols + 1, sizeof(double));
	p->worker_cells = calloc((size_t)res->nper * ncols + 1, sizeof(double));
	if (!p->iter_cells || !p->worker_cells)
		return -ENOMEM;
	for (size_t i = 0; i < res->nsamples; i++)
		hx_stat_row(&res->iter_rt[i], &p->iter_cells[i * ncols]);
	for (size_t w = 0; w < res->nper; w++)
		hx_stat_row(&res->per_worker[w], &p->worker_cells[w * ncols]);
	return counters_make(p, s, res);
}

static void report_parts_free(struct report_parts *p)
{
	free(p->iter_cells);
	free(p->worker_cells);
	free(p->counter_iters);
}

#define METRIC(field) { #field, (double)res->rt.field }

/* The findings of run, computed from the result.json it renders to, so that report.md
 * and result.json carry what 'schedlab diagnose' would say of the folder. Without them
 * the run is still written, and the reason is said. */
static void attach_findings(struct an_run *run, const char *dir, struct an_finding *buf)
{
	char path[PATH_MAX + 16], err[512];
	int n;

	snprintf(path, sizeof(path), "%s/result.json", dir);
	n = an_run_findings(run, path, buf, AN_FINDINGS_MAX, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "schedlab: %s; the report goes without findings\n", err);
		return;
	}
	run->findings = buf;
	run->nfindings = (size_t)n < AN_FINDINGS_MAX ? (size_t)n : AN_FINDINGS_MAX;
}

/* --json: several workloads make one array; the separator goes before each document. */
static void print_json(const struct an_run *run, const struct run_args *a, size_t *printed)
{
	if (spec_count(a) > 1)
		fputs(*printed ? ",\n" : "[\n", stdout);
	an_report_json(run, stdout);
	(*printed)++;
	fflush(stdout);
}

/* --overhead: split the interleaved forks into those with the probes (kept as the run's)
 * and those without, and set the first against the second. */
static void measure_overhead(struct hx_result *res, const struct hx_spec *s,
			     const struct run_args *a, struct an_overhead *o, char *probes,
			     size_t len)
{
	int err;

	memset(o, 0, sizeof(*o));
	hx_probes_text(a->probes, probes, len);
	o->probes = probes;
	o->forks = s->opt.forks;
	err = hx_result_split_alternate(res, s->opt.iterations, &o->off);
	o->on = res->summary;
	if (err) {
		o->why = err == -EINVAL ? "fewer than two iterations with or without the probes"
					: strerror(-err);
		return;
	}
	err = an_ratio_fieller(&o->on, &o->off, 0.999, &o->ratio);
	o->measured = !err;
	if (err)
		o->why = strerror(-err);
}

/* The first file of the run that could not be written, as result.json's failure says it. */
static void unwritten(char *note, size_t len, const char *path, int err)
{
	if (!*note)
		snprintf(note, len, "cannot write %s: %s", path, an_file_strerror(err));
}

static int run_one(const struct hx_spec *s, const struct run_args *a, struct hx_probeset *set,
		   const char *self, struct run_row *row, size_t *printed)
{
	char id[256], params[512], command[1024], host[256], started[32], note[512], nbuf[64];
	struct an_probe_summary probe = { .name = "oncpu" };
	struct an_finding findings[AN_FINDINGS_MAX];
	struct hx_result res_store, *res = &res_store;
	struct hx_profile *prof = set->oncpu;
	struct report_parts *parts;
	const char *const *cols;
	size_t ncols;
	struct hx_hooks hooks;
	struct hx_alternate alternate;
	struct hx_spec doubled;
	struct an_overhead overhead;
	char probes_text[128];
	struct an_run run;
	time_t now = time(NULL);
	struct tm tm;
	int err, err2;
	char path[PATH_MAX + 32], unwritten_note[PATH_MAX + 160] = "";
	bool write_failed = false, partial;

	row->workload = s->wl->name;
	row->preset = s->rt.preset;
	row->unit = s->wl->unit;
	row->dir[0] = '\0';

	gmtime_r(&now, &tm);
	strftime(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	describe_host(host, sizeof(host));
	hx_spec_params_text(s, params, sizeof(params));
	reproduce_command(s, a, command, sizeof(command));

	fprintf(stderr, "# %s · preset %s%s · %s · %u forks × (%u warm-up + %u measured) × %g s\n",
		s->wl->name, s->rt.preset, s->nknobs ? " (with -c)" : "", params, s->opt.forks,
		s->opt.warmup, s->opt.iterations, s->opt.time_s);
	if (hx_probeset_reset(set))
		return CLI_EXIT_FAIL;
	hx_probeset_hooks(set, &hooks);
	if (a->overhead) {
		struct hx_hooks probed = hooks;

		doubled = *s;
		doubled.opt.forks *= 2;
		fprintf(stderr, "  --overhead: %u forks, every other one (the first) without the "
			"probes\n", doubled.opt.forks);
		hx_alternate_hooks(&alternate, &probed, &hooks);
		err = hx_run(&doubled, self, &hooks, res, stderr);
	} else {
		err = hx_run(s, self, &hooks, res, stderr);
	}
	/* interrupted: what was measured is kept, and the run is not a failure */
	partial = err == -EINTR;
	if (partial)
		err = 0;
	if (a->overhead && !err)
		measure_overhead(res, s, a, &overhead, probes_text, sizeof(probes_text));
	parts = malloc(sizeof(*parts));
	if (!parts) {
		hx_result_free(res);
		cli_usage_error("out of memory");
		return CLI_EXIT_FAIL;
	}
	err2 = make_run_dir(a->out, s, now, id, sizeof(id), row->dir, sizeof(row->dir));
	if (err2) {
		err2 = folder_error(a->out, row->dir, err2);
		fprintf(stderr, "schedlab: %s: nothing of the run was written\n", s->wl->name);
		row->failed = true;
		row->dir[0] = '\0';
		free(parts);
		hx_result_free(res);
		return err2;
	}

	probe.attached = prof->attached;
	probe.status = prof->status;
	probe.attach_ns = prof->attach_ns;
	probe.cost_ns = prof->cost_ns;
	if (prof->attached) {
		probe.event = probe_oncpu_event(prof->oncpu);
		probe.event_note = probe_oncpu_event_note(prof->oncpu);
		probe.freq = probe_oncpu_freq(prof->oncpu);
		probe.samples = prof->stats.samples;
		probe.ustack_full = prof->stats.ustack_full;
		probe.kstack_full = prof->stats.kstack_full;
		probe.ustack_errors = prof->stats.ustack_errors;
		probe.kstack_errors = prof->stats.kstack_errors;
		probe.counts_full = prof->stats.counts_full;
		probe.truncated = prof->truncated; /* as drawn, DWARF's unwinds included */
		probe.ring_full = prof->stats.ring_full;
		/* a fork whose CPU time is unknown makes the figure a guess: none */
		probe.expected = prof->stats.unclocked ? 0 : prof->stats.expected;
		probe.taken = prof->stats.samples;
		probe.cpu_ns = prof->stats.cpu_ns;
		probe.window_ns = prof->stats.window_ns;
		probe.cost_pct = 100 * probe_oncpu_cost_share(prof->oncpu);
		memcpy(probe.phase_samples, prof->phase_samples, sizeof(probe.phase_samples));
		probe.callgraph = hx_callgraph_name(probe_oncpu_callgraph(prof->oncpu));
		probe.group = probe_oncpu_group_task(prof->oncpu) ? "task" : "thread";
		probe.stack_copy = probe_oncpu_stack_copy(prof->oncpu);
		probe.ring_bytes = probe_oncpu_ring_bytes(prof->oncpu);
		probe.stack_entries = probe_oncpu_stack_entries(prof->oncpu);
		probe.count_entries = probe_oncpu_count_entries(prof->oncpu);
		probe.stacks_held_max = prof->stats.stacks_held_max;
		probe.counts_held_max = prof->stats.keys_held_max;
		probe.maps_sized = a->oncpu_maps_sized;
		probe.stack_bytes = prof->stats.stack_bytes;
		probe.unwind_ns = prof->unwind_ns;
		probe.unwind_error = prof->unwind_error;
		probe.prog_runs = prof->prog_runs;
		probe.prog_ns = prof->prog_ns;
		probe.quality = &prof->quality;
		probe.agreement = &prof->agreement;
		probe.attribution = &prof->attribution;
		probe.nrules = an_rules_count(prof->rules);
	}

	if (prof->attached && !err) {
		char title[256], subtitle[1024];
		struct fg_options fo;
		int ferr;

		snprintf(path, sizeof(path), "%s/oncpu.folded", row->dir);
		ferr = an_folded_write_file(prof->folded, path);
		if (!ferr) {
			probe.folded = "oncpu.folded";
			fg_options_default(&fo);
			snprintf(title, sizeof(title), "%s · preset %s · on-CPU", s->wl->name,
				 s->rt.preset);
			an_format_number((double)prof->stats.samples, 0, nbuf, sizeof(nbuf));
			snprintf(subtitle, sizeof(subtitle), "%s · %s %u Hz · %s samples of the measured iterations",
				 params, probe.event, probe.freq, nbuf);
			fo.title = title;
			fo.subtitle = subtitle;
			snprintf(path, sizeof(path), "%s/oncpu.svg", row->dir);
			ferr = fg_svg_write_file(prof->folded, &fo, path);
			if (!ferr) {
				probe.svg = "oncpu.svg";
				snprintf(row->svg, sizeof(row->svg), "%s", path);
			}
		}
		if (ferr) {
			if (!an_files_interrupted())
				fprintf(stderr, "schedlab: %s: cannot write the profile: %s\n", path,
					an_file_strerror(ferr));
			unwritten(unwritten_note, sizeof(unwritten_note), path, ferr);
			write_failed = true;
		}
	}
	if (prof->error)
		snprintf(note, sizeof(note), "profile collection failed: %s", strerror(-prof->error));
	/* the other probes' files; one that failed says so in its status, the run goes on */
	/* an interrupted fork never sent the counters its events would be checked against */
	if (!partial)
		hx_probeset_observe(set, res);
	if (!err && hx_probeset_finish(set, row->dir) && an_files_interrupted())
		write_failed = true;

	memset(&run, 0, sizeof(run));
	run.id = id;
	run.workload = s->wl->name;
	run.op = s->wl->summary;
	run.preset = s->rt.preset;
	run.unit = s->wl->unit;
	run.params = params;
	run.command = command;
	run.started = started;
	run.host = host;
	run.forks = s->opt.forks;
	run.warmup = s->opt.warmup;
	run.iterations = s->opt.iterations;
	run.time_s = s->opt.time_s;
	run.workers = res->workers;
	run.samples = res->samples;
	run.nsamples = err ? 0 : res->nsamples;
	run.score = res->summary;
	if (report_parts_make(parts, s, res)) {
		cli_usage_error("out of memory");
		report_parts_free(parts);
		free(parts);
		hx_result_free(res);
		return CLI_EXIT_FAIL;
	}
	cols = hx_stat_columns(&ncols);
	run.metrics = parts->metrics;
	run.nmetrics = err ? 0 : parts->nmetrics;
	run.knobs = parts->knobs;
	run.nknobs = parts->nknobs;
	run.overrides = parts->overrides;
	run.per_iteration = (struct an_table){ cols, ncols, parts->iter_cells, err ? 0 : res->nsamples };
	run.per_worker = (struct an_table){ cols, ncols, parts->worker_cells, err ? 0 : res->nper };
	run.steals = res->steals;
	run.latency_hist = res->rt.latency_hist;
	run.latency_buckets = RT_LATENCY_BUCKETS;
	run.workload_metrics = parts->wl;
	run.workload_units = parts->wl_units;
	run.nworkload_metrics = err ? 0 : res->nwl_metrics;
	run.probes = &probe;
	run.nprobes = 1;
	run.parts = set->parts;
	run.nparts = set->n;
	run.overhead = a->overhead && !err ? &overhead : NULL;
	if (s->events[0]) {
		if (err)
			parts->counters.n = 0;
		run.counters = &parts->counters;
		run.counters_status = parts->counters_status;
		run.counters_summary = parts->counters_summary;
		run.counters_attach_ns = res->counters_attach_ns;
	}
	run.error = err ? res->error : prof->error ? note : NULL;
	run.partial = partial ? res->error : NULL;
	attach_findings(&run, row->dir, findings);
	if (run.nfindings)
		row->top = run.findings[0];

	/* result.json last, so that it never claims a run whose other files are missing: a
	 * file that could not be written makes the run failed there, saying which */
	err2 = write_report(row->dir, "report.md", write_markdown, &run);
	if (err2) {
		if (!an_files_interrupted())
			fprintf(stderr, "schedlab: %s/report.md: cannot write the report: %s\n",
				row->dir, an_file_strerror(err2));
		snprintf(path, sizeof(path), "%s/report.md", row->dir);
		unwritten(unwritten_note, sizeof(unwritten_note), path, err2);
		write_failed = true;
	}
	if (write_failed && !err)
		run.error = unwritten_note;
	err2 = write_report(row->dir, "result.json", write_json, &run);
	if (err2) {
		if (!an_files_interrupted())
			fprintf(stderr, "schedlab: %s/result.json: cannot write it: %s; the folder "
				"is not a run's\n", row->dir, an_file_strerror(err2));
		write_failed = true;
	}
	/* latest names a complete run folder with measured data, or stays where it was */
	if (!write_failed && !err && run.nsamples > 0) {
		err2 = update_latest(a->out, id);
		if (err2) {
			fprintf(stderr, "schedlab: cannot update %s/latest: %s%s\n", a->out,
				strerror(-err2),
				err2 == -EEXIST ? " (it is not a symlink; move it away)" : "");
			write_failed = true;
		}
	}
	if (a->json)
		print_json(&run, a, printed);
	if (an_files_interrupted())
		fprintf(stderr, "schedlab: %s: interrupted again while writing %s; %s/latest was "
			"left as it was\n", s->wl->name, row->dir, a->out);
	else if (partial && !write_failed)
		fprintf(stderr, "schedlab: %s stopped: %s; its partial results are in %s\n",
			s->wl->name, res->error, row->dir);
	else if (partial)
		fprintf(stderr, "schedlab: %s stopped: %s; its partial results were not written\n",
			s->wl->name, res->error);

	row->score = res->summary;
	row->n = run.nsamples;
	row->nwl = run.nworkload_metrics;
	memcpy(row->wl, res->wl_metrics, sizeof(row->wl));
	row->failed = err != 0 || write_failed;
	row->unwritten = write_failed;
	/* a run folder that holds nothing of the run is not left behind */
	row->removed = write_failed && remove_unwritten_dir(row->dir);
	if (err)
		fprintf(stderr, "schedlab: %s failed: %s\n", s->wl->name, res->error);
	report_parts_free(parts);
	free(parts);
	hx_result_free(res);
	return err || write_failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static void print_table(const struct run_row *rows, size_t n)
{
	printf("\n%-16s %-10s %14s   %-12s %-7s %4s\n", "Benchmark", "Preset", "Score", "Error",
	       "Units", "n");
	for (size_t i = 0; i < n; i++) {
		const struct run_row *r = &rows[i];
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
			printf("%s%-16s %s: %.1f %s\n", i || k ? "" : "\n", k ? "" : rows[i].workload,
			       rows[i].wl[k].name, rows[i].wl[k].value, rows[i].wl[k].unit);
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
		if (!rows[i].dir[0])
			printf("  %-16s %-10s (no run folder)\n", rows[i].workload, rows[i].preset);
		else if (rows[i].removed)
			printf("  %-16s %-10s %s (not written, removed)\n", rows[i].workload,
			       rows[i].preset, rows[i].dir);
		else if (rows[i].unwritten)
			printf("  %-16s %-10s %s (not written)\n", rows[i].workload, rows[i].preset,
			       rows[i].dir);
		else if (rows[i].svg[0])
			printf("  %-16s %-10s %s\n", rows[i].workload, rows[i].preset, rows[i].svg);
		else
			printf("  %-16s %-10s %s/report.md\n", rows[i].workload, rows[i].preset,
			       rows[i].dir);
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
	struct run_row *rows = NULL;
	struct hx_profile prof;
	struct hx_probeset set;
	struct hx_probe_config pc = { 0 };
	char why[HX_WHY_LEN];
	char self[PATH_MAX];
	struct sigaction sa = { .sa_handler = on_signal };
	size_t printed = 0, nspecs;
	ssize_t len;
	int status = CLI_EXIT_OK, err;

	if (cli_argp_parse(&argp, "run", argc, argv, &a))
		return a.bad ? a.bad : CLI_EXIT_USAGE;
	if (a.oncpu_stacks && !a.oncpu)
		return cli_usage_error("--oncpu-maps is an oncpu option: add oncpu to --probes");
	if ((a.min_block_us || a.wakers || a.offcpu_stacks || a.offcpu_stacks_n) &&
	    !(a.probes & (1u << HX_PROBE_OFFCPU)))
		return cli_usage_error("%s is an offcpu option: add --probes oncpu,offcpu",
				       a.wakers		 ? "--wakers"
				       : a.offcpu_stacks	 ? "--offcpu-stacks"
				       : a.offcpu_stacks_n ? "--offcpu-maps"
							 : "--min-block-us");

	nspecs = spec_count(&a);
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

	for (size_t i = 0; i < nspecs; i++) {
		double m = specs[i].opt.iterations * specs[i].opt.time_s;
		unsigned w = specs[i].rt.workers_max ? specs[i].rt.workers_max : specs[i].rt.workers;

		if (m > pc.measure_s)
			pc.measure_s = m;
		if (specs[i].opt.forks > pc.forks)
			pc.forks = specs[i].opt.forks;
		if (!w)
			w = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
		if (w > pc.threads)
			pc.threads = w;
	}
	po.freq = (unsigned)a.freq;
	if (a.oncpu_stacks) {
		po.stack_entries = (unsigned)a.oncpu_stacks;
		po.count_entries = (unsigned)a.oncpu_counts;
		snprintf(a.oncpu_maps_sized, sizeof(a.oncpu_maps_sized), "given: --oncpu-maps");
	} else {
		po.stack_entries = oncpu_entries(a.freq, pc.measure_s, ONCPU_STACKS_SHARE,
						 PROBE_ONCPU_STACK_ENTRIES);
		po.count_entries = oncpu_entries(a.freq, pc.measure_s, 1, PROBE_ONCPU_COUNT_ENTRIES);
		snprintf(a.oncpu_maps_sized, sizeof(a.oncpu_maps_sized),
			 "for the run: counts 1.25 x %ld Hz x %ld CPUs x %g s measured, stacks a "
			 "quarter of that; at least 1024, at most %d and %d",
			 a.freq, sysconf(_SC_NPROCESSORS_ONLN), pc.measure_s,
			 PROBE_ONCPU_STACK_ENTRIES, PROBE_ONCPU_COUNT_ENTRIES);
	}
	po.callgraph = (enum probe_callgraph)a.callgraph;
	po.stack_copy = (unsigned)a.stack_copy;
	po.group_task = a.group_task;
	if (hx_profile_open(&prof, a.oncpu, &po)) {
		status = CLI_EXIT_FAIL;
		cli_usage_error("out of memory");
		goto out_free;
	}
	if (a.oncpu && prof.open_error == -ERANGE) {
		/* a frequency this machine cannot afford: the user's to lower */
		status = cli_usage_error("--freq %ld: %s", a.freq,
					 prof.status + strlen("not attached: "));
		goto out_close_profile;
	}
	err = mkdir_p(a.out);
	/* the run folders are made once there is something to write: find out now, not
	 * after the forks, that nothing can be */
	if (!err && access(a.out, W_OK))
		err = -errno;
	if (err) {
		status = folder_error(a.out, a.out, err);
		goto out_close_profile;
	}
	if (a.oncpu && !prof.attached)
		fprintf(stderr, "schedlab: oncpu: %s; the benchmarks run without it\n", prof.status);
	pc.timeline_events = (unsigned)a.timeline_events;
	pc.min_block_us = (unsigned)a.min_block_us;
	pc.wakers = a.wakers;
	pc.offcpu_stacks = a.offcpu_stacks;
	pc.offcpu_stack_entries = (unsigned)a.offcpu_stacks_n;
	pc.offcpu_count_entries = (unsigned)a.offcpu_counts_n;
	pc.alloc_sample = a.alloc_sample;
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
		int st = run_one(&specs[i], &a, &set, self, &rows[i], &printed);

		if (st == CLI_EXIT_USAGE) {
			status = st;
			break;
		}
		if (st)
			status = st;
	}
	if (a.json && nspecs > 1)
		fputs(printed ? "]\n" : "[]\n", stdout);
	if (!a.json && status != CLI_EXIT_USAGE)
		print_table(rows, nspecs);
	/* with --json, stdout holds the results alone: the comparison goes to its files */
	for (size_t i = 0; a.baseline && i < nspecs && !hx_interrupted(); i++) {
		int st;

		if (rows[i].failed || !rows[i].dir[0])
			continue;
		if (!a.json)
			printf("\n");
		st = cli_compare_write(a.baseline, rows[i].dir, rows[i].dir,
				       a.json ? CLI_COMPARE_NOTHING : CLI_COMPARE_MD);
		if (st && status == CLI_EXIT_OK)
			status = CLI_EXIT_FAIL;
	}
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
