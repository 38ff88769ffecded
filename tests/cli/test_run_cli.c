/*
 * `schedlab run`, `list` and the dispatcher, run as a user runs them: bad input is one
 * line naming the input and the fix with exit status 2 and nothing run; a quick run
 * writes every file of a run folder, points latest at it, and its folded stacks add up
 * to the samples result.json reports.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <time.h>

#include "analysis/analysis.h"
#include "probes/probes.h"
#include "tests/cli/cli_run.h"

TestSuite(run_cli, .init = setup, .fini = teardown);

static int run_args(const char *a0, const char *a1, const char *a2, const char *a3,
		    const char *a4)
{
	const char *argv[] = { a0, a1, a2, a3, a4, NULL };

	return run_schedlab(argv);
}

/* `schedlab run spawn-join OPT VALUE OPT VALUE` */
static int run_two_options(const char *o1, const char *v1, const char *o2, const char *v2)
{
	const char *argv[] = { "run", "spawn-join", o1, v1, o2, v2, NULL };

	return run_schedlab(argv);
}

/* ---- bad input ------------------------------------------------------------------------ */

Test(run_cli, no_workload_is_bad_input)
{
	cr_expect_eq(run_args("run", NULL, NULL, NULL, NULL), 2);
	expect_one_error_line("needs a workload");
}

Test(run_cli, unknown_workload_is_named_with_the_choices)
{
	cr_expect_eq(run_args("run", "spawn-jion", "--out", in_dir("r"), NULL), 2);
	expect_one_error_line("'spawn-jion'");
	cr_expect_not_null(strstr(err_text, "spawn-join"), "%s", err_text);
	cr_expect_eq(entries(), 0, "nothing was created");
}

Test(run_cli, unknown_preset_is_named_with_the_choices)
{
	cr_expect_eq(run_args("run", "spawn-join", "--preset", "kyoo", NULL), 2);
	expect_one_error_line("'kyoo'");
}

Test(run_cli, a_preset_list_that_does_not_parse_is_bad_input)
{
	static const char *const bad[] = { "ce,,kyo", ",ce", "kyo,", "," };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(run_args("run", "spawn-join", "--preset", bad[i], NULL), 2, "%s",
			     bad[i]);
		expect_one_error_line("NAME,NAME");
	}
	cr_expect_eq(run_args("run", "spawn-join", "--preset", "ce,kyoo", NULL), 2);
	expect_one_error_line("'kyoo'");
	cr_expect_eq(entries(), 0, "nothing was created");
}

/* Every workload under every preset, in that order: one run folder each, and with --json
 * an array of their results. */
Test(run_cli, a_preset_list_runs_every_workload_under_each, .timeout = 120)
{
	const char *argv[] = { "run", "spawn-join", "workers", "--preset", "ce,kyo", "--quick",
			       "--time", "0.05", "--probes", "none", "--json", "--out",
			       in_dir("results"), NULL };
	static const char *const order[][2] = {
		{ "spawn-join", "ce" }, { "spawn-join", "kyo" }, { "workers", "ce" }, { "workers", "kyo" },
	};
	const char *at = out_text;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	cr_expect_eq(out_text[0], '[', "several runs: one JSON array");
	for (size_t i = 0; i < 4; i++) {
		char want[128];

		snprintf(want, sizeof(want), "\"workload\": \"%s\"", order[i][0]);
		at = strstr(at, want);
		cr_assert_not_null(at, "run %zu (%s under %s) missing or out of order", i,
				   order[i][0], order[i][1]);
		snprintf(want, sizeof(want), "\"preset\": \"%s\"", order[i][1]);
		at = strstr(at, want);
		cr_assert_not_null(at, "run %zu: not under %s", i, order[i][1]);
	}
	cr_expect_eq(entries(), 1, "one --out folder");
}

Test(run_cli, malformed_numbers_are_bad_input)
{
	const char *cases[][2] = {
		{ "--forks", "0" },     { "--forks", "three" }, { "--warmup", "-1" },
		{ "--iterations", "" }, { "--time", "1s" },     { "--time", "nan" },
		{ "--freq", "0" },      { "--freq", "99999999" },
		{ "--timeline-events", "0" }, { "--timeline-events", "many" },
		{ "--oncpu-maps", "4" },      { "--oncpu-maps", "0,8" },
		{ "--oncpu-maps", "4,9999999" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(run_args("run", "spawn-join", cases[i][0], cases[i][1], NULL), 2,
			     "%s %s", cases[i][0], cases[i][1]);
		expect_one_error_line(cases[i][0]);
	}
}

/* The kernel's sampling ceiling as this test's own mount namespace shows it: text
 * bind-mounted over the sysctl file, so the machine's setting is never changed. */
static void show_max_sample_rate(const char *text)
{
	const char *path = in_dir("max_sample_rate");

	write_file(path, text);
	cr_assert_eq(unshare(CLONE_NEWNS), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	cr_assert_eq(mount(path, "/proc/sys/kernel/perf_event_max_sample_rate", NULL, MS_BIND,
			   NULL),
		     0, "bind mount: %s", strerror(errno));
}

Test(run_cli, freq_above_the_kernels_sample_rate_is_bad_input)
{
	show_max_sample_rate("5000\n");
	cr_expect_eq(run_two_options("--freq", "5001", "--out", in_dir("r")), 2);
	expect_one_error_line("/proc/sys/kernel/perf_event_max_sample_rate (5000)");
	cr_expect_not_null(strstr(err_text, "--freq 5000"), "the fix: %s", err_text);
	cr_expect_eq(run_two_options("--freq", "100000", "--out", in_dir("r")), 2);
	expect_one_error_line("(5000)");
	cr_expect_eq(entries(), 1, "nothing was created but the sysctl text");
}

Test(run_cli, unreadable_sample_rate_keeps_the_fixed_range)
{
	show_max_sample_rate("unknown\n");
	/* --freq is accepted, so the next mistake is the one reported */
	cr_expect_eq(run_two_options("--freq", "100000", "--forks", "0"), 2);
	expect_one_error_line("--forks '0'");
}

Test(run_cli, forks_times_iterations_beyond_the_storage_cap_is_bad_input, .timeout = 60)
{
	const char *argv[] = { "run", "spawn-join", "--forks", "1000", "--iterations", "100000",
			       "--out", in_dir("r"), NULL };

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("--forks 1000 × --iterations 100000");
	cr_expect_not_null(strstr(err_text, "256 MiB"), "the cap: %s", err_text);
	cr_expect_eq(entries(), 0, "nothing was created");
}

Test(run_cli, call_graph_modes_and_stack_copies_are_checked)
{
	const char *cases[][2] = {
		{ "--call-graph", "lbr" }, { "--call-graph", "" },    { "--call-graph", "DWARF" },
		{ "--stack-copy", "0" },   { "--stack-copy", "63" },  { "--stack-copy", "1001" },
		{ "--stack-copy", "65544" }, { "--stack-copy", "16k" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(run_args("run", "spawn-join", cases[i][0], cases[i][1], NULL), 2,
			     "%s %s", cases[i][0], cases[i][1]);
		expect_one_error_line(cases[i][0]);
	}
	cr_expect_eq(run_args("run", "spawn-join", "--call-graph", "lbr", NULL), 2);
	cr_expect_not_null(strstr(err_text, "fp, dwarf and auto"), "the modes: %s", err_text);
	cr_expect_eq(entries(), 0, "nothing was created");
}

Test(run_cli, workload_parameters_are_checked_before_anything_runs)
{
	cr_expect_eq(run_args("run", "spawn-join", "-P", "n=abc", NULL), 2);
	expect_one_error_line("n=abc");
	cr_expect_eq(run_args("run", "spawn-join", "-P", "bogus=1", NULL), 2);
	expect_one_error_line("'bogus'");
	/* a parameter of the second workload is fine, one that fits neither is not */
	cr_expect_eq(run_args("run", "spawn-join", "workers", "-P", "rounds=x"), 2);
	expect_one_error_line("rounds=x");
	/* a share outside [0, 1], a capacity that is no power of two: refused before a fork */
	cr_expect_eq(run_args("run", "attempt-collect", "-P", "fail=1.5", NULL), 2);
	expect_one_error_line("fail=1.5");
	cr_expect_eq(run_args("run", "stream-queue", "-P", "cap=12", NULL), 2);
	expect_one_error_line("a power of two");
}

Test(run_cli, knobs_that_cannot_go_together_are_bad_input)
{
	const char *argv[] = { "run", "spawn-join", "--out", in_dir("r"), "-c", "workers=2",
			       "-c", "workers_min=4", NULL };

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("workers_min=4");
	cr_expect_eq(entries(), 0, "nothing was created");
}

Test(run_cli, unknown_probe_is_bad_input)
{
	cr_expect_eq(run_args("run", "spawn-join", "--probes", "oncpu,bogus", NULL), 2);
	expect_one_error_line("--probes 'oncpu,bogus': no probe is called 'bogus'");
	cr_expect_eq(run_args("run", "spawn-join", "--probes", "oncpu,,none", NULL), 2);
	expect_one_error_line("--probes 'oncpu,,none'");
}

Test(run_cli, unknown_command_is_bad_input)
{
	cr_expect_eq(run_args("frobnicate", NULL, NULL, NULL, NULL), 2);
	expect_one_error_line("'frobnicate'");
}

Test(run_cli, help_teaches_with_examples)
{
	cr_expect_eq(run_args("run", "--help", NULL, NULL, NULL), 0);
	cr_expect_not_null(strstr(out_text, "\n\nExamples:\n"), "a paragraph of its own: %s",
			   out_text);
	cr_expect_not_null(strstr(out_text, "--quick"));
	cr_expect_eq(run_args("--help", NULL, NULL, NULL, NULL), 0);
	cr_expect_not_null(strstr(out_text, "run"));
}

Test(run_cli, list_names_workloads_presets_and_probes)
{
	cr_expect_eq(run_args("list", NULL, NULL, NULL, NULL), 0);
	cr_expect_not_null(strstr(out_text, "spawn-join"));
	cr_expect_not_null(strstr(out_text, "workers"));
	cr_expect_not_null(strstr(out_text, "ce"));
	cr_expect_not_null(strstr(out_text, "oncpu"));
	cr_expect_eq(run_args("list", "--presets", NULL, NULL, NULL), 0);
	cr_expect_null(strstr(out_text, "spawn-join"));
	cr_expect_eq(run_args("list", "extra", NULL, NULL, NULL), 2);
	expect_one_error_line("'extra'");
}

/* ---- a quick run --------------------------------------------------------------------------- */

/* Run `schedlab ARGV...`, whose run folders go under in_dir("results"), and read its
 * result.json (to be freed). */
static char *run_result(const char *const *argv)
{
	char path[1024], *json;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	return json;
}

/* The counts of the folded file's lines that hold frame as a whole frame (NULL: all). */
static uint64_t folded_weight(const char *path, const char *frame)
{
	FILE *f = fopen(path, "r");
	char line[8192], want[128];
	uint64_t total = 0;

	cr_assert_not_null(f, "%s", path);
	snprintf(want, sizeof(want), ";%s;", frame ? frame : "");
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' '), framed[sizeof(line) + 2];

		cr_assert_not_null(sp, "a folded line without a count: %s", line);
		/* each frame between semicolons, the first and the last included */
		snprintf(framed, sizeof(framed), ";%.*s;", (int)(sp - line), line);
		if (!frame || strstr(framed, want))
			total += strtoull(sp + 1, NULL, 10);
	}
	fclose(f);
	return total;
}

static uint64_t folded_total(const char *path)
{
	return folded_weight(path, NULL);
}

Test(run_cli, quick_run_writes_the_whole_run_folder, .timeout = 120)
{
	const char *argv[] = { "run", "spawn-join", "--quick", "--time", "0.1", "-P", "n=200",
			       "--out", in_dir("results"), "--json", NULL };
	char path[1024], why[256], *json;
	bool bpf;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	/* --json: stdout is result.json, and the table is not printed */
	cr_expect(out_text[0] == '{' && strstr(out_text, "\"workload\": \"spawn-join\""), "%s",
		  out_text);
	cr_expect_not_null(strstr(err_text, "iteration  3/3"), "progress lines: %s", err_text);

	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	cr_expect_eq(json_u64(json, NULL, "n"), 3);
	cr_expect_not_null(strstr(json, "\"params\": \"n=200\""));
	cr_expect_not_null(strstr(json, "\"failure\": null"));
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	cr_expect_eq(access(path, R_OK), 0, "%s", path);

	/* root with BTF, as here and in CI: the probe attaches and nothing is lost silently;
	 * elsewhere the run says why it has no profile */
	bpf = probe_bpf_available(why, sizeof(why));
	cr_expect(!bpf || strstr(json, "\"attached\": true"),
		  "BPF programs load here, so the probe must attach: %s", json);
	if (strstr(json, "\"attached\": true")) {
		uint64_t samples = json_u64(json, "\"probes\"", "samples");

		snprintf(path, sizeof(path), "%s/latest/oncpu.folded", in_dir("results"));
		cr_expect_gt(samples, 0);
		cr_expect_eq(folded_total(path), samples, "folded total = probe samples");
		/* what the frequency owes the fork for its CPU time, against the samples
		 * of it that were taken */
		cr_expect_gt(json_u64(json, "\"sampling\"", "cpu_ns"), 0, "%s", json);
		cr_expect_gt(json_u64(json, "\"sampling\"", "expected"), 0, "%s", json);
		cr_expect_eq(json_u64(json, "\"sampling\"", "taken"), samples, "%s", json);
		snprintf(path, sizeof(path), "%s/latest/oncpu.svg", in_dir("results"));
		cr_expect_eq(access(path, R_OK), 0, "%s", path);
	} else {
		cr_expect_not_null(strstr(json, "not attached: "), "a reason is given");
	}
	free(json);
}

/* oncpu's maps are preallocated, and making them is most of its attach time: they are
 * sized for the samples a fork's measured iterations can take, the stacks for a quarter
 * of them (stacks repeat), between 1,024 entries and the probe's defaults, and the sizes
 * and the most a fork held are in result.json. */
static void expect_oncpu_maps(const char *iterations, const char *time_s, unsigned stacks,
			      unsigned counts)
{
	const char *argv[] = { "run", "workers", "--forks", "1", "--warmup", "0",
			       "--iterations", iterations, "--time", time_s, "--probes",
			       "oncpu", "--out", in_dir("results"), NULL };
	char *json = run_result(argv);

	cr_expect_eq(json_u64(json, "\"maps\"", "stack_entries"), stacks,
		     "%s x %s s: %s", iterations, time_s, strstr(json, "\"maps\""));
	cr_expect_eq(json_u64(json, "\"maps\"", "count_entries"), counts,
		     "%s x %s s: %s", iterations, time_s, strstr(json, "\"maps\""));
	cr_expect_gt(json_u64(json, "\"maps\"", "stacks_held_max"), 0, "%s", strstr(json, "\"maps\""));
	cr_expect_leq(json_u64(json, "\"maps\"", "stacks_held_max"), stacks);
	cr_expect_gt(json_u64(json, "\"maps\"", "counts_held_max"), 0);
	cr_expect_leq(json_u64(json, "\"maps\"", "counts_held_max"), counts);
	free(json);
}

Test(run_cli, oncpu_maps_are_sized_for_the_run, .timeout = 120)
{
	char why[256];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* 999 Hz on every CPU for 2 x 0.4 s (then 2 x 2 s), and a quarter more; the stacks
	 * for a quarter of that */
	unsigned want = (unsigned)(1.25 * 999 * (double)cpus * 0.8);
	unsigned counts = (unsigned)(1.25 * 999 * (double)cpus * 4);
	unsigned stacks = (unsigned)(0.25 * 1.25 * 999 * (double)cpus * 4);

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("oncpu cannot attach here: %s", why);
	expect_oncpu_maps("1", "0.1", 1024, 1024);
	expect_oncpu_maps("2", "0.4", 1024, want < 1024 ? 1024 : want > 40960 ? 40960 : want);
	expect_oncpu_maps("2", "2", stacks < 1024 ? 1024 : stacks > 16384 ? 16384 : stacks,
			  counts > 40960 ? 40960 : counts);
}

/* Maps of 4 stacks and 8 counts, far fewer than a run's stacks: most samples find a map
 * full, and each is still counted in result.json and drawn under its [lost: ...] frame
 * in oncpu.folded, so that the count of each kind is the weight of its frame and the
 * folded total the samples taken. Frame pointers alone, so that every sample goes
 * through the maps. */
Test(run_cli, oncpu_losses_of_full_maps_are_counted_and_drawn, .timeout = 120)
{
	const char *argv[] = { "run", "workers", "--forks", "1", "--warmup", "0",
			       "--iterations", "1", "--time", "0.3", "--probes", "oncpu",
			       "--call-graph", "fp", "--oncpu-maps", "4,8", "--out",
			       in_dir("results"), NULL };
	static const char *const kinds[][2] = {
		{ "user_stack_storage_full", "[lost: user stack storage full]" },
		{ "kernel_stack_storage_full", "[lost: kernel stack storage full]" },
		{ "user_stack_errors", "[lost: user stack error]" },
		{ "kernel_stack_errors", "[lost: kernel stack error]" },
		{ "counts_map_full", "[lost: counts map full]" },
	};
	char path[1024], folded[1024], why[256], *json, *md;
	uint64_t samples;

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("oncpu cannot attach here: %s", why);
	json = run_result(argv);
	snprintf(folded, sizeof(folded), "%s/latest/oncpu.folded", in_dir("results"));
	cr_expect_eq(json_u64(json, "\"maps\"", "stack_entries"), 4);
	cr_expect_eq(json_u64(json, "\"maps\"", "count_entries"), 8);
	cr_expect_not_null(strstr(json, "\"sized\": \"given: --oncpu-maps\""), "%s", json);
	cr_expect_not_null(strstr(json, " --oncpu-maps 4,8"), "the command: %s", json);
	samples = json_u64(json, "\"probes\"", "samples");
	cr_expect_gt(samples, 0);
	cr_expect_eq(folded_total(folded), samples, "folded total = samples taken");
	cr_expect_gt(json_u64(json, "\"lost\"", kinds[0][0]), 0, "%s", strstr(json, "\"lost\""));
	cr_expect_gt(json_u64(json, "\"lost\"", "counts_map_full"), 0, "%s",
		     strstr(json, "\"lost\""));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cr_expect_eq(folded_weight(folded, kinds[i][1]),
			     json_u64(json, "\"lost\"", kinds[i][0]), "%s: %s", kinds[i][0],
			     strstr(json, "\"lost\""));
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	cr_expect_not_null(strstr(md, "the maps hold 4 distinct stacks and 8 counts a fork "
				      "(--oncpu-maps STACKS,COUNTS sets them)"),
			   "%s", md);
	free(md);
	free(json);
}

/* tcp-blocking's forks sleep in recv most of the time, so the CPUs idle and their
 * timers lapse: wall time × CPUs × freq owed it 2,000 samples and called the 49%
 * that never came throttling. Its own CPU time owes it a few dozen; what of those does
 * not come is not throttling either, at a few percent of a CPU. */
Test(run_cli, an_idle_heavy_run_is_not_reported_throttled, .timeout = 120)
{
	const char *argv[] = { "run", "tcp-blocking", "--preset", "kyo", "--quick", "--out",
			       in_dir("results"), NULL };
	char path[1024], why[256], *json, *md;
	uint64_t expected, taken, cpu_ns, window_ns;

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
	json = run_result(argv);
	expected = json_u64(json, "\"sampling\"", "expected");
	taken = json_u64(json, "\"sampling\"", "taken");
	cpu_ns = json_u64(json, "\"sampling\"", "cpu_ns");
	window_ns = json_u64(json, "\"sampling\"", "window_ns");
	cr_log_info("tcp-blocking: %llu ms of CPU in %llu ms sampled: %llu owed, %llu taken",
		    (unsigned long long)cpu_ns / 1000000, (unsigned long long)window_ns / 1000000,
		    (unsigned long long)expected, (unsigned long long)taken);
	cr_expect_lt(cpu_ns, window_ns / 2, "the fork mostly waits: %s", json);
	cr_expect_eq(expected, (uint64_t)((double)cpu_ns * 999 / 1e9 + 0.5), "%s", json);
	cr_expect_not_null(strstr(json, "\"throttled\": false"), "%s", json);
	free(json);
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	cr_expect_null(strstr(md, "the kernel throttled"), "%s", md);
	cr_expect_not_null(strstr(md, "of CPU time × 999 Hz), taken "), "%s", md);
	free(md);
}

/* At 100 kHz this project's VMs spend more than the period on each sample: the run
 * took both CPUs and did not end in 13 minutes. It is refused at once, naming --freq,
 * where sampling would take more of a CPU than perf_cpu_time_max_percent; where it
 * would not, it runs and ends. Either way it ends. */
Test(run_cli, a_frequency_the_machine_cannot_afford_ends_at_once, .timeout = 120)
{
	const char *argv[] = { "run", "spawn-join", "--quick", "--freq", "100000", "--out",
			       in_dir("results"), NULL };
	char why[256];
	int st;

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
	st = run_schedlab(argv);
	if (st == 0) {
		cr_log_info("100 kHz is affordable here: %s", err_text);
		return;
	}
	cr_expect_eq(st, 2, "stderr: %s", err_text);
	expect_one_error_line("--freq 100000: sampling at 100000 Hz would take ");
	cr_expect_not_null(strstr(err_text, "perf_cpu_time_max_percent"), "%s", err_text);
	cr_expect_eq(access(in_dir("results/latest"), F_OK), -1, "no run was made");
}

Test(run_cli, probes_none_says_so_and_writes_no_profile, .timeout = 60)
{
	const char *argv[] = { "run", "spawn-join", "--quick", "--time", "0.05", "--probes", "none",
			       "--out", in_dir("results"), NULL };
	char path[1024], *md;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	cr_expect_not_null(strstr(out_text, "spawn-join"), "the table: %s", out_text);
	/* read through a pipe: the table's header first, and the folder with what to open */
	cr_expect_eq(strncmp(out_text, "Benchmark", 9), 0, "%s", out_text);
	cr_expect_not_null(strstr(out_text, " (report.md)\n"), "%s", out_text);
	cr_expect_not_null(strstr(err_text, " 1 fork × "), "%s", err_text);
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md);
	cr_expect_not_null(strstr(md, "oncpu**: not attached: disabled"), "%s", md);
	free(md);
	snprintf(path, sizeof(path), "%s/latest/oncpu.folded", in_dir("results"));
	cr_expect_neq(access(path, F_OK), 0);
}

/* --overhead: twice the forks, the first without the probes; the run's score is the
 * probed forks' and the report sets it against the others'. */
Test(run_cli, overhead_interleaves_forks_without_and_with_the_probes, .timeout = 120)
{
	const char *argv[] = { "run", "spawn-join", "--quick", "--forks", "2", "--time", "0.05",
			       "--overhead", "--out", in_dir("results"), NULL };
	char path[1024], err[256], *md;
	struct an_result *r;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	cr_expect_not_null(strstr(err_text, "4 forks, every other one (the first) without"), "%s",
			   err_text);
	cr_expect_not_null(strstr(err_text, "fork 4/4"), "%s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	r = an_result_load(path, err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	cr_expect_eq(an_result_num(r, "forks"), 2);
	cr_expect_eq(an_result_len(r, "samples"), 6, "the probed forks' iterations alone");
	cr_expect_str_eq(an_result_str(r, "overhead.probes"), "oncpu");
	cr_expect_eq(an_result_num(r, "overhead.forks_each"), 2);
	cr_expect_eq(an_result_num(r, "overhead.with_probes.n"), 6);
	cr_expect_eq(an_result_num(r, "overhead.without_probes.n"), 6);
	cr_expect_eq(an_result_num(r, "overhead.with_probes.mean"), an_result_num(r, "score"));
	cr_expect_gt(an_result_num(r, "overhead.ratio"), 0);
	cr_expect_not_null(strstr(an_result_str(r, "command"), " --overhead"));
	an_result_free(r);
	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md);
	cr_expect_not_null(strstr(md, "- **Overhead** (--overhead): with the probes (oncpu) "), "%s", md);
	cr_expect_not_null(strstr(md, "(2 forks each, interleaved, the first without)"), "%s", md);
	free(md);
}

/* Copy the file at from to a new file at to with the given mode, all of it or fail. */
static void copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	char buf[65536];
	ssize_t n;

	cr_assert_geq(in, 0, "%s: %s", from, strerror(errno));
	cr_assert_geq(out, 0, "%s: %s", to, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n, "%s: %s", to, strerror(errno));
	cr_assert_eq(n, 0, "%s: %s", from, strerror(errno));
	cr_assert_eq(fchmod(out, mode), 0);
	cr_assert_eq(close(out), 0);
	close(in);
}

/* Without the privileges BPF needs, the benchmark still runs and the report says why
 * there is no profile. The checkout may sit where other users cannot enter (a root
 * user's clone in /root, a mktemp -d), so nobody runs a copy of the binary from the
 * scratch folder (removed with it), which nobody can reach. */
Test(run_cli, without_privileges_the_run_goes_on_and_says_why, .timeout = 60)
{
	const char *build = getenv("SCHEDLAB_BUILD");
	char built[512], bin[600], out[600], path[700], *json;
	int status;
	pid_t pid;

	if (geteuid() != 0)
		cr_skip_test("needs root to drop to another user");
	snprintf(built, sizeof(built), "%s/schedlab", build && *build ? build : "build");
	cr_assert_eq(access(built, X_OK), 0, "%s is not built; run make first", built);
	cr_assert_eq(chmod(dir, 0755), 0);
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	cr_assert_eq(mkdir(bin, 0755), 0, "%s: %s", bin, strerror(errno));
	cr_assert_eq(chmod(bin, 0755), 0); /* whatever the umask */
	snprintf(bin, sizeof(bin), "%s/bin/schedlab", dir);
	copy_file(built, bin, 0755);
	snprintf(out, sizeof(out), "%s/results", dir);
	cr_assert_eq(mkdir(out, 0777), 0, "%s: %s", out, strerror(errno));
	cr_assert_eq(chmod(out, 0777), 0); /* nobody writes the results here */
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull < 0 || dup2(devnull, 1) < 0 || dup2(devnull, 2) < 0 ||
		    setgid(65534) || setuid(65534))
			_exit(127);
		execl(bin, bin, "run", "spawn-join", "--quick", "--time", "0.05", "--probes",
		      "oncpu,runtime", "--out", out, (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	snprintf(path, sizeof(path), "%s/latest/result.json", out);
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	cr_expect_not_null(strstr(json, "\"status\": \"not attached: not permitted"), "%s", json);
	cr_expect_not_null(strstr(json, "{\"name\": \"runtime\", \"attached\": false, \"status\": "
				  "\"not attached: "), "%s", json);
	cr_expect_eq(json_u64(json, NULL, "n"), 3);
	free(json);
}

/* ---- knobs ---------------------------------------------------------------------------- */

Test(run_cli, bad_knobs_are_refused_naming_the_valid_ones)
{
	cr_expect_eq(run_args("run", "spawn-join", "-c", "wrokers=2", NULL), 2);
	expect_one_error_line("'wrokers'");
	cr_expect_not_null(strstr(err_text, "workers"), "%s", err_text);
	cr_expect_eq(run_args("run", "spawn-join", "-c", "spawn=sideways", NULL), 2);
	expect_one_error_line("spawn=sideways");
	cr_expect_not_null(strstr(err_text, "lifo"), "%s", err_text);
	cr_expect_eq(run_args("run", "spawn-join", "-c", "workers", NULL), 2);
	expect_one_error_line("knob=value");
}

Test(run_cli, list_shows_every_presets_knob_vector_and_the_knobs)
{
	cr_expect_eq(run_args("list", "--presets", NULL, NULL, NULL), 0);
	cr_expect_not_null(strstr(out_text, "kyo-tuned"));
	cr_expect_not_null(strstr(out_text, "notify=never"), "kyo's vector: %s", out_text);
	cr_expect_not_null(strstr(out_text, "spawn=lifo"), "tokio's vector");
	cr_expect_eq(run_args("list", "--knobs", NULL, NULL, NULL), 0);
	cr_expect_not_null(strstr(out_text, "blocking"));
	cr_expect_not_null(strstr(out_text, "none, handoff, retake, detect, compensate"));
}

Test(run_cli, knobs_reach_the_forks_and_the_report, .timeout = 60)
{
	const char *argv[] = { "run", "spawn-join", "--quick", "--time", "0.05", "--probes", "none",
			       "--preset", "kyo", "-c", "workers=3", "-P", "n=50", "--out",
			       in_dir("results"), NULL };
	char path[1024], *json;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	json = slurp(path, NULL);
	cr_assert_not_null(json);
	cr_expect_not_null(strstr(json, "\"preset\": \"kyo\""));
	cr_expect_not_null(strstr(json, "\"workers\": \"3\""), "the knob vector");
	cr_expect_not_null(strstr(json, "\"overrides\": \"-c workers=3\""));
	cr_expect_not_null(strstr(json, "\"workers\": 3,"), "the forks started 3 workers");
	cr_expect_not_null(strstr(json, "\"per_worker\": {\"columns\""));
	cr_expect_not_null(strstr(json, "\"steals\": ["));
	cr_expect_not_null(strstr(json, "-c workers=3"), "the command reproduces it");
	free(json);
}

/* Each call-graph mode runs, and says in report.md and result.json how the stacks were
 * walked, whether they reached their roots, and how the phase word and the stacks
 * agreed; every folded line starts with its category. */
Test(run_cli, each_call_graph_mode_reports_its_stacks_and_the_agreement, .timeout = 120)
{
	static const char *const modes[] = { "fp", "dwarf", "auto" };

	for (size_t m = 0; m < 3; m++) {
		char out[600], path[1024], *json, *md, *folded, *line, *save = NULL;
		const char *argv[] = { "run", "spawn-join", "--quick", "--call-graph", modes[m],
				       "--out", out, NULL };

		snprintf(out, sizeof(out), "%s/%s", in_dir("results"), modes[m]);
		cr_assert_eq(run_schedlab(argv), 0, "%s: %s", modes[m], err_text);
		snprintf(path, sizeof(path), "%s/latest/result.json", out);
		json = slurp(path, NULL);
		cr_assert_not_null(json);
		if (!strstr(json, "\"attached\": true")) {
			free(json);
			cr_skip_test("the probe could not attach here");
		}
		{
			char want[64];

			snprintf(want, sizeof(want), "\"call_graph\": \"%s\"", modes[m]);
			cr_expect_not_null(strstr(json, want), "%s", want);
		}
		cr_expect_gt(json_u64(json, "\"agreement\"", "samples"), 0, "%s", modes[m]);
		cr_expect_gt(json_u64(json, "\"stacks\"", "reached_root"), 0, "%s", modes[m]);
		if (m == 1)
			cr_expect_eq(json_u64(json, "\"stacks\"", "frame_pointer"), 0,
				     "dwarf: no stack from the frame-pointer walk");
		else if (m == 0)
			cr_expect_eq(json_u64(json, "\"stacks\"", "dwarf"), 0,
				     "fp: no stack from DWARF");
		free(json);

		snprintf(path, sizeof(path), "%s/latest/report.md", out);
		md = slurp(path, NULL);
		cr_assert_not_null(md);
		cr_expect_not_null(strstr(md, "Phase word against stacks"), "%s", modes[m]);
		cr_expect_not_null(strstr(md, "reach their thread's root"), "%s", modes[m]);
		cr_expect_not_null(strstr(md, m == 0 ? "frame pointers (--call-graph fp)" :
					       "unwound from DWARF"),
				   "%s", modes[m]);
		free(md);

		snprintf(path, sizeof(path), "%s/latest/oncpu.folded", out);
		folded = slurp(path, NULL);
		cr_assert_not_null(folded);
		for (line = strtok_r(folded, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			cr_expect(line[0] == '[' && strchr(line, ']') &&
					  strchr(line, ']')[1] == ';',
				  "%s: no category root frame: %s", modes[m], line);
		free(folded);
	}
}

/* ---- interrupts, --json, a full file system ---------------------------------------------- */

/* Any name under path holding ".tmp" (an atomic write's temporary left behind). */
static bool has_temporary(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool found = false;
	char p[1024];
	struct stat st;

	while (d && !found && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		found = strstr(e->d_name, ".tmp") ||
			(lstat(p, &st) == 0 && S_ISDIR(st.st_mode) && has_temporary(p));
	}
	if (d)
		closedir(d);
	return found;
}

/* The run folders in out: its folders, latest and hidden names aside. */
static size_t count_run_dirs(const char *out)
{
	DIR *d = opendir(out);
	struct dirent *e;
	struct stat st;
	char p[1024];
	size_t n = 0;

	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "latest"))
			continue;
		snprintf(p, sizeof(p), "%s/%s", out, e->d_name);
		n += lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
	}
	if (d)
		closedir(d);
	return n;
}

/* Start a run of three one-second forks with stderr on a pipe, read it until fork 2 has
 * measured its first iteration, send sig, read to the end; the exit status. */
/* Read what the run printed on fd into buf (len so far in *len): true once it holds
 * `want` (NULL: never), false at the end of the stream. Fails the test at the
 * deadline. */
static bool await_text(int fd, char *buf, size_t cap, size_t *len, const char *want,
		       time_t deadline)
{
	while (!want || !strstr(buf, want)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		cr_assert_lt(time(NULL), deadline, "%s%s%s in time: %s", want ? "no '" : "",
			     want ? want : "the run did not end", want ? "'" : "", buf);
		if (poll(&p, 1, 1000) <= 0)
			continue;
		n = read(fd, buf + *len, cap - 1 - *len);
		if (n <= 0)
			return false;
		*len += (size_t)n;
		buf[*len] = '\0';
	}
	return true;
}

/* Start a run long enough to interrupt (3 forks of 3 one-second iterations, under
 * probes) into out, under a command that runs it (wrapper, NULL-terminated: strace and
 * its options, say) or none; its stderr comes to *err_fd. */
static pid_t start_run_under(const char *const *wrapper, const char *out, const char *probes,
			     int *err_fd)
{
	const char *argv[32];
	char bin[512];
	size_t n = 0;
	int fds[2];
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/schedlab", schedlab_build());
	for (; wrapper && wrapper[n]; n++)
		argv[n] = wrapper[n];
	cr_assert_lt(n, 16);
	for (const char *const *a = (const char *const[]){ bin, "run", "spawn-join", "--forks",
							   "3", "--iterations", "3", "--time",
							   "1", "--probes", probes, "-o", out,
							   NULL };
	     *a; a++)
		argv[n++] = *a;
	argv[n] = NULL;
	cr_assert_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null < 0 || dup2(null, 1) < 0 || dup2(fds[1], 2) < 0)
			_exit(127);
		close(fds[0]);
		/* LeakSanitizer cannot run under ptrace (strace): in a sanitizer build the run
		 * would end at its exit with a fatal error; elsewhere this means nothing */
		if (wrapper)
			setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	*err_fd = fds[0];
	return pid;
}

static pid_t start_long_run(const char *out, const char *probes, int *err_fd)
{
	return start_run_under(NULL, out, probes, err_fd);
}

/* The exit status of a long run that got sig once fork 2 measured; its stderr in
 * err_text. */
static int run_interrupted(int sig, const char *out, const char *probes)
{
	char buf[8192] = "";
	time_t deadline = time(NULL) + 240;
	size_t len = 0;
	int fd, status;
	pid_t pid = start_long_run(out, probes, &fd);

	cr_assert(await_text(fd, buf, sizeof(buf), &len, "fork 2/3  iteration  1/3", deadline),
		  "the run ended before fork 2 measured: %s", buf);
	cr_assert_eq(kill(pid, sig), 0);
	await_text(fd, buf, sizeof(buf), &len, NULL, deadline);
	close(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	snprintf(err_text, sizeof(err_text), "%s", buf);
	cr_assert(WIFEXITED(status), "killed by signal %d: %s",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0, err_text);
	return WEXITSTATUS(status);
}

/* The file name of the run that out/latest points to, the partial run, into path. */
static void partial_run_file(const char *out, const char *name, char *path, size_t len)
{
	char link[1024], target[512];
	ssize_t n;

	snprintf(link, sizeof(link), "%s/latest", out);
	n = readlink(link, target, sizeof(target) - 1);
	cr_assert_gt(n, 0, "latest is a symlink to the partial run");
	target[n] = '\0';
	snprintf(path, len, "%s/%s/%s", out, target, name);
}

static void expect_partial_run(int sig, const char *signame)
{
	char path[1024], reason[128], *json;
	const char *out = in_dir("results");
	uint64_t n;

	cr_expect_eq(run_interrupted(sig, out, "none"), 130, "stderr: %s", err_text);
	partial_run_file(out, "result.json", path, sizeof(path));
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	cr_expect_not_null(strstr(json, "\"partial\": true"), "%s", json);
	/* fork 1's three iterations and at least fork 2's first; not all nine */
	n = json_u64(json, NULL, "n");
	cr_expect(n >= 4 && n < 9, "n = %llu", (unsigned long long)n);
	snprintf(reason, sizeof(reason), "\"partial_reason\": \"interrupted by %s during fork ",
		 signame);
	cr_expect_not_null(strstr(json, reason), "%s", json);
	snprintf(reason, sizeof(reason), "(%llu of 9 measured iterations)\"",
		 (unsigned long long)n);
	cr_expect_not_null(strstr(json, reason), "the reason counts the samples: %s", json);
	cr_expect_not_null(strstr(json, "\"failure\": null"), "an interrupt is no failure");
	free(json);
	partial_run_file(out, "report.md", path, sizeof(path));
	cr_expect_eq(access(path, R_OK), 0, "%s", path);
	cr_expect_not_null(strstr(err_text, signame), "one line says so: %s", err_text);
	cr_expect_not_null(strstr(err_text, "partial results are in"), "%s", err_text);
	cr_expect_not(has_temporary(out), "a temporary file was left in %s", out);
}

Test(run_cli, sigint_writes_the_measured_iterations_as_partial, .timeout = 300)
{
	expect_partial_run(SIGINT, "SIGINT");
}

Test(run_cli, sigterm_writes_the_measured_iterations_as_partial, .timeout = 300)
{
	expect_partial_run(SIGTERM, "SIGTERM");
}

/* An interrupted fork never sent the runtime's counters, so the runtime probe's counts of
 * an interrupted run are set beside none: report.md says so rather than judging every
 * count against counters that never came. */
Test(run_cli, an_interrupted_run_sets_the_runtime_probes_counts_beside_no_counters,
     .timeout = 300)
{
	char path[1024], why[256], *md;
	const char *out = in_dir("results");

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
	cr_expect_eq(run_interrupted(SIGINT, out, "runtime"), 130, "stderr: %s", err_text);
	partial_run_file(out, "report.md", path, sizeof(path));
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	cr_expect_not_null(strstr(md, "The counts are not set beside the runtime's counters: "
				      "the run stopped before a fork reported them."),
			   "%s", md);
	cr_expect_null(strstr(md, "DISAGREE"), "%s", md);
	free(md);
}

/* A second SIGINT while the interrupted run writes its files: the writing stops, no
 * temporary is left and latest stays on the run before; exit 130. The writer is held
 * mid-write by strace, which holds the run's first fsync (its first file's temporary,
 * written and not yet renamed) for 20 s: the second signal comes while the temporary is
 * there, and the run is not let go before it. */
Test(run_cli, a_second_sigint_while_writing_stops_the_writing, .timeout = 300)
{
	const char *out = in_dir("results");
	const char *argv[] = { "run", "spawn-join", "--quick", "--time", "0.05", "--probes",
			       "none", "-o", out, NULL };
	char buf[16384] = "", good[512], now[512], path[1024], line[64];
	time_t deadline = time(NULL) + 240;
	int fd, status;
	pid_t pid, run = 0;
	size_t len = 0;
	ssize_t n;
	FILE *f;

	cr_assert_eq(run_schedlab(argv), 0, "the run before: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest", out);
	n = readlink(path, good, sizeof(good) - 1);
	cr_assert_gt(n, 0);
	good[n] = '\0';

	pid = start_run_under((const char *const[]){ "strace", "-f", "--seccomp-bpf", "-qq", "-o",
						     "/dev/null", "-e", "trace=fsync", "-e",
						     "inject=fsync:delay_enter=20000000:when=1",
						     NULL },
			      out, "none", &fd);
	cr_assert(await_text(fd, buf, sizeof(buf), &len, "fork 2/3  iteration  1/3",
			     deadline), "the run ended early (is strace installed?): %s", buf);
	/* the run is strace's child */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	if (fgets(line, sizeof(line), f))
		run = (pid_t)strtol(line, NULL, 10);
	fclose(f);
	cr_assert_gt(run, 0, "no run under strace");

	cr_assert_eq(kill(run, SIGINT), 0);
	/* the first file's temporary is there, held at its fsync */
	while (!has_temporary(out)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		cr_assert_lt(time(NULL), deadline, "no file was being written: %s", buf);
		if (poll(&p, 1, 10) > 0 && len < sizeof(buf) - 1 &&
		    (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
			len += (size_t)n;
			buf[len] = '\0';
		}
	}
	cr_assert_eq(kill(run, SIGINT), 0);
	/* to the end of its stderr: a writer that went on writing never says so */
	deadline = time(NULL) + 60;
	await_text(fd, buf, sizeof(buf), &len, NULL, deadline);
	close(fd);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	/* strace exits with its command's status */
	cr_assert(WIFEXITED(status), "killed by signal %d: %s",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0, buf);
	cr_expect_eq(WEXITSTATUS(status), 130, "%s", buf);
	cr_expect_not_null(strstr(buf, "interrupted again while writing"), "%s", buf);
	cr_expect_not(has_temporary(out), "a temporary file was left in %s", out);
	snprintf(path, sizeof(path), "%s/latest", out);
	n = readlink(path, now, sizeof(now) - 1);
	now[n > 0 ? n : 0] = '\0';
	cr_expect_str_eq(now, good, "latest still points at the run before");
	cr_expect_eq(count_run_dirs(out), 1, "the interrupted run left a folder with nothing of "
					     "it written");
}

/* Several workloads: stdout is one JSON array of their results, in the order given. */
Test(run_cli, json_with_two_workloads_is_one_array, .timeout = 120)
{
	const char *argv[] = { "run", "spawn-join", "permit", "--quick", "--time", "0.05",
			       "--probes", "none", "--json", "-o", in_dir("results"), NULL };
	char cmd[1200];

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	write_file(in_dir("out.json"), out_text);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
		 "sys.exit(not (isinstance(d, list) and [r[\"workload\"] for r in d] == "
		 "[\"spawn-join\", \"permit\"]))' %s",
		 in_dir("out.json"));
	cr_expect_eq(system(cmd), 0, "not one array of both results: %s", out_text);
}

/* Entries in the folder path, 0 when it cannot be read. */
static size_t count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	size_t n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* A 256 KiB tmpfs at mnt (a new folder); the test is skipped where mounts are refused. */
static void mount_small_tmpfs(const char *mnt)
{
	char cmd[1200];

	cr_assert_eq(mkdir(mnt, 0755), 0);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=256k tmpfs %s 2>/dev/null", mnt);
	if (system(cmd) != 0) {
		rmdir(mnt);
		cr_skip_test("mount -t tmpfs was refused (not root, or no mount namespace)");
	}
}

/* A full file system fails the run with the real errno, and latest keeps the good run. */
Test(run_cli, a_full_file_system_fails_the_run_and_keeps_latest, .timeout = 120)
{
	const char *mnt = in_dir("fs"), *out = in_dir("fs/r");
	const char *argv[] = { "run", "spawn-join", "--quick", "--time", "0.05", "--probes",
			       "none", "-o", out, NULL };
	char cmd[1200], path[1024], good[512], now[512];
	size_t out_entries;
	ssize_t len;
	int st;

	mount_small_tmpfs(mnt);
	st = run_schedlab(argv);
	snprintf(path, sizeof(path), "%s/latest", out);
	len = readlink(path, good, sizeof(good) - 1);
	good[len > 0 ? len : 0] = '\0';
	snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of=%s/filler bs=4k 2>/dev/null", mnt);
	if (st == 0 && len > 0 && system(cmd) != -1)
		st = run_schedlab(argv) == 1 ? 0 : -1;
	else
		st = -2;
	len = readlink(path, now, sizeof(now) - 1);
	now[len > 0 ? len : 0] = '\0';
	out_entries = count_entries(out);
	snprintf(cmd, sizeof(cmd), "umount %s", mnt);
	cr_assert_eq(system(cmd), 0, "umount %s", mnt);
	cr_assert_neq(st, -2, "the good run failed: %s", err_text);
	cr_expect_eq(st, 0, "the run on a full file system did not exit 1: %s", err_text);
	cr_expect_not_null(strstr(err_text, "No space left on device"), "%s", err_text);
	cr_expect_str_eq(now, good, "latest still points at the good run");
	/* the failed run's folder held nothing of it, and went: the good run and latest */
	cr_expect_eq(out_entries, 2, "%zu entries in %s, not the good run and latest: %s",
		     out_entries, out, out_text);
	cr_expect_not_null(strstr(out_text, "(not written, removed)"), "%s", out_text);
}

/* A run folder that cannot be made on a read-only file system is the machine's
 * failure (exit 1), named; an --out that is a file is the user's (exit 2, naming
 * --out); neither runs anything. */
Test(run_cli, a_run_folder_that_cannot_be_made_is_named, .timeout = 60)
{
	const char *mnt = in_dir("ro"), *out = in_dir("ro/r");
	const char *argv[] = { "run", "spawn-join", "--quick", "--probes", "none", "-o", out,
			       NULL };
	const char *file_argv[] = { "run", "spawn-join", "--quick", "--probes", "none", "-o",
				    in_dir("a-file"), NULL };
	char cmd[1200];
	int st;

	mount_small_tmpfs(mnt);
	cr_assert_eq(mkdir(out, 0755), 0);
	snprintf(cmd, sizeof(cmd), "mount -o remount,ro %s", mnt);
	st = system(cmd) == 0 ? run_schedlab(argv) : -1;
	snprintf(cmd, sizeof(cmd), "umount %s", mnt);
	cr_assert_eq(system(cmd), 0, "umount %s", mnt);
	cr_assert_neq(st, -1, "remount read-only refused");
	cr_expect_eq(st, 1, "stderr: %s", err_text);
	cr_expect(!strncmp(err_text, "schedlab: cannot create ", 24) &&
			  strstr(err_text, "/ro/r: Read-only file system\n"),
		  "%s", err_text);
	cr_expect_null(strstr(err_text, "fork 1/1"), "nothing ran: %s", err_text);

	write_file(in_dir("a-file"), "mine\n");
	cr_expect_eq(run_schedlab(file_argv), 2);
	expect_one_error_line("--out ");
	cr_expect_not_null(strstr(err_text, "a-file: Not a directory"), "%s", err_text);
}
