/*
 * Grouping by task, end to end: this process runs the task runtime with two kinds of
 * task, each spawned with its own entry function and spinning in a function of its own,
 * while the on-CPU probe (real BPF: root and BTF, as on every machine of this project)
 * samples it through the harness's profile, which folds the samples as `schedlab run`
 * does. Grouping by task, every sample of a spin is under a "[task: ENTRY]" frame right
 * below its thread, the frame of its own kind; without grouping no sample has one. The
 * tests sample until each kind has enough samples, however busy the CPUs are.
 */
#include <criterion/criterion.h>

#include "analysis/analysis.h"
#include "harness/harness.h"
#include "probes/probes.h"
#include "runtime/rt.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

#define SPIN_ROUNDS    2000000 /* a few milliseconds of one CPU per task */
#define TASKS_PER_KIND 4
#define WANT_SAMPLES   50  /* per kind: enough that a frame under the wrong one shows */
#define MAX_WINDOWS    400 /* a bound on the loop, not the condition it waits for */

static volatile uint64_t sink;

/* Two different loops, so that neither can be folded into the other. */
NOINLINE uint64_t group_spin_alpha(uint64_t n)
{
	uint64_t x = n;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

NOINLINE uint64_t group_spin_beta(uint64_t n)
{
	uint64_t x = n;

	for (uint64_t i = 0; i < n; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull + i;
	return x;
}

/* The entry functions, what rt_submit is passed. */
NOINLINE uint64_t group_task_alpha(void *arg)
{
	sink += group_spin_alpha(8 * SPIN_ROUNDS); /* its loop is about 8 times faster */
	return 0;
}

NOINLINE uint64_t group_task_beta(void *arg)
{
	sink += group_spin_beta(SPIN_ROUNDS);
	return 0;
}

enum { ALPHA, BETA, NONE, NKINDS };

/* Samples in each spin function (by the leaf-most spin frame), by the task frame above
 * them. */
struct tally {
	uint64_t spin[NKINDS][2]; /* [task frame: ALPHA, BETA, NONE][spin: ALPHA, BETA] */
	uint64_t task_frames;     /* samples with any "[task: " frame */
	uint64_t misplaced;       /* a "[task: " frame anywhere but right below the thread */
	uint64_t other_task;      /* under a task frame of neither kind */
};

static void tally(const struct an_folded *folded, struct tally *t)
{
	const struct an_folded_line *lines;
	size_t n;

	memset(t, 0, sizeof(*t));
	lines = an_folded_lines(folded, &n);
	for (size_t i = 0; i < n; i++) {
		char *copy = strdup(lines[i].stack), *f, *save = NULL;
		int task = NONE, spin = -1;
		size_t depth = 0;

		cr_assert_not_null(copy);
		for (f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save), depth++) {
			if (!strcmp(f, "-"))
				break; /* the kernel part */
			if (!strncmp(f, "[task: ", 7)) {
				t->task_frames += lines[i].count;
				if (depth != 2)
					t->misplaced += lines[i].count;
				if (!strcmp(f, "[task: group_task_alpha]"))
					task = ALPHA;
				else if (!strcmp(f, "[task: group_task_beta]"))
					task = BETA;
				else
					t->other_task += lines[i].count;
			} else if (!strcmp(f, "group_spin_alpha")) {
				spin = ALPHA;
			} else if (!strcmp(f, "group_spin_beta")) {
				spin = BETA;
			}
		}
		if (spin >= 0)
			t->spin[task][spin] += lines[i].count;
		free(copy);
	}
}

/* Samples in one spin function, whatever task frame they have. */
static uint64_t spin_samples(const struct tally *t, int spin)
{
	return t->spin[ALPHA][spin] + t->spin[BETA][spin] + t->spin[NONE][spin];
}

static void need_bpf(void)
{
	char why[256];

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
}

/* Sample this process while it runs both kinds of task, a window at a time, until each
 * spin has WANT_SAMPLES samples; *t is the profile's tally then. */
static void profile_both_kinds(enum probe_callgraph cg, bool group_task, struct tally *t)
{
	struct probe_oncpu_opts o = { .callgraph = cg, .group_task = group_task };
	struct rt_config c;
	struct hx_profile prof;
	struct hx_hooks h;
	struct rt_sched *s;
	unsigned windows = 0;

	need_bpf();
	cr_assert_eq(hx_profile_open(&prof, true, &o), 0);
	cr_assert(prof.attached, "oncpu: %s", prof.status);
	cr_assert_eq(probe_oncpu_group_task(prof.oncpu), group_task);
	hx_profile_hooks(&prof, &h);
	cr_assert_eq(rt_config_preset(&c, "ce"), 0);
	c.workers = 2;
	s = rt_sched_new(&c);
	cr_assert_not_null(s, "rt_sched_new: %s", strerror(errno));
	do {
		struct rt_task *tasks[2 * TASKS_PER_KIND];

		cr_assert_eq(h.measure_begin(h.ctx, getpid(), rt_phase_tls_offset()), 0);
		for (int k = 0; k < TASKS_PER_KIND; k++) {
			tasks[2 * k] = rt_submit(s, group_task_alpha, NULL);
			tasks[2 * k + 1] = rt_submit(s, group_task_beta, NULL);
		}
		for (int k = 0; k < 2 * TASKS_PER_KIND; k++) {
			cr_assert_not_null(tasks[k]);
			rt_join(tasks[k]);
		}
		cr_assert_eq(h.measure_end(h.ctx, getpid()), 0);
		cr_assert_eq(prof.error, 0, "profile: %s", strerror(-prof.error));
		tally(prof.folded, t);
	} while (++windows < MAX_WINDOWS &&
		 (spin_samples(t, ALPHA) < WANT_SAMPLES || spin_samples(t, BETA) < WANT_SAMPLES));
	rt_sched_free(s);
	hx_profile_close(&prof);
}

static void expect_grouped(const struct tally *t, const char *mode)
{
	cr_expect_geq(t->spin[ALPHA][ALPHA], WANT_SAMPLES,
		      "%s: %llu samples of group_spin_alpha under [task: group_task_alpha]", mode,
		      (unsigned long long)t->spin[ALPHA][ALPHA]);
	cr_expect_geq(t->spin[BETA][BETA], WANT_SAMPLES,
		      "%s: %llu samples of group_spin_beta under [task: group_task_beta]", mode,
		      (unsigned long long)t->spin[BETA][BETA]);
	cr_expect_eq(t->spin[ALPHA][BETA] + t->spin[BETA][ALPHA], 0,
		     "%s: %llu samples of one kind's spin under the other kind's task", mode,
		     (unsigned long long)(t->spin[ALPHA][BETA] + t->spin[BETA][ALPHA]));
	cr_expect_eq(t->spin[NONE][ALPHA] + t->spin[NONE][BETA], 0,
		     "%s: %llu samples of a task's spin without a task frame", mode,
		     (unsigned long long)(t->spin[NONE][ALPHA] + t->spin[NONE][BETA]));
	cr_expect_eq(t->misplaced, 0, "%s: %llu task frames not right below the thread", mode,
		     (unsigned long long)t->misplaced);
	cr_expect_eq(t->other_task, 0, "%s: %llu samples under a task frame of neither kind",
		     mode, (unsigned long long)t->other_task);
}

TestSuite(oncpu_group, .timeout = 240);

/* Frame pointers, aggregated in the kernel: the entry is part of the key. */
Test(oncpu_group, by_task_each_kind_is_a_frame_over_its_own_work)
{
	struct tally t;

	profile_both_kinds(PROBE_CG_FP, true, &t);
	expect_grouped(&t, "fp");
}

/* Every sample through the ring buffer, unwound from DWARF: the entry travels with it. */
Test(oncpu_group, by_task_in_dwarf_mode_too)
{
	struct tally t;

	profile_both_kinds(PROBE_CG_DWARF, true, &t);
	expect_grouped(&t, "dwarf");
}

Test(oncpu_group, by_thread_no_sample_has_a_task_frame)
{
	struct tally t;

	profile_both_kinds(PROBE_CG_FP, false, &t);
	cr_expect_geq(t.spin[NONE][ALPHA], WANT_SAMPLES);
	cr_expect_geq(t.spin[NONE][BETA], WANT_SAMPLES);
	cr_expect_eq(t.task_frames, 0, "%llu samples with a [task: ...] frame",
		     (unsigned long long)t.task_frames);
}
