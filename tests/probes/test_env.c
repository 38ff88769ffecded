/*
 * What the probes tell a user about the machine (probes/common/env.c), against a real
 * refusal: tests/probes/refused.bpf.c, a program every kernel's verifier refuses, loaded
 * through probe__load() as each probe's loader loads its own. The message names the
 * program, the verifier's reason and the fix on one line, the verifier's whole log is
 * in the file it names, and a probe set that meets such a probe lists it as not
 * attached and goes on.
 */
#include "tests/probes/busy.h"

#include "harness/harness.h"
#include "probes/common/env.h"
#include <linux/types.h> /* before the skeleton, which uses __u64 */
#include "tests/probes/refused.skel.h"

#define REFUSED_PREFIX "the kernel's verifier refused program 'refused_deref': "
#define LOG_AT	       "report it with the verifier's log, "

/* Load the refused object as a loader does: probe__load()'s return, its message in err. */
static int load_refused(char *err, size_t len)
{
	struct refused_bpf *skel = refused_bpf__open();
	int ret;

	cr_assert_not_null(skel, "refused_bpf__open: %s", strerror(errno));
	ret = probe__load(skel->skeleton, "refused", err, len);
	refused_bpf__destroy(skel);
	return ret;
}

/* The log file a message names at its end: read it into buf, then remove it. */
static void take_log(const char *msg, char *buf, size_t len)
{
	const char *at = strstr(msg, LOG_AT);
	FILE *f;
	size_t n;

	cr_assert_not_null(at, "no log named: %s", msg);
	at += strlen(LOG_AT);
	f = fopen(at, "r");
	cr_assert_not_null(f, "%s: %s", at, strerror(errno));
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
	cr_expect_eq(unlink(at), 0, "%s", at);
}

TestSuite(env);

Test(env, a_refused_program_is_named_with_the_verifiers_reason_and_the_fix)
{
	char err[HX_WHY_LEN] = "", log[65536];
	int ret;

	need_bpf();
	ret = load_refused(err, sizeof(err));
	cr_assert_lt(ret, 0, "the verifier took a read through a random number");
	cr_expect_neq(ret, -EPERM, "root may load it: a refusal, not a missing privilege");
	cr_expect(!strncmp(err, "refused: load failed: " REFUSED_PREFIX,
			   22 + strlen(REFUSED_PREFIX)),
		  "%s", err);
	/* the verifier's own words for it: "R0 invalid mem access 'scalar'" ('inv' before
	 * 5.18) */
	cr_expect_not_null(strstr(err, "invalid mem access"), "%s", err);
	cr_expect_null(strchr(err, '\n'), "one line: %s", err);
	/* this kernel runs every probe: the fix is a report, with the log */
	cr_expect_not_null(strstr(err, "is new enough for the probes (5.18 or later), so it is "
				       "a schedlab bug"),
			   "%s", err);
	take_log(err, log, sizeof(log));
	cr_expect_not_null(strstr(log, "invalid mem access"), "the whole log: %s", log);
	cr_expect_not_null(strstr(log, "processed "), "to its end: %s", log);
}

/* A probe whose program the verifier refuses, opened as the probes are by the probe set:
 * the reason without the probe's name, which the report's line gives. */
static int refused_open(void **state, const struct hx_probe_config *cfg, char *why, size_t len)
{
	const char *name = "refused: ";
	int ret;

	(void)cfg;
	*state = NULL;
	ret = load_refused(why, len);
	if (!strncmp(why, name, strlen(name)))
		memmove(why, why + strlen(name), strlen(why + strlen(name)) + 1);
	return ret;
}

static const struct hx_probe_ops refused_ops = {
	.id = HX_PROBE_OFFCPU, .name = "refused", .summary = "a program the verifier refuses",
	.open = refused_open,
};

Test(env, a_probe_whose_program_is_refused_is_listed_not_attached_and_the_run_goes_on)
{
	struct hx_probe_config cfg = { .forks = 1 };
	struct hx_probeset s;
	struct hx_hooks h;
	char err[HX_WHY_LEN] = "", log[65536];

	need_bpf();
	cr_assert_eq(hx_probeset_open(&s, NULL, 0, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(hx_probeset_add(&s, &refused_ops, &cfg, err, sizeof(err)), 0,
		     "a refusal is the machine's answer, not bad input: %s", err);
	cr_assert_null(s.probes[0].state);
	cr_expect(!strncmp(s.probes[0].status, "not attached: load failed: " REFUSED_PREFIX,
			   27 + strlen(REFUSED_PREFIX)),
		  "%s", s.probes[0].status);
	cr_expect_null(strchr(s.probes[0].status, '\n'), "one line: %s", s.probes[0].status);
	/* the fork's measured iterations go on without it */
	hx_probeset_hooks(&s, &h);
	cr_expect_eq(h.measure_begin(h.ctx, getpid(), 0), 0);
	cr_expect_eq(h.measure_end(h.ctx, getpid()), 0);
	cr_expect_eq(hx_probeset_finish(&s, "/nowhere"), 0);
	cr_expect(!s.parts[0].attached);
	cr_expect_str_eq(s.parts[0].status, s.probes[0].status, "the report's line");
	take_log(s.probes[0].status, log, sizeof(log));
	hx_probeset_close(&s);
}

/* The kernel's BPF statistics are the process's, turned on once: every probe gets the
 * same fd, and freeing one probe leaves them on for the next, whose program is timed. */
Test(env, the_bpf_statistics_stay_on_for_every_probe_of_the_process, .timeout = 60)
{
	struct probe_offcpu_opts o = { 0 };
	struct probe_offcpu *a, *b;
	uint64_t runs0, ns0, runs, ns;
	char why[256];
	int fd = probe_bpf_stats_fd();

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
	cr_assert_geq(fd, 0, "bpf_enable_stats: %s", strerror(-fd));
	cr_expect_eq(probe_bpf_stats_fd(), fd, "one fd for the process");
	a = probe_offcpu_open(&o, why, sizeof(why));
	cr_assert_not_null(a, "%s", why);
	probe_offcpu_free(a);
	cr_expect_eq(fcntl(fd, F_GETFD), FD_CLOEXEC, "freeing a probe left the fd open");
	b = probe_offcpu_open(&o, why, sizeof(why));
	cr_assert_not_null(b, "%s", why);
	cr_assert_eq(probe_offcpu_prog_stats(b, &runs0, &ns0), 0);
	/* sched_switch runs at every switch of the machine: this thread's naps are some */
	do {
		usleep(1000);
		cr_assert_eq(probe_offcpu_prog_stats(b, &runs, &ns), 0);
	} while (runs == runs0);
	cr_expect_gt(ns, ns0, "the runs were timed");
	probe_offcpu_free(b);
}

Test(env, the_kernel_floor_reads_a_release_as_uname_gives_it)
{
	cr_expect(probe__kernel_at_least("6.18.44-fc-v1300", 5, 18));
	cr_expect(probe__kernel_at_least("5.18.0", 5, 18));
	cr_expect(probe__kernel_at_least("5.19.0-rc1", 5, 18));
	cr_expect(probe__kernel_at_least("10.0", 5, 18), "a two-digit major");
	cr_expect_not(probe__kernel_at_least("5.17.15-arch1", 5, 18), "bpf_loop, no prev_state");
	cr_expect_not(probe__kernel_at_least("4.19.0-26-amd64", 5, 18));
	cr_expect_not(probe__kernel_at_least("5.4", 5, 18), "5.4 is not 5.40");
	cr_expect_not(probe__kernel_at_least("linux", 5, 18));
	cr_expect_not(probe__kernel_at_least("6", 5, 18), "no minor");
	cr_expect_not(probe__kernel_at_least("", 5, 18));
	cr_expect_not(probe__kernel_at_least(NULL, 5, 18));
}
