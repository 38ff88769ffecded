/*
 * oncpu against real processes: these load BPF and sample for about a second each,
 * so they need root and kernel BTF (skipped, saying why, only where BPF cannot load).
 * The child is tests/helpers/busy, which spins in busy_hot_* with a known phase word.
 */
#include <criterion/criterion.h>

#include "analysis/analysis.h"
#include "tests/probes/busy.h"
#include "probes/probes.h"
#include "runtime/phase.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct probe_oncpu *open_probe(unsigned freq, unsigned stack_entries,
				      unsigned count_entries)
{
	struct probe_oncpu_opts o = { .freq = freq, .stack_entries = stack_entries,
				      .count_entries = count_entries };
	struct probe_oncpu *p;
	char err[256];

	p = probe_oncpu_open(&o, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	return p;
}

/* What a drain handed back, summed. */
struct seen {
	uint64_t total, records, phase_ok, full_records, full_count;
	uint64_t ufull, kfull, trunc_u, bad_trunc, flagged_with_frames;
	uint64_t with_kernel, with_both;
	pid_t other;
	uint64_t other_seen;
	struct an_usyms *usyms;
	char leaf[8][64];
	uint64_t leaf_count[8];
	/* distinct user stacks that came back with frames, by a hash of their ips */
	uint64_t ustacks[4096];
	unsigned nustacks;
};

/* FNV-1a over the ips, a different hash from the probe's, so that two stacks the probe
 * took for one would still count as two here. */
static uint64_t ips_hash(const uint64_t *ips, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < n; i++)
		for (int b = 0; b < 64; b += 8)
			h = (h ^ ((ips[i] >> b) & 0xff)) * 0x100000001b3ull;
	return h;
}

static void note_ustack(struct seen *v, const struct probe_stack *s)
{
	uint64_t h = ips_hash(s->ustack, s->nuser);
	unsigned i;

	for (i = 0; i < v->nustacks && v->ustacks[i] != h; i++)
		;
	if (i == v->nustacks && i < sizeof(v->ustacks) / sizeof(v->ustacks[0]))
		v->ustacks[v->nustacks++] = h;
}

static int collect(const struct probe_stack *s, void *ctx)
{
	struct seen *v = ctx;

	v->total += s->count;
	v->records++;
	if (s->phase == BUSY_PHASE_KEPT)
		v->phase_ok += s->count;
	if (s->lost & PROBE_LOST_COUNTS_FULL) {
		v->full_records++;
		v->full_count += s->count;
	}
	if (s->lost & PROBE_LOST_USTACK_FULL) {
		v->ufull += s->count;
		if (s->nuser)
			v->flagged_with_frames++;
	}
	if (s->lost & PROBE_LOST_KSTACK_FULL) {
		v->kfull += s->count;
		if (s->nkernel)
			v->flagged_with_frames++;
	}
	if (s->nuser)
		note_ustack(v, s);
	if (s->nkernel)
		v->with_kernel += s->count;
	if (s->nkernel && s->nuser)
		v->with_both += s->count;
	if (s->lost & PROBE_TRUNCATED_USTACK) {
		v->trunc_u += s->count;
		if (s->nuser != 127)
			v->bad_trunc++;
	}
	if ((pid_t)s->tgid == v->other || !strcmp(s->comm, "busy-other"))
		v->other_seen += s->count;
	if (v->usyms && s->nuser) {
		char name[64];
		int i;

		/* ustack[0] is the sampled IP itself, not a return address: no -1. */
		an_usyms_name(v->usyms, s->ustack[0], name, sizeof(name));
		for (i = 0; i < 8 && v->leaf[i][0] && strcmp(v->leaf[i], name); i++)
			;
		if (i < 8) {
			snprintf(v->leaf[i], sizeof(v->leaf[i]), "%s", name);
			v->leaf_count[i] += s->count;
		}
	}
	return 0;
}

TestSuite(oncpu, .fini = reap_kids);

Test(oncpu, samples_target_with_stacks_and_phase)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct an_symcache *cache;
	struct an_procmaps *maps;
	struct seen v = {};
	struct probe_oncpu *p;
	int best = 0;

	need_bpf();
	p = open_probe(499, 0, 0);
	t.tgid = spawn_busy("60", "1", "hot", "busy-target", &t.phase_tls_off);
	v.other = spawn_busy("60", "1", "hot", "busy-other", NULL);
	cr_assert_neq(t.phase_tls_off, 0);
	maps = an_procmaps_read(t.tgid);
	cr_assert_not_null(maps, "an_procmaps_read: %s", strerror(errno));
	cache = an_symcache_new();
	cr_assert_not_null(cache);
	v.usyms = an_usyms_new(cache, maps);
	cr_assert_not_null(v.usyms);

	/* One spinning thread for 2 s at 499 Hz is ~1,000 samples alone; two busy processes
	 * and whatever else shares this 2-CPU VM can cut its share to a fifth or less, so
	 * windows are sampled until 100 samples came (the busy targets spin for 60 s) */
	for (int w = 1; st.samples < 100; w++) {
		cr_assert_leq(w, 25, "only %llu samples in %d windows of 2 s",
			      (unsigned long long)st.samples, w - 1);
		sample_window(p, &t, 2000, collect, &v, &st);
	}
	cr_log_info("oncpu: %s at %u Hz: %llu samples, %llu records, phase ok %llu",
		    probe_oncpu_event(p), probe_oncpu_freq(p), (unsigned long long)st.samples,
		    (unsigned long long)v.records, (unsigned long long)v.phase_ok);
	cr_expect_eq(v.total, st.samples, "drained %llu != samples %llu",
		     (unsigned long long)v.total, (unsigned long long)st.samples);
	cr_expect_eq(v.other_seen, 0, "the untargeted process was kept");
	cr_expect_geq(v.phase_ok * 10, st.samples * 9, "phase word right in %llu of %llu",
		      (unsigned long long)v.phase_ok, (unsigned long long)st.samples);
	cr_expect_eq(st.ustack_errors + st.kstack_errors, 0);
	for (int i = 1; i < 8; i++)
		if (v.leaf_count[i] > v.leaf_count[best])
			best = i;
	cr_log_info("hottest leaf: %s (%llu)", v.leaf[best],
		    (unsigned long long)v.leaf_count[best]);
	cr_expect_eq(strncmp(v.leaf[best], "busy_hot_", 9), 0, "hottest leaf is %s",
		     v.leaf[best]);

	an_usyms_free(v.usyms);
	an_symcache_free(cache);
	probe_oncpu_free(p);
}

/* A sample's user walk ends where its frame-pointer chain does, at a zero %rbp, without
 * reading the frame at address 0 as the kernel's walk does (two page faults a sample;
 * see probe__user_stack()). */
Test(oncpu, the_user_walk_stops_at_the_chains_end_without_a_fault)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;
	uint64_t faults;
	int fds[8], n;

	need_bpf();
	p = open_probe(499, 0, 0);
	t.tgid = spawn_busy("60", "1", "hot", "busy-target", &t.phase_tls_off);
	n = kernel_faults_counters(t.tgid, fds, 8);
	for (int w = 1; st.samples < 100; w++) {
		cr_assert_leq(w, 25, "only %llu samples in %d windows of 2 s",
			      (unsigned long long)st.samples, w - 1);
		sample_window(p, &t, 2000, collect, &v, &st);
	}
	faults = kernel_faults_read(fds, n);
	cr_expect_leq(faults, st.samples / 10,
		      "%llu kernel page faults in the target's %d threads over %llu samples",
		      (unsigned long long)faults, n, (unsigned long long)st.samples);
	probe_oncpu_free(p);
}

Test(oncpu, full_stacks_map_is_counted_not_hidden)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;

	need_bpf();
	/* Room for four stacks, user and kernel together, against 96 depths times the
	 * IPs in the spin: most new stacks find the map full. */
	p = open_probe(499, 4, 0);
	t.tgid = spawn_busy("3", "1", "many", "busy-many", &t.phase_tls_off);
	sample_window(p, &t, 1000, collect, &v, &st);

	cr_log_info("stacks map full: user %llu kernel %llu of %llu samples; %u user stacks kept",
		    (unsigned long long)st.ustack_full, (unsigned long long)st.kstack_full,
		    (unsigned long long)st.samples, v.nustacks);
	cr_expect_gt(st.ustack_full, 0);
	cr_expect_eq(v.ufull, st.ustack_full);
	cr_expect_eq(v.kfull, st.kstack_full);
	cr_expect_eq(v.flagged_with_frames, 0, "a stack with no room came back with frames");
	cr_expect_geq(v.nustacks, 1);
	cr_expect_leq(v.nustacks, 4, "%u distinct user stacks from a 4-entry map", v.nustacks);
	cr_expect_eq(st.ustack_errors + st.kstack_errors + st.counts_full, 0);
	cr_expect_eq(v.total, st.samples);
	probe_oncpu_free(p);
}

/* What the stack-trace map got wrong: at 16,384 buckets, a few hundred distinct stacks
 * already share some (about n^2/32768 of them: 5 for 400), and each loses all its
 * samples. Against this child it lost 0.6-2.2% of the samples (bcc #3389). Stored by
 * content, none is lost. */
Test(oncpu, hundreds_of_stacks_at_the_default_size_lose_nothing)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_probe(999, 0, 0);
	t.tgid = spawn_busy("4", "2", "many", "busy-many", &t.phase_tls_off);
	sample_window(p, &t, 2500, collect, &v, &st);

	cr_log_info("%u distinct user stacks in %llu samples; lost: %llu user, %llu kernel "
		    "(stacks map full), %llu user, %llu kernel (errors)", v.nustacks,
		    (unsigned long long)st.samples, (unsigned long long)st.ustack_full,
		    (unsigned long long)st.kstack_full, (unsigned long long)st.ustack_errors,
		    (unsigned long long)st.kstack_errors);
	cr_expect_geq(v.nustacks, 200, "only %u distinct user stacks: not the case tested",
		      v.nustacks);
	cr_expect_eq(st.ustack_full + st.kstack_full, 0);
	cr_expect_eq(v.ufull + v.kfull, 0);
	cr_expect_eq(st.ustack_errors + st.kstack_errors + st.counts_full, 0);
	cr_expect_eq(v.total, st.samples);
	probe_oncpu_free(p);
}

Test(oncpu, full_counts_map_comes_back_as_one_record)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_probe(499, 0, 2);
	t.tgid = spawn_busy("3", "1", "many", "busy-many", &t.phase_tls_off);
	sample_window(p, &t, 1000, collect, &v, &st);

	cr_expect_gt(st.counts_full, 0);
	cr_expect_eq(v.full_records, 1);
	cr_expect_eq(v.full_count, st.counts_full);
	cr_expect_leq(v.records, 3, "2 keys and the counts-full record");
	cr_expect_eq(v.total, st.samples);
	probe_oncpu_free(p);
}

Test(oncpu, deep_stacks_are_flagged_truncated)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_probe(499, 0, 0);
	t.tgid = spawn_busy("3", "1", "deep", "busy-deep", &t.phase_tls_off);
	sample_window(p, &t, 500, collect, &v, &st);

	/* Nearly all time is in the spin 200 frames down. */
	cr_expect_gt(v.trunc_u, st.samples / 2);
	cr_expect_eq(v.bad_trunc, 0);
	cr_expect_geq(st.truncated, v.trunc_u);
	cr_expect_eq(v.total, st.samples);
	probe_oncpu_free(p);
}

/* The kernel stack is walked only for samples taken in the kernel: a child that spends
 * most of its time in read() must still bring kernel stacks back, with its user stack
 * beside each. */
Test(oncpu, samples_in_the_kernel_keep_both_stacks)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_probe(499, 0, 0);
	t.tgid = spawn_busy("3", "1", "sys", "busy-sys", &t.phase_tls_off);
	sample_window(p, &t, 1000, collect, &v, &st);

	cr_log_info("kernel stacks in %llu of %llu samples, %llu with a user stack too",
		    (unsigned long long)v.with_kernel, (unsigned long long)st.samples,
		    (unsigned long long)v.with_both);
	cr_expect_geq(v.with_kernel * 2, st.samples, "kernel stacks in %llu of %llu",
		      (unsigned long long)v.with_kernel, (unsigned long long)st.samples);
	cr_expect_eq(v.with_both, v.with_kernel);
	cr_expect_eq(st.ustack_errors + st.kstack_errors + st.ustack_full + st.kstack_full, 0);
	cr_expect_eq(v.total, st.samples);
	probe_oncpu_free(p);
}

Test(oncpu, samples_while_stopped_are_not_kept)
{
	struct probe_oncpu_stats st = {};
	struct probe_target t = {};
	struct seen v = {};
	struct probe_oncpu *p;

	need_bpf();
	p = open_probe(499, 0, 0);
	t.tgid = spawn_busy("4", "1", "hot", "busy-target", &t.phase_tls_off);

	/* Never started: warm-up is not kept. */
	sleep_ms(300);
	cr_assert_eq(probe_oncpu_drain(p, collect, &v, &st), 0);
	cr_expect_eq(st.samples, 0);
	cr_expect_eq(v.records, 0);

	cr_assert_eq(probe_oncpu_start(p, &t), 0);
	cr_expect_eq(probe_oncpu_drain(p, collect, &v, &st), -EBUSY);
	sleep_ms(300);
	cr_assert_eq(probe_oncpu_stop(p), 0);
	cr_assert_eq(probe_oncpu_drain(p, collect, &v, &st), 0);
	cr_expect_gt(st.samples, 0);
	cr_expect_eq(v.total, st.samples);
	/* 300 ms at 499 Hz on one thread: ~150, and far from the 600 ms total. */
	cr_expect_lt(st.samples, 250);

	/* Stopped again, the child still spinning: nothing more. */
	memset(&st, 0, sizeof(st));
	memset(&v, 0, sizeof(v));
	sleep_ms(300);
	cr_assert_eq(probe_oncpu_drain(p, collect, &v, &st), 0);
	cr_expect_eq(st.samples, 0);
	cr_expect_eq(v.records, 0);
	probe_oncpu_free(p);
}

Test(oncpu, event_is_named_and_software_can_be_forced)
{
	struct probe_oncpu_opts o = { .software_only = true };
	struct probe_oncpu *p;
	char err[256];

	need_bpf();
	p = probe_oncpu_open(NULL, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	cr_log_info("oncpu default event: %s (%s)", probe_oncpu_event(p),
		    probe_oncpu_event_note(p));
	cr_expect_eq(probe_oncpu_freq(p), 999, "freq 0 means 999 Hz");
	if (!strcmp(probe_oncpu_event(p), "cycles"))
		cr_expect_str_empty(probe_oncpu_event_note(p));
	else
		cr_expect(!strcmp(probe_oncpu_event(p), "cpu-clock") &&
			  probe_oncpu_event_note(p)[0], "event %s, note '%s'",
			  probe_oncpu_event(p), probe_oncpu_event_note(p));
	probe_oncpu_free(p);

	p = probe_oncpu_open(&o, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	cr_expect_str_eq(probe_oncpu_event(p), "cpu-clock");
	cr_expect_str_not_empty(probe_oncpu_event_note(p));
	probe_oncpu_free(p);
}

Test(oncpu, bad_arguments_are_refused_clearly)
{
	struct probe_oncpu_opts o = { .freq = 10000000 };
	struct probe_target t = { .tgid = 0 };
	struct probe_oncpu *p;
	char err[256] = "";

	need_bpf();
	/* Above kernel.perf_event_max_sample_rate (at most 100000 by default): an error
	 * that names the sysctl rather than a silent clamp. */
	p = probe_oncpu_open(&o, err, sizeof(err));
	cr_expect_null(p);
	cr_expect_eq(errno, EINVAL);
	cr_expect(strstr(err, "oncpu: ") == err && strstr(err, "perf_event_max_sample_rate"),
		  "%s", err);
	probe_oncpu_free(p);
	probe_oncpu_free(NULL);

	p = open_probe(0, 0, 0);
	cr_expect_eq(probe_oncpu_start(p, &t), -EINVAL);
	cr_expect_eq(probe_oncpu_stop(p), 0);
	probe_oncpu_free(p);
}

Test(oncpu, bpf_available_says_why_not)
{
	char why[256] = "x";

	if (probe_bpf_available(why, sizeof(why)))
		cr_expect_str_empty(why);
	else
		cr_expect_str_not_empty(why);
}

static void open_unprivileged(int fd)
{
	char err[256] = "", why[256] = "";
	struct probe_oncpu *p;
	bool avail;

	avail = probe_bpf_available(why, sizeof(why));
	p = probe_oncpu_open(NULL, err, sizeof(err));
	dprintf(fd, "%d|%s|%d|%s", avail, why, p != NULL, err);
}

/* Dropped to nobody in a child (so without any capability), open must fail with the
 * fix in its message, and the availability check must agree. */
Test(oncpu, unprivileged_open_says_how_to_fix)
{
	char msg[512] = "";

	need_bpf();
	as_nobody(open_unprivileged, msg, sizeof(msg));
#define FIX "not permitted: run as root or grant CAP_BPF and CAP_PERFMON"
	cr_expect(strstr(msg, "0|" FIX "|0|oncpu: " FIX) == msg, "%s", msg);
#undef FIX
}
