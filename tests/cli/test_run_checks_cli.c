/*
 * The workloads' correctness checks through `schedlab run`, as a user meets them: a
 * check that fails fails the run (exit status 1) with one line naming the fork and the
 * iteration, and result.json and report.md still say what failed; and every workload
 * passes its check after every op under every preset.
 *
 * A check is made to fail the way the product allows: the tcp workloads' server is
 * $SCHEDLAB_EXE, here tests/helpers/wrong_echo, which answers the exchanges of one chosen
 * op of one chosen fork with a wrong tag.
 */
#include <dirent.h>

#include "analysis/analysis.h"
#include "runtime/rt.h"
#include "tests/cli/cli_run.h"
#include "workloads/workload.h"

TestSuite(run_checks_cli, .init = setup, .fini = teardown);

/* The run of workload under preset among the run folders in out: exactly one. */
static struct an_result *load_run(const char *out, const char *workload, const char *preset)
{
	char path[1024], err[512];
	struct an_result *found = NULL;
	DIR *d = opendir(out);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d, "%s", out);
	while ((e = readdir(d))) {
		struct an_result *r;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "latest"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", out, e->d_name);
		r = an_result_load(path, err, sizeof(err));
		cr_assert_not_null(r, "%s", err);
		if (strcmp(an_result_str(r, "workload"), workload) ||
		    strcmp(an_result_str(r, "preset"), preset)) {
			an_result_free(r);
			continue;
		}
		n++;
		an_result_free(found);
		found = r;
	}
	closedir(d);
	cr_assert_eq(n, 1, "%zu runs of %s under %s in %s", n, workload, preset, out);
	return found;
}

/* The lines of err_text that start with "schedlab: ", and the first of them in line. */
static size_t error_lines(char *line, size_t len)
{
	size_t n = 0;

	line[0] = '\0';
	for (const char *p = err_text; *p;) {
		const char *end = strchr(p, '\n');
		size_t l = end ? (size_t)(end - p) : strlen(p);

		if (!strncmp(p, "schedlab: ", 10) && !n++)
			snprintf(line, len, "%.*s", (int)l, p);
		p += l + (end != NULL);
	}
	return n;
}

static void use_wrong_echo(unsigned server, unsigned op)
{
	char helper[512], spec[600];

	snprintf(helper, sizeof(helper), "%s/tests/helpers/wrong_echo", schedlab_build());
	cr_assert_eq(access(helper, X_OK), 0, "%s is not built; run make test", helper);
	snprintf(spec, sizeof(spec), "%u %u %s", server, op, in_dir("starts"));
	cr_assert_eq(setenv("SCHEDLAB_EXE", helper, 1), 0);
	cr_assert_eq(setenv("WRONG_ECHO", spec, 1), 0);
}

/*
 * One connection with two exchanges, each answered 2 ms after its request: every op
 * takes over 4 ms, so an iteration of 1 ms is exactly one op, and the second fork's
 * second op (wrongly answered) is its second measured iteration. The run goes on to
 * the next workload, and the failure is in every place a user looks.
 */
Test(run_checks_cli, a_failed_check_fails_the_run_naming_fork_and_iteration, .timeout = 120)
{
	const char *argv[] = { "run", "tcp-blocking", "spawn-join", "--forks", "2", "--warmup",
			       "0", "--iterations", "3", "--time", "0.001", "-P", "conns=1", "-P",
			       "exchanges=2", "-P", "delay=2000", "--probes", "none", "--out",
			       in_dir("results"), NULL };
	const char *failure, *want = "fork 2: iteration 2: tcp-blocking: connection 0, exchange 0 "
				     "(op 2): the response is for connection 0, exchange 0 (op 2), tag ";
	char line[1024], expected_line[1024], *md, *starts, *next;
	struct an_result *r;
	size_t nstarts = 0;

	use_wrong_echo(2, 2);
	cr_assert_eq(run_schedlab(argv), 1, "stderr: %s", err_text);

	/* each fork started its own server, and the second answered wrongly */
	starts = slurp(in_dir("starts"), &nstarts);
	cr_expect_eq(nstarts, 2, "servers started: %zu", nstarts);
	free(starts);
	/* tcp-blocking's progress, before spawn-join's */
	next = strstr(err_text, "# spawn-join");
	cr_assert_not_null(next, "spawn-join ran after the failure: %s", err_text);
	*next = '\0';
	cr_expect_not_null(strstr(err_text, "fork 1/2  iteration  3/3"), "%s", err_text);
	cr_expect_not_null(strstr(err_text, "fork 2/2  iteration  1/3"), "%s", err_text);
	cr_expect_null(strstr(err_text, "fork 2/2  iteration  2/3"), "%s", err_text);
	*next = '#';

	r = load_run(in_dir("results"), "tcp-blocking", "ce");
	failure = an_result_str(r, "failure");
	cr_assert_not_null(failure, "result.json marks the failure");
	cr_expect(!strncmp(failure, want, strlen(want)), "failure: %s", failure);
	cr_expect_not_null(strstr(failure, " instead of "), "%s", failure);
	cr_expect_eq(an_result_num(r, "n"), 0, "a failed run has no score");
	cr_expect_eq(an_result_num(r, "partial"), 0, "a failure is not an interruption");

	/* one error line on stderr, the one result.json holds, beside the progress lines */
	snprintf(expected_line, sizeof(expected_line), "schedlab: tcp-blocking failed: %s",
		 failure);
	cr_expect_eq(error_lines(line, sizeof(line)), 1, "%s", err_text);
	cr_expect_str_eq(line, expected_line);

	snprintf(line, sizeof(line), "%s/report.md", an_result_dir(r));
	md = slurp(line, NULL);
	cr_assert_not_null(md, "%s", line);
	snprintf(expected_line, sizeof(expected_line), "**The run failed:** %s\n", failure);
	cr_expect_not_null(strstr(md, expected_line), "%s", md);
	free(md);
	an_result_free(r);

	/* the table says so; the next workload ran and passed */
	cr_expect_not_null(strstr(out_text, "tcp-blocking     ce                 failed"), "%s",
			   out_text);
	r = load_run(in_dir("results"), "spawn-join", "ce");
	cr_expect_null(an_result_str(r, "failure"), "%s", an_result_str(r, "failure"));
	cr_expect_eq(an_result_num(r, "n"), 6);
	an_result_free(r);
}

/* A check that fails while warming up says so, and no fork after it runs. */
Test(run_checks_cli, a_failed_check_in_warm_up_says_warm_up, .timeout = 60)
{
	const char *argv[] = { "run", "tcp-callback", "--forks", "2", "--warmup", "2",
			       "--iterations", "1", "--time", "0.001", "-P", "conns=1", "-P",
			       "exchanges=2", "-P", "delay=2000", "--probes", "none", "--out",
			       in_dir("results"), NULL };
	const char *want = "fork 1: warm-up iteration 2: tcp-callback: connection 0, exchange 0 "
			   "(op 2): the response is for connection 0, exchange 0 (op 2), tag ";
	struct an_result *r;
	const char *failure;
	size_t nstarts = 0;
	char line[1024];

	use_wrong_echo(1, 2);
	cr_assert_eq(run_schedlab(argv), 1, "stderr: %s", err_text);
	free(slurp(in_dir("starts"), &nstarts));
	cr_expect_eq(nstarts, 1, "the second fork never started: %zu servers", nstarts);
	r = load_run(in_dir("results"), "tcp-callback", "ce");
	failure = an_result_str(r, "failure");
	cr_assert_not_null(failure);
	cr_expect(!strncmp(failure, want, strlen(want)), "failure: %s", failure);
	cr_expect_eq(error_lines(line, sizeof(line)), 1, "%s", err_text);
	cr_expect(!strncmp(line, "schedlab: tcp-callback failed: fork 1: warm-up iteration 2: ",
			   60), "%s", line);
	an_result_free(r);
}

/* ---- every workload under every preset ---------------------------------------------- */

#define MAX_NAMES 32

/* The names `schedlab list --FLAG` shows: the lines indented by two spaces exactly. */
static size_t list_names(const char *flag, char names[][32])
{
	const char *argv[] = { "list", flag, NULL };
	size_t n = 0;

	cr_assert_eq(run_schedlab(argv), 0, "%s", err_text);
	for (const char *p = strchr(out_text, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
		size_t len;

		if (strncmp(p + 1, "  ", 2) || p[3] == ' ')
			continue;
		len = strcspn(p + 3, " \n");
		cr_assert_lt(n, MAX_NAMES);
		cr_assert_lt(len, 32);
		snprintf(names[n++], 32, "%.*s", (int)len, p + 3);
	}
	cr_assert_gt(n, 0, "no names in list %s: %s", flag, out_text);
	return n;
}

/* Each of workloads ran under preset in out, ran its 3 quick iterations and passed its
 * check after every op: no failure, not cut short. */
static void expect_passed(const char *out, char workloads[][32], size_t n, const char *preset)
{
	for (size_t i = 0; i < n; i++) {
		struct an_result *r = load_run(out, workloads[i], preset);

		cr_expect_null(an_result_str(r, "failure"), "%s under %s: %s", workloads[i], preset,
			       an_result_str(r, "failure"));
		cr_expect_eq(an_result_num(r, "partial"), 0, "%s under %s", workloads[i], preset);
		cr_expect_eq(an_result_num(r, "n"), 3, "%s under %s", workloads[i], preset);
		an_result_free(r);
	}
}

/*
 * Every workload that `schedlab list` shows, under every preset it shows, in one
 * `schedlab run W1 W2 ... --preset P --quick` each. No preset refuses a workload: the
 * one knob rule a workload could meet (poller=worker needs a fixed pool of workers) holds
 * for every preset, since only ce has poller=worker. Two things keep the test short on a
 * 2-CPU machine without leaving a pair out:
 * - --time 0.02: an iteration is then mostly one op, and each fork's start and setup
 *   is most of the time (about 0.25 s a workload at --time 0.05);
 * - waiting-tasks runs apart, at -P tasks=1000, all presets in one run: its 100,000
 *   tasks take about 5 s an op here whatever --time says (an iteration is at least one
 *   op; --quick makes five with the memory pass), and under threads, one OS thread per
 *   task, 100,000 do not start at all: spawning fails with EAGAIN past about 22,000,
 *   at the kernel's limits (kernel.pid_max 32,768, vm.max_map_count 65,530 here). Its
 *   -P tasks cannot go in the other runs, where permit has a tasks parameter of its own.
 */
Test(run_checks_cli, every_workload_passes_its_check_under_every_preset, .timeout = 600)
{
	static char workloads[MAX_NAMES][32], presets[MAX_NAMES][32], others[MAX_NAMES][32];
	static char waiting[1][32] = { "waiting-tasks" };
	size_t nw = list_names("--workloads", workloads);
	size_t np = list_names("--presets", presets), nothers = 0, len = 0;
	char out[600], waiting_out[600], preset_list[512] = "";
	const char *argv[32], *wt[] = { "run", "waiting-tasks", "--preset", preset_list,
					"--quick", "--time", "0.02", "-P", "tasks=1000",
					"--probes", "none", "--out", waiting_out, NULL };

	/* what list shows is everything there is */
	for (size_t i = 0; wl_all()[i]; i++)
		cr_expect_str_eq(i < nw ? workloads[i] : "", wl_all()[i]->name);
	for (size_t p = 0; rt_preset_names()[p]; p++)
		cr_expect_str_eq(p < np ? presets[p] : "", rt_preset_names()[p]);
	for (size_t i = 0; i < nw; i++)
		if (strcmp(workloads[i], waiting[0]))
			strcpy(others[nothers++], workloads[i]);
	cr_assert_eq(nothers, nw - 1, "waiting-tasks is listed once");

	for (size_t p = 0; p < np; p++) {
		size_t n = 0;

		argv[n++] = "run";
		for (size_t i = 0; i < nothers; i++)
			argv[n++] = others[i];
		snprintf(out, sizeof(out), "%s/%s", dir, presets[p]);
		argv[n++] = "--preset";
		argv[n++] = presets[p];
		argv[n++] = "--quick";
		argv[n++] = "--time";
		argv[n++] = "0.02";
		argv[n++] = "--probes";
		argv[n++] = "none";
		argv[n++] = "--out";
		argv[n++] = out;
		argv[n] = NULL;
		cr_assert_lt(n, 30);
		cr_expect_eq(run_schedlab(argv), 0, "under %s: %s", presets[p], err_text);
		expect_passed(out, others, nothers, presets[p]);
		len += (size_t)snprintf(preset_list + len, sizeof(preset_list) - len, "%s%s",
					p ? "," : "", presets[p]);
		cr_assert_lt(len, sizeof(preset_list));
	}

	snprintf(waiting_out, sizeof(waiting_out), "%s/waiting", dir);
	cr_expect_eq(run_schedlab(wt), 0, "%s", err_text);
	for (size_t p = 0; p < np; p++)
		expect_passed(waiting_out, waiting, 1, presets[p]);
}
