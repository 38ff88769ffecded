/*
 * oncpu's call-graph modes against real processes: DWARF samples through the ring
 * buffer (every sample, whole: registers, the stack copy, the kernel stack), a ring too
 * small for them (the samples come back from the drain, marked), auto mode's choice
 * between the frame-pointer walk and DWARF by the target's code ranges, and the cut of
 * a walk at a root. Whatever the mode, the counts drained plus the DWARF samples handed
 * over equal the samples taken.
 *
 * They load BPF (root and BTF: skipped, saying why, only where BPF cannot load) and
 * sample tests/helpers/busy in rounds until they have what they check, so a busy
 * machine makes them slower, not wrong.
 */
#include <criterion/criterion.h>

#include "analysis/analysis.h"
#include "probes/probes.h"
#include "runtime/phase.h"
#include "tests/probes/busy.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the child ---------------------------------------------------------------------- */

struct span {
	uint64_t lo, hi; /* [lo, hi) in the child */
};

static bool in_span(const struct span *s, uint64_t addr)
{
	return addr >= s->lo && addr < s->hi;
}

/* Where the child mapped function name of the object whose path ends in suffix, found
 * from the file's symbols and the child's /proc/PID/maps (independently of
 * an_usyms_code_ranges, which the probe's users feed it from). */
static struct span child_function(pid_t pid, const char *suffix, const char *name)
{
	char maps[64], line[PATH_MAX + 128], path[PATH_MAX], perms[8];
	uint64_t start, end, pgoff, vaddr = 0, size = 0, off = 0;
	struct span s = { 0, 0 };
	struct an_symtab *st = NULL;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "re");
	cr_assert_not_null(f, "%s: %s", maps, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		size_t n;

		path[0] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &start,
			   &end, perms, &pgoff, path) < 5 || perms[2] != 'x')
			continue;
		n = strlen(path);
		if (n < strlen(suffix) || strcmp(path + n - strlen(suffix), suffix))
			continue;
		if (!st) {
			st = an_symtab_load(path);
			cr_assert_not_null(st, "%s: %s", path, strerror(errno));
			cr_assert_eq(an_symtab_find(st, name, &vaddr, &size), 0, "no %s in %s",
				     name, path);
			cr_assert_eq(an_symtab_vaddr_to_offset(st, vaddr, &off), 0);
		}
		if (off >= pgoff && off - pgoff < end - start) {
			s.lo = start + (off - pgoff);
			s.hi = s.lo + size;
		}
	}
	fclose(f);
	an_symtab_free(st);
	cr_assert_neq(s.lo, 0, "%s of *%s is not mapped in %d", name, suffix, (int)pid);
	return s;
}

/* ---- what came back ----------------------------------------------------------------- */

/* What dwarf_fn saw (on the reader thread, or in stop; never both at once). */
struct dwarf_seen {
	pid_t tgid;
	unsigned stack_copy;
	unsigned sleep_us;        /* to fall behind the kernel */
	struct an_usyms *usyms;   /* the child's */
	struct span hot, caller;  /* a function, and the one that calls it */
	const char *comm;         /* the child's threads' name */
	uint64_t phase;           /* the phase word the probe keeps of busy's threads */
	int ret;                  /* what on_dwarf returns */
	uint64_t n, fallback, wrong_tgid, wrong_comm, wrong_phase, empty, too_long, stack_bytes;
	uint64_t with_kernel, bad_kernel_ip, kernel_lost;
	uint64_t red_zone; /* copies that begin PROBE_RED_ZONE below %rsp */
	uint64_t rip_in_code, rip_in_busy, rip_in_libc;
	uint64_t in_hot, hot_caller_ok; /* samples in hot; of them, whose frame on the copied
					 * stack returns into caller */
	uint32_t max_len;
};

static int on_dwarf(const struct probe_dwarf_sample *s, void *ctx)
{
	struct dwarf_seen *d = ctx;
	uint64_t rip = s->regs[16], rsp = s->regs[7], rbp = s->regs[6];
	char mod[64];

	d->n++;
	d->fallback += s->fallback;
	d->wrong_tgid += (pid_t)s->tgid != d->tgid || s->tid == 0;
	d->wrong_comm += d->comm && strcmp(s->comm, d->comm);
	d->wrong_phase += d->phase && s->phase != d->phase;
	d->with_kernel += s->nkernel > 0;
	d->kernel_lost += s->lost != 0;
	for (uint32_t i = 0; i < s->nkernel; i++)
		d->bad_kernel_ip += (int64_t)s->kstack[i] >= 0; /* kernel addresses: top bit set */
	d->empty += s->stack_len == 0;
	d->red_zone += s->stack_addr == rsp - PROBE_RED_ZONE && s->stack_len > PROBE_RED_ZONE;
	d->too_long += s->stack_len > d->stack_copy;
	d->stack_bytes += s->stack_len;
	if (s->stack_len > d->max_len)
		d->max_len = s->stack_len;
	if (d->usyms && an_usyms_module(d->usyms, rip, mod, sizeof(mod))) {
		d->rip_in_code++;
		d->rip_in_busy += !strcmp(mod, "busy");
		d->rip_in_libc += !strcmp(mod, "libc.so.6");
	}
	if (d->hot.hi && in_span(&d->hot, rip)) {
		d->in_hot++;
		/* hot sets up a frame: %rbp points into the copy at the saved %rbp, and
		 * the word above it returns into its caller */
		if (rbp >= rsp && rbp - s->stack_addr + 16 <= s->stack_len) {
			uint64_t ret;

			memcpy(&ret, (const char *)s->stack + (rbp - s->stack_addr) + 8,
			       sizeof(ret));
			d->hot_caller_ok += in_span(&d->caller, ret - 1);
		}
	}
	if (d->sleep_us)
		usleep(d->sleep_us);
	return d->ret;
}

/* What the drain handed back. */
struct agg_seen {
	struct span root;            /* a PROBE_RANGE_ROOT given to the probe, or none */
	const struct probe_range *ranges;
	unsigned nranges;
	uint64_t total, records;
	uint64_t ring_lost, ring_lost_with_user;
	uint64_t with_user;
	uint64_t through_root;       /* stacks with a frame in root */
	uint64_t past_root;          /* of them, with frames after it */
	uint64_t unrooted, through_nofp; /* against ranges: not ending at a ROOT, a NOFP
					  * frame before it */
	uint64_t leaf_in_hot;
	struct span hot;
};

static unsigned range_kind(const struct agg_seen *a, uint64_t ip)
{
	for (unsigned i = 0; i < a->nranges; i++)
		if (ip >= a->ranges[i].start && ip < a->ranges[i].end)
			return a->ranges[i].kind;
	return 0;
}

static int on_stack(const struct probe_stack *s, void *ctx)
{
	struct agg_seen *a = ctx;

	a->total += s->count;
	a->records++;
	if (s->lost & PROBE_LOST_RING) {
		a->ring_lost += s->count;
		a->ring_lost_with_user += s->nuser ? s->count : 0;
		return 0;
	}
	if (!s->nuser)
		return 0;
	a->with_user += s->count;
	if (a->hot.hi && in_span(&a->hot, s->ustack[0]))
		a->leaf_in_hot += s->count;
	for (uint32_t i = 0; a->root.hi && i < s->nuser; i++) {
		/* every frame but the leaf holds a return address */
		if (!in_span(&a->root, i ? s->ustack[i] - 1 : s->ustack[i]))
			continue;
		a->through_root += s->count;
		a->past_root += i + 1 < s->nuser ? s->count : 0;
		break;
	}
	if (a->nranges) {
		bool rooted = false, nofp = false;

		for (uint32_t i = 0; i < s->nuser && !rooted; i++) {
			unsigned k = range_kind(a, i ? s->ustack[i] - 1 : s->ustack[i]);

			nofp |= k == PROBE_RANGE_NOFP;
			rooted = k == PROBE_RANGE_ROOT && i + 1 == s->nuser;
		}
		a->unrooted += rooted ? 0 : s->count;
		a->through_nofp += nofp ? s->count : 0;
	}
	return 0;
}

/* ---- sampling until there is enough --------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef bool (*enough_fn)(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			  const struct agg_seen *a);

#define DEADLINE_S 40

/* Sample t in rounds (start, 100 ms, stop, drain) until enough() holds of all that came
 * back. A round's every sample is handed over by its stop and drain, so the sums stay
 * exact across rounds. Fails after DEADLINE_S: far more than any machine needs. */
static void sample_until(struct probe_oncpu *p, const struct probe_target *t,
			 struct probe_oncpu_stats *st, struct dwarf_seen *d, struct agg_seen *a,
			 enough_fn enough)
{
	double until = now_s() + DEADLINE_S;
	unsigned rounds = 0;

	while (!enough(st, d, a)) {
		cr_assert_lt(now_s(), until,
			     "after %u rounds: %" PRIu64 " samples, %" PRIu64 " DWARF, %" PRIu64
			     " ring full, %" PRIu64 " cut",
			     rounds, st->samples, st->dwarf_samples, st->ring_full, st->root_cut);
		sample_window(p, t, 100, on_stack, a, st);
		rounds++;
	}
	cr_log_info("%u rounds: %" PRIu64 " samples, %" PRIu64 " DWARF (%" PRIu64
		    " fallback), %" PRIu64 " aggregated, %" PRIu64 " ring full, %" PRIu64
		    " cut at a root",
		    rounds, st->samples, st->dwarf_samples, d ? d->fallback : 0, a->total,
		    st->ring_full, st->root_cut);
}

static struct probe_oncpu *open_mode(enum probe_callgraph cg, unsigned stack_copy,
				     unsigned ring_bytes, struct dwarf_seen *d)
{
	struct probe_oncpu_opts o = {
		.freq = 999,
		.callgraph = cg,
		.stack_copy = stack_copy,
		.ring_bytes = ring_bytes,
		.dwarf_fn = on_dwarf,
		.dwarf_ctx = d,
	};
	char err[256];
	struct probe_oncpu *p = probe_oncpu_open(&o, err, sizeof(err));

	cr_assert_not_null(p, "%s", err);
	if (d)
		d->stack_copy = probe_oncpu_stack_copy(p);
	return p;
}

/* Every sample is accounted for once: drained, or handed to dwarf_fn. */
static void expect_invariant(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			     const struct agg_seen *a)
{
	cr_expect_eq(a->total + d->n, st->samples,
		     "drained %" PRIu64 " + DWARF %" PRIu64 " != samples %" PRIu64, a->total, d->n,
		     st->samples);
	cr_expect_eq(d->n, st->dwarf_samples, "dwarf_fn saw %" PRIu64 ", stats say %" PRIu64,
		     d->n, st->dwarf_samples);
	cr_expect_eq(a->ring_lost, st->ring_full, "PROBE_LOST_RING %" PRIu64 ", ring_full %" PRIu64,
		     a->ring_lost, st->ring_full);
	cr_expect_eq(d->stack_bytes, st->stack_bytes);
	cr_expect_eq(d->wrong_tgid, 0);
}

static struct an_usyms *child_usyms(pid_t pid)
{
	struct an_procmaps *maps = an_procmaps_read(pid);
	struct an_usyms *u;

	cr_assert_not_null(maps, "an_procmaps_read: %s", strerror(errno));
	u = an_usyms_new(NULL, maps);
	cr_assert_not_null(u);
	return u;
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct probe_range *a = pa, *b = pb;

	return (a->start > b->start) - (a->start < b->start);
}

TestSuite(oncpu_dwarf, .fini = reap_kids, .timeout = 120);

/* ---- options -------------------------------------------------------------------------- */

Test(oncpu_dwarf, options_are_rounded_and_reported)
{
	struct probe_oncpu_opts o = { .callgraph = PROBE_CG_DWARF };
	struct dwarf_seen d = {};
	struct probe_oncpu *p;
	char err[256] = "";

	need_bpf();
	/* a DWARF mode without a handler */
	errno = 0;
	cr_expect_null(probe_oncpu_open(&o, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	cr_expect(strstr(err, "oncpu: ") == err, "%s", err);
	o.callgraph = PROBE_CG_AUTO;
	errno = 0;
	cr_expect_null(probe_oncpu_open(&o, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);

	p = open_mode(PROBE_CG_DWARF, 0, 0, &d);
	cr_expect_eq(probe_oncpu_callgraph(p), PROBE_CG_DWARF);
	cr_expect_eq(probe_oncpu_stack_copy(p), PROBE_STACK_COPY_DEFAULT);
	unsigned ring = probe_oncpu_ring_bytes(p);
	cr_expect_geq(ring, 64u << 10);
	cr_expect_eq(ring & (ring - 1), 0, "ring of %u bytes", ring);
	probe_oncpu_free(p);

	p = open_mode(PROBE_CG_DWARF, 1001, 100000, &d);
	cr_expect_eq(probe_oncpu_stack_copy(p), 1000, "rounded down to 8");
	cr_expect_eq(probe_oncpu_ring_bytes(p), 131072, "rounded up to a power of two");
	probe_oncpu_free(p);

	p = open_mode(PROBE_CG_AUTO, 1u << 20, 1000, &d);
	cr_expect_eq(probe_oncpu_callgraph(p), PROBE_CG_AUTO);
	cr_expect_eq(probe_oncpu_stack_copy(p), PROBE_STACK_COPY_MAX);
	cr_expect_eq(probe_oncpu_ring_bytes(p), 64u << 10, "at least 64 KiB");
	probe_oncpu_free(p);

	p = open_mode(PROBE_CG_FP, 0, 0, NULL);
	cr_expect_eq(probe_oncpu_callgraph(p), PROBE_CG_FP);
	probe_oncpu_free(p);
}

/* ---- DWARF ---------------------------------------------------------------------------- */

static bool enough_dwarf(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			 const struct agg_seen *a)
{
	return d->in_hot >= 200;
}

Test(oncpu_dwarf, dwarf_mode_hands_every_sample_over_whole)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = {};
	struct agg_seen a = {};
	uint64_t runs0 = 0, ns0 = 0, runs1 = 0, ns1 = 0;
	struct probe_oncpu *p;
	int stats_ret;

	need_bpf();
	/* a ring far larger than what 100 ms of samples need: nothing may overflow */
	p = open_mode(PROBE_CG_DWARF, 8192, 16u << 20, &d);
	d.comm = "busy-dwarf";
	d.phase = BUSY_PHASE_KEPT;
	t.tgid = d.tgid = spawn_busy("60", "1", "hot", d.comm, &t.phase_tls_off);
	d.usyms = child_usyms(t.tgid);
	d.hot = child_function(t.tgid, "/busy", "busy_hot_spin");
	d.caller = child_function(t.tgid, "/busy", "busy_hot_loop");
	stats_ret = probe_oncpu_prog_stats(p, &runs0, &ns0);
	cr_expect(stats_ret == 0 || stats_ret == -ENOTSUP, "prog_stats: %d", stats_ret);

	sample_until(p, &t, &st, &d, &a, enough_dwarf);

	cr_log_info("DWARF: %" PRIu64 " samples, up to %u stack bytes, %" PRIu64
		    " in busy_hot_spin (%" PRIu64 " whose frame returns into busy_hot_loop)",
		    d.n, d.max_len, d.in_hot, d.hot_caller_ok);
	expect_invariant(&st, &d, &a);
	cr_expect_eq(d.n, st.samples, "every sample goes to dwarf_fn");
	cr_expect_eq(a.total, 0, "%" PRIu64 " samples aggregated in DWARF mode", a.total);
	cr_expect_eq(a.records, 0);
	cr_expect_eq(st.ring_full, 0);
	cr_expect_eq(d.fallback, 0, "fallback is auto mode's");
	cr_expect_eq(d.wrong_comm, 0);
	cr_expect_eq(d.wrong_phase, 0, "phase word wrong in %" PRIu64 " of %" PRIu64,
		     d.wrong_phase, d.n);
	/* the registers are the child's user state: rip in its code, mostly busy's own */
	cr_expect_eq(d.rip_in_code, d.n, "rip in no code in %" PRIu64 " of %" PRIu64,
		     d.n - d.rip_in_code, d.n);
	cr_expect_geq(d.rip_in_busy * 10, d.n * 9, "rip in busy in %" PRIu64 " of %" PRIu64,
		      d.rip_in_busy, d.n);
	/* the copy is the stack from %rsp up, at most stack_copy bytes */
	cr_expect_eq(d.empty, 0);
	cr_expect_eq(d.too_long, 0, "copies up to %u bytes, asked %u", d.max_len, d.stack_copy);
	/* busy's stacks are deep in their mappings: every copy holds the red zone, where an
	 * epilogue's CFI may say a register is */
	cr_expect_eq(d.red_zone, d.n, "%" PRIu64 " of %" PRIu64 " copies hold the red zone",
		     d.red_zone, d.n);
	cr_expect_geq(d.hot_caller_ok * 10, d.in_hot * 9,
		      "the copied frame returns into busy_hot_loop in %" PRIu64 " of %" PRIu64,
		      d.hot_caller_ok, d.in_hot);
	cr_expect_gt(st.stack_bytes, 0);

	/* the program ran at least once per sample of the target, and took time */
	if (stats_ret == 0) {
		cr_expect_eq(probe_oncpu_prog_stats(p, &runs1, &ns1), 0);
		cr_expect_geq(runs1 - runs0, st.samples);
		cr_expect_gt(ns1, ns0);
	}
	an_usyms_free(d.usyms);
	probe_oncpu_free(p);
}

static bool enough_kernel(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			  const struct agg_seen *a)
{
	return d->with_kernel >= 100;
}

/* A child in read() most of the time: its DWARF samples carry the kernel stack, and
 * the user registers are those it entered the kernel with, in glibc's read(). */
Test(oncpu_dwarf, dwarf_samples_in_the_kernel_keep_the_kernel_stack)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = { .comm = "busy-dwarf-sys" };
	struct agg_seen a = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_mode(PROBE_CG_DWARF, 4096, 16u << 20, &d);
	t.tgid = d.tgid = spawn_busy("60", "1", "sys", d.comm, &t.phase_tls_off);
	d.usyms = child_usyms(t.tgid);

	sample_until(p, &t, &st, &d, &a, enough_kernel);

	cr_log_info("kernel stacks in %" PRIu64 " of %" PRIu64 " DWARF samples, rip in libc in %"
		    PRIu64, d.with_kernel, d.n, d.rip_in_libc);
	expect_invariant(&st, &d, &a);
	cr_expect_eq(d.n, st.samples);
	cr_expect_geq(d.with_kernel * 2, d.n, "kernel stacks in %" PRIu64 " of %" PRIu64,
		      d.with_kernel, d.n);
	cr_expect_eq(d.bad_kernel_ip, 0, "user addresses in kernel stacks");
	cr_expect_eq(d.kernel_lost, 0);
	cr_expect_eq(d.wrong_comm, 0);
	cr_expect_eq(d.rip_in_code, d.n);
	cr_expect_geq(d.rip_in_libc * 2, d.with_kernel, "rip in libc in %" PRIu64 " of %" PRIu64,
		      d.rip_in_libc, d.with_kernel);
	an_usyms_free(d.usyms);
	probe_oncpu_free(p);
}

/* dwarf_fn's error comes back from the stop, and does not stop the samples. */
Test(oncpu_dwarf, dwarf_fn_error_is_returned_by_stop)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = { .ret = -EIO };
	struct agg_seen a = {};
	struct probe_oncpu *p;
	double until;
	int ret = 0;

	need_bpf();
	p = open_mode(PROBE_CG_DWARF, 1024, 0, &d);
	t.tgid = d.tgid = spawn_busy("60", "1", "hot", "busy-err", &t.phase_tls_off);
	until = now_s() + DEADLINE_S;
	while (d.n < 20) {
		uint64_t before = d.n;

		cr_assert_lt(now_s(), until, "%" PRIu64 " DWARF samples", d.n);
		cr_assert_eq(probe_oncpu_start(p, &t), 0);
		sleep_ms(100);
		ret = probe_oncpu_stop(p);
		cr_assert_eq(probe_oncpu_drain(p, on_stack, &a, &st), 0);
		cr_expect_eq(ret, d.n > before ? -EIO : 0, "stop returned %d after %" PRIu64
			     " samples", ret, d.n - before);
	}
	expect_invariant(&st, &d, &a);
	cr_expect_eq(d.n, st.samples, "the samples kept coming");

	/* a start forgets the last error */
	d.ret = 0;
	cr_assert_eq(probe_oncpu_start(p, &t), 0);
	sleep_ms(100);
	cr_expect_eq(probe_oncpu_stop(p), 0);
	probe_oncpu_free(p);
}

static bool enough_ring_full(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			     const struct agg_seen *a)
{
	return st->ring_full > 0 && d->n > 0;
}

/* Room for two samples and a reader that takes 20 ms over each: the kernel finds the
 * ring full, and those samples are counted in the drain instead, marked. */
Test(oncpu_dwarf, full_ring_samples_come_back_from_the_drain)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = { .sleep_us = 20000 };
	struct agg_seen a = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_mode(PROBE_CG_DWARF, 24576, 64u << 10, &d);
	cr_assert_eq(probe_oncpu_ring_bytes(p), 64u << 10);
	t.tgid = d.tgid = spawn_busy("60", "2", "hot", "busy-ring", &t.phase_tls_off);

	sample_until(p, &t, &st, &d, &a, enough_ring_full);

	expect_invariant(&st, &d, &a);
	cr_expect_gt(st.ring_full, 0);
	cr_expect_eq(a.ring_lost, a.total, "in DWARF mode only ring-full samples are drained");
	cr_expect_eq(a.ring_lost_with_user, 0, "DWARF mode walks no user stack");
	cr_expect_eq(d.too_long, 0);
	probe_oncpu_free(p);
}

/* ---- auto ----------------------------------------------------------------------------- */

static bool enough_samples(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			   const struct agg_seen *a)
{
	return st->samples >= 300;
}

/* Without code ranges auto mode trusts every walk: the frame-pointer mode's result. */
Test(oncpu_dwarf, auto_without_ranges_aggregates_everything)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = {};
	struct agg_seen a = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_mode(PROBE_CG_AUTO, 0, 0, &d);
	t.tgid = d.tgid = spawn_busy("60", "1", "hot", "busy-auto", &t.phase_tls_off);

	sample_until(p, &t, &st, &d, &a, enough_samples);

	expect_invariant(&st, &d, &a);
	cr_expect_eq(d.n, 0, "%" PRIu64 " samples went to dwarf_fn", d.n);
	cr_expect_eq(st.dwarf_samples + st.ring_full + st.root_cut, 0);
	cr_expect_eq(a.total, st.samples);
	cr_expect_eq(a.with_user, a.total, "every sample with its user stack");
	cr_expect_eq(st.ustack_errors, 0);
	probe_oncpu_free(p);
}

static bool enough_fallback(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			    const struct agg_seen *a)
{
	/* busy_hot_spin holds 99% of the time: the rest, aggregated, comes slowly */
	return d->in_hot >= 100 && a->with_user >= 5;
}

/* The child's hot function marked as code without frame pointers, start_thread as the
 * root: samples in it go to dwarf_fn as fallbacks; the others, whose walk reaches
 * start_thread through busy's own frames, are aggregated, ending there. */
Test(oncpu_dwarf, auto_sends_walks_through_nofp_code_to_dwarf)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = {};
	struct agg_seen a = {};
	struct probe_range r[2];
	struct probe_oncpu *p;

	need_bpf();
	p = open_mode(PROBE_CG_AUTO, 4096, 0, &d);
	t.tgid = d.tgid = spawn_busy("60", "1", "hot", "busy-auto", &t.phase_tls_off);
	d.usyms = child_usyms(t.tgid);
	d.hot = a.hot = child_function(t.tgid, "/busy", "busy_hot_spin");
	d.caller = child_function(t.tgid, "/busy", "busy_hot_loop");
	a.root = child_function(t.tgid, "/libc.so.6", "start_thread");
	r[0] = (struct probe_range){ d.hot.lo, d.hot.hi, PROBE_RANGE_NOFP };
	r[1] = (struct probe_range){ a.root.lo, a.root.hi, PROBE_RANGE_ROOT };
	qsort(r, 2, sizeof(r[0]), range_cmp);
	t.ranges = a.ranges = r;
	t.nranges = a.nranges = 2;

	sample_until(p, &t, &st, &d, &a, enough_fallback);

	expect_invariant(&st, &d, &a);
	cr_expect_eq(d.fallback, d.n, "every DWARF sample of auto mode is a fallback");
	cr_expect_gt(d.in_hot, 0);
	cr_expect_geq(d.in_hot * 10, d.n * 9,
		      "%" PRIu64 " of %" PRIu64 " fallbacks in the hot code", d.in_hot, d.n);
	/* nothing that ran in the NOFP range was trusted, unless the ring had no room */
	cr_expect_eq(a.leaf_in_hot, 0, "%" PRIu64 " aggregated samples in busy_hot_spin",
		     a.leaf_in_hot);
	cr_expect_eq(a.through_nofp, 0);
	/* and what was aggregated reached the root and stops there */
	cr_expect_eq(a.unrooted, 0, "%" PRIu64 " aggregated walks reach no root", a.unrooted);
	cr_expect_eq(a.past_root, 0);
	cr_expect_eq(a.through_root, a.with_user);
	an_usyms_free(d.usyms);
	probe_oncpu_free(p);
}

static bool enough_qsort(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
			 const struct agg_seen *a)
{
	return d->rip_in_libc >= 50 && d->in_hot >= 10 && a->with_user >= 20;
}

/* As the profiler runs it: the child's code ranges from an_usyms_code_ranges(), with
 * the thread roots, against a child that sorts with glibc's qsort (no frame pointers)
 * calling back into its own comparator. */
Test(oncpu_dwarf, auto_with_the_process_code_ranges)
{
	static const char *const roots[] = { "start_thread", "clone3", "__clone3", "clone",
					     "__clone", "__libc_start_call_main",
					     "__libc_start_main", "_start", NULL };
	struct an_code_range cr[PROBE_MAX_RANGES];
	struct probe_range r[PROBE_MAX_RANGES];
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = {};
	struct agg_seen a = {};
	struct probe_oncpu *p;
	size_t dropped = 0;
	int n;

	need_bpf();
	p = open_mode(PROBE_CG_AUTO, 4096, 0, &d);
	t.tgid = d.tgid = spawn_busy("60", "1", "qsort", "busy-qsort", &t.phase_tls_off);
	d.usyms = child_usyms(t.tgid);
	/* the comparator has frame pointers, but its caller is glibc's */
	d.hot = a.hot = child_function(t.tgid, "/busy", "busy_cmp");
	n = an_usyms_code_ranges(d.usyms, roots, cr, PROBE_MAX_RANGES, &dropped);
	cr_assert_gt(n, 0, "an_usyms_code_ranges: %d", n);
	cr_assert_eq(dropped, 0);
	for (int i = 0; i < n; i++)
		r[i] = (struct probe_range){ cr[i].start, cr[i].end,
					     cr[i].kind == AN_CODE_ROOT ? PROBE_RANGE_ROOT :
									  PROBE_RANGE_NOFP };
	t.ranges = a.ranges = r;
	t.nranges = a.nranges = (unsigned)n;

	sample_until(p, &t, &st, &d, &a, enough_qsort);

	expect_invariant(&st, &d, &a);
	cr_expect_eq(d.fallback, d.n);
	cr_expect_gt(d.rip_in_libc, 0);
	cr_expect_gt(d.in_hot, 0);
	cr_expect_eq(a.leaf_in_hot, 0, "%" PRIu64 " walks from busy_cmp were trusted",
		     a.leaf_in_hot);
	cr_expect_eq(a.through_nofp, 0, "%" PRIu64 " aggregated walks went through glibc",
		     a.through_nofp);
	cr_expect_eq(a.unrooted, 0, "%" PRIu64 " aggregated walks reach no root", a.unrooted);
	an_usyms_free(d.usyms);
	probe_oncpu_free(p);
}

/* ---- the cut at a root ---------------------------------------------------------------- */

static bool enough_cut(const struct probe_oncpu_stats *st, const struct dwarf_seen *d,
		       const struct agg_seen *a)
{
	return a->through_root >= 200;
}

/* busy_hot_loop, in the middle of the hot thread's stack (busy_hot_spin <- busy_hot_loop
 * <- worker <- start_thread), named a root: the walks stop at it. */
Test(oncpu_dwarf, fp_walk_is_cut_after_a_root)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct dwarf_seen d = {};
	struct agg_seen a = {};
	struct probe_range r;
	struct probe_oncpu *p;

	need_bpf();
	p = open_mode(PROBE_CG_FP, 0, 0, NULL);
	t.tgid = spawn_busy("60", "1", "hot", "busy-cut", &t.phase_tls_off);
	a.root = child_function(t.tgid, "/busy", "busy_hot_loop");
	r = (struct probe_range){ a.root.lo, a.root.hi, PROBE_RANGE_ROOT };
	t.ranges = &r;
	t.nranges = 1;

	sample_until(p, &t, &st, &d, &a, enough_cut);

	expect_invariant(&st, &d, &a);
	cr_expect_eq(st.dwarf_samples + st.ring_full, 0);
	cr_expect_gt(st.root_cut, 0);
	cr_expect_eq(a.past_root, 0, "%" PRIu64 " samples with frames past the root",
		     a.past_root);
	/* each walk through busy_hot_loop went on to worker: each was cut */
	cr_expect_eq(st.root_cut, a.through_root, "cut %" PRIu64 ", through the root %" PRIu64,
		     st.root_cut, a.through_root);
	probe_oncpu_free(p);
}
