/*
 * The offcpu probe around a benchmark: started when a fork begins its measured
 * iterations, stopped when they end, and drained then, while the fork is alive, so
 * that its /proc/PID/maps names the user frames.
 *
 * offcpu.folded is weighted in microseconds off CPU, in oncpu.folded's grammar: a root
 * frame from the phase word at the switch-out, "[parked]" (an idle worker parking, phase
 * PARK), "[blocking]" (a blocking section, phase BLOCK) or "[other]" (any other phase,
 * or a thread that is not the runtime's: a preempted worker waiting for a CPU, a server
 * thread blocked in accept); the thread's name; the user frames, root first; "-" and the
 * kernel frames "_[k]". Without kernel stacks (--offcpu-stacks user) a preempted
 * interval ends in "-;[preempted]" and a sleep ends at its user frames; without user
 * stacks the thread's name is followed by "-". A part that could not be kept is a
 * "[lost: ...]" frame, and a stack cut at the walk's depth a "[truncated]" one, so the
 * file's total is every microsecond kept, and result.json gives the time under each
 * kind of loss frame. With wakers, wakers.folded has each line of offcpu.folded followed
 * by "--" and the stack of the task whose wake-up ended the interval, leaf first (the
 * wake-up point beside the wait it ended, as bcc's offwaketime draws it): its kernel
 * frames, its user frames when it is in the target, and its name; "[lost: waker map
 * full]" where the wake-up found no room to be kept.
 *
 * The maps are sized from what a fork holds: the start and waker records, one per
 * thread that leaves a CPU (is woken) while measured, for the fork's threads
 * (hx_thread_entries(), as sched's thread map). The stacks and keys are the program's
 * wait sites and their combinations with the phase kind, thread name and waker: the
 * run's threads do not bound them (the workers share one name and their wait sites).
 * A wait site recurs, but new stacks keep coming at a slowing pace, the wakers' most (an
 * interrupt's wake-up names wherever it struck): one fork held 280 stacks and 296 keys
 * in 3 s of sequentially here, 394 and 692 in 3 s of error-pipeline with wakers, 672 and
 * 1208 in 10 s. So they are sized for the fork's measured time, HX_OFFCPU_STACKS_PER_S
 * stacks a second (twice that with wakers) and two keys a stack, at least the probe's
 * defaults, and result.json states the rule and the most a fork held.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraphs/flamegraph.h"
#include "harness/harness.h"

#define MAX_FRAMES (16 + 4 * PROBE_MAX_DEPTH) /* two stacks of two parts, and markers */
#define TOP_STACKS 5

enum { CLASS_PARKED, CLASS_BLOCKING, CLASS_OTHER, NCLASSES };
static const char *const class_names[NCLASSES] = { "parked", "blocking", "other" };

/* The loss frames, by kind: the wakee's in offcpu.folded, the waker's in wakers.folded. */
enum loss {
	L_USTACK_FULL,
	L_KSTACK_FULL,
	L_USTACK_ERROR,
	L_KSTACK_ERROR,
	L_TRUNCATED,
	L_COUNTS_FULL,
	L_WAKER_FULL,
	L_WUSTACK_FULL,
	L_WKSTACK_FULL,
	NLOSSES,
};
static const char *const loss_names[NLOSSES] = {
	[L_USTACK_FULL] = "user_stack_map_full",
	[L_KSTACK_FULL] = "kernel_stack_map_full",
	[L_USTACK_ERROR] = "user_stack_errors",
	[L_KSTACK_ERROR] = "kernel_stack_errors",
	[L_TRUNCATED] = "truncated",
	[L_COUNTS_FULL] = "counts_map_full",
	[L_WAKER_FULL] = "waker_map_full",
	[L_WUSTACK_FULL] = "waker_user_stack_map_full",
	[L_WKSTACK_FULL] = "waker_kernel_stack_map_full",
};

struct offcpu_state {
	struct probe_offcpu *p;
	struct an_symcache *symcache;
	struct an_ksyms *ksyms;
	bool ksyms_tried;
	struct an_folded *folded, *wakers;
	struct probe_offcpu_stats stats;
	uint64_t class_ns[NCLASSES];
	uint64_t preempted_ns;            /* kept time of intervals switched out runnable */
	uint64_t with_user_ns, rooted_ns; /* intervals with a user stack, and those of them
					   * whose walk reached the thread's root */
	uint64_t runs0, ns0, runs, ns;    /* the sched_switch program's run-time statistics */
	bool prog_stats;
	/* what the folded files draw under each kind of loss frame: intervals, and their
	 * microseconds as folded */
	uint64_t lost_intervals[NLOSSES], lost_us[NLOSSES];
	unsigned sized_threads;           /* the fork's workers the maps were sized for; 0:
					   * sizes given (hx_offcpu_open) */
	bool maps_given;                  /* stacks and keys sized by --offcpu-maps */
	/* folding scratch */
	struct an_usyms *usyms;
	char names[MAX_FRAMES][HX_FRAME_LEN];
	const char *frames[MAX_FRAMES];
	char summary[256];
};

static unsigned phase_class(unsigned kind)
{
	return kind == RT_PHASE_PARK ? CLASS_PARKED : kind == RT_PHASE_BLOCK ? CLASS_BLOCKING
									 : CLASS_OTHER;
}

/* Whether the nk-frame kernel stack kstack entered the kernel by a system call. */
static bool entered_by_syscall(const struct offcpu_state *s, const uint64_t *kstack, unsigned nk)
{
	char root[HX_FRAME_LEN];

	if (!nk)
		return false;
	hx_kernel_frame(s->ksyms, kstack[nk - 1] - 1, root, sizeof(root));
	return hx_syscall_entry(root);
}

/* The wakee's frames, root first, into s->frames from *n; names used from *used; the
 * loss frames drawn added to *drawn (1 << enum loss). */
static void wakee_frames(struct offcpu_state *s, const struct probe_offcpu_interval *iv,
			 size_t *n, size_t *used, unsigned *drawn)
{
	bool rooted = false, garbage, past;
	unsigned nu = 0, nk = iv->nkernel < PROBE_MAX_DEPTH ? iv->nkernel : PROBE_MAX_DEPTH;
	unsigned stacks = probe_offcpu_stacks(s->p);
	size_t ubase, kbase;
	const char *marker = NULL;

	/* no key, so no class, thread or stacks: the time alone, under its own root */
	if (iv->lost & PROBE_LOST_COUNTS_FULL) {
		s->frames[(*n)++] = "[lost: counts map full]";
		*drawn |= 1u << L_COUNTS_FULL;
		return;
	}
	snprintf(s->names[(*used)], HX_FRAME_LEN, "[%s]", class_names[phase_class(iv->kind)]);
	s->frames[(*n)++] = s->names[(*used)++];
	hx_comm_frame(iv->comm, s->names[*used], HX_FRAME_LEN);
	s->frames[(*n)++] = s->names[(*used)++];
	if (iv->lost & PROBE_LOST_USTACK_FULL) {
		marker = "[lost: user stack storage full]";
		*drawn |= 1u << L_USTACK_FULL;
	} else if (iv->lost & PROBE_LOST_USTACK_ERROR) {
		marker = "[lost: user stack error]";
		*drawn |= 1u << L_USTACK_ERROR;
	}
	ubase = *used;
	/* a thread that blocked is in a system call (or a fault, whose address is one
	 * instruction off at worst); a preempted one only where its kernel stack says so */
	if (!marker && s->usyms)
		nu = hx_user_frames(s->usyms, iv->ustack, iv->nuser,
				    !iv->preempted || entered_by_syscall(s, iv->kstack, nk),
				    &s->names[ubase], PROBE_MAX_DEPTH, &rooted, &garbage, &past);
	*used += nu;
	if (nu) {
		s->with_user_ns += iv->ns;
		s->rooted_ns += rooted ? iv->ns : 0;
	}
	if (marker)
		s->frames[(*n)++] = marker;
	/* a walk at the depth limit that ended at its thread's root lost nothing */
	if (nu && (iv->lost & PROBE_TRUNCATED_USTACK) && !rooted) {
		s->frames[(*n)++] = "[truncated]";
		*drawn |= 1u << L_TRUNCATED;
	}
	for (size_t i = nu; i-- > 0;)
		s->frames[(*n)++] = s->names[ubase + i];
	if (!(stacks & PROBE_OFFCPU_KERNEL)) {
		if (iv->preempted) {
			s->frames[(*n)++] = "-";
			s->frames[(*n)++] = "[preempted]";
		}
		return;
	}
	s->frames[(*n)++] = "-";
	if (iv->lost & PROBE_LOST_KSTACK_FULL) {
		s->frames[(*n)++] = "[lost: kernel stack storage full]";
		*drawn |= 1u << L_KSTACK_FULL;
	} else if (iv->lost & PROBE_LOST_KSTACK_ERROR) {
		s->frames[(*n)++] = "[lost: kernel stack error]";
		*drawn |= 1u << L_KSTACK_ERROR;
	}
	if (iv->lost & PROBE_TRUNCATED_KSTACK) {
		s->frames[(*n)++] = "[truncated]";
		*drawn |= 1u << L_TRUNCATED;
	}
	kbase = *used;
	for (unsigned i = 0; i < nk; i++)
		hx_kernel_frame(s->ksyms, i ? iv->kstack[i] - 1 : iv->kstack[i],
				s->names[kbase + i], HX_FRAME_LEN);
	*used += nk;
	for (size_t i = nk; i-- > 0;)
		s->frames[(*n)++] = s->names[kbase + i];
}

/* The waker's frames after "--", leaf first: kernel, user (a waker in the target), name;
 * the loss frames drawn added to *drawn. */
static void waker_frames(struct offcpu_state *s, const struct probe_offcpu_interval *iv,
			 size_t *n, size_t *used, unsigned *drawn)
{
	bool rooted, garbage, past;
	unsigned nu = 0, nk = iv->nwkernel < PROBE_MAX_DEPTH ? iv->nwkernel : PROBE_MAX_DEPTH;

	s->frames[(*n)++] = "--";
	if (iv->lost & PROBE_LOST_WAKER_FULL) {
		/* its wake-up found no room to be kept (waker_map_full) */
		s->frames[(*n)++] = "[lost: waker map full]";
		*drawn |= 1u << L_WAKER_FULL;
		return;
	}
	if (!iv->woken) {
		/* preempted (runnable, no wake-up), or woken before the window */
		s->frames[(*n)++] = "[no wake-up seen]";
		return;
	}
	if (iv->lost & PROBE_LOST_WKSTACK_FULL) {
		s->frames[(*n)++] = "[lost: kernel stack storage full]";
		*drawn |= 1u << L_WKSTACK_FULL;
	}
	for (unsigned i = 0; i < nk; i++) {
		hx_kernel_frame(s->ksyms, i ? iv->wkstack[i] - 1 : iv->wkstack[i],
				s->names[*used], HX_FRAME_LEN);
		s->frames[(*n)++] = s->names[(*used)++];
	}
	s->frames[(*n)++] = "-";
	if (iv->lost & PROBE_LOST_WUSTACK_FULL) {
		s->frames[(*n)++] = "[lost: user stack storage full]";
		*drawn |= 1u << L_WUSTACK_FULL;
	}
	if (iv->waker_in_target && s->usyms)
		nu = hx_user_frames(s->usyms, iv->wustack, iv->nwuser,
				    !nk || entered_by_syscall(s, iv->wkstack, nk),
				    &s->names[*used], PROBE_MAX_DEPTH, &rooted, &garbage, &past);
	else if (!iv->waker_in_target)
		s->frames[(*n)++] = iv->waker_tgid ? "[another process]" : "[interrupt]";
	for (unsigned i = 0; i < nu; i++)
		s->frames[(*n)++] = s->names[(*used)++];
	hx_comm_frame(iv->waker_comm, s->names[*used], HX_FRAME_LEN);
	s->frames[(*n)++] = s->names[(*used)++];
}

/* The leaf kernel frames that are the probe's own (the tracepoint's BPF dispatch and
 * the program): how many of n to skip. */
static unsigned own_frames(const struct an_ksyms *k, const uint64_t *ips, unsigned n)
{
	unsigned i = 0;
	uint64_t off;

	for (; i < n && k; i++) {
		const char *name = an_ksyms_lookup(k, i ? ips[i] - 1 : ips[i], &off);

		if (!name || (strncmp(name, "bpf_prog_", 9) && strncmp(name, "bpf_trace_run", 13) &&
			      strncmp(name, "__bpf_trace_", 12)))
			break;
	}
	return i;
}

/* What was drawn under the loss frames of one aggregate. */
static void count_drawn(struct offcpu_state *s, unsigned drawn, uint64_t intervals,
			uint64_t us)
{
	for (int k = 0; k < NLOSSES; k++)
		if (drawn & (1u << k)) {
			s->lost_intervals[k] += intervals;
			s->lost_us[k] += us;
		}
}

static int fold(const struct probe_offcpu_interval *iv, void *arg)
{
	struct offcpu_state *s = arg;
	/* microseconds, rounded: every key holds at least min_block_us (>= 1) of time */
	uint64_t us = (iv->ns + 500) / 1000;
	size_t n = 0, used = 0;
	unsigned drawn = 0;
	int err;

	struct probe_offcpu_interval v = *iv;
	unsigned skip;

	if (!us)
		us = 1;
	skip = own_frames(s->ksyms, v.kstack, v.nkernel);
	v.kstack += skip;
	v.nkernel -= skip;
	skip = own_frames(s->ksyms, v.wkstack, v.nwkernel);
	v.wkstack += skip;
	v.nwkernel -= skip;
	iv = &v;
	if (!(iv->lost & PROBE_LOST_COUNTS_FULL)) {
		s->class_ns[phase_class(iv->kind)] += iv->ns;
		s->preempted_ns += iv->preempted ? iv->ns : 0;
	}
	wakee_frames(s, iv, &n, &used, &drawn);
	err = an_folded_add(s->folded, s->frames, n, us);
	if (!err && s->wakers) {
		waker_frames(s, iv, &n, &used, &drawn);
		err = an_folded_add(s->wakers, s->frames, n, us);
	}
	if (!err)
		count_drawn(s, drawn, iv->intervals, us);
	return err;
}

int hx_offcpu_open(void **state, const struct probe_offcpu_opts *o, char *why, size_t len)
{
	struct offcpu_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->folded = an_folded_new();
	s->wakers = o->wakers ? an_folded_new() : NULL;
	s->symcache = an_symcache_new();
	if (!s->folded || !s->symcache || (o->wakers && !s->wakers)) {
		an_folded_free(s->folded);
		an_folded_free(s->wakers);
		an_symcache_free(s->symcache);
		free(s);
		return -ENOMEM;
	}
	s->p = probe_offcpu_open(o, why, len);
	if (!s->p) {
		int err = errno ? -errno : -EINVAL;

		an_folded_free(s->folded);
		an_folded_free(s->wakers);
		an_symcache_free(s->symcache);
		free(s);
		/* -EINVAL would read as bad input: a program the kernel refused is not */
		return err == -EINVAL ? -ENOTSUP : err;
	}
	*state = s;
	return 0;
}

void hx_offcpu_maps_for_run(const struct hx_probe_config *cfg, unsigned *stacks,
			    unsigned *keys)
{
	double want = HX_OFFCPU_STACKS_PER_S * (cfg->wakers ? 2 : 1) * cfg->measure_s;

	*stacks = want < PROBE_OFFCPU_STACK_ENTRIES	 ? PROBE_OFFCPU_STACK_ENTRIES
		  : want > HX_OFFCPU_STACK_ENTRIES_MAX ? HX_OFFCPU_STACK_ENTRIES_MAX
						       : (unsigned)want;
	*keys = 2 * *stacks < PROBE_OFFCPU_COUNT_ENTRIES ? PROBE_OFFCPU_COUNT_ENTRIES
							 : 2 * *stacks;
}

static int op_open(void **state, const struct hx_probe_config *cfg, char *why, size_t len)
{
	/* the start and waker records, one per thread of the fork; the stacks and keys as
	 * given, or for the fork's measured time (the file's opening comment says why) */
	unsigned threads = hx_thread_entries(cfg);
	struct probe_offcpu_opts o = { .min_block_us = cfg->min_block_us,
				       .wakers = cfg->wakers,
				       .stacks = cfg->offcpu_stacks,
				       .stack_entries = cfg->offcpu_stack_entries,
				       .count_entries = cfg->offcpu_count_entries,
				       .thread_entries = threads,
				       .waker_entries = threads };
	int err;

	if (!o.stack_entries && !o.count_entries)
		hx_offcpu_maps_for_run(cfg, &o.stack_entries, &o.count_entries);
	err = hx_offcpu_open(state, &o, why, len);

	if (!err) {
		struct offcpu_state *s = *state;

		s->sized_threads = cfg->threads ? cfg->threads : 1;
		s->maps_given = cfg->offcpu_stack_entries || cfg->offcpu_count_entries;
	}
	return err;
}

static int op_begin(void *state, pid_t pid, int64_t tls_off)
{
	struct offcpu_state *s = state;

	s->prog_stats = !probe_offcpu_prog_stats(s->p, &s->runs0, &s->ns0);
	return probe_offcpu_start(s->p, pid, tls_off);
}

static int op_end(void *state, pid_t pid)
{
	struct offcpu_state *s = state;
	struct an_procmaps *maps;
	uint64_t runs, ns;
	int err = probe_offcpu_stop(s->p);

	if (s->prog_stats && !probe_offcpu_prog_stats(s->p, &runs, &ns)) {
		s->runs += runs - s->runs0;
		s->ns += ns - s->ns0;
	}
	/* read at the first drain, not in the attach time: symbolizing is not attaching */
	if (!s->ksyms && !s->ksyms_tried) {
		s->ksyms = an_ksyms_load(NULL); /* may fail: kernel frames then read [k]+0x... */
		s->ksyms_tried = true;
	}
	maps = an_procmaps_read(pid);
	/* without the mappings the user frames are lost, not the time: drain anyway */
	s->usyms = maps ? an_usyms_new(s->symcache, maps) : NULL;
	if (!err)
		err = probe_offcpu_drain(s->p, fold, s, &s->stats);
	an_usyms_free(s->usyms);
	s->usyms = NULL;
	return err;
}

static int op_reset(void *state)
{
	struct offcpu_state *s = state;
	struct an_folded *f = an_folded_new(), *w = s->wakers ? an_folded_new() : NULL;

	if (!f || (s->wakers && !w)) {
		an_folded_free(f);
		an_folded_free(w);
		return -ENOMEM;
	}
	an_folded_free(s->folded);
	an_folded_free(s->wakers);
	s->folded = f;
	s->wakers = w;
	memset(&s->stats, 0, sizeof(s->stats));
	memset(s->class_ns, 0, sizeof(s->class_ns));
	memset(s->lost_intervals, 0, sizeof(s->lost_intervals));
	memset(s->lost_us, 0, sizeof(s->lost_us));
	s->preempted_ns = 0;
	s->with_user_ns = s->rooted_ns = s->runs = s->ns = 0;
	return 0;
}

static double us_of(uint64_t ns)
{
	return (double)ns / 1000.0;
}

static void write_json(FILE *out, const void *data)
{
	const struct offcpu_state *s = data;
	const struct probe_offcpu_stats *st = &s->stats;
	unsigned stacks, counts, threads, wakers;

	probe_offcpu_sizes(s->p, &stacks, &counts, &threads, &wakers);
	fprintf(out, ", \"min_block_us\": %u, \"wakers\": %s, \"stacks\": \"%s\"",
		probe_offcpu_min_block_us(s->p), probe_offcpu_wakers(s->p) ? "true" : "false",
		hx_offcpu_stacks_name(probe_offcpu_stacks(s->p)));
	fprintf(out, ", \"folded_us\": %" PRIu64 ", \"total_us\": ", an_folded_total(s->folded));
	an_json_num(out, us_of(st->kept_ns + st->counts_full_ns));
	fprintf(out, ", \"by_class_us\": {");
	for (int c = 0; c < NCLASSES; c++) {
		fprintf(out, "%s\"%s\": ", c ? ", " : "", class_names[c]);
		an_json_num(out, us_of(s->class_ns[c]));
	}
	fprintf(out, "}, \"preempted_us\": ");
	an_json_num(out, us_of(s->preempted_ns));
	fprintf(out, ", \"intervals\": {\"switches\": %" PRIu64 ", \"ended\": %" PRIu64
		     ", \"kept\": %" PRIu64 ", \"under_min\": %" PRIu64 ", \"under_min_us\": ",
		st->switches, st->intervals, st->kept, st->under_min);
	an_json_num(out, us_of(st->under_min_ns));
	fprintf(out, ", \"unfinished\": %" PRIu64 ", \"restarted\": %" PRIu64 "}", st->unfinished,
		st->restarts);
	/* the kernel's counts of intervals (wake-ups for waker_map_full), and truncated:
	 * the intervals drawn with a stack cut at the walk's depth */
	fprintf(out, ", \"lost\": {\"user_stack_map_full\": %" PRIu64
		     ", \"kernel_stack_map_full\": %" PRIu64 ", \"user_stack_errors\": %" PRIu64
		     ", \"kernel_stack_errors\": %" PRIu64 ", \"truncated\": %" PRIu64
		     ", \"counts_map_full\": %" PRIu64 ", \"counts_map_full_us\": ",
		st->ustack_full, st->kstack_full, st->ustack_errors, st->kstack_errors,
		s->lost_intervals[L_TRUNCATED], st->counts_full);
	an_json_num(out, us_of(st->counts_full_ns));
	fprintf(out, ", \"start_map_full\": %" PRIu64 ", \"waker_map_full\": %" PRIu64
		     ", \"waker_map_full_intervals\": %" PRIu64 ", \"program_misses\": %" PRIu64
		     "}",
		st->start_full, st->waker_full, st->waker_lost, probe_offcpu_misses(s->p));
	/* what the folded files draw under each kind of loss frame */
	fputs(", \"lost_frames\": {", out);
	for (int k = 0; k < NLOSSES; k++)
		fprintf(out, "%s\"%s\": {\"intervals\": %" PRIu64 ", \"us\": %" PRIu64 "}",
			k ? ", " : "", loss_names[k], s->lost_intervals[k], s->lost_us[k]);
	fprintf(out, "}, \"maps\": {\"stacks\": %u, \"counts\": %u, \"threads\": %u, "
		     "\"wakers\": %u, \"sized_for_workers\": ", stacks, counts, threads, wakers);
	if (s->sized_threads)
		fprintf(out, "%u, \"threads_rule\": \"%d per worker + %d, %d to %d\"",
			s->sized_threads, HX_THREADS_PER_WORKER, HX_THREADS_EXTRA, HX_THREADS_MIN,
			HX_THREADS_MAX);
	else
		fputs("null, \"threads_rule\": \"given\"", out);
	fprintf(out, ", \"stacks_held_max\": %" PRIu64 ", \"counts_held_max\": %" PRIu64,
		st->stacks_held_max, st->keys_held_max);
	if (s->maps_given)
		fputs(", \"stacks_rule\": \"given: --offcpu-maps\"}", out);
	else
		fprintf(out, ", \"stacks_rule\": \"for the fork's measured time: %d a second "
			     "(twice that with wakers), two keys a stack, at least %d and %d\"}",
			HX_OFFCPU_STACKS_PER_S, PROBE_OFFCPU_STACK_ENTRIES, PROBE_OFFCPU_COUNT_ENTRIES);
	fprintf(out, ", \"user_stacks\": {\"with_user_us\": ");
	an_json_num(out, us_of(s->with_user_ns));
	fprintf(out, ", \"rooted_us\": ");
	an_json_num(out, us_of(s->rooted_ns));
	fprintf(out, "}, \"wakeups\": %" PRIu64 ", \"cost\": {\"switch_events\": %" PRIu64
		     ", \"program_ns\": %" PRIu64 ", \"ns_per_event\": ",
		st->wakeups, s->runs, s->ns);
	an_json_num(out, s->prog_stats && s->runs ? (double)s->ns / (double)s->runs : NAN);
	fprintf(out, "}");
}

/* A row of the top stacks: the stack as shown (its class and the user frames nearest the
 * leaf), and the time of every folded line shown so. */
struct shown {
	char text[512];
	uint64_t count;
};

static int shown_by_text(const void *pa, const void *pb)
{
	return strcmp(((const struct shown *)pa)->text, ((const struct shown *)pb)->text);
}

static int shown_by_count(const void *pa, const void *pb)
{
	const struct shown *a = pa, *b = pb;

	if (a->count != b->count)
		return (a->count < b->count) - (a->count > b->count);
	return strcmp(a->text, b->text);
}

/* "[parked] a;b;c": a folded stack's class (its first frame) and its three user frames
 * nearest the leaf, with a table's | and ` made spaces. */
static void short_stack(const char *stack, char *buf, size_t len)
{
	const char *dash = strstr(stack, ";-;"), *end = dash ? dash : stack + strlen(stack);
	const char *from = end, *semi = strchr(stack, ';');
	int seps = 0;

	while (from > stack && seps < 3)
		if (*--from == ';')
			seps++;
	if (from > stack)
		from++;
	if (stack[0] == '[' && semi && semi < from)
		snprintf(buf, len, "%.*s … %.*s", (int)(semi - stack), stack, (int)(end - from),
			 from);
	else
		snprintf(buf, len, "%.*s", (int)(end - from), from);
	for (char *c = buf; *c; c++)
		if (*c == '|' || *c == '`')
			*c = ' ';
}

/* The top stacks as shown: folded lines that look alike in a row (they differ past the
 * frames shown) are one row with their time summed. Into top (at most TOP_STACKS);
 * their number, 0 when there is no memory for it. */
static size_t top_shown(const struct an_folded_line *lines, size_t n, struct shown *top)
{
	struct shown *all = n ? calloc(n, sizeof(*all)) : NULL;
	size_t rows = 0;

	if (!all)
		return 0;
	for (size_t i = 0; i < n; i++) {
		short_stack(lines[i].stack, all[i].text, sizeof(all[i].text));
		all[i].count = lines[i].count;
	}
	qsort(all, n, sizeof(*all), shown_by_text);
	for (size_t i = 0; i < n; i++) {
		if (rows && !strcmp(all[rows - 1].text, all[i].text))
			all[rows - 1].count += all[i].count;
		else
			all[rows++] = all[i];
	}
	qsort(all, rows, sizeof(*all), shown_by_count);
	rows = rows < TOP_STACKS ? rows : TOP_STACKS;
	memcpy(top, all, rows * sizeof(*top));
	free(all);
	return rows;
}

static void write_md(FILE *out, const void *data)
{
	const struct offcpu_state *s = data;
	const struct probe_offcpu_stats *st = &s->stats;
	uint64_t total = st->kept_ns + st->counts_full_ns, folded = an_folded_total(s->folded);
	const struct an_folded_line *lines;
	struct shown top[TOP_STACKS];
	unsigned stacks, counts, threads, wakers;
	char nbuf[64];
	size_t n, ntop;

	probe_offcpu_sizes(s->p, &stacks, &counts, &threads, &wakers);
	fprintf(out, "### Off-CPU\n\n");
	an_format_number(us_of(total) / 1000.0, 1, nbuf, sizeof(nbuf));
	fprintf(out, "%s ms off CPU in %" PRIu64 " intervals of at least %u µs (offcpu.folded, "
		     "weighted in µs%s; %s stacks).", nbuf, st->kept + st->counts_full,
		probe_offcpu_min_block_us(s->p), s->wakers ? "; wakers.folded: with the waker's stack" : "",
		probe_offcpu_stacks(s->p) == (PROBE_OFFCPU_USER | PROBE_OFFCPU_KERNEL)
			? "user and kernel"
			: hx_offcpu_stacks_name(probe_offcpu_stacks(s->p)));
	an_format_number(us_of(s->preempted_ns) / 1000.0, 1, nbuf, sizeof(nbuf));
	fprintf(out, " Of it %s ms (%.1f%%) preempted: switched out still runnable, waiting for "
		     "a CPU, not for an event.\n\n", nbuf,
		total ? 100.0 * (double)s->preempted_ns / (double)total : 0.0);
	fprintf(out, "| class | ms | share |\n|---|---:|---:|\n");
	for (int c = 0; c < NCLASSES; c++) {
		an_format_number(us_of(s->class_ns[c]) / 1000.0, 1, nbuf, sizeof(nbuf));
		fprintf(out, "| %s | %s | %.1f%% |\n", class_names[c], nbuf,
			total ? 100.0 * (double)s->class_ns[c] / (double)total : 0.0);
	}
	if (st->counts_full_ns) {
		an_format_number(us_of(st->counts_full_ns) / 1000.0, 1, nbuf, sizeof(nbuf));
		fprintf(out, "| lost: counts map full | %s | %.1f%% |\n", nbuf,
			100.0 * (double)st->counts_full_ns / (double)total);
	}
	lines = an_folded_lines(s->folded, &n);
	ntop = lines ? top_shown(lines, n, top) : 0;
	if (ntop) {
		fprintf(out, "\nTop stacks (the class and the user frames nearest the leaf; stacks "
			     "that differ only past them are one row):\n\n"
			     "| ms | share | stack |\n|---:|---:|---|\n");
		for (size_t i = 0; i < ntop; i++) {
			an_format_number((double)top[i].count / 1000.0, 1, nbuf, sizeof(nbuf));
			fprintf(out, "| %s | %.1f%% | `%s` |\n", nbuf,
				folded ? 100.0 * (double)top[i].count / (double)folded : 0.0,
				top[i].text);
		}
	}
	fprintf(out, "\nCounted, not kept: %" PRIu64 " intervals under %u µs (%.1f ms); %" PRIu64
		     " switch-outs still off CPU at a fork's end. Timed from the thread's own CPU "
		     "time: %" PRIu64 " intervals whose switch-in the kernel did not report (it "
		     "fires no sched_switch for some tasks' switches out). Lost: %" PRIu64
		     " + %" PRIu64
		     " intervals whose user + kernel stack found the stacks map (%u) full, %" PRIu64
		     " whose key found the counts map (%u) full (their time kept, stacks unknown), %"
		     PRIu64 " switch-outs with no room in the start map (%u threads: not timed), %"
		     PRIu64 " intervals with a stack cut at the walk's %d frames ([truncated])",
		st->under_min, probe_offcpu_min_block_us(s->p), us_of(st->under_min_ns) / 1000.0,
		st->unfinished, st->restarts, st->ustack_full, st->kstack_full, stacks,
		st->counts_full, counts, st->start_full, threads, s->lost_intervals[L_TRUNCATED],
		PROBE_MAX_DEPTH);
	if (s->wakers)
		fprintf(out, ", %" PRIu64 " wake-ups with no room in the wakers map (%u "
			     "threads), which left %" PRIu64 " intervals without their waker "
			     "([lost: waker map full] in wakers.folded)",
			st->waker_full, wakers, st->waker_lost);
	if (s->sized_threads)
		fprintf(out, ". The thread maps are sized for the fork's threads (%d per "
			     "worker of %u, and %d), the stacks and keys %s",
			HX_THREADS_PER_WORKER, s->sized_threads, HX_THREADS_EXTRA,
			s->maps_given ? "by --offcpu-maps"
				      : "for the fork's measured time (new wait stacks keep coming, "
					"ever more slowly)");
	fprintf(out, "; one fork held at most %" PRIu64 " stacks and %" PRIu64 " keys "
		     "(--offcpu-maps STACKS,COUNTS sizes the maps)",
		st->stacks_held_max, st->keys_held_max);
	if (probe_offcpu_stacks(s->p) & PROBE_OFFCPU_USER)
		fprintf(out, ". User stacks are walked by frame pointers: of the %.1f ms with one, "
			     "%.1f ms reached the thread's root (a wait inside glibc, built without "
			     "them, loses its caller's frame).",
			us_of(s->with_user_ns) / 1000.0, us_of(s->rooted_ns) / 1000.0);
	else
		fprintf(out, ". User stacks were not taken (--offcpu-stacks kernel).");
	if (!(probe_offcpu_stacks(s->p) & PROBE_OFFCPU_KERNEL))
		fprintf(out, " Kernel stacks were not taken (--offcpu-stacks user): a preempted "
			     "interval ends in [preempted], a sleep at its user frames.");
	if (s->prog_stats && s->runs)
		fprintf(out, " The sched_switch program ran %" PRIu64 " times, %.0f ns each.",
			s->runs, (double)s->ns / (double)s->runs);
	fprintf(out, "\n\n");
}

static int write_svg(struct offcpu_state *s, const struct an_folded *f, const char *dir,
		     const char *name, const char *title)
{
	char path[PATH_MAX];
	struct fg_options fo;

	fg_options_default(&fo);
	fo.title = title;
	fo.subtitle = s->summary; /* the time, the intervals, each class's share, the losses */
	fo.count_name = "us";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fg_svg_write_file(f, &fo, path);
}

static int op_finish(void *state, const char *dir, struct an_probe_part *part)
{
	struct offcpu_state *s = state;
	const struct probe_offcpu_stats *st = &s->stats;
	char path[PATH_MAX];
	int err;

	/* first: the SVG's subtitle */
	snprintf(s->summary, sizeof(s->summary),
		 "%.1f ms off-CPU in %" PRIu64 " intervals (parked %.1f, blocking %.1f, other "
		 "%.1f); %s",
		 us_of(st->kept_ns + st->counts_full_ns) / 1000.0, st->kept + st->counts_full,
		 us_of(s->class_ns[CLASS_PARKED]) / 1000.0,
		 us_of(s->class_ns[CLASS_BLOCKING]) / 1000.0,
		 us_of(s->class_ns[CLASS_OTHER]) / 1000.0,
		 st->ustack_full + st->kstack_full + st->ustack_errors + st->kstack_errors +
				 st->counts_full + st->start_full + st->waker_full +
				 s->lost_intervals[L_TRUNCATED]
			 ? "losses counted in result.json"
			 : "nothing lost");
	snprintf(path, sizeof(path), "%s/offcpu.folded", dir);
	err = an_folded_write_file(s->folded, path);
	if (!err)
		err = write_svg(s, s->folded, dir, "offcpu.svg", "Off-CPU time (µs)");
	if (!err && s->wakers) {
		snprintf(path, sizeof(path), "%s/wakers.folded", dir);
		err = an_folded_write_file(s->wakers, path);
	}
	if (err)
		return err;
	part->files[0] = "offcpu.folded";
	part->files[1] = "offcpu.svg";
	part->files[2] = s->wakers ? "wakers.folded" : NULL;
	part->files[3] = NULL;
	part->summary = s->summary;
	part->json = write_json;
	part->md = write_md;
	part->data = s;
	return 0;
}

const char *hx_offcpu_stacks_name(unsigned stacks)
{
	switch (stacks & (PROBE_OFFCPU_USER | PROBE_OFFCPU_KERNEL)) {
	case PROBE_OFFCPU_USER:
		return "user";
	case PROBE_OFFCPU_KERNEL:
		return "kernel";
	default:
		return "both";
	}
}

int hx_offcpu_stacks_parse(const char *arg, unsigned *stacks)
{
	if (!strcmp(arg, "both"))
		*stacks = PROBE_OFFCPU_USER | PROBE_OFFCPU_KERNEL;
	else if (!strcmp(arg, "user"))
		*stacks = PROBE_OFFCPU_USER;
	else if (!strcmp(arg, "kernel"))
		*stacks = PROBE_OFFCPU_KERNEL;
	else
		return -EINVAL;
	return 0;
}

static void op_close(void *state)
{
	struct offcpu_state *s = state;

	probe_offcpu_free(s->p);
	an_ksyms_free(s->ksyms);
	an_folded_free(s->folded);
	an_folded_free(s->wakers);
	an_symcache_free(s->symcache);
	free(s);
}

const struct hx_probe_ops hx_offcpu_ops = {
	.id = HX_PROBE_OFFCPU,
	.name = "offcpu",
	.summary = "off-CPU time by stack from sched_switch, split parked/blocking/other by "
		   "the phase word (--min-block-us, --wakers)",
	.open = op_open,
	.begin = op_begin,
	.end = op_end,
	.reset = op_reset,
	.finish = op_finish,
	.close = op_close,
};
