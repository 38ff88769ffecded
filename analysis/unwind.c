/*
 * unwind.c — DWARF unwinding of sampled user stacks with libdw, as perf's --call-graph
 * dwarf does: the CFI of the code that ran says where each caller's registers were saved
 * in the copy of the stack the probe took. One Dwfl per process holds its modules and
 * libdw's cache of their CFI; its one "thread" is whichever sample is being unwound.
 *
 * Invariant: an unwind reads nothing but the sample (its registers, words of its copied
 * stack) and files. What only the live process holds (the vDSO, deleted files) is read
 * from /proc/PID/mem when the unwinder is made, so a sample unwinds the same after its
 * thread ran on or its process exited.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "analysis/analysis.h"

#define AN_DEBUG_ROOT "/usr/lib/debug/.build-id"
#define AN_REG_SP     7 /* DWARF's number for %rsp */

struct an_unwind {
	Dwfl *dwfl;
	pid_t pid;
	/* The sample being unwound, for the callbacks; NULL between samples. */
	const struct an_unwind_sample *cur;
	/* A read outside the copy since the last frame was handed over, and the first
	 * such address: how a stop is told to be the end of the copy. */
	bool read_failed;
	uint64_t bad_addr;
};

/* What the frame callback has gathered so far. */
struct walk {
	struct an_unwind *u;
	uint64_t *ips;
	unsigned max, n;
	uint64_t last_pc, last_sp; /* of ips[n - 1]: its pc itself, not as stored */
	bool last_sp_known;
	bool last_exact;       /* last_pc is not a return address: look it up as it is */
	bool last_saved_known; /* some callee-saved register of ips[n - 1] is known */
	bool stopped;	       /* by the callback, which set r->end and r->why */
	struct an_unwind_result *r;
};

/* ---- libdwfl callbacks --------------------------------------------------------------- */

/* Detached debug files by build id only, as symtab.c finds them: libdw needs one only
 * for .debug_frame, where .eh_frame fails. dwfl_standard_find_debuginfo() would also ask
 * debuginfod over the network whenever DEBUGINFOD_URLS is set (libdebuginfod-common can
 * set it for every login shell), and one slow server stalls the consumer of the ring
 * buffer for up to 90 s (DEBUGINFOD_TIMEOUT's default) per module. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	char path[sizeof(AN_DEBUG_ROOT) + 2 * 64 + 16];
	const unsigned char *id;
	GElf_Addr vaddr;
	int len = dwfl_module_build_id(mod, &id, &vaddr);

	if (len < 2 || len > 64)
		return -1;
	size_t off = (size_t)snprintf(path, sizeof(path), AN_DEBUG_ROOT "/%02x/", id[0]);
	for (int i = 1; i < len; i++)
		off += (size_t)snprintf(path + off, sizeof(path) - off, "%02x", id[i]);
	snprintf(path + off, sizeof(path) - off, ".debug");
	int fd = an_open_input(AT_FDCWD, path, false);
	if (fd < 0)
		return -1;
	*debuginfo_file_name = strdup(path); /* libdwfl owns it; NULL is allowed */
	return fd;
}

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = find_debuginfo,
};

/* Threads are never listed: the only thread is the sample, found by get_thread(). */
static pid_t next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	*thread_argp = dwfl_arg;
	return true;
}

/* Reads from the copy only: a word outside it ends the unwind where the copy ends. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct an_unwind *u = dwfl_arg;
	const struct an_unwind_sample *s = u->cur;

	if (s && addr >= s->stack_addr && s->stack_len >= sizeof(*result) &&
	    addr - s->stack_addr <= s->stack_len - sizeof(*result)) {
		memcpy(result, (const char *)s->stack + (addr - s->stack_addr), sizeof(*result));
		return true;
	}
	if (!u->read_failed) {
		u->read_failed = true;
		u->bad_addr = addr;
	}
	return false;
}

/* Registers 0..16 with rip among them: x86-64's frame_nregs is 17, and the initial
 * frame's pc is read from register 16 when dwfl_thread_state_register_pc() was not
 * called (libdwfl state_fetch_pc()), so one call sets everything. */
static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct an_unwind *u = thread_arg;

	return dwfl_thread_state_registers(thread, 0, AN_UNWIND_NREGS, u->cur->regs);
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
    .next_thread = next_thread,
    .get_thread = get_thread,
    .memory_read = memory_read,
    .set_initial_registers = set_initial_registers,
};

/* ---- the per-process Dwfl ------------------------------------------------------------ */

/* One line of /proc/PID/maps that may belong to a loaded image: a file's, or the vDSO's. */
struct map_line {
	uint64_t start, end, pgoff, ino;
	unsigned major, minor;
	bool exec;
	char *path; /* " (deleted)" kept: dwfl_linux_proc_find_elf() reads those from memory */
};

struct map_lines {
	struct map_line *v;
	size_t n, cap;
};

static void map_lines_free(struct map_lines *ml)
{
	for (size_t i = 0; i < ml->n; i++)
		free(ml->v[i].path);
	free(ml->v);
}

static int map_lines_read(pid_t pid, struct map_lines *ml)
{
	char name[64], *line = NULL;
	size_t linecap = 0;
	int err = 0;

	snprintf(name, sizeof(name), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(name, "re");
	if (!f)
		return -errno;
	while (getline(&line, &linecap, f) > 0) {
		struct map_line m = {0};
		char perms[5];
		int pos = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &m.start, &m.end, perms, &m.pgoff, &m.major, &m.minor, &m.ino,
			   &pos) < 7) {
			err = -ENOEXEC; /* the kernel writes no such line */
			break;
		}
		const char *path = pos > 0 ? line + pos : "";
		bool file = path[0] == '/' && (m.ino || m.major || m.minor);
		if (!file && strcmp(path, "[vdso]") != 0)
			continue;
		if (ml->n == ml->cap) {
			size_t cap = ml->cap ? 2 * ml->cap : 64;
			struct map_line *v = realloc(ml->v, cap * sizeof(*v));

			if (!v) {
				err = -ENOMEM;
				break;
			}
			ml->v = v;
			ml->cap = cap;
		}
		m.exec = perms[2] == 'x';
		m.path = strdup(path);
		if (!m.path) {
			err = -ENOMEM;
			break;
		}
		ml->v[ml->n++] = m;
	}
	free(line);
	fclose(f);
	return err;
}

static bool same_file(const struct map_line *a, const struct map_line *b)
{
	return a->ino == b->ino && a->major == b->major && a->minor == b->minor &&
	       strcmp(a->path, b->path) == 0;
}

/* One module per loaded image, not per file mapped: from each executable mapping of a
 * file, the neighbouring mappings of that file whose offsets rise with their addresses,
 * as the loader lays out segments. dwfl_linux_proc_report() joins every run of a file's
 * lines instead, so a mapping of a library's file that is no part of its image (libelf
 * maps each file libdw reads at offset 0; a fork inherits the parent's) just below the
 * image moves the module's start, and with it the bias of every CFI lookup in it. */
static int report_images(Dwfl *dwfl, pid_t pid, const struct map_lines *ml)
{
	const struct map_line *v = ml->v;
	char vdso[32];

	for (size_t i = 0, lo, hi; i < ml->n; i = hi + 1) {
		const char *name = v[i].path;

		lo = hi = i;
		if (!v[i].exec)
			continue;
		if (strcmp(name, "[vdso]") == 0) {
			/* The name dwfl_linux_proc_find_elf() reads from /proc/PID/mem. */
			snprintf(vdso, sizeof(vdso), "[vdso: %d]", (int)pid);
			name = vdso;
		} else {
			while (lo > 0 && same_file(&v[lo - 1], &v[i]) &&
			       v[lo - 1].pgoff < v[lo].pgoff && v[lo - 1].end <= v[lo].start)
				lo--;
			while (hi + 1 < ml->n && same_file(&v[hi + 1], &v[i]) &&
			       v[hi + 1].pgoff > v[hi].pgoff && v[hi].end <= v[hi + 1].start)
				hi++;
		}
		if (!dwfl_report_module(dwfl, name, v[lo].start, v[hi].end))
			return -ENOEXEC;
	}
	return 0;
}

/* The modules whose image can only come from the process's memory: read them now. */
static int load_memory_image(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			     void *arg)
{
	size_t len = strlen(name);
	GElf_Addr bias;

	if (strncmp(name, "[vdso", 5) == 0 ||
	    (len > 10 && strcmp(name + len - 10, " (deleted)") == 0))
		(void)dwfl_module_getelf(mod, &bias); /* a failure shows as NO_CFI later */
	return DWARF_CB_OK;
}

/* A Dwfl holding pid's loaded images, attached with our callbacks. NULL + errno. */
static Dwfl *proc_dwfl(struct an_unwind *u, pid_t pid)
{
	struct map_lines ml = {0};
	Dwfl *dwfl;
	int err;

	err = map_lines_read(pid, &ml);
	if (err)
		goto out_lines;
	dwfl = dwfl_begin(&proc_callbacks);
	if (!dwfl) {
		err = -ENOMEM;
		goto out_lines;
	}
	dwfl_report_begin(dwfl);
	err = report_images(dwfl, pid, &ml);
	if (err)
		goto out_end;
	if (dwfl_report_end(dwfl, NULL, NULL) != 0) {
		err = -ENOEXEC;
		goto out_end;
	}
	/* With no Elf, the architecture comes from the first module libdw can open. */
	if (!dwfl_attach_state(dwfl, NULL, pid, &thread_callbacks, u)) {
		err = -ENOEXEC;
		goto out_end;
	}
	(void)dwfl_getmodules(dwfl, load_memory_image, NULL, 0);
	map_lines_free(&ml);
	return dwfl;

out_end:
	dwfl_end(dwfl);
out_lines:
	map_lines_free(&ml);
	errno = -err;
	return NULL;
}

struct an_unwind *an_unwind_new(pid_t pid)
{
	struct an_unwind *u;
	int err;

	if (pid <= 0) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
	u->pid = pid;
	u->dwfl = proc_dwfl(u, pid);
	if (!u->dwfl) {
		err = -errno;
		goto out_free;
	}
	return u;

out_free:
	free(u);
	errno = -err;
	return NULL;
}

void an_unwind_free(struct an_unwind *u)
{
	if (!u)
		return;
	dwfl_end(u->dwfl);
	free(u);
}

/* A new Dwfl rather than dwfl_report_begin() on the old one: the attached process
 * borrows its Ebl from a module (dwfl_attach_state() with no Elf), which a re-report
 * would free if that module were gone. */
int an_unwind_refresh(struct an_unwind *u)
{
	if (!u)
		return -EINVAL;
	Dwfl *dwfl = proc_dwfl(u, u->pid);
	if (!dwfl)
		return -errno;
	dwfl_end(u->dwfl);
	u->dwfl = dwfl;
	return 0;
}

/* ---- one sample ------------------------------------------------------------------------ */

static void result_set(struct an_unwind_result *r, enum an_unwind_end end, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void result_set(struct an_unwind_result *r, enum an_unwind_end end, const char *fmt, ...)
{
	va_list ap;

	r->end = end;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

/* The module holding addr. dwfl_addrmodule() alone can answer with the module below a
 * gap: libdwfl 0.188's segment table (segment.c reify_segments()) records no end for a
 * module that starts where the one before it ends, so that module's segment runs on
 * to the next module's start. Real modules are found right; addresses in gaps are not. */
static Dwfl_Module *module_at(Dwfl *dwfl, Dwarf_Addr addr)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Addr lo, hi;

	if (!mod || !dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL))
		return NULL;
	return addr >= lo && addr < hi ? mod : NULL;
}

/* Whether libdw has CFI to look pc up in; when it has none it falls back to %rbp. */
static bool module_has_cfi(Dwfl_Module *mod)
{
	Dwarf_Addr bias;

	return dwfl_module_eh_cfi(mod, &bias) || dwfl_module_dwarf_cfi(mod, &bias);
}

/* Whether any of rbx, r12..r15 is known in this frame. The initial frame has them all;
 * a CFI step keeps them (the ABI's rule is "same value") or reads them from the frame,
 * below a return address that was read; libdw's frame-pointer fallback
 * (backends/x86_64_unwind.c) sets rbp, rsp and the pc only. So a frame that knows none
 * after one that knew some came from the fallback: how the fallback is seen also where
 * a module has CFI but none covering a pc. */
static bool callee_saved_known(Dwfl_Frame *state)
{
	static const unsigned regs[] = {3, 12, 13, 14, 15};
	Dwarf_Word v;

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		if (dwfl_frame_reg(state, regs[i], &v) == 0)
			return true;
	return false;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc, sp = 0;
	bool exact;

	/* The step from this frame to the next happens after this point: inside the
	 * dwfl_frame_pc() below that asks for exactness, or once this returns. */
	w->u->read_failed = false;
	if (!dwfl_frame_pc(state, &pc, NULL)) {
		w->stopped = true;
		result_set(w->r, AN_UNWIND_ERROR, "no pc: %s", dwfl_errmsg(-1));
		return DWARF_CB_ABORT;
	}
	/* A zero return address is the ABI's end of the chain; libdw's CFI path says so
	 * itself, but its frame-pointer fallback hands the 0 over as a frame. */
	if (w->n > 0 && pc == 0) {
		w->stopped = true;
		w->r->end = AN_UNWIND_OUTERMOST;
		return DWARF_CB_ABORT;
	}
	bool sp_known = dwfl_frame_reg(state, AN_REG_SP, &sp) == 0;
	if (w->n > 0 && sp_known && w->last_sp_known && pc == w->last_pc && sp == w->last_sp) {
		w->stopped = true;
		result_set(w->r, AN_UNWIND_ERROR, "frame %u repeats pc 0x%" PRIx64 " sp 0x%" PRIx64,
			   w->n, (uint64_t)pc, (uint64_t)sp);
		return DWARF_CB_ABORT;
	}
	/* One frame past max is asked for, so that DEPTH means frames were cut. */
	if (w->n == w->max) {
		w->stopped = true;
		w->r->end = AN_UNWIND_DEPTH;
		return DWARF_CB_ABORT;
	}
	bool saved_known = callee_saved_known(state);
	if (w->n > 0) {
		Dwfl_Module *mod = module_at(w->u->dwfl, w->last_pc - !w->last_exact);

		if (!mod || !module_has_cfi(mod) || (w->last_saved_known && !saved_known))
			w->r->fp_frames++;
	}
	/* Exact, not a return address: the sampled pc, one a signal interrupted, and the
	 * signal trampoline's (the handler "returned" to its first byte). Past frame 0 an
	 * exact pc is stored plus one, so that ips[i] - 1 names every frame but the first,
	 * as perf names them (it subtracts one from the others only). */
	if (!dwfl_frame_pc(state, &pc, &exact))
		exact = w->n == 0;
	w->ips[w->n] = pc + (exact && w->n > 0);
	w->n++;
	w->last_pc = pc;
	w->last_sp = sp;
	w->last_sp_known = sp_known;
	w->last_exact = exact;
	w->last_saved_known = saved_known;
	return DWARF_CB_OK;
}

/* The CFI row for pc in mod, from .eh_frame, else .debug_frame, as libdw looks. NULL
 * when neither covers pc. The caller frees it. */
static Dwarf_Frame *cfi_row(Dwfl_Module *mod, Dwarf_Addr pc)
{
	Dwarf_Frame *frame;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);

	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0)
		return frame;
	cfi = dwfl_module_dwarf_cfi(mod, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0)
		return frame;
	return NULL;
}

/* Whether the CFI row says its frame has no caller: the return address is undefined. */
static bool row_outermost(Dwarf_Frame *row)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;
	int ra = dwarf_frame_info(row, NULL, NULL, NULL);

	if (ra < 0 || dwarf_frame_register(row, ra, mem, &ops, &nops) != 0)
		return false;
	return nops == 0 && ops == mem; /* ops NULL would be "same value" */
}

/* Say why the walk stopped, from what libdw returned (rc) and what it leaves public:
 * the last pc's module, that module's CFI, and the reads it asked of the copy. Only
 * the rare endings look anything up. */
static void classify(struct an_unwind *u, const struct an_unwind_sample *s, const struct walk *w,
		     int rc)
{
	struct an_unwind_result *r = w->r;
	char msg[96];

	if (w->stopped)
		return;
	if (rc == 0 && !u->read_failed) {
		r->end = AN_UNWIND_OUTERMOST;
		return;
	}
	/* Before any other call, which may overwrite libdwfl's thread-local error. */
	const char *err = rc == -1 ? dwfl_errmsg(dwfl_errno()) : NULL;
	snprintf(msg, sizeof(msg), "%s", err ? err : "no libdw error");
	if (w->n == 0) {
		result_set(r, AN_UNWIND_ERROR, "initial frame: %s", msg);
		return;
	}

	uint64_t pc = w->last_pc;
	Dwarf_Addr lookup = w->last_exact ? pc : pc - 1; /* inside the call, as libdw looks */
	Dwfl_Module *mod = module_at(u->dwfl, lookup);
	Dwarf_Frame *row = mod ? cfi_row(mod, lookup) : NULL;

	if (rc == 0 && row && row_outermost(row)) {
		/* A read failed for some other register of a frame with no caller. */
		r->end = AN_UNWIND_OUTERMOST;
	} else if (rc == 0 || (mod && row && u->read_failed)) {
		/* rc 0 with a failed read: libdw calls a return address it could not read
		 * undefined too (frame_unwind.c handle_cfi()), which is not outermost. */
		result_set(r, AN_UNWIND_STACK_END,
			   "read at 0x%" PRIx64 " outside the copy [0x%" PRIx64 ", +%zu)",
			   u->bad_addr, s->stack_addr, s->stack_len);
	} else if (!mod) {
		result_set(r, AN_UNWIND_NO_MODULE, "pc 0x%" PRIx64 " in no module: %s", pc, msg);
	} else if (!row) {
		const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);

		result_set(r, AN_UNWIND_NO_CFI, "pc 0x%" PRIx64 " in %s has no CFI: %s", pc,
			   name ? name : "?", msg);
	} else {
		result_set(r, AN_UNWIND_ERROR, "pc 0x%" PRIx64 ": %s", pc, msg);
	}
	free(row);
}

unsigned an_unwind_stack(struct an_unwind *u, const struct an_unwind_sample *s, uint64_t *ips,
			 unsigned max, struct an_unwind_result *r)
{
	struct an_unwind_result scratch;
	struct walk w = {.u = u, .ips = ips, .max = ips ? max : 0};

	if (!r)
		r = &scratch;
	*r = (struct an_unwind_result){.end = AN_UNWIND_ERROR};
	w.r = r;
	if (!u || !s || !s->regs || (s->stack_len && !s->stack)) {
		snprintf(r->why, sizeof(r->why), "no unwinder, registers or stack");
		return 0;
	}
	u->cur = s;
	u->read_failed = false;
	(void)dwfl_errno(); /* clear an error left by another sample */
	int rc = dwfl_getthread_frames(u->dwfl, s->tid > 0 ? s->tid : u->pid, frame_cb, &w);
	classify(u, s, &w, rc);
	u->cur = NULL;
	r->nframes = w.n;
	r->stop_pc = w.n ? w.last_pc : 0;
	return w.n;
}

unsigned an_unwind_splice_fp(const uint64_t *fp_ips, unsigned fp_nr, uint64_t *ips, unsigned n,
			     unsigned max, struct an_unwind_result *r)
{
	unsigned want = 0, seen = 0, m;

	if (!fp_ips || !ips || !r || !n || r->end == AN_UNWIND_DEPTH)
		return n;
	/* the last frame's return address, as often as the unwind met it (recursion): the
	 * walk, which skips frames but never adds one, holds it as often up to there; with
	 * the sampled pc alone, the walk's callers of it are all there is */
	m = 0;
	if (n > 1) {
		for (unsigned i = 1; i < n; i++)
			want += ips[i] == ips[n - 1];
		for (m = 1; m < fp_nr; m++)
			if (fp_ips[m] == ips[n - 1] && ++seen == want)
				break;
	} else if (!fp_nr || fp_ips[0] != ips[0]) {
		return n; /* not the same sample */
	}
	for (unsigned i = m + 1; i < fp_nr && n < max; i++) {
		ips[n++] = fp_ips[i];
		r->fp_spliced++;
	}
	return n;
}

const char *an_unwind_end_name(enum an_unwind_end end)
{
	switch (end) {
	case AN_UNWIND_OUTERMOST:
		return "outermost";
	case AN_UNWIND_DEPTH:
		return "depth";
	case AN_UNWIND_STACK_END:
		return "stack-end";
	case AN_UNWIND_NO_MODULE:
		return "no-module";
	case AN_UNWIND_NO_CFI:
		return "no-cfi";
	case AN_UNWIND_ERROR:
		return "error";
	}
	return "?";
}
