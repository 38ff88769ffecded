/*
 * The offcpu probe against tests/helpers/sleeper, whose off-CPU time is known: it
 * times each of its naps itself, so the probe's total has an independent view to
 * match, and it naps in functions with recognisable names.
 */
#include "tests/probes/sleeper.h"

#include "analysis/analysis.h"

#include <sched.h>

struct seen {
	struct an_usyms *usyms;
	const char *leaf;        /* the user leaf function counted in ns */
	const char *waker_leaf;  /* with wakers: the waker's user leaf expected */
	uint64_t ns, intervals;  /* of stacks whose user leaf is leaf */
	/* the napping thread's preemptions with another leaf: off CPU by its own clocks when
	 * they fall inside a timed span (in the clock reads around the nap, say, in the vDSO
	 * or glibc, whose frames the walk may not name), so the most the span can hold
	 * beyond the leaf's time */
	uint64_t preempted_elsewhere_ns;
	uint64_t all_ns, all_intervals;
	uint64_t wrong_kind, wrong_comm, no_kernel, preempted, waker_ok, waker_bad;
	const char *comm;        /* intervals of threads so named that publish RUN (busy's
				  * spinners, not its main thread), counted apart */
	uint64_t comm_intervals, comm_preempted, comm_kernel;
	uint64_t lost_ustack_full, lost_counts_full, counts_full_ns, counts_full_records;
	uint64_t truncated_stacks, truncated_naps; /* stacks at the depth limit; naps so cut */
	uint64_t lost_waker, lost_waker_woken;     /* intervals marked waker-full; of them,
						    * any with a waker all the same */
	unsigned records;
	/* sleeper's "many" mode: bit n set for a walk of sleeper_nap, n frames of
	 * sleeper_deep, then main; walks of sleeper_nap that are not that shape */
	uint64_t deep_frames_seen, deep_bad;
};

static void leaf_name(struct an_usyms *u, const uint64_t *ips, unsigned n, char *buf,
		      size_t len)
{
	buf[0] = '\0';
	/* ips[0] is the pc the thread left user mode at: no -1 */
	if (n && u)
		an_usyms_name(u, ips[0], buf, len);
}

/* A walk from sleeper_nap: how many sleeper_deep frames it went through before main
 * (each a return address, so looked up one byte back). */
static void check_deep(struct seen *v, const struct probe_offcpu_interval *iv)
{
	char name[128] = "";
	unsigned i = 1;

	for (; i < iv->nuser; i++) {
		an_usyms_name(v->usyms, iv->ustack[i] - 1, name, sizeof(name));
		if (strcmp(name, "sleeper_deep"))
			break;
	}
	if (i < iv->nuser && !strcmp(name, "main") && i - 1 < 64)
		v->deep_frames_seen |= 1ull << (i - 1);
	else
		v->deep_bad += iv->intervals;
}

static int on_interval(const struct probe_offcpu_interval *iv, void *ctx)
{
	struct seen *v = ctx;
	char name[128];

	v->records++;
	v->all_ns += iv->ns;
	v->all_intervals += iv->intervals;
	if (iv->lost & PROBE_LOST_USTACK_FULL)
		v->lost_ustack_full += iv->intervals;
	if (iv->lost & PROBE_LOST_WAKER_FULL) {
		v->lost_waker += iv->intervals;
		v->lost_waker_woken += iv->woken ? iv->intervals : 0;
	}
	v->truncated_stacks += iv->lost & PROBE_TRUNCATED_USTACK ? iv->intervals : 0;
	v->truncated_stacks += iv->lost & PROBE_TRUNCATED_KSTACK ? iv->intervals : 0;
	if (iv->lost & PROBE_LOST_COUNTS_FULL) {
		v->lost_counts_full += iv->intervals;
		v->counts_full_ns += iv->ns;
		v->counts_full_records++;
		cr_expect_eq(iv->nuser + iv->nkernel, 0, "a counts-full record has no stacks");
		return 0;
	}
	if (v->comm && !strcmp(iv->comm, v->comm) && iv->kind == RT_PHASE_RUN) {
		v->comm_intervals += iv->intervals;
		v->comm_preempted += iv->preempted ? iv->intervals : 0;
		v->comm_kernel += iv->nkernel ? iv->intervals : 0;
	}
	leaf_name(v->usyms, iv->ustack, iv->nuser, name, sizeof(name));
	if (!strcmp(name, "sleeper_nap") && (iv->lost & PROBE_TRUNCATED_USTACK) &&
	    iv->nuser == PROBE_MAX_DEPTH)
		v->truncated_naps += iv->intervals;
	else if (!strcmp(name, "sleeper_nap"))
		check_deep(v, iv);
	if (v->leaf && strcmp(name, v->leaf) && iv->preempted && !strcmp(iv->comm, "offcpu-nap"))
		v->preempted_elsewhere_ns += iv->ns;
	if (!v->leaf || strcmp(name, v->leaf))
		return 0;
	v->ns += iv->ns;
	v->intervals += iv->intervals;
	v->wrong_kind += iv->kind != RT_PHASE_BLOCK ? iv->intervals : 0;
	v->wrong_comm += strcmp(iv->comm, "offcpu-nap") ? iv->intervals : 0;
	v->no_kernel += iv->nkernel ? 0 : iv->intervals;
	v->preempted += iv->preempted ? iv->intervals : 0;
	if (v->waker_leaf) {
		leaf_name(v->usyms, iv->wustack, iv->nwuser, name, sizeof(name));
		if (iv->woken && iv->waker_in_target && !strcmp(name, v->waker_leaf) &&
		    !strcmp(iv->waker_comm, "sleeper-waker") && iv->nwkernel)
			v->waker_ok += iv->intervals;
		else
			v->waker_bad += iv->intervals;
	}
	return 0;
}

/* Start the probe, let s nap, stop, and drain with s's mappings: what it measured. */
static uint64_t window(struct probe_offcpu *p, struct sleeper *s, struct seen *v,
		       struct probe_offcpu_stats *st)
{
	struct an_symcache *cache = an_symcache_new();
	struct an_procmaps *maps;
	uint64_t measured;

	cr_assert_not_null(cache);
	cr_assert_eq(probe_offcpu_start(p, s->pid, s->tls_off), 0);
	measured = sleeper_run(s);
	cr_assert_eq(probe_offcpu_stop(p), 0);
	maps = an_procmaps_read(s->pid);
	cr_assert_not_null(maps);
	v->usyms = an_usyms_new(cache, maps);
	cr_assert_not_null(v->usyms);
	cr_assert_eq(probe_offcpu_drain(p, on_interval, v, st), 0);
	an_usyms_free(v->usyms);
	v->usyms = NULL;
	an_symcache_free(cache);
	sleeper_end(s);
	/* what every drain promises: each interval in one place, the time kept drained */
	cr_expect_eq(st->intervals, st->kept + st->under_min + st->counts_full);
	cr_expect_eq(st->switches, st->intervals + st->start_full + st->unfinished,
		     "%llu switch-outs, %llu ended, %llu not started, %llu unfinished (%llu "
		     "ended unreported, %llu missed)",
		     (unsigned long long)st->switches, (unsigned long long)st->intervals,
		     (unsigned long long)st->start_full, (unsigned long long)st->unfinished,
		     (unsigned long long)st->restarts, (unsigned long long)probe_offcpu_misses(p));
	cr_expect_eq(v->all_ns, st->kept_ns + st->counts_full_ns);
	cr_expect_eq(v->all_intervals, st->kept + st->counts_full);
	return measured;
}

/* Open with o (NULL: the defaults), run `sleeper COUNT MS MODE` in one window: the
 * probe, still open, and what the child measured. */
static struct probe_offcpu *run_with(const struct probe_offcpu_opts *o, const char *count,
				     const char *ms, const char *mode, struct seen *v,
				     struct probe_offcpu_stats *st, uint64_t *measured)
{
	struct probe_offcpu *p;
	struct sleeper s;
	char err[256];

	need_bpf();
	p = probe_offcpu_open(o, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	sleeper_spawn(&s, count, ms, mode);
	*measured = window(p, &s, v, st);
	return p;
}

/* The naps' time as the probe has it (the leaf's intervals, and the napping thread's
 * preemptions elsewhere, which its own clocks count off CPU) against what the child
 * measured, within tolerance either way; a nap whose switch-in the kernel did not report
 * is timed all the same (st->restarts of them). */
static void expect_naps_timed(const struct seen *v, const struct probe_offcpu_stats *st,
			      uint64_t measured, double tolerance)
{
	double ratio = (double)(v->ns + v->preempted_elsewhere_ns) / (double)measured;

	cr_expect(ratio > 1 - tolerance && (double)v->ns < (1 + tolerance) * (double)measured,
		  "%s off CPU %llu ns (and %llu ns preempted elsewhere), the child measured "
		  "%llu ns (ratio %.4f, %llu switch-ins unreported)", v->leaf,
		  (unsigned long long)v->ns, (unsigned long long)v->preempted_elsewhere_ns,
		  (unsigned long long)measured, ratio, (unsigned long long)st->restarts);
}

TestSuite(offcpu, .fini = reap_kids);

Test(offcpu, total_matches_what_the_child_measured_and_names_the_nap)
{
	struct probe_offcpu_stats st = {};
	struct seen v = { .leaf = "sleeper_nap" };
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(NULL, "50", "2", "nap", &v, &st, &measured);
	cr_assert_geq(measured, 50 * 2000000ull, "the naps took %llu ns", (unsigned long long)measured);
	expect_naps_timed(&v, &st, measured, 0.05);
	cr_expect_geq(v.intervals, 50, "%llu intervals in sleeper_nap; %llu switch-outs, %llu "
		      "switch-ins unreported, %llu under the minimum, %llu missed by the kernel",
		      (unsigned long long)v.intervals, (unsigned long long)st.switches,
		      (unsigned long long)st.restarts, (unsigned long long)st.under_min,
		      (unsigned long long)probe_offcpu_misses(p));
	cr_expect_eq(v.wrong_kind, 0, "the phase word at the switch-out is BLOCK");
	cr_expect_eq(v.wrong_comm, 0);
	cr_expect_eq(v.no_kernel, 0, "every nap has its kernel stack");
	cr_expect_eq(st.start_full + st.counts_full + st.ustack_full + st.kstack_full, 0);
	cr_expect_gt(st.fired, st.switches);
	probe_offcpu_free(p);
}

Test(offcpu, intervals_under_the_minimum_are_counted_not_kept)
{
	struct probe_offcpu_opts o = { .min_block_us = 20000 };
	struct probe_offcpu_stats st = {};
	struct seen v = { .leaf = "sleeper_nap" };
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(&o, "20", "2", "nap", &v, &st, &measured);
	cr_expect_eq(probe_offcpu_min_block_us(p), 20000);
	/* 2 ms naps under a 20 ms minimum: none kept, each counted with its time (a nap
	 * that waited over 18 ms for a CPU on a loaded machine would be kept: allowed) */
	cr_expect_leq(v.intervals, 2, "%llu naps kept", (unsigned long long)v.intervals);
	cr_expect_geq(st.under_min, 18);
	/* a nap is at least its 2 ms off CPU (the timer fires no earlier), less the
	 * microseconds from arming it to the switch */
	cr_expect_geq((double)st.under_min_ns, 0.95 * 2e6 * (double)(20 - v.intervals),
		      "%llu ns under the minimum, %llu naps kept, %llu switch-ins unreported",
		      (unsigned long long)st.under_min_ns, (unsigned long long)v.intervals,
		      (unsigned long long)st.restarts);
	probe_offcpu_free(p);
}

/* Recursions of 48 depths, one nap each: every walk reads each frame to main. */
Test(offcpu, each_frame_of_a_deep_stack_is_walked)
{
	struct probe_offcpu_stats st = {};
	struct seen v = {};
	struct probe_offcpu *p;
	uint64_t measured;
	unsigned lo, hi;

	p = run_with(NULL, "48", "1", "many", &v, &st, &measured);
	cr_assert_neq(v.deep_frames_seen, 0,
		      "no walk from sleeper_nap through sleeper_deep to main");
	lo = (unsigned)__builtin_ctzll(v.deep_frames_seen);
	hi = 63 - (unsigned)__builtin_clzll(v.deep_frames_seen);
	cr_expect_eq(__builtin_popcountll(v.deep_frames_seen), 48,
		     "%d depths seen of 48 (mask %#llx), %llu switch-ins unreported",
		     __builtin_popcountll(v.deep_frames_seen),
		     (unsigned long long)v.deep_frames_seen, (unsigned long long)st.restarts);
	cr_expect_eq(hi - lo, 47, "sleeper_deep frames from %u to %u", lo, hi);
	cr_expect_eq(v.deep_bad, 0, "%llu naps whose walk did not reach main",
		     (unsigned long long)v.deep_bad);
	probe_offcpu_free(p);
}

/* Every user stack's frame-pointer chain ends in a zero %rbp (here, in glibc's
 * __libc_start_call_main), and the kernel's walk reads the frame at address 0 before it
 * stops: two page faults a switch-out, which a VM pays for dearly. The probe's walk
 * stops there unread. */
Test(offcpu, the_user_walk_stops_at_the_chains_end_without_a_fault)
{
	struct probe_offcpu_stats st = {};
	struct seen v = { .leaf = "sleeper_nap" };
	struct probe_offcpu *p;
	struct sleeper s;
	uint64_t faults;
	char err[256];
	int fd;

	need_bpf();
	p = probe_offcpu_open(NULL, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	sleeper_spawn(&s, "50", "1", "nap"); /* one thread: its pid is the napping tid */
	fd = kernel_faults_counter(s.pid);
	window(p, &s, &v, &st);
	faults = kernel_faults_read(&fd, 1);
	cr_expect_geq(v.intervals, 40, "%llu naps seen", (unsigned long long)v.intervals);
	cr_expect_leq(faults, st.switches / 10,
		      "%llu kernel page faults in the napping thread over %llu switch-outs",
		      (unsigned long long)faults, (unsigned long long)st.switches);
	probe_offcpu_free(p);
}

Test(offcpu, a_full_stacks_map_is_counted_and_marked)
{
	struct probe_offcpu_opts o = { .stack_entries = 4 };
	struct probe_offcpu_stats st = {};
	struct seen v = {};
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(&o, "48", "1", "many", &v, &st, &measured);
	/* 48 distinct user stacks and a kernel one or two into 4 entries */
	cr_expect_geq(st.ustack_full, 40, "%llu", (unsigned long long)st.ustack_full);
	cr_expect_eq(v.lost_ustack_full, st.ustack_full);
	probe_offcpu_free(p);
}

Test(offcpu, a_full_counts_map_keeps_the_time_in_one_record)
{
	struct probe_offcpu_opts o = { .count_entries = 2 };
	struct probe_offcpu_stats st = {};
	struct seen v = {};
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(&o, "48", "1", "many", &v, &st, &measured);
	cr_expect_geq(st.counts_full, 40, "%llu", (unsigned long long)st.counts_full);
	cr_expect_eq(v.counts_full_records, 1);
	cr_expect_eq(v.lost_counts_full, st.counts_full);
	cr_expect_eq(v.counts_full_ns, st.counts_full_ns);
	/* the naps' time is all there, most of it in the record */
	cr_expect_geq((double)st.counts_full_ns, 0.8 * (double)measured,
		      "%llu ns in the full record of %llu the child measured; %llu ns kept in "
		      "%llu intervals, %llu switch-outs, %llu restarts, %llu under the minimum",
		      (unsigned long long)st.counts_full_ns, (unsigned long long)measured,
		      (unsigned long long)st.kept_ns, (unsigned long long)st.kept,
		      (unsigned long long)st.switches, (unsigned long long)st.restarts,
		      (unsigned long long)st.under_min);
	probe_offcpu_free(p);
}

/* Naps 200 frames down: the walk keeps 127 of them and says the stack was cut. */
Test(offcpu, a_stack_deeper_than_the_walk_is_flagged_truncated)
{
	struct probe_offcpu_stats st = {};
	struct seen v = {};
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(NULL, "20", "1", "deep", &v, &st, &measured);
	cr_expect_geq(v.truncated_naps, 20, "%llu of 20 naps truncated, %llu switch-ins unreported",
		      (unsigned long long)v.truncated_naps, (unsigned long long)st.restarts);
	cr_expect_eq(st.truncated, v.truncated_stacks, "counted as flagged");
	cr_expect_eq(v.deep_bad, 0, "%llu naps not cut at the depth limit",
		     (unsigned long long)v.deep_bad);
	probe_offcpu_free(p);
}

/* Room for one thread's waker: the main thread's wake-ups (from the test, then the
 * waker's writes) take it, and the waker thread's own (its timer) find none. Each is
 * counted, and each interval such a wake-up ended comes back marked, with no waker. */
Test(offcpu, a_full_wakers_map_is_counted_and_marked)
{
	struct probe_offcpu_opts o = { .wakers = true, .waker_entries = 1 };
	struct probe_offcpu_stats st = {};
	struct seen v = {};
	struct probe_offcpu *p;
	uint64_t measured;
	unsigned stacks, counts, threads, wakers;

	p = run_with(&o, "20", "2", "pipe", &v, &st, &measured);
	probe_offcpu_sizes(p, &stacks, &counts, &threads, &wakers);
	cr_expect_eq(wakers, 1);
	cr_expect_eq(threads, PROBE_OFFCPU_THREAD_ENTRIES, "the start map keeps its own size");
	cr_expect_gt(st.waker_full, 0);
	cr_expect_gt(st.waker_lost, 0, "%llu wake-ups found no room, no interval kept marked",
		     (unsigned long long)st.waker_full);
	cr_expect_leq(st.waker_lost, st.waker_full, "each marked interval had its refused wake-up");
	cr_expect_eq(v.lost_waker, st.waker_lost, "counted as marked");
	cr_expect_eq(v.lost_waker_woken, 0, "a marked interval has no waker");
	probe_offcpu_free(p);
}

Test(offcpu, a_full_start_map_is_counted)
{
	struct probe_offcpu_opts o = { .thread_entries = 1 };
	struct probe_offcpu_stats st = {};
	struct seen v = {};
	struct probe_offcpu *p;
	uint64_t measured;

	/* two threads off CPU at once, the waiter and the waker napping, in room for one */
	p = run_with(&o, "20", "2", "pipe", &v, &st, &measured);
	cr_expect_gt(st.start_full, 0);
	probe_offcpu_free(p);
}

Test(offcpu, wakers_name_the_thread_that_woke_the_wait)
{
	struct probe_offcpu_opts o = { .wakers = true };
	struct probe_offcpu_stats st = {};
	struct seen v = { .leaf = "sleeper_wait", .waker_leaf = "sleeper_wake" };
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(&o, "30", "2", "pipe", &v, &st, &measured);
	cr_expect(probe_offcpu_wakers(p));
	/* the child's spans also hold any preemption in their clock reads: at most the
	 * thread's preempted time elsewhere */
	expect_naps_timed(&v, &st, measured, 0.05);
	/* each wait that blocks ends with the waker's write (one whose byte was already
	 * there does not block); one preempted in sleeper_wait (runnable, never woken) has
	 * no waker, which a busy CPU causes now and then: most are the waker's */
	cr_expect_gt(v.waker_ok, 0);
	cr_expect_leq(v.waker_bad, v.waker_ok, "%llu woken by sleeper_wake, %llu not",
		      (unsigned long long)v.waker_ok, (unsigned long long)v.waker_bad);
	cr_expect_geq(st.wakeups, v.waker_ok, "each woken wait had its wake-up");
	cr_expect_eq(st.waker_full, 0);
	probe_offcpu_free(p);
}

struct kernel_wakers {
	uint64_t woken_by_waker, other, with_user;
};

static int on_kernel_waker(const struct probe_offcpu_interval *iv, void *ctx)
{
	struct kernel_wakers *k = ctx;

	if (strcmp(iv->comm, "offcpu-nap"))
		return 0;
	k->with_user += iv->nuser + iv->nwuser ? iv->intervals : 0;
	if (iv->woken && iv->waker_in_target && !strcmp(iv->waker_comm, "sleeper-waker") &&
	    iv->nwkernel)
		k->woken_by_waker += iv->intervals;
	else
		k->other += iv->intervals;
	return 0;
}

/* --offcpu-stacks kernel with wakers: no user stack on either side, and a waker in the
 * target still known as one (by its tgid, not by a user stack it no longer has). */
Test(offcpu, a_waker_in_the_target_is_known_without_its_user_stack)
{
	struct probe_offcpu_opts o = { .wakers = true, .stacks = PROBE_OFFCPU_KERNEL };
	struct probe_offcpu_stats st = {};
	struct kernel_wakers k = {};
	struct probe_offcpu *p;
	struct sleeper s;
	char err[256];

	need_bpf();
	p = probe_offcpu_open(&o, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	sleeper_spawn(&s, "30", "2", "pipe");
	cr_assert_eq(probe_offcpu_start(p, s.pid, s.tls_off), 0);
	sleeper_run(&s);
	cr_assert_eq(probe_offcpu_stop(p), 0);
	cr_assert_eq(probe_offcpu_drain(p, on_kernel_waker, &k, &st), 0);
	sleeper_end(&s);
	cr_expect_eq(k.with_user, 0, "no user stack taken");
	/* as in wakers_name_the_thread_that_woke_the_wait: a wait preempted has no waker */
	cr_expect_gt(k.woken_by_waker, 0);
	cr_expect_leq(k.other, k.woken_by_waker, "%llu woken by sleeper-waker in the target, %llu not",
		      (unsigned long long)k.woken_by_waker, (unsigned long long)k.other);
	probe_offcpu_free(p);
}

static void open_unprivileged(int fd)
{
	char err[256] = "";
	struct probe_offcpu *p = probe_offcpu_open(NULL, err, sizeof(err));

	dprintf(fd, "%d|%s", p != NULL, err);
}

/* Dropped to nobody in a child (so without any capability), open must fail with the
 * fix in its message. */
/* --offcpu-stacks user: no kernel walk at all, the naps' time and user stacks as with
 * both, and a nap (a sleep) not marked preempted. */
Test(offcpu, user_stacks_only_keep_the_time_and_walk_no_kernel_stack)
{
	struct probe_offcpu_opts o = { .stacks = PROBE_OFFCPU_USER };
	struct probe_offcpu_stats st = {};
	struct seen v = { .leaf = "sleeper_nap" };
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(&o, "50", "2", "nap", &v, &st, &measured);
	cr_expect_eq(probe_offcpu_stacks(p), PROBE_OFFCPU_USER);
	expect_naps_timed(&v, &st, measured, 0.05);
	cr_expect_geq(v.intervals, 50, "%llu naps", (unsigned long long)v.intervals);
	cr_expect_eq(v.no_kernel, v.intervals, "no nap has a kernel stack");
	/* a nap sleeps; one preempted in sleeper_nap's own code on its way to the sleep (a
	 * loaded machine) is rightly marked, and rare */
	cr_expect_leq(v.preempted * 5, v.intervals, "%llu of %llu naps marked preempted",
		      (unsigned long long)v.preempted, (unsigned long long)v.intervals);
	cr_expect_eq(st.kstack_errors + st.kstack_full, 0, "a stack not taken is not a loss");
	cr_expect_eq(st.ustack_errors, 0);
	probe_offcpu_free(p);
}

/* Two spinning threads pinned to one CPU only ever leave it preempted: each of their
 * intervals is marked so, with or without the kernel stack that would show it. */
Test(offcpu, a_thread_that_never_sleeps_is_marked_preempted)
{
	for (int mode = 0; mode < 2; mode++) {
		struct probe_offcpu_opts o = { .stacks = mode ? PROBE_OFFCPU_USER : 0 };
		struct probe_offcpu_stats st = {};
		struct seen v = { .comm = "offcpu-hog" };
		struct an_symcache *cache = an_symcache_new();
		struct an_procmaps *maps;
		struct probe_offcpu *p;
		char err[256], path[64];
		struct dirent *e;
		cpu_set_t one;
		int64_t tls_off;
		pid_t pid;
		DIR *d;

		need_bpf();
		cr_assert_not_null(cache);
		p = probe_offcpu_open(&o, err, sizeof(err));
		cr_assert_not_null(p, "%s", err);
		pid = spawn_busy("30", "2", "hot", "offcpu-hog", &tls_off);
		cr_assert_eq(sched_getaffinity(0, sizeof(one), &one), 0);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &one)) {
				CPU_ZERO(&one);
				CPU_SET(c, &one);
				break;
			}
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		d = opendir(path);
		cr_assert_not_null(d);
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				sched_setaffinity((pid_t)atoi(e->d_name), sizeof(one), &one);
		closedir(d);
		cr_assert_eq(probe_offcpu_start(p, pid, tls_off), 0);
		/* the spinners share one CPU from here: the scheduler's tick preempts one every
		 * few ms, so a preempted interval of each is waited for, not timed */
		for (int tries = 0; tries < 200 && v.comm_intervals < 20; tries++) {
			sleep_ms(50);
			cr_assert_eq(probe_offcpu_stop(p), 0);
			maps = an_procmaps_read(pid);
			cr_assert_not_null(maps);
			v.usyms = an_usyms_new(cache, maps);
			cr_assert_eq(probe_offcpu_drain(p, on_interval, &v, &st), 0);
			an_usyms_free(v.usyms);
			v.usyms = NULL;
			cr_assert_eq(probe_offcpu_start(p, pid, tls_off), 0);
		}
		cr_assert_eq(probe_offcpu_stop(p), 0);
		kill(pid, SIGKILL);
		cr_assert_geq(v.comm_intervals, 20, "%llu intervals of the spinners",
			      (unsigned long long)v.comm_intervals);
		cr_expect_eq(v.comm_preempted, v.comm_intervals,
			     "%s: %llu of the spinners' %llu intervals marked preempted",
			     mode ? "user stacks" : "both stacks",
			     (unsigned long long)v.comm_preempted,
			     (unsigned long long)v.comm_intervals);
		if (mode)
			cr_expect_eq(v.comm_kernel, 0, "no kernel stack taken");
		else
			cr_expect_eq(v.comm_kernel, v.comm_intervals, "each with its kernel stack");
		probe_offcpu_free(p);
		an_symcache_free(cache);
	}
}

Test(offcpu, unprivileged_open_says_how_to_fix)
{
	char msg[512] = "";

	need_bpf();
	as_nobody(open_unprivileged, msg, sizeof(msg));
	cr_expect(strstr(msg, "0|offcpu: not permitted: run as root or grant CAP_BPF and "
			      "CAP_PERFMON") == msg, "%s", msg);
}

/* This kernel fires no sched_switch when some tasks switch out (the VM agent's threads
 * here: perf record -e sched:sched_switch sees them switched in, never out), so the
 * thread that follows one onto a CPU runs with its switch-in unreported, about once a
 * thousand naps. Its next switch-out ends the open interval from its CPU time: no nap
 * goes untimed. */
Test(offcpu, a_switch_in_the_kernel_does_not_report_still_ends_its_interval)
{
	struct probe_offcpu_stats st = {};
	struct seen v = { .leaf = "sleeper_nap" };
	struct probe_offcpu *p;
	uint64_t measured;

	p = run_with(NULL, "1000", "1", "nap", &v, &st, &measured);
	cr_expect_geq(v.intervals, 1000, "%llu of 1000 naps timed, %llu switch-ins unreported",
		      (unsigned long long)v.intervals, (unsigned long long)st.restarts);
	expect_naps_timed(&v, &st, measured, 0.03);
	cr_expect_leq(st.restarts, st.intervals / 20, "unreported switch-ins are rare: %llu of "
		      "%llu", (unsigned long long)st.restarts, (unsigned long long)st.intervals);
	probe_offcpu_free(p);
}
