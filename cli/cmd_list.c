/*
 * schedlab list: what can be run — workloads with their parameters, runtime presets,
 * and the probes with whether they can attach on this machine and why not.
 */
#include <argp.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "harness/harness.h"
#include "probes/counters/counters.h"
#include "probes/probes.h"
#include "runtime/rt.h"
#include "workloads/workload.h"

enum {
	SHOW_WORKLOADS = 1,
	SHOW_PRESETS = 2,
	SHOW_PROBES = 4,
	SHOW_KNOBS = 8,
	SHOW_EVENTS = 16,
	SHOW_RULES = 32,
};

static const char doc[] =
	"List what schedlab can run: workloads (with their parameters, set with -P), runtime "
	"presets (set with --preset; --presets shows each one's every knob), the knobs "
	"(set with -c over a preset) and probes (each tried: whether it can attach here, and "
	"if not why); "
	"--events lists the performance-counter events libpfm4 knows on this machine's "
	"PMUs (for run --events); --rules prints the built-in stack rules that give each "
	"sample its category, to copy and extend for run --rules or profile --rules.\v"
	"Examples:\n"
	"  schedlab list\n"
	"  schedlab list --workloads\n"
	"  schedlab list --presets\n"
	"  schedlab list --knobs\n"
	"  schedlab list --probes\n"
	"  schedlab list --events\n"
	"  schedlab list --rules > my.rules";

static const struct argp_option options[] = {
	{ "workloads", 'w', NULL, 0, "only the workloads and their parameters", 0 },
	{ "presets", 'p', NULL, 0, "only the runtime presets, each with its whole knob vector", 0 },
	{ "knobs", 'k', NULL, 0, "only the runtime knobs: what each means and takes", 0 },
	{ "probes", 'e', NULL, 0, "only the probes, and whether they can attach", 0 },
	{ "events", 'v', NULL, 0,
	  "only the counter events libpfm4 knows here (names for run --events)", 0 },
	{ "rules", 'r', NULL, 0,
	  "only the built-in stack rules, as a file --rules takes (analysis/categories.rules)",
	  0 },
	{ 0 },
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	int *show = state->input;

	switch (key) {
	case 'w':
		*show |= SHOW_WORKLOADS;
		return 0;
	case 'p':
		*show |= SHOW_PRESETS;
		return 0;
	case 'e':
		*show |= SHOW_PROBES;
		return 0;
	case 'k':
		*show |= SHOW_KNOBS;
		return 0;
	case 'v':
		*show |= SHOW_EVENTS;
		return 0;
	case 'r':
		*show |= SHOW_RULES;
		return 0;
	case ARGP_KEY_ARG:
		cli_usage_error("list takes no argument, got '%s'; choose a section with "
				"--workloads, --presets or --probes",
				arg);
		return EINVAL;
	}
	return ARGP_ERR_UNKNOWN;
}

static void list_workloads(void)
{
	const struct wl_desc *const *all = wl_all();

	printf("Workloads (schedlab run WORKLOAD -P name=value):\n");
	for (size_t i = 0; all[i]; i++) {
		const struct wl_desc *d = all[i];

		printf("  %-16s %s (%s)\n", d->name, d->summary, d->unit);
		for (int k = 0; d->params && d->params[k].name; k++) {
			const struct wl_param *p = &d->params[k];
			char range[96];

			if (p->type == WL_CHOICE)
				snprintf(range, sizeof(range), "%s", p->choices);
			else
				snprintf(range, sizeof(range),
					 p->type == WL_REAL ? "%g..%g" :
					 p->type == WL_POW2 ? "%.0f..%.0f, 2^k" : "%.0f..%.0f",
					 p->min, p->max);
			printf("      %-12s default %-8s %-18s %s\n", p->name, p->def, range, p->help);
		}
	}
}

/* With vectors, each preset's every knob, so two presets can be compared line by line. */
static void list_presets(bool vectors)
{
	const char *const *names = rt_preset_names(), *const *knobs = rt_knob_names();

	printf("Presets (schedlab run WORKLOAD --preset NAME):\n");
	for (size_t i = 0; names[i]; i++) {
		struct rt_config c;
		size_t col = 6;

		printf("  %-12s %s%s\n", names[i], rt_preset_describe(names[i]),
		       i == 0 ? " (default)" : "");
		if (!vectors)
			continue;
		rt_config_preset(&c, names[i]);
		printf("     ");
		for (size_t k = 0; knobs[k]; k++) {
			char v[64], item[128];
			int n;

			rt_config_get(&c, knobs[k], v, sizeof(v));
			n = snprintf(item, sizeof(item), " %s=%s", knobs[k], v);
			if (col + (size_t)n > 100) {
				printf("\n     ");
				col = 5;
			}
			fputs(item, stdout);
			col += (size_t)n;
		}
		printf("\n");
	}
}

static void list_knobs(void)
{
	const char *const *knobs = rt_knob_names();

	printf("Knobs (schedlab run WORKLOAD --preset P -c KNOB=VALUE):\n");
	for (size_t k = 0; knobs[k]; k++)
		printf("  %-26s %s\n  %-26s   takes %s\n", knobs[k], rt_knob_describe(knobs[k]), "",
		       rt_knob_accepts(knobs[k]));
}

/* The counters line: whether hardware and software events open here, tried now. */
static void list_counters_probe(void)
{
	struct probe_counters *c;
	char why[256];

	printf("  %-10s %s\n", "counters",
	       "performance counters through libpfm4, per measured iteration (--events LIST)");
	c = probe_counters_open("cycles,perf::task-clock", why, sizeof(why));
	if (!c) {
		printf("  %-10s   here: cannot count: %s\n", "", why);
		return;
	}
	if (probe_counters_counted(c, 0))
		printf("  %-10s   here: hardware events count (cycles opens)\n", "");
	else
		printf("  %-10s   here: hardware events are n/a: %s\n", "", probe_counters_note(c, 0));
	if (probe_counters_counted(c, 1))
		printf("  %-10s   here: software events (perf::) count\n", "");
	else
		printf("  %-10s   here: software events are n/a: %s\n", "", probe_counters_note(c, 1));
	probe_counters_free(c);
}

static int list_events(void)
{
	int n;

	printf("Counter events (schedlab run WORKLOAD --probes counters --events LIST):\n");
	n = probe_counters_list(stdout);
	if (n < 0) {
		fprintf(stderr, "schedlab: list --events: libpfm4 does not start: %s\n",
			strerror(-n));
		return CLI_EXIT_FAIL;
	}
	printf("%d events on the PMUs present here; libpfm4 takes them with or without the "
	       "PMU prefix, in any case.\n", n);
	return CLI_EXIT_OK;
}


static int no_dwarf(const struct probe_dwarf_sample *s, void *ctx)
{
	(void)s;
	(void)ctx;
	return 0;
}

/* Whether oncpu opens here as `run` opens it (automatic call graph, the smallest maps):
 * its programs loaded, its events opened and attached, then closed; if not, why. */
static bool oncpu_attaches(char *why, size_t len)
{
	struct probe_oncpu_opts o = { .callgraph = PROBE_CG_AUTO, .stack_entries = 1024,
				      .count_entries = 1024, .dwarf_fn = no_dwarf };
	struct probe_oncpu *p;

	if (!probe_bpf_available(why, len))
		return false;
	p = probe_oncpu_open(&o, why, len);
	if (!p)
		return false;
	probe_oncpu_free(p);
	return true;
}

/* Whether probe o opens here: its programs loaded by the kernel's verifier and, for the
 * tracepoint probes, attached (the uprobe and USDT probes attach to a fork as it
 * starts), then closed; if not, why. */
static bool probe_attaches(const struct hx_probe_ops *o, char *why, size_t len)
{
	struct hx_probe_config cfg = { .measure_s = 0.1, .forks = 1, .threads = 1 };
	void *state = NULL;
	int r;

	if (o->available ? !o->available(why, len) : !probe_bpf_available(why, len))
		return false;
	*why = '\0';
	r = o->open(&state, &cfg, why, len);
	if (r) {
		if (!*why)
			snprintf(why, len, "%s", strerror(-r));
		return false;
	}
	o->close(state);
	return true;
}

/* Each probe, and whether it can attach here, tried: "can attach", or "cannot attach:
 * <why and the fix>". */
static void list_probes(void)
{
	char why[256];
	bool ok = oncpu_attaches(why, sizeof(why));

	printf("Probes (schedlab run WORKLOAD --probes LIST):\n");
	printf("  %-10s %s\n  %-10s   here: %s%s\n", "oncpu",
	       "on-CPU stacks, sampled per CPU (hardware cycles with a PMU, else cpu-clock)", "",
	       ok ? "can attach" : "cannot attach: ", ok ? "" : hx_probe_reason("oncpu", why));
	for (const struct hx_probe_ops *const *o = hx_probe_ops_all(); *o; o++) {
		char pwhy[256];
		bool can = probe_attaches(*o, pwhy, sizeof(pwhy));

		printf("  %-10s %s%s\n  %-10s   here: %s%s\n", (*o)->name, (*o)->summary,
		       (*o)->opt_in ? " (opt-in)" : "", "", can ? "can attach" : "cannot attach: ",
		       can ? "" : hx_probe_reason((*o)->name, pwhy));
	}
	for (int id = 0; id < HX_NPROBES; id++) {
		const struct hx_probe_ops *const *o = hx_probe_ops_all();

		while (*o && (int)(*o)->id != id)
			o++;
		if (id == HX_PROBE_COUNTERS)
			list_counters_probe();
		else if (id != HX_PROBE_ONCPU && !*o)
			printf("  %-10s not built yet\n", hx_probe_name(id));
	}
	printf("  %-10s %s\n  %-10s %s\n", "all", "every probe above that is built", "none",
	       "no probes: throughput only");
}

int cmd_list(int argc, char **argv)
{
	static const struct argp argp = { options, parse, NULL, doc, NULL, NULL, NULL };
	int show = 0;

	if (cli_argp_parse(&argp, "list", argc, argv, &show))
		return CLI_EXIT_USAGE;
	bool only_presets = show == SHOW_PRESETS;
	bool first = true;

	if (!show)
		show = SHOW_WORKLOADS | SHOW_PRESETS | SHOW_PROBES;
	if (show & SHOW_WORKLOADS) {
		list_workloads();
		first = false;
	}
	if (show & SHOW_PRESETS) {
		printf(first ? "" : "\n");
		list_presets(only_presets || (show & SHOW_KNOBS));
		first = false;
	}
	if (show & SHOW_KNOBS) {
		printf(first ? "" : "\n");
		list_knobs();
		first = false;
	}
	if (show & SHOW_PROBES) {
		printf(first ? "" : "\n");
		list_probes();
		first = false;
	}
	if (show & SHOW_RULES) {
		size_t len;
		const char *text = an_rules_builtin_text(&len);

		printf(first ? "" : "\n");
		fwrite(text, 1, len, stdout);
		first = false;
	}
	if (show & SHOW_EVENTS) {
		printf(first ? "" : "\n");
		return list_events();
	}
	return CLI_EXIT_OK;
}
