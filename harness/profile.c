/*
 * The on-CPU probe around a benchmark: start it when a fork begins its measured
 * iterations, and when they end stop it, drain the kernel's aggregates and turn them
 * into folded stacks while the fork is still alive (its /proc/PID/maps is read then,
 * so PIE and library addresses resolve). Samples whose user stack the probe sends
 * whole (DWARF mode, or auto where the frame-pointer walk met code without frame
 * pointers) are unwound with libdw as they arrive, on the probe's reader thread,
 * against the mappings read when the fork began measuring.
 *
 * A folded line is: the sample's category as a "[category]" frame; the thread's name;
 * when grouping by task, the running task's entry function as a "[task: NAME]" frame (none
 * for a sample that ran no task); the user frames, root first; a "-" frame and the
 * kernel frames with "_[k]" when the sample has a kernel stack. Nothing is dropped: a
 * part of a sample that was lost is kept as a "[lost: ...]" frame, so the folded total
 * equals the samples the probe counted. Every sample is classified twice, by its phase
 * word and by the stack rules over its own frames; the two are compared, not merged. A
 * thread that is not the runtime's (phase NONE: the harness thread, a server, the
 * blocking pool) has no phase: its category is the rules', all of them, and "other"
 * where none names a frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/harness.h"
#include "runtime/clock.h"

#define MAX_FRAMES 300 /* category, comm, task, markers, user and kernel stacks of 127 each */
#define NAME_LEN   HX_FRAME_LEN
/* A process's mappings are read again when a sample runs into code mapped since (ld.so
 * loading libraries, a dlopen, a JIT's new code): at once the first time, then no sooner
 * than a gap that doubles while the re-reads find nothing new (a frame pointer into
 * data, code that no file backs), from REREAD_GAP_MIN_NS to REREAD_GAP_MAX_NS. */
#define REREAD_GAP_MIN_NS (2 * 1000000ull)
#define REREAD_GAP_MAX_NS (1000 * 1000000ull)
#define UNWIND_TRIES_MAX   8 /* attempts to attach libdw to a profiled process */

/* The functions that begin a thread's stack: a fiber's entry, glibc's thread start
 * (start_thread, and clone3/clone under it as DWARF sees them), and the main thread's
 * start. A stack is cut at the first of them from the leaf: what lies past one is not
 * the thread's (a frame-pointer walk reads on through whatever the caller left in %rbp;
 * DWARF goes on to clone3), so the same place looks the same from either walk. */
static const char *const thread_roots[] = {
	"rt__fiber_start", "start_thread", "clone3", "__clone3", "clone", "__clone",
	"__libc_start_call_main", "__libc_start_main", "_start", NULL,
};

/* When the next re-read of a process's mappings may be, and the gap after it. */
struct reread {
	uint64_t next_ns, gap_ns;
};

static bool reread_due(const struct reread *r, uint64_t now)
{
	return now >= r->next_ns;
}

/* After a re-read at now: the next soon if it helped, later if it did not. */
static void reread_done(struct reread *r, uint64_t now, bool helped)
{
	if (helped || !r->gap_ns)
		r->gap_ns = REREAD_GAP_MIN_NS;
	else if (r->gap_ns < REREAD_GAP_MAX_NS)
		r->gap_ns *= 2;
	r->next_ns = now + r->gap_ns;
}

struct fold_ctx {
	struct hx_profile *p;
	struct an_usyms *usyms;
	char names[MAX_FRAMES][NAME_LEN];
	const char *frames[MAX_FRAMES];  /* root first, for the folded line */
	const char *leaf[MAX_FRAMES];    /* leaf first, kernel then user, for the rules */
	uint64_t ips[PROBE_MAX_DEPTH];
};

/* A fork while it is measured: what the reader thread needs for its DWARF samples. */
struct hx__live {
	pid_t pid;
	struct an_usyms *usyms;  /* the mappings when it began measuring */
	struct an_unwind *unwind; /* NULL: none could be made (unwind_error says why) */
	struct reread unwind_reread;
	uint64_t prog_runs, prog_ns; /* the program's counters at the start */
	bool prog_stats;
	struct fold_ctx *fold;   /* for DWARF samples: the reader's, then the stop's */
};


/* A process of hx_profile_target(): its mappings as last read. */
struct hx__proc {
	pid_t pid;
	struct an_usyms *usyms;  /* NULL: gone before they could be read */
	bool gone;               /* its mappings could no longer be read: it exited */
	struct an_unwind *unwind; /* DWARF samples': made at the first (NULL: none yet, or
				   * libdw could not attach) */
	unsigned unwind_tries;   /* attempts to make it: libdw cannot attach mid-exec */
	struct reread unwind_reread; /* the unwinder's, when a stack runs into no module */
	struct reread names_reread;  /* the names', when a frame is in no mapping */
};

/* One sample (or an aggregate of identical ones) on its way into the profile. */
struct sample {
	uint64_t phase;
	uint64_t entry;		 /* the running task's entry function; 0: none, or not grouping */
	const char *comm;
	const uint64_t *ustack;	 /* leaf first, raw: ustack[0] the sampled pc */
	unsigned nuser;
	const uint64_t *kstack;
	unsigned nkernel;
	uint32_t lost;
	uint64_t count;
	bool dwarf, fallback;
	const struct an_unwind_result *unwound; /* DWARF: why the unwind stopped */
	const char *no_unwinder; /* DWARF: the sample could not be unwound at all: why */
};

const char *hx_callgraph_name(enum probe_callgraph cg)
{
	return cg == PROBE_CG_DWARF ? "dwarf" : cg == PROBE_CG_AUTO ? "auto" : "fp";
}

int hx_callgraph_parse(const char *name)
{
	if (!strcmp(name, "fp"))
		return PROBE_CG_FP;
	if (!strcmp(name, "dwarf"))
		return PROBE_CG_DWARF;
	if (!strcmp(name, "auto"))
		return PROBE_CG_AUTO;
	return -1;
}

static bool is_root(const char *name)
{
	for (size_t i = 0; thread_roots[i]; i++)
		if (!strcmp(name, thread_roots[i]))
			return true;
	return false;
}

/* Count a broken stack under (object, why). */
static void count_break(struct hx_profile *p, const char *object, const char *why,
			uint64_t count)
{
	size_t i;

	for (i = 0; i < p->nall_breaks; i++)
		if (!strcmp(p->all_breaks[i].object, object) && !strcmp(p->all_breaks[i].why, why))
			break;
	if (i == p->nall_breaks) {
		if (i == sizeof(p->all_breaks) / sizeof(p->all_breaks[0])) {
			p->breaks_overflow += count;
			return;
		}
		snprintf(p->all_breaks[i].object, sizeof(p->all_breaks[i].object), "%s", object);
		snprintf(p->all_breaks[i].why, sizeof(p->all_breaks[i].why), "%s", why);
		p->all_breaks[i].count = 0;
		p->nall_breaks++;
	}
	p->all_breaks[i].count += count;
}

static int break_cmp(const void *pa, const void *pb)
{
	const struct an_stack_break *a = pa, *b = pb;

	if (a->count != b->count)
		return (a->count < b->count) - (a->count > b->count);
	return strcmp(a->object, b->object);
}

/* The top of all_breaks into quality, the rest counted. */
static void summarize_breaks(struct hx_profile *p)
{
	struct an_stack_quality *q = &p->quality;

	qsort(p->all_breaks, p->nall_breaks, sizeof(p->all_breaks[0]), break_cmp);
	q->nbreaks = p->nall_breaks < AN_BREAKS_MAX ? p->nall_breaks : AN_BREAKS_MAX;
	memcpy(q->breaks, p->all_breaks, q->nbreaks * sizeof(q->breaks[0]));
	q->breaks_other = p->breaks_overflow;
	for (size_t i = q->nbreaks; i < p->nall_breaks; i++)
		q->breaks_other += p->all_breaks[i].count;
}

void hx_kernel_frame(const struct an_ksyms *k, uint64_t addr, char *buf, size_t len)
{
	uint64_t off;
	const char *name = k ? an_ksyms_lookup(k, addr, &off) : NULL;

	if (name)
		snprintf(buf, len, "%s_[k]", name);
	else
		snprintf(buf, len, "[k]+0x%llx_[k]", (unsigned long long)addr);
}

static void kernel_name(struct hx_profile *p, uint64_t addr, char *buf, size_t len)
{
	hx_kernel_frame(p->ksyms, addr, buf, len);
}

bool hx_syscall_entry(const char *root)
{
	/* entry_SYSCALL_64_after_hwframe, entry_SYSENTER_compat, ...; an interrupt's or a
	 * fault's is asm_sysvec_... or asm_exc_... */
	return !strncmp(root, "entry_", 6);
}

unsigned hx_user_frames(struct an_usyms *u, const uint64_t *ips, unsigned nips,
			bool leaf_in_syscall, char (*names)[HX_FRAME_LEN], unsigned max,
			bool *rooted, bool *garbage, bool *past_root)
{
	unsigned n = 0;

	*rooted = *garbage = *past_root = false;
	for (unsigned i = 0; i < nips && n < max; i++) {
		uint64_t addr = ips[i];
		char *buf = names[n];
		/* every frame but the sampled pc holds a return address: one past its call */
		uint64_t at = i || leaf_in_syscall ? addr - 1 : addr;

		if (addr >= 4096 && an_usyms_jit(u, at, buf, HX_FRAME_LEN)) {
			/* a JIT's code, named by its perf map */
		} else if (addr < 4096 || !an_usyms_module(u, addr, NULL, 0)) {
			/* no code is mapped there: a frame pointer that pointed at data, or a
			 * return address of 0 or 1; shown as it was read */
			snprintf(buf, HX_FRAME_LEN, "[unknown 0x%" PRIx64 "]", addr);
			*garbage = true;
		} else {
			char inl[AN_INLINES_MAX][AN_INLINE_NAME_LEN], fn[HX_FRAME_LEN];
			size_t k = an_usyms_frames(u, at, fn, sizeof(fn), inl, AN_INLINES_MAX);

			/* the calls inlined there, innermost first, each a frame: "g_[i]" */
			for (size_t j = 0; j < k && n + 1 < max; j++)
				snprintf(names[n++], HX_FRAME_LEN, "%s_[i]", inl[j]);
			buf = names[n];
			memcpy(buf, fn, sizeof(fn));
		}
		n++;
		if (is_root(buf)) {
			*rooted = true;
			*past_root = i + 1 < nips;
			break;
		}
	}
	return n;
}

void hx_comm_frame(const char *comm, char *buf, size_t len)
{
	snprintf(buf, len, "%.16s", comm && comm[0] ? comm : "[unknown]");
	for (char *c = buf; *c; c++)
		if (*c == ' ')
			*c = '_';
}

/* Name the user frames into f->names[base..] leaf first, cut at the thread's root.
 * Returns how many; *rooted says whether a root ended them, *garbage whether one is no
 * code at all. */
static unsigned name_user(struct fold_ctx *f, const struct sample *s, size_t base, bool *rooted,
			  bool *garbage, bool *past_root)
{
	/* the kernel frames, named just before them, end at base - 1 */
	bool in_syscall = s->nkernel && hx_syscall_entry(f->names[base - 1]);

	return hx_user_frames(f->usyms, s->ustack, s->nuser, in_syscall, &f->names[base],
			      base + 4 < MAX_FRAMES ? MAX_FRAMES - 4 - base : 0, rooted, garbage,
			      past_root);
}

/* "[task: NAME]" for a task's entry function: an address the task was spawned with,
 * the function's first instruction, named as the user frames are. */
static void task_name(struct fold_ctx *f, uint64_t entry, char *buf, size_t len)
{
	char name[NAME_LEN - 16];

	an_usyms_name(f->usyms, entry, name, sizeof(name));
	snprintf(buf, len, "[task: %s]", name);
}

/* Where a stack that reached no root stopped, for the quality table: the object of its
 * last frame in code, the one the walk could not get past. */
static void note_break(struct fold_ctx *f, const struct sample *s, unsigned nuser)
{
	char object[64] = "[unknown]", why[96];

	for (unsigned i = nuser; i-- > 0;) {
		uint64_t addr = s->ustack[i];

		if (addr >= 4096 && an_usyms_module(f->usyms, i ? addr - 1 : addr, object,
						    sizeof(object)))
			break;
	}
	if (!s->dwarf)
		snprintf(why, sizeof(why), "frame-pointer walk");
	else if (s->unwound)
		snprintf(why, sizeof(why), "dwarf: %s", an_unwind_end_name(s->unwound->end));
	else
		snprintf(why, sizeof(why), "dwarf: not unwound");
	count_break(f->p, object, why, s->count);
}

/* Add one sample to the profile: name it, cut and judge its user stack, classify it
 * both ways, and add its folded line under its category. */
static int fold(struct fold_ctx *f, const struct sample *s)
{
	struct hx_profile *p = f->p;
	unsigned kind = RT_PHASE_KIND(s->phase) < RT_PHASE_COUNT ? RT_PHASE_KIND(s->phase) : 0;
	bool runtime = kind != RT_PHASE_NONE, rooted = false, garbage = false, past = false;
	size_t nleaf = 0, nroot = 0, ucount = 0, kbase, ubase;
	const char *marker = NULL;
	int by_stack;
	unsigned cat;

	p->phase_samples[kind] += s->count;
	if (s->lost & PROBE_LOST_COUNTS_FULL)
		marker = "[lost: counts map full]";
	else if (s->lost & PROBE_LOST_USTACK_FULL)
		marker = "[lost: user stack storage full]";
	else if ((s->lost & PROBE_LOST_RING) && !s->nuser)
		marker = "[lost: ring buffer full]";
	else if (s->no_unwinder)
		marker = "[lost: no DWARF unwinder]";
	else if (s->lost & PROBE_LOST_USTACK_ERROR)
		marker = "[lost: user stack error]";

	/* names[0] category, [1] comm, [2] task, then kernel frames leaf first, then user
	 * frames leaf first; frames[] is put together root first at the end */
	hx_comm_frame(s->comm, f->names[1], NAME_LEN);
	if (s->entry)
		task_name(f, s->entry, f->names[2], NAME_LEN);
	kbase = 3;
	for (unsigned i = 0; i < s->nkernel && i < PROBE_MAX_DEPTH; i++) {
		/* every frame but the interrupted one holds a return address */
		kernel_name(p, i ? s->kstack[i] - 1 : s->kstack[i], f->names[kbase + i], NAME_LEN);
		f->leaf[nleaf++] = f->names[kbase + i];
	}
	ubase = kbase + (s->nkernel < PROBE_MAX_DEPTH ? s->nkernel : PROBE_MAX_DEPTH);
	if (!(s->lost & (PROBE_LOST_COUNTS_FULL | PROBE_LOST_USTACK_FULL)) && !s->no_unwinder)
		ucount = name_user(f, s, ubase, &rooted, &garbage, &past);
	for (size_t i = 0; i < ucount; i++)
		f->leaf[nleaf++] = f->names[ubase + i];

	/* the stack's own category: the first frame from the leaf that a rule names; no
	 * rule on a runtime thread means the task's own code, elsewhere "other" */
	by_stack = an_rules_classify(p->rules, f->leaf, nleaf, runtime);
	if (by_stack < 0 && !runtime)
		p->attribution.no_rule += s->count;
	if (by_stack < 0)
		by_stack = runtime ? AN_CAT_WORK : AN_CAT_OTHER;
	cat = runtime ? an_phase_category(kind) : (unsigned)by_stack;
	p->attribution.by_category[cat] += s->count;
	if (runtime)
		p->attribution.by_phase += s->count;
	else
		p->attribution.by_rules += s->count;

	if (!(s->lost & PROBE_LOST_COUNTS_FULL)) {
		struct an_stack_quality *q = &p->quality;

		if (ucount) {
			q->with_user += s->count;
			q->runtime += runtime ? s->count : 0;
			if (s->dwarf)
				q->dwarf += s->count;
			else
				q->fp += s->count;
			q->fallback += s->fallback ? s->count : 0;
			q->spliced += s->unwound && s->unwound->fp_spliced ? s->count : 0;
			q->garbage += garbage ? s->count : 0;
			q->past_root += past ? s->count : 0;
			if (rooted) {
				q->rooted += s->count;
				q->runtime_rooted += runtime ? s->count : 0;
			} else {
				note_break(f, s, ucount);
			}
		}
		if (runtime && ucount) {
			p->agreement.samples += s->count;
			p->agreement.by_phase[cat] += s->count;
			p->agreement.by_stack[by_stack] += s->count;
			p->agreement.same += cat == (unsigned)by_stack ? s->count : 0;
		} else if (runtime) {
			p->agreement.no_stack += s->count;
		}
	}

	snprintf(f->names[0], NAME_LEN, "[%s]", an_category_name(cat));
	f->frames[nroot++] = f->names[0];
	if (!(s->lost & PROBE_LOST_COUNTS_FULL))
		f->frames[nroot++] = f->names[1];
	if (s->entry && !(s->lost & PROBE_LOST_COUNTS_FULL))
		f->frames[nroot++] = f->names[2];
	if (marker)
		f->frames[nroot++] = marker;
	if (!marker && (s->lost & PROBE_LOST_RING))
		f->frames[nroot++] = "[lost: ring buffer full]"; /* the frame-pointer walk's */
	/* a walk at the depth limit that ended at its thread's root lost nothing; the
	 * stacks cut are counted as drawn, DWARF's unwinds (which the probe never sees) too */
	if (ucount && (s->lost & PROBE_TRUNCATED_USTACK) && !rooted) {
		f->frames[nroot++] = "[truncated]";
		p->truncated += s->count;
	}
	for (size_t i = ucount; i-- > 0;)
		f->frames[nroot++] = f->names[ubase + i];
	if (s->nkernel || (s->lost & (PROBE_LOST_KSTACK_FULL | PROBE_LOST_KSTACK_ERROR))) {
		f->frames[nroot++] = "-";
		if (s->lost & PROBE_LOST_KSTACK_FULL)
			f->frames[nroot++] = "[lost: kernel stack storage full]";
		else if (s->lost & PROBE_LOST_KSTACK_ERROR)
			f->frames[nroot++] = "[lost: kernel stack error]";
		if (s->lost & PROBE_TRUNCATED_KSTACK) {
			f->frames[nroot++] = "[truncated]";
			p->truncated += s->count;
		}
		for (size_t i = s->nkernel < PROBE_MAX_DEPTH ? s->nkernel : PROBE_MAX_DEPTH;
		     i-- > 0;)
			f->frames[nroot++] = f->names[kbase + i];
	}
	return an_folded_add(p->folded, f->frames, nroot, s->count);
}

static struct hx__proc *proc_find(struct hx_profile *p, pid_t pid)
{
	for (size_t i = 0; i < p->nprocs; i++)
		if (p->procs[i].pid == pid)
			return &p->procs[i];
	return NULL;
}

/* One file that named samples, kept once by path and build id. */
static void add_object(const char *path, const char *build_id, void *ctx)
{
	struct hx_profile *p = ctx;
	struct an_object *o;

	for (size_t i = 0; i < p->nobjects; i++)
		if (!strcmp(p->objects[i].path, path) && !strcmp(p->objects[i].build_id, build_id))
			return;
	if (p->nobjects == HX_MAX_OBJECTS) {
		p->objects_over++;
		return;
	}
	if (!p->objects && !(p->objects = calloc(HX_MAX_OBJECTS, sizeof(*p->objects))))
		return;
	o = &p->objects[p->nobjects];
	o->path = strdup(path);
	if (!o->path)
		return;
	snprintf(o->build_id, sizeof(o->build_id), "%s", build_id);
	p->nobjects++;
}

static void objects_free(struct hx_profile *p)
{
	for (size_t i = 0; i < p->nobjects; i++)
		free(p->objects[i].path);
	free(p->objects);
	p->objects = NULL;
	p->nobjects = p->objects_over = 0;
}

static void procs_free(struct hx_profile *p)
{
	for (size_t i = 0; i < p->nprocs; i++) {
		an_usyms_free(p->procs[i].usyms);
		an_unwind_free(p->procs[i].unwind);
	}
	free(p->procs);
	p->procs = NULL;
	p->nprocs = p->procs_cap = 0;
}

/* An aggregate from the kernel's maps (frame-pointer stacks), at the drain. */
static int fold_aggregate(const struct probe_stack *ps, void *arg)
{
	struct fold_ctx *f = arg;
	struct sample s = {
		.phase = ps->phase,
		.entry = ps->entry,
		.comm = ps->comm,
		.ustack = ps->ustack,
		.nuser = ps->nuser,
		.kstack = ps->kstack,
		.nkernel = ps->nkernel,
		.lost = ps->lost,
		.count = ps->count,
	};

	if (f->p->procs) {
		/* a profile of processes: each sample named from its own process's mappings */
		struct hx__proc *pr = proc_find(f->p, (pid_t)ps->tgid);

		f->usyms = pr ? pr->usyms : NULL;
	}
	return fold(f, &s);
}

/* Unwind ds's user stack into s with u, the unwinder of process pid whose mappings are
 * *usyms: both re-read (as *rr allows) when the stack runs into code mapped since they
 * were read (a dlopen, ld.so loading the libraries). */
static void unwind_sample(struct hx_profile *p, struct fold_ctx *f, struct sample *s,
			  const struct probe_dwarf_sample *ds, struct an_unwind *u,
			  struct an_usyms **usyms, pid_t pid, struct reread *rr,
			  struct an_unwind_result *r)
{
	struct an_unwind_sample us = {
		.tid = (pid_t)ds->tid,
		.regs = ds->regs,
		.stack_addr = ds->stack_addr,
		.stack = ds->stack,
		.stack_len = ds->stack_len,
	};
	uint64_t t0 = rt_clock_ns();

	s->nuser = an_unwind_stack(u, &us, f->ips, PROBE_MAX_DEPTH, r);
	if (r->end == AN_UNWIND_NO_MODULE && reread_due(rr, t0)) {
		struct an_procmaps *maps = an_procmaps_read(pid);
		struct an_usyms *fresh = maps ? an_usyms_new(p->symcache, maps) : NULL;

		if (fresh && !an_unwind_refresh(u)) {
			an_usyms_free(*usyms);
			*usyms = fresh;
			s->nuser = an_unwind_stack(u, &us, f->ips, PROBE_MAX_DEPTH, r);
		} else {
			an_usyms_free(fresh);
		}
		reread_done(rr, t0, r->end != AN_UNWIND_NO_MODULE);
	}
	/* auto mode: where the unwind stopped short, the frame-pointer walk may go on */
	if (ds->fp_nr)
		s->nuser = an_unwind_splice_fp(ds->fp_ips, ds->fp_nr, f->ips, s->nuser,
					       PROBE_MAX_DEPTH, r);
	f->usyms = *usyms;
	p->unwind_ns += rt_clock_ns() - t0;
	s->ustack = f->ips;
	s->unwound = r;
	if (r->end == AN_UNWIND_DEPTH)
		s->lost |= PROBE_TRUNCATED_USTACK;
}

/* Whether a frame of the user stack (leaf first, n of them) lies in no mapping of u and
 * in no JIT's perf map: code mapped since u was read, or an address that is no code. */
static bool outruns_maps(struct an_usyms *u, const uint64_t *ips, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ips[i] >= 4096 && !an_usyms_module(u, ips[i], NULL, 0) &&
		    !an_usyms_jit(u, i ? ips[i] - 1 : ips[i], NULL, 0))
			return true;
	return false;
}

static int proc_read(struct hx_profile *p, pid_t pid);

/* A DWARF sample of a profile of processes: unwound with its own process's unwinder,
 * made at its first sample (libdw attaches to the living process). The reader thread's,
 * beside the main thread's reads of new processes: both under procs_lock. */
static int fold_dwarf_proc(struct hx_profile *p, struct fold_ctx *f, struct sample *s,
			   const struct probe_dwarf_sample *ds)
{
	struct an_unwind_result r = { 0 };
	pid_t pid = (pid_t)ds->tgid;
	struct hx__proc *pr;
	int err;

	pthread_mutex_lock(&p->procs_lock);
	pr = proc_find(p, pid);
	if (!pr && !proc_read(p, pid))
		pr = proc_find(p, pid);
	if (pr && !pr->unwind && pr->unwind_tries < UNWIND_TRIES_MAX && !pr->gone) {
		pr->unwind_tries++;
		pr->unwind = an_unwind_new(pid);
	}
	f->usyms = pr ? pr->usyms : NULL;
	if (pr && pr->unwind) {
		uint64_t now = rt_clock_ns();

		unwind_sample(p, f, s, ds, pr->unwind, &pr->usyms, pid, &pr->unwind_reread, &r);
		/* the unwinder may have known code the names do not (it was made, or read its
		 * mappings, after they were): the names read again */
		if (!pr->gone && pr->usyms && outruns_maps(pr->usyms, s->ustack, s->nuser) &&
		    reread_due(&pr->names_reread, now)) {
			proc_read(p, pid);
			f->usyms = pr->usyms;
			reread_done(&pr->names_reread, now,
				    pr->usyms && !outruns_maps(pr->usyms, s->ustack, s->nuser));
		}
	} else
		s->no_unwinder = pr && pr->gone && !pr->unwind_tries
					 ? "the process exited before its stacks could be unwound"
					 : "libdw could not attach to the process";
	err = fold(f, s);
	pthread_mutex_unlock(&p->procs_lock);
	return err;
}

/* A DWARF sample, on the probe's reader thread while the fork measures. */
static int fold_dwarf(const struct probe_dwarf_sample *ds, void *arg)
{
	struct hx_profile *p = arg;
	struct hx__live *live = p->live;
	struct an_unwind_result r = { 0 };
	struct fold_ctx *f;
	struct sample s = {
		.phase = ds->phase,
		.entry = ds->entry,
		.comm = ds->comm,
		.kstack = ds->kstack,
		.nkernel = ds->nkernel,
		.lost = ds->lost,
		.count = 1,
		.dwarf = true,
		.fallback = ds->fallback,
	};

	if (!live)
		return -EINVAL;
	f = live->fold;
	f->p = p;
	if (p->any_process)
		return fold_dwarf_proc(p, f, &s, ds);
	f->usyms = live->usyms;
	if (live->unwind)
		unwind_sample(p, f, &s, ds, live->unwind, &live->usyms, live->pid,
			      &live->unwind_reread, &r);
	else
		s.no_unwinder = p->unwind_error;
	return fold(f, &s);
}

int hx_profile_open(struct hx_profile *p, bool want_oncpu, const struct probe_oncpu_opts *o)
{
	struct probe_oncpu_opts opts = o ? *o : (struct probe_oncpu_opts){ 0 };
	struct timespec t0, t1;
	char why[HX_WHY_LEN];

	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->procs_lock, NULL);
	p->folded = an_folded_new();
	p->symcache = an_symcache_new();
	if (!p->folded || !p->symcache) {
		hx_profile_close(p);
		return -ENOMEM;
	}
	p->rules = an_rules_builtin(why, sizeof(why));
	if (!p->rules) {
		int err = -errno;

		fprintf(stderr, "schedlab: %s\n", why);
		hx_profile_close(p);
		return err;
	}
	p->callgraph = opts.callgraph;
	if (!want_oncpu) {
		snprintf(p->status, sizeof(p->status), "not attached: disabled (not in --probes)");
		return 0;
	}
	opts.dwarf_fn = fold_dwarf;
	opts.dwarf_ctx = p;
	probe_bpf_stats_fd(); /* the instrument's one-time cost, not the probe's attach */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p->oncpu = probe_oncpu_open(&opts, why, sizeof(why));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (!p->oncpu) {
		p->open_error = -errno;
		/* the reason already names the probe: "oncpu: not permitted: ..." */
		const char *r = hx_probe_reason("oncpu", why);

		snprintf(p->status, sizeof(p->status), "not attached: %s", r);
		return 0;
	}
	p->attached = true;
	p->cost_ns = probe_oncpu_cost_ns(p->oncpu);
	p->attach_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
		       (uint64_t)(t1.tv_nsec - t0.tv_nsec) - p->cost_ns;
	snprintf(p->status, sizeof(p->status), "attached");
	return 0;
}

static void live_free(struct hx__live *live)
{
	if (!live)
		return;
	an_unwind_free(live->unwind);
	an_usyms_free(live->usyms);
	free(live->fold);
	free(live);
}

/* The code ranges of the process u names, as the probe's walk checks them (into ranges,
 * PROBE_MAX_RANGES long): how many. */
static unsigned code_ranges(struct an_usyms *u, struct probe_range *ranges)
{
	struct an_code_range cr[PROBE_MAX_RANGES];
	size_t dropped = 0;
	int n = an_usyms_code_ranges(u, thread_roots, cr, PROBE_MAX_RANGES, &dropped);

	for (int i = 0; i < n; i++)
		ranges[i] = (struct probe_range){
			.start = cr[i].start,
			.end = cr[i].end,
			.kind = cr[i].kind == AN_CODE_ROOT ? PROBE_RANGE_ROOT : PROBE_RANGE_NOFP,
		};
	return n > 0 ? (unsigned)n : 0;
}

/* What sampling pid needs beside the probe: the kernel's symbols (once), pid's mappings
 * for the code ranges the walk checks (into ranges, *nranges of them) and for the names
 * and (with unwinder) the unwinding of DWARF samples, as p->live. */
static int live_open(struct hx_profile *p, pid_t pid, struct probe_range *ranges,
		     unsigned *nranges, bool unwinder)
{
	struct an_procmaps *maps;
	struct hx__live *live;
	int err;

	/* here, not at attach: symbolizing is not attaching, and the probes opened after
	 * this one reuse the heap their BTF parse freed (probe__host_get()) */
	if (!p->ksyms && !p->ksyms_tried) {
		p->ksyms = an_ksyms_load(NULL); /* may fail: kernel frames then read [k]+0x... */
		p->ksyms_tried = true;
	}
	live = calloc(1, sizeof(*live));
	if (!live || !(live->fold = calloc(1, sizeof(*live->fold)))) {
		free(live);
		return -ENOMEM;
	}
	live->pid = pid;
	maps = an_procmaps_read(pid);
	live->usyms = maps ? an_usyms_new(p->symcache, maps) : NULL;
	if (!live->usyms) {
		err = -errno;
		live_free(live);
		return err;
	}
	*nranges = code_ranges(live->usyms, ranges);
	if (p->callgraph != PROBE_CG_FP && unwinder) {
		live->unwind = an_unwind_new(pid);
		if (!live->unwind)
			snprintf(p->unwind_error, sizeof(p->unwind_error),
				 "libdw could not attach to pid %d: %s", (int)pid, strerror(errno));
	}
	live->prog_stats = !probe_oncpu_prog_stats(p->oncpu, &live->prog_runs, &live->prog_ns);
	p->live = live;
	return 0;
}

/* The fork is about to measure: read its mappings (for the code ranges the walk
 * checks, and the names and unwinding of DWARF samples), then start the probe. */
static int begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct hx_profile *p = ctx;
	struct probe_range ranges[PROBE_MAX_RANGES];
	struct probe_target t = { .tgid = pid, .phase_tls_off = tls_off, .ranges = ranges };
	int err;

	if (!p->attached)
		return 0;
	err = live_open(p, pid, ranges, &t.nranges, true);
	if (err)
		return err;
	err = probe_oncpu_start(p->oncpu, &t);
	if (err) {
		live_free(p->live);
		p->live = NULL;
	}
	return err;
}
/* Stop the probe (its last DWARF samples are folded by then), add what its program cost
 * since live began, and let live go; a failure is kept as the profile's. */
static void live_stop(struct hx_profile *p)
{
	struct hx__live *live = p->live;
	uint64_t runs, ns;
	int err = probe_oncpu_stop(p->oncpu);

	if (live && live->prog_stats && !probe_oncpu_prog_stats(p->oncpu, &runs, &ns)) {
		p->prog_runs += runs - live->prog_runs;
		p->prog_ns += ns - live->prog_ns;
	}
	p->live = NULL;
	live_free(live);
	if (err && !p->error)
		p->error = err;
}

static int end(void *ctx, pid_t pid)
{
	struct hx_profile *p = ctx;
	struct an_procmaps *maps;
	struct fold_ctx *f;
	int err;

	if (!p->attached)
		return 0;
	live_stop(p);
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->p = p;
	maps = an_procmaps_read(pid);
	if (!maps) {
		err = -errno;
		goto out_free;
	}
	f->usyms = an_usyms_new(p->symcache, maps); /* owns maps from here */
	if (!f->usyms) {
		err = -ENOMEM;
		goto out_free;
	}
	err = probe_oncpu_drain(p->oncpu, fold_aggregate, f, &p->stats);
	an_usyms_objects(f->usyms, add_object, p);
	an_usyms_free(f->usyms);
	summarize_breaks(p);
out_free:
	free(f);
	if (err && !p->error)
		p->error = err;
	return err;
}

void hx_profile_use_rules(struct hx_profile *p, struct an_rules *rules, const char *source)
{
	an_rules_free(p->rules);
	p->rules = rules;
	p->rules_source = source;
}

void hx_profile_hooks(struct hx_profile *p, struct hx_hooks *h)
{
	h->ctx = p;
	h->measure_begin = begin;
	h->measure_end = end;
	h->fork_gone = NULL; /* perf events, no uprobes: all is let go in end */
	h->probed = NULL;
}

int hx_profile_reset(struct hx_profile *p)
{
	struct an_folded *fresh = an_folded_new();

	if (!fresh)
		return -ENOMEM;
	an_folded_free(p->folded);
	p->folded = fresh;
	memset(&p->stats, 0, sizeof(p->stats));
	memset(p->phase_samples, 0, sizeof(p->phase_samples));
	memset(&p->quality, 0, sizeof(p->quality));
	memset(&p->agreement, 0, sizeof(p->agreement));
	memset(&p->attribution, 0, sizeof(p->attribution));
	p->unwind_ns = p->prog_runs = p->prog_ns = p->truncated = 0;
	p->unwind_error[0] = '\0';
	p->nall_breaks = 0;
	p->breaks_overflow = 0;
	p->error = 0;
	p->any_process = false;
	procs_free(p);
	objects_free(p);
	return 0;
}

void hx_profile_close(struct hx_profile *p)
{
	procs_free(p);
	objects_free(p);
	live_free(p->live);
	probe_oncpu_free(p->oncpu);
	an_rules_free(p->rules);
	an_ksyms_free(p->ksyms);
	an_symcache_free(p->symcache);
	an_folded_free(p->folded);
	pthread_mutex_destroy(&p->procs_lock);
	memset(p, 0, sizeof(*p));
}

/* ---- any process (schedlab profile) -------------------------------------------------- */

#define TARGET_POLL_NS    (50 * 1000000ull)  /* new processes' mappings read this often */
#define TARGET_REREAD_NS  (500 * 1000000ull) /* a living one's again (dlopen, exec) */

static bool exited(pid_t pid);

/* Read pid's mappings into its entry (made if new); a read that fails keeps the last
 * (the process exited, and its frames keep the names they had). */
static int proc_read(struct hx_profile *p, pid_t pid)
{
	struct hx__proc *pr = proc_find(p, pid);
	struct an_procmaps *maps;
	struct an_usyms *u;

	if (!pr) {
		if (p->nprocs == p->procs_cap) {
			size_t cap = p->procs_cap ? 2 * p->procs_cap : 16;
			struct hx__proc *v = realloc(p->procs, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			p->procs = v;
			p->procs_cap = cap;
		}
		pr = &p->procs[p->nprocs++];
		*pr = (struct hx__proc){ .pid = pid };
	}
	if (pr->gone)
		return 0;
	maps = an_procmaps_read(pid);
	if (maps && !an_procmaps_count(maps)) {
		an_procmaps_free(maps);
		/* no mappings: a zombie whose parent has not reaped it yet, as good as gone;
		 * or a process between the two halves of its exec, whose new image is not
		 * mapped yet: the last read kept, and read again later */
		if (!exited(pid))
			return 0;
		maps = NULL;
	}
	u = maps ? an_usyms_new(p->symcache, maps) : NULL;
	if (!u) {
		pr->gone = true;
		return 0;
	}
	an_usyms_free(pr->usyms);
	pr->usyms = u;
	return 0;
}

/* Every process of the set as the kernel holds it now: the new ones' mappings read, and
 * with all, every living one's again. */
static int procs_refresh(struct hx_profile *p, bool all)
{
	pid_t *pids = calloc(PROBE_ONCPU_MAX_TARGETS, sizeof(*pids));
	int n = pids ? probe_oncpu_targets(p->oncpu, pids, PROBE_ONCPU_MAX_TARGETS) : -ENOMEM;

	if (n < 0) {
		free(pids);
		return n;
	}
	for (int i = 0; i < n; i++) {
		struct hx__proc *pr;
		int err = 0;

		pthread_mutex_lock(&p->procs_lock);
		pr = proc_find(p, pids[i]);
		if (!pr || (all && !pr->gone))
			err = proc_read(p, pids[i]);
		pthread_mutex_unlock(&p->procs_lock);
		if (err) {
			free(pids);
			return err;
		}
	}
	free(pids);
	return 0;
}

/* Forget what was read of pid before its exec (its profiler's image): the mappings are
 * read again, and the unwinder made again at its next DWARF sample. */
static void proc_forget(struct hx_profile *p, pid_t pid)
{
	struct hx__proc *pr;

	pthread_mutex_lock(&p->procs_lock);
	pr = proc_find(p, pid);
	if (pr) {
		an_unwind_free(pr->unwind);
		an_usyms_free(pr->usyms);
		*pr = (struct hx__proc){ .pid = pid };
		proc_read(p, pid);
	}
	pthread_mutex_unlock(&p->procs_lock);
}

/* The walk's code ranges from pid's mappings as they are now: the command's after its
 * exec (its profiler's own until then). */
static void ranges_of(struct hx_profile *p, pid_t pid)
{
	struct probe_range ranges[PROBE_MAX_RANGES];
	struct an_procmaps *maps = an_procmaps_read(pid);
	struct an_usyms *u = maps ? an_usyms_new(p->symcache, maps) : NULL;

	if (!u)
		return;
	probe_oncpu_set_ranges(p->oncpu, pid, ranges, code_ranges(u, ranges));
	an_usyms_free(u);
}

/* Whether process pid has exited: gone, or a zombie nobody has reaped yet. */
static bool exited(pid_t pid)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "PID (COMM) STATE ...": the name may hold ')' */
	paren = strrchr(buf, ')');
	return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

/* Whether pid may be sampled by this process: it exists (-ESRCH), and its mappings can
 * be read (-EPERM: ptrace access, as /proc/PID/maps requires). */
static int check_pid(pid_t pid, char *err, size_t errlen)
{
	char path[64];
	int fd;

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH) || exited(pid)) {
		snprintf(err, errlen, "no process %d", (int)pid);
		return -ESRCH;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "process %d: cannot read its mappings: %s", (int)pid,
			 strerror(e));
		return e == ENOENT || e == ESRCH ? -ESRCH : -EPERM;
	}
	close(fd);
	return 0;
}

#define EXEC_SETTLE_NS (1000 * 1000000ull)

/* Wait (up to EXEC_SETTLE_NS) until pid's new image is mapped. The exec closes the
 * profiler's pipe (close-on-exec) before the kernel maps the program, its loader and then
 * the vDSO: mappings read at the pipe's end can be none, or the program's alone, and
 * names and code ranges taken from them would miss the code that runs first. */
static void exec_settle(pid_t pid)
{
	char path[64], buf[4096];
	uint64_t t0 = rt_clock_ns();

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	do {
		struct timespec nap = { 0, 1000000L };
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		size_t keep = 0;
		bool found = false;
		ssize_t n;

		if (fd < 0)
			return; /* gone */
		while (!found && (n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
			size_t len = keep + (size_t)n;

			buf[len] = '\0';
			found = strstr(buf, "[vdso]") != NULL;
			/* a line cut between two reads: its last bytes carried over */
			keep = len < 8 ? len : 8;
			memmove(buf, buf + len - keep, keep);
		}
		close(fd);
		if (found)
			return;
		nanosleep(&nap, NULL);
	} while (rt_clock_ns() - t0 < EXEC_SETTLE_NS && !exited(pid));
}

/* Start argv stopped before its exec: the caller adds it to the targets, then lets it go
 * (go_fd) and learns from exec_fd whether the exec failed (an errno) or happened (EOF). */
static pid_t spawn_held(char *const *argv, int *go_fd, int *exec_fd)
{
	int go[2], ex[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ex, O_CLOEXEC)) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		return -e;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		close(ex[0]);
		close(ex[1]);
		return -e;
	}
	if (pid == 0) {
		sigset_t none;
		char c;
		int e;

		close(go[1]);
		close(ex[0]);
		/* the command outlives no profiler: it ends with it (SIGTERM, to clean up) */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (read(go[0], &c, 1) != 1)
			_exit(127); /* the profiler gave up on it */
		execvp(argv[0], argv);
		e = errno;
		if (write(ex[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(ex[1]);
	*go_fd = go[1];
	*exec_fd = ex[0];
	return pid;
}

/* A command still running when its profile ends (a duration, an interrupt) ends with it:
 * SIGTERM, and SIGKILL if it has not exited two seconds later (at once when it never
 * ran); reaped either way. */
static void stop_command(struct hx_target_result *r, bool never_ran)
{
	int status = 0;
	pid_t w;

	r->stopped = true;
	kill(r->pid, never_ran ? SIGKILL : SIGTERM);
	for (int i = 0; i < 40 && !never_ran; i++) {
		struct timespec nap = { 0, 50 * 1000000L };

		if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
			r->wait_status = status;
			return;
		}
		nanosleep(&nap, NULL);
	}
	kill(r->pid, SIGKILL);
	while ((w = waitpid(r->pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (w == r->pid)
		r->wait_status = status;
}

/* Sample until the command exits, every pid has, duration_s ends or a signal asks. */
static void target_wait(struct hx_profile *p, const struct hx_target *t,
			struct hx_target_result *r, uint64_t t0)
{
	uint64_t last_all = t0;

	for (;;) {
		struct timespec nap = { 0, (long)TARGET_POLL_NS };
		uint64_t now;
		int status, err;

		if (hx_interrupted()) {
			r->interrupted = true;
			return;
		}
		if (r->pid) {
			pid_t w = waitpid(r->pid, &status, WNOHANG);

			if (w == r->pid) {
				r->wait_status = status;
				return;
			}
		} else {
			bool all = true;

			for (size_t i = 0; i < t->npids && all; i++)
				all = exited(t->pids[i]);
			if (all)
				return;
		}
		now = rt_clock_ns();
		if (t->duration_s > 0 && (double)(now - t0) >= t->duration_s * 1e9) {
			r->timed_out = true;
			return;
		}
		err = procs_refresh(p, now - last_all >= TARGET_REREAD_NS);
		if (now - last_all >= TARGET_REREAD_NS)
			last_all = now;
		if (err && !p->error)
			p->error = err;
		nanosleep(&nap, NULL); /* a signal cuts it short: the loop looks again */
	}
}

/* Stop sampling, read the living processes' mappings a last time, and fold. */
static int target_finish(struct hx_profile *p)
{
	struct fold_ctx *f;
	int err;

	live_stop(p);
	err = procs_refresh(p, true);
	if (err && !p->error)
		p->error = err;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->p = p;
	err = probe_oncpu_drain(p->oncpu, fold_aggregate, f, &p->stats);
	summarize_breaks(p);
	free(f);
	for (size_t i = 0; i < p->nprocs; i++)
		an_usyms_objects(p->procs[i].usyms, add_object, p);
	if (err && !p->error)
		p->error = err;
	return err;
}

int hx_profile_target(struct hx_profile *p, const struct hx_target *t,
		      struct hx_target_result *r)
{
	struct probe_range ranges[PROBE_MAX_RANGES];
	struct probe_target pt = { .ranges = ranges, .follow = !t->no_follow };
	int go_fd = -1, exec_fd = -1, exec_errno = 0, err;
	pid_t first;
	uint64_t t0;

	memset(r, 0, sizeof(*r));
	r->wait_status = -1;
	if (!p->attached) {
		snprintf(r->error, sizeof(r->error), "the on-CPU probe is %s", p->status);
		return -ENODEV;
	}
	if ((!t->argv) == (t->npids == 0) || t->npids > PROBE_ONCPU_MAX_TARGETS) {
		snprintf(r->error, sizeof(r->error), "a command or up to %d processes to profile",
			 PROBE_ONCPU_MAX_TARGETS);
		return -EINVAL;
	}
	for (size_t i = 0; i < t->npids; i++) {
		err = check_pid(t->pids[i], r->error, sizeof(r->error));
		if (err)
			return err;
	}
	if (t->argv) {
		r->pid = spawn_held(t->argv, &go_fd, &exec_fd);
		if (r->pid < 0) {
			err = r->pid;
			r->pid = 0;
			snprintf(r->error, sizeof(r->error), "cannot start %s: %s", t->argv[0],
				 strerror(-err));
			return err;
		}
		pt.tgids = &r->pid;
		pt.ntgids = 1;
	} else {
		pt.tgids = t->pids;
		pt.ntgids = (unsigned)t->npids;
	}
	first = pt.tgids[0];
	/* the first process's mappings for the walk's code ranges (a command's are its
	 * profiler's copy until it execs: read again once it has); DWARF samples are
	 * unwound per process (fold_dwarf_proc()) */
	p->any_process = true;
	err = live_open(p, first, ranges, &pt.nranges, false);
	if (!err)
		err = probe_oncpu_start(p->oncpu, &pt);
	if (err) {
		live_free(p->live);
		p->live = NULL;
		snprintf(r->error, sizeof(r->error), "cannot start sampling: %s", strerror(-err));
		goto out_reap;
	}
	t0 = rt_clock_ns();
	if (t->argv) {
		ssize_t n;

		/* go, then wait for the exec: EOF when it happened, its errno when not */
		if (write(go_fd, "g", 1) != 1) {
			err = -errno;
			goto out_stop;
		}
		do
			n = read(exec_fd, &exec_errno, sizeof(exec_errno));
		while (n < 0 && errno == EINTR);
		if (n == (ssize_t)sizeof(exec_errno)) {
			err = -exec_errno;
			snprintf(r->error, sizeof(r->error), "cannot start %s: %s", t->argv[0],
				 strerror(exec_errno));
			goto out_stop;
		}
		exec_settle(r->pid);
		ranges_of(p, r->pid);
		proc_forget(p, r->pid);
	}
	err = procs_refresh(p, true);
	if (err)
		goto out_stop;
	if (t->log)
		fprintf(t->log, "schedlab: profiling %s%s at %u Hz (%s)%s\n",
			t->argv ? "" : "pid ", t->argv ? t->argv[0] : "", probe_oncpu_freq(p->oncpu),
			probe_oncpu_event(p->oncpu),
			t->duration_s > 0 ? "" : "; Ctrl-C ends it");
	target_wait(p, t, r, t0);
	r->seconds = (double)(rt_clock_ns() - t0) / 1e9;
	err = target_finish(p);
	r->processes = p->nprocs;
	for (size_t i = 0; i < p->nprocs; i++)
		r->unnamed += !p->procs[i].usyms;
	if (err)
		snprintf(r->error, sizeof(r->error), "collecting the samples: %s", strerror(-err));
	goto out_reap;

out_stop:
	probe_oncpu_stop(p->oncpu);
	probe_oncpu_drain(p->oncpu, NULL, NULL, NULL);
	live_free(p->live);
	p->live = NULL;
out_reap:
	if (go_fd >= 0)
		close(go_fd); /* a command never let go exits at once */
	if (exec_fd >= 0)
		close(exec_fd);
	if (r->pid && r->wait_status == -1)
		stop_command(r, err || exec_errno);
	return err;
}
