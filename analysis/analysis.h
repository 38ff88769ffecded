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

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* ---- statistics ------------------------------------------------------------------ */

/* The 99.95th percentile of the standard normal: a two-sided 99.9% interval for a share
 * of many samples (a binomial proportion, by the normal approximation). */
#define AN_Z_999 3.2905267314919

/* The p-quantile of Student's t with df degrees of freedom: P(T <= t) = p.
 * NAN when df == 0 or p is outside (0, 1). an_t_quantile(0.9995, 8) = 5.041. */
double an_t_quantile(double p, unsigned df);
/* P(F > f) for Fisher's F with d1 and d2 degrees of freedom (one-way ANOVA's test):
 * 1 for f <= 0, 0 for f = inf; NAN when d1 or d2 is 0 or f is NAN. */
double an_f_upper_tail(double f, unsigned d1, unsigned d2);

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

/* ---- growth fits -------------------------------------------------------------------- */

/* How a cost grows with a size: ordinary least squares on log-log, ln y = a + k ln x
 * (natural logarithms), k the growth exponent. */
#define AN_FIT_MAX_POINTS 256
#define AN_FIT_TOO_FEW "too few points for a fit"

struct an_fit {
	size_t n;
	double k, a;       /* slope (the exponent) and intercept */
	double se_k, se_a; /* standard errors, n - 2 degrees of freedom; NAN when n < 3 */
	double rss;        /* residual sum of squares, in ln y */
	double r2;
};

/* Fit x[0..n), y[0..n). 0, or -EINVAL when n < 2 or above AN_FIT_MAX_POINTS, a value
 * is not positive and finite, or every x is the same. */
int an_fit_loglog(const double *x, const double *y, size_t n, struct an_fit *out);
/* The growth the fit f of these points shows: "constant", "logarithmic", "sublinear",
 * "linear", "n log n", "quadratic", "cubic", ... (the table in fit.c says when each is
 * given); AN_FIT_TOO_FEW below three points. A static string. */
const char *an_fit_verdict(const double *x, const double *y, size_t n, const struct an_fit *f);

/* ---- files ------------------------------------------------------------------------------ */

/* Files in and out (files.c says why each rule). The errors of these functions, as
 * -errno; two are theirs alone, and an_file_strerror() says what they mean: */
#define AN_ENOTREG   EINVAL /* an input that is not a regular file */
#define AN_EOCCUPIED EEXIST /* an output name held by a link, device, FIFO or socket */
/* What err (either sign) means for a file: strerror(), or what AN_ENOTREG, ELOOP and
 * AN_EOCCUPIED mean here. A static string. */
const char *an_file_strerror(int err);

/* A name that a file (result.json) gives for another file of its folder: not empty, not
 * "." or "..", no '/', no control character, at most NAME_MAX bytes. */
bool an_file_name_ok(const char *name);

/* Open path (relative to dirfd, or AT_FDCWD) for reading: a regular file only, opened
 * without blocking (a FIFO would block, a device never end), not through a symbolic
 * link when nofollow. The fd, or -errno (-AN_ENOTREG, -EISDIR for a folder). */
int an_open_input(int dirfd, const char *path, bool nofollow);
/* The same as a stdio stream; NULL with errno set. */
FILE *an_fopen_input(int dirfd, const char *path, bool nofollow);

/* A folder to write into or read from by name: an O_PATH descriptor, or -errno. */
int an_dir_open(const char *path);

/* Write the file name in the folder dirfd whole or not at all: only an absent name or a
 * regular file is replaced (through a temporary file made beside it with O_EXCL,
 * fsync'ed and renamed over it); a symbolic link is refused with -ELOOP, a folder with
 * -EISDIR, anything else with -AN_EOCCUPIED, and nothing is written through them. A new
 * file's mode is 0666 less the umask; a file rewritten keeps its mode. A failed write
 * leaves whatever was at the name alone and removes its temporary file. 0, or -errno:
 * the first write error (ENOSPC, not EIO), else fn's own. */
int an_write_file_at(int dirfd, const char *name, int (*fn)(void *ctx, FILE *out), void *ctx);
/* The same for a path: its folder part is opened once (following the links the caller
 * named) and the last part written as above. For files this program names. */
int an_write_file_atomic(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx);
/* For a path the user typed (flame -o): "-" is standard output; a symbolic link is
 * followed (the user named it) and the file it resolves to written as above; a
 * character device or FIFO is written in place, never replaced; a folder, socket or
 * block device is refused (-EISDIR, -ENXIO). */
int an_write_user_file(const char *path, int (*fn)(void *ctx, FILE *out), void *ctx);

enum { AN_OUT_REPLACE = 1, AN_OUT_IN_PLACE = 2 };

/* Make writes in progress fail with EINTR (and remove their temporary files); async-signal
 * safe, for SIGINT/SIGTERM handlers. */
void an_files_interrupt(void);
bool an_files_interrupted(void);

/* ---- folded stacks ---------------------------------------------------------------- */

struct an_folded; /* a multiset of stacks, frames root first, with a count each */

/* The longest line an_folded_read() accepts, newline included: 1 MiB holds a stack of
 * 4,096 frames of 256 bytes each. */
#define AN_FOLDED_MAX_LINE (1 << 20)

struct an_folded_line {
	const char *stack; /* "root;...;leaf", frames already sanitized */
	uint64_t count;
};

/* Rewrite one frame name in place so that it cannot break the grammar: ';' becomes ':',
 * control characters become ' ', and a name ending in " <digits>" gets '_' for that
 * space (flamegraph.pl would otherwise read the digits as a second count column). */
void an_frame_sanitize(char *name);

/* FNV-1a with a finalizer: the folded table's slots, the flame graph's colours (which
 * therefore depend on a frame's name alone). */
uint64_t an_hash(const char *s, size_t len);

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
/* The same for a file another file named (result.json's "folded"): a plain name in the
 * folder dirfd, not followed through a symbolic link; label names it in messages. */
struct an_folded *an_folded_read_at(int dirfd, const char *name, const char *label, char *err,
				    size_t errlen);

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
/* The file's GNU build id in lowercase hex, "" when it carries none. */
const char *an_symtab_build_id(const struct an_symtab *st);
/* Map a file offset to the ELF virtual address that holds it. -ENOENT when no PT_LOAD does. */
int an_symtab_offset_to_vaddr(const struct an_symtab *st, uint64_t file_off, uint64_t *vaddr);
/* And back: the file offset of a virtual address in a PT_LOAD's file contents. */
int an_symtab_vaddr_to_offset(const struct an_symtab *st, uint64_t vaddr, uint64_t *file_off);
/* The function called name (the name kept for its address: see symtab.c), its address
 * and size: the span an_symtab_lookup() names it for, so no further than the next
 * symbol. 0 or -ENOENT. */
int an_symtab_find(const struct an_symtab *st, const char *name, uint64_t *vaddr, uint64_t *size);
/* The share of the file's functions (an even sample of them) that begin by setting up a
 * frame pointer: near 1 for a build with -fno-omit-frame-pointer, near 0 for one without
 * (Debian's glibc); NAN when no function could be read. */
double an_symtab_frame_pointer_share(const struct an_symtab *st);
/* The link-time addresses of the file's PLT stubs (.plt, .plt.sec, .plt.got, one span
 * over them): 0, or -ENOENT when it has none. */
int an_symtab_plt(const struct an_symtab *st, uint64_t *vaddr, uint64_t *size);
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
/* How many mappings it holds (none: a zombie's, or a kernel thread's). */
size_t an_procmaps_count(const struct an_procmaps *m);

/* User-space symbolizer for one process. Takes ownership of maps. */
struct an_usyms;
struct an_usyms *an_usyms_new(struct an_symcache *cache, struct an_procmaps *maps);
/* Name the code at addr: "function" (demangled), or "module+0xOFF" when no symbol covers
 * it (OFF is the ELF virtual address when the file could be read, else the file offset),
 * "name_[j]" for a JIT's code its perf map names, or "[unknown]+0xADDR" when no mapping
 * does. Never fails; always NUL-terminates buf.
 * Callers pass return addresses minus one, so that a call that ends a function
 * resolves to the caller. */
void an_usyms_name(struct an_usyms *u, uint64_t addr, char *buf, size_t len);
/* an_usyms_name, and the functions the compiler inlined at addr, innermost first, from
 * the DWARF of the file mapped there (its own .debug_info, or the detached file of its
 * build id under /usr/lib/debug), demangled as the name is: at most max of them into
 * inlined[] (NULL: none asked for); how many. */
#define AN_INLINES_MAX	   16  /* inlined calls named at one address, at most */
#define AN_INLINE_NAME_LEN 256
size_t an_usyms_frames(struct an_usyms *u, uint64_t addr, char *buf, size_t len,
		       char (*inlined)[AN_INLINE_NAME_LEN], size_t max);
/* name as a person reads it: a C++ or Rust symbol demangled (no parameter list; Rust's
 * hash suffix dropped), anything else as it is. Always NUL-terminates buf. */
void an_demangle(const char *name, char *buf, size_t len);
/* The most lines of a JIT's perf map read (/tmp/perf-PID.map): a bound on what a file in
 * /tmp can make the symbolizer hold. */
#define AN_JIT_MAX_SYMBOLS (1u << 22)
void an_usyms_free(struct an_usyms *u);
/* The base name of the file mapped at addr ("libc.so.6", "[vdso]"); false when no file
 * mapping holds addr (an anonymous one, or none: a garbage address). */
bool an_usyms_module(struct an_usyms *u, uint64_t addr, char *buf, size_t len);
/* Each file of the process whose symbols were read to name an address so far, with its
 * build id ("" when it carries none): fn(path, build_id, ctx) in the order of the
 * mappings, once a file. */
void an_usyms_objects(struct an_usyms *u, void (*fn)(const char *path, const char *build_id,
						     void *ctx),
		      void *ctx);
/* Whether the process's perf map names addr, code a JIT generated outside any file
 * (/tmp/perf-PID.map): "name_[j]" into buf then. */
bool an_usyms_jit(struct an_usyms *u, uint64_t addr, char *buf, size_t len);

/* Code of a process that a frame-pointer stack walk looks its frames up in. */
#define AN_CODE_NOFP 1 /* an executable mapping of an object built without frame pointers:
			* a walk through it cannot be trusted */
#define AN_CODE_ROOT 2 /* a function that begins a thread's stack: a walk ends there */

struct an_code_range {
	uint64_t start, end; /* [start, end) */
	unsigned kind;       /* AN_CODE_* */
};

/* The process's code ranges, sorted and disjoint: each function named in roots (NULL-
 * terminated) that some mapped object defines, and every executable mapping of an object
 * whose functions mostly lack a frame-pointer setup (an_symtab_frame_pointer_share()
 * below one half), less the roots inside it, and the PLT stubs of every other object
 * (which keep no frame: a frame-pointer walk from one skips its caller). At most max are written, roots first; the
 * rest are counted in *dropped. Returns the number written, or -errno. */
int an_usyms_code_ranges(struct an_usyms *u, const char *const *roots,
			 struct an_code_range *out, size_t max, size_t *dropped);

/* ---- result.json, read back ------------------------------------------------------ */

/* A result.json as 'schedlab run' wrote it, for the commands that reason over finished
 * runs. A path names a value by member names and array indexes joined by '.':
 * "runtime.stranded_ns", "probes.0.samples", "per_worker.rows.1.3". */
struct an_result;

#define AN_RESULT_MAX_BYTES (64 << 20)
#define AN_RUN_NAME_MAX 120 /* a run's name ("id"), which names folders */

/* PATH is a run folder (its result.json is read, a regular file not reached through a
 * link) or a result.json itself. Nothing read is trusted: every number is finite, every
 * string's control characters are escaped as "\xNN" text, and the document must be a
 * run's: an "id" that can name a folder, "workload", "preset" and "unit" names, "samples"
 * numbers of at least 0, whole counts, and every file it names for its folder a plain
 * name in it (an_file_name_ok()). NULL + errno, with one line in err naming the path and
 * what to do: no such folder, no result.json in it, not JSON (with the byte), not a
 * schedlab result (no "schema"), the field that is wrong. */
struct an_result *an_result_load(const char *path, char *err, size_t errlen);
/* From text in memory (source names it in errors): the numbers and strings are checked
 * as above, but not that it is a whole run's (tests and findings give parts). */
struct an_result *an_result_parse(const char *text, size_t len, const char *source, char *err,
				  size_t errlen);
/* The same for a result that belongs to the folder dir (the run being written): the
 * files it names are opened there (and read as missing when dir cannot be opened). */
struct an_result *an_result_parse_in(const char *text, size_t len, const char *dir,
				     const char *source, char *err, size_t errlen);
void an_result_free(struct an_result *r);
const char *an_result_source(const struct an_result *r); /* the file read */
const char *an_result_dir(const struct an_result *r);    /* its folder; "" when parsed */
/* The folded file name (a "folded" member of the result) in the run's folder, opened
 * there as an_folded_read_at() does; NULL + errno with one line in err. */
struct an_folded *an_result_folded(const struct an_result *r, const char *name, char *err,
				   size_t errlen);

bool an_result_has(const struct an_result *r, const char *path);
/* A number (a boolean reads as 0 or 1); NAN when path is absent or holds no number. */
double an_result_num(const struct an_result *r, const char *path);
/* A string; NULL when path is absent, null, or holds no string. Owned by r. */
const char *an_result_str(const struct an_result *r, const char *path);
/* The length of the array, or the members of the object, at path; 0 for anything else. */
size_t an_result_len(const struct an_result *r, const char *path);
/* The i-th member name of the object at path, in the file's order; NULL past the end. */
const char *an_result_key(const struct an_result *r, const char *path, size_t i);
/* The index in "probes" of the probe called name ("oncpu", "sched") that attached; -1
 * when there is none. */
ssize_t an_result_probe(const struct an_result *r, const char *name);
/* Tables ({"columns": [...], "rows": [[...], ...]}: per_iteration, per_worker): the
 * index of a column (-1: none), and one cell by row and column name (NAN: none). */
ssize_t an_result_column(const struct an_result *r, const char *table, const char *column);
double an_result_cell(const struct an_result *r, const char *table, size_t row,
		      const char *column);

/* ---- comparing two runs ------------------------------------------------------------ */

/* A throughput change smaller than this, in percent, is "no change" even when its
 * interval excludes 1. The interval sees only the spread of one run's own iterations;
 * two runs made minutes apart on a shared virtual machine also differ as a whole (the
 * host moves the vCPUs, and a cache-line transfer between them changes cost with the
 * placement: NOTES.md), by a few percent, which no iteration of either run can show. */
#define AN_COMPARE_NOISE_PCT 5.0

/* A runtime counter per op "differs materially" when one run's value is at least this
 * many times the other's... */
#define AN_COMPARE_COUNTER_RATIO 1.25
/* ...and the larger side counted at least this many events: below it, counting noise
 * alone (about 1/sqrt(N), 18% at 30) comes near the ratio above. */
#define AN_COMPARE_COUNTER_MIN_EVENTS 30

/* The ratio of two means with its confidence interval. */
struct an_ratio {
	double value;      /* mean(num) / mean(den) */
	double lo, hi;     /* the interval; NAN when unbounded */
	double df;         /* Welch-Satterthwaite degrees of freedom, at value */
	double confidence; /* as asked, e.g. 0.999 */
	bool bounded;      /* false: den's mean is not told apart from 0 at this confidence,
			    * and Fieller's set is no interval */
};

/* mean(num) / mean(den) of two independent samples, with Fieller's interval: the
 * ratios R for which mean(num) - R mean(den) is within Student's t of 0, with the
 * Welch-Satterthwaite degrees of freedom of that difference at R = value (rounded
 * down, which widens the interval). Unlike the delta method's value ± t·se, it is
 * asymmetric as a ratio's uncertainty is, and it says when there is no interval at
 * all. 0, or -EINVAL when either n < 2, den's mean is 0, or confidence is outside
 * (0, 1). */
int an_ratio_fieller(const struct an_summary *num, const struct an_summary *den,
		     double confidence, struct an_ratio *out);

enum an_verdict {
	AN_VERDICT_NO_CHANGE,
	AN_VERDICT_FASTER,
	AN_VERDICT_SLOWER,
	AN_VERDICT_CANNOT_TELL, /* the ratio has no interval: the runs cannot tell */
};

/* For r, a throughput ratio B / A: faster when the interval lies above 1 and the ratio
 * is above 1 + noise_pct / 100; slower when it lies below 1 and the ratio is below
 * 1 - noise_pct / 100; cannot tell when it has no interval (its denominator's mean not
 * told apart from 0: however large the ratio, it may be chance); otherwise no change. */
enum an_verdict an_ratio_verdict(const struct an_ratio *r, double noise_pct);
/* "faster", "slower", "no change", "cannot tell" */
const char *an_verdict_name(enum an_verdict v);

/* 1 when a larger score is better in unit ("ops/s": any "X/s"), 0 when a smaller one
 * is ("ns/op": any "X/op"), -1 for a unit that is neither (format.c). */
int an_unit_higher_is_better(const char *unit);

/* Two finished runs of one workload side by side: throughput B / A with its interval
 * and verdict, on-CPU category shares, runtime counters per op, the functions whose own
 * share of the samples changed most, and each run's probe status. A is the baseline. */
struct an_compare;

/* Whether r can be compared at all: it has at least two measured iterations (a failed
 * run has none) and a unit an_unit_higher_is_better() knows. 0, or -EINVAL with one
 * line in err naming the run and what to do. */
int an_compare_check(const struct an_result *r, char *err, size_t errlen);
/* Compare b against a, reading each run's oncpu.folded when it has one. NULL + errno
 * (EINVAL) with one line in err when the runs cannot be compared: either fails
 * an_compare_check(), they are runs of different workloads, or their units differ.
 * Different parameters are allowed: the report's header says so. a and b must outlive
 * the comparison. */
struct an_compare *an_compare_new(const struct an_result *a, const struct an_result *b,
				  char *err, size_t errlen);
void an_compare_free(struct an_compare *c);
/* Throughput B / A (for a smaller-is-better unit, A's score over B's), its verdict. */
const struct an_ratio *an_compare_ratio(const struct an_compare *c);
enum an_verdict an_compare_verdict(const struct an_compare *c);
/* A's ('a') or B's ('b') on-CPU profile; NULL when that run has none. */
const struct an_folded *an_compare_folded(const struct an_compare *c, char which);
/* The name of the differential flame graph the report points to ("diff.svg"), or NULL
 * (the default) for none: the report then says why there is none. */
void an_compare_set_flame(struct an_compare *c, const char *name);
/* compare.md (also what 'schedlab compare' prints) and compare.json. 0 or -errno. */
int an_compare_markdown(const struct an_compare *c, FILE *out);
int an_compare_json(const struct an_compare *c, FILE *out);
/* ---- findings ------------------------------------------------------------------------ */

/* Why a run was slow, from what its result.json holds (and the run folder's
 * oncpu.folded, where there is one): each finding a cause with the numbers that show it,
 * emitted only when its evidence crosses a threshold of findings.c's one table. */
struct an_finding {
	char id[32];        /* stable name, for compare: "stranded-work", "missed-idle", ... */
	double share;       /* share of the measured time it explains, 0..1; NAN where it is not a time */
	char claim[256];    /* one line */
	char evidence[768]; /* the numbers, each with its source: "stranded_ns 869 ms of 0.8 s worker time (runtime counter)" */
	char action[256];   /* what to try: a knob, a preset, a code change */
};

/* More than every kind of finding there is: an array this long holds them all. */
#define AN_FINDINGS_MAX 32

/* What no finding can speak to yet, said after the findings so that an empty list is not
 * read as a clean bill: the data for it comes from probes not built yet. */
#define AN_FINDINGS_NOT_EXAMINED \
	"Not examined: run-queue latency, migrations and off-CPU time, which need the " \
	"scheduler and off-CPU probes (--probes sched, --probes offcpu)."
/* The line to say after the findings: AN_FINDINGS_NOT_EXAMINED less what the probes
 * that were attached examine (sched: run-queue latency and migrations; offcpu: off-CPU
 * time); "" when both were. */
void an_findings_not_examined(bool sched, bool offcpu, char *buf, size_t len);
/* Whether result r's "probes" holds the probe called name, attached. */
bool an_result_probe_attached(const struct an_result *r, const char *name);

/* The findings of a run, ranked by share (most first; NAN shares after, by severity): at most max written;
 * returns how many there are, or -errno. */
int an_findings(const struct an_result *r, struct an_finding *out, size_t max);
/* A threshold of the table by name ("stranded_share"); NAN for a name it lacks. */
double an_findings_threshold(const char *name);

/* ---- reports ------------------------------------------------------------------------ */

/* ---- categories ------------------------------------------------------------------------ */

/* What on-CPU time is attributed to. The first eight are the runtime's phases
 * (runtime/phase.h) by the same number: a sample on a runtime thread takes the category
 * of its phase word. */
enum an_category {
	AN_CAT_OTHER,    /* "other": none of these, or not a runtime thread */
	AN_CAT_WORK,     /* "work": the tasks' own code */
	AN_CAT_SCHED,    /* "scheduling": picking, switching, searching, stealing, waiting */
	AN_CAT_SUBMIT,   /* "submission": spawning, enqueuing, waking a task or a worker */
	AN_CAT_PARK,     /* "parking": a worker (or the reactor, the monitor) going idle */
	AN_CAT_BLOCK,    /* "blocking": inside a blocking section */
	AN_CAT_ALLOC,    /* "allocation" */
	AN_CAT_STACKCAP, /* "stack-capture": filling an error's stack trace */
	AN_CAT_KERNEL,   /* "kernel": by stack rules only, on threads that are not ours */
	AN_CAT_COUNT
};

const char *an_category_name(unsigned cat);
int an_category_parse(const char *name); /* -1: not a category */
/* The category of a phase word's phase (RT_PHASE_KIND()). */
unsigned an_phase_category(unsigned phase);

/* Stack rules: "CATEGORY NAME..." lines, NAME a function, a pattern where '*' stands
 * for any run of characters, or '=' and a function that counts only as the user stack's
 * leaf; a "[all threads]" or "[other threads]" line scopes the rules after it to every
 * thread or to threads that are not the runtime's. */
struct an_rules;
/* From text (source names it in errors); a bad line is refused with "SOURCE:LINE: why"
 * in err. NULL + errno. */
struct an_rules *an_rules_parse(const char *text, size_t len, const char *source, char *err,
				size_t errlen);
struct an_rules *an_rules_load(const char *path, char *err, size_t errlen);
/* analysis/categories.rules, compiled into the binary. */
struct an_rules *an_rules_builtin(char *err, size_t errlen);
/* The built-in rules' text (analysis/categories.rules as built), len bytes. */
const char *an_rules_builtin_text(size_t *len);
void an_rules_free(struct an_rules *r);
size_t an_rules_count(const struct an_rules *r);
/* The category the first frame some rule names gives, reading frames leaf first as they
 * are named in a folded file (kernel frames, ending in "_[k]", first), except that a
 * kernel frame's "kernel" gives way to any user frame's category below it; -1 when no
 * rule names any of them. runtime: the sample is of one of the runtime's threads, where
 * the "[other threads]" rules do not apply. */
int an_rules_classify(const struct an_rules *r, const char *const *leaf_first, size_t n,
		      bool runtime);

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

/* Where user stacks ended: whether they reached the function that began their thread
 * (a fiber's entry, start_thread, _start) or broke, and where. */
#define AN_BREAKS_MAX 8

struct an_stack_break {
	char object[64];        /* where the walk stopped: "libc.so.6", "[unknown]" */
	char why[96];           /* "frame-pointer walk", "stack-end: ...", ... */
	uint64_t count;
};

struct an_stack_quality {
	uint64_t with_user;     /* samples with a user stack */
	uint64_t rooted;        /* of them, reaching a root */
	uint64_t runtime;       /* samples of the runtime's threads with a user stack */
	uint64_t runtime_rooted;
	uint64_t fp, dwarf;     /* user stacks from the frame-pointer walk, from DWARF */
	uint64_t fallback;      /* DWARF ones that auto mode sent (the walk met code without
				 * frame pointers) */
	uint64_t spliced;       /* DWARF ones whose unwind stopped short and went on along
				 * the frame-pointer walk (an_unwind_splice_fp()) */
	uint64_t garbage;       /* samples with a frame that is no code ([unknown 0x...]) */
	uint64_t past_root;     /* samples with frames past their root, dropped */
	struct an_stack_break breaks[AN_BREAKS_MAX]; /* the most frequent, most first */
	size_t nbreaks;
	uint64_t breaks_other;  /* broken stacks not in breaks[] */
};

/* The two methods on the runtime's threads: the phase word at the sample, and the
 * stack rules over the sample's own frames. */
struct an_agreement {
	uint64_t samples;                   /* classified both ways */
	uint64_t same;                      /* where both gave the same category */
	uint64_t by_phase[AN_CAT_COUNT];
	uint64_t by_stack[AN_CAT_COUNT];
	uint64_t no_stack;                  /* runtime-thread samples without user frames */
};

/* A disagreement between the two methods above this many points, in some category's
 * share of the runtime's samples, is reported as one (report.md, result.json): two
 * halves of one profile differ by up to 2.4 points per function at ~3,000 samples by
 * chance (NOTES.md), and the fidelity test holds the phase functions within 2. */
#define AN_AGREEMENT_MAX_GAP 5.0

/* Which method gave every sample its category: the phase word on the runtime's threads,
 * the stack rules on the others. */
struct an_attribution {
	uint64_t by_category[AN_CAT_COUNT]; /* every sample, by the category it was given */
	uint64_t by_phase;                  /* samples of the runtime's threads */
	uint64_t by_rules;                  /* samples of other threads */
	uint64_t no_rule;                   /* of by_rules, where no rule named a frame */
};

/* A file whose symbols named samples, and its GNU build id ("" when it has none), so
 * that a profile can be symbolized again where the same build is found. */
struct an_object {
	char *path;
	char build_id[129];
};

struct an_probe_summary {
	const char *name;       /* "oncpu" */
	bool attached;
	const char *status;     /* "attached", or "not attached: <reason>" */
	const char *event;      /* "cycles" or "cpu-clock"; NULL when not attached */
	const char *event_note; /* why the event was chosen; "" when cycles */
	bool whole_program;     /* sampled a program while profiled, not the measured
				 * iterations of our runtime's forks */
	unsigned freq;
	uint64_t samples;       /* samples of the benchmark kept (losses included) */
	uint64_t ustack_full, kstack_full, ustack_errors, kstack_errors;
	uint64_t counts_full, truncated;
	uint64_t ring_full;     /* samples that wanted DWARF but found the ring buffer full */
	uint64_t expected;      /* samples the frequency owes the benchmark: its forks' CPU
				 * time while sampled × freq; 0: no such promise (cycles) or
				 * a fork's CPU time unknown */
	uint64_t taken;         /* the benchmark's samples the probe counted, losses included */
	uint64_t cpu_ns;        /* the forks' CPU time while sampled, behind expected */
	uint64_t window_ns;     /* how long they were sampled, wall clock */
	double cost_pct;        /* the share of a CPU sampling took, measured at open (%) */
	uint64_t phase_samples[8]; /* samples by the runtime's phase when sampled */
	const char *callgraph;  /* "fp", "dwarf" or "auto" */
	const char *group;      /* what a folded line keeps apart under its thread: "thread",
				 * or "task" (a [task: ENTRY] frame); NULL: not attached */
	unsigned stack_copy;    /* DWARF: user stack bytes copied per sample */
	unsigned ring_bytes;
	unsigned stack_entries, count_entries; /* the maps' sizes: what one fork's drain holds */
	uint64_t stacks_held_max, counts_held_max; /* the most one fork's drain found in them */
	const char *maps_sized; /* how those sizes were chosen ("given: --oncpu-maps", or the
				 * rule for the run); NULL: not said */
	uint64_t stack_bytes;   /* user stack bytes the DWARF samples copied */
	uint64_t unwind_ns;     /* user-space time unwinding the DWARF samples */
	const char *unwind_error; /* why some fork's DWARF samples could not be unwound; NULL
				   * or "": they could */
	uint64_t prog_runs, prog_ns; /* the sampling program's runs on every CPU and their
				      * time in the kernel (0 runs: not measured) */
	const struct an_stack_quality *quality;
	const struct an_agreement *agreement;
	const struct an_attribution *attribution; /* NULL: categories from phase_samples */
	size_t nrules;          /* stack rules the agreement used */
	const char *rules;      /* where they came from: a --rules file, or NULL: built in */
	const struct an_object *objects; /* the files that named the samples */
	size_t nobjects, objects_over; /* how many; how many more there were than were kept */
	const char *folded;     /* file names inside the run folder; NULL: none written */
	const char *svg;
	uint64_t attach_ns;     /* open, load and attach, once per run (0: not attached) */
	uint64_t cost_ns;       /* measuring a sample's cost at open, apart from attach_ns */
};

/* A probe other than oncpu as a run's report shows it: its status, what attaching cost,
 * and its own figures, written by the probe's callbacks. In result.json it is an entry of
 * "probes" after oncpu's ({"name", "attached", "status", "attach_ns", "files", then the
 * members json writes}); in report.md a line under Probes and, when md is given, a
 * section of its own. */
struct an_probe_part {
	const char *name;       /* "offcpu" */
	bool attached;
	const char *status;     /* "attached", or "not attached: <reason and fix>" */
	uint64_t attach_ns;     /* open, load and attach (0: not attached) */
	const char *summary;    /* one line after the status ("812 ms off-CPU in 2,013
				 * intervals; nothing lost"); NULL: none */
	const char *files[4];   /* what it wrote into the run folder, NULL-terminated */
	/* JSON members, each preceded by ", " (no braces), and a report.md section (from its
	 * "### " heading); NULL: none */
	void (*json)(FILE *out, const void *data);
	void (*md)(FILE *out, const void *data);
	const void *data;
};

/* A sampling shortfall within this share of the expected samples, or within four
 * standard deviations of a count that small (a thread that runs in bursts shorter than
 * the period is sampled in each with the chance burst/period, so the count varies like
 * a Poisson count), is chance and the window's edges. Measured at 999 Hz: a CPU-bound
 * fork (workers) within 3%. */
#define AN_SAMPLING_TOLERANCE_PCT 25.0
/* A shortfall beyond the tolerance has one of two causes. Sampling that takes this much
 * of a CPU or more is more than the kernel delivers: measured on this project's VMs, a
 * CPU-bound fork at 20 kHz (sampling 65-82% of a CPU) was 37% short, at 50 kHz (89%)
 * 67%; at 5 kHz (30-38%) 3%. Below it, the cause is that a CPU's timer lapses while the
 * CPU idles and the first period of a burst after idle goes unsampled: forks that sleep
 * and wake in bursts shorter than the period (tcp-blocking: 38% short at 999 Hz, while
 * sampling took under 8% of a CPU). */
#define AN_SAMPLING_THROTTLE_COST_PCT 50.0

/* The percentage of expected samples not taken (0 when none were expected or all
 * came). */
double an_sampling_short_pct(uint64_t expected, uint64_t taken);
/* The shortfall tolerated for expected samples: the larger of the two above, in %. */
double an_sampling_tolerance_pct(uint64_t expected);

enum an_shortfall {
	AN_SHORT_NONE,      /* within the tolerance, or nothing expected */
	AN_SHORT_THROTTLED, /* beyond it, with sampling at AN_SAMPLING_THROTTLE_COST_PCT */
	AN_SHORT_IDLE,      /* beyond it at a cost the kernel keeps up with: idle lapses */
};

/* Write what the probe owed and took: "expected 2,871 samples (the forks' 2.87 s of CPU
 * time × 999 Hz), taken 2,238", then for a shortfall beyond the tolerance its size and
 * its cause, and return which (AN_SHORT_*). "" when nothing was expected (cycles, or
 * no CPU time known). */
enum an_shortfall an_sampling_shortfall(const struct an_probe_summary *p, char *buf,
					size_t len);

/* --overhead: the same benchmark with and without its probes, forks interleaved. */
struct an_overhead {
	const char *probes;      /* "oncpu,sched" */
	unsigned forks;          /* forks of each kind */
	struct an_summary on, off;
	struct an_ratio ratio;   /* on / off: below 1 a cost in ops/s, above 1 in time per op */
	bool measured;           /* false: too few iterations of one kind (why) */
	const char *why;
};

/* One performance counter of a run (probes/counters), over its measured iterations. */
struct an_counter {
	const char *name;        /* the libpfm4 event name, as given */
	bool counted;            /* false: n/a, for the reason in note (never shown as 0) */
	const char *note;        /* not counted: why ("no hardware PMU (perf_event_open: No such
				  * file or directory)"); counted: a limit ("user space only ...")
				  * or "" */
	double total;            /* the counts scaled for multiplexing, summed over iterations */
	double per_op;           /* total ÷ the ops of the iterations counted; NAN without */
	size_t uncounted;        /* measured iterations in which it never got onto the PMU:
				  * no count, left out of total and per_op */
	double running_share;    /* time running ÷ time enabled: 1 when never multiplexed */
	uint64_t raw;            /* the counts as read, unscaled */
	const double *per_iteration; /* each measured iteration's count per op; NAN: none */
	size_t niterations;
};

/* The counters probe's figures as the reports show them: the events in the order asked. */
struct an_counters {
	const struct an_counter *events;
	size_t n;
};

/* Written as a probe's part of the reports is (its own JSON members, a one-line summary
 * after its status, a "### " section of report.md), so that the counters sit beside the
 * other probes. JSON: ", \"events\": [...]", each event's total, per_op, running_share
 * and per_iteration, or "na": "n/a: <reason>" and nulls; never a 0 for what was not
 * counted. */
void an_counters_json(FILE *out, const void *counters);
/* "### Counters": per op, total and running share of each event, or n/a and why. */
void an_counters_md(FILE *out, const void *counters);
/* "4 of 9 events counted ...; not counted: cycles, instructions: no hardware PMU (...)",
 * the events with one reason together. */
void an_counters_summary(const struct an_counters *c, char *buf, size_t len);

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
	const struct an_probe_summary *probes; /* oncpu, first: "probes.0" is always it */
	size_t nprobes;
	const struct an_probe_part *parts;     /* the other probes, after it in "probes" */
	size_t nparts;
	const struct an_overhead *overhead;    /* NULL: not measured (no --overhead) */
	const struct an_counters *counters; /* NULL: no counters asked for */
	const char *counters_status;  /* "attached", or "not attached: <reason>" */
	const char *counters_summary; /* an_counters_summary() */
	uint64_t counters_attach_ns;  /* the longest a fork took to open the events; 0: none */
	const char *error;      /* why the run failed; NULL when it did not */
	const char *partial;    /* why it stopped before the end (a signal); NULL when it ran out */
	const char *profiled;   /* a profile of processes (`schedlab profile`): how it ended;
				 * NULL for a benchmark's run */
	const struct an_finding *findings; /* ranked; NULL: not computed (none written) */
	size_t nfindings;
};

/* Write result.json / report.md for r. 0 or -errno. */
int an_report_json(const struct an_run *r, FILE *out);
int an_report_markdown(const struct an_run *r, FILE *out);
/* Findings as a JSON array of {id, share, claim, evidence, action} (share null when NAN). */
int an_findings_json(const struct an_finding *f, size_t n, FILE *out);
/* The findings of r as an_findings() gives them for the result.json r renders to (read
 * back from memory, so that a report and 'schedlab diagnose' reason over the same data);
 * source is where that result.json goes: its folder's oncpu.folded is read. At most max
 * written; how many there are, or -errno with one line in err. */
int an_run_findings(const struct an_run *r, const char *source, struct an_finding *out,
		    size_t max, char *err, size_t errlen);

/* ---- numbers, units and JSON as every writer prints them (format.c) ------------------ */

/* JSON values as the reports write them: a string quoted and escaped (NULL: null), a
 * number with 17 digits (NaN and infinities: null). */
void an_json_str(FILE *out, const char *s);
void an_json_num(FILE *out, double v);
/* Format v with thousands grouped and `decimals` digits after the point: 12,345.67. */
void an_format_number(double v, int decimals, char *buf, size_t len);
/* The decimals a score and its error are shown with, as the studies print them:
 * none from 1,000 up ("3,060 ± 92"), else two ("4.95 ± 0.03"), three when the
 * error would show as 0.00. */
int an_score_decimals(double score, double error);

/* ---- suites: a study's grid, our figures beside the published ones (suite.c) -------- */

/* What a cell's figure is. */
enum an_suite_metric {
	AN_SUITE_SCORE,        /* the run's throughput (its unit) */
	AN_SUITE_NS_PER_OP,    /* 1e9 / throughput, its error propagated to first order */
	AN_SUITE_BYTES_PER_OP, /* the runtime allocator's bytes over the ops */
	AN_SUITE_WL_METRIC,    /* a figure the workload reports (workload_metrics.NAME) */
	AN_SUITE_CATEGORY_SHARE, /* the on-CPU probe's samples in category NAME, in % of all */
};

/* One cell: a `schedlab run` of workload under preset with params, and the study's figure
 * for that row and column. */
struct an_suite_cell {
	const char *column;     /* the study's column: "blocking TCP" */
	const char *row;        /* the study's row: "Kyo" */
	const char *workload;
	const char *preset;
	const char *params;     /* -P assignments separated by spaces; "" for none */
	enum an_suite_metric metric;
	const char *metric_name; /* AN_SUITE_WL_METRIC: the workload's figure;
				  * AN_SUITE_CATEGORY_SHARE: the category ("stack-capture") */
	double published, published_err; /* NAN: the study gave none */
	double study_ratio;     /* the study's ratio to the reference row where it gave only
				 * that; NAN: published / the reference's published */
	double band;            /* 0: the table's */
	bool reference;         /* the column's reference row (one per column) */
	unsigned per_op;        /* the study's operations one of ours holds (error-pipeline
				 * runs n pipelines an op, the study one); 0: one */
	/* A peer program in bench/ run instead of schedlab ("tcppeer tcp-epoll": the program
	 * and its job), its samples a throughput; NULL for a schedlab run. The workload is
	 * the one the peer does the work of. */
	const char *peer;
	/* The row of this column whose figure, with the reference row's, brackets this
	 * cell's in the study (kyo-flush between Kyo default and cats-effect): the shape
	 * holds when our ratios to each, with their intervals, put ours between the same two
	 * (an_suite_shape()), whatever the band. NULL: the band. */
	const char *between;
	/* The row of this column that is farther from the base row than this cell, either
	 * way (the exceptions without a trace nearer the hand-written either than the
	 * exceptions that fill a trace): the shape holds when our ratio to the base, with its
	 * interval, is nearer 1 than that row's (an_suite_shape()). NULL: none. */
	const char *nearer;
	/* The row of this column this cell's ratio is to instead of the reference, where
	 * the study's order is a chain (converted buckets against the actors, the actors
	 * between them and the buckets). NULL: the reference. */
	const char *against;
	/* The shape holds when ours is at least this many times its base row's by both
	 * intervals (a share several times another's), whatever the study's ratio. 0: the
	 * band. */
	double at_least;
};

struct an_suite_table {
	const char *title;
	const char *source;     /* where the published figures come from */
	const char *unit;       /* of every figure in the table, ours and the study's */
	double band;            /* a magnitude holds when our ratio's interval lies within band×
				 * of the study's ratio */
	const char *band_why;
	const char *run_opts;   /* run options every cell gets, before the user's; "" none */
	/* Run options every cell gets after the user's: what its figure cannot do without
	 * ("--probes oncpu" for a category's share); "" none. */
	const char *run_opts_after;
	const struct an_suite_cell *cells;
	size_t ncells;
	/* Where the study gives no interval, a study ratio within this factor of 1 names no
	 * winner, and a tie of ours must lie within it; 0: AN_SUITE_TIE. Where it gives one,
	 * the study's own interval decides (an_suite_shape()). */
	double tie;
};

/* How the shape is judged (an_suite_shape(), an_suite_claim()): from our ratio's 99.9%
 * interval, never from the order of two means. A figure with no interval of its own (a
 * median of fresh processes, bytes per op) is taken as ± AN_SUITE_NOISE of itself: separate
 * runs on a shared VM differ as a whole by a few percent (AN_COMPARE_NOISE_PCT), the only
 * spread such a figure is known to have. The same 5% is the narrowest band a tie is
 * judged in: a closer equivalence is beyond what separate runs can show. */
#define AN_SUITE_NOISE 0.05
/* A study ratio with no interval within 10% of 1 names no winner: the studies' own ratio
 * intervals reach that far where they give them (Loom against cats-effect on blocking
 * TCP, 143.49 ± 5.65 against 145.10 ± 9.03: 0.89 to 1.10). */
#define AN_SUITE_TIE 1.1

/* A cell of a suite: its table (the index in the suite), column and row. */
struct an_suite_ref {
	size_t table;
	const char *column, *row;
};

/* Each judged from our ratio's interval (an_suite_ratio()): holds when the whole interval
 * says so, does not hold when the whole interval says the opposite, else cannot tell. */
enum an_suite_claim_kind {
	AN_CLAIM_AHEAD,   /* a ahead of b (more per second, or less per op): a ÷ b's interval
			   * excludes 1 on that side */
	AN_CLAIM_SHRINKS, /* a ÷ b nearer 1 at `to` than at a's place: the interval's farthest
			   * reach from 1 there under its nearest here (a log distance) */
	AN_CLAIM_FLIPS,   /* a ÷ b on the study's side of 1 at a's place and on the other at
			   * `to`: each interval excludes 1 on its side */
	AN_CLAIM_GROWTH,  /* a and b the same run at sizes size_ratio apart (a the larger): the
			   * growth exponent log(a ÷ b) / log(size_ratio), with its interval,
			   * within exponent ± tolerance */
	AN_CLAIM_SPREAD,  /* a's figure spread wider than b's: the ratio of their relative
			   * half-widths (error ÷ figure), with its interval (Fisher's F for the
			   * two samples' variances, times the interval of b ÷ a), at least
			   * margin */
};

/* A finding of the study that no one cell carries, judged across columns or tables from
 * the cells it names: the run loop ahead of the pool at small tf; the exceptions' gap
 * shrinking as tf grows; bounded workers flipping to cats-effect with a little CPU work;
 * the bind chain's quadratic allocation. The study's side comes from the cells' figures
 * (published, else their study ratio to the reference). */
struct an_suite_claim {
	const char *text; /* the finding, as the table shows it, with its rule */
	enum an_suite_claim_kind kind;
	struct an_suite_ref a, b;
	/* AN_CLAIM_SHRINKS, AN_CLAIM_FLIPS: the table and column of the second pair, a's and
	 * b's rows there (its row is not used) */
	struct an_suite_ref to;
	/* AN_CLAIM_GROWTH: the sizes' ratio, the exponent the study found and how far from it
	 * ours may be */
	double size_ratio, exponent, tolerance;
	/* AN_CLAIM_SPREAD: the least ratio of a's relative half-width to b's that holds */
	double margin;
};

/* A study's explanation of a result, and the finding of ours that accounts for it: the
 * finding (an an_findings() id) among the findings of one cell's run, or, where the
 * explanation is that a fix removed the cause, absent from them. */
struct an_suite_why {
	const char *text;   /* the study's explanation, as the table shows it */
	struct an_suite_ref cell;
	const char *finding;
	bool absent;        /* the cause is gone there: the finding must not be among them */
};

struct an_suite {
	const char *name;
	const char *summary;
	/* true: a missing workload refuses the suite; false: its cells say "not built" */
	bool refuse_missing;
	const struct an_suite_table *tables;
	size_t ntables;
	const struct an_suite_claim *claims; /* NULL: none */
	size_t nclaims;
	const struct an_suite_why *whys;     /* NULL: none */
	size_t nwhys;
};

/* Every suite, NULL-terminated, in the order `all` runs them; one by name or NULL. */
const struct an_suite *const *an_suites(void);
const struct an_suite *an_suite_find(const char *name);
/* The cells of s over all its tables. */
size_t an_suite_ncells(const struct an_suite *s);

enum an_cell_state {
	AN_CELL_LEFT_OUT, /* its preset is not among those asked for: no row */
	AN_CELL_NOT_RUN,  /* interrupted before it */
	AN_CELL_OK,
	AN_CELL_FAILED,
	AN_CELL_NOT_BUILT,
	AN_CELL_INTERRUPTED, /* stopped by the interrupt: its run folder holds what it
			      * measured, partial and not judged */
};

/* A cell's outcome, parallel to its suite's cells in table order. */
#define AN_SUITE_FINDINGS 3 /* the top findings a cell carries */

struct an_suite_result {
	enum an_cell_state state;
	char reason[256];       /* FAILED, NOT_BUILT: why */
	char link[512];         /* its run folder's report, relative to suite.md; "" none */
	double value, error, n; /* error NAN when none */
	/* its run's top findings (an_findings()), most important first: ids and shares
	 * (NAN: not a share of time); findings_known false when none were looked for (no
	 * run read back: a peer's cell, a failed or interrupted run) */
	bool findings_known;
	size_t nfindings;
	char findings[AN_SUITE_FINDINGS][32];
	double finding_share[AN_SUITE_FINDINGS];
};

/* Why k of suite s: 1 when our finding accounts for the study's explanation (present, or
 * absent where it says a fix removed the cause), 0 when the run's findings say otherwise,
 * -1 when the cell has no findings to look at; text says which and where. */
int an_suite_why(const struct an_suite *s, const struct an_suite_result *res, size_t k,
		 char *text, size_t len);

/* a ÷ b, and in lo..hi its 99.9% interval: Fieller's (an_ratio_fieller()) from each
 * figure's interval and n where both have one and n >= 2, else the quotient of the two
 * intervals (the bounds' extreme ratios), a figure without one taken as ± AN_SUITE_NOISE
 * of itself. lo = -inf, hi = +inf where b's interval reaches 0 (no bound). */
double an_suite_ratio(const struct an_suite_result *a, const struct an_suite_result *b,
		      double *lo, double *hi);

/* The shape of cell i of table t against its column's reference row (its `against` row
 * where it names one), by the first rule that applies:
 * - floor (at_least): ours minus at_least × the base's, by both intervals, above 0;
 * - position (between): our ratios to the `between` row and to the base each exclude 1,
 *   on the sides that put ours between them as the study's figures are;
 * - distance (nearer): our ratio's interval nearer 1 (in log) than the `nearer` row's,
 *   by the whole of both;
 * - tie, where the study names no winner (its ratio's interval, from its published ±,
 *   holds 1; or, with none, the ratio is within the table's tie factor of 1): our ratio's
 *   interval inside a band around 1, as wide as the study's interval reaches from 1 (or
 *   the tie factor), and never under 1 ± AN_SUITE_NOISE;
 * - winner and magnitude, else: our ratio's interval excludes 1 on the study's side and
 *   lies inside band× of the study's ratio.
 * A rule holds when the whole interval is where the rule says, does not hold when the
 * whole interval is where it says not (the other side of 1, outside the band), and
 * otherwise cannot tell (holds -1). */
struct an_suite_shape {
	double ratio, study_ratio; /* NAN: not computable */
	double lo, hi;             /* our ratio's 99.9% interval (an_suite_ratio()); NAN none */
	const char *rule;          /* "floor", "position", "distance", "tie", "winner"; NULL
				    * when no rule applied (reference, n/a) */
	int holds;                 /* 1, 0, or -1 when it cannot be judged */
	char text[256];            /* "holds: ...", "reference", "does not hold: ...", "n/a: ..."
				    * with the interval and the tolerance it was held to */
};
void an_suite_shape(const struct an_suite_table *t, const struct an_suite_result *res, size_t i,
		    struct an_suite_shape *out);

/* Claim k of suite s judged from res (the suite's cells in table order): ours and the
 * study's a ÷ b (AN_CLAIM_SHRINKS, AN_CLAIM_FLIPS: [0] at a's place, [1] at `to`;
 * AN_CLAIM_GROWTH: the study's is size_ratio ^ exponent; AN_CLAIM_SPREAD: a's relative
 * half-width ÷ b's, the study's from its published ±; NAN none), and
 * whether it holds, as a cell's shape. 0; -ENOENT when a cell it names is not in the
 * suite or left out by --presets: the claim is not shown. */
struct an_suite_verdict {
	double ours[2], study[2];
	double lo[2], hi[2]; /* ours[j]'s 99.9% interval (an_suite_ratio()); NAN none */
	int holds;
	char text[256];
};
int an_suite_claim(const struct an_suite *s, const struct an_suite_result *res, size_t k,
		   struct an_suite_verdict *out);

/* A category's share of an on-CPU profile, read from a run's result.json: the attached
 * oncpu probe's samples in category (its "categories"), in % of all its categorized
 * samples, ± the 99.9% interval of a share (normal approximation), n the samples.
 * 0; -ENOENT when no oncpu probe attached; -ENODATA when it took no sample. */
int an_suite_category_share(const struct an_result *r, const char *category,
			    struct an_suite_result *out);

/* What suite.md and suite.json show: the suites run, each with its results (res[k] for
 * suites[k]), and those not run with the reason. */
struct an_suite_report {
	const char *command;
	const char *settings;   /* how each cell was run: forks, iterations, time */
	const struct an_suite *const *suites;
	struct an_suite_result *const *res;
	size_t nsuites;
	const char *const *skipped; /* "suite X not run: workload Y is not registered" */
	size_t nskipped;
	bool interrupted;           /* the suite was stopped: the cells after the one
				     * interrupted were not run */
};
int an_suite_write_md(const struct an_suite_report *r, FILE *out);
int an_suite_write_json(const struct an_suite_report *r, FILE *out);
/* One table, plain text for a terminal. */
void an_suite_print_table(const struct an_suite_table *t, const struct an_suite_result *res,
			  FILE *out);
/* Suite s's explanations against its runs' findings, plain text for a terminal; nothing
 * when it has none. */
void an_suite_print_whys(const struct an_suite *s, const struct an_suite_result *res,
			 FILE *out);
/* Suite s's claims, plain text for a terminal; nothing when it has none. */
void an_suite_print_claims(const struct an_suite *s, const struct an_suite_result *res,
			   FILE *out);

/* ---- DWARF unwinding ---------------------------------------------------------------- */

/* A sampled user stack turned into return addresses with the CFI of the code it ran
 * (.eh_frame, else .debug_frame), as `perf record --call-graph dwarf` does: what the
 * frame-pointer walk cannot do through code built without frame pointers (Debian's
 * glibc). One unwinder per process, made while it lives; it caches each module's CFI,
 * so one sample costs microseconds. An unwinder does not lock: callers serialize. */

/* x86-64 DWARF registers 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15, then rip. */
#define AN_UNWIND_NREGS 17

struct an_unwind;

/* Report the images the process has loaded (from /proc/PID/maps), and read its vDSO
 * (through /proc/PID/mem), now, while it lives. NULL + errno: EINVAL for pid <= 0,
 * ENOENT once it is gone, ENOEXEC when libdw makes nothing of its mappings. */
struct an_unwind *an_unwind_new(pid_t pid);
void an_unwind_free(struct an_unwind *u); /* NULL: nothing */
/* Report the images again, for code mapped since (a dlopen): a pc in no known module
 * ends an unwind with AN_UNWIND_NO_MODULE until then. The CFI read so far is dropped.
 * 0, or -errno as from an_unwind_new(), the old images kept. */
int an_unwind_refresh(struct an_unwind *u);

/* One sample, as the probe copied it; nothing is read from the process itself. */
struct an_unwind_sample {
	pid_t tid;	      /* the sampled thread; <= 0: the process's pid */
	const uint64_t *regs; /* AN_UNWIND_NREGS of them, in DWARF order */
	uint64_t stack_addr;  /* the user address of stack[0]: the sampled %rsp */
	const void *stack;
	size_t stack_len;     /* as copied: less than asked where the stack mapping ends */
};

/* Why an unwind stopped. Only OUTERMOST means the whole stack came back: the CFI of the
 * last frame says its return address is undefined (or it is 0), as at a thread's root. */
enum an_unwind_end {
	AN_UNWIND_OUTERMOST, /* the last frame has no caller: _start, clone3, a fiber's entry */
	AN_UNWIND_DEPTH,     /* more frames than max: the stack is cut there */
	AN_UNWIND_STACK_END, /* the caller's registers lie beyond the copied stack */
	AN_UNWIND_NO_MODULE, /* the last pc is in no module: garbage, JIT, mapped since */
	AN_UNWIND_NO_CFI,    /* its module has no CFI for it, and %rbp led nowhere */
	AN_UNWIND_ERROR,     /* anything else, a frame repeating itself included: see why */
};

struct an_unwind_result {
	unsigned nframes;
	enum an_unwind_end end;
	uint64_t stop_pc; /* the last frame's pc (exact, or its return address); 0: none */
	/* Frames found by libdw's frame-pointer fallback, because the pc before had no
	 * module or its module no CFI: the frame of that pc's caller may be missing. */
	unsigned fp_frames;
	unsigned fp_spliced;   /* frames an_unwind_splice_fp() added after the stop */
	char why[160]; /* what stopped it, with libdw's message, unless OUTERMOST/DEPTH */
};

/* Unwind one sample into ips[0..max): ips[0] is the sampled pc, then return addresses,
 * not minus one: callers subtract one to name them, as for frame-pointer stacks. A frame
 * whose pc is exact (one a signal interrupted, and the signal trampoline) is stored as
 * that pc plus one, so that the same rule names it. Never fails the whole sample: the
 * frames found before a stop come back, and r (may be NULL) says why it stopped.
 * Returns the number of frames, >= 1 when max >= 1 and regs hold a pc. Where libdw
 * finds no CFI for a pc it falls back to the frame pointer, as perf does. */
unsigned an_unwind_stack(struct an_unwind *u, const struct an_unwind_sample *s, uint64_t *ips,
			 unsigned max, struct an_unwind_result *r);
/* After an unwind into ips[0..n) that stopped anywhere but at its depth limit, go on with
 * the kernel's frame-pointer walk of the same sample, fp_ips[0..fp_nr) (leaf first):
 * where the walk holds the last frame's return address, its ips past it are that
 * frame's callers. Code that switches stacks leaves the unwinder at a frame whose caller
 * it cannot find (Go's runtime.nanotime1 calls the vDSO on the system stack, and its CFI
 * reads a return address from that stack: a 0, an end as a root's), while the walk went
 * on along the %rbp chain in place. A walk skips frames (the caller of a function that
 * keeps none) but never adds one, so the return address is matched as often as the
 * unwind met it (recursion); where the walk holds it fewer times nothing is added, as
 * at a real root, where the walk ends too. An unwind that found no caller of the sampled
 * pc takes the walk's. Returns the new count (at most max), and adds to r->fp_spliced
 * what it added. */
unsigned an_unwind_splice_fp(const uint64_t *fp_ips, unsigned fp_nr, uint64_t *ips, unsigned n,
			     unsigned max, struct an_unwind_result *r);
/* "outermost", "depth", "stack-end", "no-module", "no-cfi", "error"; "?" for others. */
const char *an_unwind_end_name(enum an_unwind_end end);

#endif /* SCHEDLAB_ANALYSIS_H */
