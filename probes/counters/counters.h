/*
 * counters — hardware and software performance counters through libpfm4.
 *
 * Each event name (any name libpfm4 knows: "cycles", "perf::task-clock",
 * "skl::l2_rqsts:miss") is encoded by libpfm4 into a perf_event_attr and opened with
 * perf_event_open on the calling thread with inherit, so that the threads it starts
 * afterwards are counted too and a read gives the sum over all of them, live or
 * exited. Events are opened in groups by PMU, read with time enabled and time running
 * so that a multiplexed event can be scaled and its share of the time shown. An event
 * this machine cannot count is not an error: it is kept with its reason ("no hardware
 * PMU (perf_event_open: No such file or directory)"), to be shown as n/a, never as 0.
 */
#ifndef SCHEDLAB_PROBES_COUNTERS_H
#define SCHEDLAB_PROBES_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROBE_COUNTERS_MAX      16  /* events in one list */
#define PROBE_COUNTER_NAME_LEN  64
#define PROBE_COUNTER_NOTE_LEN  160
#define PROBE_COUNTERS_LIST_LEN (PROBE_COUNTERS_MAX * PROBE_COUNTER_NAME_LEN)

/* The hardware events where a PMU exists, and the software ones that always work. */
#define PROBE_COUNTERS_DEFAULT                                                       \
	"cycles,instructions,cache-references,cache-misses,branch-misses,"           \
	"perf::task-clock,perf::context-switches,perf::cpu-migrations,perf::page-faults"

/* One event's reading: the count and the times it was enabled and running (summed
 * over the counted threads, as the kernel sums inherited events). */
struct probe_counter_value {
	uint64_t value, enabled, running;
};

/* Split a comma list of event names. The number of events, or -EINVAL (empty, too
 * many, too long, repeated) with one line in err naming the input and the fix. names
 * may be NULL. */
int probe_counters_split(const char *list, char names[][PROBE_COUNTER_NAME_LEN], char *err,
			 size_t errlen);
/* Split, and check every name against libpfm4's tables: as probe_counters_split(), or
 * -ENOENT (a name libpfm4 does not know, with its closest matches), -EINVAL (one it
 * cannot encode), -ENODEV (libpfm4 does not start). names may be NULL. */
int probe_counters_parse(const char *list, char names[][PROBE_COUNTER_NAME_LEN], char *err,
			 size_t errlen);


/* Every event libpfm4 knows on the PMUs present here, one "pmu::event  description" a
 * line. The number listed, or -errno. */
int probe_counters_list(FILE *out);

struct probe_counters;

/* Open the events of list on the calling thread, enabled, inherited by the threads it
 * creates from now on. NULL with errno and err when list does not parse or libpfm4
 * does not start; an event that cannot be counted is not a failure (its note says
 * why). */
struct probe_counters *probe_counters_open(const char *list, char *err, size_t errlen);
void probe_counters_free(struct probe_counters *c);

unsigned probe_counters_count(const struct probe_counters *c);
const char *probe_counters_name(const struct probe_counters *c, unsigned i);
/* Whether event i is counted; if not, its note is the reason ("no hardware PMU
 * (perf_event_open: No such file or directory)"). */
bool probe_counters_counted(const struct probe_counters *c, unsigned i);
/* Why an event is not counted, or what limits a counted one ("user space only: ...");
 * "" if nothing. */
const char *probe_counters_note(const struct probe_counters *c, unsigned i);

/* Read every event into out[0 .. count): an event not counted reads as zeros. 0 or
 * -errno. */
int probe_counters_read(struct probe_counters *c, struct probe_counter_value *out);

/* b - a, event by event. */
void probe_counters_delta(const struct probe_counter_value *b, const struct probe_counter_value *a,
			  struct probe_counter_value *out, unsigned n);
/* The count scaled for multiplexing (value × enabled / running), as perf stat does;
 * NAN when the event never ran while enabled. */
double probe_counter_scaled(const struct probe_counter_value *v);

#endif /* SCHEDLAB_PROBES_COUNTERS_H */
