/*
 * The peers in other languages (bench/go, bench/tokio, bench/java), run as the bench scripts
 * run them: one measured iteration of each job is one sample line on stdout and nothing
 * else, the TCP job against schedlab's own server through bench/tcpserve; and against a
 * server that answers one op's exchanges wrongly (tests/helpers/wrong_echo) each peer's
 * check fails the program, with no sample. A peer whose toolchain is not installed is
 * skipped, naming the package; one whose toolchain is installed must have been built.
 */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli/cli_run.h"

TestSuite(peers, .init = setup, .fini = teardown);

struct peer {
	const char *name;      /* the program in $(BUILD)/bench */
	const char *toolchain[4]; /* files its toolchain installs (globs), NULL-ended */
	const char *package;
};

/* The files the Makefile looks for before it builds each peer for `make test`. */
static const struct peer go = { "gopeer", { "/usr/bin/go" }, "golang-go" };
static const struct peer tokio = { "tokiopeer",
				   { "/usr/bin/cargo", "/usr/bin/rustc",
				     "/usr/share/cargo/registry/tokio-1.*" },
				   "cargo, rustc and librust-tokio-dev" };
static const struct peer jdk = { "jdkpeer", { "/usr/lib/jvm/java-17-openjdk-*/bin/javac" },
				 "openjdk-17-jdk-headless" };

static bool installed(const struct peer *p)
{
	for (size_t i = 0; p->toolchain[i]; i++) {
		glob_t g;
		int r = glob(p->toolchain[i], 0, NULL, &g);

		globfree(&g);
		if (r)
			return false;
	}
	return true;
}

/* The peer's path; skips the test where its toolchain is absent. */
static const char *peer_path(const struct peer *p, char *buf, size_t len)
{
	const char *san = getenv("SCHEDLAB_SANITIZE");

	/* the peers test no C of ours: a sanitizer build leaves them out (the Makefile) */
	if (san && *san)
		cr_skip_test("%s is not built with SANITIZE=%s: the peers hold none of our C",
			     p->name, san);
	if (!installed(p))
		cr_skip_test("%s needs %s, not installed here (make deps PKGS_EXTRA='...' or "
			     "make bench installs it)",
			     p->name, p->package);
	snprintf(buf, len, "%s/bench/%s", schedlab_build(), p->name);
	cr_assert_eq(access(buf, X_OK), 0, "%s is not built; run make test", buf);
	return buf;
}

static void use_server(const char *program)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", schedlab_build(), program);
	cr_assert_eq(access(path, X_OK), 0, "%s is not built; run make test", path);
	cr_assert_eq(setenv("SCHEDLAB_EXE", path, 1), 0);
}

static int run_job(const char *path, const char *job, const char *warmup)
{
	const char *args[] = { job, "--warmup", warmup, "--iterations", "1", "--time", "0.01",
			       NULL };

	return run_program(path, args);
}

/* One iteration of each job: one sample line, no message, exit 0. */
static void one_sample_each(const struct peer *p, const char *const *jobs)
{
	char path[512];

	peer_path(p, path, sizeof(path));
	use_server("schedlab");
	for (size_t i = 0; jobs[i]; i++) {
		char *end;
		double rate;

		cr_expect_eq(run_job(path, jobs[i], "0"), 0, "%s %s: %s", p->name, jobs[i],
			     err_text);
		cr_expect_str_eq(err_text, "", "%s %s", p->name, jobs[i]);
		rate = strtod(out_text, &end);
		cr_expect(end != out_text && !strcmp(end, "\n"), "%s %s: one sample line: '%s'",
			  p->name, jobs[i], out_text);
		cr_expect(rate > 0, "%s %s: %g ops/s", p->name, jobs[i], rate);
	}
}

/* The server's second op (the warm-up's was the first) answers with a wrong tag. */
static void wrong_echo_fails(const struct peer *p)
{
	char path[512], spec[600], want[64];

	peer_path(p, path, sizeof(path));
	use_server("tests/helpers/wrong_echo");
	snprintf(spec, sizeof(spec), "1 2 %s", in_dir("starts"));
	cr_assert_eq(setenv("WRONG_ECHO", spec, 1), 0);
	cr_expect_eq(run_job(path, "tcp-blocking", "1"), 1, "%s", err_text);
	cr_expect_str_eq(out_text, "", "no sample from a failed iteration");
	snprintf(want, sizeof(want), "%s tcp-blocking: connection ", p->name);
	cr_expect_not_null(strstr(err_text, want), "%s", err_text);
	cr_expect_not_null(strstr(err_text, ": a wrong echo"), "%s", err_text);
	unsetenv("WRONG_ECHO");
}

Test(peers, go_jobs_give_one_sample_each, .timeout = 120)
{
	const char *jobs[] = { "spawn-join", "workers", "tcp-blocking", NULL };

	one_sample_each(&go, jobs);
}

Test(peers, tokio_jobs_give_one_sample_each, .timeout = 120)
{
	const char *jobs[] = { "spawn-join", "workers", "tcp-blocking", "tcp-block-in-place",
			       NULL };

	one_sample_each(&tokio, jobs);
}

Test(peers, jdk_jobs_give_one_sample_each, .timeout = 120)
{
	const char *jobs[] = { "spawn-join", "workers", "tcp-blocking", NULL };

	one_sample_each(&jdk, jobs);
}

Test(peers, go_fails_on_a_wrong_echo, .timeout = 120)
{
	wrong_echo_fails(&go);
}

Test(peers, tokio_fails_on_a_wrong_echo, .timeout = 120)
{
	wrong_echo_fails(&tokio);
}

Test(peers, jdk_fails_on_a_wrong_echo, .timeout = 120)
{
	wrong_echo_fails(&jdk);
}

/* Of the samples in run/oncpu.folded of threads whose name begins with thread (every
 * thread: NULL), the share in each category (a line's first frame, "[parking]"): into
 * share[] in cats' order, and their number. */
static const char *const cats[] = { "work", "scheduling", "submission", "parking", "blocking",
				    "allocation", "stack-capture", "kernel", "other" };
#define NCATS (sizeof(cats) / sizeof(cats[0]))

static double thread_shares(const char *run, const char *thread, double share[NCATS])
{
	char path[1100], *text, *line, *save = NULL;
	double total = 0;

	snprintf(path, sizeof(path), "%s/oncpu.folded", run);
	text = slurp(path, NULL);
	cr_assert_not_null(text, "%s", path);
	memset(share, 0, NCATS * sizeof(share[0]));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' '), *comm = strchr(line, ';');
		double n;

		cr_assert(sp && comm && line[0] == '[', "not a folded line: %s", line);
		if (thread && strncmp(comm + 1, thread, strlen(thread)))
			continue;
		n = atof(sp + 1);
		total += n;
		for (size_t i = 0; i < NCATS; i++)
			if (!strncmp(line + 1, cats[i], strlen(cats[i])) &&
			    line[1 + strlen(cats[i])] == ']')
				share[i] += n;
	}
	free(text);
	cr_assert_gt(total, 0, "no samples of %s threads in %s", thread ? thread : "any", path);
	for (size_t i = 0; i < NCATS; i++)
		share[i] /= total;
	return total;
}

/* The real runtime's own scheduler, as the stack rules name its frames
 * (analysis/categories.rules), in `schedlab profile` of the peer running spawn-join:
 * scheduling, submission and parking hold a material share of the samples of its
 * threads (those whose name begins with thread; all: NULL), and few of them are left
 * without a rule (other). */
static void runtime_frames_named(const struct peer *p, const char *thread, double other_max)
{
	char path[512], run[1024];
	const char *args[] = { "profile", "--call-graph", "fp", "-o", in_dir("s"), "--", path,
			       "spawn-join", "--warmup", "1", "--iterations", "2", "--time",
			       "0.3", NULL };
	double share[NCATS], n, runtime;
	const char *nl;

	peer_path(p, path, sizeof(path));
	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	/* stdout: the peer's samples, then the folder */
	nl = strstr(out_text, in_dir("s/"));
	cr_assert_not_null(nl, "%s", out_text);
	snprintf(run, sizeof(run), "%.*s", (int)strcspn(nl, "\n"), nl);
	n = thread_shares(run, thread, share);
	runtime = share[1] + share[2] + share[3];
	cr_expect_gt(runtime, 0.10, "%s: scheduling, submission and parking are %.1f%% of "
		     "spawn-join's %.0f samples", p->name, 100 * runtime, n);
	cr_expect_lt(share[NCATS - 1], other_max, "%s: %.1f%% of %.0f samples named by no rule",
		     p->name, 100 * share[NCATS - 1], n);
}

Test(peers, go_scheduler_frames_land_in_the_runtime_categories, .timeout = 180)
{
	runtime_frames_named(&go, NULL, 0.10);
}

Test(peers, tokio_scheduler_frames_land_in_the_runtime_categories, .timeout = 180)
{
	runtime_frames_named(&tokio, NULL, 0.10);
}

/* Go reads the clock through the vDSO on its system stack (runtime.nanotime1 switches
 * to it), where a DWARF unwind cannot find nanotime1's caller; in the default auto mode
 * the frame-pointer walk of the same sample goes on from there
 * (an_unwind_splice_fp()): most samples that hold nanotime1 hold its callers too, where
 * before all of them ended at it as "other" (43 of 43 in one run here). */
Test(peers, go_stacks_go_on_past_the_vdso_in_auto_mode, .timeout = 180)
{
	char path[512], run[1024], folded[1100], *text, *line, *save = NULL;
	const char *args[] = { "profile", "-o", in_dir("s"), "--", path, "spawn-join",
			       "--warmup", "1", "--iterations", "2", "--time", "0.3", NULL };
	double held = 0, ended = 0;
	const char *nl;

	peer_path(&go, path, sizeof(path));
	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	nl = strstr(out_text, in_dir("s/"));
	cr_assert_not_null(nl, "%s", out_text);
	snprintf(run, sizeof(run), "%.*s", (int)strcspn(nl, "\n"), nl);
	snprintf(folded, sizeof(folded), "%s/oncpu.folded", run);
	text = slurp(folded, NULL);
	cr_assert_not_null(text, "%s", folded);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' '), *at = strstr(line, ";runtime.nanotime1");
		const char *comm = strchr(line, ';');

		if (!sp || !at || !comm)
			continue;
		held += atof(sp + 1);
		/* the stack's outermost frame, just after the comm, is nanotime1 itself */
		if (strchr(comm + 1, ';') == at)
			ended += atof(sp + 1);
	}
	free(text);
	if (held < 10)
		cr_skip_test("%.0f samples in runtime.nanotime1: too few to judge", held);
	cr_expect_lt(ended / held, 0.25,
		     "%.0f of %.0f samples in runtime.nanotime1 end there, its callers lost",
		     ended, held);
}

/* The perf maps in /tmp now, as a glob lists them. */
static size_t perf_maps(glob_t *g)
{
	return glob("/tmp/perf-*.map", 0, NULL, g) ? 0 : g->gl_pathc;
}

Test(peers, jdk_pool_frames_land_in_the_runtime_categories, .timeout = 180)
{
	glob_t before, after;

	/* compiled code walked by its frame pointers and named by the map the JVM writes at
	 * its exit, which goes when the test is done */
	cr_assert_eq(setenv("JDKPEER_OPTS", "-XX:+PreserveFramePointer "
			    "-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit", 1), 0);
	perf_maps(&before);
	/* the pool's threads: the JVM's start-up and its JIT compilers are other, and their
	 * share of the whole grows as the CPUs' other work leaves the timed job less (42% of
	 * one run under two busy loops, against 20 to 30% on a quiet machine). On the pool's
	 * threads, code still interpreted is other (a perf map names no interpreted frame):
	 * 1 to 3% here, 10.2% under two busy loops, where the starved JIT compiles late */
	runtime_frames_named(&jdk, "ForkJoinPool-", 0.25);
	for (size_t i = 0, n = perf_maps(&after); i < n; i++) {
		bool old = false;

		for (size_t k = 0; k < before.gl_pathc && !old; k++)
			old = !strcmp(after.gl_pathv[i], before.gl_pathv[k]);
		if (!old)
			unlink(after.gl_pathv[i]);
	}
	globfree(&before);
	globfree(&after);
}
