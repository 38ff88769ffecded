/*
 * analysis — from raw samples to answers: statistics over iterations, symbols for
 * addresses, and folded stacks.
 *
 * Statistics follow JMH: the score is the mean over every measured iteration of every
 * fork, and its error is the half-width of the two-sided 99.9% interval from Student's
 * t with n-1 degrees of freedom. Symbolization never drops a frame: an address that no
 * symbol covers is named "module+0xOFF". Folded stacks are written exactly in the
 * grammar flamegraph.pl reads: "root;...;leaf COUNT\n", sorted, duplicates summed.
 */
#ifndef SCHEDLAB_ANALYSIS_H
#define SCHEDLAB_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- statistics ------------------------------------------------------------------ */

/* The p-quantile of Student's t with df degrees of freedom: P(T <= t) = p.
 * NAN when df == 0 or p is outside (0, 1). an_t_quantile(0.9995, 8) = 5.041. */
double an_t_quantile(double p, unsigned df);

struct an_summary {
	size_t n;
	double mean;
	double sd;         /* sample standard deviation, n - 1 in the denominator */
	double min, max;
	double confidence; /* as asked, e.g. 0.999 */
	double ci_half;    /* half-width of the two-sided interval; NAN when n < 2 */
};

/* Summarize x[0..n). Returns 0, or -EINVAL when n == 0 or confidence is outside (0, 1). */
int an_summarize(const double *x, size_t n, double confidence, struct an_summary *out);

/* ---- files ------------------------------------------------------------------------------ */

/* Write a file through a temporary one beside it, renamed over path once fn (which
 * writes the content to out) succeeded: a reader never sees half a file, and a failed
 * write leaves whatever was at path alone. Mode 0644. 0, or -errno (fn's own error). */
int an_write_file_atomic(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx);

/* ---- folded stacks ---------------------------------------------------------------- */

struct an_folded; /* a multiset of stacks, frames root first, with a count each */

struct an_folded_line {
	const char *stack; /* "root;...;leaf", frames already sanitized */
	uint64_t count;
};

/* Rewrite one frame name in place so that it cannot break the grammar: ';' becomes ':',
 * control characters become ' ', and a name ending in " <digits>" gets '_' for that
 * space (flamegraph.pl would otherwise read the digits as a second count column). */
void an_frame_sanitize(char *name);

struct an_folded *an_folded_new(void);
void an_folded_free(struct an_folded *f);

/* Add one stack of frames, root first; each name is sanitized on the way in.
 * nframes == 0 is refused with -EINVAL. Returns 0 or -errno. */
int an_folded_add(struct an_folded *f, const char *const *frames, size_t nframes, uint64_t count);
/* Add a stack already joined with ';' (no count); it is taken as written. */
int an_folded_add_stack(struct an_folded *f, const char *stack, uint64_t count);
int an_folded_merge(struct an_folded *dst, const struct an_folded *src);

uint64_t an_folded_total(const struct an_folded *f); /* sum of counts */
size_t an_folded_size(const struct an_folded *f);    /* distinct stacks */
/* The stacks sorted by strcmp, duplicates summed: the order in which they are written.
 * The array is owned by f and valid until f is next changed. */
const struct an_folded_line *an_folded_lines(const struct an_folded *f, size_t *n);

int an_folded_write(const struct an_folded *f, FILE *out);
/* Write to path through a temporary file and rename, so a reader never sees half a file. */
int an_folded_write_file(const struct an_folded *f, const char *path);
/* Read a folded file. On a malformed line: NULL, errno = EINVAL, and err holds
 * "PATH:LINE: why" (one line). A fractional count is refused: counts are samples. */
struct an_folded *an_folded_read(const char *path, char *err, size_t errlen);

/* ---- symbols ------------------------------------------------------------------------ */

/* Kernel symbols from /proc/kallsyms (or a file in the same format, for tests). */
struct an_ksyms;
struct an_ksyms *an_ksyms_load(const char *path); /* NULL: /proc/kallsyms. NULL + errno on failure */
/* The symbol covering addr, and addr's offset into it; NULL below the first symbol or
 * when every address reads as 0 (kptr_restrict). */
const char *an_ksyms_lookup(const struct an_ksyms *k, uint64_t addr, uint64_t *offset);
void an_ksyms_free(struct an_ksyms *k);

/* The function symbols of one ELF file (.symtab, else .dynsym), and its PT_LOAD layout. */
struct an_symtab;
struct an_symtab *an_symtab_load(const char *path); /* NULL + errno */
const char *an_symtab_lookup(const struct an_symtab *st, uint64_t vaddr, uint64_t *offset);
/* Map a file offset to the ELF virtual address that holds it. -ENOENT when no PT_LOAD does. */
int an_symtab_offset_to_vaddr(const struct an_symtab *st, uint64_t file_off, uint64_t *vaddr);
void an_symtab_free(struct an_symtab *st);

/* Symbol tables cached by file (device and inode), shared by every process symbolized. */
struct an_symcache;
struct an_symcache *an_symcache_new(void);
void an_symcache_free(struct an_symcache *c);

/* A snapshot of /proc/PID/maps, taken while the process lives. */
struct an_procmaps;
struct an_procmaps *an_procmaps_read(pid_t pid); /* NULL + errno */
struct an_procmaps *an_procmaps_parse(const char *text, pid_t pid); /* pid 0: none known */
void an_procmaps_free(struct an_procmaps *m);

/* User-space symbolizer for one process. Takes ownership of maps. */
struct an_usyms;
struct an_usyms *an_usyms_new(struct an_symcache *cache, struct an_procmaps *maps);
/* Name the code at addr: "function", or "module+0xOFF" when no symbol covers it (OFF is
 * the ELF virtual address when the file could be read, else the file offset), or
 * "[unknown]+0xADDR" when no mapping does. Never fails; always NUL-terminates buf.
 * Callers pass return addresses minus one, so that a call that ends a function
 * resolves to the caller. */
void an_usyms_name(struct an_usyms *u, uint64_t addr, char *buf, size_t len);
void an_usyms_free(struct an_usyms *u);

/* ---- reports ------------------------------------------------------------------------ */

/* The categories on-CPU time is attributed to, indexed by the runtime's phase
 * (runtime/phase.h): "other" (not a runtime thread), "user" (the tasks' own work),
 * "sched", "submit", "park", "block", "alloc", "stackcap". */
const char *an_phase_category(unsigned phase);

struct an_kv {
	const char *name;
	double value;
};

struct an_sv {
	const char *name;
	const char *value;
};

/* Rows of numbers under named columns, row-major: cells[row * ncols + col]. */
struct an_table {
	const char *const *cols;
	size_t ncols;
	const double *cells;
	size_t nrows;
};

struct an_probe_summary {
	const char *name;       /* "oncpu" */
	bool attached;
	const char *status;     /* "attached", or "not attached: <reason>" */
	const char *event;      /* "cycles" or "cpu-clock"; NULL when not attached */
	const char *event_note; /* why the event was chosen; "" when cycles */
	unsigned freq;
	uint64_t samples;       /* samples of the benchmark kept (losses included) */
	uint64_t ustack_full, kstack_full, ustack_errors, kstack_errors;
	uint64_t counts_full, truncated;
	uint64_t phase_samples[8]; /* samples by the runtime's phase when sampled */
	const char *folded;     /* file names inside the run folder; NULL: none written */
	const char *svg;
};

/* One benchmark run: what ran, how, the score and what the probes saw. */
struct an_run {
	const char *id;
	const char *workload;
	const char *op;         /* what one operation does */
	const char *preset;
	const char *unit;       /* "ops/s" */
	const char *params;     /* "n=1000" */
	const char *command;    /* the command line that reproduces the run */
	const char *started;    /* ISO 8601, UTC */
	const char *host;       /* "Linux 6.18.44 x86_64, 2 CPUs" */
	unsigned forks, warmup, iterations;
	double time_s;
	unsigned workers;
	const double *samples;  /* each measured iteration's throughput */
	size_t nsamples;
	struct an_summary score;
	const struct an_kv *metrics; /* the runtime's counters over the measurement */
	size_t nmetrics;
	const struct an_sv *knobs;   /* the runtime's whole configuration */
	size_t nknobs;
	const char *overrides;       /* the -c settings over the preset, as typed; "" none */
	struct an_table per_iteration; /* the counters of each measured iteration */
	struct an_table per_worker;  /* the counters of each worker, summed over forks */
	const uint64_t *steals;      /* per_worker.nrows squared: [thief * n + victim] */
	const uint64_t *latency_hist; /* bucket k: schedule latencies in [2^k, 2^(k+1)) ns */
	size_t latency_buckets;
	const struct an_kv *workload_metrics; /* the workload's own figures (medians over forks) */
	const char *const *workload_units;
	size_t nworkload_metrics;
	const struct an_probe_summary *probes;
	size_t nprobes;
	const char *error;      /* why the run failed; NULL when it did not */
};

/* Write result.json / report.md for r. 0 or -errno. */
int an_report_json(const struct an_run *r, FILE *out);
int an_report_markdown(const struct an_run *r, FILE *out);
/* Format v with thousands grouped and `decimals` digits after the point: 12,345.67. */
void an_format_number(double v, int decimals, char *buf, size_t len);
/* The decimals a score and its error are shown with, as the studies print them:
 * none from 1,000 up ("3,060 ± 92"), else two ("4.95 ± 0.03"), three when the
 * error would show as 0.00. */
int an_score_decimals(double score, double error);

#endif /* SCHEDLAB_ANALYSIS_H */
