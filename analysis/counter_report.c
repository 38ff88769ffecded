/*
 * The performance counters in the run reports: the counters probe's JSON members, its
 * one-line summary and report.md's Counters section. An event that was not counted is
 * written as n/a with its reason, never as a number: a 0 would claim the event did not
 * happen. Counts are per op (the scaled total over the measured iterations ÷ their
 * ops), with the share of the enabled time the event was running on the PMU, so that
 * a multiplexed (scaled, estimated) count is told from an exact one.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"

void an_counters_json(FILE *out, const void *counters)
{
	const struct an_counters *cs = counters;

	fputs(", \"events\": [", out);
	for (size_t i = 0; i < cs->n; i++) {
		const struct an_counter *c = &cs->events[i];
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
		fprintf(out, ", \"raw\": %llu, \"iterations_uncounted\": %zu, \"na\": null, "
			"\"note\": ", (unsigned long long)c->raw, c->uncounted);
		an_json_str(out, c->note);
		fputs(", \"per_iteration\": [", out);
		for (size_t k = 0; k < c->niterations; k++) {
			fputs(k ? ", " : "", out);
			an_json_num(out, c->per_iteration[k]);
		}
		fputs("]}", out);
	}
	fputs(cs->n ? "\n  ]" : "]", out);
}

static bool same_reason(const struct an_counter *a, const struct an_counter *b)
{
	return !a->counted && !b->counted && !strcmp(a->note, b->note);
}

void an_counters_summary(const struct an_counters *cs, char *buf, size_t len)
{
	size_t counted = 0, off, na = 0;

	for (size_t i = 0; i < cs->n; i++)
		counted += cs->events[i].counted;
	off = (size_t)snprintf(buf, len, "%zu of %zu events counted, over all of each fork's "
			       "threads, read at the ends of every measured iteration",
			       counted, cs->n);
	/* the events not counted, those with the same reason together */
	for (size_t i = 0; i < cs->n && off < len; i++) {
		const struct an_counter *c = &cs->events[i];
		bool seen = false;

		if (c->counted)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = same_reason(&cs->events[j], c);
		if (seen)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", na++ ? "; " : "; not counted: ",
					c->name);
		for (size_t j = i + 1; j < cs->n && off < len; j++)
			if (same_reason(&cs->events[j], c))
				off += (size_t)snprintf(buf + off, len - off, ", %s",
							cs->events[j].name);
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, ": %s", c->note);
	}
}

/* Counts with few decimals where they are small, as a per-op figure often is. */
static void format_count(double v, char *buf, size_t len)
{
	an_format_number(v, fabs(v) >= 100 || v == floor(v) ? 0 : fabs(v) >= 1 ? 2 : 4, buf,
			 len);
}

void an_counters_md(FILE *out, const void *counters)
{
	const struct an_counters *cs = counters;
	char per_op[64], total[64];
	bool scaled = false, gaps = false;

	if (!cs->n)
		return;
	fputs("### Counters\n\nPerformance counters over the measured iterations of every fork, "
	      "all of each fork's threads (task-clock in ns):\n\n"
	      "| event | per op | total | running |\n| --- | ---: | ---: | ---: |\n",
	      out);
	for (size_t i = 0; i < cs->n; i++) {
		const struct an_counter *c = &cs->events[i];

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
		gaps |= c->uncounted > 0;
	}
	if (scaled)
		fputs("\nAn event running less than 100% of the time was multiplexed with others "
		      "on the PMU: its count is scaled by time enabled ÷ time running, an "
		      "estimate.\n",
		      out);
	for (size_t i = 0; gaps && i < cs->n; i++)
		if (cs->events[i].counted && cs->events[i].uncounted)
			fprintf(out, "\n%s never got onto the PMU in %zu of %zu measured iterations: "
				"those have no count, and its total and per op leave them out.\n",
				cs->events[i].name, cs->events[i].uncounted,
				cs->events[i].niterations);
	fputs("\n", out);
}
