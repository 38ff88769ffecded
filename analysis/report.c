/*
 * Report writers for one benchmark run: result.json (for programs) and report.md
 * (for people).
 *
 * result.json is stable, flat where it can be, and complete: every measured
 * iteration, the score with its error and n, the runtime's counters, and for each
 * probe its status, event, frequency, samples and every kind of loss. A failed run
 * still gets both files, with the error, so that no result is ever lost silently.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "runtime/phase.h"

static const char *const categories[RT_PHASE_COUNT] = {
	[RT_PHASE_NONE] = "other",   [RT_PHASE_RUN] = "user",   [RT_PHASE_SCHED] = "sched",
	[RT_PHASE_SUBMIT] = "submit", [RT_PHASE_PARK] = "park",  [RT_PHASE_BLOCK] = "block",
	[RT_PHASE_ALLOC] = "alloc",   [RT_PHASE_STACKCAP] = "stackcap",
};

const char *an_phase_category(unsigned phase)
{
	return phase < RT_PHASE_COUNT ? categories[phase] : "other";
}

void an_format_number(double v, int decimals, char *buf, size_t len)
{
	char digits[64];
	size_t off = 0;
	int start, intlen, i;

	if (!len)
		return;
	if (!isfinite(v)) {
		snprintf(buf, len, "%s", isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf");
		return;
	}
	snprintf(digits, sizeof(digits), "%.*f", decimals, v);
	start = digits[0] == '-';
	intlen = (int)strcspn(digits + start, ".");
	for (i = 0; digits[i] && off + 1 < len; i++) {
		int pos = i - start; /* position within the integer part */

		if (pos > 0 && pos < intlen && (intlen - pos) % 3 == 0 && off + 2 < len)
			buf[off++] = ',';
		buf[off++] = digits[i];
	}
	buf[off] = '\0';
}

int an_score_decimals(double score, double error)
{
	if (fabs(score) >= 1000)
		return 0;
	if (isfinite(error) && error > 0 && error < 0.005)
		return 3;
	return 2;
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void json_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

/* JSON has no NaN or infinity: they become null. */
static void json_num(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.17g", v);
	else
		fputs("null", out);
}

static void json_probe(FILE *out, const struct an_probe_summary *p)
{
	fputs("{\"name\": ", out);
	json_str(out, p->name);
	fprintf(out, ", \"attached\": %s, \"status\": ", p->attached ? "true" : "false");
	json_str(out, p->status);
	fputs(", \"event\": ", out);
	json_str(out, p->event);
	fputs(", \"event_note\": ", out);
	json_str(out, p->event_note);
	fprintf(out,
		", \"frequency_hz\": %u, \"samples\": %llu, \"lost\": {"
		"\"user_stack_storage_full\": %llu, \"kernel_stack_storage_full\": %llu, "
		"\"user_stack_errors\": %llu, \"kernel_stack_errors\": %llu, "
		"\"counts_map_full\": %llu, \"truncated_stacks\": %llu}, \"categories\": {",
		p->freq, (unsigned long long)p->samples, (unsigned long long)p->ustack_full,
		(unsigned long long)p->kstack_full, (unsigned long long)p->ustack_errors,
		(unsigned long long)p->kstack_errors, (unsigned long long)p->counts_full,
		(unsigned long long)p->truncated);
	for (unsigned i = 0; i < RT_PHASE_COUNT; i++)
		fprintf(out, "%s\"%s\": %llu", i ? ", " : "", categories[i],
			(unsigned long long)p->phase_samples[i]);
	fputs("}, \"folded\": ", out);
	json_str(out, p->folded);
	fputs(", \"svg\": ", out);
	json_str(out, p->svg);
	fputc('}', out);
}

static void json_table(FILE *out, const struct an_table *t)
{
	fputs("{\"columns\": [", out);
	for (size_t c = 0; c < t->ncols; c++) {
		fputs(c ? ", " : "", out);
		json_str(out, t->cols[c]);
	}
	fputs("], \"rows\": [", out);
	for (size_t r = 0; r < t->nrows; r++) {
		fputs(r ? ",\n      [" : "\n      [", out);
		for (size_t c = 0; c < t->ncols; c++) {
			fputs(c ? ", " : "", out);
			json_num(out, t->cells[r * t->ncols + c]);
		}
		fputc(']', out);
	}
	fputs(t->nrows ? "\n    ]}" : "]}", out);
}

int an_report_json(const struct an_run *r, FILE *out)
{
	fputs("{\n  \"schema\": \"schedlab-result/1\",\n  \"id\": ", out);
	json_str(out, r->id);
	fputs(",\n  \"workload\": ", out);
	json_str(out, r->workload);
	fputs(",\n  \"op\": ", out);
	json_str(out, r->op);
	fputs(",\n  \"preset\": ", out);
	json_str(out, r->preset);
	fputs(",\n  \"params\": ", out);
	json_str(out, r->params);
	fputs(",\n  \"command\": ", out);
	json_str(out, r->command);
	fputs(",\n  \"started\": ", out);
	json_str(out, r->started);
	fputs(",\n  \"host\": ", out);
	json_str(out, r->host);
	fprintf(out,
		",\n  \"forks\": %u,\n  \"warmup_iterations\": %u,\n  \"iterations\": %u,\n"
		"  \"iteration_seconds\": ",
		r->forks, r->warmup, r->iterations);
	json_num(out, r->time_s);
	fprintf(out, ",\n  \"workers\": %u,\n  \"unit\": ", r->workers);
	json_str(out, r->unit);
	fputs(",\n  \"score\": ", out);
	json_num(out, r->nsamples ? r->score.mean : NAN);
	fputs(",\n  \"error\": ", out);
	json_num(out, r->nsamples ? r->score.ci_half : NAN);
	fputs(",\n  \"confidence\": 0.999", out);
	fprintf(out, ",\n  \"n\": %zu,\n  \"sd\": ", r->nsamples);
	json_num(out, r->nsamples ? r->score.sd : NAN);
	fputs(",\n  \"samples\": [", out);
	for (size_t i = 0; i < r->nsamples; i++) {
		fputs(i ? ", " : "", out);
		json_num(out, r->samples[i]);
	}
	fputs("],\n  \"runtime\": {", out);
	for (size_t i = 0; i < r->nmetrics; i++) {
		fputs(i ? ", " : "", out);
		json_str(out, r->metrics[i].name);
		fputs(": ", out);
		json_num(out, r->metrics[i].value);
	}
	fputs("},\n  \"workload_metrics\": {", out);
	for (size_t i = 0; i < r->nworkload_metrics; i++) {
		fputs(i ? ", " : "", out);
		json_str(out, r->workload_metrics[i].name);
		fputs(": {\"value\": ", out);
		json_num(out, r->workload_metrics[i].value);
		fputs(", \"unit\": ", out);
		json_str(out, r->workload_units[i]);
		fputc('}', out);
	}
	fputs("},\n  \"knobs\": {", out);
	for (size_t i = 0; i < r->nknobs; i++) {
		fputs(i ? ", " : "", out);
		json_str(out, r->knobs[i].name);
		fputs(": ", out);
		json_str(out, r->knobs[i].value);
	}
	fputs("},\n  \"overrides\": ", out);
	json_str(out, r->overrides ? r->overrides : "");
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
	fputs(r->nprobes ? "\n  ],\n  \"failure\": " : "],\n  \"failure\": ", out);
	json_str(out, r->error);
	fputs("\n}\n", out);
	return ferror(out) ? -EIO : 0;
}

/* ---- Markdown ---------------------------------------------------------------------------- */

static void md_probe(FILE *out, const struct an_probe_summary *p)
{
	uint64_t lost = p->ustack_full + p->kstack_full + p->ustack_errors +
			p->kstack_errors + p->counts_full;
	char n[64];

	if (!p->attached) {
		fprintf(out, "- **%s**: %s\n", p->name, p->status);
		return;
	}
	an_format_number((double)p->samples, 0, n, sizeof(n));
	fprintf(out, "- **%s**: %s, %u Hz%s%s%s; %s samples of the measured iterations", p->name,
		p->event, p->freq, p->event_note && *p->event_note ? " (" : "",
		p->event_note && *p->event_note ? p->event_note : "",
		p->event_note && *p->event_note ? ")" : "", n);
	if (lost || p->truncated)
		fprintf(out,
			"; lost parts: %llu user and %llu kernel stacks with storage full, %llu "
			"user-stack and %llu kernel-stack errors, %llu with the counts map full, "
			"%llu truncated stacks (all kept in the folded file as [lost: ...] frames)",
			(unsigned long long)p->ustack_full,
			(unsigned long long)p->kstack_full, (unsigned long long)p->ustack_errors,
			(unsigned long long)p->kstack_errors, (unsigned long long)p->counts_full,
			(unsigned long long)p->truncated);
	else
		fputs("; nothing lost", out);
	fputs("\n", out);
	if (p->samples) {
		fputs("\n  | category | samples | share |\n  | --- | ---: | ---: |\n", out);
		for (unsigned i = 0; i < RT_PHASE_COUNT; i++) {
			if (!p->phase_samples[i])
				continue;
			an_format_number((double)p->phase_samples[i], 0, n, sizeof(n));
			fprintf(out, "  | %s | %s | %.1f%% |\n", categories[i], n,
				100.0 * (double)p->phase_samples[i] / (double)p->samples);
		}
		fputs("\n", out);
	}
	if (p->svg)
		fprintf(out, "  Flame graph: [%s](%s); folded stacks: [%s](%s)\n\n", p->svg, p->svg,
			p->folded, p->folded);
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

	fprintf(out, "# %s · preset %s\n\n", r->workload, r->preset);
	fprintf(out, "One op: %s (%s).\n\n", r->op, r->params && *r->params ? r->params : "no parameters");
	if (r->error)
		fprintf(out, "**The run failed:** %s\n\n", r->error);
	if (r->nsamples) {
		an_format_number(r->score.mean, dec, score, sizeof(score));
		an_format_number(r->score.ci_half, dec, err, sizeof(err));
		fprintf(out,
			"| benchmark | preset | score | error (99.9%%) | unit | n |\n"
			"| --- | --- | ---: | ---: | --- | ---: |\n"
			"| %s | %s | %s | ± %s | %s | %zu |\n\n",
			r->workload, r->preset, score, r->nsamples > 1 ? err : "n/a", r->unit,
			r->nsamples);
		fprintf(out,
			"%u forks × (%u warm-up + %u measured iterations) × %g s, %u worker threads. "
			"The error is the half-width of the 99.9%% confidence interval from Student's "
			"t with n − 1 degrees of freedom over every measured iteration of every fork.\n\n",
			r->forks, r->warmup, r->iterations, r->time_s, r->workers);
		fputs("Iterations:", out);
		for (size_t i = 0; i < r->nsamples; i++) {
			an_format_number(r->samples[i], dec, score, sizeof(score));
			fprintf(out, "%s %s", i ? "," : "", score);
		}
		fprintf(out, " %s\n\n", r->unit);
	}
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
	if (r->nprobes) {
		fputs("## Probes\n\n", out);
		for (size_t i = 0; i < r->nprobes; i++)
			md_probe(out, &r->probes[i]);
		fputs("\n", out);
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
