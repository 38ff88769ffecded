/*
 * The performance counters in the run reports: result.json's "counters" object and
 * report.md's counters line and table. An event that was not counted is written as
 * n/a with its reason, never as a number: a 0 would claim the event did not happen.
 * Counts are per op (the scaled total over the measured iterations ÷ their ops), with
 * the share of the enabled time the event was running on the PMU, so that a
 * multiplexed (scaled, estimated) count is told from an exact one.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"

void an__counters_json(const struct an_run *r, FILE *out)
{
	if (!r->counters_status) {
		fputs("null", out);
		return;
	}
	fputs("{\"status\": ", out);
	an_json_str(out, r->counters_status);
	fputs(", \"events\": [", out);
	for (size_t i = 0; i < r->ncounters; i++) {
		const struct an_counter *c = &r->counters[i];
		char na[256];

		fputs(i ? ",\n    " : "\n    ", out);
		fputs("{\"name\": ", out);
		an_json_str(out, c->name);
		fprintf(out, ", \"counted\": %s", c->counted ? "true" : "false");
		if (!c->counted) {
			snprintf(na, sizeof(na), "n/a: %s", c->note);
			fputs(", \"total\": null, \"per_op\": null, \"running_share\": null, "
			      "\"na\": ", out);
			an_json_str(out, na);
			fputs(", \"per_iteration\": []}", out);
			continue;
		}
		fputs(", \"total\": ", out);
		an_json_num(out, c->total);
		fputs(", \"per_op\": ", out);
		an_json_num(out, c->per_op);
		fputs(", \"running_share\": ", out);
		an_json_num(out, c->running_share);
		fprintf(out, ", \"raw\": %llu, \"na\": null, \"note\": ", (unsigned long long)c->raw);
		an_json_str(out, c->note);
		fputs(", \"per_iteration\": [", out);
		for (size_t k = 0; k < c->niterations; k++) {
			fputs(k ? ", " : "", out);
			an_json_num(out, c->per_iteration[k]);
		}
		fputs("]}", out);
	}
	fputs(r->ncounters ? "\n  ]}" : "]}", out);
}

void an__counters_md_probe(const struct an_run *r, FILE *out)
{
	size_t na = 0;

	if (!r->counters_status)
		return;
	fprintf(out, "- **counters**: %s", r->counters_status);
	/* the events not counted, those with the same reason together */
	for (size_t i = 0; i < r->ncounters; i++) {
		const struct an_counter *c = &r->counters[i];
		bool seen = false;

		if (c->counted)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !r->counters[j].counted && !strcmp(r->counters[j].note, c->note);
		if (seen)
			continue;
		fprintf(out, "%s%s", na++ ? "; " : "; not counted: ", c->name);
		for (size_t j = i + 1; j < r->ncounters; j++)
			if (!r->counters[j].counted && !strcmp(r->counters[j].note, c->note))
				fprintf(out, ", %s", r->counters[j].name);
		fprintf(out, ": %s", c->note);
	}
	fputs("\n", out);
}

/* Counts with few decimals where they are small, as a per-op figure often is. */
static void format_count(double v, char *buf, size_t len)
{
	an_format_number(v, fabs(v) >= 100 || v == floor(v) ? 0 : fabs(v) >= 1 ? 2 : 4, buf,
			 len);
}

void an__counters_md_table(const struct an_run *r, FILE *out)
{
	char per_op[64], total[64];
	bool scaled = false;

	if (!r->counters_status || !r->ncounters)
		return;
	fputs("## Counters\n\nPerformance counters over the measured iterations of every fork, "
	      "all of each fork's threads (task-clock in ns):\n\n"
	      "| event | per op | total | running |\n| --- | ---: | ---: | ---: |\n",
	      out);
	for (size_t i = 0; i < r->ncounters; i++) {
		const struct an_counter *c = &r->counters[i];

		if (!c->counted) {
			fprintf(out, "| %s | n/a: %s | n/a | n/a |\n", c->name, c->note);
			continue;
		}
		if (isnan(c->per_op))
			snprintf(per_op, sizeof(per_op), "n/a: no op");
		else
			format_count(c->per_op, per_op, sizeof(per_op));
		format_count(c->total, total, sizeof(total));
		fprintf(out, "| %s%s%s%s | %s | %s | %.1f%% |\n", c->name, *c->note ? " (" : "",
			c->note, *c->note ? ")" : "", per_op, total, 100 * c->running_share);
		scaled |= c->running_share < 1;
	}
	if (scaled)
		fputs("\nAn event running less than 100% of the time was multiplexed with others "
		      "on the PMU: its count is scaled by time enabled ÷ time running, an "
		      "estimate.\n",
		      out);
	fputs("\n", out);
}
