/*
 * Report writers for one benchmark run: result.json (for programs) and report.md
 * (for people).
 *
 * result.json is stable, flat where it can be, and complete: every measured
 * iteration, the score with its error and n, the runtime's counters, and for each
 * probe its status, event, frequency, samples and every kind of loss. A failed run
 * still gets both files, with the error, so that no result is ever lost silently.
 * Last, a run's findings at report time (findings.c reasons; this renders the run for it).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "runtime/phase.h"

/* The largest gap, in points, between the phase word's and the stacks' share of a
 * category; *worst is the category. 0 when nothing was classified. */
static double agreement_gap(const struct an_agreement *a, unsigned *worst)
{
	double gap = 0;

	*worst = AN_CAT_OTHER;
	for (unsigned c = 0; a->samples && c < AN_CAT_COUNT; c++) {
		double d = 100.0 * fabs((double)a->by_phase[c] - (double)a->by_stack[c]) /
			   (double)a->samples;

		if (d > gap) {
			gap = d;
			*worst = c;
		}
	}
	return gap;
}

static void json_quality(FILE *out, const struct an_stack_quality *q)
{
	fprintf(out,
		"{\"with_user_stack\": %llu, \"reached_root\": %llu, \"runtime_threads\": %llu, "
		"\"runtime_reached_root\": %llu, \"frame_pointer\": %llu, \"dwarf\": %llu, "
		"\"dwarf_fallback\": %llu, \"dwarf_then_frame_pointers\": %llu, "
		"\"with_unknown_frames\": %llu, \"frames_past_root_cut\": %llu, \"broken\": [",
		(unsigned long long)q->with_user, (unsigned long long)q->rooted,
		(unsigned long long)q->runtime, (unsigned long long)q->runtime_rooted,
		(unsigned long long)q->fp, (unsigned long long)q->dwarf,
		(unsigned long long)q->fallback, (unsigned long long)q->spliced,
		(unsigned long long)q->garbage,
		(unsigned long long)q->past_root);
	for (size_t i = 0; i < q->nbreaks; i++) {
		fputs(i ? ", {\"object\": " : "{\"object\": ", out);
		an_json_str(out, q->breaks[i].object);
		fputs(", \"walk\": ", out);
		an_json_str(out, q->breaks[i].why);
		fprintf(out, ", \"samples\": %llu}", (unsigned long long)q->breaks[i].count);
	}
	fprintf(out, "], \"broken_elsewhere\": %llu}", (unsigned long long)q->breaks_other);
}

static void json_agreement(FILE *out, const struct an_agreement *a, size_t nrules)
{
	unsigned worst;
	double gap = agreement_gap(a, &worst);

	fprintf(out, "{\"samples\": %llu, \"same_category\": %llu, \"without_user_stack\": %llu, "
		     "\"rules\": %zu, \"largest_gap_points\": ",
		(unsigned long long)a->samples, (unsigned long long)a->same,
		(unsigned long long)a->no_stack, nrules);
	an_json_num(out, a->samples ? gap : NAN);
	fputs(", \"largest_gap_category\": ", out);
	an_json_str(out, a->samples && gap > 0 ? an_category_name(worst) : NULL);
	fputs(", \"disagreement\": ", out);
	if (a->samples && gap > AN_AGREEMENT_MAX_GAP) {
		fputs("{\"category\": ", out);
		an_json_str(out, an_category_name(worst));
		fputs(", \"points\": ", out);
		an_json_num(out, gap);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fprintf(out, ", \"threshold_points\": %.1f", AN_AGREEMENT_MAX_GAP);
	fputs(", \"by_phase_word\": {", out);
	for (unsigned c = 0; c < AN_CAT_COUNT; c++)
		fprintf(out, "%s\"%s\": %llu", c ? ", " : "", an_category_name(c),
			(unsigned long long)a->by_phase[c]);
	fputs("}, \"by_stack\": {", out);
	for (unsigned c = 0; c < AN_CAT_COUNT; c++)
		fprintf(out, "%s\"%s\": %llu", c ? ", " : "", an_category_name(c),
			(unsigned long long)a->by_stack[c]);
	fputs("}}", out);
}

double an_sampling_short_pct(uint64_t expected, uint64_t taken)
{
	if (!expected || taken >= expected)
		return 0;
	return 100.0 * (double)(expected - taken) / (double)expected;
}

double an_sampling_tolerance_pct(uint64_t expected)
{
	double chance = expected ? 400.0 / sqrt((double)expected) : 100.0;

	return chance > AN_SAMPLING_TOLERANCE_PCT ? chance : AN_SAMPLING_TOLERANCE_PCT;
}

/* "212 ms", "2.87 s" */
static void format_cpu_time(uint64_t ns, char *buf, size_t len)
{
	if (ns < 1000000000u)
		snprintf(buf, len, "%.0f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
}

enum an_shortfall an_sampling_shortfall(const struct an_probe_summary *p, char *buf,
					size_t len)
{
	double short_pct = an_sampling_short_pct(p->expected, p->taken);
	enum an_shortfall why = AN_SHORT_NONE;
	char e[64], t[64], cpu[32];
	int n;

	if (len)
		buf[0] = '\0';
	if (!p->expected)
		return AN_SHORT_NONE;
	if (short_pct > an_sampling_tolerance_pct(p->expected))
		why = p->cost_pct >= AN_SAMPLING_THROTTLE_COST_PCT ? AN_SHORT_THROTTLED :
								      AN_SHORT_IDLE;
	an_format_number((double)p->expected, 0, e, sizeof(e));
	an_format_number((double)p->taken, 0, t, sizeof(t));
	format_cpu_time(p->cpu_ns, cpu, sizeof(cpu));
	n = snprintf(buf, len, "expected %s samples (the %s' %s of CPU time × %u Hz), taken %s",
		     e, p->whole_program ? "processes" : "forks", cpu, p->freq, t);
	if (n < 0 || (size_t)n >= len)
		return why;
	if (why == AN_SHORT_THROTTLED)
		snprintf(buf + n, len - (size_t)n,
			 ", short by %.1f%%: the kernel throttled sampling or could not deliver it "
			 "at this frequency (sampling took %.0f%% of a CPU)",
			 short_pct, p->cost_pct);
	else if (why == AN_SHORT_IDLE)
		snprintf(buf + n, len - (size_t)n,
			 ", short by %.1f%%, not throttled (sampling took %.0f%% of a CPU): a "
			 "CPU's timer lapses while it idles, so a burst that begins after idle "
			 "and ends within a period is not sampled",
			 short_pct, p->cost_pct);
	return why;
}

/* The category table: every sample by its category where the attribution was kept,
 * else the samples by their phase (a summary made without one). */
static unsigned probe_ncats(const struct an_probe_summary *p)
{
	return p->attribution ? AN_CAT_COUNT : RT_PHASE_COUNT;
}

static unsigned cat_of(const struct an_probe_summary *p, unsigned i)
{
	return p->attribution ? i : an_phase_category(i);
}

static uint64_t cat_samples(const struct an_probe_summary *p, unsigned i)
{
	return p->attribution ? p->attribution->by_category[i] : p->phase_samples[i];
}

static void json_probe(FILE *out, const struct an_probe_summary *p)
{
	static const char *const causes[] = { "null", "\"throttled\"", "\"idle\"" };
	char shortfall[400];
	enum an_shortfall why = an_sampling_shortfall(p, shortfall, sizeof(shortfall));

	fputs("{\"name\": ", out);
	an_json_str(out, p->name);
	fprintf(out, ", \"attached\": %s, \"status\": ", p->attached ? "true" : "false");
	an_json_str(out, p->status);
	fputs(", \"event\": ", out);
	an_json_str(out, p->event);
	fputs(", \"event_note\": ", out);
	an_json_str(out, p->event_note);
	fputs(", \"call_graph\": ", out);
	an_json_str(out, p->callgraph);
	fputs(", \"group\": ", out);
	an_json_str(out, p->group);
	fprintf(out,
		", \"frequency_hz\": %u, \"samples\": %llu, \"sampling\": {\"expected\": %llu, "
		"\"taken\": %llu, \"cpu_ns\": %llu, \"window_ns\": %llu, \"cost_pct\": %.1f, "
		"\"short_pct\": %.2f, \"tolerance_pct\": %.1f, \"throttled\": %s, "
		"\"shortfall\": %s}, \"lost\": {"
		"\"user_stack_storage_full\": %llu, \"kernel_stack_storage_full\": %llu, "
		"\"user_stack_errors\": %llu, \"kernel_stack_errors\": %llu, "
		"\"counts_map_full\": %llu, \"ring_buffer_full\": %llu, \"truncated_stacks\": %llu}, "
		"\"dwarf\": {\"stack_copy_bytes\": %u, \"ring_buffer_bytes\": %u, "
		"\"stack_bytes_copied\": %llu, \"unwind_ns\": %llu, \"unwinder_error\": ",
		p->freq, (unsigned long long)p->samples, (unsigned long long)p->expected,
		(unsigned long long)p->taken, (unsigned long long)p->cpu_ns,
		(unsigned long long)p->window_ns, p->cost_pct,
		an_sampling_short_pct(p->expected, p->taken), an_sampling_tolerance_pct(p->expected),
		why == AN_SHORT_THROTTLED ? "true" : "false", causes[why],
		(unsigned long long)p->ustack_full,
		(unsigned long long)p->kstack_full, (unsigned long long)p->ustack_errors,
		(unsigned long long)p->kstack_errors, (unsigned long long)p->counts_full,
		(unsigned long long)p->ring_full, (unsigned long long)p->truncated, p->stack_copy,
		p->ring_bytes, (unsigned long long)p->stack_bytes,
		(unsigned long long)p->unwind_ns);
	an_json_str(out, p->unwind_error && *p->unwind_error ? p->unwind_error : NULL);
	fprintf(out, "}, \"maps\": {\"stack_entries\": %u, \"count_entries\": %u, "
		     "\"stacks_held_max\": %llu, \"counts_held_max\": %llu",
		p->stack_entries, p->count_entries, (unsigned long long)p->stacks_held_max,
		(unsigned long long)p->counts_held_max);
	if (p->maps_sized) {
		fputs(", \"sized\": ", out);
		an_json_str(out, p->maps_sized);
	}
	fputs("}", out);
	fprintf(out, ", \"program\": {\"runs\": %llu, \"ns\": %llu}, \"categories\": {",
		(unsigned long long)p->prog_runs, (unsigned long long)p->prog_ns);
	for (unsigned i = 0; i < probe_ncats(p); i++)
		fprintf(out, "%s\"%s\": %llu", i ? ", " : "", an_category_name(cat_of(p, i)),
			(unsigned long long)cat_samples(p, i));
	fputs("}, \"attribution\": ", out);
	if (p->attribution)
		fprintf(out, "{\"phase_word\": %llu, \"stack_rules\": %llu, \"no_rule\": %llu}",
			(unsigned long long)p->attribution->by_phase,
			(unsigned long long)p->attribution->by_rules,
			(unsigned long long)p->attribution->no_rule);
	else
		fputs("null", out);
	fputs(", \"stacks\": ", out);
	if (p->quality)
		json_quality(out, p->quality);
	else
		fputs("null", out);
	fputs(", \"agreement\": ", out);
	if (p->agreement)
		json_agreement(out, p->agreement, p->nrules);
	else
		fputs("null", out);
	fputs(", \"rules_file\": ", out);
	an_json_str(out, p->rules); /* null: the built-in rules */
	fputs(", \"objects\": [", out);
	for (size_t i = 0; i < p->nobjects; i++) {
		fputs(i ? ", {\"path\": " : "{\"path\": ", out);
		an_json_str(out, p->objects[i].path);
		fputs(", \"build_id\": ", out);
		an_json_str(out, p->objects[i].build_id[0] ? p->objects[i].build_id : NULL);
		fputs("}", out);
	}
	fprintf(out, "], \"objects_left_out\": %zu", p->objects_over);
	fputs(", \"folded\": ", out);
	an_json_str(out, p->folded);
	fputs(", \"svg\": ", out);
	an_json_str(out, p->svg);
	fprintf(out, ", \"attach_ns\": %llu, \"cost_measure_ns\": %llu}",
		(unsigned long long)p->attach_ns, (unsigned long long)p->cost_ns);
}

static void json_part(FILE *out, const struct an_probe_part *p)
{
	fputs("{\"name\": ", out);
	an_json_str(out, p->name);
	fprintf(out, ", \"attached\": %s, \"status\": ", p->attached ? "true" : "false");
	an_json_str(out, p->status);
	fprintf(out, ", \"attach_ns\": %llu, \"summary\": ", (unsigned long long)p->attach_ns);
	an_json_str(out, p->summary);
	fputs(", \"files\": [", out);
	for (size_t i = 0; i < sizeof(p->files) / sizeof(p->files[0]) && p->files[i]; i++) {
		fputs(i ? ", " : "", out);
		an_json_str(out, p->files[i]);
	}
	fputc(']', out);
	if (p->attached && p->json)
		p->json(out, p->data);
	fputc('}', out);
}

static void json_summary(FILE *out, const struct an_summary *s)
{
	fprintf(out, "{\"n\": %zu, \"mean\": ", s->n);
	an_json_num(out, s->mean);
	fputs(", \"error\": ", out);
	an_json_num(out, s->ci_half);
	fputc('}', out);
}

static void json_overhead(FILE *out, const struct an_overhead *o)
{
	if (!o) {
		fputs("null", out);
		return;
	}
	fputs("{\"probes\": ", out);
	an_json_str(out, o->probes);
	fprintf(out, ", \"forks_each\": %u, \"measured\": %s, \"why_not\": ", o->forks,
		o->measured ? "true" : "false");
	an_json_str(out, o->measured ? NULL : o->why);
	fputs(", \"with_probes\": ", out);
	json_summary(out, &o->on);
	fputs(", \"without_probes\": ", out);
	json_summary(out, &o->off);
	fputs(", \"ratio\": ", out);
	an_json_num(out, o->measured ? o->ratio.value : NAN);
	fputs(", \"ratio_low\": ", out);
	an_json_num(out, o->measured && o->ratio.bounded ? o->ratio.lo : NAN);
	fputs(", \"ratio_high\": ", out);
	an_json_num(out, o->measured && o->ratio.bounded ? o->ratio.hi : NAN);
	fputs(", \"confidence\": 0.999}", out);
}

static void json_table(FILE *out, const struct an_table *t)
{
	fputs("{\"columns\": [", out);
	for (size_t c = 0; c < t->ncols; c++) {
		fputs(c ? ", " : "", out);
		an_json_str(out, t->cols[c]);
	}
	fputs("], \"rows\": [", out);
	for (size_t r = 0; r < t->nrows; r++) {
		fputs(r ? ",\n      [" : "\n      [", out);
		for (size_t c = 0; c < t->ncols; c++) {
			fputs(c ? ", " : "", out);
			an_json_num(out, t->cells[r * t->ncols + c]);
		}
		fputc(']', out);
	}
	fputs(t->nrows ? "\n    ]}" : "]}", out);
}

int an_report_json(const struct an_run *r, FILE *out)
{
	fputs("{\n  \"schema\": \"schedlab-result/1\",\n  \"id\": ", out);
	an_json_str(out, r->id);
	fputs(",\n  \"workload\": ", out);
	an_json_str(out, r->workload);
	fputs(",\n  \"op\": ", out);
	an_json_str(out, r->op);
	fputs(",\n  \"preset\": ", out);
	an_json_str(out, r->preset);
	if (r->profiled) {
		fputs(",\n  \"kind\": \"profile\",\n  \"ended\": ", out);
		an_json_str(out, r->profiled);
	}
	fputs(",\n  \"params\": ", out);
	an_json_str(out, r->params);
	fputs(",\n  \"command\": ", out);
	an_json_str(out, r->command);
	fputs(",\n  \"started\": ", out);
	an_json_str(out, r->started);
	fputs(",\n  \"host\": ", out);
	an_json_str(out, r->host);
	fprintf(out,
		",\n  \"forks\": %u,\n  \"warmup_iterations\": %u,\n  \"iterations\": %u,\n"
		"  \"iteration_seconds\": ",
		r->forks, r->warmup, r->iterations);
	an_json_num(out, r->time_s);
	fprintf(out, ",\n  \"workers\": %u,\n  \"unit\": ", r->workers);
	an_json_str(out, r->unit);
	fputs(",\n  \"score\": ", out);
	an_json_num(out, r->nsamples ? r->score.mean : NAN);
	fputs(",\n  \"error\": ", out);
	an_json_num(out, r->nsamples ? r->score.ci_half : NAN);
	fputs(",\n  \"confidence\": 0.999", out);
	fprintf(out, ",\n  \"n\": %zu,\n  \"sd\": ", r->nsamples);
	an_json_num(out, r->nsamples ? r->score.sd : NAN);
	fputs(",\n  \"samples\": [", out);
	for (size_t i = 0; i < r->nsamples; i++) {
		fputs(i ? ", " : "", out);
		an_json_num(out, r->samples[i]);
	}
	fputs("],\n  \"runtime\": {", out);
	for (size_t i = 0; i < r->nmetrics; i++) {
		fputs(i ? ", " : "", out);
		an_json_str(out, r->metrics[i].name);
		fputs(": ", out);
		an_json_num(out, r->metrics[i].value);
	}
	fputs("},\n  \"workload_metrics\": {", out);
	for (size_t i = 0; i < r->nworkload_metrics; i++) {
		fputs(i ? ", " : "", out);
		an_json_str(out, r->workload_metrics[i].name);
		fputs(": {\"value\": ", out);
		an_json_num(out, r->workload_metrics[i].value);
		fputs(", \"unit\": ", out);
		an_json_str(out, r->workload_units[i]);
		fputc('}', out);
	}
	fputs("},\n  \"knobs\": {", out);
	for (size_t i = 0; i < r->nknobs; i++) {
		fputs(i ? ", " : "", out);
		an_json_str(out, r->knobs[i].name);
		fputs(": ", out);
		an_json_str(out, r->knobs[i].value);
	}
	fputs("},\n  \"overrides\": ", out);
	an_json_str(out, r->overrides ? r->overrides : "");
	fputs(",\n  \"per_iteration\": ", out);
	json_table(out, &r->per_iteration);
	fputs(",\n  \"per_worker\": ", out);
	json_table(out, &r->per_worker);
	fputs(",\n  \"steals\": [", out);
	for (size_t t = 0; r->steals && t < r->per_worker.nrows; t++) {
		fputs(t ? ", [" : "[", out);
		for (size_t v = 0; v < r->per_worker.nrows; v++)
			fprintf(out, "%s%llu", v ? ", " : "",
				(unsigned long long)r->steals[t * r->per_worker.nrows + v]);
		fputc(']', out);
	}
	fputs("],\n  \"latency_hist_ns\": [", out);
	for (size_t k = 0, first = 1; r->latency_hist && k < r->latency_buckets; k++) {
		if (!r->latency_hist[k])
			continue;
		fprintf(out, "%s{\"from\": %.0f, \"count\": %llu}", first ? "" : ", ",
			ldexp(1.0, (int)k), (unsigned long long)r->latency_hist[k]);
		first = 0;
	}
	fputs("],\n  \"probes\": [", out);
	for (size_t i = 0; i < r->nprobes; i++) {
		fputs(i ? ",\n    " : "\n    ", out);
		json_probe(out, &r->probes[i]);
	}
	for (size_t i = 0; i < r->nparts; i++) {
		fputs(i || r->nprobes ? ",\n    " : "\n    ", out);
		json_part(out, &r->parts[i]);
	}
	fputs(r->nprobes || r->nparts ? "\n  ],\n  \"overhead\": " : "],\n  \"overhead\": ", out);
	json_overhead(out, r->overhead);
	fputs(",\n  \"counters\": ", out);
	if (r->counters) {
		fprintf(out, "{\"name\": \"counters\", \"attached\": %s, \"status\": ",
			r->counters_status && !strncmp(r->counters_status, "attached", 8) ? "true"
											  : "false");
		an_json_str(out, r->counters_status);
		fprintf(out, ", \"attach_ns\": %llu, \"summary\": ",
			(unsigned long long)r->counters_attach_ns);
		an_json_str(out, r->counters_summary);
		an_counters_json(out, r->counters);
		fputs("}", out);
	} else {
		fputs("null", out);
	}
	fputs(",\n  \"failure\": ", out);
	an_json_str(out, r->error);
	fprintf(out, ",\n  \"partial\": %s,\n  \"partial_reason\": ", r->partial ? "true" : "false");
	an_json_str(out, r->partial);
	fputs(",\n  \"findings\": ", out);
	if (r->findings)
		an_findings_json(r->findings, r->nfindings, out);
	else
		fputs("null", out);
	fputs("\n}\n", out);
	return ferror(out) ? -EIO : 0;
}

int an_findings_json(const struct an_finding *f, size_t n, FILE *out)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? ",\n    {\"id\": " : "\n    {\"id\": ", out);
		an_json_str(out, f[i].id);
		fputs(", \"share\": ", out);
		an_json_num(out, f[i].share);
		fputs(", \"claim\": ", out);
		an_json_str(out, f[i].claim);
		fputs(", \"evidence\": ", out);
		an_json_str(out, f[i].evidence);
		fputs(", \"action\": ", out);
		an_json_str(out, f[i].action);
		fputc('}', out);
	}
	fputs(n ? "\n  ]" : "]", out);
	return ferror(out) ? -EIO : 0;
}

/* ---- Markdown ---------------------------------------------------------------------------- */

static void md_bytes(double b, char *buf, size_t len)
{
	if (b >= 1 << 20)
		snprintf(buf, len, "%.1f MiB", b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, len, "%.1f KiB", b / (1 << 10));
	else
		snprintf(buf, len, "%.0f bytes", b);
}

static void md_duration(double ns, char *buf, size_t len)
{
	if (ns >= 1e9)
		snprintf(buf, len, "%.2f s", ns / 1e9);
	else if (ns >= 1e6)
		snprintf(buf, len, "%.1f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, len, "%.1f µs", ns / 1e3);
	else
		snprintf(buf, len, "%.0f ns", ns);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* How user stacks were walked, what that cost, and whether they reached their roots. */
static void md_stacks(FILE *out, const struct an_probe_summary *p)
{
	const struct an_stack_quality *q = p->quality;
	char a[64], b[64], c[64];
	uint64_t dwarf = q ? q->dwarf : 0;

	md_bytes(p->stack_copy, a, sizeof(a));
	if (!strcmp(p->callgraph, "fp"))
		fputs("- Stacks: frame pointers (--call-graph fp)", out);
	else
		fprintf(out, "- Stacks: %s (%s); %llu samples unwound from DWARF, %s of user stack "
			     "copied for each at most",
			p->callgraph,
			!strcmp(p->callgraph, "auto") ? "frame pointers, and DWARF for the samples "
							"whose walk met code built without them "
							"or did not reach its thread's root" :
							"every sample unwound from DWARF",
			(unsigned long long)dwarf, a);
	if (dwarf) {
		md_bytes((double)p->stack_bytes / (double)dwarf, b, sizeof(b));
		md_duration((double)p->unwind_ns / (double)dwarf, c, sizeof(c));
		fprintf(out, " (%s on average), %s unwinding each", b, c);
	}
	fputs(".", out);
	if (p->unwind_error && *p->unwind_error)
		fprintf(out, " DWARF unwinding was not available for some samples (shown as [lost: "
			     "no DWARF unwinder]): %s.", p->unwind_error);
	if (p->prog_runs) {
		md_duration((double)p->prog_ns / (double)p->prog_runs, a, sizeof(a));
		md_duration(p->samples ? (double)p->prog_ns / (double)p->samples : 0, b, sizeof(b));
		fprintf(out, " The sampling program ran %llu times (every CPU, other processes' "
			     "samples included) for %s each: %s in the kernel per sample kept.",
			(unsigned long long)p->prog_runs, a, b);
	}
	fputs("\n", out);
	if (!q || !q->with_user)
		return;
	fprintf(out, "- Stack quality: %.1f%% of the user stacks reach their thread's root (a "
		     "fiber's entry, start_thread, _start), %.1f%% on the runtime's threads",
		pct(q->rooted, q->with_user), pct(q->runtime_rooted, q->runtime));
	if (q->with_user > q->rooted) {
		fprintf(out, "; %llu broke:", (unsigned long long)(q->with_user - q->rooted));
		for (size_t i = 0; i < q->nbreaks; i++)
			fprintf(out, "%s %s (%s) %llu", i ? "," : "", q->breaks[i].object,
				q->breaks[i].why, (unsigned long long)q->breaks[i].count);
		if (q->breaks_other)
			fprintf(out, ", elsewhere %llu", (unsigned long long)q->breaks_other);
	}
	if (q->spliced)
		fprintf(out, "; %llu unwound from DWARF until it stopped short, then along the "
			     "frame-pointer walk (which skips the caller of a function that keeps "
			     "no frame)", (unsigned long long)q->spliced);
	if (q->garbage)
		fprintf(out, "; %llu with a frame in no code, shown as [unknown 0x...]",
			(unsigned long long)q->garbage);
	if (p->agreement && p->agreement->no_stack)
		fprintf(out, "; %llu runtime-thread samples without a user stack",
			(unsigned long long)p->agreement->no_stack);
	fputs(".\n", out);
}

/* Which method gave the table its categories. */
static void md_attribution(FILE *out, const struct an_attribution *a, bool whole_program,
			   const char *ph_rules)
{
	char ph[64], ru[64], no[64];

	an_format_number((double)a->by_phase, 0, ph, sizeof(ph));
	an_format_number((double)a->by_rules, 0, ru, sizeof(ru));
	an_format_number((double)a->no_rule, 0, no, sizeof(no));
	fprintf(out,
		"  Attributed by the phase word: %s samples (the runtime's threads); by the stack "
		"rules%s%s%s: %s samples (%s), %s of them named by no rule and counted as "
		"other.\n\n",
		ph, ph_rules ? " of `" : "", ph_rules ? ph_rules : "", ph_rules ? "`" : "", ru,
		whole_program ? "the program's threads: it runs no phase word of ours"
			      : "threads without a phase word, such as the harness thread",
		no);
}

/* The phase word against the stack rules, on the runtime's threads. */
static void md_agreement(FILE *out, const struct an_agreement *a, size_t nrules)
{
	unsigned worst;
	double gap = agreement_gap(a, &worst);
	char n[64];

	if (!a->samples)
		return;
	an_format_number((double)a->samples, 0, n, sizeof(n));
	fprintf(out, "  Phase word against stacks (%s samples of the runtime's threads, each "
		     "classified by its phase word and by %zu stack rules over its own frames): ",
		n, nrules);
	if (gap > 0)
		fprintf(out, "every category within %.1f points (the largest gap: %s)", gap,
			an_category_name(worst));
	else
		fputs("the same shares", out);
	fprintf(out, ", and %.1f%% of the samples in the same category both ways",
		pct(a->same, a->samples));
	if (a->samples < 1000)
		fprintf(out, " (few samples: one is %.1f points)", 100.0 / (double)a->samples);
	fputs(".\n\n", out);
	if (gap > AN_AGREEMENT_MAX_GAP)
		fprintf(out,
			"  **Disagreement: %s is %.1f%% by the phase word but %.1f%% by the "
			"stacks, %.1f points apart (more than %.0f)**: a phase function without a "
			"rule, or a rule for a function that is not one (analysis/categories.rules "
			"against runtime/phase.h).\n\n",
			an_category_name(worst), pct(a->by_phase[worst], a->samples),
			pct(a->by_stack[worst], a->samples), gap, AN_AGREEMENT_MAX_GAP);
	fputs("  | category | phase word | stacks | gap (points) |\n  | --- | ---: | ---: | ---: |\n",
	      out);
	for (unsigned c = 0; c < AN_CAT_COUNT; c++) {
		if (!a->by_phase[c] && !a->by_stack[c])
			continue;
		fprintf(out, "  | %s | %.1f%% | %.1f%% | %.1f |\n", an_category_name(c),
			pct(a->by_phase[c], a->samples), pct(a->by_stack[c], a->samples),
			fabs(pct(a->by_phase[c], a->samples) - pct(a->by_stack[c], a->samples)));
	}
	fputs("\n", out);
}

/* The probes' cost as a throughput ratio: with them over without, forks interleaved. */
static void md_overhead(FILE *out, const struct an_overhead *o, const char *unit)
{
	char on[64], off[64], eon[64], eoff[64];
	int d;

	if (!o->measured) {
		fprintf(out, "- **Overhead** (--overhead, probes %s): not measured: %s\n", o->probes,
			o->why);
		return;
	}
	d = an_score_decimals(o->off.mean, o->off.ci_half);
	an_format_number(o->on.mean, d, on, sizeof(on));
	an_format_number(o->on.ci_half, d, eon, sizeof(eon));
	an_format_number(o->off.mean, d, off, sizeof(off));
	an_format_number(o->off.ci_half, d, eoff, sizeof(eoff));
	fprintf(out, "- **Overhead** (--overhead): with the probes (%s) %s ± %s %s, without %s ± "
		"%s (%u fork%s each, interleaved, the first without); with / without = %.3f",
		o->probes, on, eon, unit, off, eoff, o->forks, o->forks == 1 ? "" : "s",
		o->ratio.value);
	if (o->ratio.bounded)
		fprintf(out, " (99.9%% CI %.3f–%.3f)", o->ratio.lo, o->ratio.hi);
	else
		fputs(" (no 99.9% interval: the runs without the probes vary too much)", out);
	fputs(an_unit_higher_is_better(unit) == 0 ? "; for time per op above 1 is the cost\n"
						  : "; below 1 is the cost\n", out);
}

/* " attached in 12.3 ms" */
static void md_attach_time(FILE *out, uint64_t ns)
{
	if (ns)
		fprintf(out, "; attached in %.1f ms", ns / 1e6);
}

static void md_part(FILE *out, const struct an_probe_part *p)
{
	fprintf(out, "- **%s**: %s", p->name, p->status);
	if (p->attach_ns && !strcmp(p->status, "attached"))
		fprintf(out, " in %.1f ms", p->attach_ns / 1e6);
	if (p->attached && p->summary && *p->summary)
		fprintf(out, "; %s", p->summary);
	for (size_t i = 0; p->attached && i < sizeof(p->files) / sizeof(p->files[0]) && p->files[i];
	     i++)
		fprintf(out, "%s[%s](%s)", i ? ", " : " → ", p->files[i], p->files[i]);
	fputs("\n", out);
}

static void md_probe(FILE *out, const struct an_probe_summary *p)
{
	uint64_t lost = p->ustack_full + p->kstack_full + p->ustack_errors + p->kstack_errors +
			p->counts_full + p->ring_full;
	char n[64], shortfall[400];
	enum an_shortfall why;

	if (!p->attached) {
		fprintf(out, "- **%s**: %s\n", p->name, p->status);
		return;
	}
	an_format_number((double)p->samples, 0, n, sizeof(n));
	fprintf(out, "- **%s**: %s, %u Hz%s%s%s", p->name, p->event, p->freq,
		p->event_note && *p->event_note ? " (" : "",
		p->event_note && *p->event_note ? p->event_note : "",
		p->event_note && *p->event_note ? ")" : "");
	md_attach_time(out, p->attach_ns);
	if (p->cost_ns)
		fprintf(out, " and %.0f ms measuring what a sample costs", p->cost_ns / 1e6);
	fprintf(out, "; %s samples %s", n,
		p->whole_program ? "while profiled" : "of the measured iterations");
	why = an_sampling_shortfall(p, shortfall, sizeof(shortfall));
	if (*shortfall)
		fprintf(out, "; %s", shortfall);
	if (lost || p->truncated)
		fprintf(out,
			"; lost parts: %llu user and %llu kernel stacks with storage full, %llu "
			"user-stack and %llu kernel-stack errors, %llu with the counts map full, "
			"%llu with the ring buffer full, %llu truncated stacks (all kept in the "
			"folded file as [lost: ...] or [truncated] frames)",
			(unsigned long long)p->ustack_full,
			(unsigned long long)p->kstack_full, (unsigned long long)p->ustack_errors,
			(unsigned long long)p->kstack_errors, (unsigned long long)p->counts_full,
			(unsigned long long)p->ring_full, (unsigned long long)p->truncated);
	if ((p->ustack_full || p->kstack_full || p->counts_full) && p->stack_entries)
		fprintf(out, "; the maps hold %u distinct stacks and %u counts a fork "
			"(--oncpu-maps STACKS,COUNTS sets them)", p->stack_entries,
			p->count_entries);
	else if (why == AN_SHORT_NONE)
		fputs("; nothing lost", out);
	fputs("\n", out);
	if (p->callgraph)
		md_stacks(out, p);
	if (p->group && !strcmp(p->group, "task"))
		fputs("- Grouping: by task (--group task): under its thread, each sample of a task "
		      "has the task's entry function as a `[task: NAME]` frame.\n",
		      out);
	else if (p->group)
		fputs("- Grouping: by thread (--group thread).\n", out);
	if (p->samples) {
		fputs("\n  | category | samples | share |\n  | --- | ---: | ---: |\n", out);
		for (unsigned i = 0; i < probe_ncats(p); i++) {
			if (!cat_samples(p, i))
				continue;
			an_format_number((double)cat_samples(p, i), 0, n, sizeof(n));
			fprintf(out, "  | %s | %s | %.1f%% |\n", an_category_name(cat_of(p, i)), n,
				100.0 * (double)cat_samples(p, i) / (double)p->samples);
		}
		fputs("\n", out);
		if (p->attribution)
			md_attribution(out, p->attribution, p->whole_program, p->rules);
	}
	if (p->agreement)
		md_agreement(out, p->agreement, p->nrules);
	if (p->nobjects)
		fprintf(out, "  Frames named from the symbols of %zu files%s; their paths and build "
			"ids are in result.json (probes[0].objects).\n\n", p->nobjects,
			p->objects_over ? " (more were used than are listed)" : "");
	if (p->svg)
		fprintf(out, "  Flame graph: [%s](%s); folded stacks: [%s](%s)\n\n", p->svg, p->svg,
			p->folded, p->folded);
}

/* What no finding examined, for want of the probes that would. */
static void md_not_examined(FILE *out, const struct an_run *r)
{
	bool sched = false, offcpu = false;
	char line[256];

	for (size_t i = 0; i < r->nparts; i++) {
		if (!r->parts[i].attached)
			continue;
		sched |= !strcmp(r->parts[i].name, "sched");
		offcpu |= !strcmp(r->parts[i].name, "offcpu");
	}
	an_findings_not_examined(sched, offcpu, line, sizeof(line));
	if (*line)
		fprintf(out, "%s\n\n", line);
}

/* The findings, ranked: a claim with its share, the evidence and what to try. */
static void md_findings(FILE *out, const struct an_run *r)
{
	fputs("## Findings\n\n", out);
	if (!r->nfindings)
		fputs("No finding crossed its threshold.\n\n", out);
	for (size_t i = 0; i < r->nfindings; i++) {
		const struct an_finding *f = &r->findings[i];

		fprintf(out, "%zu. **%s**", i + 1, f->claim);
		if (!isnan(f->share))
			fprintf(out, " (share %.0f%%)", 100 * f->share);
		fprintf(out, " `%s`  \n   Evidence: %s.  \n   Try: %s.\n", f->id, f->evidence,
			f->action);
	}
	fprintf(out, "%s", r->nfindings ? "\n" : "");
	md_not_examined(out, r);
}

/* The per-worker counters that show placement, and the steal matrix when anyone stole. */
static void md_workers(FILE *out, const struct an_run *r)
{
	static const char *const show[] = { "tasks_run",   "spawned",          "stolen",
					     "parks",       "place_remote",     "idle_while_queued_ns",
					     "stranded_ns", "blocking_episodes", "handoffs" };
	const struct an_table *t = &r->per_worker;
	size_t idx[sizeof(show) / sizeof(show[0])], nshow = 0;
	uint64_t any = 0;
	char n[64];

	if (!t->nrows)
		return;
	for (size_t k = 0; k < sizeof(show) / sizeof(show[0]); k++)
		for (size_t c = 0; c < t->ncols; c++)
			if (!strcmp(t->cols[c], show[k]))
				idx[nshow++] = c;
	fputs("Per worker:\n\n| worker |", out);
	for (size_t k = 0; k < nshow; k++)
		fprintf(out, " %s |", t->cols[idx[k]]);
	fputs("\n| ---: |", out);
	for (size_t k = 0; k < nshow; k++)
		fputs(" ---: |", out);
	fputs("\n", out);
	for (size_t row = 0; row < t->nrows; row++) {
		fprintf(out, "| %zu |", row);
		for (size_t k = 0; k < nshow; k++) {
			an_format_number(t->cells[row * t->ncols + idx[k]], 0, n, sizeof(n));
			fprintf(out, " %s |", n);
		}
		fputs("\n", out);
	}
	fputs("\n", out);
	for (size_t i = 0; r->steals && i < t->nrows * t->nrows; i++)
		any |= r->steals[i];
	if (!any)
		return;
	fputs("Tasks stolen (row: thief, column: victim):\n\n| thief |", out);
	for (size_t v = 0; v < t->nrows; v++)
		fprintf(out, " %zu |", v);
	fputs("\n| ---: |", out);
	for (size_t v = 0; v < t->nrows; v++)
		fputs(" ---: |", out);
	fputs("\n", out);
	for (size_t th = 0; th < t->nrows; th++) {
		fprintf(out, "| %zu |", th);
		for (size_t v = 0; v < t->nrows; v++) {
			an_format_number((double)r->steals[th * t->nrows + v], 0, n, sizeof(n));
			fprintf(out, " %s |", n);
		}
		fputs("\n", out);
	}
	fputs("\n", out);
}

int an_report_markdown(const struct an_run *r, FILE *out)
{
	int dec = an_score_decimals(r->score.mean, r->score.ci_half);
	char score[64], err[64];

	if (r->profiled) {
		fprintf(out, "# %s · profile\n\n", r->workload);
		fprintf(out, "Profiled: `%s`; %s.\n\n", r->params, r->profiled);
	} else {
		fprintf(out, "# %s · preset %s\n\n", r->workload, r->preset);
		fprintf(out, "One op: %s (%s).\n\n", r->op,
			r->params && *r->params ? r->params : "no parameters");
	}
	if (r->error)
		fprintf(out, "**The run failed:** %s\n\n", r->error);
	if (r->partial)
		fprintf(out, "**Partial results:** %s; the figures cover the iterations measured "
			"before it.\n\n", r->partial);
	if (r->nsamples) {
		an_format_number(r->score.mean, dec, score, sizeof(score));
		an_format_number(r->score.ci_half, dec, err, sizeof(err));
		fprintf(out,
			"| benchmark | preset | score | error (99.9%%) | unit | n |\n"
			"| --- | --- | ---: | ---: | --- | ---: |\n"
			"| %s | %s | %s | ± %s | %s | %zu |\n\n",
			r->workload, r->preset, score, r->nsamples > 1 ? err : "n/a", r->unit,
			r->nsamples);
		double started = 0;
		char more[96] = "";

		for (size_t i = 0; i < r->nmetrics; i++)
			if (!strcmp(r->metrics[i].name, "workers_started"))
				started = r->metrics[i].value;
		if (started > r->workers)
			snprintf(more, sizeof(more), " at the start, %.0f with those the runtime "
				 "started later", started);
		fprintf(out,
			"%u fork%s × (%u warm-up + %u measured iterations) × %g s, %u worker "
			"thread%s%s. The error is the half-width of the 99.9%% confidence interval "
			"from Student's t with n − 1 degrees of freedom over every measured iteration "
			"of every fork.\n\n",
			r->forks, r->forks == 1 ? "" : "s", r->warmup, r->iterations, r->time_s,
			r->workers, r->workers == 1 ? "" : "s", more);
		fputs("Iterations:", out);
		for (size_t i = 0; i < r->nsamples; i++) {
			an_format_number(r->samples[i], dec, score, sizeof(score));
			fprintf(out, "%s %s", i ? "," : "", score);
		}
		fprintf(out, " %s\n\n", r->unit);
	}
	if (r->findings)
		md_findings(out, r);
	if (r->nworkload_metrics) {
		fputs("| measured by the workload (median over forks) | value | unit |\n"
		      "| --- | ---: | --- |\n",
		      out);
		for (size_t i = 0; i < r->nworkload_metrics; i++) {
			an_format_number(r->workload_metrics[i].value, 1, score, sizeof(score));
			fprintf(out, "| %s | %s | %s |\n", r->workload_metrics[i].name, score,
				r->workload_units[i]);
		}
		fputs("\n", out);
	}
	if (r->nprobes || r->nparts || r->counters) {
		fputs("## Probes\n\n", out);
		for (size_t i = 0; i < r->nprobes; i++)
			md_probe(out, &r->probes[i]);
		for (size_t i = 0; i < r->nparts; i++)
			md_part(out, &r->parts[i]);
		if (r->counters) {
			fprintf(out, "- **counters**: %s", r->counters_status);
			/* each fork opens the events itself: the longest fork's time */
			if (r->counters_attach_ns && !strcmp(r->counters_status, "attached"))
				fprintf(out, " in %.1f ms", r->counters_attach_ns / 1e6);
			fprintf(out, "%s%s\n",
				r->counters_summary && *r->counters_summary ? "; " : "",
				r->counters_summary ? r->counters_summary : "");
		}
		if (r->overhead)
			md_overhead(out, r->overhead, r->unit);
		fputs("\n", out);
		for (size_t i = 0; i < r->nparts; i++)
			if (r->parts[i].attached && r->parts[i].md) {
				r->parts[i].md(out, r->parts[i].data);
				fputs("\n", out);
			}
		if (r->counters)
			an_counters_md(out, r->counters);
	}
	if (r->nknobs) {
		fprintf(out, "## Runtime\n\nPreset %s%s%s. ", r->preset,
			r->overrides && *r->overrides ? " with " : "",
			r->overrides && *r->overrides ? r->overrides : "");
		fputs("Knobs:", out);
		for (size_t i = 0; i < r->nknobs; i++)
			fprintf(out, "%s %s=%s", i ? "," : "", r->knobs[i].name, r->knobs[i].value);
		fputs(".\n\n", out);
	}
	if (r->nmetrics) {
		fputs("Counters over the measured iterations of all forks (times in ns):\n\n"
		      "| counter | value |\n| --- | ---: |\n",
		      out);
		for (size_t i = 0; i < r->nmetrics; i++) {
			an_format_number(r->metrics[i].value,
					 r->metrics[i].value == floor(r->metrics[i].value) ? 0 : 3,
					 score, sizeof(score));
			fprintf(out, "| %s | %s |\n", r->metrics[i].name, score);
		}
		fputs("\n", out);
	}
	md_workers(out, r);
	fprintf(out, "Reproduce: `%s`  \nRun %s, started %s on %s.\n", r->command, r->id,
		r->started, r->host);
	return ferror(out) ? -EIO : 0;
}

/* ---- at report time ---------------------------------------------------------------------- */

/* The run in memory, before any of its files is read back: rendered as result.json is,
 * into memory, and parsed as the result 'schedlab diagnose' reads from the folder. This
 * round trip is the one seam left between a run in memory and its findings, and it is
 * kept on purpose: the findings read a result by path, and the probes beside oncpu
 * (sched, offcpu, ...) hold their figures only as the JSON members their callbacks write
 * (struct an_probe_part), so a reader of struct an_run would need a second description
 * of every probe's figures, or could say something diagnose would not. Nothing here
 * touches result.json on disk; only the folder's oncpu.folded, written by now, is read. */
int an_run_findings(const struct an_run *r, const char *source, struct an_finding *out,
		    size_t max, char *err, size_t errlen)
{
	struct an_result *res;
	char *text = NULL;
	size_t len = 0;
	FILE *mem;
	int n;

	mem = open_memstream(&text, &len);
	if (!mem) {
		n = -errno;
		snprintf(err, errlen, "%s: cannot render the result for its findings: %s", source,
			 strerror(-n));
		return n;
	}
	n = an_report_json(r, mem);
	if (fclose(mem) && !n)
		n = -ENOMEM;
	if (n) {
		snprintf(err, errlen, "%s: cannot render the result for its findings: %s", source,
			 strerror(-n));
		free(text);
		return n;
	}
	{
		const char *slash = strrchr(source, '/');
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - source) : 1,
			 slash ? source : ".");
		res = an_result_parse_in(text, len, dir, source, err, errlen);
	}
	n = res ? 0 : -errno;
	free(text);
	if (!res)
		return n ? n : -EINVAL;
	n = an_findings(res, out, max);
	an_result_free(res);
	if (n < 0)
		snprintf(err, errlen, "%s: findings: %s", source, strerror(-n));
	return n;
}
