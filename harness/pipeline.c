/*
 * One configuration, end to end: measure it under the probe set (hx_run()), then write its
 * run folder out/<stamp>-<workload>-<preset>[-N]: oncpu.folded and oncpu.svg, the other
 * probes' files, report.md, and result.json last; compute its findings on the run in
 * memory, and point out/latest at it. `schedlab run` calls this once per workload and
 * preset; `sweep` and `suite` can call it in-process. hx_pipeline_profile() writes a
 * profile of any processes (`schedlab profile`) the same way: the same folder, reports,
 * findings and latest, without iterations.
 *
 * Invariants: the folder is made only once the run has something to write (a run killed
 * before then leaves none) and is stamped with the run's start; result.json is written
 * last, so it never claims a run whose other files are missing, and a file that could
 * not be written makes the run failed there, saying which; latest moves only to a
 * complete folder with measured data; a folder that holds nothing of the run is removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "flamegraphs/flamegraph.h"
#include "harness/harness.h"

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

/* One run on its way through the pipeline: what was measured, and the run as the reports
 * describe it (whose strings point into here). */
struct pipe {
	const struct hx_spec *s; /* NULL: a profile of processes (hx_pipeline_profile()) */
	const char *name;        /* the workload's name, or the profiled program's */
	const char *preset;      /* the preset's, or "profile" */
	const struct hx_target *target;
	struct hx_target_result tres;
	const struct hx_pipeline *o;
	struct hx_probeset *set;
	struct hx_pipeline_row *row;
	struct hx_result res;
	int err;                 /* the run's failure; a run stopped by a signal has none */
	bool partial;            /* stopped by a signal: what was measured is kept */
	time_t start;
	char id[256], params[512], host[256], started[32], note[512];
	struct an_probe_summary probe;
	struct an_overhead overhead;
	char probes_text[128];
	struct report_parts parts;
	struct an_finding findings[AN_FINDINGS_MAX];
	struct an_run run;
	char path[PATH_MAX + 32];
	char unwritten_note[PATH_MAX + 160]; /* the first file not written, as result.json says */
	bool write_failed;
	int write_err;           /* the first file's error, -errno */
};

/* A line on the caller's log, where it keeps one. */
static void say(const struct pipe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct pipe *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->o->log)
		return;
	va_start(ap, fmt);
	vfprintf(p->o->log, fmt, ap);
	va_end(ap);
}

/* ---- the run folder ------------------------------------------------------------------ */

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
static int make_run_dir(const char *out, const char *name, const char *preset, time_t start,
			char *id, size_t idlen, char *dir, size_t dirlen)
{
	struct tm tm;
	char stamp[32];

	gmtime_r(&start, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	for (int n = 1; n < 1000; n++) {
		if (n == 1)
			snprintf(id, idlen, "%s-%s-%s", stamp, name, preset);
		else
			snprintf(id, idlen, "%s-%s-%s-%d", stamp, name, preset, n);
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

/* A file of the run that could not be written: the run fails there, and result.json's
 * failure names the first such file. */
static void unwritten(struct pipe *p, const char *path, int err)
{
	if (!*p->unwritten_note)
		snprintf(p->unwritten_note, sizeof(p->unwritten_note), "cannot write %s: %s", path,
			 an_file_strerror(err));
	if (!p->write_err)
		p->write_err = err;
	p->write_failed = true;
}

/* ---- the report's parts -------------------------------------------------------------- */

static void describe_host(char *buf, size_t len)
{
	struct utsname u;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (uname(&u))
		snprintf(buf, len, "unknown host, %ld CPUs", cpus);
	else
		snprintf(buf, len, "%s %s %s, %ld CPUs", u.sysname, u.release, u.machine, cpus);
}

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

/* ---- measuring ----------------------------------------------------------------------- */

/* --overhead: split the interleaved forks into those with the probes (kept as the run's)
 * and those without, and set the first against the second. */
static void measure_overhead(struct pipe *p)
{
	struct an_overhead *o = &p->overhead;
	struct hx_result *res = &p->res;
	int err;

	memset(o, 0, sizeof(*o));
	hx_probes_text(p->o->probes, p->probes_text, sizeof(p->probes_text));
	o->probes = p->probes_text;
	o->forks = p->s->opt.forks;
	err = hx_result_split_alternate(res, p->s->opt.iterations, &o->off);
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

/* Every fork of the spec under the probes (with --overhead, twice the forks, every other
 * one without them). 0, or a probe's reset failure: then nothing was measured. A failed
 * or interrupted measurement is the run's (p->err, p->partial), still to be written. */
static int measure(struct pipe *p)
{
	const struct hx_spec *s = p->s;
	struct hx_hooks hooks, set_hooks, prof_hooks;
	struct hx_alternate alternate;
	struct hx_chain chain;
	struct hx_spec doubled;
	int err;

	/* the profile first: its failure to begin stops the fork, and it ends last */
	err = p->set->oncpu ? hx_profile_reset(p->set->oncpu) : 0;
	if (!err)
		err = hx_probeset_reset(p->set);
	if (err)
		return err;
	hx_probeset_hooks(p->set, &set_hooks);
	hooks = set_hooks;
	if (p->set->oncpu) {
		hx_profile_hooks(p->set->oncpu, &prof_hooks);
		hx_hooks_chain(&chain, &prof_hooks, &set_hooks, &hooks);
	}
	if (p->o->overhead) {
		struct hx_hooks probed = hooks;

		doubled = *s;
		doubled.opt.forks *= 2;
		say(p, "  --overhead: %u forks, every other one (the first) without the probes\n",
		    doubled.opt.forks);
		hx_alternate_hooks(&alternate, &probed, &hooks);
		err = hx_run(&doubled, p->o->self, &hooks, &p->res, p->o->log);
	} else {
		err = hx_run(s, p->o->self, &hooks, &p->res, p->o->log);
	}
	/* interrupted: what was measured is kept, and the run is not a failure */
	p->partial = err == -EINTR;
	p->err = p->partial ? 0 : err;
	if (p->o->overhead && !p->err)
		measure_overhead(p);
	return 0;
}

/* ---- the on-CPU profile -------------------------------------------------------------- */

/* The on-CPU probe as the reports show it, "probes.0" of result.json. */
static void oncpu_summary(struct pipe *p)
{
	const struct hx_profile *prof = p->set->oncpu;
	struct an_probe_summary *probe = &p->probe;

	memset(probe, 0, sizeof(*probe));
	probe->name = "oncpu";
	if (!prof) {
		/* a set opened without the profile: said as hx_profile_open() says it */
		probe->status = "not attached: disabled (not in --probes)";
		return;
	}
	probe->attached = prof->attached;
	probe->status = prof->status;
	probe->attach_ns = prof->attach_ns;
	probe->cost_ns = prof->cost_ns;
	if (!prof->attached)
		return;
	probe->event = probe_oncpu_event(prof->oncpu);
	probe->event_note = probe_oncpu_event_note(prof->oncpu);
	probe->freq = probe_oncpu_freq(prof->oncpu);
	probe->samples = prof->stats.samples;
	probe->ustack_full = prof->stats.ustack_full;
	probe->kstack_full = prof->stats.kstack_full;
	probe->ustack_errors = prof->stats.ustack_errors;
	probe->kstack_errors = prof->stats.kstack_errors;
	probe->counts_full = prof->stats.counts_full;
	probe->truncated = prof->truncated; /* as drawn, DWARF's unwinds included */
	probe->ring_full = prof->stats.ring_full;
	/* a fork whose CPU time is unknown makes the figure a guess: none */
	probe->expected = prof->stats.unclocked ? 0 : prof->stats.expected;
	probe->taken = prof->stats.samples;
	probe->cpu_ns = prof->stats.cpu_ns;
	probe->window_ns = prof->stats.window_ns;
	probe->cost_pct = 100 * probe_oncpu_cost_share(prof->oncpu);
	memcpy(probe->phase_samples, prof->phase_samples, sizeof(probe->phase_samples));
	probe->callgraph = hx_callgraph_name(probe_oncpu_callgraph(prof->oncpu));
	probe->group = probe_oncpu_group_task(prof->oncpu) ? "task" : "thread";
	probe->stack_copy = probe_oncpu_stack_copy(prof->oncpu);
	probe->ring_bytes = probe_oncpu_ring_bytes(prof->oncpu);
	probe->stack_entries = probe_oncpu_stack_entries(prof->oncpu);
	probe->count_entries = probe_oncpu_count_entries(prof->oncpu);
	probe->stacks_held_max = prof->stats.stacks_held_max;
	probe->counts_held_max = prof->stats.keys_held_max;
	probe->maps_sized = p->o->oncpu_maps_sized;
	probe->stack_bytes = prof->stats.stack_bytes;
	probe->unwind_ns = prof->unwind_ns;
	probe->unwind_error = prof->unwind_error;
	probe->prog_runs = prof->prog_runs;
	probe->prog_ns = prof->prog_ns;
	probe->quality = &prof->quality;
	probe->agreement = &prof->agreement;
	probe->attribution = &prof->attribution;
	probe->nrules = an_rules_count(prof->rules);
	probe->rules = prof->rules_source;
	probe->objects = prof->objects;
	probe->nobjects = prof->nobjects;
	probe->objects_over = prof->objects_over;
}

/* oncpu.folded, then oncpu.svg drawn from it; the first that cannot be written makes the
 * run failed there. */
static void write_profile(struct pipe *p)
{
	const struct hx_profile *prof = p->set->oncpu;
	struct hx_pipeline_row *row = p->row;
	char title[256], subtitle[1024], nbuf[64];
	struct fg_options fo;
	int ferr;

	snprintf(p->path, sizeof(p->path), "%s/oncpu.folded", row->dir);
	ferr = an_folded_write_file(prof->folded, p->path);
	if (!ferr) {
		p->probe.folded = "oncpu.folded";
		fg_options_default(&fo);
		an_format_number((double)prof->stats.samples, 0, nbuf, sizeof(nbuf));
		if (p->s) {
			snprintf(title, sizeof(title), "%s · preset %s · on-CPU", p->name,
				 p->preset);
			snprintf(subtitle, sizeof(subtitle),
				 "%s · %s %u Hz · %s samples of the measured iterations",
				 p->params, p->probe.event, p->probe.freq, nbuf);
		} else {
			snprintf(title, sizeof(title), "%s · on-CPU", p->name);
			snprintf(subtitle, sizeof(subtitle), "%.600s · %s %u Hz · %s samples",
				 p->params, p->probe.event, p->probe.freq, nbuf);
		}
		fo.title = title;
		fo.subtitle = subtitle;
		snprintf(p->path, sizeof(p->path), "%s/oncpu.svg", row->dir);
		ferr = fg_svg_write_file(prof->folded, &fo, p->path);
		if (!ferr) {
			p->probe.svg = "oncpu.svg";
			snprintf(row->svg, sizeof(row->svg), "%s", p->path);
		}
	}
	if (ferr) {
		if (!an_files_interrupted())
			say(p, "schedlab: %s: cannot write the profile: %s\n", p->path,
			    an_file_strerror(ferr));
		unwritten(p, p->path, ferr);
	}
}

/* ---- the reports ---------------------------------------------------------------------- */

/* The run as the reports describe it. 0 or -ENOMEM. */
static int describe_run(struct pipe *p)
{
	const struct hx_spec *s = p->s;
	const struct hx_result *res = &p->res;
	struct report_parts *parts = &p->parts;
	struct an_run *run = &p->run;
	const char *const *cols;
	size_t ncols;
	int err = p->err;

	memset(run, 0, sizeof(*run));
	run->id = p->id;
	run->workload = s->wl->name;
	run->op = s->wl->summary;
	run->preset = s->rt.preset;
	run->unit = s->wl->unit;
	run->params = p->params;
	run->command = p->o->command;
	run->started = p->started;
	run->host = p->host;
	run->forks = s->opt.forks;
	run->warmup = s->opt.warmup;
	run->iterations = s->opt.iterations;
	run->time_s = s->opt.time_s;
	run->workers = res->workers;
	run->samples = res->samples;
	run->nsamples = err ? 0 : res->nsamples;
	run->score = res->summary;
	if (report_parts_make(parts, s, res))
		return -ENOMEM;
	cols = hx_stat_columns(&ncols);
	run->metrics = parts->metrics;
	run->nmetrics = err ? 0 : parts->nmetrics;
	run->knobs = parts->knobs;
	run->nknobs = parts->nknobs;
	run->overrides = parts->overrides;
	run->per_iteration =
		(struct an_table){ cols, ncols, parts->iter_cells, err ? 0 : res->nsamples };
	run->per_worker =
		(struct an_table){ cols, ncols, parts->worker_cells, err ? 0 : res->nper };
	run->steals = res->steals;
	run->latency_hist = res->rt.latency_hist;
	run->latency_buckets = RT_LATENCY_BUCKETS;
	run->workload_metrics = parts->wl;
	run->workload_units = parts->wl_units;
	run->nworkload_metrics = err ? 0 : res->nwl_metrics;
	run->probes = &p->probe;
	run->nprobes = 1;
	run->parts = p->set->parts;
	run->nparts = p->set->n;
	run->overhead = p->o->overhead && !err ? &p->overhead : NULL;
	if (s->events[0]) {
		if (err)
			parts->counters.n = 0;
		run->counters = &parts->counters;
		run->counters_status = parts->counters_status;
		run->counters_summary = parts->counters_summary;
		run->counters_attach_ns = res->counters_attach_ns;
	}
	run->error = err ? res->error : p->note[0] ? p->note : NULL;
	run->partial = p->partial ? res->error : NULL;
	return 0;
}

/* A profile of processes as the reports describe it: no iterations, no runtime of ours;
 * the samples and how the processes ended. 0. */
static int describe_profile(struct pipe *p)
{
	struct an_run *run = &p->run;

	memset(run, 0, sizeof(*run));
	run->id = p->id;
	run->workload = p->name;
	run->op = "an on-CPU profile of the command line in params";
	run->preset = p->preset;
	run->unit = "samples";
	run->params = p->params;
	run->command = p->o->command;
	run->started = p->started;
	run->host = p->host;
	run->time_s = p->tres.seconds;
	run->score = (struct an_summary){ .mean = NAN, .sd = NAN, .min = NAN, .max = NAN,
					  .ci_half = NAN };
	run->knobs = p->parts.knobs; /* none: the program's runtime is its own */
	run->overrides = "";
	run->probes = &p->probe;
	run->nprobes = 1;
	run->parts = p->set->parts;
	run->nparts = p->set->n;
	run->error = p->err ? p->res.error : p->note[0] ? p->note : NULL;
	run->partial = p->partial ? p->res.error : NULL;
	run->profiled = p->res.error;
	p->probe.whole_program = true;
	return 0;
}

/* The findings of the run in memory (an_run_findings()), so that report.md and
 * result.json carry what 'schedlab diagnose' would say of the folder. Without them the
 * run is still written, and the reason is said. */
static void attach_findings(struct pipe *p)
{
	char path[PATH_MAX + 16], err[512];
	int n;

	snprintf(path, sizeof(path), "%s/result.json", p->row->dir);
	n = an_run_findings(&p->run, path, p->findings, AN_FINDINGS_MAX, err, sizeof(err));
	if (n < 0) {
		say(p, "schedlab: %s; the report goes without findings\n", err);
		return;
	}
	p->run.findings = p->findings;
	p->run.nfindings = (size_t)n < AN_FINDINGS_MAX ? (size_t)n : AN_FINDINGS_MAX;
}

/* report.md, then result.json last, so that it never claims a run whose other files are
 * missing: a file that could not be written makes the run failed there, saying which.
 * Then latest, to a complete run folder with measured data, or it stays where it was. */
static void write_reports(struct pipe *p)
{
	const char *dir = p->row->dir;
	int err;

	err = write_report(dir, "report.md", write_markdown, &p->run);
	if (err) {
		if (!an_files_interrupted())
			say(p, "schedlab: %s/report.md: cannot write the report: %s\n", dir,
			    an_file_strerror(err));
		snprintf(p->path, sizeof(p->path), "%s/report.md", dir);
		unwritten(p, p->path, err);
	}
	if (p->write_failed && !p->err)
		p->run.error = p->unwritten_note;
	err = write_report(dir, "result.json", write_json, &p->run);
	if (err) {
		if (!an_files_interrupted())
			say(p, "schedlab: %s/result.json: cannot write it: %s; the folder is not a "
			    "run's\n", dir, an_file_strerror(err));
		p->write_failed = true;
		p->write_err = p->write_err ? p->write_err : err;
	}
	/* measured data: a benchmark's iterations, a profile's samples */
	if (p->write_failed || p->err ||
	    (p->s ? p->run.nsamples == 0 : p->probe.samples == 0))
		return;
	err = update_latest(p->o->out, p->id);
	if (err) {
		say(p, "schedlab: cannot update %s/latest: %s%s\n", p->o->out, strerror(-err),
		    err == -EEXIST ? " (it is not a symlink; move it away)" : "");
		p->write_failed = true;
		p->write_err = err;
	}
}

/* How the run ended, said once its files are written (or not). */
static void say_end(struct pipe *p)
{
	const char *name = p->name, *why = p->res.error;

	if (an_files_interrupted())
		say(p, "schedlab: %s: interrupted again while writing %s; %s/latest was left as "
		    "it was\n", name, p->row->dir, p->o->out);
	else if (p->partial && !p->write_failed)
		say(p, "schedlab: %s stopped: %s; its partial results are in %s\n", name, why,
		    p->row->dir);
	else if (p->partial)
		say(p, "schedlab: %s stopped: %s; its partial results were not written\n", name,
		    why);
}

/* The folder's files, from the measured result on: the profile, the other probes', the
 * reports, latest. Fills the row. */
static int write_run(struct pipe *p)
{
	struct hx_pipeline_row *row = p->row;
	const struct hx_profile *prof = p->set->oncpu;
	const struct hx_result *res = &p->res;

	oncpu_summary(p);
	if (prof && prof->attached && !p->err)
		write_profile(p);
	if (prof && prof->error)
		snprintf(p->note, sizeof(p->note), "profile collection failed: %s",
			 strerror(-prof->error));
	/* the other probes' files; one that failed says so in its status, the run goes on */
	/* an interrupted fork never sent the counters its events would be checked against */
	if (!p->partial)
		hx_probeset_observe(p->set, res);
	if (!p->err && hx_probeset_finish(p->set, row->dir) && an_files_interrupted()) {
		p->write_failed = true;
		p->write_err = -EINTR;
	}
	if (p->s ? describe_run(p) : describe_profile(p)) {
		say(p, "schedlab: out of memory\n");
		row->failed = true;
		return -ENOMEM;
	}
	attach_findings(p);
	if (p->run.nfindings)
		row->top = p->run.findings[0];
	write_reports(p);
	if (p->o->emit)
		p->o->emit(p->o->emit_ctx, &p->run);
	say_end(p);

	row->score = res->summary;
	row->n = p->run.nsamples;
	row->nwl = p->run.nworkload_metrics;
	memcpy(row->wl, res->wl_metrics, sizeof(row->wl));
	row->failed = p->err != 0 || p->write_failed;
	row->partial = p->partial;
	row->unwritten = p->write_failed;
	snprintf(row->error, sizeof(row->error), "%s", p->err || p->partial ? res->error : "");
	/* a run folder that holds nothing of the run is not left behind */
	row->removed = p->write_failed && remove_unwritten_dir(row->dir);
	if (p->err)
		say(p, "schedlab: %s failed: %s\n", p->name, res->error);
	return p->err ? p->err : p->write_failed ? p->write_err : 0;
}

/* ---- one run -------------------------------------------------------------------------- */

/* A run on its way, started now, with row made ready for the caller; NULL after the line
 * that says so when there is no memory for it (row->failed). */
static struct pipe *pipe_new(const char *name, const char *preset, const char *unit,
			     struct hx_probeset *set, const struct hx_pipeline *o,
			     struct hx_pipeline_row *row)
{
	struct pipe *p;
	struct tm tm;

	memset(row, 0, sizeof(*row));
	row->workload = name;
	row->preset = preset;
	row->unit = unit;
	p = calloc(1, sizeof(*p));
	if (!p) {
		if (o->log)
			fprintf(o->log, "schedlab: out of memory\n");
		row->failed = true;
		return NULL;
	}
	p->name = name;
	p->preset = preset;
	p->o = o;
	p->set = set;
	p->row = row;
	p->start = time(NULL);
	gmtime_r(&p->start, &tm);
	strftime(p->started, sizeof(p->started), "%Y-%m-%dT%H:%M:%SZ", &tm);
	describe_host(p->host, sizeof(p->host));
	return p;
}

int hx_pipeline_run(const struct hx_spec *s, struct hx_probeset *set, const struct hx_pipeline *o,
		    struct hx_pipeline_row *row)
{
	struct pipe *p = pipe_new(s->wl->name, s->rt.preset, s->wl->unit, set, o, row);
	int err;

	if (!p)
		return -ENOMEM;
	p->s = s;
	hx_spec_params_text(s, p->params, sizeof(p->params));

	err = measure(p);
	if (err) {
		row->failed = true;
		goto out_free;
	}
	err = make_run_dir(o->out, p->name, p->preset, p->start, p->id, sizeof(p->id), row->dir,
			   sizeof(row->dir));
	if (err) {
		/* the caller says why, naming the folder tried: it knows what --out was */
		row->dir_error = err;
		row->failed = true;
		goto out_free_result;
	}
	err = write_run(p);
	report_parts_free(&p->parts);
out_free_result:
	hx_result_free(&p->res);
out_free:
	free(p);
	return err;
}

/* ---- a profile of processes ------------------------------------------------------------ */

/* How the profile ended, into res.error, err and partial as a run's would be. */
static void profile_ended(struct pipe *p, int err, const char *name)
{
	const struct hx_target_result *r = &p->tres;
	const struct hx_target *t = p->target;
	char *why = p->res.error;
	size_t len = sizeof(p->res.error);

	if (err) {
		p->err = err;
		snprintf(why, len, "%s", r->error[0] ? r->error : strerror(-err));
	} else if (r->interrupted) {
		/* with running processes and no duration, Ctrl-C is how a profile ends */
		p->partial = t->argv || t->duration_s > 0;
		snprintf(why, len, "%s after %.1f s", strsignal(hx_interrupted()), r->seconds);
	} else if (r->timed_out) {
		snprintf(why, len, "--duration ended after %.1f s", r->seconds);
	} else if (r->pid && WIFEXITED(r->wait_status)) {
		snprintf(why, len, "%s exited with status %d after %.1f s", name,
			 WEXITSTATUS(r->wait_status), r->seconds);
	} else if (r->pid && WIFSIGNALED(r->wait_status)) {
		snprintf(why, len, "%s was killed by %s after %.1f s", name,
			 strsignal(WTERMSIG(r->wait_status)), r->seconds);
	} else {
		snprintf(why, len, "every process had exited after %.1f s", r->seconds);
	}
}

int hx_pipeline_profile(const struct hx_target *t, const char *name, struct hx_probeset *set,
			const struct hx_pipeline *o, struct hx_pipeline_row *row,
			struct hx_target_result *tres)
{
	struct pipe *p = pipe_new(name, "profile", "samples", set, o, row);
	int err;

	if (!p)
		return -ENOMEM;
	p->target = t;
	if (t->argv) {
		size_t off = 0;

		for (size_t i = 0; t->argv[i] && off < sizeof(p->params) - 1; i++)
			off += (size_t)snprintf(p->params + off, sizeof(p->params) - off, "%s%s",
						i ? " " : "", t->argv[i]);
	} else {
		size_t off = (size_t)snprintf(p->params, sizeof(p->params), "pid");

		for (size_t i = 0; i < t->npids && off < sizeof(p->params) - 1; i++)
			off += (size_t)snprintf(p->params + off, sizeof(p->params) - off, "%s%d",
						i ? "," : " ", (int)t->pids[i]);
	}

	err = set->oncpu ? hx_profile_reset(set->oncpu) : -ENODEV;
	if (!err)
		err = hx_profile_target(set->oncpu, t, &p->tres);
	*tres = p->tres;
	/* nothing sampled: a process that is not there, a command that could not start */
	if (err && !p->tres.seconds) {
		snprintf(row->error, sizeof(row->error), "%s",
			 p->tres.error[0] ? p->tres.error : strerror(-err));
		row->failed = true;
		free(p);
		return err;
	}
	profile_ended(p, err, name);
	if (!p->err && !p->partial)
		say(p, "schedlab: %s\n", p->res.error);
	err = make_run_dir(o->out, p->name, p->preset, p->start, p->id, sizeof(p->id), row->dir,
			   sizeof(row->dir));
	if (err) {
		row->dir_error = err;
		row->failed = true;
		free(p);
		return err;
	}
	err = write_run(p);
	free(p);
	return err;
}
